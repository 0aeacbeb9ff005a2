"""How a command's run ends: its exit code with unreadable paths named, its answer printed so
that a reader who leaves early changes nothing, and its metrics for --prom written whatever
happens."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from kdump.commands.output import pipe_safe
from kdump.errors import ExitCode, Interrupted, KdumpError

if TYPE_CHECKING:
    from kdump.metrics import Measures
    from kdump.run import RunClock, RunInfo


class MetricsRun:
    """One command's run, measured: the command fills in what it found before it ends."""

    def __init__(self, clock: RunClock) -> None:
        self.clock = clock
        self.log_dirs: list[str] = []
        self.info: RunInfo | None = None
        self.exit_status: int = ExitCode.OK
        self.measures: Measures | None = None
        self.failed = False
        """The run did not do all it was asked (a path could not be read): no success."""

    def finish(self) -> RunInfo:
        """The run's identity and duration, taken once (JSON's ``run`` and the metrics agree);
        taken at the end when no output asks for it before."""
        self.info = self.clock.info(self.log_dirs)
        return self.info


@contextmanager
def metrics_run(command: str, prom: str | None) -> Iterator[MetricsRun]:
    """Measure a command's run; with ``prom``, write its metrics when it ends: what it found
    and its exit status, or, when it fails (an exception or a stop signal leaves it), its exit
    status (_failed_status) with the last success carried forward from the previous file."""
    from kdump.run import RunClock

    run = MetricsRun(RunClock(command))
    try:
        yield run
    except click.exceptions.Exit:
        raise
    except SystemExit:  # a closed pipe (pipe_safe): the answer was made, only its reader left
        if prom is not None:
            from kdump.metrics import write_run

            info = run.info or run.clock.info(run.log_dirs)
            write_run(prom, info, run.exit_status, run.measures, failed=run.failed)
        raise
    except (Exception, KeyboardInterrupt) as e:
        if prom is not None:
            from kdump.metrics import write_run

            status = _failed_status(e)
            with contextlib.suppress(OSError):  # the error that ended the run is the one to tell
                write_run(prom, run.clock.info(run.log_dirs), status, failed=True)
        raise
    if prom is not None:
        from kdump.metrics import write_run

        info = run.info or run.clock.info(run.log_dirs)
        write_run(prom, info, run.exit_status, run.measures, failed=run.failed)


def _failed_status(e: BaseException) -> int:
    """The exit status of a run an exception ended: the error's own, 128 + the signal that
    stopped it (kdump.errors.Interrupted: a cron job ``timeout`` ended is a failure too), else
    3."""
    if isinstance(e, (KdumpError, Interrupted)):
        return e.exit_code
    if isinstance(e, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    return ExitCode.BAD_INPUT


def refuse_if_nothing_read(unreadable: Sequence[KdumpError], read_any: bool) -> None:
    """Before any output: when no path could be read at all, the first error is the answer."""
    if unreadable and not read_any:
        raise unreadable[0]


def unreadable_code(
    unreadable: Sequence[KdumpError], code: int, run: MetricsRun | None = None
) -> int:
    """The exit code of a run that read all it could: 3 when a path was unreadable (no success
    for --prom), so one dead disk of a JBOD broker hides nothing of the others and is not
    missed either; else the command's own ``code``."""
    if not unreadable:
        return code
    if run is not None:
        run.failed = True
    return ExitCode.BAD_INPUT


def name_unreadable(unreadable: Sequence[KdumpError]) -> None:
    """Each unreadable path on stderr, one line each."""
    for error in unreadable:
        click.echo(f"kdump: {error}", err=True)


def tell_unreadable(
    unreadable: Sequence[KdumpError], code: int, run: MetricsRun | None = None
) -> int:
    """After the output of what could be read: name the unreadable paths; the exit code."""
    name_unreadable(unreadable)
    return unreadable_code(unreadable, code, run)


@contextlib.contextmanager
def answer(unreadable: Sequence[KdumpError], code: int, run: MetricsRun) -> Iterator[None]:
    """Print the answer of a command that knows its exit code before it prints (verify, txn,
    explain): a reader that leaves (``| head``) ends the run quietly with that code, and the
    unreadable paths are named on stderr after the output, whatever became of its reader."""
    run.exit_status = unreadable_code(unreadable, code, run)
    try:
        with pipe_safe(run.exit_status):
            yield
    finally:
        name_unreadable(unreadable)
