"""One segment's walk with verify's checks riding on it: its log, offset index, time index and
transaction index, whatever storage holds them. What the walk learns (``LogScan``) is the
segment's facts for every command (kdump.unified_log); the findings are verify's.

Tiered storage keeps a producer snapshot and a leader-epoch checkpoint with every segment:
those are checked here too. A store that fails (``StoreError``, ``DecryptionKeyError``) ends the
run; bytes that do not parse are findings, as for a local file.
"""

from __future__ import annotations

from kdump.checks import fixes
from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.gather import IndexGather
from kdump.checks.indexes import check_offset_index, check_time_index, index_tail
from kdump.checks.log import STOP_CODES, scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.errors import (
    BudgetSpent,
    DecryptionKeyError,
    KdumpError,
    StoreError,
    as_kdump_error,
)
from kdump.format.index import OffsetIndex
from kdump.format.names import INDEX_SUFFIXES, LEADER_EPOCH_SUFFIX, LOG_SUFFIX, SNAPSHOT_SUFFIX
from kdump.format.timeindex import TimeIndex
from kdump.log_scan import LogScan, RunConsumer, SegmentWalk
from kdump.segment import LogSegment
from kdump.tuples import NamedTuple
from kdump.unified_log import SegmentRider, UnifiedLog, Walker


class SegmentResult(SegmentWalk):
    """What one segment's walk found: its facts (``scan``: None when it has no ``.log`` or could
    not be read) and verify's findings on it. (Plain classes, not dataclasses, on verify's
    path: a dataclass costs start-up to define, issue 45.)"""

    __slots__ = ("sink",)

    def __init__(
        self,
        base_offset: int,
        slot: int,
        scan: LogScan | None,
        sink: FindingSink,
        error: KdumpError | None = None,
    ) -> None:
        super().__init__(base_offset, slot, scan, error)
        self.sink = sink

    @property
    def findings(self) -> list[Finding]:
        return self.sink.findings

    def cut_finding(self, position: int) -> Finding | None:
        """Verify's finding of the place at ``position`` where recovery cuts the log (a bad
        batch, a torn one, zeros a power loss left), which names what the bytes there are."""
        return next(
            (f for f in self.findings if f.code in STOP_CODES and f.position == position), None
        )


def segment_result(log: UnifiedLog, segment: LogSegment, options: VerifyOptions) -> SegmentResult:
    """Verify's walk of ``segment`` (its findings beside the facts): the one a command did and
    handed in, else done now with ``options`` and kept as the partition's (a segment a budget
    left unread has none)."""
    found = log.handed_in(segment)
    if isinstance(found, SegmentResult):
        return found
    if segment.slot in log.left:
        cap = options.max_findings_per_code
        return SegmentResult(segment.base_offset, segment.slot, None, FindingSink(cap))
    result = check_segment(segment, options, keep_open=True)
    log.take_result(segment, result)
    return result


def segment_results(log: UnifiedLog, options: VerifyOptions) -> list[SegmentResult]:
    return [segment_result(log, s, options) for s in log.segments]


def walker(options: VerifyOptions) -> Walker:
    """Verify's walk of a segment with a reader riding on it (the partition's
    ``walk_in_order``), its files kept open for what the command reads next."""

    def walk(segment: LogSegment, consumer: RunConsumer | None) -> SegmentWalk:
        return check_segment(segment, options, consumer, keep_open=True)

    return walk


def walk_in_order(
    log: UnifiedLog, options: VerifyOptions, rider: SegmentRider | None = None
) -> None:
    """The partition's one walk of each segment, in order, with verify's checks on it (run
    with ``options``), the producer state's replay and ``rider`` riding along
    (UnifiedLog.walk_in_order)."""
    log.walk_in_order(rider, walker(options))


def unread_error(findings: list[Finding], path: str) -> KdumpError:
    """Why a segment was not read, as its FILE_UNREADABLE finding says (a walk kept in a state
    file keeps its findings, not the error)."""
    unread = next((f for f in findings if f.code == Code.FILE_UNREADABLE), None)
    if unread is None:
        return KdumpError("not read", path)
    return KdumpError(unread.message, unread.path)


class _NoFixSink(FindingSink):
    """Findings on files kdump cannot repair where they are (an object store): no ``kdump
    recover``-style fix (those act on local files; a segment in a store is mended by writing
    it again)."""

    def add(self, finding: Finding) -> None:
        super().add(finding._replace(fix=None) if finding.fix else finding)


class Resume(NamedTuple):
    """What an earlier run verified of an active segment and what is unchanged since
    (kdump.checks.verify_state): the walk of its first ``scan.valid_bytes`` bytes, and the
    index entries that were there (``index_entries`` of the offset index,
    ``time_index_entries`` of the time index), all pointing into those bytes."""

    scan: LogScan
    index_entries: int
    time_index_entries: int


def check_segment(
    segment: LogSegment,
    options: VerifyOptions,
    consumer: RunConsumer | None = None,
    keep_open: bool = False,
    resume: Resume | None = None,
) -> SegmentResult:
    """Walk ``segment`` once with every check of it; ``consumer`` rides on the same walk
    (another command's reader of the batches: kdump txn's producer state). ``keep_open``:
    the segment's files stay open for what the command reads next (explain, the report);
    its partition closes them when done. ``resume``: only what was appended after a verified
    prefix is read (the verdict is the one a walk of the whole would give), unless the
    index entries since do not all point past it (then the whole is walked)."""
    local = segment.storage.local_path is not None
    sink = (
        FindingSink(options.max_findings_per_code)
        if local
        else _NoFixSink(options.max_findings_per_code)
    )
    try:
        scan = _check(segment, options, sink, consumer, resume)
    except (StoreError, DecryptionKeyError, BudgetSpent):  # the run's, not the segment's
        raise
    except (KdumpError, OSError) as e:
        error = as_kdump_error(e, segment.directory)
        sink.add(
            Finding(
                "FILE_UNREADABLE", Severity.ERROR, error.path or segment.directory, error.reason
            )
        )
        return SegmentResult(segment.base_offset, segment.slot, None, sink, error)
    finally:
        # what the walk learned is in the scan: the maps (a file descriptor each) and an
        # object's mirror go now, unless asked for (a log dir holds thousands of segments)
        if not keep_open or segment.storage.local_path is None:
            segment.close()
    if scan is not None:
        scan.gather = None  # done with: the rows need not travel back
    return SegmentResult(segment.base_offset, segment.slot, scan, sink)


