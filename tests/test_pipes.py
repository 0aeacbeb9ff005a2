"""A reader that closes the pipe early (`kdump ... | head -1`): kdump ends quietly, with the
command's own exit code when it had its answer before writing (verify, lookup, txn, explain,
recover), else 141 (docs/exit-codes.md). Real processes and real pipes: the exit status is what
a shell under `set -o pipefail` sees."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import FIXTURES, ORACLE, REPO

from kdump.errors import ExitCode

CRC = FIXTURES / "corrupt" / "log-crc-mismatch" / "txn-0"
"""A partition verify finds an error in (exit 2)."""
TXN = ORACLE / "txn-0"


def closed_reader(args: list[str], cwd: Path = REPO) -> tuple[int, bytes]:
    """Run ``kdump args`` with standard output on a pipe whose reader has already gone: every
    write fails (EPIPE), whatever the size of the output. Exit code and stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kdump", *args],
            cwd=cwd,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)
    return proc.returncode, proc.stderr


def plain(args: list[str], cwd: Path = REPO) -> int:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args], cwd=cwd, capture_output=True, timeout=120
    ).returncode


@pytest.mark.parametrize(
    "args",
    [
        ["verify", str(CRC)],
        ["verify", "--format", "json", str(CRC)],
        ["verify", str(TXN)],
        ["lookup", str(TXN), "--offset", "5"],
        ["lookup", str(TXN), "--offset", "999999"],
        ["txn", str(TXN)],
        ["explain", str(TXN)],
    ],
    ids=["verify-errors", "verify-json", "verify-clean", "lookup", "lookup-none", "txn", "explain"],
)
def test_closed_pipe_keeps_the_commands_own_code(args: list[str]) -> None:
    code, stderr = closed_reader(args)
    assert stderr == b""
    assert code == plain(args)
    assert code != 1 or args[0] == "lookup"  # never rich's "1" for a broken pipe


def test_verify_under_pipefail_head() -> None:
    """The shell line of the report: `set -o pipefail; kdump verify DIR | head -1`."""
    line = f"set -o pipefail; {sys.executable} -m kdump verify {CRC} | head -1"
    ran = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, timeout=120)
    assert ran.returncode == ExitCode.ERRORS
    assert ran.stdout.strip() != b"" and ran.stderr == b""


def test_dump_cut_short_exits_141() -> None:
    """dump streams: when the reader leaves its answer is not known yet."""
    for args in (["dump", str(TXN)], ["--files", str(TXN / "00000000000000000000.log")]):
        code, stderr = closed_reader(args)
        assert (code, stderr) == (ExitCode.PIPE_CLOSED, b"")


def test_recover_finishes_and_keeps_its_code(tmp_path: Path) -> None:
    """A repair is never left half done because its reader left: it goes on, quietly."""
    for dry_run in (["--dry-run"], []):
        work = tmp_path / ("dry" if dry_run else "real") / "txn-0"
        shutil.copytree(CRC, work)
        reference = tmp_path / ("dry-ref" if dry_run else "real-ref") / "txn-0"
        shutil.copytree(CRC, reference)
        expected = plain(["recover", *dry_run, str(reference)])
        code, stderr = closed_reader(["recover", *dry_run, str(work)])
        assert code == expected and code != 1
        assert b"Traceback" not in stderr
        after = {p.name: p.read_bytes() for p in work.iterdir() if p.is_file()}
        done = {p.name: p.read_bytes() for p in reference.iterdir() if p.is_file()}
        assert sorted(after) == sorted(done)
        assert after == done  # the same repair, reader or not


def test_salvage_finishes_when_its_reader_leaves(tmp_path: Path) -> None:
    """Issue 44.9: `kdump salvage DIR --output-dir OUT | head -1` exited 1, quietly, after
    writing 217 of 706 records. A writing command finishes what it was asked to write."""
    kept = CRC.parent
    outputs = {}
    for how in ("plain", "closed"):
        work = tmp_path / how / "data"
        shutil.copytree(kept, work)
        assert plain(["recover", str(work)]) == ExitCode.OK  # kept files: several to write
        out = tmp_path / how / "out"
        args = ["salvage", str(work), "--output-dir", str(out)]
        if how == "plain":
            assert plain(args) == ExitCode.OK
        else:
            code, stderr = closed_reader(args)
            assert (code, stderr) == (ExitCode.OK, b"")
        outputs[how] = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*.*")}
    assert len(outputs["plain"]) >= 2
    assert outputs["closed"] == outputs["plain"]


