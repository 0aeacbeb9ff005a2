"""trim-index on preallocated indexes, recover on each kind of damage, the limits Kafka's index
classes impose, and the exit codes."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import ORACLE, oracle_manifest
from kafka.record.default_records import DefaultRecordBatchBuilder
from repair_support import batch_positions, copy_partition, cut_and_deleted, damage, tree

from kdump.checks.options import VerifyOptions
from kdump.checks.segment import check_segment
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.segment import local_segment

OFFSET = struct.Struct(">q")


def codes(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith(("error", "warning"))]


# -- trim-index --------------------------------------------------------------------------------


def test_trim_leaves_the_active_segment_alone(tmp_path: Path) -> None:
    partition = copy_partition("activeprealloc-0", tmp_path)
    before = tree(partition)
    ran = run_kdump(["trim-index", str(partition)])
    assert ran.exit_code == 0
    assert "skip      " in ran.stdout and "--include-active" in ran.stdout
    assert tree(partition) == before


def test_trim_include_active_keeps_the_entries_kafka_had_written(tmp_path: Path) -> None:
    partition = copy_partition("activeprealloc-0", tmp_path)
    live = oracle_manifest()["directories"]["activeprealloc-0"]["live_state_before_stop"]
    index, time_index = (partition / f"00000000000000000225{s}" for s in (".index", ".timeindex"))
    old_index, old_time = index.read_bytes(), time_index.read_bytes()
    ran = run_kdump(["trim-index", "--include-active", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert "entries 1310720 (2 used) -> 2, bytes 10485760 -> 16" in ran.stdout
    assert "entries 873813 (2 used) -> 2, bytes 10485756 -> 24" in ran.stdout
    assert index.read_bytes() == old_index[: 8 * live["offsetIndex.entries_in_memory_before_stop"]]
    assert (
        time_index.read_bytes() == old_time[: 12 * live["timeIndex.entries_in_memory_before_stop"]]
    )
    assert (partition / f"{index.name}.kdump-bak").read_bytes() == old_index
    findings = check_segment(local_segment(partition, 225, True), VerifyOptions()).sink.close()
    assert not [f for f in findings if f.code.endswith("PREALLOCATED")]
    assert not [f for f in findings if f.severity.rank >= 1]


def test_trim_after_an_unclean_shutdown_restores_the_closed_segments(tmp_path: Path) -> None:
    """A closed segment's indexes padded with zeros (as a crash leaves them): trim-index gives
    back exactly what the clean broker had trimmed them to."""
    partition = copy_partition("plain-0", tmp_path)
    originals = {p.name: p.read_bytes() for p in partition.glob("*index")}
    for p in partition.glob("*index"):
        if p.name.startswith("00000000000000001256"):
            continue  # the active segment
        size = 10485760 if p.suffix == ".index" else 10485756
        p.write_bytes(p.read_bytes() + bytes(size - p.stat().st_size))
    ran = run_kdump(["verify", str(partition)])
    assert "INDEX_PREALLOCATED" in ran.stdout
    ran = run_kdump(["trim-index", "--no-backup", str(partition)])
    assert ran.exit_code == 0
    assert {p.name: p.read_bytes() for p in partition.glob("*index")} == originals
    assert "PREALLOCATED" not in run_kdump(["verify", str(partition)]).stdout


def build_log(timestamps: list[int], base_offset: int = 0) -> bytes:
    out = b""
    offset = base_offset
    for ts in timestamps:
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        builder.append(0, ts, b"k", b"v" * 40, [])
        buf = bytearray(builder.build())
        OFFSET.pack_into(buf, 0, offset)
        out += bytes(buf)
        offset += 1
    return out


@pytest.mark.parametrize(
    ("timestamps", "kept"),
    [([0, 0, 0], 1), ([5, 0, 3], 0), ([0, 7], 0)],
)
def test_trim_keeps_a_real_all_zero_time_index_entry(
    timestamps: list[int], kept: int, tmp_path: Path
) -> None:
    """A time index entry (timestamp 0, base offset) is twelve zero bytes: it is kept when the
    log says it is real (largest timestamp 0, first reached at the base offset)."""
    partition = tmp_path / "logdir" / "t-0"
    partition.mkdir(parents=True)
    log = build_log(timestamps)
    (partition / "00000000000000000000.log").write_bytes(log)
    (partition / "00000000000000000000.index").write_bytes(bytes(80))
    (partition / "00000000000000000000.timeindex").write_bytes(bytes(120))
    (partition / "00000000000000000001.log").write_bytes(b"")  # makes segment 0 closed
    ran = run_kdump(["trim-index", "--no-backup", str(partition)])
    assert ran.exit_code == 0
    assert (partition / "00000000000000000000.index").read_bytes() == b""
    trimmed = (partition / "00000000000000000000.timeindex").read_bytes()
    assert trimmed == bytes(12 * kept)
    rebuilt = recover_segment(log, 0, "log", IndexConfig())
    if kept:  # what Kafka's own rebuild writes for this log
        assert rebuilt.time_index == trimmed


# -- recover ---------------------------------------------------------------------------------


def test_recover_gives_kafkas_indexes_of_the_kept_prefix(tmp_path: Path) -> None:
    partition = copy_partition("plain-0", tmp_path)
    cuts = damage(partition)
    ran = run_kdump(["recover", "--index-interval-bytes", "100", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    log, position, later = cut_and_deleted(cuts)
    prefix = (partition / log).read_bytes()
    assert len(prefix) == position
    clean = recover_segment(prefix, int(log[:20]), log, IndexConfig(100))
    assert clean.stop is None
    assert (partition / log.replace(".log", ".index")).read_bytes() == clean.index
    assert (partition / log.replace(".log", ".timeindex")).read_bytes() == clean.time_index
    remaining = sorted(p.name for p in partition.glob("*.log"))
    assert remaining[-1] == log and not set(later) & set(remaining)
    assert run_kdump(["verify", "--index-interval-bytes", "100", str(partition)]).exit_code == 0
    again = run_kdump(["recover", "--index-interval-bytes", "100", str(partition)])
    n = len(remaining)
    assert again.exit_code == 0
    assert f"0 file(s) (0 of {n} segment(s), 0 of 1 partition(s)) written" in again.stdout


def test_recover_of_a_recovered_interval_matches_the_manifest(tmp_path: Path) -> None:
    """An undamaged log loses nothing: recover writes Kafka's recoveredIndexBytes."""
    partition = copy_partition("followerlive-0", tmp_path)
    before = {p.name: p.read_bytes() for p in partition.glob("*.log")}
    assert (
        run_kdump(
            ["recover", "--as-broker", "--index-interval-bytes", "1024", str(partition)]
        ).exit_code
        == 0
    )
    assert {p.name: p.read_bytes() for p in partition.glob("*.log")} == before
    files = oracle_manifest()["files"]["followerlive-0"]
    for name in before:
        expected = files[name]["recoveredIndexBytes"]["index.interval.bytes=1024"]
        assert (partition / name.replace(".log", ".index")).read_bytes().hex() == expected[
            "indexHex"
        ]


