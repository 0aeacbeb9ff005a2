"""Checks of one partition: each segment's (kdump.checks.segment, from the opened partition's
walks), then what holds across segments and the partition's other files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kdump.checks import fixes
from kdump.checks.codes import Code
from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.segment import SegmentResult, check_segment, segment_result
from kdump.checks.sink import FindingSink
from kdump.config import INTERNAL_TOPIC_CONFIGS, Settings, Source
from kdump.errors import KdumpError
from kdump.format.layout import TIME_INDEX_ENTRY
from kdump.format.names import (
    CLEANED_SUFFIX,
    CLEANER_OFFSET_CHECKPOINT,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_SUFFIX,
    PARTITION_METADATA,
    TIME_INDEX_SUFFIX,
    kept_what,
    leftover_pid,
    offset_in_name,
    segment_file_name,
)
from kdump.log_scan import LogScan
from kdump.progress import NO_PROGRESS, Progress
from kdump.segment import LogSegment
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

if TYPE_CHECKING:
    from kdump.loss import CutLoss
    from kdump.unified_log import PartitionFacts


class PartitionSummary:
    """A partition's line in verify's output: the opened partition's facts (the same keys in
    every JSON output: ``UnifiedLog.facts``), then what verify's walk counted (``COUNTS``, in
    the output's order). Plain classes, not dataclasses, on verify's path: a dataclass costs
    start-up to define (issue 45)."""

    COUNTS = (
        "segments_read", "bytes_read", "batches", "records", "wrappers_not_counted",
        "first_offset", "last_offset", "first_timestamp", "last_timestamp", "errors",
        "warnings", "infos", "startup", "kept_records", "read",
    )  # fmt: skip

    def __init__(self, facts: PartitionFacts, segments_read: int = 0, bytes_read: int = 0) -> None:
        self.facts = facts
        self.segments_read = segments_read
        """The segments verify read: every ``.log`` on disk, or the ones named (the facts'
        ``segments`` are those the broker keeps once it has loaded the partition)."""
        self.bytes_read = bytes_read
        """Their bytes on disk (the facts' ``bytes``: once loaded)."""
        self.batches = 0
        self.records = 0
        """Decoded with --deep, else as the batches' headers count them."""
        self.wrappers_not_counted = 0
        """Compressed v0/v1 wrappers whose records were not counted (without --deep)."""
        self.first_offset: int | None = None
        self.last_offset: int | None = None
        self.first_timestamp: int | None = None
        self.last_timestamp: int | None = None
        self.errors = 0
        self.warnings = 0
        self.infos = 0
        self.startup: list[str] = []
        self.kept_records = 0
        """Whole, valid records in the log bytes a ``kdump recover`` kept here (salvage's)."""
        self.read = "all"
        """What of it the run read: ``all``, ``partly`` or ``none`` (a run cut short by --budget
        or Ctrl-C: the counts are of what it read, the facts that need the rest are null)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionSummary):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    @property
    def path(self) -> str:
        return str(self.facts["path"])

    @property
    def topic(self) -> str | None:
        return self.facts["topic"]

    @property
    def partition(self) -> int | None:
        return self.facts["partition"]

    @property
    def segments(self) -> int:
        return _known(self.facts["segments"], "segments")

    @property
    def bytes(self) -> int:
        return _known(self.facts["bytes"], "bytes")

    @property
    def log_end_offset(self) -> int:
        return _known(self.facts["log_end_offset"], "log_end_offset")

    def count(self, f: Finding) -> None:
        if f.severity is Severity.ERROR:
            self.errors += 1
        elif f.severity is Severity.WARNING:
            self.warnings += 1
        else:
            self.infos += 1

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.facts)
        out.update((k, getattr(self, k)) for k in self.COUNTS)
        out["startup"] = list(self.startup)
        return out


class PartitionResult:
    """What verify found in one partition: its findings and its summary."""

    def __init__(self, path: str, findings: list[Finding], summary: PartitionSummary) -> None:
        self.path, self.findings, self.summary = path, findings, summary
        self.spans: list[tuple[int, int, int]] = []
        """(base offset, first offset, last offset) of each segment read, in order: what the
        checks across a partition's remote and local segments compare (not in the output)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionResult):
            return NotImplemented
        mine = (self.path, self.findings, self.summary)
        return mine == (other.path, other.findings, other.summary)

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary.to_dict(),
        }


