"""Producer state snapshots (.snapshot, ProducerStateManager.readSnapshot/writeSnapshot).

Header ``version int16 (1), crc uint32`` (CRC-32C of every byte after it), then
``count int32`` and per producer: ``producer_id int64, producer_epoch int16,
last_sequence int32, last_offset int64, offset_delta int32, timestamp int64,
coordinator_epoch int32, current_txn_first_offset int64``.
"""

from __future__ import annotations

import struct

from kdump.crc import Buffer, crc32c
from kdump.errors import FormatError, SnapshotCrcError
from kdump.format.layout import decrement_sequence
from kdump.tuples import NamedTuple

SNAPSHOT_HEADER = struct.Struct(">hIi")
PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")
PRODUCER_SNAPSHOT_VERSION = 1
CRC_START = 6
SCHEMA_FAILED = "Snapshot failed schema validation"


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    offset_delta: int
    timestamp: int


class ProducerSnapshotEntry(NamedTuple):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def last_timestamp(self) -> int:
        return self.timestamp

    @property
    def batch_metadata(self) -> BatchMetadata | None:
        """ProducerStateEntry's last batch, present only when last_offset ≥ 0."""
        if self.last_offset < 0:
            return None
        return BatchMetadata(
            decrement_sequence(self.last_sequence, self.offset_delta),
            self.last_sequence,
            self.last_offset - self.offset_delta,
            self.last_offset,
            self.offset_delta,
            self.timestamp,
        )

    @property
    def open_transaction(self) -> int | None:
        return self.current_txn_first_offset if self.current_txn_first_offset >= 0 else None


class ProducerSnapshot(NamedTuple):
    version: int
    crc: int
    computed_crc: int
    producers: tuple[ProducerSnapshotEntry, ...]

    @property
    def is_valid(self) -> bool:
        return self.crc == self.computed_crc


def parse_producer_snapshot(
    buf: Buffer, path: str = "<bytes>", check_crc: bool = True
) -> ProducerSnapshot:
    """ProducerStateManager.readSnapshot: FormatError with its words where it throws.

    In its order: the version, then the generated ProducerSnapshot reader (a read past the end
    is a BufferUnderflowException, whose message is null; bytes after the last producer are
    not looked at), then the CRC over everything after it.
    """
    view = memoryview(buf)
    size = len(view)

    def schema_failed(position: int, reason: str) -> FormatError:
        return FormatError(path, position, f"{SCHEMA_FAILED}: {reason}")

    if size < 2:
        raise schema_failed(0, "null")
    version = struct.unpack_from(">h", view, 0)[0]
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise schema_failed(0, f"Snapshot contained an unknown file version {version}")
    if size < SNAPSHOT_HEADER.size:
        raise schema_failed(CRC_START - 4 if size < CRC_START else CRC_START, "null")
    _, crc, count = SNAPSHOT_HEADER.unpack_from(view, 0)
    remaining = size - SNAPSHOT_HEADER.size
    if count < 0:
        raise schema_failed(CRC_START, "non-nullable field producerEntries was serialized as null")
    if count > remaining:
        raise schema_failed(
            CRC_START,
            f"Tried to allocate a collection of size {count}, but there are only {remaining} "
            "bytes remaining.",
        )
    if count * PRODUCER_ENTRY.size > remaining:
        whole = remaining // PRODUCER_ENTRY.size
        raise schema_failed(SNAPSHOT_HEADER.size + whole * PRODUCER_ENTRY.size, "null")
    computed = crc32c(view[CRC_START:])
    if check_crc and crc != computed:
        raise SnapshotCrcError(
            path,
            2,
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}",
        )
    producers = tuple(
        ProducerSnapshotEntry(
            *PRODUCER_ENTRY.unpack_from(view, SNAPSHOT_HEADER.size + i * PRODUCER_ENTRY.size)
        )
        for i in range(count)
    )
    return ProducerSnapshot(version, crc, computed, producers)
