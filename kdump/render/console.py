"""The one way kdump's text reports reach a terminal or a pipe.

On a terminal, rich styles and fits the width it finds. On a pipe (cron mail, ``| grep``, a
file) the output must be stable and complete: no colour, no wrapping of long lines, and tables
at their natural width, so a long partition path is never cut to ``/data/kafka/logs/my-topi…``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import IO

from rich.console import Console, RenderableType
from rich.table import Table

# A line too long for this is still printed whole (soft wrap off); the width only bounds rich's
# layout of things other than tables.
PIPE_WIDTH = 200


class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich's own handling exits with status 1, which reads as "warnings" in kdump's exit
        # codes: let the command end the run (kdump.commands.common.pipe_safe, kdump.cli).
        raise BrokenPipeError


class TextConsole:
    """A rich console with the pipe rules above; ``say`` for lines, ``table`` for tables."""

    def __init__(self, out: IO[str], terminal: bool) -> None:
        self.terminal = terminal
        self.rich = _Console(
            file=out,
            force_terminal=terminal,
            no_color=not terminal,
            width=None if terminal else PIPE_WIDTH,
            soft_wrap=not terminal,
        )

    def say(self, text: str, style: str | None = None) -> None:
        """Print ``text`` literally (no markup, no highlighting); styled only on a terminal."""
        self.rich.print(text, style=style if self.terminal else None, highlight=False, markup=False)

    def table(self, table: Table) -> None:
        if self.terminal:
            self.rich.print(table)
            return
        # print(width=...) is capped at the console's width, so widen the console itself.
        self.rich.width = max(PIPE_WIDTH, self._natural_width(table))
        try:
            self.rich.print(table)
        finally:
            self.rich.width = PIPE_WIDTH

    def fitted_table(
        self, make: Callable[[Collection[str]], Table], droppable: Sequence[str]
    ) -> None:
        """The table ``make(dropped)`` builds, on a terminal with as few of ``droppable``
        columns left out (in that order) as makes it fit the width: a terminal too narrow for
        every column loses the less important ones before any cell is folded. On a pipe every
        column, at natural width."""
        dropped: list[str] = []
        table = make(dropped)
        if self.terminal:
            for name in droppable:
                if self._natural_width(table) <= self.rich.width:
                    break
                dropped.append(name)
                table = make(dropped)
        self.table(table)

    def print(self, renderable: RenderableType) -> None:
        self.rich.print(renderable, highlight=False)

    def _natural_width(self, renderable: RenderableType) -> int:
        options = self.rich.options.update_width(1 << 20)
        return max(1, self.rich.measure(renderable, options=options).maximum)
