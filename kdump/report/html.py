"""The report page: one self-contained HTML file (styles and a small script inlined, plots as
static SVG), written in pieces so a report of thousands of partitions streams out.

Its first screen answers "is this broker healthy, and where not?": a verdict naming what is
wrong and where, then a map of every partition (one cell each, by topic, shaded by size,
coloured only when something is wrong), then a sortable table of every partition (status,
size, age, why its segments rolled, retention, compaction, transactions, findings). Detailed
sections with plots follow only for the partitions that need a look (damage, findings,
blocked retention or compaction, open transactions) and the largest, PAGE_SIZE at a time: the
pages not shown are ``<template>`` elements, which the browser parses but neither lays out nor
draws until the script puts one on the page. The model behind it all is embedded as JSON
(kdump/report/embed.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from itertools import groupby
from pathlib import Path

from kdump import __version__
from kdump.checks.findings import Finding, Severity
from kdump.discovery import natural_key
from kdump.report import embed
from kdump.report.collect import LogDirView, PartitionView, ReportModel
from kdump.report.overview import (
    LARGEST,
    SIZE_SHADES,
    STATUSES,
    PartitionRow,
    anchor_of,
    log_dir_anchor,
    newest,
    oldest,
    rows,
)
from kdump.report.svg import partition_plots
from kdump.units import iso, offset_span, size
from kdump.untrusted import csp_meta, html_text

PAGE_SIZE = 20
"""Detailed sections per page (their plots drawn)."""

TABLE_ROWS = 100
"""Rows of the table of every partition laid out at first (the browser's cost is the table's
layout: 2,000 rows take it seconds, to open the page and at every sort)."""

VERDICT_NAMES = 6
"""Partitions named per kind of problem in the verdict (the table lists them all)."""

STATUS_WORDS = {
    "damaged": "damaged: recovery cuts the log",
    "errors": "errors",
    "warnings": "warnings",
    "blocked": "retention or compaction blocked",
}

COUNTED = {
    "damaged": "damaged",
    "errors": "with errors",
    "warnings": "with warnings",
    "blocked": "blocked",
}

LEGEND = [
    ("seg", "segment"),
    ("seg act", "active segment"),
    ("seg del", "retention deletes it at --now"),
    ("cut", "bytes recovery cuts"),
    ("seg lost", "later segments recovery deletes"),
    ("seg future", "timestamps in the future"),
]
"""The plots' marks (classes of kdump/report/svg.py), for people."""


def _static(name: str) -> str:
    """The page's stylesheet and script, shipped beside this module and inlined."""
    return (Path(__file__).parent / name).read_text(encoding="utf-8")


def page_head(title: str) -> str:
    """A page's start to its ``</head>``: the Content-Security-Policy first (only report.js,
    by its hash, runs: kdump.untrusted.csp_meta), then the title and the stylesheet."""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        + csp_meta(_static("report.js"))
        + '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{html_text(title)}</title><style>{_static('report.css')}</style></head>"
    )


HATCHES = (
    '<svg class="defs" width="0" height="0" aria-hidden="true"><defs>'
    '<pattern id="k-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e4e7eb"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#9aa3ad" stroke-width="2"/></pattern>'
    '<pattern id="k-lost" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fbe3e3"/>'
    '<line x1="0" y1="0" x2="0" y2="6" stroke="#c62828" stroke-width="2"/></pattern>'
    "</defs></svg>"
)
"""Hatch patterns the plots' classes fill with (report.css), defined once on the page."""


def findings_table(findings: list[Finding]) -> str:
    if not findings:
        return '<p class="muted">No findings.</p>'
    body = []
    for f in findings:
        where = html_text(f.path) + (f":{f.position}" if f.position is not None else "")
        if f.fix:
            fix = f"<br><code>{html_text(f.fix)}</code>"
        elif f.advice:
            fix = f'<br><span class="advice">advice: {html_text(f.advice)}</span>'
        else:
            fix = ""
        sev = f.severity.value
        body.append(
            f'<tr data-severity="{sev}"><td data-v="{f.severity.rank}" class="sev-{sev}">{sev}'
            f"</td><td>{html_text(f.code)}</td><td>{where}</td>"
            f'<td class="n" data-v="{f.offset if f.offset is not None else -1}">'
            f"{'' if f.offset is None else f.offset}</td><td>{html_text(f.message)}{fix}</td></tr>"
        )
    return (
        '<table class="sortable findings"><thead><tr><th>severity</th><th>code</th><th>where</th>'
        f'<th class="n">offset</th><th>message</th></tr></thead><tbody>{"".join(body)}'
        "</tbody></table>"
    )


