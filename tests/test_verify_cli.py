"""`kdump verify` as cron runs it: the installed console script in a subprocess, its output
formats, --fail-on exit codes, --quiet, usage errors (exit 3), plain text on a pipe."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipapp
from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import on_terminal
from conftest import CORRUPT, FIXTURES, ORACLE, REALFILES, REPO

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.cli import cli

KDUMP = Path(sys.executable).with_name("kdump")
FINDING_KEYS = {"code", "severity", "path", "offset", "position", "message", "fix", "advice"}
ANSI = "\x1b["

CRC = CORRUPT / "log-crc-mismatch" / "txn-0"  # one error
NO_INDEX = CORRUPT / "index-missing" / "txn-0"  # one warning
LIVE = ORACLE / "followerlive-0"  # infos only
CLEAN = ORACLE / "txn-0"  # nothing


def kdump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KDUMP), "verify", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )


def test_console_script_is_installed() -> None:
    assert KDUMP.exists(), "pip install -e '.[test]' into the venv first"


# --- formats -------------------------------------------------------------------------------


def test_json_has_findings_and_summary() -> None:
    run = kdump("--format", "json", CRC, NO_INDEX)
    assert run.returncode == 2
    doc = json.loads(run.stdout)
    assert set(doc) == {"findings", "summary", "run"}  # run: tests/test_metrics.py
    library = verify_paths([str(CRC), str(NO_INDEX)], VerifyOptions())
    assert doc["findings"] == [f.to_dict() for f in library.findings]
    summary = doc["summary"]
    assert summary["partitions"] == 2
    assert summary["findings"] == {"error": 1, "warning": 1, "info": 0}
    assert summary["segments"] == 8
    assert [p["path"] for p in summary["by_partition"]] == [str(CRC), str(NO_INDEX)]
    for finding in doc["findings"]:
        assert set(finding) == FINDING_KEYS


def test_json_of_a_clean_partition_has_no_findings() -> None:
    run = kdump("--format", "json", CLEAN)
    assert run.returncode == 0
    doc = json.loads(run.stdout)
    assert doc["findings"] == []
    assert doc["summary"]["by_partition"][0]["last_offset"] == 217
    assert run.stderr == ""


def test_jsonl_is_one_finding_per_line() -> None:
    run = kdump("--format", "jsonl", "--deep", CRC, NO_INDEX, LIVE)
    lines = run.stdout.splitlines()
    findings = [json.loads(line) for line in lines]
    library = verify_paths([str(CRC), str(NO_INDEX), str(LIVE)], VerifyOptions(deep=True))
    assert len(lines) == len(library.findings) > 2
    for line, finding in zip(findings, library.findings, strict=True):
        assert set(line) == FINDING_KEYS
        assert line == finding.to_dict()
    crc = next(f for f in findings if f["code"] == "LOG_CRC_MISMATCH")
    assert crc["severity"] == "error"
    assert (crc["position"], crc["offset"]) == (2215, 30)
    assert crc["fix"] is not None
    assert run.returncode == 2


def test_jsonl_of_a_clean_partition_is_empty() -> None:
    run = kdump("--format", "jsonl", CLEAN)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_text_report_has_a_table_the_findings_and_totals() -> None:
    run = kdump(CRC)
    assert run.returncode == 2
    out = run.stdout
    assert "kdump verify" in out
    assert "partition" in out and "segments" in out and "first timestamp" in out
    assert str(CRC) in out
    line = next(x for x in out.splitlines() if "LOG_CRC_MISMATCH" in x)
    assert line.startswith("error")
    assert f"{CRC}/00000000000000000000.log:2215 offset 30:" in line
    assert "[fix: kdump " in line
    assert out.splitlines()[-1] == "1 partition(s): 1 error(s), 0 warning(s), 0 info"
    assert run.stderr == ""


def test_text_on_a_pipe_is_plain() -> None:
    """No colours and no progress bar when stdout and stderr are not terminals."""
    run = kdump("--deep", CRC, NO_INDEX, LIVE)
    assert ANSI not in run.stdout and ANSI not in run.stderr
    assert run.stderr == ""


def test_text_on_a_terminal_is_coloured() -> None:
    """The same report on a terminal does carry ANSI styles: the pipe test can fail."""
    ran = on_terminal(["verify", str(CRC)], columns=200, styles=True)
    assert ran.exit_code == 2
    out = ran.stdout.encode()
    assert ANSI.encode() in out
    assert b"LOG_CRC_MISMATCH" in out


def test_at_80_columns_each_fix_is_a_line_of_its_own_whole(tmp_path: Path) -> None:
    """Issue 44.9: on an 80-column terminal a fix wrapped inside its path, and a copy of it
    no longer ran. Each fix has a line of its own, never broken; on a pipe a finding stays one
    line."""
    deep = tmp_path / ("a-log-dir-whose-path-is-longer-than-a-line-" * 2) / "txn-0"
    shutil.copytree(CORRUPT / "log-crc-mismatch" / "txn-0", deep)
    findings = verify_paths([str(deep)], VerifyOptions()).findings
    fixes = {f.fix for f in findings if f.fix}
    assert fixes and all(len(fix) > 80 for fix in fixes)
    ran = on_terminal(["verify", str(deep)], columns=80)
    assert ran.exit_code == 2, ran.stdout
    lines = ran.stdout.splitlines()
    assert all(f"  fix: {fix}" in lines for fix in fixes), ran.stdout
    assert sum(line.startswith("  fix: ") for line in lines) == len([f for f in findings if f.fix])
    piped = CliRunner().invoke(cli, ["verify", str(deep)])
    assert all(f" [fix: {fix}]\n" in piped.output for fix in fixes)


def test_from_the_one_file_build_a_fix_runs_as_kdump_was_run(tmp_path: Path) -> None:
    """Issue 44.9: run as `python3 kdump.pyz`, on a host with no `kdump` command, the fix
    lines said `kdump ...`. Printed for a person, a fix starts as kdump was started here (in
    JSON it stays `kdump ...`: results are read on other hosts)."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\nfrom kdump.cli import main\nmain()\n"
    )
    pyz = tmp_path / "kdump.pyz"
    zipapp.create_archive(app, pyz)
    ran = subprocess.run(
        [sys.executable, str(pyz), "verify", str(CRC)], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 2, ran.stderr
    fixes = [line for line in ran.stdout.splitlines() if "[fix: " in line]
    assert fixes and all(f"[fix: {sys.executable} {pyz} recover " in f for f in fixes), fixes
    as_json = subprocess.run(
        [sys.executable, str(pyz), "verify", "--format", "json", str(CRC)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    doc = json.loads(as_json.stdout)
    assert all(f["fix"].startswith("kdump ") for f in doc["findings"] if f["fix"])


# --- exit codes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "on_error", "on_warning", "on_never"),
    [
        (CRC, 2, 2, 0),
        (NO_INDEX, 0, 1, 0),
        (LIVE, 0, 0, 0),
        (CLEAN, 0, 0, 0),
    ],
    ids=["errors", "warnings", "infos", "clean"],
)
def test_fail_on(target: Path, on_error: int, on_warning: int, on_never: int) -> None:
    def exit_code(*args: str) -> int:
        result = CliRunner().invoke(cli, ["verify", "--quiet", *args, str(target)])
        assert result.exception is None or isinstance(result.exception, SystemExit)
        return result.exit_code

    assert exit_code() == on_error  # the default is --fail-on error
    assert exit_code("--fail-on", "error") == on_error
    assert exit_code("--fail-on", "warning") == on_warning
    assert exit_code("--fail-on", "never") == on_never


def test_fail_on_in_the_installed_script() -> None:
    assert kdump("--fail-on", "warning", NO_INDEX).returncode == 1
    assert kdump("--fail-on", "never", CRC).returncode == 0


def test_errors_win_over_warnings_across_paths() -> None:
    assert kdump("--fail-on", "warning", NO_INDEX, CRC).returncode == 2


def test_a_segment_file_verifies_only_that_segment() -> None:
    run = kdump("--format", "json", CRC / "00000000000000000000.log")
    doc = json.loads(run.stdout)
    assert run.returncode == 2
    assert {f["path"] for f in doc["findings"]} == {str(CRC / "00000000000000000000.log")}
    clean = kdump("--format", "json", CRC / "00000000000000000063.log")
    assert clean.returncode == 0
    assert json.loads(clean.stdout)["findings"] == []


# --- --quiet -------------------------------------------------------------------------------


def test_quiet_prints_only_warnings_and_errors() -> None:
    run = kdump("--quiet", CRC, NO_INDEX, LIVE)
    lines = run.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["error", "LOG_CRC_MISMATCH"],
        ["warning", "INDEX_MISSING"],
    ]
    assert run.returncode == 2


def test_quiet_on_a_healthy_partition_prints_nothing() -> None:
    for target in (CLEAN, LIVE):
        run = kdump("--quiet", target)
        assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


# --- usage and I/O problems: exit 3, one line, no traceback --------------------------------


@pytest.mark.parametrize(
    "target",
    [
        FIXTURES / "no-such-dir",
        REALFILES / "segmentio__kafka-go",  # hex dumps, not a log dir
        REALFILES / "SOURCES.md",  # a file that is not a segment
    ],
    ids=["missing", "not-kafka", "not-a-segment"],
)
def test_bad_path_exits_3_with_one_line(target: Path) -> None:
    run = kdump(target)
    assert run.returncode == 3
    assert run.stdout == ""
    assert run.stderr.startswith(f"kdump: {target}")
    assert len(run.stderr.splitlines()) == 1
    assert "Traceback" not in run.stderr


def test_no_path_is_a_usage_error() -> None:
    run = kdump()
    assert run.returncode == 3  # click's usage error, in kdump's exit code
    assert "Traceback" not in run.stderr


def test_bad_option_value_is_a_usage_error() -> None:
    run = kdump("--fail-on", "sometimes", CLEAN)
    assert run.returncode == 3
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("width", [60, 80, 160])
def test_terminal_table_never_cuts_a_partition_name(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal of any width the partition's name is whole and the log dir is there once
    above its table, folded only after a ``/`` (issue 28 point 13: an 80-column terminal showed
    ``.../logdir/__consumer_offset`` / ``s-0``); less important columns go first; never an
    ellipsis."""
    import io
    import re

    from kdump.checks.findings import Severity
    from kdump.checks.verify import VerifyOptions, verify_paths
    from kdump.render.verify import render_text

    monkeypatch.setenv("COLUMNS", str(width))
    log_dir = "fixtures/realfiles/aryan-jadon__Distributed-Kafka-Clusters/data/kafka-logs"
    names = ["__consumer_offsets-22", "__consumer_offsets-3"]
    result = verify_paths([f"{log_dir}/{name}" for name in names], VerifyOptions())
    out = io.StringIO()
    render_text(result, out, True, False, Severity.ERROR)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue())
    assert "…" not in text
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    heading = lines[: next(i for i, line in enumerate(lines) if not line.strip())]
    assert "".join(line.strip() for line in heading) == f"kdump verify: {log_dir}/"
    assert all(line.endswith("/") for line in heading)  # each line breaks after a slash
    rows = [line.split()[0] for line in lines if line.strip().startswith("__consumer")]
    assert rows == names
    assert (len(heading) == 1) == (width == 160)


def test_a_named_segment_counts_that_segment(tmp_path: Path) -> None:
    """Issue 44.9: `verify DIR/000…258.log` printed the partition's 6 segments and 115 KiB
    beside that one segment's batches: what was read is that segment (the partition's facts
    keep the whole partition's)."""
    log = ORACLE / "plain-0" / "00000000000000000258.log"
    doc = json.loads(kdump("--format", "json", log).stdout)
    (summary,) = doc["summary"]["by_partition"]
    assert (summary["segments_read"], summary["bytes_read"]) == (1, log.stat().st_size)
    assert summary["segments"] == 6  # the partition's, as the broker loads it
    assert doc["summary"]["segments"] == 1


def _two_topics(root: Path) -> Path:
    """orders-0 and audit-0, each one segment of 1.3 MB, in a KRaft log dir whose image gives
    orders (only) segment.bytes 1 MiB and segment.index.bytes 1 KiB."""
    from kraftlog import kraft_log_dir

    orders = {"segment.bytes": "1048576", "segment.index.bytes": "1024"}
    return kraft_log_dir(root / "data", {"orders": orders}, ("orders-0", "audit-0"), 1300)


def test_oversize_is_judged_by_each_topics_own_settings(tmp_path: Path) -> None:
    """Issue 44.2: verify judged every segment and index against one --segment-bytes and
    --max-index-size (Kafka's defaults unless given), not each topic's segment.bytes and
    segment.index.bytes from the layers explain, txn and the repairs read. orders' 1.3 MB
    segment is over its 1 MiB (the node's KRaft image), audit's is not over Kafka's 1 GiB."""
    log_dir = _two_topics(tmp_path)
    doc = json.loads(kdump("--format", "json", log_dir).stdout)
    over = {
        (Path(f["path"]).parent.name, f["code"]): f["message"]
        for f in doc["findings"]
        if f["code"].endswith("OVERSIZE")
    }
    assert sorted(over) == [
        ("orders-0", "INDEX_OVERSIZE"),
        ("orders-0", "LOG_SEGMENT_OVERSIZE"),
        ("orders-0", "TIMEINDEX_OVERSIZE"),
    ]
    assert over["orders-0", "LOG_SEGMENT_OVERSIZE"].endswith(
        "more than segment.bytes 1048576 (metadata image of "
        f"{log_dir / '__cluster_metadata-0'} at offset 1 (topic orders))"
    )
    assert "more than segment.index.bytes 1024 (" in over["orders-0", "INDEX_OVERSIZE"]
    # given on the command line, for every partition
    given = json.loads(kdump("--format", "json", "--segment-bytes", "1048576", log_dir).stdout)
    flagged = sorted(
        Path(f["path"]).parent.name
        for f in given["findings"]
        if f["code"] == "LOG_SEGMENT_OVERSIZE"
    )
    assert flagged == ["audit-0", "orders-0"]
    assert all(
        f["message"].endswith("more than segment.bytes 1048576 (--segment-bytes)")
        for f in given["findings"]
        if f["code"] == "LOG_SEGMENT_OVERSIZE"
    )


def test_a_closed_time_index_may_hold_one_entry_past_segment_index_bytes(tmp_path: Path) -> None:
    """At a roll the broker appends the segment's largest timestamp to its time index without
    the full check (TimeIndex.maybeAppend's skipFullCheck): under segment.index.bytes 4 (its
    least) every closed segment keeps a 12-byte time index, which is not oversize; two
    entries are."""
    from explainbuild import T0, batch, segment

    d = tmp_path / "tiny-0"
    for i in range(3):
        segment(d, [batch(i, 1, T0 + i)], interval=1 << 30)
    tight = ("--format", "json", "--config", "segment.index.bytes=4", d)
    codes = [f["code"] for f in json.loads(kdump(*tight).stdout)["findings"]]
    assert "TIMEINDEX_OVERSIZE" not in codes
    two = d / f"{1:020d}.timeindex"
    two.write_bytes(two.read_bytes() * 2)
    over = [
        f for f in json.loads(kdump(*tight).stdout)["findings"] if f["code"] == "TIMEINDEX_OVERSIZE"
    ]
    assert [Path(f["path"]).name for f in over] == [two.name]
    assert "24 bytes, more than segment.index.bytes 4" in over[0]["message"]
