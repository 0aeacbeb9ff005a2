"""Checks of a segment's .index and .timeindex against what the log scan learned."""

from __future__ import annotations

import struct
from array import array
from typing import Any

from kdump import speedups
from kdump.checks.findings import Finding, Severity
from kdump.checks.log import LogScan
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.format.index import AbstractIndex, OffsetIndex
from kdump.format.timeindex import TimeIndex

REBUILD = "kdump rebuild-index {log}"
TRIM = "kdump trim-index {log}"


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
            fix=REBUILD.format(log=log_path),
        )
    if size > options.max_index_size:
        _add(
            sink,
            index,
            "INDEX_OVERSIZE" if prefix == "INDEX" else "TIMEINDEX_OVERSIZE",
            Severity.WARNING,
            f"{size} bytes, more than log.index.size.max.bytes {options.max_index_size}",
        )
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
            fix=None if is_active else TRIM.format(log=log_path),
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
                "the broker's startup check fails only because of the preallocated space; "
                "it recovers the active segment after an unclean stop: "
                if only_prealloc
                else "the broker's startup check would reject it and rebuild the index: "
            )
            + failure,
            fix=None if only_prealloc else REBUILD.format(log=log_path),
        )


def _passes_when_trimmed(index: AbstractIndex[Any]) -> bool:
    trimmed = type(index)(
        memoryview(index.buf)[: index.used_entries * index.entry_size],
        index.base_offset,
        index.path,
    )
    return trimmed.sanity_check() is None


def check_offset_index(
    index: OffsetIndex,
    scan: LogScan,
    sink: FindingSink,
    options: VerifyOptions,
    is_active: bool,
) -> None:
    """Each used entry against the batches; a merge walk, with a slow path for anomalies."""
    _layout_checks(index, "INDEX", sink, options, is_active, scan.path)
    used = index.used_entries
    base, valid_bytes = index.base_offset, scan.valid_bytes
    last_log = scan.last_offset if scan.last_offset is not None else base - 1
    native = speedups.native()
    if native is not None and speedups.fits_int64(base, valid_bytes, last_log):
        flagged, multi, first = native.offset_index_walk(
            index.buf, used, base, scan.positions, scan.last_offsets, valid_bytes, last_log
        )
        for i in flagged:
            o, pos = index.entry(i)
            prev_o, prev_p = index.entry(i - 1) if i else (0, 0)
            _offset_entry_findings(index, scan, sink, i, o, pos, prev_o, prev_p)
        first_multi = None if first < 0 else tuple(index.entry(first))
    else:
        multi, first_multi = _offset_walk(index, scan, sink, base, valid_bytes, last_log)
    if first_multi is not None:
        o, p = first_multi
        _add(
            sink,
            index,
            "INDEX_MULTI_BATCH_ENTRY",
            Severity.INFO,
            f"{multi} of {used} entries map an append's last offset to its first batch "
            f"(first: offset {o} position {p}); safe, but kafka-dump-log.sh reports them "
            "as mismatches",
            offset=o,
        )


def _offset_walk(
    index: OffsetIndex,
    scan: LogScan,
    sink: FindingSink,
    base: int,
    valid_bytes: int,
    last_log: int,
) -> tuple[int, tuple[int, int] | None]:
    """The merge walk in Python: findings of flagged entries; multi-batch count and first."""
    used = index.used_entries
    entries = struct.iter_unpack(">ii", memoryview(index.buf)[: used * index.entry_size])
    positions, lasts, n = scan.positions, scan.last_offsets, scan.batches
    multi, first_multi = 0, None
    prev_o = prev_p = j = 0
    for i, (rel, pos) in enumerate(entries):
        o = base + rel
        while j < n and positions[j] < pos:
            j += 1
        if (
            (i and (o <= prev_o or pos <= prev_p))
            or rel < 0
            or o > last_log
            or pos >= valid_bytes
            or j == n
            or positions[j] != pos
            or (j and lasts[j - 1] >= o)
        ):
            _offset_entry_findings(index, scan, sink, i, o, pos, prev_o, prev_p)
        elif lasts[j] != o:
            multi += 1
            first_multi = first_multi or (o, pos)
        prev_o, prev_p = o, pos
    return multi, first_multi


