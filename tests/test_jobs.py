"""--jobs N gives what --jobs 1 gives: the same output, findings, files written and exit code,
for verify, the dumps of many files, rebuild-index and recover (kdump/parallel.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import CORRUPT, FIXTURES, ORACLE
from test_dump_jobs import plain_log

from kdump import forked, parallel
from kdump.checks.options import VerifyOptions
from kdump.checks.verify import verify_paths
from kdump.errors import KdumpError
from kdump.parallel import WORTH_A_FORK, map_ordered, stream_ordered
from kdump.render.dump_jobs import PIECE_BYTES

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_verify_is_the_same_with_any_number_of_jobs(fmt: str) -> None:
    args = ["verify", "--format", fmt, str(ORACLE), str(CORRUPT), str(FIXTURES / "realfiles")]

    def run(jobs: str) -> tuple[int, object, str]:
        ran = run_kdump([*args, "--jobs", jobs])
        if fmt == "json":  # the run object says when and how long: not the same twice
            document = json.loads(ran.stdout)
            document.pop("run")
            return ran.exit_code, document, ran.stderr
        return ran.exit_code, ran.stdout, ran.stderr

    one = run("1")
    assert one[0] == 2 and one[1]
    for jobs in ("2", "3"):
        assert run(jobs) == one


@pytest.fixture(scope="module")
def piece_of_work(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A log of a piece's bytes: beside small files, the work --jobs forks its workers for."""
    folder = tmp_path_factory.mktemp("piece")
    return str(plain_log(folder / "00000000000000000000.log", PIECE_BYTES))


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_dumps_of_many_files_are_the_same_with_any_number_of_jobs(
    fmt: str, piece_of_work: str
) -> None:
    damaged = [
        p for p in sorted(CORRUPT.rglob("0*.*")) if p.parts[-3].startswith(("log-", "index-"))
    ]
    files = [*[str(p) for p in damaged[::3]][:80], piece_of_work]
    args = ["dump", "--deep-iteration", "--format", fmt, *files]
    # as a user runs them: the workers write to the process's own standard output and error
    one = _child([*args, "--jobs", "1"])
    assert one[1] and (one[2] or fmt == "jsonl")  # text: the summaries on stderr
    assert _child([*args, "--jobs", "2"]) == one
    files_one = _child(["--files", ",".join(files), "--jobs", "1"])
    assert _child(["--files", ",".join(files), "--jobs", "2"]) == files_one


def _child(args: list[str]) -> tuple[int, bytes, bytes]:
    ran = subprocess.run(
        [sys.executable, "-m", "kdump", *args], cwd=ROOT, capture_output=True, check=False
    )
    return ran.returncode, ran.stdout, ran.stderr


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".kdump-bak" not in p.name
    }


@pytest.mark.parametrize("command", ["rebuild-index", "recover"])
def test_repairs_are_the_same_with_any_number_of_jobs(tmp_path: Path, command: str) -> None:
    results = []
    for jobs in ("1", "2"):
        work = tmp_path / jobs
        for name in ("plain-0", "txn-0", "activeprealloc-0", "legacyv1-0"):
            shutil.copytree(ORACLE / name, work / name)
        shutil.copytree(CORRUPT / "log-crc-mismatch", work / "damaged")
        ran = run_kdump([command, str(work), "--jobs", jobs, "--no-backup"])
        results.append((ran.exit_code, ran.stdout.replace(str(work), "W"), tree(work)))
    assert results[0] == results[1]


def _raises(n: int) -> list[int]:
    if n == 3:
        raise KdumpError("three is refused", "f.log", 17)
    return [n, n]


def _dies(n: int) -> list[int]:
    if n == 2:
        os._exit(9)
    return [n]


def test_results_come_in_order_and_errors_at_their_place() -> None:
    assert list(map_ordered(lambda n: n * n, list(range(20)), 3)) == [n * n for n in range(20)]
    got: list[int] = []
    with pytest.raises(KdumpError, match=r"f\.log:17: three is refused"):
        for n in stream_ordered(_raises, [0, 1, 2, 3, 4], 2):
            got.append(n)
    assert got == [0, 0, 1, 1, 2, 2]  # everything before the failing item, nothing after


def test_a_worker_that_dies_is_an_error_not_a_hang() -> None:
    with pytest.raises(KdumpError, match="ended unexpectedly"):
        list(stream_ordered(_dies, [0, 1, 2, 3], 2))


def _endless(_: int) -> Iterator[int]:
    while True:
        yield os.getpid()


