"""Kafka's ``LogSegment.recover``: rebuild a segment's offset index, time index and transaction
index from its .log, and find where the log must be truncated.

Pure: a buffer (the memory-mapped .log) in, the bytes of the new index files out::

    validBytes = 0; lastIndexEntry = 0; maxTs = -1; offsetOfMaxTs = -1
    for batch in log batches (stop at the first invalid one):
        if batch.maxTimestamp > maxTs: maxTs, offsetOfMaxTs = batch.maxTimestamp, batch.lastOffset
        if validBytes - lastIndexEntry > indexIntervalBytes:
            offsetIndex.append(batch.lastOffset, validBytes)
            timeIndex.maybeAppend(maxTs, offsetOfMaxTs)
            lastIndexEntry = validBytes
        validBytes += batch.size
        if batch.magic >= 2: updateProducerState(batch)      # the .txnindex
    truncate the log to validBytes; trim the offset index
    timeIndex.maybeAppend(maxTs, offsetOfMaxTs, skipFullCheck=true); trim the time index

Where Kafka's index classes would throw (an index full before the segment ends, offsets that go
back), the entry is refused and a finding says so; the rest of the rebuild goes on.
"""

from __future__ import annotations

import operator
import struct
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from pathlib import Path
from typing import TYPE_CHECKING

from kdump import speedups
from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.gather import IndexGather, entry_keys
from kdump.checks.log import stop_damage
from kdump.checks.options import VerifyOptions
from kdump.checks.txn import invalid_txn_state
from kdump.config import ConfigLayers, Source, option_default, resolve_settings
from kdump.crc import Buffer
from kdump.errors import CorruptBatchError
from kdump.format.batch import Batch, RecordBatch
from kdump.format.index import OffsetIndex
from kdump.format.layout import INT32_MAX, LOG_OVERHEAD, NO_TIMESTAMP, RECORD_OVERHEAD_V0
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import AbortedTxn
from kdump.format.walk import (
    NO_EPOCH_YET,
    BatchRun,
    Column,
    LogWalk,
    Pager,
    Producers,
    Stop,
    StopReason,
    flag_batches,
    iter_batches,
    read_batch,
)
from kdump.log_scan import LogScan
from kdump.producer_state import CompletedTxn, InvalidTxnState, ProducerStateManager

if TYPE_CHECKING:
    from kdump.speedups import Native
    from kdump.unified_log import UnifiedLog

DEFAULT_INDEX_INTERVAL_BYTES = option_default("index.interval.bytes")
DEFAULT_MAX_INDEX_SIZE = option_default("segment.index.bytes")

_OFFSET_ENTRY = OffsetIndex.entry_struct
_TIME_ENTRY = TimeIndex.entry_struct


@dataclass(frozen=True)
class IndexConfig:
    """The broker settings a rebuild depends on."""

    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    """index.interval.bytes (segment-level: index.interval.bytes)."""
    max_index_size: int = DEFAULT_MAX_INDEX_SIZE
    """log.index.size.max.bytes (segment.index.bytes)."""
    interval_from: str | None = None
    """What set index.interval.bytes (an option, a file's line); None: Kafka's default, assumed
    for want of the topic's own setting."""

    @property
    def verify_options(self) -> VerifyOptions:
        """verify's checks of a segment's indexes against these settings (the recheck of what
        a repair writes, the findings that choose what it repairs)."""
        return VerifyOptions(
            index_interval_bytes=self.index_interval_bytes, max_index_size=self.max_index_size
        )

    @property
    def max_offset_entries(self) -> int:
        return self.max_index_size // _OFFSET_ENTRY.size

    @property
    def max_time_entries(self) -> int:
        return self.max_index_size // _TIME_ENTRY.size


