"""kdump.format.txnindex: 34-byte AbortedTxn entries packed here with struct."""

from __future__ import annotations

import struct

from kdump.format.txnindex import AbortedTxn, TransactionIndex, legacy_version

ENTRY = struct.Struct(">hqqqq")


def test_entries_and_alignment() -> None:
    data = ENTRY.pack(0, 7, 10, 20, 10) + ENTRY.pack(0, 8, 25, 30, 25)
    index = TransactionIndex(data, 0, "t.txnindex")
    assert index.entries == 2 and index.is_aligned and index.file_size == 68
    assert list(index) == [AbortedTxn(0, 7, 10, 20, 10), AbortedTxn(0, 8, 25, 30, 25)]
    torn = TransactionIndex(data + b"\x00" * 5, 0)
    assert not torn.is_aligned and torn.entries == 2


def test_legacy_version_is_the_first_byte_signed() -> None:
    # Kafka <= 4.3 read one byte of the int16 version: 0x0001 passed as 0, 0xff00 as -1
    assert legacy_version(1) == 0
    assert legacy_version(struct.unpack(">h", b"\xff\x00")[0]) == -1
    assert legacy_version(0x0100) == 1
