"""``kdump report``: one self-contained HTML page per run, for people who must understand a
partition quickly. ``collect`` runs verify, explain and txn per partition in one pass and keeps
a typed model; ``overview`` says what the page shows of each partition (its status, its row);
``render_html`` draws it (static SVG plots, a little inline script to page, sort and filter)
and embeds the model as JSON (``embed``). Library first: the command is
kdump/commands/report.py.
"""

from __future__ import annotations

from kdump.report.collect import (
    IndexDensity,
    LogDirView,
    OpenTxnView,
    PartitionView,
    ReportModel,
    ReportOptions,
    SegmentView,
    collect,
)
from kdump.report.html import PAGE_SIZE, render_html

__all__ = [
    "PAGE_SIZE",
    "IndexDensity",
    "LogDirView",
    "OpenTxnView",
    "PartitionView",
    "ReportModel",
    "ReportOptions",
    "SegmentView",
    "collect",
    "render_html",
]
