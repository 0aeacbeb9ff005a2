"""The transaction index (.txnindex, Kafka's TransactionIndex): 34-byte AbortedTxn entries
``version int16, producer_id int64, first_offset int64, last_offset int64,
last_stable_offset int64``.

Kafka 4.4 reads them with the generated AbortedTxn (clients' AbortedTxn.json, valid version 0
only; KAFKA-19562): the version is the whole int16 and anything but 0 is refused. Up to 4.3 the
hand-written AbortedTxn read only the first byte of it, signed, and refused only values above 0:
:func:`legacy_version` gives that byte.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from kdump.crc import Buffer
from kdump.tuples import NamedTuple

ABORTED_TXN = struct.Struct(">hqqqq")
CURRENT_VERSION = 0
"""AbortedTxn.HIGHEST_SUPPORTED_VERSION (and LOWEST: version 0 is the only one)."""


def legacy_version(version: int) -> int:
    """What Kafka <= 4.3's AbortedTxn.version() returned: the int16's first byte, signed."""
    return version >> 8


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
            if txn.version != CURRENT_VERSION:
                return unexpected_version(txn.version, self.path)
            if txn.last_offset < self.base_offset:
                return (
                    f"Last offset of aborted transaction {describe(txn)} in index {self.path} is "
                    f"less than start offset {self.base_offset}"
                )
        return None


def unexpected_version(version: int, path: str) -> str:
    """TransactionIndex's refusal of an entry whose version is not 0 (Kafka 4.4)."""
    return (
        f"Unexpected aborted transaction version {version} in transaction index {path}, "
        f"supported version range is {CURRENT_VERSION} to {CURRENT_VERSION}"
    )


def describe(txn: AbortedTxn) -> str:
    """The generated AbortedTxn.toString() (Kafka 4.4)."""
    return (
        f"AbortedTxn(producerId={txn.producer_id}, firstOffset={txn.first_offset}, "
        f"lastOffset={txn.last_offset}, lastStableOffset={txn.last_stable_offset})"
    )