@dataclass(frozen=True)
class IndexConfigs:
    """Each partition's IndexConfig (by its directory): its topic's own settings where they
    are known; ``default`` for the others."""

    default: IndexConfig = IndexConfig()
    by_directory: Mapping[Path, IndexConfig] = field(default_factory=dict)

    def of(self, directory: Path) -> IndexConfig:
        return self.by_directory.get(directory, self.default)

    @classmethod
    def of_any(cls, config: IndexConfig | IndexConfigs) -> IndexConfigs:
        """One config for every partition, or already one each."""
        return config if isinstance(config, IndexConfigs) else cls(config)

    @classmethod
    def of_topics(cls, logs: Iterable[UnifiedLog], layers: ConfigLayers) -> IndexConfigs:
        """Each partition's topic's index.interval.bytes and segment.index.bytes, from the
        first of the layers it was opened with that sets them (kdump.config); ``layers``
        for the partitions of no topic."""
        by_directory = {}
        for log in logs:
            local = log.storage.local_path
            if local is None:
                continue
            directory = Path(local)
            settings = log.settings
            interval = settings["index.interval.bytes"]
            known = interval.source is not Source.DEFAULT
            by_directory[directory] = IndexConfig(
                settings.index_interval_bytes,
                settings.segment_index_bytes,
                interval.origin or interval.source.value if known else None,
            )
        default = resolve_settings(layers, None)
        return cls(
            IndexConfig(default.index_interval_bytes, default.segment_index_bytes), by_directory
        )


class _OffsetIndexBuilder:
    """OffsetIndex.append into a growing buffer: refuses when full or not increasing."""

    def __init__(self, base_offset: int, max_entries: int) -> None:
        self.base_offset, self.max_entries = base_offset, max_entries
        self.data = bytearray()
        self.entries = 0
        self.last_offset = base_offset
        self.refused_full = 0
        self.refused_order: tuple[int, int] | None = None

    def append(self, offset: int, position: int) -> None:
        if self.entries >= self.max_entries:
            self.refused_full += 1
        elif self.entries == 0 or offset > self.last_offset:
            self.data += _OFFSET_ENTRY.pack(offset - self.base_offset, position)
            self.entries += 1
            self.last_offset = offset
        elif self.refused_order is None:
            self.refused_order = (offset, position)

    def extend(self, offsets: list[int], positions: list[int]) -> None:
        """append() of each pair; pairs in order that fit go in as one block."""
        n = len(offsets)
        if (
            n > 1
            and self.entries + n <= self.max_entries
            and (self.entries == 0 or offsets[0] > self.last_offset)
            and all(map(operator.lt, offsets, offsets[1:]))
        ):
            relative = list(map(operator.sub, offsets, repeat(self.base_offset)))
            self.data += _pack_entries(_OFFSET_ENTRY, relative, positions)
            self.entries += n
            self.last_offset = offsets[-1]
        else:
            for offset, position in zip(offsets, positions, strict=True):
                self.append(offset, position)

    def extend_packed(self, native: Native, offsets: array[int], positions: array[int]) -> None:
        """extend() of int64 columns: in order, packed by the C code at once."""
        if offsets and self.entries + len(offsets) <= self.max_entries:
            above = self.last_offset if self.entries else speedups.INT64_MIN
            packed = native.pack_entries(offsets, positions, self.base_offset, False, above, 0)
            if packed is not None:
                self.data += packed.data
                self.entries += packed.entries
                self.last_offset = packed.last_first
                return
        self.extend(offsets.tolist(), positions.tolist())


def _pack_entries(entry: struct.Struct, firsts: list[int], seconds: list[int]) -> bytes:
    """Index entries (first, second) in entry's layout, one pack for all."""
    layout = entry.format.lstrip(">")
    return struct.pack(
        ">" + layout * len(firsts), *chain.from_iterable(zip(firsts, seconds, strict=True))
    )


