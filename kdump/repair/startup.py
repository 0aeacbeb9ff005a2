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

from kdump.format.names import RECOVERY_POINT_CHECKPOINT
from kdump.format.textfiles import TopicPartitionOffset, offset_checkpoint_bytes
from kdump.log_dir import LogDir
from kdump.repair.files import local_partitions_of
from kdump.repair.plan import (
    CHECKPOINT,
    LEFTOVER,
    RENAME,
    SNAPSHOT,
    FileChange,
    FileState,
    SegmentPaths,
    SegmentPlan,
)
from kdump.storage.local import LocalStorage, RenamedView
from kdump.unified_log import UnifiedLog


@dataclass(frozen=True)
class PartitionEnd:
    """Where a partition starts and ends once this run's cuts are done."""

    log: UnifiedLog
    log_start: int
    log_end: int
    cut: bool


def partition_end(log: UnifiedLog, cut: bool) -> PartitionEnd | None:
    """The opened partition's ends: after recovery where this run cuts it, else as on disk."""
    if not log.segments or log.topic_partition is None:
        return None
    damaged = log.damaged_from
    if cut and damaged is not None:
        end = damaged.offset  # where this run's cut ends it
    else:
        end = log.log_end_offset if cut else log.log_end_offset_on_disk
    return PartitionEnd(log, log.log_start_offset, end, cut)


def snapshot_changes(end: PartitionEnd, as_broker: bool = False) -> Iterator[FileChange]:
    """truncateAndReload's deletions: snapshots above the log end offset; after a cut, also
    those at or below the log start offset. ``as_broker``: the recovery done is the broker's
    own, so are the deletions: every snapshot its load deletes (kdump.log_loader.load)."""
    local = end.log.storage.local_path
    assert local is not None, "repairs read local partitions"
    directory = Path(local)
    gone = set(end.log.broker_load.snapshots_deleted) if as_broker else set()
    for file in end.log.snapshot_files:
        why = _deleted_why(end, file.offset, gone, as_broker)
        if why is None:
            continue
        path = directory / file.name
        yield FileChange(path, SNAPSHOT, FileState.of(path), 0, delete=True, difference=why)


def _deleted_why(end: PartitionEnd, offset: int, gone: set[int], as_broker: bool) -> str | None:
    if as_broker:
        if offset not in gone:
            return None
        return (
            "the broker's load deletes it at its next start (ProducerStateManager."
            "truncateAndReload as it recovers the segments, removeStraySnapshots)"
        )
    if offset > end.log_end:
        why = f"above the log end offset {end.log_end}"
    elif end.cut and offset <= end.log_start:
        why = f"at or below the log start offset {end.log_start}"
    else:
        return None
    return f"{why}: ProducerStateManager.truncateAndReload deletes it at startup"


def recovery_point_change(log_dir: LogDir, ends: Iterable[PartitionEnd]) -> FileChange | None:
    """The log dir's recovery points clamped to the log end offsets (LogLoader.load), from its
    checkpoint as the opened log dir read it (a missing or unreadable one: none to clamp)."""
    checkpoint = log_dir.recovery_points
    local = log_dir.storage.local_path
    if local is None or checkpoint.error is not None or not checkpoint.entries:
        return None
    path = Path(local) / RECOVERY_POINT_CHECKPOINT
    entries = dict(checkpoint.entries)
    clamped = []
    for end in ends:
        tp = end.log.topic_partition
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


def plan_settle(logs: list[UnifiedLog]) -> list[SegmentPlan]:
    """What LogLoader does first at startup to the files an interrupted delete, compaction or
    split left (kdump.log_loader): the deletions (each file kept as a backup), then the
    renames that complete a swap; one plan per partition."""
    plans = []
    for log in logs:
        local = log.storage.local_path
        settlement = log.settlement
        if local is None or log.only is not None or not settlement:
            continue
        directory = Path(local)
        changes = []
        for name, why in settlement.deleted:
            path = directory / name
            changes.append(
                FileChange(path, LEFTOVER, FileState.of(path), 0, delete=True, difference=why)
            )
        for old, new in settlement.renamed:
            path = directory / old
            state = FileState.of(path)
            changes.append(
                FileChange(
                    path,
                    RENAME,
                    state,
                    0 if state is None else state.size,
                    rename_to=directory / new,
                    difference="the broker completes the swap at startup",
                )
            )
        first = settlement.swapped[0] if settlement.swapped is not None else 0
        plans.append(SegmentPlan(SegmentPaths(directory, first), False, changes=changes))
    return plans


def as_settled(log: UnifiedLog) -> UnifiedLog:
    """``log`` opened as ``plan_settle``'s plans leave it (a dry run plans the rest on it, as
    its run does once they are done); as it is where there is nothing to settle."""
    settlement = log.settlement
    directory = log.storage.local_path
    if directory is None or log.only is not None or not settlement:
        return log
    view = RenamedView(
        directory,
        {new: old for old, new in settlement.renamed},
        [name for name, _ in settlement.deleted],
    )
    return UnifiedLog(view, log.log_dir, log.only, log.open_options)


def plan_startup(
    logs: list[UnifiedLog], cut: set[Path], as_broker: bool = False
) -> list[SegmentPlan]:
    """The broker's startup clean-up for ``logs`` (``cut``: partition dirs whose logs this
    run cuts), as plans: one per partition with snapshots to delete, one per log dir whose
    recovery points move."""
    plans = []
    by_log_dir: dict[Path, tuple[LogDir, list[PartitionEnd]]] = {}
    for log, where in local_partitions_of(logs):
        end = partition_end(log, where.path in cut)
        if end is None:
            continue
        if where.log_dir not in by_log_dir:
            # the log dir it was found in, read once; a partition named on its own: its parent
            found = log.log_dir or LogDir(LocalStorage(where.log_dir))
            by_log_dir[where.log_dir] = (found, [])
        by_log_dir[where.log_dir][1].append(end)
        deletions = list(snapshot_changes(end, as_broker))
        if deletions:
            plans.append(
                SegmentPlan(SegmentPaths(where.path, end.log_end), False, changes=deletions)
            )
    for path, (log_dir, ends) in sorted(by_log_dir.items()):
        change = recovery_point_change(log_dir, ends)
        if change is not None:
            plans.append(SegmentPlan(SegmentPaths(path, 0), False, changes=[change]))
    return plans
