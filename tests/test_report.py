"""kdump report without a browser: the command's exit codes and errors, and what the model and
plots say about known partitions (tests/test_report_browser.py looks at the page)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from clirun import run_kdump
from conftest import ORACLE, oracle_manifest

from kdump.config import ConfigLayers, parse_config_option, read_server_properties
from kdump.report import ReportOptions, collect
from kdump.report.svg import index_plot, offsets_plot, time_plot, txn_plot
from kdump.units import parse_timestamp

CRC = ORACLE.parent / "corrupt" / "log-crc-mismatch"
NOW = parse_timestamp("2023-11-14T22:13:40Z")  # plain-0's batches: 22:13:20 .. 22:13:35


def test_exit_codes_and_one_line_summary(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    ran = run_kdump(["report", str(CRC), str(ORACLE / "plain-0"), "-o", str(out)])
    assert ran.exit_code == 2
    # the CRC error, and the two transactions recovery's cut leaves open with no end marker
    assert ran.stderr == f"{out}: 2 partition(s) in 2 log dir(s), 3 error(s)\n"
    assert out.read_text().startswith("<!DOCTYPE html>")
    ran = run_kdump(["report", str(ORACLE / "plain-0"), "-o", str(out), "-q"])
    assert (ran.exit_code, ran.stdout, ran.stderr) == (0, "", "")
    assert os.listdir(tmp_path) == ["r.html"]  # replaced through a temporary file, none left


def test_bad_input_is_one_line_and_exit_3(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    ran = run_kdump(["report", str(tmp_path / "gone"), "-o", str(out)])
    assert (ran.exit_code, ran.stderr) == (
        3,
        f"kdump: {tmp_path / 'gone'}: no such file or directory\n",
    )
    ran = run_kdump(["report", str(ORACLE / "plain-0"), "-o", str(out), "--config", "segment.ms=x"])
    assert ran.exit_code == 3 and ran.stderr.count("\n") == 1 and "segment.ms" in ran.stderr
    assert not out.exists()


def test_a_damaged_transactional_partition() -> None:
    """The partition as the broker has it once recovery cut it at the damaged batch: the log
    ends there, and every transaction whose end marker lay past the cut is open (from Kafka's
    manifest of the partition it was made from: each producer's first transactional batch
    after its last marker before the cut)."""
    model = collect([str(CRC)], ReportOptions(now=parse_timestamp("2024-01-01T00:00:00Z")))
    (p,) = model.partitions
    end, opened = open_at_the_cut()
    assert {f.code for f in p.findings} == {"LOG_CRC_MISMATCH", "TXN_HANGING"}
    lso = min(opened.values())
    assert (p.high_watermark, p.last_stable_offset, p.blocked_records) == (end, lso, end - lso)
    assert {t.producer_id: t.first_offset for t in p.open_transactions} == opened
    assert all(t.hanging for t in p.open_transactions)
    assert p.summary.startup == [startup_of_crc_fixture(CRC / "txn-0")]
    assert [s.base_offset for s in p.segments] == [0, 63, 126, 186]
    assert p.segments[-1].active and all(s.roll_causes for s in p.segments[:-1])
    plot = txn_plot(p)
    assert plot.count('class="txn hanging"') == len(opened) and 'class="lso"' in plot


def open_at_the_cut() -> tuple[int, dict[int, int]]:
    """Where log-crc-mismatch's recovery ends the log, and the transactions open there."""
    cut = json.loads((CRC.parent / "cases.json").read_text())["log-crc-mismatch"]["position"]
    batches = oracle_manifest()["files"]["txn-0"]["00000000000000000000.log"]["batches"]
    end = next(b["baseOffset"] for b in batches if b["position"] == cut)
    opened: dict[int, int] = {}
    for b in (b for b in batches if b["position"] < cut and b["isTransactional"]):
        if b["isControl"]:
            opened.pop(b["producerId"], None)
        else:
            opened.setdefault(b["producerId"], b["baseOffset"])
    return end, opened


def startup_of_crc_fixture(partition: Path) -> str:
    """What Kafka's LogLoader.recoverLog does to log-crc-mismatch: truncate segment 0 at the
    damaged batch (its position from fixtures/corrupt/cases.json), then delete every later
    segment. The
    later segments and their sizes come from the directory; their last offset from the producer
    snapshot Kafka wrote at the log end offset (00000000000000000218.snapshot)."""
    logs = sorted(partition.glob("*.log"))
    later = logs[1:]
    log_end = max(int(f.stem) for f in partition.glob("*.snapshot"))
    size = sum(f.stat().st_size for f in later)
    first = logs[0]
    cut = json.loads((CRC.parent / "cases.json").read_text())["log-crc-mismatch"]["position"]
    bases = ", ".join(str(int(f.stem)) for f in later)
    return (
        f"truncates {first.name} at position {cut} ({first.stat().st_size - cut} bytes) if it "
        f"recovers that segment, then deletes the {len(later)} later segment(s) {bases} "
        f"(offsets {int(later[0].stem)}..{log_end - 1}, {size} bytes) too: recovery deletes "
        "every segment after an invalid batch" + _snapshots_past_the_cut(partition, first.name, cut)
    )