def test_recover_cuts_at_a_corrupt_batch_header(tmp_path: Path) -> None:
    partition = copy_partition("lz4-0", tmp_path)
    log = sorted(partition.glob("*.log"))[0]
    original = log.read_bytes()
    start, _ = batch_positions(log)[5]
    data = bytearray(original)
    struct.pack_into(">i", data, start + 8, 3)  # size below the minimum (14)
    log.write_bytes(bytes(data))
    ran = run_kdump(["recover", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert f"LOG_CORRUPT_BATCH {log}:{start}" in ran.stdout
    assert log.read_bytes() == original[:start]
    assert (partition / f"{log.name}.kdump-cut-{start}").read_bytes() == bytes(data[start:])


def test_recover_a_damaged_transactional_partition(tmp_path: Path) -> None:
    """A cut in segment 63 drops its last abort (pid 2000 at 125); the txnindex of 63 is
    rebuilt without it, and the later segments still get theirs."""
    partition = copy_partition("txn-0", tmp_path)
    log = partition / "00000000000000000063.log"
    start = next(p for p, _ in batch_positions(log) if p == 4344)  # pid 2000's batch 122..124
    data = bytearray(log.read_bytes())
    data[start + 30] ^= 0xFF
    log.write_bytes(bytes(data))
    ran = run_kdump(["recover", "--as-broker", "--index-interval-bytes", "1024", str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    txn = (partition / "00000000000000000063.txnindex").read_bytes()
    assert txn == (ORACLE / "txn-0" / "00000000000000000063.txnindex").read_bytes()[: 2 * 34]
    assert run_kdump(["verify", "--index-interval-bytes", "1024", str(partition)]).exit_code == 0


def patch_base_offset(log: Path, batch: int, offset: int) -> int:
    """The base offset is outside the CRC: the batch stays valid."""
    start, _ = batch_positions(log)[batch]
    data = bytearray(log.read_bytes())
    OFFSET.pack_into(data, start, offset)
    log.write_bytes(bytes(data))
    return start


def test_offset_overflow_is_left_alone(tmp_path: Path) -> None:
    partition = copy_partition("plain-0", tmp_path)
    log = partition / "00000000000000000000.log"
    start = patch_base_offset(log, 4, 2**31 + 100)
    before = tree(partition)
    ran = run_kdump(["recover", str(partition)])
    assert ran.exit_code == 2
    assert f"LOG_OFFSET_OVERFLOW {log}:{start}" in ran.stdout
    assert "kdump leaves it alone" in ran.stdout
    assert tree(partition) == before


def test_offsets_going_back_are_refused_by_the_index(tmp_path: Path) -> None:
    partition = copy_partition("plain-0", tmp_path)
    log = partition / "00000000000000000000.log"
    patch_base_offset(log, 20, 5)
    ran = run_kdump(["rebuild-index", "--index-interval-bytes", "100", "--dry-run", str(partition)])
    assert ran.exit_code == 2
    assert "LOG_OFFSET_NOT_INCREASING" in codes(ran.stdout)
    assert "InvalidOffsetException" in ran.stdout


def test_a_full_index_refuses_entries_but_keeps_the_closing_time_entry(tmp_path: Path) -> None:
    path = ORACLE / "plain-0" / "00000000000000000000.log"
    log = path.read_bytes()
    full = recover_segment(log, 0, str(path), IndexConfig(100))
    small = recover_segment(log, 0, str(path), IndexConfig(100, max_index_size=24))
    assert small.index == full.index[:24]
    assert small.time_index == full.time_index[:12] + full.time_index[-12:]
    assert [f.code for f in small.findings] == ["REPAIR_INDEX_FULL", "REPAIR_TIMEINDEX_FULL"]
    partition = copy_partition("plain-0", tmp_path)
    ran = run_kdump(
        ["rebuild-index", "--index-interval-bytes", "100", "--max-index-size", "24", str(partition)]
    )
    assert ran.exit_code == 0
    assert "REPAIR_INDEX_FULL" in codes(ran.stdout)


def test_usage_errors(tmp_path: Path) -> None:
    partition = copy_partition("plain-0", tmp_path)
    before = tree(tmp_path)
    for args in (
        ["recover", "--dry-run", "--output-dir", str(tmp_path / "o"), str(partition)],
        ["recover", "--no-backup", "--backup-dir", str(tmp_path / "b"), str(partition)],
        ["rebuild-index", "--index-interval-bytes", "-1", str(partition)],
        ["rebuild-index"],
    ):
        ran: Any = run_kdump(args)
        assert ran.exit_code == 3, args
    assert tree(tmp_path) == before


def test_new_files_failing_verify_replace_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify's index checks run on the staged files before the commit: a rebuild that came out
    wrong (simulated: its offset index entries reversed) changes nothing."""
    import kdump.repair.plan as plan_module

    real = plan_module.recover_segment

    def reversed_entries(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        entries = [out.index[i : i + 8] for i in range(0, len(out.index), 8)]
        out.index = b"".join(reversed(entries))
        return out

    monkeypatch.setattr(plan_module, "recover_segment", reversed_entries)
    partition = copy_partition("followerlive-0", tmp_path)
    before = tree(partition)
    ran = run_kdump(["rebuild-index", str(partition)])
    assert ran.exit_code == 2
    assert "INDEX_NOT_MONOTONIC" in codes(ran.stdout)
    assert "nothing was changed: the new files fail verify's checks" in ran.stderr
    assert tree(partition) == before


def _dry_rebuild(partition: Path, *extra: str) -> str:
    ran = run_kdump(["rebuild-index", "--dry-run", *extra, str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    return ran.stdout


@pytest.mark.parametrize("source", ["config", "server.properties", "describe", "option"])
def test_indexes_are_rebuilt_at_the_topics_own_interval(tmp_path: Path, source: str) -> None:
    """Issue 28.16: gzip-0 was written at index.interval.bytes 1024; a rebuild at Kafka's
    default 4096 showed "entries 7 -> 2", which reads as loss. Where the topic's setting is
    given (any of kdump.config's layers) the rebuild is Kafka's own, byte for byte: nothing
    changes; where it is not, the run says which interval it assumed and that only the
    density differs."""
    partition = copy_partition("gzip-0", tmp_path)
    interval = oracle_manifest()["directories"]["gzip-0"]["config"]["index.interval.bytes"]
    assumed = _dry_rebuild(partition)
    assert "entries 7 -> 2" in assumed
    assert (
        f"note      {partition}: indexes built at index.interval.bytes 4096, Kafka's default: "
        "nothing given sets this topic's"
    ) in assumed
    assert "more or fewer entries over the same data (nothing is lost)" in assumed
    args = {
        "config": ["--config", f"index.interval.bytes={interval}"],
        "server.properties": ["--server-properties", str(tmp_path / "server.properties")],
        "describe": ["--describe-output", str(tmp_path / "describe.txt")],
        "option": ["--index-interval-bytes", interval],
    }[source]
    (tmp_path / "server.properties").write_text(f"log.index.interval.bytes={interval}\n")
    (tmp_path / "describe.txt").write_text(
        "All configs for topic gzip are:\n"
        f"  index.interval.bytes={interval} sensitive=false "
        f"synonyms={{DYNAMIC_TOPIC_CONFIG:index.interval.bytes={interval}}}\n"
    )
    known = _dry_rebuild(partition, *args)
    assert "dry run: 0 file(s) (0 of 3 segment(s), 0 of 1 partition(s)) would change" in known
    assert "note" not in known
    # a run at a topic's own interval that does change an index says where the interval came from
    for p in partition.glob("*.index"):
        p.unlink()
    rebuilt = _dry_rebuild(partition, *args)
    assert f"note      {partition}: indexes built at index.interval.bytes {interval} (" in rebuilt


def test_a_cut_counts_the_partitions_segments_in_the_dry_run_and_the_run(tmp_path: Path) -> None:
    """A torn last batch: the snapshot and recovery point clean-up after the cut are no
    segments; the dry run said '3 file(s) of 7 segment(s)' of a 6-segment partition (and 96 of
    a log dir the run then said 93 of)."""
    partition = copy_partition("plain-0", tmp_path)
    active = max(partition.glob("*.log"))
    active.write_bytes(active.read_bytes()[:-37])
    n = len(list(partition.glob("*.log")))
    dry = run_kdump(["recover", "--dry-run", str(partition)])
    assert "delete    " in dry.stdout  # the producer snapshot past the cut
    assert dry.stdout.splitlines()[-1].endswith(
        f"file(s) (1 of {n} segment(s), 1 of 1 partition(s)) would change; nothing was written"
    )
    ran = run_kdump(["recover", str(partition)])
    assert ran.stdout.splitlines()[-1].endswith(
        f"file(s) (1 of {n} segment(s), 1 of 1 partition(s)) written"
    )


def test_the_counts_are_of_what_changes_not_of_every_segment_read(tmp_path: Path) -> None:
    """Issue 44.9: '25 file(s) of 75 segment(s) would change', 75 being every segment of the
    log dir (and a segment recovery deletes counted twice): the counts say what changes, of
    what was read."""
    partition = copy_partition("plain-0", tmp_path)
    copy_partition("txn-0", tmp_path)
    cuts = damage(partition)
    log, _, _ = cut_and_deleted(cuts)
    n = len(list(partition.glob("*.log"))) + len(list((partition.parent / "txn-0").glob("*.log")))
    changed = 1 + len([p for p in partition.glob("*.log") if p.name > log])
    dry = run_kdump(["recover", "--dry-run", str(partition.parent)])
    files = sum(1 for line in dry.stdout.splitlines() if line[:9].strip() in _ACTIONS)
    assert dry.stdout.splitlines()[-1] == (
        f"dry run: {files} file(s) ({changed} of {n} segment(s), 1 of 2 partition(s)) would "
        "change; nothing was written"
    )
    plan = json.loads(
        run_kdump(["recover", "--dry-run", "--format", "json", str(partition.parent)]).stdout
    )
    assert (plan["files"], plan["segments"]) == (files, changed)


_ACTIONS = {"replace", "create", "truncate", "delete", "rename"}


def test_trim_index_says_nothing_of_an_interval(tmp_path: Path) -> None:
    """Issue 44.9: trim-index printed rebuild-index's note on the index.interval.bytes the
    indexes were built at: a trim builds nothing, it cuts a preallocated tail."""
    partition = copy_partition("activeprealloc-0", tmp_path)
    for run in (["--dry-run"], []):
        ran = run_kdump(["trim-index", "--include-active", *run, str(partition)])
        assert ran.exit_code == 0 and "replace   " in ran.stdout, ran.stdout
        assert "index.interval.bytes" not in ran.stdout and "note " not in ran.stdout
