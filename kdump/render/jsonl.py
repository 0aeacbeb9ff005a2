"""JSON Lines: one object per batch, record, index entry or problem, with kdump's stable keys."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, cast

from kdump.errors import FormatError, KdumpError
from kdump.format.batch import Batch
from kdump.format.index import OffsetIndex, OffsetPosition
from kdump.format.internal import DELETE, KafkaText, NamedParser, decode_control_record
from kdump.format.names import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kdump.format.records import LongBytes, Record, control_record_key, end_transaction_marker
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.textfiles import text_file_entries
from kdump.format.timeindex import TimeIndex, TimestampOffset
from kdump.format.txnindex import TransactionIndex
from kdump.format.walk import StopReason
from kdump.progress import NO_PROGRESS, Progress
from kdump.render import runs
from kdump.render.describe import Decoder
from kdump.render.dump_log import log_renderer, rendered
from kdump.render.dump_segments import (
    CHECKPOINT_SUFFIX,
    OUT,
    Chunk,
    Dumper,
    DumpOptions,
    DumpProblems,
    Line,
    base_offset_of,
    dispatch,
    dumped,
    joined,
    stored_file,
)
from kdump.render.fields import RecordContext, batch_values, json_template, record_values
from kdump.render.lines import WHOLE, LogSpan, span_walk
from kdump.storage.base import StoredFile
from kdump.untrusted import escape_json_text

Obj = dict[str, Any]


BATCH_KEYS = (
    ("type", "type"),
    ("file", "file"),
    ("position", "position"),
    ("base_offset", "base_offset"),
    ("last_offset", "last_offset"),
    ("count", "count"),
    ("magic", "magic"),
    ("compression", "compression"),
    ("crc", "crc"),
    ("is_valid", "is_valid"),
    ("timestamp_type", "timestamp_type"),
    ("max_timestamp", "max_timestamp"),
    ("producer_id", "producer_id"),
    ("producer_epoch", "producer_epoch"),
    ("base_sequence", "base_sequence"),
    ("last_sequence", "last_sequence"),
    ("partition_leader_epoch", "partition_leader_epoch"),
    ("is_transactional", "is_transactional"),
    ("is_control", "is_control"),
    ("delete_horizon_ms", "delete_horizon_ms"),
    ("size", "size"),
)
"""A batch object's keys, in order, and the field (kdump.render.fields) each one holds."""

RECORD_KEYS = (
    ("type", "type"),
    ("offset", "offset"),
    ("timestamp", "timestamp"),
    ("timestamp_type", "timestamp_type"),
    ("key_size", "key_size"),
    ("value_size", "value_size"),
    ("sequence", "sequence"),
    ("header_keys", "header_keys"),
    ("headers", "headers"),
    ("key", "key"),
    ("key_encoding", "key_encoding"),
    ("value", "value"),
    ("value_encoding", "value_encoding"),
)
"""A record object's keys; legacy, control and decoded records add more (record_object)."""

_BATCH_FIELDS = tuple(field for _, field in BATCH_KEYS[2:])
_RECORD_FIELDS = tuple(field for _, field in RECORD_KEYS[1:])


def batch_template(path: str) -> str:
    """The batch object of one file's batches, as a template (the C renderer's)."""
    return escape_json_text(json_template(BATCH_KEYS, {"type": "batch", "file": path}))


RECORD_TEMPLATE = json_template(RECORD_KEYS, {"type": "record"})
"""A v2 record's object, as a template (the C renderer's)."""


def batch_object(path: str, batch: Batch, valid: bool) -> Obj:
    return {"type": "batch", "file": path, **batch_values(batch, valid, _BATCH_FIELDS)}


