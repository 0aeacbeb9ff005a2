"""The SparkSession kdump runs on: embedded ``local[*]`` by default, ``--master URL`` for a
cluster, or the session spark-submit prepared when kdump runs under spark-submit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyspark.sql import SparkSession

from kdump.errors import SparkUnavailable

DEFAULT_MASTER = "local[*]"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
SUBMITTED = "PYSPARK_GATEWAY_PORT"
"""Set by spark-submit in the Python driver it starts: the JVM and its conf exist already."""


def build_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
) -> SparkSession:
    """A SparkSession on ``master``; ``local[*]`` when none is given and spark-submit did not
    start this process (then spark-submit's --master and --conf apply)."""
    submitted = SUBMITTED in os.environ
    if master is None and not submitted:
        master = DEFAULT_MASTER
    options = {"spark.app.name": "kdump", "spark.ui.showConsoleProgress": "false"}
    if master is not None:
        options["spark.master"] = master
    if not submitted:
        # Only a JVM we launch takes our log config; spark-submit's keeps the user's.
        options["spark.driver.extraJavaOptions"] = (
            f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        )
    if master is not None and master.startswith("local"):
        # Local workers must import kdump from this interpreter's environment, not `python3`.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    options.update(conf or {})
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        if not submitted:
            _launch_driver(options)
        spark = builder.getOrCreate()
    except Exception as e:  # pyspark raises PySparkRuntimeError, Py4JError, OSError, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkUnavailable(
            f"cannot start Spark on {master or 'the spark-submit master'}: {first} "
            "(is Java 17+ installed and JAVA_HOME set?)"
        ) from None
    spark.sparkContext.setLogLevel(log_level)
    return spark


INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector"
"""What the JDK prints on every start of a JVM given ``--add-modules=jdk.incubator.vector``,
which Spark's launcher always adds (JavaModuleOptions). The JDK has no option to silence it
(ModuleBootstrap prints it unconditionally), so the driver's stderr goes through
``_forward``, which drops this one line and passes everything else on."""


def _launch_driver(options: Mapping[str, str]) -> None:
    """Start the driver JVM the session will use (unless one runs already), its stderr
    forwarded to ours without INCUBATOR_WARNING."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False)
    for key, value in options.items():
        conf.set(key, value)
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    stream = gateway.proc.stderr
    threading.Thread(target=_forward, args=(stream,), name="kdump-jvm-stderr", daemon=True).start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


def _forward(stream: IO[bytes]) -> None:
    # os.write on the descriptor, not sys.stderr: a daemon thread holding the lock of Python's
    # stderr buffer when the interpreter shuts down would abort it
    err = sys.stderr.fileno()
    for line in stream:
        if line.rstrip(b"\r\n") == INCUBATOR_WARNING:
            continue
        while line:
            line = line[os.write(err, line) :]


@contextmanager
def spark_session(
    master: str | None = None, conf: Mapping[str, str] | None = None
) -> Iterator[SparkSession]:
    """The active session if there is one (a notebook, a test), else a new one stopped at exit."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    spark = build_session(master, conf)
    try:
        yield spark
    finally:
        spark.stop()
