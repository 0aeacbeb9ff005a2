"""Records inside batches: magic v2 records (DefaultRecord) and legacy v0/v1 inner messages
(LegacyRecord), with Kafka's control-record keys and end-transaction markers.

v2 record (varints zig-zag)::

    length varint | attributes int8 | timestamp_delta varlong | offset_delta varint
    key_length varint (-1 null) | key | value_length varint (-1 null) | value
    header_count varint | per header: key_length varint, key (UTF-8), value_length varint, value
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from kdump.crc import Buffer, crc32
from kdump.errors import CorruptRecordError, DecompressionError
from kdump.format.batch import (
    COMPRESSION_MASK,
    LEGACY_CRC_START,
    LEGACY_HEADER_V0,
    LEGACY_HEADER_V1,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_BIT,
    Batch,
    LegacyRecordBatch,
    RecordBatch,
    increment_sequence,
)
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES, CodecError, decompress

_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")

ABORT, COMMIT = 0, 1
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = 2, 3, 4, 5, 6
CONTROL_TYPE_NAMES = {  # ControlRecordType
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}


class Header(NamedTuple):
    key: str
    value: bytes | None


class Record(NamedTuple):
    """One record with its absolute offset and timestamp; ``crc``/``is_valid`` for v0/v1 only."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    sequence: int
    attributes: int
    size_in_bytes: int
    crc: int | None = None
    is_valid: bool | None = None

    @property
    def key_size(self) -> int:
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        return -1 if self.value is None else len(self.value)

    @property
    def header_keys(self) -> list[str]:
        return [h.key for h in self.headers]


class ControlRecordKey(NamedTuple):
    version: int
    type: int

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, f"UNKNOWN({self.type})")


class EndTransactionMarker(NamedTuple):
    version: int
    coordinator_epoch: int


