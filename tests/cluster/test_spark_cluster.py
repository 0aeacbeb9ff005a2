"""kdump on a real Spark standalone cluster (issue 40): a master and two workers in JVMs of their
own, executors whose Python has pyspark's requirements and no kdump (tests/sparkcluster.py).

Collected only by the run tests/test_spark_cluster.py starts beside the suite
(``KDUMP_SPARK_CLUSTER=1``), on the second core. One cluster serves every scenario, each a
driver as a user starts it: docs/spark.md's three ways (``--master``/``--conf``, spark-submit
with kdump/spark/submit.py, spark-defaults.conf), an executor killed mid-export, Ctrl-C on the
driver, a path the executors cannot see, the "kafka-segments" source, and Spark Connect.
Expected values: what the same commands give on ``local[2]`` (one driver of this session runs
them there), which must itself be `kdump verify`'s answer and the rows kdump's own extraction
gives without Spark: the cluster's findings and rows are compared row for row with both.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import CORRUPT, ORACLE  # noqa: E402
from exportread import read_export  # noqa: E402
from sparkcluster import CLUSTER, SparkCluster, free_port, spark_home  # noqa: E402

from kdump.checks.options import VerifyOptions  # noqa: E402
from kdump.checks.verify import verify_paths  # noqa: E402
from kdump.spark.extract import ONE_REPLICA, SegmentExport, export_plan  # noqa: E402
from kdump.spark.job import FINDINGS_DIR, TEMPORARY_DIR  # noqa: E402
from kdump.spark.schema import RECORD_SCHEMA, arrow_schema  # noqa: E402

KDUMP = str(Path(sys.executable).with_name("kdump"))
"""The console script, as a user runs it."""
SPARK_SUBMIT = str(spark_home() / "bin" / "spark-submit")
SUBMIT_PY = str(Path(__file__).resolve().parents[2] / "kdump" / "spark" / "submit.py")
WAIT = 300
"""Seconds a scenario's driver may take before the test gives up on it (a hang, not a speed)."""


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    CLUSTER.ready()
    yield CLUSTER
    CLUSTER.stop()
    assert CLUSTER.leftovers() == [], "processes of the cluster left running"


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker's log dir with damage of every level: txn-0 under a recovery point past its end
    (CHECKPOINT_BEYOND_LOG_END, a log dir's finding), plain-0 with a leader-epoch checkpoint its
    batches contradict (a partition's) and an index gone (a segment's), lz4-0 with a torn tail
    (LOG_TRUNCATED_TAIL, and EXPORT_GAP in an export), and three clean partitions."""
    root = tmp_path_factory.mktemp("cluster") / "kafka-logs"
    shutil.copytree(CORRUPT / "checkpoint-beyond-log-end-recovery-point" / "logdir", root)
    shutil.copytree(CORRUPT / "leader-epoch-inconsistent" / "plain-0", root / "plain-0")
    (root / "plain-0" / "00000000000000000258.index").unlink()
    for name in ("lz4-0", "gzip-0", "variety-0", "legacyv1-0"):
        shutil.copytree(ORACLE / name, root / name)
    last = max((root / "lz4-0").glob("*.log"))
    with open(last, "r+b") as f:
        f.truncate(last.stat().st_size - 10)
    return root


LOCAL_DRIVER = """\
import contextlib, json, sys
from kdump.cli import main
from kdump.spark.session import build_session
from kdump.spark.source import register
log_dir, out = sys.argv[1], sys.argv[2]
spark = build_session("local[2]", {"spark.ui.enabled": "false"})
codes = {}
for name, args in (("verify", ["spark", "verify", log_dir, "--format", "json"]),
                   ("export", ["spark", "export", log_dir, "-o", f"{out}/records"])):
    sys.argv = ["kdump", *args]  # the command line, run in this session (spark_session)
    with open(f"{out}/{name}.out", "w") as f, contextlib.redirect_stdout(f):
        try:
            main()
        except SystemExit as e:
            codes[name] = e.code
register(spark)
df = spark.read.format("kafka-segments").option("path", log_dir).load()
import pyarrow.parquet as pq
pq.write_table(df.toArrow(), f"{out}/source.parquet")
spark.stop()
print(json.dumps(codes))
"""
"""`kdump spark verify` and `kdump spark export` on ``local[2]``, then the source read there: one
driver (one JVM) for the three, as tests/test_spark.py runs the command line in its session."""


@pytest.fixture(scope="module")
def expected(log_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the cluster must give: the same commands' answers on ``local[2]`` (the verify
    document, the exported rows sorted by ``row_key`` and _findings' rows in order, the source's
    rows sorted), each first checked against `kdump verify` on ``log_dir`` (its JSON document,
    and its findings as _findings holds them, in order) and kdump's own extraction's rows."""
    result = verify_paths([str(log_dir)], VerifyOptions())
    local = subprocess.run(
        [KDUMP, "verify", str(log_dir), "--format", "json"], capture_output=True, text=True
    )
    assert local.returncode == 2, local.stderr
    document = json.loads(local.stdout)
    document.pop("run")
    rows = []
    for task in export_plan([str(log_dir)], topics=(), replicas=ONE_REPLICA).tasks:
        for batch in SegmentExport(task, arrow_schema(RECORD_SCHEMA)).batches():
            rows += batch.to_pylist()
    rows.sort(key=row_key)
    findings = [finding_key(f.to_dict()) for f in result.findings]
    assert {"CHECKPOINT_BEYOND_LOG_END", "LEADER_EPOCH_INCONSISTENT"} <= {f[0] for f in findings}

    out = tmp_path_factory.mktemp("local2")
    ran = subprocess.run(
        [sys.executable, "-c", LOCAL_DRIVER, str(log_dir), str(out)],
        capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert json.loads(ran.stdout.splitlines()[-1]) == {"verify": 2, "export": 2}
    on_local = json.loads((out / "verify.out").read_text())
    assert on_local.pop("run")["command"] == "spark verify"
    assert on_local == document
    exported = sorted(read_export(out / "records").to_pylist(), key=row_key)
    assert exported == rows
    export_findings = pq.read_table(out / "records" / FINDINGS_DIR).to_pylist()
    assert [finding_key(r) for r in export_findings if r["code"] != "EXPORT_GAP"] == findings
    source = sorted(pq.read_table(out / "source.parquet").to_pylist(), key=row_key)
    assert source == rows
    return {"verify": on_local, "findings": findings, "rows": exported,
            "export_findings": export_findings, "source": source}  # fmt: skip


def finding_key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["code"], f["severity"], f["path"], f["offset"], f["position"], f["message"])


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["segment_file"], row["batch_position"], row["offset"])


