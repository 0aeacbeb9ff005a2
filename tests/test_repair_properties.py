"""Properties of rebuild-index and recover on random logs (batches built by kafka-python, an
independent encoder) and on the Kafka-written fixture logs cut at random batch boundaries: the
rebuilt indexes pass every verify check, `kdump verify` of the partition exits 0, and recover
keeps every byte it cuts."""

from __future__ import annotations

import struct
import tempfile
from array import array
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from repair_support import batch_positions
from test_properties import GZIP, NONE, Rec, build_v2

from kdump import speedups
from kdump.checks.options import VerifyOptions
from kdump.checks.segment import check_segment
from kdump.format.names import segment_file_name
from kdump.repair.rebuild import (
    IndexConfig,
    _OffsetIndexBuilder,
    _TimeIndexBuilder,
    recover_segment,
)
from kdump.segment import local_segment

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
T0 = 1_700_000_000_000
INTERVALS = st.sampled_from([0, 1, 100, 700, 1024, 4096])


@st.composite
def segment_logs(draw: st.DrawFn) -> tuple[int, bytes]:
    """(base offset, .log bytes): v2 batches at increasing offsets, timestamps that may go
    back, gaps as compaction leaves them, some compressed, some LogAppendTime."""
    base = draw(st.integers(0, 2**40))
    offset = base + draw(st.integers(0, 3))
    log = b""
    for _ in range(draw(st.integers(1, 30))):
        count = draw(st.integers(1, 6))
        deltas = [0]
        for _ in range(count - 1):
            deltas.append(deltas[-1] + draw(st.integers(1, 2)))
        size = draw(st.integers(0, 400))
        records = [
            Rec(T0 + draw(st.integers(-5000, 5000)), b"key", b"v" * size) for _ in range(count)
        ]
        built = build_v2(
            records,
            deltas,
            codec=draw(st.sampled_from([NONE, NONE, GZIP])),
            base_offset=offset,
            leader_epoch=0,
            producer_id=-1,
            producer_epoch=-1,
            base_sequence=-1,
            transactional=False,
            log_append_time=draw(st.one_of(st.none(), st.just(T0 + 9000))),
        )
        log += built.data
        offset += deltas[-1] + 1 + draw(st.sampled_from([0, 0, 0, 5]))
    return base, log


def write_partition(root: Path, base: int, log: bytes) -> Path:
    partition = root / "logdir" / "topic-0"
    partition.mkdir(parents=True)
    (partition / segment_file_name(base, ".log")).write_bytes(log)
    return partition


def assert_rebuilt_indexes_verify(partition: Path, base: int, interval: int) -> None:
    options = VerifyOptions(index_interval_bytes=interval)
    findings = check_segment(local_segment(partition, base, True), options).sink.close()
    assert [f for f in findings if f.severity.rank >= 1] == []
    ran = run_kdump(["verify", "--index-interval-bytes", str(interval), str(partition)])
    assert ran.exit_code == 0, ran.stdout


@SETTINGS
@given(segment=segment_logs(), interval=INTERVALS)
def test_rebuilt_indexes_of_random_logs_verify(segment: tuple[int, bytes], interval: int) -> None:
    base, log = segment
    with tempfile.TemporaryDirectory() as tmp:
        partition = write_partition(Path(tmp), base, log)
        ran = run_kdump(["rebuild-index", "--index-interval-bytes", str(interval), str(partition)])
        assert ran.exit_code == 0, ran.stdout + ran.stderr
        assert "verify: new files of 1 segment re-checked: 0 errors, 0 warnings" in ran.stdout
        assert_rebuilt_indexes_verify(partition, base, interval)


