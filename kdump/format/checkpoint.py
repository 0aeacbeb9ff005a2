"""Kafka's small text files: offset checkpoints (recovery point, log start, replication,
cleaner), leader-epoch-checkpoint and partition.metadata (CheckpointFile, LeaderEpochCheckpoint,
PartitionMetadataFile).

An offset checkpoint is ``version`` (0), ``count``, then ``count`` lines ``topic partition
offset``; a leader-epoch-checkpoint is ``0``, ``count``, then ``epoch start_offset`` lines.
"""

from __future__ import annotations

from typing import NamedTuple

from kdump.errors import FormatError

OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str


def _lines(text: str, path: str, fields: int) -> list[list[str]]:
    """Version line, count line, then exactly ``count`` lines of ``fields`` fields."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not text.strip():
        return []  # CheckpointFile reads an empty file as no entries
    position = 0

    def fail(i: int, why: str) -> FormatError:
        return FormatError(path, sum(len(x) + 1 for x in lines[:i]), f"line {i + 1}: {why}")

    if len(lines) < 2:
        raise FormatError(path, position, "expected a version line and a count line")
    if lines[0].strip() != "0":
        raise fail(0, f"unsupported checkpoint version {lines[0]!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise fail(1, f"expected an entry count, found {lines[1]!r}") from None
    if count < 0 or len(lines) - 2 != count:
        raise fail(1, f"count says {count} entries, the file has {len(lines) - 2}")
    rows = []
    for i, line in enumerate(lines[2:], start=2):
        parts = line.split()
        if len(parts) != fields:
            raise fail(i, f"expected {fields} fields, found {line!r}")
        rows.append(parts)
    return rows


def _int(value: str, path: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise FormatError(path, 0, f"{what} {value!r} is not a number") from None


def parse_offset_checkpoint(text: str, path: str = "<text>") -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset."""
    out = {}
    for topic, partition, offset in _lines(text, path, 3):
        out[(topic, _int(partition, path, "partition"))] = _int(offset, path, "offset")
    return out


def parse_leader_epoch_checkpoint(text: str, path: str = "<text>") -> list[EpochEntry]:
    return [
        EpochEntry(_int(e, path, "epoch"), _int(o, path, "start offset"))
        for e, o in _lines(text, path, 2)
    ]


def parse_partition_metadata(text: str, path: str = "<text>") -> PartitionMetadata:
    fields = {}
    for i, line in enumerate(text.splitlines()):
        key, sep, value = line.partition(":")
        if not sep:
            raise FormatError(path, 0, f"line {i + 1}: expected 'key: value', found {line!r}")
        fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        raise FormatError(path, 0, "expected 'version: 0' and 'topic_id: <id>'")
    return PartitionMetadata(0, fields["topic_id"])
