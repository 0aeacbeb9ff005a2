"""`kdump report` as a person sees it: the page opened from disk in a real headless browser
(Debian's chromium, driven through its chromedriver by selenium; no browser is downloaded).

Checked: the page loads with no console error and loads nothing from anywhere; its first
screen says which partitions are wrong and shows every partition in the fleet map, coloured
only where something is wrong; no text is smaller than 11 px; the damaged partition's plot
marks the bytes recovery cuts where they lie; the model embedded as JSON is what the page
shows; paging, the table's lazy rows, sorting, links and the severity filter work by clicking.
With KDUMP_UPDATE_SCREENSHOT=1 the damaged partition's section is saved as docs/report.png
(docs/report.md shows it).

Where chromium, chromedriver or selenium are missing the tests skip, naming what is missing
(scripts/ensure-test-system-deps.sh, run by the README's test command, installs them).
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import chromium, missing
from clirun import run_kdump
from conftest import ORACLE, REALFILES

from kdump.report import PAGE_SIZE, ReportOptions, collect
from kdump.report.html import TABLE_ROWS, paginate
from kdump.report.svg import LEFT, PLOT, WIDTH
from kdump.units import parse_timestamp

NOW = "2026-01-01T00:00:00Z"
ROOT = Path(__file__).resolve().parent.parent
CRC = ORACLE.parent / "corrupt" / "log-crc-mismatch"
SOURCES = [
    p.relative_to(ROOT) for p in (ORACLE, CRC, REALFILES / "Bheem6005__kafka" / "kafka-logs")
]
DOCS = ROOT / "docs"
FIRST_SCREEN = 1600
"""The browser window's height: what a person sees before scrolling."""


pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium(FIRST_SCREEN) as driver:
        yield driver


def _write(tmp: Path, sources: list[Path], exit_code: int) -> Path:
    out = tmp / "report.html"
    ran = run_kdump(["report", *map(str, sources), "-o", str(out), "--now", NOW], ROOT)
    assert ran.exit_code == exit_code, ran.stderr
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A broker's log dir (51 partitions, most empty, five with a missing index), the oracle
    partitions, and the damaged one: exit 2 for its errors."""
    return _write(tmp_path_factory.mktemp("report"), SOURCES, 2)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir of 130 partitions, every fifth the damaged txn-0: more detailed sections than
    a page holds, more rows than the table lays out at first."""
    log_dir = tmp_path_factory.mktemp("fleet") / "logdir"
    healthy = ["gzip-0", "lz4-0", "legacyv1-0", "plain-0"]
    for i in range(130):
        source = CRC / "txn-0" if i % 5 == 0 else ORACLE / healthy[i % len(healthy)]
        shutil.copytree(source, log_dir / f"topic{i % 7}-{i}")
    return _write(log_dir.parent, [log_dir], 2)


def _open(driver: Any, page: Path) -> Any:
    """The page as it opens (each test starts from there: no sort, page or filter kept)."""
    driver.get(page.as_uri())
    driver.find_element("css selector", "body[data-ready='1']")
    return driver


@pytest.fixture
def page(browser: Any, report: Path) -> Any:
    return _open(browser, report)


@pytest.fixture
def fleet_page(browser: Any, fleet: Path) -> Any:
    return _open(browser, fleet)