def control_record_key(record: Record) -> ControlRecordKey | None:
    """ControlRecordType.parse: the key's version and type, or None when it is too short."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        return None
    return ControlRecordKey(*_CONTROL_KEY.unpack_from(record.key))


def end_transaction_marker(record: Record) -> EndTransactionMarker | None:
    """EndTransactionMarker.deserializeValue, or None when the value is too short."""
    if record.value is None or len(record.value) < _END_TXN_MARKER.size:
        return None
    return EndTransactionMarker(*_END_TXN_MARKER.unpack_from(record.value))


class _Malformed(Exception):
    """Raised inside the record decoder; turned into CorruptRecordError with a position."""


def _varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    byte = data[pos]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), pos + 1
    raw, shift = byte & 0x7F, 7
    pos += 1
    for _ in range(max_bytes - 1):
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise _Malformed("varint is too long")


def _read(data: bytes, pos: int, size: int, end: int) -> bytes | None:
    if size < 0:
        return None
    if pos + size > end:
        raise _Malformed(f"field of {size} bytes runs past the record")
    return data[pos : pos + size]


def _decode_record(
    data: bytes, pos: int, batch: RecordBatch, log_append_time: bool
) -> tuple[Record, int]:
    length, body = _varint(data, pos, 5)
    end = body + length
    if length < 0 or end > len(data):
        raise _Malformed(f"record length {length} runs past the batch")
    attributes = data[body]
    ts_delta, p = _varint(data, body + 1, 10)
    offset_delta, p = _varint(data, p, 5)
    key_size, p = _varint(data, p, 5)
    key = _read(data, p, key_size, end)
    p += max(key_size, 0)
    value_size, p = _varint(data, p, 5)
    value = _read(data, p, value_size, end)
    p += max(value_size, 0)
    header_count, p = _varint(data, p, 5)
    if header_count < 0:
        raise _Malformed(f"invalid number of record headers {header_count}")
    headers = []
    for _ in range(header_count):
        hkey_size, p = _varint(data, p, 5)
        if hkey_size < 0:
            raise _Malformed(f"invalid negative header key size {hkey_size}")
        hkey = _read(data, p, hkey_size, end)
        p += hkey_size
        hvalue_size, p = _varint(data, p, 5)
        hvalue = _read(data, p, hvalue_size, end)
        p += max(hvalue_size, 0)
        headers.append(Header(hkey.decode("utf-8", "replace"), hvalue))  # type: ignore[union-attr]
    if p != end:
        raise _Malformed(f"expected to read {length} bytes in record payload, read {p - body}")
    base_sequence = batch.base_sequence
    sequence = (
        NO_SEQUENCE
        if base_sequence == NO_SEQUENCE
        else increment_sequence(base_sequence, offset_delta)
    )
    timestamp = batch.max_timestamp if log_append_time else batch.base_timestamp + ts_delta
    record = Record(
        batch.base_offset + offset_delta,
        timestamp,
        key,
        value,
        tuple(headers),
        sequence,
        attributes,
        end - pos,
    )
    return record, end


def _payload(buf: Buffer, batch: Batch, start: int, path: str, max_batch_bytes: int) -> bytes:
    raw = memoryview(buf)[start : batch.end]
    try:
        return decompress(batch.compression, raw, max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, batch.position, str(e)) from None


def iter_v2_records(
    buf: Buffer,
    batch: RecordBatch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """DefaultRecordBatch.iterator(): decompress when needed and decode each record."""
    if batch.records_count < 0:
        raise CorruptRecordError(
            path, batch.position, f"invalid record count {batch.records_count} in v2 batch"
        )
    start = batch.position + RECORD_BATCH_OVERHEAD
    data = _payload(buf, batch, start, path, max_batch_bytes)
    compressed = batch.compression != 0
    log_append_time = batch.timestamp_type == LOG_APPEND_TIME
    pos = 0
    for i in range(batch.records_count):
        try:
            record, pos = _decode_record(data, pos, batch, log_append_time)
        except (_Malformed, IndexError) as e:
            where = batch.position if compressed else start + pos
            reason = str(e) if isinstance(e, _Malformed) else "record runs past the batch"
            raise CorruptRecordError(path, where, f"record {i} of batch: {reason}") from None
        yield record
    if pos != len(data):
        where = batch.position if compressed else start + pos
        raise CorruptRecordError(
            path, where, f"{len(data) - pos} bytes left after {batch.records_count} records"
        )


class _LegacyMessage(NamedTuple):
    offset: int
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    computed_crc: int

    @property
    def end_delta(self) -> int:
        return self.size + LOG_OVERHEAD


def _legacy_message(data: Buffer, pos: int, end: int) -> _LegacyMessage:
    if pos + LOG_OVERHEAD + RECORD_OVERHEAD_V0 > end:
        raise _Malformed("inner message header runs past the wrapper")
    magic = data[pos + LOG_OVERHEAD + 4]
    if magic == 0:
        offset, size, crc, magic, attributes = LEGACY_HEADER_V0.unpack_from(data, pos)
        timestamp, p = NO_TIMESTAMP, pos + LEGACY_HEADER_V0.size
    elif magic == 1:
        if pos + LEGACY_HEADER_V1.size + 8 > end:
            raise _Malformed("inner v1 message header runs past the wrapper")
        offset, size, crc, magic, attributes, timestamp = LEGACY_HEADER_V1.unpack_from(data, pos)
        p = pos + LEGACY_HEADER_V1.size
    else:
        raise _Malformed(f"unknown magic {magic} in a legacy message")
    msg_end = pos + LOG_OVERHEAD + size
    if size < RECORD_OVERHEAD_V0 or msg_end > end:
        raise _Malformed(f"legacy message size {size} runs past its container")
    (key_size,) = _INT32.unpack_from(data, p)
    key = _read(data, p + 4, key_size, msg_end)  # type: ignore[arg-type]
    p += 4 + max(key_size, 0)
    if p + 4 > msg_end:
        raise _Malformed("legacy message value length runs past the message")
    (value_size,) = _INT32.unpack_from(data, p)
    value = _read(data, p + 4, value_size, msg_end)  # type: ignore[arg-type]
    if p + 4 + max(value_size, 0) != msg_end:
        raise _Malformed("legacy message key and value do not fill its size")
    computed = crc32(memoryview(data)[pos + LEGACY_CRC_START : msg_end])
    key = None if key is None else bytes(key)
    value = None if value is None else bytes(value)
    return _LegacyMessage(offset, size, crc, magic, attributes, timestamp, key, value, computed)


def _inner_messages(
    wrapper: _LegacyMessage, path: str, position: int, max_batch_bytes: int
) -> list[_LegacyMessage]:
    try:
        codec = wrapper.attributes & COMPRESSION_MASK
        data = decompress(codec, wrapper.value or b"", max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, position, str(e)) from None
    inner, pos = [], 0
    while pos < len(data):
        try:
            msg = _legacy_message(data, pos, len(data))
        except (_Malformed, IndexError, struct.error) as e:
            raise CorruptRecordError(path, position, f"inner message {len(inner)}: {e}") from None
        if msg.attributes & COMPRESSION_MASK:
            raise CorruptRecordError(
                path, position, "compressed messages with compressed inner messages"
            )
        inner.append(msg)
        pos += msg.end_delta
    if not inner:
        raise CorruptRecordError(path, position, "compressed wrapper holds no inner message")
    return inner


def _absolute_offsets(wrapper: _LegacyMessage, inner: list[_LegacyMessage]) -> list[int]:
    if wrapper.magic == 0:
        return [m.offset for m in inner]
    last = inner[-1].offset
    return [wrapper.offset - last + m.offset for m in inner]


def _wrapper(buf: Buffer, batch_position: int, end: int, path: str) -> _LegacyMessage:
    try:
        return _legacy_message(buf, batch_position, end)
    except (_Malformed, IndexError, struct.error) as e:
        raise CorruptRecordError(path, batch_position, str(e)) from None


def legacy_wrapper_base_offset(buf: Buffer, position: int, path: str, offset: int) -> int:
    """First inner offset of a compressed wrapper; its own offset where it does not decode."""
    try:
        wrapper = _legacy_message(buf, position, len(buf))
        inner = _inner_messages(wrapper, path, position, DEFAULT_MAX_BATCH_BYTES)
    except (CorruptRecordError, DecompressionError, _Malformed, IndexError, struct.error):
        return offset
    return _absolute_offsets(wrapper, inner)[0]


def iter_legacy_records(
    buf: Buffer,
    batch: LegacyRecordBatch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """AbstractLegacyRecordBatch.iterator(): the message itself, or a wrapper's inner messages."""
    wrapper = _wrapper(buf, batch.position, batch.end, path)
    if not wrapper.attributes & COMPRESSION_MASK:
        yield _legacy_record(wrapper, wrapper.offset, wrapper.timestamp)
        return
    inner = _inner_messages(wrapper, path, batch.position, max_batch_bytes)
    log_append = wrapper.magic == 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_BIT)
    for msg, offset in zip(inner, _absolute_offsets(wrapper, inner), strict=True):
        yield _legacy_record(msg, offset, wrapper.timestamp if log_append else msg.timestamp)


def _legacy_record(msg: _LegacyMessage, offset: int, timestamp: int) -> Record:
    return Record(
        offset,
        timestamp,
        msg.key,
        msg.value,
        (),
        NO_SEQUENCE,
        msg.attributes,
        msg.end_delta,
        msg.crc,
        msg.crc == msg.computed_crc,
    )


def iter_records(
    buf: Buffer,
    batch: Batch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """The records of any batch, decoded lazily."""
    if isinstance(batch, RecordBatch):
        return iter_v2_records(buf, batch, path, max_batch_bytes)
    return iter_legacy_records(buf, batch, path, max_batch_bytes)


__all__ = [
    "ABORT",
    "COMMIT",
    "ControlRecordKey",
    "EndTransactionMarker",
    "Header",
    "Record",
    "control_record_key",
    "end_transaction_marker",
    "iter_records",
]
