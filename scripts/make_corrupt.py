"""Write fixtures/corrupt/: copies of Kafka-written partitions, each with one mutation that a
``kdump verify`` check must report.

Every case copies a small partition from ``fixtures/oracle`` (mostly ``txn-0``: 4 segments,
``.txnindex`` files, producer snapshots) into ``fixtures/corrupt/<case>/<partition>/`` (log-dir
cases: ``fixtures/corrupt/<case>/logdir/<partition>/`` beside checkpoint files) and applies one
mutation. Batch positions, offsets and timestamps come from ``fixtures/oracle/manifest.json``
(Kafka's own answers), never from kdump. Header fields inside a v2 batch's CRC (bytes 21 on) get
their CRC-32C recomputed, unless the case is about the CRC. Cases that need no copy (a verify
option, or an oracle directory that already shows the fact) verify the oracle in place.

Outputs, all deterministic (the same bytes on every run)::

    fixtures/corrupt/<case>/...     the mutated copies
    fixtures/corrupt/cases.json     case -> code, severity, exit_code, target, options, path,
                                    position, offset, source, clean, clean_options, how
    fixtures/corrupt/README.md      one line per case: how it was made

In ``cases.json``, ``target`` (what to verify) and ``path`` (the file the finding names) are
relative to the case directory ``fixtures/corrupt/<case>/`` (in-place cases point into
``../../oracle/``: normalise the joined path); ``clean`` lists unmutated directories, relative
to ``fixtures/``, that must verify without the code (with ``clean_options``); ``exit_code`` is
the exit code of ``kdump verify`` at the default ``--fail-on error``.

Regenerate (from the repository root; the script owns and replaces the output directory)::

    python scripts/make_corrupt.py            # writes fixtures/corrupt/
    python scripts/make_corrupt.py --out DIR  # elsewhere (the tests compare the two)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from crc32c import crc32c

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
ORACLE = FIXTURES / "oracle"
DEFAULT_OUT = FIXTURES / "corrupt"
REGEN_COMMAND = "python scripts/make_corrupt.py"
LOG_DIR = "logdir"
IN_PLACE = "../../oracle"
INT32_MAX = 2**31 - 1

# DefaultRecordBatch's header, in file order; positions are derived from the sizes. Written out
# here, not imported from kdump.format.layout: the damage must be placed independently of the
# code that is to find it.
V2_FIELDS = (
    ("base_offset", "q"),
    ("batch_length", "i"),
    ("partition_leader_epoch", "i"),
    ("magic", "b"),
    ("crc", "I"),
    ("attributes", "h"),
    ("last_offset_delta", "i"),
    ("base_timestamp", "q"),
    ("max_timestamp", "q"),
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("base_sequence", "i"),
    ("records_count", "i"),
)
V2_FIELD: dict[str, tuple[int, struct.Struct]] = {}
_at = 0
for _name, _fmt in V2_FIELDS:
    V2_FIELD[_name] = (_at, struct.Struct(">" + _fmt))
    _at += V2_FIELD[_name][1].size
RECORDS_START = _at
CRC_AT = V2_FIELD["crc"][0]
CRC_COVERS_FROM = V2_FIELD["attributes"][0]
LOG_OVERHEAD = V2_FIELD["partition_leader_epoch"][0]

# Legacy message: offset int64, size int32, crc uint32 (CRC-32 of magic..end), magic, ...
LEGACY_CRC_AT = LOG_OVERHEAD
LEGACY_CRC_FROM = LEGACY_CRC_AT + 4

OFFSET_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position
TIME_INDEX_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
TXN_INDEX_ENTRY = struct.Struct(">hqqqq")  # version, producer id, first, last, last stable


# --- the oracle, as Kafka describes it ------------------------------------------------------


@cache
def manifest() -> dict[str, Any]:
    return json.loads((ORACLE / "manifest.json").read_text())


def name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


def batches(source: str, base: int) -> list[dict[str, Any]]:
    return manifest()["files"][source][name(base, ".log")]["batches"]  # type: ignore[no-any-return]


def batch(source: str, base: int, base_offset: int) -> dict[str, Any]:
    """The manifest's batch of segment ``base`` whose base offset is ``base_offset``."""
    for b in batches(source, base):
        if b["baseOffset"] == base_offset:
            return b
    raise KeyError(f"{source}/{name(base, '.log')} has no batch at offset {base_offset}")


def log_end_offset(source: str) -> int:
    return int(manifest()["directories"][source]["log_end_offset"])


# --- byte surgery --------------------------------------------------------------------------


def patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def read(path: Path, position: int, size: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(position)
        return f.read(size)


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def fix_v2_crc(log: Path, position: int) -> None:
    """Store the CRC-32C of bytes [21, end) of the v2 batch at ``position``."""
    length = V2_FIELD["batch_length"][1].unpack(read(log, position + LOG_OVERHEAD - 4, 4))[0]
    end = position + LOG_OVERHEAD + length
    body = read(log, position + CRC_COVERS_FROM, end - position - CRC_COVERS_FROM)
    patch(log, position + CRC_AT, struct.pack(">I", crc32c(body)))


def set_v2(log: Path, position: int, field_name: str, value: int) -> None:
    """Set one header field of the v2 batch at ``position``; keep the CRC right."""
    at, st = V2_FIELD[field_name]
    patch(log, position + at, st.pack(value))
    if at >= CRC_COVERS_FROM:
        fix_v2_crc(log, position)


def get_v2(log: Path, position: int, field_name: str) -> int:
    at, st = V2_FIELD[field_name]
    return int(st.unpack(read(log, position + at, st.size))[0])


def flip_bit(path: Path, position: int, bit: int = 0) -> None:
    patch(path, position, bytes([read(path, position, 1)[0] ^ (1 << bit)]))


def zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A protobuf zig-zag varint at ``pos``: (value, position after it)."""
    raw = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def zigzag_byte(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    assert raw < 0x80, "one-byte varints only"
    return bytes([raw])


def record_offset_delta_at(log: Path, b: dict[str, Any], index: int) -> tuple[int, int]:
    """(file position, value) of record ``index``'s offsetDelta in an uncompressed v2 batch.

    A record is ``length varint, attributes int8, timestampDelta varlong, offsetDelta varint, ...``.
    """
    assert b["compresscodec"] == "none"
    data = read(log, b["position"], b["sizeInBytes"])
    pos = RECORDS_START
    for _ in range(index):
        length, body = zigzag_varint(data, pos)
        pos = body + length
    _, body = zigzag_varint(data, pos)
    _, after_ts = zigzag_varint(data, body + 1)
    delta, _ = zigzag_varint(data, after_ts)
    return b["position"] + after_ts, delta


def index_entry(path: Path, entry: struct.Struct, i: int) -> tuple[int, ...]:
    return entry.unpack(read(path, i * entry.size, entry.size))


def set_index_entry(path: Path, entry: struct.Struct, i: int, *values: int) -> None:
    patch(path, i * entry.size, entry.pack(*values))


def swap_index_entries(path: Path, entry: struct.Struct, i: int, j: int) -> None:
    a, b = index_entry(path, entry, i), index_entry(path, entry, j)
    set_index_entry(path, entry, i, *b)
    set_index_entry(path, entry, j, *a)


# --- cases ---------------------------------------------------------------------------------


@dataclass
class Expect:
    """Where the finding must be: a file (relative to the case dir), and its byte position
    and offset where the mutation defines them."""

    path: str
    position: int | None = None
    offset: int | None = None


@dataclass
class Work:
    """A case being built: its directory and the partition copy (or the oracle, in place)."""

    case_dir: Path
    source: str
    in_place: bool
    log_dir: bool

    @property
    def part(self) -> Path:
        if self.in_place:
            return ORACLE / self.source
        return (
            self.case_dir / LOG_DIR / self.source if self.log_dir else self.case_dir / self.source
        )

    def target(self) -> str:
        if self.in_place:
            return f"{IN_PLACE}/{self.source}"
        return LOG_DIR if self.log_dir else self.source

    def file(self, base: int, suffix: str) -> Path:
        return self.part / name(base, suffix)

    def rel(self, path: Path) -> str:
        """``path`` relative to the case directory."""
        if self.in_place:
            return f"{IN_PLACE}/{self.source}/{path.relative_to(self.part).as_posix()}"
        return path.relative_to(self.case_dir).as_posix()

    def at(self, path: Path, position: int | None = None, offset: int | None = None) -> Expect:
        return Expect(self.rel(path), position, offset)


@dataclass
class Case:
    name: str
    code: str
    severity: str
    exit_code: int
    how: str
    build: Callable[[Work], Expect]
    source: str = "txn-0"
    options: list[str] = field(default_factory=list)
    in_place: bool = False
    log_dir: bool = False
    clean: list[str] | None = None
    """Unmutated dirs (relative to fixtures/) that must not report the code, verified with
    ``--deep`` when the case uses it; default: the source oracle dir."""


CASES: list[Case] = []


def case(
    code: str,
    severity: str,
    exit_code: int,
    how: str,
    *,
    variant: str = "",
    **kw: Any,
) -> Callable[[Callable[[Work], Expect]], Callable[[Work], Expect]]:
    def register(build: Callable[[Work], Expect]) -> Callable[[Work], Expect]:
        case_name = code.lower().replace("_", "-") + (f"-{variant}" if variant else "")
        CASES.append(Case(case_name, code, severity, exit_code, how, build, **kw))
        return build

    return register


TXN = "txn-0"
SEG0, SEG63, SEG126, SEG186 = 0, 63, 126, 186
ACTIVE = SEG186


# log


@case(
    "LOG_TRUNCATED_TAIL",
    "error",
    2,
    "txn-0 active segment 186: the first 100 bytes of its last batch appended again, base "
    "offset set to the log end offset (a torn write)",
)
def _(w: Work) -> Expect:
    log = w.file(ACTIVE, ".log")
    last = batches(TXN, ACTIVE)[-1]
    size = log.stat().st_size
    torn = bytearray(read(log, last["position"], 100))
    torn[0:8] = struct.pack(">q", log_end_offset(TXN))
    append(log, bytes(torn))
    return w.at(log, position=size)


@case(
    "LOG_CORRUPT_BATCH",
    "error",
    2,
    "txn-0 segment 186: size field of the batch at offset 214 set to 5 (below the 14-byte minimum)",
)
def _(w: Work) -> Expect:
    log, b = w.file(ACTIVE, ".log"), batch(TXN, ACTIVE, 214)
    set_v2(log, b["position"], "batch_length", 5)
    return w.at(log, position=b["position"])


@case(
    "LOG_ZERO_TAIL",
    "warning",
    0,
    "txn-0 active segment 186: 2335 zero bytes appended (the length a power loss left on disk "
    "without its data, or a preallocated segment)",
)
def _(w: Work) -> Expect:
    log = w.file(ACTIVE, ".log")
    size = log.stat().st_size
    append(log, bytes(2335))
    return w.at(log, position=size)


@case(
    "LOG_UNKNOWN_MAGIC",
    "error",
    2,
    "txn-0 segment 186: magic byte of the ABORT marker batch at offset 210 set to 7",
)
def _(w: Work) -> Expect:
    log, b = w.file(ACTIVE, ".log"), batch(TXN, ACTIVE, 210)
    set_v2(log, b["position"], "magic", 7)
    return w.at(log, position=b["position"])


@case(
    "LOG_CRC_MISMATCH",
    "error",
    2,
    "txn-0 segment 0: one bit flipped in the record payload of the uncompressed batch at offset "
    "30 (CRC left as Kafka wrote it)",
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG0, ".log"), batch(TXN, SEG0, 30)
    flip_bit(log, b["position"] + RECORDS_START + 20)
    return w.at(log, position=b["position"], offset=30)


@case(
    "LOG_CRC_MISMATCH",
    "error",
    2,
    "legacyv1-0 segment 0: one bit flipped in the value of the v1 message at offset 19 "
    "(its CRC-32 left as Kafka wrote it)",
    variant="legacy",
    source="legacyv1-0",
)
def _(w: Work) -> Expect:
    log, b = w.file(0, ".log"), batch("legacyv1-0", 0, 19)
    flip_bit(log, b["position"] + b["sizeInBytes"] - 1)
    return w.at(log, position=b["position"], offset=19)


@case(
    "LOG_OFFSET_BELOW_BASE",
    "error",
    2,
    "txn-0 segment 63: base offset of its first batch set from 63 to 60 (below the file name's)",
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG63, ".log"), batch(TXN, SEG63, 63)
    set_v2(log, b["position"], "base_offset", 60)
    return w.at(log, position=b["position"], offset=60)


@case(
    "LOG_OFFSET_NOT_INCREASING",
    "error",
    2,
    "txn-0 segment 126: base offset of the batch at offset 138 set to 135 (the previous batch "
    "ends at 137)",
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG126, ".log"), batch(TXN, SEG126, 138)
    set_v2(log, b["position"], "base_offset", 135)
    return w.at(log, position=b["position"], offset=135)


@case(
    "LOG_OFFSET_OVERFLOW",
    "error",
    2,
    "txn-0 segment 186: base offset of its last batch set to 186 + 2^31 + 100, beyond what a "
    "relative offset can address",
)
def _(w: Work) -> Expect:
    log, b = w.file(ACTIVE, ".log"), batches(TXN, ACTIVE)[-1]
    base = ACTIVE + INT32_MAX + 101
    set_v2(log, b["position"], "base_offset", base)
    return w.at(log, position=b["position"], offset=base + b["lastOffset"] - b["baseOffset"])


@case(
    "LOG_OFFSET_GAP",
    "info",
    0,
    "txn-0 segment 186: base offset of its last batch raised from 214 to 216 (a compaction-like "
    "gap after 213; the time index entry at 217 still lands in it)",
)
def _(w: Work) -> Expect:
    log, b = w.file(ACTIVE, ".log"), batch(TXN, ACTIVE, 214)
    set_v2(log, b["position"], "base_offset", 216)
    return w.at(log, offset=216)


@case(
    "LOG_SEGMENT_OVERSIZE",
    "warning",
    0,
    "fixtures/oracle/txn-0 in place, verified with --segment-bytes 4700 (segments 0 and 126 "
    "are larger)",
    options=["--segment-bytes", "4700"],
    in_place=True,
)
def _(w: Work) -> Expect:
    return w.at(w.file(SEG0, ".log"))


# log, --deep


@case(
    "LOG_RECORD_COUNT_MISMATCH",
    "error",
    2,
    "txn-0 segment 126: recordsCount of the batch at offset 138 set from 6 to 5, CRC recomputed "
    "(--deep)",
    options=["--deep"],
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG126, ".log"), batch(TXN, SEG126, 138)
    set_v2(log, b["position"], "records_count", b["count"] - 1)
    return w.at(log, position=b["position"], offset=138)


@case(
    "LOG_RECORD_OFFSET_OUT_OF_BATCH",
    "error",
    2,
    "txn-0 segment 126: offsetDelta of the last record of the batch at offsets 132..137 set "
    "from 5 to 9 (offset 141), CRC recomputed (--deep)",
    options=["--deep"],
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG126, ".log"), batch(TXN, SEG126, 132)
    at, delta = record_offset_delta_at(log, b, b["count"] - 1)
    assert delta == b["lastOffset"] - b["baseOffset"]
    patch(log, at, zigzag_byte(delta + 4))
    fix_v2_crc(log, b["position"])
    return w.at(log, position=b["position"], offset=b["baseOffset"] + delta + 4)


@case(
    "LOG_MAX_TIMESTAMP_MISMATCH",
    "error",
    2,
    "txn-0 segment 126: maxTimestamp of the batch at offset 150 lowered by 4 ms below its "
    "newest record, CRC recomputed (--deep)",
    options=["--deep"],
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG126, ".log"), batch(TXN, SEG126, 150)
    set_v2(log, b["position"], "max_timestamp", b["maxTimestamp"] - 4)
    return w.at(log, position=b["position"], offset=150)


@case(
    "LOG_CORRUPT_RECORD",
    "error",
    2,
    "txn-0 segment 0: 16 bytes in the middle of the gzip payload of the batch at offset 3 "
    "overwritten with 0xA5, CRC recomputed (--deep)",
    options=["--deep"],
)
def _(w: Work) -> Expect:
    log, b = w.file(SEG0, ".log"), batch(TXN, SEG0, 3)
    assert b["compresscodec"] == "gzip"
    payload = b["sizeInBytes"] - RECORDS_START
    patch(log, b["position"] + RECORDS_START + payload // 2 - 8, b"\xa5" * 16)
    fix_v2_crc(log, b["position"])
    return w.at(log, position=b["position"], offset=3)


# offset index and time index: the same damage to either (txn-0 segment 0's entries: .index
# (16, 1258) (36, 2443) (48, 3499) (62, 4680); .timeindex (T0+115, 16) (T0+251, 36) (T0+327, 48)
# (T0+417, 62))


def index_cases(prefix: str, suffix: str, entry: struct.Struct, offset_field: int) -> None:
    """The cases whose mutation is the same for the .index and the .timeindex."""
    half = entry.size // 2

    @case(
        f"{prefix}_MISALIGNED",
        "warning",
        0,
        f"txn-0 segment 0: {half} non-zero bytes (half an entry) appended to the {suffix}",
    )
    def _(w: Work) -> Expect:
        index = w.file(SEG0, suffix)
        size = index.stat().st_size
        append(index, bytes(range(1, half + 1)))
        return w.at(index, position=size)

    @case(
        f"{prefix}_PREALLOCATED",
        "warning",
        0,
        f"txn-0 closed segment 63: 20 zero-filled entries appended to the {suffix} (an unclean "
        "shutdown's preallocated tail)",
        variant="closed",
    )
    def _(w: Work) -> Expect:
        index = w.file(SEG63, suffix)
        size = index.stat().st_size
        append(index, bytes(entry.size * 20))
        return w.at(index, position=size)

    @case(
        f"{prefix}_PREALLOCATED",
        "info",
        0,
        f"fixtures/oracle/activeprealloc-0 in place: Kafka left the active segment 225's {suffix} "
        "preallocated (about 10 MiB, 2 entries)",
        variant="active",
        source="activeprealloc-0",
        in_place=True,
        clean=["oracle/txn-0"],
    )
    def _(w: Work) -> Expect:
        index = w.file(225, suffix)
        used = manifest()["files"][w.source][index.name]["entriesBeforeFirstZeroEntry"]
        return w.at(index, position=used * entry.size)

    @case(
        f"{prefix}_NOT_MONOTONIC", "error", 2, f"txn-0 segment 0: {suffix} entries 1 and 2 swapped"
    )
    def _(w: Work) -> Expect:
        index = w.file(SEG0, suffix)
        swap_index_entries(index, entry, 1, 2)
        rel = index_entry(index, entry, 2)[offset_field]
        return w.at(index, position=2 * entry.size, offset=SEG0 + rel)

    @case(f"{prefix}_MISSING", "warning", 0, f"txn-0 segment 0: {suffix} deleted")
    def _(w: Work) -> Expect:
        index = w.file(SEG0, suffix)
        index.unlink()
        return w.at(index)

    # segment 0's .index is 32 bytes, its .timeindex 48: a limit of 35 catches only the latter
    # (a closed time index may hold one entry past it: 36 + 12 bytes are the broker's own)
    limit = 16 if prefix == "INDEX" else 35

    @case(
        f"{prefix}_OVERSIZE",
        "warning",
        0,
        f"fixtures/oracle/txn-0 in place, verified with --max-index-size {limit} (segment 0's "
        ".index is 32 bytes, its .timeindex 48)",
        options=["--max-index-size", str(limit)],
        in_place=True,
    )
    def _(w: Work) -> Expect:
        return w.at(w.file(SEG0, suffix))


index_cases("INDEX", ".index", OFFSET_INDEX_ENTRY, 0)
index_cases("TIMEINDEX", ".timeindex", TIME_INDEX_ENTRY, 1)


# offset index


@case(
    "INDEX_OFFSET_OUT_OF_RANGE",
    "error",
    2,
    "txn-0 segment 0: last .index entry's offset set from 62 to 70, past the log's last offset",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".index")
    _, position = index_entry(index, OFFSET_INDEX_ENTRY, 3)
    set_index_entry(index, OFFSET_INDEX_ENTRY, 3, 70 - SEG0, position)
    return w.at(index, position=3 * OFFSET_INDEX_ENTRY.size, offset=70)


@case(
    "INDEX_POSITION_BEYOND_LOG",
    "error",
    2,
    "txn-0 segment 0: last .index entry's position set 1000 bytes past the end of the log",
)
def _(w: Work) -> Expect:
    index, log = w.file(SEG0, ".index"), w.file(SEG0, ".log")
    rel, _ = index_entry(index, OFFSET_INDEX_ENTRY, 3)
    set_index_entry(index, OFFSET_INDEX_ENTRY, 3, rel, log.stat().st_size + 1000)
    return w.at(index, position=3 * OFFSET_INDEX_ENTRY.size, offset=SEG0 + rel)


@case(
    "INDEX_POSITION_NOT_BATCH_BOUNDARY",
    "error",
    2,
    "txn-0 segment 0: .index entry 1 (36, 2443) moved 100 bytes into its batch",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".index")
    rel, position = index_entry(index, OFFSET_INDEX_ENTRY, 1)
    set_index_entry(index, OFFSET_INDEX_ENTRY, 1, rel, position + 100)
    return w.at(index, position=OFFSET_INDEX_ENTRY.size, offset=SEG0 + rel)


@case(
    "INDEX_UNSAFE_ENTRY",
    "error",
    2,
    "txn-0 segment 0: .index entry 1 (36, 2443) pointed at the next batch (position 2857, "
    "offset 37), past the batch that holds 36",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".index")
    rel, position = index_entry(index, OFFSET_INDEX_ENTRY, 1)
    held = next(b for b in batches(TXN, SEG0) if b["position"] == position)
    following = batch(TXN, SEG0, held["lastOffset"] + 1)
    set_index_entry(index, OFFSET_INDEX_ENTRY, 1, rel, following["position"])
    return w.at(index, position=OFFSET_INDEX_ENTRY.size, offset=SEG0 + rel)


@case(
    "INDEX_MULTI_BATCH_ENTRY",
    "info",
    0,
    "fixtures/oracle/followerlive-0 in place: Kafka's follower appends wrote every .index entry "
    "for a multi-batch chunk",
    source="followerlive-0",
    in_place=True,
    clean=["oracle/txn-0", "oracle/plain-0"],
)
def _(w: Work) -> Expect:
    index = w.file(0, ".index")
    first = manifest()["files"][w.source][index.name]["entryList"][0]
    return w.at(index, offset=first[0])


@case(
    "INDEX_DENSER_THAN_INTERVAL",
    "info",
    0,
    "fixtures/oracle/txn-0 in place (written with index.interval.bytes 1024: its .index entries "
    "are 1048 to 1376 bytes apart), verified with --index-interval-bytes 4096",
    options=["--index-interval-bytes", "4096"],
    in_place=True,
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".index")
    first = manifest()["files"][w.source][index.name]["entryList"][0]
    return w.at(index, position=0, offset=first[0])


@case(
    "INDEX_SANITY_CHECK_FAILS",
    "warning",
    2,
    "txn-0 segment 63: last .index entry's relative offset set to -1 (offset 62, below the base "
    "offset: the broker's sanity check fails; out of range and out of order too)",
)
def _(w: Work) -> Expect:
    index = w.file(SEG63, ".index")
    last = index.stat().st_size // OFFSET_INDEX_ENTRY.size - 1
    _, position = index_entry(index, OFFSET_INDEX_ENTRY, last)
    set_index_entry(index, OFFSET_INDEX_ENTRY, last, -1, position)
    return w.at(index)


@case(
    "INDEX_ORPHAN",
    "warning",
    0,
    "txn-0 segment 0: .log deleted, its .index, .timeindex and .txnindex left",
)
def _(w: Work) -> Expect:
    w.file(SEG0, ".log").unlink()
    return w.at(w.file(SEG0, ".index"))


# time index


@case(
    "TIMEINDEX_OFFSET_NOT_FOUND",
    "error",
    2,
    "txn-0 segment 0: last .timeindex entry's offset set from 62 to 70, past the log's last offset",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".timeindex")
    timestamp, _ = index_entry(index, TIME_INDEX_ENTRY, 3)
    set_index_entry(index, TIME_INDEX_ENTRY, 3, timestamp, 70 - SEG0)
    return w.at(index, position=3 * TIME_INDEX_ENTRY.size, offset=70)


@case(
    "TIMEINDEX_TIMESTAMP_MISMATCH",
    "error",
    2,
    "txn-0 segment 0: .timeindex entry 1's timestamp lowered by 1 ms (T0+250; the batch holding "
    "offset 36 says T0+251)",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".timeindex")
    timestamp, rel = index_entry(index, TIME_INDEX_ENTRY, 1)
    set_index_entry(index, TIME_INDEX_ENTRY, 1, timestamp - 1, rel)
    return w.at(index, position=TIME_INDEX_ENTRY.size, offset=SEG0 + rel)


@case(
    "TIMEINDEX_BEHIND_MAX",
    "error",
    2,
    "txn-0 segment 0: maxTimestamp of the batch at offset 30 raised to T0+300 (CRC recomputed), "
    "above the .timeindex entry (T0+251, 36) that follows it",
)
def _(w: Work) -> Expect:
    log, index = w.file(SEG0, ".log"), w.file(SEG0, ".timeindex")
    timestamp, rel = index_entry(index, TIME_INDEX_ENTRY, 1)
    b = batch(TXN, SEG0, 30)
    assert b["lastOffset"] < SEG0 + rel
    set_v2(log, b["position"], "max_timestamp", manifest()["generator"]["T0"] + 300)
    assert get_v2(log, b["position"], "max_timestamp") > timestamp
    return w.at(index, position=TIME_INDEX_ENTRY.size, offset=SEG0 + rel)


@case(
    "TIMEINDEX_SANITY_CHECK_FAILS",
    "warning",
    2,
    "txn-0 segment 63: last .timeindex entry's timestamp set 1 ms below the first entry's (the "
    "broker's sanity check fails; out of order and mismatched too)",
)
def _(w: Work) -> Expect:
    index = w.file(SEG63, ".timeindex")
    first, _ = index_entry(index, TIME_INDEX_ENTRY, 0)
    last = index.stat().st_size // TIME_INDEX_ENTRY.size - 1
    _, rel = index_entry(index, TIME_INDEX_ENTRY, last)
    set_index_entry(index, TIME_INDEX_ENTRY, last, first - 1, rel)
    return w.at(index)


@case(
    "TIMEINDEX_MISSING_FINAL_ENTRY",
    "warning",
    0,
    "txn-0 closed segment 0: the last .timeindex entry (the segment's largest timestamp, written "
    "at roll) cut off",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".timeindex")
    truncate(index, index.stat().st_size - TIME_INDEX_ENTRY.size)
    return w.at(index)


# transaction index (txn-0 segment 0: pid 1000 21..37, pid 2000 45..62;
# segment 63: pid 1000 63..79, pid 1000 105..121, pid 2000 108..125)


@case(
    "TXNINDEX_MISALIGNED",
    "warning",
    0,
    "txn-0 segment 0: 10 non-zero bytes appended to the .txnindex",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".txnindex")
    size = index.stat().st_size
    append(index, b"\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x01")
    return w.at(index, position=size)


@case(
    "TXNINDEX_NOT_MONOTONIC",
    "error",
    2,
    "txn-0 segment 63: .txnindex entries 1 and 2 swapped (last offsets 79, 125, 121)",
)
def _(w: Work) -> Expect:
    index = w.file(SEG63, ".txnindex")
    swap_index_entries(index, TXN_INDEX_ENTRY, 1, 2)
    last_offset = index_entry(index, TXN_INDEX_ENTRY, 2)[3]
    return w.at(index, position=2 * TXN_INDEX_ENTRY.size, offset=last_offset)


@case(
    "TXNINDEX_OUT_OF_RANGE",
    "error",
    2,
    "txn-0 segment 0: last offset of .txnindex entry 1 (pid 2000) set from 62 to 70, past the "
    "segment's last offset",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".txnindex")
    version, pid, first, _, lso = index_entry(index, TXN_INDEX_ENTRY, 1)
    set_index_entry(index, TXN_INDEX_ENTRY, 1, version, pid, first, 70, lso)
    return w.at(index, position=TXN_INDEX_ENTRY.size, offset=70)


@case(
    "TXNINDEX_CORRUPT",
    "error",
    2,
    "txn-0 segment 0: first byte of .txnindex entry 0's version set to 1 (Kafka reads that byte "
    "as the version)",
)
def _(w: Work) -> Expect:
    index = w.file(SEG0, ".txnindex")
    last_offset = index_entry(index, TXN_INDEX_ENTRY, 0)[3]
    patch(index, 0, b"\x01")
    return w.at(index, position=0, offset=last_offset)


# producer snapshots


@case(
    "SNAPSHOT_CRC_MISMATCH",
    "warning",
    0,
    "txn-0: one bit flipped in the first producer entry of 00000000000000000063.snapshot",
)
def _(w: Work) -> Expect:
    snapshot = w.file(SEG63, ".snapshot")
    flip_bit(snapshot, 20, 3)
    return w.at(snapshot, position=2)


@case(
    "SNAPSHOT_CORRUPT",
    "warning",
    0,
    "txn-0: 00000000000000000126.snapshot cut to its first 6 bytes (a torn write, shorter than "
    "the header: the producer count at byte 6 does not read)",
)
def _(w: Work) -> Expect:
    snapshot = w.file(SEG126, ".snapshot")
    truncate(snapshot, 6)
    return w.at(snapshot, position=6)


# partition


@case(
    "PARTITION_SEGMENT_OVERLAP",
    "error",
    2,
    "txn-0: segment 126 renamed to base offset 124 (relative offsets of its .index and "
    ".timeindex rewritten to keep their absolute offsets), below segment 63's last offset 125",
)
def _(w: Work) -> Expect:
    new = SEG126 - 2
    for suffix, entry, rel_at in (
        (".index", OFFSET_INDEX_ENTRY, 0),
        (".timeindex", TIME_INDEX_ENTRY, 1),
    ):
        path = w.file(SEG126, suffix)
        for i in range(path.stat().st_size // entry.size):
            values = list(index_entry(path, entry, i))
            values[rel_at] += SEG126 - new
            set_index_entry(path, entry, i, *values)
    for suffix in (".log", ".index", ".timeindex"):
        w.file(SEG126, suffix).rename(w.file(new, suffix))
    return w.at(w.file(new, ".log"), offset=SEG126)


@case(
    "PARTITION_OFFSET_GAP",
    "warning",
    0,
    "txn-0: segment 63's .log, .index, .timeindex and .txnindex deleted (offsets 63..125 in no "
    "segment)",
)
def _(w: Work) -> Expect:
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        w.file(SEG63, suffix).unlink()
    return w.at(w.file(SEG126, ".log"), offset=SEG63)


@case(
    "PARTITION_LEFTOVER_FILE",
    "info",
    0,
    "txn-0: segment 0's files renamed with the .deleted suffix (a retention delete not yet "
    "done: the broker's own, info)",
    variant="deleted",
)
def _(w: Work) -> Expect:
    for suffix in (".log", ".index", ".timeindex", ".txnindex"):
        path = w.file(SEG0, suffix)
        path.rename(path.with_name(path.name + ".deleted"))
    return w.at(w.file(SEG0, ".log.deleted"))


@case(
    "PARTITION_LEFTOVER_FILE",
    "warning",
    0,
    "txn-0: a copy of segment 126's .log left as 00000000000000000126.log.swap (a compaction "
    "swap cut short)",
    variant="swap",
)
def _(w: Work) -> Expect:
    log = w.file(SEG126, ".log")
    swap = log.with_name(log.name + ".swap")
    shutil.copyfile(log, swap)
    return w.at(swap)


@case(
    "LEADER_EPOCH_INCONSISTENT",
    "warning",
    0,
    "plain-0 (leader epoch 0, then 3 from offset 797) with a leader-epoch-checkpoint saying "
    "epoch 3 starts at 800",
    source="plain-0",
    clean=["oracle/plain-0", "realfiles/13LAckHEart__kafka/data/kafka"],
)
def _(w: Work) -> Expect:
    starts: dict[int, int] = {}
    for base in sorted(int(n[:20]) for n in manifest()["files"][w.source] if n.endswith(".log")):
        for b in batches(w.source, base):
            starts.setdefault(b["partitionLeaderEpoch"], b["baseOffset"])
    (e0, o0), (e1, o1) = sorted(starts.items())
    path = w.part / "leader-epoch-checkpoint"
    path.write_text(f"0\n2\n{e0} {o0}\n{e1} {o1 + 3}\n")
    return w.at(path)


@case(
    "PARTITION_METADATA_CORRUPT",
    "warning",
    0,
    "txn-0 with a partition.metadata torn after 18 bytes ('version: 0\\ntopic_i')",
    clean=["oracle/txn-0", "realfiles/13LAckHEart__kafka/data/kafka"],
)
def _(w: Work) -> Expect:
    path = w.part / "partition.metadata"
    path.write_bytes(b"version: 0\ntopic_id: 4fNJg4kfT1C2vQF0bL0m1g"[:18])
    return w.at(path)


# log directory: logdir/txn-0 beside the broker's offset checkpoint files


def write_checkpoints(w: Work, **offsets: int) -> None:
    """Offset checkpoints for the one partition (``recovery_point=..., log_start=...``)."""
    topic, partition = w.source.rsplit("-", 1)
    files = {
        "recovery_point": "recovery-point-offset-checkpoint",
        "replication": "replication-offset-checkpoint",
        "log_start": "log-start-offset-checkpoint",
    }
    leo = log_end_offset(w.source)
    values = {"recovery_point": leo, "replication": leo, "log_start": 0, **offsets}
    for key, file_name in files.items():
        (w.case_dir / LOG_DIR / file_name).write_text(f"0\n1\n{topic} {partition} {values[key]}\n")


LOG_DIR_CLEAN = ["oracle/txn-0", "realfiles/13LAckHEart__kafka/data/kafka"]


@case(
    "CHECKPOINT_CORRUPT",
    "warning",
    0,
    "log dir with txn-0 and right checkpoints, except recovery-point-offset-checkpoint "
    "overwritten with 16 NUL bytes (what a crash can leave on some file systems)",
    log_dir=True,
    clean=LOG_DIR_CLEAN,
)
def _(w: Work) -> Expect:
    write_checkpoints(w)
    path = w.case_dir / LOG_DIR / "recovery-point-offset-checkpoint"
    path.write_bytes(bytes(16))
    return w.at(path)


@case(
    "CHECKPOINT_BEYOND_LOG_END",
    "error",
    2,
    "log dir with txn-0 (log end offset 218) whose log-start-offset-checkpoint says 300",
    variant="log-start",
    log_dir=True,
    clean=LOG_DIR_CLEAN,
)
def _(w: Work) -> Expect:
    write_checkpoints(w, log_start=300)
    return w.at(w.case_dir / LOG_DIR / "log-start-offset-checkpoint", offset=300)


@case(
    "CHECKPOINT_BEYOND_LOG_END",
    "warning",
    0,
    "log dir with txn-0 (log end offset 218) whose recovery-point-offset-checkpoint says 250",
    variant="recovery-point",
    log_dir=True,
    clean=LOG_DIR_CLEAN,
)
def _(w: Work) -> Expect:
    write_checkpoints(w, recovery_point=250)
    return w.at(w.case_dir / LOG_DIR / "recovery-point-offset-checkpoint", offset=250)


# --- driver --------------------------------------------------------------------------------


def build(c: Case, out: Path) -> dict[str, Any]:
    case_dir = out / c.name
    w = Work(case_dir, c.source, c.in_place, c.log_dir)
    if not c.in_place:
        shutil.copytree(ORACLE / c.source, w.part)
    expect = c.build(w)
    return {
        "code": c.code,
        "severity": c.severity,
        "exit_code": c.exit_code,
        "target": w.target(),
        "options": c.options,
        "path": expect.path,
        "position": expect.position,
        "offset": expect.offset,
        "source": f"oracle/{c.source}",
        "clean": c.clean or [f"oracle/{c.source}"],
        "clean_options": [o for o in c.options if o == "--deep"],
        "how": c.how,
    }


def readme(cases: dict[str, dict[str, Any]]) -> str:
    lines = [
        "# Corrupt fixtures for `kdump verify`",
        "",
        f"Made by `{REGEN_COMMAND}` from the Kafka-written partitions in `fixtures/oracle/`;",
        "do not edit by hand. Each case is a copy with one mutation (in-place cases verify the",
        "oracle directory itself). `cases.json` holds what verify must report: code, severity,",
        "exit code at `--fail-on error`, the path verified (`target`), extra options, and the",
        "file, byte position and offset of the finding, relative to `fixtures/corrupt/<case>/`.",
        "",
    ]
    for case_name, c in cases.items():
        opts = f" [{' '.join(c['options'])}]" if c["options"] else ""
        lines.append(f"- `{case_name}` ({c['code']}, {c['severity']}){opts}: {c['how']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cases = {}
    for c in CASES:
        assert c.name not in cases, f"duplicate case {c.name}"
        cases[c.name] = build(c, out)
    (out / "cases.json").write_text(json.dumps(cases, indent=2) + "\n")
    (out / "README.md").write_text(readme(cases))
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{len(cases)} cases, {total} bytes in {os.path.relpath(out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
