"""One pass over the partitions for ``kdump report``: each partition is verified, explained
and its transactions analysed in turn (kdump.checks, kdump.explain, kdump.txn: the answers of
``kdump verify``, ``kdump explain`` and ``kdump txn``, not a second implementation), and what a
page needs is kept in the small typed model below; nothing per batch is kept, so memory grows
with partitions and segments only.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.checks.compacted import CleanedSectionCheck, cleaned_section
from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import PartitionResult, PartitionSummary, finish_partition
from kdump.checks.segment import segment_results, walk_in_order
from kdump.checks.verify import log_dir_findings
from kdump.config import ConfigLayers, Source, option_default, resolve_settings
from kdump.discovery import discover, natural_key
from kdump.errors import InputError, KdumpError
from kdump.explain import ExplainOptions, PartitionExplanation, explain_partition
from kdump.explain.compaction import CompactionExplanation
from kdump.explain.retention import Blocker
from kdump.format.index import OffsetIndex
from kdump.parallel import stream_ordered
from kdump.progress import NO_PROGRESS, Progress
from kdump.run import LogDirIdentity, identify
from kdump.segment import LogSegment
from kdump.txn.analysis import PartitionTransactions, TxnOptions, analyze_partition
from kdump.txn.coordinator import CoordinatorView, is_transaction_state, read_coordinator_view
from kdump.unified_log import OpenOptions, UnifiedLog

if TYPE_CHECKING:
    from kdump.unified_log import PartitionFacts


@dataclass(frozen=True)
class ReportOptions:
    now: int
    """--now: retention and transaction ages are judged at this time (epoch ms)."""
    layers: ConfigLayers = field(default_factory=ConfigLayers)
    verify: VerifyOptions = field(default_factory=VerifyOptions)


@dataclass(frozen=True)
class IndexDensity:
    """Bytes of log between consecutive ``.index`` entries of one segment (Kafka writes an
    entry once index.interval.bytes have been appended since the last one)."""

    entries: int
    min_bytes: int
    mean_bytes: float
    max_bytes: int


@dataclass(frozen=True)
class SegmentView:
    base_offset: int
    next_offset: int
    size: int
    batches: int
    first_timestamp: int
    """The first batch's max timestamp (the roll anchor); -1: none."""
    largest_timestamp: int
    """What retention compares with --now (LogSegment.largestTimestamp as loaded)."""
    active: bool
    roll_causes: tuple[str, ...]
    deletable: str | None
    """The retention pass that deletes it at --now, or None."""
    density: IndexDensity | None


@dataclass(frozen=True)
class OpenTxnView:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    age_ms: int
    hanging: bool


@dataclass
class PartitionView:
    path: str
    topic: str | None
    partition: int | None
    summary: PartitionSummary
    findings: list[Finding]
    segments: list[SegmentView] = field(default_factory=list)
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    index_interval_bytes: int = option_default("index.interval.bytes")
    """index.interval.bytes of its topic, the index density is drawn against."""
    retention_ms: int | None = None
    retention_blocker: Blocker | None = None
    """The first segment retention keeps (which keeps every later one), and why."""
    dirty: tuple[int, int] | None = None
    """The cleaner's dirty section [first dirty offset, first uncleanable offset)."""
    compaction_note: str | None = None
    compaction_blocked: str | None = None
    """Why the cleaner cannot clean this log at all (None: it can)."""
    tiny_segments: str | None = None
    """kdump explain's words when the log rolls on nearly every append."""
    open_transactions: list[OpenTxnView] = field(default_factory=list)
    blocked_records: int = 0
    blocked_bytes: int = 0
    problems: list[str] = field(default_factory=list)
    """What could not be explained or analysed (the findings say why)."""
    facts: PartitionFacts = field(kw_only=True)
    """The opened partition's facts (the ``partition`` object of every JSON output)."""

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def retention_note(self) -> str | None:
        """What holds retention back."""
        return None if self.retention_blocker is None else self.retention_blocker.reason

    @property
    def worst(self) -> int:
        """Severity rank of the worst finding (-1: none), for "errors first"."""
        return max((f.severity.rank for f in self.findings), default=-1)

    def counts(self) -> dict[str, int]:
        found = Counter(f.severity.value for f in self.findings)
        return {s.value: found[s.value] for s in Severity}


