"""A lookup's answer as text (dump-style lines), as one JSON object, and its path as rich tables.

Reads a kdump.lookup.Lookup and computes nothing: the words for each outcome live here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from rich.table import Table

from kdump.format.index import IndexSearch, OffsetPosition
from kdump.format.timeindex import TimestampOffset
from kdump.lookup import Lookup, Outcome
from kdump.render.describe import Decoder, default_decoder
from kdump.render.dump_log import batch_line, record_line
from kdump.render.dump_segments import DumpOptions
from kdump.render.jsonl import Obj, batch_object, record_object
from kdump.segment import Scan
from kdump.units import at

COMPARISON = {-1: "<", 0: "=", 1: ">"}


def outcome_text(result: Lookup) -> str:
    """What the broker would answer when the lookup found no record (or the next one)."""
    target, lso, leo = result.target, result.log_start_offset, result.log_end_offset_on_disk
    if result.outcome is Outcome.NEXT:
        record, batch = result.record, result.batch
        first = record.offset if record is not None else (batch.base_offset if batch else None)
        return (
            f"offset {target} is not in the log (compacted, deleted or cut away): a fetch at "
            f"{target} returns the batch holding offset {first}, from there on"
        )
    if result.outcome is Outcome.DAMAGED and result.damage is not None:
        e = result.damage
        what = result.damage_named or f"the log stops parsing ({e.reason})"
        return (
            f"the read reaches {e.path}:{e.position}, where {what}, before it finds an answer: "
            "the broker's recovery cuts the log there "
            "(kdump verify tells more; kdump recover cuts it, keeping the bytes)"
        )
    if result.outcome is Outcome.OFFSET_OUT_OF_RANGE:
        where = (
            f"below the log start offset {lso}"
            if target < lso
            else f"above the log end offset {leo}"
            + (" on disk" if leo != result.log_end_offset else "")
        )
        return f"offset {target} is {where}: the broker answers OFFSET_OUT_OF_RANGE"
    if result.outcome is Outcome.AT_LOG_END:
        return (
            f"offset {target} is the log end offset: a fetch there returns no records "
            "(it waits for the next append)"
        )
    if result.outcome is Outcome.NO_OFFSET:
        if result.segment is not None:
            return (
                f"{result.segment} is the first segment whose largest timestamp ≥ {target}, "
                f"but it holds no record with timestamp ≥ {target} at or after the log start "
                f"offset {lso}: ListOffsets answers offset -1 (unknown); the broker does not "
                "look further"
            )
        return (
            f"no record has a timestamp ≥ {target}: ListOffsets answers offset -1 (unknown), "
            "timestamp -1"
        )
    return "found"


def _offset_entry(entry: OffsetPosition | TimestampOffset | None) -> list[int] | None:
    return None if entry is None else [entry[0], entry[1]]


def _search_object(search: IndexSearch) -> Obj:
    return {
        "file": search.path,
        "kind": search.kind,
        "search": search.search.name,
        "target": search.target,
        "entries": search.entries,
        "probes": [
            {"slot": p.slot, "entry": list(p.entry), "comparison": COMPARISON[p.comparison]}
            for p in search.probes
        ],
        "slot": search.slot,
        "entry": _offset_entry(search.entry),
    }


def lookup_object(
    result: Lookup,
    key_decoder: Decoder = default_decoder,
    value_decoder: Decoder = default_decoder,
) -> Obj:
    """One JSON object: the answer, the entries used, and every step taken."""
    scan, batch, record = result.scan, result.batch, result.record
    time_search = result.time_search
    answer = result.answer
    searches = []
    if time_search is not None and time_search.time_index_search is not None:
        searches.append(_search_object(time_search.time_index_search))
    for s in result.scans:
        if s.start.search is not None:
            searches.append(_search_object(s.start.search))
    obj: Obj = {
        "mode": result.mode,
        "target": result.target,
        "outcome": result.outcome.value,
        "message": outcome_text(result),
        "directory": result.directory,
        "log_start_offset": result.log_start_offset,
        "log_end_offset": result.log_end_offset,
        "log_end_offset_on_disk": result.log_end_offset_on_disk,
        "partition": result.facts,
        "segment": result.segment,
        "time_index_entry": (
            None if time_search is None else _offset_entry(time_search.time_index_entry)
        ),
        "index_entry": None if scan is None else _offset_entry(scan.start.entry),
        "scan_start": None if scan is None else scan.position,
        "bytes_scanned": result.bytes_scanned,
        "batches_scanned": sum(s.batches_scanned for s in result.scans),
        "batch": (
            None
            if batch is None or result.segment is None
            else batch_object(result.segment, batch, bool(scan and scan.batch_is_valid))
        ),
        "record": (
            None
            if record is None or batch is None
            else record_object(record, batch, key_decoder, value_decoder)
        ),
        "list_offsets": (
            None
            if answer is None
            else {
                "timestamp": answer.timestamp,
                "offset": answer.offset,
                "leader_epoch": answer.leader_epoch,
            }
        ),
        "segments_considered": [
            {
                "segment": s.log_path,
                "base_offset": s.base_offset,
                "chosen": s.chosen,
                "reason": s.reason,
                "largest_timestamp": (
                    None if s.largest_timestamp is None else s.largest_timestamp.timestamp
                ),
                "largest_timestamp_from": (
                    None if s.largest_timestamp is None else s.largest_timestamp.source
                ),
            }
            for s in result.segments
        ],
        "searches": searches,
        "warnings": list(result.warnings),
    }
    if result.mode == "offset":
        del obj["time_index_entry"], obj["list_offsets"]
    return obj


def _index_entry_text(scan: Scan) -> str:
    entry = scan.start.entry
    if scan.start.search is None:
        return "none (offset index not usable: scanning from position 0)"
    if entry is None:
        return f"none (no entry ≤ {scan.start.offset}: scanning from position 0)"
    return f"offset: {entry.offset} position: {entry.position}"


def lookup_lines(result: Lookup, opts: DumpOptions) -> Iterator[str]:
    """The answer as text: where it is, how it was reached, the batch and record found."""
    scan, batch, record = result.scan, result.batch, result.record
    if result.segment is not None and scan is not None:
        yield f"segment: {result.segment}"
        if result.time_search is not None:
            entry = result.time_search.time_index_entry
            if result.time_search.time_index_search is None:
                yield "time index entry: none (time index not usable: starting at the base offset)"
            elif result.time_search.time_index_search.entry is None:
                yield f"time index entry: none (starting at base offset {entry.offset})"
            else:
                yield f"time index entry: timestamp: {_ts(entry.timestamp)} offset: {entry.offset}"
        yield f"index entry: {_index_entry_text(scan)}"
        yield f"scan start: {scan.position}"
        batches = sum(s.batches_scanned for s in result.scans)
        yield f"bytes scanned: {result.bytes_scanned} ({batches} batches)"
        if batch is not None:
            yield batch_line(batch, batch.position, bool(scan.batch_is_valid))
        if record is not None and batch is not None:
            yield record_line(record, batch, opts)
    answer = result.answer
    if answer is not None:
        epoch = "unknown" if answer.leader_epoch is None else answer.leader_epoch
        yield (
            f"ListOffsets: timestamp: {_ts(answer.timestamp)} offset: {answer.offset} "
            f"leaderEpoch: {epoch}"
        )
    if result.outcome is not Outcome.FOUND:
        yield outcome_text(result)


def _segments_table(result: Lookup) -> Table:
    timestamps = result.mode == "timestamp"
    table = Table(
        title=f"Segments considered for {result.mode} {result.target}", title_justify="left"
    )
    table.add_column("segment", no_wrap=True)
    table.add_column("base offset", justify="right", overflow="fold")
    if timestamps:
        table.add_column("largest timestamp", justify="right", overflow="fold")
        table.add_column("from")
    table.add_column("verdict")
    for s in result.segments:
        row = [os.path.basename(s.log_path), str(s.base_offset)]
        if timestamps and s.largest_timestamp is not None:
            row += [_ts(s.largest_timestamp.timestamp), s.largest_timestamp.source]
        verdict = "chosen" if s.chosen else "passed"
        row.append(verdict if timestamps else f"{verdict}: {s.reason}")
        table.add_row(*row)
    return table


def _ts(ms: int) -> str:
    """A timestamp for the text: epoch ms and UTC ISO-8601; Kafka's -1 (none) as it is."""
    return at(ms) if ms >= 0 else str(ms)


