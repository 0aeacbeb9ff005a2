"""Write fixtures/corrupt-kraft/: copies of genuine KRaft log dirs (fixtures/realfiles), each
with one change that one of ``kdump verify``'s KRaft checks (kdump.kraft.checks) must report.

Three genuine log dirs serve: ``christseng89__RealTime_Analysis`` (a controller's 600-byte
metadata log: five LeaderChange records at epochs 1 to 5 and the bootstrap transaction;
quorum-state, leader-epoch-checkpoint, bootstrap.checkpoint, meta.properties),
``13LAckHEart__kafka`` (a combined node: its metadata log registers broker 1 and topic
test-topic, whose partition directory sits beside it) and ``nomanazeem__Kafka-java`` (a
combined node whose __consumer_offsets-15 holds records). Snapshots are written here, as
Kafka's RecordsSnapshotWriter lays them out (a SnapshotHeader control batch, the records in
batches of the snapshot's epoch, a SnapshotFooter), from the log's own record bytes, by
kafka-python's batch builder (scripts/make_internal_fixtures.batch). Positions and offsets come
from the files as written (the batch layout of scripts/make_corrupt.py), never from kdump.

Outputs, deterministic::

    fixtures/corrupt-kraft/<case>/logdir/...  the changed copy of the log dir
    fixtures/corrupt-kraft/cases.json         case -> code, severity, exit_code, target, path,
                                              position, offset, source, how (as
                                              fixtures/corrupt/cases.json)
    fixtures/corrupt-kraft/README.md          one line per case

Regenerate (from the repository root)::

    python scripts/make_kraft_corrupt.py            # writes fixtures/corrupt-kraft/
    python scripts/make_kraft_corrupt.py --out DIR  # elsewhere (the tests compare the two)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_corrupt import LOG_OVERHEAD, V2_FIELD, fix_v2_crc, patch, read, zigzag_varint
from make_internal_fixtures import batch, cstring, frame, i16, tags

REPO = Path(__file__).resolve().parents[1]
REALFILES = REPO / "fixtures" / "realfiles"
DEFAULT_OUT = REPO / "fixtures" / "corrupt-kraft"
CONTROLLER = "christseng89__RealTime_Analysis/kafka-logs"
COMBINED = "13LAckHEart__kafka/data/kafka"
OFFSETS = "nomanazeem__Kafka-java/kafka-logs"
METADATA = "__cluster_metadata-0"
LOG = f"{METADATA}/00000000000000000000.log"
LOG_DIR = "logdir"
SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4
TRANSACTION_MARKERS = (23, 24, 25)  # Begin/End/AbortTransactionRecord: not in snapshots
HEADER_SIZE = V2_FIELD["records_count"][0] + 4


@dataclass
class Batch:
    """One batch of a genuine log, read by the layout alone."""

    position: int
    base_offset: int
    last_offset: int
    epoch: int
    max_timestamp: int
    control: bool
    values: list[bytes]


def log_batches(log: Path) -> list[Batch]:
    """The batches of an uncompressed v2 log and their records' values (DefaultRecord)."""
    data, out, pos = log.read_bytes(), [], 0
    while pos + LOG_OVERHEAD < len(data):
        fields = {
            name: st.unpack_from(data, pos + at)[0]
            for name, (at, st) in V2_FIELD.items()
            if at < HEADER_SIZE
        }
        end = pos + LOG_OVERHEAD + fields["batch_length"]
        values, p = [], pos + HEADER_SIZE
        for _ in range(fields["records_count"]):
            length, p = zigzag_varint(data, p)
            record_end = p + length
            p += 1  # attributes
            _, p = zigzag_varint(data, p)  # timestamp delta
            _, p = zigzag_varint(data, p)  # offset delta
            key_size, p = zigzag_varint(data, p)
            p += max(key_size, 0)
            value_size, p = zigzag_varint(data, p)
            values.append(data[p : p + value_size])
            p = record_end
        out.append(
            Batch(
                pos,
                fields["base_offset"],
                fields["base_offset"] + fields["last_offset_delta"],
                fields["partition_leader_epoch"],
                fields["max_timestamp"],
                bool(fields["attributes"] & 0x20),
                values,
            )
        )
        pos = end
    return out


def snapshot(records: list[bytes], epoch: int, time_ms: int) -> bytes:
    """A snapshot as RecordsSnapshotWriter writes it: header, records, footer, at ``epoch``."""
    header = (i16(0) + i16(SNAPSHOT_HEADER), i16(0) + struct.pack(">q", time_ms) + tags())
    footer = (i16(0) + i16(SNAPSHOT_FOOTER), i16(0) + tags())
    body = [(None, r) for r in records]
    out = batch(0, [header], time_ms, control=True) + batch(1, body, time_ms)
    out += batch(1 + len(records), [footer], time_ms, control=True)
    raw = bytearray(out)
    pos = 0
    while pos < len(raw):  # every batch at the snapshot's epoch
        struct.pack_into(">i", raw, pos + V2_FIELD["partition_leader_epoch"][0], epoch)
        length = struct.unpack_from(">i", raw, pos + V2_FIELD["batch_length"][0])[0]
        pos += LOG_OVERHEAD + length
    return bytes(raw)


