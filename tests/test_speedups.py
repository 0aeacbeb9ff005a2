"""The C fast paths (kdump/_speedups.c) against the pure-Python reference, on the same bytes.

Every fixture, every damaged fixture and hypothesis-mutated segments are parsed, dumped and
verified twice: with the C code and with ``pure_python()``, which turns every C path off and
makes any call into the C module fail. Both runs must give the same batches, records, errors
(type, file position, message) and findings.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c as crc32c_package
import pytest
from batchbytes import fix_crc, v2_batch, varint
from conftest import FIXTURES, REPO, fixture_logs
from early import EarlyRun
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from purepython import pure_python

from kdump import speedups
from kdump.checks.gather import _START, GatherState, IndexGather
from kdump.checks.indexes import check_offset_index, check_time_index
from kdump.checks.sink import FindingSink
from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.crc import crc32c_crcmod
from kdump.errors import KdumpError
from kdump.format import layout
from kdump.format.batch import RecordBatch
from kdump.format.index import OffsetIndex
from kdump.format.records import Header, Record, RecordFault, fault_reason
from kdump.format.timeindex import TimeIndex
from kdump.format.walk import (
    COLUMNS,
    BatchRun,
    LogWalk,
    Producers,
    flag_batches,
    iter_batches,
    iter_records,
)
from kdump.log_scan import LogScan
from kdump.producer_state import ProducerStateManager
from kdump.repair.rebuild import IndexConfig, recover_segment

native = speedups.native()
pytestmark = pytest.mark.skipif(native is None, reason="kdump's C code is not built here")

PARTITION_GROUPS = [FIXTURES / name for name in ("oracle", "realfiles", "generated", "corrupt")]


def both(fn: Callable[[], Any]) -> tuple[Any, Any]:
    with pure_python():
        pure = fn()
    return fn(), pure


def outcome(fn: Callable[[], Any]) -> Any:
    """What fn returns, or the KdumpError it raises, as comparable values."""
    try:
        return fn()
    except KdumpError as e:
        return ("error", type(e).__name__, str(e))


def walk_all(buf: bytes | bytearray, **kw: Any) -> list[Any]:
    """Every batch of the walk as a row of its columns, then the stop (error as text). How the
    batches are grouped in runs is left out: the C walk hands legacy stretches to Python."""
    walk = LogWalk(buf, "seg.log", **kw)
    runs = [row for run in walk for row in zip(*run.columns(), strict=True)]
    assert walk.stop is not None
    stop = walk.stop._replace(error=None if walk.stop.error is None else str(walk.stop.error))
    return [runs, stop]


WALKS = [
    {},
    {"run_batches": 2},
    {"until_invalid": True},
    {"check_crc": False, "start": 0, "end": 500},
    {"max_size": 600, "run_batches": 1},
]


def parse_all(buf: bytes | bytearray, deep: bool = True) -> list[Any]:
    """Each batch with its CRC verdict and its records (or the error decoding them), and the
    walk's columns and stop under several settings."""
    out: list[Any] = [walk_all(buf, **kw) for kw in WALKS]

    def walk() -> None:
        for batch in iter_batches(buf, "seg.log"):
            out.append((batch, batch.is_valid(buf), batch.compute_checksum(buf)))
            if deep:
                out.append(outcome(lambda b=batch: list(iter_records(buf, b, "seg.log"))))

    out.append(outcome(walk))
    return out


def recover(buf: bytes | bytearray, interval: int = 4096, base_offset: int = 0) -> Any:
    """LogSegment.recover of one segment: the new indexes, txn index, findings."""
    producers = ProducerStateManager()
    config = IndexConfig(interval)
    recovered = recover_segment(buf, base_offset, "seg.log", config, producers, None)
    return recovered, producers


def verify_all(paths: list[Path], deep: bool) -> tuple[list[Any], dict[str, Any]]:
    result = verify_paths([str(p) for p in paths], VerifyOptions(deep=deep))
    return [f for f in result.findings], result.summary()


# --------------------------------------------------------------------------- CRC-32C


@given(st.binary(max_size=40_000), st.integers(0, 64), st.integers(0, 64))
@settings(max_examples=300, deadline=None)
def test_crc32c_matches_the_package_and_crcmod(data: bytes, cut_front: int, cut_back: int) -> None:
    assert native is not None
    start, end = min(cut_front, len(data)), max(len(data) - cut_back, 0)
    expected = crc32c_package.crc32c(data[start:end])
    assert native.crc32c(data, start, end) == expected
    assert crc32c_crcmod(data[start:end]) == expected


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 383, 384, 385, 1535, 1536, 3072, 12288, 24576])
def test_crc32c_at_every_block_boundary(size: int) -> None:
    assert native is not None
    data = os.urandom(size + 3 * 8192 + 11)
    for length in (size, size + 8192 * 3, size + 4096 * 3 + 1):
        assert native.crc32c(data, 5, 5 + length) == crc32c_package.crc32c(data[5 : 5 + length])


