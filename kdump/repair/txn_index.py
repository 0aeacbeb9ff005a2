"""The .txnindex bytes a recovery writes; the producer state it keeps while writing them is
Kafka's ProducerStateManager, in :mod:`kdump.producer_state` (shared with ``kdump txn``)."""

from __future__ import annotations

from collections.abc import Iterable

from kdump.format.txnindex import ABORTED_TXN, AbortedTxn

ABORTED_TXN_WRITE = ABORTED_TXN
"""TransactionIndex.append: the generated AbortedTxn, version prefixed (a whole int16)."""


def txn_index_bytes(aborted: Iterable[AbortedTxn]) -> bytes:
    """The .txnindex file TransactionIndex.append writes for these entries, in order."""
    return b"".join(ABORTED_TXN_WRITE.pack(*txn) for txn in aborted)
