"""Why the log cleaner does or does not clean a compacted partition, and what it would drop: the
cleaner's own rules (kdump.log_cleaner: LogCleanerManager's selection, a dry run of
Cleaner.doClean), put in words. ``kdump compact`` runs the same cleaning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kdump.config import Settings
from kdump.errors import FormatError, UnreadableInputError
from kdump.explain.segments import SegmentFacts
from kdump.explain.transactions import OpenTransaction
from kdump.format.names import CLEANER_OFFSET_CHECKPOINT
from kdump.log_cleaner import (
    CleanedGroup,
    CleanedSegmentSink,
    Cleaner,
    CleaningResult,
    LogToClean,
    cleanable_offsets,
    log_to_clean,
    max_compaction_delay,
)
from kdump.offset_map import BYTES_PER_ENTRY, ExactOffsetMap, OffsetMap, SkimpyOffsetMap
from kdump.unified_log import UnifiedLog
from kdump.units import duration

LONG_MAX = (1 << 63) - 1

TOP_KEYS = 10


@dataclass(frozen=True)
class KeyCount:
    """``--deep``: one key of the cleaning range, its records, and how many a cleaning drops."""

    key: bytes
    records: int
    droppable: int

    @property
    def shown(self) -> str:
        """The key as text when it is printable UTF-8, else ``0x`` and its hex."""
        try:
            text = self.key.decode("utf-8")
        except UnicodeDecodeError:
            return "0x" + self.key.hex()
        return text if text.isprintable() else "0x" + self.key.hex()


@dataclass(frozen=True)
class CleaningPreview:
    """What one cleaning started now would do (Cleaner.doClean), counted, not written."""

    end_offset: int
    """The map's latest offset + 1: the cleaner-offset-checkpoint after the cleaning."""
    map_slots: int
    map_max_entries: int
    map_memory: int
    distinct_keys: int
    """Keys (hashes, unless --deep) the map holds after the dirty section."""
    map_full_at_offset: int | None
    """The record whose key did not fit: the cleaning stops short there (None: it fitted)."""
    exact: bool
    records_read: int
    droppable_records: int
    droppable_bytes: int
    """Bytes of the batches dropped whole, plus each kept batch's share of its records' bytes
    that are dropped (exact for uncompressed batches, proportional for compressed ones)."""
    superseded: int
    """Records whose key appears later in the dirty section."""
    tombstones: int
    """Tombstones whose delete horizon has passed."""
    aborted: int
    """Records of aborted transactions."""
    no_key: int
    markers: int
    """Transaction markers whose transaction is gone and whose horizon has passed."""
    tombstones_kept: int
    tombstones_to_stamp: int
    """Kept tombstones with no delete horizon yet: this cleaning stamps now +
    delete.retention.ms on their batches."""
    next_delete_horizon: int | None
    """The earliest delete horizon still ahead among kept tombstones and markers."""
    failure: str | None
    """Where the cleaning would throw (a damaged segment): the partition becomes uncleanable."""
    top_keys: tuple[KeyCount, ...] = ()


@dataclass(frozen=True)
class CompactionExplanation:
    checkpoint: int | None
    """This partition's cleaner-offset-checkpoint entry (None: none)."""
    checkpoint_note: str
    first_dirty_offset: int
    first_uncleanable_offset: int
    """LogToClean's: the segment base the cleaning stops at."""
    uncleanable_offset: int
    """cleanableOffsets' bound before LogToClean snaps it to a segment base."""
    uncleanable_by: tuple[str, ...]
    last_stable_offset: int
    open_transactions: tuple[OpenTransaction, ...]
    clean_bytes: int
    dirty_bytes: int
    dirty_ratio: float
    min_cleanable_dirty_ratio: float
    max_compaction_delay_ms: int
    cleanable: bool
    reason: str
    preview: CleaningPreview
    notes: tuple[str, ...] = field(default=())
    cleaning: CleaningResult | None = field(default=None, compare=False, repr=False)
    """The cleaning the preview counts, where the caller keeps it (kdump compact's one
    cleaning, not a second); not in the output."""


