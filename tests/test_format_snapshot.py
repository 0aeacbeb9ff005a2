"""kdump.format.snapshot: a producer snapshot (version, CRC-32C, entries) packed here with
struct and crc32c, then read as ProducerStateManager.readSnapshot does."""

from __future__ import annotations

import struct

import crc32c
import pytest

from kdump.errors import FormatError, SnapshotCrcError
from kdump.format.snapshot import parse_producer_snapshot

ENTRY = struct.Struct(">qhiqiqiq")  # id, epoch, last seq, last offset, delta, ts, coord epoch, txn


def snapshot(*entries: tuple[int, ...], version: int = 1) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def test_entries_read_back() -> None:
    data = snapshot(
        (7, 0, 9, 109, 9, 1700000000000, -1, -1), (8, 2, 4, 120, 0, 1700000000500, 3, 118)
    )
    s = parse_producer_snapshot(data)
    assert s.is_valid and len(s.producers) == 2
    first, second = s.producers
    assert first.batch_metadata is not None and first.batch_metadata.first_offset == 100
    assert first.open_transaction is None and second.open_transaction == 118


def test_crc_covers_everything_after_it() -> None:
    data = bytearray(snapshot((7, 0, 9, 109, 9, 1700000000000, -1, -1)))
    data[-1] ^= 1
    with pytest.raises(SnapshotCrcError):
        parse_producer_snapshot(bytes(data))
    assert not parse_producer_snapshot(bytes(data), check_crc=False).is_valid


def test_unknown_version_and_short_files() -> None:
    with pytest.raises(FormatError, match="unknown file version 2"):
        parse_producer_snapshot(snapshot(version=2))
    with pytest.raises(FormatError):
        parse_producer_snapshot(snapshot((7, 0, 9, 109, 9, 1, -1, -1))[:-4])