@SETTINGS
@given(
    segment=segment_logs(),
    interval=INTERVALS,
    cut=st.integers(0, 10**6),
    garbage=st.binary(min_size=1, max_size=300),
)
def test_recover_of_a_damaged_random_log(
    segment: tuple[int, bytes], interval: int, cut: int, garbage: bytes
) -> None:
    """The log up to a random batch boundary, then garbage: recover keeps the prefix (and only
    bytes that are not a valid batch go), saves the rest, and the result verifies."""
    base, log = segment
    with tempfile.TemporaryDirectory() as tmp:
        partition = write_partition(Path(tmp), base, log)
        path = partition / segment_file_name(base, ".log")
        boundaries = [0] + [end for _, end in batch_positions(path)]
        keep = boundaries[cut % len(boundaries)]
        damaged = log[:keep] + garbage
        path.write_bytes(damaged)
        expected = recover_segment(damaged, base, str(path), IndexConfig(interval))
        ran = run_kdump(["recover", "--index-interval-bytes", str(interval), str(partition)])
        assert ran.exit_code == 0, ran.stdout + ran.stderr
        kept = path.read_bytes()
        assert len(kept) == expected.valid_bytes >= keep
        cuts = list(partition.glob(f"{path.name}.kdump-cut-*"))
        assert kept + (cuts[0].read_bytes() if cuts else b"") == damaged
        assert (partition / segment_file_name(base, ".index")).read_bytes() == expected.index
        clean = recover_segment(kept, base, str(path), IndexConfig(interval))
        assert clean.stop is None and clean.index == expected.index
        assert clean.time_index == expected.time_index
        assert_rebuilt_indexes_verify(partition, base, interval)


FIXTURE_LOGS = sorted(
    p.relative_to(ORACLE)
    for p in ORACLE.glob("*/*.log")
    if p.parent.name in ("plain-0", "gzip-0", "lz4-0", "legacyv1-0", "variety-0", "txn-0")
)


@SETTINGS
@given(
    name=st.sampled_from(FIXTURE_LOGS),
    interval=INTERVALS,
    cut=st.integers(0, 10**6),
)
def test_fixture_logs_cut_at_random_boundaries(name: Path, interval: int, cut: int) -> None:
    source = ORACLE / name
    base = int(name.name[:20])
    boundaries = [end for _, end in batch_positions(source)]
    keep = boundaries[cut % len(boundaries)]
    with tempfile.TemporaryDirectory() as tmp:
        partition = write_partition(Path(tmp), base, source.read_bytes()[:keep])
        ran = run_kdump(["rebuild-index", "--index-interval-bytes", str(interval), str(partition)])
        assert ran.exit_code == 0, ran.stdout + ran.stderr
        assert_rebuilt_indexes_verify(partition, base, interval)


def _builder_state(b: object) -> dict[str, object]:
    return {k: (bytes(v) if isinstance(v, bytearray) else v) for k, v in vars(b).items()}


_INT64 = st.integers(-(2**63), 2**63 - 1)
_NEAR = st.integers(-3, 2**31 + 3)


@pytest.mark.skipif(not speedups.built(), reason="compares the C packing with Python")
@settings(max_examples=300, deadline=None)
@given(
    st.booleans(),
    st.integers(0, 2**40),
    st.integers(1, 12),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), max_size=5),
    st.lists(st.tuples(_NEAR, _NEAR), max_size=12),
    st.booleans(),
)
def test_packed_index_entries_are_the_python_builders(
    is_time: bool,
    base: int,
    max_entries: int,
    before: list[tuple[int, int]],
    pairs: list[tuple[int, int]],
    rising: bool,
) -> None:
    """The rebuild's C packing (pack_entries) leaves an index builder exactly as its Python
    extend() does: the same bytes, entries, last values and refusals, from any earlier state,
    for entries in order (the usual case, ``rising``), out of order, beyond int32 or too many."""
    if rising:
        pairs = sorted(pairs)
        pairs = [(a + i, b + i) for i, (a, b) in enumerate(pairs)]
    firsts = [base + a if not is_time else a for a, _ in pairs]
    seconds = [b if not is_time else base + b for _, b in pairs]
    made = []
    for how in ("one by one", "extend", "packed"):
        builder = (_TimeIndexBuilder if is_time else _OffsetIndexBuilder)(base, max_entries)
        for a, b in before:
            if is_time:
                builder.maybe_append(a, base + b)
            else:
                builder.append(base + a, b)
        try:
            if how == "packed":
                builder.extend_packed(speedups.native(), array("q", firsts), array("q", seconds))
            elif how == "extend":
                builder.extend(firsts, seconds)
            else:  # Kafka's appends, one entry at a time
                for first, second in zip(firsts, seconds, strict=True):
                    if is_time:
                        builder.maybe_append(first, second)
                    else:
                        builder.append(first, second)
        except struct.error:
            return  # beyond int32 (the recovery stops before such an entry)
        made.append(_builder_state(builder))
    assert made[0] == made[1] == made[2]
