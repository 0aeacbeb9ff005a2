"""kdump report without a browser: the command's exit codes and errors, what the model, the
overview and the plots say about known partitions, and the model embedded in the page
(tests/test_report_browser.py looks at the page in chromium)."""

from __future__ import annotations

import json
import os
import re
import shutil
from html import escape
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE, REALFILES, oracle_manifest
from explainbuild import T0, batch, segment
from reportpage import model_partitions, read_page

from kdump.config import ConfigLayers, parse_config_option, read_server_properties
from kdump.report import ReportOptions, collect
from kdump.report.overview import rows
from kdump.report.svg import LEFT, PLOT, index_plot, log_plot, time_plot, txn_plot
from kdump.units import parse_timestamp

CRC = ORACLE.parent / "corrupt" / "log-crc-mismatch"
NOW = parse_timestamp("2023-11-14T22:13:40Z")  # plain-0's batches: 22:13:20 .. 22:13:35
LATER = parse_timestamp("2026-01-01T00:00:00Z")
BROKER = REALFILES / "Bheem6005__kafka" / "kafka-logs"
"""A broker's log dir: 51 partitions, most of them empty, five with a missing index."""


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
        f"truncates {first.name} at position {cut} ({first.stat().st_size - cut} bytes), then "
        f"deletes the {len(later)} later segment(s) {bases} "
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
    (p,) = model_partitions(read_page(out.read_text())[0]).values()
    assert p["index_interval_bytes"] == 8192
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
    assert len(re.findall(r'class="seg[^"]* del"', timed)) == len(deletable)
    drawn = log_plot(p)
    assert len(re.findall(r'class="seg[^"]* del"', drawn)) == len(deletable)
    assert f"retention deletes {len(deletable)} segment(s)" in drawn
    assert escape(f"cleaner's dirty section offsets {p.dirty[0]}..{p.dirty[1] - 1}") in drawn


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


def _rects(svg: str, cls: str) -> list[tuple[float, float]]:
    """(x, width) of each rect of exactly this class."""
    return [
        (float(x), float(w))
        for x, w in re.findall(
            rf'<rect class="{cls}" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg
        )
    ]


def test_the_damaged_byte_range_is_marked_on_the_log_plot() -> None:
    """The bytes recovery cuts, from the damaged batch (fixtures/corrupt/cases.json) to the end
    of its segment, are drawn where they lie among the partition's .log files (their sizes on
    disk), and every later segment, which recovery deletes, is drawn as lost (issue 28)."""
    case = json.loads((CRC.parent / "cases.json").read_text())["log-crc-mismatch"]
    logs = sorted((CRC / "txn-0").glob("*.log"))
    sizes = [f.stat().st_size for f in logs]
    damaged = [f.name for f in logs].index(Path(case["path"]).name)
    before = sum(sizes[:damaged])
    model = collect([str(CRC)], ReportOptions(now=LATER))
    drawn = log_plot(model.partitions[0])

    def x(byte: float) -> float:
        return LEFT + byte / sum(sizes) * PLOT

    ((cut_x, cut_w),) = _rects(drawn, "cut")
    assert cut_x == pytest.approx(x(before + case["position"]), abs=0.06)
    assert cut_x + cut_w == pytest.approx(x(before + sizes[damaged]), abs=0.11)
    assert len(_rects(drawn, "seg lost")) == len(logs) - damaged - 1
    assert f"position {case['position']}, offset {case['offset']}" in drawn
    healthy = log_plot(collect([str(ORACLE / "plain-0")], ReportOptions(now=NOW)).partitions[0])
    assert "cut" not in healthy and "lost" not in healthy


