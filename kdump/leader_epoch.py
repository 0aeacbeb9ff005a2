"""The leader epoch cache of a partition, as Kafka keeps it (LeaderEpochFileCache): which epoch
started at which offset, and the answer a leader gives a follower that asks where an epoch ends
(``end_offset_for``, the OffsetsForLeaderEpoch answer and the diverging-epoch check of a fetch).

Pure: entries in, answers out. The opened partition builds its cache as the broker loads it
(kdump.unified_log.UnifiedLog.leader_epoch_cache).
"""

from __future__ import annotations

from collections.abc import Iterable

from kdump.format.checkpoint import EpochEntry
from kdump.format.layout import NO_PARTITION_LEADER_EPOCH
from kdump.tuples import NamedTuple

UNDEFINED_EPOCH = NO_PARTITION_LEADER_EPOCH
"""OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH."""
UNDEFINED_EPOCH_OFFSET = NO_PARTITION_LEADER_EPOCH
"""OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH_OFFSET."""


class OffsetAndEpoch(NamedTuple):
    """org.apache.kafka.server.common.OffsetAndEpoch: an epoch and where it ends."""

    offset: int
    leader_epoch: int


class LeaderEpochFileCache:
    """LeaderEpochFileCache: the entries by epoch, each epoch's start offset; epochs and
    start offsets both increase (``assign`` removes what would break that, as Kafka does)."""

    def __init__(self, entries: Iterable[EpochEntry] = ()) -> None:
        self._epochs: dict[int, EpochEntry] = {}
        # the constructor assigns the checkpoint's entries one by one (checkpoint.read().forEach)
        for entry in entries:
            self.assign(entry.epoch, entry.start_offset)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.epoch_entries()!r})"

    def epoch_entries(self) -> list[EpochEntry]:
        return [self._epochs[e] for e in sorted(self._epochs)]

    def copy(self) -> LeaderEpochFileCache:
        found = LeaderEpochFileCache()
        found._epochs = dict(self._epochs)
        return found

    # -- reading ------------------------------------------------------------------------------

    def latest_entry(self) -> EpochEntry | None:
        return self._epochs[max(self._epochs)] if self._epochs else None

    def latest_epoch(self) -> int | None:
        """The latest epoch with an entry (None: the cache is empty)."""
        latest = self.latest_entry()
        return None if latest is None else latest.epoch

    def earliest_entry(self) -> EpochEntry | None:
        return self._epochs[min(self._epochs)] if self._epochs else None

    def _higher_entry(self, epoch: int) -> EpochEntry | None:
        above = [e for e in self._epochs if e > epoch]
        return self._epochs[min(above)] if above else None

    def _floor_entry(self, epoch: int) -> EpochEntry | None:
        below = [e for e in self._epochs if e <= epoch]
        return self._epochs[max(below)] if below else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor: (the largest epoch <= ``requested_epoch``, where
        it ends: the start offset of the next epoch, or ``log_end_offset`` for the latest).
        An epoch older than the first known answers with that first epoch's start offset;
        UNDEFINED_EPOCH, or an epoch past every known one, with
        (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)."""
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.latest_epoch() == requested_epoch:
            return requested_epoch, log_end_offset
        higher = self._higher_entry(requested_epoch)
        if higher is None:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        floor = self._floor_entry(requested_epoch)
        if floor is None:
            # Kafka: "this may be inaccurate as there could have been epochs in between, but
            # the point is that the data has already been removed from the log"
            return requested_epoch, higher.start_offset
        return floor.epoch, higher.start_offset

    # -- changing -----------------------------------------------------------------------------

    def _is_update_needed(self, entry: EpochEntry) -> bool:
        latest = self.latest_entry()
        return latest is None or (
            entry.epoch != latest.epoch or entry.start_offset < latest.start_offset
        )

    def assign(self, epoch: int, start_offset: int) -> bool:
        """LeaderEpochFileCache.assign: add an entry unless the latest already says so, first
        removing the later entries it contradicts (maybeTruncateNonMonotonicEntries)."""
        entry = EpochEntry(epoch, start_offset)
        if epoch < 0 or start_offset < 0 or not self._is_update_needed(entry):
            return False
        for e in sorted(self._epochs, reverse=True):
            old = self._epochs[e]
            if not (old.epoch >= epoch or old.start_offset >= start_offset):
                break
            del self._epochs[e]
        self._epochs[epoch] = entry
        return True

    def truncate_from_end(self, end_offset: int) -> list[EpochEntry]:
        """LeaderEpochFileCache.truncateFromEnd: remove the entries starting at or after
        ``end_offset`` (UnifiedLog.truncateTo, LogLoader after recovery); the removed ones."""
        latest = self.latest_entry()
        removed: list[EpochEntry] = []
        if end_offset < 0 or latest is None or latest.start_offset < end_offset:
            return removed
        for e in sorted(self._epochs, reverse=True):
            if self._epochs[e].start_offset < end_offset:
                break
            removed.append(self._epochs.pop(e))
        return removed

    def truncate_from_start(self, start_offset: int) -> list[EpochEntry]:
        """LeaderEpochFileCache.truncateFromStart: remove the entries starting at or before
        ``start_offset``, the last of them kept as starting at ``start_offset``."""
        removed: list[EpochEntry] = []
        for e in sorted(self._epochs):
            if self._epochs[e].start_offset > start_offset:
                break
            removed.append(self._epochs.pop(e))
        if removed:
            last = removed[-1]
            self._epochs[last.epoch] = EpochEntry(last.epoch, start_offset)
        return removed


__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "LeaderEpochFileCache",
    "OffsetAndEpoch",
]
