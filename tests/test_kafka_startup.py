"""`kdump startup` against the real broker's start: the shared broker stopped, its files damaged
while it is down, ``kdump startup`` run, the broker started; its own log lines on what it
loaded, recovered, rebuilt, cut, deleted and wrote must be kdump's list, and the time its
LogManager took ("Loaded N logs in X ms") must fall in kdump's estimate.

Two starts on the same partitions, one per kind of shutdown:

1. a clean stop (SIGTERM): ``startup-idx-0`` loses a middle segment's ``.index`` (recovered at
   open, and the producer snapshots above it deleted: a replay follows), ``startup-snap-0``
   every producer snapshot (after a clean stop the broker then skips the rebuild: no producer
   state), ``startup-dmg-0`` gets a batch with a bad CRC in a middle segment (unnoticed: no
   segment recovers after a clean stop) and an index file with no ``.log``;
2. a kill (SIGKILL) right after that start: ``startup-dmg-0``'s recovery point set to 0 (the
   damage is then recovered: cut, every later segment deleted), ``startup-idx-0`` and
   ``-1`` lose a middle segment's ``.index`` again and get a bad CRC in it (recovered at open,
   cut there, nothing after it deleted; in ``-0`` below its recovery point, in ``-1`` from
   0 on), ``startup-snap-0`` its snapshots again (a replay from the log start).

Every other partition of the shared log dir (other scenarios' topics, internal topics, the
KRaft metadata log) is compared too.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from realkafka import (
    Broker,
    Cluster,
    Release,
    client_log,
    create_topic,
    load_logs,
    produce,
    wait_for_leaders,
)
from realkafka.broker_log import LoadReport
from realkafka.files import batch_spans, flip_batch, offset_checkpoint_at, set_recovery_points
from startup_check import check_load, check_time, partitions, startup_json
from test_kafka_crash import kdump_json, producers_predicted, producers_served

from kdump.format.names import CLEAN_SHUTDOWN, RECOVERY_POINT_CHECKPOINT

pytestmark = pytest.mark.kafka

CONFIG = {"segment.index.bytes": "128", "index.interval.bytes": "1024"}
"""A segment rolls every 16 index entries: a few KiB each, several per partition."""
TOPICS = {"startup-idx": 2, "startup-snap": 1, "startup-dmg": 1}


def logs(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def flip_middle_batch(log: Path) -> None:
    flip_batch(log, len(batch_spans(log)) // 2)


def middle(partition: Path) -> Path:
    found = logs(partition)
    assert len(found) >= 4, f"{partition}: {len(found)} segments"
    return found[1]


def base(log: Path) -> int:
    return int(log.name.split(".")[0])


def start_and_compare(broker: Broker, said: Any) -> LoadReport:
    broker.start()
    report = LoadReport.parse(broker.log_lines())
    assert check_load(said, report, broker.log_dir) == []
    assert check_time(said, report, broker.log_dir) is None
    return report


def test_kdump_startup_lists_what_the_broker_does(
    kafka_release: Release, kafka_broker: Broker, tmp_path: Path
) -> None:
    broker = kafka_broker
    for topic, count in TOPICS.items():
        create_topic(broker.bootstrap, topic, count, config=CONFIG)
    common = {"value_bytes": 200, "idempotent": True, "linger_ms": 0, "batch_size": 1024}
    jobs: list[dict[str, Any]] = [
        {"topic": topic, "partition": p, "records": 600, "keys": 7, **common}
        for topic, count in TOPICS.items()
        for p in range(count)
    ]
    produce(kafka_release, broker.bootstrap, *jobs, log=client_log(tmp_path))
    d = broker.log_dir
    idx0, idx1 = d / "startup-idx-0", d / "startup-idx-1"
    snap, dmg = d / "startup-snap-0", d / "startup-dmg-0"

    # 1. a clean stop
    broker.stop()
    assert (d / CLEAN_SHUTDOWN).exists()
    middle(idx0).with_suffix(".index").unlink()
    for f in snap.glob("*.snapshot"):
        f.unlink()
    flip_middle_batch(middle(dmg))
    shutil.copy(logs(dmg)[0].with_suffix(".index"), dmg / f"{99999:020d}.index")
    said = startup_json(d)
    txn = kdump_json("txn", str(idx0), str(snap))
    p = partitions(said)
    assert said["log_dirs"][0]["clean_shutdown"] is True
    assert p["startup-idx-0"]["indexes_rebuilt"] == [base(middle(idx0))]
    assert p["startup-idx-0"]["producer_state_replays"]  # KAFKA-5829: the snapshots above go
    assert p["startup-snap-0"]["producer_state_dropped"] is True
    assert p["startup-dmg-0"]["recovers"] is False  # the bad CRC goes unnoticed
    assert p["startup-dmg-0"]["orphan_indexes"] == [f"{99999:020d}.index"]
    start_and_compare(broker, said)
    # the producer state the broker then holds: none where it skipped the rebuild
    wait_for_leaders(broker.bootstrap, ["startup-idx", "startup-snap"])
    served = producers_served(broker.bootstrap, [("startup-idx", 0), ("startup-snap", 0)])
    assert served == producers_predicted(txn)
    assert served["startup-snap-0"] == [] and served["startup-idx-0"] != []

    # 2. a kill right after that start
    broker.kill()
    assert not (d / CLEAN_SHUTDOWN).exists()
    points = offset_checkpoint_at(d / RECOVERY_POINT_CHECKPOINT) or {}
    set_recovery_points(d, {("startup-dmg", 0): 0, ("startup-idx", 1): 0})
    for partition in (idx0, idx1):
        segment = middle(partition)
        segment.with_suffix(".index").unlink()
        flip_middle_batch(segment)
    for f in snap.glob("*.snapshot"):
        f.unlink()
    said = startup_json(d)
    p = partitions(said)
    assert points[("startup-idx", 0)] > base(middle(idx0))
    assert p["startup-dmg-0"]["segments_deleted"]  # recoverLog's cut deletes what follows
    for name in ("startup-idx-0", "startup-idx-1"):
        assert p[name]["truncates_to"] is not None and p[name]["segments_deleted"] == [], name
    assert p["startup-snap-0"]["producer_state_from"] == 0  # a replay from the log start
    start_and_compare(broker, said)
    # the cut at open deleted nothing after it: the broker serves every later segment
    for name in ("startup-idx-0", "startup-idx-1"):
        assert len(logs(d / name)) == p[name]["partition"]["segments"], name


def test_a_directory_that_is_no_partition_stops_the_load(
    kafka_release: Release, kafka_single: Cluster, tmp_path: Path
) -> None:
    """A mount point's lost+found in a log dir: Kafka's LogManager throws on it (the broker
    stops starting; checked with a broker once, here with its LogManager alone: load_logs),
    and kdump startup says so first."""
    broker = kafka_single.brokers[0]
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    shutil.copy(broker.log_dir / "meta.properties", log_dir)
    (log_dir / "lost+found").mkdir()
    said = startup_json(log_dir)
    assert said["log_dirs"][0]["not_partitions"] == ["lost+found"]
    loaded = load_logs(kafka_release, broker.properties_file, log_dir, {}, client_log(tmp_path))
    assert loaded.error is not None
    assert "'lost+found' is not in the form of topic-partition" in loaded.error