def driver_env(cluster: SparkCluster, **extra: str) -> dict[str, str]:
    """A driver's environment on this machine: the cluster's (no PYTHONPATH, the cluster's own
    conf folder), without the daemons' settings."""
    env = cluster.env()
    for name in ("SPARK_NO_DAEMONIZE", "SPARK_DAEMON_MEMORY"):
        env.pop(name, None)
    return {**env, **extra}


def run(args: list[str], cluster: SparkCluster, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=driver_env(cluster, **extra), capture_output=True, text=True, timeout=WAIT
    )


def on_cluster(cluster: SparkCluster) -> list[str]:
    """docs/spark.md's first way: the master and the executors' Python on the command line."""
    return ["--master", cluster.url, "--conf", f"spark.pyspark.python={cluster.executor_python}"]


def assert_export(out: Path, expected: dict[str, Any]) -> None:
    """The rows written are local[2]'s, row for row, and so is _findings: `kdump verify`'s
    findings on the partitions exported (issue 44 point 3) and the torn segment's EXPORT_GAP."""
    assert sorted(read_export(out).to_pylist(), key=row_key) == expected["rows"]
    written = pq.read_table(out / FINDINGS_DIR).to_pylist()
    assert written == expected["export_findings"]
    assert [r["path"] for r in written if r["code"] == "EXPORT_GAP"] == [
        r["path"] for r in written if r["code"] == "LOG_TRUNCATED_TAIL"
    ]