@given(
    st.integers(0, 15),
    st.lists(st.integers(0, 300) | st.integers(0, 3000), min_size=1, max_size=9),
    st.data(),
)
@settings(max_examples=300, deadline=None)
def test_the_walks_three_stream_crcs_at_any_alignment(
    pad: int, payloads: list[int], data: st.DataObject
) -> None:
    """walk_v2 CRCs batches three at a time: long ones each first brought to an 8-byte
    boundary, short ones (a broker's usual) unaligned with their last bytes 4, 2 and 1 at a
    time, side by side. Batches (independent encoder) of any length at any alignment are
    valid, and one byte changed in any batch's CRC'd bytes makes that batch, and only it,
    invalid."""
    assert native is not None
    log = bytearray(bytes(pad))
    starts = []
    for i, size in enumerate(payloads):
        starts.append(len(log))
        log += v2_batch(i, os.urandom(size))
    buf = bytes(log)
    n, columns, _ = native.walk_v2(buf, pad, len(buf), len(buf), 2**31 - 1, 100, True, False)
    valid = memoryview(columns).cast("q")[15 * n : 16 * n]
    assert n == len(payloads) and list(valid) == [1] * n
    hit = data.draw(st.integers(0, n - 1))
    end = starts[hit + 1] if hit + 1 < n else len(log)
    at = data.draw(st.integers(starts[hit] + 21, end - 1))
    log[at] ^= 0x01
    buf = bytes(log)
    n, columns, _ = native.walk_v2(buf, pad, len(buf), len(buf), 2**31 - 1, 100, True, False)
    valid = memoryview(columns).cast("q")[15 * n : 16 * n]
    assert list(valid) == [int(i != hit) for i in range(n)]


@pytest.mark.parametrize("run_batches", [1, 31, 32, 33, 64, 100, 4096])
def test_runs_of_small_batches_have_the_python_walks_columns(run_batches: int) -> None:
    """The C walk gathers header rows in blocks before they go to the columns, and closes the
    columns up where a run ends short of its limit: runs that fill their limit, end between
    blocks, or end short give the columns of the Python walk, a CRC failure included."""
    rng = random.Random(run_batches)
    log, starts = bytearray(), []
    for i in range(100):
        starts.append(len(log))
        log += v2_batch(i, rng.randbytes(rng.randrange(0, 120)))
    log[starts[50] + 40] ^= 0x10  # a CRC'd byte of a batch in the middle: its CRC fails
    c_walk, python_walk = both(lambda: walk_all(bytes(log), run_batches=run_batches))
    assert c_walk == python_walk
    assert sum(row[COLUMNS.index("valid")] == 0 for row in c_walk[0]) == 1


@pytest.mark.parametrize(
    ("start", "end"), [(8, 100), (20, 30), (-3, 10), (0, -2), (-20, -15), (5, 2)]
)
def test_crc32c_reads_slices_as_slicing_does(start: int, end: int) -> None:
    assert native is not None
    data = b"0123456789"
    assert native.crc32c(data, start, end) == crc32c_package.crc32c(data[start:end])


# --------------------------------------------------------------------------- fixtures


@pytest.mark.parametrize("log", fixture_logs())
def test_every_fixture_log_parses_the_same(log: Path) -> None:
    data = log.read_bytes()
    fast, pure = both(lambda: parse_all(data))
    assert fast == pure


@pytest.mark.parametrize("interval", [1, 4096, "first batch"])
@pytest.mark.parametrize("log", fixture_logs())
def test_every_fixture_log_recovers_the_same(log: Path, interval: int | str) -> None:
    data = log.read_bytes()
    if interval == "first batch":  # entries fall exactly on the interval: the > / >= edge
        interval = 12 + struct.unpack_from(">i", data, 8)[0] if len(data) >= 12 else 1
    fast, pure = both(lambda: recover(data, int(interval)))
    assert fast == pure


@pytest.mark.parametrize("deep", [False, True])
@pytest.mark.parametrize("group", PARTITION_GROUPS, ids=lambda p: p.name)
def test_every_fixture_directory_verifies_the_same(group: Path, deep: bool) -> None:
    fast, pure = both(lambda: verify_all([group], deep))
    assert fast == pure
    assert fast[0], "the fixtures hold findings: the comparison is not empty"


# --------------------------------------------------------------------------- mutations

SEGMENT = b"".join(
    v2_batch(
        10 * i,
        b"".join(
            bytes([len(body) * 2]) + body
            for body in (
                b"\x00" + bytes([2 * k]) + bytes([2 * k]) + b"\x06key\x0avalue\x00"
                for k in range(10)
            )
        ),
        records_count=10,
        last_offset_delta=9,
        timestamp=1_700_000_000_000 + i,
    )
    for i in range(6)
)


