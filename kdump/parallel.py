"""``--jobs N``: independent pieces of work (segments, partitions, files) in N processes, their
results handed back in the order ``--jobs 1`` gives them, so output never depends on N.

Processes for work whose Python holds the GIL (deep checks, repairs, dumps): forked (the
parent's imports, the C module and the work's own functions come along: nothing is loaded
again or pickled but the results); where a system cannot fork, the work runs in one process.
Threads of this process (``map_ordered(threads=True)``) for work that runs in C without the
GIL: verify's shallow checks of local files, the biggest first, each result held until its turn.

Processes are dealt the pieces biggest first, each does its own in order, and sends what each
piece yields through its own bounded queue, pickled in messages of up to ``MESSAGE_BYTES``: the
parent reads piece 0's results, then piece 1's, and so on. A process that runs ahead waits once
its queue holds ``lookahead`` messages, so memory stays bounded whatever the results are (index
files, rendered lines), and since every process does its pieces in the parent's order, none
waits on another forever.

A run that stops (an exception, Ctrl-C, SIGTERM: kdump.errors.Interrupted) stops its processes
as it leaves ``stream_ordered``; they ignore SIGINT (Ctrl-C reaches the whole process group:
only the parent is to act on it) and the kernel kills them when the parent dies, even by SIGKILL,
so no worker is left waiting forever on a queue nobody reads.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import queue
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kdump.errors import STOP_SIGNALS, KdumpError

T = TypeVar("T")
R = TypeVar("R")

_DONE = "kdump.parallel.done"
_RESULTS = "kdump.parallel.results"

MESSAGE_BYTES = 1 << 20
"""A worker's results are sent in messages of about this many pickled bytes: one message per
result cost a dump more than its rendering (issue 33: a JSON Lines dump's 16 KiB results, each
a put() through the queue's lock, feeder thread and pipe, took 2.7x the CPU of --jobs 1)."""

MESSAGE_SECONDS = 0.1
"""...or sooner, when results come slowly (a decoder's), so output never stalls for long."""

WORTH_A_FORK = 32 << 20
"""Work weighing less (bytes of log, given ``weight``) runs in this process: forking workers
and their queues costs ≈ 20 ms, more than 32 MiB of verify takes on one core (≈ 5 ms)."""


_processes = 1
"""The processes this run works in at once: a forked worker is told the run's ``jobs``."""


def spare_cpu() -> bool:
    """Whether a helper thread of this process (the walk's read-ahead) would find a CPU of its
    own: the CPUs this process may run on outnumber the run's processes and the other tasks
    ready to run right now (/proc/loadavg's fourth field counts them, this one included). On a
    busy machine the thread would only take time from the work."""
    cpus = default_jobs()
    if cpus <= _processes:
        return False
    ready = ready_tasks()
    return ready is not None and cpus - _processes - (ready - 1) >= 1


def run_processes() -> int:
    """The processes this run works in at once (in a forked worker: the run's ``jobs``)."""
    return _processes


def ready_tasks() -> int | None:
    """The tasks ready to run on this machine now, the caller included (None: not known)."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity mask, as a container or taskset sets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


_GRACE_SECONDS = 10
"""How long a worker sent SIGTERM may take to end before it is killed."""


def stream_ordered(
    fn: Callable[[T], Iterable[R]],
    items: Sequence[T],
    jobs: int,
    weight: Callable[[T], int] | None = None,
    lookahead: int = 8,
) -> Iterator[R]:
    """What ``fn(item)`` yields, item after item in their order, worked out in up to ``jobs``
    processes. ``weight`` (bytes, say) deals the biggest items out first; ``lookahead`` bounds
    the results a process may hold ready. The results must pickle."""
    jobs = _workers(items, jobs, weight)
    if jobs <= 1:
        for item in items:
            yield from fn(item)
        return
    import multiprocessing  # here, not at the top: most runs never fork

    if "fork" not in multiprocessing.get_all_start_methods():
        # one process (where processes cannot fork, the work need not pickle either)
        for item in items:
            yield from fn(item)
        return
    owner = _deal(items, jobs, weight)
    context: Any = multiprocessing.get_context("fork")
    queues = [context.Queue(max(1, lookahead)) for _ in range(jobs)]
    _load_prctl()  # before the fork: each worker has it without loading ctypes again
    workers = [
        context.Process(
            target=_work,
            args=(
                fn,
                [(i, items[i]) for i in range(len(items)) if owner[i] == w],
                queues[w],
                jobs,
                os.getpid(),
            ),
            daemon=True,
        )
        for w in range(jobs)
    ]
    try:
        # a stop signal waits until every worker is forked: a worker forked with the parent's
        # handler would raise in its turn and print a traceback (_as_worker unblocks them)
        _start_masked(workers)
        for i in range(len(items)):
            w = owner[i]
            while True:
                index, kind, value = _get(queues[w], workers[w])
                assert index == i, "a worker's results come in its items' order"
                if kind == "error":
                    raise value
                yield from _unpickled(value)
                if kind == _DONE:
                    break
    finally:
        _stop_workers(workers)


def _stop_workers(workers: Sequence[Any]) -> None:
    """End the workers: SIGTERM, and SIGCONT with it (a worker forked while a job-control stop
    reached the group stays stopped, and a stopped process acts on no signal but SIGKILL);
    one that does not end soon after is killed."""
    started = [w for w in workers if w.pid is not None]
    for worker in started:
        if worker.is_alive():
            worker.terminate()
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGCONT)
    for worker in started:
        worker.join(_GRACE_SECONDS)
        if worker.is_alive():
            worker.kill()
            worker.join()


def map_ordered(
    fn: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    weight: Callable[[T], int] | None = None,
    lookahead: int = 64,
    threads: bool = False,
) -> Iterator[R]:
    """``fn(item)`` for each item, in their order, worked out in up to ``jobs`` processes, or
    ``threads`` of this one: for work that runs in C without the GIL (verify's CRCs), which
    then pays no fork and no pickling, and shares one interpreter's memory. Results are held
    until their turn comes, so they should be small."""
    if threads and (workers := _workers(items, jobs, weight)) > 1:
        return _threaded(fn, items, workers, weight)
    return stream_ordered(_One(fn), items, jobs, weight, lookahead)


def _workers(items: Sequence[Any], jobs: int, weight: Callable[[Any], int] | None) -> int:
    """How many workers the items are worth: one where they weigh under WORTH_A_FORK."""
    jobs = min(jobs, len(items))
    if jobs > 1 and weight is not None and sum(map(weight, items)) < WORTH_A_FORK:
        return 1
    return jobs


def _threaded(
    fn: Callable[[T], R], items: Sequence[T], jobs: int, weight: Callable[[T], int] | None
) -> Iterator[R]:
    # plain threads, not concurrent.futures: its import (and logging's) costs a short run
    # ~7 ms, as much as a 64 MiB segment's checks
    import threading

    global _processes
    pending = iter(_biggest_first(items, weight))
    take = threading.Lock()
    ready = [threading.Event() for _ in items]
    results: list[Any] = [None] * len(items)
    errors: list[BaseException | None] = [None] * len(items)
    stopped = False

    def work() -> None:
        while not stopped:
            with take:
                i = next(pending, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except BaseException as e:  # handed to the caller, in its turn
                errors[i] = e
            ready[i].set()

    was, _processes = _processes, jobs  # the CPUs are taken: no read-ahead threads
    workers = [threading.Thread(target=work, name=f"kdump-job-{w}") for w in range(jobs)]
    halt = threading.Event()
    _halt.append(halt)
    try:
        # the threads start with the stop signals blocked (a thread keeps its creator's mask):
        # the kernel then delivers Ctrl-C to the main thread, whose wait it interrupts
        _start_masked(workers)
        for i in range(len(items)):
            ready[i].wait()
            error, result = errors[i], results[i]
            results[i] = None  # held no longer than its turn
            if error is not None:
                raise error
            yield result
    finally:
        stopped = True  # a caller that stops early: no new items, the running ones end
        halt.set()  # ... at once where they wait (pause)
        for worker in workers:
            if worker.is_alive():
                worker.join()
        _halt.remove(halt)
        _processes = was


class _Halted(BaseException):
    """A worker thread's wait cut short: the run it works for has stopped."""


_halt: list[Any] = []
"""The Event a running ``_threaded`` sets when it stops early (Ctrl-C, an error, a reader
that left): its threads' waits end at once."""


def pause(seconds: float) -> None:
    """Wait ``seconds`` (a rate limit's wait): in a worker thread of a run that stops, end at
    once. The main thread's wait is ended by the signal itself; a worker thread's is not, and
    the run waits for its threads: at ``--max-io-rate``, a segment's worth (seconds)."""
    import threading

    if not _halt or threading.current_thread() is threading.main_thread():
        time.sleep(seconds)
    elif _halt[-1].wait(seconds):
        raise _Halted


def _start_masked(workers: Sequence[Any]) -> None:
    """Start threads or processes with STOP_SIGNALS blocked; a signal sent meanwhile waits
    until they are all started, and then interrupts this thread."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for worker in workers:
            worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


class _One:
    """A function of one result as one of results."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, item: Any) -> tuple[Any]:
        return (self.fn(item),)


def _biggest_first(items: Sequence[Any], weight: Callable[[Any], int] | None) -> list[int]:
    """The items' indexes, the heaviest first (the last to finish is then a small one); in
    their order without a weight."""
    order = list(range(len(items)))
    if weight is not None:
        order.sort(key=lambda i: -weight(items[i]))
    return order


def _deal(items: Sequence[Any], jobs: int, weight: Callable[[Any], int] | None) -> list[int]:
    """Which process does each item: the biggest first, each to the least loaded."""
    loads = [0] * jobs
    owner = [0] * len(items)
    for i in _biggest_first(items, weight):
        w = loads.index(min(loads))
        owner[i] = w
        loads[w] += weight(items[i]) if weight is not None else 1
    return owner


def _work(
    fn: Callable[[Any], Iterable[Any]],
    mine: list[tuple[int, Any]],
    out: Any,
    jobs: int,
    parent: int,
) -> None:
    global _processes
    _processes = jobs
    _as_worker(parent)
    for index, item in mine:
        message = _Message(out, index)
        try:
            for result in fn(item):
                message.add(result)
        except KdumpError as e:
            message.send(_RESULTS)
            out.put((index, "error", e))
            return
        except Exception as e:
            message.send(_RESULTS)
            out.put((index, "error", KdumpError(f"unexpected {type(e).__name__}: {e} in a "
                                                "worker process (please report; --jobs 1 "
                                                "--traceback shows where)")))  # fmt: skip
            return
        message.send(_DONE)


class _Message:
    """A worker's results for one item, pickled one after the other, sent when they reach
    MESSAGE_BYTES or MESSAGE_SECONDS, and with the item's end."""

    def __init__(self, out: Any, index: int) -> None:
        self.out, self.index = out, index
        self.data = bytearray()
        self.since = 0.0

    def add(self, result: Any) -> None:
        if not self.data:
            self.since = time.monotonic()
        self.data += pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
        if len(self.data) >= MESSAGE_BYTES or time.monotonic() - self.since >= MESSAGE_SECONDS:
            self.send(_RESULTS)

    def send(self, kind: str) -> None:
        if self.data or kind == _DONE:
            self.out.put((self.index, kind, bytes(self.data)))
            self.data = bytearray()


def _unpickled(data: bytes) -> Iterator[Any]:
    """The results of one message, in the order sent."""
    stream = io.BytesIO(data)
    while stream.tell() < len(data):
        yield pickle.load(stream)


def _as_worker(parent: int) -> None:
    """A forked worker's signals: SIGINT ignored (Ctrl-C reaches the whole process group and the
    parent stops the workers: a worker of its own would print a KeyboardInterrupt traceback),
    SIGTERM and SIGHUP their default, death (the parent's handler, inherited with the fork,
    would raise in the worker); and death with the parent, however it ends."""
    for signum in STOP_SIGNALS - {signal.SIGINT}:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    if _PRCTL[0] is not None:
        _PRCTL[0](_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was made
            os._exit(1)


_PR_SET_PDEATHSIG = 1
"""linux/prctl.h: the signal a process gets when the thread that forked it ends (the parent's
thread running stream_ordered, which ends only with the work or with the parent)."""

_PRCTL: list[Any] = [None]
"""libc's prctl once loaded (Linux only; None elsewhere or where it cannot be had)."""


def _load_prctl() -> None:
    if _PRCTL[0] is not None or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        _PRCTL[0] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no libc to be had (a static build): no such guard
        return


def _get(q: Any, worker: Any) -> tuple[int, str, Any]:
    """The next result of one worker; a worker that died without a word is an error."""
    while True:
        try:
            return q.get(timeout=1.0)
        except queue.Empty:
            if not worker.is_alive():
                raise KdumpError(
                    f"a worker process ended unexpectedly (exit code {worker.exitcode}; out of "
                    "memory?); run again with --jobs 1"
                ) from None
