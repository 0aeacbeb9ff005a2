"""Property tests: batches written by an independent encoder parse back to what it was asked
to write.

The encoder is kafka-python (``DefaultRecordBatchBuilder`` for magic v2,
``LegacyRecordBatchBuilder`` for magic v0/v1), which shares no code with kdump. Like
scripts/make_fixtures.py, the bytes a broker would set are patched in afterwards: the base
offset and partition leader epoch of v2 batches, LogAppendTime (attribute bit 3, max timestamp
and a recomputed CRC-32C), and the offset and timestamp of v0/v1 compressed wrappers (with a
recomputed CRC-32). CRCs in the expectations come from kafka-python's own CRC functions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32, calc_crc32c

from kdump.format.walk import iter_batches, iter_records
from kdump.render.dump_segments import DumpOptions, DumpProblems, as_lines, dump_files
from kdump.storage.local import open_log_file

PROPERTY_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

INT32_MAX = 2**31 - 1
NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
LOG_APPEND_TIME_BIT = 0x08
NO_TIMESTAMP = -1
BUILDER_BATCH_SIZE = 1 << 24

# magic v2 header fields patched here (DefaultRecordBatch layout)
V2_BASE_OFFSET = struct.Struct(">q")  # at 0
V2_LEADER_EPOCH = struct.Struct(">i")  # at 12
V2_CRC = struct.Struct(">I")  # at 17
V2_ATTRIBUTES = struct.Struct(">h")  # at 21
V2_MAX_TIMESTAMP = struct.Struct(">q")  # at 35
# legacy message fields (LegacyRecord layout): offset 0, crc 12, magic 16, attributes 17, ts 18
LEGACY_OFFSET = struct.Struct(">q")
LEGACY_CRC = struct.Struct(">I")
LEGACY_TIMESTAMP = struct.Struct(">q")


@dataclass(frozen=True)
class Rec:
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class Built:
    data: bytes
    batch: dict[str, Any]
    records: list[dict[str, Any]]


def next_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence (wraps to 0)."""
    if sequence == -1:
        return -1
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


# --------------------------------------------------------------------------- strategies

blobs = st.one_of(
    st.none(),
    st.binary(max_size=48),
    # repetitive values, so that the codecs really compress (kafka-python writes a v2 batch
    # uncompressed when compression does not make it smaller)
    st.builds(lambda unit, n: unit * n, st.binary(min_size=1, max_size=6), st.integers(1, 60)),
)
header_keys = st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
headers = st.lists(st.tuples(header_keys, st.one_of(st.none(), st.binary(max_size=12))), max_size=3)
timestamps = st.integers(0, 2**42)


@st.composite
def v2_batches(draw: st.DrawFn) -> Built:
    count = draw(st.integers(1, 12))
    first = draw(timestamps)
    stamps = [first] + [first + draw(st.integers(-(10**6), 10**6)) for _ in range(count - 1)]
    records = [Rec(ts, draw(blobs), draw(blobs), tuple(draw(headers))) for ts in stamps]
    deltas = [0]
    for _ in range(count - 1):  # compaction leaves gaps; offsets only grow
        deltas.append(deltas[-1] + draw(st.integers(1, 3)))
    producer_id = draw(st.one_of(st.just(-1), st.integers(0, 2**63 - 1)))
    near_wrap = st.integers(INT32_MAX - 12, INT32_MAX)  # sequences wrap to 0 inside the batch
    base_sequence = draw(st.one_of(st.just(-1), st.integers(0, INT32_MAX), near_wrap))
    return build_v2(
        records,
        deltas,
        codec=draw(st.sampled_from([NONE, GZIP, SNAPPY, LZ4, ZSTD])),
        base_offset=draw(st.integers(0, 2**62)),
        leader_epoch=draw(st.integers(-1, INT32_MAX)),
        producer_id=producer_id,
        producer_epoch=draw(st.integers(-1, 2**15 - 1)),
        base_sequence=base_sequence,
        transactional=draw(st.booleans()),
        log_append_time=draw(st.one_of(st.none(), timestamps)),
    )