def test_a_stopped_worker_is_ended_too() -> None:
    """A worker forked while a job-control stop (SIGSTOP, Ctrl-Z) reached the process group
    stays stopped, and a stopped process acts on no SIGTERM: ending the run used to wait on it
    forever (seen as a Ctrl-C test that hung one run in ten)."""
    import multiprocessing

    produced = stream_ordered(_endless, [0, 1], 2, weight=lambda _: WORTH_A_FORK, lookahead=1)
    next(produced)
    workers = multiprocessing.active_children()
    assert len(workers) == 2
    for worker in workers:
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGSTOP)
    closing = threading.Thread(target=produced.close, daemon=True)
    closing.start()
    closing.join(60)
    try:
        assert not closing.is_alive(), "the run still waits on its stopped workers"
        assert all(not w.is_alive() for w in workers)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()


def test_memory_stays_bounded_by_the_lookahead() -> None:
    """A process runs at most ``lookahead`` results ahead of the reader."""
    produced = stream_ordered(lambda n: (bytes(1 << 20) for _ in range(50)), [0, 1], 2, lookahead=2)
    assert sum(len(chunk) for chunk in produced) == 100 << 20


def _pid(_: int) -> Iterator[int]:
    yield os.getpid()


def test_work_too_light_to_be_worth_a_fork_runs_here() -> None:
    """Forking costs more than verifying a small partition: below WORTH_A_FORK bytes of weight
    the work runs in this process; above it, in the workers."""
    light = set(stream_ordered(_pid, [0, 1, 2, 3], 2, weight=lambda _: 1024))
    assert light == {os.getpid()}
    heavy = set(stream_ordered(_pid, [0, 1, 2, 3], 2, weight=lambda _: WORTH_A_FORK))
    assert os.getpid() not in heavy and len(heavy) == 2


def _spare(_: int) -> Iterator[bool]:
    yield parallel.spare_cpu()


@pytest.mark.parametrize(
    ("cpus", "ready", "spare"),
    [(2, 1, True), (2, 2, False), (4, 3, True), (4, 4, False), (1, 1, False), (2, None, False)],
)
def test_a_helper_thread_gets_a_cpu_only_where_one_is_free(
    monkeypatch: pytest.MonkeyPatch, cpus: int, ready: int | None, spare: bool
) -> None:
    """The read-ahead thread's CPU: only where the CPUs outnumber this run's processes and the
    tasks ready to run (this one among them); in --jobs workers, which fill the CPUs, never."""
    monkeypatch.setattr(parallel, "default_jobs", lambda: cpus)
    monkeypatch.setattr(parallel, "ready_tasks", lambda: ready)
    assert parallel.spare_cpu() is spare
    heavy = list(stream_ordered(_spare, [0, 1], 2, weight=lambda _: WORTH_A_FORK))
    assert heavy == [cpus > 2 and spare and cpus - 2 - (ready or 0) + 1 >= 1] * 2


def test_ready_tasks_counts_this_one() -> None:
    if not Path("/proc/loadavg").exists():
        pytest.skip("no /proc/loadavg")
    ready = parallel.ready_tasks()
    assert ready is not None and ready >= 1


def _thread_name(n: int) -> tuple[int, str]:
    return n, threading.current_thread().name


def test_gil_free_work_runs_in_threads_in_order() -> None:
    """map_ordered(threads=True): this process's threads (no fork), the items' order, the
    biggest dealt first; below WORTH_A_FORK of weight, in this thread."""
    got = list(
        map_ordered(
            _thread_name, list(range(20)), 2, weight=lambda n: WORTH_A_FORK + n, threads=True
        )
    )
    assert [n for n, _ in got] == list(range(20))
    assert all(name.startswith("kdump-job-") for _, name in got)
    light = list(map_ordered(_thread_name, [0, 1], 2, weight=lambda _: 1, threads=True))
    assert {name for _, name in light} == {threading.current_thread().name}


def _fails_at_3(n: int) -> int:
    if n == 3:
        raise KdumpError("three")
    return n


def test_a_threads_error_comes_at_its_turn() -> None:
    results = map_ordered(
        _fails_at_3, list(range(8)), 2, weight=lambda _: WORTH_A_FORK, threads=True
    )
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(KdumpError, match="three"):
        next(results)


