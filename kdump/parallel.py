"""``--jobs N``: independent pieces of work (segments, partitions, files) in N processes, their
results handed back in the order ``--jobs 1`` gives them, so output never depends on N.

Processes for work whose Python holds the GIL (deep checks, repairs, dumps): forked (the
parent's imports, the C module and the work's own functions come along: nothing is loaded
again or pickled but the results); where a system cannot fork, the work runs in one process.
Threads of this process (``map_ordered(threads=True)``) for work that runs in C without the
GIL: verify's shallow checks of local files, the biggest first, each result held until its turn.

Processes are dealt the pieces biggest first (kdump.forked: imported by a run that forks
only). A run that stops (an exception, Ctrl-C, SIGTERM: kdump.errors.Interrupted) stops its
processes and threads as it leaves ``stream_ordered`` or ``map_ordered``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar

from kdump.errors import start_masked

T = TypeVar("T")
R = TypeVar("R")

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
    if jobs > 1:
        # the processes' machinery (multiprocessing, pickle, queues) where a run forks
        from kdump import forked

        if forked.can_fork():
            owner = _deal(items, jobs, weight)
            yield from forked.stream(fn, items, owner, jobs, partial(run_in, jobs), lookahead)
            return
    # one process (where processes cannot fork, the work need not pickle either)
    for item in items:
        yield from fn(item)


def run_in(jobs: int) -> None:
    """In a forked worker: the run's processes are ``jobs`` (spare_cpu, run_processes)."""
    global _processes
    _processes = jobs


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
        start_masked(workers)
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
