"""Checks of a segment's .index and .timeindex against what the log scan learned."""

from __future__ import annotations

import itertools
import operator
import struct
from typing import Any, TypeVar

from kdump import speedups
from kdump.checks import fixes
from kdump.checks.findings import Finding, Severity
from kdump.checks.gather import INT64_MAX, ROW, IndexGather
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.format.index import AbstractIndex, OffsetIndex, entry_due
from kdump.format.timeindex import TimeIndex
from kdump.log_scan import LogScan
from kdump.tuples import NamedTuple


def _add(
    sink: FindingSink,
    index: AbstractIndex[Any],
    code: str,
    sev: Severity,
    msg: str,
    *,
    offset: int | None = None,
    position: int | None = None,
    fix: str | None = None,
) -> None:
    sink.add(Finding(code, sev, index.path, msg, offset, position, fix))


def _layout_checks(
    index: AbstractIndex[Any],
    prefix: str,
    sink: FindingSink,
    options: VerifyOptions,
    is_active: bool,
    log_path: str,
) -> None:
    """Size, alignment, preallocated tail and the broker's own sanity check."""
    size = index.file_size
    if not index.is_aligned:
        _add(
            sink,
            index,
            f"{prefix}_MISALIGNED",
            Severity.WARNING,
            f"{size} bytes is not a multiple of the {index.entry_size}-byte entry size",
            position=size - size % index.entry_size,
            fix=fixes.rebuild_index(log_path),
        )
    # larger than its topic's segment.index.bytes: the partition's check (kdump.checks.partition)
    tail = index.zero_tail_entries
    if tail:
        used = index.used_entries
        what = (
            "the active segment's preallocated space (the broker keeps it while it appends)"
            if is_active
            else "left by an unclean shutdown: a clean one trims it"
        )
        _add(
            sink,
            index,
            f"{prefix}_PREALLOCATED",
            Severity.INFO if is_active else Severity.WARNING,
            f"{tail * index.entry_size} zero-filled bytes after {used} entries: {what}",
            position=used * index.entry_size,
            fix=None if is_active else fixes.trim_index(log_path),
        )
    failure = index.sanity_check()
    if failure is not None:
        only_prealloc = tail and is_active and _passes_when_trimmed(index)
        _add(
            sink,
            index,
            f"{prefix}_SANITY_CHECK_FAILS",
            Severity.INFO if only_prealloc else Severity.WARNING,
            (
                "the check fails only because of the active segment's preallocated space "
                "(the broker does not run it at startup, and recovers the active segment after "
                "an unclean stop): "
                if only_prealloc
                # LogSegment.sanityCheck skips the offset and time indexes since Kafka 2.3
                # (KAFKA-7283): only a recovered segment gets new ones.
                else "the broker does not run this check at startup and uses the index as it "
                "is unless it recovers the segment: "
            )
            + failure,
            fix=None if only_prealloc else fixes.rebuild_index(log_path),
        )


def _passes_when_trimmed(index: AbstractIndex[Any]) -> bool:
    trimmed = type(index)(
        memoryview(index.buf)[: index.used_entries * index.entry_size],
        index.base_offset,
        index.path,
    )
    return trimmed.sanity_check() is None


Ix = TypeVar("Ix", OffsetIndex, TimeIndex)


def index_tail(index: Ix, first: int) -> Ix:
    """The entries of ``index`` from ``first`` on, as an index of their own (an active
    segment's entries written since its verified prefix: kdump.checks.verify_state)."""
    if not first:
        return index
    return type(index)(
        memoryview(index.buf)[first * index.entry_size :], index.base_offset, index.path
    )


