"""Every value a dumped line shows, by name, and how it reads as text and as JSON.

The line templates (``render/dump_segments.py``: kafka-dump-log.sh's text; ``render/jsonl.py``: JSON
Lines) are ``str.format_map`` strings that name these fields. The Python path fills them with
``BatchFields``/``RecordFields``; the C renderer (``render_batches`` in kdump/_speedups.c) parses
the same templates and renders the same names the same way (tests/test_speedups.py compares
them). Text is Kafka's ``toString()`` (``true``, ``OptionalLong[5]``, ``CreateTime``); JSON is
``json.dumps`` of the value (``true``, ``5``/``null``, ``"CreateTime"``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from kdump.format.batch import Batch
from kdump.format.layout import timestamp_type
from kdump.format.records import Record, header_object, kept
from kdump.format.records import long_bytes as long_bytes_of
from kdump.render.describe import (
    DECODERS,
    Decoder,
    apply_decoder,
    compression,
    default_decoder,
    encoding_of,
    java_bool,
    json_of,
    optional_long,
)

_BATCH_VALUES: dict[str, Callable[[Batch, bool], Any]] = {
    "position": lambda b, v: b.position,
    "base_offset": lambda b, v: b.base_offset,
    "last_offset": lambda b, v: b.last_offset,
    "count": lambda b, v: b.count_or_null,
    "base_sequence": lambda b, v: b.base_sequence,
    "last_sequence": lambda b, v: b.last_sequence,
    "producer_id": lambda b, v: b.producer_id,
    "producer_epoch": lambda b, v: b.producer_epoch,
    "partition_leader_epoch": lambda b, v: b.partition_leader_epoch,
    "is_transactional": lambda b, v: b.is_transactional,
    "is_control": lambda b, v: b.is_control,
    "delete_horizon_ms": lambda b, v: b.delete_horizon_ms,
    "timestamp_type": lambda b, v: timestamp_type(b.timestamp_type),
    "max_timestamp": lambda b, v: b.max_timestamp,
    "size": lambda b, v: b.size,
    "magic": lambda b, v: b.magic,
    "compression": lambda b, v: compression(b.compression),
    "crc": lambda b, v: b.crc,
    "is_valid": lambda b, v: v,
}
"""Each batch field's value, from the batch header and its CRC verdict."""

_TEXT: dict[str, Callable[[Any], str]] = {
    "delete_horizon_ms": optional_long,
}
"""Fields whose text is not ``str(value)`` (booleans print as Java's)."""