def snapshot_of(log_dir: Path, end: int, epoch: int | None = None) -> tuple[str, bytes]:
    """A snapshot of the log's records below ``end``: its name and bytes (the name's epoch
    the log's at ``end - 1`` unless given)."""
    found = log_batches(log_dir / LOG)
    holding = next(b for b in found if b.base_offset <= end - 1 <= b.last_offset)
    records = [
        v
        for b in found
        if not b.control and b.base_offset < end
        for i, v in enumerate(b.values)
        if b.base_offset + i < end and v[1] not in TRANSACTION_MARKERS
    ]
    epoch = holding.epoch if epoch is None else epoch
    name = f"{end:020d}-{epoch:010d}.checkpoint"
    return name, snapshot(records, holding.epoch, holding.max_timestamp)


def feature_level(name: str, level: int) -> bytes:
    return frame(12, 0, cstring(name) + i16(level) + tags())


# --- cases ---------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    code: str
    severity: str
    exit_code: int
    source: str
    how: str
    build: Callable[[Path], tuple[str, int | None, int | None]]
    """Changes the copy (its log dir given); the file the finding names (relative to the log
    dir), its position and offset."""


CASES: list[Case] = []


def case(code: str, severity: str, exit_code: int, source: str, how: str, variant: str = "") -> Any:
    def register(build: Callable[[Path], tuple[str, int | None, int | None]]) -> Any:
        name = code.lower().replace("_", "-") + (f"-{variant}" if variant else "")
        CASES.append(Case(name, code, severity, exit_code, source, how, build))
        return build

    return register


def set_quorum_state(log_dir: Path, **changes: Any) -> str:
    path = log_dir / METADATA / "quorum-state"
    state = json.loads(path.read_text())
    state.update(changes)
    path.write_text(json.dumps(state, separators=(",", ":")))
    return f"{METADATA}/quorum-state"


