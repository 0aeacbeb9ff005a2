"""Checks of a .log file, in the single pass (the walk) that also gathers what the index checks
need (kdump.checks.gather): the index files are checked without reading the log again, and
memory does not grow with the number of batches.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple, Protocol

from kdump import speedups
from kdump.checks import fixes
from kdump.checks.findings import Finding, Severity
from kdump.checks.gather import IndexGather
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.crc import Buffer
from kdump.errors import CodecError, InvalidWrapperError, KdumpError
from kdump.format.batch import Batch, LegacyRecordBatch, RecordBatch
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES, decompress
from kdump.format.layout import (
    INT32_MAX,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
)
from kdump.format.legacy import legacy_wrapper_error
from kdump.format.walk import NO_EPOCH_YET, BatchRun, Stop, StopReason, flag_batches
from kdump.storage.records import FileRecords

SPLIT_FAILS = (
    "when the broker recovers this segment (after an unclean shutdown, or with its index "
    "missing) LogSegment.recover throws LogSegmentOffsetOverflowException, "
    "LocalLog.splitOverflowedSegment then fails its hasOverflow() requirement (it splits only "
    "offsets past the top): the partition does not load and the broker stops starting "
    "(LogManager.loadLogs rethrows the IllegalArgumentException)"
)
ZERO_TAIL = "LOG_ZERO_TAIL"
RECOVERED = frozenset(
    (
        "LOG_CRC_MISMATCH",
        "LOG_CORRUPT_BATCH",
        "LOG_UNKNOWN_MAGIC",
        "LOG_TRUNCATED_TAIL",
        ZERO_TAIL,
        "LOG_OFFSET_BELOW_BASE",
    )
)
"""What ``kdump recover`` removes: the cut at the first invalid batch (LogSegment.recover), and
the rename of a segment named above its batches (verify offers it only where it works)."""
_KEPT = (
    "the broker's recovery keeps this batch (its CRC is valid; recovery does not decode "
    "records) and kdump recover leaves it too: consumers fail on it; move consumer groups past "
    "it (kafka-consumer-groups --reset-offsets) or delete the records up to it "
    "(kafka-delete-records)"
)
NO_REPAIR = {
    "LOG_OFFSET_OVERFLOW": (
        "kdump recover leaves it: the broker splits the segment when it recovers it "
        "(LocalLog.splitOverflowedSegment, after an unclean shutdown or with its .index missing)"
    ),
    "LOG_OFFSET_NOT_INCREASING": (
        "kdump recover leaves it (its CRC is valid): the broker keeps it, unless its index entry "
        "is refused while recovering (InvalidOffsetException), when it empties the whole segment;"
        " consumers may see offsets repeat: compare the copies (kdump dump) before the broker "
        "starts"
    ),
    "LOG_RECORD_COUNT_MISMATCH": _KEPT,
    "LOG_RECORD_OFFSET_OUT_OF_BATCH": _KEPT,
    "LOG_CORRUPT_RECORD": _KEPT,
    "LOG_CRC_MISMATCH": (
        "the broker's recovery checks the wrapper's CRC only and keeps it, as kdump recover "
        "does: consumers that check CRCs fail on this message"
    ),
    "LOG_MAX_TIMESTAMP_MISMATCH": (
        "nothing to repair for reads: time lookups, rolls and retention go by the batch's "
        "max timestamp"
    ),
}
"""What an error kdump recover does not remove means, and what the operator can do."""
BELOW_BASE_LOADS = (
    "the broker loads it (recovery checks a batch's last offset only), but reads of the "
    "offsets below the file name go to the previous segment"
)
STOP_CODES = frozenset(
    ("LOG_CRC_MISMATCH", "LOG_CORRUPT_BATCH", "LOG_UNKNOWN_MAGIC", "LOG_TRUNCATED_TAIL", ZERO_TAIL)
)
"""The findings of the places where the broker's recovery cuts a segment."""
_NON_ZERO = re.compile(rb"[^\x00]")


