"""Why the log cleaner does or does not clean a compacted partition, and what it would drop.

Selection (LogCleanerManager): the first dirty offset is the ``cleaner-offset-checkpoint`` entry,
or the log start offset when there is none or it lies outside [log start, log end]
(``cleanableOffsets``); the first uncleanable offset is the lowest of the last stable offset,
the active segment's base offset, and, with ``min.compaction.lag.ms``, the first segment from the
first dirty one whose largest timestamp is newer than ``now - lag``; ``LogToClean`` snaps it down
to a segment base and sums ``.log`` sizes: clean bytes below the first dirty offset, dirty
(cleanable) bytes from the segment holding it up to the first uncleanable offset. The cleaner
takes the log when ``dirty / (clean + dirty) > min.cleanable.dirty.ratio``, or when a dirty
segment's first batch is older than ``max.compaction.lag.ms`` (``maxCompactionDelay``).

A cleaning (Cleaner.doClean) maps every key of the dirty section to its last offset (until the
map fills), then rewrites every segment below the map's end: a record goes when its key appears
later, when it has no key, when its batch belongs to an aborted transaction, or when it is a
tombstone whose batch's delete horizon (stamped by an earlier cleaning: that cleaning's time +
``delete.retention.ms``) has passed (``shouldRetainRecord``); a transaction marker goes once its
transaction has no batch left and its horizon has passed (CleanedTransactionMetadata).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from kdump.config import Settings
from kdump.errors import FormatError, UnreadableInputError
from kdump.offset_map import (
    BYTES_PER_ENTRY,
    ExactOffsetMap,
    OffsetMap,
    SkimpyOffsetMap,
)
from kdump.explain.segments import SegmentFacts
from kdump.explain.transactions import OpenTransaction
from kdump.format.batch import Batch
from kdump.format.layout import RECORD_BATCH_OVERHEAD
from kdump.format.names import CLEANER_OFFSET_CHECKPOINT
from kdump.format.records import ABORT, COMMIT, control_record_key
from kdump.format.txnindex import AbortedTxn
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


def segments_in(bases: Sequence[int], start: int, end: int) -> range:
    """LogSegments.values(from, to): from the segment holding ``start`` (or the first), every
    segment whose base offset is below ``end``; nothing when ``start == end``."""
    if start >= end:
        return range(0)
    floor = bisect_right(bases, start) - 1
    return range(max(floor, 0), bisect_left(bases, end))


def non_active_from(bases: Sequence[int], start: int) -> range:
    """LogSegments.nonActiveLogSegmentsFrom."""
    if start > bases[-1]:
        return range(0)
    return segments_in(bases, start, bases[-1])


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
) -> CompactionExplanation:
    """The cleaner's view of ``log`` at ``now`` (``facts``: its segments, in order)."""
    bases = [f.base_offset for f in facts]
    checkpoint = cleaner_checkpoint(log)
    first_dirty, checkpoint_note = _first_dirty(checkpoint, log_start, log_end, settings)
    stable = "the last stable offset"
    if not open_transactions and last_stable_offset == high_watermark:
        stable += " (the high watermark: no open transaction)"
    bounds = [(stable, last_stable_offset), ("the active segment", bases[-1])]
    lag = max(settings.min_compaction_lag_ms, 0)
    if lag > 0:
        for i in non_active_from(bases, first_dirty):
            if facts[i].largest_timestamp > now - lag:
                bounds.append((f"min.compaction.lag.ms {lag}", bases[i]))
                break
    lowest = min(offset for _, offset in bounds)
    uncleanable = max(first_dirty, lowest)
    by = tuple(name for name, offset in bounds if offset == lowest)
    non_active = non_active_from(bases, uncleanable)
    first_uncleanable = bases[non_active[0]] if non_active else bases[-1]
    clean_bytes = sum(f.size for f in facts[: bisect_left(bases, first_dirty)])
    dirty_range = segments_in(bases, min(first_dirty, first_uncleanable), first_uncleanable)
    dirty_bytes = sum(facts[i].size for i in dirty_range)
    total = clean_bytes + dirty_bytes
    ratio = dirty_bytes / total if total else 0.0
    delay = _max_compaction_delay(facts, bases, first_dirty, now, settings)
    cleanable, reason = _decide(settings, total, dirty_bytes, ratio, delay)
    preview = _preview(
        log, facts, settings, now, log_start, high_watermark, first_dirty, first_uncleanable,
        map_bytes, deep,
    )  # fmt: skip
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
        first_uncleanable_offset=first_uncleanable,
        uncleanable_offset=uncleanable,
        uncleanable_by=by,
        last_stable_offset=last_stable_offset,
        open_transactions=open_transactions,
        clean_bytes=clean_bytes,
        dirty_bytes=dirty_bytes,
        dirty_ratio=ratio,
        min_cleanable_dirty_ratio=settings.min_cleanable_dirty_ratio,
        max_compaction_delay_ms=delay,
        cleanable=cleanable,
        reason=reason,
        preview=preview,
        notes=tuple(notes),
    )