def _wait_for(driver: Any, selector: str) -> Any:
    """The element, once there: a link's ``hashchange`` reaches the page's script as a task
    after the click returns."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 10).until(
        lambda d: (d.find_elements("css selector", selector) or [None])[0]
    )


def _model(driver: Any) -> dict[str, Any]:
    """The embedded model, read back as a script would."""
    return dict(
        driver.execute_script(
            "return JSON.parse(document.getElementById('kdump-model').textContent);"
        )
    )


def _partitions(driver: Any) -> list[dict[str, Any]]:
    return [p for d in _model(driver)["log_dirs"] for p in d["partitions"]]


def _one(driver: Any, status: str) -> dict[str, Any]:
    return next(p for p in _partitions(driver) if p["shown"]["status"] == status)


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"\d+", css)[:3])


def test_page_loads_with_no_console_error_and_nothing_fetched(page: Any, report: Path) -> None:
    errors = [e for e in page.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    fetched = page.execute_script("return performance.getEntriesByType('resource').length")
    assert fetched == 0
    html = report.read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert "<script src" not in html and "<link" not in html


def test_the_first_screen_says_where_the_broker_is_unhealthy(page: Any) -> None:
    """The verdict names each partition that needs a look, and the fleet map shows every
    partition, each cell marked with its status, all before any scrolling."""
    page.execute_script("window.scrollTo(0, 0)")
    partitions = _partitions(page)
    wrong = [p["shown"] for p in partitions if p["shown"]["status"] not in ("ok", "empty")]
    assert {w["status"] for w in wrong} == {"damaged", "errors", "warnings"}
    verdict = page.find_element("id", "verdict")
    named = {
        a.get_attribute("href").split("#")[1] for a in verdict.find_elements("css selector", "a")
    }
    assert named == {w["anchor"] for w in wrong}
    assert verdict.text.startswith(f"{len(wrong)} of {len(partitions)} partition(s) need a look")
    cells = page.execute_script(
        """return Array.from(document.querySelectorAll('.map a.c')).map(function(c){
             var r = c.getBoundingClientRect();
             return {href: c.getAttribute('href'), cls: c.className, bottom: r.bottom}; });"""
    )
    assert sorted(c["href"][1:] for c in cells) == sorted(p["shown"]["anchor"] for p in partitions)
    status = {p["shown"]["anchor"]: p["shown"]["status"] for p in partitions}
    assert all(f"st-{status[c['href'][1:]]}" in c["cls"].split() for c in cells)
    assert max(c["bottom"] for c in cells) <= FIRST_SCREEN


def test_colour_only_where_something_is_wrong(page: Any) -> None:
    """Grey for every partition that is fine (map cells, overview rows, segments); red for the
    damaged one; and no "0" findings count anywhere."""
    shades = page.execute_script(
        """var out = [];
           document.querySelectorAll('.map a.c').forEach(function(c){
             out.push({status: c.className.match(/st-(\\w+)/)[1],
                       css: getComputedStyle(c).backgroundColor}); });
           document.querySelectorAll('#overview tbody tr').forEach(function(tr){
             var status = tr.querySelector('td[data-k=status]').textContent;
             tr.querySelectorAll('td').forEach(function(td){
               out.push({status: status, css: getComputedStyle(td).color}); }); });
           return out;"""
    )

    def grey(css: str) -> bool:
        rgb = _rgb(css)
        return max(rgb) - min(rgb) <= 40

    assert all(grey(s["css"]) for s in shades if s["status"] in ("ok", "empty"))
    damaged = [_rgb(s["css"]) for s in shades if s["status"] == "damaged"]
    assert damaged and any(r > g + 80 and r > b + 80 for r, g, b in damaged)
    counts = page.execute_script(
        "return Array.from(document.querySelectorAll('#overview td[data-k=findings]'))"
        ".map(function(td){ return td.textContent; });"
    )
    assert counts and not any(re.search(r"\b0 ", c) for c in counts)


MIN_FONT = """
var small = [];
document.querySelectorAll('body *').forEach(function(el){
  var text = Array.from(el.childNodes).some(function(n){
    return n.nodeType === 3 && n.textContent.trim(); });
  if(!text || !el.getClientRects().length || el.closest('title, template')) return;
  var size = parseFloat(getComputedStyle(el).fontSize), svg = el.closest('svg');
  if(svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width)
    size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  small.push([size, el.tagName, el.textContent.slice(0, 40)]);
});
small.sort(function(a, b){ return a[0] - b[0]; });
return small;
"""


def test_no_text_is_smaller_than_11px(page: Any) -> None:
    """Every text on the page as drawn, the plots' labels included (their size times the
    plot's scale), with the first page of detailed sections shown."""
    sizes = page.execute_script(MIN_FONT)
    assert any(tag == "text" for _, tag, _ in sizes)  # the plots' labels are counted
    assert sizes[0][0] >= 11, sizes[:5]


def _boxes(driver: Any, anchor: str, selector: str) -> list[dict[str, float]]:
    return list(
        driver.execute_script(
            """var svg = document.getElementById(arguments[0]).querySelector('svg[data-plot=log]');
               var s = svg.getBoundingClientRect();
               return Array.from(svg.querySelectorAll(arguments[1])).map(function(e){
                 var r = e.getBoundingClientRect();
                 return {x0: (r.left - s.left) / s.width, x1: (r.right - s.left) / s.width,
                         top: r.top, bottom: r.bottom, fill: getComputedStyle(e).fill,
                         text: e.textContent}; });""",
            anchor,
            selector,
        )
    )


