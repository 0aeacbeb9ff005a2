"""KRaft brokers on localhost: formatted, started, stopped cleanly or killed, restarted.

A ``Cluster`` of one node is a combined-mode server (``process.roles=broker,controller``); of
three, node 1 is the combined one and the only voter, nodes 2 and 3 brokers alone, so a test
may kill or stop either of those without losing the controller quorum. Every port is a free
localhost port picked when the cluster first starts (picked again, up to three times, when one
was taken meanwhile). Each node keeps under ``home``:

    server.properties   the node's configuration
    data/               its one log dir (``log.dirs``)
    logs/server.log     its log4j output, INFO and above, appended across restarts

The JVMs are children of the test process and die with it (PR_SET_PDEATHSIG) should pytest
itself be killed.
"""

from __future__ import annotations

import base64
import ctypes
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .release import Release, Unavailable

START_TIMEOUT = 180.0
"""Seconds a node may take to serve: JIT warm-up on a busy 2-core machine, log recovery."""
STOP_TIMEOUT = 120.0
STARTED = "Kafka Server started"
"""KafkaRaftServer's line once the broker (and controller) serve."""

DEFAULTS = {
    # one replica of the internal topics, few partitions: a small cluster that starts fast
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    # a killed node is fenced, and its partitions led again after a restart, sooner
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
}


SHARE_GROUPS_EARLY_ACCESS = {
    # Kafka 4.0's share groups (KIP-932) are early access, off unless asked for; 4.1 on has them
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "unstable.api.versions.enable": "true",
}