def applications(cluster: SparkCluster) -> tuple[list[str], list[str]]:
    """The master's running applications and its finished ones (ids)."""
    status = cluster.status()
    return (
        [a["id"] for a in status["activeapps"]],
        [a["id"] for a in status["completedapps"]],
    )


class Gate:
    """tests/executor_gate.py's gate: the first task to open a segment waits until released
    (at the latest when the ``with`` block ends, the driver then killed if it still runs)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir()
        self.directory = directory
        self.conf = ["--conf", f"spark.executorEnv.KDUMP_TEST_GATE={directory}"]
        self.drivers: list[subprocess.Popen[str]] = []

    def __enter__(self) -> Gate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        for driver in self.drivers:
            if driver.poll() is None:
                driver.kill()
                driver.communicate()

    def reached(self, driver: subprocess.Popen[str]) -> tuple[int, int]:
        """(the waiting Python worker, its executor JVM), once a task of ``driver`` waits."""
        self.drivers.append(driver)
        deadline = time.monotonic() + WAIT
        while not (self.directory / "reached").exists():
            if driver.poll() is not None:
                raise AssertionError(f"the driver ended first: {driver.communicate()}")
            assert time.monotonic() < deadline, "no task reached the gate"
            time.sleep(0.1)
        worker, executor = (self.directory / "reached").read_text().split()
        return int(worker), int(executor)

    def release(self) -> None:
        (self.directory / "open").touch()


@CLUSTER.starts
def test_verify_with_master_and_conf_as_the_readme_says(
    cluster: SparkCluster, log_dir: Path, expected: dict[str, Any], tmp_path: Path
) -> None:
    """`kdump spark verify DIR --master URL --conf spark.pyspark.python=...` on executors with
    no kdump: the same document as `kdump verify`, finding for finding. The driver runs
    under spark.pyspark.driver.python (here a wrapper that logs its calls), as spark-submit runs
    it; the executors load kdump's C module from what the driver shipped (no note)."""
    calls = tmp_path / "driver-python.calls"
    wrapper = tmp_path / "driver-python"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    driver = ["--conf", f"spark.pyspark.driver.python={wrapper}"]
    ran = run([KDUMP, "spark", "verify", str(log_dir), *on_cluster(cluster), *driver,
               "--format", "json"], cluster)  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr == ""
    document = json.loads(ran.stdout)
    assert document.pop("run")["command"] == "spark verify"
    assert document == expected["verify"]
    assert calls.read_text().splitlines() == [
        "-c import kdump",
        f"-m kdump spark verify {log_dir} {' '.join(on_cluster(cluster))} {' '.join(driver)} "
        "--format json",
    ]


