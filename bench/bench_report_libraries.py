"""kdump report's plots drawn by kdump's own static SVG and by three plotting libraries a Python
user knows, measured side by side in one run: the HTML file's size, the time to write it in
Python, and how long Debian's headless chromium takes to open it and draw the first page's
plots, then the next page's.

One model (bench_report.py's ``build`` and kdump's ``collect``, run once), one page (kdump's
``render_html``: the same overview, tables, script and paging, 20 detailed sections a page in
``<template>`` elements); only the plots of each detailed section change:

- ``svg``: kdump/report/svg.py, as shipped;
- ``plotly``: plotly.graph_objects figures, their JSON on the page, plotly.js inlined once
  (``plotly.offline.get_plotlyjs()``), drawn by ``Plotly.newPlot`` when a page is shown;
- ``altair``: altair (Vega-Lite) charts, their specs on the page, vega + vega-lite +
  vega-embed inlined once from vl-convert's offline bundle (what ``chart.save(..., inline=True)``
  uses), drawn by ``vegaEmbed`` (its default canvas renderer) when a page is shown;
- ``matplotlib``: one matplotlib figure per plot saved as SVG and inlined (static, as kdump's).

The plots carry the same series as kdump's, chosen as kdump chooses them: segments on the offset
axis (width their offsets, height their size, coloured as kdump's classes; gaps, the dirty
section, log start offset, high watermark, last stable offset) and on the time axis (with --now
and the retention line where they fall inside) always; open transactions (with high watermark
and last stable offset) and index density (min..max and mean per segment against
index.interval.bytes) where the partition has them or findings about its indexes.

"Drawn" is polled in the page: the expected number of svg.plot elements (kdump), or of plot
containers holding an svg or canvas once the library's promise has resolved. Each file is
opened ``--rounds`` times (default 3), each time in a fresh chromium, and the best times are
kept; the ratios are to kdump's SVG measured in the same run. Run from the
repository root with the ``test`` and ``bench`` extras:

    .venv/bin/python bench/bench_report_libraries.py --partitions 2000
    .venv/bin/python bench/bench_report_libraries.py --partitions 500 --only svg,matplotlib
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from bench_report import build, chromium

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import kdump.report.html as report_html  # noqa: E402
from kdump.report import PAGE_SIZE, PartitionView, ReportModel, ReportOptions, collect  # noqa: E402
from kdump.report.html import paginate, render_html  # noqa: E402
from kdump.report.svg import (  # noqa: E402
    offset_domain,
    partition_plots,
    plot_kinds,
    segment_class,
    segment_title,
)
from kdump.units import iso  # noqa: E402

# The fills of kdump's segment classes (kdump/report/report.css: .seg, .seg.act, .seg.lost,
# .seg.future; a deletable segment is hatched, drawn here as a hatched bar).
COLOUR = {"seg": "#c5cfda", "act": "#98a8b8", "lost": "#e8b4b4", "future": "#f0b35a"}
HW, LSO, START, NOW, RET = "#2a9d3c", "#d62728", "#555555", "#333333", "#d62728"
GAP, DIRTY, TXN, HANGING, DENS = "#dddddd", "#f9d2ab", "#f28e2b", "#d62728", "#4e79a7"


# -- the plots' series, read from the model once for every library ---------------------------


@dataclass
class Bar:
    x0: float
    x1: float
    y0: float
    y1: float
    colour: str
    title: str
    faded: bool = False


@dataclass
class Rule:
    value: float
    colour: str
    title: str


@dataclass
class Plot:
    kind: str
    title: str
    height: int
    bars: list[Bar] = field(default_factory=list)
    bands: list[Bar] = field(default_factory=list)
    """Full-height spans: gaps, the dirty section."""
    rules: list[Rule] = field(default_factory=list)
    hline: Rule | None = None
    whiskers: list[tuple[int, float, float, float, str]] = field(default_factory=list)
    """Index density: (segment number, min, mean, max, title)."""
    xlim: tuple[float, float] = (0, 1)
    time_axis: bool = False


def _bar(s: Any, x0: float, x1: float, title: str, damaged: int | None) -> Bar:
    cls = segment_class(s, damaged).split()
    colour = next((COLOUR[c] for c in reversed(cls) if c in COLOUR), COLOUR["seg"])
    return Bar(x0, x1, 0, s.size, colour, title, "del" in cls)


def _damaged(p: PartitionView) -> int | None:
    damaged = p.facts.get("damaged_from")
    return None if damaged is None else int(damaged["segment"])


def offsets_series(p: PartitionView) -> Plot:
    x = offset_domain(p)
    plot = Plot("offsets", "offsets: segments (height = size)", 120)
    plot.xlim = (x.lo, x.hi)
    if p.dirty is not None and p.dirty[1] > p.dirty[0]:
        a, b = p.dirty
        plot.bands.append(Bar(a, b, 0, 1, DIRTY, f"cleaner's dirty section: offsets {a}..{b - 1}"))
    for prev, nxt in itertools.pairwise(p.segments):
        if nxt.base_offset > prev.next_offset:
            title = f"offsets {prev.next_offset}..{nxt.base_offset - 1} lie in no segment"
            plot.bands.append(Bar(prev.next_offset, nxt.base_offset, 0, 1, GAP, title))
    damaged = _damaged(p)
    plot.bars = [
        _bar(s, s.base_offset, s.next_offset, segment_title(s), damaged) for s in p.segments
    ]
    marks = [
        (p.log_start_offset, START, "log start offset"),
        (p.high_watermark, HW, "high watermark"),
    ]
    if p.last_stable_offset is not None and p.last_stable_offset != p.high_watermark:
        marks.append((p.last_stable_offset, LSO, "last stable offset"))
    plot.rules = [Rule(v, c, f"{what} {v}") for v, c, what in marks if v is not None]
    return plot


def time_series(p: PartitionView, now: int) -> Plot:
    plot = Plot("time", "time: segments from first to largest timestamp", 120, time_axis=True)
    timed = [s for s in p.segments if s.first_timestamp >= 0 and s.largest_timestamp >= 0]
    if not timed:
        return plot
    lo = min(s.first_timestamp for s in timed)
    hi = max(s.largest_timestamp for s in timed)
    plot.xlim = (lo, hi if hi > lo else lo + 1)
    for s in timed:
        a, b = sorted((s.first_timestamp, s.largest_timestamp))
        title = segment_title(s) + f"; {iso(s.first_timestamp)} .. {iso(s.largest_timestamp)}"
        plot.bars.append(_bar(s, a, b, title, _damaged(p)))
    lines = [Rule(now, NOW, f"--now {iso(now)}")]
    if p.retention_ms is not None and p.retention_ms >= 0:
        lines.append(Rule(now - p.retention_ms, RET, f"retention line {iso(now - p.retention_ms)}"))
    plot.rules = [r for r in lines if lo <= r.value <= hi]
    return plot


def index_series(p: PartitionView, interval: int) -> Plot:
    title = f"index density: bytes between .index entries (dashed: index.interval.bytes {interval})"
    plot = Plot("index", title, 110, xlim=(-0.5, max(len(p.segments), 1) - 0.5))
    for i, s in enumerate(p.segments):
        d = s.density
        if d is not None:
            what = (
                f"segment {s.base_offset}: {d.entries} entries, {d.min_bytes}..{d.max_bytes} "
                f"bytes apart, mean {d.mean_bytes:.0f}"
            )
            plot.whiskers.append((i, d.min_bytes, d.mean_bytes, d.max_bytes, what))
    plot.hline = Rule(interval, LSO, f"index.interval.bytes {interval}")
    return plot


def txn_series(p: PartitionView) -> Plot:
    x = offset_domain(p)
    plot = Plot("txn", "open transactions and the last stable offset", 76, xlim=(x.lo, x.hi))
    for i, t in enumerate(p.open_transactions[:12]):
        title = (
            f"producer {t.producer_id} epoch {t.producer_epoch}: offsets {t.first_offset}.."
            f"{t.last_offset}" + (", hanging" if t.hanging else "")
        )
        colour = HANGING if t.hanging else TXN
        plot.bars.append(Bar(t.first_offset, t.last_offset + 1, i, i + 0.8, colour, title))
    if p.high_watermark is not None:
        plot.rules.append(Rule(p.high_watermark, HW, f"high watermark {p.high_watermark}"))
    if p.last_stable_offset is not None:
        plot.rules.append(Rule(p.last_stable_offset, LSO, f"last stable {p.last_stable_offset}"))
    return plot


def series(p: PartitionView, now: int, interval: int) -> list[Plot]:
    """The series of the plots kdump draws for a partition (kdump.report.svg.plot_kinds)."""
    made = {
        "log": lambda: offsets_series(p),
        "time": lambda: time_series(p, now),
        "txn": lambda: txn_series(p),
        "index": lambda: index_series(p, interval),
    }
    return [made[kind]() for kind in plot_kinds(p)]


# -- the libraries ---------------------------------------------------------------------------


def _json_script(text: str) -> str:
    """A plot container with its spec as inert JSON (no script runs until the page is shown)."""
    text = text.replace("</", "<\\/")
    return f'<div class="lib-plot"><script type="application/json">{text}</script></div>'


def _drawer(draw: str) -> str:
    """Draws every plot container put on the page by the report's paging script (which
    replaces #pages' children), marking each drawn once its library's promise resolves."""
    return (
        "<script>(function(){var box=document.getElementById('pages');"
        "new MutationObserver(function(){box.querySelectorAll('.lib-plot:not([data-drawn])')"
        ".forEach(function(div){var spec=JSON.parse(div.firstChild.textContent);"
        f"Promise.resolve(({draw})(div,spec)).then(function(){{div.dataset.drawn='1';}});"
        "});}).observe(box,{childList:true});})();</script>"
    )


