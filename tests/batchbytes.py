"""A tiny test-only writer of magic v2 batch bytes, written from FORMAT.md §2, for corruption
tests that need a batch with an arbitrary (garbage, oversized) payload and a correct CRC."""

from __future__ import annotations

import struct

import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")


def v2_batch(
    base_offset: int,
    payload: bytes,
    codec: int = 0,
    records_count: int = 1,
    last_offset_delta: int = 0,
    timestamp: int = 1700000000000,
    *,
    attributes: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    max_timestamp: int | None = None,
) -> bytes:
    """Header fields around ``payload`` (the records, compressed or not), CRC-32C fixed;
    ``attributes`` beside the codec (transactional 0x10, control 0x20)."""
    length = HEADER.size - 12 + len(payload)
    header = bytearray(
        HEADER.pack(
            base_offset,
            length,
            0,
            2,
            0,
            codec | attributes,
            last_offset_delta,
            timestamp,
            timestamp if max_timestamp is None else max_timestamp,
            producer_id,
            producer_epoch,
            -1,
            records_count,
        )
    )
    body = bytes(header[21:]) + payload
    struct.pack_into(">I", header, 17, crc32c.crc32c(body))
    return bytes(header) + payload


def fix_crc(buf: bytearray, position: int) -> None:
    """Recompute the CRC-32C of the v2 batch at ``position`` after patching its bytes."""
    (length,) = struct.unpack_from(">i", buf, position + 8)
    end = position + 12 + length
    struct.pack_into(">I", buf, position + 17, crc32c.crc32c(bytes(buf[position + 21 : end])))


def varint(value: int) -> bytes:
    """A zig-zag varint (or varlong), as DefaultRecord writes its lengths and deltas."""
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append(raw & 0x7F | 0x80)
        raw >>= 7
    return bytes(out) + bytes([raw])
