"""kdump report without a browser: the command's exit codes and errors, and what the model and
plots say about known partitions (tests/test_report_browser.py looks at the page)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from clirun import run_kdump
from conftest import ORACLE

from kdump.config import ConfigLayers, parse_config_option
from kdump.report import ReportOptions, collect
from kdump.report.svg import index_plot, offsets_plot, time_plot, txn_plot
from kdump.units import parse_timestamp

CRC = ORACLE.parent / "corrupt" / "log-crc-mismatch"
NOW = parse_timestamp("2023-11-14T22:13:40Z")  # plain-0's batches: 22:13:20 .. 22:13:35


def test_exit_codes_and_one_line_summary(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    ran = run_kdump(["report", str(CRC), str(ORACLE / "plain-0"), "-o", str(out)])
    assert ran.exit_code == 2
    assert ran.stderr == f"{out}: 2 partition(s) in 2 log dir(s), 2 error(s)\n"
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
    model = collect([str(CRC)], ReportOptions(now=parse_timestamp("2024-01-01T00:00:00Z")))
    (p,) = model.partitions
    assert {f.code for f in p.findings} == {"LOG_CRC_MISMATCH", "TXN_HANGING"}
    assert (p.high_watermark, p.last_stable_offset, p.blocked_records) == (218, 211, 7)
    (txn,) = p.open_transactions
    assert (txn.producer_id, txn.first_offset, txn.hanging) == (2000, 211, True)
    assert p.summary.startup == [
        "truncates 00000000000000000000.log at position 2215 (2543 bytes) if it recovers that "
        "segment"
    ]
    assert [s.base_offset for s in p.segments] == [0, 63, 126, 186]
    assert p.segments[-1].active and all(s.roll_causes for s in p.segments[:-1])
    plot = txn_plot(p)
    assert plot.count('class="txn hanging"') == 1 and 'class="lso"' in plot


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
