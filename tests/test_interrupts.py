"""A run stopped by a signal (issue 28 point 1): Ctrl-C, SIGTERM (cron, systemd, ``timeout``) and
SIGKILL, sent to real ``kdump`` processes mid-run. Each ends with one line on stderr, exit
128 + the signal, no traceback, no temporary file, and no worker process left behind
(kdump.errors.Interrupted states the contract).

Each run is caught mid-way, whatever the machine's speed: the test waits until the process has
its input open (or its workers started), stops its whole process group (SIGSTOP) so nothing
moves on, sends the signal, and lets the group go on (SIGCONT): the signal lands before the
next step of the work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from batchbytes import v2_batch, varint
from conftest import ORACLE

KDUMP = [sys.executable, "-m", "kdump"]
PARTITIONS = 4
PARTITION_BYTES = 24 << 20
"""4 x 24 MiB: above parallel.WORTH_A_FORK, so --jobs 2 forks its workers."""


def _batches(log: Path) -> list[bytes]:
    data, batches, position = log.read_bytes(), [], 0
    while position + 12 <= len(data):
        (length,) = struct.unpack_from(">i", data, position + 8)
        batches.append(data[position : position + 12 + length])
        position += 12 + length
    return batches


def _one_record_batch() -> bytes:
    """A batch of one record with a 10-byte value, its base offset left to fill in."""
    value = b"0123456789"
    record = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    return v2_batch(0, varint(len(record)) + record)[8:]


def write_partition(directory: Path, size: int) -> None:
    """A partition of one segment of ``size`` bytes or more: half gzip-0's batches again and
    again (work for the decoders), half batches of one record (work for whatever reads every
    batch's header); each batch's offsets after the last (a base offset is outside the CRC)."""
    batches = _batches(ORACLE / "gzip-0" / "00000000000000000000.log")
    # the offset after the last: base offset + last offset delta (byte 23), plus one
    span = 1 + max(
        struct.unpack_from(">q", b)[0] + struct.unpack_from(">i", b, 23)[0] for b in batches
    )
    pack = struct.Struct(">q").pack
    out, written, copy = [], 0, 0
    while written < size // 2:
        for batch in batches:
            out.append(pack(struct.unpack_from(">q", batch)[0] + copy * span) + batch[8:])
            written += len(batch)
        copy += 1
    tiny = _one_record_batch()
    count = (size - written) // (8 + len(tiny)) + 1
    out.extend(pack(copy * span + i) + tiny for i in range(count))
    directory.mkdir(parents=True)
    (directory / "00000000000000000000.log").write_bytes(b"".join(out))


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("interrupts") / "logs"
    for p in range(PARTITIONS):
        write_partition(root / f"big-{p}", PARTITION_BYTES)
    return root


# --- processes, as /proc shows them -----------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent, process group) of a process; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name in parentheses may hold spaces
    return fields[0], int(fields[1]), int(fields[2])


def _pids() -> Iterator[int]:
    return (int(name) for name in os.listdir("/proc") if name.isdigit())


def group_alive(group: int) -> list[int]:
    """The processes of a process group that still run (a zombie has ended)."""
    return [
        pid for pid in _pids() if (s := _stat(pid)) is not None and s[2] == group and s[0] != "Z"
    ]


def workers(pid: int) -> list[int]:
    return [p for p in _pids() if (s := _stat(p)) is not None and s[1] == pid and s[0] != "Z"]


def has_open(pid: int, root: Path) -> bool:
    """Whether the process or a worker of it has a file under ``root`` open or mapped: the run
    is reading its input."""
    return any(_has_open(p, str(root)) for p in [pid, *workers(pid)])


def _has_open(pid: int, prefix: str) -> bool:
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(prefix):
                return True
        return prefix in Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # gone, or a descriptor closed while listed
        return False


def wait_for(
    condition: Callable[[], object],
    what: str,
    seconds: float = 60,
    running: subprocess.Popen[bytes] | None = None,
) -> None:
    """Poll until ``condition``; with ``running``, that process must not end before."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert running is None or running.poll() is None, f"kdump ended before {what}"
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.001)


# --- a run, stopped ---------------------------------------------------------------------------


