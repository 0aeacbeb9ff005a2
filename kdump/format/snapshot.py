"""Producer state snapshots (.snapshot, ProducerStateManager.readSnapshot/writeSnapshot).

Header ``version int16 (1), crc uint32`` (CRC-32C of every byte after it), then
``count int32`` and per producer: ``producer_id int64, producer_epoch int16,
last_sequence int32, last_offset int64, offset_delta int32, timestamp int64,
coordinator_epoch int32, current_txn_first_offset int64``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kdump.crc import Buffer, crc32c
from kdump.errors import FormatError
from kdump.format.batch import decrement_sequence

SNAPSHOT_HEADER = struct.Struct(">hIi")
PRODUCER_ENTRY = struct.Struct(">qhiqiqiq")
PRODUCER_SNAPSHOT_VERSION = 1
CRC_START = 6
SCHEMA_FAILED = "Snapshot failed schema validation"


class SnapshotCrcError(FormatError):
    """A producer snapshot whose stored CRC does not match its bytes."""


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
    """Read a producer snapshot, raising FormatError where readSnapshot would throw."""
    view = memoryview(buf)
    if len(view) < SNAPSHOT_HEADER.size:
        raise FormatError(
            path,
            0,
            f"Snapshot failed schema validation: {len(view)} bytes are shorter than the header",
        )
    version, crc, count = SNAPSHOT_HEADER.unpack_from(view, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise FormatError(
            path,
            0,
            "Snapshot failed schema validation: Snapshot contained an unknown file version "
            f"{version}",
        )
    computed = crc32c(view[CRC_START:])
    if check_crc and crc != computed:
        raise SnapshotCrcError(
            path,
            2,
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}",
        )
    expected = SNAPSHOT_HEADER.size + max(count, 0) * PRODUCER_ENTRY.size
    if count < 0 or expected != len(view):
        raise FormatError(
            path,
            SNAPSHOT_HEADER.size - 4,
            f"{SCHEMA_FAILED}: {count} producers need {expected} bytes, the file has {len(view)}",
        )
    producers = tuple(
        ProducerSnapshotEntry(
            *PRODUCER_ENTRY.unpack_from(view, SNAPSHOT_HEADER.size + i * PRODUCER_ENTRY.size)
        )
        for i in range(count)
    )
    return ProducerSnapshot(version, crc, computed, producers)
