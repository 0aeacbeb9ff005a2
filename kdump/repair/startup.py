"""What the broker does at its next start to a log that recovery cut, done by ``kdump recover``
so that verify is clean afterwards.

At load (``LogLoader.load``), the recovery point is clamped to the log end offset, and
``UnifiedLog.rebuildProducerState`` calls ``ProducerStateManager.truncateAndReload``, which
deletes every producer snapshot above the log end offset or at or below the log start offset.
``recovery-point-offset-checkpoint`` is one file for every partition of a log dir: it is
rewritten whole (temporary file in the same directory, fsync, rename, fsync of the directory:
Kafka's CheckpointFile.write), under the log dir's ``.lock``, the original kept as a backup.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kdump.discovery import PartitionTarget
from kdump.errors import InputError
from kdump.format.checkpoint import LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from kdump.format.textfiles import (
    TopicPartitionOffset,
    offset_checkpoint_at,
    offset_checkpoint_bytes,
)
from kdump.repair.plan import (
    CHECKPOINT,
    SNAPSHOT,
    FileChange,
    FileState,
    SegmentPlan,
    next_offset,
)
from kdump.segment import SNAPSHOT_SUFFIX, LogSegment, base_offset_of, list_segments


@dataclass(frozen=True)
class PartitionEnd:
    """Where a partition starts and ends once this run's cuts are done."""

    target: PartitionTarget
    log_start: int
    log_end: int
    cut: bool


def partition_end(target: PartitionTarget, cut: bool) -> PartitionEnd | None:
    try:
        segments = [s for s in list_segments(target.path) if s.log_path.is_file()]
    except OSError as e:
        raise InputError(str(target.path), e.strerror or str(e)) from None
    tp = target.topic_partition
    if not segments or tp is None:
        return None
    start = (offset_checkpoint_at(target.lock_dir / LOG_START_CHECKPOINT) or {}).get(tp, 0)
    log_start = max(start, segments[0].base_offset)
    return PartitionEnd(target, log_start, next_offset(segments[-1], cut), cut)


def snapshot_changes(end: PartitionEnd) -> Iterator[FileChange]:
    """truncateAndReload's deletions: snapshots above the log end offset; after a cut, also
    those at or below the log start offset."""
    for path in sorted(end.target.path.glob(f"*{SNAPSHOT_SUFFIX}")):
        try:
            offset = base_offset_of(path)
        except InputError:
            continue
        if offset > end.log_end:
            why = f"above the log end offset {end.log_end}"
        elif end.cut and offset <= end.log_start:
            why = f"at or below the log start offset {end.log_start}"
        else:
            continue
        yield FileChange(
            path,
            SNAPSHOT,
            FileState.of(path),
            0,
            delete=True,
            difference=f"{why}: ProducerStateManager.truncateAndReload deletes it at startup",
        )


def recovery_point_change(log_dir: Path, ends: Iterable[PartitionEnd]) -> FileChange | None:
    """The log dir's recovery points clamped to the log end offsets (LogLoader.load)."""
    path = log_dir / RECOVERY_POINT_CHECKPOINT
    entries = offset_checkpoint_at(path)
    if not entries:
        return None
    clamped = []
    for end in ends:
        tp = end.target.topic_partition
        if tp is not None and entries.get(tp, -1) > end.log_end:
            clamped.append(f"{tp[0]}-{tp[1]} {entries[tp]} -> {end.log_end}")
            entries[tp] = end.log_end
    if not clamped:
        return None
    content = offset_checkpoint_bytes(
        [TopicPartitionOffset(t, p, o) for (t, p), o in entries.items()]
    )
    return FileChange(
        path,
        CHECKPOINT,
        FileState.of(path),
        len(content),
        content,
        difference=f"recovery point clamped to the log end offset: {', '.join(clamped)}",
    )


def plan_startup(targets: list[PartitionTarget], cut: set[Path]) -> list[SegmentPlan]:
    """The broker's startup clean-up for ``targets`` (``cut``: partition dirs whose logs this
    run cuts), as plans: one per partition with snapshots to delete, one per log dir whose
    recovery points move."""
    plans = []
    by_log_dir: dict[Path, list[PartitionEnd]] = {}
    for target in targets:
        end = partition_end(target, target.path in cut)
        if end is None:
            continue
        by_log_dir.setdefault(target.lock_dir, []).append(end)
        deletions = list(snapshot_changes(end))
        if deletions:
            seg = LogSegment(target.path, end.log_end)
            plans.append(SegmentPlan(seg, False, changes=deletions))
    for log_dir, ends in sorted(by_log_dir.items()):
        change = recovery_point_change(log_dir, ends)
        if change is not None:
            plans.append(SegmentPlan(LogSegment(log_dir, 0), False, changes=[change]))
    return plans
