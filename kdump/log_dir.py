"""A broker log directory, opened once: its offset checkpoints read once for all its partitions
(Kafka's LogManager reads them once at startup), its clean-shutdown marker, its lock.

Each partition found in it (kdump.unified_log.UnifiedLog) points back here.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from kdump.errors import KdumpError, as_kdump_error
from kdump.format.names import (
    CLEAN_SHUTDOWN,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from kdump.storage.base import Storage
from kdump.tuples import NamedTuple

CHECKPOINT_LIMIT = 1 << 24
"""The most of an offset checkpoint read: 16 MiB is some 300,000 partitions' lines."""
META_PROPERTIES_LIMIT = 1 << 20
"""The most of meta.properties read (a handful of lines)."""

if TYPE_CHECKING:
    from kdump.format.textfiles import MetaProperties

TopicPartition = tuple[str, int]


class Checkpoint(NamedTuple):
    """One offset checkpoint file of a log dir, read: its entries (the last line of a partition
    wins, as in Kafka's map), or why it could not be read."""

    name: str
    path: str
    exists: bool
    entries: dict[TopicPartition, int]
    error: KdumpError | None = None


class LogDir:
    """A broker's log directory (``log.dirs``): the folder holding partition directories and
    the checkpoint files that speak for them."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.location = storage.location
        self.partition_dirs: set[str] = set()
        """Where the partition directories found in it are (their locations)."""

    def __repr__(self) -> str:
        return f"LogDir({self.location!r})"

    def __getstate__(self) -> dict[str, object]:
        # to another process (a Spark executor): the folder, not its checkpoints as read here
        keep = ("storage", "location", "partition_dirs")
        return {k: self.__dict__[k] for k in keep}

    @cached_property
    def _checkpoints(self) -> dict[str, Checkpoint]:
        return {name: self._read_checkpoint(name) for name in OFFSET_CHECKPOINTS}

    def _read_checkpoint(self, name: str) -> Checkpoint:
        path = self.storage.location_of(name)
        if not self.storage.exists(name):
            return Checkpoint(name, path, False, {})
        from kdump.format.textfiles import read_offset_checkpoint  # a log dir with the file

        try:
            data = self.storage.read_bytes(name, CHECKPOINT_LIMIT)
            entries = read_offset_checkpoint(data, path)
        except (KdumpError, OSError) as e:
            return Checkpoint(name, path, True, {}, as_kdump_error(e, path))
        return Checkpoint(name, path, True, {(e.topic, e.partition): e.offset for e in entries})

    def checkpoint(self, name: str) -> Checkpoint:
        """The offset checkpoint file ``name`` (one of OFFSET_CHECKPOINTS), read once."""
        return self._checkpoints[name]

    def checkpointed(self, name: str, tp: TopicPartition) -> int | None:
        """``tp``'s entry in the checkpoint ``name`` (None: no file, no entry); an unreadable
        file raises its error (the caller says what that means)."""
        found = self.checkpoint(name)
        if found.error is not None:
            raise found.error
        return found.entries.get(tp)

    @property
    def recovery_points(self) -> Checkpoint:
        return self.checkpoint(RECOVERY_POINT_CHECKPOINT)

    @property
    def log_start_offsets(self) -> Checkpoint:
        return self.checkpoint(LOG_START_OFFSET_CHECKPOINT)

    @property
    def high_watermarks(self) -> Checkpoint:
        return self.checkpoint(REPLICATION_OFFSET_CHECKPOINT)

    @cached_property
    def _meta_properties(self) -> MetaProperties | KdumpError | None:
        if self.storage.closed_segments_only or not self.storage.exists(META_PROPERTIES):
            return None  # tiered storage keeps none
        from kdump.format.textfiles import read_meta_properties  # a log dir with the file

        path = self.storage.location_of(META_PROPERTIES)
        try:
            return read_meta_properties(
                self.storage.read_bytes(META_PROPERTIES, META_PROPERTIES_LIMIT), path
            )
        except (KdumpError, OSError) as e:
            return as_kdump_error(e, path)

    def meta_properties(self) -> MetaProperties | None:
        """The log dir's ``meta.properties`` (MetaProperties: which node and cluster it belongs
        to), read once; None where there is none. One that is there but cannot be read or
        parsed raises its error (the caller says what that means)."""
        found = self._meta_properties
        if isinstance(found, KdumpError):
            raise found
        return found

    @property
    def had_clean_shutdown(self) -> bool:
        """The broker stopped cleanly (its marker is there): it recovers no segment at its next
        start (LogLoader.recoverLog), but for those missing or failing their indexes."""
        return self.storage.exists(CLEAN_SHUTDOWN)

    @property
    def lock_path(self) -> str:
        return self.storage.location_of(LOCK_FILE)


__all__ = ["CHECKPOINT_LIMIT", "META_PROPERTIES_LIMIT", "Checkpoint", "LogDir", "TopicPartition"]
