"""A segment in an object store, offering what ``kdump.segment.LogSegment`` offers (the checks
of kdump.checks take either): its files by URL, its log for the walk, its indexes as buffers."""

from __future__ import annotations

from functools import cached_property

from kdump.format.index import OffsetIndex
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.remote.files import file_exists, open_log, read_file
from kdump.remote.layouts import AIVEN, RemoteSegmentRef
from kdump.remote.mirror import RemoteRecords


class RemoteFile:
    """A segment file's URL where checks expect a path: ``exists()``, ``name``, ``str()``."""

    def __init__(self, url: str, present: bool | None = None) -> None:
        self.url = url
        self._present = present

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    def exists(self) -> bool:
        if self._present is None:
            self._present = file_exists(self.url)
        return self._present

    def is_file(self) -> bool:
        return self.exists()

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"RemoteFile({self.url!r})"


class RemoteSegment:
    """One remote segment, as LogSegment: ``log()``, ``offset_index()``, ``log_path``..."""

    def __init__(self, ref: RemoteSegmentRef) -> None:
        self.ref = ref
        self.base_offset = ref.base_offset
        self.directory = ref.partition_url

    def path(self, suffix: str) -> RemoteFile:
        """The segment's file ``suffix`` (".index"), present or not."""
        name = suffix.lstrip(".")
        if self.ref.layout == AIVEN:
            # Aiven's files live in its objects: the manifest says which (kdump.remote.files)
            return RemoteFile(self.ref.url(name), None if name != "log" else self._has("log"))
        if name == "leader-epoch-checkpoint" and self.ref.layout != AIVEN:
            name = "leader_epoch_checkpoint"
        return RemoteFile(self.ref.url(name), self._has(name))

    def _has(self, suffix: str) -> bool:
        return self.ref.object(suffix) is not None

    @property
    def log_path(self) -> RemoteFile:
        return self.path(".log")

    @property
    def index_path(self) -> RemoteFile:
        return self.path(".index")

    @property
    def time_index_path(self) -> RemoteFile:
        return self.path(".timeindex")

    @property
    def txn_index_path(self) -> RemoteFile:
        return self.path(".txnindex")

    @property
    def snapshot_path(self) -> RemoteFile:
        return self.path(".snapshot")

    @property
    def leader_epoch_path(self) -> RemoteFile:
        return self.path(".leader-epoch-checkpoint")

    @cached_property
    def _log(self) -> RemoteRecords:
        found = self.ref.object("log")
        return open_log(self.ref.url("log"), None if found is None else found[1])

    def log(self) -> RemoteRecords:
        return self._log

    def _read(self, file: RemoteFile) -> bytes | None:
        return read_file(file.url) if file.exists() else None

    def offset_index(self) -> OffsetIndex | None:
        data = self._read(self.index_path)
        return None if data is None else OffsetIndex(data, self.base_offset, self.index_path.url)

    def time_index(self) -> TimeIndex | None:
        f = self.time_index_path
        data = self._read(f)
        return None if data is None else TimeIndex(data, self.base_offset, f.url)

    def txn_index(self) -> TransactionIndex | None:
        f = self.txn_index_path
        data = self._read(f)
        return None if data is None else TransactionIndex(data, self.base_offset, f.url)

    def close(self) -> None:
        if "_log" in self.__dict__:
            self._log.mirror.close()


__all__ = ["RemoteFile", "RemoteSegment"]
