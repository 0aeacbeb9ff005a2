"""Write kdump's encoder-independent test segments with kafka-python's record builders.

kafka-python (``kafka.record.default_records.DefaultRecordBatchBuilder`` for magic v2,
``kafka.record.legacy_records.LegacyRecordBatchBuilder`` for magic v0/v1) is the encoder, so
the fixtures do not share a single line of code with kdump's own parser or writer.
``fixtures/generated/expected.json`` is made from what the builders were *asked* to write
(the fixture specs below) plus what they *returned* (per-record metadata, the built
buffer's length) and CRCs computed over the final bytes. It never comes from parsing the
bytes back with kdump. Every batch is then cross-checked with kafka-python's own readers
(``DefaultRecordBatch``, ``LegacyRecordBatch``), so a wrong patch or a silent codec
fallback stops the script instead of reaching the fixtures.

Regenerate (from the repository root; the script owns and replaces the output directory)::

    python scripts/make_fixtures.py            # writes fixtures/generated/

Packages (PyPI names; the output is byte-for-byte reproducible with these exact versions,
other codec versions may compress to different bytes)::

    kafka-python==3.0.12    the encoder
    python-snappy==0.7.3    snappy for kafka.codec; 0.7 is a thin wrapper over cramjam
    cramjam                 (pulled in by python-snappy; kafka-python cannot use it directly)
    zstandard==0.25.0       zstd for kafka.codec (kafka-python has no cramjam path for zstd)
    lz4==4.4.5              LZ4 frames for kafka.codec
    xxhash==4.1.0           kafka.codec.lz4_encode_old_kafka (magic v0 LZ4 header checksum)
    crc32c                  optional: kafka-python's fast CRC-32C (it falls back to pure Python)

What kafka-python does not do, and what this script does instead (all before the
kafka-python cross-check):

- v2 base offset: the builder always writes 0 ("set by broker"); bytes [0, 8) are patched.
  The offset is outside the CRC, so the CRC is unchanged.
- v2 partition leader epoch: the builder always writes 0; bytes [12, 16) are patched when
  a fixture asks for another epoch (outside the CRC too).
- v2 control batches: the builder never sets attribute bit 5 ("only created by Broker").
  A control batch is built as a transactional batch holding one record with the
  end-transaction marker key (version int16 0, type int16) and value (version int16 0,
  coordinatorEpoch int32); then attributes [21, 23) are rewritten with the control bit
  and the CRC-32C over [21, end) is recomputed and stored at [17, 21).
- v0/v1 compressed wrappers: the builder writes wrapper offset 0 and (v1) timestamp 0.
  The wrapper offset [0, 8) is patched to the absolute offset of the last inner message
  (outside the CRC). For v1 the wrapper timestamp [18, 26) is patched to the largest inner
  timestamp (CreateTime) or to the log append time, attribute bit 3 is set for
  LogAppendTime, and the CRC-32 over [16, end) is recomputed and stored at [12, 16).
  Inner offsets are passed to the builder absolute for v0 and relative (0..n-1) for v1.
- gzip: kafka.codec.gzip_encode stamps the current time into the gzip header (MTIME,
  bytes 4-8 of the stream). The two builder modules are given a wrapper that zeroes
  MTIME before the batch CRC is computed, so outputs are reproducible.
- The v2 builder silently writes a batch uncompressed when compression does not make it
  smaller; fixture values are repetitive text so that it never does (the cross-check
  fails if it ever did).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import kafka.codec
from kafka.record import default_records, legacy_records
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32, calc_crc32c

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "fixtures" / "generated"
REGEN_COMMAND = "python scripts/make_fixtures.py"
T0 = 1_700_000_000_000
BUILDER_BATCH_SIZE = 1 << 24  # never let a builder refuse an append
MAX_INT = 2**31 - 1
NO_PRODUCER_ID = NO_PRODUCER_EPOCH = NO_SEQUENCE = NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
CONTROL_TYPES = {"ABORT": 0, "COMMIT": 1}
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")  # attribute bit 3

# Magic v2 header (DefaultRecordBatch): positions derived from the field layout.
V2_BASE_OFFSET = struct.Struct(">q")
V2_BATCH_LENGTH = struct.Struct(">i")
V2_LEADER_EPOCH = struct.Struct(">i")
V2_MAGIC = struct.Struct(">b")
V2_CRC = struct.Struct(">I")
V2_ATTRIBUTES = struct.Struct(">h")
V2_LEADER_EPOCH_AT = V2_BASE_OFFSET.size + V2_BATCH_LENGTH.size
V2_CRC_AT = V2_LEADER_EPOCH_AT + V2_LEADER_EPOCH.size + V2_MAGIC.size
V2_ATTRIBUTES_AT = V2_CRC_AT + V2_CRC.size

# Magic v0/v1 message (LegacyRecord): offset int64, size int32, crc, magic, attributes, ts.
LEGACY_OFFSET = struct.Struct(">q")
LEGACY_SIZE = struct.Struct(">i")
LEGACY_CRC = struct.Struct(">I")
LEGACY_TIMESTAMP = struct.Struct(">q")
LEGACY_CRC_AT = LEGACY_OFFSET.size + LEGACY_SIZE.size
LEGACY_MAGIC_AT = LEGACY_CRC_AT + LEGACY_CRC.size
LEGACY_ATTRIBUTES_AT = LEGACY_MAGIC_AT + 1
LEGACY_TIMESTAMP_AT = LEGACY_ATTRIBUTES_AT + 1

# Control record (ControlRecordType / EndTransactionMarker).
CONTROL_KEY = struct.Struct(">hh")
END_TXN_MARKER_VALUE = struct.Struct(">hi")

Header = tuple[str, bytes | None]


# --------------------------------------------------------------------------- specs


@dataclass(frozen=True, slots=True)
class Record:
    """What one append() is asked to write."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


