"""Progress on every long command, as a person at a terminal sees it: rich bars on stderr with
bytes done/total, rate and time left; nothing with --quiet or when output goes to a pipe.

The commands run as processes with stderr on a pseudo-terminal (the only way to be "a
terminal"); stdout goes to a file, to a pipe, or to the same terminal.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import ORACLE, REALFILES
from purepython import pure_python
from rich.console import Console

from kdump.render.progress_display import PURE_PYTHON_NOTICE_BYTES, progress_display

KDUMP = [sys.executable, "-m", "kdump"]
LOG_DIR = REALFILES / "Bheem6005__kafka" / "kafka-logs"
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(
    args: list[str], stdout: str = "file", tmp: Path | None = None, columns: int = 200
) -> tuple[int, str]:
    """Run kdump with stderr on a pseudo-terminal; what the terminal showed, colours removed."""
    master, slave = pty.openpty()
    target: int | object
    if stdout == "terminal":
        target = slave
    elif stdout == "pipe":
        target = subprocess.PIPE
    else:
        assert tmp is not None
        target = open(tmp / "stdout.txt", "wb")  # noqa: SIM115
    env = {**os.environ, "COLUMNS": str(columns)}
    proc = subprocess.Popen([*KDUMP, *args], stdout=target, stderr=slave, env=env)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    if proc.stdout is not None:
        proc.stdout.read()
    code = proc.wait()
    os.close(master)
    return code, ANSI.sub(b"", shown).decode(errors="replace")


# the rate's unit is whatever the machine reaches (bytes/s up to TB/s): no test depends on speed
BYTES_BAR = re.compile(
    r"100% +[0-9.]+/[0-9.]+ (?:bytes|[KMGT]iB) +[0-9.?]+ (?:bytes|[kMGTP]?B)/s +\d+:\d\d:\d\d"
)


@pytest.mark.parametrize(
    "args",
    [
        ["verify", str(LOG_DIR)],
        ["txn", str(LOG_DIR)],
        ["explain", str(LOG_DIR)],
        ["dump", str(ORACLE / "plain-0")],
    ],
    ids=["verify", "txn", "explain", "dump-directory"],
)
def test_a_terminal_sees_bytes_rate_and_time_left(args: list[str], tmp_path: Path) -> None:
    code, shown = on_terminal(args, tmp=tmp_path)
    assert code in (0, 1, 2)
    assert BYTES_BAR.search(shown), shown[-400:]
    assert shown.count(args[0]) >= 1


@pytest.mark.parametrize("command", ["rebuild-index", "recover"])
def test_repairs_show_progress_too(command: str, tmp_path: Path) -> None:
    partition = Path(shutil.copytree(ORACLE / "plain-0", tmp_path / "logdir" / "plain-0"))
    code, shown = on_terminal([command, str(partition), "--dry-run"], tmp=tmp_path)
    assert code == 0
    assert BYTES_BAR.search(shown), shown[-400:]
    assert "would change" in (tmp_path / "stdout.txt").read_text()


@pytest.mark.parametrize("command", ["verify", "txn", "explain"])
def test_nothing_with_quiet(command: str, tmp_path: Path) -> None:
    code, shown = on_terminal([command, str(ORACLE / "plain-0"), "--quiet"], tmp=tmp_path)
    assert (code, shown) == (0, "")


def test_nothing_when_stdout_is_a_pipe() -> None:
    code, shown = on_terminal(["verify", str(ORACLE / "plain-0")], stdout="pipe")
    assert (code, shown) == (0, "")


def test_a_streaming_dump_on_the_terminal_is_not_mixed_with_a_bar() -> None:
    code, shown = on_terminal(["dump", str(ORACLE / "plain-0")], stdout="terminal")
    assert code == 0
    assert "Dumping" in shown and "%" not in shown.split("Dumping")[0]
    assert not BYTES_BAR.search(shown)


def test_spark_stages_count_tasks_with_rate_and_time_left() -> None:
    out = StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with progress_display(True, "tasks", console) as display:
        assert display is not None
        bar = display.bar("stage 3", 4)
        bar.set(4, 4, "stage 3")
    shown = out.getvalue()
    assert "stage 3" in shown and "4/4" in shown and "tasks/s" in shown


def test_report_shows_progress_and_quiet_silences_it(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    code, shown = on_terminal(["report", str(LOG_DIR), "-o", str(out)], tmp=tmp_path)
    assert code == 0 and BYTES_BAR.search(shown), shown[-400:]
    code, shown = on_terminal(["report", str(LOG_DIR), "-o", str(out), "-q"], tmp=tmp_path)
    assert (code, shown) == (0, "")


def test_an_80_column_terminal_shows_the_bar_on_one_line(tmp_path: Path) -> None:
    """Issue 28 point 13: at 80 columns the numbers folded (``2.6…`` above ``KiB``): the bar
    narrows and the file's name goes first."""
    code, shown = on_terminal(["verify", str(LOG_DIR)], tmp=tmp_path, columns=80)
    assert code in (0, 1, 2)
    frames = [f for f in re.split(r"[\r\n]+", shown) if "━" in f]
    assert frames and all(BYTES_BAR.search(f) for f in frames if "100%" in f), frames[-3:]
    assert any("100%" in f for f in frames)


@pytest.mark.parametrize("size", [PURE_PYTHON_NOTICE_BYTES, PURE_PYTHON_NOTICE_BYTES + 1])
def test_more_than_1_gib_without_the_c_paths_is_said_once_unless_quiet(
    tmp_path: Path, size: int
) -> None:
    """Pure Python is up to 45x slower (issue 34): a run reading more than 1 GiB without the C
    paths says so on stderr first, once; -q silences it, and with the C paths there is none.
    The log is sparse (no disk) and all zeros (the dump stops at its first batch)."""
    log = tmp_path / "00000000000000000000.log"
    with log.open("wb") as f:
        f.truncate(size)
    with pure_python():
        said = run_kdump(["dump", str(log)]).stderr
        quiet = run_kdump(["dump", "-q", str(log)]).stderr
    with_c = run_kdump(["dump", str(log)]).stderr
    notice = (
        "kdump: reading 1.0 GiB without the C fast paths (switched off): pure Python is up to 45x "
        "slower; kdump --version says how to get them (-q: no notice)\n"
    )
    assert said.count("C fast paths") == (size > PURE_PYTHON_NOTICE_BYTES)
    assert said.startswith(notice) == (size > PURE_PYTHON_NOTICE_BYTES)
    assert "C fast paths" not in quiet + with_c
    assert said.replace(notice, "") == quiet == with_c