def test_each_partition_is_told_by_what_is_wrong_with_it() -> None:
    """One status per partition, the worst: damage (recovery cuts the log), errors, warnings,
    blocked retention or compaction; a clean partition is "ok" with no finding counts shown
    (no "0"), an empty one "empty"; detailed sections only where something needs a look, and
    for the largest."""
    model = collect([str(CRC), str(ORACLE), str(BROKER)], ReportOptions(now=LATER))
    shown = rows(model)
    by_name = {(Path(p).parent.name, Path(p).name): r for p, r in shown.items()}
    assert by_name["log-crc-mismatch", "txn-0"].status == "damaged"
    assert by_name["oracle", "txn-0"].status == "errors"  # TXN_HANGING, no damage
    assert by_name["kafka-logs", "cities-0"].status == "warnings"  # INDEX_MISSING
    assert by_name["oracle", "gzip-0"].status == "ok"
    assert by_name["kafka-logs", "__consumer_offsets-1"].status == "empty"
    assert by_name["oracle", "gzip-0"].findings == ""
    assert by_name["oracle", "followerlive-0"].findings == "6 info"  # info is no problem
    assert by_name["oracle", "followerlive-0"].status == "ok"
    # the same name in two log dirs is told apart
    assert by_name["oracle", "txn-0"].label == "txn-0 (oracle)"
    detailed = {k for k, r in by_name.items() if r.detail is not None}
    largest = sorted(model.partitions, key=lambda p: -p.summary.bytes)[:3]
    wrong = {k for k, r in by_name.items() if r.status not in ("ok", "empty")}
    assert detailed == wrong | {(Path(p.path).parent.name, p.name) for p in largest}
    assert all(r.anchor.startswith("d-") == (r.detail is not None) for r in shown.values())


def test_retention_held_by_the_high_watermark_is_blocked() -> None:
    """After recovery's cut the log ends at the damaged batch, and so does the high watermark:
    retention, which never deletes past it, stops at the first segment."""
    model = collect([str(CRC)], ReportOptions(now=LATER))
    (p,) = model.partitions
    row = rows(model)[p.path]
    assert row.retention == "blocked (high watermark)"
    assert "retention blocked at segment 0: held by the high watermark" in row.problems
    assert "retention stops here: held by the high watermark" in log_plot(p)


def _compacted(now: int) -> ReportOptions:
    layers = ConfigLayers(options=(parse_config_option("cleanup.policy=compact"),))
    return ReportOptions(now=now, layers=layers)


def test_compaction_blocked_by_a_hanging_transaction(tmp_path: Path) -> None:
    """txn-0 as a broker has it when it rolled after offset 185 (its last segment an empty
    active one at 186), in the middle of producer 1000's transaction from 126: the cleaner of
    a compacted topic stops at the last stable offset. A transaction still open is no problem;
    a hanging one blocks compaction until it is aborted."""
    partition = tmp_path / "txn-0"
    shutil.copytree(ORACLE / "txn-0", partition)
    for f in [
        *partition.glob("00000000000000000186.*"),
        partition / "00000000000000000218.snapshot",
    ]:
        f.unlink()
    (partition / "00000000000000000186.log").write_bytes(b"")
    soon = parse_timestamp("2023-11-14T22:14:00Z")  # within the 15 min transaction timeout
    (open_now,) = collect([str(partition)], _compacted(soon)).partitions
    assert [t.first_offset for t in open_now.open_transactions] == [126]
    assert rows(collect([str(partition)], _compacted(soon)))[str(partition)].compaction == (
        "dirty 0..125"
    )
    model = collect([str(partition)], _compacted(LATER))
    row = rows(model)[str(partition)]
    assert row.compaction == "blocked" and row.status == "errors"
    assert any(t.startswith("compaction blocked at offset 126") for t in row.problems)


def test_compaction_blocked_by_damage() -> None:
    """A cleaning fails reading the damaged batch: the broker marks the partition uncleanable
    (KAFKA-19895), kdump explain's note says so, and the report shows it blocked."""
    model = collect([str(CRC)], _compacted(LATER))
    (p,) = model.partitions
    assert p.compaction_blocked is not None and "KAFKA-19895" in p.compaction_blocked
    assert rows(model)[p.path].compaction == "blocked"


def test_the_page_embeds_its_model_with_verifys_partition_facts(tmp_path: Path) -> None:
    """Issue 26: the model in the page; each partition's ``partition`` object holds the keys and
    numbers of ``kdump verify --format json``'s summary.by_partition entry, and ``shown`` is
    what its overview row says, cell by cell."""
    sources = [str(CRC), str(ORACLE), str(BROKER)]
    out = tmp_path / "r.html"
    run_kdump(["report", *sources, "-o", str(out), "--now", "2026-01-01T00:00:00Z"])
    model, cells = read_page(out.read_text())
    verified = json.loads(run_kdump(["verify", *sources, "--format", "json"]).stdout)
    by_partition = {e["path"]: e for e in verified["summary"]["by_partition"]}
    partitions = model_partitions(model)
    assert partitions.keys() == by_partition.keys() == cells.keys()
    for path, p in partitions.items():
        facts = p["partition"]
        assert facts == {k: by_partition[path][k] for k in facts}
        assert {k: str(v) for k, v in p["shown"].items() if k in cells[path]} == cells[path]
    assert {c for row in cells.values() for c in row} >= {"status", "size", "age", "rolled_by"}


