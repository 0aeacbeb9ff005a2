"""Open transactions and the last stable offset, which bounds what the cleaner may clean: what
``kdump txn`` finds (kdump.txn.analysis: the broker's snapshot choice and replay, one
producer-state model), in the form the compaction answer reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdump.partition import PartitionLog
from kdump.txn.analysis import TxnOptions, analyze_partition


@dataclass(frozen=True)
class OpenTransaction:
    producer_id: int
    first_offset: int
    completed_at: int | None = None
    """The end marker's offset, for a transaction completed at or above the high watermark."""


@dataclass(frozen=True)
class OpenTransactions:
    transactions: tuple[OpenTransaction, ...]
    snapshot: str | None
    """The producer snapshot the replay started from (None: the log start offset)."""
    replayed_from: int
    last_stable_offset: int


def open_transactions(log: PartitionLog, now: int) -> OpenTransactions:
    """The transactions a broker loading this partition would find open (and those completed
    at or above the high watermark), and the last stable offset they leave."""
    report = analyze_partition(log.directory, TxnOptions(now=now))
    assert report is not None, "a partition with segments"
    found = [OpenTransaction(t.producer_id, t.first_offset) for t in report.open_transactions]
    found += [
        OpenTransaction(t.producer_id, t.first_offset, t.last_offset) for t in report.unreplicated
    ]
    found.sort(key=lambda t: t.first_offset)
    return OpenTransactions(
        tuple(found), report.snapshot, report.replayed_from, report.last_stable_offset
    )
