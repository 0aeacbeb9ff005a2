"""The SparkSession kdump runs on: embedded ``local[*]`` by default, ``--master URL`` for a
cluster, or the session spark-submit prepared when kdump runs under spark-submit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from kdump.errors import KdumpError

DEFAULT_MASTER = "local[*]"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
SUBMITTED = "PYSPARK_GATEWAY_PORT"
"""Set by spark-submit in the Python driver it starts: the JVM and its conf exist already."""


class SparkUnavailable(KdumpError):
    """Spark could not start (no Java, a master that does not answer, a bad --conf)."""


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
    builder = SparkSession.builder.appName("kdump")
    if master is not None:
        builder = builder.master(master)
    if not submitted:
        # Only a JVM we launch takes our log config; spark-submit's keeps the user's.
        builder = builder.config(
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        )
    if master is not None and master.startswith("local"):
        # Local workers must import kdump from this interpreter's environment, not `python3`.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # pyspark raises PySparkRuntimeError, Py4JError, OSError, ...
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkUnavailable(
            f"cannot start Spark on {master or 'the spark-submit master'}: {first} "
            "(is Java 17+ installed and JAVA_HOME set?)"
        ) from None
    spark.sparkContext.setLogLevel(log_level)
    return spark


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