def test_no_name_can_end_the_models_script(tmp_path: Path) -> None:
    """Names are the user's: a log dir named ``x<`` holding ``script>-0`` is a partition whose
    path holds ``</script>``, and one named ``<!--`` would open a comment; the model still
    parses whole, with the names as they are."""
    for log_dir, name in (("x<", "script>-0"), ("<!--", "plain-0")):
        (tmp_path / log_dir).mkdir()
        shutil.copytree(ORACLE / "plain-0", tmp_path / log_dir / name)
    out = tmp_path / "r.html"
    sources = [str(tmp_path / "x<"), str(tmp_path / "<!--")]
    ran = run_kdump(["report", *sources, "-o", str(out)])
    assert ran.exit_code == 0, ran.stderr
    model, _ = read_page(out.read_text())
    assert set(model_partitions(model)) == {
        str(tmp_path / "x<" / "script>-0"),
        str(tmp_path / "<!--" / "plain-0"),
    }
    assert "</script>" in str(tmp_path / "x<" / "script>-0")


def test_the_verdict_names_the_log_dirs_own_files(tmp_path: Path) -> None:
    """A checkpoint file's finding belongs to its log dir, not to a partition: the verdict
    names the log dir and its codes too. Two partitions of one name in two log dirs of one
    name are told apart by as much of the path as differs."""
    corrupt = ORACLE.parent / "corrupt"
    dirs = [
        corrupt / c / "logdir"
        for c in ("checkpoint-corrupt", "checkpoint-beyond-log-end-log-start")
    ]
    out = tmp_path / "r.html"
    run_kdump(["report", *map(str, dirs), "-o", str(out)])
    page = out.read_text()
    model, _ = read_page(page)
    verdict = page[page.index('id="verdict"') : page.index("</div>", page.index('id="verdict"'))]
    for d in model["log_dirs"]:
        (code,) = {f["code"] for f in d["findings"]}
        assert f"{escape(d['path'])}</a>: {code}" in verdict
    labels = [p["shown"]["label"] for p in model_partitions(model).values()]
    assert sorted(labels) == [f"txn-0 ({d.parent.name}/logdir)" for d in sorted(dirs)]


def test_a_log_that_rolls_on_every_append_says_so(tmp_path: Path) -> None:
    """kdump explain's tiny segments (12 one-batch segments, an offset index with room for
    none: segment.index.bytes 4) show in the overview's "rolled by", not as a fault."""
    d = tmp_path / "tiny-0"
    for i in range(12):
        segment(d, [batch(i, 1, T0 + i)])
    layers = ConfigLayers(options=(parse_config_option("segment.index.bytes=4"),))
    model = collect([str(d)], ReportOptions(now=T0 + 60_000, layers=layers))
    row = rows(model)[str(d)]
    assert row.rolled_by == "rolls on every append; offset index full ×11, time index full ×11"
    assert row.status == "ok" and row.problems[-1].startswith("tiny segments: 11 closed segments")


def test_a_power_loss_zero_tail_is_a_warning_that_loses_nothing(tmp_path: Path) -> None:
    """The runbook trial: zeros after the active segment's last batch put a partition among
    the 'damaged' (red, first) and its plot said '2.3 KiB lost'; verify grades them a warning
    (LOG_ZERO_TAIL: no record lost). Now a warning, named for what it is."""
    partition = tmp_path / "logdir" / "plain-0"
    shutil.copytree(ORACLE / "plain-0", partition)
    active = max(partition.glob("*.log"))
    end = active.stat().st_size
    with active.open("ab") as log:
        log.write(bytes(2335))
    model = collect([str(partition)], ReportOptions(now=NOW))
    (row,) = rows(model).values()
    assert row.status == "warnings"
    assert row.problems[0] == (
        f"zeros after the last batch of segment {active.name[:20].lstrip('0')} from position "
        f"{end}: recovery truncates them, no record is lost"
    )
    drawn = log_plot(model.partitions[0])
    assert (
        f"offset {model.partitions[0].facts['log_end_offset']}: 2.3 KiB of zeros, no record lost"
        in drawn
    )
