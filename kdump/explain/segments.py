"""What explain needs to know about each segment, read in one walk of its log.

A segment's facts are its size, its first batch (the roll anchor of LogSegment.timeWaitedForRoll
and the witness of the previous segment's roll), its last offset, its largest batch timestamp,
its index entry counts, and the largest timestamp the broker that loads these files would use
for retention (``SegmentFiles.largest_timestamp_as_loaded``). Memory stays flat: the walk keeps
running values, never a row per batch.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace

from kdump.checks.options import VerifyOptions
from kdump.checks.partition import verify_segment
from kdump.errors import FormatError
from kdump.format.layout import DELETE_HORIZON_BIT, NO_TIMESTAMP
from kdump.format.walk import NO_EPOCH_YET, BatchRun, flag_batches
from kdump.segment import FILE_MTIME, LargestTimestamp, SegmentFiles
from kdump.units import YEAR_9999_MS, at

VERIFY_BATCHES = 1_000_000
"""Segments up to this many batches get kdump verify's time index checks as evidence."""


@dataclass(frozen=True)
class FirstBatch:
    """A segment's first batch, as its header says."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int
    magic: int


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


def read_segment_facts(
    segment: SegmentFiles, segment_index_bytes: int, with_index_findings: bool = True
) -> SegmentFacts:
    """One walk over the segment's log (no CRC check: explain reads headers only)."""
    log = segment.log
    index = segment.segment.offset_index()
    time_index = segment.segment.time_index()
    index_entries = None if index is None else index.used_entries
    last_index_position = -1
    if index is not None and index_entries:
        last_index_position = index.entry(index_entries - 1).position
    batches = gaps = horizons = 0
    first: FirstBatch | None = None
    last_offset: int | None = None
    max_ts = max_rest = prefix_max = NO_TIMESTAMP
    has_prev, prev_last, epoch = False, 0, NO_EPOCH_YET
    walk = log.walk(check_crc=False)
    for run in walk:
        if first is None:
            first = FirstBatch(
                run.position[0],
                run.base_offset[0],
                run.last_offset[0],
                run.size[0],
                run.max_timestamp[0],
                run.magic[0],
            )
            rest = run.slice(1, run.n)
        else:
            rest = run
        max_rest = max(max_rest, _greatest(rest))
        max_ts = max(max_ts, _greatest(run))
        if run.position[0] <= last_index_position:
            k = bisect_right(run.position, last_index_position)
            prefix_max = max(prefix_max, _greatest(run, k))
        flags = flag_batches(run, segment.base_offset, has_prev, prev_last, epoch)
        has_prev, prev_last, epoch = flags.has_prev, flags.prev_last, flags.epoch
        gaps += flags.gaps
        horizons += sum(1 for a in run.attributes if a & DELETE_HORIZON_BIT)
        batches += run.n
        last_offset = run.last_offset[-1]
    stop = walk.stop
    damage = None
    if stop is not None and stop.is_damage:
        why = stop.error.reason if stop.error is not None else stop.reason.value.replace("_", " ")
        damage = f"{log.path}:{stop.position}: {why} ({stop.remaining} bytes not read)"
    try:
        loaded = segment.largest_timestamp_as_loaded
    except FormatError:  # the active segment's tail does not parse: what the walk saw
        loaded = (
            LargestTimestamp(max_ts, "log")
            if max_ts >= 0
            else LargestTimestamp(segment.last_modified, FILE_MTIME)
        )
    facts = SegmentFacts(
        path=log.path,
        base_offset=segment.base_offset,
        size=log.size,
        active=segment.is_active,
        batches=batches,
        first_batch=first,
        last_offset=last_offset,
        max_timestamp=max_ts,
        max_timestamp_after_first=max_rest,
        offset_gaps=gaps,
        delete_horizon_batches=horizons,
        offset_index_entries=index_entries,
        time_index_entries=None if time_index is None else time_index.used_entries,
        time_index_closing_entry=max_ts > prefix_max,
        largest_timestamp=loaded.timestamp,
        largest_timestamp_source=loaded.source,
        last_modified=segment.last_modified,
        damage=damage,
        time_index_effect=None,
    )
    effect = _time_index_effect(segment, facts, segment_index_bytes, with_index_findings)
    if effect is None:
        return facts
    return replace(facts, time_index_effect=effect)


def _greatest(run: BatchRun, stop: int | None = None) -> int:
    """The greatest max timestamp of the run's first ``stop`` batches (NO_TIMESTAMP: none)."""
    found = run.timestamp_range(stop)
    return NO_TIMESTAMP if found is None else found[1]


def _time_index_effect(
    segment: SegmentFiles, facts: SegmentFacts, segment_index_bytes: int, with_findings: bool
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
    elif segment.segment.time_index() is None:
        how = f"there is no .timeindex, so the broker uses the .log's mtime {at(broker)}"
    else:
        how = f"the .timeindex gives no timestamp: the broker uses the .log's mtime {at(broker)}"
    verdict = "never deletes it" if effect == "never" else f"deletes it {effect}"
    explanation = (
        f"its batches' largest timestamp is {at(true)}, but {how}: time retention {verdict}"
    )
    findings: tuple[str, ...] = ()
    if with_findings and segment.segment.time_index_path.exists():
        findings = _time_index_findings(segment, facts, segment_index_bytes)
    return TimeIndexEffect(effect, broker, true, explanation, findings)


def _time_index_findings(
    segment: SegmentFiles, facts: SegmentFacts, segment_index_bytes: int
) -> tuple[str, ...]:
    """kdump verify's findings on the time index. Verify keeps 32 bytes per batch, so past
    VERIFY_BATCHES batches only the checks of the index file itself run (its preallocated
    tail, Kafka's sanity check), as lookup makes them."""
    if facts.batches <= VERIFY_BATCHES:
        options = VerifyOptions(max_index_size=segment_index_bytes)
        found = verify_segment(segment.segment, options, is_active=False)
        return tuple(f"{f.code}: {f.message}" for f in found if f.code.startswith("TIMEINDEX_"))
    checked = segment.time_index
    index = checked.index
    failure = None if index is None else index.sanity_check()
    return tuple(w for w in (checked.warning, failure) if w)


def time_index_at_roll(facts: SegmentFacts) -> int | None:
    """Entries the time index held when the segment rolled: the roll itself appends a closing
    entry (LogSegment.onBecomeInactiveSegment) when the largest timestamp is new."""
    if facts.time_index_entries is None:
        return None
    closing = 1 if facts.time_index_closing_entry and facts.time_index_entries else 0
    return facts.time_index_entries - closing