def explain_compaction(
    log: UnifiedLog,
    facts: Sequence[SegmentFacts],
    settings: Settings,
    now: int,
    log_start: int,
    log_end: int,
    high_watermark: int,
    last_stable_offset: int,
    open_transactions: tuple[OpenTransaction, ...],
    map_bytes: int,
    deep: bool,
    sinks: Callable[[CleanedGroup], CleanedSegmentSink] | None = None,
    keep_cleaning: bool = False,
) -> CompactionExplanation:
    """The cleaner's view of ``log`` at ``now`` (``facts``: its segments, in order). Its
    preview is one cleaning (Cleaner.doClean), whose cleaned segments go to ``sinks`` where
    given, kept as ``cleaning`` with ``keep_cleaning``."""
    bases = [f.base_offset for f in facts]
    checkpoint = cleaner_checkpoint(log)
    offsets = cleanable_offsets(
        facts, checkpoint, log_start, log_end, last_stable_offset, now, settings
    )
    first_dirty = offsets.first_dirty_offset
    checkpoint_note = _first_dirty_note(checkpoint, log_start, log_end, settings)
    stable = "the last stable offset"
    if not open_transactions and last_stable_offset == high_watermark:
        stable += " (the high watermark: no open transaction)"
    words = {
        "last stable offset": stable,
        "active segment": "the active segment",
        "min.compaction.lag.ms": f"min.compaction.lag.ms {max(settings.min_compaction_lag_ms, 0)}",
    }
    lowest = min(offset for _, offset in offsets.bounds)
    by = tuple(words[name] for name, offset in offsets.bounds if offset == lowest)
    delay = max_compaction_delay(facts, first_dirty, now, settings)
    to_clean = log_to_clean(facts, offsets, delay > 0)
    cleanable, reason = _decide(
        settings, to_clean.total_bytes, to_clean.cleanable_bytes, to_clean.cleanable_ratio, delay
    )
    preview, cleaning = _preview(log, settings, now, to_clean, map_bytes, deep, sinks)
    notes = []
    if preview.failure is not None:
        notes.append(
            f"a cleaning fails reading {preview.failure}: the broker marks the partition "
            "uncleanable, and until a restart neither cleans nor deletes its segments "
            "(KAFKA-19895)"
        )
    damaged = log.damaged_from
    if damaged is not None and damaged.segment < bases[-1]:
        notes.append(
            f"{damaged.path} does not parse from position {damaged.position}: the running "
            "broker's cleaner fails reading it, marks the partition uncleanable and, until a "
            "restart, neither cleans nor deletes its segments (KAFKA-19895); the restart's "
            f"recovery cuts the log there (at offset {damaged.offset}), as the figures above "
            "have it"
        )
    if settings.delete:
        notes.append("cleanup.policy also has delete: retention applies as well")
    return CompactionExplanation(
        checkpoint=checkpoint,
        checkpoint_note=checkpoint_note,
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=to_clean.first_uncleanable_offset,
        uncleanable_offset=offsets.uncleanable_offset,
        uncleanable_by=by,
        last_stable_offset=last_stable_offset,
        open_transactions=open_transactions,
        clean_bytes=to_clean.clean_bytes,
        dirty_bytes=to_clean.cleanable_bytes,
        dirty_ratio=to_clean.cleanable_ratio,
        min_cleanable_dirty_ratio=settings.min_cleanable_dirty_ratio,
        max_compaction_delay_ms=delay,
        cleanable=cleanable,
        reason=reason,
        preview=preview,
        notes=tuple(notes),
        cleaning=cleaning if keep_cleaning else None,
    )


def cleaner_checkpoint(log: UnifiedLog) -> int | None:
    """This partition's ``cleaner-offset-checkpoint`` entry (a file that does not parse is
    bad input: the broker would refuse it too)."""
    try:
        return log.checkpointed(CLEANER_OFFSET_CHECKPOINT)
    except FormatError as e:
        raise UnreadableInputError(e.path, e.position, e.reason) from None


def _first_dirty_note(
    checkpoint: int | None, log_start: int, log_end: int, settings: Settings
) -> str:
    """Why LogCleanerManager.cleanableOffsets takes the first dirty offset it takes."""
    if checkpoint is None:
        return (
            f"no cleaner-offset-checkpoint entry: the first dirty offset is the log start "
            f"offset {log_start}"
        )
    if checkpoint < log_start:
        return (
            f"cleaner-offset-checkpoint says {checkpoint}, below the log start offset "
            f"{log_start}: the broker resets the first dirty offset to {log_start}"
            + ("" if settings.delete else " (and warns)")
        )
    if checkpoint > log_end:
        return (
            f"cleaner-offset-checkpoint says {checkpoint}, beyond the log end offset {log_end}: "
            f"the broker warns and resets the first dirty offset to the log start offset "
            f"{log_start} (the whole log is dirty)"
        )
    return f"cleaner-offset-checkpoint says {checkpoint}"