@case(
    "KRAFT_QUORUM_STATE_CORRUPT", "error", 2, CONTROLLER,
    "quorum-state cut to its first 40 bytes (a torn write of the election state)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    path = d / METADATA / "quorum-state"
    path.write_bytes(path.read_bytes()[:40])
    return f"{METADATA}/quorum-state", None, None


@case(
    "KRAFT_QUORUM_STATE_BEHIND", "warning", 0, CONTROLLER,
    "quorum-state's leaderEpoch set from 5 to 3 (the log's last batch is of epoch 5)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    return set_quorum_state(d, leaderEpoch=3), None, None


@case(
    "KRAFT_QUORUM_STATE_LEADER", "warning", 0, CONTROLLER,
    "quorum-state's leaderId set from 1 to 2 (not a voter; the LeaderChange of epoch 5 says 1)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    return set_quorum_state(d, leaderId=2), None, None


@case(
    "KRAFT_SNAPSHOT_UNREADABLE", "error", 2, CONTROLLER,
    "a snapshot at offset 5, epoch 1 (the bootstrap records), one bit of its records batch "
    "flipped (its CRC no longer matches)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    name, data = snapshot_of(d, 5)
    raw = bytearray(data)
    records_batch = LOG_OVERHEAD + struct.unpack_from(">i", raw, 8)[0]  # after the header's
    raw[records_batch + HEADER_SIZE + 6] ^= 0x01
    (d / METADATA / name).write_bytes(bytes(raw))
    return f"{METADATA}/{name}", records_batch, 5


@case(
    "KRAFT_SNAPSHOT_LEFTOVER", "warning", 0, CONTROLLER,
    "a snapshot being written, 00000000000000000005-0000000001.checkpoint.part, left beside "
    "the log (a node stopped while writing it)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    name, data = snapshot_of(d, 5)
    (d / METADATA / (name + ".part")).write_bytes(data[: len(data) // 2])
    return f"{METADATA}/{name}.part", None, 5


@case(
    "KRAFT_SNAPSHOT_MISMATCH", "warning", 0, CONTROLLER,
    "a snapshot of the log up to offset 5 named at epoch 3 (its batches, and the log at offset "
    "4, are of epoch 1)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    name, data = snapshot_of(d, 5, epoch=3)
    (d / METADATA / name).write_bytes(data)
    return f"{METADATA}/{name}", None, 5


@case(
    "KRAFT_SNAPSHOT_BEYOND_LOG_END", "warning", 0, CONTROLLER,
    "a snapshot of the whole log named at end offset 20, epoch 5 (the log ends at 9): as a "
    "follower leaves one it fetched before it truncated its log",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    _, data = snapshot_of(d, 9)
    raw = bytearray(data)
    pos = 0
    while pos < len(raw):
        struct.pack_into(">i", raw, pos + V2_FIELD["partition_leader_epoch"][0], 5)
        pos += LOG_OVERHEAD + struct.unpack_from(">i", raw, pos + 8)[0]
    name = f"{20:020d}-{5:010d}.checkpoint"
    (d / METADATA / name).write_bytes(bytes(raw))
    return f"{METADATA}/{name}", None, 20


@case(
    "KRAFT_BOOTSTRAP_MISMATCH", "warning", 0, CONTROLLER,
    "a zero checkpoint 00000000000000000000-0000000000.checkpoint holding metadata.version 20, "
    "beside a bootstrap.checkpoint holding 14 (two formats of the node)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    data = snapshot([feature_level("metadata.version", 20)], 0, 1715170746000)
    (d / METADATA / "00000000000000000000-0000000000.checkpoint").write_bytes(data)
    return "bootstrap.checkpoint", None, None


@case(
    "KRAFT_META_PROPERTIES_MISMATCH", "warning", 0, COMBINED,
    "meta.properties' node.id set from 1 to 7 (the image registers broker 1 only)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    path = d / "meta.properties"
    path.write_text(path.read_text().replace("node.id=1", "node.id=7"))
    return "meta.properties", None, None


@case(
    "KRAFT_TOPIC_ID_MISMATCH", "error", 2, COMBINED,
    "test-topic-0/partition.metadata's topic_id changed to another id (a directory of a deleted "
    "topic of the same name)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    path = d / "test-topic-0" / "partition.metadata"
    path.write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAZQ\n")
    return "test-topic-0/partition.metadata", None, None


@case(
    "KRAFT_PARTITION_NOT_IN_IMAGE", "warning", 0, COMBINED,
    "test-topic-0 copied to test-topic-5 (the image's test-topic has one partition)",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    shutil.copytree(d / "test-topic-0", d / "test-topic-5")
    return "test-topic-5", None, None


@case(
    "KRAFT_TOPIC_ID_MISSING", "warning", 0, OFFSETS,
    "__consumer_offsets-15/partition.metadata removed (its 21,446-byte log holds records; a "
    "directory restored without it); the log dir's other partitions dropped to keep it small",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    for other in d.iterdir():
        if other.is_dir() and other.name not in (METADATA, "__consumer_offsets-15"):
            shutil.rmtree(other)
    (d / "__consumer_offsets-15" / "partition.metadata").unlink()
    return "__consumer_offsets-15", None, None


@case(
    "KRAFT_RECORD_REFUSED", "error", 2, COMBINED,
    "the BrokerRegistrationChangeRecord at offset 4: its brokerEpoch 3 set to 4 (broker 1 "
    "registered at epoch 3), the batch's CRC recomputed",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    log = d / LOG
    change = next(b for b in log_batches(log) if b.base_offset == 4)
    value = change.values[0]
    assert value[:3] == b"\x01\x11\x00"  # frame: BrokerRegistrationChangeRecord v0
    data = read(log, change.position, 200)
    at = change.position + data.index(value) + 3 + 4  # past the frame and brokerId
    assert struct.unpack(">q", read(log, at, 8))[0] == 3
    patch(log, at, struct.pack(">q", 4))
    fix_v2_crc(log, change.position)
    return LOG, None, 4


@case(
    "LEADER_EPOCH_INCONSISTENT", "warning", 0, CONTROLLER,
    "the metadata log's leader-epoch-checkpoint: epoch 5 said to start at offset 7 (its "
    "LeaderChange batch is at 8)",
    variant="kraft",
)  # fmt: skip
def _(d: Path) -> tuple[str, int | None, int | None]:
    path = d / METADATA / "leader-epoch-checkpoint"
    path.write_text(path.read_text().replace("5 8", "5 7"))
    return f"{METADATA}/leader-epoch-checkpoint", None, None


# --- output --------------------------------------------------------------------------------


def build(c: Case, out: Path) -> dict[str, Any]:
    log_dir = out / c.name / LOG_DIR
    shutil.copytree(REALFILES / c.source, log_dir)
    path, position, offset = c.build(log_dir)
    return {
        "code": c.code,
        "severity": c.severity,
        "exit_code": c.exit_code,
        "target": LOG_DIR,
        "options": [],
        "path": f"{LOG_DIR}/{path}",
        "position": position,
        "offset": offset,
        "source": f"realfiles/{c.source}",
        "clean": [f"realfiles/{c.source}"],
        "clean_options": [],
        "how": c.how,
    }


def readme(cases: dict[str, dict[str, Any]]) -> str:
    lines = [
        "# fixtures/corrupt-kraft: genuine KRaft log dirs, each with one change",
        "",
        "Written by `python scripts/make_kraft_corrupt.py` (see its docstring); "
        "`cases.json` says what `kdump verify` must report for each.",
        "",
        "| case | code | how |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{n}` | `{c['code']}` | {c['how']} |" for n, c in cases.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    out: Path = parser.parse_args(argv).out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cases = {c.name: build(c, out) for c in CASES}
    (out / "cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    (out / "README.md").write_text(readme(cases))
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{len(cases)} cases, {total} bytes in {os.path.relpath(out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
