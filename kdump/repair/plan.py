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
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any

from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.log import STOP_CODES
from kdump.checks.partition import rename_rule
from kdump.checks.segment import segment_result
from kdump.checks.txn import skipped_snapshot
from kdump.config import ConfigLayers
from kdump.crc import Buffer
from kdump.discovery import check_named_segments, discover
from kdump.errors import InputError, KdumpError
from kdump.format.index import AbstractIndex, OffsetIndex
from kdump.format.names import (
    INDEX_SUFFIX,
    INDEX_SUFFIXES,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import ABORTED_TXN
from kdump.format.walk import read_batch
from kdump.log_scan import LogScan
from kdump.loss import CutLoss, cut_loss
from kdump.parallel import stream_ordered
from kdump.producer_state import ProducerStateManager
from kdump.repair.files import map_regular, refuse_irregular, regular_lstat
from kdump.repair.rebuild import (
    IndexConfig,
    IndexConfigs,
    RecoveredSegment,
    largest_timestamp,
    recover_segment,
)
from kdump.repair.txn_index import txn_index_bytes
from kdump.segment import LogSegment
from kdump.storage.local import RenamedView
from kdump.unified_log import OpenOptions, UnifiedLog

OFFSET_INDEX, TIME_INDEX, TXN_INDEX, LOG = "offset index", "time index", "txn index", "log"
SNAPSHOT, CHECKPOINT, RENAME = "producer snapshot", "checkpoint", "renamed"
SEGMENT_FILE = "segment file"
LEFTOVER = "leftover file"
"""A file an interrupted delete, compaction or split left (kdump.log_loader)."""
"""A file of a segment recovery deletes whole (every segment after a cut)."""
ENTRY_SIZES = {
    OFFSET_INDEX: OffsetIndex.entry_struct.size,
    TIME_INDEX: TimeIndex.entry_struct.size,
    TXN_INDEX: ABORTED_TXN.size,
}


_VIEWS: dict[Path, RenamedView] = {}
"""Partition directories a dry run plans as they will be (kdump.storage.local.RenamedView):
what the planner reads by path is read where the bytes are now."""


@contextmanager
def viewing(logs: list[UnifiedLog]) -> Iterator[None]:
    """Plan ``logs`` opened over a RenamedView as they will be: a renamed file read from its
    present name, a removed one absent."""
    views = {Path(v.path): v for v in (log.storage for log in logs) if isinstance(v, RenamedView)}
    _VIEWS.update(views)
    try:
        yield
    finally:
        for path in views:
            _VIEWS.pop(path, None)


def on_disk(path: Path) -> Path | None:
    """Where the bytes of ``path`` are now (None: there will be no such file)."""
    view = _VIEWS.get(path.parent)
    if view is None:
        return path
    now = view.now_named(path.name)
    return None if now is None else path.parent / now


def _exists(path: Path) -> bool:
    now = on_disk(path)
    return now is not None and now.exists()


@dataclass(frozen=True)
class FileState:
    """Size, modification time and inode of a file when it was planned: apply refuses if it
    moved or was replaced. A name that is not a regular file (a link) is refused."""

    size: int
    mtime_ns: int
    device: int = 0
    inode: int = 0

    @classmethod
    def of(cls, path: Path) -> FileState | None:
        now = on_disk(path)
        st = None if now is None else regular_lstat(now, shown=path)
        return None if st is None else cls.from_stat(st)

    @classmethod
    def from_stat(cls, st: os.stat_result) -> FileState:
        return cls(st.st_size, st.st_mtime_ns, st.st_dev, st.st_ino)


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
    loss: CutLoss | None = None
    """Logs: the batches, records and offsets the cut removes."""
    difference: str | None = None
    """Index files replaced: the first entry that differs; other files: why they change."""
    delete: bool = False
    """The file is removed (a backup is always kept)."""
    rename_to: Path | None = None
    """The file takes this name (a segment named above its batches' offsets)."""

    @property
    def action(self) -> str:
        if not self.changed:
            return "unchanged"
        if self.delete:
            return "delete"
        if self.rename_to is not None:
            return "rename"
        if self.truncate_at is not None:
            return "truncate"
        return "create" if self.old is None else "replace"


@dataclass(frozen=True)
class SegmentPaths:
    """A segment's files on disk, by path: what repairs read and write (kdump repairs local
    files only)."""

    directory: Path
    base_offset: int

    @classmethod
    def of(cls, segment: LogSegment) -> SegmentPaths:
        directory = segment.storage.local_path
        if directory is None:
            raise InputError(segment.directory, "repairs write local files only")
        return cls(Path(directory), segment.base_offset)

    def path(self, suffix: str) -> Path:
        return self.directory / segment_file_name(self.base_offset, suffix)

    @property
    def log_path(self) -> Path:
        return self.path(LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self.path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self.path(TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> Path:
        return self.path(TXN_INDEX_SUFFIX)


@dataclass
class SegmentPlan:
    segment: SegmentPaths
    is_active: bool
    changes: list[FileChange] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None
    """Why this segment is left alone, when it is."""
    valid_end: int | None = None
    """Where the log's valid batches end, as the rebuild found it (None: the whole file): the
    new indexes are checked against the batches before it."""
    new_base: int | None = None
    """The base offset the segment's files are renamed to (its first batch's)."""
    scan: LogScan | None = field(default=None, repr=False, compare=False)
    """What the rebuild's walk gathered for checking the new index files (None: the check
    walks the log again)."""

    @property
    def changed(self) -> list[FileChange]:
        return [c for c in self.changes if c.changed]

    @property
    def changes_segment(self) -> bool:
        """A file of the segment changes (a producer snapshot or a checkpoint is none)."""
        return any(c.kind not in (SNAPSHOT, CHECKPOINT) for c in self.changed)

    @property
    def changes_partition(self) -> bool:
        """A file of the partition changes (the log dir's recovery-point checkpoint is none)."""
        return any(c.kind != CHECKPOINT for c in self.changed)

    @property
    def unresolved(self) -> list[Finding]:
        """Errors this plan leaves in place: all but the invalid batch a planned cut removes."""
        cuts = {c.truncate_at for c in self.changes if c.kind == LOG}
        return [
            f
            for f in self.findings
            if f.severity is Severity.ERROR and not (f.code in STOP_CODES and f.position in cuts)
        ]


def resolve_targets(paths: list[str], layers: ConfigLayers | None = None) -> list[UnifiedLog]:
    """Segment files, partition dirs and log dirs -> partitions, each once, in path order
    (``layers``: where their topics' settings come from).

    A named segment must have its .log: rebuilding or trimming needs it.
    """
    opened = OpenOptions(layers=layers or ConfigLayers())
    found = discover(paths, options=opened, urls=False)
    found.raise_first()
    logs = found.partitions
    for log in logs:
        check_named_segments(log)
        directory = log.storage.local_path
        assert directory is not None, "repairs read local files"
        refuse_irregular(Path(directory), log.only)
    return logs


@contextmanager
def mapped(path: Path) -> Iterator[Buffer]:
    now = on_disk(path)
    if now is None:
        raise InputError(str(path), "no such file")
    buf = map_regular(now)
    try:
        yield buf
    finally:
        if isinstance(buf, mmap.mmap):
            # A view may still be referenced (by an exception's traceback): freed with it.
            with contextlib.suppress(BufferError):
                buf.close()


def _orphan_findings(log: UnifiedLog) -> list[Finding]:
    """Index files with no .log are reported, not touched."""
    if log.only is not None:
        return []
    return [
        Finding(
            "INDEX_ORPHAN",
            Severity.WARNING,
            seg.log_path,
            "index files with no .log: left alone (the broker deletes them)",
        )
        for seg in log.orphan_segments
    ]


def _index_state(path: Path, cls: type[AbstractIndex[Any]], base: int) -> tuple[int, int] | None:
    """(whole entries, entries before the zero tail) of an existing index file."""
    if not _exists(path):
        return None
    with mapped(path) as buf:
        index = cls(buf, base, str(path))
        return index.entries, index.used_entries


def _same_bytes(path: Path, content: bytes) -> bool:
    with mapped(path) as buf:
        # a copy compared by memcmp: a memoryview compares item by item (~6 ms per MiB)
        return len(buf) == len(content) and buf[:] == content


def _describe_entry(kind: str, data: Buffer, i: int, base: int) -> str:
    """Entry ``i`` of an index file's bytes, as the reader of a repair line wants it."""
    size = ENTRY_SIZES[kind]
    if (i + 1) * size > len(data):
        return "none"
    if kind == OFFSET_INDEX:
        rel, position = OffsetIndex.entry_struct.unpack_from(data, i * size)
        return f"(offset {base + rel}, position {position})"
    if kind == TIME_INDEX:
        timestamp, rel = TimeIndex.entry_struct.unpack_from(data, i * size)
        return f"(timestamp {timestamp}, offset {base + rel})"
    _, pid, first, last, _ = ABORTED_TXN.unpack_from(data, i * size)
    return f"(producer {pid}, offsets {first}..{last})"


def first_difference(path: Path, kind: str, base: int, content: bytes) -> str | None:
    """``entry 3: (offset 36, position 2443) -> (offset 40, position 2857)``: the first entry
    where an index file and its new bytes differ (None: they are the same)."""
    size = ENTRY_SIZES[kind]
    with mapped(path) as buf:
        old = memoryview(buf)
        n = max(len(old), len(content))
        for at in range(0, n, size):
            if old[at : at + size] != content[at : at + size]:
                i = at // size
                before = _describe_entry(kind, old, i, base)
                after = _describe_entry(kind, content, i, base)
                return f"first difference at entry {i}: {before} -> {after}"
    return None


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
    difference = first_difference(path, kind, base, content) if changed and old else None
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
        difference=difference,
    )


def _txn_change(seg: SegmentPaths, recovered: RecoveredSegment) -> FileChange | None:
    """TransactionIndex is created on the first append and emptied (not deleted) by recover."""
    content = txn_index_bytes(recovered.aborted_txns)
    path = seg.txn_index_path
    if not content and not _exists(path):
        return None
    return _index_change(path, TXN_INDEX, seg.base_offset, content)


def _producer_state_at(
    log: UnifiedLog, base: int
) -> tuple[ProducerStateManager, int | None, int, list[Finding]]:
    """ProducerStateManager.truncateAndReload for a recovery starting at ``base``: the latest
    readable snapshot at or below it, else empty; and the segment to replay from."""
    loaded = log.snapshot_between(None, base)
    findings = [skipped_snapshot(file.path, e) for file, e in loaded.skipped]
    if loaded.snapshot is None or loaded.file is None:
        return ProducerStateManager(), None, 0, findings
    offset = loaded.file.offset
    start = max((i for i, s in enumerate(log.segments) if s.base_offset <= offset), default=0)
    return ProducerStateManager.from_snapshot(loaded.snapshot), offset, start, findings


class Scope(str, Enum):
    """Which segments a recovery rebuilds (and cuts)."""

    ALL = "all"
    """Every segment named (rebuild-index)."""
    DAMAGED = "damaged"
    """Those verify flags: damage in the log, index files that need rebuilding."""
    BROKER = "broker"
    """Those the broker recovers at its next start (LogLoader.recoverLog): without the log
    dir's .kafka_cleanshutdown, the segment holding the recovery point and all after it;
    always those missing their offset index."""


NOT_REPAIRED = frozenset((Code.LOG_SEGMENT_OVERSIZE, Code.LOG_LEGACY_WRAPPER_INVALID))
"""Findings a rebuild and a cut leave as they are: they do not call for recovery."""


def _in_scope(
    log: UnifiedLog, named: list[LogSegment], scope: Scope, config: IndexConfig
) -> list[LogSegment]:
    if scope is Scope.ALL:
        return named
    if scope is Scope.DAMAGED:
        # verify's findings on each segment, from the partition's one walk of it
        return [
            s
            for s in named
            if any(
                f.severity is not Severity.INFO and f.code not in NOT_REPAIRED
                for f in segment_result(log, s, config.verify_options).findings
            )
        ]
    # the broker's own choice at its next start (LogLoader.load: kdump.log_loader)
    recovered = set(log.broker_load.recovered)
    return [s for s in named if s.base_offset in recovered]


def _rebuild_partition(
    log: UnifiedLog, configs: IndexConfigs, truncate: bool, scope: Scope = Scope.ALL
) -> Iterator[SegmentPlan]:
    segments = log.segments
    local = log.storage.local_path
    assert local is not None, "repairs read local files"
    directory = Path(local)
    config = configs.of(directory)
    partition_findings = _orphan_findings(log)
    if not segments:
        return
    named = log.named_segments
    selected = _in_scope(log, named, scope, config)
    chosen = {s.slot for s in selected}
    for seg in named:
        if seg.slot not in chosen:
            # left alone: an empty plan (progress counts it; the partition's own findings,
            # such as orphan index files, go with the first)
            yield SegmentPlan(SegmentPaths.of(seg), seg.is_active, findings=partition_findings)
            partition_findings = []
    if not selected:
        return
    first, last = selected[0], selected[-1]
    producers, state_from, start, snapshot_findings = _producer_state_at(log, first.base_offset)
    partition_findings += snapshot_findings
    for seg in segments[start : segments.index(last) + 1]:
        wanted = seg.slot in chosen
        paths = SegmentPaths.of(seg)
        new_base = None
        with mapped(paths.log_path) as buf:
            recovered = recover_segment(
                buf, seg.base_offset, str(paths.log_path), config, producers, state_from
            )
            if truncate:
                new_base = _renamed_base(log, seg, buf, config)
                if new_base is not None:
                    recovered = recover_segment(
                        buf, new_base, str(paths.log_path), config, producers, state_from
                    )
            loss = None
            if wanted and truncate and recovered.truncated_bytes and not recovered.overflow:
                loss = cut_loss(buf, recovered.valid_bytes, str(paths.log_path))
        if not wanted:
            continue
        plan = SegmentPlan(
            paths,
            seg.is_active,
            findings=partition_findings,
            valid_end=recovered.valid_bytes,
            new_base=new_base,
            scan=recovered.scan,
        )
        partition_findings = []
        if new_base is not None:
            _fill_rename(plan, recovered, loss)
        else:
            _fill_rebuild(plan, recovered, truncate, loss)
        yield plan
        if any(c.kind == LOG and c.truncate_at is not None for c in plan.changes) and (
            scope is not Scope.BROKER or log.broker_load.cut == seg.base_offset
        ):
            # LogLoader.recoverLog: "we had an invalid message, delete all remaining log" (a
            # segment the broker recovers only for its missing index is cut, nothing deleted)
            yield from _later_deleted(log, seg, recovered.valid_bytes)
            return


def _later_deleted(log: UnifiedLog, cut: LogSegment, position: int) -> Iterator[SegmentPlan]:
    """Every segment after the one recovery cuts, deleted as the broker deletes them (each
    file kept as a backup: ``kdump salvage`` reads them back)."""
    why = (
        f"after the cut of {cut.file_name(LOG_SUFFIX)} at position {position}: recovery "
        "deletes every later segment (LogLoader.recoverLog), so a replica fetches those "
        "offsets again from the leader"
    )
    for seg in log.segments:
        if seg.base_offset <= cut.base_offset:
            continue
        paths = SegmentPaths.of(seg)
        plan = SegmentPlan(paths, seg.is_active)
        for suffix, kind in _DELETED_KINDS:
            path = paths.path(suffix)
            state = FileState.of(path)
            if state is None:
                continue
            # the .log: what its records are, and what salvage gets back
            loss = cut_loss(seg.log.buf, 0, seg.log_path) if suffix == LOG_SUFFIX else None
            plan.changes.append(
                FileChange(path, kind, state, 0, delete=True, difference=why, loss=loss)
            )
        yield plan


_DELETED_KINDS = tuple((suffix, SEGMENT_FILE) for suffix in (*INDEX_SUFFIXES, LOG_SUFFIX))
"""The .log goes last: a run stopped half way leaves a segment whose log is still there, which
its rerun deletes again, never index files whose log is gone."""


def _renamed_base(log: UnifiedLog, seg: LogSegment, buf: Buffer, config: IndexConfig) -> int | None:
    """The base offset a segment named above its first batch can be renamed to (verify's
    rename_rule), or None."""
    try:
        first = read_batch(buf, 0, len(buf), seg.log_path)
    except KdumpError:
        return None
    if first is None or first.base_offset >= seg.base_offset:
        return None
    lower = [s for s in log.segments if s.base_offset < seg.base_offset]
    last_of: dict[int, int | None] = {}
    if lower:
        prev = lower[-1]
        scan = segment_result(log, prev, config.verify_options).scan
        last_of[prev.base_offset] = None if scan is None else scan.last_offset
    rule = rename_rule(log.base_offsets, seg.base_offset, first.base_offset, last_of)
    if rule.new_base is None:
        return None
    target = SegmentPaths(SegmentPaths.of(seg).directory, rule.new_base)
    if any(_exists(target.path(sfx)) for sfx in SEGMENT_SUFFIXES):
        return None
    return rule.new_base


def _fill_rename(plan: SegmentPlan, recovered: RecoveredSegment, loss: CutLoss | None) -> None:
    """A segment named above its first batch: its .log takes the first batch's base offset, its
    index files are rebuilt under the new name, the old ones deleted. A producer snapshot is
    named by the offset whose state it holds, not by its segment: it stays as it is (that state
    is still the log's state at that offset)."""
    seg = plan.segment
    assert plan.new_base is not None
    new = SegmentPaths(seg.directory, plan.new_base)
    if recovered.stop is not None:
        plan.findings.append(recovered.stop)
    plan.findings.extend(recovered.findings)
    state = FileState.of(seg.log_path)
    if state is not None:
        plan.changes.append(
            FileChange(seg.log_path, RENAME, state, state.size, rename_to=new.log_path)
        )
    for path, kind, rebuilt in (
        (seg.index_path, OFFSET_INDEX, new.index_path),
        (seg.time_index_path, TIME_INDEX, new.time_index_path),
        (seg.txn_index_path, TXN_INDEX, new.txn_index_path),
    ):
        state = FileState.of(path)
        if state is not None:
            plan.changes.append(
                FileChange(
                    path,
                    kind,
                    state,
                    0,
                    delete=True,
                    difference=f"replaced by the rebuilt {rebuilt.name}",
                )
            )
    plan.changes.append(
        _index_change(new.index_path, OFFSET_INDEX, new.base_offset, recovered.index)
    )
    plan.changes.append(
        _index_change(new.time_index_path, TIME_INDEX, new.base_offset, recovered.time_index)
    )
    if recovered.aborted_txns:
        content = txn_index_bytes(recovered.aborted_txns)
        plan.changes.append(_index_change(new.txn_index_path, TXN_INDEX, new.base_offset, content))
    if recovered.truncated_bytes:
        plan.changes.append(_cut_change(seg, recovered, loss))


def _cut_change(seg: SegmentPaths, recovered: RecoveredSegment, loss: CutLoss | None) -> FileChange:
    """The log cut at the end of its last valid batch."""
    at = recovered.valid_bytes
    return FileChange(seg.log_path, LOG, FileState.of(seg.log_path), at, truncate_at=at, loss=loss)


def _fill_rebuild(
    plan: SegmentPlan, recovered: RecoveredSegment, truncate: bool, loss: CutLoss | None = None
) -> None:
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
        plan.changes.append(_cut_change(seg, recovered, loss))


def plan_rebuild_index(
    targets: list[UnifiedLog], config: IndexConfig | IndexConfigs, jobs: int = 1
) -> Iterator[SegmentPlan]:
    """``kdump rebuild-index``: every named segment's indexes as LogSegment.recover writes them.

    The log itself is not touched; a walk that stops early says so in the plan's findings.
    Partitions are planned in ``jobs`` processes (a partition's segments in order: producer
    state flows through them), the plans handed back in the targets' order.
    """
    configs = IndexConfigs.of_any(config)
    rebuild = partial(_rebuild_partition, configs=configs, truncate=False)
    return stream_ordered(rebuild, targets, jobs, weight=_partition_bytes, lookahead=PLANS_AHEAD)


def plan_recover(
    targets: list[UnifiedLog],
    config: IndexConfig | IndexConfigs,
    jobs: int = 1,
    scope: Scope = Scope.DAMAGED,
) -> Iterator[SegmentPlan]:
    """``kdump recover``: rebuild-index, and cut each log at its first invalid batch; of the
    segments verify flags (``scope``: or those the broker recovers, or all)."""
    configs = IndexConfigs.of_any(config)
    recover = partial(_rebuild_partition, configs=configs, truncate=True, scope=scope)
    return stream_ordered(recover, targets, jobs, weight=_partition_bytes, lookahead=PLANS_AHEAD)


PLANS_AHEAD = 2
"""Segment plans (each with its new index files' bytes) a planning process may hold ready."""


def _partition_bytes(log: UnifiedLog) -> int:
    return sum(log.storage.files().values())


def _trim_change(seg: SegmentPaths, path: Path, kind: str) -> FileChange | None:
    if not _exists(path):
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


def _zero_entry_is_real(seg: SegmentPaths) -> bool:
    """An all-zero first time index entry is (timestamp 0, base offset): real when the segment's
    largest timestamp is 0 and is first reached at its base offset."""
    with mapped(seg.log_path) as buf:
        max_ts, offset = largest_timestamp(buf, str(seg.log_path))
    return max_ts == 0 and offset == seg.base_offset


def plan_trim_index(targets: list[UnifiedLog], include_active: bool) -> Iterator[SegmentPlan]:
    """``kdump trim-index``: cut closed segments' indexes to their entries (trimToValidSize)."""
    for log in targets:
        findings = _orphan_findings(log)
        for seg in log.named_segments:
            paths = SegmentPaths.of(seg)
            plan = SegmentPlan(paths, seg.is_active, findings=findings)
            findings = []
            for path, kind in (
                (paths.index_path, OFFSET_INDEX),
                (paths.time_index_path, TIME_INDEX),
            ):
                change = _trim_change(paths, path, kind)
                if change is not None:
                    plan.changes.append(change)
            if plan.is_active and not include_active and plan.changes:
                plan.skipped = (
                    f"the active segment's {len(plan.changes)} preallocated index file(s) are "
                    "left for the broker to append to (--include-active trims them)"
                )
                plan.changes = []
            yield plan