def plotly_figure(plot: Plot) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    hbar = plot.kind == "txn"
    if plot.bars:
        fig.add_trace(
            go.Bar(
                orientation="h" if hbar else "v",
                x=[b.x1 - b.x0 for b in plot.bars]
                if hbar
                else [(b.x0 + b.x1) / 2 for b in plot.bars],
                y=[b.y0 for b in plot.bars] if hbar else [b.y1 for b in plot.bars],
                base=[b.x0 for b in plot.bars] if hbar else None,
                width=0.8 if hbar else [max(b.x1 - b.x0, 1e-9) for b in plot.bars],
                marker={
                    "color": [b.colour for b in plot.bars],
                    "opacity": [0.45 if b.faded else 1 for b in plot.bars],
                },
                hovertext=[b.title for b in plot.bars],
                hoverinfo="text",
            )
        )
    if plot.whiskers:
        fig.add_trace(
            go.Scatter(
                x=[w[0] for w in plot.whiskers],
                y=[w[2] for w in plot.whiskers],
                mode="markers",
                marker={"color": DENS},
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [w[3] - w[2] for w in plot.whiskers],
                    "arrayminus": [w[2] - w[1] for w in plot.whiskers],
                },
                hovertext=[w[4] for w in plot.whiskers],
                hoverinfo="text",
            )
        )
    for band in plot.bands:
        fig.add_vrect(x0=band.x0, x1=band.x1, fillcolor=band.colour, opacity=0.5, line_width=0)
    for rule in plot.rules:
        fig.add_vline(x=rule.value, line_color=rule.colour, line_width=2)
    if plot.hline is not None:
        fig.add_hline(y=plot.hline.value, line_color=plot.hline.colour, line_dash="dash")
    fig.update_layout(
        title={"text": plot.title, "font": {"size": 10}},
        width=640,
        height=plot.height + 30,
        margin={"l": 40, "r": 8, "t": 20, "b": 20},
        showlegend=False,
        xaxis={"range": list(plot.xlim), "type": "date" if plot.time_axis else "linear"},
    )
    return fig


