"""Checks of one partition directory: each segment, then what holds across segments."""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.checks.gather import IndexGather
from kdump.checks.indexes import REBUILD, check_offset_index, check_time_index
from kdump.checks.log import RECOVER, LogScan, scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.checks.txn import check_snapshot, check_txn_index
from kdump.discovery import parse_partition_dir
from kdump.errors import KdumpError, as_kdump_error
from kdump.format.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    EpochEntry,
)
from kdump.format.textfiles import read_leader_epoch_checkpoint, read_partition_metadata
from kdump.progress import NO_PROGRESS, Progress
from kdump.segment import (
    LEFTOVER_SUFFIXES,
    SNAPSHOT_SUFFIX,
    LogSegment,
    Segment,
    base_offset_of,
    list_segments,
)

if TYPE_CHECKING:
    from kdump.remote.layouts import RemotePartition, RemoteSegmentRef


@dataclass
class PartitionSummary:
    path: str
    topic: str | None
    partition: int | None
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    startup: list[str] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int | None:
        return None if self.last_offset is None else self.last_offset + 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PartitionReport:
    path: str
    findings: list[Finding]
    summary: PartitionSummary
    spans: list[tuple[int, int, int]] = field(default_factory=list, compare=False)
    """(base offset, first offset, last offset) of each segment read, in order: what the
    checks across a partition's remote and local segments compare (not in the report)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary.to_dict(),
        }


def _read_small(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(1 << 20)


def verify_segment(
    segment: Segment, options: VerifyOptions, is_active: bool, sink: FindingSink | None = None
) -> list[Finding]:
    """The log, index, time index and txn index checks of one segment."""
    own = sink or FindingSink(options.max_findings_per_code)
    _check_segment(segment, options, is_active, own)
    return own.close() if sink is None else []


def _check_segment(
    segment: Segment, options: VerifyOptions, is_active: bool, sink: FindingSink
) -> LogScan | None:
    log_path = segment.log_path
    if not log_path.exists():
        for p in (segment.index_path, segment.time_index_path, segment.txn_index_path):
            if p.exists():
                sink.add(
                    Finding(
                        "INDEX_ORPHAN",
                        Severity.WARNING,
                        str(p),
                        f"no {log_path.name} beside it; the broker deletes such index files",
                        fix=f"rm {p}",
                    )
                )
        return None
    directory = str(segment.directory)
    index, time_index = segment.offset_index(), segment.time_index()
    gather = IndexGather(index, time_index)
    scan = scan_log(segment.log(), segment.base_offset, options, sink, directory, gather)
    fix = REBUILD.format(log=scan.path)
    if index is not None:
        check_offset_index(index, scan, sink, options, is_active)
    elif scan.size:
        sink.add(
            Finding(
                "INDEX_MISSING",
                Severity.WARNING,
                str(segment.index_path),
                "the log has data but no offset index: the broker rebuilds both indexes at startup",
                fix=fix,
            )
        )
    if time_index is not None:
        check_time_index(time_index, scan, sink, options, is_active)
    elif index is not None and scan.size and scan.max_timestamp >= 0:
        sink.add(
            Finding(
                "TIMEINDEX_MISSING",
                Severity.WARNING,
                str(segment.time_index_path),
                "the log has timestamps but no time index: the broker starts an empty one "
                "and lookups by time skip this segment",
                fix=fix,
            )
        )
    txn_index = segment.txn_index()
    if txn_index is not None:
        check_txn_index(txn_index, scan, sink)
    return scan


def _startup(
    summary: PartitionSummary,
    segments: list[LogSegment],
    findings: list[Finding],
    scans: dict[int, LogScan],
) -> list[str]:
    rebuild = {
        os.path.basename(f.path).split(".", 1)[0]
        for f in findings
        if f.code in ("INDEX_MISSING", "INDEX_SANITY_CHECK_FAILS", "TIMEINDEX_SANITY_CHECK_FAILS")
        and f.severity is not Severity.INFO
    }
    out = []
    if rebuild:
        out.append(f"rebuilds the indexes of {len(rebuild)} segment(s)")
    ordered = sorted(segments, key=lambda seg: seg.base_offset)
    for i, seg in enumerate(ordered):
        scan = scans.get(seg.base_offset)
        if scan is not None and scan.first_invalid is not None:
            out.append(_truncation(scan, ordered[i + 1 :], scans))
            break  # every later segment goes with it: no second truncation happens
    return out


@dataclass(frozen=True)
class Rename:
    """A segment whose file name is above its first batch's base offset: the base offset its
    files can take (``new_base``), or why no rename helps (``why_not``)."""

    new_base: int | None
    why_not: str | None = None


def rename_rule(
    segments: list[LogSegment], base: int, first_offset: int, last_of: dict[int, int | None]
) -> Rename:
    """Whether the segment ``base`` can be renamed to its first batch's base offset
    ``first_offset``: only when that overlaps no other segment (``last_of``: each segment's
    last offset, None when empty)."""
    lower = [s.base_offset for s in segments if s.base_offset < base]
    if not lower:
        return Rename(first_offset)
    prev = max(lower)
    prev_last = last_of.get(prev)
    prev_end = prev if prev_last is None else prev_last
    if prev >= first_offset or (prev_last is not None and prev_last >= first_offset):
        return Rename(
            None,
            f"no rename helps: offsets {first_offset}..{prev_end} also lie in segment {prev}. "
            "Dump both copies (kdump dump), then move this segment's files out of the "
            "partition directory before the broker starts: the partition then loads without "
            "them and the replicas fetch the rest from the leader",
        )
    return Rename(first_offset)


def _overflow_fixes(findings: list[Finding]) -> list[Finding]:
    """A segment whose offsets overflow is one rebuild-index skips: its index findings offer
    no fix, and say who rebuilds them."""
    overflowing = {f.path for f in findings if f.code == "LOG_OFFSET_OVERFLOW"}
    if not overflowing:
        return findings
    skipped = {REBUILD.format(log=path) for path in overflowing}
    return [
        dataclasses.replace(
            f,
            fix=None,
            message=f"{f.message} (kdump rebuild-index skips a segment whose offsets overflow: "
            "the broker rebuilds this index when it splits the segment)",
        )
        if f.fix in skipped
        else f
        for f in findings
    ]


def _below_base_fixes(
    findings: list[Finding], segments: list[LogSegment], scans: dict[int, LogScan]
) -> list[Finding]:
    """LOG_OFFSET_BELOW_BASE says what the broker does and what fixes it: kdump recover
    renames the segment to its first batch's base offset when that overlaps nothing, else the
    finding says what to do instead (and offers no fix)."""
    last_of = {b: s.last_offset for b, s in scans.items()}
    by_path = {s.path: s for s in scans.values()}
    out = []
    for f in findings:
        scan = by_path.get(f.path)
        if f.code != "LOG_OFFSET_BELOW_BASE" or scan is None or scan.first_offset is None:
            out.append(f)
            continue
        if scan.first_offset < scan.base_offset:
            rule = rename_rule(segments, scan.base_offset, scan.first_offset, last_of)
        else:
            rule = Rename(None, "a batch inside the segment is below it: no rename helps; move "
                          "the segment's files out of the partition directory before the "
                          "broker starts")  # fmt: skip
        if f.offset is None:  # the count of findings left out
            out.append(dataclasses.replace(f, fix=f.fix if rule.new_base is not None else None))
            continue
        what = (
            f"kdump recover renames its files to {rule.new_base} and rebuilds its indexes"
            if rule.new_base is not None
            else rule.why_not
        )
        out.append(
            dataclasses.replace(
                f,
                message=f"{f.message}; {what}",
                fix=f.fix if rule.new_base is not None else None,
            )
        )
    return out


def _check_snapshots_beyond_end(
    directory: Path, segments: list[LogSegment], scans: dict[int, LogScan], sink: FindingSink
) -> None:
    """Producer snapshots above the log end offset (left by a cut log): the broker's
    ProducerStateManager.truncateAndReload deletes them at startup."""
    if not segments or segments[-1].base_offset not in scans:
        return
    last = scans[segments[-1].base_offset]
    end = last.base_offset if last.last_offset is None else last.last_offset + 1
    for snapshot in sorted(directory.glob(f"*{SNAPSHOT_SUFFIX}")):
        try:
            offset = base_offset_of(snapshot)
        except KdumpError:
            continue
        if offset > end:
            sink.add(
                Finding(
                    "SNAPSHOT_BEYOND_LOG_END",
                    Severity.WARNING,
                    str(snapshot),
                    f"producer snapshot at offset {offset}, beyond the log end offset {end}; "
                    f"{BROKER_FIXES} (it deletes the snapshot)",
                    offset=offset,
                    fix=RECOVER.format(dir=directory),
                )
            )


def _truncation(scan: LogScan, later: list[LogSegment], scans: dict[int, LogScan]) -> str:
    """What recovery does to a segment with an invalid batch: LogLoader.recoverLog truncates
    it there and then deletes every segment after it ("we had an invalid message, delete all
    remaining log"); it recovers only the segments past the recovery point."""
    cut = scan.first_invalid
    assert cut is not None
    text = (
        f"truncates {os.path.basename(scan.path)} at position {cut} ({scan.size - cut} bytes) "
        "if it recovers that segment"
    )
    if later:
        size = 0
        last: int | None = None
        for seg in later:
            later_scan = scans.get(seg.base_offset)
            if later_scan is not None:
                size += later_scan.size
                last = later_scan.last_offset if later_scan.last_offset is not None else last
            else:
                size += _file_size(seg.log_path)
        bases = ", ".join(str(seg.base_offset) for seg in later)
        span = f"offsets {later[0].base_offset}..{last}, " if last is not None else ""
        text += (
            f", then deletes the {len(later)} later segment(s) {bases} ({span}{size} bytes) "
            "too: recovery deletes every segment after an invalid batch"
        )
    return text


def _file_size(path: str | Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _check_leftovers(directory: Path, sink: FindingSink) -> None:
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name.endswith(LEFTOVER_SUFFIXES):
            sink.add(
                Finding(
                    "PARTITION_LEFTOVER_FILE",
                    Severity.WARNING,
                    entry.path,
                    "left by a delete, compaction or swap that did not finish; the broker "
                    "completes or removes it at startup",
                )
            )


def _check_segment_order(
    segments: list[Segment],
    scans: dict[int, LogScan],
    sink: FindingSink,
    unread: set[int],
    remote: bool = False,
) -> None:
    """Each segment's offsets above the previous one's (``scans`` and ``unread`` by the
    segment's slot in ``segments``). In an object store two uploads of one range (a new leader
    copying again what the old one had) are normal until Kafka deletes the one it no longer
    references: a warning there, which ``kdump tiered scrub`` settles."""
    prev: LogScan | None = None
    for slot, seg in enumerate(segments):
        if slot in unread:
            prev = None  # what lies between is unknown, not a gap
            continue
        scan = scans.get(slot)
        if scan is None or scan.last_offset is None:
            continue
        if prev is not None and prev.last_offset is not None:
            first = scan.first_offset
            assert first is not None
            if seg.base_offset <= prev.last_offset or first <= prev.last_offset:
                message = (
                    f"segment starts at offset {first} (base {seg.base_offset}), not above "
                    f"the previous segment's last offset {prev.last_offset}"
                )
                if remote:
                    message += (
                        f" ({prev.path}): two uploads of these offsets (normal after a leader "
                        "change until Kafka deletes the one it does not reference; "
                        "kdump tiered scrub --metadata tells which)"
                    )
                sink.add(
                    Finding(
                        "PARTITION_SEGMENT_OVERLAP",
                        Severity.WARNING if remote else Severity.ERROR,
                        scan.path,
                        message,
                        offset=first,
                    )
                )
            elif first > prev.last_offset + 1:
                sink.add(
                    Finding(
                        "PARTITION_OFFSET_GAP",
                        Severity.INFO,
                        scan.path,
                        f"offsets {prev.last_offset + 1}..{first - 1} lie in no segment "
                        "(normal after compaction or deletion)",
                        offset=prev.last_offset + 1,
                    )
                )
        # remote: a re-upload of older offsets leaves the furthest segment the one to follow
        behind = remote and prev is not None and prev.last_offset is not None
        if not behind or scan.last_offset > prev.last_offset:  # type: ignore[union-attr,operator]
            prev = scan


def _check_leader_epochs(directory: Path, scans: dict[int, LogScan], sink: FindingSink) -> None:
    path = directory / LEADER_EPOCH_CHECKPOINT
    if not path.exists():
        return
    try:
        entries = read_leader_epoch_checkpoint(_read_small(path), str(path))
    except KdumpError as e:
        reason = e.reason
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, str(path), reason))
        return
    for problem in leader_epoch_problems(entries, _observed_epochs(scans)):
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, str(path), problem))