def _entry_text(kind: str, entry: tuple[int, int]) -> str:
    if kind == "time index":
        return f"timestamp {_ts(entry[0])} offset {entry[1]}"
    return f"offset {entry[0]} position {entry[1]}"


def _search_table(search: IndexSearch, none_means: str) -> Table:
    table = Table(
        title=(
            f"{os.path.basename(search.path)}: {search.search.name} {search.target} "
            f"over {search.entries} entries"
        ),
        title_justify="left",
    )
    table.add_column("probe", justify="right")
    table.add_column("slot", justify="right")
    table.add_column("entry", overflow="fold")
    table.add_column("vs target")
    for i, p in enumerate(search.probes, start=1):
        table.add_row(
            str(i), str(p.slot), _entry_text(search.kind, p.entry), COMPARISON[p.comparison]
        )
    if search.entry is None:
        table.caption = f"chosen: no entry ≤ {search.target}: {none_means}"
    else:
        table.caption = f"chosen: slot {search.slot}, {_entry_text(search.kind, search.entry)}"
    table.caption_justify = "left"
    return table


def _scan_table(result: Lookup) -> Table:
    table = Table(title="Scan", title_justify="left")
    table.add_column("segment", no_wrap=True)
    for name in ("from position", "batches read", "bytes read"):
        table.add_column(name, justify="right", overflow="fold")
    table.add_column("found", overflow="fold")
    for s in result.scans:
        found = "nothing"
        if s.batch is not None:
            found = f"batch {s.batch.base_offset}..{s.batch.last_offset} at {s.batch.position}"
            if s.record is not None:
                found += f"; record {s.record.offset}"
        table.add_row(
            os.path.basename(s.segment),
            str(s.position),
            str(s.batches_scanned),
            str(s.bytes_scanned),
            found,
        )
    return table


def explain_tables(result: Lookup) -> list[Table]:
    """Each step as a small table: segments considered, binary-search probes, the scan."""
    tables = [_segments_table(result)]
    if result.time_search is not None:
        search = result.time_search.time_index_search
        if search is not None:
            tables.append(_search_table(search, "start at the segment's base offset"))
    for s in result.scans:
        if s.start.search is not None:
            tables.append(_search_table(s.start.search, "scan from position 0"))
    if result.scans:
        tables.append(_scan_table(result))
    return tables