def record_object(
    record: Record,
    batch: Batch,
    key_decoder: Decoder,
    value_decoder: Decoder,
    parser: NamedParser | None = None,
    long_bytes: int = 0,
) -> Obj:
    """``long_bytes``: keys and values kept past this many bytes are a ``LongBytes``, whose
    text only ``json_parts`` writes (0: never)."""
    ctx = RecordContext(batch, key_decoder, value_decoder)
    ctx.long_bytes = long_bytes
    obj: Obj = {"type": "record", **record_values(record, ctx, _RECORD_FIELDS)}
    if parser is not None and not batch.is_control:
        # Decoded JSON objects; error texts stay strings, a tombstone is null; where the
        # parser says more than Kafka's text (a newer record's type, version and bytes), that.
        parsed_key, parsed_value = parser(record)
        key_json, value_json = parsed_key, None if parsed_value == DELETE else parsed_value
        for part in (parsed_key, parsed_value):
            if isinstance(part, KafkaText):
                key_json, value_json = part.jsonl
        obj.update(
            key=key_json,
            key_encoding=None if key_json is None else parser.name,
            value=value_json,
            value_encoding=None if value_json is None else parser.name,
        )
    if record.crc is not None:
        obj.update(crc=record.crc, is_valid=record.is_valid)
    if batch.is_control:
        key, marker = control_record_key(record), end_transaction_marker(record)
        obj["control_type"] = key.type_name if key else None
        if marker is not None and key is not None and key.type in (0, 1):
            obj["coordinator_epoch"] = marker.coordinator_epoch
        control = None if key is None else decode_control_record(key.type, record)
        if control is not None:
            obj["control"] = control.data if control.data is not None else control.error
    return obj


def index_entry_object(path: str, entry: OffsetPosition) -> Obj:
    return {"type": "index_entry", "file": path, "offset": entry.offset, "position": entry.position}


def time_index_entry_object(path: str, entry: TimestampOffset) -> Obj:
    return {
        "type": "time_index_entry",
        "file": path,
        "timestamp": entry.timestamp,
        "offset": entry.offset,
    }


def error_object(path: str, error: KdumpError) -> Obj:
    position = error.position if isinstance(error, FormatError) else None
    reason = error.reason if isinstance(error, FormatError) else str(error)
    return {"type": "error", "file": path, "position": position, "message": reason}


def _log(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan = WHOLE
) -> Iterator[Obj | bytes]:
    path = file.path
    log = file.open_log()
    walk = span_walk(log, opts, span)

    def python_batch(batch: Batch, valid: bool, skip: int = 0) -> Iterator[bytes]:
        if not skip:
            yield to_json(batch_object(path, batch, valid)).encode() + b"\n"
        if opts.deep:
            for record in islice(log.records(batch, opts.max_batch_bytes), skip, None):
                long_bytes = runs.SLICE_CHARS if record.size_in_bytes > runs.LONG_RECORD else 0
                obj = record_object(
                    record, batch, opts.key_decoder, opts.value_decoder, opts.message_parser,
                    long_bytes,
                )  # fmt: skip
                if long_bytes:
                    yield from runs.line_pieces(json_parts(obj), escape_json_text)
                else:
                    yield to_json(obj).encode() + b"\n"

    renderer = log_renderer(
        log,
        opts,
        python_batch,
        as_json=True,
        batch_template=batch_template(path),
        record_template=RECORD_TEMPLATE,
    )
    yield from rendered(walk, renderer, problems, path, opts.batch_filter)
    stop = walk.stop
    assert stop is not None
    # Bytes cut off by --max-bytes are not a truncated tail; only the end of the file can be.
    if span.last and stop.reason is StopReason.TRUNCATED_TAIL:
        problems.trailing_bytes += stop.remaining
        yield {
            "type": "truncated_tail",
            "file": path,
            "position": stop.position,
            "bytes": stop.remaining,
        }


def _index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Obj]:
    index = OffsetIndex(file.read(), base_offset_of(file), file.path)
    for i in range(index.entries_before_first_zero_entry()):
        yield index_entry_object(file.path, index.entry(i))


def _time_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Obj]:
    index = TimeIndex(file.read(), base_offset_of(file), file.path)
    for i in range(index.entries_before_first_zero_entry()):
        yield time_index_entry_object(file.path, index.entry(i))


def _txn_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Obj]:
    for t in TransactionIndex(file.read(), base_offset_of(file), file.path):
        yield {"type": "aborted_txn", "file": file.path, **t._asdict()}


