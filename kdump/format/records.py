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

from kdump import speedups
from kdump.crc import Buffer, crc32
from kdump.errors import CorruptRecordError, DecompressionError, KdumpError
from kdump.format.batch import (
    COMPRESSION_MASK,
    INT32_MAX,
    LEGACY_CRC_START,
    LEGACY_HEADER_V0,
    LEGACY_HEADER_V1,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_BIT,
    Batch,
    LegacyRecordBatch,
    RecordBatch,
)
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES, ZSTD, CodecError, decompress

_INT32 = struct.Struct(">i")
_new = tuple.__new__
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


native_module = speedups.native()
if native_module is not None:
    # the C decoder's records are a C Record that prints, pickles and delegates as this one
    native_module.set_record_class(Record)


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


class InvalidWrapperError(CorruptRecordError):
    """A v0/v1 compressed wrapper Kafka's deep iterator refuses (InvalidRecordException).

    The message is Kafka's own: AbstractLegacyRecordBatch.DeepRecordsIterator throws it, so
    kafka-dump-log.sh stops on it, consumers fail on it and a broker cannot serve it.
    """


class _Malformed(Exception):
    """Raised inside the record decoder; turned into CorruptRecordError with a position."""


def _varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """A zig-zag varint (``max_bytes`` 5) or varlong (10) at ``pos``; the value and the next pos.

    The record decoder reads the one- and two-byte varints itself (with _ZIGZAG) and calls this
    for the longer ones.
    """
    raw, shift = 0, 0
    for _ in range(max_bytes):
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise _Malformed("varint is too long")


_ZIGZAG = tuple((raw >> 1) ^ -(raw & 1) for raw in range(1 << 14))
"""Every zig-zag varint of one or two bytes, by its 14-bit payload: ``_ZIGZAG[b]`` for the
one-byte varint b < 0x80, ``_ZIGZAG[(b & 0x7F) | c << 7]`` for the bytes b >= 0x80, c < 0x80."""


def _read(data: Buffer, pos: int, size: int, end: int) -> bytes | None:
    if size < 0:
        return None
    if pos + size > end:
        raise _Malformed(f"field of {size} bytes runs past the record")
    return bytes(data[pos : pos + size])


def _headers(data: bytes, p: int, count: int, end: int) -> tuple[tuple[Header, ...], int]:
    """``count`` record headers from ``p``: key length varint, UTF-8 key, value length, value."""
    if count < 0:
        raise _Malformed(f"invalid number of record headers {count}")
    zigzag = _ZIGZAG
    headers = []
    for _ in range(count):
        b = data[p]
        key_size, p = (zigzag[b], p + 1) if b < 0x80 else _varint(data, p, 5)
        if key_size < 0:
            raise _Malformed(f"invalid negative header key size {key_size}")
        key = data[p : p + key_size]
        p += key_size
        if p > end:
            raise _Malformed(f"field of {key_size} bytes runs past the record")
        b = data[p]
        value_size, p = (zigzag[b], p + 1) if b < 0x80 else _varint(data, p, 5)
        if value_size < 0:
            value = None
        else:
            value = data[p : p + value_size]
            p += value_size
            if p > end:
                raise _Malformed(f"field of {value_size} bytes runs past the record")
        headers.append(_new(Header, (key.decode("utf-8", "replace"), value)))
    return tuple(headers), p


def _payload(
    buf: Buffer, batch: Batch, start: int, path: str, max_batch_bytes: int
) -> bytes | memoryview:
    """The records' bytes: in place when not compressed (no copy), else decompressed."""
    raw = memoryview(buf)[start : batch.end]
    if not batch.compression:
        return raw
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
    """DefaultRecordBatch.iterator(): decompress when needed and decode each record, with
    Kafka's checks; a record that does not decode raises after the records before it.

    The C decoder gives the batch's records as a list (iterating it costs no generator step
    per record); the Python decoder, the reference, decodes them as they are asked for.
    """
    count = batch.records_count
    if count < 0:
        raise CorruptRecordError(path, batch.position, f"invalid record count {count} in v2 batch")
    start = batch.position + RECORD_BATCH_OVERHEAD
    data = _payload(buf, batch, start, path, max_batch_bytes)
    # LogAppendTime: every record reports the batch's max timestamp
    append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_BIT else None
    native = speedups.native()
    if native is not None:
        decoded = native.v2_records(
            data,
            count,
            batch.base_offset,
            batch.base_timestamp,
            append_time,
            batch.base_sequence,
            Record,
            Header,
        )
        if decoded is not None:  # None: something only the Python decoder below models
            records, pos, error = decoded
            if error is None and pos == len(data):
                return iter(records)
            return _then_raise(records, path, batch, start, pos, error, len(data))
    return _decode_v2(bytes(data), batch, start, path, append_time)