def test_the_damaged_partitions_plot_marks_the_bytes_recovery_cuts(page: Any) -> None:
    """On the damaged partition's log plot, drawn: from damaged_from's position in its segment
    to that segment's end in red, every later segment as lost; where, by the model's own
    segment sizes. Its labels overlap neither one another nor the bars."""
    damaged = _one(page, "damaged")
    anchor = damaged["shown"]["anchor"]
    page.find_element("css selector", f"#pages section#{anchor}")
    cut = damaged["partition"]["damaged_from"]
    sizes = [s["size"] for s in damaged["segments"]]
    i = [s["base_offset"] for s in damaged["segments"]].index(cut["segment"])

    def x(byte: float) -> float:
        return (LEFT + byte / sum(sizes) * PLOT) / WIDTH

    (drawn,) = _boxes(page, anchor, "rect.cut")
    assert drawn["x0"] == pytest.approx(x(sum(sizes[:i]) + cut["position"]), abs=0.002)
    assert drawn["x1"] == pytest.approx(x(sum(sizes[: i + 1])), abs=0.002)
    red = _rgb(drawn["fill"])
    assert red[0] > 150 and red[1] < 80 and red[2] < 80
    assert len(_boxes(page, anchor, "rect.seg.lost")) == len(sizes) - i - 1
    labels = _boxes(page, anchor, "text.ann")
    bars = min(b["top"] for b in _boxes(page, anchor, "rect.seg"))
    assert any("recovery cuts here" in t["text"] for t in labels)
    assert all(t["bottom"] <= bars for t in labels)
    texts = _boxes(page, anchor, "text")
    for a, b in [(a, b) for n, a in enumerate(texts) for b in texts[n + 1 :]]:
        apart = a["x1"] <= b["x0"] or b["x1"] <= a["x0"]
        assert apart or a["bottom"] <= b["top"] or b["bottom"] <= a["top"], (a, b)


def test_the_model_in_the_page_is_what_the_page_shows(page: Any) -> None:
    """Issue 26: JSON.parse of the embedded model gives, for a damaged, a warned, a healthy and
    an empty partition, the overview row's cells word for word and the numbers the detailed
    section states (its facts from the opened partition)."""
    for status in ("damaged", "warnings", "ok", "empty"):
        p = _one(page, status)
        shown, facts = p["shown"], p["partition"]
        cells = page.execute_script(
            """var out = {};
               document.querySelector('#overview tr[data-path="' + CSS.escape(arguments[0]) + '"]')
                 .querySelectorAll('td[data-k]').forEach(function(td){
                   out[td.getAttribute('data-k')] = td.textContent; });
               return out;""",
            facts["path"],
        )
        assert cells == {k: str(shown[k]) for k in cells}
        sections = page.find_elements("css selector", f"#pages section#{shown['anchor']}")
        assert len(sections) == (shown["detail"] is not None)
        if sections:
            line = sections[0].find_element("css selector", ".facts").text
            end = facts["log_end_offset"]
            assert f"{facts['segments']} segment(s)" in line
            assert f"offsets {facts['log_start_offset']}..{end - 1}" in line
            assert f"high watermark {facts['high_watermark']}" in line


def test_findings_filter_by_severity(page: Any) -> None:
    def visible(severity: str) -> int:
        rows = page.find_elements("css selector", f"#pages tr[data-severity='{severity}']")
        return sum(r.is_displayed() for r in rows)

    assert visible("warning") > 0 and visible("error") > 0
    box = page.find_element("css selector", "input[data-filter='warning']")
    box.click()
    assert visible("warning") == 0 and visible("error") > 0
    box.click()
    assert visible("warning") > 0


def test_detailed_sections_page_by_clicking(fleet_page: Any, fleet: Path) -> None:
    pages = paginate(
        collect([str(fleet.parent / "logdir")], ReportOptions(now=parse_timestamp(NOW)))
    )
    assert len(pages) == math.ceil(sum(map(len, pages)) / PAGE_SIZE) >= 2
    shown = fleet_page.find_elements("css selector", "#pages section.partition")
    assert [s.get_attribute("data-path") for s in shown] == [p.path for p in pages[0]]
    assert all(s.find_elements("css selector", "svg[data-plot=log]") for s in shown)
    fleet_page.find_element("id", "next").click()
    assert fleet_page.find_element("id", "page-no").text == f"2 / {len(pages)}"
    shown = fleet_page.find_elements("css selector", "#pages section.partition")
    assert [s.get_attribute("data-path") for s in shown] == [p.path for p in pages[1]]
    fleet_page.find_element("id", "prev").click()
    assert fleet_page.find_element("id", "page-no").text == f"1 / {len(pages)}"