def segments_to_check(log: UnifiedLog) -> list[LogSegment]:
    """The segments whose walks verify needs: those named (every one, with its orphan index
    files, when the partition was named)."""
    if log.only is None:
        return log.all_segments
    return [s for s in log.segments if s.base_offset in log.only]


def verify_partition(
    log: UnifiedLog, options: VerifyOptions, progress: Progress = NO_PROGRESS
) -> PartitionResult:
    """Every check of one partition (verify's ``options``), its segments walked here, in
    order (those not walked already: a reused walk handed in), the checks of a compacted one's
    cleaned section riding on them (kdump.checks.compacted, with the settings its log was opened
    with)."""
    segments = segments_to_check(log)
    todo = [s for s in segments if not log.walked(s)]
    if todo and has_cleaner_entry(log):
        # the compacted audit's module where a cleaner checkpoint says a section was cleaned
        from kdump.checks.compacted import check_in_order, cleaned_section

        plan = cleaned_section(log, options.compaction_key_memory)
        walks = check_in_order(log, todo, options, plan, keep_open=True)
    else:
        walks = [check_segment(s, options, keep_open=True) for s in todo]
    for segment, result in zip(todo, walks, strict=True):
        log.take_result(segment, result)
    for segment in segments:
        progress.advance(segment.log_size, segment.log_path)
    return finish_partition(log, options)


def has_cleaner_entry(log: UnifiedLog) -> bool:
    """Whether the log dir's cleaner-offset-checkpoint holds an entry for ``log``: only such a
    partition has a cleaned section to audit (kdump.checks.compacted)."""
    try:
        return log.checkpointed(CLEANER_OFFSET_CHECKPOINT) is not None
    except KdumpError:  # an unreadable checkpoint file is the log dir's own finding
        return False


def finish_partition(log: UnifiedLog, options: VerifyOptions) -> PartitionResult:
    """The partition's result from its segments' walks (those not walked yet: walked now
    with verify's ``options``) and the checks that hold across segments."""
    sink = FindingSink(options.max_findings_per_code)
    checked = segments_to_check(log)
    results: list[SegmentResult] = [segment_result(log, s, options) for s in checked]
    scans: dict[int, LogScan] = {}
    unread: set[int] = set()
    for walked in results:
        sink.absorb(walked.sink)
        if walked.unread:
            unread.add(walked.slot)
        elif walked.scan is not None:
            scans[walked.slot] = walked.scan
    with_log = [s for s in log.segments if s.slot in scans or s.slot in unread]
    _check_oversize(log, options, sink)
    if log.only is None:
        causes = _gap_causes(log, scans)
        remote = log.remote_partition
        _check_segment_order(with_log, scans, sink, unread, causes, remote=remote is not None)
        if remote is not None:
            from kdump.tiered.checks import check_remote_partition

            check_remote_partition(remote, scans, sink)
        else:
            _check_snapshots(log, sink)
            _check_leftovers(log, sink)
            _check_load(log, sink)
            _check_kdump_files(log, sink)
            _check_leader_epochs(log, [scans.get(s.slot) for s in log.segments], sink)
            _check_partition_metadata(log, sink)
            _check_metadata_partition(log, sink)
    findings = sink.close()
    by_base = {log.all_segments[slot].base_offset: scan for slot, scan in scans.items()}
    if not log.tiered:
        findings = _overflow_fixes(_below_base_fixes(findings, log.base_offsets, by_base))
    if log.storage.local_path is None:
        # kdump repairs local files: a copy in a store is mended by writing it again
        findings = [f._replace(fix=None) if f.fix else f for f in findings]
    summary = _summarise(log, [scans[s.slot] for s in with_log if s.slot in scans], findings)
    result = PartitionResult(log.location, findings, summary)
    result.spans = [
        (log.all_segments[slot].base_offset, scan.first_offset, scan.last_offset)
        for slot, scan in sorted(scans.items())
        if scan.first_offset is not None and scan.last_offset is not None
    ]
    return result


