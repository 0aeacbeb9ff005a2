"""The report's plots, drawn as static SVG text: no plotting library, no script, nothing to
load (why: bench/bench_report_libraries.py measures the same plots drawn by plotly, altair and
matplotlib against these, in one run; the figures are in the README's report section).

Each function takes a ``PartitionView`` and returns one ``<svg>`` element. Colours and line
styles are CSS classes defined once by the page (kdump/report/html.py), so each plot is a few
hundred bytes plus a rectangle per segment. Hovering a mark shows its ``<title>``.
"""

from __future__ import annotations

import itertools
from html import escape

from kdump.report.collect import PartitionView, SegmentView
from kdump.units import duration, iso, offset_span, size

WIDTH = 640
LEFT, RIGHT = 4, 4
PLOT = WIDTH - LEFT - RIGHT
ROLL_CLASSES = {
    "size": "c-size",
    "time": "c-time",
    "offset_index_full": "c-idx",
    "time_index_full": "c-idx",
    "offset_overflow": "c-ovf",
    "unknown": "c-unk",
}


class Scale:
    """A linear map from [lo, hi] to [LEFT, LEFT + PLOT]."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi if hi > lo else lo + 1

    def __call__(self, v: float) -> float:
        return LEFT + (v - self.lo) / (self.hi - self.lo) * PLOT

    def inside(self, v: float) -> bool:
        return self.lo <= v <= self.hi


def _svg(kind: str, height: int, body: list[str], label: str) -> str:
    return (
        f'<svg class="plot" data-plot="{kind}" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-label="{escape(label)}">{"".join(body)}</svg>'
    )


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "lbl") -> str:
    return f'<text class="{cls}" x="{_n(x)}" y="{y}" text-anchor="{anchor}">{escape(text)}</text>'


def _vline(x: float, top: int, bottom: int, cls: str, title: str) -> str:
    return (
        f'<line class="{cls}" x1="{_n(x)}" x2="{_n(x)}" y1="{top}" y2="{bottom}">'
        f"<title>{escape(title)}</title></line>"
    )


def _rect(x0: float, x1: float, y: float, h: float, cls: str, title: str) -> str:
    w = max(x1 - x0, 1.5)
    return (
        f'<rect class="{cls}" x="{_n(x0)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}">'
        f"<title>{escape(title)}</title></rect>"
    )


def _segment_title(s: SegmentView) -> str:
    causes = "active segment" if s.active else "rolled by " + ", ".join(s.roll_causes)
    deletable = f"; retention deletes it now ({s.deletable})" if s.deletable else ""
    return (
        f"segment {s.base_offset}: {offset_span(s.base_offset, s.next_offset)}, "
        f"{size(s.size)}, {s.batches} batches; {causes}{deletable}"
    )


def _segment_class(s: SegmentView) -> str:
    cls = "seg c-act" if s.active else "seg " + ROLL_CLASSES.get(s.roll_causes[0], "c-unk")
    return cls + (" del" if s.deletable else "")


def offset_domain(p: PartitionView) -> Scale:
    starts = [s.base_offset for s in p.segments]
    ends = [s.next_offset for s in p.segments]
    lo = min([*starts, *([p.log_start_offset] if p.log_start_offset is not None else [])])
    hi = max([*ends, *(v for v in (p.log_end_offset, p.high_watermark) if v is not None)])
    return Scale(lo, hi)


def offsets_plot(p: PartitionView) -> str:
    """Segments on the offset axis: width their offsets, height their size, colour why they
    rolled; gaps between them, the cleaner's dirty section, the log start offset, high
    watermark and last stable offset."""
    height, top, base = 120, 14, 100
    x = offset_domain(p)
    largest = max((s.size for s in p.segments), default=1) or 1
    body = [_text(LEFT, 10, "offsets: segments (height = size, colour = why it rolled)")]
    if p.dirty is not None and p.dirty[1] > p.dirty[0]:
        a, b = p.dirty
        body.append(
            _rect(
                x(a),
                x(b),
                top,
                base - top,
                "dirty",
                f"cleaner's dirty section: offsets {a}..{b - 1}",
            )
        )
    for prev, nxt in itertools.pairwise(p.segments):
        if nxt.base_offset > prev.next_offset:
            body.append(
                _rect(
                    x(prev.next_offset),
                    x(nxt.base_offset),
                    top,
                    base - top,
                    "gap",
                    f"offsets {prev.next_offset}..{nxt.base_offset - 1} lie in no segment",
                )
            )
    for s in p.segments:
        h = max(2.0, (base - top) * s.size / largest)
        body.append(
            _rect(
                x(s.base_offset),
                x(s.next_offset),
                base - h,
                h,
                _segment_class(s),
                _segment_title(s),
            )
        )
    marks = [
        (p.log_start_offset, "lso-start", "log start offset"),
        (p.high_watermark, "hw", "high watermark"),
    ]
    if p.last_stable_offset is not None and p.last_stable_offset != p.high_watermark:
        marks.append((p.last_stable_offset, "lso", "last stable offset"))
    for value, cls, what in marks:
        if value is not None:
            body.append(_vline(x(value), top - 4, base, cls, f"{what} {value}"))
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{base}" y2="{base}"/>')
    body.append(_text(LEFT, base + 14, str(int(x.lo))))
    body.append(_text(LEFT + PLOT, base + 14, str(int(x.hi)), "end"))
    return _svg("offsets", height, body, f"{p.name}: segments by offset")


def time_plot(p: PartitionView, now: int) -> str:
    """Segments on the time axis: from the first batch's timestamp to the largest one retention
    uses; the retention line (``now - retention.ms``: segments wholly left of it are deleted)
    and ``now``, drawn where they fall inside the data, else named at the edge."""
    height, top, base = 120, 14, 100
    timed = [s for s in p.segments if s.first_timestamp >= 0 and s.largest_timestamp >= 0]
    body = [_text(LEFT, 10, "time: segments from first to largest timestamp")]
    if not timed:
        body.append(_text(WIDTH / 2, 60, "no timestamps (magic v0 or empty segments)", "middle"))
        body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{base}" y2="{base}"/>')
        return _svg("time", height, body, f"{p.name}: segments by time")
    lo = min(s.first_timestamp for s in timed)
    hi = max(s.largest_timestamp for s in timed)
    x = Scale(lo, hi)
    largest = max(s.size for s in timed) or 1
    for s in timed:
        h = max(2.0, (base - top) * s.size / largest)
        a, b = sorted((s.first_timestamp, s.largest_timestamp))
        title = _segment_title(s) + f"; {iso(s.first_timestamp)} .. {iso(s.largest_timestamp)}"
        body.append(_rect(x(a), x(b), base - h, h, _segment_class(s), title))
    lines = [(now, "now", f"--now {iso(now)}")]
    if p.retention_ms is not None and p.retention_ms >= 0:
        cutoff = now - p.retention_ms
        lines.append(
            (cutoff, "ret", f"retention line {iso(cutoff)}: now - {duration(p.retention_ms)}")
        )
    edge_notes = []
    for value, cls, what in lines:
        if x.inside(value):
            body.append(_vline(x(value), top - 4, base, cls, what))
        else:
            edge_notes.append(("→ " if value > x.hi else "← ") + what.split(" (")[0])
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{base}" y2="{base}"/>')
    body.append(_text(LEFT, base + 14, iso(lo)))
    body.append(_text(LEFT + PLOT, base + 14, iso(hi), "end"))
    if edge_notes:
        body.append(_text(LEFT + PLOT, 24, "; ".join(edge_notes), "end", "note"))
    return _svg("time", height, body, f"{p.name}: segments by time")


def index_plot(p: PartitionView, interval: int) -> str:
    """Index density per segment: bytes of log between consecutive offset index entries (min
    to max, dot at the mean) against index.interval.bytes (dashed)."""
    height, top, base = 110, 14, 92
    body = [
        _text(
            LEFT,
            10,
            f"index density: bytes between .index entries (dashed: index.interval.bytes "
            f"{interval})",
        )
    ]
    dense = [s for s in p.segments if s.density is not None]
    peak = max([interval * 2, 1, *(s.density.max_bytes for s in dense if s.density is not None)])

    def y(v: float) -> float:
        return base - (base - top) * v / peak

    n = max(len(p.segments), 1)
    step = PLOT / n
    for i, s in enumerate(p.segments):
        cx = LEFT + step * (i + 0.5)
        d = s.density
        if d is None:
            body.append(
                f'<circle class="noidx" cx="{_n(cx)}" cy="{base - 3}" r="2.5"><title>segment '
                f"{s.base_offset}: no index with two entries</title></circle>"
            )
            continue
        title = (
            f"segment {s.base_offset}: {d.entries} entries, {d.min_bytes}..{d.max_bytes} bytes "
            f"apart, mean {d.mean_bytes:.0f}"
        )
        body.append(
            f'<g class="dens"><title>{escape(title)}</title>'
            f'<line x1="{_n(cx)}" x2="{_n(cx)}" y1="{_n(y(d.min_bytes))}" '
            f'y2="{_n(y(d.max_bytes))}"/>'
            f'<circle cx="{_n(cx)}" cy="{_n(y(d.mean_bytes))}" r="3"/></g>'
        )
    body.append(
        f'<line class="interval" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{_n(y(interval))}" '
        f'y2="{_n(y(interval))}"/>'
    )
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{base}" y2="{base}"/>')
    body.append(
        _text(LEFT, base + 14, f"{len(p.segments)} segment(s), oldest left; top {peak} bytes")
    )
    return _svg("index", height, body, f"{p.name}: index density")


def txn_plot(p: PartitionView) -> str:
    """Open transactions on the offset axis (red: hanging), with the last stable offset they
    hold back and the high watermark."""
    height, top, base = 76, 14, 58
    x = offset_domain(p)
    body = [_text(LEFT, 10, "open transactions and the last stable offset")]
    txns = p.open_transactions
    if not txns:
        body.append(_text(WIDTH / 2, 38, "no open transaction", "middle", "note"))
    lane = (base - top) / max(len(txns), 1)
    for i, t in enumerate(txns[:12]):
        cls = "txn hanging" if t.hanging else "txn"
        title = (
            f"producer {t.producer_id} epoch {t.producer_epoch}: offsets {t.first_offset}.."
            f"{t.last_offset}, age {duration(t.age_ms)}" + (", hanging" if t.hanging else "")
        )
        body.append(
            _rect(
                x(t.first_offset),
                x(t.last_offset + 1),
                top + i * lane + 1,
                max(lane - 2, 2),
                cls,
                title,
            )
        )
    if p.high_watermark is not None:
        body.append(
            _vline(x(p.high_watermark), top - 4, base, "hw", f"high watermark {p.high_watermark}")
        )
    if p.last_stable_offset is not None:
        held = (
            f", {p.blocked_records} records ({size(p.blocked_bytes)}) held back"
            if p.blocked_records
            else ""
        )
        body.append(
            _vline(
                x(p.last_stable_offset),
                top - 4,
                base,
                "lso",
                f"last stable offset {p.last_stable_offset}{held}",
            )
        )
    body.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{base}" y2="{base}"/>')
    body.append(_text(LEFT, base + 14, str(int(x.lo))))
    body.append(_text(LEFT + PLOT, base + 14, str(int(x.hi)), "end"))
    return _svg("txn", height, body, f"{p.name}: open transactions")


def partition_plots(p: PartitionView, now: int, interval: int) -> list[str]:
    """The four plots of a partition with segments (none for an empty directory)."""
    if not p.segments:
        return []
    return [offsets_plot(p), time_plot(p, now), index_plot(p, interval), txn_plot(p)]
