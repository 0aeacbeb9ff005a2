"""Finding a message the way the broker does, with every step kept for display.

By offset (LocalLog.read): the segment with the greatest base offset ≤ the target, the largest
``.index`` entry ≤ the target (none: position 0), then batches from that position to the first
whose last offset ≥ the target (FileRecords.searchForOffsetFromPosition); a segment holding no
such batch passes the read on to the next one. By timestamp (UnifiedLog.fetchOffsetByTimestamp,
the ListOffsets answer): the first segment whose largest timestamp ≥ T, the largest ``.timeindex``
entry ≤ T (none: the base offset), the ``.index`` entry for max(that offset, log start offset),
then batch by batch to the first record with timestamp ≥ T and offset ≥ the log start offset
(FileRecords.searchForTimestamp).

Kafka trusts its index files; kdump checks them first. A missing, misaligned or non-monotonic
index is not used (the log is scanned from position 0 instead), a preallocated one is searched
only over the entries before its zero tail, and an entry whose position does not start a valid
batch at or below the target sends the scan back to position 0. Each such fallback leaves a
warning in the result; the answer stays the one a healthy index gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from kdump.checks.options import VerifyOptions
from kdump.checks.segment import segment_result
from kdump.errors import FormatError
from kdump.format.batch import Batch
from kdump.format.index import IndexSearch, SearchType
from kdump.format.layout import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from kdump.format.records import Record
from kdump.format.timeindex import TimestampOffset
from kdump.segment import LargestTimestamp, LogSegment, Scan
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

if TYPE_CHECKING:
    from kdump.unified_log import PartitionFacts


class TimestampAndOffset(NamedTuple):
    """FileRecords.TimestampAndOffset: what ListOffsets answers (leader epoch None: unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int | None


def translate_offset(segment: LogSegment, offset: int) -> Scan:
    """LogSegment.translateOffset: the first batch of the segment whose last offset ≥ offset,
    searched from the offset index's FLOOR entry."""
    return segment.scan(segment.start_for(offset), lambda b: b.last_offset >= offset)


def first_record_at_or_after(log: FileRecords, batch: Batch, offset: int) -> Record | None:
    return next((r for r in log.records(batch) if r.offset >= offset), None)


@dataclass(frozen=True)
class TimestampSearch:
    """LogSegment.findOffsetByTimestamp: the time index step, then the scan it starts."""

    time_index_search: IndexSearch[TimestampOffset] | None
    time_index_entry: TimestampOffset
    scan: Scan

    @property
    def answer(self) -> TimestampAndOffset | None:
        record, batch = self.scan.record, self.scan.batch
        if record is None or batch is None:
            return None
        epoch = batch.partition_leader_epoch
        return TimestampAndOffset(
            record.timestamp, record.offset, None if epoch == NO_PARTITION_LEADER_EPOCH else epoch
        )


def find_offset_by_timestamp(
    segment: LogSegment, timestamp: int, starting_offset: int
) -> TimestampSearch:
    """LogSegment.findOffsetByTimestamp(timestamp, startingOffset) and
    FileRecords.searchForTimestamp: the first record with timestamp ≥ ``timestamp`` and offset
    ≥ ``starting_offset``, batch by batch from the time index's FLOOR entry."""
    checked = segment.checked_time_index
    search = None
    entry = TimestampOffset(NO_TIMESTAMP, segment.base_offset)
    if checked.usable:
        assert checked.index is not None
        search = checked.index.search(timestamp, SearchType.FLOOR, checked.entries)
        if search.entry is not None:
            entry = TimestampOffset(*search.entry)
    start = segment.start_for(max(entry.offset, starting_offset))

    def match(batch: Batch) -> Record | None:
        if batch.max_timestamp < timestamp:
            return None
        return next(
            (
                r
                for r in segment.log.records(batch)
                if r.timestamp >= timestamp and r.offset >= starting_offset
            ),
            None,
        )

    return TimestampSearch(search, entry, segment.scan(start, match))


# -- lookups -----------------------------------------------------------------------------------


class Outcome(str, Enum):
    FOUND = "found"
    NEXT = "next"
    """The offset is not in the log (compacted, deleted, or cut): a fetch there returns the
    batch holding the next offset that is."""
    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
    AT_LOG_END = "at_log_end"
    NO_OFFSET = "no_offset"
    DAMAGED = "damaged"
    """The read reaches bytes that do not parse before it finds an answer."""


@dataclass(frozen=True)
class SegmentStep:
    """A segment the lookup considered, and why it was taken or passed over."""

    log_path: str
    base_offset: int
    chosen: bool
    reason: str
    largest_timestamp: LargestTimestamp | None = None


@dataclass(frozen=True)
class Lookup:
    """A lookup's answer and the path to it."""

    mode: str
    target: int
    directory: str
    log_start_offset: int
    log_end_offset: int
    """Where the log ends once recovery cut it (the partition's fact)."""
    log_end_offset_on_disk: int
    """Where it ends as the files are: the range a fetch on them answers."""
    outcome: Outcome
    segments: tuple[SegmentStep, ...]
    scans: tuple[Scan, ...] = ()
    time_search: TimestampSearch | None = None
    warnings: tuple[str, ...] = field(default=())
    damage_named: str | None = None
    """Verify's words for the damage the read met (outcome DAMAGED): ``CODE: message``."""
    facts: PartitionFacts = field(kw_only=True, compare=False)
    """The opened partition's facts (the ``partition`` object of every JSON output)."""

    @property
    def damage(self) -> FormatError | None:
        """Bytes the read met that do not parse (outcome DAMAGED)."""
        return None if self.scan is None else self.scan.damage

    @property
    def scan(self) -> Scan | None:
        """The scan that gave the answer (the last one)."""
        return self.scans[-1] if self.scans else None

    @property
    def segment(self) -> str | None:
        return None if self.scan is None else self.scan.segment

    @property
    def batch(self) -> Batch | None:
        return None if self.scan is None else self.scan.batch

    @property
    def record(self) -> Record | None:
        return None if self.scan is None else self.scan.record

    @property
    def bytes_scanned(self) -> int:
        return sum(s.bytes_scanned for s in self.scans)

    @property
    def answer(self) -> TimestampAndOffset | None:
        return None if self.time_search is None else self.time_search.answer


class _Trail:
    """What a lookup collects on its way: segments, scans, warnings (in order, once each)."""

    def __init__(self, log: UnifiedLog, mode: str, target: int) -> None:
        self.log, self.mode, self.target = log, mode, target
        self.steps: list[SegmentStep] = []
        self.scans: list[Scan] = []
        self.damage_named: str | None = None
        self.warnings: dict[str, None] = {}
        self.warn(
            *(f"{e}: read as absent, as the broker reads it" for e in log.unreadable_checkpoints)
        )

    def warn(self, *warnings: str | None) -> None:
        self.warnings.update((w, None) for w in warnings if w)

    def finish(self, outcome: Outcome, time_search: TimestampSearch | None = None) -> Lookup:
        self._past_the_cut(outcome)
        return Lookup(
            self.mode,
            self.target,
            self.log.location,
            self.log.log_start_offset,
            self.log.log_end_offset,
            self.log.log_end_offset_on_disk,
            outcome,
            tuple(self.steps),
            tuple(self.scans),
            time_search,
            tuple(self.warnings),
            self.damage_named,
            facts=self.log.facts(),
        )

    def met_damage(
        self, segment: LogSegment, scan: Scan, time_search: TimestampSearch | None = None
    ) -> Lookup:
        """The read reached bytes that do not parse: verify's walk of that segment names them
        (zeros a power loss left are no bad batch)."""
        self.scans.append(scan)
        if scan.damage is not None:
            said = segment_result(self.log, segment, VerifyOptions()).cut_finding(
                scan.damage.position
            )
            if said is not None:
                self.damage_named = f"{said.code}: {said.message}"
        return self.finish(Outcome.DAMAGED, time_search)

    def _past_the_cut(self, outcome: Outcome) -> None:
        """An answer at or past where recovery cuts the log: the broker gives it from the files
        as they are, and loses it when it recovers that segment."""
        damaged = self.log.damaged_from
        if damaged is None:
            return
        scan = self.scans[-1] if self.scans else None
        answer = None
        if scan is not None and scan.record is not None:
            answer = scan.record.offset
        elif scan is not None and scan.batch is not None:
            answer = scan.batch.base_offset
        elif self.mode == "offset" and outcome is not Outcome.OFFSET_OUT_OF_RANGE:
            answer = self.target
        if answer is None or answer < damaged.offset:
            return
        where = f"({damaged.path}:{damaged.position}, log end offset {damaged.offset} after it)"
        if answer == damaged.offset:
            # the cut's own offset is the log end afterwards: a fetch there is valid and empty
            self.warn(
                f"offset {answer} is where recovery cuts the log {where}: the broker reads the "
                "files as they are until it recovers that segment; then it is the log end "
                "offset, and a fetch there returns no records (kdump verify tells more)"
            )
            return
        self.warn(
            f"offset {answer} lies past where recovery cuts the log {where}: the broker reads "
            "it from the files as they are, and answers OFFSET_OUT_OF_RANGE for it once it "
            "recovers that segment (kdump verify tells more)"
        )


def lookup_offset(log: UnifiedLog, offset: int) -> Lookup:
    """What a fetch at ``offset`` reads: the batch holding it and the record itself.

    Outside [log start, log end] the broker answers OFFSET_OUT_OF_RANGE; at the log end itself
    a fetch returns no records (AT_LOG_END).
    """
    trail = _Trail(log, "offset", offset)
    if offset < log.log_start_offset or offset > log.log_end_offset_on_disk:
        return trail.finish(Outcome.OFFSET_OUT_OF_RANGE)
    first = log.floor_segment(offset)
    for seg in log.segments[first:]:
        reason = (
            f"greatest base offset ≤ {offset}"
            if seg.base_offset <= offset
            else "the read moves on to the next segment"
        )
        trail.warn(*seg.offset_index_warnings())
        scan = translate_offset(seg, offset)
        trail.warn(scan.restarted)
        trail.steps.append(
            SegmentStep(seg.log_path, seg.base_offset, scan.batch is not None, reason)
        )
        if scan.damage is not None:
            return trail.met_damage(seg, scan)
        if scan.batch is None:
            trail.scans.append(scan)
            continue
        record = first_record_at_or_after(seg.log, scan.batch, offset)
        trail.scans.append(scan._replace(record=record))
        exact = record is not None and record.offset == offset
        return trail.finish(Outcome.FOUND if exact else Outcome.NEXT)
    return trail.finish(Outcome.AT_LOG_END)


def lookup_timestamp(log: UnifiedLog, timestamp: int) -> Lookup:
    """ListOffsets by timestamp: the first record with timestamp ≥ ``timestamp`` as the broker
    finds it (UnifiedLog.fetchOffsetByTimestamp), or NO_OFFSET (the broker answers -1)."""
    trail = _Trail(log, "timestamp", timestamp)
    for seg in log.segments:
        largest = seg.largest_timestamp
        chosen = largest.timestamp >= timestamp
        reason = f"largest timestamp {'≥' if chosen else '<'} {timestamp}"
        trail.steps.append(SegmentStep(seg.log_path, seg.base_offset, chosen, reason, largest))
        trail.warn(*seg.time_index_warnings())
        if not chosen:
            continue
        trail.warn(*seg.offset_index_warnings())
        found = find_offset_by_timestamp(seg, timestamp, log.log_start_offset)
        trail.warn(found.scan.restarted)
        if found.scan.damage is not None:
            return trail.met_damage(seg, found.scan, found)
        trail.scans.append(found.scan)
        outcome = Outcome.FOUND if found.answer is not None else Outcome.NO_OFFSET
        return trail.finish(outcome, found)
    return trail.finish(Outcome.NO_OFFSET)
