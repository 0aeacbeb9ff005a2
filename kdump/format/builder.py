"""Magic v2 batches written as Kafka writes them: MemoryRecordsBuilder (records appended with
their own offsets and timestamps, compressed at the codec's default level, the header written
last with its CRC-32C) and DefaultRecordBatch.writeEmptyHeader (a batch of no records that keeps
its offsets and producer fields). The reading side is batch.py and records.py; a batch built here
from the records read out of one reads back to them (tests/test_compact_build.py).

A record (DefaultRecord.writeTo), varints zig-zag::

    length varint | attributes int8 (0) | timestamp_delta varlong | offset_delta varint
    key_length varint (-1 null) | key | value_length varint (-1 null) | value
    header_count varint | per header: key_length varint, key (UTF-8), value_length varint, value
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kdump.crc import crc32c
from kdump.format.compression import NONE, compress
from kdump.format.layout import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_BIT,
    CRC_OFFSET,
    DELETE_HORIZON_BIT,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    V2_HEADER,
)
from kdump.format.records import Header
from kdump.tuples import NamedTuple

MAGIC_V2 = 2


class BatchHeader(NamedTuple):
    """What a built batch takes from the batch it replaces (MemoryRecordsBuilder's arguments)."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    compression: int
    log_append_time_ms: int | None
    """LogAppendTime batches: the append time (the replaced batch's max timestamp); None:
    CreateTime (a v0 message's NoTimestampType included)."""
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool


def zigzag_varint(value: int, out: bytearray) -> None:
    """ByteUtils.writeVarint/writeVarlong: zig-zag, then 7 bits a byte, low first."""
    n = (value << 1) ^ (value >> 63)
    n &= (1 << 64) - 1
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _nullable(data: bytes | None, out: bytearray) -> None:
    if data is None:
        zigzag_varint(-1, out)
    else:
        zigzag_varint(len(data), out)
        out += data


def write_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
    out: bytearray,
) -> None:
    """DefaultRecord.writeTo: the body, preceded by its length; attributes are always 0."""
    body = bytearray(b"\x00")
    zigzag_varint(timestamp_delta, body)
    zigzag_varint(offset_delta, body)
    _nullable(key, body)
    _nullable(value, body)
    zigzag_varint(len(headers), body)
    for header in headers:
        # Java encodes the key String as UTF-8; a lone surrogate becomes '?'
        name = header.key.encode("utf-8", "replace")
        zigzag_varint(len(name), body)
        body += name
        _nullable(header.value, body)
    zigzag_varint(len(body), out)
    out += body


class BuiltRecord(NamedTuple):
    """One record to append: absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header]


def build_batch(
    header: BatchHeader, records: Iterable[BuiltRecord], delete_horizon_ms: int | None
) -> bytes:
    """MemoryRecordsBuilder (magic 2) over ``records``, closed: the base timestamp is the delete
    horizon when one is set, else the first record's timestamp; the max timestamp is the batch's
    append time under LogAppendTime, else the greatest record timestamp (-1 with none)."""
    base_timestamp = delete_horizon_ms
    max_timestamp = NO_TIMESTAMP
    body = bytearray()
    count = 0
    for record in records:
        if base_timestamp is None:
            base_timestamp = record.timestamp
        max_timestamp = max(max_timestamp, record.timestamp)
        write_record(
            record.offset - header.base_offset,
            record.timestamp - base_timestamp,
            record.key,
            record.value,
            record.headers,
            body,
        )
        count += 1
    base = NO_TIMESTAMP if base_timestamp is None else base_timestamp
    return batch_of(header, body, count, base, max_timestamp, delete_horizon_ms is not None)


def batch_of(
    header: BatchHeader,
    body: bytes | bytearray,
    count: int,
    base_timestamp: int,
    max_timestamp: int,
    delete_horizon: bool,
) -> bytes:
    """MemoryRecordsBuilder.close over ``count`` records already written (``body``, each as
    write_record writes it, timestamps from ``base_timestamp``): compressed with the batch's
    codec, the header written with its CRC. ``max_timestamp``: the greatest record timestamp
    (the batch's append time replaces it under LogAppendTime)."""
    payload = compress(header.compression, bytes(body)) if header.compression != NONE else body
    if header.log_append_time_ms is not None:
        max_timestamp = header.log_append_time_ms
    return _with_header(
        header,
        RECORD_BATCH_OVERHEAD + len(payload),
        base_timestamp,
        max_timestamp,
        delete_horizon,
        count,
        payload,
    )


def empty_batch(header: BatchHeader, max_timestamp: int) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: no records, no compression, base timestamp -1."""
    plain = header._replace(compression=NONE)
    return _with_header(plain, RECORD_BATCH_OVERHEAD, NO_TIMESTAMP, max_timestamp, False, 0, b"")


def _with_header(
    header: BatchHeader,
    size: int,
    base_timestamp: int,
    max_timestamp: int,
    delete_horizon: bool,
    count: int,
    payload: bytes | bytearray,
) -> bytes:
    """DefaultRecordBatch.writeHeader, then the payload; the CRC covers attributes onwards."""
    attributes = (header.compression & COMPRESSION_MASK) | (
        (TIMESTAMP_TYPE_BIT if header.log_append_time_ms is not None else 0)
        | (TRANSACTIONAL_BIT if header.is_transactional else 0)
        | (CONTROL_BIT if header.is_control else 0)
        | (DELETE_HORIZON_BIT if delete_horizon else 0)
    )
    out = bytearray(
        V2_HEADER.pack(
            header.base_offset,
            size - LOG_OVERHEAD,
            header.partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            header.last_offset - header.base_offset,
            base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            count,
        )
    )
    out += payload
    crc = crc32c(memoryview(out)[ATTRIBUTES_OFFSET:])
    out[CRC_OFFSET : CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return bytes(out)


__all__ = [
    "BatchHeader",
    "BuiltRecord",
    "batch_of",
    "build_batch",
    "empty_batch",
    "write_record",
    "zigzag_varint",
]