def _decide(s: Settings, total: int, dirty: int, ratio: float, delay: int) -> tuple[bool, str]:
    """grabFilthiestCompactedLog's filters for this one log."""
    minimum = s.min_cleanable_dirty_ratio
    if not s.log_cleaner_enable:
        return False, "log.cleaner.enable=false: the broker runs no cleaner"
    if s.log_cleaner_threads < 1:
        return False, "log.cleaner.threads=0: the broker runs no cleaner thread"
    if total == 0:
        return False, "no bytes below the first uncleanable offset: nothing to clean"
    if delay > 0 and dirty > 0:
        return True, (
            f"max.compaction.lag.ms {s.max_compaction_lag_ms}: a dirty segment's first batch is "
            f"{duration(delay)} past it, so the cleaner cleans whatever the dirty ratio "
            f"({ratio:.4f})"
        )
    if ratio > minimum:
        return True, f"dirty ratio {ratio:.4f} > min.cleanable.dirty.ratio {minimum}"
    why = f"dirty ratio {ratio:.4f} ≤ min.cleanable.dirty.ratio {minimum}"
    if dirty == 0:
        why = "no dirty bytes: " + why
    if s.max_compaction_lag_ms < LONG_MAX:
        why += ", and no dirty segment's first batch is older than max.compaction.lag.ms"
    return False, why


# -- a cleaning, counted --------------------------------------------------------------------------


def new_offset_map(map_bytes: int, load_factor: float, deep: bool) -> OffsetMap:
    """The cleaner's key map of ``map_bytes``; ``deep``: the same capacity, exact keys."""
    if deep:
        return ExactOffsetMap(map_bytes // BYTES_PER_ENTRY, load_factor)
    return SkimpyOffsetMap(map_bytes, load_factor)


def _preview(
    log: UnifiedLog,
    settings: Settings,
    now: int,
    to_clean: LogToClean,
    map_bytes: int,
    deep: bool,
    sinks: Callable[[CleanedGroup], CleanedSegmentSink] | None,
) -> tuple[CleaningPreview, CleaningResult]:
    keys: dict[bytes, list[int]] = {}

    def tally(key: bytes, kept: bool) -> None:
        counts = keys.setdefault(key, [0, 0])
        counts[0] += 1
        counts[1] += 0 if kept else 1

    offset_map = new_offset_map(map_bytes, settings.dedupe_load_factor, deep)
    try:
        cleaner = Cleaner(offset_map, now, tally if deep else None)
        result = cleaner.do_clean(log, to_clean, settings, sinks)
    finally:
        offset_map.close()
    top: tuple[KeyCount, ...] = ()
    if deep:
        ranked = sorted(keys.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
        top = tuple(KeyCount(bytes(k), n, d) for k, (n, d) in ranked[:TOP_KEYS])
    return preview_of(result, deep, top), result


def preview_of(
    result: CleaningResult, exact: bool, top: tuple[KeyCount, ...] = ()
) -> CleaningPreview:
    """A cleaning's counts as explain shows them."""
    stats = result.stats
    return CleaningPreview(
        end_offset=result.end_offset,
        map_slots=result.map_slots,
        map_max_entries=result.map_max_entries,
        map_memory=result.map_memory,
        distinct_keys=result.distinct_keys,
        map_full_at_offset=result.map_full_at_offset,
        exact=exact,
        records_read=stats.records_before,
        droppable_records=stats.dropped,
        droppable_bytes=stats.bytes_read - stats.bytes_written,
        superseded=stats.superseded,
        tombstones=stats.tombstones,
        aborted=stats.aborted,
        no_key=stats.invalid_messages_read,
        markers=stats.markers,
        tombstones_kept=stats.tombstones_kept,
        tombstones_to_stamp=stats.tombstones_to_stamp,
        next_delete_horizon=stats.next_delete_horizon,
        failure=result.failure,
        top_keys=top,
    )
