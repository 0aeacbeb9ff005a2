"""Why each closed segment rolled: LogSegment.shouldRoll checked against the segment and the
first batch of the next one (the append that found the segment full went there).

``shouldRoll(RollParams)`` rolls when any of these holds (Kafka 4.x):

- size: ``size > maxSegmentBytes - messagesSize`` (the append would not fit in segment.bytes);
- time: ``size > 0 and maxTimestampInMessages - rollingBasedTimestamp > maxSegmentMs -
  rollJitterMs`` (rollingBasedTimestamp: the first batch's max timestamp; maxSegmentMs:
  LogConfig.maxSegmentMs; rollJitterMs drawn per segment from [0, min(segment.jitter.ms,
  segment.ms)));
- offset_index_full: ``entries >= maxEntries`` (segment.index.bytes / 8);
- time_index_full: ``entries >= maxEntries - 1`` (segment.index.bytes / 12: one slot is kept for
  the closing entry);
- offset_overflow: ``maxOffsetInMessages - baseOffset > Integer.MAX_VALUE``.

Offline the append is known only by its first batch: a follower appends several batches at once,
so "size" and "time" are checked with that batch, a sufficient witness, not a necessary one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdump.config import Settings
from kdump.explain.segments import SegmentFacts, time_index_at_roll
from kdump.format.layout import INT32_MAX
from kdump.units import at, duration

ROLL_CAUSES = ("size", "time", "offset_index_full", "time_index_full", "offset_overflow")
UNKNOWN = "unknown"
OFFSET_INDEX_ENTRY = 8
TIME_INDEX_ENTRY = 12


@dataclass(frozen=True)
class RollCheck:
    """One condition of shouldRoll, whether it held, and the numbers."""

    cause: str
    holds: bool
    evidence: str


@dataclass(frozen=True)
class JitterWindow:
    """The roll jitter (rollJitterMs) the segment can have drawn, given how it rolled."""

    min_ms: int
    max_ms: int


@dataclass(frozen=True)
class RollExplanation:
    causes: tuple[str, ...]
    """The ROLL_CAUSES that hold, or ("unknown",); empty for the active segment."""
    checks: tuple[RollCheck, ...]
    roll_jitter_ms: JitterWindow | None
    notes: tuple[str, ...]
    """For ``unknown``: what the files say instead; for the active segment: when it rolls."""


def offset_index_max_entries(segment_index_bytes: int) -> int:
    """AbstractIndex.maxEntries of a new offset index: the file rounds down to whole entries."""
    return segment_index_bytes // OFFSET_INDEX_ENTRY


def time_index_max_entries(segment_index_bytes: int) -> int:
    return segment_index_bytes // TIME_INDEX_ENTRY


def explain_roll(
    segment: SegmentFacts, following: SegmentFacts, settings: Settings
) -> RollExplanation:
    """Why ``segment`` rolled, with ``following`` the segment that came after it."""
    checks = [
        _size(segment, following, settings),
        _time(segment, following, settings),
        _offset_index(segment, settings),
        _time_index(segment, settings),
        _overflow(segment, following),
    ]
    causes = tuple(c.cause for c in checks if c.holds)
    jitter = _jitter_window(segment, following, settings, "time" in causes)
    notes: list[str] = []
    if not causes:
        causes = (UNKNOWN,)
        notes = _unknown_notes(segment, following, settings)
    return RollExplanation(causes, tuple(checks), jitter, tuple(notes))


def _size(segment: SegmentFacts, following: SegmentFacts, settings: Settings) -> RollCheck:
    limit = settings.segment_bytes
    first = following.first_batch
    if first is None:
        return RollCheck("size", False, "the next segment is empty: no append to measure")
    total = segment.size + first.size
    holds = segment.size > limit - first.size
    sign = ">" if holds else "≤"
    return RollCheck(
        "size",
        holds,
        f"size {segment.size} + next batch {first.size} = {total} bytes {sign} "
        f"{settings.segment_bytes_name} {limit}",
    )


def _time(segment: SegmentFacts, following: SegmentFacts, settings: Settings) -> RollCheck:
    first = following.first_batch
    anchor = segment.first_timestamp
    limit = settings.max_segment_ms
    jitter = settings.max_roll_jitter_ms
    if first is None:
        return RollCheck("time", False, "the next segment is empty: no append to measure")
    if segment.size == 0:
        return RollCheck("time", False, "an empty segment never rolls by time")
    if anchor < 0:
        return RollCheck(
            "time",
            False,
            "the first batch has no timestamp: the broker timed the segment by its wall clock "
            "since it created the segment object, which no file records",
        )
    if first.max_timestamp < 0:
        return RollCheck("time", False, "the next batch has no timestamp")
    waited = first.max_timestamp - anchor
    name = _segment_ms_name(settings)
    lowest = limit - max(jitter - 1, 0)
    holds = waited > lowest
    text = (
        f"next batch max timestamp {at(first.max_timestamp)} − first batch max timestamp "
        f"{at(anchor)} = {duration(waited)} "
    )
    if waited > limit:
        text += f"> {name} {limit}"
    elif holds:
        text += (
            f"> {name} {limit} − a jitter of at least {limit - waited + 1} ms "
            f"(segment.jitter.ms {settings.segment_jitter_ms} allows up to {jitter - 1})"
        )
    else:
        text += f"≤ {name} {limit}" + (f" − the largest jitter {jitter - 1}" if jitter > 1 else "")
    return RollCheck("time", holds, text)


def _segment_ms_name(settings: Settings) -> str:
    if settings.max_segment_ms != settings.segment_ms:
        return "max.compaction.lag.ms"  # LogConfig.maxSegmentMs of a compacted topic
    return "segment.ms"


def _offset_index(segment: SegmentFacts, settings: Settings) -> RollCheck:
    entries = segment.offset_index_entries
    most = offset_index_max_entries(settings.segment_index_bytes)
    if entries is None:
        return RollCheck("offset_index_full", False, "no .index file to count")
    holds = entries >= most
    return RollCheck(
        "offset_index_full",
        holds,
        f"{entries} offset index entries {'≥' if holds else '<'} {most} "
        f"(segment.index.bytes {settings.segment_index_bytes} / 8)",
    )


def _time_index(segment: SegmentFacts, settings: Settings) -> RollCheck:
    entries = time_index_at_roll(segment)
    most = time_index_max_entries(settings.segment_index_bytes)
    if entries is None:
        return RollCheck("time_index_full", False, "no .timeindex file to count")
    holds = entries >= most - 1
    closing = segment.time_index_entries != entries
    return RollCheck(
        "time_index_full",
        holds,
        f"{entries} time index entries at the roll"
        + (" (plus the closing entry the roll appended)" if closing else "")
        + f" {'≥' if holds else '<'} {most} − 1 "
        f"(segment.index.bytes {settings.segment_index_bytes} / 12, one slot kept for the "
        "closing entry)",
    )


def _overflow(segment: SegmentFacts, following: SegmentFacts) -> RollCheck:
    first = following.first_batch
    if first is None:
        return RollCheck("offset_overflow", False, "the next segment is empty")
    relative = first.last_offset - segment.base_offset
    holds = relative > INT32_MAX
    return RollCheck(
        "offset_overflow",
        holds,
        f"next batch last offset {first.last_offset} − base offset {segment.base_offset} = "
        f"{relative} {'>' if holds else '≤'} Integer.MAX_VALUE {INT32_MAX}",
    )


def _jitter_window(
    segment: SegmentFacts, following: SegmentFacts | None, settings: Settings, time_roll: bool
) -> JitterWindow | None:
    """The jitter values consistent with the files: a time roll needs ``waited > maxSegmentMs
    - j``; no earlier batch of the segment rolled it, so ``j ≤ maxSegmentMs - waited`` for each
    (assuming one batch per append, as a leader appends)."""
    jitter = settings.max_roll_jitter_ms
    anchor = segment.first_timestamp
    if jitter <= 0 or anchor < 0:
        return None
    limit = settings.max_segment_ms
    low, high = 0, jitter - 1
    first = None if following is None else following.first_batch
    if time_roll and first is not None:
        low = max(low, limit - (first.max_timestamp - anchor) + 1)
    if segment.max_timestamp_after_first >= 0:
        high = min(high, limit - (segment.max_timestamp_after_first - anchor))
    if low > high:
        return None
    return JitterWindow(low, high)


def _unknown_notes(segment: SegmentFacts, following: SegmentFacts, settings: Settings) -> list[str]:
    notes: list[str] = []
    if following.first_batch is None:
        notes.append(
            "the next segment is empty: it was rolled without an append (retention deleting "
            "every segment rolls first; a truncation or an admin roll also does)"
        )
    if segment.delete_horizon_batches or segment.offset_gaps:
        notes.append(
            f"the cleaner rewrote this segment ({segment.delete_horizon_batches} batches carry "
            f"a delete horizon, {segment.offset_gaps} offset gaps inside): a cleaned segment "
            "keeps its first source segment's base offset and merges later ones up to "
            "segment.bytes, so its size and timestamps no longer show why it rolled"
        )
    if segment.last_offset is not None and following.base_offset > segment.last_offset + 1:
        notes.append(
            f"offsets {segment.last_offset + 1}..{following.base_offset - 1} are in no segment "
            "(removed by compaction, or the roll came from a truncation)"
        )
    if segment.size > settings.segment_bytes:
        notes.append(
            f"the segment holds {segment.size} bytes, more than {settings.segment_bytes_name} "
            f"{settings.segment_bytes}: it was written under a larger segment.bytes (or "
            "by a follower, KAFKA-17375)"
        )
    elif segment.size + following.size > settings.segment_bytes:
        notes.append(
            f"an append of several batches (a follower's fetch, up to the next segment's "
            f"{following.size} bytes) would explain a size roll"
        )
    notes.append(
        "otherwise: settings changed since (segment.bytes, segment.ms, segment.index.bytes), "
        "an admin or tiered-storage roll, or the deletion of every segment"
    )
    return notes


def active_roll(segment: SegmentFacts, settings: Settings) -> RollExplanation:
    """When the active segment rolls: the size it has left, the timestamp past which a batch
    rolls it, and how full its indexes are."""
    notes = [
        f"{segment.size} of {settings.segment_bytes_name} {settings.segment_bytes} used: an "
        "append that does not "
        f"fit in the {max(settings.segment_bytes - segment.size, 0)} bytes left rolls it"
    ]
    anchor = segment.first_timestamp
    jitter = _jitter_window(segment, None, settings, False)
    limit = settings.max_segment_ms
    if anchor >= 0:
        latest = anchor + limit
        if jitter is not None:
            notes.append(
                f"a batch with max timestamp after {at(anchor + limit - jitter.max_ms)} may "
                f"roll it (this segment's jitter is {jitter.min_ms}..{jitter.max_ms} ms); "
                f"after {at(latest)} one does"
            )
        else:
            notes.append(f"a batch with max timestamp after {at(latest)} rolls it")
    elif segment.batches:
        notes.append(
            "its first batch has no timestamp: it rolls by wall clock, "
            f"{_segment_ms_name(settings)} {limit} ms after the broker created the segment object"
        )
    return RollExplanation((), (), jitter, tuple(notes))