def _summarise(
    log: UnifiedLog, ordered: list[LogScan], findings: list[Finding]
) -> PartitionSummary:
    # what was read: the partition's segments, or the ones named (`verify DIR/...258.log`
    # counted 6 segments and the partition's bytes beside that one segment's batches)
    read = log.named_segments
    s = PartitionSummary(log.facts(), len(read), sum(x.log_size for x in read))
    s.batches = sum(x.batches for x in ordered)
    s.records = sum(x.records for x in ordered)
    s.wrappers_not_counted = sum(x.wrappers_not_counted for x in ordered)
    with_data = [x for x in ordered if x.batches]
    if with_data:
        s.first_offset = with_data[0].first_offset
        s.last_offset = with_data[-1].last_offset
        if log.tiered:  # a re-upload of older offsets may come last
            s.last_offset = max(x.last_offset for x in with_data if x.last_offset is not None)
        stamps = [t for x in with_data for t in (x.min_timestamp, x.max_timestamp) if t >= 0]
        if stamps:
            s.first_timestamp, s.last_timestamp = min(stamps), max(stamps)
    for f in findings:
        s.count(f)
    if log.cut_short:  # nothing more is read: what the broker's load does is not known
        s.read = "partly" if read else "none"
    elif not log.tiered:
        s.startup = _startup(log, findings)
        s.kept_records = sum(loss.salvageable.records for loss in log.kept_losses.values())
    return s


def _startup(log: UnifiedLog, findings: list[Finding]) -> list[str]:
    """What the broker's next start does about damage in the partition, in words
    (``broker_load``; all of it, segments recovered and snapshots, is the facts' ``load``)."""
    load = log.broker_load
    out = []
    if load.at_open:
        # an offset index missing, or a transaction index failing its check
        out.append(f"rebuilds the indexes of {len(load.at_open)} segment(s)")
    damaged = log.damaged_from
    if damaged is not None:
        if damaged.segment == load.cut or damaged.segment in load.at_open:
            out.append(_truncation(log))
        else:
            why = (
                "the clean shutdown marker is there"
                if load.clean_shutdown
                else f"it lies below the recovery point {load.recovery_point}"
            )
            out.append(
                f"does not recover segment {damaged.segment} ({why}): it keeps the invalid "
                f"batch at {os.path.basename(damaged.path)}:{damaged.position} and does not "
                f"notice it; consumers that reach offset {damaged.offset} fail on it. kdump "
                "recover cuts the log there (recover --as-broker does as the broker does)"
            )
    if load.failure is not None:
        out.append(f"fails to load it: {load.failure}")
    return out


def _truncation(log: UnifiedLog) -> str:
    """What recovery does to a segment with an invalid batch: LogLoader.recoverLog truncates
    it there and then deletes every segment after it ("we had an invalid message, delete all
    remaining log"); it recovers only the segments past the recovery point."""
    damaged = log.damaged_from
    assert damaged is not None
    segment = next(s for s in log.segments if s.base_offset == damaged.segment)
    size = segment.log_size
    text = (
        f"truncates {os.path.basename(damaged.path)} at position {damaged.position} "
        f"({size - damaged.position} bytes)"
    )
    # a segment recovered for its missing index is cut, no later one deleted (loadSegmentFiles)
    later = [s for s in log.segments if s.base_offset in log.broker_load.deleted]
    if later:
        last: int | None = None
        for seg in later:
            scan = log.walk(seg).scan  # (walked already: the damage is known)
            if scan is not None and scan.last_offset is not None:
                last = scan.last_offset
        bases = ", ".join(str(seg.base_offset) for seg in later)
        span = f"offsets {later[0].base_offset}..{last}, " if last is not None else ""
        text += (
            f", then deletes the {len(later)} later segment(s) {bases} "
            f"({span}{sum(s.log_size for s in later)} bytes) "
            "too: recovery deletes every segment after an invalid batch"
        )
    past = [f.offset for f in log.snapshot_files if f.offset > damaged.offset]
    if past:
        text += (
            f"; the log then ends at offset {damaged.offset}, and it deletes the "
            f"{len(past)} producer snapshot(s) past it ({', '.join(map(str, past))})"
        )
    return text


