"""One run of a command, as an audit records it: kdump's version, when it started and how long
it took, on which host, and which broker and cluster the log dirs belong to (their
``meta.properties``: ``node.id`` in version 1, ``broker.id`` in version 0, ``cluster.id``,
``directory.id``)."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from kdump import __version__
from kdump.checks.findings import Finding
from kdump.errors import KdumpError
from kdump.log_dir import LogDir
from kdump.storage import local_folder, parent_location
from kdump.tuples import NamedTuple


class LogDirIdentity(NamedTuple):
    path: str
    meta_properties_version: int | None = None
    node_id: int | None = None
    """node.id (version 1) or broker.id (version 0)."""
    cluster_id: str | None = None
    directory_id: str | None = None
    error: str | None = None
    """Why meta.properties could not be read, when it is there but does not parse."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "meta_properties_version": self.meta_properties_version,
            "broker_id": self.node_id,
            "cluster_id": self.cluster_id,
            "directory_id": self.directory_id,
            "error": self.error,
        }


def identify(log_dir: str | os.PathLike[str]) -> LogDirIdentity:
    """What ``log_dir/meta.properties`` says (kdump.log_dir.LogDir); empty when there is none,
    and for a prefix in an object store (tiered storage keeps no meta.properties)."""
    location = str(log_dir)
    folder = local_folder(location)
    if folder is None:
        return LogDirIdentity(location)
    try:
        meta = LogDir(folder).meta_properties()
    except KdumpError as e:
        return LogDirIdentity(location, error=str(e))
    if meta is None:
        return LogDirIdentity(location)
    return LogDirIdentity(location, meta.version, meta.node_id, meta.cluster_id, meta.directory_id)


def log_dir_of(partition_path: str) -> str:
    """The log dir a partition directory (or a log dir's own file) lies in: its parent, as
    an absolute path (a metric's label must not depend on where cron started); for a
    partition in an object store, the URL of the prefix holding it."""
    return parent_location(partition_path)


class RunClock:
    """Started when a command starts; ``info()`` when it is done."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.started = time.time()
        self._start = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._start

    def info(self, log_dirs: Iterable[str]) -> RunInfo:
        import socket

        return RunInfo(
            command=self.command,
            version=__version__,
            started=int(self.started * 1000),
            duration_seconds=self.elapsed(),
            host=socket.gethostname(),
            log_dirs=tuple(identify(d) for d in dict.fromkeys(log_dirs)),
        )


class RunInfo(NamedTuple):
    command: str
    version: str
    started: int
    """Epoch milliseconds."""
    duration_seconds: float
    host: str
    log_dirs: tuple[LogDirIdentity, ...]

    @property
    def broker_id(self) -> int | None:
        """The broker the log dirs belong to (the first that says; a broker's dirs agree)."""
        return next((d.node_id for d in self.log_dirs if d.node_id is not None), None)

    @property
    def cluster_id(self) -> str | None:
        return next((d.cluster_id for d in self.log_dirs if d.cluster_id is not None), None)

    def to_dict(self, findings: Iterable[Finding] = ()) -> dict[str, Any]:
        from kdump.units import iso

        return {
            "command": self.command,
            "kdump_version": self.version,
            "started": self.started,
            "started_iso": iso(self.started),
            "duration_seconds": round(self.duration_seconds, 6),
            "host": self.host,
            "broker_id": self.broker_id,
            "cluster_id": self.cluster_id,
            "log_dirs": [d.to_dict() for d in self.log_dirs],
            "findings_by_code": dict(sorted(Counter(f.code for f in findings).items())),
        }
