"""What verify prints: rich tables on a terminal, plain columns on a pipe, JSON for machines."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from kdump.checks.findings import Finding, Severity
from kdump.checks.verify import VerifyResult
from kdump.render.console import Justify, TextConsole, TextTable
from kdump.units import at, size
from kdump.untrusted import json_text, terminal

if TYPE_CHECKING:
    from kdump.run import RunInfo

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


SUMMARY_COLUMNS = (
    "partition",
    "segments",
    "bytes",
    "batches",
    "records",
    "offsets",
    "first timestamp",
    "last timestamp",
    "errors",
    "warnings",
    "info",
)
DROPPED_FIRST = (
    "first timestamp",
    "last timestamp",
    "records",
    "segments",
    "batches",
    "offsets",
    "bytes",
    "info",
)
"""On a terminal too narrow for the whole table, these columns go, in this order, before a
partition name is ever folded (``kdump verify --format json`` has them all)."""


def summary_tables(result: VerifyResult, drop: Collection[str] = ()) -> list[tuple[str, TextTable]]:
    """The tables of partitions, one for each directory they lie in (a log dir), named once
    above it, each partition by its own name beneath; ``drop`` names columns left out. No cell
    is ever cut, and on a terminal a partition's name is never folded (the other columns are)."""
    shown = [name for name in SUMMARY_COLUMNS if name not in drop]
    tables: dict[str, TextTable] = {}
    for partition in result.partitions:
        s = partition.summary
        log_dir, _, name = s.path.rstrip("/").rpartition("/")
        table = tables.get(log_dir)
        if table is None:
            table = tables[log_dir] = TextTable(overflow="fold")
            for column in shown:
                justify: Justify = "left" if column in ("partition", "offsets") else "right"
                table.add_column(column, justify, whole=column == "partition")
        offsets = "-" if s.first_offset is None else f"{s.first_offset}..{s.last_offset}"
        if s.read == "none":  # a run cut short before it (--budget): no count is of it
            cells = dict.fromkeys(shown, "-") | {"partition": name, "segments": "not read"}
            table.add_row(*(cells[column] for column in shown))
            continue
        cells = {
            "partition": name,
            "segments": str(s.segments_read) + (", partly" if s.read == "partly" else ""),
            "bytes": size(s.bytes_read),
            "batches": str(s.batches),
            "records": f"{s.records}+" if s.wrappers_not_counted else str(s.records),
            "offsets": offsets,
            "first timestamp": at(s.first_timestamp),
            "last timestamp": at(s.last_timestamp),
            "errors": str(s.errors),
            "warnings": str(s.warnings),
            "info": str(s.infos),
        }
        table.add_row(*(cells[column] for column in shown))
    return [(f"kdump verify: {log_dir or '.'}/", table) for log_dir, table in tables.items()]


def finding_line(f: Finding, advice: bool = True) -> str:
    """``severity CODE path[:position] [offset N]: message`` and its fix, or its advice (unless
    ``advice`` is False: a repair that removes the finding's cause says so instead)."""
    head, fix = _finding_parts(f, advice)
    return head if fix is None else f"{head} [fix: {fix}]"


def say_finding(console: TextConsole, f: Finding) -> None:
    """A finding on a terminal: its text in lines that fit, its fix on a line of its own,
    whole (copied from the screen, it runs); on a pipe, the one line of ``finding_line``."""
    if not console.terminal:
        console.say(finding_line(f), STYLES[f.severity])
        return
    head, fix = _finding_parts(f, advice=True)
    console.say(head, STYLES[f.severity])
    if fix is not None:
        console.say_whole(f"  fix: {fix}")


def _finding_parts(f: Finding, advice: bool) -> tuple[str, str | None]:
    """The finding's text (with its advice, where it has no fix and ``advice``), and its fix
    as this host runs it."""
    where = f.path
    if f.position is not None:
        where += f":{f.position}"
    extra = f" offset {f.offset}" if f.offset is not None else ""
    head = f"{f.severity.value:<7} {f.code} {where}{extra}: {f.message}"
    if f.fix:
        # as this host runs kdump (its module, shlex too, only where there is a fix to print)
        from kdump.render.shell import runnable

        # one line whatever a name or a restored finding holds (kdump.untrusted)
        return terminal(head), terminal(runnable(f.fix))
    if advice and f.advice:
        head += f" [advice: {f.advice}]"
    return terminal(head), None


def render_text(
    result: VerifyResult, out: IO[str], terminal: bool, quiet: bool, min_severity: Severity
) -> None:
    console = TextConsole(out, terminal)
    if not quiet:
        console.fitted_tables(partial(summary_tables, result), DROPPED_FIRST)
        for partition in result.partitions:
            if partition.summary.startup:
                console.say(
                    f"{partition.path}: at startup the broker "
                    + "; ".join(partition.summary.startup)
                )
    shown = [f for f in result.findings if f.severity.rank >= min_severity.rank]
    for f in shown:
        say_finding(console, f)
    if not quiet:
        counts = result.counts()
        console.say(
            f"{len(result.partitions)} partition(s): {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {counts['info']} info"
        )
        if result.audit.bytes_unchanged_skipped:
            console.say(
                f"read {size(result.audit.bytes_verified)}; "
                f"{size(result.audit.bytes_unchanged_skipped)} unchanged since verified "
                "clean, not read (--state)"
            )
        if result.audit.state is not None:
            console.say(f"state: {result.audit.state}")
    if result.audit.partial:
        console.say(
            f"partial: stopped before {result.audit.stopped_at} (--budget, or interrupted); "
            "the verdict covers what was read",
            STYLES[Severity.WARNING],
        )


def render_json(result: VerifyResult, run: RunInfo | None = None) -> str:
    doc: dict[str, Any] = {
        "findings": [f.to_dict() for f in result.findings],
        "summary": result.summary(),
    }
    if run is not None:
        doc["run"] = run.to_dict(result.findings) | result.audit.to_dict()
    return json_text(doc, indent=2)


def render_jsonl(result: VerifyResult) -> Iterator[str]:
    for f in result.findings:
        yield json_text(f.to_dict(), separators=(",", ":"))
