"""Standard output of a command: bytes in large chunks, stderr lines in order with it, and the
one way a closed pipe ends a run (``kdump ... | head``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

import click

from kdump.errors import ExitCode
from kdump.untrusted import ESCAPE_NAMES, terminal_bytes


class Output:
    """Standard output as bytes, written in large chunks; a line for standard error first
    writes out what came before it, so the two streams interleave as they were produced.

    ``behind``: large chunks are written by a thread of their own (``_Behind``) while the
    caller renders the next (a process that does not fork while it writes: a forked child
    would inherit the thread's locks, not the thread).

    ``kind`` says what the bytes are, for what reaches a terminal (kdump.untrusted): ``dump``,
    what kafka-dump-log.sh prints (a record's bytes as they are on a pipe or in a file; on a
    terminal no control character raw, as GNU ls shows a name), ``json`` (the same, in JSON's
    escapes), or ``text``, kdump's own lines of what it read (escaped wherever they go)."""

    CHUNK = 1 << 20

    def __init__(self, kind: str = "dump", behind: bool = False) -> None:
        # a text stream with no bytes underneath (a StringIO standing in for stdout) gets text
        self.out: IO[bytes] | _TextSink = getattr(sys.stdout, "buffer", None) or _TextSink(
            sys.stdout
        )
        self.pending = bytearray()
        self.kind = kind
        try:
            tty = sys.stdout.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.escape = kind == "text" or tty
        self.behind: _Behind | None = None
        self.bulk = False
        """Whether a chunk of bulk output came (the pipe is widened then, not before: a
        command printing little keeps the system's pipe)."""
        self.behind_fd = _fileno(self.out) if behind and not tty else None
        """Where the thread writes, once bulk output comes: a pipe or a file (a write into
        /dev/null costs nothing to overlap)."""
        if self.behind_fd is not None and not _pipe_or_file(self.behind_fd):
            self.behind_fd = None

    def bulk_from_workers(self) -> None:
        """Bulk output comes from forked workers writing standard output themselves (dump
        --jobs): its pipe widened now, as for this process's own bulk (they share it)."""
        if not self.escape:
            _widen_pipe(self.out)

    def data(self, data: bytes) -> None:
        if self.escape:
            data = terminal_bytes(data, json=self.kind == "json")
        if len(data) >= self.CHUNK // 2:  # written as is: a copy into ``pending`` costs more
            if not self.bulk:
                self._bulk_begins()
            self._write_pending()
            if self.behind is not None:
                self.behind.put(data)
            else:
                _write_all(self.out, data)
            return
        self.pending += data
        if len(self.pending) >= self.CHUNK:
            self._write_pending()

    def line(self, text: str) -> None:
        self.data(text.encode("utf-8", ESCAPE_NAMES) + b"\n")

    def error(self, text: str) -> None:
        self.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def _bulk_begins(self) -> None:
        """The first large chunk: a pipe widened, the writing thread started (what came
        before it written first)."""
        self.bulk = True
        if self.escape:  # a terminal, or kdump's own text: no bulk to speak of
            return
        _widen_pipe(self.out)
        if self.behind_fd is not None:
            self._write_pending()
            self.out.flush()
            self.behind = _Behind(self.behind_fd)

    def _write_pending(self) -> None:
        if not self.pending:
            return
        if self.behind is not None:
            self.behind.put(bytes(self.pending))
        else:
            _write_all(self.out, self.pending)
        self.pending.clear()

    def flush(self) -> None:
        """Everything given so far written (the thread's too: before a line on standard
        error, and at the end); the writer's error, where it met one, raised here."""
        self._write_pending()
        if self.behind is not None:
            self.behind.drain()
        self.out.flush()

    def close(self) -> None:
        """The writing thread told to end (after a flush: once idle; on an error, with what
        it still holds, never waited for)."""
        if self.behind is not None:
            self.behind.stop()
            self.behind = None


def _write_all(out: IO[bytes] | _TextSink, data: bytes | bytearray) -> None:
    """A large write to a pipe can be partial (its reader left half way: the next write is the
    one that fails): written until everything went or the pipe broke."""
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            written = out.write(view[done:])
            if not written:  # nothing went and nothing failed: no point in a loop
                break
            done += written


PIPE_BYTES = 1 << 20
"""The pipe buffer kdump asks for on standard output once bulk output comes: with Linux's
default of 64 KiB a writer of hundreds of MB wakes its reader (and waits for it) every 64 KiB;
a larger buffer halves what the pipe costs (measured: 660 MB into ``wc -l`` in 0.41-0.55 s,
and 0.20-0.23 s)."""


def _widen_pipe(out: object) -> None:
    """Standard output's pipe grown to PIPE_BYTES where it is a pipe and the system lets
    it (Linux's F_SETPIPE_SZ, up to /proc/sys/fs/pipe-max-size); anything else, as it is."""
    import fcntl
    import stat

    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    fd = _fileno(out)
    if setpipe is None or fd is None:
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_BYTES:
            fcntl.fcntl(fd, setpipe, PIPE_BYTES)
    except OSError:
        pass  # a limit (pipe-user-pages-soft): the default is fine


class _TextSink:
    """Bytes written to a text stream (UTF-8: what kdump renders)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.stream.write(bytes(data).decode())
        return len(data)  # bytes, as Output counts them (the stream counts characters)

    def flush(self) -> None:
        self.stream.flush()


def _pipe_or_file(fd: int) -> bool:
    import stat

    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _fileno(out: object) -> int | None:
    try:
        return int(out.fileno())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # a BytesIO standing in: no descriptor
        return None


class _Behind:
    """A thread writing standard output's chunks while the caller renders the next: a write
    into a pipe waits for its reader (``wc``, ``grep``), and the bulk renderers hold the GIL
    only while rendering, so the two overlap (the deep text dump into ``wc -l``: 0.1 s of
    0.7). At most ``DEPTH`` chunks wait: memory stays bounded. It writes the descriptor
    itself (os.write), never through sys.stdout's buffer, whose lock a thread left blocked in
    a write at exit (an interrupted run) would hold. The first error (a reader that went away)
    is kept, later chunks dropped, and raised to the caller at its next chunk or flush."""

    DEPTH = 2

    def __init__(self, fd: int) -> None:
        import queue
        import threading

        self.fd = fd
        self.queue: queue.Queue[bytes | None] = queue.Queue(self.DEPTH)
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, name="kdump-stdout", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            data = self.queue.get()
            try:
                if data is None:
                    return
                if self.error is None:
                    self._write(data)
            except OSError as e:  # handed to the caller, who raises it
                self.error = e
            finally:
                self.queue.task_done()

    def _write(self, data: bytes) -> None:
        with memoryview(data) as view:
            done = 0
            while done < len(view):  # a write a signal cut short goes on
                done += os.write(self.fd, view[done:])

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def put(self, data: bytes) -> None:
        self._raise()
        self.queue.put(data)

    def drain(self) -> None:
        self.queue.join()
        self._raise()

    def stop(self) -> None:
        """Ends the thread after what it holds; an interrupted run does not wait for it (a
        daemon: the process exits without it)."""
        import queue

        with suppress(queue.Full):
            self.queue.put_nowait(None)


@contextmanager
def pipe_safe(exit_code: int = ExitCode.PIPE_CLOSED) -> Iterator[None]:
    """`kdump ... | head`: a reader that goes away ends the run quietly, with ``exit_code``:
    the command's own when it knows it before writing, else ExitCode.PIPE_CLOSED."""
    try:
        yield
    except BrokenPipeError:
        quiet_pipe(exit_code)


def silence_stdout() -> None:
    """Point standard output at /dev/null: what is still written (Python flushes stdout at
    exit) goes nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def quiet_pipe(exit_code: int) -> None:
    silence_stdout()
    sys.exit(exit_code)


def echo_on(line: str, err: bool = False) -> None:
    """A line of a run that must finish whatever happens to its reader (a repair): once the
    reader of standard output has gone, the rest of the output is dropped and the run goes on
    to its own exit code."""
    try:
        click.echo(line, err=err)
    except BrokenPipeError:
        silence_stdout()
