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
import os
import pickle
import select
import signal
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kdump.errors import STOP_SIGNALS, KdumpError, start_masked
from kdump.tuples import NamedTuple

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
    return hasattr(os, "fork")


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
    import multiprocessing  # its queues: this way of working only

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

_DONE_PIECE, _ENDS_GROUP, _ERROR, _PIPE_CLOSED, _SKIPPED = range(5)
"""How a worker reports on a piece: written, written and its group ends with it, failed (the
exception follows), standard output gone, dropped."""
_TURN = struct.Struct(">qq")
"""The turn: the piece it is for, and the last group a piece ended (-1: none), whose later
pieces are dropped."""
_REPORT = struct.Struct(">qBI")

BUFFER_BYTES = 16 << 20
"""Bytes a worker renders ahead of its turns (of one piece or several): then it waits for the
first's. A piece whose turn has come writes the rest as it is rendered."""


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
    its own output to this process's standard output and error, piece after piece in order.
    A worker that has written its piece hands the turn to the next piece's worker itself: on a
    busy machine each hand-over waits for the scheduler, and one through the parent waited
    twice. The parent starts the first turn and copies nothing. ``render(work)`` yields
    ``(1, bytes)`` for standard output, ``(2, bytes)`` for standard error, in the order
    written, then once ``(0, report)``: what the parent gets back (pickled), in the pieces'
    order. A report whose ``ended`` attribute is true ends its group: the group's later pieces
    are dropped, unwritten. A worker's exception is raised here, in its turn (after what came
    before it was written); standard output closed (``| head``) raises BrokenPipeError."""
    sys.stdout.flush()  # what is buffered here would be written twice, by each worker
    sys.stderr.flush()
    turns = [os.pipe() for _ in range(jobs)]
    reports = [os.pipe() for _ in range(jobs)]
    if pieces:  # the first turn, there before its worker is
        _write_all(turns[0][1], _TURN.pack(0, -1))
    _load_prctl()
    workers = [
        _Forked(_write_work, (render, pieces, w, jobs, turns, reports, in_worker, os.getpid()))
        for w in range(jobs)
    ]
    _WRITERS_FORKED[0] += 1
    try:
        start_masked(workers)
        # the workers' alone: a worker's death is then an end of file to whoever waits on it
        for w in range(jobs):
            os.close(turns[w][0])
            os.close(turns[w][1])
            os.close(reports[w][1])
        for i in range(len(pieces)):
            w = i % jobs
            status, payload = _read_report(reports[w][0], workers[w], i)
            if status == _PIPE_CLOSED:
                raise BrokenPipeError("standard output closed")
            if status == _ERROR:
                raise payload
            if status != _SKIPPED:
                yield payload
    finally:
        _stop_workers(workers)
        for w in range(jobs):
            with contextlib.suppress(OSError):
                os.close(reports[w][0])


_WRITERS_FORKED = [0]


def writers_forked() -> int:
    """How many times this process forked workers that wrote its output (write_in_turn): its
    heap's pages were shared with them, copy-on-write, so the interpreter's clean-up at exit,
    which writes to every object, then takes a page fault on each page (kdump.cli ends the
    kdump program without it)."""
    return _WRITERS_FORKED[0]


class _Forked:
    """A worker process: ``target(*args)`` in a child forked by ``start`` (what
    multiprocessing's Process does for a fork, without loading multiprocessing, and without
    its start-up and exit-time work in the child). The child ends with os._exit: 0 when the
    target returns, 1 (a line on stderr) when it raises."""

    def __init__(self, target: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.target, self.args = target, args
        self.pid: int | None = None
        self.exitcode: int | None = None

    def start(self) -> None:
        pid = os.fork()
        if pid:
            self.pid = pid
            return
        code = 1
        try:
            self.target(*self.args)
            code = 0
        except BaseException as e:  # a bug: the parent says the worker ended unexpectedly
            with contextlib.suppress(BaseException):
                os.write(2, f"kdump: a worker process failed: {type(e).__name__}: {e}\n".encode())
        finally:
            os._exit(code)

    def is_alive(self) -> bool:
        return self.pid is not None and not self._reaped(os.WNOHANG)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the worker to end, ``timeout`` seconds at most."""
        if self.pid is None:
            return
        if timeout is None:
            self._reaped(0)
            return
        deadline, pause = time.monotonic() + timeout, 0.0005
        while not self._reaped(os.WNOHANG) and time.monotonic() < deadline:
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.pid is not None and self.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def _reaped(self, flags: int) -> bool:
        """Whether the worker has ended (its exit code kept); ``flags`` 0 waits for it."""
        assert self.pid is not None
        if self.exitcode is None:
            try:
                pid, status = os.waitpid(self.pid, flags)
            except ChildProcessError:  # reaped elsewhere
                self.exitcode = -1
                return True
            if pid:
                self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode is not None


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
    _keep_freed_memory()
    after = (w + 1) % jobs
    for v in range(jobs):  # only the ends it uses: a dead worker's are then closed
        if v != after:
            os.close(turns[v][1])
        if v != w:
            os.close(turns[v][0])
            os.close(reports[v][1])
        os.close(reports[v][0])
    writer = _Writer(turns[w][0], reports[w][1], turns[after][1], len(pieces))
    try:
        for i in range(w, len(pieces), jobs):
            ahead = writer.start(i, pieces[i].group)
            try:
                for stream, data in render(pieces[i].work):
                    if stream == 0:
                        ahead.result = data
                    elif not writer.add(ahead, stream, data):
                        break  # dropped at its turn: its group ended before it
            except (BrokenPipeError, _OutputFailed):
                raise
            except Exception as e:  # said in its turn, after what came before it
                ahead.error = e if isinstance(e, KdumpError) else _unexpected(e)
            writer.done(ahead)
            if ahead.error is not None:
                writer.finish()  # its turn: the run ends there, unless its group had ended
        writer.finish()
    except BrokenPipeError:
        writer.failed(_PIPE_CLOSED, None)
    except _OutputFailed as e:
        writer.failed(_ERROR, e.error)
    except _Ended:
        pass


