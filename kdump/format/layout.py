"""The byte layout of Kafka's log: where each field of a batch header or legacy message lies,
the attribute bits, the "no value" constants, and Java's integer arithmetic on them.

The one definition the Python readers and the C extension's tests share; nothing here reads
bytes.

v2 header, all big-endian::

     0 base_offset int64 | 8 batch_length int32 | 12 partition_leader_epoch int32
    16 magic int8 | 17 crc uint32 (CRC-32C of [21, end)) | 21 attributes int16
    23 last_offset_delta int32 | 27 base_timestamp int64 | 35 max_timestamp int64
    43 producer_id int64 | 51 producer_epoch int16 | 53 base_sequence int32 | 57 records_count int32

Legacy message: offset int64, size int32, crc uint32 (CRC-32 of [16, end)), magic int8,
attributes int8, [timestamp int64, v1 only], key_length int32, key, value_length int32, value.
"""

from __future__ import annotations

import struct

LOG_OVERHEAD = 12
"""offset int64 + size int32, the part of every batch its size field does not count."""
HEADER_SIZE_UP_TO_MAGIC = 17
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22

V2_FIELDS = (
    ("base_offset", "q"),
    ("batch_length", "i"),
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
"""The v2 header's fields in order, as DefaultRecordBatch names them, with their struct codes."""
V2_HEADER = struct.Struct(">" + "".join(code for _, code in V2_FIELDS))
RECORD_BATCH_OVERHEAD = V2_HEADER.size
MIN_V2_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
"""The smallest batch_length of a v2 batch: its header after the length field."""
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = CRC_OFFSET + 4
LOG_HEADER = struct.Struct(">qi")
MAGIC_OFFSET = 16
LEGACY_HEADER_V0 = struct.Struct(">qiIbb")
LEGACY_HEADER_V1 = struct.Struct(">qiIbbq")
LEGACY_CRC_START = LOG_OVERHEAD + 4

OFFSET_INDEX_ENTRY = struct.Struct(">ii")
"""An .index entry: offset relative to the segment's base offset, position in the .log."""
TIME_INDEX_ENTRY = struct.Struct(">qi")
"""A .timeindex entry: timestamp, offset relative to the segment's base offset."""

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
"""Uuid.ZERO_UUID in base64: "no topic id" in partition.metadata and metadata records."""

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_TIMESTAMP_TYPE, CREATE_TIME, LOG_APPEND_TIME = -1, 0, 1
TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


def timestamp_type(value: int) -> str:
    """TimestampType's name (its toString), Kafka's words for an unknown one too."""
    return TIMESTAMP_TYPE_NAMES.get(value, f"UnknownTimestampType({value})")


NO_TIMESTAMP = -1
NO_SEQUENCE = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_PARTITION_LEADER_EPOCH = -1
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit long, as Java's arithmetic wraps it: Kafka's
    lastOffset() is baseOffset + lastOffsetDelta in a long."""
    return value - (1 << 64) if value > INT64_MAX else value


def increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap to 0, never to a negative number."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _v2_field_offsets() -> dict[str, int]:
    offsets, at = {}, 0
    for name, code in V2_FIELDS:
        offsets[name] = at
        at += struct.calcsize(">" + code)
    return offsets


LAYOUT = {
    "LOG_OVERHEAD": LOG_OVERHEAD,
    **_v2_field_offsets(),
    "RECORD_BATCH_OVERHEAD": RECORD_BATCH_OVERHEAD,
    "MIN_V2_BATCH_LENGTH": MIN_V2_BATCH_LENGTH,
    "OFFSET_INDEX_ENTRY": OFFSET_INDEX_ENTRY.size,
    "OFFSET_INDEX_POSITION_AT": 4,
    "TIME_INDEX_ENTRY": TIME_INDEX_ENTRY.size,
    "TIME_INDEX_OFFSET_AT": 8,
}
"""Every byte offset and size the C extension hard-codes, by the name its LAYOUT gives it
(tests/test_speedups.py compares the two)."""

DEFAULT_MAX_BATCH_BYTES = 256 * 1024 * 1024
"""kdump's own bound on one batch's decompressed payload (``--max-batch-bytes``): not a Kafka
setting; kdump.format.compression checks it. Here, where nothing heavy is imported, so the
command line can show it without loading the codecs."""