@dataclass(frozen=True, slots=True)
class V2Batch:
    """One DefaultRecordBatchBuilder batch; offsets follow the previous batch."""

    records: tuple[Record, ...]
    compression: str = "none"
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    is_control: bool = False
    partition_leader_epoch: int = 0


@dataclass(frozen=True, slots=True)
class LegacyBatch:
    """One shallow v0/v1 message: a plain message (one record) or a compressed wrapper."""

    magic: int
    records: tuple[Record, ...]
    compression: str = "none"
    log_append_time: int | None = None


BatchSpec = V2Batch | LegacyBatch


@dataclass(frozen=True, slots=True)
class BuiltBatch:
    data: bytes
    expected: dict[str, Any]  # everything but "position"


@dataclass(slots=True)
class Fixture:
    name: str
    how: str  # one line for the README
    base_offset: int
    data: bytes
    batches: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def log_name(self) -> str:
        return f"{self.base_offset:020d}.log"

    @property
    def relative_path(self) -> str:
        return f"{self.name}/{self.log_name}"


# --------------------------------------------------------------------------- helpers


def hex_or_none(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def increment_sequence(base: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence: sequences wrap to 0, never negative."""
    if base == NO_SEQUENCE:
        return NO_SEQUENCE
    if base > MAX_INT - increment:
        return increment - (MAX_INT - base) - 1
    return base + increment


def pin_gzip_mtime() -> None:
    """Make kafka.codec.gzip_encode reproducible: zero the gzip header's MTIME field.

    The builders imported gzip_encode by name, so their module globals are replaced.
    """
    original = kafka.codec.gzip_encode

    def gzip_encode(payload: bytes, compresslevel: int | None = None) -> bytes:
        stream = bytearray(original(payload, compresslevel))
        stream[4:8] = bytes(4)  # RFC 1952 MTIME; the gzip trailer CRC covers data only
        return bytes(stream)

    default_records.gzip_encode = gzip_encode
    legacy_records.gzip_encode = gzip_encode


class Clock:
    """Deterministic millisecond clock starting at T0."""

    def __init__(self, start: int = T0) -> None:
        self.now = start

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


def json_value(rng: random.Random, n: int, pad: int = 0) -> bytes:
    """Repetitive JSON-ish text, so every codec actually shrinks a batch."""
    event = rng.choice(("click", "view", "purchase", "scroll", "logout"))
    user = rng.randrange(40)
    filler = "lorem-ipsum-" * pad
    return f'{{"user":"user-{user}","event":"{event}","n":{n},"pad":"{filler}"}}'.encode()


def sample_headers(rng: random.Random, n: int) -> tuple[Header, ...]:
    if n % 3:
        return ()
    trace = rng.getrandbits(64).to_bytes(8, "big")
    return (("trace-id", trace), ("source", b"kdump-fixtures"))


def sample_records(
    rng: random.Random, clock: Clock, count: int, first_n: int
) -> tuple[Record, ...]:
    """count records; some null keys, some headers, now and then a late timestamp.

    A late record's timestamp is below the newest so far; an even-sized batch always ends
    with one, so its maxTimestamp belongs to a record before the last.
    """
    records = []
    for n in range(first_n, first_n + count):
        if rng.random() < 0.15 or (n == first_n + count - 1 and count % 2 == 0):
            timestamp = clock.now - rng.randint(1, 30)
        else:
            timestamp = clock.advance(rng.randint(1, 20))
        key = None if rng.random() < 0.25 else f"key-{n % 17}".encode()
        value = json_value(rng, n, pad=rng.randint(0, 4))
        records.append(Record(timestamp, key, value, sample_headers(rng, n)))
    return tuple(records)


def codec_batches(seed: int, codecs: Sequence[str], count_range: tuple[int, int]) -> list[V2Batch]:
    rng, clock = random.Random(seed), Clock()
    batches, n = [], 0
    for codec in codecs:
        count = rng.randint(*count_range)
        batches.append(V2Batch(sample_records(rng, clock, count, n), compression=codec))
        n += count
        clock.advance(100)
    return batches


# --------------------------------------------------------------------------- magic v2


def new_v2_builder(spec: V2Batch) -> DefaultRecordBatchBuilder:
    # The constructor, unlike set_producer_state(), accepts producer id + NO_SEQUENCE,
    # which is what Kafka writes for control batches.
    return DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[spec.compression],
        is_transactional=spec.is_transactional,
        producer_id=spec.producer_id,
        producer_epoch=spec.producer_epoch,
        base_sequence=spec.base_sequence,
        batch_size=BUILDER_BATCH_SIZE,
    )


def v2_attributes(spec: V2Batch) -> int:
    attributes = CODECS[spec.compression]
    if spec.is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if spec.is_control:
        attributes |= CONTROL_BIT
    return attributes


def patch_v2(buf: bytearray, spec: V2Batch, base_offset: int) -> list[str]:
    """Set what the builder leaves to the broker; return the names of patched fields."""
    patched = []
    if base_offset != 0:
        V2_BASE_OFFSET.pack_into(buf, 0, base_offset)
        patched.append("base_offset")
    if spec.partition_leader_epoch != 0:
        V2_LEADER_EPOCH.pack_into(buf, V2_LEADER_EPOCH_AT, spec.partition_leader_epoch)
        patched.append("partition_leader_epoch")
    if spec.is_control:
        V2_ATTRIBUTES.pack_into(buf, V2_ATTRIBUTES_AT, v2_attributes(spec))
        V2_CRC.pack_into(buf, V2_CRC_AT, calc_crc32c(bytes(buf[V2_ATTRIBUTES_AT:])))
        patched += ["attributes", "crc"]
    return patched


def v2_record_expected(
    spec: V2Batch, base_offset: int, delta: int, record: Record, timestamp: int
) -> dict[str, Any]:
    expected: dict[str, Any] = {
        "offset": base_offset + delta,
        "timestamp": timestamp,
        "sequence": increment_sequence(spec.base_sequence, delta),
        "key": hex_or_none(record.key),
        "value": hex_or_none(record.value),
        "headers": [[k, hex_or_none(v)] for k, v in record.headers],
    }
    if spec.is_control:
        assert record.key is not None and record.value is not None
        _, control_type = CONTROL_KEY.unpack(record.key)
        _, coordinator_epoch = END_TXN_MARKER_VALUE.unpack(record.value)
        names = {v: k for k, v in CONTROL_TYPES.items()}
        expected["control"] = {
            "type": names[control_type],
            "coordinator_epoch": coordinator_epoch,
        }
    return expected


def build_v2(spec: V2Batch, base_offset: int) -> BuiltBatch:
    builder = new_v2_builder(spec)
    metas = []
    for delta, record in enumerate(spec.records):
        meta = builder.append(
            delta, record.timestamp, record.key, record.value, list(record.headers)
        )
        assert meta is not None, "builder refused an append"
        metas.append(meta)
    buf = bytearray(builder.build())
    patched = patch_v2(buf, spec, base_offset)
    last_delta = len(spec.records) - 1
    timestamps = [meta.timestamp for meta in metas]
    expected = {
        "base_offset": base_offset,
        "last_offset": base_offset + last_delta,
        "magic": 2,
        "compression": spec.compression,
        "crc": calc_crc32c(bytes(buf[V2_ATTRIBUTES_AT:])),
        "timestamp_type": "CreateTime",
        "base_timestamp": timestamps[0],
        "max_timestamp": max(timestamps),
        "producer_id": spec.producer_id,
        "producer_epoch": spec.producer_epoch,
        "base_sequence": spec.base_sequence,
        "last_sequence": increment_sequence(spec.base_sequence, last_delta),
        "is_transactional": spec.is_transactional,
        "is_control": spec.is_control,
        "partition_leader_epoch": spec.partition_leader_epoch,
        "size": len(buf),
        "record_count": len(metas),
        "patched": patched,
        "records": [
            v2_record_expected(spec, base_offset, delta, record, meta.timestamp)
            for delta, (record, meta) in enumerate(zip(spec.records, metas, strict=True))
        ],
    }
    return BuiltBatch(bytes(buf), expected)


def control_batch(
    producer_id: int,
    producer_epoch: int,
    marker: str,
    coordinator_epoch: int,
    timestamp: int,
    partition_leader_epoch: int,
) -> V2Batch:
    record = Record(
        timestamp,
        CONTROL_KEY.pack(0, CONTROL_TYPES[marker]),
        END_TXN_MARKER_VALUE.pack(0, coordinator_epoch),
    )
    return V2Batch(
        (record,),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


# --------------------------------------------------------------------------- magic v0/v1


def legacy_timestamp(spec: LegacyBatch, record: Record) -> int:
    return NO_TIMESTAMP if spec.magic == 0 else record.timestamp


def wrapper_timestamp(spec: LegacyBatch) -> int:
    if spec.magic == 0:
        return NO_TIMESTAMP
    if spec.log_append_time is not None:
        return spec.log_append_time
    return max(record.timestamp for record in spec.records)


def timestamp_type(spec: LegacyBatch) -> str:
    if spec.magic == 0:
        return "NoTimestampType"
    return "CreateTime" if spec.log_append_time is None else "LogAppendTime"


def patch_wrapper(buf: bytearray, spec: LegacyBatch, last_offset: int) -> list[str]:
    """Give a compressed wrapper the offset and (v1) timestamp a broker would have."""
    LEGACY_OFFSET.pack_into(buf, 0, last_offset)
    patched = ["offset"]
    if spec.magic == 1:
        attributes = CODECS[spec.compression]
        if spec.log_append_time is not None:
            attributes |= TIMESTAMP_TYPE_BIT
        buf[LEGACY_ATTRIBUTES_AT] = attributes
        LEGACY_TIMESTAMP.pack_into(buf, LEGACY_TIMESTAMP_AT, wrapper_timestamp(spec))
        LEGACY_CRC.pack_into(buf, LEGACY_CRC_AT, calc_crc32(bytes(buf[LEGACY_MAGIC_AT:])))
        patched += ["attributes", "timestamp", "crc"]
    return patched


def legacy_record_expected(
    spec: LegacyBatch, offset: int, record: Record, crc: int
) -> dict[str, Any]:
    stored = legacy_timestamp(spec, record)
    expected: dict[str, Any] = {
        "offset": offset,
        "timestamp": stored if spec.log_append_time is None else spec.log_append_time,
        "key": hex_or_none(record.key),
        "value": hex_or_none(record.value),
        "headers": [],
        "crc": crc,
    }
    if spec.log_append_time is not None:
        expected["stored_timestamp"] = stored  # the inner message keeps its CreateTime
    return expected


def build_legacy(spec: LegacyBatch, first_offset: int) -> BuiltBatch:
    compressed = spec.compression != "none"
    assert compressed or len(spec.records) == 1, "a plain legacy message holds one record"
    builder = LegacyRecordBatchBuilder(spec.magic, CODECS[spec.compression], BUILDER_BATCH_SIZE)
    # v0 inner offsets are absolute, v1 inner offsets relative to the first inner message.
    inner_base = first_offset if spec.magic == 0 or not compressed else 0
    metas = []
    for i, record in enumerate(spec.records):
        meta = builder.append(inner_base + i, record.timestamp, record.key, record.value)
        assert meta is not None, "builder refused an append"
        metas.append(meta)
    buf = bytearray(builder.build())
    last_offset = first_offset + len(spec.records) - 1
    patched = patch_wrapper(buf, spec, last_offset) if compressed else []
    expected = {
        "base_offset": first_offset,
        "last_offset": last_offset,
        "magic": spec.magic,
        "compression": spec.compression,
        "crc": calc_crc32(bytes(buf[LEGACY_MAGIC_AT:])) if compressed else metas[0].crc,
        "timestamp_type": timestamp_type(spec),
        "max_timestamp": wrapper_timestamp(spec),
        "producer_id": NO_PRODUCER_ID,
        "producer_epoch": NO_PRODUCER_EPOCH,
        "base_sequence": NO_SEQUENCE,
        "last_sequence": NO_SEQUENCE,
        "is_transactional": False,
        "is_control": False,
        "partition_leader_epoch": NO_PARTITION_LEADER_EPOCH,
        "size": len(buf),
        "record_count": len(metas),
        "patched": patched,
        "records": [
            legacy_record_expected(spec, first_offset + i, record, meta.crc)
            for i, (record, meta) in enumerate(zip(spec.records, metas, strict=True))
        ],
    }
    return BuiltBatch(bytes(buf), expected)


# --------------------------------------------------------------------------- cross-check


def check(label: str, got: object, want: object) -> None:
    if got != want:
        raise SystemExit(f"kafka-python reads {label}={got!r}, fixture spec says {want!r}")


def check_records(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    check("record count", len(got), len(want))
    for i, (got_record, want_record) in enumerate(zip(got, want, strict=True)):
        for name, value in got_record.items():
            check(f"records[{i}].{name}", value, want_record[name])


def check_v2(data: bytes, want: dict[str, Any], crc_valid: bool) -> None:
    batch = DefaultRecordBatch(data)
    check("crc_valid", batch.validate_crc(), crc_valid)
    check("timestamp_type", batch.timestamp_type, TIMESTAMP_TYPES.index(want["timestamp_type"]))
    for label, got in (
        ("base_offset", batch.base_offset),
        ("last_offset", batch.last_offset),
        ("compression", batch.compression_type),
        ("crc", batch.crc),
        ("max_timestamp", batch.max_timestamp),
        ("producer_id", batch.producer_id),
        ("producer_epoch", batch.producer_epoch),
        ("base_sequence", batch.base_sequence),
        ("last_sequence", batch.last_sequence),
        ("is_transactional", batch.is_transactional),
        ("is_control", batch.is_control_batch),
        ("size", batch.size_in_bytes),
        ("partition_leader_epoch", batch.leader_epoch),
        ("record_count", batch.records_count),
        ("base_timestamp", batch.first_timestamp),
    ):
        expected = CODECS[want[label]] if label == "compression" else want[label]
        check(label, got, expected)
    records = [
        {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": hex_or_none(r.key),
            "value": hex_or_none(r.value),
            "headers": [[k, hex_or_none(v)] for k, v in r.headers],
        }
        for r in batch
    ]
    check_records(records, want["records"])


def check_legacy(data: bytes, want: dict[str, Any], crc_valid: bool) -> None:
    batch = LegacyRecordBatch(data, want["magic"])
    check("crc_valid", batch.validate_crc(), crc_valid)
    check("offset", batch.base_offset, want["last_offset"])  # kafka-python: wrapper offset
    check("compression", batch.compression_type, CODECS[want["compression"]])
    kind = batch.timestamp_type
    check(
        "timestamp_type",
        "NoTimestampType" if kind is None else TIMESTAMP_TYPES[kind],
        want["timestamp_type"],
    )
    check("size", batch.size_in_bytes, want["size"])
    records = []
    for r in batch:
        check(f"inner message {r.offset} crc_valid", r.validate_crc(), True)
        records.append(
            {
                "offset": r.offset,
                "timestamp": NO_TIMESTAMP if r.timestamp is None else r.timestamp,
                "key": hex_or_none(r.key),
                "value": hex_or_none(r.value),
                "crc": r.checksum,
            }
        )
    check_records(records, want["records"])


def cross_check(fixture: Fixture) -> None:
    """Read every batch back with kafka-python (never kdump) and compare with the spec."""
    end = 0
    for want in fixture.batches:
        check("position", want["position"], end)
        data = fixture.data[want["position"] : want["position"] + want["size"]]
        crc_valid = want.get("crc_valid", True)
        if want["magic"] == 2:
            check_v2(data, want, crc_valid)
        else:
            check_legacy(data, want, crc_valid)
        end += want["size"]
    tail = fixture.extra.get("truncated_tail")
    check("file size", len(fixture.data), end + (tail["length"] if tail else 0))


# --------------------------------------------------------------------------- segments


def build_batch(spec: BatchSpec, offset: int) -> BuiltBatch:
    return build_v2(spec, offset) if isinstance(spec, V2Batch) else build_legacy(spec, offset)


def build_segment(
    specs: Sequence[BatchSpec], base_offset: int
) -> tuple[bytes, list[dict[str, Any]]]:
    """Lay batches end to end; each batch starts at the offset after the previous one."""
    data, batches, offset = bytearray(), [], base_offset
    for spec in specs:
        built = build_batch(spec, offset)
        batches.append({"position": len(data), **built.expected})
        data += built.data
        offset = built.expected["last_offset"] + 1
    return bytes(data), batches


def segment_fixture(
    name: str, how: str, specs: Sequence[BatchSpec], base_offset: int = 0
) -> Fixture:
    data, batches = build_segment(specs, base_offset)
    return Fixture(name, how, base_offset, data, batches)


# --------------------------------------------------------------------------- fixtures


def make_snappy() -> Fixture:
    specs = codec_batches(seed=1, codecs=["snappy"] * 6, count_range=(5, 30))
    return segment_fixture(
        "snappy-0", "6 v2 batches of 5-30 records, snappy (xerial framing)", specs
    )


def make_zstd() -> Fixture:
    specs = codec_batches(seed=2, codecs=["zstd"] * 6, count_range=(5, 30))
    return segment_fixture("zstd-0", "6 v2 batches of 5-30 records, zstd", specs)


def make_gzip_lz4_mixed() -> Fixture:
    specs = codec_batches(seed=3, codecs=["none", "gzip", "lz4"] * 3, count_range=(5, 30))
    return segment_fixture(
        "gzip-lz4-mixed-0", "9 v2 batches of 5-30 records, codecs none/gzip/lz4 in turn", specs
    )


def legacy_records_run(clock: Clock, prefix: str, count: int) -> tuple[Record, ...]:
    return tuple(
        Record(
            clock.advance(7),
            f"{prefix}-k{i}".encode(),
            f"{prefix} inner message {i}: ".encode() + b"abcabcabc" * 4,
        )
        for i in range(count)
    )


def plain(magic: int, clock: Clock, key: bytes | None, value: bytes | None) -> LegacyBatch:
    return LegacyBatch(magic, (Record(clock.advance(5), key, value),))


def make_v0() -> Fixture:
    clock = Clock()
    specs = [
        plain(0, clock, b"v0-key-0", b"v0 plain message"),
        plain(0, clock, None, b"v0 plain message, null key"),
        LegacyBatch(0, legacy_records_run(clock, "gzip", 3), "gzip"),
        plain(0, clock, b"v0-tombstone", None),
        LegacyBatch(0, legacy_records_run(clock, "snappy", 4), "snappy"),
        LegacyBatch(0, legacy_records_run(clock, "lz4", 3), "lz4"),
        plain(0, clock, b"", b""),
    ]
    return segment_fixture(
        "v0-0",
        "magic v0: plain messages and gzip, snappy, lz4 (Kafka's broken frame header "
        "checksum) wrappers, absolute inner offsets",
        specs,
    )


def make_v1() -> Fixture:
    clock = Clock()
    gzip_run = legacy_records_run(clock, "gzip", 3)
    late = Record(gzip_run[0].timestamp - 50, b"late", b"late inner message")
    with_late = (gzip_run[0], late, *gzip_run[1:])
    specs = [
        plain(1, clock, b"v1-key-0", b"v1 plain message"),
        plain(1, clock, None, b"v1 plain message, null key"),
        LegacyBatch(1, with_late, "gzip"),
        LegacyBatch(1, legacy_records_run(clock, "snappy", 4), "snappy"),
        LegacyBatch(1, legacy_records_run(clock, "lz4", 3), "lz4"),
        LegacyBatch(
            1, legacy_records_run(clock, "append", 3), "gzip", log_append_time=clock.advance(1000)
        ),
        plain(1, clock, b"v1-tombstone", None),
    ]
    return segment_fixture(
        "v1-0",
        "magic v1: plain CreateTime messages, gzip/snappy/lz4 CreateTime wrappers (relative "
        "inner offsets), one gzip LogAppendTime wrapper",
        specs,
    )


HEADER_CASES: tuple[tuple[Header, ...], ...] = (
    (("a", b"1"), ("b", b"2"), ("c", b"3"), ("d", b"4")),
    (("dup", b"first"), ("dup", b"second"), ("dup", None)),
    (("nullable", None),),
    (("", b"empty header key"),),
    (("empty-value", b""),),
    (("ключ", "значение".encode()), ("日本語", "値".encode()), ("emoji-🎉", b"\x00\xff")),
)

KEY_VALUE_CASES: tuple[tuple[bytes | None, bytes | None], ...] = (
    (None, b"value with null key"),
    (b"tombstone-key", None),
    (None, None),
    (b"", b"value with empty key"),
    (b"key with empty value", b""),
    (b"", b""),
    (b"binary", bytes(range(256))),
)


def make_headers() -> Fixture:
    clock = Clock()
    with_headers = tuple(
        Record(clock.advance(3), f"h{i}".encode(), f"headers case {i}".encode(), headers)
        for i, headers in enumerate(HEADER_CASES)
    )
    key_values = tuple(Record(clock.advance(3), k, v) for k, v in KEY_VALUE_CASES)
    mixed = tuple(
        Record(clock.advance(3), k, v, HEADER_CASES[i % len(HEADER_CASES)])
        for i, (k, v) in enumerate(KEY_VALUE_CASES)
    )
    specs = [V2Batch(with_headers), V2Batch(key_values), V2Batch(mixed, compression="gzip")]
    return segment_fixture(
        "headers-0",
        "v2: header edge cases (duplicates, null value, empty and unicode keys), null/empty "
        "keys and values, then both together in a gzip batch",
        specs,
    )


MALFORMED_UTF8: tuple[tuple[str, bytes], ...] = (
    ("valid", "plain é € 😀".encode()),
    ("lone-continuations", b"a\x80\xbfb"),
    ("c0-c1-leads", b"\xc0\xaf\xc1\xbf"),
    ("two-byte-bad-second", b"\xc3A"),
    ("two-byte-at-end", b"a\xc3"),
    ("e0-overlong", b"\xe0\x80\xaf"),
    ("three-byte-bad-second", b"\xe2AB"),
    ("three-byte-bad-third", b"\xe2\x82A"),
    ("surrogate", b"\xed\xa0\x80"),
    ("surrogate-pair-cesu-8", b"\xed\xa0\xbd\xed\xb8\x80"),
    ("surrogate-then-ascii", b"\xed\xa0A"),
    ("surrogate-at-end", b"x\xed\xa0"),
    ("three-byte-at-end", b"x\xe2\x82"),
    ("three-byte-at-end-bad-second", b"x\xe0\x80"),
    ("f0-overlong", b"\xf0\x80\x80\x80"),
    ("above-10ffff", b"\xf4\x90\x80\x80"),
    ("f5-f7-leads", b"\xf5\x80\x80\x80\xf7\xbf"),
    ("four-byte-bad-fourth", b"\xf0\x9f\x98A"),
    ("four-byte-bad-third", b"\xf0\x9fA\x80"),
    ("four-byte-three-at-end", b"x\xf0\x9f\x98"),
    ("four-byte-two-at-end", b"x\xf0\x9f"),
    ("four-byte-cut-then-ascii", b"x\xf0\x9fA"),
    ("f4-bad-second-at-end", b"x\xf4\x90"),
    ("f8-ff", b"\xf8\xfb\xfc\xfe\xff"),
    # no newline: one record, one line of the text dump
    ("random", bytes(b for b in random.Random(29).randbytes(128) if b != 0x0A)),
)
"""Byte strings for each rule of the JDK's String.decodeUTF8_UTF16 (what Kafka's StringDecoder
and header keys decode with): which bytes one U+FFFD replaces, encoded surrogates, overlong
forms and code points past U+10FFFF, sequences cut by the end of the bytes."""

JAVA_NEW_STRING = Path(__file__).resolve().parents[1] / "tests" / "data" / "java" / "NewString.java"


def java_new_strings(payloads: Sequence[bytes]) -> dict[str, str]:
    """``new String(bytes, UTF_8)`` of each payload, by the JDK on this machine (``java``)."""
    cases = "".join(p.hex() + "\n" for p in payloads)
    ran = subprocess.run(
        ["java", str(JAVA_NEW_STRING)], input=cases, capture_output=True, text=True, check=True
    )
    units = ran.stdout.split("\n")[: len(payloads)]
    return {
        p.hex(): bytes.fromhex(u).decode("utf-16-be", "surrogatepass")
        for p, u in zip(payloads, units, strict=True)
    }


def make_malformed_utf8() -> Fixture:
    clock = Clock()
    records = tuple(
        Record(clock.advance(1), payload, payload, ((name, payload),))
        for name, payload in MALFORMED_UTF8
    )
    fixture = segment_fixture(
        "malformed-utf8-0",
        "v2: keys, values and header values that are not UTF-8, one record per rule of the "
        "JDK's decoder (the header's key names it); `java_new_string` holds the JDK's text",
        [V2Batch(records)],
    )
    fixture.extra["java_new_string"] = java_new_strings([p for _, p in MALFORMED_UTF8])
    return fixture


def producer_batch(
    clock: Clock,
    count: int,
    producer: tuple[int, int, int],
    *,
    transactional: bool = False,
    compression: str = "none",
    leader_epoch: int = 0,
) -> V2Batch:
    producer_id, producer_epoch, base_sequence = producer
    records = tuple(
        Record(
            clock.advance(4),
            f"p{producer_id}-{i}".encode(),
            f"producer {producer_id} seq {base_sequence}+{i} ".encode() * 3,
        )
        for i in range(count)
    )
    return V2Batch(
        records,
        compression,
        producer_id,
        producer_epoch,
        base_sequence,
        is_transactional=transactional,
        partition_leader_epoch=leader_epoch,
    )


def make_idempotent() -> Fixture:
    clock = Clock()
    specs = [
        producer_batch(clock, 5, (1000, 0, 0), leader_epoch=4),
        producer_batch(clock, 3, (1000, 0, 5), leader_epoch=4),
        producer_batch(clock, 4, (2000, 1, 0), transactional=True, leader_epoch=4),
        producer_batch(clock, 2, (2000, 1, 4), transactional=True, leader_epoch=4),
        control_batch(2000, 1, "COMMIT", 7, clock.advance(10), 4),
        producer_batch(
            clock, 3, (3000, 0, 0), transactional=True, compression="gzip", leader_epoch=5
        ),
        control_batch(3000, 0, "ABORT", 8, clock.advance(10), 5),
        # lastSequence wraps past Int32.MAX_VALUE to 2 (DefaultRecordBatch.incrementSequence)
        producer_batch(clock, 6, (1000, 0, MAX_INT - 2), leader_epoch=5),
    ]
    return segment_fixture(
        "idempotent-0",
        "v2: idempotent batches, transactional batches (one gzip), a COMMIT and an ABORT "
        "control batch (control bit patched in), a sequence wrapping past 2^31-1, leader "
        "epochs 4 and 5",
        specs,
    )


def plain_v2_batches(seed: int, count: int) -> list[V2Batch]:
    return codec_batches(seed=seed, codecs=["none"] * count, count_range=(2, 6))


def make_truncated() -> Fixture:
    specs = plain_v2_batches(seed=8, count=5)
    data, batches = build_segment(specs[:4], 0)
    tail_batch = build_batch(specs[4], batches[-1]["last_offset"] + 1)
    tail = {
        "position": len(data),
        "length": 40,
        "full_batch_size": tail_batch.expected["size"],
        "base_offset": tail_batch.expected["base_offset"],
    }
    fixture = Fixture(
        "truncated-0",
        "4 uncompressed v2 batches, then the first 40 bytes of a fifth",
        0,
        data + tail_batch.data[:40],
        batches,
    )
    fixture.extra["truncated_tail"] = tail
    return fixture


def flip_last_value_bit(fixture: Fixture, index: int) -> dict[str, Any]:
    """Flip bit 0 of the last value byte of batch `index`'s last record.

    That record has no headers, so its encoding ends `value, headerCount varint 0`:
    the value's last byte is the batch's second-to-last byte.
    """
    batch = fixture.batches[index]
    record = batch["records"][-1]
    assert record["headers"] == [] and record["value"], "needs a header-less, non-empty value"
    at = batch["position"] + batch["size"] - 2
    data = bytearray(fixture.data)
    data[at] ^= 0x01
    fixture.data = bytes(data)
    original = bytes.fromhex(record["value"])
    record["value"] = (original[:-1] + bytes([original[-1] ^ 0x01])).hex()
    computed = calc_crc32c(fixture.data[batch["position"] + V2_ATTRIBUTES_AT : at + 2])
    batch["crc_valid"] = False
    batch["computed_crc"] = computed
    return {
        "batch_index": index,
        "position": batch["position"],
        "byte_position": at,
        "bit_mask": 1,
        "record_offset": record["offset"],
        "value_before_flip": original.hex(),
        "stored_crc": batch["crc"],
        "computed_crc": computed,
    }


def make_badcrc() -> Fixture:
    specs = plain_v2_batches(seed=9, count=5)
    last = specs[2].records[-1]
    specs[2] = V2Batch((*specs[2].records[:-1], Record(last.timestamp, last.key, last.value)))
    fixture = segment_fixture(
        "badcrc-0",
        "5 uncompressed v2 batches; batch 2 has one value bit flipped, its stored "
        "crc left as written",
        specs,
    )
    for batch in fixture.batches:
        batch["crc_valid"] = True
    fixture.extra["corruption"] = flip_last_value_bit(fixture, 2)
    return fixture


def big_batch(rng: random.Random, clock: Clock, n: int, leader_epoch: int) -> V2Batch:
    records = []
    for i in range(n, n + rng.randint(1, 10)):
        key = None if rng.random() < 0.2 else f"key-{rng.randrange(500)}".encode()
        value = json_value(rng, i, pad=rng.randint(0, 8))
        records.append(Record(clock.advance(rng.randint(1, 20)), key, value))
    return V2Batch(tuple(records), partition_leader_epoch=leader_epoch)


def make_big() -> Fixture:
    rng, clock = random.Random(10), Clock()
    specs: list[BatchSpec] = []
    n = 0
    for i in range(300):
        spec = big_batch(rng, clock, n, leader_epoch=i // 100)
        specs.append(spec)
        n += len(spec.records)
    return segment_fixture(
        "big-0",
        "base offset 1000: 300 uncompressed v2 batches of 1-10 records, strictly "
        "increasing timestamps, leader epochs 0-2",
        specs,
        base_offset=1000,
    )


FIXTURES: tuple[Callable[[], Fixture], ...] = (
    make_snappy,
    make_zstd,
    make_gzip_lz4_mixed,
    make_v0,
    make_v1,
    make_headers,
    make_malformed_utf8,
    make_idempotent,
    make_truncated,
    make_badcrc,
    make_big,
)


# --------------------------------------------------------------------------- output


def package_versions() -> dict[str, str]:
    names = ("kafka-python", "python-snappy", "cramjam", "zstandard", "lz4", "xxhash")
    return {name: metadata.version(name) for name in names}


def expected_document(fixtures: Sequence[Fixture]) -> dict[str, Any]:
    logs = {}
    for fixture in fixtures:
        logs[fixture.relative_path] = {
            "fixture": fixture.name,
            "base_offset": fixture.base_offset,
            "size": len(fixture.data),
            "sha256": hashlib.sha256(fixture.data).hexdigest(),
            "truncated_tail": fixture.extra.get("truncated_tail"),
            "corruption": fixture.extra.get("corruption"),
            **{k: fixture.extra[k] for k in ("java_new_string",) if k in fixture.extra},
            "batches": fixture.batches,
        }
    return {
        "generator": "scripts/make_fixtures.py",
        "encoder": f"kafka-python {metadata.version('kafka-python')}",
        "logs": logs,
    }


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def is_flat(value: Any) -> bool:
    items = value.values() if isinstance(value, dict) else value
    return not isinstance(value, (dict, list)) or not any(
        isinstance(item, (dict, list)) for item in items
    )


def format_json(value: Any, depth: int = 0, inline_items: bool = False) -> str:
    """Indented JSON, but one line per record and per flat list, to keep the file small."""
    if is_flat(value):
        return compact_json(value)
    pad = " " * (depth + 1)
    if isinstance(value, dict):
        opening, closing = "{", "}"
        lines = [
            f"{pad}{compact_json(k)}: {format_json(v, depth + 1, k == 'records')}"
            for k, v in value.items()
        ]
    else:
        opening, closing = "[", "]"
        lines = [
            pad + (compact_json(v) if inline_items else format_json(v, depth + 1)) for v in value
        ]
    return opening + "\n" + ",\n".join(lines) + "\n" + " " * depth + closing


EXPECTED_NOTES = (
    "- Keys are `<dir>/<log>`; each log has `size`, `sha256`, `batches`, `truncated_tail`"
    " (position and length of the partial batch at the end, or null) and `corruption`"
    " (the flipped bit, or null).",
    "- A batch has `position`, `base_offset`, `last_offset`, `magic`, `compression`, `crc`"
    " (as stored, unsigned), `timestamp_type`, `max_timestamp`, producer fields,"
    " `last_sequence`, `is_transactional`, `is_control`, `partition_leader_epoch`, `size`,"
    " `record_count`, `patched` (fields this script set in the builder's bytes) and"
    " `records`; v2 batches also `base_timestamp`.",
    "- A record has `offset`, `timestamp` (as a reader reports it), `key`, `value` (hex,"
    " null for null), `headers` (`[key, value-hex-or-null]`); v2 records also `sequence`,"
    " control records `control`; legacy records also `crc`, and inside a LogAppendTime"
    " wrapper `stored_timestamp` (the inner message's own CreateTime).",
    "- Legacy (v0/v1) batches are the shallow messages: `base_offset` is the first inner"
    " offset, `last_offset` the wrapper's offset; producer fields, sequences and"
    " `partition_leader_epoch` are -1 as in Kafka's AbstractLegacyRecordBatch; v0"
    " timestamps are -1 (`NoTimestampType`).",
    "- `badcrc-0` batches carry `crc_valid`; the corrupt one also `computed_crc`, and its"
    " record lists the value as it is in the file (after the flip).",
    "- `malformed-utf8-0` carries `java_new_string`: for each payload (by its hex), the text"
    " of `new String(bytes, StandardCharsets.UTF_8)` as the JDK that ran the script gave it"
    " (`tests/data/java/NewString.java`; a JDK is needed to regenerate).",
)


def readme(fixtures: Sequence[Fixture]) -> str:
    pins = " ".join(f"{name}=={version}" for name, version in package_versions().items())
    lines = [
        "# Generated fixtures",
        "",
        "Made by `scripts/make_fixtures.py` with kafka-python's record builders as an",
        "independent encoder; `expected.json` describes every batch from the builders' inputs",
        "and returned metadata, never from parsing the bytes back (the script's docstring",
        "lists the fields kafka-python leaves to the broker and how they are patched).",
        "Do not edit by hand. Regenerate from the repository root with:",
        "",
        "```",
        f"pip install {pins} crc32c",
        REGEN_COMMAND,
        "```",
        "",
        "The bytes are reproducible with exactly these versions (other codec versions may",
        "compress differently); the script replaces this whole directory.",
        "",
        "| directory | log | bytes | how |",
        "| --- | --- | --- | --- |",
        *(f"| `{f.name}` | `{f.log_name}` | {len(f.data)} | {f.how} |" for f in fixtures),
        "",
        "## expected.json",
        "",
        *EXPECTED_NOTES,
    ]
    return "\n".join(lines) + "\n"


def prepare_out_dir(out: Path) -> None:
    """Replace `out` only when it is empty or was made by this script."""
    if out.exists() and any(out.iterdir()) and not (out / "expected.json").exists():
        raise SystemExit(f"{out} is not empty and holds no expected.json: refusing to clear it")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)


def write_fixtures(out: Path, fixtures: Sequence[Fixture]) -> None:
    prepare_out_dir(out)
    for fixture in fixtures:
        (out / fixture.name).mkdir()
        (out / fixture.relative_path).write_bytes(fixture.data)
    document = format_json(expected_document(fixtures))
    (out / "expected.json").write_text(document + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme(fixtures), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="output directory (default: fixtures/generated)",
    )
    args = parser.parse_args(argv)
    pin_gzip_mtime()
    fixtures = [make() for make in FIXTURES]
    for fixture in fixtures:
        cross_check(fixture)
    write_fixtures(args.out, fixtures)
    for fixture in fixtures:
        print(f"{fixture.relative_path}: {len(fixture.data)} bytes, {len(fixture.batches)} batches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