def _identity(d: LogDirView) -> str:
    i = d.identity
    if i.error is not None:
        return f'<span class="warn">meta.properties: {html_text(i.error)}</span>'
    if i.meta_properties_version is None:
        return "no meta.properties"
    parts = [f"broker {i.node_id}", f"cluster {i.cluster_id or '-'}"]
    if i.directory_id:
        parts.append(f"directory {i.directory_id}")
    return html_text(", ".join(parts))


# -- the verdict -------------------------------------------------------------------------------


def _verdict(model: ReportModel, shown: Mapping[str, PartitionRow]) -> str:
    ordered = sorted(model.partitions, key=lambda p: (shown[p.path].rank, natural_key(p.path)))
    by_status = {s: [p for p in ordered if shown[p.path].status == s] for s in STATUSES}
    wrong = [s for s in STATUS_WORDS if by_status[s]]
    dirs = [d for d in model.log_dirs if _own_problems(d)]
    items = [_verdict_item(s, by_status[s], shown) for s in wrong]
    if dirs:
        named = "".join(
            f'<li><a href="#{log_dir_anchor(d)}">{html_text(d.path)}</a>: '
            f"{html_text(_own_problems(d))}</li>"
            for d in dirs
        )
        items.append(f"<li><b>the log dirs' own files</b> ({len(dirs)})<ul>{named}</ul></li>")
    if not items:
        cls = "v-good"
        head = (
            f"All {len(ordered)} partition(s) look healthy: no error, no warning, nothing blocked."
        )
    else:
        errors = (
            by_status["damaged"]
            or by_status["errors"]
            or any(f.severity.rank >= Severity.ERROR.rank for d in dirs for f in d.findings)
        )
        cls = "v-bad" if errors else "v-warn"
        counts = ", ".join(f"{len(by_status[s])} {COUNTED[s]}" for s in wrong)
        head = (
            f"{sum(len(by_status[s]) for s in wrong)} of {len(ordered)} partition(s) need a look"
            + (f": {counts}." if wrong else ".")
            + (f" {len(dirs)} log dir(s) have findings on their own files." if dirs else "")
        )
    return (
        f'<div class="verdict {cls}" id="verdict"><p class="headline">{html_text(head)}</p>'
        + (f'<ul class="kinds">{"".join(items)}</ul>' if items else "")
        + f'<p class="muted">{html_text(_verdict_tail(model, ordered, by_status))}.</p></div>'
    )


def _own_problems(d: LogDirView) -> str:
    """The codes of a log dir's own findings that are errors or warnings ("": none)."""
    found = Counter(f.code for f in d.findings if f.severity.rank >= Severity.WARNING.rank)
    return ", ".join(code + (f" ×{n}" if n > 1 else "") for code, n in found.most_common())


def _verdict_item(
    status: str, partitions: list[PartitionView], shown: Mapping[str, PartitionRow]
) -> str:
    named = "".join(
        f'<li><a href="#{shown[p.path].anchor}">{html_text(shown[p.path].label)}</a>: '
        f"{html_text(shown[p.path].problems[0])}</li>"
        for p in partitions[:VERDICT_NAMES]
    )
    more = len(partitions) - VERDICT_NAMES
    if more > 0:
        named += f'<li class="muted">and {more} more (the table lists them all)</li>'
    return (
        f'<li class="st-{status}"><b>{html_text(STATUS_WORDS[status])}</b> ({len(partitions)})'
        f"<ul>{named}</ul></li>"
    )


def _verdict_tail(
    model: ReportModel, ordered: list[PartitionView], by_status: dict[str, list[PartitionView]]
) -> str:
    startup = sum(1 for p in ordered if p.summary.startup)
    tail = [
        f"At startup the broker has work in {startup} partition(s) (below, by log dir)"
        if startup
        else "At startup the broker has nothing to rebuild or truncate"
    ]
    if by_status["empty"]:
        tail.append(f"{len(by_status['empty'])} empty partition(s)")
    if model.unreadable:
        tail.append(f"{len(model.unreadable)} path(s) could not be read")
    return "; ".join(tail)


# -- the fleet map -----------------------------------------------------------------------------