def _observed_epochs(scans: dict[int, LogScan]) -> list[tuple[int, int]]:
    """Where each epoch starts in the batches of ``scans`` (taken in key order)."""
    observed: list[tuple[int, int]] = []
    for base in sorted(scans):
        for epoch, offset in scans[base].epoch_starts:
            if epoch >= 0 and (not observed or observed[-1][0] != epoch):
                observed.append((epoch, offset))
    return observed


def leader_epoch_problems(entries: list[EpochEntry], observed: list[tuple[int, int]]) -> list[str]:
    """Where the checkpoint and the batches' partitionLeaderEpoch disagree."""
    problems = []
    for a, b in itertools.pairwise(entries):
        if b.epoch <= a.epoch or b.start_offset < a.start_offset:
            problems.append(f"entries {tuple(a)} then {tuple(b)} do not both increase")
    starts = {e.epoch: e.start_offset for e in entries}
    for i, (epoch, offset) in enumerate(observed):
        if i and epoch < observed[i - 1][0]:
            problems.append(
                f"batches go back from epoch {observed[i - 1][0]} to {epoch} at offset {offset}"
            )
        if epoch not in starts:
            problems.append(
                f"batches from offset {offset} carry epoch {epoch}, which the checkpoint lacks"
            )
        elif i == 0 and starts[epoch] > offset:
            problems.append(
                f"epoch {epoch} starts at {starts[epoch]} in the checkpoint, but a batch at "
                f"offset {offset} already carries it"
            )
        elif i and starts[epoch] != offset:
            problems.append(
                f"epoch {epoch} starts at {starts[epoch]} in the checkpoint, at offset {offset} "
                "in the log"
            )
    return problems


