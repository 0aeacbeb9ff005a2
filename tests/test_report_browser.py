"""`kdump report` as a person sees it: the page opened from disk in a real headless browser
(Debian's chromium, driven through its chromedriver by selenium; no browser is downloaded).

Checked: the page loads with no console error and loads nothing from anywhere; the plots are
drawn (four non-empty SVGs per partition with segments, on the page shown and on the next);
paging, the severity filter and sorting work by clicking; the screenshot is not blank. With
KDUMP_UPDATE_SCREENSHOT=1 the screenshot is also saved as docs/report.png (the README's).

Where chromium, chromedriver or selenium are missing the tests skip, naming what is missing
(scripts/ensure-test-system-deps.sh, run by the README's test command, installs them).
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import ORACLE, REALFILES

from kdump.report import PAGE_SIZE, ReportOptions, collect
from kdump.report.html import paginate

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
NOW = "2026-01-01T00:00:00Z"
ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    p.relative_to(ROOT)
    for p in (
        ORACLE,
        ORACLE.parent / "corrupt" / "log-crc-mismatch",
        REALFILES / "Bheem6005__kafka" / "kafka-logs",
    )
]
DOCS = ROOT / "docs"


def _missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.path.exists(path):
            return f"{path} is not installed (scripts/ensure-test-system-deps.sh installs it)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless chromium for the module, with the flags this machine needs (no sandbox as
    root, no background network) and a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="kdump-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1600",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    ran = run_kdump(["report", *map(str, SOURCES), "-o", str(out), "--now", NOW], ROOT)
    assert ran.exit_code == 2, ran.stderr  # the corrupt partition has errors
    return out


@pytest.fixture(scope="module")
def expected_plots() -> list[int]:
    """Plots per page: four for each partition with a segment (the library's own paging)."""
    from kdump.units import parse_timestamp

    paths = [str(ROOT / p) for p in SOURCES]
    model = collect(paths, ReportOptions(now=parse_timestamp(NOW)))
    return [sum(4 for p in page if p.segments) for page in paginate(model)]


@pytest.fixture(scope="module")
def page(browser: Any, report: Path) -> Any:
    browser.get(report.as_uri())
    browser.find_element("css selector", "body[data-ready='1']")
    return browser


def shown_plots(driver: Any) -> list[dict[str, Any]]:
    return list(
        driver.execute_script(
            """return Array.from(document.querySelectorAll('#pages svg.plot')).map(function(s){
                 var r = s.getBoundingClientRect();
                 return {w: r.width, h: r.height, kind: s.getAttribute('data-plot'),
                         marks: s.querySelectorAll('rect,line,circle').length,
                         segments: s.querySelectorAll('rect.seg').length}; });"""
        )
    )


def test_page_loads_with_no_console_error_and_nothing_fetched(page: Any, report: Path) -> None:
    errors = [e for e in page.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    fetched = page.execute_script("return performance.getEntriesByType('resource').length")
    assert fetched == 0
    html = report.read_text()
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert "<script src" not in html and "<link" not in html


def test_plots_are_drawn_on_each_page(page: Any, expected_plots: list[int]) -> None:
    assert len(expected_plots) == 3 and expected_plots[0] > 0  # 60 partitions, 20 a page
    plots = shown_plots(page)
    assert len(plots) == expected_plots[0]
    assert {p["kind"] for p in plots} == {"offsets", "time", "index", "txn"}
    assert all(p["w"] > 100 and p["h"] > 20 and p["marks"] > 0 for p in plots)
    # every partition with segments has one bar per segment on its offset axis
    assert all(p["segments"] > 0 for p in plots if p["kind"] == "offsets")
    page.find_element("id", "next").click()
    assert page.find_element("id", "page-no").text == "2 / 3"
    assert len(shown_plots(page)) == expected_plots[1]
    page.find_element("id", "prev").click()
    assert page.find_element("id", "page-no").text == "1 / 3"


def test_partitions_with_errors_come_first(page: Any) -> None:
    first = page.find_elements("css selector", "#pages section.partition h3")[0].text
    # the CRC error and the two transactions its cut leaves open (tests/test_report.py)
    assert first.startswith("txn-0") and "3 error" in first
    sections = page.find_elements("css selector", "#pages section.partition")
    assert len(sections) == PAGE_SIZE


def test_findings_filter_by_severity(page: Any) -> None:
    def visible(severity: str) -> int:
        rows = page.find_elements("css selector", f"#pages tr[data-severity='{severity}']")
        return sum(r.is_displayed() for r in rows)

    assert visible("info") > 0 and visible("error") > 0
    box = page.find_element("css selector", "input[data-filter='info']")
    box.click()
    assert visible("info") == 0 and visible("error") > 0
    box.click()
    assert visible("info") > 0


def test_tables_sort_by_clicking_a_heading(page: Any) -> None:
    table = page.find_element("css selector", "table.overview")
    heading = table.find_elements("css selector", "th")[4]  # errors
    assert heading.text.startswith("errors")

    def errors_column() -> list[int]:
        cells = table.find_elements("css selector", "tbody tr td:nth-child(5)")
        return [int(c.get_attribute("data-v")) for c in cells]

    heading.click()
    ascending = errors_column()
    assert ascending == sorted(ascending)
    heading.click()
    assert errors_column() == sorted(ascending, reverse=True)


def test_a_link_in_the_overview_opens_its_page(page: Any) -> None:
    link = page.find_elements("css selector", "table.overview a")[-1]
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    page.find_element("css selector", f"#pages section#{target}")
    assert page.find_element("id", "page-no").text == "3 / 3"
    page.find_element("id", "prev").click()
    page.find_element("id", "prev").click()


def test_screenshot_is_not_blank(page: Any) -> None:
    from PIL import Image

    page.execute_script(
        "document.querySelector('#pages section.partition').scrollIntoView();"
        "window.scrollBy(0, -document.querySelector('.controls').offsetHeight - 8);"
    )
    png = page.get_screenshot_as_png()
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size[0] >= 1000
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, bars, lines: not one flat colour
    white = max(count for count, colour in colours if colour == (255, 255, 255))
    assert white < 0.95 * image.size[0] * image.size[1]
    if os.environ.get("KDUMP_UPDATE_SCREENSHOT") == "1":
        small = image.resize((image.size[0] * 2 // 3, image.size[1] * 2 // 3), Image.LANCZOS)
        small.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(
            DOCS / "report.png", optimize=True
        )
