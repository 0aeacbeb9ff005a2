"""Records inside batches: the Record every magic decodes to, magic v2 records (DefaultRecord),
Kafka's control-record keys and end-transaction markers. The v0/v1 messages are in legacy.py.

v2 record (varints zig-zag)::

    length varint | attributes int8 | timestamp_delta varlong | offset_delta varint
    key_length varint (-1 null) | key | value_length varint (-1 null) | value
    header_count varint | per header: key_length varint, key (UTF-8), value_length varint, value
"""

from __future__ import annotations

import binascii
import itertools
import struct
from collections.abc import Iterable, Iterator
from enum import IntEnum
from typing import TYPE_CHECKING, Any, TypeAlias

from kdump import speedups
from kdump.crc import Buffer
from kdump.errors import CodecError, CorruptRecordError, DecompressionError, Malformed
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES, decompress
from kdump.format.layout import INT32_MAX, NO_SEQUENCE, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_BIT
from kdump.java import java_string
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump._speedups import RecordError
    from kdump.format.batch import RecordBatch
    from kdump.speedups import Native

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

    def lossless_content(self) -> dict[str, Any]:
        """The key, value and headers as lossless JSON (``kept``): what ``kdump --files --json``
        writes with no decoder, and salvage exports for a producer to write again."""
        key, key_encoding = kept(self.key)
        value, value_encoding = kept(self.value)
        return {
            "key": key,
            "key_encoding": key_encoding,
            "value": value,
            "value_encoding": value_encoding,
            "headers": [header_object(h.key, *kept(h.value)) for h in self.headers],
        }


UTF8, BASE64 = "utf8", "base64"
"""The encodings of lossless JSON: the bytes are this UTF-8 text, or this base64."""


def lossless(data: bytes) -> tuple[str, str]:
    """Bytes as JSON text that gives them back, and its encoding: the text when the bytes are
    UTF-8 (strict: no surrogates, overlong forms or code points past U+10FFFF), else base64."""
    try:
        return str(data, "utf-8"), UTF8
    except UnicodeDecodeError:
        import base64  # only for bytes that are not text

        return base64.b64encode(data).decode("ascii"), BASE64


class LongBytes:
    """Bytes of many MB as ``lossless`` shows them, its text made a slice at a time
    (``texts``), never whole: a dump's line of a long value (kdump.render.runs.line_pieces).
    No tuple (a JSON array to json.dumps), no str: only ``json_parts`` writes it."""

    __slots__ = ("data", "encoding")

    def __init__(self, data: memoryview, encoding: str) -> None:
        self.data, self.encoding = data, encoding

    def texts(self, step: int) -> Iterator[str]:
        """``lossless(data)``'s text in slices of about ``step`` bytes: UTF-8 cut before a lead
        or single byte, base64 at a multiple of three bytes."""
        view = self.data
        if self.encoding == BASE64:
            step = max(3, step - step % 3)
            for i in range(0, len(view), step):
                yield binascii.b2a_base64(view[i : i + step], newline=False).decode()
            return
        for start, end in _utf8_slices(view, step):
            yield str(view[start:end], "utf-8")


def _utf8_slices(view: memoryview, step: int) -> Iterator[tuple[int, int]]:
    """(start, end) of slices of about ``step`` bytes, each cut before a lead or single byte
    (one is at most three bytes on in UTF-8: past that, the bytes are not UTF-8, ``end`` -1)."""
    start = 0
    while start < len(view):
        end = min(start + step, len(view))
        stop = min(end + 4, len(view))
        while end < stop and 0x80 <= view[end] <= 0xBF:
            end += 1
        if end < len(view) and 0x80 <= view[end] <= 0xBF:
            yield start, -1
            return
        yield start, end
        start = end


def long_bytes(data: bytes, step: int) -> LongBytes:
    """``data``'s ``lossless`` text to be made a slice at a time: UTF-8 when every slice
    decodes (checked a slice at a time, never whole), else base64."""
    view = memoryview(data)
    try:
        for start, end in _utf8_slices(view, step):
            if end < 0:
                return LongBytes(view, BASE64)
            str(view[start:end], "utf-8")
    except UnicodeDecodeError:
        return LongBytes(view, BASE64)
    return LongBytes(view, UTF8)


def kept(data: bytes | None) -> tuple[str | None, str | None]:
    """``lossless``, with null for null (a null key, a tombstone, a null header value)."""
    return (None, None) if data is None else lossless(data)


def header_object(key: str, value: Any, encoding: str | None) -> dict[str, Any]:
    """A header in JSON: its key (Kafka's String) and its value, with the value's encoding."""
    return {"key": key, "value": value, "value_encoding": encoding}