def release_defaults(version: str) -> dict[str, str]:
    """What a release needs beside DEFAULTS for the tests to reach all it can do."""
    return dict(SHARE_GROUPS_EARLY_ACCESS) if version.startswith("4.0.") else {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # in the child, before exec: SIGKILL when the test process dies (Linux)
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def new_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` makes one (a base64url UUID), never one
    starting with ``-`` (Uuid.randomUuid draws again: the storage tool would read it as an
    option)."""
    while True:
        found = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not found.startswith("-"):
            return found


class Broker:
    """One KRaft node. ``config`` adds to (or overrides) the server.properties the harness
    writes."""

    def __init__(
        self,
        release: Release,
        home: Path,
        node_id: int,
        controller: bool,
        config: Mapping[str, str] | None = None,
        jvm: Sequence[str] | None = None,
    ) -> None:
        self.release, self.home, self.node_id, self.controller = release, home, node_id, controller
        self.config = dict(config or {})
        self.jvm = jvm
        """JVM options replacing the fast-start ones (release.PRODUCTION_JVM: a broker's)."""
        self.port = 0
        self.controller_port = 0
        self.voters = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._log_mark = 0

    def __repr__(self) -> str:
        return f"Broker({self.node_id}, {self.bootstrap}, {self.home})"

    @property
    def log_dir(self) -> Path:
        """The node's one log dir."""
        return self.home / "data"

    @property
    def server_log(self) -> Path:
        return self.home / "logs" / "server.log"

    @property
    def properties_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.log_dir / f"{topic}-{partition}"

    def cleaned_to(self, topic: str, partition: int) -> int | None:
        """The cleaner-offset-checkpoint entry of the partition (None: none yet)."""
        path = self.log_dir / "cleaner-offset-checkpoint"
        if not path.exists():
            return None
        for line in path.read_text().splitlines()[2:]:
            parts = line.split()
            if len(parts) == 3 and (parts[0], parts[1]) == (topic, str(partition)):
                return int(parts[2])
        return None

    def active_base(self, topic: str, partition: int) -> int:
        """The base offset of the partition's active segment (its last .log)."""
        logs = self.partition_dir(topic, partition).glob("*.log")
        return max(int(p.name.split(".")[0]) for p in logs)

    def properties(self) -> dict[str, str]:
        listeners = [f"PLAINTEXT://127.0.0.1:{self.port}"]
        if self.controller:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        return {
            "process.roles": "broker,controller" if self.controller else "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "controller.listener.names": "CONTROLLER",
            "listeners": ",".join(listeners),
            "advertised.listeners": listeners[0],
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            **DEFAULTS,
            **release_defaults(self.release.version),
            **self.config,
        }

    def write_properties(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self.properties().items()]
        self.properties_file.write_text("\n".join(lines) + "\n")

    def format(self, cluster_id: str) -> None:
        """``kafka-storage format``: meta.properties and, on the controller, the metadata log's
        bootstrap records."""
        self.write_properties()
        self.server_log.parent.mkdir(parents=True, exist_ok=True)
        command = self.release.java_command(
            "kafka.tools.StorageTool",
            "format",
            "-t",
            cluster_id,
            "-c",
            str(self.properties_file),
            log=self.home / "logs" / "format.log",
        )
        result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise Unavailable(
                f"kafka-storage format failed for node {self.node_id}: "
                f"{(result.stdout + result.stderr).strip()[-500:]}"
            )

    def launch(self) -> None:
        """Start the JVM (returns at once; ``wait_started`` waits until it serves)."""
        assert not self.running, f"{self} is running"
        self.write_properties()
        self._log_mark = self.server_log.stat().st_size if self.server_log.exists() else 0
        command = self.release.java_command(
            "kafka.Kafka", str(self.properties_file), log=self.server_log, heap="384m", jvm=self.jvm
        )
        with open(self.home / "logs" / "stdout.log", "ab") as out:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )

    def wait_started(self, timeout: float = START_TIMEOUT) -> None:
        """Until the node logs that it serves; Unavailable (port taken, failed start, too slow)
        otherwise, the JVM stopped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = self.log_lines()
            if any(STARTED in line for line in lines):
                return
            assert self.process is not None
            if self.process.poll() is not None:
                raise Unavailable(self._failure(lines))
            time.sleep(0.1)
        self.kill()
        raise Unavailable(f"node {self.node_id} did not serve within {timeout:.0f} s")

    def _failure(self, lines: list[str]) -> str:
        stdout = (self.home / "logs" / "stdout.log").read_text(errors="replace")
        text = "\n".join(lines) + stdout
        if "Address already in use" in text:
            return f"node {self.node_id}: a port was in use ({self.port}, {self.controller_port})"
        errors = [line for line in lines if " ERROR " in line or " FATAL " in line]
        tail = (errors or lines or stdout.splitlines() or ["no output"])[-3:]
        return (
            f"node {self.node_id} exited with {self.process and self.process.returncode}: "
            + (" | ".join(tail)[:800])
        )

    def start(self, timeout: float = START_TIMEOUT) -> None:
        self.launch()
        self.wait_started(timeout)

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """A clean shutdown (SIGTERM: controlled shutdown, then .kafka_cleanshutdown)."""
        if not self.running:
            return
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self} did not stop within {timeout:.0f} s; killed") from None
        self.process = None

    def kill(self) -> None:
        """SIGKILL: what the broker wrote stays in the page cache, nothing more is done."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self, timeout: float = START_TIMEOUT) -> None:
        self.stop()
        self.start(timeout)

    def log_lines(self) -> list[str]:
        """The node's log lines since it was last started (its own words on what it loaded,
        recovered and deleted)."""
        if not self.server_log.exists():
            return []
        with open(self.server_log, "rb") as f:
            f.seek(self._log_mark)
            return f.read().decode(errors="replace").splitlines()


class Cluster:
    """``nodes`` KRaft nodes under ``root`` (node N in ``root/nodeN``); ``config`` goes to every
    node's server.properties."""

    def __init__(
        self,
        release: Release,
        root: Path,
        nodes: int = 1,
        config: Mapping[str, str] | None = None,
        jvm: Sequence[str] | None = None,
    ) -> None:
        self.release, self.root = release, root
        self.cluster_id = new_cluster_id()
        self.brokers = [
            Broker(release, root / f"node{n}", n, controller=n == 1, config=config, jvm=jvm)
            for n in range(1, nodes + 1)
        ]
        self._formatted = False

    def __iter__(self) -> Iterator[Broker]:
        return iter(self.brokers)

    def broker(self, node_id: int) -> Broker:
        return self.brokers[node_id - 1]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers if b.running) or self.brokers[0].bootstrap

    def _pick_ports(self) -> None:
        for b in self.brokers:
            b.port = _free_port()
            b.controller_port = _free_port() if b.controller else 0
        voters = ",".join(
            f"{b.node_id}@127.0.0.1:{b.controller_port}" for b in self.brokers if b.controller
        )
        for b in self.brokers:
            b.voters = voters

    def start(self) -> None:
        """Format (first time) and start every node, in parallel; each waited on until it
        serves."""
        attempts = 1 if self._formatted else 3
        for attempt in range(attempts):
            if not self._formatted:
                self._pick_ports()
            try:
                if not self._formatted:
                    for b in self.brokers:
                        b.format(self.cluster_id)
                    self._formatted = True
                for b in self.brokers:
                    if not b.running:
                        b.launch()
                for b in self.brokers:
                    b.wait_started()
                return
            except Unavailable as e:
                self.kill()
                if "in use" not in str(e) or attempt == attempts - 1:
                    raise
                for b in self.brokers:  # ports are chosen again: start from a fresh format
                    shutil.rmtree(b.log_dir, ignore_errors=True)
                self._formatted = False

    def stop(self) -> None:
        for b in reversed(self.brokers):  # the controller last
            b.stop()

    def kill(self) -> None:
        for b in self.brokers:
            b.kill()


__all__ = ["Broker", "Cluster", "new_cluster_id"]
