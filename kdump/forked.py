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
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

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


# -- workers writing their own output, in turn -------------------------------------------------

_GO, _SKIP = 1, 0
"""What the parent tells the owner of a piece: write it, or drop it (its group ended)."""
_DONE_PIECE, _ENDS_GROUP, _ERROR, _PIPE_CLOSED, _SKIPPED = range(5)
"""How a worker reports on a piece: written, written and its group ends with it, failed (the
exception follows), standard output gone, dropped."""
_TURN = struct.Struct(">qB")
_REPORT = struct.Struct(">qBI")

BUFFER_BYTES = 16 << 20
"""Bytes a worker renders ahead of its turn: then it waits for it. Each worker holds one
block this size; past it, a piece's rest is written as it is rendered (its turn held)."""


class Piece(NamedTuple):
    """One piece of work whose output is written in order: ``group`` names what a piece's
    failure ends (the pieces of one file), ``work`` is the renderer's argument."""

    group: int
    work: Any


def write_in_turn(
    render: Callable[[Any], Iterable[tuple[int, Any]]],
    pieces: Sequence[Piece],
    jobs: int,
    in_worker: Callable[[], None],
) -> Iterator[Any]:
    """Render the pieces in ``jobs`` forked workers, piece i in worker i % jobs, each writing
    its own output to this process's standard output and error, piece after piece in order:
    the parent passes the turn and copies nothing. ``render(work)`` yields ``(1, bytes)`` for
    standard output, ``(2, bytes)`` for standard error, in the order written, then once
    ``(0, report)``: what the parent gets back (pickled), in the pieces' order. A report whose
    ``ended`` attribute is true ends its group: the group's later pieces are dropped, unread.
    A worker's exception is raised here, in its turn (after what came before it was written);
    standard output closed (``| head``) raises BrokenPipeError."""
    sys.stdout.flush()  # what is buffered here would be written twice, by each worker
    sys.stderr.flush()
    context: Any = multiprocessing.get_context("fork")
    turns = [os.pipe() for _ in range(jobs)]
    reports = [os.pipe() for _ in range(jobs)]
    _load_prctl()
    workers = [
        context.Process(
            target=_write_work,
            args=(render, pieces, w, jobs, turns, reports, in_worker, os.getpid()),
            daemon=True,
        )
        for w in range(jobs)
    ]
    try:
        start_masked(workers)
        for w in range(jobs):  # theirs alone: a worker's death is then an end of file here
            os.close(turns[w][0])
            os.close(reports[w][1])
        ended: set[int] = set()
        for i, piece in enumerate(pieces):
            w = i % jobs
            skip = piece.group in ended
            _write_all(turns[w][1], _TURN.pack(i, _SKIP if skip else _GO))
            status, payload = _read_report(reports[w][0], workers[w], i)
            if status == _PIPE_CLOSED:
                raise BrokenPipeError("standard output closed")
            if status == _ERROR:
                raise payload
            if status == _SKIPPED:
                continue
            if status == _ENDS_GROUP:
                ended.add(piece.group)
            yield payload
    finally:
        _stop_workers(workers)
        for w in range(jobs):
            for fd in (turns[w][1], reports[w][0]):
                with contextlib.suppress(OSError):
                    os.close(fd)


def _write_work(
    render: Callable[[Any], Iterable[tuple[int, Any]]],
    pieces: Sequence[Piece],
    w: int,
    jobs: int,
    turns: list[tuple[int, int]],
    reports: list[tuple[int, int]],
    in_worker: Callable[[], None],
    parent: int,
) -> None:
    in_worker()
    _as_worker(parent)
    for v in range(jobs):  # only its own ends: the parent then sees a dead worker's end
        if v != w:
            for fd in (*turns[v], *reports[v]):
                os.close(fd)
    os.close(turns[w][1])
    os.close(reports[w][0])
    turn, report = turns[w][0], reports[w][1]
    ahead = _Ahead()
    for i in range(w, len(pieces), jobs):
        status, payload = _write_piece(render, pieces[i].work, turn, i, ahead)
        body = b"" if payload is None else pickle.dumps(payload, pickle.HIGHEST_PROTOCOL)
        _write_all(report, _REPORT.pack(i, status, len(body)) + body)
        if status in (_ERROR, _PIPE_CLOSED):
            return