def _fleet(d: LogDirView, shown: Mapping[str, PartitionRow]) -> str:
    total = sum(p.summary.bytes for p in d.partitions)
    ordered = sorted(d.partitions, key=lambda p: (natural_key(_topic(p)), p.partition or 0))
    topics = []
    for topic, group in groupby(ordered, key=_topic):
        cells = "".join(_cell(p, shown[p.path]) for p in group)
        topics.append(
            f'<div class="topic"><span class="tname" title="{html_text(topic)}">{html_text(topic)}'
            f'</span><span class="cells">{cells}</span></div>'
        )
    return (
        f'<div class="fleet"><h3>{html_text(d.path)}</h3><p class="muted">{_identity(d)} · '
        f"{len(d.partitions)} partition(s) · {size(total)} of log</p>"
        f'<div class="map">{"".join(topics)}</div></div>'
    )


def _topic(p: PartitionView) -> str:
    """The topic a partition's cell is filed under (a directory not named topic-N: its own)."""
    return p.topic if p.topic is not None else Path(p.path).name


def _cell(p: PartitionView, row: PartitionRow) -> str:
    problem = f"; {row.problems[0]}" if row.problems else ""
    title = f"{row.label}: {row.status}{problem}; {row.size}, {row.segments} segment(s)"
    number = "?" if p.partition is None else str(p.partition)
    return (
        f'<a class="c st-{row.status} z{row.shade}" href="#{row.anchor}" '
        f'title="{html_text(title)}">{number}</a>'
    )


def _map_legend() -> str:
    shades = "".join(f'<i class="c z{z}"></i>' for z in range(1, SIZE_SHADES + 1))
    return (
        '<p class="legend"><span><i class="c z0"></i>empty</span>'
        f"<span>{shades} size (darker: larger)</span>"
        '<span><i class="c st-damaged"></i>damaged</span>'
        '<span><i class="c st-errors z1"></i>errors</span>'
        '<span><i class="c st-warnings z1"></i>warnings</span>'
        '<span><i class="c st-blocked z1"></i>retention or compaction blocked</span>'
        "<span>a cell is a partition (its number); click one for its row or section</span></p>"
    )


# -- the table of every partition ------------------------------------------------------------

COLUMNS = [
    ("status", "status", "", "the worst that is wrong with it"),
    ("label", "partition", "", ""),
    ("size", "size", "n", "bytes of its .log files"),
    ("segments", "segments", "n", ""),
    ("offsets", "offsets", "", "from the log start offset to the log end offset after recovery"),
    ("age", "oldest", "n", "age of its oldest batch at --now"),
    ("last_write", "newest", "n", "age of its newest batch at --now"),
    ("rolled_by", "rolled by", "", "why its closed segments rolled (kdump explain)"),
    ("retention", "retention", "", "what retention does at --now"),
    ("compaction", "compaction", "", "the cleaner's dirty section, or what blocks it"),
    ("transactions", "txns", "n", "open transactions"),
    ("findings", "findings", "", ""),
]
"""The overview table: (PartitionRow field, heading, class, the heading's tooltip)."""


def _table(model: ReportModel, shown: Mapping[str, PartitionRow]) -> str:
    """Every partition, worst first, then largest: the first TABLE_ROWS laid out, the others
    in a ``<template>`` (parsed, not laid out) until asked for or sorted into view."""
    ordered = sorted(
        model.partitions,
        key=lambda p: (shown[p.path].rank, -p.summary.bytes, natural_key(p.path)),
    )
    peak = max((p.summary.bytes for p in ordered), default=0) or 1
    head = "".join(
        f'<th class="{cls}" title="{html_text(tip)}">{html_text(h)}</th>'
        for _, h, cls, tip in COLUMNS
    )
    rows_html = [_table_row(p, shown[p.path], model.now, peak) for p in ordered]
    later = rows_html[TABLE_ROWS:]
    more = (
        f'<template id="more-rows">{"".join(later)}</template><p id="more">'
        f'<button type="button" id="show-all">show all {len(ordered)} rows</button> '
        f'<span class="muted">(the table shows the first {TABLE_ROWS}; sorting sorts them '
        "all)</span></p>"
        if later
        else ""
    )
    return (
        '<div class="tablebox"><table class="sortable overview" id="overview"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(rows_html[:TABLE_ROWS])}</tbody></table></div>" + more
    )