class _Ended(BaseException):
    """The piece a worker reported ends the run (its error): the worker ends."""


class _OutputFailed(Exception):
    """Standard output or error refused a write (a full disk: ENOSPC, EIO): the run ends with
    that error, as one process's does (kdump.cli words it)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


def _write_out(fd: int, data: bytes) -> None:
    """A piece's bytes to standard output or error (BrokenPipeError: the reader is gone)."""
    try:
        _write_all(fd, data)
    except BrokenPipeError:
        raise
    except OSError as e:
        raise _OutputFailed(e) from None


_WAITING, _WRITING, _DROPPED = range(3)
"""A piece's turn: not come yet; come (what it rendered is written, the rest goes straight
out); come for a piece whose group had ended (nothing of it is written)."""


class _Ahead:
    """One piece of a worker's: its chunks rendered before its turn, in order, written at its
    turn (the heap they came from keeps their memory for the next piece's:
    _keep_freed_memory)."""

    __slots__ = ("error", "finished", "group", "index", "parts", "result", "size", "turn")

    def __init__(self, index: int, group: int) -> None:
        self.index, self.group = index, group
        self.parts: list[tuple[int, bytes]] = []
        self.size = 0
        self.result: Any = None
        self.error: KdumpError | None = None
        self.finished = False
        """Rendered to its end."""
        self.turn = _WAITING