def _text(name: str, value: Any) -> str:
    special = _TEXT.get(name)
    if special is not None:
        return special(value)
    if isinstance(value, bool):
        return java_bool(value)
    return str(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


T = TypeVar("T")
TextParts = Iterable[str]
"""A text in parts, joined in order."""


class BatchFields:
    """``template.format_map(BatchFields(batch, valid))``: each field as text, or as JSON."""

    __slots__ = ("batch", "json", "valid")

    def __init__(self, batch: Batch, valid: bool, as_json: bool = False) -> None:
        self.batch, self.valid, self.json = batch, valid, as_json

    def __getitem__(self, name: str) -> str:
        value = _BATCH_VALUES[name](self.batch, self.valid)
        return _json(value) if self.json else _text(name, value)


def batch_values(batch: Batch, valid: bool, names: tuple[str, ...]) -> dict[str, Any]:
    """The values of these batch fields (for JSON objects built as dicts)."""
    return {name: _BATCH_VALUES[name](batch, valid) for name in names}


class RecordContext:
    """What a record's fields need besides the record: its batch and the decoders."""

    __slots__ = (
        "batch",
        "content",
        "content_parts",
        "key_decoder",
        "long_bytes",
        "shown",
        "value_decoder",
    )

    def __init__(
        self,
        batch: Batch,
        key_decoder: Decoder,
        value_decoder: Decoder,
        content: Callable[[Record], tuple[str | None, str | None]] | None = None,
        content_parts: Callable[[Record], tuple[TextParts | None, TextParts | None]] | None = None,
    ) -> None:
        self.batch, self.key_decoder, self.value_decoder = batch, key_decoder, value_decoder
        self.content = content
        """The key and payload texts of the text dump (decoders, or a message parser)."""
        self.content_parts = content_parts
        """... in parts (a long one's a slice at a time), for ``RecordFields.parts``."""
        self.long_bytes = 0
        """Bytes kept (no decoder) past this many are a ``LongBytes`` in JSON (0: never): a
        long record's JSON written a slice at a time (kdump.render.jsonl.json_parts)."""
        self.shown: tuple[Record | None, tuple[Any, str | None], tuple[Any, str | None]] = (
            None,
            (None, None),
            (None, None),
        )
        """The last record's key and value as JSON, with their encodings (each decoded once)."""

    def json_of(self, record: Record) -> tuple[tuple[Any, str | None], tuple[Any, str | None]]:
        """The record's key and value as JSON (``_encoded``), each with its encoding."""
        if self.shown[0] is not record:
            key = _encoded(record.key, self.key_decoder, record.offset, self.long_bytes)
            value = _encoded(record.value, self.value_decoder, record.offset, self.long_bytes)
            self.shown = (record, key, value)
        return self.shown[1], self.shown[2]


def _encoded(
    data: bytes | None, decoder: Decoder, offset: int, long_bytes: int = 0
) -> tuple[Any, str | None]:
    """A key's, value's or header value's JSON and its encoding: by default the bytes kept
    (``lossless``; past ``long_bytes``, a ``LongBytes``); with a decoder its text, structured
    where the decoder gives more (Schema Registry), Kafka's skipping line where it cannot
    decode; null for null."""
    if data is None or decoder is default_decoder:
        if long_bytes and data is not None and len(data) > long_bytes:
            text = long_bytes_of(data, long_bytes)
            return text, text.encoding
        return kept(data)
    return json_of(apply_decoder(decoder, data, offset)), encoding_of(decoder)


def _header_decoder(decoder: Decoder) -> Decoder:
    # Header values are not framed as keys and values are: a plugin decoder sees only those.
    return decoder if decoder in DECODERS.values() else default_decoder


def _headers(record: Record, ctx: RecordContext) -> list[dict[str, Any]]:
    """The headers in order, duplicates kept: each key (Kafka's String) and value."""
    decoder = _header_decoder(ctx.value_decoder)
    headers = []
    for h in record.headers:
        value, encoding = _encoded(h.value, decoder, record.offset, ctx.long_bytes)
        headers.append(header_object(h.key, value, encoding))
    return headers


def _content(record: Record, ctx: RecordContext, prefix: str, payload_prefix: str = "") -> str:
    """`` key: K payload: V`` (each only when not null), the first part after ``prefix``.

    ``payload_prefix``: the Scala tool (Kafka <= 4.2) always printed `` payload:``, even first.
    """
    assert ctx.content is not None
    key, value = ctx.content(record)
    return "".join([label + text for label, text in _labelled(key, value, prefix, payload_prefix)])


def _content_parts(
    record: Record, ctx: RecordContext, prefix: str, payload_prefix: str = ""
) -> Iterator[str]:
    """``_content``'s text in parts, the key's and the value's apart (``content_parts``: a
    long one's a slice at a time)."""
    assert ctx.content_parts is not None
    key, value = ctx.content_parts(record)
    for label, text in _labelled(key, value, prefix, payload_prefix):
        yield label
        yield from text


def _labelled(
    key: T | None, value: T | None, prefix: str, payload_prefix: str
) -> list[tuple[str, T]]:
    """The key and the value (each only when not null) after their labels."""
    labelled = []
    if key is not None:
        labelled.append((f"{prefix}key: ", key))
        prefix = " "
    if value is not None:
        labelled.append((f"{payload_prefix or prefix}payload: ", value))
    return labelled


_RECORD_VALUES: dict[str, Callable[[Record, RecordContext], Any]] = {
    "offset": lambda r, c: r.offset,
    "timestamp": lambda r, c: r.timestamp,
    "timestamp_type": lambda r, c: timestamp_type(c.batch.timestamp_type),
    "key_size": lambda r, c: r.key_size,
    "value_size": lambda r, c: r.value_size,
    "sequence": lambda r, c: r.sequence,
    "header_keys": lambda r, c: r.header_keys,
    "headers": _headers,
    "key": lambda r, c: c.json_of(r)[0][0],
    "key_encoding": lambda r, c: c.json_of(r)[0][1],
    "value": lambda r, c: c.json_of(r)[1][0],
    "value_encoding": lambda r, c: c.json_of(r)[1][1],
    "record_is_valid": lambda r, c: bool(r.is_valid),
    "record_crc": lambda r, c: r.crc,
}
"""Each record field's value."""

_RECORD_TEXT: dict[str, Callable[[Record, RecordContext], str]] = {
    "header_keys": lambda r, c: ",".join(r.header_keys),
    "content": lambda r, c: _content(r, c, " "),
    "content_first": lambda r, c: _content(r, c, "| "),
    "content_first_scala": lambda r, c: _content(r, c, "| ", " "),
}
"""Record fields whose text is not the text of their value."""


_RECORD_TEXT_PARTS: dict[str, Callable[[Record, RecordContext], Iterator[str]]] = {
    "content": lambda r, c: _content_parts(r, c, " "),
    "content_first": lambda r, c: _content_parts(r, c, "| "),
    "content_first_scala": lambda r, c: _content_parts(r, c, "| ", " "),
}
"""... those of them that hold a key's or a value's text, in parts (``RecordFields.parts``)."""


class RecordFields:
    """``template.format_map(RecordFields(record, ctx))``: each field as text, or as JSON."""

    __slots__ = ("ctx", "json", "record")

    def __init__(self, record: Record, ctx: RecordContext, as_json: bool = False) -> None:
        self.record, self.ctx, self.json = record, ctx, as_json

    def parts(self, template: str) -> Iterator[str]:
        """``template.format_map(self)`` as text in parts (a template's last field may be a
        key's and value's text: that in parts of its own); of the text dump."""
        for name, field in _RECORD_TEXT_PARTS.items():
            if template.endswith("{" + name + "}"):
                yield template[: -len(name) - 2].format_map(self)
                yield from field(self.record, self.ctx)
                return
        yield template.format_map(self)

    def __getitem__(self, name: str) -> str:
        if not self.json:
            special = _RECORD_TEXT.get(name)
            if special is not None:
                return special(self.record, self.ctx)
        value = _RECORD_VALUES[name](self.record, self.ctx)
        return _json(value) if self.json else _text(name, value)


def record_values(record: Record, ctx: RecordContext, names: tuple[str, ...]) -> dict[str, Any]:
    """The values of these record fields (for JSON objects built as dicts)."""
    return {name: _RECORD_VALUES[name](record, ctx) for name in names}


def json_template(pairs: tuple[tuple[str, str], ...], constants: dict[str, Any]) -> str:
    """A JSON object's template: ``{"key":{field},...}`` for each (key, field) pair, where a
    field named in ``constants`` is written in as that value's JSON (the object's type, its
    file's path), braces escaped for format_map."""
    parts: list[str] = []
    for key, field in pairs:
        if field in constants:
            value = _json(constants[field]).replace("{", "{{").replace("}", "}}")
        else:
            value = "{" + field + "}"
        parts.append(f"{_json(key)}:{value}")
    return "{{" + ",".join(parts) + "}}"
