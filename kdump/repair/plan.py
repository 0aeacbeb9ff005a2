"""What each repair command would change, computed without writing anything.

``plan_rebuild_index``, ``plan_trim_index`` and ``plan_recover`` read the memory-mapped files of
the named segments, partition directories or log directories and yield one ``SegmentPlan`` per
segment: the new bytes of each index file, where a log is cut, and the findings that explain
why. They are generators so that a log dir of any size is planned (and applied) one segment at
a time, in bounded memory.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kdump.checks.findings import Finding, Severity
from kdump.crc import Buffer
from kdump.discovery import PartitionTarget, check_named_segments, discover
from kdump.errors import InputError, KdumpError
from kdump.format.index import AbstractIndex, OffsetIndex
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import ABORTED_TXN
from kdump.parallel import stream_ordered
from kdump.repair.producer_state import txn_index_bytes
from kdump.repair.rebuild import IndexConfig, RecoveredSegment, largest_timestamp, recover_segment
from kdump.segment import (
    LogSegment,
    list_segments,
    open_buffer,
)
from kdump.txn.producer_state import ProducerStateManager, newest_readable_snapshot

OFFSET_INDEX, TIME_INDEX, TXN_INDEX, LOG = "offset index", "time index", "txn index", "log"
STOP_CODES = frozenset(
    ("LOG_CRC_MISMATCH", "LOG_CORRUPT_BATCH", "LOG_UNKNOWN_MAGIC", "LOG_TRUNCATED_TAIL")
)
"""Where LogSegment.recover stops and truncates the log."""
ENTRY_SIZES = {
    OFFSET_INDEX: OffsetIndex.entry_struct.size,
    TIME_INDEX: TimeIndex.entry_struct.size,
    TXN_INDEX: ABORTED_TXN.size,
}


@dataclass(frozen=True)
class FileState:
    """Size and modification time of a file when it was planned: apply refuses if it moved."""

    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileState | None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise InputError(str(path), e.strerror or str(e)) from None
        return cls(st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class FileChange:
    """One file a command writes: an index file's new bytes, or where a log is cut."""

    path: Path
    kind: str
    old: FileState | None
    """None when the file does not exist yet."""
    new_size: int
    content: bytes | None = None
    """The whole new file (index files)."""
    truncate_at: int | None = None
    """Logs: the bytes from here to the end are cut off (and saved)."""
    old_entries: int | None = None
    old_used_entries: int | None = None
    """Entries before a zero-filled preallocated tail."""
    new_entries: int | None = None
    changed: bool = True

    @property
    def action(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.truncate_at is not None:
            return "truncate"
        return "create" if self.old is None else "replace"


@dataclass
class SegmentPlan:
    segment: LogSegment
    is_active: bool
    changes: list[FileChange] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None
    """Why this segment is left alone, when it is."""
    valid_end: int | None = None
    """Where the log's valid batches end, as the rebuild found it (None: the whole file): the
    new indexes are checked against the batches before it."""

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    @property
    def unresolved(self) -> list[Finding]:
        """Errors this plan leaves in place: all but the invalid batch a planned cut removes."""
        cuts = {c.truncate_at for c in self.changes if c.kind == LOG}
        return [
            f
            for f in self.findings
            if f.severity is Severity.ERROR and not (f.code in STOP_CODES and f.position in cuts)
        ]


def resolve_targets(paths: list[str]) -> list[PartitionTarget]:
    """Segment files, partition dirs and log dirs -> partitions, each once, in path order.

    A named segment must have its .log: rebuilding or trimming needs it.
    """
    found = discover(paths)
    found.raise_first()
    targets = found.partitions
    for target in targets:
        check_named_segments(target)
    return targets


@contextmanager
def mapped(path: Path) -> Iterator[Buffer]:
    buf = open_buffer(path)
    try:
        yield buf
    finally:
        if isinstance(buf, mmap.mmap):
            # A view may still be referenced (by an exception's traceback): freed with it.
            with contextlib.suppress(BufferError):
                buf.close()


def _segments(target: PartitionTarget) -> tuple[list[LogSegment], list[Finding]]:
    """The segments that have a .log; index files without one are reported, not touched."""
    try:
        all_segments = list_segments(target.path)
    except OSError as e:
        raise InputError(str(target.path), e.strerror or str(e)) from None
    with_log, findings = [], []
    for seg in all_segments:
        if seg.log_path.is_file():
            with_log.append(seg)
        elif target.only is None:
            findings.append(
                Finding(
                    "INDEX_ORPHAN",
                    Severity.WARNING,
                    str(seg.log_path),
                    "index files with no .log: left alone (the broker deletes them)",
                )
            )
    return with_log, findings


def _index_state(path: Path, cls: type[AbstractIndex[Any]], base: int) -> tuple[int, int] | None:
    """(whole entries, entries before the zero tail) of an existing index file."""
    if not path.exists():
        return None
    with mapped(path) as buf:
        index = cls(buf, base, str(path))
        return index.entries, index.used_entries


def _same_bytes(path: Path, content: bytes) -> bool:
    with mapped(path) as buf:
        return len(buf) == len(content) and memoryview(buf) == content


def _index_change(path: Path, kind: str, base: int, content: bytes) -> FileChange:
    old = FileState.of(path)
    size = ENTRY_SIZES[kind]
    entries = used = None
    if old is not None:
        entries, used = old.size // size, old.size // size
        if kind == OFFSET_INDEX:
            entries, used = _index_state(path, OffsetIndex, base) or (entries, used)
        elif kind == TIME_INDEX:
            entries, used = _index_state(path, TimeIndex, base) or (entries, used)
    changed = old is None or not _same_bytes(path, content)
    return FileChange(
        path,
        kind,
        old,
        len(content),
        content,
        old_entries=entries,
        old_used_entries=used,
        new_entries=len(content) // size,
        changed=changed,
    )


def _txn_change(seg: LogSegment, recovered: RecoveredSegment) -> FileChange | None:
    """TransactionIndex is created on the first append and emptied (not deleted) by recover."""
    content = txn_index_bytes(recovered.aborted_txns)
    path = seg.txn_index_path
    if not content and not path.exists():
        return None
    return _index_change(path, TXN_INDEX, seg.base_offset, content)


def _producer_state_at(
    directory: Path, segments: list[LogSegment], base: int
) -> tuple[ProducerStateManager, int | None, int, list[Finding]]:
    """ProducerStateManager.truncateAndReload for a recovery starting at ``base``: the latest
    readable snapshot at or below it, else empty; and the segment to replay from."""
    findings: list[Finding] = []

    def skipped(path: Path, e: KdumpError) -> None:
        findings.append(
            Finding(
                "SNAPSHOT_CORRUPT",
                Severity.WARNING,
                str(path),
                f"{e.reason}; skipped, as the broker does",
            )
        )

    found = newest_readable_snapshot(directory, None, base, skipped)
    if found is None:
        return ProducerStateManager(), None, 0, findings
    offset, _, snapshot = found
    start = max((i for i, s in enumerate(segments) if s.base_offset <= offset), default=0)
    return ProducerStateManager.from_snapshot(snapshot), offset, start, findings


def _rebuild_partition(
    target: PartitionTarget, config: IndexConfig, truncate: bool
) -> Iterator[SegmentPlan]:
    segments, partition_findings = _segments(target)
    if not segments:
        return
    active = segments[-1].base_offset
    selected = [s for s in segments if target.only is None or s.base_offset in target.only]
    first, last = selected[0], selected[-1]
    producers, state_from, start, snapshot_findings = _producer_state_at(
        target.path, segments, first.base_offset
    )
    partition_findings += snapshot_findings
    for seg in segments[start : segments.index(last) + 1]:
        wanted = seg in selected
        with mapped(seg.log_path) as buf:
            recovered = recover_segment(
                buf, seg.base_offset, str(seg.log_path), config, producers, state_from
            )
        if not wanted:
            continue
        plan = SegmentPlan(
            seg,
            seg.base_offset == active,
            findings=partition_findings,
            valid_end=recovered.valid_bytes,
        )
        partition_findings = []
        _fill_rebuild(plan, recovered, truncate)
        yield plan


def _fill_rebuild(plan: SegmentPlan, recovered: RecoveredSegment, truncate: bool) -> None:
    seg = plan.segment
    if recovered.stop is not None:
        plan.findings.append(recovered.stop)
    plan.findings.extend(recovered.findings)
    if recovered.overflow:
        plan.skipped = "offsets overflow the segment: Kafka splits it; kdump leaves it alone"
        return
    plan.changes.append(
        _index_change(seg.index_path, OFFSET_INDEX, seg.base_offset, recovered.index)
    )
    plan.changes.append(
        _index_change(seg.time_index_path, TIME_INDEX, seg.base_offset, recovered.time_index)
    )
    txn = _txn_change(seg, recovered)
    if txn is not None:
        plan.changes.append(txn)
    if truncate and recovered.truncated_bytes:
        plan.changes.append(
            FileChange(
                seg.log_path,
                LOG,
                FileState.of(seg.log_path),
                recovered.valid_bytes,
                truncate_at=recovered.valid_bytes,
            )
        )


def plan_rebuild_index(
    targets: list[PartitionTarget], config: IndexConfig, jobs: int = 1
) -> Iterator[SegmentPlan]:
    """``kdump rebuild-index``: every named segment's indexes as LogSegment.recover writes them.

    The log itself is not touched; a walk that stops early says so in the plan's findings.
    Partitions are planned in ``jobs`` processes (a partition's segments in order: producer
    state flows through them), the plans handed back in the targets' order.
    """
    rebuild = partial(_rebuild_partition, config=config, truncate=False)
    return stream_ordered(rebuild, targets, jobs, weight=_partition_bytes, lookahead=PLANS_AHEAD)


def plan_recover(
    targets: list[PartitionTarget], config: IndexConfig, jobs: int = 1
) -> Iterator[SegmentPlan]:
    """``kdump recover``: rebuild-index, and cut each log at its first invalid batch."""
    recover = partial(_rebuild_partition, config=config, truncate=True)
    return stream_ordered(recover, targets, jobs, weight=_partition_bytes, lookahead=PLANS_AHEAD)


PLANS_AHEAD = 2
"""Segment plans (each with its new index files' bytes) a planning process may hold ready."""


def _partition_bytes(target: PartitionTarget) -> int:
    try:
        return sum(e.stat().st_size for e in os.scandir(target.path) if e.is_file())
    except OSError:
        return 0


def _trim_change(seg: LogSegment, path: Path, kind: str) -> FileChange | None:
    if not path.exists():
        return None
    cls: type[AbstractIndex[Any]] = OffsetIndex if kind == OFFSET_INDEX else TimeIndex
    size = ENTRY_SIZES[kind]
    with mapped(path) as buf:
        index = cls(buf, seg.base_offset, str(path))
        entries, used = index.entries, index.used_entries
        if kind == TIME_INDEX and used == 0 and entries and _zero_entry_is_real(seg):
            used = 1
        if used * size == len(buf):
            return None
        content = bytes(memoryview(buf)[: used * size])
    return FileChange(
        path,
        kind,
        FileState.of(path),
        len(content),
        content,
        old_entries=entries,
        old_used_entries=used,
        new_entries=used,
    )


def _zero_entry_is_real(seg: LogSegment) -> bool:
    """An all-zero first time index entry is (timestamp 0, base offset): real when the segment's
    largest timestamp is 0 and is first reached at its base offset."""
    with mapped(seg.log_path) as buf:
        max_ts, offset = largest_timestamp(buf, str(seg.log_path))
    return max_ts == 0 and offset == seg.base_offset


def plan_trim_index(targets: list[PartitionTarget], include_active: bool) -> Iterator[SegmentPlan]:
    """``kdump trim-index``: cut closed segments' indexes to their entries (trimToValidSize)."""
    for target in targets:
        segments, findings = _segments(target)
        if not segments:
            continue
        active = segments[-1].base_offset
        for seg in segments:
            if target.only is not None and seg.base_offset not in target.only:
                continue
            plan = SegmentPlan(seg, seg.base_offset == active, findings=findings)
            findings = []
            for path, kind in ((seg.index_path, OFFSET_INDEX), (seg.time_index_path, TIME_INDEX)):
                change = _trim_change(seg, path, kind)
                if change is not None:
                    plan.changes.append(change)
            if plan.is_active and not include_active and plan.changes:
                plan.skipped = (
                    f"the active segment's {len(plan.changes)} preallocated index file(s) are "
                    "left for the broker to append to (--include-active trims them)"
                )
                plan.changes = []
            yield plan
