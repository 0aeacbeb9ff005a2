"""A partition directory opened for reading: its segments by base offset, the log dir's offset
checkpoints for it, its log start and log end offsets."""

from __future__ import annotations

import os
from bisect import bisect_right
from functools import cached_property
from pathlib import Path

from kdump.discovery import parse_partition_dir
from kdump.errors import InputError
from kdump.format.textfiles import read_offset_checkpoint
from kdump.segment import LogSegment, Segment, SegmentFiles, list_segments, open_buffer
from kdump.storage.remote import is_url

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
"""The log dir's high watermarks (ReplicaManager writes it; Partition.createLog reads it)."""


def start_offset(first_base_offset: int, checkpointed: int | None) -> int:
    """LogLoader.load: the log start offset is the log-start-offset-checkpoint's entry when it
    is past the first segment's base offset, else that base offset."""
    return first_base_offset if checkpointed is None else max(first_base_offset, checkpointed)


def clamp_high_watermark(checkpointed: int, log_start: int, log_end: int) -> int:
    """UnifiedLog.updateHighWatermark: a checkpointed high watermark kept within
    [log start offset, log end offset]."""
    return min(max(checkpointed, log_start), log_end)


class PartitionLog:
    """A partition directory, or a remote partition's URL, opened for lookups: segments by base
    offset and the log start."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._directory: Path | None = None
        segments: list[Segment]
        if is_url(directory):
            self.location = str(directory)
            segments = _remote_segments(self.location)
        else:
            self._directory = Path(directory)
            self.location = str(self._directory)
            segments = list(_local_segments(self._directory))
        if not segments:
            raise InputError(str(directory), "no segment .log files: not a partition directory")
        # tiered storage holds closed segments only: a remote partition has no active one
        # (as verify takes it, kdump.checks.partition)
        active = len(segments) - 1 if self._directory is not None else -1
        self.segments = [SegmentFiles(s, i == active) for i, s in enumerate(segments)]
        self.base_offsets = [s.base_offset for s in segments]

    @property
    def directory(self) -> Path:
        """The local partition directory (what commands other than lookup read)."""
        if self._directory is None:
            raise InputError(self.location, "this command reads local partition directories only")
        return self._directory

    def checkpointed(self, name: str) -> int | None:
        """This partition's entry in the log dir's offset checkpoint file ``name`` (the last
        one wins, as in Kafka's map), or None (no such file, or no entry)."""
        if self._directory is None:
            return None  # a remote partition has no log dir
        checkpoint = self.directory.parent / name
        tp = parse_partition_dir(self.directory.resolve().name)
        if tp is None or not checkpoint.is_file():
            return None
        entries = read_offset_checkpoint(bytes(open_buffer(checkpoint)), str(checkpoint))
        found = [e.offset for e in entries if (e.topic, e.partition) == tp]
        return found[-1] if found else None

    @cached_property
    def log_start_offset_checkpoint(self) -> int | None:
        """This partition's entry in the log dir's log-start-offset-checkpoint, or None."""
        return self.checkpointed(LOG_START_OFFSET_CHECKPOINT)

    @property
    def log_start_offset(self) -> int:
        """The first segment's base offset, unless the log dir's checkpoint says more."""
        return start_offset(self.base_offsets[0], self.log_start_offset_checkpoint)

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    def floor_segment(self, offset: int) -> int:
        """The index of the segment with the greatest base offset ≤ offset (-1: none)."""
        return bisect_right(self.base_offsets, offset) - 1


def _local_segments(directory: Path) -> list[LogSegment]:
    if not directory.exists():
        raise InputError(str(directory), "no such directory")
    if not directory.is_dir():
        raise InputError(str(directory), "not a directory (give a partition directory)")
    try:
        return [s for s in list_segments(directory) if s.log_path.is_file()]
    except OSError as e:
        raise InputError(str(directory), e.strerror or str(e)) from None


def _remote_segments(url: str) -> list[Segment]:
    """The segments of the one remote partition under ``url`` (kdump.discovery)."""
    from kdump.discovery import discover
    from kdump.storage.remote.segment import RemoteSegment

    found = discover([url], urls=True)
    if found.errors:
        raise found.errors[0]
    partitions = [t.remote for t in found.loose if t.remote is not None]
    if len(partitions) != 1:
        names = ", ".join(p.url for p in partitions)
        raise InputError(url, f"holds {len(partitions)} partitions ({names}): give one")
    return [RemoteSegment(ref) for ref in partitions[0].segments if ref.object("log")]
