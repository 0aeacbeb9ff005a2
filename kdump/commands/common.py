"""What every command shares: its output, the options several commands take, Kafka settings
as options (validated as Kafka validates them), and the one way a closed pipe ends a run.

Kept light on purpose: it is imported at start-up; what a command needs to do its work it
imports when it runs.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any, TypeVar

import click

from kdump.errors import ExitCode

F = TypeVar("F", bound=Callable[..., Any])


def apply(f: F, options: Sequence[Callable[[Any], Any]]) -> F:
    """Decorate ``f`` with ``options`` so they show in this order in --help."""
    for option in reversed(options):
        f = option(f)
    return f


# -- output ----------------------------------------------------------------------------------


class Output:
    """Standard output as bytes, written in large chunks; a line for standard error first
    writes out what came before it, so the two streams interleave as they were produced."""

    CHUNK = 1 << 20

    def __init__(self) -> None:
        # a text stream with no bytes underneath (a StringIO standing in for stdout) gets text
        self.out: IO[bytes] | _TextSink = getattr(sys.stdout, "buffer", None) or _TextSink(
            sys.stdout
        )
        self.pending = bytearray()

    def data(self, data: bytes) -> None:
        if len(data) >= self.CHUNK:
            self.flush()
            self.out.write(data)
            return
        self.pending += data
        if len(self.pending) >= self.CHUNK:
            self.flush()

    def line(self, text: str) -> None:
        self.data(text.encode() + b"\n")

    def error(self, text: str) -> None:
        self.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def flush(self) -> None:
        if self.pending:
            self.out.write(self.pending)
            self.pending.clear()
        self.out.flush()


class _TextSink:
    """Bytes written to a text stream (UTF-8: what kdump renders)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, data: bytes | bytearray) -> int:
        return self.stream.write(bytes(data).decode())

    def flush(self) -> None:
        self.stream.flush()


@contextmanager
def pipe_safe(exit_code: int = ExitCode.OK) -> Iterator[None]:
    """`kdump ... | head`: a reader that goes away ends the run quietly, with ``exit_code``
    (the command's own, when it knows it before writing)."""
    try:
        yield
    except BrokenPipeError:
        quiet_pipe(exit_code)


def quiet_pipe(exit_code: int) -> None:
    # Python flushes stdout at exit; pointing it at /dev/null keeps `kdump ... | head` quiet.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(exit_code)


# -- shared options ----------------------------------------------------------------------------


def _timestamp(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from kdump.units import parse_timestamp

    try:
        return parse_timestamp(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from None


def timestamp_option(*names: str, help: str) -> Callable[[F], F]:
    """An option taking epoch milliseconds or ISO-8601 with a zone."""
    return click.option(*names, callback=_timestamp, default=None, metavar="TIME", help=help)


def _now(ctx: click.Context, param: click.Parameter, value: str | None) -> int:
    found = _timestamp(ctx, param, value)
    return time.time_ns() // 1_000_000 if found is None else found


def now_option(f: F) -> F:
    """--now: the time answers are given at (what-if questions); the clock when not given."""
    return click.option(
        "--now",
        callback=_now,
        default=None,
        metavar="TIME",
        help="Answer as at this time: epoch ms or ISO-8601 with a zone (default: now).",
    )(f)


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help="Output: text for people, " + " or ".join(c for c in choices if c != "text") + ".",
    )


def quiet_option(f: F) -> F:
    return click.option(
        "--quiet", "-q", is_flag=True, help="Only warnings and errors: no tables, no progress."
    )(f)


def _jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    if value is not None:
        return value
    from kdump.parallel import default_jobs

    return default_jobs()


def jobs_option(f: F) -> F:
    """--jobs: processes to work in (output and exit code are the same for any number)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        callback=_jobs,
        help="Work in this many processes [default: the CPUs this process may use].",
    )(f)


# -- Kafka settings as options ---------------------------------------------------------------


def kafka_option(flag: str, config: str, help: str) -> Callable[[F], F]:
    """An option holding a Kafka setting: its default and validator are Kafka's (the one table
    in kdump.config), a value Kafka would refuse is a usage error in Kafka's words."""
    from kdump.config import TOPIC_CONFIGS

    key = TOPIC_CONFIGS[config].key

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            return key.parse(str(value))
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None

    return click.option(
        flag,
        default=key.default,
        show_default=True,
        callback=check,
        help=f"{config}: {help}",
    )