def _check_partition_metadata(directory: Path, sink: FindingSink) -> None:
    path = directory / PARTITION_METADATA
    if not path.exists():
        return
    try:
        read_partition_metadata(_read_small(path), str(path))
    except KdumpError as e:
        sink.add(
            Finding(
                "PARTITION_METADATA_CORRUPT",
                Severity.WARNING,
                str(path),
                f"{e.reason}; the broker refuses to load a partition whose topic id it cannot read",
            )
        )


@dataclass(frozen=True)
class SegmentWork:
    """One segment's own checks, as a piece of work another process can do (plain data)."""

    directory: str
    base_offset: int
    is_active: bool
    size: int
    """Bytes of its .log: big pieces of work start first."""
    slot: int = 0
    """Its place among the partition's segments (two remote uploads share a base offset)."""
    remote: RemoteSegmentRef | None = None
    """A segment in an object store: its objects (``directory`` is then its partition's URL)."""

    @property
    def log_name(self) -> str:
        if self.remote is not None:
            return self.remote.url("log")
        return str(Path(self.directory) / f"{self.base_offset:020d}.log")


@dataclass
class SegmentOutcome:
    base_offset: int
    scan: LogScan | None
    """None: no .log, or it could not be read (``unread``)."""
    unread: bool
    sink: FindingSink
    slot: int = 0


