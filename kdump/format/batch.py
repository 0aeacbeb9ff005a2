"""Record batches as they lie in a .log file: magic v2 (DefaultRecordBatch) and the legacy
magic v0/v1 shallow messages (AbstractLegacyRecordBatch), their headers and checksums. The byte
layout of both is drawn in layout.py; Kafka's way of reading one (FileLogInputStream.nextBatch)
is kdump.format.walk's ``read_batch``, their records ``iter_records`` (records.py decodes v2's,
legacy.py v0/v1's).
"""

from __future__ import annotations

from kdump.crc import Buffer, crc32, crc32c_range
from kdump.format.layout import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_BIT,
    CREATE_TIME,
    DELETE_HORIZON_BIT,
    LEGACY_CRC_START,
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MIN_V2_BATCH_LENGTH,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    increment_sequence,
    java_long,
)
from kdump.tuples import NamedTuple


class RecordBatch(NamedTuple):
    """A magic v2 batch header; fields as in DefaultRecordBatch, plus its file position."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def end(self) -> int:
        return self.position + self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return java_long(self.base_offset + self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def count_or_null(self) -> int | None:
        """RecordBatch.countOrNull (not ``count``, which would shadow tuple.count)."""
        return self.records_count

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    def compute_checksum(self, buf: Buffer) -> int:
        position = self.position
        return crc32c_range(
            buf, position + ATTRIBUTES_OFFSET, position + LOG_OVERHEAD + self.batch_length
        )

    def is_valid(self, buf: Buffer) -> bool:
        """DefaultRecordBatch.isValid: a whole header and a matching CRC-32C."""
        position, batch_length = self.position, self.batch_length
        if batch_length < MIN_V2_BATCH_LENGTH:
            return False
        end = position + LOG_OVERHEAD + batch_length
        return crc32c_range(buf, position + ATTRIBUTES_OFFSET, end) == self.crc


class LegacyRecordBatch(NamedTuple):
    """A magic v0/v1 shallow message: a plain message, or a wrapper around compressed ones.

    ``base_offset`` is the first inner offset of a compressed wrapper (Kafka decompresses to
    learn it) and the message's own offset otherwise.
    """

    position: int
    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    base_offset: int

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def end(self) -> int:
        return self.position + self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def count_or_null(self) -> int | None:
        """AbstractLegacyRecordBatch.countOrNull: a shallow message does not know its count."""
        return None

    @property
    def records_count(self) -> int | None:
        return None

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_BIT else CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def is_transactional(self) -> bool:
        return False

    @property
    def is_control(self) -> bool:
        return False

    @property
    def delete_horizon_ms(self) -> int | None:
        return None

    # AbstractLegacyRecordBatch answers RecordBatch's "no value" constants for these.
    @property
    def producer_id(self) -> int:
        return NO_PRODUCER_ID

    @property
    def producer_epoch(self) -> int:
        return NO_PRODUCER_EPOCH

    @property
    def base_sequence(self) -> int:
        return NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return NO_SEQUENCE

    @property
    def partition_leader_epoch(self) -> int:
        return NO_PARTITION_LEADER_EPOCH

    def compute_checksum(self, buf: Buffer) -> int:
        return crc32(memoryview(buf)[self.position + LEGACY_CRC_START : self.end])

    def is_valid(self, buf: Buffer) -> bool:
        return self.compute_checksum(buf) == self.crc


Batch = RecordBatch | LegacyRecordBatch