class Run:
    """``kdump args`` in a process group of its own, stdout unread (a pipe) or discarded."""

    def __init__(self, args: list[str], tmp: Path, read_stdout: bool = False) -> None:
        self.stderr = open(tmp / "stderr.txt", "w+b")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [*KDUMP, *args],
            stdout=subprocess.PIPE if read_stdout else subprocess.DEVNULL,
            stderr=self.stderr,
            start_new_session=True,
        )
        self.group = self.proc.pid

    def signal_mid_run(self, signum: int, to_group: bool) -> None:
        """Freeze the group, send ``signum`` (to the group as a terminal's Ctrl-C does, else to
        the main process as ``kill`` and ``timeout`` do), let the group go on."""
        os.killpg(self.group, signal.SIGSTOP)
        if to_group:
            os.killpg(self.group, signum)
        else:
            os.kill(self.proc.pid, signum)
        os.killpg(self.group, signal.SIGCONT)

    def finish(self, again: int | None = None) -> tuple[int, str]:
        """Its exit code and stderr; ``again``: that signal to the group, over and over, while
        it winds down (a person pressing Ctrl-C again)."""
        deadline = time.monotonic() + 60
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, "kdump did not end after the signal"
            if again is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.group, again)
            time.sleep(0.001)
        self.stderr.seek(0)
        return self.proc.returncode, self.stderr.read().decode(errors="replace")

    def close(self) -> None:
        for pid in group_alive(self.group):  # the test failed: leave nothing running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc.wait()
        self.stderr.close()


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Callable[..., Run]]:
    runs: list[Run] = []

    def start(args: list[str], read_stdout: bool = False) -> Run:
        runs.append(Run(args, tmp_path, read_stdout))
        return runs[-1]

    yield start
    for r in runs:
        r.close()


def assert_stopped(r: Run, code: int, stderr: str, name: str) -> None:
    assert (code, stderr) == (128 + getattr(signal, name), f"kdump: stopped by {name}\n")
    wait_for(lambda: not group_alive(r.group), "the workers to end", seconds=10)


def partitions(log_dir: Path) -> list[str]:
    return [str(p) for p in sorted(log_dir.iterdir())]


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name != "00000000000000000000.log" and p.is_file()]


# --- the tests --------------------------------------------------------------------------------

