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

    def __init__(self, progress: Any, task: Any) -> None:
        self.progress, self.task = progress, task

    def total(self, amount: int) -> None:
        self.progress.update(self.task, total=amount)

    def advance(self, amount: int, what: str) -> None:
        self.progress.update(self.task, advance=amount, what=_tail(what))

    def set(self, completed: int, total: int, description: str) -> None:
        self.progress.update(self.task, completed=completed, total=total, description=description)


def _tail(what: str, width: int = 48) -> str:
    return what if len(what) <= width else "…" + what[-(width - 1) :]


class ProgressDisplay:
    """The bars of one run on stderr; ``bar()`` adds one (Spark: one per stage)."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress

    def bar(self, description: str, total: int | None = None) -> _Meter:
        return _Meter(self.progress, self.progress.add_task(description, total=total, what=""))


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

    columns: list[Any] = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn()]
    if unit == "bytes":
        columns += [DownloadColumn(binary_units=True), TransferSpeedColumn()]
    else:
        columns += [MofNCompleteColumn(), _Rate()]
    columns += [TimeRemainingColumn(), TextColumn("{task.fields[what]}", style="dim")]
    console = console or Console(stderr=True)
    with RichProgress(*columns, console=console, transient=True) as progress:
        yield ProgressDisplay(progress)


@contextmanager
def progress(show: bool, description: str) -> Iterator[Progress]:
    """One bar of bytes for a command's run; ``NO_PROGRESS`` when not shown."""
    with progress_display(show) as display:
        yield NO_PROGRESS if display is None else display.bar(description)