def check_offset_index(
    whole: OffsetIndex,
    scan: LogScan,
    sink: FindingSink,
    options: VerifyOptions,
    is_active: bool,
    first: int = 0,
) -> None:
    """Each used entry against the batch at its position (gathered by the walk); a fast test
    of every entry, then the findings of the entries it flags. ``first``: the entries before
    it were checked by an earlier run and are unchanged (a resumed walk gathered rows for the
    others only)."""
    _layout_checks(whole, "INDEX", sink, options, is_active, scan.path)
    index = index_tail(whole, first)
    gather = _gathered(scan)
    used = index.used_entries
    base, valid_bytes = index.base_offset, scan.valid_bytes
    last_log = scan.last_offset if scan.last_offset is not None else base - 1
    native = speedups.native()
    if native is not None and speedups.fits_int64(base, valid_bytes, last_log):
        test = OffsetIndexTest(*native.offset_index_check(
            index.buf, used, base, gather.position_rows, valid_bytes, last_log
        ))  # fmt: skip
    else:
        test = _offset_test(index, gather, valid_bytes, last_log)
    for i in test.flagged:
        o, pos = index.entry(i)
        prev_o, prev_p = index.entry(i - 1) if i else (0, 0)
        _offset_entry_findings(index, scan, gather, sink, i, o, pos, prev_o, prev_p, first)
    interval = options.index_interval_bytes
    least_gap = test.least_gap
    if interval is not None and used and not test.flagged and not entry_due(least_gap, interval):
        _denser_than_interval(index, used, valid_bytes, sink, interval, first)
    if test.first_multi >= 0:
        o, p = index.entry(test.first_multi)
        _add(
            sink,
            index,
            "INDEX_MULTI_BATCH_ENTRY",
            Severity.INFO,
            f"{test.multi} of {first + used} entries map an append's last offset to its first "
            "batch "
            f"(first: offset {o} position {p}); safe, but kafka-dump-log.sh reports them "
            "as mismatches",
            offset=o,
        )


def _denser_than_interval(
    index: OffsetIndex, used: int, valid_bytes: int, sink: FindingSink, interval: int, first: int
) -> None:
    """Entries closer together than index.interval.bytes (``entry_due``): the broker ran with a
    smaller interval when it wrote them (the fast test found the closest two). Sparser is no
    finding: before Kafka 4.0 (KAFKA-806) an entry came at most once per append, a follower's
    append being a whole fetch, and a restarted broker counts the interval from zero again."""
    positions = index.positions(used)
    # each entry's distance from the one before (the first's: from byte 0)
    gaps = list(map(operator.sub, positions, itertools.chain((0,), positions)))
    dense = [i for i, gap in enumerate(gaps) if not entry_due(gap, interval)]
    scan_bytes = max(*gaps, valid_bytes - positions[-1])
    _add(
        sink,
        index,
        "INDEX_DENSER_THAN_INTERVAL",
        Severity.INFO,
        f"{len(dense)} of {first + used} entries are at most index.interval.bytes {interval} .log "
        f"bytes after the entry before (the first: after byte 0; closest: {min(gaps)} "
        "bytes): a smaller index.interval.bytes was in force when they were written; a "
        f"lookup here reads at most {scan_bytes} bytes of .log from its entry",
        offset=index.entry(dense[0]).offset,
        position=(first + dense[0]) * index.entry_size,
    )


def _gathered(scan: LogScan) -> IndexGather:
    assert isinstance(scan.gather, IndexGather), "scan_log was not given the index gather"
    return scan.gather


class OffsetIndexTest(NamedTuple):
    """The fast test of an offset index's entries (the C code's offset_index_check)."""

    flagged: list[int]
    """The entries to look at one by one."""
    multi: int
    """Entries that map a multi-batch append's last offset to its first batch."""
    first_multi: int
    """The first of them (-1: none)."""
    least_gap: int
    """The least distance between an entry's position and the one before's (the first's:
    from 0); INT64_MAX without entries."""


def _offset_test(
    index: OffsetIndex, gather: IndexGather, valid_bytes: int, last_log: int
) -> OffsetIndexTest:
    """The fast test in Python."""
    flagged: list[int] = []
    multi, first_multi = 0, -1
    prev_o = prev_p = 0
    least_gap = INT64_MAX
    view = memoryview(index.buf)[: index.used_entries * index.entry_size]
    for i, (rel, pos) in enumerate(struct.iter_unpack(">ii", view)):
        o = index.base_offset + rel
        least_gap = min(least_gap, pos - prev_p)
        row = gather.position_row(pos)
        if (
            (i and not index.follows((prev_o, prev_p), (o, pos)))
            or rel < 0
            or o > last_log
            or pos >= valid_bytes
            or row is None
            or (row.prev_last is not None and row.prev_last >= o)
        ):
            flagged.append(i)
        elif row.last_offset != o:
            multi += 1
            if first_multi < 0:
                first_multi = i
        prev_o, prev_p = o, pos
    return OffsetIndexTest(flagged, multi, first_multi, least_gap)


