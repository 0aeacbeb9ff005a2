"""The corruption matrix over Kafka-written segments: every kind of damage gives the right
finding code and exit code from `kdump verify`, a clean dump error, and writes nothing."""

from __future__ import annotations

import gzip
import hashlib
import shutil
import struct
from pathlib import Path

import cramjam
import pytest
from batchbytes import fix_crc, v2_batch
from clirun import own_handlers
from conftest import ORACLE, offset_index_at, time_index_at

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.commands.verify import exit_code
from kdump.format.batch import LegacyRecordBatch, RecordBatch
from kdump.storage.local import open_log_file

SOURCES = [
    ("plain-0", 258),
    ("gzip-0", 439),
    ("lz4-0", 283),
    ("txn-0", 63),
    ("legacyv1-0", 0),
]
LOG_ERRORS = {
    "LOG_CRC_MISMATCH",
    "LOG_CORRUPT_BATCH",
    "LOG_UNKNOWN_MAGIC",
    "LOG_TRUNCATED_TAIL",
    "LOG_OFFSET_NOT_INCREASING",
    "LOG_OFFSET_BELOW_BASE",
}
V2_FIELDS = [  # (name, byte offset, size) from FORMAT.md §2
    ("base_offset", 0, 8),
    ("batch_length", 8, 4),
    ("partition_leader_epoch", 12, 4),
    ("magic", 16, 1),
    ("crc", 17, 4),
    ("attributes", 21, 2),
    ("last_offset_delta", 23, 4),
    ("base_timestamp", 27, 8),
    ("max_timestamp", 35, 8),
    ("producer_id", 43, 8),
    ("producer_epoch", 51, 2),
    ("base_sequence", 53, 4),
    ("records_count", 57, 4),
]
LEGACY_FIELDS = [
    ("offset", 0, 8),
    ("size", 8, 4),
    ("crc", 12, 4),
    ("magic", 16, 1),
    ("attributes", 17, 1),
    ("timestamp", 18, 8),
]


def copy_segment(tmp: Path, directory: str, base: int) -> Path:
    part = tmp / directory
    part.mkdir()
    for src in (ORACLE / directory).glob(f"{base:020d}.*"):
        shutil.copy(src, part / src.name)
    return part


def digest(part: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(part.iterdir())}


def verify(part: Path, **kw: object) -> tuple[dict[str, list[object]], int]:
    before = digest(part)
    result = verify_paths([str(part)], VerifyOptions(**kw))  # type: ignore[arg-type]
    assert digest(part) == before, "verify wrote something"
    codes: dict[str, list[object]] = {}
    for f in result.findings:
        codes.setdefault(f.code, []).append(f)
    return codes, exit_code(result, "error")


def log_path(part: Path, base: int) -> Path:
    return part / f"{base:020d}.log"


def batches_of(path: Path) -> list[RecordBatch | LegacyRecordBatch]:
    return list(open_log_file(path).batches())


@pytest.fixture(params=SOURCES, ids=[s[0] for s in SOURCES])
def segment(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, int]:
    directory, base = request.param
    return copy_segment(tmp_path, directory, base), base


def test_clean_sources_exit_zero(segment: tuple[Path, int]) -> None:
    part, _ = segment
    codes, code = verify(part, deep=True)
    assert code == 0, codes


def test_truncation_at_every_batch_boundary(segment: tuple[Path, int]) -> None:
    part, base = segment
    log = log_path(part, base)
    original = log.read_bytes()
    batches = batches_of(log)
    for cut_batch in batches[1:]:
        log.write_bytes(original[: cut_batch.position])
        codes, code = verify(part)
        assert not LOG_ERRORS & set(codes), (cut_batch.position, codes)
        new_last = batches[batches.index(cut_batch) - 1].last_offset
        index = offset_index_at(part / f"{base:020d}.index")
        stale = [e for e in index if e.position >= cut_batch.position or e.offset > new_last]
        assert bool(stale) == bool(
            {"INDEX_POSITION_BEYOND_LOG", "INDEX_OFFSET_OUT_OF_RANGE"} & set(codes)
        ), (cut_batch.position, codes)
        times = time_index_at(part / f"{base:020d}.timeindex")
        assert any(t.offset > new_last for t in times) == ("TIMEINDEX_OFFSET_NOT_FOUND" in codes)
        assert code == (2 if stale or "TIMEINDEX_OFFSET_NOT_FOUND" in codes else 0)


