"""Hostile inputs, built here from the format's own description (FORMAT.md, Aiven's
SegmentManifestV1), never by kdump's writer: decompression bombs of records and messages, and
Aiven manifests whose counts and sizes lie.

Each builder takes the size that matters (records, messages, chunks) so the suite builds small
ones that prove a bound and bench/bench_hostile.py the sizes the security review used.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import zstandard
from batchbytes import v2_batch, varint

GZIP, ZSTD = 1, 4
BLOCK = 1 << 20
"""Bytes of repeated content handed to the compressor at a time: the bomb never exists
decompressed in the builder's memory."""

EMPTY_RECORD = bytes([0x0C, 0, 0, 0, 1, 1, 0])
"""The smallest v2 record (7 bytes): length 6, attributes 0, timestamp and offset deltas 0,
null key and value (-1 zig-zag: 1), no headers. Every copy has offset delta 0."""

_V0_MESSAGE_BODY = bytes([0, 0]) + struct.pack(">ii", -1, -1)  # magic 0, attributes, key, value
EMPTY_V0_MESSAGE = (
    struct.pack(">qiI", 0, 4 + len(_V0_MESSAGE_BODY), zlib.crc32(_V0_MESSAGE_BODY))
    + _V0_MESSAGE_BODY
)
"""The smallest magic v0 message (26 bytes): offset 0, null key and value, a correct CRC."""