def test_the_table_lays_out_its_first_rows_and_sorts_them_all(fleet_page: Any) -> None:
    table = fleet_page.find_element("id", "overview")

    def column(key: str) -> list[int]:
        return list(
            fleet_page.execute_script(
                "return Array.from(document.querySelectorAll('#overview tbody td[data-k=' + "
                "arguments[0] + ']')).map(function(td){ return +td.getAttribute('data-v'); });",
                key,
            )
        )

    assert len(column("size")) == TABLE_ROWS
    heading = table.find_elements("css selector", "th")[2]
    assert heading.text.startswith("size")
    heading.click()
    ascending = column("size")
    assert ascending == sorted(ascending) and len(ascending) == TABLE_ROWS
    smallest = min(p["partition"]["bytes"] for p in _partitions(fleet_page))
    assert ascending[0] == smallest  # from the rows not laid out too
    fleet_page.find_element("id", "show-all").click()
    every = column("size")
    assert len(every) == len(_partitions(fleet_page)) == 130 and every == sorted(every)
    heading.click()
    assert column("size") == sorted(every, reverse=True)


def test_links_open_a_sections_page_or_a_row_not_laid_out(fleet_page: Any) -> None:
    page = fleet_page
    last_row = page.execute_script(
        "var rows = document.getElementById('more-rows').content.querySelectorAll('tr');"
        "return rows[rows.length - 1].getAttribute('data-path');"
    )
    target = next(
        p["shown"]["anchor"] for p in _partitions(page) if p["partition"]["path"] == last_row
    )
    page.find_element("css selector", f".map a[href='#{target}']").click()
    row = _wait_for(page, f"#overview tbody tr#{target}")
    assert row.is_displayed() and row.get_attribute("data-path") == last_row
    last_section = page.execute_script(
        "var s = document.querySelectorAll('template.page'); s = s[s.length - 1].content"
        ".querySelectorAll('section'); return s[s.length - 1].id;"
    )
    page.find_element("css selector", f".map a[href='#{last_section}']").click()
    _wait_for(page, f"#pages section#{last_section}")
    pages = len(page.find_elements("css selector", "template.page"))
    assert page.find_element("id", "page-no").text == f"{pages} / {pages}"


def test_screenshot_of_the_damaged_partition(page: Any) -> None:
    """The damaged partition's section as drawn (docs/report.md's picture): not blank, and the
    bytes recovery cuts in red."""
    from PIL import Image

    anchor = _one(page, "damaged")["shown"]["anchor"]
    box = page.execute_script(
        """var s = document.getElementById(arguments[0]);
           var top = document.querySelector('.controls').offsetHeight;
           window.scrollTo(0, s.getBoundingClientRect().top + window.scrollY - top);
           var r = s.getBoundingClientRect(), end = s.querySelector('table.findings');
           return [r.left, r.top, r.right, end.getBoundingClientRect().bottom];""",
        anchor,
    )
    png = page.get_screenshot_as_png()
    image = Image.open(io.BytesIO(png)).convert("RGB")
    scale = image.size[0] / page.execute_script("return window.innerWidth")
    top, bottom = (round(v * scale) for v in box[1::2])
    image = image.crop((0, max(top - 8, 0), image.size[0], min(bottom + 8, image.size[1])))
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, bars, lines: not one flat colour
    assert any(c[0] > 180 and c[1] < 60 and c[2] < 60 for _, c in colours)  # the cut
    if os.environ.get("KDUMP_UPDATE_SCREENSHOT") == "1":
        image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(
            DOCS / "report.png", optimize=True
        )


def test_names_run_nothing_and_only_kdumps_script_runs(browser: Any, tmp_path: Path) -> None:
    """Issue 39 point 2: a log dir, topic and cluster id holding markup (tests/hostile/names.py:
    ``"><script>alert(1)</script>``...) in the report of the log dir and in the fleet page of its
    verify result: no dialog opens, kdump's own script runs under the page's
    Content-Security-Policy, and a script put into the page afterwards does not."""
    from hostile.names import hostile_log_dir
    from selenium.common.exceptions import NoAlertPresentException

    log_dir = hostile_log_dir(tmp_path)
    results = tmp_path / "results"
    results.mkdir()
    assert run_kdump(["verify", str(log_dir), "-o", f"{results}/"]).exit_code == 2
    pages = []
    for sources, name in (([log_dir], "report.html"), ([results], "fleet.html")):
        out = tmp_path / name
        assert run_kdump(["report", *map(str, sources), "-o", str(out)]).exit_code == 2
        pages.append(out)
    for page in pages:
        _open(browser, page)
        with pytest.raises(NoAlertPresentException):
            _ = browser.switch_to.alert.text
        assert browser.title.startswith("kdump")
        injected = page.with_name(f"injected-{page.name}")
        injected.write_text(
            page.read_text().replace("<body>", "<body><script>document.title='ran'</script>", 1)
        )
        _open(browser, injected)  # kdump's script ran: data-ready
        assert browser.title != "ran"
        refused = [e["message"] for e in browser.get_log("browser")]
        assert any("Content Security Policy" in m for m in refused), refused
