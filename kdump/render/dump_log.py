"""kafka-dump-log.sh's lines for a log (and a KRaft snapshot): a line per batch, and with
--deep-iteration one per record (DumpLogSegments.dumpLog, printBatchLevel, dumpBatchRecords):
the templates, the Python renderer of one batch, and the C renderer's runs
(kdump.render.runs)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing
from itertools import islice

from kdump.errors import InputError
from kdump.format.batch import Batch
from kdump.format.filters import BatchFilter
from kdump.format.layout import INT32_MAX
from kdump.format.names import BOOTSTRAP_CHECKPOINT, CHECKPOINT_SUFFIX
from kdump.format.records import (
    ABORT,
    COMMIT,
    CONTROL_TYPE_NAMES,
    Record,
    control_record_key,
    end_transaction_marker,
)
from kdump.format.walk import LogWalk, StopReason
from kdump.java import java_string_slices
from kdump.render import runs
from kdump.render.describe import apply_decoder, default_decoder
from kdump.render.fields import BatchFields, RecordContext, RecordFields, TextParts
from kdump.render.lines import (
    OUT,
    WHOLE,
    Chunk,
    DumpOptions,
    DumpProblems,
    Line,
    LogSpan,
    _abs,
    _note,
    base_offset_of,
    span_walk,
)
from kdump.render.runs import PythonBatch, RunRenderer
from kdump.storage.base import StoredFile
from kdump.storage.records import FileRecords
from kdump.untrusted import terminal

_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


_BATCH_TAIL = (
    "position: {position} {timestamp_type}: {max_timestamp} size: {size} magic: {magic} "
    "compresscodec: {compression} crc: {crc} isvalid: {is_valid}"
)
BATCH_V2 = (
    "baseOffset: {base_offset} lastOffset: {last_offset} count: {count} "
    "baseSequence: {base_sequence} lastSequence: {last_sequence} producerId: {producer_id} "
    "producerEpoch: {producer_epoch} partitionLeaderEpoch: {partition_leader_epoch} "
    "isTransactional: {is_transactional} isControl: {is_control} "
    "deleteHorizonMs: {delete_horizon_ms} " + _BATCH_TAIL
)
"""DumpLogSegments.printBatchLevel for a magic v2 batch (fields: kdump.render.fields)."""
BATCH_LEGACY = "offset: {last_offset} " + _BATCH_TAIL
"""... and for a legacy v0/v1 message: its offset is its last."""

_RECORD_HEAD = (
    "| offset: {offset} {timestamp_type}: {timestamp} keySize: {key_size} valueSize: {value_size}"
)
RECORD_V2 = _RECORD_HEAD + " sequence: {sequence} headerKeys: [{header_keys}]"
"""DumpLogSegments.dumpBatchRecords' metadata of a v2 record."""
RECORD_LEGACY = _RECORD_HEAD + " isValid: {record_is_valid} crc: {record_crc}"
RECORD_LEGACY_SCALA = RECORD_LEGACY + "}}"
"""The Scala tool (Kafka <= 4.2) closed a legacy record's crc with a stray ``}``."""
CONTROL = "{control}"
"""A control record's type (and marker or KRaft record) after its metadata."""


def batch_line(batch: Batch, position: int, valid: bool) -> str:
    """DumpLogSegments.printBatchLevel."""
    template = BATCH_V2 if batch.magic >= 2 else BATCH_LEGACY
    return template.format_map(BatchFields(batch._replace(position=position), valid))


def record_template(magic: int, is_control: bool, opts: DumpOptions) -> str:
    """The record line's template: metadata (unless skipped), a control record's type, then
    the key and payload with --print-data-log (never for control records)."""
    parts = []
    release = opts.release
    if not opts.skip_record_metadata:
        if magic >= 2:
            parts.append(RECORD_V2)
        else:
            parts.append(
                RECORD_LEGACY_SCALA if release.legacy_crc_has_stray_brace else RECORD_LEGACY
            )
        if is_control:
            parts.append(CONTROL)
    if opts.print_data_log and not is_control:
        if not opts.skip_record_metadata:
            parts.append("{content}")
        else:
            parts.append(
                "{content_first}" if release.indents_first_payload else "{content_first_scala}"
            )
    return "".join(parts)


class _TextRecordFields(RecordFields):
    """The record fields plus ``control``, which only the text dump shows."""

    __slots__ = ()

    def __getitem__(self, name: str) -> str:
        if name == "control":
            return _control_text(self.record)
        return super().__getitem__(name)


