"""kdump.format.records: the zig-zag varint and a magic v2 record, from bytes encoded here and
in batchbytes.py (written from FORMAT.md), not by kdump's writer."""

from __future__ import annotations

import pytest
from batchbytes import v2_batch, varint

from kdump.errors import Malformed
from kdump.format.records import iter_v2_records, zigzag_varint
from kdump.format.walk import read_batch


@pytest.mark.parametrize("value", [0, -1, 1, 63, -64, 64, 300, -(1 << 31), (1 << 31) - 1])
def test_zigzag_varint_reads_what_was_written(value: int) -> None:
    data = b"\xaa" + varint(value) + b"\xbb"
    assert zigzag_varint(data, 1, 5) == (value, len(data) - 1)


def test_the_short_varint_table_is_zigzag() -> None:
    """The decoder's table of one- and two-byte varints, built by slices, is the zig-zag
    decoding of every 14-bit payload (made by the first Python decode, not at import)."""
    from kdump.format.records import _zigzag

    _ZIGZAG = _zigzag()
    assert _zigzag() is _ZIGZAG
    assert tuple((raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)) == _ZIGZAG
    for value in (0, -1, 1, -8192, 8191):
        data = varint(value)
        payload = data[0] & 0x7F | (data[1] << 7 if len(data) > 1 else 0)
        assert _ZIGZAG[payload] == value


def test_zigzag_varint_limits() -> None:
    with pytest.raises(Malformed):
        zigzag_varint(b"\x80\x80\x80\x80\x80\x01", 0, 5)  # six bytes for an int
    assert zigzag_varint(b"\x80\x80\x80\x80\x80\x01", 0, 10)[0] == 1 << 34
    with pytest.raises(IndexError):
        zigzag_varint(b"\x80", 0, 5)  # runs past the data


def record(offset_delta: int, key: bytes | None, value: bytes, headers: int = 0) -> bytes:
    """DefaultRecord: length, attributes, timestamp delta, offset delta, key, value, headers."""
    key_part = varint(-1) if key is None else varint(len(key)) + key
    body = (
        b"\x00"
        + varint(5)
        + varint(offset_delta)
        + key_part
        + varint(len(value))
        + value
        + varint(headers)
    )
    return varint(len(body)) + body


def test_a_v2_record_decodes_with_absolute_offset_and_timestamp() -> None:
    payload = record(0, b"k", b"value") + record(1, None, b"")
    buf = v2_batch(40, payload, records_count=2, last_offset_delta=1, timestamp=1000)
    batch = read_batch(buf, 0, len(buf))
    first, second = list(iter_v2_records(buf, batch))
    assert (first.offset, first.timestamp, first.key, first.value) == (40, 1005, b"k", b"value")
    assert (second.offset, second.key, second.value, second.headers) == (41, None, b"", ())
    assert first.size_in_bytes == len(record(0, b"k", b"value"))
