"""Kafka's producer state, as a partition's leader or a recovering broker keeps it: one
``ProducerStateEntry`` per producer id, the ongoing transactions by first offset, and the last
stable offset they allow (``ProducerStateManager``, ``ProducerAppendInfo``, notes §D.2–D.5).

Every batch with a producer id goes through ``ProducerAppendInfo`` with origin REPLICATION (the
origin of recovery, replay and follower appends), where epoch, sequence and coordinator epoch
checks only log, so they never change the result:

- a data batch updates its producer's entry (epoch, last sequence, last offset, offset delta,
  last timestamp = the batch's max timestamp; a new epoch forgets the earlier batches); a
  transactional batch of a producer with no open transaction opens one at its base offset
  (``currentTxnFirstOffset``; ``ongoingTxns`` is keyed by that offset);
- a control batch's first record is an end-transaction marker (``appendEndTxnMarker``): when
  the producer has an open transaction it completes as ``CompletedTxn(pid, firstOffset,
  lastOffset = the marker batch's base offset, isAborted)``; a marker without data completes
  nothing; either way the entry takes the marker's epoch, coordinator epoch and record
  timestamp, and its transaction is closed. An empty control batch (cleaned) is skipped;
- an aborted transaction's ``AbortedTxn`` carries ``lastStableOffset(completedTxn)``: the first
  offset of the earliest *other* ongoing transaction, else the marker offset + 1; then the
  transaction leaves ``ongoingTxns`` (``completeTxn``) and, until the high watermark passes its
  marker, waits in ``unreplicatedTxns``.

Kafka keeps the last five batches of a producer to spot duplicates; offline only the last one
matters (it is what a snapshot stores), so an entry holds that one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kdump.config import option_default
from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.format.batch import RecordBatch
from kdump.format.layout import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP
from kdump.format.records import (
    ABORT,
    COMMIT,
    control_record_key,
    end_transaction_marker,
    iter_v2_records,
)
from kdump.format.snapshot import ProducerSnapshot, ProducerSnapshotEntry
from kdump.format.txnindex import CURRENT_VERSION, AbortedTxn
from kdump.tuples import NamedTuple

DEFAULT_PRODUCER_ID_EXPIRATION_MS = option_default("producer.id.expiration.ms")
"""producer.id.expiration.ms (TransactionLogConfig)."""
NO_COORDINATOR_EPOCH = -1


@dataclass(slots=True)
class ProducerStateEntry:
    """What a partition remembers of a producer (Kafka's ProducerStateEntry, last batch only)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_sequence: int = NO_SEQUENCE
    last_offset: int = -1
    """The last offset of the producer's last data batch (-1: none since its epoch began)."""
    offset_delta: int = 0
    last_timestamp: int = NO_TIMESTAMP
    """The max timestamp of its last batch, or its last marker's record timestamp."""
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int | None = None

    @classmethod
    def from_snapshot(cls, entry: ProducerSnapshotEntry) -> ProducerStateEntry:
        """ProducerStateManager.readSnapshot: a LastOffset of -1 carries no batch."""
        has_batch = entry.last_offset >= 0
        return cls(
            entry.producer_id,
            entry.producer_epoch,
            entry.last_sequence if has_batch else NO_SEQUENCE,
            entry.last_offset if has_batch else -1,
            entry.offset_delta if has_batch else 0,
            entry.timestamp,
            entry.coordinator_epoch,
            entry.open_transaction,
        )

    def is_expired(self, now: int, producer_id_expiration_ms: int) -> bool:
        """ProducerStateManager.isProducerExpired: idle that long, and no open transaction."""
        return (
            self.current_txn_first_offset is None
            and now - self.last_timestamp >= producer_id_expiration_ms
        )

    def _set_epoch(self, producer_epoch: int) -> None:
        """maybeUpdateProducerEpoch: a new epoch forgets the batches of the old one."""
        if producer_epoch != self.producer_epoch:
            self.producer_epoch = producer_epoch
            self.last_sequence, self.last_offset, self.offset_delta = NO_SEQUENCE, -1, 0


@dataclass(slots=True)
class TxnMetadata:
    """An ongoing transaction (Kafka's TxnMetadata), with what kdump reports about it."""

    producer_id: int
    first_offset: int
    producer_epoch: int
    last_offset: int
    """The last offset of the transaction's latest batch (its first offset when unknown)."""
    batches: int = 0
    """Transactional batches seen since the state was loaded."""
    first_timestamp: int | None = None
    """The max timestamp of the batch that opened it (None: loaded from a snapshot)."""
    leader_epoch: int | None = None
    """The partition leader epoch of that batch (None: loaded from a snapshot)."""


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker (Kafka's CompletedTxn), and what was known of it."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int
    """The marker's offset."""
    is_aborted: bool
    last_stable_offset: int
    """ProducerStateManager.lastStableOffset(completedTxn), as the .txnindex stores it."""
    coordinator_epoch: int
    first_timestamp: int | None
    last_timestamp: int
    """The marker record's timestamp."""
    leader_epoch: int | None
    position: int
    """The marker batch's byte position in its .log."""

    def aborted_txn(self) -> AbortedTxn:
        """The .txnindex entry LogSegment.updateTxnIndex writes for an aborted one."""
        return AbortedTxn(
            CURRENT_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class MarkerWithoutTxn(NamedTuple):
    """A marker whose producer had no open transaction: it completes nothing (no CompletedTxn,
    no .txnindex entry, no effect on the last stable offset)."""

    producer_id: int
    producer_epoch: int
    offset: int
    is_aborted: bool
    coordinator_epoch: int
    position: int


class InvalidTxnState(NamedTuple):
    """A batch where Kafka's recovery throws InvalidTxnStateException (or a marker it cannot
    read): verify's TXN_STATE_INVALID (kdump.checks.txn.invalid_txn_state)."""

    path: str
    message: str
    offset: int
    position: int


Appended = CompletedTxn | MarkerWithoutTxn | InvalidTxnState | None
"""What one batch did: ended a transaction, ended none, or surprised (where Kafka throws)."""


@dataclass
class ProducerStateManager:
    """Producer entries, ongoing and unreplicated transactions of one partition.

    ``high_watermark`` (when known) keeps completed transactions whose marker lies at or above
    it in ``unreplicated_txns``, as they hold the first unstable offset back; None keeps none
    (recovery has no use for them). Entries are complete only when every producer batch is fed;
    a recovery that feeds transactional batches only (``Producers.TRANSACTIONAL`` while nothing
    is open) gets the transactions right and the other fields partly.
    """

    producers: dict[int, ProducerStateEntry] = field(default_factory=dict)
    ongoing_txns: dict[int, TxnMetadata] = field(default_factory=dict)
    """ProducerStateManager.ongoingTxns: first offset -> transaction."""
    unreplicated_txns: dict[int, CompletedTxn] = field(default_factory=dict)
    """ProducerStateManager.unreplicatedTxns: first offset -> completed transaction."""
    high_watermark: int | None = None

    @classmethod
    def from_snapshot(
        cls,
        snapshot: ProducerSnapshot,
        now: int | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        high_watermark: int | None = None,
    ) -> ProducerStateManager:
        """ProducerStateManager.loadFromSnapshot: open transactions become ongoing ones; with
        ``now``, producers expired at that time are left out, as the broker leaves them."""
        manager = cls(high_watermark=high_watermark)
        for snapshot_entry in snapshot.producers:
            entry = ProducerStateEntry.from_snapshot(snapshot_entry)
            if now is not None and entry.is_expired(now, producer_id_expiration_ms):
                continue
            manager.load_producer_entry(entry)
        return manager

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        first = entry.current_txn_first_offset
        if first is not None:
            last = entry.last_offset if entry.last_offset >= first else first
            self.ongoing_txns[first] = TxnMetadata(
                entry.producer_id, first, entry.producer_epoch, last
            )

    def entry(self, producer_id: int) -> ProducerStateEntry:
        found = self.producers.get(producer_id)
        if found is None:
            found = self.producers[producer_id] = ProducerStateEntry(producer_id)
        return found

    def open_transaction(self, producer_id: int) -> TxnMetadata | None:
        entry = self.producers.get(producer_id)
        if entry is None or entry.current_txn_first_offset is None:
            return None
        return self.ongoing_txns.get(entry.current_txn_first_offset)

    # -- last stable offset ---------------------------------------------------------------------

    def last_stable_offset(self, producer_id: int, last_offset: int) -> int:
        """ProducerStateManager.lastStableOffset(completedTxn)."""
        others = [
            first for first, txn in self.ongoing_txns.items() if txn.producer_id != producer_id
        ]
        return min(others) if others else last_offset + 1

    def first_undecided_offset(self) -> int | None:
        return min(self.ongoing_txns, default=None)

    def first_unstable_offset(self) -> int | None:
        """ProducerStateManager.firstUnstableOffset: the earliest ongoing or unreplicated one."""
        firsts = [*self.ongoing_txns, *self.unreplicated_txns]
        return min(firsts) if firsts else None

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """removeUnreplicatedTransactions: markers below the high watermark are replicated."""
        self.high_watermark = high_watermark
        for first, txn in list(self.unreplicated_txns.items()):
            if txn.last_offset < high_watermark:
                del self.unreplicated_txns[first]

    def complete_txn(self, completed: CompletedTxn) -> None:
        """ProducerStateManager.completeTxn."""
        self.ongoing_txns.pop(completed.first_offset, None)
        hw = self.high_watermark
        if hw is not None and completed.last_offset >= hw:
            self.unreplicated_txns[completed.first_offset] = completed

    # -- appends --------------------------------------------------------------------------------

    def update(self, buf: Buffer, batch: RecordBatch, path: str) -> Appended:
        """Feed one v2 batch (ProducerAppendInfo.append, then ProducerStateManager.update)."""
        if batch.producer_id <= NO_PRODUCER_ID:
            return None
        if batch.is_control:
            return self._end_txn_marker(buf, batch, path)
        return self.append_data_batch(batch, path)

    def append_data_batch(self, batch: RecordBatch, path: str) -> InvalidTxnState | None:
        """ProducerAppendInfo.appendDataBatch with origin REPLICATION."""
        entry = self.entry(batch.producer_id)
        entry._set_epoch(batch.producer_epoch)
        last = batch.last_offset
        entry.last_sequence = batch.last_sequence
        entry.last_offset, entry.offset_delta = last, batch.last_offset_delta
        entry.last_timestamp = batch.max_timestamp
        first = entry.current_txn_first_offset
        if batch.is_transactional:
            if first is None:
                entry.current_txn_first_offset = batch.base_offset
                self.ongoing_txns[batch.base_offset] = TxnMetadata(
                    batch.producer_id,
                    batch.base_offset,
                    batch.producer_epoch,
                    last,
                    1,
                    batch.max_timestamp,
                    batch.partition_leader_epoch,
                )
            else:
                txn = self.ongoing_txns.get(first)
                if txn is not None:
                    txn.last_offset, txn.producer_epoch = last, batch.producer_epoch
                    txn.batches += 1
            return None
        if first is not None:
            return InvalidTxnState(
                path,
                f"non-transactional batch of producer {batch.producer_id} while its transaction "
                f"from offset {first} is open (Kafka's recovery throws InvalidTxnStateException)",
                batch.base_offset,
                batch.position,
            )
        return None

    def _end_txn_marker(self, buf: Buffer, batch: RecordBatch, path: str) -> Appended:
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
        marker = end_transaction_marker(record)
        coordinator_epoch = NO_COORDINATOR_EPOCH if marker is None else marker.coordinator_epoch
        return self.append_end_txn_marker(
            batch.producer_id,
            batch.producer_epoch,
            key.type == ABORT,
            coordinator_epoch,
            batch.base_offset,
            record.timestamp,
            batch.position,
        )

    def append_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        is_aborted: bool,
        coordinator_epoch: int,
        offset: int,
        timestamp: int,
        position: int = -1,
    ) -> CompletedTxn | MarkerWithoutTxn:
        """ProducerAppendInfo.appendEndTxnMarker, then ProducerStateManager.completeTxn."""
        entry = self.entry(producer_id)
        first = entry.current_txn_first_offset
        entry._set_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.current_txn_first_offset = None
        if first is None:
            return MarkerWithoutTxn(
                producer_id, producer_epoch, offset, is_aborted, coordinator_epoch, position
            )
        txn = self.ongoing_txns.get(first)
        completed = CompletedTxn(
            producer_id,
            producer_epoch,
            first,
            offset,
            is_aborted,
            self.last_stable_offset(producer_id, offset),
            coordinator_epoch,
            None if txn is None else txn.first_timestamp,
            timestamp,
            None if txn is None else txn.leader_epoch,
            position,
        )
        self.complete_txn(completed)
        return completed


def _marker_finding(batch: RecordBatch, path: str, message: str) -> InvalidTxnState:
    return InvalidTxnState(
        path, f"{message} (Kafka's recovery throws here)", batch.base_offset, batch.position
    )


__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "Appended",
    "CompletedTxn",
    "InvalidTxnState",
    "MarkerWithoutTxn",
    "ProducerStateEntry",
    "ProducerStateManager",
    "TxnMetadata",
]