class _TimeIndexBuilder:
    """TimeIndex.maybeAppend: only a timestamp above the last one makes an entry; the last slot
    is kept for the closing entry (isFull is entries >= maxEntries - 1)."""

    def __init__(self, base_offset: int, max_entries: int) -> None:
        self.base_offset, self.max_entries = base_offset, max_entries
        self.data = bytearray()
        self.entries = 0
        self.last_timestamp = NO_TIMESTAMP
        self.last_offset = base_offset
        self.refused_full = 0
        self.refused_order: tuple[int, int] | None = None

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        if not skip_full_check and self.entries >= self.max_entries - 1:
            self.refused_full += 1
            return
        if self.entries and offset < self.last_offset:
            if self.refused_order is None:
                self.refused_order = (timestamp, offset)
            return
        if timestamp > self.last_timestamp:
            self.data += _TIME_ENTRY.pack(timestamp, offset - self.base_offset)
            self.entries += 1
            self.last_timestamp, self.last_offset = timestamp, offset

    def extend(self, timestamps: list[int], offsets: list[int]) -> None:
        """maybe_append() of each pair; pairs in order that fit go in as one block."""
        n = len(timestamps)
        if not (
            n > 1
            and self.entries + n < self.max_entries
            and (self.entries == 0 or offsets[0] >= self.last_offset)
            and all(map(operator.le, offsets, offsets[1:]))
            and all(map(operator.le, timestamps, timestamps[1:]))
        ):
            for timestamp, offset in zip(timestamps, offsets, strict=True):
                self.maybe_append(timestamp, offset)
            return
        # rising timestamps, each entered once: the first pair of every timestamp above the last
        # one entered (timestamps never go back here, so that is the one before, or the last
        # entry's where it is higher)
        last = self.last_timestamp
        floors = list(map(max, [last, *timestamps[:-1]], repeat(last)))
        rising = list(map(operator.gt, timestamps, floors))
        kept_timestamps = list(compress(timestamps, rising))
        if kept_timestamps:
            kept_offsets = list(compress(offsets, rising))
            relative = list(map(operator.sub, kept_offsets, repeat(self.base_offset)))
            self.data += _pack_entries(_TIME_ENTRY, kept_timestamps, relative)
            self.entries += len(kept_timestamps)
            self.last_timestamp, self.last_offset = kept_timestamps[-1], kept_offsets[-1]

    def extend_packed(self, native: Native, timestamps: array[int], offsets: array[int]) -> None:
        """extend() of int64 columns: in order, packed by the C code at once."""
        if timestamps and self.entries + len(timestamps) < self.max_entries:
            not_before = self.last_offset if self.entries else speedups.INT64_MIN
            packed = native.pack_entries(
                timestamps, offsets, self.base_offset, True, self.last_timestamp, not_before
            )
            if packed is not None:
                if packed.entries:
                    self.data += packed.data
                    self.entries += packed.entries
                    self.last_timestamp, self.last_offset = packed.last_first, packed.last_second
                return
        self.extend(timestamps.tolist(), offsets.tolist())


class _IndexWriter:
    """LogSegment.recover's index appends: the largest timestamp so far, and an entry in both
    indexes once more than index.interval.bytes have passed since the last one."""

    def __init__(self, base_offset: int, config: IndexConfig) -> None:
        self.index = _OffsetIndexBuilder(base_offset, config.max_offset_entries)
        self.time_index = _TimeIndexBuilder(base_offset, config.max_time_entries)
        self.interval = config.index_interval_bytes
        self.max_ts, self.offset_of_max_ts, self.last_index_entry = NO_TIMESTAMP, -1, 0

    def batches(
        self, positions: Iterable[int], last_offsets: Iterable[int], max_timestamps: Iterable[int]
    ) -> None:
        """Consecutive batches, in file order; their entries go to the builders together."""
        max_ts, at_max, last_entry = self.max_ts, self.offset_of_max_ts, self.last_index_entry
        interval = self.interval
        offsets: list[int] = []
        entry_positions: list[int] = []
        timestamps: list[int] = []
        time_offsets: list[int] = []
        for position, last, batch_max_ts in zip(
            positions, last_offsets, max_timestamps, strict=True
        ):
            if batch_max_ts > max_ts:
                max_ts, at_max = batch_max_ts, last
            if position - last_entry > interval:
                offsets.append(last)
                entry_positions.append(position)
                timestamps.append(max_ts)
                time_offsets.append(at_max)
                last_entry = position
        self.max_ts, self.offset_of_max_ts, self.last_index_entry = max_ts, at_max, last_entry
        self.index.extend(offsets, entry_positions)
        self.time_index.extend(timestamps, time_offsets)

    def run(self, positions: Column, last_offsets: Column, max_timestamps: Column) -> None:
        """batches() over int64 columns, in C."""
        native = speedups.native()
        assert native is not None
        interval = max(min(self.interval, speedups.INT64_MAX), -1)  # the same test in int64
        points = native.index_points(
            positions, last_offsets, max_timestamps, interval,
            self.last_index_entry, self.max_ts, self.offset_of_max_ts,
        )  # fmt: skip
        self.last_index_entry, self.max_ts = points.last_entry, points.max_ts
        self.offset_of_max_ts = points.offset_of_max_ts
        self.index.extend_packed(native, array("q", points.offsets), array("q", points.positions))
        self.time_index.extend_packed(
            native, array("q", points.timestamps), array("q", points.time_offsets)
        )

    def close(self) -> None:
        self.time_index.maybe_append(self.max_ts, self.offset_of_max_ts, skip_full_check=True)


