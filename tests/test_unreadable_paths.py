"""explain, txn and report as verify: every readable path is reported, each unreadable one is
named on stderr in one line, and the exit code is 3 (a bad input); nothing readable at all is
the first error alone."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import NOBODY, as_user, run_kdump
from conftest import ORACLE, REPO

GOOD = ORACLE / "txn-0"


def bad_paths(tmp_path: Path) -> tuple[Path, Path]:
    missing = tmp_path / "gone"
    empty = tmp_path / "not-kafka"
    empty.mkdir()
    (empty / "notes.txt").write_text("no Kafka here\n")
    return missing, empty


def expected_stderr(missing: Path, empty: Path) -> str:
    return (
        f"kdump: {missing}: no such file or directory\n"
        f"kdump: {empty}: holds no Kafka partition or log directory\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["explain", "--format", "json"],
        ["txn", "--format", "json", "--now", "1700000100000"],
        ["verify", "--format", "json"],
    ],
)
def test_readable_paths_are_reported_and_unreadable_ones_named(
    tmp_path: Path, command: list[str]
) -> None:
    missing, empty = bad_paths(tmp_path)
    ran = run_kdump([*command, str(missing), str(GOOD), str(empty)])
    assert ran.exit_code == 3
    assert ran.stderr == expected_stderr(missing, empty)
    doc = json.loads(ran.stdout)
    paths = json.dumps(doc)
    assert str(GOOD) in paths  # the readable partition is in the output


@pytest.mark.parametrize("command", [["explain"], ["txn"], ["verify"]])
def test_nothing_readable_is_the_first_error_alone(tmp_path: Path, command: list[str]) -> None:
    missing, empty = bad_paths(tmp_path)
    ran = run_kdump([*command, str(missing), str(empty)])
    assert (ran.exit_code, ran.stdout) == (3, "")
    assert ran.stderr == f"kdump: {missing}: no such file or directory\n"


def test_report_writes_what_it_read_and_names_the_rest(tmp_path: Path) -> None:
    missing, empty = bad_paths(tmp_path)
    out = tmp_path / "r.html"
    ran = run_kdump(["report", str(missing), str(GOOD), str(empty), "-o", str(out)])
    assert ran.exit_code == 3
    lines = ran.stderr.splitlines()
    assert lines[0].startswith(f"{out}: 1 partition(s)")
    assert "\n".join(lines[1:]) + "\n" == expected_stderr(missing, empty)
    assert "txn-0" in out.read_text()
    ran = run_kdump(["report", str(missing), "-o", str(tmp_path / "none.html")])
    assert ran.exit_code == 3 and not (tmp_path / "none.html").exists()


def test_a_run_with_an_unreadable_path_is_no_success_for_prom(tmp_path: Path) -> None:
    missing, _ = bad_paths(tmp_path)
    prom = tmp_path / "explain.prom"
    ran = run_kdump(["explain", str(GOOD), str(missing), "--prom", str(prom)])
    assert ran.exit_code == 3
    text = prom.read_text()
    assert 'kdump_exit_status{command="explain"} 3' in text
    # a first run that did not read everything has no last success
    assert "\nkdump_last_success_timestamp_seconds{" not in text


def _as_nobody(args: list[str]) -> tuple[int, str, str]:
    """``kdump args`` run as nobody (root reads every file): exit code, stdout, stderr. It runs
    once as root first, so that everything it imports is imported."""
    run_kdump(args)
    code, stdout, stderr = json.loads(as_user(NOBODY, lambda: json.dumps(run_kdump(args))))
    return code, stdout, stderr


@pytest.fixture
def unreadable_segment() -> Iterator[Path]:
    """plain-0 in a log dir anyone may read, one segment's .log readable by its owner only."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to read as another user")
    top = Path(tempfile.mkdtemp(prefix="kdump-unreadable-"))
    try:
        partition = top / "logs" / "plain-0"
        shutil.copytree(ORACLE / "plain-0", partition)
        for p in (top, top / "logs", partition):
            p.chmod(0o755)
        for p in partition.iterdir():
            p.chmod(0o644)
        log = partition / "00000000000000000258.log"
        log.chmod(0o600)
        yield log
    finally:
        shutil.rmtree(top)


def test_an_unreadable_segment_is_exit_3_as_the_runbook_says(unreadable_segment: Path) -> None:
    """Issue 44.9: verify exited 2 (damage) for a segment it could not read; the runbook's
    step 2 says 3, a path it cannot read. The finding is still printed, the rest verified."""
    code, stdout, _ = _as_nobody(["verify", str(unreadable_segment.parent.parent)])
    assert code == 3
    assert f"error   FILE_UNREADABLE {unreadable_segment}: Permission denied" in stdout
    readme = (REPO / "README.md").read_text()
    assert "exit 0 clean, 2 errors, 3 a path it cannot read" in readme


def test_dump_says_an_unreadable_segment_once(unreadable_segment: Path) -> None:
    """Issue 44.9: dump of the partition said `Permission denied` three times (the log, and
    the index files whose dump reads it): once, the others pointing at it."""
    code, _, stderr = _as_nobody(["dump", str(unreadable_segment.parent)])
    assert code == 3
    lines = stderr.splitlines()
    assert lines.count(f"kdump: {unreadable_segment}: Permission denied") == 1
    others = [line for line in lines if line.endswith(": not dumped (the error above)")]
    assert others and len(lines) == 1 + len(others)