def _snapshot(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Obj]:
    path = file.path
    snapshot = parse_producer_snapshot(file.read(), path)
    for e in snapshot.producers:
        meta = e.batch_metadata
        yield {
            "type": "producer",
            "file": path,
            **e._asdict(),
            "current_txn_first_offset": e.open_transaction,
            "batch_metadata": None if meta is None else meta._asdict(),
        }


def _text_file(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Obj]:
    """One object per checkpoint entry, or the partition.metadata / meta.properties content."""
    for entry in text_file_entries(file.name, bytes(file.read()), file.path):
        kind = re.sub(r"(?<!^)(?=[A-Z])", "_", type(entry).__name__).lower()
        yield {"type": kind, "file": file.path, **entry._asdict()}


JSON_DUMPERS: dict[str, Dumper[Obj | bytes]] = {
    LOG_SUFFIX: _log,
    CHECKPOINT_SUFFIX: _log,
    INDEX_SUFFIX: _index,
    TIME_INDEX_SUFFIX: _time_index,
    TXN_INDEX_SUFFIX: _txn_index,
    SNAPSHOT_SUFFIX: _snapshot,
}


def dump_files_lines(
    paths: Sequence[str | StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int = 1,
    progress: Progress = NO_PROGRESS,
) -> Iterator[Chunk]:
    """Every file's JSON Lines, in order, rendered in ``jobs`` processes (each writing its
    own: then this yields nothing)."""
    return cast(
        "Iterator[Chunk]",
        dumped(paths, opts, problems, jobs, _dump_file_lines, progress, _dump_span_lines),
    )


def _dump_file_lines(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems
) -> Iterator[Line | Chunk]:
    return _joined_objects(dump_file_objects(file, opts, problems))


def _dump_span_lines(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan
) -> Iterator[Line | Chunk]:
    return _joined_objects(dump_file_objects(file, opts, problems, span))


def _joined_objects(objects: Iterator[Obj | bytes]) -> Iterator[Line | Chunk]:
    return joined(
        Chunk(obj) if isinstance(obj, bytes) else Line(OUT, to_json(obj)) for obj in objects
    )


def dump_file_objects(
    named: str | StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan = WHOLE
) -> Iterator[Obj | bytes]:
    file = stored_file(named)
    path = file.path

    def unknown() -> Obj:
        problems.failures += 1
        return {"type": "error", "file": path, "position": None, "message": "unknown file type"}

    yield from dispatch(
        file,
        opts,
        problems,
        JSON_DUMPERS,
        _text_file,
        unknown,
        lambda e: error_object(path, e),
        span,
    )


def to_json(obj: Obj) -> str:
    return escape_json_text(_dumps(obj))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_SCALARS = (int, float, bool, type(None))
_SCALARS_PER_PART = 4096


def json_parts(value: Any) -> Iterator[str]:
    """``_dumps(value)`` in parts, a long string's JSON a slice at a time (JSON escapes each
    character alone: the slices' JSON is the whole's), a ``LongBytes`` too, a long array's
    scalars some thousands at a time; ``to_json`` is ``escape_json_text`` of the parts joined
    (line_pieces escapes them a piece at a time: that rule, too, is of one character at a
    time)."""
    if isinstance(value, LongBytes):
        yield '"'
        for text in value.texts(runs.SLICE_CHARS):
            yield _dumps(text)[1:-1]
        yield '"'
    elif isinstance(value, str):
        step = runs.SLICE_CHARS
        if len(value) <= step:
            yield _dumps(value)
            return
        yield '"'
        for i in range(0, len(value), step):
            yield _dumps(value[i : i + step])[1:-1]
        yield '"'
    elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
        yield "{"
        comma = ""
        for k, v in value.items():
            yield f"{comma}{_dumps(k)}:"
            yield from json_parts(v)
            comma = ","
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for i in range(0, len(value), _SCALARS_PER_PART):
            part = value[i : i + _SCALARS_PER_PART]
            if i:
                yield ","
            if all(isinstance(v, _SCALARS) for v in part):
                yield _dumps(list(part))[1:-1]
                continue
            for j, v in enumerate(part):
                if j:
                    yield ","
                yield from json_parts(v)
        yield "]"
    else:  # a number, true, false, null (or what json.dumps makes of anything else)
        yield _dumps(value)