class FirstBatch(NamedTuple):
    """A segment's first batch, as its header says (the roll anchor of
    LogSegment.timeWaitedForRoll, and the witness of the previous segment's roll)."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int
    magic: int


class RunConsumer(Protocol):
    """Another reader of the batches riding on a segment's walk (kdump txn's producer state):
    it sees every run the walk reads, in order, then where the walk stopped."""

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None: ...

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None: ...


class Riders:
    """Several readers riding on one walk (kdump report: the producer state replay and the audit
    of a compacted log), each told of every run and of the end, in order."""

    def __init__(self, *riders: RunConsumer) -> None:
        self.riders = riders

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None:
        for rider in self.riders:
            rider.take(log, run, base_offset)

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None:
        for rider in self.riders:
            rider.end(log, base_offset, stop)


class LogScan:
    """What one pass over a .log learned: totals and the first and last of what matters, never
    a value per batch (memory stays flat whatever the number of batches), and what the index
    checks gathered (``gather``).

    A plain class, not a dataclass: every command that reads a log builds this module, and a
    dataclass of this many fields costs more start-up to define than the walk of a small
    partition (issue 45). ``FACTS`` names what a state file keeps (kdump.checks.verify_state);
    two scans are equal when their facts but ``stop`` are."""

    FACTS = (
        "path", "base_offset", "size", "batches", "first_offset", "last_offset",
        "min_timestamp", "max_timestamp", "valid_bytes", "first_invalid", "epoch_starts",
        "recovered_last_offset", "records", "wrappers_not_counted", "gaps", "legacy_batches",
        "transactional_batches", "delete_horizon_batches", "first_batch",
        "max_timestamp_after_first", "index_end_position", "max_timestamp_to_index_end",
        "last_position", "last_epoch", "stop",
    )  # fmt: skip
    __slots__ = (*FACTS, "gather")

    def __init__(
        self, path: str, base_offset: int, size: int, gather: IndexGather | None = None
    ) -> None:
        self.path, self.base_offset, self.size = path, base_offset, size
        self.batches = 0
        self.first_offset: int | None = None
        """The first batch's base offset."""
        self.last_offset: int | None = None
        """The last batch's last offset."""
        self.min_timestamp = NO_TIMESTAMP
        """The smallest batch max timestamp (the segment's first, as verify's summary shows
        it)."""
        self.max_timestamp = NO_TIMESTAMP
        self.valid_bytes = 0
        """End of the last whole batch: where iteration stopped."""
        self.first_invalid: int | None = None
        """Position of the first batch the broker's recovery would truncate at."""
        self.epoch_starts: list[tuple[int, int]] = []
        """(partition leader epoch, first offset) wherever the epoch changes between batches."""
        self.recovered_last_offset: int | None = None
        """The last offset before ``first_invalid`` (None: no whole batch before it): where the
        log ends once recovery cuts it there."""
        self.records = 0
        """Decoded with --deep; without, as the headers count them (``header_records``)."""
        self.wrappers_not_counted = 0
        """Compressed v0/v1 wrappers whose records were not counted (only --deep
        decompresses)."""
        self.gaps = 0
        self.legacy_batches = 0
        self.transactional_batches = 0
        """Transactional data and control batches: a producer state replay has work only
        here."""
        self.delete_horizon_batches = 0
        """Batches carrying a delete horizon: the cleaner rewrote them."""
        self.first_batch: FirstBatch | None = None
        self.max_timestamp_after_first = NO_TIMESTAMP
        """The largest batch max timestamp of every batch but the first."""
        self.index_end_position = -1
        """The position of the offset index's last written entry (-1: none)."""
        self.max_timestamp_to_index_end = NO_TIMESTAMP
        """The largest batch max timestamp of the batches at or before
        ``index_end_position``."""
        self.last_position = -1
        """Where the last batch starts (-1: no batch)."""
        self.last_epoch = NO_EPOCH_YET
        """The partition leader epoch the walk ended in (what a walk resumed after it
        carries)."""
        self.stop: Stop | None = None
        """Why the walk ended (the end of the file, or damage)."""
        self.gather = gather

    def resumed(self, path: str, size: int, gather: IndexGather | None) -> LogScan:
        """A copy of this scan's facts to go on from (``scan_log``'s ``prior``): the file's
        path and size now, its own gather, no stop yet."""
        scan = LogScan(path, self.base_offset, size, gather)
        for name in self.FACTS[3:-1]:
            setattr(scan, name, getattr(self, name))
        scan.epoch_starts = list(self.epoch_starts)
        return scan

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogScan):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FACTS if n != "stop")

    __hash__ = None  # type: ignore[assignment]  # mutable: as a dataclass's

    def __repr__(self) -> str:
        return f"LogScan({self.path!r}, base_offset={self.base_offset}, batches={self.batches})"

    def take(self, run: BatchRun) -> None:
        """Count a run of the walk in the totals, and feed the index gather."""
        least, greatest = run.timestamp_range() or (self.min_timestamp, self.max_timestamp)
        if self.first_offset is None:
            self.first_offset = run.base_offset[0]
            self.min_timestamp = least
            self.first_batch = FirstBatch(
                run.position[0],
                run.base_offset[0],
                run.last_offset[0],
                run.size[0],
                run.max_timestamp[0],
                run.magic[0],
            )
            rest = run.slice(1, run.n).timestamp_range() if run.n > 1 else None
        else:
            self.min_timestamp = min(self.min_timestamp, least)
            rest = (least, greatest)
        if rest is not None:
            self.max_timestamp_after_first = max(self.max_timestamp_after_first, rest[1])
        self.max_timestamp = max(self.max_timestamp, greatest)
        if run.position[0] <= self.index_end_position:
            k = bisect_right(run.position, self.index_end_position)
            up_to = (least, greatest) if k == run.n else run.timestamp_range(k)
            if up_to is not None:
                self.max_timestamp_to_index_end = max(self.max_timestamp_to_index_end, up_to[1])
        self.transactional_batches += run.transactional_batches()
        self.delete_horizon_batches += run.delete_horizon_batches()
        self.last_offset = run.last_offset[-1]
        self.last_position = run.position[-1]
        self.batches += run.n
        if self.gather is not None:
            self.gather.feed(run)