@dataclass
class RecoveredSegment:
    """What LogSegment.recover makes of one .log."""

    path: str
    base_offset: int
    log_size: int
    valid_bytes: int = 0
    """Where the log is truncated: the end of the last valid batch."""
    index: bytes = b""
    time_index: bytes = b""
    aborted_txns: list[AbortedTxn] = field(default_factory=list)
    batches: int = 0
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1
    stop: Finding | None = None
    """Why the walk ended before the end of the file (invalid batch, torn tail, overflow)."""
    findings: list[Finding] = field(default_factory=list)
    """Refused index entries and producer-state surprises, as warnings or errors."""
    scan: LogScan | None = field(default=None, compare=False, repr=False)
    """What verify's index checks need of the new index files, gathered by the same walk
    (kdump.repair.recheck); None where a key came after its batch had gone by."""

    @property
    def truncated_bytes(self) -> int:
        return self.log_size - self.valid_bytes

    @property
    def overflow(self) -> bool:
        """Kafka throws LogSegmentOffsetOverflowException and splits the segment instead."""
        return self.stop is not None and self.stop.code == Code.LOG_OFFSET_OVERFLOW

    @property
    def index_entries(self) -> int:
        return len(self.index) // _OFFSET_ENTRY.size

    @property
    def time_index_entries(self) -> int:
        return len(self.time_index) // _TIME_ENTRY.size


def recover_segment(
    buf: Buffer,
    base_offset: int,
    path: str,
    config: IndexConfig,
    producers: ProducerStateManager | None = None,
    producer_state_from: int | None = None,
) -> RecoveredSegment:
    """Rebuild one segment's indexes as ``LogSegment.recover`` does.

    ``producers`` carries the partition's producer state into this segment and out of it;
    batches whose last offset is below ``producer_state_from`` (a snapshot's offset) leave it
    alone.
    """
    out = RecoveredSegment(path, base_offset, len(buf))
    recovery = _Recovery(buf, base_offset, path, config, producers, producer_state_from)
    walk = LogWalk(buf, path, until_invalid=True, pager=Pager(buf))
    for run in walk:
        if not recovery.take(run, out):
            break
    else:
        out.stop = _walk_stop(walk.stop, buf, path)
    out.valid_bytes, out.batches = recovery.valid_bytes, recovery.batches
    writer = recovery.writer
    out.max_timestamp, out.offset_of_max_timestamp = writer.max_ts, writer.offset_of_max_ts
    writer.close()
    recovery.want_new_entries()
    out.index, out.time_index = bytes(writer.index.data), bytes(writer.time_index.data)
    scan = recovery.scan
    scan.valid_bytes = recovery.valid_bytes
    out.scan = scan if recovery.gather.complete else None
    out.findings.extend(_refusals(path, writer.index, writer.time_index, config))
    return out