def _offset_entry_findings(
    index: OffsetIndex,
    scan: LogScan,
    sink: FindingSink,
    i: int,
    offset: int,
    position: int,
    prev_offset: int,
    prev_position: int,
) -> None:
    """The findings of one offset index entry the fast walk flagged."""
    fix = REBUILD.format(log=scan.path)
    at = i * index.entry_size
    if i and (offset <= prev_offset or position <= prev_position):
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
    b = scan.batch_at(position)
    if b is None:
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
    if b > 0 and scan.last_offsets[b - 1] >= offset:
        _add(
            sink,
            index,
            "INDEX_UNSAFE_ENTRY",
            Severity.ERROR,
            f"entry {i} ({offset}, {position}): the batch before position {position} "
            f"already ends at offset {scan.last_offsets[b - 1]}, so a lookup of offset "
            f"{offset} would start past it and miss data",
            offset=offset,
            position=at,
            fix=fix,
        )


def check_time_index(
    index: TimeIndex,
    scan: LogScan,
    sink: FindingSink,
    options: VerifyOptions,
    is_active: bool,
) -> None:
    """Each used entry against the batch holding its offset; a merge walk like the above."""
    _layout_checks(index, "TIMEINDEX", sink, options, is_active, scan.path)
    used = index.used_entries
    native = speedups.native()
    if native is not None and speedups.fits_int64(index.base_offset):
        flagged = native.time_index_walk(
            index.buf,
            used,
            index.base_offset,
            scan.base_offsets,
            scan.last_offsets,
            scan.max_timestamps,
        )
        if flagged:
            running_max = _prefix_max(scan)
            for i in flagged:
                ts, o = index.entry(i)
                prev_ts, prev_o = index.entry(i - 1) if i else (0, 0)
                _time_entry_findings(index, scan, sink, running_max, i, ts, o, prev_ts, prev_o)
    else:
        _time_walk(index, scan, sink)
    _final_entry_check(index, scan, sink, is_active)


def _time_walk(index: TimeIndex, scan: LogScan, sink: FindingSink) -> None:
    """The merge walk in Python, with the findings of the entries it flags."""
    used = index.used_entries
    entries = struct.iter_unpack(">qi", memoryview(index.buf)[: used * index.entry_size])
    bases, lasts, maxts, n = scan.base_offsets, scan.last_offsets, scan.max_timestamps, scan.batches
    base = index.base_offset
    running_max: array[int] | None = None
    prev_ts = prev_o = k = 0
    before = -1  # the largest max timestamp of the batches before batch k
    for i, (ts, rel) in enumerate(entries):
        o = base + rel
        while k < n and lasts[k] < o:
            if maxts[k] > before:
                before = maxts[k]
            k += 1
        if (
            (i and (ts <= prev_ts or o < prev_o))
            or k == n
            or bases[k] > o
            or maxts[k] != ts
            or before > ts
        ):
            if running_max is None:
                running_max = _prefix_max(scan)
            _time_entry_findings(index, scan, sink, running_max, i, ts, o, prev_ts, prev_o)
        prev_ts, prev_o = ts, o


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
            fix=REBUILD.format(log=scan.path),
        )


def _time_entry_findings(
    index: TimeIndex,
    scan: LogScan,
    sink: FindingSink,
    running_max: array[int],
    i: int,
    timestamp: int,
    offset: int,
    prev_ts: int,
    prev_offset: int,
) -> None:
    """The findings of one time index entry the fast walk flagged."""
    at, fix = i * index.entry_size, REBUILD.format(log=scan.path)
    if i and (timestamp <= prev_ts or offset < prev_offset):
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
    b = scan.batch_holding(offset)
    if b is None:
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
    if scan.max_timestamps[b] != timestamp:
        _add(
            sink,
            index,
            "TIMEINDEX_TIMESTAMP_MISMATCH",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}): the batch holding offset {offset} has "
            f"max timestamp {scan.max_timestamps[b]}",
            offset=offset,
            position=at,
            fix=fix,
        )
    elif running_max[b] > timestamp:
        _add(
            sink,
            index,
            "TIMEINDEX_BEHIND_MAX",
            Severity.ERROR,
            f"entry {i} ({timestamp}, {offset}): an earlier batch already has timestamp "
            f"{running_max[b]}, so lookups by time would skip it",
            offset=offset,
            position=at,
            fix=fix,
        )


def _prefix_max(scan: LogScan) -> array[int]:
    out, m = array("q"), -1
    for ts in scan.max_timestamps:
        m = max(m, ts)
        out.append(m)
    return out