@CLUSTER.starts
def test_export_under_spark_submit_survives_a_lost_executor(
    cluster: SparkCluster, log_dir: Path, expected: dict[str, Any], tmp_path: Path
) -> None:
    """spark-submit with kdump/spark/submit.py (docs/spark.md's second way) runs `kdump spark
    export`; the executor running the first segment is killed mid-task (its JVM and its Python
    workers, as a lost node): Spark runs the task again elsewhere and the export is complete,
    row for row, with verify's findings in _findings."""
    out = tmp_path / "records"
    with Gate(tmp_path / "gate") as gate:
        driver = subprocess.Popen(
            [SPARK_SUBMIT, "--master", cluster.url,
             "--conf", f"spark.pyspark.python={cluster.executor_python}",
             "--conf", f"spark.pyspark.driver.python={sys.executable}", *gate.conf,
             SUBMIT_PY, "spark", "export", str(log_dir), "--output", str(out)],
            env=driver_env(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        worker, executor = gate.reached(driver)
        assert executor in cluster.executor_pids()
        os.kill(executor, signal.SIGKILL)
        os.killpg(os.getpgid(worker), signal.SIGKILL)  # pyspark's daemon and its workers
        stdout, stderr = driver.communicate(timeout=WAIT)
    assert driver.returncode == 2, stderr
    assert executor not in cluster.executor_pids()
    # spark-submit's PythonRunner hands the driver's stderr to its stdout (redirectErrorStream)
    assert stdout.splitlines()[-1].startswith("exported ")
    assert_export(out, expected)


@CLUSTER.starts
def test_spark_defaults_conf_and_executors_without_kdump(
    cluster: SparkCluster, log_dir: Path, tmp_path: Path
) -> None:
    """docs/spark.md's third way: the master and the executors' Python from spark-defaults.conf
    (SPARK_CONF_DIR). With --no-ship, executors whose Python has no kdump are named in one line
    (exit 3), not a traceback; the run was the cluster's (one more application on its master)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.master  {cluster.url}\n"
        f"spark.pyspark.python={cluster.executor_python}\n"
        "spark.executor.memory 512m\nspark.ui.enabled false\n"
    )
    _, before = applications(cluster)
    ran = run([KDUMP, "spark", "verify", str(log_dir), "--no-ship"], cluster,
              SPARK_CONF_DIR=str(conf))  # fmt: skip
    assert ran.returncode == 3
    # the version the driver runs (its _version.py, which a build in the suite may rewrite)
    assert re.fullmatch(
        re.escape(
            f"kdump: the executors' Python ({cluster.executor_python} on {socket.gethostname()}) "
            "has no kdump: let kdump ship itself to the executors (without --no-ship), or "
            "install kdump "
        )
        + r"\S+ there\n",
        ran.stderr,
    ), ran.stderr
    running, after = applications(cluster)
    assert running == [] and len(after) == len(before) + 1


@CLUSTER.starts
def test_ctrl_c_on_the_driver_leaves_no_application_running(
    cluster: SparkCluster, log_dir: Path, tmp_path: Path
) -> None:
    """Ctrl-C while a task runs: the driver cancels the job, stops the application and exits
    130 with one line; the master then runs no application of it."""
    with Gate(tmp_path / "gate") as gate:
        driver = subprocess.Popen(
            [KDUMP, "spark", "export", str(log_dir), "-o", str(tmp_path / "out"),
             *on_cluster(cluster), *gate.conf],
            env=driver_env(cluster), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        gate.reached(driver)
        (application,), _ = applications(cluster)
        driver.send_signal(signal.SIGINT)
        _, stderr = driver.communicate(timeout=WAIT)
    assert driver.returncode == 130
    assert stderr.splitlines()[-1] == "kdump: stopped by SIGINT"
    running, finished = applications(cluster)
    assert running == [] and application in finished


DATA_SOURCE = """\
import json, sys
from kdump.spark.session import build_session
from kdump.spark.source import register
where, paths, out = sys.argv[1], sys.argv[2], sys.argv[3]
if where.startswith("sc://"):
    spark = build_session(remote=where)
else:
    spark = build_session(where, {"spark.pyspark.python": sys.argv[4]})
register(spark)
df = spark.read.format("kafka-segments").option("paths", paths).load()
import pyarrow.parquet as pq
pq.write_table(df.toArrow(), out)
spark.stop()
"""


def read_through_the_source(
    cluster: SparkCluster, where: str, paths: list[str], out: Path
) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-c", DATA_SOURCE, where, json.dumps(paths), str(out),
                str(cluster.executor_python)], cluster)  # fmt: skip


@CLUSTER.starts
def test_data_source_on_the_cluster(
    cluster: SparkCluster, log_dir: Path, expected: dict[str, Any], tmp_path: Path
) -> None:
    """A user's program reads the "kafka-segments" source on the cluster (register ships kdump):
    local[2]'s rows, which are kdump's own extraction's, each once (one replica each)."""
    ran = read_through_the_source(cluster, cluster.url, [str(log_dir)], tmp_path / "rows.parquet")
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = pq.read_table(tmp_path / "rows.parquet").to_pylist()
    assert sorted(rows, key=row_key) == expected["source"]


@pytest.fixture
def connect_server(cluster: SparkCluster, tmp_path: Path) -> Iterator[str]:
    """pyspark's own start-connect-server.sh on the cluster's master, its executors running the
    executors' Python; its URL (sc://), the server stopped after the test."""
    port = free_port()
    log = tmp_path / "connect-server.out"
    server = subprocess.Popen(
        [str(spark_home() / "sbin" / "start-connect-server.sh"), "--master", cluster.url,
         "--driver-memory", "512m",
         "--conf", f"spark.connect.grpc.binding.port={port}",
         "--conf", "spark.connect.grpc.binding.address=127.0.0.1"],
        # the server's Python functions run PYSPARK_PYTHON of its environment (spark-env.sh)
        env=driver_env(cluster, SPARK_NO_DAEMONIZE="1", SPARK_PID_DIR=str(tmp_path),
                       PYSPARK_PYTHON=str(cluster.executor_python)),
        stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WAIT
        while True:
            assert server.poll() is None, f"Spark Connect server exited: {server_log(tmp_path)}"
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the Spark Connect server did not listen"
                time.sleep(0.3)
        yield f"sc://127.0.0.1:{port}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def server_log(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-5000:] for p in sorted(folder.rglob("*.out")))


@CLUSTER.starts
def test_spark_connect(
    cluster: SparkCluster,
    connect_server: str,
    log_dir: Path,
    expected: dict[str, Any],
    tmp_path: Path,
) -> None:
    """`--remote sc://...`: verify, export and the source through a Spark Connect server on the
    cluster, kdump shipped to it as an artifact: the same findings and rows. A path only this
    machine sees (the workers have an empty folder over it), to read or an export's --output,
    is one line naming it."""
    findings = tmp_path / "findings"
    ran = run([KDUMP, "spark", "verify", str(log_dir), "--remote", connect_server,
               "--format", "json", "-o", str(findings)], cluster)  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    document = json.loads(ran.stdout)
    document.pop("run")
    assert document == expected["verify"]
    written = [finding_key(r) for r in pq.read_table(findings).to_pylist()]
    assert written == expected["findings"]

    out = tmp_path / "records"
    ran = run([KDUMP, "spark", "export", str(log_dir), "-o", str(out), "--remote", connect_server],
              cluster)  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert_export(out, expected)

    ran = read_through_the_source(cluster, connect_server, [str(log_dir)], tmp_path / "rows.pq")
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = pq.read_table(tmp_path / "rows.pq").to_pylist()
    assert sorted(rows, key=row_key) == expected["source"]

    if cluster.hidden is None:
        pytest.skip("unshare is refused here: no folder the workers cannot see")
    unseen = cluster.hidden / "kafka-logs"
    shutil.copytree(log_dir, unseen)
    ran = run([KDUMP, "spark", "verify", str(unseen), "--remote", connect_server], cluster)
    assert ran.returncode == 3
    named, _, message = ran.stderr.removeprefix("kdump: ").partition(": ")
    assert Path(named).parent == unseen and Path(named).is_dir()
    assert message == NOT_SEEN

    # an export's --output only this machine sees: its files would stay on the executors' disks
    out = cluster.hidden / "records"
    ran = run([KDUMP, "spark", "export", str(log_dir), "-o", str(out), "--remote", connect_server],
              cluster)  # fmt: skip
    assert ran.returncode == 3
    assert ran.stderr == f"kdump: {out / TEMPORARY_DIR}: {NOT_SEEN}"


NOT_SEEN = (
    f"not found on the executor on {socket.gethostname()}, though the driver found it: every "
    "executor must see the paths under the same name (a shared or distributed file "
    "system), or read them from an object store (s3://...)\n"
)
