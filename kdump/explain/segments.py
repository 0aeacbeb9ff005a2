"""What explain needs to know about each segment, from the partition's one walk of it
(kdump.unified_log: the walk verify's checks ride on).

A segment's facts are its size, its first batch (the roll anchor of LogSegment.timeWaitedForRoll
and the witness of the previous segment's roll), its last offset, its largest batch timestamp,
its index entry counts, and the largest timestamp the broker that loads these files would use
for retention (``LogSegment.largest_timestamp_as_loaded``). Memory stays flat: the walk keeps
running values, never a row per batch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kdump.checks.codes import Code
from kdump.checks.findings import Finding
from kdump.checks.options import VerifyOptions
from kdump.checks.registry import codes_of
from kdump.checks.segment import segment_result
from kdump.errors import FormatError, InputError
from kdump.format.layout import NO_TIMESTAMP
from kdump.log_scan import FirstBatch
from kdump.segment import FILE_MTIME, LargestTimestamp, LogSegment
from kdump.unified_log import UnifiedLog
from kdump.units import YEAR_9999_MS, at

TIMEINDEX_CODES = codes_of("timeindex")


@dataclass(frozen=True)
class TimeIndexEffect:
    """A closed segment whose time index gives the broker another largest timestamp than its
    batches hold: retention deletes it ``early``, ``late``, or ``never`` (a timestamp past the
    year 9999), with verify's findings on the time index as evidence."""

    effect: str
    largest_timestamp: int
    """What the broker uses (``SegmentFacts.largest_timestamp``)."""
    log_max_timestamp: int
    """The largest batch max timestamp in the ``.log``."""
    explanation: str
    findings: tuple[str, ...]


@dataclass(frozen=True)
class SegmentFacts:
    path: str
    """The ``.log`` file."""
    base_offset: int
    size: int
    """Bytes of the ``.log`` (LogSegment.size)."""
    active: bool
    batches: int
    first_batch: FirstBatch | None
    last_offset: int | None
    max_timestamp: int
    """The largest batch max timestamp in the log (-1: none)."""
    max_timestamp_after_first: int
    """The same over every batch but the first (-1: none)."""
    offset_gaps: int
    """Places where a batch does not start right after the previous one (compaction)."""
    delete_horizon_batches: int
    """Batches carrying a delete horizon: the cleaner rewrote them."""
    offset_index_entries: int | None
    """Entries written to the ``.index`` (before any zero tail); None: no file."""
    time_index_entries: int | None
    time_index_closing_entry: bool
    """Whether the last time index entry is the one a roll appends (onBecomeInactiveSegment):
    the segment's largest timestamp is above every batch up to the last offset index entry."""
    largest_timestamp: int
    """LogSegment.largestTimestamp as the broker loads these files (retention's anchor)."""
    largest_timestamp_source: str
    last_modified: int
    damage: str | None
    """Where the walk stopped before the end of the file, and why (kdump verify says more)."""
    time_index_effect: TimeIndexEffect | None

    @property
    def first_timestamp(self) -> int:
        """The first batch's max timestamp: LogSegment's rollingBasedTimestamp (-1: none)."""
        return NO_TIMESTAMP if self.first_batch is None else self.first_batch.max_timestamp

    @property
    def next_offset(self) -> int:
        return self.base_offset if self.last_offset is None else self.last_offset + 1


def read_segment_facts(log: UnifiedLog, segment: LogSegment) -> SegmentFacts:
    """The facts explain needs of one segment, from the partition's one walk of it."""
    result = segment_result(log, segment, VerifyOptions())
    scan = result.scan
    if scan is None:
        unread = next((f for f in result.findings if f.code == Code.FILE_UNREADABLE), None)
        raise InputError(segment.log_path, unread.message if unread else "cannot be read")
    index, time_index = segment.offset_index, segment.time_index
    damage = None
    stop = scan.stop
    if stop is not None and stop.is_damage:
        # verify's finding there names it (zeros a power loss left are no torn batch)
        said = result.cut_finding(stop.position)
        if said is not None:
            why = f"{said.code}: {said.message}"
        else:
            reason = stop.reason.value.replace("_", " ")
            why = stop.error.reason if stop.error is not None else reason
            why += f" ({stop.remaining} bytes not read)"
        damage = f"{scan.path}:{stop.position}: {why}"
    try:
        loaded = segment.largest_timestamp_as_loaded
    except FormatError:  # the active segment's tail does not parse: what the walk saw
        loaded = (
            LargestTimestamp(scan.max_timestamp, "log")
            if scan.max_timestamp >= 0
            else LargestTimestamp(segment.last_modified, FILE_MTIME)
        )
    facts = SegmentFacts(
        path=scan.path,
        base_offset=segment.base_offset,
        size=scan.size,
        active=segment.is_active,
        batches=scan.batches,
        first_batch=scan.first_batch,
        last_offset=scan.last_offset,
        max_timestamp=scan.max_timestamp,
        max_timestamp_after_first=scan.max_timestamp_after_first,
        offset_gaps=scan.gaps,
        delete_horizon_batches=scan.delete_horizon_batches,
        offset_index_entries=None if index is None else index.used_entries,
        time_index_entries=None if time_index is None else time_index.used_entries,
        time_index_closing_entry=scan.max_timestamp > scan.max_timestamp_to_index_end,
        largest_timestamp=loaded.timestamp,
        largest_timestamp_source=loaded.source,
        last_modified=segment.last_modified,
        damage=damage,
        time_index_effect=None,
    )
    effect = _time_index_effect(segment, facts, result.findings)
    if effect is None:
        return facts
    return replace(facts, time_index_effect=effect)


def _time_index_effect(
    segment: LogSegment, facts: SegmentFacts, findings: list[Finding]
) -> TimeIndexEffect | None:
    """Whether the broker's largest timestamp for this closed segment is not its batches'."""
    if facts.active or facts.max_timestamp < 0:
        return None  # no timestamps: the file's mtime is the broker's rule, not damage
    broker, true = facts.largest_timestamp, facts.max_timestamp
    if broker == true:
        return None
    effect = "never" if broker > YEAR_9999_MS else "early" if broker < true else "late"
    if facts.largest_timestamp_source != FILE_MTIME:
        how = f"the broker takes the .timeindex's last entry, {at(broker)}, as its largest one"
    elif segment.time_index is None:
        how = f"there is no .timeindex, so the broker uses the .log's mtime {at(broker)}"
    else:
        how = f"the .timeindex gives no timestamp: the broker uses the .log's mtime {at(broker)}"
    verdict = "never deletes it" if effect == "never" else f"deletes it {effect}"
    explanation = (
        f"its batches' largest timestamp is {at(true)}, but {how}: time retention {verdict}"
    )
    # kdump verify's findings on the time index, from the same walk: the evidence
    evidence = tuple(f"{f.code}: {f.message}" for f in findings if f.code in TIMEINDEX_CODES)
    return TimeIndexEffect(effect, broker, true, explanation, evidence)


def time_index_at_roll(facts: SegmentFacts) -> int | None:
    """Entries the time index held when the segment rolled: the roll itself appends a closing
    entry (LogSegment.onBecomeInactiveSegment) when the largest timestamp is new."""
    if facts.time_index_entries is None:
        return None
    closing = 1 if facts.time_index_closing_entry and facts.time_index_entries else 0
    return facts.time_index_entries - closing
