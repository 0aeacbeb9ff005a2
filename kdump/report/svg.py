"""The report's plots, drawn as static SVG text: no plotting library, no script, nothing to
load (why: bench/bench_report_libraries.py measured plotly, altair and matplotlib against
static SVG; the figures are in docs/report.md).

Each function takes a ``PartitionView`` and returns one ``<svg>`` element WIDTH units wide; the
page never draws one narrower than WIDTH pixels (kdump/report/report.css), so a label's 12 units
are at least 12 pixels. Marks are grey unless something is wrong: red for bytes recovery cuts
or deletes and for hanging transactions, amber for what blocks retention or the cleaner.
Labels sit in lanes above or below the bars, never on them; hovering a mark shows its
``<title>``. Classes and hatch patterns are defined once by the page (report.css, html.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from kdump.checks.registry import codes_of
from kdump.report.collect import PartitionView, SegmentView
from kdump.report.overview import BLOCKING, zero_tail
from kdump.units import iso, offset_span, rough_duration, size
from kdump.untrusted import html_text

WIDTH = 1200
LEFT, RIGHT = 8, 8
PLOT = WIDTH - LEFT - RIGHT
FONT = 12
CHAR = 7.0
"""A label's advance per character at FONT (system-ui), to keep labels apart."""
LANE = 19
"""Height of one row of labels."""
GAP = 4
"""Between the lowest row of labels and the bars."""
TOP = 22
"""Below the plot's heading."""


