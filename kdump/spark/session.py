"""The SparkSession kdump runs on: embedded ``local[*]`` by default, ``--master URL`` for a
cluster, ``--remote sc://...`` for a Spark Connect server, or the session spark-submit prepared
when kdump runs under spark-submit.

Started by kdump itself, the session takes its settings as spark-submit would (issue 40): the
command line's ``--conf``, over ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else the Spark
home's ``conf/``), with ``spark.master`` among them. ``spark.pyspark.python`` is the Python the
executors run: pyspark reads it from ``PYSPARK_PYTHON`` in the driver's environment, which
spark-submit sets from the setting and kdump now sets too. ``spark.pyspark.driver.python`` is
the driver's: kdump runs again under it where it names another interpreter
(``driver_python``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyspark.sql import SparkSession

from kdump.errors import KdumpError, SparkUnavailable

DEFAULT_MASTER = "local[*]"
LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
SUBMITTED = "PYSPARK_GATEWAY_PORT"
"""Set by spark-submit in the Python driver it starts: the JVM and its conf exist already."""
EXECUTOR_PYTHON = "spark.pyspark.python"
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
DRIVER_PYTHON = "spark.pyspark.driver.python"
RERUN = "KDUMP_DRIVER_PYTHON"
"""Set in the environment of kdump run again under spark.pyspark.driver.python: never twice."""


def spark_defaults() -> dict[str, str]:
    """spark-defaults.conf as spark-submit reads it (java.util.Properties, values trimmed): in
    ``$SPARK_CONF_DIR``, else in the Spark home's ``conf/`` (``$SPARK_HOME``, else pyspark's own
    directory); empty where there is none."""
    from pyspark.find_spark_home import _find_spark_home

    from kdump.format.textfiles import parse_properties

    folder = os.environ.get("SPARK_CONF_DIR") or os.path.join(_find_spark_home(), "conf")
    path = os.path.join(folder, "spark-defaults.conf")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise KdumpError(f"{path}: {e.strerror or e}") from None
    return {key: value.strip() for key, (value, _) in parse_properties(data, path).items()}


def session_options(
    master: str | None, conf: Mapping[str, str], defaults: Mapping[str, str], submitted: bool
) -> tuple[dict[str, str], str | None]:
    """The settings kdump starts Spark with, and the Python its executors run (None: pyspark's
    default, or spark-submit's). ``--conf`` over spark-defaults.conf; ``master`` over both."""
    given = {**defaults, **conf}
    options = {"spark.app.name": "kdump", "spark.ui.showConsoleProgress": "false"}
    options.update(conf)
    if not submitted:
        master = master or given.get("spark.master") or DEFAULT_MASTER
        # Only a JVM we launch takes our log config; spark-submit's keeps the user's. The
        # user's own options follow it (a -D given twice: the last wins), from --conf or
        # spark-defaults.conf (which this setting replaces: they would be lost).
        ours = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        theirs = given.get(DRIVER_JAVA_OPTIONS, "")
        options[DRIVER_JAVA_OPTIONS] = f"{ours} {theirs}".strip()
    if master is not None:
        options["spark.master"] = master
    python = given.get(EXECUTOR_PYTHON)
    if python is None and master is not None and master.startswith("local"):
        # Local workers must import kdump from this interpreter's environment, not `python3`.
        python = os.environ.get("PYSPARK_PYTHON") or sys.executable
    return options, python


def driver_python(conf: Mapping[str, str]) -> str | None:
    """The interpreter spark.pyspark.driver.python names (``--conf`` over spark-defaults.conf),
    where it is not the one running: kdump runs again under it (``run_under``)."""
    if SUBMITTED in os.environ or os.environ.get(RERUN):
        return None
    wanted = conf.get(DRIVER_PYTHON) or spark_defaults().get(DRIVER_PYTHON)
    if not wanted:
        return None
    if os.path.abspath(wanted) == os.path.abspath(sys.executable):
        return None
    return wanted


def run_under(python: str, argv: list[str]) -> None:
    """Replace this process by kdump run with ``argv`` under ``python`` (as spark-submit runs its
    driver under spark.pyspark.driver.python); one line where that Python has no kdump."""
    try:
        found = subprocess.run(
            [python, "-c", "import kdump"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise KdumpError(f"{DRIVER_PYTHON} {python}: cannot run it: {e}") from None
    if found.returncode != 0:
        raise KdumpError(
            f"{DRIVER_PYTHON} {python} has no kdump: install kdump there, or leave the setting "
            "out to run the driver in this Python"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[RERUN] = "1"
    os.execv(python, [python, "-m", "kdump", *argv])


def build_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    log_level: str = "ERROR",
    remote: str | None = None,
) -> SparkSession:
    """A SparkSession on ``master`` (``local[*]`` when neither it nor spark-defaults.conf names
    one, and spark-submit did not start this process: then spark-submit's --master and --conf
    apply), or on the Spark Connect server at ``remote``."""
    if remote is not None:
        return _connect(remote, conf or {})
    submitted = SUBMITTED in os.environ
    defaults = {} if submitted else spark_defaults()
    options, python = session_options(master, conf or {}, defaults, submitted)
    if python is not None:
        # what pyspark hands the executors (spark-submit sets it from spark.pyspark.python)
        os.environ["PYSPARK_PYTHON"] = python
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    try:
        with _own_sigint():
            if not submitted:
                _launch_driver(options)
            spark = builder.getOrCreate()
    except Exception as e:  # pyspark raises PySparkRuntimeError, Py4JError, OSError, ...
        raise SparkUnavailable(
            f"cannot start Spark on {options.get('spark.master', 'the spark-submit master')}: "
            f"{_first_line(e)} (is Java 17+ installed and JAVA_HOME set?)"
        ) from None
    spark.sparkContext.setLogLevel(log_level)
    return spark


@contextmanager
def _own_sigint() -> Iterator[None]:
    """The SIGINT handler in place before, back after the SparkContext started: pyspark's own
    (cancelAllJobs, then KeyboardInterrupt) calls the JVM from the thread that waits on the
    job, on the connection the job holds, and hangs there on a cluster; kdump's (an
    Interrupted raised) lets kdump.spark.tasks.interruptible cancel from another thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if before is not None:  # None: set outside Python, nothing of ours to put back
            signal.signal(signal.SIGINT, before)


def _connect(remote: str, conf: Mapping[str, str]) -> SparkSession:
    """A Spark Connect session: this process runs no JVM; the server's driver and executors do
    the work (spark.pyspark.python is the server's setting)."""
    builder = SparkSession.builder.remote(remote)
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as e:  # grpc's errors, pyspark's, a missing client package
        raise SparkUnavailable(
            f"cannot reach Spark Connect at {remote}: {_first_line(e)}"
        ) from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


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
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    remote: str | None = None,
) -> Iterator[SparkSession]:
    """The active session if there is one (a notebook, a test), else a new one stopped at exit
    (with the kdump it shipped to its executors: kdump.spark.ship)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    spark = build_session(master, conf, remote=remote)
    try:
        yield spark
    finally:
        from kdump.spark.ship import remove_shipments

        spark.stop()
        remove_shipments()
