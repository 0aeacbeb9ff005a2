"""The report page: one self-contained HTML file (styles and a small script inlined, plots as
static SVG), written in pieces so a report of thousands of partitions streams out.

For many partitions it stays usable by paging: an overview table lists every partition (one
row each, sortable), and the detailed sections with their plots come PAGE_SIZE at a time; the
pages not shown are ``<template>`` elements, which the browser parses but neither lays out nor
draws until the script puts one on the page.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from html import escape
from pathlib import Path

from kdump import __version__
from kdump.checks.findings import Finding
from kdump.discovery import natural_key
from kdump.report.collect import LogDirView, PartitionView, ReportModel
from kdump.report.svg import partition_plots
from kdump.units import iso, offset_span, size

PAGE_SIZE = 20
"""Partitions per page of detailed sections (their plots drawn)."""


def _static(name: str) -> str:
    """The page's stylesheet and script, shipped beside this module and inlined."""
    return (Path(__file__).parent / name).read_text(encoding="utf-8")


LEGEND = [
    ("#4e79a7", "rolled: size (segment.bytes)"),
    ("#59a14f", "rolled: time (segment.ms)"),
    ("#b07aa1", "rolled: index full"),
    ("#e15759", "rolled: offset overflow"),
    ("#9c9c9c", "rolled: unknown"),
    ("#a0cbe8", "active segment"),
    ("#2a9d3c", "high watermark"),
    ("#d62728", "last stable offset, retention line, hanging transaction"),
    ("#f9d2ab", "cleaner's dirty section, open transaction"),
]
"""Colours of kdump/report/svg.py's CSS classes, for people."""


def _badges(counts: dict[str, int]) -> str:
    shown = [f'<span class="badge {s}">{n} {s}</span>' for s, n in counts.items() if n]
    return "".join(shown) or '<span class="badge ok">no findings</span>'


def _identity(d: LogDirView) -> str:
    i = d.identity
    if i.error is not None:
        return f'<span class="sev-warning">meta.properties: {escape(i.error)}</span>'
    if i.meta_properties_version is None:
        return '<span class="muted">no meta.properties</span>'
    parts = [f"broker {i.node_id}", f"cluster {i.cluster_id or '-'}"]
    if i.directory_id:
        parts.append(f"directory {i.directory_id}")
    return escape(", ".join(parts))


def _anchor(p: PartitionView) -> str:
    """A stable id for a partition's section (the same report twice is the same file)."""
    return f"p-{zlib.crc32(os.fsencode(p.path)):08x}"


def findings_table(findings: list[Finding]) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    rows = []
    for f in findings:
        where = escape(f.path) + (f":{f.position}" if f.position is not None else "")
        if f.fix:
            fix = f"<br><code>{escape(f.fix)}</code>"
        elif f.advice:
            fix = f'<br><span class="advice">advice: {escape(f.advice)}</span>'
        else:
            fix = ""
        rank = f.severity.rank
        rows.append(
            f'<tr data-severity="{f.severity.value}">'
            f'<td data-v="{rank}" class="sev-{f.severity.value}">{f.severity.value}</td>'
            f"<td>{escape(f.code)}</td><td>{where}</td>"
            f'<td class="n" data-v="{f.offset if f.offset is not None else -1}">'
            f"{'' if f.offset is None else f.offset}</td><td>{escape(f.message)}{fix}</td></tr>"
        )
    return (
        '<table class="sortable findings"><thead><tr><th>severity</th><th>code</th><th>where</th>'
        f'<th class="n">offset</th><th>message</th></tr></thead><tbody>{"".join(rows)}'
        "</tbody></table>"
    )


def _partition_section(p: PartitionView, model: ReportModel) -> str:
    s = p.summary
    facts = [f"{s.segments} segment(s)", size(s.bytes), f"{s.batches} batches"]
    empty_at = None  # an empty log's end: the high watermark and stable offset there say nothing
    if p.log_start_offset is not None and p.log_end_offset is not None:
        facts.append(offset_span(p.log_start_offset, p.log_end_offset))
        if p.log_end_offset <= p.log_start_offset:
            empty_at = p.log_end_offset
            facts[-1] += f" (log end offset {empty_at})"
    if p.high_watermark is not None and p.high_watermark != empty_at:
        facts.append(f"high watermark {p.high_watermark}")
    if p.last_stable_offset is not None and p.last_stable_offset != empty_at:
        facts.append(f"last stable offset {p.last_stable_offset}")
    notes = [f"at startup the broker {a}" for a in s.startup]
    if p.retention_note:
        notes.append("retention: " + p.retention_note)
    if p.compaction_note:
        notes.append("compaction: " + p.compaction_note)
    if p.open_transactions:
        hanging = sum(t.hanging for t in p.open_transactions)
        notes.append(
            f"{len(p.open_transactions)} open transaction(s), {hanging} hanging; "
            f"{p.blocked_records} records ({size(p.blocked_bytes)}) above the last stable offset"
        )
    notes += p.problems
    plots = partition_plots(p, model.now, p.index_interval_bytes)
    return (
        f'<section class="partition" id="{_anchor(p)}">'
        f"<h3>{escape(p.name)} {_badges(p.counts())}</h3>"
        f'<div class="muted">{escape(p.path)} · {escape(" · ".join(facts))}</div>'
        + (
            f'<ul class="notes">{"".join(f"<li>{escape(n)}</li>" for n in notes)}</ul>'
            if notes
            else ""
        )
        + (f'<div class="plots">{"".join(plots)}</div>' if plots else "")
        + findings_table(p.findings)
        + "</section>"
    )


