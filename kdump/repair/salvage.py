"""What a recovery cut removes, and how much of it ``kdump salvage`` can keep.

``LogSegment.recover`` truncates a log at its first invalid batch: one flipped byte loses every
batch after it, whole and valid as they may be. ``walk_resync`` (the one walk, finding its
footing again after damage) tells the batches in the cut bytes apart: those still whole and
valid (salvageable) and the damaged stretches. ``salvage_segment`` exports the records of the
salvageable batches as JSON Lines (keys, values and headers as ``kdump dump --format jsonl``
gives them, every byte kept; offsets, timestamps and producer fields: the form a small
producer script replays) and writes their bytes, unchanged, to a ``.log`` for forensics
(``kdump dump`` reads it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kdump.checks.options import VerifyOptions
from kdump.checks.segment import segment_result
from kdump.crc import Buffer
from kdump.errors import OutputLimitError
from kdump.format.batch import Batch
from kdump.format.layout import timestamp_type
from kdump.format.names import (
    LOG_SUFFIX,
    KeptLog,
    kept_logs_among,
    parse_kept_log,
    parse_partition_dir,
    segment_file_name,
)
from kdump.format.records import Record
from kdump.format.walk import Damaged, iter_records, walk_resync
from kdump.loss import CutLoss, cut_loss
from kdump.repair.files import Ownership, create_temp, map_regular, open_directory, own_subdir
from kdump.storage.local import close_map

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog


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
        **record.lossless_content(),
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
    kept: KeptLog | None = None
    """The segment is bytes ``kdump recover`` kept: what they were."""
    loss: CutLoss | None = None
    log: Path | None = None
    records: Path | None = None
    record_count: int = 0
    damaged: list[Damaged] = field(default_factory=list)


def salvage_segment(
    log_path: Path,
    at: int | None,
    out: Path,
    topic_partition: tuple[str, int] | None,
    max_output_bytes: int | None = None,
) -> SalvagedSegment:
    """Scan the bytes recovery would cut from the log at ``log_path`` (from ``at``, its first
    invalid batch; None: nothing to cut) and write what is whole and valid in them under
    ``out``: ``<first offset>.log`` (the batches' bytes) and ``<first offset>.jsonl``."""
    if at is None:
        return SalvagedSegment(log_path, None)
    buf = map_regular(log_path)
    try:
        return _salvage(buf, log_path, at, out, topic_partition, max_output_bytes)
    finally:
        close_map(buf)


def salvage_kept(
    path: Path, output_dir: Path, max_output_bytes: int | None = None
) -> SalvagedSegment:
    """The same for log bytes ``kdump recover`` kept (``NAME.log.kdump-cut-N``, which starts at
    the invalid batch, or ``NAME.log.kdump-bak``, a segment it deleted after a cut), written
    under ``output_dir/<partition dir name>/``; batch positions are the original log's."""
    kept = parse_kept_log(path.name)
    assert kept is not None, f"{path} is no log kdump recover kept"
    buf = map_regular(path)
    partition = path.parent.name
    at = 0 if len(buf) else None
    out = output_dir / partition
    topic_partition = parse_partition_dir(partition)
    try:
        result = _salvage(buf, path, at, out, topic_partition, max_output_bytes, kept.cut_at)
    finally:
        close_map(buf)
    result.kept = kept
    return result


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
    own_subdir(out.parent, log.parent)
    owner = Ownership.like(os.stat(log)).mine()
    result.log = out / segment_file_name(first, LOG_SUFFIX)
    result.records = out / segment_file_name(first, ".jsonl")
    topic, partition = topic_partition or (None, None)
    limit = output_limit(result.loss.salvageable.bytes, max_output_bytes)
    import json  # here: a rebuild or a clean recover never salvages

    with _atomic(result.log, "wb", owner) as log_out, _atomic(result.records, "w", owner) as jsonl:
        written = 0
        for part in walk_resync(buf, path, at):
            if isinstance(part, Damaged):
                result.damaged.append(Damaged(part.start + shift, part.end + shift))
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


AtomicFile = _atomic
"""The same, for other commands' exports (kdump replicas --export-lost)."""


def kept_elsewhere(path: Path) -> list[Path] | None:
    """The log bytes kept in a directory ``kdump recover --backup-dir B`` wrote (``B``, or
    ``B/<partition>``), in order; None where ``path`` is no such directory: one with a segment
    of its own or in a partition below it, or with no kept log bytes."""
    if not path.is_dir() or path.is_symlink():
        return None
    found: list[Path] = []
    subdirs = sorted(d for d in path.iterdir() if d.is_dir() and not d.is_symlink())
    for directory in (path, *subdirs):
        names = [p.name for p in directory.iterdir() if p.is_file()]
        if any(n.endswith(LOG_SUFFIX) for n in names):
            return None  # Kafka's data: a partition or a log dir
        found += [directory / k.name for k in kept_logs_among(names)]
    return found or None


@dataclass(frozen=True)
class NotYetRecovered:
    """Before ``kdump recover``: the segments after the first damaged one, which recovery
    deletes whole (LogLoader.recoverLog) and recover keeps. Salvage reads a segment only from
    its own first invalid batch on: their records are not in what it writes until recover has
    kept them (then salvage reads them back)."""

    cut_segment: int
    segments: tuple[int, ...]
    """Their base offsets."""
    first_offset: int
    last_offset: int


def not_yet_recovered(log: UnifiedLog) -> NotYetRecovered | None:
    """What salvage cannot see of ``log`` before it is recovered (None: nothing)."""
    damaged = log.damaged_from
    if damaged is None or log.only is not None:
        return None
    later = [s.base_offset for s in log.segments if s.base_offset > damaged.segment]
    end = log.log_end_offset_on_disk
    if not later or end <= later[0]:
        return None
    return NotYetRecovered(damaged.segment, tuple(later), later[0], end - 1)


def salvage_partition(
    log: UnifiedLog, output_dir: Path, max_output_bytes: int | None = None
) -> Iterator[SalvagedSegment]:
    """Every segment of ``log`` (or the named ones) with damage, salvaged under
    ``output_dir/<partition dir name>/``: from where its walk found the first batch recovery
    refuses (the partition's one walk of it, as verify and recover read it); then, for a
    whole partition, the log bytes an earlier ``kdump recover`` kept in it."""
    local = log.storage.local_path
    assert local is not None, "salvage reads local partitions"
    directory = Path(local)
    out = output_dir / directory.name
    for seg in log.named_segments:
        scan = segment_result(log, seg, VerifyOptions()).scan
        at = None if scan is None else scan.first_invalid
        log_path = directory / seg.file_name(LOG_SUFFIX)
        yield salvage_segment(log_path, at, out, log.topic_partition, max_output_bytes)
    if log.only is None:
        for kept in log.kept_logs:
            yield salvage_kept(directory / kept.name, output_dir, max_output_bytes)


__all__ = [
    "OUTPUT_FLOOR",
    "OUTPUT_RATIO",
    "AtomicFile",
    "NotYetRecovered",
    "SalvagedSegment",
    "kept_elsewhere",
    "not_yet_recovered",
    "output_limit",
    "record_object",
    "salvage_kept",
    "salvage_partition",
    "salvage_segment",
]