class Rename(NamedTuple):
    """A segment whose file name is above its first batch's base offset: the base offset its
    files can take (``new_base``), or why no rename helps (``why_not``)."""

    new_base: int | None
    why_not: str | None = None


def rename_rule(
    bases: list[int], base: int, first_offset: int, last_of: dict[int, int | None]
) -> Rename:
    """Whether the segment ``base`` can be renamed to its first batch's base offset
    ``first_offset``: only when that overlaps no other segment (``last_of``: each segment's
    last offset, None when empty)."""
    lower = [b for b in bases if b < base]
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
    overflowing = {f.path for f in findings if f.code == Code.LOG_OFFSET_OVERFLOW}
    if not overflowing:
        return findings
    skipped = {fixes.rebuild_index(path) for path in overflowing}
    return [
        f._replace(
            fix=None,
            message=f"{f.message} (kdump rebuild-index skips a segment whose offsets overflow: "
            "the broker rebuilds this index when it splits the segment)",
        )
        if f.fix in skipped
        else f
        for f in findings
    ]


def _below_base_fixes(
    findings: list[Finding], bases: list[int], scans: dict[int, LogScan]
) -> list[Finding]:
    """LOG_OFFSET_BELOW_BASE says what the broker does and what fixes it: kdump recover
    renames the segment to its first batch's base offset when that overlaps nothing, else the
    finding says what to do instead (and offers no fix)."""
    last_of = {b: s.last_offset for b, s in scans.items()}
    by_path = {s.path: s for s in scans.values()}
    out = []
    for f in findings:
        scan = by_path.get(f.path)
        if f.code != Code.LOG_OFFSET_BELOW_BASE or scan is None or scan.first_offset is None:
            out.append(f)
            continue
        if scan.first_offset < scan.base_offset:
            rule = rename_rule(bases, scan.base_offset, scan.first_offset, last_of)
        else:
            rule = Rename(None, "a batch inside the segment is below it: no rename helps; move "
                          "the segment's files out of the partition directory before the "
                          "broker starts")  # fmt: skip
        if f.offset is None:  # the count of findings left out
            out.append(f._replace(fix=f.fix if rule.new_base is not None else None))
            continue
        what = (
            f"kdump recover renames its files to {rule.new_base} and rebuilds its indexes"
            if rule.new_base is not None
            else rule.why_not
        )
        out.append(
            f._replace(
                message=f"{f.message}; {what}",
                fix=f.fix if rule.new_base is not None else None,
            )
        )
    return out


class GapCauses(NamedTuple):
    """What can explain offsets that lie in no segment of a partition."""

    compacted: bool
    """The topic is compacted (an internal topic Kafka compacts), or its segments show the
    cleaner's work (offset gaps inside them, delete horizons)."""
    cuts: dict[int, str]
    """The segments ``kdump recover`` cut (base offset) and where the cut bytes are kept."""


def _gap_causes(log: UnifiedLog, scans: dict[int, LogScan]) -> GapCauses:
    policy = INTERNAL_TOPIC_CONFIGS.get(log.topic or "", {}).get("cleanup.policy")
    cleaned = any(s.gaps or s.delete_horizon_batches for s in scans.values())
    cuts = {
        kept.base_offset: log.storage.location_of(kept.name)
        for kept in log.kept_logs
        if kept.cut_at
    }
    return GapCauses(policy == "compact" or cleaned, cuts)