def _then_raise(
    records: list[Record],
    path: str,
    batch: RecordBatch,
    start: int,
    pos: int,
    error: tuple[int, str] | None,
    size: int,
) -> Iterator[Record]:
    """The records that decoded, then the error where decoding stopped."""
    yield from records
    if error is not None:
        i, reason = error
        raise CorruptRecordError(path, _where(batch, start, pos), f"record {i} of batch: {reason}")
    _check_all_read(path, batch, start, pos, size)


def _where(batch: RecordBatch, start: int, pos: int) -> int:
    """The file position of a fault ``pos`` bytes into the payload: the batch if compressed."""
    return batch.position if batch.compression else start + pos


def _check_all_read(path: str, batch: RecordBatch, start: int, pos: int, size: int) -> None:
    """DefaultRecordBatch's iterator: bytes left after the last record are corruption."""
    if pos != size:
        raise CorruptRecordError(
            path,
            _where(batch, start, pos),
            f"{size - pos} bytes left after {batch.records_count} records",
        )


def _decode_v2(
    data: bytes, batch: RecordBatch, start: int, path: str, append_time: int | None
) -> Iterator[Record]:
    count, size = batch.records_count, len(data)
    base_offset, base_timestamp = batch.base_offset, batch.base_timestamp
    base_sequence = batch.base_sequence
    sequence_room = INT32_MAX - base_sequence  # offset deltas that add without wrapping
    zigzag = _ZIGZAG
    pos = i = 0
    try:
        # DefaultRecord.readFrom. Each varint is read inline (one byte, two bytes, else _varint):
        # repeated on purpose, a function call per varint would double the decoding time
        # (bench/bench_dump.py measures it).
        for i in range(count):  # noqa: B007 (i names the record in the error below)
            b = data[pos]
            if b < 0x80:
                length, p = zigzag[b], pos + 1
            elif (c := data[pos + 1]) < 0x80:
                length, p = zigzag[(b & 0x7F) | c << 7], pos + 2
            else:
                length, p = _varint(data, pos, 5)
            end = p + length
            if length < 0 or end > size:
                raise _Malformed(f"record length {length} runs past the batch")
            body = p
            attributes = data[p]
            b = data[p + 1]
            if b < 0x80:
                timestamp_delta, p = zigzag[b], p + 2
            elif (c := data[p + 2]) < 0x80:
                timestamp_delta, p = zigzag[(b & 0x7F) | c << 7], p + 3
            else:
                timestamp_delta, p = _varint(data, p + 1, 10)
            b = data[p]
            if b < 0x80:
                offset_delta, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                offset_delta, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                offset_delta, p = _varint(data, p, 5)
            b = data[p]
            if b < 0x80:
                key_size, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                key_size, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                key_size, p = _varint(data, p, 5)
            if key_size < 0:
                key = None
            else:
                key = data[p : p + key_size]
                p += key_size
                if p > end:
                    raise _Malformed(f"field of {key_size} bytes runs past the record")
            b = data[p]
            if b < 0x80:
                value_size, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                value_size, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                value_size, p = _varint(data, p, 5)
            if value_size < 0:
                value = None
            else:
                value = data[p : p + value_size]
                p += value_size
                if p > end:
                    raise _Malformed(f"field of {value_size} bytes runs past the record")
            b = data[p]
            if b == 0:  # no header, the usual case
                headers: tuple[Header, ...] = ()
                p += 1
            elif b < 0x80:
                headers, p = _headers(data, p + 1, zigzag[b], end)
            else:
                header_count, p = _varint(data, p, 5)
                headers, p = _headers(data, p, header_count, end)
            if p != end:
                raise _Malformed(
                    f"expected to read {length} bytes in record payload, read {p - body}"
                )
            if base_sequence == NO_SEQUENCE:
                sequence = NO_SEQUENCE
            elif offset_delta <= sequence_room:
                sequence = base_sequence + offset_delta
            else:  # DefaultRecordBatch.incrementSequence wraps to 0
                sequence = offset_delta - sequence_room - 1
            yield _new(
                Record,
                (
                    base_offset + offset_delta,
                    base_timestamp + timestamp_delta if append_time is None else append_time,
                    key,
                    value,
                    headers,
                    sequence,
                    attributes,
                    end - pos,
                    None,
                    None,
                ),
            )
            pos = end
    except (_Malformed, IndexError) as e:
        reason = str(e) if isinstance(e, _Malformed) else "record runs past the batch"
        raise CorruptRecordError(
            path, _where(batch, start, pos), f"record {i} of batch: {reason}"
        ) from None
    _check_all_read(path, batch, start, pos, size)


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
    key = _read(data, p + 4, key_size, msg_end)
    p += 4 + max(key_size, 0)
    if p + 4 > msg_end:
        raise _Malformed("legacy message value length runs past the message")
    (value_size,) = _INT32.unpack_from(data, p)
    value = _read(data, p + 4, value_size, msg_end)
    if p + 4 + max(value_size, 0) != msg_end:
        raise _Malformed("legacy message key and value do not fill its size")
    computed = crc32(memoryview(data)[pos + LEGACY_CRC_START : msg_end])
    return _LegacyMessage(offset, size, crc, magic, attributes, timestamp, key, value, computed)


