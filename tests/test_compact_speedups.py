"""The log cleaner's C loops (kdump/_speedups.c: the key map, the filter over runs of plain
batches and over one batch's records) against the Python reference (kdump.log_cleaner,
kdump.offset_map), on the same bytes: every fixtures/compaction scenario, and partitions
hypothesis makes (keys and tombstones, keyless records, headers whose keys Java would not read
back as they are, LogAppendTime, delete horizons passed and ahead, gzip, producers whose last
batch goes empty, maps too small for the dirty section, damaged records). Both runs must give the
same cleaned files and the same numbers, or the same failure."""

from __future__ import annotations

import json
import mmap
import os
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from batchbytes import fix_crc
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from purepython import pure_python
from test_compact_kafka import NAMES, _prepare

from kdump import speedups
from kdump.cli import cli
from kdump.format.builder import BatchHeader, BuiltRecord, build_batch
from kdump.format.records import Header
from kdump.offset_map import SkimpyOffsetMap

pytestmark = pytest.mark.skipif(speedups.native() is None, reason="kdump's C code is not built")

T0 = 1_700_000_000_000


def _compact(part: Path, now: int, dedupe: int, configs: list[str], out: Path) -> dict[str, Any]:
    args = ["compact", str(part), "--now", str(now), "--format", "json"]
    args += ["--dedupe-buffer-size", str(dedupe), "--output-dir", str(out)]
    for c in configs:
        args += ["--config", c]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code in (0, 2), result.output
    done = dict(json.loads(result.stdout))
    done["written"] = {Path(p).name: Path(p).read_bytes() for p in done["written"]}
    return done


def _both(part: Path, now: int, dedupe: int, configs: list[str], tmp: Path) -> None:
    native = _compact(part, now, dedupe, configs, tmp / "native")
    with pure_python():
        pure = _compact(part, now, dedupe, configs, tmp / "pure")
    assert native == pure


@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_cleans_alike(name: str, tmp_path: Path) -> None:
    spec, part, _ = _prepare(name, tmp_path)
    _both(part, spec["now"], spec["dedupe"], spec["configs"], tmp_path)


def test_the_map_is_the_same_bytes() -> None:
    rng = random.Random(7)
    keys = [rng.randbytes(rng.randint(0, 130)) for _ in range(700)] + [b"", b"x" * 55, b"y" * 64]
    native = SkimpyOffsetMap(24 * 800, 0.9)
    with pure_python():
        pure = SkimpyOffsetMap(24 * 800, 0.9)
        for i, key in enumerate(keys):
            pure.put(key, i * 3)
        found = [pure.get(k) for k in [*keys, b"absent", b"z" * 200]]
    for i, key in enumerate(keys):
        native.put(key, i * 3)
    assert native.buffer[:] == pure.buffer[:] and native.entries == pure.entries
    assert [native.get(k) for k in [*keys, b"absent", b"z" * 200]] == found
    assert isinstance(native.buffer, mmap.mmap)


# -- partitions hypothesis makes -----------------------------------------------------------------


def _records(draw: st.DrawFn, n: int) -> list[tuple[bytes | None, bytes | None, list[Header]]]:
    out = []
    for _ in range(n):
        k = draw(st.integers(-1, 12))
        key = None if k < 0 else b"k%d" % k
        value = draw(st.one_of(st.none(), st.binary(max_size=30)))
        headers = draw(
            st.lists(st.sampled_from([Header("h", b"v"), Header("\udcff", None)]), max_size=2)
        )
        out.append((key, value, headers))
    return out


@st.composite
def partitions(draw: st.DrawFn) -> dict[str, Any]:
    batches: list[bytes] = []
    offset = 0
    segments: list[list[bytes]] = [[]]
    for _ in range(draw(st.integers(1, 14))):
        records = _records(draw, draw(st.integers(0, 6)))
        pid = draw(st.sampled_from([-1, -1, 5, 9]))
        horizon = draw(st.sampled_from([None, None, T0 - 1, T0 + 10**6]))
        header = BatchHeader(
            base_offset=offset,
            last_offset=offset + max(len(records), 1) - 1,
            partition_leader_epoch=0,
            compression=draw(st.sampled_from([0, 0, 0, 1])),
            log_append_time_ms=draw(st.sampled_from([None, None, T0 - 5])),
            producer_id=pid,
            producer_epoch=0 if pid >= 0 else -1,
            base_sequence=offset if pid >= 0 else -1,
            is_transactional=False,
            is_control=False,
        )
        built = [
            BuiltRecord(offset + i, T0 - 100 + draw(st.integers(0, 50)), k, v, h)
            for i, (k, v, h) in enumerate(records)
        ]
        data = bytearray(build_batch(header, built, horizon))
        if any(h.key != "h" for _, _, hs in records for h in hs):
            # the builder wrote "?" for the lone surrogate: a key Java reads as U+FFFD instead
            data = bytearray(bytes(data).replace(b"\x02?", b"\x02\xff"))
            if not header.compression:
                fix_crc(data, 0)
        if records and draw(st.integers(0, 30)) == 0:  # a record that does not parse
            data[-1] ^= 0xFF
        segments[-1].append(bytes(data))
        batches.append(bytes(data))
        offset = header.last_offset + 1
        if draw(st.booleans()):
            segments.append([])
    active = [BuiltRecord(offset, T0, b"k0", b"a", ())]
    segments.append([build_batch(_active(offset), active, None)])
    return {
        "segments": [s for s in segments if s],
        "dedupe": draw(st.sampled_from([24 * 4, 24 * 9, 24 * 1000])),
        "hw_back": draw(st.integers(0, 3)),
    }


def _active(offset: int) -> BatchHeader:
    return BatchHeader(offset, offset, 0, 0, None, -1, -1, -1, False, False)


def _write(d: Path, spec: dict[str, Any]) -> Path:
    part = d / "logdir" / "topic-0"
    part.mkdir(parents=True)
    end = 0
    for batches in spec["segments"]:
        (base,) = struct.unpack_from(">q", batches[0])
        (part / f"{base:020d}.log").write_bytes(b"".join(batches))
        last = batches[-1]
        end = struct.unpack_from(">q", last)[0] + struct.unpack_from(">i", last, 23)[0] + 1
    hw = max(end - spec["hw_back"], 0)
    (d / "logdir" / "replication-offset-checkpoint").write_text(f"0\n1\ntopic 0 {hw}\n")
    return part


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(partitions())
def test_made_up_partitions_clean_alike(tmp_path: Path, spec: dict[str, Any]) -> None:
    work = tmp_path / os.urandom(4).hex()
    part = _write(work, spec)
    configs = ["cleanup.policy=compact", "delete.retention.ms=1000"]
    try:
        _both(part, T0, spec["dedupe"], configs, work)
    finally:
        shutil.rmtree(work)