def test_threads_take_the_biggest_first_and_stop_with_their_caller() -> None:
    started: list[int] = []
    lock = threading.Lock()

    def note(n: int) -> int:
        with lock:
            started.append(n)
        return n

    results = map_ordered(note, list(range(10)), 2, weight=lambda n: WORTH_A_FORK + n, threads=True)
    assert next(results) == 0  # its turn first, though dealt last
    assert sorted(started[:2]) == [8, 9] and list(results) == list(range(1, 10))

    def slow(n: int) -> int:
        time.sleep(0.05)
        return note(n)

    started.clear()
    results = map_ordered(slow, list(range(40)), 2, weight=lambda _: WORTH_A_FORK, threads=True)
    assert next(results) == 0
    results.close()  # the caller stops: the running items end, no new one starts
    count = len(started)
    time.sleep(0.1)
    assert count < 40 and len(started) == count


def test_threads_take_the_cpus_from_the_read_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    monkeypatch.setattr(parallel, "ready_tasks", lambda: 1)
    seen = list(
        map_ordered(lambda _: parallel.spare_cpu(), [0, 1], 2, lambda _: WORTH_A_FORK, threads=True)
    )
    assert seen == [False, False] and parallel.spare_cpu()


def test_verify_in_threads_is_verify_in_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fixture partition verified by two threads (the fork threshold set to nothing)
    gives the findings and summaries of --jobs 1."""
    monkeypatch.setattr(parallel, "WORTH_A_FORK", 0)
    paths = [str(ORACLE), str(CORRUPT), str(FIXTURES / "realfiles")]
    one = verify_paths(paths, VerifyOptions(), jobs=1)
    two = verify_paths(paths, VerifyOptions(), jobs=2)
    assert two.findings == one.findings and two.summary() == one.summary()


def test_a_workers_results_travel_in_few_messages() -> None:
    """Issue 33: one queue message per result (a JSON line, an index entry) cost the parent
    and the workers more than the dump itself; results go in messages of MESSAGE_BYTES."""
    import queue as thread_queue

    sent: thread_queue.Queue[tuple[int, str, bytes]] = thread_queue.Queue()
    message = forked._Message(sent, 7)
    results = [{"offset": n, "key": f"k{n}"} for n in range(20_000)]
    for result in results:
        message.add(result)
    message.send(forked._DONE)
    messages = [sent.get_nowait() for _ in range(sent.qsize())]
    assert 1 <= len(messages) <= 4
    assert {index for index, _, _ in messages} == {7}
    assert [kind for _, kind, _ in messages][-1] == forked._DONE
    assert [r for _, _, data in messages for r in forked._unpickled(data)] == results


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_dump_in_processes_copies_nothing_through_the_parent(
    fmt: str, capfd: pytest.CaptureFixture[bytes]
) -> None:
    """Issue 44 point 8: the workers write their own output to the process's standard output,
    in turn; the parent yields only what follows every file (the text dump's summaries)."""
    from kdump.render.dump_segments import DumpOptions, DumpProblems, Line, dump_files
    from kdump.render.jsonl import dump_files_lines

    files = [str(p) for p in sorted(ORACLE.glob("*/0*.*"))]
    opts = DumpOptions(deep_iteration=True)
    dump = dump_files if fmt == "text" else dump_files_lines
    items = list(dump(files, opts, DumpProblems(), 2))
    assert all(isinstance(i, Line) and i.stream == "err" for i in items)  # summaries alone
    written = capfd.readouterr().out
    assert written.count("\n") > 3 * len(files)


def decoding_pid(data: bytes) -> str:
    """A --value-decoder (module:function) that says which process decoded the value."""
    return f"pid={os.getpid()}"


@pytest.mark.parametrize(("jobs", "forks"), [([], False), (["--jobs", "2"], True)])
def test_a_dump_runs_in_one_process_unless_asked(
    jobs: list[str], forks: bool, piece_of_work: str
) -> None:
    """Issue 33: the dumps run in one process unless asked (issue 44 point 8: --jobs N forks
    workers that write their own output, given a piece of work at least)."""
    files = [*(str(p) for p in sorted((ORACLE / "plain-0").glob("*.log"))), piece_of_work]
    assert len(files) >= 2
    code = "import sys, os; from kdump.cli import main; print(os.getpid()); main()"
    ran = subprocess.run(
        [sys.executable, "-c", code, "dump", *files, "--value-decoder",
         "test_jobs:decoding_pid", *jobs],
        cwd=ROOT, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests")},
    )  # fmt: skip
    parent, *_ = ran.stdout.split("\n", 1)
    pids = set(re.findall(r"payload: pid=(\d+)", ran.stdout))
    assert ran.returncode == 0 and pids, ran.stderr
    assert (pids != {parent}) == forks
