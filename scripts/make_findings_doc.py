"""Write docs/findings.md, every finding code kdump reports, from kdump.checks.registry.

    .venv/bin/python scripts/make_findings_doc.py           # rewrite docs/findings.md
    .venv/bin/python scripts/make_findings_doc.py --check   # exit 1 when docs/findings.md is stale

tests/test_findings_registry.py checks that the committed file is this script's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

from generated import write_or_check  # scripts/generated.py, beside this one

from kdump.checks.registry import AREAS, CODES, FindingCode

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "findings.md"

INTRO = """\
# Finding codes

<!-- Written by scripts/make_findings_doc.py from kdump/checks/registry.py: edit those. -->

Every code kdump's commands report, once: what it means, what the broker does about it when it
starts, and what to do. Severity means the same everywhere: **error** = data is damaged or reads
would go wrong; **warning** = needs attention but loses nothing; **info** = a normal fact worth
knowing.

A finding carries the command that repairs it where kdump can (`fix` in JSON, `[fix: ...]` in
text), filled in for its files; where it carries none, an error or a warning carries the advice
below for its case (`advice` in JSON, `[advice: ...]` in text). Fix commands change files: run
them with the broker stopped (they refuse while it holds the log dir's `.lock`).
"""


def _severities(entry: FindingCode) -> str:
    seen = dict.fromkeys(case.severity.value for case in entry.cases)
    return " / ".join(seen)


def _index() -> list[str]:
    lines = ["| code | severity | what it means |", "| --- | --- | --- |"]
    for area in AREAS:
        for entry in CODES:
            if entry.area == area:
                link = f"[`{entry.code}`](#{entry.code.lower()})"
                lines.append(f"| {link} | {_severities(entry)} | {entry.meaning} |")
    return lines


def _section(entry: FindingCode) -> list[str]:
    lines = [f"### `{entry.code}`", "", entry.meaning, "", f"**At startup:** {entry.at_startup}"]
    if entry.fix:
        lines += ["", f"**Fix:** `{entry.fix}`"]
    lines += [
        "",
        "| severity | when | advice (where a finding carries no fix) |",
        "| --- | --- | --- |",
    ]
    for case in entry.cases:
        lines.append(f"| {case.severity.value} | {case.when} | {case.advice or '-'} |")
    return [*lines, ""]


def findings_doc() -> str:
    lines = [INTRO, *_index(), ""]
    for area, title in AREAS.items():
        lines += [f"## {title}", ""]
        for entry in CODES:
            if entry.area == area:
                lines += _section(entry)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    return write_or_check(__doc__.splitlines()[0], DOC, findings_doc())


if __name__ == "__main__":
    sys.exit(main())