def _offset_entry_findings(
    index: OffsetIndex,
    scan: LogScan,
    gather: IndexGather,
    sink: FindingSink,
    i: int,
    offset: int,
    position: int,
    prev_offset: int,
    prev_position: int,
    first: int = 0,
) -> None:
    """The findings of one offset index entry the fast test flagged (entry ``first + i`` of
    the file)."""
    fix = fixes.rebuild_index(scan.path)
    follows = not i or index.follows((prev_offset, prev_position), (offset, position))
    i += first
    at = i * index.entry_size
    if not follows:
        _add(
            sink,
            index,
            "INDEX_NOT_MONOTONIC",
            Severity.ERROR,
            f"entry {i} ({offset}, {position}) does not follow ({prev_offset}, "
            f"{prev_position}): lookups may land on the wrong batch",
            offset=offset,
            position=at,
            fix=fix,
        )
    last_log_offset = scan.last_offset
    if offset < index.base_offset or (last_log_offset is not None and offset > last_log_offset):
        _add(
            sink,
            index,
            "INDEX_OFFSET_OUT_OF_RANGE",
            Severity.ERROR,
            f"entry {i} offset {offset} is outside the log's offsets "
            f"[{index.base_offset}, {last_log_offset}]",
            offset=offset,
            position=at,
            fix=fix,
        )
        return
    if position < 0 or position >= scan.valid_bytes:
        _add(
            sink,
            index,
            "INDEX_POSITION_BEYOND_LOG",
            Severity.ERROR,
            f"entry {i} position {position} is beyond the log's {scan.valid_bytes} readable bytes",
            offset=offset,
            position=at,
            fix=fix,
        )
        return
    row = gather.position_row(position)
    if row is None:
        _add(
            sink,
            index,
            "INDEX_POSITION_NOT_BATCH_BOUNDARY",
            Severity.ERROR,
            f"entry {i} position {position} is not the start of a batch",
            offset=offset,
            position=at,
            fix=fix,
        )
        return
    if row.prev_last is not None and row.prev_last >= offset:
        _add(
            sink,
            index,
            "INDEX_UNSAFE_ENTRY",
            Severity.ERROR,
            f"entry {i} ({offset}, {position}): the batch before position {position} "
            f"already ends at offset {row.prev_last}, so a lookup of offset "
            f"{offset} would start past it and miss data",
            offset=offset,
            position=at,
            fix=fix,
        )


def check_time_index(
    whole: TimeIndex,
    scan: LogScan,
    sink: FindingSink,
    options: VerifyOptions,
    is_active: bool,
    first: int = 0,
) -> None:
    """Each used entry against the batch holding its offset (gathered by the walk); ``first``
    as for check_offset_index."""
    _layout_checks(whole, "TIMEINDEX", sink, options, is_active, scan.path)
    index = index_tail(whole, first)
    gather = _gathered(scan)
    native = speedups.native()
    if native is not None and speedups.fits_int64(index.base_offset):
        flagged = native.time_index_check(
            index.buf, index.used_entries, index.base_offset, gather.offset_rows
        )
    else:
        flagged = _time_test(index, gather)
    for i in flagged:
        ts, o = index.entry(i)
        prev_ts, prev_o = index.entry(i - 1) if i else (0, 0)
        _time_entry_findings(index, scan, gather, sink, i, ts, o, prev_ts, prev_o, first)
    _entries_inside_batches(index, gather, sink)
    _final_entry_check(whole, scan, sink, is_active)


