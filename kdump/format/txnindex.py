"""The transaction index (.txnindex, Kafka's TransactionIndex): 34-byte AbortedTxn entries
``version int16, producer_id int64, first_offset int64, last_offset int64,
last_stable_offset int64``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from kdump.crc import Buffer

ABORTED_TXN = struct.Struct(">bxqqqq")
"""AbortedTxn.version() reads only the first byte of the int16 version field, signed."""
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    def __init__(self, buf: Buffer, base_offset: int, path: str = "<bytes>") -> None:
        self.buf, self.base_offset, self.path = buf, base_offset, path

    entry_size = ABORTED_TXN.size

    @property
    def file_size(self) -> int:
        return len(self.buf)

    @property
    def entries(self) -> int:
        return len(self.buf) // ABORTED_TXN.size

    @property
    def is_aligned(self) -> bool:
        return len(self.buf) % ABORTED_TXN.size == 0

    def entry(self, i: int) -> AbortedTxn:
        return AbortedTxn(*ABORTED_TXN.unpack_from(self.buf, i * ABORTED_TXN.size))

    def __iter__(self) -> Iterator[AbortedTxn]:
        return (self.entry(i) for i in range(self.entries))

    def sanity_check(self) -> str | None:
        """TransactionIndex.sanityCheck, plus the version check its reader makes."""
        if not self.is_aligned:
            return (
                f"Transaction index file {self.path} is corrupt, found {self.file_size} bytes "
                f"which is neither positive nor a multiple of {ABORTED_TXN.size}."
            )
        for txn in self:
            if txn.version > CURRENT_VERSION:
                return (
                    f"Unexpected aborted transaction version {txn.version} in transaction index "
                    f"{self.path}, current version is {CURRENT_VERSION}"
                )
            if txn.last_offset < self.base_offset:
                return (
                    f"Last offset of aborted transaction {txn} in index {self.path} is less than "
                    f"start offset {self.base_offset}"
                )
        return None
