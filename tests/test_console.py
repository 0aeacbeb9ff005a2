"""The text console's plain path on a pipe prints exactly the bytes rich prints, and a verify on
a pipe never imports rich (it is most of a cron run's start-up)."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from conftest import ORACLE, REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kdump.render.console import TextConsole, TextTable, plain_line, plain_table

# Mostly printable ASCII (paths, numbers, timestamps, dashes, markup and emoji codes, printed
# literally), with now and then what must go through rich: tabs, line breaks, escapes, wide and
# non-ASCII characters.
_PLAIN_CHARS = st.sampled_from([*"abcxyz019-._/ :()+,=~", "[b]", "[/]", ":smile:", ":100:"])
_ODD_CHARS = st.sampled_from(["\t", "é", "界", "\x1b", "…", "\n", "\r", "\x7f"])
_TEXT = st.lists(st.one_of(_PLAIN_CHARS, _PLAIN_CHARS, _PLAIN_CHARS, _ODD_CHARS), max_size=40).map(
    "".join
)
_LONG = st.text(alphabet="abc/-_.0123456789", min_size=150, max_size=400)
_CELL = st.one_of(_TEXT, _TEXT, st.just(""), _LONG)


def _through_rich_say(text: str) -> str:
    out = io.StringIO()
    TextConsole(out, False).rich_say(text)
    return out.getvalue()


def _through_rich_table(table: TextTable) -> str:
    out = io.StringIO()
    TextConsole(out, False).rich_table(table.to_rich(False))
    return out.getvalue()


@st.composite
def _tables(draw: st.DrawFn) -> TextTable:
    table = TextTable(
        title=draw(st.one_of(st.none(), st.just(""), _TEXT, _LONG)),
        overflow=draw(st.sampled_from(["fold", "ellipsis"])),
    )
    width = draw(st.integers(min_value=1, max_value=12))
    for _ in range(width):
        table.add_column(draw(_CELL), draw(st.sampled_from(["left", "right"])))
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        table.add_row(*(draw(_CELL) for _ in range(width)))
    return table


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_a_plain_line_is_what_rich_prints(text: str) -> None:
    plain = plain_line(text)
    if plain is not None:
        assert plain + "\n" == _through_rich_say(text)
    out = io.StringIO()
    TextConsole(out, False).say(text)
    assert out.getvalue() == _through_rich_say(text)


def _one_column(header: str, justify: str, *cells: str) -> TextTable:
    table = TextTable(title=None, overflow="fold")
    table.add_column(header, justify)
    for cell in cells:
        table.add_row(cell)
    return table


@settings(max_examples=300, deadline=None)
@given(_tables())
@example(_one_column("a ", "right"))  # rich drops a right-justified cell's trailing spaces
@example(_one_column("ab", "right", "x  ", " y "))
def test_a_plain_table_is_what_rich_prints(table: TextTable) -> None:
    plain = plain_table(table)
    if plain is not None:
        assert plain == _through_rich_table(table)
    out = io.StringIO()
    TextConsole(out, False).table(table)
    assert out.getvalue() == _through_rich_table(table)


def test_the_plain_path_is_taken_for_plain_text() -> None:
    """The property tests above would pass if nothing ever took the plain path: these must."""
    table = TextTable(title="kdump verify")
    table.add_column("partition")
    table.add_column("last timestamp", "right")
    table.add_row("/data/kafka-logs/my-topic-0", "1700000015000 (2023-11-14T22:13:35.000Z)")
    assert plain_table(table) == _through_rich_table(table)
    assert plain_line("warning K001 a/b-0/00000000000000000000.log:4096: x y z") is not None


def test_text_is_literal_never_markup_or_emoji() -> None:
    """A partition path or a finding is data: ``[/]`` once ended a verify with rich's
    MarkupError, ``[time index]`` vanished from explain's table, ``log:100:`` became an emoji."""
    table = TextTable(title="[b]t[/b]")
    table.add_column(":100:")
    table.add_row("/data/[/]/x-0")
    table.add_row("a[time index]")
    for terminal in (False, True):
        out = io.StringIO()
        TextConsole(out, terminal).table(table.to_rich(terminal))
        text = out.getvalue()
        assert all(s in text for s in ("[b]t[/b]", ":100:", "/data/[/]/x-0", "a[time index]"))
        out = io.StringIO()
        TextConsole(out, terminal).say("a.log:100: [/] :smile:")
        assert "a.log:100: [/] :smile:" in out.getvalue()


def test_verify_on_a_pipe_does_not_import_rich() -> None:
    """Rich is half of a cron run's start-up: a verify whose report is plain text goes without
    it (structural, not timed: ``-X importtime`` lists every module the run imports)."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kdump", "verify", str(ORACLE / "plain-0")],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "kdump verify" in run.stdout
    imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if "|" in line}
    assert "kdump.checks.verify" in imported  # the listing is real
    assert not {name for name in imported if name == "rich" or name.startswith("rich.")}


def test_on_a_terminal_a_path_folds_only_after_a_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28 point 13: rich breaks lines at spaces only and folded a long path wherever the
    line ended (``.../__consumer_offset`` / ``s-0``)."""
    monkeypatch.setenv("COLUMNS", "46")
    text = (
        "warning INDEX_MISSING /data/kafka-logs/__consumer_offsets-0/00000000000000000000.index: "
        "the log has data [fix: kdump rebuild-index /data/kafka-logs/__consumer_offsets-0/x.log]"
    )
    out = io.StringIO()
    TextConsole(out, True).say(text)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines()
    assert len(lines) > 2 and all(len(line) <= 46 for line in lines)
    names = [name for word in text.split() for name in word.split("/") if name]
    assert all(any(name in line for line in lines) for name in names)  # each whole on a line
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
