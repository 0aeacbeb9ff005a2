"""A test-only writer of transactional partitions, independent of kdump: batches from
kafka-python's DefaultRecordBatchBuilder (header fields the broker sets patched in, per
FORMAT.md §2), control markers, producer snapshots (FORMAT.md §7, ProducerSnapshot v1),
.txnindex entries, and __transaction_state records encoded by hand from TransactionLogKey /
TransactionLogValue v0."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import crc32c
from batchbytes import fix_crc
from kafka.record.default_records import DefaultRecordBatchBuilder

ABORT, COMMIT = 0, 1
CONTROL = 0x20
SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
ABORTED_TXN = struct.Struct(">hqqqq")


def batch_bytes(
    base_offset: int,
    timestamps: list[int],
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    leader_epoch: int = 0,
    records: list[tuple[bytes | None, bytes | None]] | None = None,
    control: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        2, 0, transactional, producer_id, producer_epoch, base_sequence, 1 << 20
    )
    for i, ts in enumerate(timestamps):
        key, value = records[i] if records else (f"k{base_offset + i}".encode(), b"v" * 10)
        builder.append(i, ts, key, value, [])
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    struct.pack_into(">i", raw, 12, leader_epoch)
    if control:
        (attributes,) = struct.unpack_from(">h", raw, 21)
        struct.pack_into(">h", raw, 21, attributes | CONTROL)
    fix_crc(raw, 0)
    return bytes(raw)


def marker_bytes(
    offset: int,
    producer_id: int,
    producer_epoch: int,
    control_type: int,
    coordinator_epoch: int,
    timestamp: int,
    leader_epoch: int = 0,
) -> bytes:
    """An end-transaction marker: key ``version int16 0, type int16``, value ``version int16 0,
    coordinator_epoch int32``, in a transactional control batch."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return batch_bytes(
        offset,
        [timestamp],
        producer_id,
        producer_epoch,
        -1,
        True,
        leader_epoch,
        [(key, value)],
        control=True,
    )


def snapshot_bytes(entries: list[tuple[int, ...]]) -> bytes:
    """ProducerSnapshot v1: version, crc (CRC-32C of what follows it), count, entries
    (producer_id, epoch, last_sequence, last_offset, offset_delta, timestamp,
    coordinator_epoch, current_txn_first_offset)."""
    body = struct.pack(">i", len(entries)) + b"".join(SNAPSHOT_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def txn_index_bytes(entries: list[tuple[int, int, int, int]]) -> bytes:
    """AbortedTxn entries (producer_id, first_offset, last_offset, last_stable_offset)."""
    return b"".join(ABORTED_TXN.pack(0, *e) for e in entries)


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    data: bytes


@dataclass
class PartitionWriter:
    """Appends batches at the next offset; ``roll()`` starts a segment there."""

    directory: Path
    next_offset: int = 0
    segments: dict[int, list[Batch]] = field(default_factory=lambda: {0: []})
    current: int = 0

    def _add(self, data: bytes, count: int) -> Batch:
        batch = Batch(self.next_offset, self.next_offset + count - 1, data)
        self.segments[self.current].append(batch)
        self.next_offset += count
        return batch

    def data(
        self,
        count: int,
        timestamp: int,
        producer_id: int = -1,
        producer_epoch: int = -1,
        sequence: int = -1,
        transactional: bool = False,
        leader_epoch: int = 0,
    ) -> Batch:
        raw = batch_bytes(
            self.next_offset,
            [timestamp] * count,
            producer_id,
            producer_epoch,
            sequence,
            transactional,
            leader_epoch,
        )
        return self._add(raw, count)

    def marker(
        self,
        producer_id: int,
        producer_epoch: int,
        control_type: int,
        coordinator_epoch: int,
        timestamp: int,
    ) -> Batch:
        raw = marker_bytes(
            self.next_offset,
            producer_id,
            producer_epoch,
            control_type,
            coordinator_epoch,
            timestamp,
        )
        return self._add(raw, 1)

    def raw(self, data: bytes, count: int) -> Batch:
        return self._add(data, count)

    def roll(self) -> None:
        self.current = self.next_offset
        self.segments[self.current] = []

    def write(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        for base, batches in self.segments.items():
            log = self.directory / f"{base:020d}.log"
            log.write_bytes(b"".join(b.data for b in batches))
        return self.directory

    def write_file(self, name: str, data: bytes) -> None:
        (self.directory / name).write_bytes(data)


# -- __transaction_state (TransactionLog key and value v0, by hand) -----------------------------


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def txn_log_key(transactional_id: str) -> bytes:
    """record type int16 0 (TRANSACTION_LOG), then TransactionLogKey v0: TransactionalId."""
    return struct.pack(">h", 0) + _string(transactional_id)


def txn_log_value(
    producer_id: int,
    producer_epoch: int,
    timeout_ms: int,
    state: int,
    partitions: dict[str, list[int]] | None,
    last_update: int,
    start: int,
) -> bytes:
    """version int16 0, then TransactionLogValue v0 (non-flexible)."""
    out = struct.pack(">hqhib", 0, producer_id, producer_epoch, timeout_ms, state)
    if partitions is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(partitions))
        for topic, ids in partitions.items():
            out += _string(topic) + struct.pack(">i", len(ids))
            out += b"".join(struct.pack(">i", i) for i in ids)
    return out + struct.pack(">qq", last_update, start)


def java_string_hash(text: str) -> int:
    """String.hashCode by its definition: s[0]*31^(n-1) + ... + s[n-1], in a signed int32."""
    n = len(text)
    total = sum(ord(c) * 31 ** (n - 1 - i) for i, c in enumerate(text)) % (1 << 32)
    return total - (1 << 32) if total >= 1 << 31 else total


def partition_for(transactional_id: str, count: int) -> int:
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % count
