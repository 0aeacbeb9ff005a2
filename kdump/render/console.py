"""The one way kdump's text output reaches a terminal or a pipe.

On a terminal, rich styles and fits the width it finds. On a pipe (cron mail, ``| grep``, a
file) the output must be stable and complete: no colour, no wrapping of long lines, and tables
at their natural width, so a long partition path is never cut to ``/data/kafka/logs/my-topi…``.

On a pipe, lines and ``TextTable`` s of printable ASCII are written directly, byte for byte what
rich writes for them: a cron run of ``kdump verify`` then never imports rich (about half of its
start-up). Anything else goes through rich, so the output stays rich's in every case.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from typing import IO, TYPE_CHECKING, Literal

from kdump.untrusted import terminal, terminal_lines, unfiltered

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

# A line too long for this is still printed whole (soft wrap off); the width only bounds rich's
# layout of things other than tables.
PIPE_WIDTH = 200

Justify = Literal["left", "right"]
Overflow = Literal["fold", "crop", "ellipsis", "ignore"]  # rich.text.OverflowMethod

_NOT_PLAIN = re.compile(r"[^\x20-\x7e]")
"""Text rich would print otherwise: a character outside printable ASCII (a tab, a wide or
combining character, an escape, a line break)."""


def plain_line(text: str) -> str | None:
    """``text`` as rich prints it on a pipe, when that is ``text`` itself; else None."""
    return None if _NOT_PLAIN.search(text) else text


class TextTable:
    """A table of a command's output: a title, columns of text each justified left or right,
    rows of cells.
    Every text is literal: a ``[`` or ``:name:`` in a path is printed as it is, never read as
    rich markup or an emoji code.

    TextConsole prints it: on a pipe as plain text where that is exact (``plain_table``), else
    as the rich ``Table`` of ``to_rich``: heavy rules with edges on a terminal, ASCII rules
    without edges on a pipe.
    """

    def __init__(self, title: str | None = None, overflow: Overflow = "ellipsis") -> None:
        self.title = None if title is None else terminal(title)
        self.overflow = overflow
        """what rich does with a cell too wide for a terminal: "fold" keeps all of it"""
        self.columns: list[tuple[str, Justify]] = []
        self.whole: set[int] = set()
        """columns never folded on a terminal: rich narrows the others instead"""
        self.rows: list[tuple[str, ...]] = []

    def add_column(self, header: str, justify: Justify = "left", whole: bool = False) -> None:
        if whole:
            self.whole.add(len(self.columns))
        self.columns.append((header, justify))

    def add_row(self, *cells: str) -> None:
        assert len(cells) == len(self.columns)
        # escaped here, not as the stream writes them: the width is that of what is printed
        self.rows.append(tuple(terminal(cell) for cell in cells))

    def to_rich(self, terminal: bool) -> Table:
        from rich import box
        from rich.table import Table
        from rich.text import Text

        table = Table(
            # the style rich gives a title of its own
            title=None if self.title is None else Text(self.title, style="table.title"),
            box=box.SIMPLE_HEAVY if terminal else box.ASCII2,
            show_edge=terminal,
        )
        for i, (header, justify) in enumerate(self.columns):
            table.add_column(
                Text(header), justify=justify, overflow=self.overflow, no_wrap=i in self.whole
            )
        for row in self.rows:
            table.add_row(*(Text(cell) for cell in row))
        return table


def plain_table(table: TextTable) -> str | None:
    """``table`` as rich prints ``table.to_rich(False)`` on a pipe at its natural width (title
    line, header, ``-+-`` rule, rows; every cell padded by a space each side, columns joined by
    ``|``), or None where that is not certain (text rich would print otherwise, no columns)."""
    if not table.columns:
        return None
    texts = [table.title or "", *(header for header, _ in table.columns)]
    texts += [cell for row in table.rows for cell in row]
    if any(plain_line(text) is None for text in texts):
        return None
    grid = [tuple(header for header, _ in table.columns), *table.rows]
    widths = [max(len(row[i]) for row in grid) for i in range(len(table.columns))]
    justify = [j for _, j in table.columns]

    def line(row: Sequence[str]) -> str:
        # rich drops a right-justified cell's trailing spaces before it justifies the cell
        return "|".join(
            f" {cell.rstrip(' ').rjust(w) if j == 'right' else cell.ljust(w)} "
            for cell, w, j in zip(row, widths, justify, strict=True)
        )

    lines = [table.title] if table.title else []
    lines += [line(grid[0]), "+".join("-" * (w + 2) for w in widths)]
    lines += [line(row) for row in grid[1:]]
    return "\n".join(lines) + "\n"


def _rich_console(out: IO[str], terminal: bool) -> Console:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own handling exits with status 1, which reads as "warnings" in kdump's
            # exit codes: let the command end the run (kdump.commands.output.pipe_safe,
            # kdump.cli).
            raise BrokenPipeError

    return _Console(
        file=unfiltered(out),  # rich's own escapes (colours) go past kdump's filter
        force_terminal=terminal,
        no_color=not terminal,
        width=None if terminal else PIPE_WIDTH,
        soft_wrap=not terminal,
    )


class TextConsole:
    """The pipe rules above; ``say`` for lines, ``table`` for tables. A rich console is made
    (and rich imported) only for what the plain path does not print."""

    def __init__(self, out: IO[str], terminal: bool) -> None:
        self.out = out
        self.terminal = terminal
        self._rich: Console | None = None

    @property
    def rich(self) -> Console:
        if self._rich is None:
            self._rich = _rich_console(self.out, self.terminal)
        return self._rich

    def say(self, text: str, style: str | None = None) -> None:
        """Print ``text`` literally (no markup, no highlighting); styled only on a terminal.
        Control characters in it are escaped (kdump.untrusted.terminal_lines): rich writes to
        the stream under kdump's filter."""
        text = terminal_lines(text)
        if not self.terminal and (line := plain_line(text)) is not None:
            self._write(line + "\n")
            return
        self.rich_say(text, style)

    def rich_say(self, text: str, style: str | None = None) -> None:
        """``say`` through rich whatever the text (literally: no markup, no emoji codes); on a
        terminal in lines that fit it, broken at spaces and after a path's ``/``."""
        text = terminal_lines(text)
        if self.terminal:
            # with rich, on a terminal only: the wrapper's module costs a piped run 1 ms
            from kdump.render.wrap import wrap_paths

            text = "\n".join(wrap_paths(text, self.rich.width))
        self.rich.print(
            text,
            style=style if self.terminal else None,
            highlight=False,
            markup=False,
            emoji=False,
        )

    def say_whole(self, text: str) -> None:
        """A line to copy and paste (a command): never broken by kdump, on a terminal either
        (one too long for it is the terminal's to fold on screen; a copy of it stays whole)."""
        if not self.terminal and (line := plain_line(text)) is not None:
            self._write(line + "\n")
            return
        self.rich.print(text, highlight=False, markup=False, emoji=False, soft_wrap=True)

    def table(self, table: TextTable | Table) -> None:
        if isinstance(table, TextTable):
            if not self.terminal and (text := plain_table(table)) is not None:
                self._write(text)
                return
            table = table.to_rich(self.terminal)
        self.rich_table(table)

    def table_or_records(self, table: TextTable) -> None:
        """``table``; on a terminal too narrow for it, its rows as records instead, a line for
        each cell (``  header  value``): a value is never cut to ``1700…`` nor a header to
        ``first offs…``, as rich squeezes columns that do not fit."""
        if not self.terminal or self._natural_width(table.to_rich(True)) <= self.rich.width:
            self.table(table)
            return
        if table.title is not None:
            self.heading(table.title)
        width = max(len(header) for header, _ in table.columns)
        for i, row in enumerate(table.rows):
            if i:
                self.say("")
            for (header, _), cell in zip(table.columns, row, strict=True):
                self.say(f"  {header.ljust(width)}  {cell}")

    def rich_table(self, table: Table) -> None:
        """``table`` through rich: at the terminal's width, or at its natural width on a pipe."""
        if self.terminal:
            self.rich.print(table)
            return
        # print(width=...) is capped at the console's width, so widen the console itself.
        self.rich.width = max(PIPE_WIDTH, self._natural_width(table))
        try:
            self.rich.print(table)
        finally:
            self.rich.width = PIPE_WIDTH

    def fitted_tables(
        self,
        make: Callable[[Collection[str]], Sequence[tuple[str | None, TextTable]]],
        droppable: Sequence[str],
    ) -> None:
        """The tables ``make(dropped)`` builds, each under its heading (a path), on a terminal
        with as few of ``droppable`` columns left out (in that order) as makes the widest fit:
        a terminal too narrow for every column loses the less important ones before any cell
        is folded. On a pipe every column, at natural width. A heading None: none printed."""
        dropped: list[str] = []
        tables = make(dropped)
        if self.terminal:
            for name in droppable:
                widest = max((self._natural_width(t.to_rich(True)) for _, t in tables), default=0)
                if widest <= self.rich.width:
                    break
                dropped.append(name)
                tables = make(dropped)
            if max((self._natural_width(t.to_rich(True)) for _, t in tables), default=0) > (
                self.rich.width
            ):
                for _, table in tables:  # too narrow still: rich would squeeze cells to nothing
                    table.whole.clear()
        for i, (heading, table) in enumerate(tables):
            if i:
                self.say("")
            if heading is not None:
                self.heading(heading)
            self.table(table)

    def heading(self, text: str) -> None:
        """A line naming what follows, typically a path (on a terminal: bold)."""
        self.say(text, "bold")

    def print(self, renderable: RenderableType) -> None:
        self.rich.print(renderable, highlight=False)

    def _write(self, text: str) -> None:
        # rich flushes after every print: so does this, for the same interleaving with stderr
        # and the same moment a closed pipe is found.
        self.out.write(text)
        self.out.flush()

    def _natural_width(self, renderable: RenderableType) -> int:
        options = self.rich.options.update_width(1 << 20)
        return max(1, self.rich.measure(renderable, options=options).maximum)
