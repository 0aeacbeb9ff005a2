"""``--jobs N`` in processes: the forked workers of kdump.parallel.stream_ordered (the parent's
imports, the C module and the work's own functions come along: nothing is loaded again or
pickled but the results), imported only by a run that forks: multiprocessing, pickle and the
queues cost a run that does not fork 3 ms of start-up.

Processes are dealt the pieces (``owner``), each does its own in order, and sends what each
piece yields through its own bounded queue, pickled in messages of up to ``MESSAGE_BYTES``: the
parent reads piece 0's results, then piece 1's, and so on. A process that runs ahead waits once
its queue holds ``lookahead`` messages, so memory stays bounded whatever the results are (index
files, rendered lines), and since every process does its pieces in the parent's order, none
waits on another forever.

A run that stops (an exception, Ctrl-C, SIGTERM: kdump.errors.Interrupted) stops its processes
as it leaves ``stream``; they ignore SIGINT (Ctrl-C reaches the whole process group: only the
parent is to act on it) and the kernel kills them when the parent dies, even by SIGKILL, so no
worker is left waiting forever on a queue nobody reads.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kdump.errors import STOP_SIGNALS, KdumpError, start_masked

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

_GRACE_SECONDS = 10
"""How long a worker sent SIGTERM may take to end before it is killed."""


def can_fork() -> bool:
    """Whether this system forks workers (else the work runs in one process)."""
    return "fork" in multiprocessing.get_all_start_methods()


def stream(
    fn: Callable[[T], Iterable[R]],
    items: Sequence[T],
    owner: Sequence[int],
    jobs: int,
    in_worker: Callable[[], None],
    lookahead: int = 8,
) -> Iterator[R]:
    """What ``fn(item)`` yields, item after item in their order, item i worked out in the
    process ``owner[i]`` of ``jobs``; ``in_worker`` runs first in each worker."""
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
                in_worker,
                os.getpid(),
            ),
            daemon=True,
        )
        for w in range(jobs)
    ]
    try:
        # a stop signal waits until every worker is forked: a worker forked with the parent's
        # handler would raise in its turn and print a traceback (_as_worker unblocks them)
        start_masked(workers)
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


def _work(
    fn: Callable[[Any], Iterable[Any]],
    mine: list[tuple[int, Any]],
    out: Any,
    in_worker: Callable[[], None],
    parent: int,
) -> None:
    in_worker()
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
