"""What retention deletes now, by which rule, when the next segment goes, and what holds the
rest back: UnifiedLog.deleteOldSegments as a broker would run it at ``now``.

Three passes, in Kafka's order, each over the segments the previous ones left (B.2-B.7):

- log start offset: a segment whose next segment starts at or below the log start offset;
- size: oldest first while ``log size - segment size >= retention.bytes``;
- time: ``now - largestTimestamp > retention.ms`` (largestTimestamp as the broker loads it).

Each pass deletes a prefix of the log: it stops at the first segment it keeps
(``deletableSegments``), and never deletes a segment unless the high watermark has reached the
next segment's base offset (the log end offset for the active segment); an empty active segment
is never deleted. ``cleanup.policy=delete`` runs all three passes; a policy without delete runs
the log start offset pass only; a compacted log gets retention from the cleaner thread, so none
at all without a cleaner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kdump.config import Settings
from kdump.explain.segments import SegmentFacts
from kdump.units import YEAR_9999_MS, at, duration

LOG_START_OFFSET = "log_start_offset"
SIZE = "size"
TIME = "time"


@dataclass(frozen=True)
class SegmentRetention:
    base_offset: int
    deletable: str | None
    """The pass that deletes it now (``log_start_offset``, ``size``, ``time``), or None."""
    deletable_at: int | None
    """When the time pass deletes it, given the segments before it (None: it never does, as
    the files stand: no time retention, held by the high watermark, an empty active segment)."""
    reason: str


@dataclass(frozen=True)
class Blocker:
    """The first segment retention keeps, which keeps every segment after it too."""

    base_offset: int
    kind: str
    """``high_watermark``, ``future_timestamp``, ``not_expired``, ``empty_active_segment``,
    ``retention_off``, ``policy``."""
    reason: str


@dataclass(frozen=True)
class RetentionExplanation:
    passes: tuple[str, ...]
    """The passes the broker runs for this policy, in order."""
    segments: tuple[SegmentRetention, ...]
    deletable_segments: int
    deletable_bytes: int
    log_start_offset_after: int
    """The log start offset once the deletable segments are gone."""
    blocked_by: Blocker | None
    next_deletable_at: int | None
    next_deletable_base_offset: int | None
    notes: tuple[str, ...]


def explain_retention(
    facts: Sequence[SegmentFacts],
    settings: Settings,
    now: int,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
) -> RetentionExplanation:
    n = len(facts)
    notes: list[str] = []
    passes = _passes(settings, notes)
    upper = [facts[i + 1].base_offset if i + 1 < n else log_end_offset for i in range(n)]
    deleted: dict[int, str] = {}
    start = time_start = 0
    stops: dict[str, tuple[int, str, str]] = {}  # pass -> (segment it kept, Blocker kind, why)
    for name in passes:
        if name == TIME:
            time_start = start
        predicate, why_not = _predicate(name, facts, start, settings, now, log_start_offset)
        while start < n:
            f = facts[start]
            if high_watermark < upper[start]:
                where = " (the log end offset)" if start == n - 1 else " (the next segment's base)"
                stops[name] = (
                    start,
                    "high_watermark",
                    f"high watermark {high_watermark} < {upper[start]}{where}: retention never "
                    "deletes past the high watermark",
                )
                break
            if not predicate(start):
                stops[name] = (start, *why_not(start))
                break
            if start == n - 1 and f.size == 0:
                stops[name] = (start, "empty_active_segment", "the active segment is empty")
                break
            deleted[start] = name
            start += 1
    stop_reasons = {
        name: f"{name.replace('_', ' ')} pass: {text}"
        for name, (i, _, text) in stops.items()
        if i == start
    }
    times = _deletable_at(facts, settings, passes, time_start, upper, high_watermark)
    segments = []
    for i, f in enumerate(facts):
        rule = deleted.get(i)
        if rule is not None:
            reason = f"deleted by the {rule.replace('_', ' ')} pass"
        elif i == start:
            reason = "; ".join(stop_reasons.values()) or "no retention pass runs"
        else:
            reason = f"kept: the segment at {facts[start].base_offset} before it is kept"
        segments.append(SegmentRetention(f.base_offset, rule, times[i], reason))
    blocked = _blocker(facts, start, stops, stop_reasons, passes, times)
    after = facts[start].base_offset if start < n else log_end_offset
    later = [(t, facts[i].base_offset) for i, t in enumerate(times) if t is not None and t > now]
    next_at, next_base = min(later) if later else (None, None)
    if start == n:
        notes.append(
            "every segment is deletable: the broker first rolls a new, empty active segment at "
            f"the log end offset {log_end_offset}"
        )
    return RetentionExplanation(
        passes=passes,
        segments=tuple(segments),
        deletable_segments=len(deleted),
        deletable_bytes=sum(facts[i].size for i in deleted),
        log_start_offset_after=max(after, log_start_offset),
        blocked_by=blocked,
        next_deletable_at=next_at,
        next_deletable_base_offset=next_base,
        notes=tuple(notes),
    )


def _passes(settings: Settings, notes: list[str]) -> tuple[str, ...]:
    policy = ",".join(settings.cleanup_policy) or "(empty)"
    if settings.compact and not settings.cleaner_runs:
        notes.append(
            f"cleanup.policy={policy}: a compacted log's retention runs in the cleaner thread, "
            "and the broker runs no cleaner (log.cleaner.enable=false or log.cleaner.threads=0)"
        )
        return ()
    if settings.delete:
        return (LOG_START_OFFSET, SIZE, TIME)
    notes.append(f"cleanup.policy={policy}: no time or size retention, only log start offset")
    return (LOG_START_OFFSET,)


def _predicate(
    name: str,
    facts: Sequence[SegmentFacts],
    start: int,
    settings: Settings,
    now: int,
    log_start_offset: int,
) -> tuple[Callable[[int], bool], Callable[[int], tuple[str, str]]]:
    n = len(facts)
    if name == LOG_START_OFFSET:

        def by_start(i: int) -> bool:
            return i + 1 < n and facts[i + 1].base_offset <= log_start_offset

        def start_why(i: int) -> tuple[str, str]:
            if i + 1 == n:
                return "policy", "the log start offset pass never deletes the active segment"
            return "policy", (
                f"log start offset {log_start_offset} < the next segment's base "
                f"{facts[i + 1].base_offset}"
            )

        return by_start, start_why
    if name == SIZE:
        limit = settings.retention_bytes
        log_size = sum(f.size for f in facts[start:])
        diff = [log_size - limit]

        def by_size(i: int) -> bool:
            if limit < 0 or log_size < limit:
                return False
            if diff[0] - facts[i].size >= 0:
                diff[0] -= facts[i].size
                return True
            return False

        def size_why(i: int) -> tuple[str, str]:
            if limit < 0:
                return "retention_off", "retention.bytes=-1: no size retention"
            if log_size < limit:
                return "not_expired", f"log size {log_size} < retention.bytes {limit}"
            return "not_expired", (
                f"retention.bytes {limit}: deleting its {facts[i].size} bytes would leave "
                f"{limit + diff[0] - facts[i].size}, below retention.bytes"
            )

        return by_size, size_why
    limit = settings.retention_ms

    def by_time(i: int) -> bool:
        return limit >= 0 and now - facts[i].largest_timestamp > limit

    def time_why(i: int) -> tuple[str, str]:
        if limit < 0:
            return "retention_off", "retention.ms=-1: no time retention"
        f = facts[i]
        largest = f"largest timestamp {at(f.largest_timestamp)} ({f.largest_timestamp_source})"
        if f.largest_timestamp > now:
            return "future_timestamp", (
                f"{largest} is in the future: time retention cannot delete it, nor any segment "
                "after it (KAFKA-20609)"
            )
        age = duration(now - f.largest_timestamp)
        return "not_expired", f"{largest} is {age} old, not more than retention.ms {limit}"

    return by_time, time_why


def _deletable_at(
    facts: Sequence[SegmentFacts],
    settings: Settings,
    passes: tuple[str, ...],
    start: int,
    upper: Sequence[int],
    high_watermark: int,
) -> list[int | None]:
    """Per segment from ``start`` (where the time pass begins), the first moment the time pass
    deletes it: ``largestTimestamp + retention.ms + 1``, and not before every segment ahead of
    it (the prefix rule)."""
    out: list[int | None] = [None] * len(facts)
    if TIME not in passes or settings.retention_ms < 0:
        return out
    earliest = 0
    for i in range(start, len(facts)):
        f = facts[i]
        if high_watermark < upper[i] or (i == len(facts) - 1 and f.size == 0):
            break
        earliest = max(earliest, f.largest_timestamp + settings.retention_ms + 1)
        if earliest > YEAR_9999_MS:
            break
        out[i] = earliest
    return out


def _blocker(
    facts: Sequence[SegmentFacts],
    start: int,
    stops: dict[str, tuple[int, str, str]],
    stop_reasons: dict[str, str],
    passes: tuple[str, ...],
    times: Sequence[int | None],
) -> Blocker | None:
    """The first segment kept, the last pass's reason as its kind, every pass's words."""
    if start >= len(facts):
        return None
    f = facts[start]
    if not passes:
        return Blocker(f.base_offset, "policy", "no retention pass runs for this policy")
    kind = stops[passes[-1]][1]
    reason = "; ".join(stop_reasons.values())
    if kind in ("future_timestamp", "not_expired") and times[start] is not None:
        reason += f"; the time pass deletes it at {at(times[start] or 0)}"
    elif kind == "future_timestamp":
        reason += "; not before the year 9999"
    effect = f.time_index_effect
    if effect is not None:
        reason += f"; {effect.explanation}"
    return Blocker(f.base_offset, kind, reason)
