"""Legacy (magic v0/v1) compressed wrappers as other clients write them, read as Kafka reads them.

AbstractLegacyRecordBatch.DeepRecordsIterator (FORMAT.md §3) has three rules kdump once missed:
- a v1 wrapper whose own offset is 0 keeps its inner offsets 0..n-1 (some librdkafka versions
  produce so, and kafka-python's LegacyRecordBatchBuilder writes the wrapper at offset 0 too);
- a nonzero v1 wrapper offset below the last inner (relative) offset is an invalid batch;
- zstd may not wrap v0/v1 messages ("Invalid wrapper compressionType ...").

The bytes come from kafka-python's builder (another client's writer, no code shared with kdump)
and, for zstd, which that builder refuses for v0/v1, from the ``zstandard`` package around the
builder's uncompressed message set, with the wrapper's CRC-32 from zlib.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
import zstandard
from clirun import run_kdump
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kdump.checks.options import VerifyOptions
from kdump.checks.verify import verify_paths

GZIP, ZSTD = 1, 4
T0 = 1_700_000_000_000
LOG = "00000000000000000000.log"


def kafka_python_wrapper(codec: int, values: list[bytes]) -> bytes:
    """A v1 compressed message set as kafka-python builds it: relative inner offsets 0..n-1,
    the wrapper itself at offset 0 (the builder's "set by broker" placeholder)."""
    builder = LegacyRecordBatchBuilder(1, codec, 1 << 20)
    for i, value in enumerate(values):
        builder.append(i, T0 + i, None, value)
    message = bytearray(builder.build())
    if codec:
        # The builder leaves the wrapper's timestamp 0; a producer stamps the largest inner one.
        struct.pack_into(">q", message, 18, T0 + len(values) - 1)
        struct.pack_into(">I", message, 12, zlib.crc32(bytes(message[16:])))
    return bytes(message)


def with_wrapper_offset(message: bytes, offset: int) -> bytes:
    """The offset field is outside the CRC: patching it leaves the message valid."""
    return struct.pack(">q", offset) + message[8:]


def zstd_wrapper(values: list[bytes], offset: int) -> bytes:
    """A v1 wrapper with attributes 4 (zstd), built by hand around kafka-python's inner set."""
    inner = kafka_python_wrapper(0, [values[0]])
    inner_set = b"".join(
        with_wrapper_offset(kafka_python_wrapper(0, [v]), i) for i, v in enumerate(values)
    )
    assert inner_set.startswith(inner)
    value = zstandard.ZstdCompressor().compress(inner_set)
    body = struct.pack(">bbqi", 1, ZSTD, T0 + len(values) - 1, -1)
    body += struct.pack(">i", len(value)) + value
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def write_log(tmp_path: Path, data: bytes) -> Path:
    part = tmp_path / "legacy-0"
    part.mkdir()
    (part / LOG).write_bytes(data)
    return part / LOG


def record_offsets(stdout: str) -> list[int]:
    return [int(line.split()[2]) for line in stdout.splitlines() if line.startswith("| offset:")]


def verify_codes(part: Path, deep: bool) -> dict[str, list[str]]:
    """The .log findings (a lone .log also gets INDEX_MISSING, which is not the point here)."""
    result = verify_paths([str(part)], VerifyOptions(deep=deep))
    codes: dict[str, list[str]] = {}
    for f in result.findings:
        if f.code.startswith("LOG_"):
            codes.setdefault(f.code, []).append(f.message)
    return codes


def test_librdkafka_style_wrapper_at_offset_0_keeps_inner_offsets(tmp_path: Path) -> None:
    log = write_log(tmp_path, kafka_python_wrapper(GZIP, [b"a", b"b", b"c"]))
    ran = run_kdump(["--files", str(log), "--deep-iteration"])
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert ran.stdout.splitlines()[2].startswith("offset: 0 position: 0 CreateTime: ")
    assert record_offsets(ran.stdout) == [0, 1, 2]  # kdump printed -2, -1, 0 before
    for deep in (False, True):
        codes = verify_codes(log.parent, deep)
        assert codes == {}, codes


def test_wrapper_offset_holds_the_last_inner_offset(tmp_path: Path) -> None:
    log = write_log(tmp_path, with_wrapper_offset(kafka_python_wrapper(GZIP, [b"a", b"b"]), 5))
    (tmp_path / "legacy-0" / LOG).rename(tmp_path / "legacy-0" / "00000000000000000004.log")
    ran = run_kdump(["--files", str(log.parent / "00000000000000000004.log"), "--deep-iteration"])
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert record_offsets(ran.stdout) == [4, 5]


def test_wrapper_offset_below_its_last_inner_offset_is_refused(tmp_path: Path) -> None:
    log = write_log(
        tmp_path, with_wrapper_offset(kafka_python_wrapper(GZIP, [b"a", b"b", b"c"]), 1)
    )
    ran = run_kdump(["--files", str(log), "--deep-iteration"])
    lines = ran.stdout.splitlines()
    assert lines[2].startswith("offset: 1 position: 0 ") and len(lines) == 3
    assert ran.stderr == (
        f"kdump: {log}:0: Found invalid wrapper offset in compressed v1 message set, wrapper "
        "offset '1' is less than the last inner message offset '2' and it is not zero.\n"
    )
    assert ran.exit_code == 2
    shallow = run_kdump(["--files", str(log)])  # Kafka's shallow dump does not decompress
    assert (shallow.exit_code, shallow.stderr) == (0, "")
    for deep in (False, True):
        codes = verify_codes(log.parent, deep)
        assert list(codes) == ["LOG_LEGACY_WRAPPER_INVALID"], codes
        assert "wrapper offset '1' is less than" in codes["LOG_LEGACY_WRAPPER_INVALID"][0]


@pytest.mark.parametrize("offset", [0, 2])
def test_zstd_inside_a_v1_message_is_refused_as_kafka_refuses_it(
    tmp_path: Path, offset: int
) -> None:
    log = write_log(tmp_path, zstd_wrapper([b"x", b"y", b"z"], offset))
    shallow = run_kdump(["--files", str(log)])
    assert shallow.exit_code == 0
    assert shallow.stdout.splitlines()[2].endswith(
        "magic: 1 compresscodec: zstd crc: {} isvalid: true".format(
            struct.unpack_from(">I", log.read_bytes(), 12)[0]
        )
    )
    ran = run_kdump(["--files", str(log), "--print-data-log"])
    assert "payload" not in ran.stdout  # decoded silently before
    assert ran.stderr == (
        f"kdump: {log}:0: Invalid wrapper compressionType found in legacy deep record iterator 1\n"
    )
    assert ran.exit_code == 2
    for deep in (False, True):
        codes = verify_codes(log.parent, deep)
        assert list(codes) == ["LOG_LEGACY_WRAPPER_INVALID"], codes
        findings = verify_paths([str(log.parent)], VerifyOptions(deep=deep)).findings
        finding = next(f for f in findings if f.code == "LOG_LEGACY_WRAPPER_INVALID")
        assert (finding.severity.value, finding.position, finding.fix) == ("error", 0, None)


def _message(magic: int, offset: int, key: bytes | None, value: bytes | None) -> bytes:
    """A v0/v1 message as LegacyRecord writes it (independent of kdump's reader)."""
    head = bytes([magic, 0]) + (struct.pack(">q", 1700000000000) if magic else b"")
    body = head
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1]),
            st.integers(-(2**63), 2**63 - 1),
            st.one_of(st.none(), st.binary(max_size=6)),
            st.one_of(st.none(), st.binary(max_size=6)),
        ),
        max_size=5,
    ),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
    st.integers(0, 400),
)
@settings(max_examples=400, deadline=None)
def test_the_quick_walk_of_inner_messages_agrees_with_the_checked_one(
    messages: list[tuple[int, int, bytes | None, bytes | None]],
    flips: list[tuple[int, int]],
    cut: int,
) -> None:
    """_well_formed (no object per message: a wrapper of 7.8 M, issue 27) gives the first and
    last offsets _inner_messages gives, and gives up wherever that one would raise."""
    from kdump.errors import CorruptRecordError
    from kdump.format import legacy

    data = bytearray(b"".join(_message(*m) for m in messages))
    for at, byte in flips:
        if at < len(data):
            data[at] = byte
    data = data[: len(data) - min(cut, len(data)) // 50]
    quick = legacy._well_formed(bytes(data))
    try:
        checked = [m.offset for m in legacy._inner_messages(bytes(data), "w", 0, fields=False)]
    except CorruptRecordError:
        assert quick is None
    else:
        assert quick == (checked[0], checked[-1])