def _gap(prev: LogScan, last: int, scan: LogScan, first: int, causes: GapCauses) -> Finding:
    """Offsets between two segments that neither holds: normal where the cleaner removed them;
    where kdump recover cut them (a cut used to keep the later segments), or nothing explains
    them, records are missing."""
    missing = f"offsets {last + 1}..{first - 1} lie in no segment"
    kept = causes.cuts.get(prev.base_offset)
    if kept is not None:
        why = f": kdump recover cut them from {os.path.basename(prev.path)} (kept in {kept})"
        severity = Severity.WARNING
    elif causes.compacted:
        why = " (normal on a compacted topic: the cleaner leaves out the records it removes)"
        severity = Severity.INFO
    else:
        why = (
            ": records are missing, unless the topic is compacted (no segment here shows the "
            "cleaner's work); retention deletes whole segments from the log start only, so a "
            "segment was removed by hand or lost: its offsets exist only on other replicas"
        )
        severity = Severity.WARNING
    return Finding(
        "PARTITION_OFFSET_GAP",
        severity,
        scan.path,
        missing + why,
        offset=last + 1,
    )


def _check_segment_order(
    segments: list[LogSegment],
    scans: dict[int, LogScan],
    sink: FindingSink,
    unread: set[int],
    gaps: GapCauses,
    remote: bool = False,
) -> None:
    """Each segment's offsets above the previous one's (``scans`` and ``unread`` by the
    segment's slot in ``segments``; ``gaps``: what explains offsets between segments). In an
    object store two uploads of one range (a new leader copying again what the old one had)
    are normal until Kafka deletes the one it no longer references: a warning there, which
    ``kdump tiered scrub`` settles."""
    prev: LogScan | None = None
    for seg in segments:
        slot = seg.slot
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
                sink.add(_gap(prev, prev.last_offset, scan, first, gaps))
        # remote: a re-upload of older offsets leaves the furthest segment the one to follow
        behind = remote and prev is not None and prev.last_offset is not None
        if not behind or scan.last_offset > prev.last_offset:  # type: ignore[union-attr,operator]
            prev = scan


def _check_snapshots(log: UnifiedLog, sink: FindingSink) -> None:
    """Each producer snapshot as the broker reads it, and those above the log end offset
    (left by a cut log): ProducerStateManager.truncateAndReload deletes them at startup."""
    end = log.log_end_offset_on_disk  # past a cut: the startup line says what recovery deletes
    for file in log.snapshot_files:
        from kdump.checks.txn import check_snapshot_bytes  # a partition with snapshots only

        check_snapshot_bytes(log.snapshot_bytes(file), file.path, sink)
        if file.offset > end:
            sink.add(
                Finding(
                    "SNAPSHOT_BEYOND_LOG_END",
                    Severity.WARNING,
                    file.path,
                    f"producer snapshot at offset {file.offset}, beyond the log end offset {end}; "
                    f"{BROKER_FIXES} (it deletes the snapshot)",
                    offset=file.offset,
                    fix=fixes.recover(log.location),
                )
            )


def _check_leftovers(log: UnifiedLog, sink: FindingSink) -> None:
    """The files an interrupted delete, compaction or split left, and what the broker's
    LogLoader does with each at startup (kdump recover does the same)."""
    settlement = log.settlement
    fix = fixes.recover(log.location) if log.storage.local_path is not None else None
    files = log.storage.files()
    for name in log.leftover_files:
        why = settlement.why(name) or "the broker leaves it alone"
        if _stopped_cleaning(name, files):
            # Cleaner.cleanSegments deletes its output when a cleaning is aborted, but not when
            # the broker stops: checkDone throws ThreadShutdownException, which it lets through
            ours: str | None = f"the broker's own, a cleaning it stopped before the swap: {why}"
        elif name.endswith(DELETED_SUFFIX):
            # a segment (or snapshot) the broker took out of the log, renamed, and deletes
            # file.delete.delay.ms later (60 s), or at its next start: a broker stopped within
            # that minute of a retention pass or a cleaning leaves them (issue 44.10)
            ours = f"the broker's own, not part of the log: {why}"
        else:
            ours = None
        sink.add(
            Finding(
                "PARTITION_LEFTOVER_FILE",
                Severity.WARNING if ours is None else Severity.INFO,
                log.storage.location_of(name),
                ours or f"left by a compaction or swap that did not finish; {why}",
                fix=fix if ours is None else None,
            )
        )
    # segment files a completed swap replaces: not leftovers themselves, deleted all the same
    for name, why in settlement.deleted:
        if name not in log.leftover_files:
            sink.add(
                Finding(
                    "PARTITION_LEFTOVER_FILE",
                    Severity.WARNING,
                    log.storage.location_of(name),
                    why,
                    fix=fix,
                )
            )


