"""explain, txn and report as verify: every readable path is reported, each unreadable one is
named on stderr in one line, and the exit code is 3 (a bad input); nothing readable at all is
the first error alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE

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