def plotly_plots(p: PartitionView, now: int, interval: int) -> list[str]:
    import plotly.io as pio

    return [_json_script(pio.to_json(plotly_figure(s))) for s in series(p, now, interval)]


def plotly_head() -> str:
    from plotly.offline import get_plotlyjs

    draw = (
        "function(div,spec){return Plotly.newPlot(div,spec.data,spec.layout,"
        "{displayModeBar:false});}"
    )
    return f"<script>{get_plotlyjs()}</script>{_drawer(draw)}"


def altair_chart(plot: Plot) -> Any:
    import altair as alt

    x_type = "T" if plot.time_axis else "Q"
    scale = alt.Scale(domain=list(plot.xlim), nice=False, zero=False)
    layers = []
    if plot.bands:
        bands = [{"a": b.x0, "b": b.x1, "c": b.colour, "t": b.title} for b in plot.bands]
        layers.append(
            alt.Chart(alt.Data(values=bands))
            .mark_rect(opacity=0.5)
            .encode(
                x=alt.X(f"a:{x_type}", scale=scale, title=None),
                x2="b",
                color=alt.Color("c:N", scale=None),
                tooltip="t:N",
            )
        )
    if plot.bars:
        bars = [
            {
                "a": b.x0,
                "b": b.x1,
                "y": b.y0,
                "y2": b.y1,
                "c": b.colour,
                "t": b.title,
                "o": 0.45 if b.faded else 1,
            }
            for b in plot.bars
        ]
        layers.append(
            alt.Chart(alt.Data(values=bars))
            .mark_rect()
            .encode(
                x=alt.X(f"a:{x_type}", scale=scale, title=None),
                x2="b",
                y=alt.Y("y:Q", title=None),
                y2="y2",
                color=alt.Color("c:N", scale=None),
                opacity=alt.Opacity("o:Q", scale=None),
                tooltip="t:N",
            )
        )
    if plot.whiskers:
        dens = [{"i": w[0], "lo": w[1], "m": w[2], "hi": w[3], "t": w[4]} for w in plot.whiskers]
        base = alt.Chart(alt.Data(values=dens)).encode(
            x=alt.X("i:Q", scale=scale, title=None), tooltip="t:N"
        )
        layers.append(base.mark_rule(color=DENS, strokeWidth=3).encode(y="lo:Q", y2="hi:Q"))
        layers.append(
            base.mark_point(filled=True, color="#1f3b5a").encode(y=alt.Y("m:Q", title=None))
        )
    rules = [{"v": r.value, "c": r.colour, "t": r.title} for r in plot.rules]
    if rules:
        layers.append(
            alt.Chart(alt.Data(values=rules))
            .mark_rule(strokeWidth=2)
            .encode(
                x=alt.X(f"v:{x_type}", scale=scale),
                color=alt.Color("c:N", scale=None),
                tooltip="t:N",
            )
        )
    if plot.hline is not None:
        hline = [{"v": plot.hline.value}]
        layers.append(
            alt.Chart(alt.Data(values=hline))
            .mark_rule(color=plot.hline.colour, strokeDash=[5, 3])
            .encode(y="v:Q")
        )
    if not layers:  # vega-lite needs a mark: an empty axis, as kdump's "no timestamps"
        layers.append(alt.Chart(alt.Data(values=[])).mark_rule())
    return alt.layer(*layers).properties(
        width=600, height=plot.height - 40, title=alt.TitleParams(plot.title, fontSize=10)
    )