class _State:
    """Running values of the scan that the slow path needs."""

    def __init__(
        self,
        scan: LogScan,
        sink: FindingSink,
        directory: str,
        log: FileRecords,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> None:
        self.scan, self.sink, self.directory, self.buf = scan, sink, directory, log.buf
        self.max_batch_bytes = max_batch_bytes
        self.first_gap: tuple[int, int] | None = None

    def finding(
        self,
        code: str,
        severity: Severity,
        message: str,
        *,
        offset: int | None = None,
        position: int | None = None,
        repaired: bool = True,
    ) -> None:
        """``repaired``: False where ``kdump recover`` leaves the finding's cause in place even
        though its code is one recover repairs (a v0/v1 inner message's CRC)."""
        repairs = code in RECOVERED and repaired
        fix = fixes.recover(self.directory) if repairs else None
        if severity is Severity.ERROR and not repairs and code in NO_REPAIR:
            message = f"{message}; {NO_REPAIR[code]}"
        self.sink.add(Finding(code, severity, self.scan.path, message, offset, position, fix))

    def invalid(self, position: int, prev_last: int | None) -> None:
        """The batch at ``position`` is one recovery refuses; ``prev_last``: the last offset
        of the batch before it (None: none)."""
        if self.scan.first_invalid is None:
            self.scan.first_invalid = position
            self.scan.recovered_last_offset = prev_last


def _offset_anomalies(st: _State, position: int, base: int, last: int, prev: int | None) -> None:
    """The findings of a batch whose offsets ``flag_batches`` flagged (gaps are counted there)."""
    seg_base = st.scan.base_offset
    if base < seg_base:
        st.finding(
            "LOG_OFFSET_BELOW_BASE",
            Severity.ERROR,
            f"batch at offset {base} lies below the segment's base offset {seg_base}: "
            + (SPLIT_FAILS if last < seg_base else BELOW_BASE_LOADS),
            offset=base,
            position=position,
        )
    high = max(base, last)  # last is below base when base + lastOffsetDelta wrapped
    if high - seg_base > INT32_MAX:
        st.finding(
            "LOG_OFFSET_OVERFLOW",
            Severity.ERROR,
            f"offset {high} is more than 2^31-1 past the base offset {seg_base}: "
            "index entries cannot address it",
            offset=high,
            position=position,
        )
    if last < base:
        st.finding(
            "LOG_OFFSET_NOT_INCREASING",
            Severity.ERROR,
            f"batch's last offset {last} is below its base offset {base}",
            offset=base,
            position=position,
        )
    if prev is not None and base <= prev:
        st.finding(
            "LOG_OFFSET_NOT_INCREASING",
            Severity.ERROR,
            f"batch starts at offset {base}, not above the previous batch's last offset {prev}",
            offset=base,
            position=position,
        )


def _crc_mismatch(st: _State, batch: Batch, computed: int, prev_last: int | None) -> None:
    st.invalid(batch.position, prev_last)
    st.finding(
        "LOG_CRC_MISMATCH",
        Severity.ERROR,
        f"batch at offset {batch.base_offset}: stored crc {batch.crc}, computed {computed}",
        offset=batch.base_offset,
        position=batch.position,
    )


def scan_log(
    log: FileRecords,
    base_offset: int,
    options: VerifyOptions,
    sink: FindingSink,
    directory: str,
    gather: IndexGather | None = None,
    consumer: RunConsumer | None = None,
    index_end_position: int = -1,
    prior: LogScan | None = None,
) -> LogScan:
    """Walk every batch once: CRCs, offsets, sizes; deep record checks with options.deep;
    what the index checks need goes to ``gather``; ``consumer`` sees every run too.
    ``index_end_position``: the offset index's last entry's position (explain's evidence).

    ``prior``: what a walk of the file's first ``prior.valid_bytes`` learned, verified clean
    and unchanged since (an active segment's verified prefix, kdump.checks.verify_state): the
    walk goes on from there, its totals and the batch before carried over, as if it had read
    the file from the start."""
    scan = LogScan(log.path, base_offset, log.size, gather=gather)
    start, has_prev, prev_last, epoch = 0, False, 0, NO_EPOCH_YET
    if prior is not None:
        scan = prior.resumed(log.path, log.size, gather)
        start, has_prev, epoch = prior.valid_bytes, prior.last_offset is not None, prior.last_epoch
        prev_last = prior.last_offset if prior.last_offset is not None else 0
        if index_end_position >= prior.last_position:  # every batch of the prefix is below it
            scan.max_timestamp_to_index_end = prior.max_timestamp
    scan.index_end_position = index_end_position
    st = _State(scan, sink, directory, log, options.max_batch_bytes)
    walk = log.walk(start, max_batch_bytes=options.max_batch_bytes)
    for run in walk:
        flags = flag_batches(run, base_offset, has_prev, prev_last, epoch)
        carried = prev_last if has_prev else None
        if options.deep:
            # findings in batch order whatever the runs' bounds: a batch's own, then its records'
            flagged, opened = set(flags.flagged), _records_to_open(st, log, run, options)
            for i in sorted(flagged | opened):
                if i in flagged:
                    _attend(st, run, i, carried, epoch)
                if i in opened:
                    _deep_checks(st, log, run.batch(i), options)
        else:
            for i in flags.flagged:
                _attend(st, run, i, carried, epoch)
            counted, wrappers = run.header_records()
            scan.records += counted
            scan.wrappers_not_counted += wrappers
        scan.gaps += flags.gaps
        st.first_gap = st.first_gap or flags.first_gap
        scan.take(run)
        if consumer is not None:
            consumer.take(log, run, base_offset)
        has_prev, prev_last, epoch = flags.has_prev, flags.prev_last, flags.epoch
    scan.last_epoch = epoch
    stop = walk.stop
    assert stop is not None
    scan.stop = stop
    if consumer is not None:
        consumer.end(log, base_offset, stop)
    scan.valid_bytes = stop.position
    damage = stop_damage(stop, st.buf)
    if damage is not None:
        st.invalid(stop.position, scan.last_offset)
        st.finding(*damage, position=stop.position)
    _tail_and_size(st, options)
    return scan


def stop_damage(stop: Stop, buf: Buffer) -> tuple[str, Severity, str] | None:
    """What the bytes are where a walk ended before the end of its range, other than at a batch
    whose CRC does not match (that batch is its own finding): the code, severity and message."""
    if stop.reason not in (
        StopReason.TRUNCATED_TAIL,
        StopReason.CORRUPT_BATCH,
        StopReason.UNKNOWN_MAGIC,
    ):
        return None
    end = stop.position + stop.remaining
    if stop.remaining >= LOG_OVERHEAD and _NON_ZERO.search(buf, stop.position, end) is None:
        # a power loss leaves the file's new length on disk without the data (or the broker
        # preallocated the segment, log.preallocate): zeros, not a torn batch (whose size
        # field, within its first 12 bytes, is not zero; fewer bytes may be a batch's start)
        return (
            ZERO_TAIL,
            Severity.WARNING,
            f"{stop.remaining} zero bytes after the last batch, to the end of the file: space "
            "the broker preallocated (log.preallocate) or a write a power loss did not finish; "
            "they hold no records, and the broker's recovery truncates them",
        )
    if stop.error is not None:
        code = (
            "LOG_UNKNOWN_MAGIC" if stop.reason is StopReason.UNKNOWN_MAGIC else "LOG_CORRUPT_BATCH"
        )
        return code, Severity.ERROR, f"{stop.error.reason}; nothing after it can be read"
    return (
        "LOG_TRUNCATED_TAIL",
        Severity.ERROR,
        f"{stop.remaining} bytes after the last whole batch are a torn, partial batch",
    )


def gather_log(log: FileRecords, base_offset: int, end: int | None, gather: IndexGather) -> LogScan:
    """What the index checks need from the batches before ``end``, headers only (no CRCs, no
    findings): for checking index files written after the log was verified (repairs)."""
    scan = LogScan(log.path, base_offset, log.size, gather=gather)
    walk = log.walk(0, end, check_crc=False)
    for run in walk:
        scan.take(run)
    assert walk.stop is not None
    scan.valid_bytes = walk.stop.position
    return scan


def _attend(
    st: _State, run: BatchRun, i: int, carried_prev: int | None, carried_epoch: int
) -> None:
    """The findings of batch i of ``run``, which ``flag_batches`` flagged."""
    position, base, last = run.position[i], run.base_offset[i], run.last_offset[i]
    prev = run.last_offset[i - 1] if i else carried_prev
    legacy = run.magic[i] < 2
    if legacy:
        st.scan.legacy_batches += 1
    else:
        before = run.partition_leader_epoch[i - 1] if i else carried_epoch
        if run.partition_leader_epoch[i] != before:
            st.scan.epoch_starts.append((run.partition_leader_epoch[i], base))
    if run.valid[i] == 0:
        batch = run.batch(i)
        _crc_mismatch(st, batch, batch.compute_checksum(st.buf), prev)
    if legacy:
        refused = legacy_wrapper_error(st.buf, run.batch(i), st.scan.path, st.max_batch_bytes)
        if refused is not None:
            _legacy_wrapper_invalid(st, run.batch(i), refused)
    _offset_anomalies(st, position, base, last, prev)


def _tail_and_size(st: _State, options: VerifyOptions) -> None:
    scan = st.scan
    if st.first_gap is not None:
        a, b = st.first_gap
        st.finding(
            "LOG_OFFSET_GAP",
            Severity.INFO,
            f"{scan.gaps} gap(s) between batch offsets, first {a} -> {b} (normal after compaction)",
            offset=b,
        )
    # larger than its topic's segment.bytes: the partition's check (kdump.checks.partition)


def _records_to_open(
    st: _State, log: FileRecords, run: BatchRun, options: VerifyOptions
) -> set[int]:
    """The batches of ``run`` whose records _deep_checks must decode: all of them in Python;
    with the C code only those it finds something in (or cannot read: legacy messages), the
    others' records counted in C without a Python object each."""
    native = speedups.native()
    if native is None:
        return set(range(run.n))
    columns, opened, i = tuple(run.columns()), set(), 0
    while i < run.n:
        checked = native.deep_check(log.buf, columns, i, None)
        st.scan.records += checked.records
        opened.update(checked.flagged)
        i = checked.next_index
        if i >= run.n:
            break
        batch = run.batch(i)  # compressed, or a legacy message
        payload = _payload(log, batch, options) if batch.magic >= 2 else None
        if payload is None:
            opened.add(i)
        else:
            checked = native.deep_check(log.buf, columns, i, payload)
            st.scan.records += checked.records
            opened.update(checked.flagged)
        i += 1
    return opened


def _payload(log: FileRecords, batch: Batch, options: VerifyOptions) -> bytes | bytearray | None:
    """A v2 batch's records, decompressed; None when they do not decompress (the Python
    checks say why)."""
    raw = memoryview(log.buf)[batch.position + RECORD_BATCH_OVERHEAD : batch.end]
    try:
        return decompress(batch.compression, raw, options.max_batch_bytes)
    except CodecError:
        return None


def _deep_checks(st: _State, log: FileRecords, batch: Batch, options: VerifyOptions) -> None:
    """Decode every record: counts, offsets inside the batch, max timestamp."""
    count, max_ts = 0, NO_TIMESTAMP
    # A v1 wrapper at offset 0 (librdkafka's produce format) keeps its inner offsets 0..n-1,
    # past the wrapper's own: Kafka reads it so, and so does every consumer.
    zero_wrapper = isinstance(batch, LegacyRecordBatch) and batch.offset == 0 and batch.magic == 1
    try:
        for record in log.records(batch, options.max_batch_bytes):
            count += 1
            max_ts = max(max_ts, record.timestamp)
            if zero_wrapper:
                continue
            if not batch.base_offset <= record.offset <= batch.last_offset:
                st.finding(
                    "LOG_RECORD_OFFSET_OUT_OF_BATCH",
                    Severity.ERROR,
                    f"record offset {record.offset} outside its batch "
                    f"[{batch.base_offset}, {batch.last_offset}]",
                    offset=record.offset,
                    position=batch.position,
                )
            if record.is_valid is False:
                _crc_mismatch_inner(st, batch, record.offset)
    except InvalidWrapperError:
        return  # reported by the scan, deep or not
    except KdumpError as e:
        # recovery checks CRCs, never records (LogSegment.recover): no cut here, kept as is
        held = _records_held(log, batch, options)
        if held is not None and held != batch.records_count:
            st.finding(
                "LOG_RECORD_COUNT_MISMATCH",
                Severity.ERROR,
                f"batch says {batch.records_count} records, holds {held}",
                offset=batch.base_offset,
                position=batch.position,
            )
            return
        st.finding(
            "LOG_CORRUPT_RECORD",
            Severity.ERROR,
            e.reason if hasattr(e, "reason") else str(e),
            offset=batch.base_offset,
            position=batch.position,
        )
        return
    st.scan.records += count
    expected = batch.records_count
    if expected is not None and count != expected:
        st.finding(
            "LOG_RECORD_COUNT_MISMATCH",
            Severity.ERROR,
            f"batch says {expected} records, holds {count}",
            offset=batch.base_offset,
            position=batch.position,
        )
    stamped = batch.magic >= 1 and batch.timestamp_type != LOG_APPEND_TIME
    if stamped and count and max_ts > batch.max_timestamp:
        st.finding(
            "LOG_MAX_TIMESTAMP_MISMATCH",
            Severity.ERROR,
            f"a record has timestamp {max_ts}, above the batch's max timestamp "
            f"{batch.max_timestamp}",
            offset=batch.base_offset,
            position=batch.position,
        )
    elif stamped and count and max_ts < batch.max_timestamp and batch.magic >= 2:
        st.finding(
            "LOG_MAX_TIMESTAMP_MISMATCH",
            Severity.INFO,
            f"records' largest timestamp {max_ts} is below the batch's max timestamp "
            f"{batch.max_timestamp} (records removed by compaction keep the batch's)",
            offset=batch.base_offset,
            position=batch.position,
        )


def _records_held(log: FileRecords, batch: Batch, options: VerifyOptions) -> int | None:
    """How many whole records a v2 batch's payload holds when they fill it exactly, else None.

    Decoding stops after recordsCount records, so a wrong count shows up as bytes left over
    or a record running past the end (Kafka: "Incorrect declared batch size"); counting the
    records that do decode tells a miscounted batch from a damaged payload.
    """
    if not isinstance(batch, RecordBatch):
        return None
    payload = memoryview(log.buf)[batch.position + RECORD_BATCH_OVERHEAD : batch.end]
    try:
        size = len(decompress(batch.compression, payload, options.max_batch_bytes))
    except CodecError:
        return None
    held = used = 0
    try:
        for record in log.records(batch._replace(records_count=INT32_MAX), options.max_batch_bytes):
            held += 1
            used += record.size_in_bytes
    except KdumpError:
        pass
    return held if used == size else None


def _crc_mismatch_inner(st: _State, batch: Batch, offset: int) -> None:
    st.finding(
        "LOG_CRC_MISMATCH",
        Severity.ERROR,
        f"inner message at offset {offset} of the wrapper has a bad crc",
        offset=offset,
        position=batch.position,
        repaired=False,
    )


def _legacy_wrapper_invalid(st: _State, batch: Batch, error: KdumpError) -> None:
    """A v0/v1 wrapper Kafka's deep iterator refuses: no consumer can read it, no broker serve it.

    Recovery keeps it (the broker checks only the wrapper's CRC), so no repair is offered.
    """
    reason = error.reason if isinstance(error, InvalidWrapperError) else str(error)
    st.sink.add(
        Finding(
            "LOG_LEGACY_WRAPPER_INVALID",
            Severity.ERROR,
            st.scan.path,
            f"{reason} (Kafka refuses this compressed message set)",
            batch.base_offset,
            batch.position,
            None,
        )
    )