class _RemoteSink(FindingSink):
    """A remote segment's findings: no ``kdump recover``-style fix (those act on local files;
    a remote segment is mended by uploading it again)."""

    def add(self, finding: Finding) -> None:
        super().add(replace(finding, fix=None) if finding.fix else finding)


def check_segment_work(work: SegmentWork, options: VerifyOptions) -> SegmentOutcome:
    """The log, index, time index and txn index checks of one segment."""
    if work.remote is not None:
        return _check_remote_segment(work, options)
    segment = LogSegment(Path(work.directory), work.base_offset)
    sink = FindingSink(options.max_findings_per_code)
    try:
        scan = _check_segment(segment, options, work.is_active, sink)
    except (KdumpError, OSError) as e:
        error = as_kdump_error(e, work.directory)
        sink.add(
            Finding("FILE_UNREADABLE", Severity.ERROR, error.path or work.directory, error.reason)
        )
        return SegmentOutcome(work.base_offset, None, True, sink, work.slot)
    if scan is not None:
        scan.gather = None  # done with: the rows need not travel back
    return SegmentOutcome(work.base_offset, scan, False, sink, work.slot)


def _check_remote_segment(work: SegmentWork, options: VerifyOptions) -> SegmentOutcome:
    """A remote segment's checks: those of a local one, and its producer snapshot and leader
    epoch checkpoint, which tiered storage keeps per segment. A store that fails (StoreError)
    ends the run; bytes that do not parse are findings, as for a local file."""
    from kdump.errors import DecryptionKeyError, StoreError
    from kdump.remote.segment import RemoteSegment

    assert work.remote is not None
    segment = RemoteSegment(work.remote)
    sink = _RemoteSink(options.max_findings_per_code)
    try:
        scan = _check_segment(segment, options, False, sink)
        if scan is not None:
            snapshot = segment.snapshot_path
            if snapshot.exists():
                check_snapshot(snapshot.url, sink)
            _check_segment_epochs(segment, scan, sink)
    except (StoreError, DecryptionKeyError):
        raise
    except KdumpError as e:
        sink.add(Finding("FILE_UNREADABLE", Severity.ERROR, e.path or work.directory, e.reason))
        return SegmentOutcome(work.base_offset, None, True, sink, work.slot)
    finally:
        segment.close()
    if scan is not None:
        scan.gather = None
    return SegmentOutcome(work.base_offset, scan, False, sink, work.slot)