class Scale:
    """A linear map from [lo, hi] to [LEFT, LEFT + PLOT]."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi = lo, hi if hi > lo else lo + 1

    def __call__(self, v: float) -> float:
        return LEFT + (v - self.lo) / (self.hi - self.lo) * PLOT

    def inside(self, v: float) -> bool:
        return self.lo <= v <= self.hi


@dataclass(frozen=True)
class Note:
    """A label for the range [x0, x1] (a point when equal), drawn in a lane with a tick."""

    x0: float
    x1: float
    text: str
    cls: str = "lbl"
    title: str = ""


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _svg(kind: str, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg class="plot" data-plot="{kind}" viewBox="0 0 {WIDTH} {_n(height)}" '
        f'role="img" aria-label="{html_text(label)}">{"".join(body)}</svg>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "lbl") -> str:
    head = f'<text class="{cls}" x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}">'
    return f"{head}{html_text(text)}</text>"


def _rect(x0: float, x1: float, y: float, h: float, cls: str, title: str) -> str:
    w = max(x1 - x0, 1.5)
    return (
        f'<rect class="{cls}" x="{_n(x0)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}">'
        f"<title>{html_text(title)}</title></rect>"
    )


def _vline(x: float, top: float, bottom: float, cls: str, title: str = "") -> str:
    inner = f"<title>{html_text(title)}</title>" if title else ""
    return (
        f'<line class="{cls}" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" y2="{_n(bottom)}">'
        f"{inner}</line>"
    )


def _axis(y: float) -> str:
    return f'<line class="axis" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{_n(y)}" y2="{_n(y)}"/>'


def _width(text: str) -> float:
    return len(text) * CHAR


def _place(x0: float, x1: float, text: str) -> tuple[float, float, str]:
    """Where a label for [x0, x1] goes: from its start, or ending at its end when it would
    run off the right; always inside the plot."""
    w = _width(text)
    if x0 + w <= LEFT + PLOT:
        return x0, x0 + w, "start"
    end = max(x1, LEFT + w)
    return end - w, end, "end"


def _lanes(notes: Sequence[Note]) -> list[int]:
    """A lane for each note (first fit, leftmost first): no two labels overlap, and where
    possible no tick, going down from its label to the bars, crosses another label (where
    not, the tick passes behind it: labels have a halo)."""
    placed: list[tuple[int, float, float, tuple[float, ...]]] = []
    out = [0] * len(notes)
    for k in sorted(range(len(notes)), key=lambda k: (notes[k].x0, notes[k].x1)):
        n = notes[k]
        a, b, _ = _place(n.x0, n.x1, n.text)
        ticks = (n.x0, n.x1)

        def overlaps(lane: int, a: float = a, b: float = b) -> bool:
            return any(i == lane and not (b + 10 < c or a > d + 10) for i, c, d, _ in placed)

        def crosses(
            lane: int, a: float = a, b: float = b, ticks: tuple[float, ...] = ticks
        ) -> bool:
            return any(
                (i > lane and any(c - 4 <= t <= d + 4 for t in ticks))
                or (i < lane and any(a - 4 <= t <= b + 4 for t in theirs))
                for i, c, d, theirs in placed
            )

        free = [i for i in range(len(notes)) if not overlaps(i)]
        lane = next((i for i in free if not crosses(i)), free[0])
        placed.append((lane, a, b, ticks))
        out[k] = lane
    return out


def _notes_above(notes: Sequence[Note], top: float) -> tuple[list[str], float]:
    """The notes in lanes from ``top`` down, each with a tick (a bracket for a range) down to
    the bars, which start GAP below the lanes; returns the marks (ticks first, so labels are
    drawn over them) and where the bars start."""
    lanes = _lanes(notes)
    bars = top + ((max(lanes) + 1) * LANE if lanes else 0) + GAP
    ticks, labels = [], []
    for n, lane in zip(notes, lanes, strict=True):
        y = top + lane * LANE + FONT
        a, _, anchor = _place(n.x0, n.x1, n.text)
        x = a if anchor == "start" else a + _width(n.text)
        tick = f"tick {n.cls}"
        if n.x1 - n.x0 >= 3:
            ticks.append(
                f'<path class="{tick}" d="M{_n(n.x0)} {_n(bars)}V{_n(y + 3)}'
                f'H{_n(n.x1)}V{_n(bars)}"/>'
            )
        else:
            ticks.append(_vline(n.x0, y + 3, bars, tick))
        text = _text(x, y, n.text, anchor, f"{n.cls} ann")
        if n.title:
            text = text.replace("</text>", f"<title>{html_text(n.title)}</title></text>")
        labels.append(text)
    return ticks + labels, bars


def _ticks(labels: Sequence[tuple[float, str]], y: float, cls: str = "lbl") -> list[str]:
    """Labels centred below x positions, skipping any that would touch the previous one."""
    out, end = [], float("-inf")
    for x, text in labels:
        w = _width(text)
        a = min(max(x - w / 2, LEFT), LEFT + PLOT - w)
        if a > end + 8:
            out.append(_text(a, y, text, "start", cls))
            end = a + w
    return out


def segment_title(s: SegmentView) -> str:
    causes = "active segment" if s.active else "rolled by " + ", ".join(s.roll_causes)
    deletable = f"; retention deletes it at --now ({s.deletable})" if s.deletable else ""
    return (
        f"segment {s.base_offset}: {offset_span(s.base_offset, s.next_offset)}, "
        f"{size(s.size)}, {s.batches} batches; {causes}{deletable}"
    )


def _lost(p: PartitionView) -> int | None:
    """The base offset of the damaged segment: it and every later one lose bytes (None)."""
    damaged = p.facts.get("damaged_from")
    return None if damaged is None else int(damaged["segment"])


def segment_class(s: SegmentView, damaged: int | None) -> str:
    if damaged is not None and s.base_offset > damaged:
        return "seg lost"
    return "seg" + (" act" if s.active else "") + (" del" if s.deletable else "")


@dataclass(frozen=True)
class Cut:
    """Where recovery cuts a partition, on its log plot: the damaged segment's index among the
    segments, and the byte (counted from the first segment's start) the cut begins at."""

    segment: int
    byte: int
    damaged: dict[str, int]


def _cut(p: PartitionView, starts: Sequence[int]) -> Cut | None:
    damaged = p.facts.get("damaged_from")
    bases = [s.base_offset for s in p.segments]
    if damaged is None or damaged["segment"] not in bases:
        return None
    i = bases.index(damaged["segment"])
    return Cut(i, starts[i] + damaged["position"], damaged)


def log_plot(p: PartitionView) -> str:
    """The partition's log byte by byte: a bar per segment as wide as its ``.log``, in offset
    order, base offsets beneath. Marked: the bytes recovery cuts (from ``damaged_from``'s
    position to the end of its segment) and the later segments it deletes, the segments
    retention deletes at --now, where retention is blocked, and the cleaner's dirty
    section."""
    segments = p.segments
    starts = [0, *itertools.accumulate(s.size for s in segments)]
    x = Scale(0, starts[-1] or 1)
    cut = _cut(p, starts)
    caption = f"log: {len(segments)} segment(s), {size(starts[-1])}, each as wide as its .log file"
    body = [_text(LEFT, FONT + 2, caption, cls="lbl head")]
    notes, top = _notes_above(_log_notes(p, starts, x, cut), TOP)
    bars = 36
    lost = _lost(p)
    for s, a in zip(segments, starts, strict=False):
        body.append(_rect(x(a), x(a + s.size), top, bars, segment_class(s, lost), segment_title(s)))
    if cut is not None:
        d, end = cut.damaged, segments[cut.segment].size
        title = f"bytes {d['position']}..{end - 1} of segment {d['segment']}: recovery cuts them"
        body.append(_rect(x(cut.byte), x(starts[cut.segment + 1]), top, bars, "cut", title))
        body.append(_vline(x(cut.byte), top - 4, top + bars + 4, "cutline"))
    body += notes
    base = top + bars
    body.append(_axis(base))
    body += _ticks(
        [(x(a), str(s.base_offset)) for s, a in zip(segments, starts, strict=False)], base + 16
    )
    body.append(_text(LEFT + PLOT, base + 34, f"{size(starts[-1])} in all", "end", "note"))
    body.append(_text(LEFT, base + 34, "base offsets above; widths are bytes", cls="note"))
    return _svg("log", base + 40, body, f"{p.name}: the log by bytes")


def _log_notes(p: PartitionView, starts: Sequence[int], x: Scale, cut: Cut | None) -> list[Note]:
    """The log plot's labels: the cut, what retention deletes or where it stops, the dirty
    section."""
    segments = p.segments
    notes = []
    if cut is not None:
        d = cut.damaged
        later = len(segments) - cut.segment - 1
        deleted = f", deletes {later} later segment(s)" if later else ""
        cut_bytes = size(starts[-1] - cut.byte)
        lost = f"{cut_bytes} of zeros, no record lost" if zero_tail(p) else f"{cut_bytes} lost"
        notes.append(
            Note(
                x(cut.byte),
                x(cut.byte),
                f"recovery cuts here: segment {d['segment']} position {d['position']}, "
                f"offset {d['offset']}{deleted}: {lost}",
                "bad",
                f"the log ends at offset {d['offset']} after recovery",
            )
        )
    due = [i for i, s in enumerate(segments) if s.deletable]
    if due:
        gone = size(sum(segments[i].size for i in due))
        words = f"retention deletes {len(due)} segment(s), {gone}, at --now"
        notes.append(Note(x(starts[due[0]]), x(starts[due[-1] + 1]), words, "note"))
    blocker = p.retention_blocker
    if blocker is not None and blocker.kind in BLOCKING:
        bases = [s.base_offset for s in segments]
        at = x(starts[bases.index(blocker.base_offset)] if blocker.base_offset in bases else 0)
        words = f"retention stops here: {BLOCKING[blocker.kind]}"
        notes.append(Note(at, at, words, "warn", blocker.reason))
    if p.dirty is not None and p.dirty[1] > p.dirty[0]:
        a, b = (x(_byte_at(segments, starts, v)) for v in p.dirty)
        words = "cleaner's dirty section " + offset_span(*p.dirty)
        if p.compaction_blocked is not None:
            notes.append(Note(a, b, "compaction blocked: " + words, "warn", p.compaction_blocked))
        else:
            notes.append(Note(a, b, words, "note", p.compaction_note or ""))
    return notes


def _byte_at(segments: Sequence[SegmentView], starts: Sequence[int], offset: int) -> float:
    """Where ``offset`` lies in the log's bytes, taking offsets as evenly spread over their
    segment (an estimate: only the index knows batch positions)."""
    for s, a in zip(segments, starts, strict=False):
        if offset < s.next_offset:
            if offset <= s.base_offset:
                return a
            return a + s.size * (offset - s.base_offset) / max(s.next_offset - s.base_offset, 1)
    return starts[-1]


def time_plot(p: PartitionView, now: int) -> str:
    """Segments on the time axis, from the first batch's timestamp to the largest one retention
    compares with ``now - retention.ms``; ``--now`` and that retention line where they fall
    inside, else said at the edge."""
    lost = _lost(p)
    timed = [s for s in p.segments if s.first_timestamp >= 0 and s.largest_timestamp >= 0]
    body = [
        _text(
            LEFT,
            FONT + 2,
            "time: each segment from its first to its largest timestamp",
            cls="lbl head",
        )
    ]
    if not timed:
        body.append(_text(LEFT, 44, "no timestamps (magic v0, or empty segments)", cls="note"))
        return _svg("time", 56, body, f"{p.name}: segments by time")
    lo = min(s.first_timestamp for s in timed)
    hi = max(s.largest_timestamp for s in timed)
    x = Scale(lo, hi)
    lines = [(now, "now", "--now", "")]
    if p.retention_ms is not None and p.retention_ms >= 0:
        lines.append(
            (
                now - p.retention_ms,
                "ret",
                "retention line",
                f" (--now − {rough_duration(p.retention_ms)})",
            )
        )
    above, edge = [], []
    for value, _, name, how in lines:
        if x.inside(value):
            above.append(Note(x(value), x(value), f"{name} {iso(value)}{how}", "note"))
        else:
            side = "after the newest batch" if value > hi else "before the oldest batch"
            gap = rough_duration(abs(value - (hi if value > hi else lo)))
            edge.append(f"{name} {iso(value)}{how}: {gap} {side}")
    notes, top = _notes_above(above, TOP)
    h = 28
    for s in timed:
        a, b = sorted((s.first_timestamp, s.largest_timestamp))
        cls = segment_class(s, lost) + (" future" if s.largest_timestamp > now else "")
        title = segment_title(s) + f"; {iso(s.first_timestamp)} .. {iso(s.largest_timestamp)}"
        body.append(_rect(x(a), x(b), top, h, cls, title))
    for value, cls, name, how in lines:
        if x.inside(value):
            body.append(_vline(x(value), top - 2, top + h + 2, cls, f"{name} {iso(value)}{how}"))
    body += notes
    base = top + h
    body.append(_axis(base))
    body.append(_text(LEFT, base + 16, iso(lo)))
    body.append(_text(LEFT + PLOT, base + 16, iso(hi), "end"))
    height = base + 22
    for note in edge:
        height += LANE
        body.append(_text(LEFT, height - 4, note, cls="note"))
    return _svg("time", height, body, f"{p.name}: segments by time")


def index_plot(p: PartitionView, interval: int) -> str:
    """Index density per segment: bytes of log between consecutive offset index entries (min
    to max, dot at the mean) against index.interval.bytes (dashed)."""
    top, base = 30, 110
    body = [
        _text(
            LEFT,
            FONT + 2,
            f"index density: bytes between .index entries (dashed: index.interval.bytes "
            f"{interval})",
            cls="lbl head",
        )
    ]
    dense = [s for s in p.segments if s.density is not None]
    peak = max([interval * 2, 1, *(s.density.max_bytes for s in dense if s.density is not None)])

    def y(v: float) -> float:
        return base - (base - top) * v / peak

    step = PLOT / max(len(p.segments), 1)
    for i, s in enumerate(p.segments):
        cx = LEFT + step * (i + 0.5)
        d = s.density
        if d is None:
            body.append(
                f'<circle class="noidx" cx="{_n(cx)}" cy="{base - 3}" r="3"><title>segment '
                f"{s.base_offset}: no index with two entries</title></circle>"
            )
            continue
        title = (
            f"segment {s.base_offset}: {d.entries} entries, {d.min_bytes}..{d.max_bytes} bytes "
            f"apart, mean {d.mean_bytes:.0f}"
        )
        body.append(
            f'<g class="dens"><title>{html_text(title)}</title>'
            f'<line x1="{_n(cx)}" x2="{_n(cx)}" y1="{_n(y(d.min_bytes))}" '
            f'y2="{_n(y(d.max_bytes))}"/>'
            f'<circle cx="{_n(cx)}" cy="{_n(y(d.mean_bytes))}" r="4"/></g>'
        )
    body.append(
        f'<line class="interval" x1="{LEFT}" x2="{LEFT + PLOT}" y1="{_n(y(interval))}" '
        f'y2="{_n(y(interval))}"/>'
    )
    body.append(_axis(base))
    body.append(
        _text(
            LEFT,
            base + 16,
            f"{len(p.segments)} segment(s), oldest left; top {peak} bytes",
            cls="note",
        )
    )
    return _svg("index", base + 22, body, f"{p.name}: index density")


def offset_domain(p: PartitionView) -> Scale:
    starts = [s.base_offset for s in p.segments]
    ends = [s.next_offset for s in p.segments]
    lo = min([*starts, *([p.log_start_offset] if p.log_start_offset is not None else [])])
    hi = max([*ends, *(v for v in (p.log_end_offset, p.high_watermark) if v is not None)])
    return Scale(lo, hi)


TXN_LANES = 12


def txn_plot(p: PartitionView) -> str:
    """Open transactions on the offset axis (red: hanging), with the last stable offset they
    hold back and the high watermark."""
    x = offset_domain(p)
    txns = p.open_transactions
    body = [
        _text(LEFT, FONT + 2, "open transactions on the offset axis (red: hanging)", cls="lbl head")
    ]
    above = []
    if p.last_stable_offset is not None:
        held = (
            f": {p.blocked_records} records ({size(p.blocked_bytes)}) held back"
            if p.blocked_records
            else ""
        )
        above.append(
            Note(
                x(p.last_stable_offset),
                x(p.last_stable_offset),
                f"last stable offset {p.last_stable_offset}{held}",
                "lbl",
            )
        )
    if p.high_watermark is not None and p.high_watermark != p.last_stable_offset:
        above.append(
            Note(x(p.high_watermark), x(p.high_watermark), f"high watermark {p.high_watermark}")
        )
    notes, top = _notes_above(above, TOP)
    lane = 14
    shown = txns[:TXN_LANES]
    for i, t in enumerate(shown):
        cls = "txn hanging" if t.hanging else "txn"
        title = (
            f"producer {t.producer_id} epoch {t.producer_epoch}: offsets {t.first_offset}.."
            f"{t.last_offset}, age {rough_duration(t.age_ms)}" + (", hanging" if t.hanging else "")
        )
        body.append(
            _rect(x(t.first_offset), x(t.last_offset + 1), top + i * lane + 2, lane - 3, cls, title)
        )
    base = top + max(len(shown), 1) * lane + 2
    for value, cls in ((p.last_stable_offset, "lso"), (p.high_watermark, "hw")):
        if value is not None:
            body.append(_vline(x(value), top - 2, base, cls))
    body += notes
    body.append(_axis(base))
    body.append(_text(LEFT, base + 16, str(int(x.lo))))
    body.append(_text(LEFT + PLOT, base + 16, str(int(x.hi)), "end"))
    if len(txns) > TXN_LANES:
        body.append(
            _text(WIDTH / 2, base + 16, f"and {len(txns) - TXN_LANES} more", "middle", "note")
        )
    return _svg("txn", base + 22, body, f"{p.name}: open transactions")


INDEX_CODES = codes_of("index", "timeindex")


def plot_kinds(p: PartitionView) -> list[str]:
    """Which plots a partition's detailed section has: its log by bytes and by time always
    (none for an empty directory); its open transactions and its index density where it has
    them or findings about them."""
    if not p.segments:
        return []
    kinds = ["log", "time"]
    if p.open_transactions:
        kinds.append("txn")
    if any(f.code in INDEX_CODES for f in p.findings):
        kinds.append("index")
    return kinds


def partition_plots(p: PartitionView, now: int, interval: int) -> list[str]:
    """The plots of a partition's detailed section (plot_kinds), drawn."""
    draw = {
        "log": lambda: log_plot(p),
        "time": lambda: time_plot(p, now),
        "txn": lambda: txn_plot(p),
        "index": lambda: index_plot(p, interval),
    }
    return [draw[kind]() for kind in plot_kinds(p)]
