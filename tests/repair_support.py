"""Helpers shared by the repair tests (no tests here): fixture copies laid out as a broker log
dir, batch positions, damage, and a file-tree snapshot to compare states."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import ORACLE

from kdump.format.walk import iter_batches
from kdump.storage.local import map_file


def copy_partition(name: str, root: Path) -> Path:
    """fixtures/oracle/NAME copied to ROOT/logdir/NAME (a log dir with one partition)."""
    log_dir = root / "logdir"
    log_dir.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(ORACLE / name, log_dir / name))


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative name -> bytes)."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def batch_positions(log: Path) -> list[tuple[int, int]]:
    """(start, end) of each batch of a .log."""
    return [(b.position, b.end) for b in iter_batches(map_file(log), str(log))]


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


def damage(partition: Path) -> dict[str, int]:
    """Flip a byte inside the fourth batch of the second segment and tear the last segment's
    tail (log name -> position of its first invalid batch). Recovery cuts the first and
    deletes every later segment (``cut_and_deleted``)."""
    logs = sorted(partition.glob("*.log"))
    second, last = logs[1], logs[-1]
    start, end = batch_positions(second)[3]
    flip_byte(second, (start + end) // 2)
    data = last.read_bytes()
    last_start, _ = batch_positions(last)[-1]
    last.write_bytes(data[: last_start + 30])
    return {second.name: start, last.name: last_start}


def cut_and_deleted(cuts: dict[str, int]) -> tuple[str, int, list[str]]:
    """What recovery does to a log damaged in several segments (LogLoader.recoverLog): cuts the
    first damaged one, at its first invalid batch, and deletes every later segment."""
    first = min(cuts)
    return first, cuts[first], sorted(n for n in cuts if n > first)