def cleaner_checkpoint(log: UnifiedLog) -> int | None:
    """This partition's ``cleaner-offset-checkpoint`` entry (a file that does not parse is
    bad input: the broker would refuse it too)."""
    try:
        return log.checkpointed(CLEANER_OFFSET_CHECKPOINT)
    except FormatError as e:
        raise UnreadableInputError(e.path, e.position, e.reason) from None


def _first_dirty(
    checkpoint: int | None, log_start: int, log_end: int, settings: Settings
) -> tuple[int, str]:
    """LogCleanerManager.cleanableOffsets' first dirty offset, and why."""
    if checkpoint is None:
        return log_start, (
            f"no cleaner-offset-checkpoint entry: the first dirty offset is the log start "
            f"offset {log_start}"
        )
    if checkpoint < log_start:
        return log_start, (
            f"cleaner-offset-checkpoint says {checkpoint}, below the log start offset "
            f"{log_start}: the broker resets the first dirty offset to {log_start}"
            + ("" if settings.delete else " (and warns)")
        )
    if checkpoint > log_end:
        return log_start, (
            f"cleaner-offset-checkpoint says {checkpoint}, beyond the log end offset {log_end}: "
            f"the broker warns and resets the first dirty offset to the log start offset "
            f"{log_start} (the whole log is dirty)"
        )
    return checkpoint, f"cleaner-offset-checkpoint says {checkpoint}"