def test_a_closed_pipe_is_never_exit_code_1() -> None:
    """click's main turns a broken pipe it sees into exit code 1, which cron reads as
    "warnings": a command that does not handle its reader leaving exits 141."""
    code, stderr = closed_reader(["compact", "--dry-run", str(TXN)])
    assert stderr == b"" and code != 1


def _bulk_log(tmp_path: Path) -> Path:
    """A log whose dump comes in chunks of more than half a megabyte: written by the thread
    behind the rendering (kdump.commands.output), into a widened pipe."""
    from batchbytes import write_partition

    part = write_partition(tmp_path / "bulk-0", (0,), batches=6000)
    return part / "00000000000000000000.log"


def test_bulk_output_through_a_pipe_is_the_dump(tmp_path: Path) -> None:
    """The chunks the thread writes, in order, next to the lines written before and after them:
    the same bytes as a dump with no descriptor under it (no thread, no pipe)."""
    from clirun import run_kdump

    log = _bulk_log(tmp_path)
    for args in (["--files", str(log)], ["dump", str(log), "--format", "jsonl"]):
        piped = subprocess.run(
            [sys.executable, "-m", "kdump", *args], cwd=REPO, capture_output=True, timeout=120
        )
        assert len(piped.stdout) > 1 << 20  # chunks large enough for the thread
        assert (piped.returncode, piped.stderr) == (0, b"")
        assert piped.stdout.decode() == run_kdump(args).stdout


def test_bulk_output_cut_short_exits_141(tmp_path: Path) -> None:
    """The thread meets the closed pipe; the dump ends quietly with 141, at once or after the
    reader's first line (`set -o pipefail; kdump ... | head -1`)."""
    log = _bulk_log(tmp_path)
    assert closed_reader(["--files", str(log)]) == (ExitCode.PIPE_CLOSED, b"")
    line = f"set -o pipefail; {sys.executable} -m kdump --files {log} | head -1"
    ran = subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, timeout=120)
    assert (ran.returncode, ran.stderr) == (ExitCode.PIPE_CLOSED, b"")
    assert ran.stdout == f"Dumping {log}\n".encode()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_bulk_output_into_a_stalled_reader_stops_on_a_signal(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """The thread blocked in a write into a full pipe (its reader stalled) holds nothing the
    interrupted run waits for: one line, 130 or 143, at once (the bound is for a loaded machine)."""
    log = _bulk_log(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdump", "--files", str(log)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == f"Dumping {log}\n".encode()
    time.sleep(1)  # the pipe fills: nobody reads it any more
    proc.send_signal(sig)
    start = time.monotonic()
    assert proc.wait(timeout=30) == code
    assert time.monotonic() - start < 10  # a second when the machine is not loaded
    assert proc.stderr.read() == f"kdump: stopped by {sig.name}\n".encode()
    proc.stdout.close()
    proc.stderr.close()


def test_a_line_on_stderr_comes_after_the_chunks_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kdump ... 2>&1`: the thread's chunks are all written before a line on standard error,
    so the two streams keep the order they were produced in (both on one pipe here)."""
    import io
    import threading

    from kdump.commands.output import Output

    read, write = os.pipe()
    got = bytearray()

    def drain() -> None:
        while chunk := os.read(read, 1 << 16):
            got.extend(chunk)

    # the reader starts late: the thread is still writing the first chunk into a full pipe
    # when the line for standard error comes
    reader = threading.Timer(0.5, drain)
    reader.start()
    stdout = io.TextIOWrapper(io.FileIO(write, "w", closefd=False))
    stderr = io.TextIOWrapper(io.FileIO(write, "w", closefd=False))
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    first, second = b"a" * (3 << 20), b"b" * (1 << 20)
    out = Output(behind=True)
    try:
        out.data(first)  # bulk: the thread writes it
        assert out.behind is not None
        out.error("between")
        out.data(second)
        out.line("last")
        out.flush()
    finally:
        out.close()
        os.close(write)
        reader.join(timeout=60)
        os.close(read)
    assert bytes(got) == first + b"between\n" + second + b"last\n"