def _repeated(unit: bytes, copies: int) -> Iterator[bytes]:
    block = unit * max(1, BLOCK // len(unit))
    per_block = len(block) // len(unit)
    for _ in range(copies // per_block):
        yield block
    yield unit * (copies % per_block)


def compressed(unit: bytes, copies: int, codec: int) -> bytes:
    """``copies`` of ``unit`` as one gzip member or one zstd frame, built block by block."""
    if codec == GZIP:
        gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(gz.compress(b) for b in _repeated(unit, copies)) + gz.flush()
    zc = zstandard.ZstdCompressor(level=19).compressobj(size=len(unit) * copies)
    return b"".join(zc.compress(b) for b in _repeated(unit, copies)) + zc.flush()


def record_bomb(records: int, base_offset: int = 0, **header: int) -> bytes:
    """One zstd v2 batch holding ``records`` copies of EMPTY_RECORD: 7 bytes a record
    decompressed, a few bytes per hundred thousand on disk. Its offsets run to base + 10 (every
    record says base + 0: a lookup of base + 5 reads them all); ``header``: v2_batch's fields."""
    payload = compressed(EMPTY_RECORD, records, ZSTD)
    fields = {"last_offset_delta": 10, **header}
    return v2_batch(base_offset, payload, ZSTD, records_count=records, **fields)


def legacy_message(offset: int, attributes: int, value: bytes) -> bytes:
    """A magic v0 message (LegacyRecord): null key, ``value``, CRC-32 from the magic on."""
    body = bytes([0, attributes]) + struct.pack(">ii", -1, len(value)) + value
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def legacy_wrapper_bomb(messages: int, offset: int = 0) -> bytes:
    """A magic v0 gzip wrapper around ``messages`` copies of EMPTY_V0_MESSAGE (26 bytes each)."""
    return legacy_message(offset, GZIP, compressed(EMPTY_V0_MESSAGE, messages, GZIP))


def invalid_batch(base_offset: int = 0) -> bytes:
    """A whole v2 batch of one record whose CRC does not match: where recovery cuts a log."""
    batch = bytearray(v2_batch(base_offset, EMPTY_RECORD))
    batch[17] ^= 0xFF
    return bytes(batch)


def write_segment(directory: Path, data: bytes, base_offset: int = 0) -> Path:
    """``data`` as a partition directory's only .log (no indexes: kdump's readers make do)."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{base_offset:020d}.log"
    log.write_bytes(data)
    return log


# -- Aiven manifests --------------------------------------------------------------------------

AIVEN_TOPIC_DIR = "hostile-AAAAAAAAAAAAAAAAAAAAAA"
AIVEN_STEM = "00000000000000000000-AAAAAAAAAAAAAAAAAAAAAA"


def manifest(chunk_index: dict[str, object], compression: bool = False) -> bytes:
    """A SegmentManifestV1 with this ``chunkIndex``, no indexes, no encryption."""
    indexes = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")
    return json.dumps(
        {
            "version": "1",
            "chunkIndex": chunk_index,
            "segmentIndexes": dict.fromkeys(indexes),
            "compression": compression,
        }
    ).encode()


def aiven_segment(
    bucket: Path, chunk_index: dict[str, object], log: bytes, compression: bool = False
) -> str:
    """A file:// bucket holding one Aiven segment (``.log``, empty ``.indexes``, manifest) with
    this ``chunkIndex``; the URL of its ``.log``."""
    part = bucket / AIVEN_TOPIC_DIR / "0"
    part.mkdir(parents=True, exist_ok=True)
    (part / f"{AIVEN_STEM}.rsm-manifest").write_bytes(manifest(chunk_index, compression))
    (part / f"{AIVEN_STEM}.indexes").write_bytes(b"")
    (part / f"{AIVEN_STEM}.log").write_bytes(log)
    return f"file://{part / AIVEN_STEM}.log"


def lying_chunk_sizes(count: int) -> str:
    """``transformedChunks`` of a variable chunk index (ChunkSizesBinaryCodec: count, base,
    bytes per value, values) claiming ``count`` chunks and holding the sizes of two."""
    raw = struct.pack(">iiB", count, 100, 1) + bytes(1) + struct.pack(">i", 100)
    return base64.b64encode(zstandard.ZstdCompressor().compress(raw)).decode()


def variable_index_claiming(count: int, file_size: int) -> dict[str, object]:
    return {
        "type": "variable",
        "originalChunkSize": 100,
        "originalFileSize": file_size,
        "transformedChunks": lying_chunk_sizes(count),
    }


def fixed_index(chunk: int, file_size: int, stored: int, last: int) -> dict[str, object]:
    return {
        "type": "fixed",
        "originalChunkSize": chunk,
        "originalFileSize": file_size,
        "transformedChunkSize": stored,
        "finalTransformedChunkSize": last,
    }


# -- headers and metadata arrays (issue 39 point 4) ---------------------------------------------

EMPTY_HEADER = b"\x00\x00"
"""A record header with an empty key and an empty value (both lengths zig-zag 0)."""


def header_bomb(headers: int, base_offset: int = 0) -> bytes:
    """One zstd v2 batch of one record holding ``headers`` empty headers: 2 bytes a header
    decompressed (10 M: 20 MB in a 1.8 KB file)."""
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(-1) + varint(headers)
    record_head = varint(len(body) + len(EMPTY_HEADER) * headers) + body
    zc = zstandard.ZstdCompressor(level=19).compressobj(
        size=len(record_head) + len(EMPTY_HEADER) * headers
    )
    payload = zc.compress(record_head)
    payload += b"".join(zc.compress(b) for b in _repeated(EMPTY_HEADER, headers)) + zc.flush()
    return v2_batch(base_offset, payload, ZSTD, records_count=1)


def value_bomb(size: int, byte: int = 0x01, base_offset: int = 0, header: bool = False) -> bytes:
    """One zstd v2 batch of one record whose value is ``size`` copies of ``byte``: 0x01 is valid
    UTF-8 a dump must escape (JSON's ``\\u0001``: six bytes a byte), a few KB on disk;
    ``header``: a null value and one header ``h`` whose value that is."""
    body = bytes([0]) + varint(0) + varint(0) + varint(-1)
    body += varint(-1) + varint(1) + varint(1) + b"h" + varint(size) if header else varint(size)
    tail = b"" if header else varint(0)  # no headers
    record_head = varint(len(body) + size + len(tail)) + body
    zc = zstandard.ZstdCompressor(level=19).compressobj(size=len(record_head) + size + len(tail))
    payload = zc.compress(record_head)
    payload += b"".join(zc.compress(b) for b in _repeated(bytes([byte]), size))
    payload += zc.compress(tail) + zc.flush()
    return v2_batch(base_offset, payload, ZSTD, records_count=1)


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


REPLICA_MARK = struct.pack(">i", 0x7EADBEEF)


def partition_record_bomb(replicas: int, base_offset: int, partition: int = 0) -> bytes:
    """A zstd batch of one metadata record: a PartitionRecord (encoded from Kafka's spec by
    tests/metadata_codec.py) whose replicas are ``replicas`` int32s (4 bytes each
    decompressed: 30 M in 10 KB)."""
    from kraftlog import partition as partition_record
    from metadata_codec import encode

    name, data, version = partition_record(TOPIC_ID, partition, [0x7EADBEEF], 1)
    data["isr"] = [1]
    value = encode(name, data, version)
    at = value.index(uvarint(2) + REPLICA_MARK)  # the compact array of one replica
    head, tail = value[:at] + uvarint(replicas + 1), value[at + 1 + 4 :]
    size = len(head) + 4 * replicas + len(tail)
    body = bytes([0]) + varint(0) + varint(0) + varint(-1) + varint(size)
    record_head = varint(len(body) + size + 1) + body + head
    zc = zstandard.ZstdCompressor(level=19).compressobj(
        size=len(record_head) + 4 * replicas + len(tail) + 1
    )
    one = struct.pack(">i", partition % 100)  # replicas differ from record to record
    payload = zc.compress(record_head)
    payload += b"".join(zc.compress(b) for b in _repeated(one, replicas))
    payload += zc.compress(tail + b"\x00") + zc.flush()  # no headers
    return v2_batch(base_offset, payload, ZSTD, records_count=1)


TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def metadata_log_dir(root: Path, replicas: int, records: int = 1) -> Path:
    """A log dir with a ``__cluster_metadata-0`` whose log is a TopicRecord, then ``records``
    PartitionRecords of ``replicas`` replicas each, one batch each."""
    from kraftlog import MetadataLog, topic, write_metadata_dir

    log = MetadataLog()
    log.records(topic("bombed", TOPIC_ID))
    data = bytes(log.data) + b"".join(
        partition_record_bomb(replicas, 1 + i, i) for i in range(records)
    )
    write_metadata_dir(root, data)
    (root / "meta.properties").write_text(
        f"version=1\nnode.id=1\ncluster.id={TOPIC_ID}\ndirectory.id={TOPIC_ID}\n"
    )
    return root
