"""Text that read garbled (issue 28 point 14): a value told twice, a sentence's period before a
semicolon, an empty partition given offsets it does not have."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from clirun import run_kdump
from conftest import ORACLE, REALFILES
from reportpage import read_page

from kdump.report.svg import log_plot
from kdump.units import offset_span

EMPTY = REALFILES / "Bheem6005__kafka" / "kafka-logs" / "__consumer_offsets-1"
"""A partition with one empty segment: log start = log end offset = high watermark = 0."""


def test_the_transaction_timeout_is_told_once() -> None:
    ran = run_kdump(["txn", str(ORACLE / "txn-0"), "--transaction-max-timeout-ms", "900000"])
    header = ran.stdout.splitlines()[0]
    assert header.endswith("; transaction timeout 900000 ms (15m)"), header


def test_kafkas_sentence_ends_before_what_lookup_does_instead(tmp_path: Path) -> None:
    """Kafka's CorruptIndexException text ends with a period; the warning went on ".; reading"."""
    partition = tmp_path / "plain-0"
    shutil.copytree(ORACLE / "plain-0", partition)
    time_index = partition / "00000000000000000000.timeindex"
    time_index.write_bytes(time_index.read_bytes()[:13])
    ran = run_kdump(["lookup", str(partition), "--timestamp", "0"])
    (warning,) = [line for line in ran.stderr.splitlines() if "multiple of" in line]
    assert warning.endswith(
        "neither positive nor a multiple of 12; reading timestamps from the log"
    )


def test_offsets_are_the_ones_there_are() -> None:
    """A log end offset is the next offset: the offsets end one before it, and a log whose
    start is its end has none ("offsets 0..0" read as one offset)."""
    assert offset_span(0, 1500) == "offsets 0..1499"
    assert offset_span(7, 8) == "offsets 7..7"
    assert offset_span(0, 0) == offset_span(500, 500) == "no offsets"


def test_the_report_gives_an_empty_partition_no_offsets(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert run_kdump(["report", str(EMPTY), str(ORACLE / "plain-0"), "-o", str(out)]).exit_code == 0
    page = out.read_text()
    _, cells = read_page(page)
    assert cells[str(EMPTY)]["offsets"] == "no offsets"
    (plain,) = re.findall(r"plain-0 · \d+ segment[^<]*", page)
    assert "· offsets 0..1499 · high watermark 1500" in plain, plain


def test_an_empty_segments_title_has_no_offsets() -> None:
    from kdump.report import ReportOptions, collect

    model = collect([str(EMPTY)], ReportOptions(now=0))
    (partition,) = model.partitions
    assert "segment 0: no offsets, 0 B" in log_plot(partition)
