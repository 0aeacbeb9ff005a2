"""``kdump report``: one self-contained HTML page per run, for people who must understand a
partition quickly. ``collect`` runs verify, explain and txn per partition in one pass and keeps
a typed model; ``render_html`` draws it (static SVG plots, a little inline script to page, sort
and filter). Library first: the command is kdump/commands/report.py.
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
