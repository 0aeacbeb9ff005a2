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
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kdump.crc import Buffer
from kdump.discovery import PartitionTarget, parse_partition_dir
from kdump.errors import InputError, KdumpError, OutputLimitError
from kdump.format.batch import Batch, iter_records, read_batch
from kdump.format.records import Record
from kdump.format.walk import BatchRun, Damaged, LogWalk, walk_resync
from kdump.render.describe import timestamp_type
from kdump.segment import LOG_SUFFIX, LogSegment, list_segments, open_buffer, segment_file_name

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


OUTPUT_RATIO = 100
"""Salvage's default bound on a segment's JSON Lines, as a multiple of the bytes of the batches
it salvages: a record's JSON takes 1.7-7x its bytes (base64, and the fields of every record;
3.8x over the oracle fixtures), and Kafka's codecs shrink batches up to ~10x in practice, so
real records stay below 100x their batches; a decompression bomb (12,000x) does not: 38 M
records in a 22 KB batch wrote 3.9 GB in two minutes before this bound (issue 27)."""
OUTPUT_FLOOR = 64 << 20
"""... and never below 64 MiB, so a small salvage is never in its way."""


def output_limit(salvaged_bytes: int, max_output_bytes: int | None) -> int:
    """The JSON Lines a segment may write: ``--max-output-bytes`` when given, else the default
    (OUTPUT_RATIO x its salvaged batches' bytes, at least OUTPUT_FLOOR)."""
    if max_output_bytes is not None:
        return max_output_bytes
    return max(OUTPUT_FLOOR, OUTPUT_RATIO * salvaged_bytes)


def salvage_segment(
    seg: LogSegment,
    out: Path,
    topic_partition: tuple[str, int] | None,
    max_output_bytes: int | None = None,
) -> SalvagedSegment:
    """Scan the bytes recovery would cut from ``seg`` and write what is whole and valid in them
    under ``out``: ``<first offset>.log`` (the batches' bytes) and ``<first offset>.jsonl`` (at
    most ``output_limit`` bytes)."""
    buf = open_buffer(seg.log_path)
    at = first_damage(buf, str(seg.log_path))
    return _salvage(buf, seg.log_path, at, out, topic_partition, max_output_bytes)


def salvage_cut_file(
    path: Path, output_dir: Path, max_output_bytes: int | None = None
) -> SalvagedSegment:
    """The same for the bytes ``kdump recover`` already cut and kept (``NAME.log.kdump-cut-N``,
    which starts at the invalid batch), written under ``output_dir/<partition dir name>/``;
    batch positions are the original log's."""
    buf = open_buffer(path)
    partition = path.parent.name
    at = 0 if len(buf) else None
    cut_at = path.name.rsplit(CUT_SUFFIX, 1)[1].split(".")[0]
    shift = int(cut_at) if cut_at.isdigit() else 0
    tp = parse_partition_dir(partition)
    return _salvage(buf, path, at, output_dir / partition, tp, max_output_bytes, shift)


def _salvage(
    buf: Buffer,
    log: Path,
    at: int | None,
    out: Path,
    topic_partition: tuple[str, int] | None,
    max_output_bytes: int | None,
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
    out.mkdir(parents=True, exist_ok=True)
    result.log = out / segment_file_name(first, LOG_SUFFIX)
    result.records = out / segment_file_name(first, ".jsonl")
    topic, partition = topic_partition or (None, None)
    limit = output_limit(result.loss.salvageable.bytes, max_output_bytes)
    import json  # here: a rebuild or a clean recover never salvages

    with _atomic(result.log, "wb") as log_out, _atomic(result.records, "w") as jsonl:
        written = 0
        for part in walk_resync(buf, path, at):
            if isinstance(part, Damaged):
                result.damaged.append(part)
                continue
            log_out.write(memoryview(buf)[part.position[0] : part.end])
            for batch in part.batches():
                # records one at a time (a batch's are decoded a slice at a time): memory stays
                # bounded by the batch's decompressed bytes however many records it holds
                for record in iter_records(buf, batch, path):
                    line = json.dumps(record_object(batch, record, topic, partition, shift))
                    written += len(line) + 1  # ASCII: json.dumps escapes the rest
                    if written > limit:
                        raise _past_limit(path, batch.position + shift, limit, max_output_bytes)
                    jsonl.write(line)
                    jsonl.write("\n")
                    result.record_count += 1
    return result


def _past_limit(path: str, position: int, limit: int, given: int | None) -> OutputLimitError:
    how = (
        "--max-output-bytes"
        if given is not None
        else (f"the default, {OUTPUT_RATIO}x the bytes of the batches salvaged")
    )
    return OutputLimitError(
        f"the records' JSON Lines would pass {limit} bytes ({how}) in the batch at this "
        "position: a batch that decompresses far beyond its size; nothing written for this "
        "segment (raise --max-output-bytes to salvage it)",
        path,
        position,
    )


class _atomic:
    """A file written under a temporary name in its directory, fsynced, then renamed: never
    a half-written file under the real name."""

    def __init__(self, path: Path, mode: str) -> None:
        self.path, self.temp = path, path.with_name(f".{path.name}.kdump-tmp-{os.getpid()}")
        self.file: IO[Any] = open(self.temp, mode)  # noqa: SIM115 (closed in __exit__)

    def __enter__(self) -> IO[Any]:
        return self.file

    def __exit__(self, kind: object, *_: object) -> None:
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        if kind is not None:
            os.unlink(self.temp)
            return
        os.replace(self.temp, self.path)


def salvage_partition(
    target: PartitionTarget, output_dir: Path, max_output_bytes: int | None = None
) -> Iterator[SalvagedSegment]:
    """Every segment of ``target`` (or the named ones) with damage, salvaged under
    ``output_dir/<partition dir name>/``."""
    try:
        segments = list_segments(target.path)
    except OSError as e:
        raise InputError(str(target.path), e.strerror or str(e)) from None
    out = output_dir / target.path.name
    for seg in segments:
        if target.only is not None and seg.base_offset not in target.only:
            continue
        if not seg.log_path.is_file():
            continue
        yield salvage_segment(seg, out, target.topic_partition, max_output_bytes)


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