native_module = speedups.native()
if native_module is not None:
    # the C decoder's records are a C Record that prints, pickles and delegates as this one
    native_module.set_record_class(Record)
    if tuple(native_module.RECORD_FIELDS) != Record._fields:  # pragma: no cover
        raise ImportError("kdump._speedups was built from another kdump/_speedups.c: reinstall")


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


HEADER_COST = 512
"""Bytes a decoded record header takes at most, with what renders it: its Header tuple, key
and value objects, and its JSON object (kdump.render.jsonl)."""


class RecordFault(IntEnum):
    """Why a v2 record does not decode. The C decoder reports the same codes (its
    RECORD_FAULTS, checked below); both decoders' errors are worded by fault_reason."""

    OK = 0
    PAST_BATCH = 1
    VARINT_TOO_LONG = 2
    BAD_LENGTH = 3
    FIELD_PAST_RECORD = 4
    BAD_HEADER_COUNT = 5
    BAD_HEADER_KEY = 6
    BAD_RECORD_SIZE = 7
    TOO_MANY_HEADERS = 8
    UNMODELLED = 9
    """Something only the Python decoder models (a varlong above 63 bits): never worded."""


_FAULT_REASONS = {
    RecordFault.PAST_BATCH: "record runs past the batch",
    RecordFault.VARINT_TOO_LONG: "varint is too long",
    RecordFault.BAD_LENGTH: "record length {0} runs past the batch",
    RecordFault.FIELD_PAST_RECORD: "field of {0} bytes runs past the record",
    RecordFault.BAD_HEADER_COUNT: "invalid number of record headers {0}",
    RecordFault.BAD_HEADER_KEY: "invalid negative header key size {0}",
    RecordFault.BAD_RECORD_SIZE: "expected to read {0} bytes in record payload, read {1}",
    RecordFault.TOO_MANY_HEADERS: (
        "{0} headers, more than the {1} kdump decodes of one record within --max-batch-bytes "
        "(a header takes about " + str(HEADER_COST) + " bytes decoded: raise it to read this one)"
    ),
}


def fault_reason(fault: int, detail: int = 0, detail2: int = 0) -> str:
    return _FAULT_REASONS[RecordFault(fault)].format(detail, detail2)


def _malformed(fault: RecordFault, detail: int = 0, detail2: int = 0) -> Malformed:
    return Malformed(fault_reason(fault, detail, detail2))


