"""What tiered scrub prints: one line per finding (as verify prints them), a summary; or one JSON
document."""

from __future__ import annotations

from typing import IO

from kdump.checks.findings import Severity
from kdump.render.console import TextConsole
from kdump.render.verify import say_finding
from kdump.tiered.scrub import ScrubResult
from kdump.units import size
from kdump.untrusted import json_text


def render_text(
    result: ScrubResult, out: IO[str], terminal: bool, quiet: bool, min_severity: Severity
) -> None:
    console = TextConsole(out, terminal)
    for f in result.all_findings():
        if f.severity.rank >= min_severity.rank:
            say_finding(console, f)
    if quiet:
        return
    states = ", ".join(f"{n} {name}" for name, n in result.classes.items() if n)
    read = ",".join(map(str, result.metadata_partitions)) or "none"
    counts = result.counts()
    console.say(
        f"{result.partitions} partition(s), {result.segments} segment(s), "
        f"{size(result.bytes)} in the bucket ({states or 'no segments'}); metadata partitions "
        f"read: {read}; {counts['error']} error(s), {counts['warning']} warning(s), "
        f"{counts['info']} info"
    )


def render_json(result: ScrubResult) -> str:
    doc = {
        "findings": [f.to_dict() for f in result.all_findings()],
        "summary": result.summary(),
    }
    return json_text(doc, indent=2)