def _log_dir_summary(d: LogDirView) -> str:
    total = sum(p.summary.bytes for p in d.partitions)
    startup = [(p, a) for p in d.partitions for a in p.summary.startup]
    codes = "".join(
        f'<tr data-severity="{sev}"><td class="sev-{sev}">{sev}</td><td>{escape(code)}</td>'
        f'<td class="n" data-v="{n}">{n}</td></tr>'
        for code, sev, n in d.codes()
    )
    out = [
        f"<h2>{escape(d.path)}</h2>",
        f"<p>{_identity(d)} · {len(d.partitions)} partition(s) · {size(total)} of log · "
        f"{_badges(d.counts())}</p>",
    ]
    if codes:
        out.append(
            '<table class="sortable"><thead><tr><th>severity</th><th>code</th>'
            f'<th class="n">findings</th></tr></thead><tbody>{codes}</tbody></table>'
        )
    if startup:
        items = "".join(f"<li><b>{escape(p.name)}</b>: {escape(a)}</li>" for p, a in startup[:50])
        more = f"<li>… {len(startup) - 50} more</li>" if len(startup) > 50 else ""
        out.append(f"<p>What the broker will do at startup:</p><ul>{items}{more}</ul>")
    else:
        out.append("<p>At startup the broker has nothing to rebuild or truncate.</p>")
    if d.findings:
        out.append("<p>The log dir's own files:</p>" + findings_table(d.findings))
    return "".join(out)


def _overview(ordered: list[PartitionView], page_of: dict[str, int]) -> str:
    rows = []
    for p in ordered:
        c = p.counts()
        rows.append(
            f"<tr><td>{escape(str(Path(p.path).parent))}</td>"
            f'<td data-v="-1"><a href="#{_anchor(p)}">{escape(p.name)}</a></td>'
            f'<td class="n" data-v="{p.summary.segments}">{p.summary.segments}</td>'
            f'<td class="n" data-v="{p.summary.bytes}">{size(p.summary.bytes)}</td>'
            f'<td class="n sev-error" data-v="{c["error"]}">{c["error"]}</td>'
            f'<td class="n sev-warning" data-v="{c["warning"]}">{c["warning"]}</td>'
            f'<td class="n sev-info" data-v="{c["info"]}">{c["info"]}</td>'
            f'<td class="n" data-v="{len(p.open_transactions)}">{len(p.open_transactions)}</td>'
            f'<td class="n" data-v="{page_of[p.path]}">{page_of[p.path] + 1}</td></tr>'
        )
    return (
        '<table class="sortable overview"><thead><tr><th>log dir</th><th>partition</th>'
        '<th class="n">segments</th><th class="n">bytes</th><th class="n">errors</th>'
        '<th class="n">warnings</th><th class="n">info</th><th class="n">open txns</th>'
        f'<th class="n">page</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def paginate(model: ReportModel) -> list[list[PartitionView]]:
    """The detailed sections' pages: partitions with errors first (then warnings, then by
    path), across log dirs, PAGE_SIZE to a page; one empty page when there is nothing."""
    ordered = sorted(
        model.partitions, key=lambda p: (-p.worst, -len(p.findings), natural_key(p.path))
    )
    return [ordered[i : i + PAGE_SIZE] for i in range(0, len(ordered), PAGE_SIZE)] or [[]]


def render_html(model: ReportModel, paths: list[str]) -> Iterator[str]:
    """The page, in pieces (write them in order)."""
    pages = paginate(model)
    ordered = [p for page in pages for p in page]
    page_of = {p.path: n for n, page in enumerate(pages) for p in page}
    counts = {"error": 0, "warning": 0, "info": 0}
    for d in model.log_dirs:
        for k, v in d.counts().items():
            counts[k] += v
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{escape(text)}</span>' for colour, text in LEGEND
    )
    yield (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>kdump report: {escape(', '.join(paths))}</title>"
        f"<style>{_static('report.css')}</style></head><body>"
        f"<h1>kdump report</h1><p>{escape(', '.join(paths))} · as at {iso(model.now)} · "
        f"kdump {__version__} · {len(ordered)} partition(s) in {len(model.log_dirs)} log dir(s) "
        f"{_badges(counts)}</p>"
    )
    for d in model.log_dirs:
        yield _log_dir_summary(d)
    yield (
        f'<h2>Partitions</h2><p class="muted">Errors first. The detailed sections come {PAGE_SIZE} '
        "to a page; the table lists them all (click a name to go to it, a heading to sort).</p>"
        + _overview(ordered, page_of)
    )
    yield (
        '<div class="controls"><b>Findings shown:</b> '
        + "".join(
            f'<label><input type="checkbox" data-filter="{s}" checked> {s}</label> '
            for s in ("error", "warning", "info")
        )
        + ' · <button id="prev" type="button">◀</button> page <span id="page-no"></span> '
        '<button id="next" type="button">▶</button>'
        f'<div class="legend">{legend}</div></div>'
        '<div id="pages"></div>'
    )
    for n, page in enumerate(pages):
        yield f'<template class="page" data-page="{n}">'
        for p in page:
            yield _partition_section(p, model)
        yield "</template>"
    yield f"<script>{_static('report.js')}</script></body></html>\n"