class _Recovery:
    """LogSegment.recover over the walk's runs: whole stretches of batches go to the index
    writer at once; the batches ``flag_batches`` flags (offsets to check, producer batches the
    transaction index needs) go one by one."""

    def __init__(
        self,
        buf: Buffer,
        base_offset: int,
        path: str,
        config: IndexConfig,
        producers: ProducerStateManager | None,
        producer_state_from: int | None,
    ) -> None:
        self.buf, self.base_offset, self.path = buf, base_offset, path
        self.writer = _IndexWriter(base_offset, config)
        self.producers = producers
        self.state_from = -(2**63) if producer_state_from is None else producer_state_from
        self.has_prev, self.prev_last, self.epoch = False, 0, NO_EPOCH_YET
        self.valid_bytes = self.batches = 0
        self.stop: Finding | None = None
        # the recheck's rows of the new index files, gathered as their entries are made
        # room for the most entries the new index files can take, or batches the log holds
        most_batches = len(buf) // (LOG_OVERHEAD + RECORD_OVERHEAD_V0) + 1
        self.gather = IndexGather.growing(
            min(config.max_offset_entries, most_batches), min(config.max_time_entries, most_batches)
        )
        self.scan = LogScan(path, base_offset, len(buf), gather=self.gather)
        self._wanted = (0, 0)  # bytes of each index whose keys the gather has

    def _mode(self) -> Producers:
        if self.producers is None:
            return Producers.IGNORED
        if self.producers.ongoing_txns:  # any producer batch may now matter
            return Producers.ALL
        return Producers.TRANSACTIONAL

    def take(self, run: BatchRun, out: RecoveredSegment) -> bool:
        """Feed one run; False where recovery stops inside it (``out.stop`` says why)."""
        before = self.batches
        going = self._take(run, out)
        # the run's new index entries first: the gather must know their keys before it
        # sees the batches they name
        self.want_new_entries()
        if self.batches > before:
            self.scan.take(run.slice(0, self.batches - before))
        return going

    def _take(self, run: BatchRun, out: RecoveredSegment) -> bool:
        done = 0
        while done < run.n:
            part = run.slice(done, run.n)
            mode = self._mode()
            flags = flag_batches(
                part, self.base_offset, self.has_prev, self.prev_last, self.epoch, mode
            )
            start = 0
            for i in flags.flagged:
                self._bulk(part.slice(start, i))
                if not self._one(part, i, out):
                    return False
                start = i + 1
                if self._mode() is not mode:  # a transaction opened or closed: flag anew
                    break
            else:
                self._bulk(part.slice(start, part.n))
                return True
            done += start
        return True

    def _bulk(self, part: BatchRun) -> None:
        """Batches that need nothing but index entries."""
        if not part.n:
            return
        if speedups.native() is not None and speedups.fits_int64(self.base_offset):
            self.writer.run(part.position, part.last_offset, part.max_timestamp)
        else:
            self.writer.batches(part.position, part.last_offset, part.max_timestamp)
        self._advance(part, part.n - 1)

    def _one(self, part: BatchRun, i: int, out: RecoveredSegment) -> bool:
        """A flagged batch: the offset overflow recovery stops at, then producer state."""
        position, last = part.position[i], part.last_offset[i]
        if not 0 <= last - self.base_offset <= INT32_MAX:
            out.stop = _stop(
                "LOG_OFFSET_OVERFLOW",
                self.path,
                position,
                f"offset {last} cannot be stored relative to base offset {self.base_offset}: "
                "Kafka throws LogSegmentOffsetOverflowException and splits the segment",
                offset=last,
            )
            return False
        self.writer.batches((position,), (last,), (part.max_timestamp[i],))
        producers = self.producers
        if (
            producers is not None
            and part.magic[i] >= 2
            and part.producer_id[i] >= 0
            and last >= self.state_from
        ):
            batch = part.batch(i)
            assert isinstance(batch, RecordBatch)
            result = producers.update(self.buf, batch, self.path)
            if isinstance(result, CompletedTxn):
                if result.is_aborted:
                    out.aborted_txns.append(result.aborted_txn())
            elif isinstance(result, InvalidTxnState):
                out.findings.append(invalid_txn_state(result))
        self._advance(part.slice(i, i + 1), 0)
        return True

    def want_new_entries(self) -> None:
        """The keys of the entries made since the last call go to the gather."""
        index, time_index = self.writer.index, self.writer.time_index
        done_index, done_time = self._wanted
        if len(index.data) == done_index and len(time_index.data) == done_time:
            return
        self.gather.want(
            _new_keys(index.data, done_index, self.base_offset, False),
            _new_keys(time_index.data, done_time, self.base_offset, True),
        )
        self._wanted = (len(index.data), len(time_index.data))

    def _advance(self, part: BatchRun, last: int) -> None:
        self.batches += last + 1
        self.valid_bytes = part.position[last] + part.size[last]
        self.has_prev, self.prev_last = True, part.last_offset[last]
        self.epoch = part.partition_leader_epoch[last]


