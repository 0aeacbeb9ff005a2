"""Open transactions and the last stable offset, which bounds what the cleaner may clean.

Kept in this one small module on purpose: ``kdump txn`` (a fuller producer-state model) will
replace ``open_transactions``; nothing else here depends on how it is computed.

The broker's producer state at startup (UnifiedLog.rebuildProducerState) is the newest valid
snapshot with ``logStartOffset < offset <= logEndOffset``, then every batch from that offset
replayed; a transactional batch opens its producer's transaction, an end marker completes it.
The first unstable offset is the first offset of the earliest transaction still open, or of one
completed at or above the high watermark (not yet replicated); the last stable offset is that,
or the high watermark when it is lower (ProducerStateManager.firstUnstableOffset,
UnifiedLog.lastStableOffset), never below the log start offset.
"""

from __future__ import annotations

from dataclasses import dataclass

from kdump.errors import KdumpError
from kdump.format.batch import CONTROL_BIT, TRANSACTIONAL_BIT, RecordBatch
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.walk import NO_EPOCH_YET, Producers, flag_batches
from kdump.lookup import PartitionLog
from kdump.repair.producer_state import ProducerStateTracker
from kdump.segment import SNAPSHOT_SUFFIX, base_offset_of, open_buffer


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

    @property
    def first_unstable_offset(self) -> int | None:
        return min((t.first_offset for t in self.transactions), default=None)


def open_transactions(
    log: PartitionLog, log_start_offset: int, log_end_offset: int, high_watermark: int
) -> OpenTransactions:
    """The transactions a broker loading this partition would find open (and those completed
    at or above the high watermark), replaying transactional and control batches."""
    end = log_end_offset
    tracker, snapshot, start = ProducerStateTracker(), None, log_start_offset
    for path in sorted(log.directory.glob(f"*{SNAPSHOT_SUFFIX}"), reverse=True):
        try:
            offset = base_offset_of(path)
            if not log_start_offset < offset <= end:
                continue
            tracker = ProducerStateTracker.from_snapshot(
                parse_producer_snapshot(open_buffer(path), str(path))
            )
        except KdumpError:
            continue  # a corrupt snapshot: the broker deletes it and tries the next older one
        snapshot, start = str(path), offset
        break
    unreplicated: list[OpenTransaction] = []
    first = max(log.floor_segment(start), 0)
    for segment in log.segments[first:]:
        records = segment.log
        has_prev, prev_last, epoch = False, 0, NO_EPOCH_YET
        for run in records.walk(check_crc=False):
            flags = flag_batches(
                run, segment.base_offset, has_prev, prev_last, epoch, Producers.TRANSACTIONAL
            )
            has_prev, prev_last, epoch = flags.has_prev, flags.prev_last, flags.epoch
            for i in flags.flagged:
                if (
                    run.magic[i] < 2
                    or run.producer_id[i] < 0
                    or not run.attributes[i] & (TRANSACTIONAL_BIT | CONTROL_BIT)
                    or run.last_offset[i] < start
                ):
                    continue
                batch = run.batch(i)
                assert isinstance(batch, RecordBatch)
                pid = batch.producer_id
                was_open = tracker.current_txn_first_offset.get(pid)
                tracker.update(records.buf, batch, records.path)
                completed = was_open is not None and pid not in tracker.current_txn_first_offset
                if completed and batch.base_offset >= high_watermark:
                    assert was_open is not None
                    unreplicated.append(OpenTransaction(pid, was_open, batch.base_offset))
    still_open = [
        OpenTransaction(pid, first_offset)
        for pid, first_offset in tracker.current_txn_first_offset.items()
    ]
    found = sorted(still_open + unreplicated, key=lambda t: t.first_offset)
    return OpenTransactions(tuple(found), snapshot, start)


def last_stable_offset(
    transactions: OpenTransactions, high_watermark: int, log_start_offset: int
) -> int:
    """UnifiedLog.lastStableOffset, with the first unstable offset clamped to the log start."""
    unstable = transactions.first_unstable_offset
    if unstable is not None:
        unstable = max(unstable, log_start_offset)
        if unstable < high_watermark:
            return unstable
    return high_watermark