def _control_text(record: Record) -> str:
    key = control_record_key(record)
    if key is None:
        return " controlType: UNKNOWN(-1)"
    if key.type in (ABORT, COMMIT):
        marker = end_transaction_marker(record)
        epoch = "?" if marker is None else marker.coordinator_epoch
        return f" endTxnMarker: {key.type_name} coordinatorEpoch: {epoch}"
    # KRaft's control records only (a metadata log): the schemas' module where they are
    from kdump.format.internal import decode_control_record

    decoded = decode_control_record(key.type, record)
    if decoded is not None:
        return decoded.text()
    # ControlRecordType.toString() is the bare enum name, UNKNOWN for ids it does not know.
    name = CONTROL_TYPE_NAMES.get(key.type, "UNKNOWN")
    return f" controlType: {name}({key.type})"


def record_line(record: Record, batch: Batch, opts: DumpOptions) -> str:
    """One record of a deep iteration: metadata, then content (DumpLogSegments.dumpBatchRecords).

    Kafka always ends the record with a newline, so a record with nothing to show is an empty line.
    """
    return record_template(batch.magic, batch.is_control, opts).format_map(
        _record_fields(record, batch, opts)
    )


def record_pieces(record: Record, batch: Batch, opts: DumpOptions) -> Iterator[bytes]:
    """``record_line`` and its line feed in UTF-8, a long record's a slice at a time
    (``runs.line_pieces``)."""
    template = record_template(batch.magic, batch.is_control, opts)
    if record.size_in_bytes > runs.LONG_RECORD:
        fields = _record_fields(record, batch, opts, in_parts=True)
        yield from runs.line_pieces(fields.parts(template))
    else:
        yield template.format_map(_record_fields(record, batch, opts)).encode() + b"\n"


def _record_fields(
    record: Record, batch: Batch, opts: DumpOptions, in_parts: bool = False
) -> _TextRecordFields:
    ctx = RecordContext(
        batch,
        opts.key_decoder,
        opts.value_decoder,
        lambda r: record_content(r, opts),
        (lambda r: _content_parts(r, opts)) if in_parts else None,
    )
    return _TextRecordFields(record, ctx)


def _content_parts(record: Record, opts: DumpOptions) -> tuple[TextParts | None, TextParts | None]:
    """``record_content`` in parts: a long key's or value's text that Kafka's StringDecoder
    makes (no decoder asked for) a slice at a time, never whole (3 bytes a byte not UTF-8)."""
    if opts.message_parser is not None:
        return _whole(opts.message_parser.texts(record))
    parts: list[TextParts | None] = []
    for data, decoder in ((record.key, opts.key_decoder), (record.value, opts.value_decoder)):
        if data is not None and decoder is default_decoder and len(data) > runs.SLICE_CHARS:
            parts.append(java_string_slices(data, runs.SLICE_CHARS))
        else:
            parts.append(None if data is None else (apply_decoder(decoder, data, record.offset),))
    return parts[0], parts[1]


def _whole(texts: tuple[str | None, str | None]) -> tuple[TextParts | None, TextParts | None]:
    key, value = texts
    return (None if key is None else (key,)), (None if value is None else (value,))


def record_content(record: Record, opts: DumpOptions) -> tuple[str | None, str | None]:
    """The key and payload texts (None: not printed): the message parser's, or the decoders'."""
    if opts.message_parser is not None:
        return opts.message_parser.texts(record)
    return (
        None if record.key is None else apply_decoder(opts.key_decoder, record.key, record.offset),
        None
        if record.value is None
        else apply_decoder(opts.value_decoder, record.value, record.offset),
    )


def _log_header(file: StoredFile) -> str:
    path, name = file.path, file.name
    if name == BOOTSTRAP_CHECKPOINT:
        return "KRaft bootstrap snapshot"
    if name.endswith(CHECKPOINT_SUFFIX):
        match = _SNAPSHOT_NAME.match(name)
        if match is None:
            raise InputError(path, "KRaft snapshot name is not <20-digit offset>-<10-digit epoch>")
        return f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}"
    return f"Log starting offset: {base_offset_of(file)}"