def altair_plots(p: PartitionView, now: int, interval: int) -> list[str]:
    return [
        _json_script(json.dumps(altair_chart(s).to_dict(), separators=(",", ":")))
        for s in series(p, now, interval)
    ]


def altair_head() -> str:
    import vl_convert

    # What altair's chart.save(..., inline=True) inlines: vega, vega-lite and vega-embed in one
    # classic script defining window.vegaEmbed, shipped inside vl-convert (nothing fetched).
    # (its stub marks the snippet required; at run time it defaults to the globals, as altair
    # calls it)
    bundle = vl_convert.javascript_bundle().replace(  # type: ignore[call-arg]
        "</script", "<\\/script"
    )
    draw = "function(div,spec){return vegaEmbed(div,spec,{actions:false});}"
    return f"<script>{bundle}</script>{_drawer(draw)}"


def matplotlib_svg(plot: Plot) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, plot.height / 100), dpi=100)
    ax = fig.add_axes((0.06, 0.2, 0.93, 0.62))
    ax.set_title(plot.title, fontsize=7, loc="left")
    ax.tick_params(labelsize=6)
    for band in plot.bands:
        ax.axvspan(band.x0, band.x1, color=band.colour, alpha=0.5, lw=0)
    if plot.bars and plot.kind == "txn":
        ax.barh(
            [b.y0 for b in plot.bars],
            [b.x1 - b.x0 for b in plot.bars],
            left=[b.x0 for b in plot.bars],
            height=0.8,
            color=[b.colour for b in plot.bars],
        )
    elif plot.bars:
        ax.bar(
            [b.x0 for b in plot.bars],
            [b.y1 for b in plot.bars],
            width=[max(b.x1 - b.x0, 1e-9) for b in plot.bars],
            align="edge",
            color=[b.colour for b in plot.bars],
            alpha=None,
        )
    if plot.whiskers:
        ax.errorbar(
            [w[0] for w in plot.whiskers],
            [w[2] for w in plot.whiskers],
            yerr=[[w[2] - w[1] for w in plot.whiskers], [w[3] - w[2] for w in plot.whiskers]],
            fmt="o",
            color=DENS,
            markersize=3,
        )
    for rule in plot.rules:
        ax.axvline(rule.value, color=rule.colour, lw=1.5)
    if plot.hline is not None:
        ax.axhline(plot.hline.value, color=plot.hline.colour, ls="--", lw=1)
    ax.set_xlim(*plot.xlim)
    out = io.StringIO()
    fig.savefig(out, format="svg")
    text = out.getvalue()
    # drop the XML declaration and doctype: the <svg> element goes inline
    return '<div class="lib-plot" data-drawn="1">' + text[text.index("<svg") :] + "</div>"