@dataclass
class LogDirView:
    path: str
    identity: LogDirIdentity
    partitions: list[PartitionView] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """The log dir's own (checkpoint files)."""

    def counts(self) -> dict[str, int]:
        found = Counter(f.severity.value for p in self.partitions for f in p.findings)
        found.update(f.severity.value for f in self.findings)
        return {s.value: found[s.value] for s in Severity}

    def codes(self) -> list[tuple[str, str, int]]:
        """(code, severity, count), the worst and most frequent first."""
        found = Counter(
            (f.code, f.severity)
            for f in [*self.findings, *(f for p in self.partitions for f in p.findings)]
        )
        return [
            (code, severity.value, n)
            for (code, severity), n in sorted(
                found.items(), key=lambda item: (-item[0][1].rank, -item[1], item[0][0])
            )
        ]


@dataclass
class ReportModel:
    now: int
    log_dirs: list[LogDirView]
    unreadable: list[InputError] = field(default_factory=list)
    """Paths that could not be read or hold nothing of Kafka's (the others are reported)."""

    @property
    def partitions(self) -> list[PartitionView]:
        return [p for d in self.log_dirs for p in d.partitions]


def collect(
    paths: list[str], options: ReportOptions, progress: Progress = NO_PROGRESS, jobs: int = 1
) -> ReportModel:
    """Everything under ``paths``, log dir by log dir; partitions with errors first; worked
    out in ``jobs`` processes (the same model for any number)."""
    resolve_settings(options.layers, None)  # a bad --config fails before any partition is read
    opened = OpenOptions(
        max_batch_bytes=options.verify.max_batch_bytes, now_ms=options.now, layers=options.layers
    )
    found = discover(paths, options=opened, urls=False)
    every = found.partitions
    groups: dict[str, list[UnifiedLog]] = {ld.location: [] for ld in found.log_dirs}
    log_dirs = {ld.location: ld for ld in found.log_dirs}
    for log in every:
        where = log.log_dir.location if log.log_dir is not None else log.location
        groups.setdefault(where, []).append(log)
    view = read_coordinator_view([log for log in every if is_transaction_state(log)])
    progress.total(sum(log.size for log in every))
    # partitions in ``jobs`` processes, the biggest first: each is walked once there, and only
    # its small view comes back (the walk of one partition is Python's work: threads would wait)
    done = stream_ordered(
        partial(_collected, options=options, view=view), every, jobs, weight=_size, lookahead=16
    )
    views: dict[int, tuple[PartitionView, PartitionResult]] = {}
    for log, item in zip(every, done, strict=True):
        views[id(log)] = item
        progress.advance(log.size, log.location)
    out: list[LogDirView] = []
    for directory, logs in groups.items():
        found_dir = log_dirs.get(directory)
        log_dir = LogDirView(directory, identify(directory))
        log_dir.partitions = [views[id(log)][0] for log in logs]
        if found_dir is not None:
            results = [views[id(log)][1] for log in logs]
            log_dir.findings = list(log_dir_findings(found_dir, results, found.partitions))
        log_dir.partitions.sort(key=lambda p: (-p.worst, -len(p.findings), natural_key(p.name)))
        out.append(log_dir)
    return ReportModel(options.now, out, list(found.errors))


def _size(log: UnifiedLog) -> int:
    return log.size


def _collected(
    log: UnifiedLog, options: ReportOptions, view: CoordinatorView
) -> Iterator[tuple[PartitionView, PartitionResult]]:
    try:
        yield _partition(log, options, view)
    finally:
        log.close()


