"""Open transactions and the last stable offset, which bounds what the cleaner may clean: the
opened partition's producer state (kdump.unified_log: the broker's snapshot choice and replay,
the one ``kdump txn`` reports), in the form the compaction answer reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdump.unified_log import UnifiedLog


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


def open_transactions(log: UnifiedLog) -> OpenTransactions:
    """The transactions a broker loading this partition would find open (and those completed
    at or above the high watermark), and the last stable offset they leave."""
    end = log.loaded_producer_state
    state = end.state
    found = [
        OpenTransaction(t.producer_id, t.first_offset)
        for t in state.ongoing_txns.values()
        if t.producer_id in state.producers
    ]
    found += [
        OpenTransaction(t.producer_id, t.first_offset, t.last_offset)
        for t in state.unreplicated_txns.values()
    ]
    found.sort(key=lambda t: t.first_offset)
    return OpenTransactions(tuple(found), end.snapshot_path, end.state_from, log.last_stable_offset)