def _new_keys(data: bytearray, done: int, base_offset: int, is_time: bool) -> array[int]:
    entry = _TIME_ENTRY if is_time else _OFFSET_ENTRY
    return entry_keys(data[done:], (len(data) - done) // entry.size, base_offset, is_time)


def _walk_stop(stop: Stop | None, buf: Buffer, path: str) -> Finding | None:
    """Why LogSegment.recover's walk ended before the end of the file, as a finding."""
    if stop is None or stop.reason in (StopReason.END, StopReason.LIMIT):
        return None
    position = stop.position
    if stop.reason is StopReason.INVALID_BATCH:
        batch = read_batch(buf, position, len(buf), path)
        assert batch is not None
        return _invalid(path, position, batch, buf)
    damage = stop_damage(stop, buf)
    assert damage is not None
    code, severity, message = damage
    return Finding(code, severity, path, message, position=position)


def _stop(code: str, path: str, position: int, message: str, offset: int | None = None) -> Finding:
    return Finding(code, Severity.ERROR, path, message, offset=offset, position=position)


def _invalid(path: str, position: int, batch: Batch, buf: Buffer) -> Finding:
    return _stop(
        "LOG_CRC_MISMATCH",
        path,
        position,
        f"batch at offset {batch.base_offset}: stored crc {batch.crc}, "
        f"computed {batch.compute_checksum(buf)}",
        offset=batch.base_offset,
    )


def _refusals(
    path: str, index: _OffsetIndexBuilder, time_index: _TimeIndexBuilder, config: IndexConfig
) -> list[Finding]:
    out = []
    if index.refused_full:
        out.append(
            Finding(
                "REPAIR_INDEX_FULL",
                Severity.WARNING,
                path,
                f"the offset index filled its {index.max_entries} entries (max index size "
                f"{config.max_index_size}); {index.refused_full} later entries left out, as "
                "Kafka's OffsetIndex refuses them (the broker would have rolled the segment)",
            )
        )
    if time_index.refused_full:
        out.append(
            Finding(
                "REPAIR_TIMEINDEX_FULL",
                Severity.WARNING,
                path,
                _time_index_full(time_index.max_entries, config.max_index_size)
                + f"; {time_index.refused_full} later entries left out",
            )
        )
    if index.refused_order is not None:
        offset, position = index.refused_order
        out.append(
            Finding(
                "LOG_OFFSET_NOT_INCREASING",
                Severity.ERROR,
                path,
                f"index entry for offset {offset} refused: not above the last indexed offset "
                "(Kafka's recovery throws InvalidOffsetException)",
                offset=offset,
                position=position,
            )
        )
    if time_index.refused_order is not None:
        timestamp, offset = time_index.refused_order
        out.append(
            Finding(
                "LOG_OFFSET_NOT_INCREASING",
                Severity.ERROR,
                path,
                f"time index entry ({timestamp}, {offset}) refused: its offset is below the "
                "last entry's (Kafka's recovery throws InvalidOffsetException)",
                offset=offset,
            )
        )
    return out


def largest_timestamp(buf: Buffer, path: str) -> tuple[int, int]:
    """(max timestamp, first offset holding it) over the log's batches, headers only."""
    max_ts, offset = NO_TIMESTAMP, -1
    try:
        for batch in iter_batches(buf, path):
            if batch.max_timestamp > max_ts:
                max_ts, offset = batch.max_timestamp, batch.last_offset
    except CorruptBatchError:
        pass
    return max_ts, offset


__all__ = [
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "DEFAULT_MAX_INDEX_SIZE",
    "IndexConfig",
    "IndexConfigs",
    "RecoveredSegment",
    "largest_timestamp",
    "recover_segment",
]


def _time_index_full(max_entries: int, max_index_size: int) -> str:
    """TimeIndex.isFull is entries >= maxEntries - 1: a size below two entries leaves no room."""
    if max_entries > 1:
        return f"the time index filled its {max_entries - 1} entries before the closing one"
    return (
        f"the time index has no room for an entry before the closing one at max index size "
        f"{max_index_size} ({max_entries} of 12 bytes)"
    )
