"""What each command imports for a plain local partition, counted (issue 45 point 1): the
modules of ``kdump verify`` of a one-segment partition, ``kdump --files X.index`` and
``kdump --version``, pinned, so that the next feature cannot add its start-up to them unseen.

Each command runs in a fresh interpreter (what a user's shell starts) and says, at its exit,
which modules it loaded beyond the interpreter's own. Nothing is timed: a module added to a
command's path fails here, with its name; import it where it is needed (as kdump.checks.verify
imports the compacted audit, the state file and the object store), or, if the command needs it
on every run, add it below.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE, REPO

from kdump import speedups, timings
from kdump.errors import ExitCode

pytestmark = pytest.mark.skipif(
    speedups.native() is None,
    reason="kdump's C module is not built here (without it, ctypes stands in for its calls)",
)

REPORT = """
import atexit, sys
before = set(sys.modules)
atexit.register(lambda: sys.stderr.write(
    "MODULES " + " ".join(sorted(set(sys.modules) - before)) + "\\n"))
from kdump.cli import main
sys.argv[0] = "kdump"
main()
"""
"""A child running the ``kdump`` script's ``main``, naming at exit the modules it loaded."""

CORE = {
    "kdump", "kdump._speedups", "kdump._version", "kdump.cli", "kdump.commands",
    "kdump.commands.dump_options", "kdump.commands.filters", "kdump.commands.options",
    "kdump.commands.output", "kdump.errors", "kdump.format", "kdump.format.layout",
    "kdump.releases", "kdump.speedups", "kdump.tuples", "kdump.untrusted",
}  # fmt: skip
"""Every command's: the command line, its options, the C module (loaded once, here)."""

READING = {
    "kdump.crc", "kdump.format.batch", "kdump.format.compression", "kdump.format.index",
    "kdump.format.names", "kdump.format.records",
    "kdump.format.timeindex", "kdump.format.walk", "kdump.java", "kdump.progress",
    "kdump.render", "kdump.render.progress_display", "kdump.storage", "kdump.storage.base",
    "kdump.storage.local", "kdump.storage.reading", "kdump.storage.records",
    "kdump.storage.remote", "kdump.storage.remote.urls",
}  # fmt: skip
"""What reads a local segment file: its formats, the mapped file, the page-cache guard."""

PINNED = {
    "--version": CORE,
    "--files X.index": CORE | READING | {
        "kdump.commands.dump", "kdump.format.filters", "kdump.render.describe",
        "kdump.render.dump_index", "kdump.render.dump_segments", "kdump.render.lines",
    },
    "verify PARTITION": CORE | READING | {
        "kdump.checks", "kdump.checks.audit", "kdump.checks.codes", "kdump.checks.findings",
        "kdump.checks.fixes", "kdump.checks.gather", "kdump.checks.indexes", "kdump.checks.log",
        "kdump.checks.options", "kdump.checks.partition", "kdump.checks.segment",
        "kdump.checks.severity", "kdump.checks.sink", "kdump.checks.verify",
        "kdump.commands.outcome", "kdump.commands.verify", "kdump.config", "kdump.discovery",
        "kdump.log_dir", "kdump.log_loader", "kdump.log_scan", "kdump.parallel",
        "kdump.render.console", "kdump.render.verify", "kdump.run", "kdump.segment",
        "kdump.unified_log", "kdump.units",
    },
}  # fmt: skip
"""The kdump modules each command loads for a plain one-segment local partition."""

NEVER = {
    "json", "dataclasses", "pathlib", "ctypes", "multiprocessing", "pickle", "secrets",
    "difflib", "decimal", "subprocess", "tempfile", "shutil", "concurrent", "logging",
    "hashlib", "queue", "socket", "selectors", "argparse", "random", "statistics", "zipfile",
    "tarfile", "html", "xml", "email", "http", "urllib", "sqlite3", "asyncio", "rich",
}  # fmt: skip
"""Modules (and packages) of a few milliseconds each that none of these commands needs: the
state file's JSON, the forked workers' machinery, the object stores' clients, report and
explain are loaded by the runs that use them."""


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-segment partition of Kafka-written bytes (the oracle's plain partition's first)."""
    directory = tmp_path_factory.mktemp("startup") / "plain-0"
    directory.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        name = "00000000000000000000" + suffix
        shutil.copyfile(ORACLE / "plain-0" / name, directory / name)
    return directory


def loaded(*args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ran = subprocess.run(
        [sys.executable, "-c", REPORT, *args], capture_output=True, text=True, env=env, cwd=REPO
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (line,) = [x for x in ran.stderr.splitlines() if x.startswith("MODULES ")]
    return set(line.split()[1:])


def commands(partition: Path) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "--files X.index": ["--files", str(partition / "00000000000000000000.index")],
        "verify PARTITION": ["verify", str(partition)],
    }


@pytest.mark.parametrize("command", list(PINNED))
def test_each_command_loads_its_pinned_modules(partition: Path, command: str) -> None:
    modules = loaded(*commands(partition)[command])
    mine = {m for m in modules if m == "kdump" or m.startswith("kdump.")}
    added, gone = sorted(mine - PINNED[command]), sorted(PINNED[command] - mine)
    assert (added, gone) == ([], []), f"{command}: added {added}, no longer loaded {gone}"
    heavy = sorted(m for m in modules if m.split(".")[0] in NEVER)
    assert heavy == [], f"{command} loads {heavy}"


def test_the_count_sees_a_module_a_command_did_not_load_before(partition: Path) -> None:
    """The report is of the command's own run: the same verify with JSON output loads json,
    with --state its state file's module too."""
    as_json = loaded("verify", "--format", "json", str(partition))
    assert "json" in as_json and "kdump.checks.verify_state" not in as_json
    state = loaded("verify", "--state", str(partition.parent / "state.json"), str(partition))
    assert {"kdump.checks.verify_state", "json"} <= state


@pytest.mark.parametrize("order", [["--version", "--timings"], ["--timings", "--version"]])
def test_version_timings_reports_each_probe_against_import_click(
    order: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kdump --version --timings`` for a bug report: each probe's median and its ratio to
    ``python -c "import click"`` (one run each here: the figures are not judged, only shown)."""
    monkeypatch.setattr(timings, "RUNS", 1)
    ran = run_kdump(order)
    assert ran.exit_code == 0, ran.stderr
    shown = ran.stdout.splitlines()
    assert shown[0].startswith("kdump, version ")
    at = shown.index("start-up, median of 1 runs each (wall, milliseconds; ratio to import click):")
    probes = [
        re.fullmatch(r"  (.+): (\d+\.\d) ms \((\d+\.\d\d)x\)", line) for line in shown[at + 1 :]
    ]
    assert all(probes), shown
    assert [p[1] for p in probes if p] == [name for name, _ in timings.PROBES]
    assert dict((p[1], p[3]) for p in probes if p)["python, import click"] == "1.00"


def test_timings_without_version_is_a_usage_error() -> None:
    ran = run_kdump(["--timings"])
    assert ran.exit_code == ExitCode.BAD_INPUT  # usage or unreadable input
    assert "--timings measures start-up with --version" in ran.stderr