def _write_piece(
    render: Callable[[Any], Iterable[tuple[int, Any]]],
    work: Any,
    turn: int,
    index: int,
    ahead: _Ahead,
) -> tuple[int, Any]:
    """One piece: rendered ahead into ``ahead`` (up to BUFFER_BYTES) until its turn, then
    written; the status and payload to report."""
    holding, result = False, None
    try:
        for stream, data in render(work):
            if stream == 0:
                result = data
            elif holding:
                _write_all(stream, data)
            elif not ahead.keep(stream, data):  # full: its turn is waited for
                if not _wait_turn(turn, index):
                    ahead.drop()
                    return _SKIPPED, None
                holding = True
                ahead.flush()
                _write_all(stream, data)
    except BrokenPipeError:
        return _PIPE_CLOSED, None
    except Exception as e:  # said in its turn, after what came before it
        error = e if isinstance(e, KdumpError) else _unexpected(e)
        if not holding and not _wait_turn(turn, index):
            ahead.drop()
            return _SKIPPED, None
        try:
            ahead.flush()
        except BrokenPipeError:
            return _PIPE_CLOSED, None
        return _ERROR, error
    if not holding:
        if not _wait_turn(turn, index):
            ahead.drop()
            return _SKIPPED, None
        try:
            ahead.flush()
        except BrokenPipeError:
            return _PIPE_CLOSED, None
    return (_ENDS_GROUP if getattr(result, "ended", False) else _DONE_PIECE), result


class _Ahead:
    """What a worker rendered before its turn: one block of BUFFER_BYTES, kept for the
    worker's life (the rendered chunks themselves are freed at once: held until the turn,
    16 MiB of fresh allocations a piece cost a page fault per 4 KiB), and where each stream's
    bytes lie in it, in order."""

    def __init__(self) -> None:
        self.block = bytearray(BUFFER_BYTES)
        self.view = memoryview(self.block)
        self.used = 0
        self.parts: list[tuple[int, int, int]] = []
        """(stream, start, end) in the block, in the order written."""

    def keep(self, stream: int, data: bytes) -> bool:
        """Keep ``data`` for ``stream``; False where the block has no room for it."""
        end = self.used + len(data)
        if end > len(self.block):
            return False
        self.view[self.used : end] = data
        if self.parts and self.parts[-1][0] == stream and self.parts[-1][2] == self.used:
            self.parts[-1] = (stream, self.parts[-1][1], end)
        else:
            self.parts.append((stream, self.used, end))
        self.used = end
        return True

    def flush(self) -> None:
        for stream, start, end in self.parts:
            _write_all(stream, self.view[start:end])
        self.drop()

    def drop(self) -> None:
        self.parts.clear()
        self.used = 0


def _unexpected(e: Exception) -> KdumpError:
    return KdumpError(
        f"unexpected {type(e).__name__}: {e} in a worker process (please report; --jobs 1 "
        "--traceback shows where)"
    )


def _wait_turn(turn: int, index: int) -> bool:
    """Block until the parent gives piece ``index`` its turn (True) or drops it (False)."""
    data = _read_exactly(turn, _TURN.size)
    if data is None:  # the parent is gone
        os._exit(1)
    given, command = _TURN.unpack(data)
    assert given == index, "turns come in the pieces' order"
    return command == _GO


def _flush(buffered: list[tuple[int, bytes]]) -> None:
    for stream, data in buffered:
        _write_all(stream, data)
    buffered.clear()


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int) -> bytes | None:
    """``n`` bytes from ``fd``, or None at its end (the other side is gone)."""
    parts, left = [], n
    while left:
        part = os.read(fd, left)
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _read_report(fd: int, worker: Any, index: int) -> tuple[int, Any]:
    """Worker's report on piece ``index``: (status, payload)."""
    head = _read_exactly(fd, _REPORT.size)
    if head is None:
        worker.join(_GRACE_SECONDS)
        raise KdumpError(
            f"a worker process ended unexpectedly (exit code {worker.exitcode}; out of "
            "memory?); run again with --jobs 1"
        )
    got, status, length = _REPORT.unpack(head)
    assert got == index, "a worker's reports come in its pieces' order"
    body = _read_exactly(fd, length) if length else b""
    return status, (pickle.loads(body) if body else None)


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