def _snapshots_past_the_cut(partition: Path, log: str, cut: int) -> str:
    """The log then ends at the damaged batch's base offset (Kafka's manifest of the oracle
    partition it was made from), and truncateAndReload deletes the snapshots past it."""
    batches = oracle_manifest()["files"]["txn-0"][log]["batches"]
    end = next(b["baseOffset"] for b in batches if b["position"] == cut)
    past = sorted(int(f.stem) for f in partition.glob("*.snapshot") if int(f.stem) > end)
    return (
        f"; the log then ends at offset {end}, and it deletes the {len(past)} producer "
        f"snapshot(s) past it ({', '.join(map(str, past))})"
    )


def test_startup_names_the_later_segments_recovery_deletes(tmp_path: Path) -> None:
    """A second damaged segment after the first: only the first truncation happens, the second
    segment is among those deleted."""
    partition = tmp_path / "txn-0"
    shutil.copytree(CRC / "txn-0", partition)
    with open(partition / "00000000000000000126.log", "r+b") as f:
        f.seek(17)  # the first batch's CRC (baseOffset 8, length 4, epoch 4, magic 1)
        crc = f.read(1)
        f.seek(17)
        f.write(bytes([crc[0] ^ 0xFF]))
    model = collect([str(partition)], ReportOptions(now=parse_timestamp("2024-01-01T00:00:00Z")))
    (p,) = model.partitions
    assert sum(1 for f in p.findings if f.code == "LOG_CRC_MISMATCH") == 2
    assert p.summary.startup == [startup_of_crc_fixture(partition)]
    assert "63, 126, 186" in p.summary.startup[0]


def test_index_interval_bytes_is_a_topic_config(tmp_path: Path) -> None:
    """index.interval.bytes is a topic config (LogConfig, broker synonym
    log.index.interval.bytes, default 4096): the report takes it from --config like explain,
    and the broker's value from server.properties."""
    out = tmp_path / "r.html"
    ran = run_kdump(
        ["report", str(ORACLE / "plain-0"), "-o", str(out), "--config", "index.interval.bytes=8192"]
    )
    assert ran.exit_code == 0, ran.stderr
    assert "index.interval.bytes 8192" in out.read_text()
    (tmp_path / "server.properties").write_text("log.index.interval.bytes=1024\n")
    layers = ConfigLayers(server_properties=read_server_properties(tmp_path / "server.properties"))
    model = collect([str(ORACLE / "plain-0")], ReportOptions(now=NOW, layers=layers))
    assert [p.index_interval_bytes for p in model.partitions] == [1024]
    ran = run_kdump(
        ["report", str(ORACLE / "plain-0"), "-o", str(out), "--index-interval-bytes", "1"]
    )
    assert ran.exit_code == 3 and "No such option" in ran.stderr  # one name only


def test_retention_line_deletable_segments_and_the_dirty_section() -> None:
    layers = ConfigLayers(
        options=tuple(
            parse_config_option(c) for c in ("retention.ms=10000", "cleanup.policy=compact,delete")
        )
    )
    model = collect([str(ORACLE / "plain-0")], ReportOptions(now=NOW, layers=layers))
    (p,) = model.partitions
    assert p.retention_ms == 10000 and p.dirty is not None
    deletable = [s.base_offset for s in p.segments if s.deletable]
    assert deletable and deletable == [s.base_offset for s in p.segments[: len(deletable)]]
    timed = time_plot(p, NOW)
    assert 'class="ret"' in timed  # now - 10 s falls among the batches
    assert len(re.findall(r'class="seg [^"]* del"', timed)) == len(deletable)
    assert 'class="dirty"' in offsets_plot(p)


def test_index_density_against_index_interval_bytes() -> None:
    model = collect([str(ORACLE / "plain-0")], ReportOptions(now=NOW))
    (p,) = model.partitions
    dense = [s.density for s in p.segments if s.density is not None]
    assert dense
    for d in dense:
        assert d.min_bytes <= d.mean_bytes <= d.max_bytes
        assert d.min_bytes > 4096  # an entry once more than index.interval.bytes were appended
    plot = index_plot(p, 4096)
    assert plot.count('class="dens"') == len(dense) and 'class="interval"' in plot
    assert re.search(r"index.interval.bytes 4096", plot)


def test_a_missing_output_directory_is_named_as_given(tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "r.html"
    ran = run_kdump(["report", str(ORACLE / "plain-0"), "-o", str(out)])
    assert (ran.exit_code, ran.stderr) == (
        3,
        f"kdump: {out}: cannot write it: no such directory: {out.parent}\n",
    )
    assert ".tmp" not in ran.stderr