def _partition(
    log: UnifiedLog, options: ReportOptions, view: CoordinatorView
) -> tuple[PartitionView, PartitionResult]:
    settings = log.settings
    # The topic's index.interval.bytes where one was given (--config, describe output, broker):
    # the index checks then name an index denser than it. Kafka's default alone says nothing
    # of the topic, so it checks nothing (as verify without --index-interval-bytes).
    interval = settings["index.interval.bytes"]
    given = None if interval.source is Source.DEFAULT else settings.index_interval_bytes
    # one walk of each segment: verify's checks, the facts, the producer state replay and, on
    # a compacted log, the checks of its cleaned section
    cleaned = cleaned_section(log, options.verify.compaction_key_memory)
    check = None if cleaned is None else CleanedSectionCheck(cleaned)
    walk_in_order(log, options.verify._replace(index_interval_bytes=given), check)
    if check is not None:
        check.deliver(segment_results(log, options.verify))
    result = finish_partition(log, options.verify)
    p = PartitionView(
        path=log.location,
        topic=log.topic,
        partition=log.partition,
        summary=result.summary,
        findings=list(result.findings),
        index_interval_bytes=settings.index_interval_bytes,
        facts=log.facts(),
    )
    if not log.segments:
        return p, result
    p.log_start_offset, p.log_end_offset = log.log_start_offset, log.log_end_offset
    p.high_watermark = log.high_watermark.value
    try:
        explained = explain_partition(log, settings, ExplainOptions(now=options.now))
    except (KdumpError, OSError) as e:
        p.problems.append(f"explain: {e}")
    else:
        _explained(p, explained, log.segments)
    if not is_transaction_state(log):
        try:
            txn = analyze_partition(log, TxnOptions(now=options.now), view)
        except (KdumpError, OSError) as e:
            p.problems.append(f"txn: {e}")
        else:
            if txn is not None:
                _transactions(p, txn)
    return p, result


def _explained(p: PartitionView, e: PartitionExplanation, segments: list[LogSegment]) -> None:
    if e.settings.delete:
        p.retention_ms = e.settings.retention_ms
    p.retention_blocker = e.retention.blocked_by
    if e.compaction is not None:
        c = e.compaction
        p.dirty = (c.first_dirty_offset, c.first_uncleanable_offset)
        p.compaction_note = c.reason
        p.compaction_blocked = compaction_blocked(c, e)
    if e.tiny_segments is not None:
        p.tiny_segments = e.tiny_segments.explanation
    for s, segment in zip(e.segments, segments, strict=True):
        f = s.facts
        p.segments.append(
            SegmentView(
                base_offset=f.base_offset,
                next_offset=f.next_offset,
                size=f.size,
                batches=f.batches,
                first_timestamp=f.first_timestamp,
                largest_timestamp=f.largest_timestamp,
                active=f.active,
                roll_causes=s.roll.causes,
                deletable=s.retention.deletable,
                density=index_density(segment.offset_index),
            )
        )


def compaction_blocked(c: CompactionExplanation, e: PartitionExplanation) -> str | None:
    """Why the cleaner cannot clean this log at all (None: it can): a cleaning fails on
    damaged bytes (kdump explain's note: KAFKA-19895), or no cleaner runs."""
    damaged = e.facts.get("damaged_from")
    if c.preview.failure is not None or (
        damaged is not None and damaged["segment"] < e.segments[-1].facts.base_offset
    ):
        return next(n for n in c.notes if "KAFKA-19895" in n)
    return None if e.settings.cleaner_runs else c.reason


def _transactions(p: PartitionView, t: PartitionTransactions) -> None:
    p.last_stable_offset = t.last_stable_offset
    p.blocked_records, p.blocked_bytes = t.blocked_records, t.blocked_bytes
    p.open_transactions = [
        OpenTxnView(
            o.producer_id, o.producer_epoch, o.first_offset, o.last_offset, o.age_ms, o.hanging
        )
        for o in t.open_transactions
    ]
    known = {(f.code, f.path, f.offset) for f in p.findings}
    p.findings += [f for f in t.findings if (f.code, f.path, f.offset) not in known]


def index_density(index: OffsetIndex | None) -> IndexDensity | None:
    """Min, mean and max bytes between the entries of an offset index (None: no index, or
    fewer than two entries)."""
    if index is None:
        return None
    n = index.used_entries
    if n < 2:
        return None
    positions = index.positions(n)
    gaps = [b - a for a, b in itertools.pairwise(positions)]
    return IndexDensity(n, min(gaps), (positions[-1] - positions[0]) / (n - 1), max(gaps))