def test_the_mutation_base_is_a_clean_segment() -> None:
    parsed = parse_all(SEGMENT)[len(WALKS) :]
    assert len(parsed) == 13 and all(valid for _, valid, _ in parsed[0:12:2])
    assert [len(r) for r in parsed[1:12:2]] == [10] * 6


BATCH_SIZE = len(SEGMENT) // 6
changed_byte = st.one_of(
    st.integers(0, len(SEGMENT) - 1),
    st.builds(lambda b, at: b * BATCH_SIZE + at, st.integers(0, 5), st.integers(0, 60)),  # headers
)
mutations = st.lists(st.tuples(changed_byte, st.integers(0, 255)), min_size=1, max_size=6)


def damaged(changes: list[tuple[int, int]], recrc: bool) -> bytearray:
    """SEGMENT with bytes changed; with ``recrc`` the CRCs made right again, as a broker with
    a bug would write them, so the checks after the CRC's see the damage."""
    data = bytearray(SEGMENT)
    for at, value in changes:
        data[at] = value
    if recrc:
        for position in range(0, len(data), len(SEGMENT) // 6):
            (length,) = struct.unpack_from(">i", data, position + 8)
            if length >= 49 and position + 12 + length <= len(data):
                fix_crc(data, position)
    return data


@given(mutations, st.integers(0, len(SEGMENT)), st.booleans())
@settings(max_examples=400, deadline=None)
def test_damaged_segments_parse_the_same(
    changes: list[tuple[int, int]], cut: int, recrc: bool
) -> None:
    data = damaged(changes, recrc)[: max(cut, 40)]
    fast, pure = both(lambda: parse_all(data))
    assert fast == pure
    fast, pure = both(lambda: recover(data, 100))
    assert fast == pure


T0 = 1_700_000_000_000


def entry_lists(entry: st.SearchStrategy[tuple[int, int]]) -> st.SearchStrategy[Any]:
    """Index entries near the batches' own values, in order or not."""
    entries = st.lists(entry, max_size=8)
    return st.one_of(entries, entries.map(sorted))


# (relative offset, position): an offset inside batch b (7 is past the log), at or near its start
offset_entries = entry_lists(
    st.builds(
        lambda b, inner, slip: (10 * b + inner, b * BATCH_SIZE + slip),
        st.integers(-1, 7),
        st.integers(0, 9),
        st.sampled_from([0, 0, 0, 1, -1]),
    )
)
# (timestamp, relative offset): batch b holds offsets 10b..10b+9, max timestamp T0 + b
time_entries = entry_lists(
    st.builds(
        lambda b, inner, slip: (T0 + b + slip, 10 * b + inner),
        st.integers(-1, 7),
        st.integers(0, 9),
        st.sampled_from([0, 0, 0, 1, -1]),
    )
)


@given(mutations, offset_entries, time_entries, st.booleans())
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_damaged_partitions_verify_the_same(
    tmp_path_factory: pytest.TempPathFactory,
    changes: list[tuple[int, int]],
    index: list[tuple[int, int]],
    time_index: list[tuple[int, int]],
    recrc: bool,
) -> None:
    part = tmp_path_factory.mktemp("bench") / "topic-0"
    part.mkdir()
    data = damaged(changes[1:], recrc)  # the first change is left out: some stay clean
    (part / "00000000000000000000.log").write_bytes(data)
    (part / "00000000000000000000.index").write_bytes(
        b"".join(struct.pack(">ii", *entry) for entry in index)
    )
    (part / "00000000000000000000.timeindex").write_bytes(
        b"".join(struct.pack(">qi", *entry) for entry in time_index)
    )
    for deep in (False, True):
        fast, pure = both(lambda deep=deep: verify_all([part], deep))
        assert fast == pure


def patched(field: str, value: int, batch: int = 2) -> bytearray:
    """SEGMENT with one header field of one batch set, the CRC made right again."""
    at, fmt = {
        "base_offset": (0, ">q"),
        "partition_leader_epoch": (12, ">i"),
        "last_offset_delta": (23, ">i"),
        "max_timestamp": (35, ">q"),
        "crc": (17, ">I"),
    }[field]
    data = bytearray(SEGMENT)
    struct.pack_into(fmt, data, batch * BATCH_SIZE + at, value)
    if field != "crc":
        fix_crc(data, batch * BATCH_SIZE)
    return data


@pytest.mark.parametrize(
    "data",
    [
        patched("last_offset_delta", -5),  # last offset below base
        patched("base_offset", 25),  # overlaps the batch before
        patched("base_offset", 21),  # starts inside the batch before
        patched("base_offset", 40),  # a gap
        patched("base_offset", -3, batch=0),  # below the segment's base offset
        patched("base_offset", 2**31 + 5),  # past 2^31-1 from the segment's base offset
        patched("last_offset_delta", 2**31 - 1),
        patched("base_offset", 2**63 - 3),  # last offset past 2^63-1
        patched("partition_leader_epoch", 7),  # a new leader epoch
        patched("crc", 12345),
        patched("max_timestamp", 0),
    ],
    ids=lambda data: hex(hash(bytes(data)) & 0xFFFF),
)
def test_each_case_the_c_scan_hands_back_verifies_the_same(tmp_path: Path, data: bytearray) -> None:
    part = tmp_path / "topic-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(data)
    (part / "00000000000000000000.timeindex").write_bytes(struct.pack(">qi", T0 + 2, 29))
    for deep in (False, True):
        fast, pure = both(lambda deep=deep: verify_all([part], deep))
        assert fast == pure
    assert fast[0] != both(lambda: verify_all([], False))[0]


# --------------------------------------------------------------------------- hand-made records


def record(body: bytes) -> bytes:
    return varint(len(body)) + body


UNUSUAL_BODIES = [
    # two bytes left in the record after its headers
    b"\x00\x00\x00\x01\x01\x00\x00\x00",
    # timestamp delta as a ten-byte varlong: left to the Python decoder
    b"\x00" + bytes([0xFF] * 9) + b"\x01" + b"\x00\x00\x00\x00",
    # offset delta that takes the offset past 2^63-1
    b"\x00\x00" + varint(2**33) + b"\x01\x01\x00",
    # headers, a null header value, a key that is not UTF-8
    b"\x00\x02\x02"
    + varint(1)
    + b"k"
    + varint(-1)
    + varint(2)
    + varint(2)
    + b"\xff\xfe"
    + varint(-1),
    # a header count that runs past the record
    b"\x00\x00\x00\x01\x01" + varint(1000),
    # a negative header key size, a negative header count
    b"\x00\x00\x00\x01\x01" + varint(1) + varint(-3),
    b"\x00\x00\x00\x01\x01" + varint(-2),
    # a key longer than the record
    b"\x00\x00\x00" + varint(50) + b"abc",
    # five-byte varints with bits past 32
    b"\x00\x00" + bytes([0xFF] * 4) + b"\x7f" + b"\x01\x01\x00",
    b"\x00\x00\x00" + bytes([0xFF] * 5) + b"\x01\x01\x00",
    # a header value size that is no varint: five bytes, bits past 32
    b"\x00\x00\x00\x01\x01" + varint(1) + varint(1) + b"k" + bytes([0xFF] * 5) + b"\x01",
]
"""Record bodies at the edges of what the two decoders model: each fault of RecordFault, and
values only the Python decoder models."""


@pytest.mark.parametrize("body", UNUSUAL_BODIES)
@pytest.mark.parametrize("base_offset", [0, 2**63 - 100])
def test_unusual_records_decode_the_same(body: bytes, base_offset: int) -> None:
    payload = record(body) + record(b"\x00\x02\x02\x01\x01\x00")
    data = v2_batch(base_offset, payload, records_count=2, last_offset_delta=1)
    fast, pure = both(lambda: parse_all(data))
    assert fast == pure


@pytest.mark.parametrize("body", UNUSUAL_BODIES)
@pytest.mark.parametrize("at", [0, 5, 13])
def test_unusual_records_in_any_slice_decode_the_same(
    body: bytes, at: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The C decoder gives a batch's records a slice at a time (issue 27); an unusual record in
    any slice (a fault, a value only the Python decoder models) gives the same records, then
    the same error, as the pure Python decoder."""
    from kdump.format import records as records_module

    monkeypatch.setattr(records_module, "SLICE_RECORDS", 4)
    plain = record(b"\x00\x02\x02\x01\x01\x00")
    payload = plain * at + record(body) + plain * (14 - at)
    data = v2_batch(7, payload, records_count=15, last_offset_delta=14)
    fast, pure = both(lambda: parse_all(data))
    assert fast == pure


def test_v2_records_stops_at_its_limits() -> None:
    """At most max_records records a call, and no more once max_bytes of the payload are read
    (one at least), from ``start`` and record ``first``: the next call goes on there."""
    assert native is not None
    plain = record(b"\x00\x02\x02\x01\x01\x00")
    payload = plain * 10
    got = native.v2_records(payload, 10, 0, 0, None, -1, Record, Header, 0, 0, 4, 1 << 20)
    assert got is not None
    records, pos, error = got
    assert (len(records), pos, error) == (4, 4 * len(plain), None)
    got = native.v2_records(payload, 10, 0, 0, None, -1, Record, Header, pos, 4, 100, 1)
    assert got is not None
    records, pos, error = got
    assert (len(records), pos, error) == (1, 5 * len(plain), None)
    got = native.v2_records(payload, 10, 0, 0, None, -1, Record, Header, pos, 5, 100, 1 << 20)
    assert got is not None
    records, pos, error = got
    assert (len(records), pos, error) == (5, len(payload), None)
    got = native.v2_records(payload, 11, 0, 0, None, -1, Record, Header, pos, 10, 100, 1 << 20)
    assert got is not None and got[2] is not None
    assert got[2][:2] == (10, RecordFault.PAST_BATCH)  # record 10 of the batch: past its end
    with pytest.raises(ValueError):
        native.v2_records(payload, 10, 0, 0, None, -1, Record, Header, len(payload) + 1)


def test_v2_records_hands_back_what_it_does_not_model() -> None:
    assert native is not None
    ten_byte = record(b"\x00" + bytes([0xFF] * 9) + b"\x01" + b"\x00\x00\x00\x00")
    assert native.v2_records(ten_byte, 1, 0, 0, None, -1, Record, Header) is None
    plain = record(b"\x00\x02\x02\x01\x01\x00")
    records, pos, error = native.v2_records(plain, 1, 5, 100, None, 7, Record, Header)  # type: ignore[misc]
    assert (records, pos, error) == ([Record(6, 101, None, None, (), 8, 0, 7)], 7, None)


def test_c_functions_reject_wrong_arguments_without_crashing() -> None:
    assert native is not None
    from array import array

    with pytest.raises(TypeError):
        native.offset_index_check(b"\0" * 8, 1, 0, array("i", [0] * 5), 10, 0)
    with pytest.raises(TypeError):
        native.gather(*[array("q", [0])] * 5, array("i"), (0, 0, 0, 0, -1))
    with pytest.raises(TypeError):
        native.walk_v2("text", 0, 0, 10, 10, 10, True, False)
    with pytest.raises(TypeError):
        native.flag_batches(*[array("i", [0])] * 7, 0, False, 0, 0, 0)
    # a used count beyond the index is clamped to its entries
    flagged, multi, first, least_gap = native.offset_index_check(
        b"\0" * 8, 99, 0, array("q"), 10, 0
    )
    assert (flagged, multi, first) == ([0], 0, -1)  # no batch at position 0: checked in Python
    assert least_gap == 0  # the one entry's position, from byte 0
    assert native.time_index_check(b"\0" * 12, -4, 0, array("q")) == []


# --------------------------------------------------------------------------- pure Python


PURE_PYTHON_ENV = {**os.environ, "KDUMP_PURE_PYTHON": "1"}
PURE_PYTHON_MODULES = [
    "tests/test_format_oracle.py",
    "tests/test_format_generated.py",
    "tests/test_golden.py",
    "tests/test_corruption_matrix.py",
    "tests/test_verify.py",
    "tests/test_repair_oracle.py",
    "tests/test_repair_recheck.py",
    "tests/test_lookup.py",
]
PURE_PYTHON_RUN = EarlyRun(
    [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *PURE_PYTHON_MODULES],
    REPO,
    PURE_PYTHON_ENV,
)


@PURE_PYTHON_RUN.starts
def test_the_suite_passes_without_the_c_code() -> None:
    """KDUMP_PURE_PYTHON=1 turns the C paths off: the parsing, verify and repair tests pass.
    The run starts when the session begins, beside the other tests (tests/early.py)."""
    check = "import kdump.speedups as s; assert s.native() is None and not s.built(); print('ok')"
    probe = subprocess.run(
        [sys.executable, "-c", check], env=PURE_PYTHON_ENV, capture_output=True, text=True
    )
    assert probe.returncode == 0 and "ok" in probe.stdout, probe.stderr
    code, output = PURE_PYTHON_RUN.result()
    assert code == 0, output[-5000:]


@pytest.mark.parametrize("max_size", [10**30, -(10**30), 2**31, -1, 0, 100])
def test_any_max_message_size_iterates_the_same(max_size: int) -> None:
    """Limits past int64 reach the C walk clamped to what an int32 length can meet."""
    fast, pure = both(lambda: outcome(lambda: list(iter_batches(SEGMENT, "s", max_size=max_size))))
    assert fast == pure


INT64_MAX = 2**63 - 1
RECORDS = SEGMENT[61 : len(SEGMENT) // 6]  # the ten records of one batch of SEGMENT


@pytest.mark.parametrize(
    ("name", "first"),
    [
        ("99999999999999999999", 0),  # a base offset no int64 holds
        (f"{INT64_MAX - 25:020d}", INT64_MAX - 25),  # the third batch's last offset wraps
    ],
)
def test_offsets_at_the_end_of_int64_verify_and_recover_the_same(
    tmp_path: Path, name: str, first: int
) -> None:
    part = tmp_path / "topic-0"
    part.mkdir()
    data = b"".join(
        v2_batch(first + 10 * i, RECORDS, records_count=10, last_offset_delta=9) for i in range(3)
    )
    (part / f"{name}.log").write_bytes(data)
    (part / f"{name}.index").write_bytes(struct.pack(">ii", 19, len(data) // 3))
    (part / f"{name}.timeindex").write_bytes(struct.pack(">qi", T0, 19))
    for deep in (False, True):
        fast, pure = both(lambda deep=deep: verify_all([part], deep))
        assert fast == pure
    for interval in (1, 10**30, -(10**30)):
        fast, pure = both(lambda i=interval: recover(data, i, int(name)))
        assert fast == pure


def test_index_entries_past_int64_are_checked_the_same() -> None:
    """base + relative offset past 2^63-1: Python's integers do not wrap, the C walks stop."""
    from array import array

    base = INT64_MAX - 5
    offset_index = OffsetIndex(struct.pack(">iiii", 10, 0, 1, 0), base, "i")
    time_index = TimeIndex(struct.pack(">qiqi", 5, 10, 7, 0), base, "t")
    one = {"position": 0, "base_offset": base, "last_offset": base + 10 - 2**64, "size": 100}
    one["max_timestamp"] = 7
    run = BatchRun(1, [array("q", [one.get(name, 0)]) for name in COLUMNS])

    def check() -> list[Any]:
        scan = LogScan("seg.log", base, 100, gather=IndexGather(offset_index, time_index))
        scan.take(run)
        scan.valid_bytes = 100
        sink, options = FindingSink(50), VerifyOptions()
        check_offset_index(offset_index, scan, sink, options, False)
        check_time_index(time_index, scan, sink, options, False)
        return sink.findings

    fast, pure = both(check)
    assert fast == pure
    assert {f.code for f in fast} >= {"INDEX_OFFSET_OUT_OF_RANGE", "TIMEINDEX_OFFSET_NOT_FOUND"}


@st.composite
def gather_runs(draw: st.DrawFn) -> tuple[list[BatchRun], list[int], list[int]]:
    """Runs of batches whose last offsets and max timestamps may fall as well as rise (a
    damaged log), and the keys an index names: positions of batches and between them,
    offsets anywhere, some past the last batch."""
    from array import array

    count = draw(st.integers(1, 80))
    gaps = draw(st.lists(st.integers(1, 200), min_size=count, max_size=count))
    steps = draw(st.lists(st.integers(-3, 6), min_size=count, max_size=count))
    stamps = draw(st.lists(st.integers(-1, 50), min_size=count, max_size=count))
    positions, lasts, position = [], [], 0
    for gap, step in zip(gaps, steps, strict=True):
        positions.append(position)
        lasts.append((lasts[-1] if lasts else 0) + step)
        position += gap
    cuts = sorted(draw(st.sets(st.integers(1, count - 1), max_size=3))) if count > 1 else []
    runs = []
    for lo, hi in zip([0, *cuts], [*cuts, count], strict=True):
        values = {
            "position": positions[lo:hi],
            "base_offset": [last - 2 for last in lasts[lo:hi]],
            "last_offset": lasts[lo:hi],
            "max_timestamp": stamps[lo:hi],
        }
        runs.append(
            BatchRun(hi - lo, [array("q", values.get(name, [0] * (hi - lo))) for name in COLUMNS])
        )
    wanted_positions = draw(st.sets(st.sampled_from(positions) | st.integers(0, position + 5)))
    wanted_offsets = draw(st.sets(st.integers(min(lasts) - 3, max(lasts) + 3)))
    return runs, sorted(wanted_positions), sorted(wanted_offsets)


@given(gather_runs())
@settings(max_examples=300, deadline=None)
def test_the_index_gather_gives_the_python_rows(
    case: tuple[list[BatchRun], list[int], list[int]],
) -> None:
    """The rows and running state of the C gather are the Python reference's, fed the same
    runs, whatever the offsets and timestamps do."""
    from array import array

    runs, positions, offsets = case

    def gathered() -> tuple[Any, ...]:
        gather = IndexGather(None, None)
        gather.wanted_positions, gather.wanted_offsets = array("q", positions), array("q", offsets)
        gather._position_room = memoryview(array("q", [0]) * (5 * len(positions)))
        gather._offset_room = memoryview(array("q", [0]) * (5 * len(offsets)))
        for run in runs:
            gather.feed(run)
        state = {name: getattr(gather._state, name) for name in GatherState._fields}
        return state, gather.position_rows.tolist(), gather.offset_rows.tolist()

    fast, pure = both(gathered)
    assert fast == pure


def test_the_c_gather_state_is_named_as_the_python_one() -> None:
    """The C gather reads its state by the Python reference's names and hands back its own
    struct sequence of the same names; a state without one of them is refused, naming it."""
    from array import array

    assert native is not None
    assert native.GatherState.__match_args__ == GatherState._fields
    columns = [array("q", [0])] * 4 + [array("q")] * 2
    rows = [memoryview(array("q")), memoryview(array("q"))]
    out = native.gather(*columns, *rows, _START)
    assert isinstance(out, native.GatherState)
    assert (out.has_prev, out.prev_last, out.rising) == (1, 0, 1)
    assert native.gather(*columns, *rows, out).rising == 0  # 0 after 0 does not rise
    with pytest.raises(TypeError, match="cursor_p"):
        native.gather(*columns, *rows, tuple(_START))  # by position only: refused


def test_walk_v2_bounds_its_columns_whatever_the_limit() -> None:
    assert native is not None
    batch = v2_batch(0, RECORDS, records_count=10, last_offset_delta=9)
    for limit in (2**59, 2**62, -5):
        n, data, pos = native.walk_v2(batch, 0, len(batch), len(batch), 2**31 - 1, limit, 1, 0)
        assert (n, pos) == ((1, len(batch)) if limit > 0 else (0, 0))
        assert len(data) == n * 8 * len(COLUMNS)
    with pytest.raises(TypeError):  # columns must be aligned int64 arrays
        native.index_points(memoryview(bytes(17))[1:9].cast("q"), b"", b"", 1, 0, 0, 0)


def test_the_c_module_was_built_from_these_columns() -> None:
    assert native is not None
    assert tuple(native.WALK_COLUMNS) == COLUMNS


def test_the_c_module_lays_out_bytes_as_layout_py() -> None:
    """The offsets and sizes the C code hard-codes are kdump.format.layout's."""
    assert native is not None
    assert native.LAYOUT == layout.LAYOUT
    assert RecordBatch._fields == ("position", *(name for name, _ in layout.V2_FIELDS))
    assert tuple(native.RECORD_FIELDS) == Record._fields


def test_every_fault_the_c_decoder_reports_is_worded_by_python() -> None:
    """The C decoder reports a RecordFault code; records.py words it. Each fault but OK and
    UNMODELLED is reached by one of UNUSUAL_BODIES or by a record longer than the batch."""
    assert native is not None
    assert tuple(native.RECORD_FAULTS) == tuple(RecordFault.__members__)
    reached = set()
    too_long = varint(100) + b"\x00\x00\x00\x01\x01\x00"  # a length past the batch
    two_headers = record(b"\x00\x00\x00\x01\x01" + varint(2) + (varint(0) + varint(-1)) * 2)
    for payload in [*map(record, UNUSUAL_BODIES), too_long, two_headers]:
        # one header a record at most: a record of two is past it (TOO_MANY_HEADERS)
        decoded = native.v2_records(payload, 2, 0, 0, None, -1, Record, Header, 0, 0, 9, 1 << 20, 1)
        if decoded is not None and decoded[2] is not None:
            _, fault, detail, detail2 = decoded[2]
            reached.add(RecordFault(fault))
            assert fault_reason(fault, detail, detail2)
    worded = set(RecordFault) - {RecordFault.OK, RecordFault.UNMODELLED}
    assert reached == worded


# --------------------------------------------------------------------------- software CRC


def test_the_software_crc_is_the_hardware_crc() -> None:
    """What a processor without CRC instructions runs: the C walk with the table-driven CRC."""
    data = os.urandom(100_000)
    with speedups.software_crc():
        assert not native.hardware_crc()
        soft = [native.crc32c(data, 0, n) for n in (0, 1, 9, 385, 24577, 100_000)]
    assert soft == [crc32c_package.crc32c(data[:n]) for n in (0, 1, 9, 385, 24577, 100_000)]


@pytest.mark.parametrize("group", PARTITION_GROUPS, ids=lambda p: p.name)
def test_every_fixture_directory_verifies_the_same_with_the_software_crc(group: Path) -> None:
    with speedups.software_crc():
        soft = verify_all([group], False)
    assert soft == verify_all([group], False)


# --------------------------------------------------------------------------- timestamp_range


@given(
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40),
    st.one_of(st.none(), st.integers(-2, 45)),
)
@settings(max_examples=300, deadline=None)
def test_timestamp_range_is_min_and_max(stamps: list[int], stop: int | None) -> None:
    """BatchRun.timestamp_range (C column_range) is min and max of the column's first ``stop``
    values, computed here by hand; None where there are none."""
    from array import array

    columns = [
        array("q", stamps if name == "max_timestamp" else [0] * len(stamps)) for name in COLUMNS
    ]
    run = BatchRun(len(stamps), columns)
    upto = len(stamps) if stop is None else max(0, min(stop, len(stamps)))
    want = (min(stamps[:upto]), max(stamps[:upto])) if upto else None
    fast, pure = both(lambda: run.timestamp_range(stop))
    assert fast == pure == want


@given(st.lists(st.integers(-(2**15), 2**15 - 1), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_a_scan_counts_transactional_and_delete_horizon_batches(attributes: list[int]) -> None:
    """LogScan.take counts a run's transactional (or control) batches and those with a delete
    horizon (C count_masked over the attributes column, in Python its low bytes translated),
    as counted here by hand, whatever the other attribute bits and the sign."""
    from array import array

    columns = [
        array("q", attributes if name == "attributes" else range(len(attributes)))
        for name in COLUMNS
    ]
    run = BatchRun(len(attributes), columns)

    def counted() -> tuple[int, int]:
        scan = LogScan("x.log", 0, 0)
        scan.take(run)
        return scan.transactional_batches, scan.delete_horizon_batches

    want = (sum(1 for a in attributes if a & 0x30), sum(1 for a in attributes if a & 0x40))
    fast, pure = both(counted)
    assert fast == pure == want


# --------------------------------------------------------------------------- flag_batches

small = st.integers(-3, 40)
row = st.tuples(
    small,  # base offset
    st.integers(-2, 12),  # last offset delta
    st.sampled_from([0, 0, 1, 5]),  # partition leader epoch
    st.sampled_from([2, 2, 1]),  # magic
    st.sampled_from([1, 1, 0]),  # valid
    st.sampled_from([-1, 7]),  # producer id
    st.sampled_from([0, 0x10, 0x20]),  # attributes: plain, transactional, control
)


@given(st.lists(row, max_size=30), st.sampled_from(list(Producers)), st.booleans(), small)
@settings(max_examples=300, deadline=None)
def test_flag_batches_flags_the_same(
    rows: list[tuple[int, ...]], producers: Producers, has_prev: bool, prev_last: int
) -> None:
    columns: dict[str, list[int]] = {name: [0] * len(rows) for name in COLUMNS}
    for i, (base, delta, epoch, magic, valid, pid, attributes) in enumerate(rows):
        columns["base_offset"][i], columns["last_offset"][i] = base, base + delta
        columns["partition_leader_epoch"][i], columns["magic"][i] = epoch, magic
        columns["valid"][i], columns["producer_id"][i] = valid, pid
        columns["attributes"][i] = attributes
    from array import array

    run = BatchRun(len(rows), [array("q", columns[name]) for name in COLUMNS])
    fast, pure = both(lambda: flag_batches(run, 2, has_prev, prev_last, 0, producers))
    assert fast == pure


def test_a_run_held_keeps_its_columns_while_later_runs_reuse_blocks() -> None:
    """walk_v2 keeps the last run's freed block for the next run: a block still referenced
    (a run a consumer holds) is never handed out again."""
    assert native is not None
    ours = b"".join(v2_batch(i, bytes([i % 256]) * 40) for i in range(300))
    other = b"".join(v2_batch(7 + i, bytes([255 - i % 256]) * 40) for i in range(300))
    held = native.walk_v2(ours, 0, len(ours), len(ours), 2**31 - 1, 300, True, False)
    kept = bytes(held.columns)
    for _ in range(4):  # each run's block freed and taken by the next
        native.walk_v2(other, 0, len(other), len(other), 2**31 - 1, 300, True, False)
    assert bytes(held.columns) == kept
    again = native.walk_v2(ours, 0, len(ours), len(ours), 2**31 - 1, 300, True, False)
    assert again == held and again.columns is not held.columns


@given(
    st.lists(
        st.tuples(st.sampled_from([0, 0x10, 0x20, 0x30, 0x40, 0x50]), st.integers(-5, 2**40)),
        min_size=0,
        max_size=60,
    ),
    st.integers(1, 70),
    st.one_of(st.none(), st.integers(0, 59)),
    st.booleans(),
)
@settings(max_examples=150, deadline=None)
def test_a_run_s_facts_are_those_of_its_columns(
    shapes: list[tuple[int, int]], limit: int, flip: int | None, until_invalid: bool
) -> None:
    """What walk_v2 counts during its header pass (RunColumns.facts) is what its columns say,
    for full and short runs and for a run cut before a failed CRC: the least and greatest max
    timestamp, transactional or control batches, batches with a delete horizon, producer
    batches, whether each batch follows the one before, failed CRCs, records counted."""
    assert native is not None
    batches = [
        v2_batch(i + (i % 5 == 4), b"r" * (i % 7), attributes=a, max_timestamp=ts,
                 producer_id=i % 3 - 1)
        for i, (a, ts) in enumerate(shapes)
    ]  # fmt: skip
    log = bytearray(b"".join(batches))
    if flip is not None and flip < len(batches):
        log[sum(map(len, batches[:flip])) + len(batches[flip]) - 1] ^= 1  # a payload byte
    run = native.walk_v2(bytes(log), 0, len(log), len(log), 2**31 - 1, limit, True, until_invalid)
    view = memoryview(run.columns).cast("q")
    room = len(view) // len(COLUMNS)
    column = {name: list(view[k * room : k * room + run.n]) for k, name in enumerate(COLUMNS)}
    if run.n == 0:
        assert run.columns.facts is None
        return
    bases, lasts, epochs = (
        column["base_offset"],
        column["last_offset"],
        column["partition_leader_epoch"],
    )
    assert run.columns.facts == (
        min(column["max_timestamp"]),
        max(column["max_timestamp"]),
        sum(1 for a in column["attributes"] if a & 0x30),
        sum(1 for a in column["attributes"] if a & 0x40),
        sum(1 for p in column["producer_id"] if p >= 0),
        all(last >= base for base, last in zip(bases, lasts, strict=True))
        and all(
            bases[i] == lasts[i - 1] + 1 and epochs[i] == epochs[i - 1] for i in range(1, run.n)
        ),
        column["valid"].count(0),
        sum(c for c in column["records_count"] if c > 0),
    )
