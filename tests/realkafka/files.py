"""Two copies of a partition compared file for file: one ``kdump recover`` repaired, one Kafka
loaded (a broker, or ``load_logs``). The differences that are not differences are named here,
once, with why:

- kdump's own files: ``NAME.kdump-bak`` (a file it replaced or deleted, kept) and
  ``NAME.log.kdump-cut-N`` (the bytes a cut removed, kept); the broker has none.
- ``NAME.deleted``: the broker deletes a segment (after a cut) or a snapshot asynchronously,
  renaming it first and removing it ``file.delete.delay.ms`` later; kdump's copy is the
  ``.kdump-bak`` above. Counted as gone.
- the active segment's ``.index`` and ``.timeindex``: the broker preallocates them again to
  ``segment.index.bytes`` after loading (``LogLoader.load``: ``resizeIndexes``) so it can append;
  kdump leaves them trimmed. The entries must be equal, and the rest of the broker's file zeros.
- ``leader-epoch-checkpoint``: a started broker that leads the partition appends the epoch it
  leads in (Partition.makeLeader), through a ``.tmp`` file; ``load_logs`` does not start any.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from pathlib import Path

from kdump.errors import KdumpError
from kdump.format.names import RECOVERY_POINT_CHECKPOINT
from kdump.format.textfiles import (
    TopicPartitionOffset,
    offset_checkpoint_bytes,
    read_offset_checkpoint,
)


def offset_checkpoint_at(path: str | os.PathLike[str]) -> dict[tuple[str, int], int] | None:
    """An offset checkpoint file's entries by (topic, partition), or None when it is missing
    or unreadable (verify says why; the broker falls back without it)."""
    try:
        with open(path, "rb") as f:
            entries = read_offset_checkpoint(f.read(1 << 24), str(path))
    except (OSError, KdumpError):
        return None
    return {(e.topic, e.partition): e.offset for e in entries}


KDUMP_KEPT = (".kdump-bak",)
INDEX_SUFFIXES = (".index", ".timeindex")


def _kdump_own(name: str) -> bool:
    return name.endswith(KDUMP_KEPT) or ".kdump-cut-" in name or ".kdump-bak." in name


def partition_differences(
    kdump_dir: Path, kafka_dir: Path, *, broker_started: bool = True, snapshots: bool = True
) -> list[str]:
    """Every difference between the two copies of one partition directory but the named ones;
    [] when kdump's repair left what Kafka's load left. ``snapshots=False`` leaves the
    producer snapshots out (a caller comparing them with kdump's forecast instead)."""
    ours = {p.name for p in kdump_dir.iterdir() if not _kdump_own(p.name)}
    theirs = {p.name for p in kafka_dir.iterdir() if not p.name.endswith(".deleted")}
    if not snapshots:
        ours = {n for n in ours if not n.endswith(".snapshot")}
        theirs = {n for n in theirs if not n.endswith(".snapshot")}
    if broker_started:
        ours.discard("leader-epoch-checkpoint")
        theirs.discard("leader-epoch-checkpoint")
        theirs.discard("leader-epoch-checkpoint.tmp")  # being written as we look
    out = [f"{kdump_dir.name}: only kdump's copy has {n}" for n in sorted(ours - theirs)]
    out += [f"{kdump_dir.name}: only Kafka's copy has {n}" for n in sorted(theirs - ours)]
    logs = sorted(n for n in ours & theirs if n.endswith(".log"))
    active = logs[-1].removesuffix(".log") if logs else None
    for name in sorted(ours & theirs):
        a, b = (kdump_dir / name).read_bytes(), (kafka_dir / name).read_bytes()
        if a == b:
            continue
        stem, _, suffix = name.partition(".")
        preallocated = stem == active and "." + suffix in INDEX_SUFFIXES
        if preallocated and b[: len(a)] == a and not b[len(a) :].strip(b"\0"):
            continue  # the broker's preallocated tail
        out.append(f"{kdump_dir.name}/{name}: {_first_difference(a, b)}")
    return out


def _first_difference(a: bytes, b: bytes) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    return f"kdump's {len(a)} bytes, Kafka's {len(b)}; first difference at byte {at}"


def snapshot_offsets(partition_dir: Path) -> list[int]:
    """The offsets of the producer snapshots in a partition directory (not those marked
    deleted)."""
    return sorted(int(p.name.split(".")[0]) for p in partition_dir.glob("*.snapshot"))


def batch_spans(log: Path) -> list[tuple[int, int]]:
    """(position, size) of each whole batch of a ``.log``, from the v2 headers' lengths."""
    data, out, pos = log.read_bytes(), [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        if length <= 0 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def flip_batch(log: Path, index: int) -> None:
    """A byte of the records of batch ``index`` of ``log`` flipped: its CRC fails."""
    pos, size = batch_spans(log)[index]
    with open(log, "r+b") as f:
        f.seek(pos + size - 3)
        byte = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([byte[0] ^ 0xFF]))


def set_recovery_points(log_dir: Path, points: Mapping[tuple[str, int], int]) -> None:
    """The log dir's recovery-point-offset-checkpoint with ``points`` set (as a crash before
    the broker's next checkpoint leaves it)."""
    path = log_dir / RECOVERY_POINT_CHECKPOINT
    entries = offset_checkpoint_at(path) or {}
    entries.update(points)
    rows = [TopicPartitionOffset(t, p, o) for (t, p), o in sorted(entries.items())]
    path.write_bytes(offset_checkpoint_bytes(rows))
