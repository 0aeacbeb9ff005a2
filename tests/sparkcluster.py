"""A real Spark standalone cluster for the tests and bench/bench_spark.py (issue 40): a master and
two workers, each its own JVM started from the pyspark package's ``spark-class``, on free
localhost ports, with small memory; and the executors' Python, a virtualenv holding pyspark's
own requirements (pyarrow, pandas, numpy) and no kdump, so that every job proves kdump ships
itself.

The workers run in a mount namespace of their own (``unshare``) where ``hidden/`` is an empty
tmpfs: a directory the driver sees and the executors do not, as a path on a node that does not
mount the share. Where ``unshare`` is refused, the workers run as usual and ``hidden`` is None.

Every process is started in a process group of its own and ends with the session
(``stop``: the workers take their executors with them; then no process whose command line names
the cluster's directory may be left). A session that dies without stopping it sends the daemons
SIGTERM (PR_SET_PDEATHSIG, as tests/early.py's runs).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

F = TypeVar("F", bound=Callable[..., object])

EXECUTOR_PACKAGES = (
    "pyarrow",
    "numpy",
    "numpy.libs",
    "pandas",
    "dateutil",
    "pytz",
    "tzdata",
    "six.py",
)
"""pyspark's own requirements (its sql extra: pyarrow, pandas, numpy) and theirs: all the
executors' Python holds. Linked from this environment (no download); never kdump, click, rich,
crcmod, crc32c or cramjam."""
WORKERS = 2
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
DAEMON_MEMORY = "256m"

TEST_DEFAULTS = f"""\
# the test cluster's settings for every application: small, and quick to start (a JVM that
# lives seconds pays more for the optimizing compiler than it gains)
spark.executor.memory {EXECUTOR_MEMORY}
spark.executor.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC
spark.ui.enabled false
"""

_DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
if sys.platform.startswith("linux"):
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != int(sys.argv[1]):
        sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def make_executor_python(venv: Path) -> Path:
    """A virtualenv of this Python with EXECUTOR_PACKAGES linked in, and the test's gate
    (tests/executor_gate.py) as its sitecustomize; its interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    here = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (there,) = venv.glob("lib/python*/site-packages")
    for name in EXECUTOR_PACKAGES:
        if (here / name).exists():
            (there / name).symlink_to(here / name)
    shutil.copyfile(Path(__file__).with_name("executor_gate.py"), there / "sitecustomize.py")
    return venv / "bin" / "python"


class SparkCluster:
    """One standalone cluster; ``start()`` launches it (at once: the tests that use it are
    known when the session has collected them), ``ready()`` waits for its workers."""

    started: ClassVar[list[SparkCluster]] = []

    def __init__(self) -> None:
        self.root: Path | None = None
        self.processes: list[subprocess.Popen[bytes]] = []
        self.port = self.web_port = 0
        self.hidden: Path | None = None
        self.executor_python = Path()

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def web(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def env(self) -> dict[str, str]:
        """The environment of the daemons, and of a driver a test starts: no PYTHONPATH (the
        executors must not find this tree), Spark's conf folder empty (the machine's own
        spark-defaults.conf does not apply), Spark's ports on the loopback."""
        assert self.root is not None
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(self.root / "conf"),
            SPARK_LOG_DIR=str(self.root / "logs"),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
            SPARK_NO_DAEMONIZE="1",
        )
        return env

    def start(self) -> None:
        if self.root is not None:
            return
        self.root = Path(tempfile.mkdtemp(prefix="kdump-spark-cluster-"))
        SparkCluster.started.append(self)
        (self.root / "conf").mkdir()
        (self.root / "conf" / "spark-defaults.conf").write_text(TEST_DEFAULTS)
        self.executor_python = make_executor_python(self.root / "executor-venv")
        self.port, self.web_port = free_port(), free_port()
        spark_class = str(spark_home() / "bin" / "spark-class")
        self._launch(
            "master",
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.web_port)],
        )  # fmt: skip
        hidden = self.root / "hidden"
        hidden.mkdir()
        wrapper = _hiding(hidden)
        self.hidden = hidden if wrapper else None
        for n in range(WORKERS):
            self._launch(
                f"worker{n}",
                [*wrapper, spark_class, "org.apache.spark.deploy.worker.Worker", self.url,
                 "--host", "127.0.0.1", "--cores", "1", "--memory", WORKER_MEMORY,
                 "--port", "0", "--webui-port", "0", "--work-dir", str(self.root / f"work{n}")],
            )  # fmt: skip

    def _launch(self, name: str, args: list[str]) -> None:
        assert self.root is not None
        log = open(self.root / f"{name}.out", "wb")  # noqa: SIM115 (the child holds it)
        with log:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *args],
                    env=self.env(),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )

    def status(self) -> dict[str, Any]:
        """The master's JSON status page (workers, active and completed applications)."""
        with urllib.request.urlopen(f"{self.web}/json/", timeout=10) as page:
            return dict(json.load(page))

    def ready(self, timeout: float = 180) -> SparkCluster:
        self.start()
        deadline = time.monotonic() + timeout
        while True:
            for p in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited with {p.returncode}: {self.logs()}")
            try:
                if self.status().get("aliveworkers") == WORKERS:
                    return self
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Spark cluster did not start: {self.logs()}")
            time.sleep(0.3)

    def logs(self) -> str:
        assert self.root is not None
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.root.glob("*.out"))
        )

    def executor_pids(self) -> list[int]:
        """The executor JVMs the workers run now (CoarseGrainedExecutorBackend)."""
        return [pid for pid, cmd in self._ours() if "CoarseGrainedExecutorBackend" in cmd]

    def _ours(self) -> list[tuple[int, str]]:
        """The cluster's processes: the daemons, and whatever they started (executors, their
        Python workers), all of which inherit the daemons' environment, which names the
        cluster's directory (SPARK_LOG_DIR)."""
        if self.root is None:
            return []
        mark = f"SPARK_LOG_DIR={self.root / 'logs'}".encode()
        return [(pid, cmd) for pid, cmd, env in _processes() if mark in env.split(b"\0")]

    def leftovers(self) -> list[str]:
        """The cluster's processes still running."""
        return [f"{pid} {cmd[:200]}" for pid, cmd in self._ours()]

    def stop(self) -> None:
        for p in self.processes:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for p in self.processes:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for pid, _ in self._ours():  # executors, Python workers a daemon left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.processes.clear()
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    def starts(self, test: F) -> F:
        """Decorates a test that uses the cluster: conftest.py starts it once collected."""
        test.start_early = self.start  # type: ignore[attr-defined]
        return test


def _hiding(hidden: Path) -> list[str]:
    """The command that runs a worker with an empty tmpfs over ``hidden``, in a mount namespace
    of its own (as root, or in a user namespace of its own otherwise); [] where the system
    refuses either."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    flags = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        flags = ["--user", "--map-root-user", *flags]
    mount = f'mount -t tmpfs kdump-hidden {hidden} && exec "$@"'
    probe = subprocess.run(
        [unshare, *flags, "sh", "-c", mount, "sh", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return []
    return [unshare, *flags, "sh", "-c", mount, "sh"]


def _processes() -> list[tuple[int, str, bytes]]:
    """(pid, command line, environment) of each process this user may read."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        out.append((int(entry.name), cmdline, environ))
    return out


CLUSTER = SparkCluster()
"""The session's cluster: tests decorate themselves with ``CLUSTER.starts`` and take it from the
``spark_cluster`` fixture (tests/test_spark_cluster.py)."""
