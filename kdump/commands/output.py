"""Standard output of a command: bytes in large chunks, stderr lines in order with it, and the
one way a closed pipe ends a run (``kdump ... | head``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

import click

from kdump.errors import ExitCode
from kdump.untrusted import ESCAPE_NAMES, terminal_bytes


class Output:
    """Standard output as bytes, written in large chunks; a line for standard error first
    writes out what came before it, so the two streams interleave as they were produced.

    ``kind`` says what the bytes are, for what reaches a terminal (kdump.untrusted): ``dump``,
    what kafka-dump-log.sh prints (a record's bytes as they are on a pipe or in a file; on a
    terminal no control character raw, as GNU ls shows a name), ``json`` (the same, in JSON's
    escapes), or ``text``, kdump's own lines of what it read (escaped wherever they go)."""

    CHUNK = 1 << 20

    def __init__(self, kind: str = "dump") -> None:
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

    def data(self, data: bytes) -> None:
        if self.escape:
            data = terminal_bytes(data, json=self.kind == "json")
        if len(data) >= self.CHUNK // 2:  # written as is: a copy into ``pending`` costs more
            self.flush()
            self.out.write(data)
            return
        self.pending += data
        if len(self.pending) >= self.CHUNK:
            self.flush()

    def line(self, text: str) -> None:
        self.data(text.encode("utf-8", ESCAPE_NAMES) + b"\n")

    def error(self, text: str) -> None:
        self.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def flush(self) -> None:
        if self.pending:
            # a large write to a pipe can be partial (its reader left half way: the next
            # write is the one that fails): write until everything went or the pipe broke
            view, done = memoryview(self.pending), 0
            while done < len(view):
                written = self.out.write(view[done:])
                if not written:  # nothing went and nothing failed: no point in a loop
                    break
                done += written
            view.release()
            self.pending.clear()
        self.out.flush()


class _TextSink:
    """Bytes written to a text stream (UTF-8: what kdump renders)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self.stream.write(bytes(data).decode())
        return len(data)  # bytes, as Output counts them (the stream counts characters)

    def flush(self) -> None:
        self.stream.flush()


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