def _stopped_cleaning(name: str, files: Mapping[str, int]) -> bool:
    """``name`` is a cleaner's output (``.cleaned``) beside the segment it was cleaned from,
    still in place: a cleaning the broker stopped (a clean stop leaves it). One without its
    segment is not what the broker leaves."""
    if not name.endswith(CLEANED_SUFFIX):
        return False
    offset = offset_in_name(name)
    return offset is not None and segment_file_name(offset, LOG_SUFFIX) in files


def _check_oversize(log: UnifiedLog, options: VerifyOptions, sink: FindingSink) -> None:
    """Segments and index files larger than their topic's segment.bytes and
    segment.index.bytes: each partition's own (--segment-bytes and --max-index-size for every
    partition, else its topic's from the layers it was opened with: --config, the describe
    output, server.properties, its node's KRaft image, an internal topic's broker config,
    Kafka's default), not one number for all."""
    for f in _oversize(log, log.settings, options):
        sink.add(f)


def _oversize(log: UnifiedLog, settings: Settings, options: VerifyOptions) -> list[Finding]:
    files = log.storage.files()
    limits = (
        (LOG_SUFFIX, "LOG_SEGMENT_OVERSIZE", settings.segment_bytes_name, options.segment_bytes),
        (INDEX_SUFFIX, "INDEX_OVERSIZE", "segment.index.bytes", options.max_index_size),
        (TIME_INDEX_SUFFIX, "TIMEINDEX_OVERSIZE", "segment.index.bytes", options.max_index_size),
    )
    out = []
    for segment in log.named_segments:
        for suffix, code, name, given in limits:
            size = files.get(segment.file_name(suffix))
            setting = settings[name]
            limit = given if given is not None else setting.value
            if size is None or not isinstance(limit, int) or size <= _room(suffix, limit):
                continue
            if given is not None:
                where = f"--{'segment-bytes' if suffix == LOG_SUFFIX else 'max-index-size'}"
            elif setting.source is Source.DEFAULT:
                where = "Kafka's default"
            else:
                where = setting.origin or setting.source.value
            out.append(
                Finding(
                    code,
                    Severity.WARNING,
                    segment.path(suffix),
                    f"{size} bytes, more than {name} {limit} ({where})",
                )
            )
    return out


