"""kdump.format.batch on hand-made bytes: FileLogInputStream.nextBatch's edges (the 17-byte
tail, the 14-byte minimum size, the 49-byte v2 header, a batch past the end, an unknown magic,
max.message.bytes), the header fields of each magic, and the format modules' layering.

Bytes come from batchbytes.py, an encoder written from FORMAT.md, not from kdump's writer.
"""

from __future__ import annotations

import ast
import struct
import zlib
from pathlib import Path

import pytest
from batchbytes import v2_batch
from conftest import FIXTURES

from kdump.errors import CorruptBatchError, UnknownMagicError
from kdump.format import layout
from kdump.format.batch import LegacyRecordBatch, RecordBatch
from kdump.format.walk import iter_records, read_batch

FORMAT = Path(__file__).resolve().parent.parent / "kdump" / "format"


def log_header(offset: int, size: int, magic: int) -> bytes:
    """offset, size, then 4 bytes (epoch or CRC) and the magic byte: what nextBatch reads."""
    return struct.pack(">qiib", offset, size, 0, magic)


def v0_message(offset: int, value: bytes) -> bytes:
    body = struct.pack(">bbi", 0, 0, -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def test_seventeen_bytes_or_fewer_left_end_the_iteration() -> None:
    data = v2_batch(0, b"")
    for cut in range(layout.HEADER_SIZE_UP_TO_MAGIC + 1):
        assert read_batch(data[:cut], 0, cut) is None


@pytest.mark.parametrize("size", [-1, 0, 13])
def test_a_size_below_14_is_corruption_at_its_position(size: int) -> None:
    data = bytes(5) + log_header(7, size, 2) + bytes(40)
    with pytest.raises(CorruptBatchError) as e:
        read_batch(data, 5, len(data), "x.log")
    assert (e.value.path, e.value.position) == ("x.log", 5)
    assert e.value.reason == f"batch size {size} is below the minimum record overhead (14)"


def test_the_smallest_size_14_is_read_for_a_legacy_message() -> None:
    """14 bytes after offset and size: a v0 message with a null key and an empty value."""
    data = v0_message(3, b"")
    assert len(data) == layout.LOG_OVERHEAD + layout.RECORD_OVERHEAD_V0
    batch = read_batch(data, 0, len(data))
    assert isinstance(batch, LegacyRecordBatch)
    assert (batch.offset, batch.size, batch.magic) == (3, len(data), 0)
    assert batch.is_valid(data)
    assert [r.value for r in iter_records(data, batch)] == [b""]


@pytest.mark.parametrize("size", [14, 48])
def test_a_v2_batch_shorter_than_its_header_is_corruption(size: int) -> None:
    data = log_header(0, size, 2) + bytes(size)
    with pytest.raises(CorruptBatchError, match=f"v2 batch size {size} is below the batch header"):
        read_batch(data, 0, len(data))


def test_a_batch_running_past_the_end_ends_the_iteration() -> None:
    data = v2_batch(0, b"\x00" * 10)
    assert read_batch(data, 0, len(data) - 1) is None
    assert isinstance(read_batch(data, 0, len(data)), RecordBatch)


def test_an_unknown_magic_is_its_own_error() -> None:
    data = log_header(9, 40, 3) + bytes(40)
    with pytest.raises(UnknownMagicError, match="unknown magic 3 \\(offset 9\\)"):
        read_batch(data, 0, len(data))


def test_max_message_bytes_is_checked_before_the_end() -> None:
    data = v2_batch(0, b"\x00" * 100)
    size = len(data) - layout.LOG_OVERHEAD
    assert read_batch(data, 0, len(data), max_size=size) is not None
    with pytest.raises(CorruptBatchError, match=f"exceeds the maximum message size {size - 1}"):
        read_batch(data, 0, 20, max_size=size - 1)


def test_v2_header_fields_by_name() -> None:
    data = v2_batch(100, b"", records_count=0, last_offset_delta=4, timestamp=123)
    batch = read_batch(data, 0, len(data))
    assert isinstance(batch, RecordBatch)
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (100, 104, 105)
    assert (batch.base_timestamp, batch.max_timestamp, batch.records_count) == (123, 123, 0)
    assert batch.size == len(data) == layout.RECORD_BATCH_OVERHEAD
    assert batch.is_valid(data)
    assert not batch.is_valid(data[:30] + b"\xff" + data[31:])  # a byte the CRC covers


def test_last_offset_wraps_as_a_java_long() -> None:
    data = v2_batch(2**63 - 1, b"", records_count=0, last_offset_delta=1)
    batch = read_batch(data, 0, len(data))
    assert batch is not None and batch.last_offset == -(2**63)


@pytest.mark.parametrize(
    ("sequence", "increment", "expected"),
    [(0, 5, 5), (2**31 - 1, 1, 0), (2**31 - 3, 5, 2)],
)
def test_sequences_wrap_to_zero(sequence: int, increment: int, expected: int) -> None:
    assert layout.increment_sequence(sequence, increment) == expected
    assert layout.decrement_sequence(expected, increment) == sequence


def _runtime_imports(module: Path) -> set[str]:
    """kdump.format modules ``module`` imports when it runs (not under TYPE_CHECKING)."""
    found = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kdump.format."):
            found.add(node.module.rsplit(".", 1)[1])  # type: ignore[union-attr]
    return found


def test_the_format_modules_import_without_a_circle() -> None:
    """layout <- records <- legacy <- batch <- walk, and no module reaches back up."""
    graph = {p.stem: _runtime_imports(p) for p in FORMAT.glob("*.py")}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, "import circle: " + " -> ".join((*path, name))
        if name not in done:
            for dep in graph.get(name, ()):
                visit(dep, (*path, name))
            done.add(name)

    for name in graph:
        visit(name, ())
    assert graph["layout"] == set()
    assert "batch" not in graph["records"] | graph["legacy"]


@pytest.mark.parametrize("size", [0, 10, 3 << 20])
@pytest.mark.parametrize("members", [1, 2])
def test_gzip_payloads_decompress_a_piece_at_a_time(
    size: int, members: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zlib hands a gzip payload back a piece at a time (so a payload is never held twice,
    issue 27): whole, several members, at the limit; past the limit, or cut, it is refused."""
    import gzip
    import random

    from kdump.errors import CodecError
    from kdump.format import compression
    from kdump.format.compression import decompress

    monkeypatch.setattr(compression, "GUNZIP_PIECE", 4096)
    data = random.Random(size).randbytes(size // 2) + bytes(size - size // 2)
    payload = gzip.compress(data) * members
    assert decompress(1, payload, members * size) == data * members
    if size:
        with pytest.raises(CodecError, match="exceeds the limit"):
            decompress(1, payload, members * size - 1)
    with pytest.raises(CodecError, match="ends before its stream does"):
        decompress(1, payload[:-9])


def _compressed_payloads() -> dict[int, list[bytes]]:
    """Each codec's distinct v2 batch payloads among the fixtures: Kafka's own (gzip, lz4 in
    fixtures/oracle) and an independent encoder's (snappy, zstd in fixtures/generated)."""
    from kdump.storage.local import open_log_file

    found: dict[int, dict[bytes, None]] = {}
    for log in sorted((FIXTURES / "oracle").rglob("*.log")) + sorted(
        (FIXTURES / "generated").rglob("*.log")
    ):
        data = log.read_bytes()
        records = open_log_file(log)
        for batch in records.batches():
            if isinstance(batch, RecordBatch) and batch.compression and records.is_valid(batch):
                start = batch.position + layout.RECORD_BATCH_OVERHEAD
                payload = data[start : batch.position + 12 + batch.batch_length]
                found.setdefault(batch.compression, {})[payload] = None
        records.close()
    return {codec: list(payloads) for codec, payloads in found.items()}


def test_payloads_decompress_the_same_without_cramjam(monkeypatch: pytest.MonkeyPatch) -> None:
    """kdump shipped to Spark executors of another platform than the driver's runs there
    without cramjam's native library (issue 40): pyarrow, which pyspark needs there, gives the
    same bytes for every codec; the size limit holds, and a cut payload is a CodecError."""
    from kdump.errors import CodecError
    from kdump.format import compression
    from kdump.format.compression import decompress

    payloads = _compressed_payloads()
    assert sorted(payloads) == [1, 2, 3, 4]
    expected = {c: [decompress(c, p) for p in ps] for c, ps in payloads.items()}
    monkeypatch.setattr(compression, "_cramjam", lambda: None)
    monkeypatch.setattr(compression, "ARROW_PIECE", 4096)
    for codec, ps in payloads.items():
        assert [decompress(codec, p) for p in ps] == expected[codec], codec
        largest = max(range(len(ps)), key=lambda i: len(expected[codec][i]))
        payload, size = ps[largest], len(expected[codec][largest])
        assert decompress(codec, payload, size) == expected[codec][largest]
        with pytest.raises(CodecError, match="exceeds the limit"):
            decompress(codec, payload, size - 1)
        with pytest.raises(CodecError):
            decompress(codec, payload[: len(payload) // 2])
