"""``kdump compact`` against Kafka's own cleaner: each scenario of fixtures/compaction is a
partition (built by kafka-python's encoder, or one of the oracle partitions) that Kafka 4.4's
Cleaner cleaned once (scripts/make_compaction_fixtures.py, tests/realkafka/java/Cleaner.java);
kdump cleans a copy of the same input at the same clock and must write the same bytes, mtimes
and checkpoint, and its dry run must give Kafka's numbers."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kdump.cli import cli
from kdump.format.batch import RecordBatch
from kdump.format.compression import google_snappy
from kdump.format.walk import iter_batches, iter_records
from kdump.unified_log import UnifiedLog

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "fixtures" / "compaction"
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "scenario.json").exists())


SNAPPY = 2


def _batches(data: bytes) -> list[tuple[RecordBatch, list[tuple[object, ...]]]]:
    out = []
    for batch in iter_batches(data):
        assert isinstance(batch, RecordBatch)
        records = [r[:8] for r in iter_records(data, batch)]
        out.append((batch, records))
    return out


def _same_but_snappy(ours: bytes, theirs: bytes) -> bool:
    """The same batches, byte for byte except rebuilt snappy ones, whose records and header
    fields (all but length and CRC) must be the same: without the system's Google snappy, kdump
    takes cramjam's Rust port, whose matcher differs on some inputs (docs/compaction.md)."""
    a, b = _batches(ours), _batches(theirs)
    assert len(a) == len(b)
    snappy_only = True
    for (x, rx), (y, ry) in zip(a, b, strict=True):
        if ours[x.position : x.end] == theirs[y.position : y.end]:
            continue
        snappy_only = snappy_only and x.compression == SNAPPY
        skip = ("position", "batch_length", "crc")
        fields = [f for f in RecordBatch._fields if f not in skip]
        assert [getattr(x, f) for f in fields] == [getattr(y, f) for f in fields]
        assert rx == ry
    return snappy_only


def _kafka_stats(line: str) -> dict[str, int]:
    words = line.split()
    return {k: int(v) for k, v in zip(words[::2], words[1::2], strict=True)}


def _prepare(name: str, tmp: Path) -> tuple[dict, Path, Path]:
    here = SCENARIOS / name
    spec = json.loads((here / "scenario.json").read_text())
    log_dir = tmp / "logdir"
    log_dir.mkdir()
    if "oracle" in spec:
        source = ROOT / "fixtures" / "oracle" / spec["oracle"]
    else:
        (source,) = [p for p in (here / "input").iterdir() if p.is_dir()]
    part = log_dir / source.name
    shutil.copytree(source, part)
    for f in part.iterdir():  # a checkout does not keep mtimes: the cleaner reads them
        when = spec["mtimes"].get(f.name, min(spec["mtimes"].values())) * 1_000_000
        os.utime(f, ns=(when, when))
    for name in ("cleaner-offset-checkpoint", ".kafka_cleanshutdown"):
        if (here / "input" / name).exists():
            shutil.copy(here / "input" / name, log_dir)
    return spec, part, here / "kafka" / source.name


def _compact(part: Path, spec: dict, *extra: str) -> dict:
    args = ["compact", str(part), "--now", str(spec["now"]), "--format", "json"]
    args += ["--dedupe-buffer-size", str(spec["dedupe"]), *extra]
    for c in spec["configs"]:
        args += ["--config", c]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