def _room(suffix: str, limit: int) -> int:
    """The most bytes the broker writes to a file of ``suffix`` under ``limit``: a closed
    segment's time index holds one entry past its limit (the roll appends the segment's largest
    timestamp with ``skipFullCheck``, TimeIndex.maybeAppend), so segment.index.bytes 4 (its
    least) leaves 12-byte time indexes behind every roll."""
    if suffix == TIME_INDEX_SUFFIX:
        entry = TIME_INDEX_ENTRY.size
        return (limit // entry + 1) * entry
    return limit


def _check_load(log: UnifiedLog, sink: FindingSink) -> None:
    """The broker's next load of the partition fails (kdump.log_loader.load)."""
    failure = log.broker_load.failure
    if failure is None or not log.segments:
        return
    active = log.segments[-1]
    sink.add(
        Finding(
            "PARTITION_LOAD_FAILS",
            Severity.ERROR,
            active.log_path,
            f"after the clean shutdown the broker's load, {failure}: LogManager.loadLogs "
            "rethrows it and the broker stops starting",
            fix=fixes.recover(log.location) if log.storage.local_path is not None else None,
        )
    )


def _check_kdump_files(log: UnifiedLog, sink: FindingSink) -> None:
    """kdump's own files: the temporary files of a run killed mid-way (to remove), and the log
    bytes a recover kept (to salvage, then remove)."""
    directory = log.storage.local_path
    fix = fixes.recover(log.location)
    for name in log.kdump_leftovers:
        pid = leftover_pid(name)
        if pid is not None and pid != os.getpid():
            from kdump.lock import process_alive  # a leftover's: few runs meet one

            if process_alive(pid):
                continue  # a kdump at work
        sink.add(
            Finding(
                "PARTITION_KDUMP_LEFTOVER",
                Severity.WARNING,
                log.storage.location_of(name),
                f"a temporary file of a kdump run (process {pid}) stopped by force before it "
                "could remove it: no file of Kafka's, and of no use; kdump's next repair of "
                "this partition removes it",
                fix=fix if directory is not None else None,
            )
        )
    others = log.kept_files
    for kept in log.kept_logs:
        loss = log.kept_losses[kept.name]
        # the same segment's index files and snapshot kept with it
        segment = segment_file_name(kept.base_offset, ".")
        beside = [n for n in others if n != kept.name and n.startswith(segment)]
        others = [n for n in others if n != kept.name and n not in beside]
        with_it = f"; kept with it, to remove with it: {', '.join(beside)}" if beside else ""
        sink.add(
            Finding(
                "PARTITION_KDUMP_KEPT",
                Severity.INFO,
                log.storage.location_of(kept.name),
                f"{kept_what(kept)}: {loss.describe('holds')} ({_what_to_do(log, loss)}){with_it}",
            )
        )
    if others:
        sink.add(
            Finding(
                "PARTITION_KDUMP_KEPT",
                Severity.INFO,
                log.location,
                f"{len(others)} file(s) a kdump repair replaced or deleted, kept (no records "
                f"to salvage): {', '.join(others)}; Kafka ignores them: remove them once you "
                "no longer need them",
            )
        )


def _what_to_do(log: UnifiedLog, loss: CutLoss) -> str:
    """With a kept log file: salvage what it holds, then remove it; or just remove it."""
    if loss.salvageable.batches:
        salvage = fixes.salvage(log.location)
        return f"{salvage} writes them out; remove the file once they are safe"
    if loss.zeros:
        return "nothing to salvage: remove the file"
    return "nothing kdump salvage can read: remove the file once you no longer need the bytes"


def _check_leader_epochs(log: UnifiedLog, scans: list[LogScan | None], sink: FindingSink) -> None:
    for finding in leader_epoch_findings(log, scans):
        sink.add(finding)


def leader_epoch_findings(log: UnifiedLog, scans: list[LogScan | None]) -> list[Finding]:
    """The leader-epoch-checkpoint against the partition's batches (verify, replicas)."""
    entries = log.leader_epoch_entries
    if entries is None:
        return []
    path = log.storage.location_of(LEADER_EPOCH_CHECKPOINT)
    if isinstance(entries, KdumpError):
        return [Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path, entries.reason)]
    from kdump.checks.epochs import leader_epoch_problems, observed_epochs  # a checkpoint's

    problems = leader_epoch_problems(entries, observed_epochs(scans), log.log_end_offset_on_disk)
    return [Finding("LEADER_EPOCH_INCONSISTENT", Severity.WARNING, path, p) for p in problems]


def _check_metadata_partition(log: UnifiedLog, sink: FindingSink) -> None:
    """The KRaft metadata partition's own files and its replay (kdump.kraft.checks)."""
    if log.is_metadata_log:
        from kdump.kraft.checks import check_metadata_partition

        for finding in check_metadata_partition(log):
            sink.add(finding)


def _check_partition_metadata(log: UnifiedLog, sink: FindingSink) -> None:
    found = log.partition_metadata
    if isinstance(found, KdumpError):
        sink.add(
            Finding(
                "PARTITION_METADATA_CORRUPT",
                Severity.WARNING,
                log.storage.location_of(PARTITION_METADATA),
                f"{found.reason}; the broker refuses to load a partition whose topic id it "
                "cannot read",
            )
        )


__all__ = [
    "PartitionResult",
    "PartitionSummary",
    "Rename",
    "finish_partition",
    "leader_epoch_findings",
    "rename_rule",
    "segments_to_check",
    "verify_partition",
]


def _known(value: int | None, key: str) -> int:
    """A fact verify's summary counts on; None only where a run was cut short, which asks
    none of them."""
    if value is None:
        raise TypeError(f"the partition's {key} is not known: the run was cut short")
    return value
