"""Write the table of families in docs/metrics.md from kdump.metrics.FAMILIES; the rest of the
page is prose, edited by hand.

    .venv/bin/python scripts/make_metrics_doc.py           # rewrite the table
    .venv/bin/python scripts/make_metrics_doc.py --check   # exit 1 when the table is stale

tests/test_metrics.py checks that the committed page is this script's output, and that every
family a command writes is in kdump.metrics.FAMILIES with the labels it says.
"""

from __future__ import annotations

import sys
from pathlib import Path

from generated import write_or_check  # scripts/generated.py, beside this one

from kdump.metrics import COMMANDS, FAMILIES, PREFIX, MetricFamily

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "metrics.md"
BEGIN = "<!-- The table: scripts/make_metrics_doc.py writes it from kdump/metrics.py. -->"
END = "<!-- end of the table -->"


def _commands(family: MetricFamily) -> str:
    said = "all" if family.commands == COMMANDS else ", ".join(family.commands)
    return f"{said}, {family.when}" if family.when else said


def _row(family: MetricFamily) -> str:
    labels = ", ".join(f"`{label}`" for label in family.labels)
    cells = [f"`{PREFIX}{family.name}`", labels, _commands(family), family.help]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table() -> str:
    rows = [_row(family) for family in FAMILIES.values()]
    header = ["| family | labels | commands | meaning |", "| --- | --- | --- | --- |"]
    return "\n".join([BEGIN, "", *header, *rows, "", END])


def metrics_doc(page: str) -> str:
    """The page with its table written again."""
    before, rest = page.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return before + table() + after


def main() -> int:
    return write_or_check(__doc__.splitlines()[0], DOC, metrics_doc(DOC.read_text()))


if __name__ == "__main__":
    sys.exit(main())