def zigzag_varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """A zig-zag varint (``max_bytes`` 5) or varlong (10) at ``pos``; the value and the next pos.
    Past the end of ``data``: IndexError; longer than ``max_bytes``: Malformed.

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
    raise _malformed(RecordFault.VARINT_TOO_LONG)


def _zigzag_table(bits: int) -> tuple[int, ...]:
    # (raw >> 1) ^ -(raw & 1) for every raw below 1 << bits, by slices: 0, -1, 1, -2, 2, ...
    # (a generator over 16 k values took a few ms of every start-up)
    half = 1 << (bits - 1)
    table = [0] * (2 * half)
    table[0::2] = range(half)
    table[1::2] = range(-1, -half - 1, -1)
    return tuple(table)


_ZIGZAG: tuple[int, ...] = ()
"""Every zig-zag varint of one or two bytes, by its 14-bit payload: ``_ZIGZAG[b]`` for the
one-byte varint b < 0x80, ``_ZIGZAG[(b & 0x7F) | c << 7]`` for the bytes b >= 0x80, c < 0x80.
Made by the first Python decode (``_zigzag``): ~0.5 ms that a run with the C decoder, or
none decoding records (verify, an index dump), does not pay at start-up."""


def _zigzag() -> tuple[int, ...]:
    global _ZIGZAG
    if not _ZIGZAG:
        _ZIGZAG = _zigzag_table(14)
    return _ZIGZAG


def read_field(data: Buffer, pos: int, size: int, end: int, copy: bool = True) -> bytes | None:
    """The field of ``size`` bytes at ``pos`` (None: -1, null), checked to end by ``end``;
    without ``copy`` only checked (None)."""
    if size < 0:
        return None
    if pos + size > end:
        raise _malformed(RecordFault.FIELD_PAST_RECORD, size)
    return bytes(data[pos : pos + size]) if copy else None


def _headers(
    data: bytes, p: int, count: int, end: int, max_headers: int
) -> tuple[tuple[Header, ...] | None, int]:
    """``count`` record headers from ``p``: key length varint, UTF-8 key, value length, value;
    more than ``max_headers`` only checked, as the C decoder checks them, none made (None: the
    caller refuses the record once its size is checked, as C does)."""
    if count < 0:
        raise _malformed(RecordFault.BAD_HEADER_COUNT, count)
    make = count <= max_headers  # else only checked, as C checks them, then refused
    zigzag = _ZIGZAG or _zigzag()
    headers = []
    for _ in range(count):
        b = data[p]
        key_size, p = (zigzag[b], p + 1) if b < 0x80 else zigzag_varint(data, p, 5)
        if key_size < 0:
            raise _malformed(RecordFault.BAD_HEADER_KEY, key_size)
        key = data[p : p + key_size]
        p += key_size
        if p > end:
            raise _malformed(RecordFault.FIELD_PAST_RECORD, key_size)
        b = data[p]
        value_size, p = (zigzag[b], p + 1) if b < 0x80 else zigzag_varint(data, p, 5)
        if value_size < 0:
            value = None
        else:
            value = data[p : p + value_size]
            p += value_size
            if p > end:
                raise _malformed(RecordFault.FIELD_PAST_RECORD, value_size)
        # DefaultRecord.readHeaders: Utils.utf8(buffer, size), new String(bytes, UTF_8)
        if make:
            headers.append(_new(Header, (java_string(key), value)))
    return (tuple(headers) if make else None), p


def v2_payload(
    buf: Buffer, batch: RecordBatch, start: int, path: str, max_batch_bytes: int
) -> bytes | bytearray | memoryview:
    """The records' bytes of a v2 batch (they begin at ``start``): in place when not compressed
    (no copy), else decompressed."""
    raw = memoryview(buf)[start : batch.end]
    if not batch.compression:
        return raw
    try:
        return decompress(batch.compression, raw, max_batch_bytes)
    except CodecError as e:
        raise DecompressionError(path, batch.position, str(e)) from None


DecodedSlice: TypeAlias = "tuple[list[Record], int, RecordError | None]"
"""What the C decoder hands back for a slice: its records, where it stopped, what stopped it."""

SLICE_RECORDS = 4096
"""Records the C decoder makes per call: a batch's records are Python objects a slice at a time,
so a batch of millions (a decompression bomb: 38 M records of 7 bytes in a 22 KB zstd batch)
costs its payload and one slice, not a Python object per record at once (issue 27)."""
SLICE_BYTES = 1 << 20
"""... and no more than this many payload bytes per slice (keys and values are copied)."""


def max_headers(max_batch_bytes: int) -> int:
    """The most headers one record may hold to be decoded: its headers as Python objects, and
    as JSON (a dict each), cost about HEADER_COST bytes apiece; bounded so, one record costs
    at most --max-batch-bytes beside its payload (issue 39: 10 M empty headers, 20 MB
    decompressed from a 1.8 KB file, took a JSON Lines dump to 1.5 GB)."""
    return max(1, max_batch_bytes // HEADER_COST)


def iter_v2_records(
    buf: Buffer,
    batch: RecordBatch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """DefaultRecordBatch.iterator(): decompress when needed and decode each record, with
    Kafka's checks; a record that does not decode raises after the records before it.

    The C decoder gives the records as lists of a slice each (iterating a list costs no
    generator step per record); the Python decoder, the reference, decodes them as they are
    asked for.
    """
    count = batch.records_count
    if count < 0:
        raise CorruptRecordError(path, batch.position, f"invalid record count {count} in v2 batch")
    start = batch.position + RECORD_BATCH_OVERHEAD
    data = v2_payload(buf, batch, start, path, max_batch_bytes)
    # LogAppendTime: every record reports the batch's max timestamp
    append_time = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_BIT else None
    native = speedups.native()
    most = max_headers(max_batch_bytes)
    if native is None:
        return _decode_v2(bytes(data), batch, start, path, append_time, most=most)
    decoded = _native_slice(native, data, batch, append_time, 0, 0, most)
    if decoded is None:  # something only the Python decoder below models
        return _decode_v2(bytes(data), batch, start, path, append_time, most=most)
    records, pos, error = decoded
    if error is None and pos == len(data) and len(records) == count:
        return iter(records)  # the usual batch: one slice
    slices = _native_slices(native, data, batch, start, path, append_time, decoded, most)
    return itertools.chain.from_iterable(slices)


def _native_slice(
    native: Native,
    data: Buffer,
    batch: RecordBatch,
    append_time: int | None,
    pos: int,
    first: int,
    most: int,
) -> DecodedSlice | None:
    return native.v2_records(
        data,
        batch.records_count,
        batch.base_offset,
        batch.base_timestamp,
        append_time,
        batch.base_sequence,
        Record,
        Header,
        pos,
        first,
        SLICE_RECORDS,
        SLICE_BYTES,
        most,
    )


def _native_slices(
    native: Native,
    data: Buffer,
    batch: RecordBatch,
    start: int,
    path: str,
    append_time: int | None,
    decoded: DecodedSlice,
    most: int,
) -> Iterator[Iterable[Record]]:
    """The records slice by slice from the first one decoded, then the error where decoding
    stopped; the Python decoder takes over where a record needs it."""
    first = 0
    while True:
        records, pos, error = decoded
        yield records
        first += len(records)
        if error is not None:
            reason = fault_reason(error.fault, error.detail, error.detail2)
            where = _where(batch, start, pos)
            raise CorruptRecordError(path, where, f"record {error.record} of batch: {reason}")
        if first >= batch.records_count:
            _check_all_read(path, batch, start, pos, len(data))
            return
        next_slice = _native_slice(native, data, batch, append_time, pos, first, most)
        if next_slice is None:
            yield _decode_v2(bytes(data), batch, start, path, append_time, pos, first, most)
            return
        decoded = next_slice


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
    data: bytes,
    batch: RecordBatch,
    start: int,
    path: str,
    append_time: int | None,
    pos: int = 0,
    first: int = 0,
    most: int = 1 << 62,
) -> Iterator[Record]:
    """Records ``first`` on, from ``pos`` in the payload ``data``; ``most`` headers a record."""
    count, size = batch.records_count, len(data)
    base_offset, base_timestamp = batch.base_offset, batch.base_timestamp
    base_sequence = batch.base_sequence
    sequence_room = INT32_MAX - base_sequence  # offset deltas that add without wrapping
    zigzag = _ZIGZAG or _zigzag()
    i = first
    try:
        # DefaultRecord.readFrom. Each varint is read inline (one byte, two bytes, else _varint):
        # repeated on purpose, a function call per varint would double the decoding time
        # (bench/bench_dump.py measures it).
        for i in range(first, count):  # noqa: B007 (i names the record in the error below)
            b = data[pos]
            if b < 0x80:
                length, p = zigzag[b], pos + 1
            elif (c := data[pos + 1]) < 0x80:
                length, p = zigzag[(b & 0x7F) | c << 7], pos + 2
            else:
                length, p = zigzag_varint(data, pos, 5)
            end = p + length
            if length < 0 or end > size:
                raise _malformed(RecordFault.BAD_LENGTH, length)
            body = p
            attributes = data[p]
            b = data[p + 1]
            if b < 0x80:
                timestamp_delta, p = zigzag[b], p + 2
            elif (c := data[p + 2]) < 0x80:
                timestamp_delta, p = zigzag[(b & 0x7F) | c << 7], p + 3
            else:
                timestamp_delta, p = zigzag_varint(data, p + 1, 10)
            b = data[p]
            if b < 0x80:
                offset_delta, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                offset_delta, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                offset_delta, p = zigzag_varint(data, p, 5)
            b = data[p]
            if b < 0x80:
                key_size, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                key_size, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                key_size, p = zigzag_varint(data, p, 5)
            if key_size < 0:
                key = None
            else:
                key = data[p : p + key_size]
                p += key_size
                if p > end:
                    raise _malformed(RecordFault.FIELD_PAST_RECORD, key_size)
            b = data[p]
            if b < 0x80:
                value_size, p = zigzag[b], p + 1
            elif (c := data[p + 1]) < 0x80:
                value_size, p = zigzag[(b & 0x7F) | c << 7], p + 2
            else:
                value_size, p = zigzag_varint(data, p, 5)
            if value_size < 0:
                value = None
            else:
                value = data[p : p + value_size]
                p += value_size
                if p > end:
                    raise _malformed(RecordFault.FIELD_PAST_RECORD, value_size)
            b = data[p]
            if b == 0:  # no header, the usual case
                headers: tuple[Header, ...] | None = ()
                p += 1
            elif b < 0x80:
                header_count = zigzag[b]
                headers, p = _headers(data, p + 1, header_count, end, most)
            else:
                header_count, p = zigzag_varint(data, p, 5)
                headers, p = _headers(data, p, header_count, end, most)
            if p != end:
                raise _malformed(RecordFault.BAD_RECORD_SIZE, length, p - body)
            if headers is None:
                raise _malformed(RecordFault.TOO_MANY_HEADERS, header_count, most)
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
    except (Malformed, IndexError) as e:
        reason = str(e) if isinstance(e, Malformed) else fault_reason(RecordFault.PAST_BATCH)
        raise CorruptRecordError(
            path, _where(batch, start, pos), f"record {i} of batch: {reason}"
        ) from None
    _check_all_read(path, batch, start, pos, size)


__all__ = [
    "ABORT",
    "BASE64",
    "COMMIT",
    "UTF8",
    "ControlRecordKey",
    "EndTransactionMarker",
    "Header",
    "Record",
    "control_record_key",
    "end_transaction_marker",
    "header_object",
    "iter_v2_records",
    "kept",
    "lossless",
    "v2_payload",
]

if native_module is not None and tuple(native_module.RECORD_FAULTS) != tuple(
    RecordFault.__members__
):  # pragma: no cover
    raise ImportError("kdump._speedups was built from another kdump/_speedups.c: reinstall")
