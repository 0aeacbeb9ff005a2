"""kdump report on many partitions: time to collect and render (render as a share of collect),
the file's size (and the embedded model's), and how long Debian's chromium takes to paint the
first screen (the verdict and the fleet map), to finish opening it (the script done, the first
page of detailed sections drawn), to show the next page and to sort the table of every
partition.

Builds ``bench/out/report-N/logdir`` once: N partition directories hard-linked from the oracle
fixtures (every tenth a copy of the corrupt ``txn-0`` with a CRC error, so the page has errors
to put first). Run from the repository root:

    .venv/bin/python bench/bench_report.py --partitions 2000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kdump.report import ReportOptions, collect, render_html  # noqa: E402

SOURCES = ["plain-0", "gzip-0", "lz4-0", "legacyv1-0", "variety-0", "activeprealloc-0"]


def build(n: int) -> Path:
    log_dir = ROOT / "bench" / "out" / f"report-{n}" / "logdir"
    if log_dir.exists() and len(os.listdir(log_dir)) == n:
        return log_dir
    shutil.rmtree(log_dir, ignore_errors=True)
    log_dir.mkdir(parents=True)
    oracle, corrupt = ROOT / "fixtures" / "oracle", ROOT / "fixtures" / "corrupt"
    for i in range(n):
        source = (
            corrupt / "log-crc-mismatch" / "txn-0"
            if i % 10 == 0
            else oracle / SOURCES[i % len(SOURCES)]
        )
        shutil.copytree(source, log_dir / f"topic{i % 50}-{i}", copy_function=os.link)
    return log_dir


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's headless chromium through its chromedriver (as tests/test_report_browser.py),
    with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
        "--disable-background-networking --disable-component-update --disable-sync "
        f"--window-size=1280,1600 --user-data-dir={profile}"
    ).split():
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def browse(html: Path) -> dict[str, float]:
    """Seconds: first paint, ready, next page, a sort of the table; and the plots drawn."""
    with chromium() as driver:
        start = time.perf_counter()
        driver.get(html.as_uri())
        driver.find_element("css selector", "body[data-ready='1']")
        ready = time.perf_counter() - start
        painted = driver.execute_script(
            "var p = performance.getEntriesByName('first-contentful-paint')[0];"
            "return p ? p.startTime / 1000 : -1;"
        )
        plots = driver.execute_script("return document.querySelectorAll('#pages svg').length")
        start = time.perf_counter()
        driver.find_element("id", "next").click()
        driver.execute_script("return document.body.offsetHeight")
        paged = time.perf_counter() - start
        start = time.perf_counter()
        driver.execute_script(
            "document.querySelectorAll('#overview th')[2].click();return document.body.offsetHeight"
        )
        sorted_in = time.perf_counter() - start
        return {
            "painted": painted,
            "ready": ready,
            "plots": plots,
            "paged": paged,
            "sorted": sorted_in,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=2000)
    n = parser.parse_args().partitions
    log_dir = build(n)
    now = int(time.time() * 1000)
    start = time.perf_counter()
    model = collect([str(log_dir)], ReportOptions(now=now))
    collected = time.perf_counter() - start
    out = log_dir.parent / "report.html"
    start = time.perf_counter()
    with open(out, "w", encoding="utf-8") as f:
        for piece in render_html(model, [str(log_dir)]):
            f.write(piece)
    rendered = time.perf_counter() - start
    seen = browse(out)
    text = out.read_text(encoding="utf-8")
    embedded = text[text.index('id="kdump-model">') :].split("</script>", 1)[0]
    print(f"partitions: {n}, segments: {sum(len(p.segments) for p in model.partitions)}")
    print(
        f"collect (verify + explain + txn): {collected:.2f} s; render: {rendered:.2f} s "
        f"({rendered / collected:.1%} of collect)"
    )
    print(
        f"report.html: {out.stat().st_size / 1e6:.1f} MB, the model's JSON "
        f"{len(embedded) / 1e6:.1f} MB"
    )
    print(
        f"chromium: first screen painted at {seen['painted']:.2f} s, ready (first page's "
        f"{seen['plots']:.0f} plots drawn) in {seen['ready']:.2f} s; next page drawn in "
        f"{seen['paged']:.2f} s; the table sorted in {seen['sorted']:.2f} s"
    )


if __name__ == "__main__":
    main()