def test_truncation_mid_batch_is_a_torn_tail(segment: tuple[Path, int]) -> None:
    part, base = segment
    log = log_path(part, base)
    original = log.read_bytes()
    for b in batches_of(log):
        log.write_bytes(original[: b.position + b.size // 2])
        codes, code = verify(part)
        assert code == 2
        assert [f.position for f in codes["LOG_TRUNCATED_TAIL"]] == [b.position]  # type: ignore[attr-defined]


def _flip(original: bytes, at: int) -> bytes:
    data = bytearray(original)
    data[at] ^= 0x01
    return bytes(data)


def test_bit_flip_in_every_header_field(segment: tuple[Path, int]) -> None:
    part, base = segment
    log = log_path(part, base)
    original = log.read_bytes()
    batches = batches_of(log)
    victim = batches[len(batches) // 2]
    fields = V2_FIELDS if isinstance(victim, RecordBatch) else LEGACY_FIELDS
    for name, offset, size in fields:
        log.write_bytes(_flip(original, victim.position + offset + size - 1))
        codes, code = verify(part)
        if name == "partition_leader_epoch":
            # Outside the CRC and without a leader-epoch-checkpoint: Kafka cannot tell either.
            assert code == 0, codes
            continue
        assert code == 2, (name, codes)
        if name in ("base_offset", "offset"):
            assert "LOG_OFFSET_NOT_INCREASING" in codes, (name, codes)
        else:
            assert LOG_ERRORS & set(codes), (name, codes)
        if name not in ("base_offset", "offset", "batch_length", "size", "magic"):
            positions = [f.position for f in codes["LOG_CRC_MISMATCH"]]  # type: ignore[attr-defined]
            assert victim.position in positions, (name, codes)


def test_zeroed_4k_pages(segment: tuple[Path, int]) -> None:
    part, base = segment
    log = log_path(part, base)
    original = log.read_bytes()
    for page in range(0, len(original), 4096):
        data = bytearray(original)
        data[page : page + 4096] = bytes(len(data[page : page + 4096]))
        log.write_bytes(bytes(data))
        codes, code = verify(part)
        assert code == 2 and LOG_ERRORS & set(codes), (page, codes)


def test_index_entry_past_the_end(segment: tuple[Path, int]) -> None:
    part, base = segment
    index = part / f"{base:020d}.index"
    data = bytearray(index.read_bytes())
    if not data:
        pytest.skip("segment has no index entries")
    size = log_path(part, base).stat().st_size
    struct.pack_into(">i", data, len(data) - 4, size + 8)
    index.write_bytes(bytes(data))
    codes, code = verify(part)
    assert code == 2 and "INDEX_POSITION_BEYOND_LOG" in codes


@pytest.mark.parametrize(
    ("suffix", "code", "entry"), [("index", "INDEX", 8), ("timeindex", "TIMEINDEX", 12)]
)
def test_unaligned_index_sizes(
    segment: tuple[Path, int], suffix: str, code: str, entry: int
) -> None:
    part, base = segment
    path = part / f"{base:020d}.{suffix}"
    original = path.read_bytes()
    for extra in range(1, entry):
        path.write_bytes(original + b"\x01" * extra)
        codes, _ = verify(part)
        assert f"{code}_MISALIGNED" in codes, (extra, codes)


@pytest.mark.parametrize(
    ("suffix", "code", "entry"), [("index", "INDEX", 8), ("timeindex", "TIMEINDEX", 12)]
)
def test_swapped_entries(segment: tuple[Path, int], suffix: str, code: str, entry: int) -> None:
    part, base = segment
    path = part / f"{base:020d}.{suffix}"
    data = path.read_bytes()
    if len(data) < 2 * entry:
        pytest.skip("fewer than two entries")
    path.write_bytes(data[entry : 2 * entry] + data[:entry] + data[2 * entry :])
    codes, result = verify(part)
    assert result == 2 and f"{code}_NOT_MONOTONIC" in codes


COMPRESS = {
    1: gzip.compress,
    2: lambda d: bytes(cramjam.snappy.compress_raw(d)),
    3: lambda d: bytes(cramjam.lz4.compress(d)),
    4: lambda d: bytes(cramjam.zstd.compress(d)),
}


@pytest.mark.parametrize("codec", sorted(COMPRESS), ids=["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("kind", ["garbage", "bomb"])
def test_bad_compressed_payloads(tmp_path: Path, codec: int, kind: str) -> None:
    part = tmp_path / "bomb-0"
    part.mkdir()
    payload = (
        bytes(range(256)) * 8 if kind == "garbage" else COMPRESS[codec](bytes(8 * 1024 * 1024))
    )
    (part / f"{0:020d}.log").write_bytes(v2_batch(0, payload, codec=codec))
    (part / f"{0:020d}.index").write_bytes(b"")
    (part / f"{0:020d}.timeindex").write_bytes(struct.pack(">qi", 1700000000000, 0))
    shallow, code = verify(part)
    assert code == 0, shallow  # the CRC is right: only decoding the records shows it
    codes, code = verify(part, deep=True, max_batch_bytes=1024 * 1024)
    assert code == 2 and "LOG_CORRUPT_RECORD" in codes, codes
    if kind == "bomb":
        assert "exceeds the limit" in codes["LOG_CORRUPT_RECORD"][0].message  # type: ignore[attr-defined]


def test_fix_crc_helper_makes_a_valid_batch(tmp_path: Path) -> None:
    data = bytearray(v2_batch(5, b"\x00" * 10, records_count=0))
    data[60] = 7
    fix_crc(data, 0)
    (tmp_path / "x.log").write_bytes(bytes(data))
    log = open_log_file(tmp_path / "x.log")
    assert all(log.is_valid(b) for b in log.batches())


def run_main(args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    from kdump.cli import main

    monkeypatch.setattr("sys.argv", ["kdump", *args])
    with pytest.raises(SystemExit) as exit_info, own_handlers():
        main()
    return int(exit_info.value.code or 0)


def test_dump_of_damaged_logs_is_one_line_per_problem(
    segment: tuple[Path, int], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    part, base = segment
    log = log_path(part, base)
    original = log.read_bytes()
    for page in range(0, len(original), 4096):
        data = bytearray(original)
        data[page : page + 4096] = bytes(len(data[page : page + 4096]))
        log.write_bytes(bytes(data))
        code = run_main(["--files", str(log), "--deep-iteration"], monkeypatch)
        err = capsys.readouterr().err
        assert code == 2, err
        assert "Traceback" not in err
        assert all(
            line.startswith(("kdump: ", "Non-consecutive", "  ")) for line in err.splitlines()
        )