def _table_row(p: PartitionView, row: PartitionRow, now: int, peak: int) -> str:
    s = p.summary
    first, last = oldest(p), newest(p)
    c = row.counts
    v = {
        "status": row.rank,
        "size": s.bytes,
        "segments": s.segments,
        "offsets": p.log_end_offset or 0,
        "age": now - first if first >= 0 else -1,
        "last_write": now - last if last >= 0 else -1,
        "transactions": len(p.open_transactions),
        "findings": c["error"] * 1_000_000 + c["warning"] * 1000 + c["info"],
    }
    warn = {
        "status": f"st-{row.status}",
        "rolled_by": "warn" if p.tiny_segments else "",
        "retention": "warn" if row.retention.startswith("blocked") else "",
        "compaction": "warn" if row.compaction == "blocked" else "",
        "transactions": "bad" if any(t.hanging for t in p.open_transactions) else "",
        "findings": "bad" if c["error"] else "warn" if c["warning"] else "",
    }
    titles = {
        "retention": p.retention_note or "",
        "compaction": p.compaction_blocked or p.compaction_note or "",
        "status": "; ".join(row.problems),
    }
    cells = []
    for key, _, cls, _ in COLUMNS:
        text = html_text(str(getattr(row, key)))
        if key == "label":
            text = f'<a href="#{row.anchor}">{text}</a>'
        attrs = f' data-k="{key}"'
        if key in v:
            attrs += f' data-v="{v[key]}"'
        classes = " ".join(x for x in (cls, warn.get(key, "")) if x)
        if classes:
            attrs += f' class="{classes}"'
        if titles.get(key):
            attrs += f' title="{html_text(titles[key])}"'
        if key == "size" and s.bytes:
            attrs += f' style="--w:{100 * s.bytes / peak:.1f}%"'
        cells.append(f"<td{attrs}>{text}</td>")
    return (
        f'<tr id="{anchor_of(p, False)}" data-path="{html_text(p.path)}" '
        f'title="{html_text(p.path)}">{"".join(cells)}</tr>'
    )


# -- detailed sections -------------------------------------------------------------------------


def detailed(model: ReportModel, shown: Mapping[str, PartitionRow]) -> list[PartitionView]:
    """The partitions with a detailed section, worst first (then the most findings, the
    largest)."""
    return sorted(
        (p for p in model.partitions if shown[p.path].detail is not None),
        key=lambda p: (
            shown[p.path].rank,
            -len(p.findings),
            -p.summary.bytes,
            natural_key(p.path),
        ),
    )


def paginate(
    model: ReportModel, shown: Mapping[str, PartitionRow] | None = None
) -> list[list[PartitionView]]:
    """The detailed sections' pages, PAGE_SIZE to a page; one empty page when none."""
    ordered = detailed(model, rows(model) if shown is None else shown)
    return [ordered[i : i + PAGE_SIZE] for i in range(0, len(ordered), PAGE_SIZE)] or [[]]


def facts_line(p: PartitionView) -> str:
    """Segments, bytes, batches, offsets, high watermark, last stable offset, in words."""
    s = p.summary
    facts = [f"{s.segments} segment(s)", size(s.bytes), f"{s.batches} batches"]
    empty_at = None  # an empty log's end: the high watermark and stable offset there say nothing
    if p.log_start_offset is not None and p.log_end_offset is not None:
        facts.append(offset_span(p.log_start_offset, p.log_end_offset))
        on_disk = p.facts.get("log_end_offset_on_disk")
        if p.log_end_offset <= p.log_start_offset:
            empty_at = p.log_end_offset
            facts[-1] += f" (log end offset {empty_at})"
        elif on_disk is not None and on_disk != p.log_end_offset:
            facts[-1] += f" after recovery ({offset_span(p.log_start_offset, on_disk)} on disk)"
    if p.high_watermark is not None and p.high_watermark != empty_at:
        facts.append(f"high watermark {p.high_watermark}")
    if p.last_stable_offset is not None and p.last_stable_offset != empty_at:
        facts.append(f"last stable offset {p.last_stable_offset}")
    return " · ".join(facts)


def _section(p: PartitionView, row: PartitionRow, model: ReportModel) -> str:
    notes = [f"at startup the broker {a}" for a in p.summary.startup]
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
    chip = (
        f'<span class="chip st-{row.status}">{html_text(row.status)}</span>'
        if row.status not in ("ok", "empty")
        else f'<span class="chip">{html_text(row.detail or "")}</span>'
    )
    problems = "".join(f'<li class="st-{row.status}">{html_text(t)}</li>' for t in row.problems)
    plots = "".join(
        f'<div class="plotbox">{svg}</div>'
        for svg in partition_plots(p, model.now, p.index_interval_bytes)
    )
    return (
        f'<section class="partition" id="{row.anchor}" data-path="{html_text(p.path)}">'
        f"<h3>{html_text(row.label)} {chip}</h3>"
        f'<div class="facts">{html_text(p.path)} · {html_text(facts_line(p))}</div>'
        + (f'<ul class="problems">{problems}</ul>' if problems else "")
        + (
            f'<ul class="notes">{"".join(f"<li>{html_text(n)}</li>" for n in notes)}</ul>'
            if notes
            else ""
        )
        + plots
        + findings_table(p.findings)
        + "</section>"
    )


