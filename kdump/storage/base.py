"""The one interface to where Kafka's files are: a folder of them, read by name.

Three kinds implement it (kdump.storage.local, .objects, .tiered): a directory on disk, a prefix
in an object store holding Kafka's own file names (a backup or copy of a log dir, read with the
same semantics as on disk), and the layouts of tiered storage (closed segments only, as Kafka
tiers them). Everything above this layer (the opened partition, checks, repairs, renderers)
reads through a ``Storage`` and never asks where the bytes are.
"""

from __future__ import annotations

import mmap
from abc import ABC, abstractmethod
from collections.abc import Mapping
from functools import cached_property
from typing import ClassVar

from kdump.crc import Buffer
from kdump.errors import InputError
from kdump.format.names import SEGMENT_SUFFIXES, parse_segment_name
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple

SMALL_FILE_LIMIT = 1 << 30
"""The most of a file read whole (index files, checkpoints, snapshots): an index is at most
segment.index.bytes (10 MiB by default, 2 GiB at most)."""


class SegmentSet(NamedTuple):
    """The files of one segment, as a listing found them: suffix (``.log``...) -> file name."""

    base_offset: int
    files: Mapping[str, str]
    segment_id: str | None = None
    """Tiered storage's RemoteLogSegmentId (two uploads of one base offset differ by it)."""


class Storage(ABC):
    """A folder of Kafka's files (a partition directory, a log dir, or any folder above them)."""

    kind: ClassVar[str]
    """``local``, ``object-store`` or ``tiered``: how text output and JSON name it."""
    closed_segments_only: ClassVar[bool] = False
    """Tiered storage holds closed segments only: no active segment, no log dir."""

    location: str
    """How output names this folder: a path, or a URL."""

    @abstractmethod
    def files(self) -> Mapping[str, int]:
        """The files directly in this folder: name -> size in bytes (listed once)."""

    @abstractmethod
    def folders(self) -> list[str]:
        """The names of the folders directly in it (links not followed), in name order."""

    @abstractmethod
    def folder(self, name: str) -> Storage:
        """The folder ``name`` in this one."""

    @abstractmethod
    def read(self, name: str, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        """A small file whole (an mmap on disk): index files, checkpoints, snapshots."""

    def read_bytes(self, name: str, limit: int = SMALL_FILE_LIMIT) -> bytes:
        """A small file's first ``limit`` bytes, copied: nothing stays open (a checkpoint, a
        snapshot, a text file, kept after the read)."""
        buf = self.read(name, limit)
        try:
            return bytes(buf[:limit])
        finally:
            if isinstance(buf, mmap.mmap):
                buf.close()

    @abstractmethod
    def open_log(self, name: str) -> FileRecords:
        """A ``.log`` for the walk, read in windows."""

    @abstractmethod
    def modified_ms(self, name: str) -> int:
        """When the file was last written, epoch milliseconds (LogSegment.lastModified)."""

    @abstractmethod
    def location_of(self, name: str) -> str:
        """How output names the file ``name``: a path, or a URL."""

    @property
    def local_path(self) -> str | None:
        """The directory on disk, where there is one: what repairs write to (None elsewhere)."""
        return None

    @property
    def name(self) -> str:
        """This folder's own name (a partition directory's ``topic-0``)."""
        return self.location.rstrip("/").rsplit("/", 1)[-1]

    def exists(self, name: str) -> bool:
        try:
            return name in self.files()
        except InputError:  # the folder cannot be listed: no such file either
            return False

    def size_of(self, name: str) -> int:
        """Bytes of ``name`` as listed (0: not there, or the folder cannot be listed: the read
        that follows says why)."""
        try:
            return self.files().get(name, 0)
        except InputError:
            return 0

    @cached_property
    def _segment_sets(self) -> list[SegmentSet]:
        found: dict[int, dict[str, str]] = {}
        for name in self.files():
            parsed = parse_segment_name(name)
            if parsed is not None:
                found.setdefault(parsed.base_offset, {})[parsed.suffix] = name
        return [SegmentSet(base, found[base]) for base in sorted(found)]

    def segment_sets(self) -> list[SegmentSet]:
        """Every segment any of whose files is here, by base offset (Kafka's file names:
        LogFileUtils). A segment missing its ``.log`` is listed too (its index files are
        orphans)."""
        return self._segment_sets


class StoredFile(NamedTuple):
    """One file of a storage, and the path output prints for it (what the user named: dump's
    ``Dumping a.log`` keeps the path as given)."""

    storage: Storage
    name: str
    path: str

    def read(self, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        return self.storage.read(self.name, limit)

    def open_log(self) -> FileRecords:
        return self.storage.open_log(self.name)

    def exists(self) -> bool:
        return self.storage.exists(self.name)

    @property
    def size(self) -> int:
        return self.storage.size_of(self.name)

    def beside(self, suffix: str) -> StoredFile:
        """The file of the same segment with ``suffix`` (a ``.timeindex``'s ``.log``)."""
        stem = self.name.split(".", 1)[0] + suffix
        head = self.path[: len(self.path) - len(self.name)] if self.path.endswith(self.name) else ""
        return StoredFile(self.storage, stem, head + stem)


__all__ = ["SEGMENT_SUFFIXES", "SMALL_FILE_LIMIT", "SegmentSet", "Storage", "StoredFile"]