def _max_compaction_delay(
    facts: Sequence[SegmentFacts], bases: Sequence[int], first_dirty: int, now: int, s: Settings
) -> int:
    """LogCleanerManager.maxCompactionDelay: how long the oldest dirty segment's first batch
    is past ``max.compaction.lag.ms`` (getFirstBatchTimestamp: Long.MAX_VALUE without one)."""
    stamps = []
    for i in non_active_from(bases, first_dirty):
        ts = facts[i].first_timestamp
        ts = ts if ts >= 0 else LONG_MAX
        if ts > 0:
            stamps.append(ts)
    earliest = min(stamps, default=LONG_MAX)
    clean_until = now - max(s.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


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


# -- a cleaning, counted -----------------------------------------------------------------------


class _CleanedTransactions:
    """CleanedTransactionMetadata: aborted transactions met in offset order, and whether each
    marker may go."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, AbortedTxn]] = []
        self._seen = 0
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, tuple[AbortedTxn, list[int]]] = {}

    def add(self, aborted: Sequence[AbortedTxn]) -> None:
        for txn in aborted:
            self._seen += 1
            heapq.heappush(self._heap, (txn.first_offset, self._seen, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._heap and self._heap[0][0] <= offset:
            txn = heapq.heappop(self._heap)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, (txn, []))

    def on_control_batch(self, batch: Batch, control_type: int | None) -> bool:
        """Whether the marker may be discarded (None: an empty control batch)."""
        self._consume_up_to(batch.last_offset)
        if control_type is None:
            return True
        pid = batch.producer_id
        if control_type == ABORT:
            found = self.ongoing_aborted.pop(pid, None)
            return not (found is not None and found[1])
        if control_type == COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch: Batch) -> bool:
        """Whether a data batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        found = self.ongoing_aborted.get(batch.producer_id)
        if found is not None:
            found[1].append(batch.last_offset)
            return True
        self.ongoing_committed.add(batch.producer_id)
        return False


def collect_aborted_transactions(
    log: UnifiedLog, log_start: int, start: int, upper: int
) -> list[AbortedTxn]:
    """UnifiedLog.collectAbortedTransactions(start, upper): the ``.txnindex`` entries from the
    segment holding ``start`` on with ``lastOffset >= logStartOffset`` (LocalLog passes the log
    start offset there) and ``firstOffset < upper``, up to the first entry whose last stable
    offset reaches ``upper``."""
    found: list[AbortedTxn] = []
    for segment in log.segments[max(log.floor_segment(start), 0) :]:
        index = segment.txn_index
        if index is None:
            continue
        for txn in index:
            if txn.last_offset >= log_start and txn.first_offset < upper:
                found.append(txn)
            if txn.last_stable_offset >= upper:
                return found
    return found


class _Preview:
    """The counters of one cleaning pass."""

    def __init__(self, deep: bool) -> None:
        self.records_read = self.droppable_records = self.droppable_bytes = 0
        self.superseded = self.tombstones = self.aborted = self.no_key = self.markers = 0
        self.tombstones_kept = self.tombstones_to_stamp = 0
        self.next_horizon: int | None = None
        self.keys: dict[bytes, list[int]] | None = {} if deep else None

    def horizon(self, value: int) -> None:
        if self.next_horizon is None or value < self.next_horizon:
            self.next_horizon = value


def _preview(
    log: UnifiedLog,
    facts: Sequence[SegmentFacts],
    settings: Settings,
    now: int,
    log_start: int,
    high_watermark: int,
    first_dirty: int,
    first_uncleanable: int,
    map_bytes: int,
    deep: bool,
) -> CleaningPreview:
    load = settings.dedupe_load_factor
    offset_map: OffsetMap = (
        ExactOffsetMap(map_bytes // BYTES_PER_ENTRY, load)
        if deep
        else SkimpyOffsetMap(map_bytes, load)
    )
    try:
        full_at, failure = _build_offset_map(
            log, log_start, first_dirty, first_uncleanable, offset_map
        )
        end_offset = offset_map.latest_offset + 1
        counts = _Preview(deep)
        if failure is None:
            failure = _clean(
                log, facts, settings, now, log_start, high_watermark, first_dirty, end_offset,
                offset_map, counts,
            )  # fmt: skip
        top: tuple[KeyCount, ...] = ()
        if counts.keys is not None:
            ranked = sorted(counts.keys.items(), key=lambda kv: (-kv[1][1], -kv[1][0], kv[0]))
            top = tuple(KeyCount(bytes(k), n, d) for k, (n, d) in ranked[:TOP_KEYS])
        return CleaningPreview(
            end_offset=end_offset,
            map_slots=offset_map.slots,
            map_max_entries=offset_map.max_entries,
            map_memory=offset_map.memory,
            distinct_keys=offset_map.size,
            map_full_at_offset=full_at,
            exact=deep,
            records_read=counts.records_read,
            droppable_records=counts.droppable_records,
            droppable_bytes=counts.droppable_bytes,
            superseded=counts.superseded,
            tombstones=counts.tombstones,
            aborted=counts.aborted,
            no_key=counts.no_key,
            markers=counts.markers,
            tombstones_kept=counts.tombstones_kept,
            tombstones_to_stamp=counts.tombstones_to_stamp,
            next_delete_horizon=counts.next_horizon,
            failure=failure,
            top_keys=top,
        )
    finally:
        offset_map.close()


def _control_type(log: UnifiedLog, index: int, batch: Batch) -> int | None:
    record = next(iter(log.segments[index].log.records(batch)), None)
    if record is None:
        return None
    key = control_record_key(record)
    return None if key is None else key.type


def _build_offset_map(
    log: UnifiedLog, log_start: int, start: int, end: int, offset_map: OffsetMap
) -> tuple[int | None, str | None]:
    """Cleaner.buildOffsetMap over [start, end): (the offset where the map filled, a failure)."""
    bases = [s.base_offset for s in log.segments]
    dirty = segments_in(bases, start, end)
    txns = _CleanedTransactions()
    txns.add(collect_aborted_transactions(log, log_start, start, end))
    for k, i in enumerate(dirty):
        segment = log.segments[i]
        next_start = bases[dirty[k + 1]] if k + 1 < len(dirty) else end
        records = segment.log
        walk = records.walk(segment.start_for(start).position, check_crc=False)
        for run in walk:
            for j in range(run.n):
                batch = run.batch(j)
                try:
                    if batch.is_control:
                        txns.on_control_batch(batch, _control_type(log, i, batch))
                    elif not txns.on_batch(batch):
                        for record in records.records(batch):
                            if record.key is None or record.offset < start:
                                continue
                            if offset_map.size >= offset_map.max_entries:
                                return record.offset, None
                            offset_map.put(record.key, record.offset)
                except FormatError as e:
                    return None, f"{records.path} at position {e.position} ({e.reason})"
                if batch.last_offset >= start:
                    offset_map.update_latest_offset(batch.last_offset)
        if walk.stop is not None and walk.stop.is_damage:
            return None, f"{records.path} at position {walk.stop.position}"
        offset_map.update_latest_offset(next_start - 1)
    return None, None


def _clean(
    log: UnifiedLog,
    facts: Sequence[SegmentFacts],
    settings: Settings,
    now: int,
    log_start: int,
    high_watermark: int,
    first_dirty: int,
    end_offset: int,
    offset_map: OffsetMap,
    counts: _Preview,
) -> str | None:
    """Cleaner.cleanSegments over every segment below ``end_offset``, counting what goes."""
    bases = [f.base_offset for f in facts]
    clean_section = bisect_left(bases, first_dirty)
    legacy_horizon = 0
    if clean_section:
        legacy_horizon = facts[clean_section - 1].last_modified - settings.delete_retention_ms
    cleaning = range(bisect_left(bases, end_offset))
    txns = _CleanedTransactions()
    latest = offset_map.latest_offset
    for i in cleaning:
        f = facts[i]
        upper = bases[i + 1] if i + 1 < len(bases) else f.next_offset
        txns.add(collect_aborted_transactions(log, log_start, f.base_offset, upper))
        retain_legacy = f.last_modified > legacy_horizon
        records = log.segments[i].log
        walk = records.walk(check_crc=False)
        for run in walk:
            for j in range(run.n):
                try:
                    _clean_batch(
                        log, i, run.batch(j), txns, offset_map, latest, retain_legacy, now,
                        high_watermark, counts,
                    )  # fmt: skip
                except FormatError as e:
                    return f"{records.path} at position {e.position} ({e.reason})"
        if walk.stop is not None and walk.stop.is_damage:
            return f"{records.path} at position {walk.stop.position}"
    return None


def _clean_batch(
    log: UnifiedLog,
    index: int,
    batch: Batch,
    txns: _CleanedTransactions,
    offset_map: OffsetMap,
    latest: int,
    retain_legacy: bool,
    now: int,
    high_watermark: int,
    counts: _Preview,
) -> None:
    """One batch through the cleaner's RecordFilter (checkBatchRetention, shouldRetainRecord)."""
    records = log.segments[index].log
    horizon = batch.delete_horizon_ms
    if batch.is_control:
        can_discard = txns.on_control_batch(batch, _control_type(log, index, batch))
        discard = can_discard and horizon is not None and horizon <= now
    else:
        discard = txns.on_batch(batch)
    # RETAIN_EMPTY: the batch just below the high watermark keeps its header (KAFKA-20452)
    keeps_header = batch.next_offset == high_watermark
    read = dropped = record_bytes = dropped_bytes = 0
    for record in records.records(batch):
        read += 1
        record_bytes += record.size_in_bytes
        if discard:
            dropped += 1
            dropped_bytes += record.size_in_bytes
            if batch.is_control:
                counts.markers += 1
            else:
                counts.aborted += 1
            continue
        if batch.is_control:
            if can_discard and horizon is not None:
                counts.horizon(horizon)
            continue
        keep = _retain_record(batch, record.offset, record.key, record.value, offset_map,
                              latest, retain_legacy, now, counts)  # fmt: skip
        if counts.keys is not None and record.key is not None:
            tally = counts.keys.setdefault(record.key, [0, 0])
            tally[0] += 1
            tally[1] += 0 if keep else 1
        if not keep:
            dropped += 1
            dropped_bytes += record.size_in_bytes
    counts.records_read += read
    counts.droppable_records += dropped
    if not dropped:
        return
    overhead = RECORD_BATCH_OVERHEAD if batch.magic >= 2 else 0
    if dropped == read and not keeps_header:
        counts.droppable_bytes += batch.size
    elif record_bytes:
        counts.droppable_bytes += (batch.size - overhead) * dropped_bytes // record_bytes


def _retain_record(
    batch: Batch,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    offset_map: OffsetMap,
    latest: int,
    retain_legacy: bool,
    now: int,
    counts: _Preview,
) -> bool:
    """Cleaner.shouldRetainRecord, counting the reason a record goes."""
    if offset > latest:
        return True  # beyond what the map covers (the uncleanable tail, or a full map)
    if key is None:
        counts.no_key += 1
        return False
    if offset < offset_map.get(key):
        counts.superseded += 1
        return False
    if value is not None:
        return True
    horizon = batch.delete_horizon_ms
    # v2: the batch's delete horizon; legacy: the segment against the clean section's mtime
    retain_deletes = (horizon is None or now < horizon) if batch.magic >= 2 else retain_legacy
    if not retain_deletes:
        counts.tombstones += 1
        return False
    counts.tombstones_kept += 1
    if horizon is None:
        counts.tombstones_to_stamp += 1
    else:
        counts.horizon(horizon)
    return True