def _plot_legend() -> str:
    marks = "".join(
        f'<span><svg width="22" height="14" aria-hidden="true"><rect class="{cls}" x="1" y="1" '
        f'width="20" height="12"/></svg>{html_text(text)}</span>'
        for cls, text in LEGEND
    )
    return f'<p class="legend">{marks}</p>'


# -- the log dirs' own findings and the broker's startup --------------------------------------


def _log_dir_summary(d: LogDirView, shown: Mapping[str, PartitionRow]) -> str:
    codes = "".join(
        f'<tr data-severity="{sev}"><td class="sev-{sev}">{sev}</td><td>{html_text(code)}</td>'
        f'<td class="n" data-v="{n}">{n}</td></tr>'
        for code, sev, n in d.codes()
    )
    startup = [(p, a) for p in d.partitions for a in p.summary.startup]
    out = [f'<h3 id="{log_dir_anchor(d)}">{html_text(d.path)}</h3>']
    if codes:
        out.append(
            '<table class="sortable"><thead><tr><th>severity</th><th>code</th>'
            f'<th class="n">findings</th></tr></thead><tbody>{codes}</tbody></table>'
        )
    else:
        out.append("<p>No findings.</p>")
    if startup:
        items = "".join(
            f'<li><a href="#{shown[p.path].anchor}">{html_text(shown[p.path].label)}</a>: '
            f"{html_text(a)}</li>"
            for p, a in startup[:50]
        )
        more = f"<li>… {len(startup) - 50} more</li>" if len(startup) > 50 else ""
        out.append(f"<p>What the broker will do at startup:</p><ul>{items}{more}</ul>")
    else:
        out.append("<p>At startup the broker has nothing to rebuild or truncate.</p>")
    if d.findings:
        out.append("<p>The log dir's own files:</p>" + findings_table(d.findings))
    return "".join(out)


# -- the page ----------------------------------------------------------------------------------


def render_html(model: ReportModel, paths: list[str]) -> Iterator[str]:
    """The page, in pieces (write them in order)."""
    shown = rows(model)
    pages = paginate(model, shown)
    n_detailed = sum(len(page) for page in pages)
    where = ", ".join(paths)
    yield (
        page_head(f"kdump report: {where}") + f"<body>{HATCHES}"
        f'<header><h1>kdump report</h1><p class="muted">{html_text(where)} · as at '
        f"{iso(model.now)} · kdump {__version__} · {len(model.partitions)} partition(s) in "
        f"{len(model.log_dirs)} log dir(s)</p></header>"
    )
    yield _verdict(model, shown)
    yield "<h2>Every partition</h2>" + _map_legend()
    for d in model.log_dirs:
        yield _fleet(d, shown)
    yield (
        '<p class="muted">Worst first, then largest; click a heading to sort (again: the other '
        "way), a name to go to its row or section.</p>" + _table(model, shown)
    )
    yield (
        f'<h2 id="details">Where to look: {n_detailed} partition(s)</h2>'
        '<p class="muted">Damage, findings, blocked retention or compaction, open '
        f"transactions, and the {LARGEST} largest.</p>"
        '<div class="controls"><b>Findings shown:</b> '
        + "".join(
            f'<label><input type="checkbox" data-filter="{s}" checked> {s}</label> '
            for s in ("error", "warning", "info")
        )
        + ' · <button id="prev" type="button">◀</button> page <span id="page-no"></span> '
        '<button id="next" type="button">▶</button>'
        f"{_plot_legend()}</div>"
        '<div id="pages"></div>'
    )
    for n, page in enumerate(pages):
        yield f'<template class="page" data-page="{n}">'
        for p in page:
            yield _section(p, shown[p.path], model)
        yield "</template>"
    yield "<h2>Log dirs: findings by code, and the broker's startup</h2>"
    for d in model.log_dirs:
        yield _log_dir_summary(d, shown)
    yield embed.script(model, shown, paths)
    yield f"<script>{_static('report.js')}</script></body></html>\n"
