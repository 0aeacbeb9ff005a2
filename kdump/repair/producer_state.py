"""The part of Kafka's ProducerStateManager that rebuilding a .txnindex needs: which producer
has a transaction open since which offset, and the last stable offset when one completes.

Kafka's ``LogSegment.updateProducerState`` (called by ``LogSegment.recover`` for every magic v2
batch with a producer id) feeds each batch to a ``ProducerAppendInfo`` with origin REPLICATION:

- a transactional data batch of a producer with no open transaction opens one at the batch's
  base offset (``appendDataBatch``; ``ongoingTxns`` is keyed by that first offset);
- a control batch's first record is an end-transaction marker (``appendEndTxnMarker``): when the
  producer has an open transaction it completes as ``CompletedTxn(pid, firstOffset,
  lastOffset = the marker batch's base offset, isAborted)``; an empty control batch is skipped;
- an aborted one is written to the segment's transaction index as
  ``AbortedTxn(version 0, pid, firstOffset, lastOffset, lastStableOffset)``, where
  ``lastStableOffset`` is ``ProducerStateManager.lastStableOffset``: the first offset of the
  earliest *other* ongoing transaction, else the marker offset + 1; then the transaction is
  removed from ``ongoingTxns`` (``completeTxn``).

Epoch and sequence checks only log for origin REPLICATION, so they do not change the result.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kdump.checks.findings import Finding, Severity
from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.format.batch import NO_PRODUCER_ID, RecordBatch
from kdump.format.records import ABORT, COMMIT, control_record_key, iter_v2_records
from kdump.format.snapshot import ProducerSnapshot
from kdump.format.txnindex import ABORTED_TXN, CURRENT_VERSION, AbortedTxn

ABORTED_TXN_WRITE = ABORTED_TXN
"""TransactionIndex.append: the generated AbortedTxn, version prefixed (a whole int16)."""


@dataclass
class ProducerStateTracker:
    """Open transactions by producer id, and their first offsets in offset order."""

    current_txn_first_offset: dict[int, int] = field(default_factory=dict)
    """ProducerStateEntry.currentTxnFirstOffset of every producer with an open transaction."""
    ongoing_txns: dict[int, int] = field(default_factory=dict)
    """ProducerStateManager.ongoingTxns: first offset -> producer id."""

    @classmethod
    def from_snapshot(cls, snapshot: ProducerSnapshot) -> ProducerStateTracker:
        """ProducerStateManager.loadFromSnapshot: open transactions become ongoing ones."""
        tracker = cls()
        for entry in snapshot.producers:
            first = entry.open_transaction
            if first is not None:
                tracker._open(entry.producer_id, first)
        return tracker

    def _open(self, producer_id: int, first_offset: int) -> None:
        self.current_txn_first_offset[producer_id] = first_offset
        self.ongoing_txns[first_offset] = producer_id

    def last_stable_offset(self, producer_id: int, last_offset: int) -> int:
        """ProducerStateManager.lastStableOffset(completedTxn)."""
        others = [first for first, pid in self.ongoing_txns.items() if pid != producer_id]
        return min(others) if others else last_offset + 1

    def update(self, buf: Buffer, batch: RecordBatch, path: str) -> AbortedTxn | Finding | None:
        """Feed one v2 batch; the AbortedTxn it completes, or a Finding where Kafka would throw."""
        producer_id = batch.producer_id
        if producer_id <= NO_PRODUCER_ID:
            return None
        if batch.is_control:
            return self._end_txn_marker(buf, batch, path)
        open_first = self.current_txn_first_offset.get(producer_id)
        if batch.is_transactional:
            if open_first is None:
                self._open(producer_id, batch.base_offset)
        elif open_first is not None:
            return Finding(
                "TXN_STATE_INVALID",
                Severity.WARNING,
                path,
                f"non-transactional batch of producer {producer_id} while its transaction from "
                f"offset {open_first} is open (Kafka's recovery throws InvalidTxnStateException)",
                offset=batch.base_offset,
                position=batch.position,
            )
        return None

    def _end_txn_marker(
        self, buf: Buffer, batch: RecordBatch, path: str
    ) -> AbortedTxn | Finding | None:
        try:
            record = next(iter(iter_v2_records(buf, batch, path)), None)
        except KdumpError as e:
            return _marker_finding(batch, path, f"control record does not decode: {e}")
        if record is None:
            return None  # an empty control batch: the transaction was cleaned away
        key = control_record_key(record)
        if key is None or key.type not in (ABORT, COMMIT):
            what = "a control record too short for a type" if key is None else key.type_name
            return _marker_finding(batch, path, f"control batch holds {what}, not a marker")
        producer_id = batch.producer_id
        first = self.current_txn_first_offset.pop(producer_id, None)
        if first is None:
            return None  # a marker without data completes nothing (appendEndTxnMarker)
        last = batch.base_offset
        lso = self.last_stable_offset(producer_id, last)
        self.ongoing_txns.pop(first, None)
        if key.type != ABORT:
            return None
        return AbortedTxn(CURRENT_VERSION, producer_id, first, last, lso)


def _marker_finding(batch: RecordBatch, path: str, message: str) -> Finding:
    return Finding(
        "TXN_STATE_INVALID",
        Severity.WARNING,
        path,
        f"{message} (Kafka's recovery throws here)",
        offset=batch.base_offset,
        position=batch.position,
    )


def txn_index_bytes(aborted: Iterable[AbortedTxn]) -> bytes:
    """The .txnindex file TransactionIndex.append writes for these entries, in order."""
    return b"".join(ABORTED_TXN_WRITE.pack(*txn) for txn in aborted)