def _inner_messages(
    wrapper: _LegacyMessage, path: str, position: int, max_batch_bytes: int
) -> list[_LegacyMessage]:
    codec = wrapper.attributes & COMPRESSION_MASK
    if codec == ZSTD:
        # Checked before anything is decompressed; Kafka's message names the magic, not the codec.
        raise InvalidWrapperError(
            path,
            position,
            f"Invalid wrapper compressionType found in legacy deep record iterator {wrapper.magic}",
        )
    try:
        data = decompress(codec, wrapper.value or b"", max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, position, str(e)) from None
    inner: list[_LegacyMessage] = []
    pos = 0
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


def _absolute_offsets(
    wrapper: _LegacyMessage, inner: list[_LegacyMessage], path: str, position: int
) -> list[int]:
    """DeepRecordsIterator's absolute offsets (FORMAT.md §3).

    v0 inner offsets are absolute. v1 inner offsets are relative to the wrapper's, which is the
    last inner message's, except that a wrapper offset of 0 (as some librdkafka versions and
    kafka-python's builder write it) leaves the inner offsets as they are, and a nonzero wrapper
    offset below the last relative offset is refused.
    """
    if wrapper.magic == 0 or wrapper.offset == 0:
        return [m.offset for m in inner]
    last = inner[-1].offset
    if wrapper.offset < last:
        raise InvalidWrapperError(
            path,
            position,
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
            f"'{wrapper.offset}' is less than the last inner message offset '{last}' and it is "
            "not zero.",
        )
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
        return _absolute_offsets(wrapper, inner, path, position)[0]
    except (KdumpError, _Malformed, IndexError, struct.error):
        return offset


def legacy_wrapper_error(buf: Buffer, batch: Batch, path: str) -> KdumpError | None:
    """Why Kafka's deep iterator would refuse this shallow message, if it would.

    verify asks without --deep: such a wrapper cannot be served to a consumer. A payload that
    does not decompress is left to the deep checks, as before.
    """
    if not isinstance(batch, LegacyRecordBatch) or not batch.attributes & COMPRESSION_MASK:
        return None
    try:
        wrapper = _legacy_message(buf, batch.position, batch.end)
        _absolute_offsets(
            wrapper,
            _inner_messages(wrapper, path, batch.position, DEFAULT_MAX_BATCH_BYTES),
            path,
            batch.position,
        )
    except InvalidWrapperError as e:
        return e
    except (KdumpError, _Malformed, IndexError, struct.error):
        return None
    return None


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
    offsets = _absolute_offsets(wrapper, inner, path, batch.position)
    for msg, offset in zip(inner, offsets, strict=True):
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
    "InvalidWrapperError",
    "Record",
    "control_record_key",
    "end_transaction_marker",
    "iter_records",
]