@st.composite
def legacy_batches(draw: st.DrawFn) -> Built:
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([NONE, GZIP, SNAPPY, LZ4]))
    count = 1 if codec == NONE else draw(st.integers(1, 8))
    records = [Rec(draw(timestamps), draw(blobs), draw(blobs)) for _ in range(count)]
    log_append_time = draw(st.one_of(st.none(), timestamps)) if magic == 1 else None
    return build_legacy(records, magic, codec, draw(st.integers(0, 2**50)), log_append_time)


any_batches = st.one_of(v2_batches(), legacy_batches())


# --------------------------------------------------------------------------- the encoder


def build_v2(
    records: list[Rec],
    deltas: list[int],
    *,
    codec: int,
    base_offset: int,
    leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    log_append_time: int | None,
) -> Built:
    builder = DefaultRecordBatchBuilder(
        2, codec, transactional, producer_id, producer_epoch, base_sequence, BUILDER_BATCH_SIZE
    )
    for delta, r in zip(deltas, records, strict=True):
        assert builder.append(delta, r.timestamp, r.key, r.value, list(r.headers)) is not None
    buf = bytearray(builder.build())
    V2_BASE_OFFSET.pack_into(buf, 0, base_offset)
    V2_LEADER_EPOCH.pack_into(buf, 12, leader_epoch)
    max_timestamp = max(r.timestamp for r in records)
    if log_append_time is not None:
        (attributes,) = V2_ATTRIBUTES.unpack_from(buf, 21)
        V2_ATTRIBUTES.pack_into(buf, 21, attributes | LOG_APPEND_TIME_BIT)
        V2_MAX_TIMESTAMP.pack_into(buf, 35, log_append_time)
        V2_CRC.pack_into(buf, 17, calc_crc32c(bytes(buf[21:])))
        max_timestamp = log_append_time
    data = bytes(buf)
    batch = {
        "magic": 2,
        "base_offset": base_offset,
        "last_offset": base_offset + deltas[-1],
        "records_count": len(records),
        "compression": DefaultRecordBatch(data).compression_type,  # what the builder chose
        "crc": calc_crc32c(data[21:]),
        "timestamp_type": 0 if log_append_time is None else 1,
        "base_timestamp": records[0].timestamp,
        "max_timestamp": max_timestamp,
        "producer_id": producer_id,
        "producer_epoch": producer_epoch,
        "base_sequence": base_sequence,
        "last_sequence": next_sequence(base_sequence, deltas[-1]),
        "partition_leader_epoch": leader_epoch,
        "is_transactional": transactional,
        "is_control": False,
        "size": len(data),
    }
    expected = [
        {
            "offset": base_offset + delta,
            "timestamp": r.timestamp if log_append_time is None else log_append_time,
            "key": r.key,
            "value": r.value,
            "headers": list(r.headers),
            "sequence": next_sequence(base_sequence, delta),
        }
        for delta, r in zip(deltas, records, strict=True)
    ]
    return Built(data, batch, expected)


def build_legacy(
    records: list[Rec], magic: int, codec: int, first_offset: int, log_append_time: int | None
) -> Built:
    """A plain v0/v1 message (one record) or a compressed wrapper at its final offsets."""
    builder = LegacyRecordBatchBuilder(magic, codec, BUILDER_BATCH_SIZE)
    # inner offsets: absolute for v0 and for plain messages, relative for v1 wrappers
    inner_base = 0 if magic == 1 and codec != NONE else first_offset
    metas = [
        builder.append(inner_base + i, r.timestamp, r.key, r.value) for i, r in enumerate(records)
    ]
    buf = bytearray(builder.build())
    last_offset = first_offset + len(records) - 1
    stamps = [NO_TIMESTAMP if magic == 0 else r.timestamp for r in records]
    timestamp = NO_TIMESTAMP if magic == 0 else max(stamps)
    if codec != NONE:
        LEGACY_OFFSET.pack_into(buf, 0, last_offset)
    if magic == 1:
        if log_append_time is not None:
            buf[17] |= LOG_APPEND_TIME_BIT
            timestamp = log_append_time
        LEGACY_TIMESTAMP.pack_into(buf, 18, timestamp)
        LEGACY_CRC.pack_into(buf, 12, calc_crc32(bytes(buf[16:])))
    data = bytes(buf)
    batch = {
        "magic": magic,
        "base_offset": first_offset,
        "last_offset": last_offset,
        "records_count": None,
        "compression": codec,
        "crc": calc_crc32(data[16:]),
        "timestamp_type": -1 if magic == 0 else (0 if log_append_time is None else 1),
        "max_timestamp": timestamp,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "last_sequence": -1,
        "partition_leader_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "size": len(data),
    }
    # a plain message's own crc changed when it was patched; inner messages keep theirs
    crcs = [calc_crc32(data[16:])] if codec == NONE else [m.crc for m in metas]
    expected = [
        {
            "offset": first_offset + i,
            "timestamp": ts if log_append_time is None else log_append_time,
            "key": r.key,
            "value": r.value,
            "headers": [],
            "sequence": -1,
            "crc": crc,
        }
        for i, (r, ts, crc) in enumerate(zip(records, stamps, crcs, strict=True))
    ]
    return Built(data, batch, expected)