class _Writer:
    """A worker's pieces in its order: rendered ahead (several, up to BUFFER_BYTES in all)
    while their turns have not come, each written at its turn, the turn handed to the next
    piece's worker as soon as the piece is rendered to its end, then its report sent to the
    parent. A turn is looked for between chunks without waiting, and waited for only where
    the buffer is full or nothing is left to render: on a busy machine each hand-over waits
    for the scheduler, and the rendering goes on meanwhile."""

    def __init__(self, turn: int, report: int, handover: int, pieces: int) -> None:
        self.turn, self.report, self.handover, self.pieces = turn, report, handover, pieces
        self.queue: list[_Ahead] = []
        """Pieces rendered or being rendered, in order, whose turn has not come or which
        hold it (the first alone)."""
        self.used = 0
        self.ended = -1
        """The last group a piece ended, as the last turn said (its later pieces are dropped)."""

    def start(self, index: int, group: int) -> _Ahead:
        ahead = _Ahead(index, group)
        self.queue.append(ahead)
        return ahead

    def add(self, ahead: _Ahead, stream: int, data: bytes) -> bool:
        """A chunk of ``ahead``, the piece being rendered; False where the piece is dropped."""
        while ahead.turn == _WAITING:
            if self.used + len(data) <= BUFFER_BYTES or not self.used:
                ahead.parts.append((stream, data))
                ahead.size += len(data)
                self.used += len(data)
                self._poll()
                return ahead.turn != _DROPPED
            self._take_turn()  # the buffer is full: the first piece's turn is waited for
        if ahead.turn == _DROPPED:
            return False
        _write_out(stream, data)
        return True

    def done(self, ahead: _Ahead) -> None:
        """``ahead`` is rendered to its end."""
        ahead.finished = True
        if ahead.turn != _WAITING:
            self._settle()
        self._poll()

    def finish(self) -> None:
        """Every piece rendered: their turns waited for."""
        while self.queue:
            self._take_turn()

    def failed(self, status: int, error: OSError | None) -> None:
        """Standard output is gone (_PIPE_CLOSED) or refused a write (_ERROR): said of the
        piece whose turn it was (the worker writes in its turn only), and the worker ends."""
        if self.queue:
            _report(self.report, self.queue[0].index, status, error)

    def _poll(self) -> None:
        """The turns that have come, taken without waiting."""
        while (
            self.queue
            and self.queue[0].turn == _WAITING
            and select.select([self.turn], [], [], 0)[0]
        ):
            self._take_turn()

    def _take_turn(self) -> None:
        """The first piece's turn, waited for: what it rendered is written (or dropped)."""
        first = self.queue[0]
        self.ended = _wait_turn(self.turn, first.index)
        if first.group == self.ended:  # its group ended before it
            first.turn = _DROPPED
        else:
            first.turn = _WRITING
            for stream, data in first.parts:
                _write_out(stream, data)
        self.used -= first.size
        first.parts, first.size = [], 0
        self._settle()

    def _settle(self) -> None:
        """The first piece, its turn come, once rendered to its end: the turn handed on, the
        parent told (the run ends with an error)."""
        first = self.queue[0]
        if not first.finished:
            return
        del self.queue[0]
        if first.turn == _DROPPED:
            status, payload = _SKIPPED, None
        elif first.error is not None:
            _report(self.report, first.index, _ERROR, first.error)
            raise _Ended
        elif getattr(first.result, "ended", False):
            status, payload, self.ended = _ENDS_GROUP, first.result, first.group
        else:
            status, payload = _DONE_PIECE, first.result
        if first.index + 1 < self.pieces:
            _write_all(self.handover, _TURN.pack(first.index + 1, self.ended))
        _report(self.report, first.index, status, payload)


def _report(fd: int, index: int, status: int, payload: Any) -> None:
    body = b"" if payload is None else pickle.dumps(payload, pickle.HIGHEST_PROTOCOL)
    _write_all(fd, _REPORT.pack(index, status, len(body)) + body)


def _unexpected(e: Exception) -> KdumpError:
    return KdumpError(
        f"unexpected {type(e).__name__}: {e} in a worker process (please report; --jobs 1 "
        "--traceback shows where)"
    )


def _wait_turn(turn: int, index: int) -> int:
    """Block until piece ``index`` has its turn; the last group a piece ended (-1: none)."""
    data = _read_exactly(turn, _TURN.size)
    if data is None:  # the worker before it, or the parent, is gone: so is the run
        os._exit(1)
    given, ended = _TURN.unpack(data)
    assert given == index, "turns come in the pieces' order"
    return int(ended)


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


_MALLOPT: list[Any] = [None]
"""glibc's mallopt once loaded (None elsewhere)."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
"""malloc.h's parameters."""

_KEPT_BYTES = 64 << 20


def _load_prctl() -> None:
    if _PRCTL[0] is not None or not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        _PRCTL[0] = libc.prctl
    except (OSError, AttributeError):  # no libc to be had (a static build): no such guard
        return
    _MALLOPT[0] = getattr(libc, "mallopt", None)


def _keep_freed_memory() -> None:
    """A writing worker's rendered chunks (a MiB or so, one after the other) taken from and
    freed back to the heap, which keeps what is freed: glibc's default maps each such chunk
    afresh or gives the heap's top back at once, and the next chunk then took a page fault
    every 4 KiB (5 times the page faults of --jobs 1)."""
    mallopt = _MALLOPT[0]
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _KEPT_BYTES // 2)
        mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES)


def _get(q: Any, worker: Any) -> tuple[int, str, Any]:
    """The next result of one worker; a worker that died without a word is an error."""
    import queue

    while True:
        try:
            return q.get(timeout=1.0)
        except queue.Empty:
            if not worker.is_alive():
                raise KdumpError(
                    f"a worker process ended unexpectedly (exit code {worker.exitcode}; out of "
                    "memory?); run again with --jobs 1"
                ) from None