def _check_segment_epochs(segment: Any, scan: LogScan, sink: FindingSink) -> None:
    """The leader epochs the segment's batches carry against the checkpoint uploaded with it
    (every epoch from the log start to the segment's end)."""
    from kdump.remote.files import read_file

    path = segment.leader_epoch_path
    if not path.exists():
        return
    try:
        entries = read_leader_epoch_checkpoint(read_file(path.url), path.url)
    except KdumpError as e:
        from kdump.errors import StoreError

        if isinstance(e, StoreError):
            raise
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path.url, e.reason))
        return
    for problem in leader_epoch_problems(entries, _observed_epochs({0: scan})):
        sink.add(Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path.url, problem))


@dataclass
class PartitionWork:
    """A partition's segments to check, or why they cannot be listed."""

    directory: Path
    only: AbstractSet[int] | None
    segments: list[Segment]
    work: list[SegmentWork]
    unlisted: Finding | None = None
    remote: RemotePartition | None = None


def plan_partition(
    directory: str | os.PathLike[str],
    only: AbstractSet[int] | None,
    remote: RemotePartition | None = None,
) -> PartitionWork:
    """The segment checks one partition needs (``only``: just these segments); ``remote``: a
    partition in an object store (``directory`` then only names it)."""
    d = Path(directory)
    if remote is not None:
        return _plan_remote(d, only, remote)
    try:
        local = list_segments(d)
    except OSError as e:
        finding = Finding("FILE_UNREADABLE", Severity.ERROR, str(d), e.strerror or str(e))
        return PartitionWork(d, only, [], [], finding)
    segments: list[Segment] = list(local)
    active = local[-1].base_offset if local else None
    work = [
        SegmentWork(str(d), seg.base_offset, seg.base_offset == active, _log_size(seg), slot)
        for slot, seg in enumerate(local)
        if only is None or seg.base_offset in only
    ]
    return PartitionWork(d, only, segments, work)


def _plan_remote(d: Path, only: AbstractSet[int] | None, remote: RemotePartition) -> PartitionWork:
    from kdump.remote.segment import RemoteSegment

    segments: list[Segment] = [RemoteSegment(ref) for ref in remote.segments]
    work = [
        SegmentWork(remote.url, ref.base_offset, False, ref.log_size, slot, ref)
        for slot, ref in enumerate(remote.segments)
        if only is None or ref.base_offset in only
    ]
    return PartitionWork(d, only, segments, work, remote=remote)


def _log_size(segment: LogSegment) -> int:
    try:
        return segment.log_path.stat().st_size
    except OSError:
        return 0


