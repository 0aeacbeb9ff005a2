"""The one progress display of kdump: rich bars on a terminal's stderr, never on a pipe or with
--quiet (kdump.progress.Progress is what the library hears; this draws it)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kdump.progress import NO_PROGRESS, Progress
from kdump.untrusted import terminal, unfiltered


def _is_pipe(stream: Any) -> bool:
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (AttributeError, OSError, ValueError):
        return True  # not a real file (a test's StringIO): nothing to draw on
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def show_progress(quiet: bool, streams_stdout: bool = False) -> bool:
    """A progress display goes on a terminal's stderr, never with --quiet or on a pipe: not
    when stderr is no terminal, nor when stdout feeds a pipe (a pager or a script reads it).
    ``streams_stdout``: the command writes as it goes, so a terminal stdout would mix the two
    (the display then shows only when stdout goes to a file)."""
    if quiet or not sys.stderr.isatty() or _is_pipe(sys.stdout):
        return False
    return not (streams_stdout and sys.stdout.isatty())


class _Meter:
    """One bar of a rich display: a ``kdump.progress.Progress``."""

    def __init__(self, progress: Any, task: Any, what_width: int) -> None:
        self.progress, self.task, self.what_width = progress, task, what_width

    def total(self, amount: int) -> None:
        self.progress.update(self.task, total=amount)

    def advance(self, amount: int, what: str) -> None:
        # a file's name: escaped (kdump.untrusted), and shown as text, never as rich markup
        what = _tail(terminal(what), self.what_width)
        self.progress.update(self.task, advance=amount, what=what)

    def set(self, completed: int, total: int, description: str) -> None:
        self.progress.update(self.task, completed=completed, total=total, description=description)


def _tail(what: str, width: int) -> str:
    if width < MIN_WHAT:
        return ""
    return what if len(what) <= width else "…" + what[-(width - 1) :]


NUMBERS = 50
"""The columns a bar's numbers take (percentage, bytes done/total, rate, time left, and the
spaces between): the bar and the file's name share what the terminal has besides."""
MIN_WHAT = 16
"""A file's name in fewer columns than this says nothing: it is left out."""


def _widths(terminal: int) -> tuple[int, int]:
    """The bar's width and the file name's, on a terminal this wide: the bar shrinks (to 10)
    and the name goes before a number is folded onto a second line (an 80-column terminal
    showed ``2.6…`` above ``KiB``)."""
    bar = max(10, min(40, terminal - NUMBERS - 20))
    return bar, max(0, min(48, terminal - NUMBERS - bar - 20))


class ProgressDisplay:
    """The bars of one run on stderr; ``bar()`` adds one (Spark: one per stage)."""

    def __init__(self, progress: Any, what_width: int) -> None:
        self.progress, self.what_width = progress, what_width

    def bar(self, description: str, total: int | None = None) -> _Meter:
        task = self.progress.add_task(description, total=total, what="")
        return _Meter(self.progress, task, self.what_width)


@contextmanager
def progress_display(
    show: bool, unit: str = "bytes", console: Any = None
) -> Iterator[ProgressDisplay | None]:
    """The one progress display of kdump: rich bars on stderr (or ``console``), removed when
    done. Bytes show done/total, rate and time left; other units (``tasks``) count the same."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        ProgressColumn,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as RichProgress
    from rich.text import Text

    class _Rate(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            rate = "?" if speed is None else f"{speed:.1f}"
            return Text(f"{rate} {unit}/s", style="progress.data.speed")

    # rich writes its own escapes (the bars): to stderr itself, not through kdump's filter
    console = console or Console(file=unfiltered(sys.stderr))
    bar, what = _widths(console.width)
    columns: list[Any] = [
        TextColumn("{task.description}"),
        BarColumn(bar_width=bar),
        TaskProgressColumn(),
    ]
    if unit == "bytes":
        columns += [DownloadColumn(binary_units=True), TransferSpeedColumn()]
    else:
        columns += [MofNCompleteColumn(), _Rate()]
    columns += [TimeRemainingColumn(), TextColumn("{task.fields[what]}", style="dim", markup=False)]
    with RichProgress(*columns, console=console, transient=True) as progress:
        yield ProgressDisplay(progress, what)


PURE_PYTHON_NOTICE_BYTES = 1 << 30
"""A run that reads more than this without the C fast paths says so first (issue 34: pure
Python is up to 45 times slower, docs/benchmarks.md), so a slow run is not a mystery."""


class _PurePythonNotice:
    """A ``Progress`` that, told a run's bytes, says once on stderr when they are many and the
    C fast paths are off; the display (or nothing) hears the rest."""

    def __init__(self, inner: Progress) -> None:
        self.inner, self.said = inner, False

    def total(self, amount: int) -> None:
        from kdump import speedups

        if amount > PURE_PYTHON_NOTICE_BYTES and not self.said and speedups.native() is None:
            self.said = True
            gib = amount / 2**30
            sys.stderr.write(
                f"kdump: reading {gib:.1f} GiB without the C fast paths ({speedups.why_off()}): "
                "pure Python is up to 45x slower; kdump --version says how to get them (-q: no "
                "notice)\n"
            )
        self.inner.total(amount)

    def advance(self, amount: int, what: str) -> None:
        self.inner.advance(amount, what)


@contextmanager
def progress(show: bool, description: str, *, quiet: bool) -> Iterator[Progress]:
    """One bar of bytes for a command's run; ``NO_PROGRESS`` when not shown. Unless ``quiet``,
    a run of more than 1 GiB without the C fast paths says so first."""
    with progress_display(show) as display:
        meter = NO_PROGRESS if display is None else display.bar(description)
        yield meter if quiet else _PurePythonNotice(meter)
