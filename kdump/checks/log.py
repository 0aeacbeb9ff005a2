"""Checks of a .log file, in the single pass (the walk) that also gathers what the index checks
need (kdump.checks.gather): the index files are checked without reading the log again, and
memory does not grow with the number of batches.
"""

from __future__ import annotations

from kdump import speedups
from kdump.checks import fixes
from kdump.checks.codes import Code
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
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
)
from kdump.format.walk import BatchRun, Flags, Stop
from kdump.log_scan import LogScan, RunConsumer, scan_segment, tail_damage
from kdump.storage.records import FileRecords

SPLIT_FAILS = (
    "when the broker recovers this segment (after an unclean shutdown, or with its index "
    "missing) LogSegment.recover throws LogSegmentOffsetOverflowException, "
    "LocalLog.splitOverflowedSegment then fails its hasOverflow() requirement (it splits only "
    "offsets past the top): the partition does not load and the broker stops starting "
    "(LogManager.loadLogs rethrows the IllegalArgumentException)"
)
RECOVERED = frozenset(
    (
        Code.LOG_CRC_MISMATCH,
        Code.LOG_CORRUPT_BATCH,
        Code.LOG_UNKNOWN_MAGIC,
        Code.LOG_TRUNCATED_TAIL,
        Code.LOG_ZERO_TAIL,
        Code.LOG_OFFSET_BELOW_BASE,
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
    Code.LOG_OFFSET_OVERFLOW: (
        "kdump recover leaves it: the broker splits the segment when it recovers it "
        "(LocalLog.splitOverflowedSegment, after an unclean shutdown or with its .index missing)"
    ),
    Code.LOG_OFFSET_NOT_INCREASING: (
        "kdump recover leaves it (its CRC is valid): the broker keeps it, unless its index entry "
        "is refused while recovering (InvalidOffsetException), when it empties the whole segment;"
        " consumers may see offsets repeat: compare the copies (kdump dump) before the broker "
        "starts"
    ),
    Code.LOG_RECORD_COUNT_MISMATCH: _KEPT,
    Code.LOG_RECORD_OFFSET_OUT_OF_BATCH: _KEPT,
    Code.LOG_CORRUPT_RECORD: _KEPT,
    Code.LOG_CRC_MISMATCH: (
        "the broker's recovery checks the wrapper's CRC only and keeps it, as kdump recover "
        "does: consumers that check CRCs fail on this message"
    ),
    Code.LOG_MAX_TIMESTAMP_MISMATCH: (
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
    (
        Code.LOG_CRC_MISMATCH,
        Code.LOG_CORRUPT_BATCH,
        Code.LOG_UNKNOWN_MAGIC,
        Code.LOG_TRUNCATED_TAIL,
        Code.LOG_ZERO_TAIL,
    )
)
"""The findings of the places where the broker's recovery cuts a segment."""


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


def _crc_mismatch(st: _State, batch: Batch, computed: int) -> None:
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
    """The segment's one walk (kdump.log_scan.scan_segment: what the model learns) with
    verify's checks riding on it: CRCs, offsets, sizes; deep record checks with options.deep;
    what the index checks need goes to ``gather``; ``consumer`` sees every run too.
    ``index_end_position``: the offset index's last entry's position (explain's evidence).

    ``prior``: what a walk of the file's first ``prior.valid_bytes`` learned, verified clean
    and unchanged since (an active segment's verified prefix, kdump.checks.verify_state): the
    walk goes on from there, its totals and the batch before carried over, as if it had read
    the file from the start."""
    scan = LogScan(log.path, base_offset, log.size, gather=gather)
    if prior is not None:
        scan = prior.resumed(log.path, log.size, gather)
        if index_end_position >= prior.last_position:  # every batch of the prefix is below it
            scan.max_timestamp_to_index_end = prior.max_timestamp
    scan.index_end_position = index_end_position
    st = _State(scan, sink, directory, log, options.max_batch_bytes)

    def check(run: BatchRun, flags: Flags, carried: int | None, epoch: int) -> None:
        if options.deep:
            # findings in batch order whatever the runs' bounds: a batch's own, then its records'
            flagged, opened = set(flags.flagged), _records_to_open(st, log, run, options)
            for i in sorted(flagged | opened):
                if i in flagged:
                    _attend(st, run, i, carried)
                if i in opened:
                    _deep_checks(st, log, run.batch(i), options)
        else:
            for i in flags.flagged:
                _attend(st, run, i, carried)
            counted, wrappers = run.header_records()
            scan.records += counted
            scan.wrappers_not_counted += wrappers
        st.first_gap = st.first_gap or flags.first_gap

    scan_segment(log, scan, consumer, check, options.max_batch_bytes)
    assert scan.stop is not None
    damage = stop_damage(scan.stop, st.buf)
    if damage is not None:
        st.finding(*damage, position=scan.stop.position)
    _tail_and_size(st, options)
    return scan


def stop_damage(stop: Stop, buf: Buffer) -> tuple[str, Severity, str] | None:
    """The model's ``tail_damage`` as verify's finding: the code, severity and message (zeros
    are a warning, the rest errors)."""
    damage = tail_damage(stop, buf)
    if damage is None:
        return None
    if not damage.lost:  # zeros: nothing was written there
        return Code.LOG_ZERO_TAIL, Severity.WARNING, damage.message
    return getattr(Code, damage.name), Severity.ERROR, damage.message


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


def _attend(st: _State, run: BatchRun, i: int, carried_prev: int | None) -> None:
    """The findings of batch i of ``run``, which ``flag_batches`` flagged (what the model
    learns of it, LogScan.attend, is learnt already)."""
    position, base, last = run.position[i], run.base_offset[i], run.last_offset[i]
    prev = run.last_offset[i - 1] if i else carried_prev
    if run.valid[i] == 0:
        batch = run.batch(i)
        _crc_mismatch(st, batch, batch.compute_checksum(st.buf))
    if run.magic[i] < 2:
        from kdump.format.legacy import legacy_wrapper_error  # v0/v1 batches only

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