COMMANDS = {
    "verify-deep": ["verify", "--deep", "--jobs", "2", "--prom", "{tmp}/kdump.prom"],
    "dump": ["dump", "--jobs", "2", "--deep-iteration", "{partitions}"],
    "explain": ["explain"],
    "report": ["report", "-o", "{tmp}/report.html"],
    "recover-dry-run": ["recover", "--dry-run", "--jobs", "2"],
    "startup": ["startup", "--prom", "{tmp}/kdump.prom"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_ctrl_c_mid_run_is_one_line_and_exit_130(
    command: str, log_dir: Path, tmp_path: Path, run: Callable[..., Run]
) -> None:
    """Ctrl-C reaches the whole process group, workers included; it used to exit 3
    ("Aborted.") with KeyboardInterrupt tracebacks from the workers."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    if args[-1] == "{partitions}":  # dump takes partitions, not log dirs
        args[-1:] = partitions(log_dir)
    else:
        args.append(str(log_dir))
    r = run(args)
    wait_for(lambda: has_open(r.proc.pid, log_dir), "it read its input", running=r.proc)
    r.signal_mid_run(signal.SIGINT, to_group=True)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGINT")
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted({"stderr.txt", *(["kdump.prom"] if "--prom" in args else [])})
    assert leftovers(log_dir) == []  # no temporary file, here or there
    if "--prom" in args:  # a cron job that was stopped did not succeed
        prom = (tmp_path / "kdump.prom").read_text()
        assert f'kdump_exit_status{{command="{args[0]}"}} 130' in prom, prom


def test_sigterm_stops_the_workers_too(log_dir: Path, run: Callable[..., Run]) -> None:
    """SIGTERM to the main process only: it used to die at once and leave its forked workers
    under PID 1, blocked forever (and whoever read their stderr with them)."""
    r = run(["verify", "--deep", "--jobs", "2", str(log_dir)])
    wait_for(lambda: len(workers(r.proc.pid)) == 2, "its two workers", running=r.proc)
    r.signal_mid_run(signal.SIGTERM, to_group=False)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGTERM")


def test_sigterm_while_output_waits_on_its_reader(log_dir: Path, run: Callable[..., Run]) -> None:
    """`dump --jobs 2` into a pipe nobody reads: the main process waits in a write, each worker
    on its full queue. SIGTERM ends them all rather than a flush at exit waiting forever."""
    r = run(["dump", "--jobs", "2", "--deep-iteration", *partitions(log_dir)], read_stdout=True)
    assert r.proc.stdout is not None
    r.proc.stdout.read(1)  # output has begun; the rest stays unread
    wait_for(lambda: len(workers(r.proc.pid)) == 2, "its two workers", running=r.proc)
    r.signal_mid_run(signal.SIGTERM, to_group=False)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGTERM")


def test_ctrl_c_at_a_max_io_rate_stops_at_once(log_dir: Path, run: Callable[..., Run]) -> None:
    """Issue 44.9: Ctrl-C under --max-io-rate waited for the segments being read to finish at
    the throttled rate (7 s in the trial; ~10 s a segment at the README's cron rate): the
    worker threads' waits went on. At 1 MiB/s the two threads' 24 MiB segments take 48 s at
    least; the run stops long before."""
    r = run(["verify", "--jobs", "2", "--max-io-rate", "1MiB/s", str(log_dir)])
    wait_for(lambda: has_open(r.proc.pid, log_dir), "it read its input", running=r.proc)
    time.sleep(0.5)  # into the throttled reads
    sent = time.monotonic()
    r.signal_mid_run(signal.SIGINT, to_group=True)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGINT")
    assert time.monotonic() - sent < 10


def test_ctrl_c_again_while_it_stops_is_no_traceback(
    log_dir: Path, run: Callable[..., Run]
) -> None:
    r = run(["verify", "--deep", "--jobs", "2", str(log_dir)])
    wait_for(lambda: len(workers(r.proc.pid)) == 2, "its two workers", running=r.proc)
    r.signal_mid_run(signal.SIGINT, to_group=True)
    code, stderr = r.finish(again=signal.SIGINT)
    assert_stopped(r, code, stderr, "SIGINT")


def test_workers_die_with_a_killed_parent(log_dir: Path, run: Callable[..., Run]) -> None:
    """SIGKILL cannot be handled: the kernel ends the workers (PR_SET_PDEATHSIG). Here each
    waits on its full queue, which nobody will read again."""
    r = run(["dump", "--jobs", "2", "--deep-iteration", *partitions(log_dir)], read_stdout=True)
    assert r.proc.stdout is not None
    r.proc.stdout.read(1)
    wait_for(lambda: len(workers(r.proc.pid)) == 2, "its two workers", running=r.proc)
    os.kill(r.proc.pid, signal.SIGKILL)
    assert r.proc.wait(timeout=60) == -signal.SIGKILL
    wait_for(lambda: not group_alive(r.group), "the workers to end", seconds=10)


def test_sigterm_stops_startup(log_dir: Path, run: Callable[..., Run]) -> None:
    """kdump startup before a broker's start, under a systemd unit's timeout: SIGTERM ends it
    with 143 and one line, nothing written."""
    r = run(["startup", str(log_dir)])
    wait_for(lambda: has_open(r.proc.pid, log_dir), "it read its input", running=r.proc)
    r.signal_mid_run(signal.SIGTERM, to_group=False)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGTERM")
    assert leftovers(log_dir) == []


@pytest.fixture(scope="module")
def compacted_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two partitions of a compacted topic, each with a cleaner checkpoint at its end: verify
    audits them below it, decoding every record in Python (kdump.checks.compacted)."""
    from kdump.storage.local import LocalStorage

    root = tmp_path_factory.mktemp("interrupts-compacted") / "logs"
    entries = []
    for p in range(2):
        part = root / f"big-{p}"
        write_partition(part, PARTITION_BYTES)
        log = LocalStorage(part).open_log("00000000000000000000.log")
        end = max(run.last_offset[run.n - 1] for run in log.walk(check_crc=False)) + 1
        log.close()
        entries.append(f"big {p} {end}")
    (root / "cleaner-offset-checkpoint").write_text("\n".join(["0", "2", *entries]) + "\n")
    return root


def test_ctrl_c_stops_a_compacted_logs_audit(
    compacted_dir: Path, tmp_path: Path, run: Callable[..., Run]
) -> None:
    """The audit of a compacted log runs in the main process (its threads would be waited
    for): Ctrl-C ends it as any other verify, one line and 130."""
    r = run(["verify", "--jobs", "2", "--config", "cleanup.policy=compact", str(compacted_dir)])
    wait_for(lambda: has_open(r.proc.pid, compacted_dir), "it read its input", running=r.proc)
    r.signal_mid_run(signal.SIGINT, to_group=True)
    code, stderr = r.finish()
    assert_stopped(r, code, stderr, "SIGINT")
    assert [p.name for p in leftovers(compacted_dir)] == ["cleaner-offset-checkpoint"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])
def test_a_signal_as_the_run_exits_still_says_so(tmp_path: Path, signum: int) -> None:
    """Issue 44.9: a SIGINT arriving as recover finished ended it without its "stopped" line
    (Python's KeyboardInterrupt in its shutdown, the handlers put back). The run's exit under
    way, a signal gets the line and 128 + the signal. Here it arrives as main() returns."""
    partition = tmp_path / "txn-0"
    shutil.copytree(ORACLE / "txn-0", partition)
    script = (
        "import os, sys\n"
        "from kdump.cli import main\n"
        f"sys.argv = ['kdump', 'recover', {str(partition)!r}]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        f"    os.kill(os.getpid(), {int(signum)})\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    name = signal.Signals(signum).name
    assert (ran.returncode, ran.stderr) == (128 + signum, f"kdump: stopped by {name}\n".encode())
    assert ran.stdout.decode().splitlines()[-1].endswith(" written")
