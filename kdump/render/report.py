"""The verify report: rich tables on a terminal, plain columns on a pipe, JSON for machines."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from functools import partial
from typing import IO, TYPE_CHECKING, Any

from kdump.checks.findings import Finding, Severity
from kdump.checks.verify import VerifyResult
from kdump.render.console import TextConsole, TextTable
from kdump.units import at, size

if TYPE_CHECKING:
    from kdump.run import RunInfo

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


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
DROPPED_FIRST = ("first timestamp", "last timestamp", "records", "segments", "batches")
"""On a terminal too narrow for the whole table, these columns go, in this order, before a
partition name is ever folded (``kdump verify --format json`` has them all)."""


def summary_table(result: VerifyResult, drop: Collection[str] = ()) -> TextTable:
    """The table of partitions; ``drop`` names columns left out. No cell is ever cut: a path
    too wide for the terminal folds onto further lines."""
    table = TextTable(title="kdump verify", overflow="fold")
    shown = [name for name in SUMMARY_COLUMNS if name not in drop]
    for name in shown:
        table.add_column(name, "left" if name in ("partition", "offsets") else "right")
    for report in result.reports:
        s = report.summary
        offsets = "-" if s.first_offset is None else f"{s.first_offset}..{s.last_offset}"
        cells = {
            "partition": s.path,
            "segments": str(s.segments),
            "bytes": size(s.bytes),
            "batches": str(s.batches),
            "records": _or_dash(s.records),
            "offsets": offsets,
            "first timestamp": at(s.first_timestamp),
            "last timestamp": at(s.last_timestamp),
            "errors": str(s.errors),
            "warnings": str(s.warnings),
            "info": str(s.infos),
        }
        table.add_row(*(cells[name] for name in shown))
    return table


def finding_line(f: Finding) -> str:
    where = f.path
    if f.position is not None:
        where += f":{f.position}"
    extra = f" offset {f.offset}" if f.offset is not None else ""
    fix = f" [fix: {f.fix}]" if f.fix else ""
    return f"{f.severity.value:<7} {f.code} {where}{extra}: {f.message}{fix}"


def render_text(
    result: VerifyResult, out: IO[str], terminal: bool, quiet: bool, min_severity: Severity
) -> None:
    console = TextConsole(out, terminal)
    if not quiet:
        console.fitted_table(partial(summary_table, result), DROPPED_FIRST)
        for report in result.reports:
            if report.summary.startup:
                console.say(
                    f"{report.path}: at startup the broker " + "; ".join(report.summary.startup)
                )
    shown = [f for f in result.findings if f.severity.rank >= min_severity.rank]
    for f in shown:
        console.say(finding_line(f), STYLES[f.severity])
    if not quiet:
        counts = result.counts()
        console.say(
            f"{len(result.reports)} partition(s): {counts['error']} error(s), "
            f"{counts['warning']} warning(s), {counts['info']} info"
        )


def render_json(result: VerifyResult, run: RunInfo | None = None) -> str:
    from kdump.render.escape import json_text  # json: a text report does without it

    doc: dict[str, Any] = {
        "findings": [f.to_dict() for f in result.findings],
        "summary": result.summary(),
    }
    if run is not None:
        doc["run"] = run.to_dict(result.findings)
    return json_text(doc, indent=2)


def render_jsonl(result: VerifyResult) -> Iterator[str]:
    from kdump.render.escape import json_text

    for f in result.findings:
        yield json_text(f.to_dict(), separators=(",", ":"))
