"""The log cleaner's rules over an opened partition (Kafka's LogCleanerManager, LogToClean,
Cleaner and CleanedTransactionMetadata, storage/internals/log in Kafka 4.4), the way Kafka's
Cleaner works over UnifiedLog: which offsets a cleaning takes, the key map it builds, the groups
of segments it rewrites and, batch by batch, what each cleaned segment holds.

Selection (LogCleanerManager.cleanableOffsets, LogToClean): the first dirty offset is the
``cleaner-offset-checkpoint`` entry, or the log start offset when there is none or it lies
outside [log start, log end]; the first uncleanable offset is the lowest of the last stable
offset, the active segment's base offset and, with ``min.compaction.lag.ms``, the first
non-active segment from the first dirty one whose largest timestamp is newer than ``now - lag``;
LogToClean snaps it to a segment base and sums ``.log`` sizes (clean below the first dirty
offset, cleanable from the segment holding it up to the first uncleanable offset).

A cleaning (Cleaner.doClean at ``now``): the key map of [first dirty, first uncleanable) until
it holds ``slots * load factor`` keys (buildOffsetMap); its latest offset + 1 is the next
checkpoint. Every segment below that is rewritten, in groups whose ``.log`` and index sizes fit
one segment (groupSegmentsBySize), through MemoryRecords.filterTo with the cleaner's filter:
``check_batch_retention`` and ``should_retain_record`` below. A kept batch whose records all
stay and which needs no delete horizon is copied as it is; any other is rebuilt
(kdump.format.builder), compressed with its codec's default level; a batch with no record left
is kept as an empty 61-byte header when it holds a producer's last state or ends at the high
watermark (RETAIN_EMPTY), else it goes.

The cleaned segment's ``.log`` is produced as a stream of batches to a ``CleanedSegmentSink``
(the dry run counts them, ``kdump compact --output-dir`` writes them): memory holds the key map
and one batch, as Kafka's holds its map and two I/O buffers.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from kdump.config import Settings
from kdump.errors import CleaningFailed, FormatError
from kdump.format.batch import Batch, RecordBatch
from kdump.format.builder import BatchHeader, BuiltRecord, batch_of, build_batch, empty_batch
from kdump.format.layout import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DEFAULT_MAX_BATCH_BYTES,
    LOG_APPEND_TIME,
    NO_PRODUCER_ID,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_BIT,
)
from kdump.format.records import ABORT, COMMIT, Record, control_record_key, v2_payload
from kdump.format.txnindex import AbortedTxn
from kdump.offset_map import OffsetMap, SkimpyOffsetMap
from kdump.segment import LogSegment
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

if TYPE_CHECKING:
    from kdump.speedups import Native

LONG_MAX = (1 << 63) - 1
INT32_MAX = (1 << 31) - 1
OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12


class CleanerSegment(Protocol):
    """What the selection reads of a segment (explain's SegmentFacts has these)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def largest_timestamp(self) -> int: ...
    @property
    def first_timestamp(self) -> int: ...
    @property
    def last_modified(self) -> int: ...


# -- selection: LogCleanerManager ------------------------------------------------------------


def segments_in(bases: Sequence[int], start: int, end: int) -> range:
    """LogSegments.values(from, to): from the segment holding ``start`` (or the first), every
    segment whose base offset is below ``end``; nothing when ``start >= end``."""
    if start >= end:
        return range(0)
    floor = bisect_right(bases, start) - 1
    return range(max(floor, 0), bisect_left(bases, end))


def non_active_from(bases: Sequence[int], start: int) -> range:
    """LogSegments.nonActiveLogSegmentsFrom."""
    if start > bases[-1]:
        return range(0)
    return segments_in(bases, start, bases[-1])


@dataclass(frozen=True)
class OffsetsToClean:
    """LogCleanerManager.cleanableOffsets, with what bounded the range."""

    first_dirty_offset: int
    uncleanable_offset: int
    """The bound before LogToClean snaps it to a segment base."""
    force_update_checkpoint: bool
    """The checkpoint was outside [log start, log end]: the broker rewrites it now."""
    bounds: tuple[tuple[str, int], ...]
    """Each bound and its offset (the last stable offset, the active segment, the lag)."""


def first_dirty_offset(checkpoint: int | None, log_start: int, log_end: int) -> int:
    """LogCleanerManager.cleanableOffsets' first dirty offset: the ``cleaner-offset-checkpoint``
    entry, or the log start offset when there is none or it lies outside [log start, log end]
    (the broker then rewrites the entry). Below it the log is as the cleaner's passes left it."""
    if checkpoint is None or not log_start <= checkpoint <= log_end:
        return log_start
    return checkpoint


def delete_horizon_passed(horizon: int | None, now: int) -> bool:
    """Whether a batch's delete horizon is at or before ``now``: a cleaning then drops its
    tombstones (shouldRetainRecord retains deletes while currentTime < deleteHorizonMs) and,
    where its transaction has no batch left, its marker (checkBatchRetention's
    discardBatchRecords)."""
    return horizon is not None and horizon <= now


def cleanable_offsets(
    segments: Sequence[CleanerSegment],
    checkpoint: int | None,
    log_start: int,
    log_end: int,
    last_stable_offset: int,
    now: int,
    settings: Settings,
) -> OffsetsToClean:
    bases = [s.base_offset for s in segments]
    first_dirty = first_dirty_offset(checkpoint, log_start, log_end)
    force = checkpoint is not None and first_dirty != checkpoint
    bounds = [("last stable offset", last_stable_offset), ("active segment", bases[-1])]
    lag = max(settings.min_compaction_lag_ms, 0)
    if lag > 0:
        for i in non_active_from(bases, first_dirty):
            if segments[i].largest_timestamp > now - lag:
                bounds.append(("min.compaction.lag.ms", bases[i]))
                break
    lowest = min(offset for _, offset in bounds)
    return OffsetsToClean(first_dirty, max(first_dirty, lowest), force, tuple(bounds))


@dataclass(frozen=True)
class LogToClean:
    """LogToClean: the bytes on either side of the first dirty offset."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def log_to_clean(
    segments: Sequence[CleanerSegment], offsets: OffsetsToClean, need_compaction_now: bool
) -> LogToClean:
    """LogToClean's constructor (calculateCleanableBytes)."""
    bases = [s.base_offset for s in segments]
    first_dirty = offsets.first_dirty_offset
    non_active = non_active_from(bases, offsets.uncleanable_offset)
    first_uncleanable = bases[non_active[0]] if non_active else bases[-1]
    clean = sum(segments[i].size for i in segments_in(bases, -1, first_dirty))
    dirty_range = segments_in(bases, min(first_dirty, first_uncleanable), first_uncleanable)
    dirty = sum(segments[i].size for i in dirty_range)
    return LogToClean(first_dirty, first_uncleanable, clean, dirty, need_compaction_now)


def max_compaction_delay(
    segments: Sequence[CleanerSegment], first_dirty: int, now: int, settings: Settings
) -> int:
    """LogCleanerManager.maxCompactionDelay: how long the oldest dirty non-active segment's first
    batch is past ``max.compaction.lag.ms`` (getFirstBatchTimestamp; Long.MAX_VALUE without one,
    and only positive timestamps count)."""
    bases = [s.base_offset for s in segments]
    stamps = []
    for i in non_active_from(bases, first_dirty):
        ts = segments[i].first_timestamp
        ts = ts if ts >= 0 else LONG_MAX
        if ts > 0:
            stamps.append(ts)
    earliest = min(stamps, default=LONG_MAX)
    clean_until = now - max(settings.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


def is_cleanable(to_clean: LogToClean, settings: Settings) -> bool:
    """grabFilthiestCompactedLog's filters for one log."""
    if to_clean.total_bytes <= 0:
        return False
    if to_clean.need_compaction_now and to_clean.cleanable_bytes > 0:
        return True
    return to_clean.cleanable_ratio > settings.min_cleanable_dirty_ratio


# -- transactions: CleanedTransactionMetadata ----------------------------------------------------


class CleanedTransactionMetadata:
    """Aborted transactions met in offset order, whether each batch belongs to one, and whether
    each marker may go; the aborted transactions a kept ABORT marker closes go to the cleaned
    segment's ``.txnindex`` (``cleaned_index``)."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, AbortedTxn]] = []
        self._seen = 0
        self.ongoing_committed: set[int] = set()
        self.ongoing_aborted: dict[int, tuple[AbortedTxn, list[int]]] = {}
        self.cleaned_index: list[AbortedTxn] | None = None

    def add_aborted_transactions(self, aborted: Sequence[AbortedTxn]) -> None:
        for txn in aborted:
            self._seen += 1
            heapq.heappush(self._heap, (txn.first_offset, self._seen, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._heap and self._heap[0][0] <= offset:
            txn = heapq.heappop(self._heap)[2]
            self.ongoing_aborted.setdefault(txn.producer_id, (txn, []))

    def on_control_batch_read(self, batch: Batch, control_type: int | None) -> bool:
        """Whether the marker may be discarded (None: an empty control batch)."""
        self._consume_up_to(batch.last_offset)
        if control_type is None:
            return True
        pid = batch.producer_id
        if control_type == ABORT:
            found = self.ongoing_aborted.pop(pid, None)
            if found is not None and found[1]:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(found[0])
                return False
            return True
        if control_type == COMMIT:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch_read(self, batch: Batch) -> bool:
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
    """LocalLog.collectAbortedTransactions(logStartOffset, start, upper): from the segment
    holding ``start`` (none below the first segment), each ``.txnindex`` entry ending at or
    after the log start and starting below ``upper``, until an entry whose last stable offset
    reaches ``upper``."""
    floor = log.floor_segment(start)
    if floor < 0:
        return []
    found: list[AbortedTxn] = []
    for segment in log.segments[floor:]:
        index = segment.txn_index
        if index is None:
            continue
        for txn in index:
            if txn.last_offset >= log_start and txn.first_offset < upper:
                found.append(txn)
            if txn.last_stable_offset >= upper:
                return found
    return found


def control_type(log: LogSegment, batch: Batch) -> int | None:
    """ControlRecordType of a control batch's first record (None: no record)."""
    record = next(iter(log.log.records(batch)), None)
    if record is None:
        return None
    key = control_record_key(record)
    return None if key is None else key.type


# -- the cleaning --------------------------------------------------------------------------------


class LastRecord(NamedTuple):
    """UnifiedLog.lastRecordsOfActiveProducers' value."""

    last_data_offset: int | None
    producer_epoch: int


def last_records_of_active_producers(log: UnifiedLog) -> dict[int, LastRecord]:
    """The producers the broker holds at the log end (snapshot and replay, expired ones left
    out), each with its last data batch's last offset and its epoch."""
    producers = log.loaded_producer_state.state.producers
    return {
        pid: LastRecord(e.last_offset if e.last_offset >= 0 else None, e.producer_epoch)
        for pid, e in producers.items()
    }


@dataclass
class CleanerStats:
    """CleanerStats, and what kdump says of each record that goes."""

    messages_read: int = 0
    bytes_read: int = 0
    messages_written: int = 0
    bytes_written: int = 0
    map_messages_read: int = 0
    map_bytes_read: int = 0
    invalid_messages_read: int = 0
    """Records without a key (dropped)."""
    records_before: int = 0
    """Records in the cleaned segments, deleted batches included (Kafka does not count those)."""
    superseded: int = 0
    tombstones: int = 0
    """Tombstones dropped: their delete horizon has passed."""
    aborted: int = 0
    """Records of aborted transactions dropped."""
    markers: int = 0
    """Transaction markers dropped: their transaction is gone and their horizon has passed."""
    tombstones_kept: int = 0
    tombstones_to_stamp: int = 0
    """Kept tombstones in batches this cleaning stamps with now + delete.retention.ms."""
    markers_to_stamp: int = 0
    empty_batches: int = 0
    """Batches kept with no record (RETAIN_EMPTY): 61 bytes each."""
    rebuilt_batches: int = 0
    next_delete_horizon: int | None = None
    """The earliest delete horizon still ahead among kept tombstones and markers."""

    def horizon(self, value: int) -> None:
        if self.next_delete_horizon is None or value < self.next_delete_horizon:
            self.next_delete_horizon = value

    @property
    def dropped(self) -> int:
        return self.records_before - self.messages_written


class CleanedSegmentSink(Protocol):
    """Where a cleaned segment's batches go, in order (the ``.log`` of a ``.cleaned`` segment);
    ``done`` once its group is cleaned, where Cleaner.cleanSegments swaps it in (it raises
    CleaningFailed when the segment cannot be: the cleaning stops there)."""

    def append(self, data: bytes | memoryview) -> None: ...

    def done(self) -> None: ...


@dataclass
class CleanedGroup:
    """One group of segments cleaned into the segment named after the first one's base."""

    segments: list[int]
    """The base offsets of the segments replaced."""
    kept_offsets: list[list[int]] = field(default_factory=list)
    """[first, last] ranges of the record offsets kept."""
    records_before: int = 0
    records_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    batches_after: int = 0
    aborted_txns: list[AbortedTxn] = field(default_factory=list)
    """The cleaned segment's ``.txnindex`` entries."""
    last_modified: int = 0
    """The last replaced segment's mtime, which the cleaned files keep."""

    def keep(self, offset: int) -> None:
        ranges = self.kept_offsets
        if ranges and ranges[-1][1] + 1 == offset:
            ranges[-1][1] = offset
        else:
            ranges.append([offset, offset])

    def keep_ranges(self, pairs: bytes) -> None:
        """[first, last] runs of kept offsets, as the C code gives them (int64 pairs)."""
        found = array("q")
        found.frombytes(pairs)
        ranges = self.kept_offsets
        for k in range(0, len(found), 2):
            first, last = found[k], found[k + 1]
            if ranges and ranges[-1][1] + 1 == first:
                ranges[-1][1] = last
            else:
                ranges.append([first, last])


@dataclass
class CleaningResult:
    """What Cleaner.doClean did (or would do): the next checkpoint, the groups, the counts."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    end_offset: int
    """The map's latest offset + 1: the cleaner-offset-checkpoint after the cleaning."""
    map_slots: int
    map_max_entries: int
    map_memory: int
    distinct_keys: int
    map_full_at_offset: int | None
    """The record whose key did not fit: the cleaning stops short there (None: it fitted)."""
    groups: list[CleanedGroup] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)
    failure: str | None = None
    """Where the cleaning throws (damaged bytes): the broker marks the partition uncleanable."""

    @property
    def partial(self) -> bool:
        return self.end_offset < self.first_uncleanable_offset


RecordObserver = Callable[[bytes, bool], None]
"""Told of each keyed record the filter looks at: its key, whether it stays (explain --deep)."""


class Cleaner:
    """Kafka's Cleaner with one key map, at ``now`` (doClean's currentTime)."""

    def __init__(
        self,
        offset_map: OffsetMap,
        now: int,
        observer: RecordObserver | None = None,
    ) -> None:
        self.offset_map = offset_map
        self.now = now
        self.observer = observer

    def do_clean(
        self,
        log: UnifiedLog,
        to_clean: LogToClean,
        settings: Settings,
        sinks: Callable[[CleanedGroup], CleanedSegmentSink] | None = None,
    ) -> CleaningResult:
        """Cleaner.doClean: the map, then each group through cleanSegments (``sinks`` gives
        each group's cleaned segment a place to go; None: counted only)."""
        segments = log.segments
        bases = log.base_offsets
        first_dirty = to_clean.first_dirty_offset
        upper = to_clean.first_uncleanable_offset
        below = segments_in(bases, 0, first_dirty)
        legacy_horizon = (
            segments[below[-1]].last_modified - settings.delete_retention_ms if below else 0
        )
        omap = self.offset_map
        full_at, failure = None, None
        try:
            full_at = self.build_offset_map(log, first_dirty, upper)
        except CleaningFailed as e:
            failure = str(e)
        end_offset = omap.latest_offset + 1
        result = CleaningResult(
            first_dirty, upper, end_offset, omap.slots, omap.max_entries, omap.memory,
            omap.size, full_at, failure=failure,
        )  # fmt: skip
        if failure is not None:
            return result
        txns = CleanedTransactionMetadata()
        groups = group_segments_by_size(
            [segments[i] for i in segments_in(bases, 0, end_offset)],
            settings.segment_bytes,
            settings.segment_index_bytes,
            upper,
        )
        producers = last_records_of_active_producers(log)
        hw = log.high_watermark.value
        for group in groups:
            cleaned = CleanedGroup([s.base_offset for s in group])
            result.groups.append(cleaned)
            sink = sinks(cleaned) if sinks is not None else None
            try:
                self.clean_segments(
                    log, group, cleaned, sink, txns, producers, hw, legacy_horizon, settings,
                    result.stats,
                )  # fmt: skip
                if sink is not None:
                    sink.done()
            except CleaningFailed as e:
                result.failure = str(e)
                return result
        return result

    # -- the map -------------------------------------------------------------------------------

    def build_offset_map(self, log: UnifiedLog, start: int, end: int) -> int | None:
        """Cleaner.buildOffsetMap over [start, end): the offset of the record whose key did not
        fit (the map is full), or None."""
        bases = log.base_offsets
        dirty = segments_in(bases, start, end)
        txns = CleanedTransactionMetadata()
        txns.add_aborted_transactions(
            collect_aborted_transactions(log, log.log_start_offset, start, end)
        )
        omap = self.offset_map
        for k, i in enumerate(dirty):
            segment = log.segments[i]
            next_start = bases[dirty[k + 1]] if k + 1 < len(dirty) else end
            full_at = self._map_segment(segment, segment.start_for(start).position, txns, start)
            if full_at is not None:
                return full_at
            omap.update_latest_offset(next_start - 1)
        return None

    def native(self) -> Native | None:
        """The C module's loops, where they serve: a SkimpyOffsetMap, and no observer (explain
        --deep is told of every key, in Python)."""
        omap = self.offset_map
        if self.observer is None and isinstance(omap, SkimpyOffsetMap):
            return omap.native
        return None

    def _map_segment(
        self, segment: LogSegment, position: int, txns: CleanedTransactionMetadata, start: int
    ) -> int | None:
        """buildOffsetMapForSegment over the batches from ``position``, runs of plain batches
        in the C code: the offset of the record that did not fit, or None."""
        omap = self.offset_map
        limit = omap.max_entries
        native = self.native()
        batches = _batches(segment, position)
        for batch in batches:
            if native is not None and _is_plain(batch):
                assert isinstance(omap, SkimpyOffsetMap)
                buf = segment.log.buf
                pos, omap.entries, latest, full_at, _ = native.omap_put_run(
                    buf, batch.position, len(buf), omap.buffer, omap.slots, limit, omap.entries,
                    start,
                )  # fmt: skip
                if latest >= 0:
                    omap.update_latest_offset(latest)
                if full_at >= 0:
                    return full_at
                if pos > batch.position:
                    batches.skip_to = pos
                    continue
            if batch.is_control:
                txns.on_control_batch_read(batch, control_type(segment, batch))
            elif not txns.on_batch_read(batch):
                did_not_fit = self._map_records(segment, batch, start, limit)
                if did_not_fit is not None:
                    return did_not_fit
            if batch.last_offset >= start:
                omap.update_latest_offset(batch.last_offset)
        return None

    def _map_records(self, segment: LogSegment, batch: Batch, start: int, limit: int) -> int | None:
        """One batch's keyed records at or above ``start`` into the map; the offset of the one
        that did not fit, or None."""
        omap = self.offset_map
        native = self.native()
        if native is not None and isinstance(batch, RecordBatch) and batch.records_count >= 0:
            assert isinstance(omap, SkimpyOffsetMap)
            done = native.omap_put_records(
                omap.buffer, omap.slots, limit, omap.entries, _payload(segment, batch),
                batch.records_count, batch.base_offset, batch.base_timestamp,
                _append_time(batch), start,
            )  # fmt: skip
            if done is not None:
                omap.entries, latest, full_at = done
                if latest >= 0:
                    omap.update_latest_offset(latest)
                return full_at if full_at >= 0 else None
        for record in _records(segment, batch):
            if record.key is None or record.offset < start:
                continue
            if omap.size >= limit:
                return record.offset
            omap.put(record.key, record.offset)
        return None

    # -- a group ---------------------------------------------------------------------------------

    def clean_segments(
        self,
        log: UnifiedLog,
        group: Sequence[LogSegment],
        cleaned: CleanedGroup,
        sink: CleanedSegmentSink | None,
        txns: CleanedTransactionMetadata,
        producers: dict[int, LastRecord],
        high_watermark: int,
        legacy_horizon: int,
        settings: Settings,
        stats: CleanerStats,
    ) -> None:
        """Cleaner.cleanSegments: each segment of the group into one cleaned segment."""
        txns.cleaned_index = cleaned.aborted_txns
        for n, segment in enumerate(group):
            upper = group[n + 1].base_offset if n + 1 < len(group) else segment.next_offset
            txns.add_aborted_transactions(
                collect_aborted_transactions(log, log.log_start_offset, segment.base_offset, upper)
            )
            retain_legacy = segment.last_modified > legacy_horizon
            filt = _CleanerFilter(
                self, txns, producers, high_watermark, retain_legacy,
                settings.delete_retention_ms, stats,
            )  # fmt: skip
            cleaned.bytes_before += segment.log_size
            filt.filter_segment(segment, cleaned, sink)
        cleaned.last_modified = group[-1].last_modified


class _CleanerFilter:
    """Cleaner.cleanInto's RecordFilter, applied batch by batch as MemoryRecords.filterTo."""

    def __init__(
        self,
        cleaner: Cleaner,
        txns: CleanedTransactionMetadata,
        producers: dict[int, LastRecord],
        high_watermark: int,
        retain_legacy: bool,
        delete_retention_ms: int,
        stats: CleanerStats,
    ) -> None:
        self.cleaner = cleaner
        self.now = cleaner.now
        self.omap = cleaner.offset_map
        self.latest = cleaner.offset_map.latest_offset
        self.txns = txns
        self.producers = producers
        self.high_watermark = high_watermark
        self.retain_legacy = retain_legacy
        self.delete_retention_ms = delete_retention_ms
        self.stats = stats
        self.native = cleaner.native()

    def filter_segment(
        self, segment: LogSegment, cleaned: CleanedGroup, sink: CleanedSegmentSink | None
    ) -> None:
        """Every batch of the segment through the filter, runs of plain batches in the C
        code."""
        native = self.native
        batches = _batches(segment, 0)
        for batch in batches:
            if native is not None and _is_plain(batch):
                pos = self._clean_run(native, segment, batch.position, cleaned, sink)
                if pos > batch.position:
                    batches.skip_to = pos
                    continue
            self.filter_batch(segment, batch, cleaned, sink)

    def _clean_run(
        self,
        native: Native,
        segment: LogSegment,
        position: int,
        cleaned: CleanedGroup,
        sink: CleanedSegmentSink | None,
    ) -> int:
        """The C code's filter over the plain batches from ``position``, up to the first it
        leaves to filter_batch (one a producer's state may keep empty, one that is not plain);
        where it stopped."""
        omap = self.omap
        assert isinstance(omap, SkimpyOffsetMap)
        buf = segment.log.buf
        pos, data, kept, counts = native.clean_run(
            buf, position, len(buf), omap.buffer, omap.slots, self.latest, self.now,
            self.high_watermark, self.delete_retention_ms, RUN_OUTPUT,
        )  # fmt: skip
        if pos > position:
            self._count(native, counts, cleaned)
            cleaned.keep_ranges(kept)
            if sink is not None and data:
                sink.append(data)
        return pos

    def _count(self, native: Native, counts: tuple[int | None, ...], cleaned: CleanedGroup) -> None:
        """The C code's counts (its CLEAN_STATS) into the cleaning's and the group's."""
        stats = self.stats
        got = dict(zip(native.CLEAN_STATS, counts, strict=True))
        horizon = got.pop("next_delete_horizon")
        if horizon is not None:
            stats.horizon(horizon)
        read, written = got["messages_read"] or 0, got["messages_written"] or 0
        stats.records_before += read
        cleaned.records_before += read
        cleaned.records_after += written
        cleaned.bytes_after += got["bytes_written"] or 0
        cleaned.batches_after += got.pop("batches_written") or 0
        for name, value in got.items():
            setattr(stats, name, getattr(stats, name) + (value or 0))

    def filter_batch(
        self,
        segment: LogSegment,
        batch: Batch,
        cleaned: CleanedGroup,
        sink: CleanedSegmentSink | None,
    ) -> None:
        stats = self.stats
        now = self.now
        horizon = batch.delete_horizon_ms
        # checkBatchRetention
        if batch.is_control:
            can_discard = self.txns.on_control_batch_read(batch, control_type(segment, batch))
            discard_records = can_discard and delete_horizon_passed(horizon, now)
        else:
            can_discard = discard_records = self.txns.on_batch_read(batch)
        last = self.producers.get(batch.producer_id)
        is_last_of_producer = last is not None and (
            batch.last_offset == last.last_data_offset
            if last.last_data_offset is not None
            else batch.is_control and batch.producer_epoch == last.producer_epoch
        )
        retain_empty = (batch.producer_id != NO_PRODUCER_ID and is_last_of_producer) or (
            batch.next_offset == self.high_watermark
        )
        marker_for_empty_txn = can_discard and batch.is_control
        stats.bytes_read += batch.size
        if not retain_empty and discard_records:  # DELETE: Kafka does not even read the records
            if isinstance(batch, RecordBatch) and batch.records_count >= 0:
                n = batch.records_count
            else:
                n = sum(1 for _ in _records(segment, batch))
            stats.records_before += n
            cleaned.records_before += n
            if batch.is_control:
                stats.markers += n
            else:
                stats.aborted += n
            return
        native = self.native
        if (
            native is not None
            and not discard_records
            and not batch.is_control
            and self._filter_records(native, segment, batch, cleaned, sink, retain_empty)
        ):
            return
        # filterBatch: the records stream by; only the kept ones are held, as Kafka holds them
        kept: list[Record] = []
        tombstones = False
        n = 0
        for record in _records(segment, batch):
            n += 1
            stats.messages_read += 1
            if discard_records:
                keep = False
                if batch.is_control:
                    stats.markers += 1
                else:
                    stats.aborted += 1
            elif batch.is_control:
                keep = True
            else:
                keep = self.should_retain_record(batch, record)
            if keep:
                kept.append(record)
                tombstones = tombstones or record.value is None
        stats.records_before += n
        cleaned.records_before += n
        if kept:
            stamp = (tombstones or marker_for_empty_txn) and horizon is None
            new_horizon: int | None = horizon
            if stamp:
                new_horizon = now + self.delete_retention_ms
                if batch.is_control:
                    stats.markers_to_stamp += len(kept)
                else:
                    stats.tombstones_to_stamp += sum(r.value is None for r in kept)
            if marker_for_empty_txn and horizon is not None:
                stats.horizon(horizon)
            if len(kept) == n and batch.magic >= 2 and not stamp:
                data: bytes | memoryview = memoryview(segment.log.buf)[batch.position : batch.end]
            else:
                data = build_batch(_header_of(batch, kept), _built(kept), new_horizon)
                stats.rebuilt_batches += 1
            for record in kept:
                cleaned.keep(record.offset)
            self._land(cleaned, sink, data, len(kept))
        elif retain_empty:
            if batch.magic < 2:
                raise CleaningFailed(
                    f"{segment.log_path}:{batch.position}: empty batches are only supported "
                    "for magic v2 and above (Kafka's cleaner throws here)"
                )
            data = empty_batch(_header_of(batch, kept), batch.max_timestamp)
            stats.empty_batches += 1
            self._land(cleaned, sink, data, 0)

    def _filter_records(
        self,
        native: Native,
        segment: LogSegment,
        batch: Batch,
        cleaned: CleanedGroup,
        sink: CleanedSegmentSink | None,
        retain_empty: bool,
    ) -> bool:
        """filterBatch over one v2 data batch's records in the C code (a compressed batch's,
        decompressed; a committed transaction's): whether it took the batch (False: the
        records are the Python code's)."""
        if not isinstance(batch, RecordBatch) or batch.records_count < 0:
            return False
        omap = self.omap
        assert isinstance(omap, SkimpyOffsetMap)
        horizon = batch.delete_horizon_ms
        done = native.clean_records(
            _payload(segment, batch), batch.records_count, batch.base_offset,
            batch.base_timestamp, _append_time(batch), omap.buffer, omap.slots, self.latest,
            self.now, horizon, self.delete_retention_ms,
        )  # fmt: skip
        if done is None:
            return False
        kept, stamped, max_ts, base_ts, records, ranges, counts = done
        self._count(native, counts, cleaned)
        cleaned.keep_ranges(ranges)
        self.stats.tombstones_to_stamp += stamped
        if kept:
            if records is None:  # every record stays, no horizon to stamp: the batch as it is
                data: bytes | memoryview = memoryview(segment.log.buf)[batch.position : batch.end]
            else:
                stamp = stamped > 0 or horizon is not None
                data = batch_of(_header_of(batch, ()), records, kept, base_ts, max_ts, stamp)
                self.stats.rebuilt_batches += 1
            self._land(cleaned, sink, data, kept)
        elif retain_empty:
            data = empty_batch(_header_of(batch, ()), batch.max_timestamp)
            self.stats.empty_batches += 1
            self._land(cleaned, sink, data, 0)
        return True

    def _land(
        self,
        cleaned: CleanedGroup,
        sink: CleanedSegmentSink | None,
        data: bytes | memoryview,
        records: int,
    ) -> None:
        stats = self.stats
        stats.messages_written += records
        stats.bytes_written += len(data)
        cleaned.records_after += records
        cleaned.bytes_after += len(data)
        cleaned.batches_after += 1
        if sink is not None:
            sink.append(data)

    def should_retain_record(self, batch: Batch, record: Record) -> bool:
        """Cleaner.shouldRetainRecord, counting why a record goes."""
        stats = self.stats
        if record.offset > self.latest:
            return True  # beyond what the map covers (the uncleanable tail, or a full map)
        key = record.key
        if key is None:
            stats.invalid_messages_read += 1
            return False
        latest_for_key = record.offset >= self.omap.get(key)
        horizon = batch.delete_horizon_ms
        if batch.magic >= 2:
            retain_deletes = not delete_horizon_passed(horizon, self.now)
        else:
            retain_deletes = self.retain_legacy
        keep = latest_for_key and (record.value is not None or retain_deletes)
        if not latest_for_key:
            stats.superseded += 1
        elif not keep:
            stats.tombstones += 1
        elif record.value is None:
            stats.tombstones_kept += 1
            if horizon is not None:
                stats.horizon(horizon)
        observer = self.cleaner.observer
        if observer is not None:
            observer(key, keep)
        return keep


def _header_of(batch: Batch, kept: Sequence[Record]) -> BatchHeader:
    """MemoryRecords.buildRetainedRecordsInto's builder arguments: a legacy message becomes a
    v2 batch from its first kept record to its last (CreateTime for a v0 message's
    NoTimestampType); a v2 batch keeps its base and last offsets."""
    append_time = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    legacy = batch.magic < 2
    return BatchHeader(
        base_offset=kept[0].offset if legacy else batch.base_offset,
        last_offset=kept[-1].offset if legacy else batch.last_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        compression=batch.compression,
        log_append_time_ms=append_time,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
    )


def _built(records: Sequence[Record]) -> Iterator[BuiltRecord]:
    for r in records:
        yield BuiltRecord(r.offset, r.timestamp, r.key, r.value, r.headers)


RUN_OUTPUT = 1 << 20
"""Cleaned bytes the C code hands back at a time (what memory holds besides the map)."""
PLAIN_ATTRIBUTES = COMPRESSION_MASK | TRANSACTIONAL_BIT | CONTROL_BIT


def _is_plain(batch: Batch) -> bool:
    """A batch the C code's runs take: magic 2, no compression, not transactional, not a
    marker."""
    return batch.magic == 2 and not batch.attributes & PLAIN_ATTRIBUTES


def _append_time(batch: RecordBatch) -> int | None:
    """LogAppendTime: every record's timestamp is the batch's max timestamp."""
    return batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None


def _payload(segment: LogSegment, batch: RecordBatch) -> bytes | bytearray | memoryview:
    """A v2 batch's records' bytes, decompressed; bytes that do not make the cleaner throw."""
    try:
        return v2_payload(
            segment.log.buf, batch, batch.position + RECORD_BATCH_OVERHEAD, segment.log_path,
            DEFAULT_MAX_BATCH_BYTES,
        )  # fmt: skip
    except FormatError as e:
        raise CleaningFailed(f"{segment.log_path}:{e.position}: {e.reason}") from None


class _Batches:
    """Every batch of the segment's ``.log`` from ``position``; bytes that do not parse are a
    failure, as they make Kafka's cleaner throw (the partition becomes uncleanable). The C code
    takes runs of plain batches itself: ``skip_to`` then moves the walk past them (the header
    walk goes on, the batches are not handed out again)."""

    def __init__(self, segment: LogSegment, position: int) -> None:
        self.segment = segment
        self.walk = segment.log.walk(position, check_crc=False)
        self.skip_to = position

    def __iter__(self) -> Iterator[Batch]:
        for run in self.walk:
            j = 0
            while j < run.n:
                if run.position[j] < self.skip_to:
                    j = bisect_left(run.position, self.skip_to, j, run.n)
                    continue
                yield run.batch(j)
                j += 1
        stop = self.walk.stop
        if stop is not None and stop.is_damage and stop.position >= self.skip_to:
            why = stop.error.reason if stop.error is not None else stop.reason.value
            raise CleaningFailed(f"{self.segment.log.path}:{stop.position}: {why}")


def _batches(segment: LogSegment, position: int) -> _Batches:
    return _Batches(segment, position)


def _records(segment: LogSegment, batch: Batch) -> Iterator[Record]:
    try:
        yield from segment.log.records(batch)
    except FormatError as e:
        raise CleaningFailed(f"{segment.log_path}:{e.position}: {e.reason}") from None


# -- groups ---------------------------------------------------------------------------------------


def _index_bytes(segment: LogSegment, suffix_index: bool) -> int:
    """AbstractIndex.sizeInBytes of a loaded index: its file length, whole entries."""
    index = segment.offset_index if suffix_index else segment.time_index
    size = OFFSET_INDEX_ENTRY_SIZE if suffix_index else TIME_INDEX_ENTRY_SIZE
    return 0 if index is None else index.entries * size


def group_segments_by_size(
    segments: Sequence[LogSegment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Cleaner.groupSegmentsBySize: consecutive segments whose ``.log`` sizes sum to at most
    ``max_size`` (LogConfig.segmentSize), each index's sizes to at most ``max_index_size``, and
    whose offsets fit one segment's 32-bit relative offsets."""
    grouped: list[list[LogSegment]] = []
    rest = list(segments)
    i = 0
    while i < len(rest):
        group = [rest[i]]
        log_size = rest[i].log_size
        index_size = _index_bytes(rest[i], True)
        time_size = _index_bytes(rest[i], False)
        i += 1
        while i < len(rest):
            nxt = rest[i]
            last_offset = (
                rest[i + 1].base_offset - 1 if i + 1 < len(rest) else first_uncleanable - 1
            )
            if (
                log_size + nxt.log_size > max_size
                or index_size + _index_bytes(nxt, True) > max_index_size
                or time_size + _index_bytes(nxt, False) > max_index_size
                or (nxt.log_size != 0 and last_offset - group[0].base_offset > INT32_MAX)
            ):
                break
            group.append(nxt)
            log_size += nxt.log_size
            index_size += _index_bytes(nxt, True)
            time_size += _index_bytes(nxt, False)
            i += 1
        grouped.append(group)
    return grouped


__all__ = [
    "CleanedGroup",
    "CleanedSegmentSink",
    "CleanedTransactionMetadata",
    "Cleaner",
    "CleanerStats",
    "CleaningFailed",
    "CleaningResult",
    "LogToClean",
    "OffsetsToClean",
    "cleanable_offsets",
    "collect_aborted_transactions",
    "delete_horizon_passed",
    "first_dirty_offset",
    "group_segments_by_size",
    "is_cleanable",
    "log_to_clean",
    "max_compaction_delay",
    "segments_in",
]
