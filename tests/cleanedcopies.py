"""Partitions Kafka's cleaner cleaned (fixtures/compaction), copied and damaged at the byte level
for the tests of the compacted-log audit and of the replicas' content comparison: a batch of the
input (kafka-python's encoding) put back, a batch cut out, a header flag or a marker's type
changed with the CRC fixed (no test here)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

from batchbytes import fix_crc
from conftest import REPO

from kdump.format.walk import iter_batches

SCENARIOS = REPO / "fixtures" / "compaction"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "scenario.json").exists())
ATTRIBUTES, BASE_TIMESTAMP, RECORDS = 21, 27, 61
DELETE_HORIZON = 0x40


def spec(name: str) -> dict[str, Any]:
    return dict(json.loads((SCENARIOS / name / "scenario.json").read_text()))


def kafka_copy(name: str, into: Path) -> tuple[Path, Path]:
    """Kafka's cleaned log dir of scenario ``name`` copied to ``into``: (log dir, partition)."""
    shutil.copytree(SCENARIOS / name / "kafka", into)
    (part,) = [p for p in into.iterdir() if p.is_dir()]
    return into, part


def input_copy(name: str, into: Path) -> tuple[Path, Path]:
    """The partition Kafka's cleaner was given (its input, or the oracle partition) copied to
    ``into``, with its cleaner checkpoint where it had one."""
    s = spec(name)
    into.mkdir(parents=True)
    if "oracle" in s:
        source = REPO / "fixtures" / "oracle" / s["oracle"]
    else:
        source = next(p for p in (SCENARIOS / name / "input").iterdir() if p.is_dir())
        checkpoint = SCENARIOS / name / "input" / "cleaner-offset-checkpoint"
        if checkpoint.exists():
            shutil.copy(checkpoint, into)
    part = into / source.name
    shutil.copytree(source, part)
    return into, part


def batch_at(log: Path, offset: int) -> tuple[int, int]:
    """(position, end) of the batch of ``log`` holding ``offset``."""
    for b in iter_batches(log.read_bytes()):
        if b.base_offset <= offset <= b.last_offset:
            return b.position, b.end
    raise AssertionError(f"no batch holds {offset} in {log}")


def segment_of(part: Path, offset: int) -> Path:
    """The ``.log`` of ``part`` whose batches hold ``offset``."""
    for log in sorted(part.glob("*.log")):
        if any(b.base_offset <= offset <= b.last_offset for b in iter_batches(log.read_bytes())):
            return log
    raise AssertionError(f"no segment of {part} holds {offset}")


def splice(path: Path, start: int, end: int, insert: bytes = b"") -> None:
    data = path.read_bytes()
    path.write_bytes(data[:start] + insert + data[end:])


def cut_batch(part: Path, offset: int) -> None:
    """The batch holding ``offset`` removed from its segment."""
    log = segment_of(part, offset)
    splice(log, *batch_at(log, offset))


def input_batch(name: str, offset: int) -> bytes:
    """The bytes of the input's batch holding ``offset`` (kafka-python's encoding)."""
    (part,) = [p for p in (SCENARIOS / name / "input").iterdir() if p.is_dir()]
    log = segment_of(part, offset)
    return log.read_bytes()[slice(*batch_at(log, offset))]


def edit_header(log: Path, offset: int, clear: int = 0, horizon: int | None = None) -> None:
    """Clear attribute bits of the batch holding ``offset``, or stamp ``horizon`` on it."""
    position, _ = batch_at(log, offset)
    data = bytearray(log.read_bytes())
    (attributes,) = struct.unpack_from(">h", data, position + ATTRIBUTES)
    attributes &= ~clear
    if horizon is not None:
        attributes |= DELETE_HORIZON
        struct.pack_into(">q", data, position + BASE_TIMESTAMP, horizon)
    struct.pack_into(">h", data, position + ATTRIBUTES, attributes)
    fix_crc(data, position)
    log.write_bytes(bytes(data))


def flip_marker(part: Path, offset: int) -> None:
    """The marker at ``offset`` made the other type (COMMIT <-> ABORT): its control record's
    key (version 0, type) after the key length varint 8."""
    log = segment_of(part, offset)
    position, end = batch_at(log, offset)
    data = bytearray(log.read_bytes())
    key = data.index(b"\x08\x00\x00\x00", position + RECORDS, end) + 4
    assert data[key] in (0, 1)
    data[key] ^= 1
    fix_crc(data, position)
    log.write_bytes(bytes(data))