def finish_partition(
    plan: PartitionWork, outcomes: list[SegmentOutcome], options: VerifyOptions
) -> PartitionReport:
    """The partition's report from its segments' outcomes (in segment order) and the checks
    that hold across segments."""
    d = plan.directory
    name = d if plan.remote is None else plan.remote.url
    sink = FindingSink(options.max_findings_per_code)
    if plan.unlisted is not None:
        sink.add(plan.unlisted)
        findings = sink.close()
        return PartitionReport(str(name), findings, _summarise(plan, {}, findings, options))
    scans: dict[int, LogScan] = {}
    unread: set[int] = set()
    for outcome in outcomes:
        sink.absorb(outcome.sink)
        if outcome.unread:
            unread.add(outcome.slot)
        elif outcome.scan is not None:
            scans[outcome.slot] = outcome.scan
    if plan.only is None and plan.remote is not None:
        from kdump.remote.checks import check_remote_partition

        _check_segment_order(plan.segments, scans, sink, unread, remote=True)
        check_remote_partition(plan.remote, scans, sink)
    elif plan.only is None:
        for snapshot in sorted(d.glob(f"*{SNAPSHOT_SUFFIX}")):
            check_snapshot(str(snapshot), sink)
        _check_snapshots_beyond_end(d, _local(plan), _by_base(plan, scans), sink)
        _check_segment_order(plan.segments, scans, sink, unread)
        _check_leftovers(d, sink)
        _check_leader_epochs(d, scans, sink)
        _check_partition_metadata(d, sink)
    findings = sink.close()
    if plan.remote is None:
        findings = _overflow_fixes(_below_base_fixes(findings, _local(plan), _by_base(plan, scans)))
    summary = _summarise(plan, scans, findings, options)
    report = PartitionReport(str(name), findings, summary)
    report.spans = [
        (plan.segments[slot].base_offset, scan.first_offset, scan.last_offset)
        for slot, scan in sorted(scans.items())
        if scan.first_offset is not None and scan.last_offset is not None
    ]
    return report


def _local(plan: PartitionWork) -> list[LogSegment]:
    """A local partition's segments (a remote one's are RemoteSegments)."""
    assert plan.remote is None
    return [s for s in plan.segments if isinstance(s, LogSegment)]


def _by_base(plan: PartitionWork, scans: dict[int, LogScan]) -> dict[int, LogScan]:
    """``scans`` (by slot) by base offset: in a local partition directory the file names make
    base offsets unique."""
    return {plan.segments[slot].base_offset: scan for slot, scan in scans.items()}


def verify_partition(
    directory: str | os.PathLike[str],
    options: VerifyOptions,
    only: AbstractSet[int] | None = None,
    progress: Progress = NO_PROGRESS,
    remote: RemotePartition | None = None,
) -> PartitionReport:
    """Every check of one partition directory (``only``: just these segments' own checks);
    ``progress`` hears of each ``.log`` done, by its bytes; ``remote``: a partition in an
    object store (kdump.remote), which ``directory`` then only names."""
    plan = plan_partition(directory, only, remote)
    outcomes = []
    for work in plan.work:
        outcomes.append(check_segment_work(work, options))
        progress.advance(work.size, work.log_name)
    return finish_partition(plan, outcomes, options)


def _summarise(
    plan: PartitionWork,
    scans: dict[int, LogScan],
    findings: list[Finding],
    options: VerifyOptions,
) -> PartitionSummary:
    d = plan.directory
    if plan.remote is not None:
        s = PartitionSummary(plan.remote.url, plan.remote.topic, plan.remote.partition)
    else:
        parsed = parse_partition_dir(d.name)
        s = PartitionSummary(str(d), *(parsed or (None, None)))
    s.segments = len(plan.segments)
    ordered = [scans[b] for b in sorted(scans)]
    s.bytes = sum(x.size for x in ordered)
    s.batches = sum(x.batches for x in ordered)
    s.records = sum(x.records for x in ordered) if options.deep else None
    with_data = [x for x in ordered if x.batches]
    if with_data:
        s.first_offset = with_data[0].first_offset
        s.last_offset = with_data[-1].last_offset
        if plan.remote is not None:  # a re-upload of older offsets may come last
            s.last_offset = max(x.last_offset for x in with_data if x.last_offset is not None)
        stamps = [t for x in with_data for t in (x.min_timestamp, x.max_timestamp) if t >= 0]
        if stamps:
            s.first_timestamp, s.last_timestamp = min(stamps), max(stamps)
    for f in findings:
        if f.severity is Severity.ERROR:
            s.errors += 1
        elif f.severity is Severity.WARNING:
            s.warnings += 1
        else:
            s.infos += 1
    if plan.remote is None:
        s.startup = _startup(s, _local(plan), findings, _by_base(plan, scans))
    return s
