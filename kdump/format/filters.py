"""Which batches to show: one predicate over batch headers, for the dumps, ``kdump txn`` and
``kdump spark export`` (which also keeps, of a batch it decodes, only the records in range).

Decided on the walk's columns alone, so a batch left out is never decompressed nor decoded.
Every bound is inclusive; a range may leave either end open (``100:``, ``:2000``):

- ``producer_id``, ``producer_epoch``, ``leader_epoch`` (partition leader epoch): equal;
- ``offsets``: the batch's offsets ``base_offset..last_offset`` overlap the range;
- ``timestamps``: the batch's timestamps ``base_timestamp..max_timestamp`` (its first record's
  and its largest; one timestamp for a legacy message) overlap the range.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from kdump.format.batch import Batch, RecordBatch
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.walk import BatchRun
from kdump.tuples import NamedTuple


class Range(NamedTuple):
    """An inclusive range; None leaves that end open."""

    low: int | None
    high: int | None

    def overlaps(self, first: int, last: int) -> bool:
        return (self.low is None or last >= self.low) and (self.high is None or first <= self.high)


def parse_range(text: str, parse_bound: Callable[[str], int] = int) -> Range:
    """``A:B``, ``A:`` or ``:B``, each end read by ``parse_bound``; raises ValueError with the
    reason. The ends may hold colons themselves (ISO-8601 times): the first split at a colon
    where both ends read is taken."""
    first_error: ValueError | None = None
    for at in (i for i, c in enumerate(text) if c == ":"):
        low_text, high_text = text[:at].strip(), text[at + 1 :].strip()
        try:
            low = parse_bound(low_text) if low_text else None
            high = parse_bound(high_text) if high_text else None
        except ValueError as e:
            first_error = first_error or e
            continue
        if low is None and high is None:
            raise ValueError(f"{text}: give at least one end")
        if low is not None and high is not None and low > high:
            raise ValueError(f"{text}: the range ends before it starts")
        return Range(low, high)
    if first_error is not None:
        raise first_error
    raise ValueError(f"{text}: expected A:B (either end may be left out)")


class BatchFilter(NamedTuple):
    """``--producer-id``, ``--producer-epoch``, ``--leader-epoch``, ``--offset-range``,
    ``--time-range``: a batch is kept when it meets every one given. (A record: every dump
    builds this module, and a frozen dataclass costs start-up to define, issue 45.)"""

    producer_id: int | None = None
    producer_epoch: int | None = None
    leader_epoch: int | None = None
    offsets: Range | None = None
    timestamps: Range | None = None

    @property
    def is_empty(self) -> bool:
        return (
            self.producer_id is None
            and self.producer_epoch is None
            and self.leader_epoch is None
            and self.offsets is None
            and self.timestamps is None
        )

    def matches_span(
        self,
        producer_id: int,
        producer_epoch: int | None,
        leader_epoch: int | None,
        first_offset: int,
        last_offset: int,
        first_timestamp: int | None,
        last_timestamp: int | None,
    ) -> bool:
        """The test, on a batch or on anything spanning batches (a transaction). What is not
        known (None) is not held against it."""
        if not self.matches_producer(producer_id, producer_epoch):
            return False
        if (
            self.leader_epoch is not None
            and leader_epoch is not None
            and leader_epoch != self.leader_epoch
        ):
            return False
        if self.offsets is not None and not self.offsets.overlaps(first_offset, last_offset):
            return False
        if self.timestamps is not None:
            known = [t for t in (first_timestamp, last_timestamp) if t is not None]
            if known and not self.timestamps.overlaps(min(known), max(known)):
                return False
        return True

    def matches_producer(self, producer_id: int, producer_epoch: int | None) -> bool:
        """The producer id and epoch tests alone."""
        if self.producer_id is not None and producer_id != self.producer_id:
            return False
        return (
            self.producer_epoch is None
            or producer_epoch is None
            or producer_epoch == self.producer_epoch
        )

    def matches_batch(self, batch: Batch) -> bool:
        """Whether a batch read on its own (not in a walk's run) is kept."""
        first = batch.base_timestamp if isinstance(batch, RecordBatch) else batch.timestamp
        last = batch.max_timestamp
        return self.matches_span(
            batch.producer_id,
            batch.producer_epoch,
            batch.partition_leader_epoch,
            batch.base_offset,
            batch.last_offset,
            None if first == NO_TIMESTAMP else first,
            None if last == NO_TIMESTAMP else last,
        )

    @property
    def cuts_records(self) -> bool:
        """Whether a kept batch may hold records out of range (offsets or timestamps asked)."""
        return self.offsets is not None or self.timestamps is not None

    def matches_record(self, offset: int, timestamp: int) -> bool:
        """Whether a record of a kept batch is in the offset and time ranges."""
        if self.offsets is not None and not self.offsets.overlaps(offset, offset):
            return False
        return (
            self.timestamps is None
            or timestamp == NO_TIMESTAMP
            or self.timestamps.overlaps(timestamp, timestamp)
        )

    def matches(self, run: BatchRun, i: int) -> bool:
        """Whether batch ``i`` of ``run`` is kept."""
        return self.matches_span(
            run.producer_id[i],
            run.producer_epoch[i],
            run.partition_leader_epoch[i],
            run.base_offset[i],
            run.last_offset[i],
            run.base_timestamp[i],
            run.max_timestamp[i],
        )

    def select(self, run: BatchRun) -> list[int]:
        """The numbers of the batches of ``run`` that are kept."""
        if self.is_empty:
            return list(range(run.n))
        return [i for i in range(run.n) if self.matches(run, i)]

    def apply(self, run: BatchRun) -> BatchRun:
        """The run with only the kept batches (the run itself when all are kept)."""
        if self.is_empty:
            return run
        kept = self.select(run)
        if len(kept) == run.n:
            return run
        # int64 columns, as the walk's: the C code reads them as buffers
        columns = [array("q", [column[i] for i in kept]) for column in run.columns()]
        return BatchRun(len(kept), columns)


NO_FILTER = BatchFilter()

__all__ = ["NO_FILTER", "BatchFilter", "Range", "parse_range"]
