"""The fleet page: one HTML page for every broker from the verify results their crons wrote
(kdump.audit_results), with no segment read again. The same stylesheet, script and findings table as
the report of a log dir (kdump/report/html.py), and the same finding registry for what each
code means and what the broker does about it.

First the verdict (which brokers have errors, which are stale), then every broker (its newest
result, how old it is), every partition of those results (worst first), the findings by code
across the fleet with their meaning, and each broker's findings.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator

from kdump import __version__
from kdump.audit_results import BrokerAudit, DamagedFrom, FleetAudit
from kdump.checks.registry import REGISTRY
from kdump.report.html import _static, findings_table, page_head
from kdump.units import iso, offset_span, size
from kdump.untrusted import html_text

STATUS_ORDER = ("damaged", "errors", "warnings", "ok")


def _age(now: int, ms: int) -> str:
    hours = max(0, now - ms) / 3_600_000
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def _verdict(fleet: FleetAudit) -> str:
    stale = [b for b in fleet.brokers if b.stale]
    rows = [(b, p) for b in fleet.brokers for p in b.newest.partitions]
    status = Counter(p.status for _, p in rows)
    bad = [b for b in fleet.brokers if b.newest.counts()["error"]]
    parts = []
    if bad:
        names = ", ".join(b.label() for b in bad)
        parts.append(f"errors on {len(bad)} broker(s): {names}")
    wrong = [s for s in STATUS_ORDER[:-1] if status[s]]
    if wrong:
        parts.append(", ".join(f"{status[s]} partition(s) {s}" for s in wrong))
    if stale:
        hours = fleet.stale_after_ms / 3_600_000
        names = ", ".join(b.label() for b in stale)
        parts.append(
            f"{len(stale)} broker(s) stale (newest result older than {hours:g} h): {names}"
        )
    if fleet.unreadable:
        parts.append(f"{len(fleet.unreadable)} result(s) unreadable")
    cls = "v-bad" if bad or status["damaged"] else "v-warn" if parts else "v-good"
    head = (
        f"{len(fleet.brokers)} broker(s), {len(rows)} partition(s): "
        + ("; ".join(parts) if parts else "no error, no warning, every result fresh")
        + "."
    )
    return (
        f'<div class="verdict {cls}" id="verdict"><p class="headline">{html_text(head)}</p></div>'
    )


def _brokers(fleet: FleetAudit) -> str:
    head = (
        "<th>broker</th><th>cluster</th><th>host</th><th>newest result</th>"
        '<th class="n">age</th><th>stale</th><th class="n">log dirs</th>'
        '<th class="n">partitions</th><th class="n">errors</th><th class="n">warnings</th>'
        '<th class="n">older results</th><th>result</th>'
    )
    body = []
    for b in fleet.brokers:
        a, c = b.newest, b.newest.counts()
        key = a.broker
        body.append(
            f'<tr id="{_anchor(b)}"><td data-v="{-1 if key.broker_id is None else key.broker_id}">'
            f"{html_text(b.label())}</td><td>{html_text(key.cluster_id or '-')}</td>"
            f"<td>{html_text(a.run.host or '-')}</td>"
            f'<td data-v="{a.started}">{iso(a.started)}</td>'
            f'<td class="n" data-v="{fleet.now - a.started}">{_age(fleet.now, a.started)}</td>'
            f'<td class="{"bad" if b.stale else ""}">{"stale" if b.stale else ""}</td>'
            f'<td class="n">{len(a.run.log_dirs)}</td>'
            f'<td class="n">{len(a.partitions)}</td>'
            f'<td class="n {"bad" if c["error"] else ""}">{c["error"]}</td>'
            f'<td class="n {"warn" if c["warning"] else ""}">{c["warning"]}</td>'
            f'<td class="n">{b.older}</td><td>{html_text(a.source)}</td></tr>'
        )
    return (
        f'<table class="sortable" id="brokers"><thead><tr>{head}</tr></thead><tbody>'
        f"{''.join(body)}</tbody></table>"
    )


def _anchor(b: BrokerAudit) -> str:
    """A broker's (and its part's) id on the page: a digest of its names, which are the
    broker's (kdump.untrusted: no name of theirs in an id or a link)."""
    key = b.newest.broker
    parts = sorted(b.newest.run.log_dirs) if b.part else []
    names = "\0".join(str(x) for x in (*key, *parts))
    return "broker-" + hashlib.sha256(names.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _partitions(fleet: FleetAudit) -> str:
    rows = [(b, p) for b in fleet.brokers for p in b.newest.partitions]
    rows.sort(
        key=lambda r: (
            STATUS_ORDER.index(r[1].status),
            r[1].topic or "",
            -1 if r[1].partition is None else r[1].partition,
            r[0].newest.broker.broker_id or -1,
        )
    )
    head = (
        "<th>status</th><th>topic</th><th class='n'>partition</th><th>broker</th>"
        "<th class='n'>segments</th><th class='n'>size</th><th>offsets</th>"
        "<th class='n'>damaged from</th><th class='n'>errors</th><th class='n'>warnings</th>"
        "<th>path</th>"
    )
    body = []
    for b, p in rows:
        status = p.status
        start, end = p.log_start_offset, p.log_end_offset
        # as verify's table: the offsets held (the log end offset is exclusive), "-" for none
        span = "no offsets" if start is None or end is None else offset_span(start, end)
        offsets = "-" if span == "no offsets" else span.removeprefix("offsets ")
        body.append(
            f'<tr><td class="st-{status}" data-v="{STATUS_ORDER.index(status)}">{status}</td>'
            f"<td>{html_text(p.topic or '-')}</td>"
            f'<td class="n">{"-" if p.partition is None else p.partition}</td>'
            f'<td><a href="#{_anchor(b)}">{html_text(b.label())}</a></td>'
            f'<td class="n">{p.segments}</td>'
            f'<td class="n" data-v="{p.bytes}">{size(p.bytes)}</td>'
            f'<td data-v="{end if end is not None else -1}">{offsets}</td>'
            f'<td class="n">{_damaged(p.damaged_from)}</td>'
            f'<td class="n">{p.errors}</td><td class="n">{p.warnings}</td>'
            f"<td>{html_text(p.path)}</td></tr>"
        )
    return (
        '<div class="tablebox"><table class="sortable overview" id="overview"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _damaged(damaged: DamagedFrom | None) -> str:
    """Where recovery cuts the log: the offset (the segment and byte position on hover)."""
    if damaged is None:
        return ""
    where = f"segment {damaged.segment}, byte {damaged.position}"
    return f'<span title="{html_text(where)}">{damaged.offset}</span>'


def _codes(fleet: FleetAudit) -> str:
    """Every code found across the fleet, with the registry's meaning and broker action."""
    found = Counter((f.code, f.severity.value) for b in fleet.brokers for f in b.newest.findings)
    if not found:
        return '<p class="muted">No findings.</p>'
    brokers: dict[str, set[str]] = {}
    for b in fleet.brokers:
        for f in b.newest.findings:
            brokers.setdefault(f.code, set()).add(b.label())
    body = []
    for (code, severity), n in sorted(found.items(), key=lambda kv: (-kv[1], kv[0])):
        entry = REGISTRY.get(code)
        body.append(
            f'<tr data-severity="{severity}"><td class="sev-{severity}">{severity}</td>'
            f'<td>{html_text(code)}</td><td class="n">{n}</td>'
            f"<td>{html_text(', '.join(sorted(brokers[code])))}</td>"
            f"<td>{html_text(entry.meaning if entry else '')}</td>"
            f"<td>{html_text(entry.at_startup if entry else '')}</td></tr>"
        )
    return (
        '<table class="sortable" id="codes"><thead><tr><th>severity</th><th>code</th>'
        '<th class="n">findings</th><th>brokers</th><th>meaning</th>'
        f"<th>the broker at startup</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def render_fleet_html(fleet: FleetAudit, sources: list[str]) -> Iterator[str]:
    """The page, in pieces (write them in order)."""
    where = ", ".join(sources)
    yield (
        page_head(f"kdump fleet report: {where}") + "<body>"
        f'<header><h1>kdump fleet report</h1><p class="muted">{html_text(where)} · as at '
        f"{iso(fleet.now)} · kdump {__version__} · {len(fleet.brokers)} broker(s), each one's "
        "newest verify result (no segment read again)</p></header>"
    )
    yield _verdict(fleet)
    yield "<h2>Brokers</h2>" + _brokers(fleet)
    yield (
        '<h2>Every partition</h2><p class="muted">Worst first; click a heading to sort.</p>'
        + _partitions(fleet)
    )
    yield (
        '<h2>Findings</h2><div class="controls"><b>Findings shown:</b> '
        + "".join(
            f'<label><input type="checkbox" data-filter="{s}" checked> {s}</label> '
            for s in ("error", "warning", "info")
        )
        # report.js's page buttons: the fleet page has no pages of sections
        + '<span hidden><button id="prev" type="button"></button><span id="page-no"></span>'
        '<button id="next" type="button"></button></span></div><div id="pages"></div>'
        "<h3>By code, across the fleet</h3>" + _codes(fleet)
    )
    for b in fleet.brokers:
        if b.newest.findings:
            yield (
                f"<h3>{html_text(b.label())} ({html_text(b.newest.source)})</h3>"
                + findings_table(b.newest.findings)
            )
    if fleet.unreadable:
        items = "".join(f"<li>{html_text(str(e))}</li>" for e in fleet.unreadable)
        yield f'<h2>Results not read</h2><ul class="bad">{items}</ul>'
    yield f"<script>{_static('report.js')}</script></body></html>\n"