def _entries_inside_batches(index: TimeIndex, gather: IndexGather, sink: FindingSink) -> None:
    """Entries naming an offset inside its batch rather than the batch's last offset: brokers
    before KAFKA-16310 (Kafka 3.8, 2024) wrote, on the leader, the offset of the record with
    the largest timestamp. Lookups by time are right either way (the broker reads the batches
    from the offset index's position on), but kafka-dump-log.sh --verify-index-only compares
    the entry with the last offset of the batch and reports "Indexed offset: X, found log
    offset: Y" for each: the difference an operator sees between the two tools."""
    rows = gather.offset_rows
    offsets, bases, lasts = rows[0::ROW], rows[1::ROW], rows[2::ROW]
    if offsets == lasts:  # the usual case, compared in C with nothing allocated
        return
    count, first = 0, None
    for o, b, last in zip(offsets, bases, lasts, strict=True):
        if b <= o < last:
            count += 1
            first = first or (o, b, last)
    if first is None:
        return
    o, b, last = first
    _add(
        sink,
        index,
        "TIMEINDEX_ENTRY_INSIDE_BATCH",
        Severity.INFO,
        f"{count} entr{'y names' if count == 1 else 'ies name'} an offset inside "
        f"its batch, first {o} (batch {b}..{last}): the record with the largest timestamp, as "
        "brokers before Kafka 3.8 wrote it (KAFKA-16310); lookups by time are right, but "
        f"kafka-dump-log.sh --verify-index-only reports 'Indexed offset: {o}, found log "
        f"offset: {last}'",
        offset=o,
    )


def _time_test(index: TimeIndex, gather: IndexGather) -> list[int]:
    """The fast test in Python (the C code's time_index_check)."""
    flagged: list[int] = []
    prev_ts = prev_o = 0
    view = memoryview(index.buf)[: index.used_entries * index.entry_size]
    for i, (ts, rel) in enumerate(struct.iter_unpack(">qi", view)):
        o = index.base_offset + rel
        row = gather.offset_row(o) if o <= INT64_MAX else None
        if (
            (i and not index.follows((prev_ts, prev_o), (ts, o)))
            or row is None
            or row.base_offset > o
            or row.max_timestamp != ts
            or row.max_before > ts
        ):
            flagged.append(i)
        prev_ts, prev_o = ts, o
    return flagged


def _final_entry_check(index: TimeIndex, scan: LogScan, sink: FindingSink, is_active: bool) -> None:
    used = index.used_entries
    largest = scan.max_timestamp
    if not is_active and used and largest >= 0 and index.entry(used - 1).timestamp != largest:
        _add(
            sink,
            index,
            "TIMEINDEX_MISSING_FINAL_ENTRY",
            Severity.WARNING,
            f"the closed segment's largest timestamp is {largest} but its last time index "
            f"entry says {index.entry(used - 1).timestamp}: the broker takes that entry as "
            "the segment's largest timestamp",
            fix=fixes.rebuild_index(scan.path),
        )


def _time_entry_findings(
    index: TimeIndex,
    scan: LogScan,
    gather: IndexGather,
    sink: FindingSink,
    i: int,
    timestamp: int,
    offset: int,
    prev_ts: int,
    prev_offset: int,
    first: int = 0,
) -> None:
    """The findings of one time index entry the fast test flagged (entry ``first + i`` of the
    file)."""
    follows = not i or index.follows((prev_ts, prev_offset), (timestamp, offset))
    i += first
    at, fix = i * index.entry_size, fixes.rebuild_index(scan.path)
    if not follows:
        _add(
            sink,
            index,
            "TIMEINDEX_NOT_MONOTONIC",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}) does not follow ({prev_ts}, {prev_offset}): "
            "timestamps must rise and offsets never fall",
            offset=offset,
            position=at,
            fix=fix,
        )
    row = gather.offset_row(offset) if offset <= INT64_MAX else None
    if row is None or row.base_offset > offset:
        _add(
            sink,
            index,
            "TIMEINDEX_OFFSET_NOT_FOUND",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}): no batch of the segment holds offset {offset}",
            offset=offset,
            position=at,
            fix=fix,
        )
        return
    if row.max_timestamp != timestamp:
        _add(
            sink,
            index,
            "TIMEINDEX_TIMESTAMP_MISMATCH",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}): the batch holding offset {offset} has "
            f"max timestamp {row.max_timestamp}",
            offset=offset,
            position=at,
            fix=fix,
        )
    elif max(row.max_before, row.max_timestamp) > timestamp:
        _add(
            sink,
            index,
            "TIMEINDEX_BEHIND_MAX",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}): an earlier batch already has timestamp "
            f"{max(row.max_before, row.max_timestamp)}, so lookups by time would skip it",
            offset=offset,
            position=at,
            fix=fix,
        )