def _check(
    segment: LogSegment,
    options: VerifyOptions,
    sink: FindingSink,
    consumer: RunConsumer | None,
    resume: Resume | None = None,
) -> LogScan | None:
    if LOG_SUFFIX not in segment.files:
        _orphans(segment, sink)
        return None
    index, time_index = segment.offset_index, segment.time_index
    if resume is not None and not _resumable(index, time_index, resume):
        resume = None
    first, first_time = (
        (0, 0)
        if resume is None
        else (
            resume.index_entries,
            resume.time_index_entries,
        )
    )
    gather = IndexGather(
        None if index is None else index_tail(index, first),
        None if time_index is None else index_tail(time_index, first_time),
    )
    end = -1
    if index is not None and index.used_entries:
        end = index.entry(index.used_entries - 1).position
    log = segment.log
    prior = None if resume is None else resume.scan
    if prior is not None:
        gather.carry(prior.last_offset, prior.max_timestamp)
    scan = scan_log(
        log, segment.base_offset, options, sink, segment.directory, gather, consumer, end, prior
    )
    fix = fixes.rebuild_index(scan.path)
    if index is not None:
        check_offset_index(index, scan, sink, options, segment.is_active, first)
    elif scan.size:
        sink.add(
            Finding(
                "INDEX_MISSING",
                Severity.WARNING,
                segment.index_path,
                "the log has data but no offset index: the broker rebuilds both indexes at startup",
                fix=fix,
            )
        )
    if time_index is not None:
        check_time_index(time_index, scan, sink, options, segment.is_active, first_time)
    elif index is not None and scan.size and scan.max_timestamp >= 0:
        sink.add(
            Finding(
                "TIMEINDEX_MISSING",
                Severity.WARNING,
                segment.time_index_path,
                "the log has timestamps but no time index: the broker starts an empty one "
                "and lookups by time skip this segment",
                fix=fix,
            )
        )
    txn_index = segment.txn_index
    if txn_index is not None:
        from kdump.checks.txn import check_txn_index  # a segment with aborted txns only

        check_txn_index(txn_index, scan, sink)
    if segment.storage.closed_segments_only:
        _tiered_extras(segment, scan, sink)
    return scan


def _resumable(index: OffsetIndex | None, time_index: TimeIndex | None, resume: Resume) -> bool:
    """Whether the index entries after the prefix's all point past it, following the last of
    its own (else the whole segment is walked: a rewritten index, a broker that recovered it)."""
    prefix = resume.scan
    for whole, first in ((index, resume.index_entries), (time_index, resume.time_index_entries)):
        if whole is None:
            if first:
                return False
            continue
        used = whole.used_entries
        if used < first:
            return False
        if first and used > first:
            before, after = whole.entry(first - 1), whole.entry(first)
            if not whole.follows(before, after):
                return False
    k, k_time = resume.index_entries, resume.time_index_entries
    if (
        index is not None
        and index.used_entries > k
        and index.entry(k).position < prefix.valid_bytes
    ):
        return False
    last = -1 if prefix.last_offset is None else prefix.last_offset
    return not (
        time_index is not None
        and time_index.used_entries > k_time
        and time_index.entry(k_time).offset <= last
    )


def _orphans(segment: LogSegment, sink: FindingSink) -> None:
    for suffix in INDEX_SUFFIXES:
        if segment.has(suffix):
            path = segment.path(suffix)
            sink.add(
                Finding(
                    "INDEX_ORPHAN",
                    Severity.WARNING,
                    path,
                    f"no {segment.file_name(LOG_SUFFIX)} beside it; the broker deletes such "
                    "index files",
                    fix=fixes.remove(path),
                )
            )


def _tiered_extras(segment: LogSegment, scan: LogScan, sink: FindingSink) -> None:
    """A tiered segment's own producer snapshot, and the leader epochs its batches carry
    against the checkpoint uploaded with it (every epoch from the log start to its end)."""
    from kdump.checks.epochs import leader_epoch_problems, observed_epochs
    from kdump.checks.txn import check_snapshot_bytes
    from kdump.format.textfiles import read_leader_epoch_checkpoint

    if segment.has(SNAPSHOT_SUFFIX):
        name = segment.file_name(SNAPSHOT_SUFFIX)
        check_snapshot_bytes(segment.storage.read_bytes(name), segment.snapshot_path, sink)
    if not segment.has(LEADER_EPOCH_SUFFIX):
        return
    path = segment.leader_epoch_path
    try:
        data = segment.storage.read_bytes(segment.file_name(LEADER_EPOCH_SUFFIX))
        entries = read_leader_epoch_checkpoint(data, path)
    except (StoreError, DecryptionKeyError):
        raise
    except KdumpError as e:
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path, e.reason))
        return
    for problem in leader_epoch_problems(entries, observed_epochs([scan])):
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path, problem))


__all__ = [
    "Resume",
    "SegmentResult",
    "check_segment",
    "segment_result",
    "segment_results",
    "walk_in_order",
    "walker",
]
