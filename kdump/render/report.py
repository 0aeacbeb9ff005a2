"""The verify report: rich tables on a terminal, plain columns on a pipe, JSON for machines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from rich import box
from rich.table import Table

from kdump.checks.findings import Finding, Severity
from kdump.checks.verify import VerifyResult
from kdump.render.console import TextConsole
from kdump.units import at

if TYPE_CHECKING:
    from kdump.run import RunInfo

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def summary_table(result: VerifyResult, terminal: bool) -> Table:
    table = Table(
        title="kdump verify",
        box=box.SIMPLE_HEAVY if terminal else box.ASCII2,
        show_edge=terminal,
    )
    for name in ("partition", "segments", "bytes", "batches", "records", "offsets"):
        table.add_column(name, justify="left" if name in ("partition", "offsets") else "right")
    for name in ("first timestamp", "last timestamp", "errors", "warnings", "info"):
        table.add_column(name, justify="right")
    for report in result.reports:
        s = report.summary
        offsets = "-" if s.first_offset is None else f"{s.first_offset}..{s.last_offset}"
        table.add_row(
            s.path,
            str(s.segments),
            str(s.bytes),
            str(s.batches),
            _or_dash(s.records),
            offsets,
            at(s.first_timestamp),
            at(s.last_timestamp),
            str(s.errors),
            str(s.warnings),
            str(s.infos),
        )
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
        console.table(summary_table(result, terminal))
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
    doc: dict[str, Any] = {
        "findings": [f.to_dict() for f in result.findings],
        "summary": result.summary(),
    }
    if run is not None:
        doc["run"] = run.to_dict(result.findings)
    return json.dumps(doc, indent=2)


def render_jsonl(result: VerifyResult) -> Iterator[str]:
    for f in result.findings:
        yield json.dumps(f.to_dict(), separators=(",", ":"))