def matplotlib_plots(p: PartitionView, now: int, interval: int) -> list[str]:
    return [matplotlib_svg(s) for s in series(p, now, interval)]


@dataclass(frozen=True)
class Library:
    name: str
    plots: Callable[[PartitionView, int, int], list[str]]
    head: Callable[[], str]
    how: str


LIBRARIES = [
    Library("svg", partition_plots, lambda: "", "kdump's static SVG"),
    Library("plotly", plotly_plots, plotly_head, "plotly.js inlined, SVG"),
    Library("altair", altair_plots, altair_head, "vega-embed inlined, canvas"),
    Library("matplotlib", matplotlib_plots, lambda: "", "static SVG per figure"),
]


def version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    dist = {"svg": "kdump", "altair": "altair"}.get(name, name)
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return "?"


# -- measuring -------------------------------------------------------------------------------


@contextmanager
def plots_drawn_by(library: Library) -> Iterator[None]:
    """kdump's page, with this library drawing each partition's plots."""
    with mock.patch.object(report_html, "partition_plots", library.plots):
        yield


def write(library: Library, model: ReportModel, paths: list[str], out: Path) -> float:
    """Writes the page; returns the seconds it took (the library's bundle included)."""
    start = time.perf_counter()
    with plots_drawn_by(library), open(out, "w", encoding="utf-8") as f:
        pieces = render_html(model, paths)
        last = ""
        for piece in pieces:
            if last:
                f.write(last)
            last = piece
        f.write(library.head())  # before the paging script, so it sees the first page shown
        f.write(last)
    return time.perf_counter() - start


COUNT_DRAWN = """
var want = arguments[0], done = arguments[arguments.length - 1], t0 = performance.now();
function drawn() {
  var n = document.querySelectorAll('#pages svg.plot').length;
  document.querySelectorAll('#pages .lib-plot[data-drawn]').forEach(function (d) {
    if (d.querySelector('svg, canvas')) n++;
  });
  return n;
}
(function poll() {
  var n = drawn();
  if (n >= want) { document.body.offsetHeight; done(n); }
  else if (performance.now() - t0 > 600000) done(n);
  else requestAnimationFrame(poll);
})();
"""


