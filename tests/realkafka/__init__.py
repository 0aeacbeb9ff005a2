"""Real Kafka in the test suite: the release's jars from Maven, KRaft brokers on localhost, Kafka's
own clients and storage classes. The scenarios (``tests/test_kafka_*.py``, marker ``kafka``)
compare kdump's answers with what these do. Not named ``kafka``: tests/ is on sys.path and
would shadow kafka-python.

The API:

- ``kafka_version()``: ``$KDUMP_KAFKA_VERSION``, default 4.4.0.
- ``release(version) -> Release``: ``org.apache.kafka:kafka_2.13``, ``kafka-storage``,
  ``kafka-tools``, ``kafka-clients`` resolved with ``mvn dependency:build-classpath`` into
  ~/.m2 (offline first; cached by version under ~/.cache/kdump-tests/realkafka).
  ``Release.run(main, *args, log=PATH)`` runs a class to its end on that classpath: Kafka's own
  (``org.apache.kafka.tools.DumpLogSegments``) or one of ``java/*.java``, which are compiled
  together with javac at first use (cached by version and source hash); add a file there and
  call its class by name. ``Release.java_command`` is the same command line, for Popen.
- ``Cluster(release, root, nodes=1, config={...})``: KRaft nodes on free localhost ports;
  ``start()`` formats (first time) and starts them and waits until each serves; ``stop()``,
  ``kill()``; ``broker(n)``. One node is combined mode; of three, node 1 is the controller.
- ``Broker``: ``start()``, ``stop()`` (SIGTERM, clean shutdown), ``kill()`` (SIGKILL),
  ``restart()``, ``log_dir``, ``partition_dir(topic, p)``, ``cleaned_to(topic, p)`` (its
  cleaner-offset-checkpoint entry), ``active_base(topic, p)``, ``bootstrap``, and
  ``log_lines()``: the node's own log lines since it was last started.
- ``broker_log.LoadReport.parse(lines)``: those lines read as LogManager and LogLoader write
  them: the logs loaded ("Loaded N logs in X ms"), each log dir's clean-shutdown announcement,
  per partition the segments recovered, the indexes rebuilt, the producer state rebuilds and
  snapshots, the load's log end offset and time.
- ``Cluster(..., jvm=release.PRODUCTION_JVM)``: brokers with kafka-server-start.sh's JVM
  options, for measurements; the fast-start ones by default.
- ``load.load_logs(release, properties, log_dir, topic_configs, log=PATH) -> Loaded``: Kafka's
  own ``LogManager`` loading a copy of a log dir with no broker around it
  (``java/LoadLogs.java``, by reflection, so one source serves 4.0's Scala LogManager and 4.4's
  Java one): the files as its load leaves them (no clean shutdown after), its facts per log
  (``Loaded.logs``) and its load lines (``Loaded.report``, a LoadReport).
- ``clients``: ``produce(release, bootstrap, *jobs, log=)`` with Kafka's Java producer
  (idempotent, transactional, every codec, small and large batches: the job fields are in
  clients.py's docstring), ``Producing`` (a producer running until killed: what was
  acknowledged), ``create_topic``, ``list_offsets`` (ListOffsets), ``leaders``,
  ``wait_for_leaders``, ``wait_until``, ``admin`` (kafka-python's admin client).
- fixtures (fixtures.py): ``kafka_release``; ``kafka_broker`` (one shared combined node,
  running); ``kafka_single`` (its Cluster); ``kafka_three`` (three nodes); ``unavailable``:
  skip, or fail where ``KDUMP_REQUIRE_KAFKA=1`` (CI).
"""

from __future__ import annotations

from .broker import Broker, Cluster
from .clients import (
    Producing,
    admin,
    create_topic,
    leaders,
    list_offsets,
    produce,
    wait_for_leaders,
    wait_until,
)
from .fixtures import client_log, kafka_version, unavailable
from .load import Loaded, load_logs
from .release import Release, Unavailable, release

__all__ = [
    "Broker",
    "Cluster",
    "Loaded",
    "Producing",
    "Release",
    "Unavailable",
    "admin",
    "client_log",
    "create_topic",
    "kafka_version",
    "leaders",
    "list_offsets",
    "load_logs",
    "produce",
    "release",
    "unavailable",
    "wait_for_leaders",
    "wait_until",
]