# --------------------------------------------------------------------------- kdump's view


def parsed_batch(batch: Any, buf: bytes) -> dict[str, Any]:
    fields = {
        "magic": batch.magic,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "records_count": batch.records_count,
        "compression": batch.compression,
        "crc": batch.crc,
        "timestamp_type": batch.timestamp_type,
        "max_timestamp": batch.max_timestamp,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "last_sequence": batch.last_sequence,
        "partition_leader_epoch": batch.partition_leader_epoch,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "size": batch.size,
    }
    if batch.magic == 2:
        fields["base_timestamp"] = batch.base_timestamp
    assert batch.is_valid(buf)
    assert batch.compute_checksum(buf) == batch.crc
    return fields


def parsed_records(batch: Any, buf: bytes) -> list[dict[str, Any]]:
    out = []
    for r in iter_records(buf, batch):
        record = {
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": r.key,
            "value": r.value,
            "headers": [(h.key, h.value) for h in r.headers],
            "sequence": r.sequence,
        }
        if batch.magic < 2:
            assert r.is_valid
            record["crc"] = r.crc
        out.append(record)
    return out


def assert_parses_back(buf: bytes, built: list[Built]) -> None:
    batches = list(iter_batches(buf))
    assert len(batches) == len(built)
    position = 0
    for batch, b in zip(batches, built, strict=True):
        assert batch.position == position
        assert parsed_batch(batch, buf) == b.batch
        assert parsed_records(batch, buf) == b.records
        position += b.batch["size"]


# --------------------------------------------------------------------------- properties


@PROPERTY_SETTINGS
@given(v2_batches())
def test_v2_batch_parses_back(built: Built) -> None:
    assert_parses_back(built.data, [built])


@PROPERTY_SETTINGS
@given(legacy_batches())
def test_legacy_message_parses_back(built: Built) -> None:
    assert_parses_back(built.data, [built])


@PROPERTY_SETTINGS
@given(st.lists(any_batches, min_size=1, max_size=6), st.data())
def test_concatenation_with_truncated_tail_parses_back_from_a_file(
    tmp_path_factory: pytest.TempPathFactory, built: list[Built], data: st.DataObject
) -> None:
    """A .log of whole batches and a last batch cut short: every whole batch parses back, the
    cut one ends the iteration, and the dump reports its bytes as Kafka does."""
    last = built[-1].data
    cut = data.draw(st.integers(1, len(last) - 1), label="bytes cut off the last batch")
    whole = b"".join(b.data for b in built[:-1])
    path = tmp_path_factory.mktemp("log") / "00000000000000000000.log"
    path.write_bytes(whole + last[: len(last) - cut])
    log = open_log_file(path)  # read through its memory map, as kdump reads segments
    assert_parses_back(log.buf, built[:-1])  # type: ignore[arg-type]
    log.buf.close()  # type: ignore[union-attr]
    tail = len(last) - cut
    lines = [text for _, text in as_lines(dump_files([str(path)], DumpOptions(), DumpProblems()))]
    assert lines[-1] == f"Found {tail} invalid bytes at the end of {path.name}"
    assert len(lines) == 2 + len(built) - 1 + 1


@PROPERTY_SETTINGS
@given(st.lists(any_batches, min_size=1, max_size=6))
def test_concatenation_parses_back_whole(built: list[Built]) -> None:
    assert_parses_back(b"".join(b.data for b in built), built)
