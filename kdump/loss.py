"""What a recovery cut removes from a log, and what of it is still whole and valid.

``LogSegment.recover`` truncates a log at its first invalid batch: one flipped byte loses every
batch after it, whole and valid as they may be. ``walk_resync`` (the one walk, finding its
footing again after damage) tells the batches in the cut bytes apart: those still whole and
valid (what ``kdump salvage`` keeps) and the damaged stretches. The same accounting serves a
dry run's "what the cut loses", salvage, and verify's count of what ``kdump recover`` kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.index import trailing_zero_bytes
from kdump.format.walk import BatchRun, Damaged, iter_records, read_batch, walk_resync


@dataclass
class OffsetSpan:
    """Batches, records and the offsets they cover (first..last), counted as they come."""

    batches: int = 0
    records: int = 0
    first: int | None = None
    last: int | None = None
    bytes: int = 0

    def add(self, base: int, last: int, records: int, size: int) -> None:
        self.batches += 1
        self.records += records
        self.first = base if self.first is None else min(self.first, base)
        self.last = last if self.last is None else max(self.last, last)
        self.bytes += size

    def merge(self, other: OffsetSpan) -> None:
        """Count ``other``'s batches in this span too."""
        self.batches += other.batches
        self.records += other.records
        self.bytes += other.bytes
        for offset in (other.first, other.last):
            if offset is not None:
                self.first = offset if self.first is None else min(self.first, offset)
                self.last = offset if self.last is None else max(self.last, offset)

    def describe(self) -> str:
        if not self.batches:
            return "no batch"
        batches = f"{self.batches} batch" + ("" if self.batches == 1 else "es")
        records = f"{self.records} record" + ("" if self.records == 1 else "s")
        return f"{batches}, {records}, offsets {self.first}..{self.last}"


@dataclass
class CutLoss:
    """The bytes from ``position`` to the end of a log, as a cut there would remove them."""

    position: int
    size: int
    lost: OffsetSpan = field(default_factory=OffsetSpan)
    """Every batch whose header can still be read: the invalid one the cut starts at, and
    every whole batch after it."""
    salvageable: OffsetSpan = field(default_factory=OffsetSpan)
    """The whole, valid batches among them (what ``kdump salvage`` keeps)."""
    damaged_bytes: int = 0
    unreadable_bytes: int = 0
    """Damaged bytes that are not even a readable batch header (lost with no count)."""
    zeros: bool = False
    """Every cut byte is zero: what a power loss leaves past the last write (or preallocated
    space), no records, so nothing is lost and nothing is to salvage."""

    @property
    def cut_bytes(self) -> int:
        return self.size - self.position

    def describe(self, verb: str = "removes") -> str:
        """``removes 5 batches, 21 records, offsets 30..62 (kdump salvage keeps 4 of them,
        18 records)``; ``verb``: "holds" for bytes already cut."""
        if self.zeros:
            return f"{verb} {self.cut_bytes} zero bytes (no records)"
        if not self.lost.batches:
            return f"{verb} {self.cut_bytes} bytes with no readable batch in them"
        text = f"{verb} {self.lost.describe()}"
        if self.unreadable_bytes:
            text += f", and {self.unreadable_bytes} bytes that are no readable batch"
        keep = self.salvageable
        if keep.batches:
            text += f"; kdump salvage keeps {keep.batches} whole one(s), {keep.records} records"
        else:
            text += "; none of them is whole and valid"
        return text


def _records_of(run: BatchRun, i: int, buf: Buffer, path: str) -> int:
    count = run.records_count[i]
    if count >= 0:
        return count
    try:  # v0/v1: a wrapper holds its messages inside
        return sum(1 for _ in iter_records(buf, run.batch(i), path))
    except KdumpError:
        return 1


def _damaged_header(buf: Buffer, position: int, path: str) -> Batch | None:
    """The header of the batch a damaged stretch starts with, when it still reads as one (a
    bad CRC, a damaged payload): its offsets are lost with it."""
    try:
        return read_batch(buf, position, len(buf), path)
    except KdumpError:
        return None


def cut_loss(buf: Buffer, position: int, path: str = "<bytes>") -> CutLoss:
    """What cutting ``buf`` at ``position`` removes, and what of it is still whole and valid."""
    loss = CutLoss(position, len(buf))
    if position < len(buf) and trailing_zero_bytes(buf, position) == len(buf) - position:
        loss.zeros = True
        loss.damaged_bytes = loss.unreadable_bytes = len(buf) - position
        return loss
    for part in walk_resync(buf, path, position):
        if isinstance(part, Damaged):
            loss.damaged_bytes += part.end - part.start
            batch = _damaged_header(buf, part.start, path)
            unread = part.end - part.start
            if batch is not None and batch.end <= part.end:
                count = (batch.records_count or 0) if batch.magic >= 2 else 1
                loss.lost.add(batch.base_offset, batch.last_offset, max(count, 0), batch.size)
                unread -= batch.size
            loss.unreadable_bytes += unread
            continue
        for i in range(part.n):
            args = (
                part.base_offset[i],
                part.last_offset[i],
                _records_of(part, i, buf, path),
                part.size[i],
            )
            loss.lost.add(*args)
            loss.salvageable.add(*args)
    return loss


__all__ = ["CutLoss", "OffsetSpan", "cut_loss"]