def browse(out: Path, first: int, second: int) -> tuple[float, float, int, int]:
    """Seconds until the first page's plots are drawn (from opening the file), and until the
    next page's are (from the click); with the counts seen."""
    with chromium() as driver:
        driver.set_script_timeout(700)
        driver.set_page_load_timeout(700)
        start = time.perf_counter()
        driver.get(out.as_uri())
        n1 = driver.execute_async_script(COUNT_DRAWN, first)
        loaded = time.perf_counter() - start
        start = time.perf_counter()
        driver.find_element("id", "next").click()
        n2 = driver.execute_async_script(COUNT_DRAWN, second)
        paged = time.perf_counter() - start
        errors = (
            [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
            if hasattr(driver, "get_log")
            else []
        )
        for e in errors[:3]:
            print(f"  console: {e[:200]}")
        return loaded, paged, n1, n2


@dataclass
class Row:
    name: str
    how: str
    size: int
    written: float
    loaded: float
    paged: float
    drawn: str


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--only", default=",".join(lib.name for lib in LIBRARIES))
    parser.add_argument(
        "--rounds", type=int, default=3, help="chromium opens each file this often (best kept)"
    )
    args = parser.parse_args()
    chosen = [lib for lib in LIBRARIES if lib.name in args.only.split(",")]
    if chosen[0].name != "svg":
        chosen.insert(0, LIBRARIES[0])  # the ratios are against kdump's SVG of the same run
    log_dir = build(args.partitions)
    start = time.perf_counter()
    model = collect([str(log_dir)], ReportOptions(now=int(time.time() * 1000)))
    print(f"partitions: {args.partitions}, collect: {time.perf_counter() - start:.1f} s")
    pages = paginate(model)
    rows = []
    for library in chosen:
        # two to four plots a partition (transactions and index density only where they show
        # something)
        expect = [
            sum(len(series(p, model.now, p.index_interval_bytes)) for p in page)
            for page in pages[:2]
        ] + [0]
        out = log_dir.parent / f"report-{library.name}.html"
        written = write(library, model, [str(log_dir)], out)
        # A fresh chromium (fresh profile) each round; the best time of the rounds is kept,
        # so a burst of load from other processes on a shared machine is dropped.
        rounds = [browse(out, expect[0], expect[1]) for _ in range(args.rounds)]
        loaded, paged = min(r[0] for r in rounds), min(r[1] for r in rounds)
        n1, n2 = min(r[2] for r in rounds), min(r[3] for r in rounds)
        row = Row(
            library.name,
            library.how,
            out.stat().st_size,
            written,
            loaded,
            paged,
            f"{n1}/{expect[0]}, {n2}/{expect[1]}",
        )
        rows.append(row)
        print(
            f"{row.name} {version(row.name)}: {row.size / 1e6:.1f} MB, written in "
            f"{row.written:.1f} s, first page drawn in {row.loaded:.2f} s, next in "
            f"{row.paged:.2f} s (plots drawn {row.drawn})",
            flush=True,
        )
    base = rows[0]
    print(
        f"\n{args.partitions} partitions, {PAGE_SIZE} a page, chromium best of {args.rounds}; "
        "ratios to kdump's SVG (this run)\n"
    )
    print(
        "| library | how | HTML | × | written in Python | × | first page drawn | × "
        "| next page | × |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r.name} {version(r.name)} | {r.how} | {r.size / 1e6:.1f} MB | "
            f"{r.size / base.size:.1f} | {r.written:.1f} s | {r.written / base.written:.0f} | "
            f"{r.loaded:.2f} s | {r.loaded / base.loaded:.1f} | {r.paged:.2f} s | "
            f"{r.paged / base.paged:.1f} |"
        )


if __name__ == "__main__":
    main()