def log_renderer(
    log: FileRecords,
    opts: DumpOptions,
    python_batch: PythonBatch,
    *,
    as_json: bool,
    batch_template: str,
    record_template: str,
) -> RunRenderer:
    """The bulk renderer of a log's lines under these options (text or JSON Lines)."""
    return RunRenderer(
        log,
        python_batch,
        as_json=as_json,
        batch_template=batch_template,
        record_template=record_template if opts.deep else None,
        key_decoder=opts.key_decoder,
        value_decoder=opts.value_decoder,
        records_in_c=opts.message_parser is None,
        max_batch_bytes=opts.max_batch_bytes,
        distinct_gaps=opts.release.sorts_summary_offsets,
    )


def rendered(
    walk: LogWalk,
    renderer: RunRenderer,
    problems: DumpProblems,
    path: str,
    batch_filter: BatchFilter,
) -> Iterator[bytes]:
    """Every run of the walk as lines (the batches ``batch_filter`` keeps: the others are never
    decoded), then the walk's error where it ended at one; what the renderer saw (invalid
    batches; with text, non-consecutive offsets) goes to ``problems`` even when a batch
    raises."""
    try:
        for run in walk:
            yield from renderer.run(batch_filter.apply(run))
    finally:
        problems.invalid_batches += renderer.invalid
        # batches left out by a filter are gaps, not offsets out of order
        if not renderer.as_json and batch_filter.is_empty:
            for pair in renderer.gaps:
                _note(problems.non_consecutive, path, pair)
            if renderer.gaps_not_kept:
                not_kept = problems.non_consecutive_not_kept
                not_kept[_abs(path)] = not_kept.get(_abs(path), 0) + renderer.gaps_not_kept
                problems.gaps_kept = runs.MAX_GAPS
    stop = walk.stop
    assert stop is not None
    if stop.error is not None:
        raise stop.error


def dump_log(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems, span: LogSpan = WHOLE
) -> Iterator[Line | Chunk]:
    """A log's lines (``span``: the part of them one of --jobs' pieces writes)."""
    if span.first:
        yield Line(OUT, _log_header(file))
    with closing(file.open_log()) as log:
        yield from _log_lines(file, log, opts, problems, span)


def _log_lines(
    file: StoredFile, log: FileRecords, opts: DumpOptions, problems: DumpProblems, span: LogSpan
) -> Iterator[Line | Chunk]:
    path = file.path
    walk = span_walk(log, opts, span)

    # the renderer and this closure refer to each other: the map is closed by dump_log, not
    # left to the garbage collector (the CLI runs it rarely)
    def python_batch(batch: Batch, valid: bool, skip: int = 0) -> Iterator[bytes]:
        return _batch_lines(log, batch, valid, opts, renderer, skip)

    renderer = log_renderer(
        log,
        opts,
        python_batch,
        as_json=False,
        batch_template=BATCH_V2,
        record_template=record_template(2, False, opts),
    )
    renderer.last_offset = span.last_offset
    yield from map(Chunk, rendered(walk, renderer, problems, path, opts.batch_filter))
    stop = walk.stop
    assert stop is not None
    # Kafka's rule: the trailing bytes are reported only when no --max-bytes was given.
    if span.last and stop.remaining and stop.reason in _TRAILING and opts.max_bytes == INT32_MAX:
        problems.trailing_bytes += stop.remaining
        yield Line(OUT, f"Found {stop.remaining} invalid bytes at the end of {terminal(file.name)}")


def _batch_lines(
    log: FileRecords,
    batch: Batch,
    valid: bool,
    opts: DumpOptions,
    renderer: RunRenderer,
    skip: int = 0,
) -> Iterator[bytes]:
    """One batch's line and its records' lines, by the Python templates, in UTF-8 pieces
    (``PythonBatch``; after ``skip`` records the C renderer gave: no batch line then)."""
    if not skip:
        yield batch_line(batch, batch.position, valid).encode() + b"\n"
    if opts.deep:
        for record in islice(log.records(batch, opts.max_batch_bytes), skip, None):
            renderer.note_record(record.offset)
            if record.size_in_bytes > runs.LONG_RECORD:  # no generator a short record
                yield from record_pieces(record, batch, opts)
            else:
                yield record_line(record, batch, opts).encode() + b"\n"


_TRAILING = (StopReason.TRUNCATED_TAIL, StopReason.LIMIT)


__all__ = [
    "BATCH_LEGACY",
    "BATCH_V2",
    "batch_line",
    "dump_log",
    "log_renderer",
    "record_content",
    "record_line",
    "record_pieces",
    "record_template",
    "rendered",
]