@pytest.mark.parametrize("name", NAMES)
def test_cleaned_segments_are_kafkas_bytes(name: str, tmp_path: Path) -> None:
    spec, part, kafka = _prepare(name, tmp_path)
    out = tmp_path / "out"
    done = _compact(part, spec, "--output-dir", str(out))
    written = out / part.name
    assert done["written"], "nothing written"
    snappy_differs = set()
    for path in map(Path, done["written"]):
        if path.name == "cleaner-offset-checkpoint":
            continue
        theirs = kafka / path.name
        assert theirs.exists(), f"kdump wrote {path.name}, Kafka did not"
        if path.read_bytes() != theirs.read_bytes():
            # with Google's snappy (the system's), every byte is Kafka's
            assert google_snappy() is None, f"{path.name} differs from Kafka's"
            stem = path.name.split(".")[0]
            if path.suffix == ".log":
                assert _same_but_snappy(path.read_bytes(), theirs.read_bytes()), path.name
                snappy_differs.add(stem)
            else:  # index positions follow the .log's sizes
                assert stem in snappy_differs, f"{path.name} differs from Kafka's"
        if path.suffix != ".txnindex":  # setLastModified leaves the .txnindex alone
            # a checkout does not keep mtimes: Kafka's were recorded when it cleaned
            assert path.stat().st_mtime_ns // 1_000_000 == spec["kafka_mtimes"][path.name]
    for group in done["groups"]:
        base = f"{group['segments'][0]:020d}"
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            if (kafka / f"{base}{suffix}").exists():
                assert (written / f"{base}{suffix}").exists(), f"Kafka wrote {base}{suffix}"
    # the segments a group swallowed are gone from Kafka's directory, as kdump says
    kafka_files = set(spec["kafka_files"])
    firsts = {f"{g['segments'][0]:020d}" for g in done["groups"]}
    for replaced in done["replaced"]:
        assert (replaced in kafka_files) == (replaced.split(".")[0] in firsts), replaced
    ours = (out / "cleaner-offset-checkpoint").read_text()
    assert ours == (kafka.parent / "cleaner-offset-checkpoint").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_dry_run_gives_kafkas_numbers(name: str, tmp_path: Path) -> None:
    spec, part, _ = _prepare(name, tmp_path)
    done = _compact(part, spec, "--dry-run")
    kafka = _kafka_stats(spec["kafka"])
    assert done["first_dirty_offset"] == kafka["first_dirty"]
    assert done["first_uncleanable_offset"] == kafka["first_uncleanable"]
    assert done["checkpoint_after"] == kafka["end_offset"]
    assert done["offset_map"]["holds_dirty_section"] == (
        kafka["end_offset"] == kafka["first_uncleanable"]
    )
    groups = done["groups"]
    assert sum(g["bytes_before"] for g in groups) == kafka["bytes_read"]
    if name != "codecs" or google_snappy() is not None:  # else rebuilt snappy batches differ
        assert sum(g["bytes_after"] for g in groups) == kafka["bytes_written"]
    assert sum(g["records_after"] for g in groups) == kafka["messages_written"]
    assert done["cleanable"] == bool(kafka["picked"])


def test_a_producers_last_aborted_batch_stays_as_an_empty_batch(tmp_path: Path) -> None:
    """Issue 38's last example: the cleaner keeps each active producer's last batch of an
    aborted transaction as a 61-byte header, so it is not dropped bytes."""
    spec, part, _ = _prepare("transactions", tmp_path)
    done = _compact(part, spec, "--dry-run")
    assert done["empty_batches_kept"] >= 1
    assert done["dropped"]["aborted"] > 0
    kafka = _kafka_stats(spec["kafka"])
    assert (
        done["bytes_after"] - (done["bytes_before"] - kafka["bytes_read"]) == kafka["bytes_written"]
    )


def test_nothing_to_clean_writes_only_the_checkpoint(tmp_path: Path) -> None:
    """The active segment alone: no group; the map saw nothing, so its latest offset is -1 and
    doClean's end offset 0 (the broker never picks such a log: it has no bytes to clean)."""
    spec, part, _ = _prepare("groups", tmp_path)
    for f in part.iterdir():
        if not f.name.startswith("00000000000000000024"):
            f.unlink()
    out = tmp_path / "out"
    done = _compact(part, spec, "--output-dir", str(out))
    assert done["groups"] == [] and done["checkpoint_after"] == 0
    assert not done["cleanable"]
    assert (out / "cleaner-offset-checkpoint").read_text() == "0\n1\ngroups 0 0\n"


def test_a_clean_shutdown_without_snapshot_leaves_the_producer_state_empty(tmp_path: Path) -> None:
    """UnifiedLog.rebuildProducerState(reloadFromCleanShutdown): with the log dir's
    .kafka_cleanshutdown and no producer snapshot, the broker skips the rebuild, so the open
    transaction at offset 52 holds nothing back; without the marker it is replayed and does."""
    from kdump.discovery import discover

    spec, part, kafka = _prepare("clean-shutdown", tmp_path)

    def opened() -> UnifiedLog:
        (log,) = discover([str(part)], urls=False).partitions
        return log

    log = opened()
    assert log.broker_load.producer_state_skipped and log.producer_state.skipped
    assert log.last_stable_offset == log.high_watermark.value == spec["high_watermark"]
    assert not log.producer_state.state.producers
    # the empty snapshot Kafka wrote at the active segment's base: loaded, not skipped
    shutil.copy(kafka / "00000000000000000055.snapshot", part)
    log = opened()
    assert not log.producer_state.skipped and log.producer_state.state_from == 55
    (part / "00000000000000000055.snapshot").unlink()
    (part.parent / ".kafka_cleanshutdown").unlink()
    log = opened()
    assert not log.producer_state.skipped
    assert log.last_stable_offset == 52
    assert set(log.producer_state.state.producers) == {1000, 2000, 3000}
