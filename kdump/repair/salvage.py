"""What a recovery cut removes, and how much of it ``kdump salvage`` can keep.

``LogSegment.recover`` truncates a log at its first invalid batch: one flipped byte loses every
batch after it, whole and valid as they may be. ``walk_resync`` (the one walk, finding its
footing again after damage) tells the batches in the cut bytes apart: those still whole and
valid (salvageable) and the damaged stretches. ``salvage_segment`` exports the records of the
salvageable batches as JSON Lines (key, value and header values in base64, with offsets,
timestamps and producer fields: the form a small producer script replays) and writes their
bytes, unchanged, to a ``.log`` for forensics (``kdump dump`` reads it).
"""

from __future__ import annotations

import base64
import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.names import LOG_SUFFIX, parse_partition_dir, segment_file_name
from kdump.format.records import Record
from kdump.format.walk import BatchRun, Damaged, LogWalk, iter_records, read_batch, walk_resync
from kdump.render.describe import timestamp_type
from kdump.repair.files import Ownership, create_temp, map_regular, open_directory, own_subdir

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog

CUT_SUFFIX = ".kdump-cut-"
"""What ``kdump recover`` names the bytes it cut: ``NAME.log.kdump-cut-POSITION``."""


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

    @property
    def cut_bytes(self) -> int:
        return self.size - self.position

    def describe(self) -> str:
        """``removes 5 batches, 21 records, offsets 30..62 (kdump salvage keeps 4 of them,
        18 records)``"""
        if not self.lost.batches:
            return f"removes {self.cut_bytes} bytes that hold no readable batch"
        text = f"removes {self.lost.describe()}"
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


def first_damage(buf: Buffer, path: str) -> int | None:
    """Where the broker's recovery would cut this log (its first invalid batch), or None."""
    walk = LogWalk(buf, path, until_invalid=True)
    for _ in walk:
        pass
    assert walk.stop is not None
    return walk.stop.position if walk.stop.is_damage else None


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def record_object(
    batch: Batch, record: Record, topic: str | None, partition: int | None, shift: int = 0
) -> dict[str, Any]:
    """One salvaged record as a JSON object a producer script can replay (``shift``: where the
    bytes read start in the original log, for a kept cut file)."""
    transactional, control = batch.is_transactional, batch.is_control
    return {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": timestamp_type(batch.timestamp_type),
        "key": _b64(record.key),
        "value": _b64(record.value),
        "headers": [{"key": h.key, "value": _b64(h.value)} for h in record.headers],
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "sequence": record.sequence,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "batch_base_offset": batch.base_offset,
        "batch_position": batch.position + shift,
        "is_transactional": transactional,
        "is_control": control,
        # a transaction's records or a marker cannot be produced again as they are: a new
        # producer would write them outside their transaction
        "reproducible": not (transactional or control),
    }


@dataclass
class SalvagedSegment:
    segment: Path
    damage_at: int | None
    """Where recovery cuts it (None: nothing to salvage)."""
    loss: CutLoss | None = None
    log: Path | None = None
    records: Path | None = None
    record_count: int = 0
    damaged: list[Damaged] = field(default_factory=list)


def salvage_segment(
    log_path: Path, at: int | None, out: Path, topic_partition: tuple[str, int] | None
) -> SalvagedSegment:
    """Scan the bytes recovery would cut from the log at ``log_path`` (from ``at``, its first
    invalid batch; None: nothing to cut) and write what is whole and valid in them under
    ``out``: ``<first offset>.log`` (the batches' bytes) and ``<first offset>.jsonl``."""
    if at is None:
        return SalvagedSegment(log_path, None)
    return _salvage(map_regular(log_path), log_path, at, out, topic_partition)


def salvage_cut_file(path: Path, output_dir: Path) -> SalvagedSegment:
    """The same for the bytes ``kdump recover`` already cut and kept (``NAME.log.kdump-cut-N``,
    which starts at the invalid batch), written under ``output_dir/<partition dir name>/``;
    batch positions are the original log's."""
    buf = map_regular(path)
    partition = path.parent.name
    at = 0 if len(buf) else None
    cut_at = path.name.rsplit(CUT_SUFFIX, 1)[1].split(".")[0]
    shift = int(cut_at) if cut_at.isdigit() else 0
    return _salvage(buf, path, at, output_dir / partition, parse_partition_dir(partition), shift)


def _salvage(
    buf: Buffer,
    log: Path,
    at: int | None,
    out: Path,
    topic_partition: tuple[str, int] | None,
    shift: int = 0,
) -> SalvagedSegment:
    path = str(log)
    result = SalvagedSegment(log, at)
    if at is None:
        return result
    result.loss = cut_loss(buf, at, path)
    if not result.loss.salvageable.batches:
        return result
    first = result.loss.salvageable.first
    assert first is not None
    own_subdir(out.parent, log.parent)
    owner = Ownership.like(os.stat(log)).mine()
    result.log = out / segment_file_name(first, LOG_SUFFIX)
    result.records = out / segment_file_name(first, ".jsonl")
    topic, partition = topic_partition or (None, None)
    import json  # here: a rebuild or a clean recover never salvages

    with _atomic(result.log, "wb", owner) as log_out, _atomic(result.records, "w", owner) as jsonl:
        for part in walk_resync(buf, path, at):
            if isinstance(part, Damaged):
                result.damaged.append(part)
                continue
            log_out.write(memoryview(buf)[part.position[0] : part.end])
            for batch in part.batches():
                for record in iter_records(buf, batch, path):
                    obj = record_object(batch, record, topic, partition, shift)
                    jsonl.write(json.dumps(obj))
                    jsonl.write("\n")
                    result.record_count += 1
    return result


class _atomic:
    """A file written under a temporary name in its directory (kdump.repair.files: an
    unguessable name, created exclusively, no link followed), fsynced, then renamed: never a
    half-written file under the real name, and never a write through a file someone put
    there."""

    def __init__(self, path: Path, mode: str, owner: Ownership) -> None:
        self.name, self.dir_fd = path.name, open_directory(path.parent)
        try:
            fd, self.temp = create_temp(self.dir_fd, path.name, owner)
        except BaseException:
            os.close(self.dir_fd)
            raise
        self.file: IO[Any] = os.fdopen(fd, mode)

    def __enter__(self) -> IO[Any]:
        return self.file

    def __exit__(self, kind: object, *_: object) -> None:
        try:
            with self.file:
                self.file.flush()
                os.fsync(self.file.fileno())
            if kind is None:
                os.replace(self.temp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
            else:
                os.unlink(self.temp, dir_fd=self.dir_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.temp, dir_fd=self.dir_fd)
            raise
        finally:
            os.close(self.dir_fd)


def salvage_partition(log: UnifiedLog, output_dir: Path) -> Iterator[SalvagedSegment]:
    """Every segment of ``log`` (or the named ones) with damage, salvaged under
    ``output_dir/<partition dir name>/``: from where its walk found the first batch recovery
    refuses (the partition's one walk of it, as verify and recover read it)."""
    directory = log.storage.local_path
    assert directory is not None, "salvage reads local partitions"
    out = output_dir / directory.name
    for seg in log.named_segments:
        scan = log.result(seg).scan
        at = None if scan is None else scan.first_invalid
        yield salvage_segment(directory / seg.file_name(LOG_SUFFIX), at, out, log.topic_partition)


__all__ = [
    "CutLoss",
    "OffsetSpan",
    "SalvagedSegment",
    "cut_loss",
    "first_damage",
    "record_object",
    "salvage_cut_file",
    "salvage_partition",
    "salvage_segment",
]
