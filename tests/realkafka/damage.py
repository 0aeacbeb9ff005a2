"""Damage as it happens to a stopped broker's partition, done to a copy: each function takes a
partition directory and changes its files in place (shared by tests/test_kafka_damage.py and
the fixtures scripts/make_realkafka_fixtures.py makes)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path


def batches(log: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each batch in a .log, from the v2 headers."""
    data, out, pos = log.read_bytes(), [], 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if length <= 0 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length, base))
        pos += 12 + length
    return out


def logs(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def middle(partition: Path) -> Path:
    found = logs(partition)
    assert len(found) >= 3, f"{partition} has {len(found)} segments"
    return found[1]


def torn_tail(partition: Path) -> None:
    """The active segment ends inside its last batch."""
    log = logs(partition)[-1]
    pos, size, _ = batches(log)[-1]
    with open(log, "r+b") as f:
        f.truncate(pos + size // 2)


def flipped_middle(partition: Path) -> None:
    """A byte of a batch's records flipped in a middle segment: its CRC fails."""
    log = middle(partition)
    pos, size, _ = batches(log)[len(batches(log)) // 2]
    with open(log, "r+b") as f:
        f.seek(pos + size - 3)
        byte = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([byte[0] ^ 0xFF]))


def deleted_index(partition: Path) -> None:
    middle(partition).with_suffix(".index").unlink()


def corrupt_timeindex(partition: Path) -> None:
    """A middle segment's time index entries overwritten: timestamps going backwards."""
    index = middle(partition).with_suffix(".timeindex")
    entries = index.stat().st_size // 12
    with open(index, "r+b") as f:
        for i in range(entries):
            f.seek(i * 12)
            f.write(struct.pack(">q", 1000 - i))


def zero_tail(partition: Path) -> None:
    """4 KiB of zeros after the active segment's last batch (the file grew, its data never
    reached the disk)."""
    with open(logs(partition)[-1], "ab") as f:
        f.write(bytes(4096))


def no_snapshots(partition: Path) -> None:
    for snapshot in partition.glob("*.snapshot"):
        snapshot.unlink()


def leftovers(partition: Path) -> None:
    """What interrupted work leaves: a deleted segment's ``.deleted`` files, a compaction's
    ``.cleaned`` output, a ``.swap`` (with its indexes) a compaction did not rename."""
    first, second = logs(partition)[0], middle(partition)
    shutil.copy(first, str(first) + ".deleted")
    shutil.copy(second, str(second) + ".cleaned")
    for suffix in (".log", ".index", ".timeindex"):
        source = second.with_suffix(suffix)
        shutil.copy(source, str(source) + ".swap")


def write_recovery_points(log_dir: Path, points: dict[str, int]) -> None:
    """recovery-point-offset-checkpoint with ``points`` (``topic-partition``) changed."""
    path = log_dir / "recovery-point-offset-checkpoint"
    lines = path.read_text().split("\n")
    entries = {}
    for line in lines[2:]:
        if line.strip():
            topic, partition, offset = line.rsplit(" ", 2)
            entries[f"{topic}-{partition}"] = (topic, partition, int(offset))
    for name, offset in points.items():
        topic, partition, _ = entries[name]
        entries[name] = (topic, partition, offset)
    body = "".join(f"{t} {p} {o}\n" for t, p, o in entries.values())
    path.write_text(f"0\n{len(entries)}\n{body}")


def torn_at_last_index_entry(partition: Path) -> None:
    """The active segment torn inside the batch its offset index's last entry names: the case
    where readNextOffset, starting at that entry, finds no whole batch."""
    log = logs(partition)[-1]
    index = log.with_suffix(".index").read_bytes()
    whole = len(index) // 8 * 8
    assert whole, f"{log} has no offset index entry"
    _, position = struct.unpack_from(">ii", index, whole - 8)
    with open(log, "r+b") as f:
        f.truncate(position + 20)
