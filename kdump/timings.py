"""``kdump --version --timings``: start-up as a user gets it, measured here and now, for a bug
report. Each probe is a fresh process, timed from outside (its whole wall time); the probes
take turns, so a burst of load from other processes hits them alike; the medians are printed,
with each ratio to ``python -c "import click"``, the floor of any click program (issue 45: a
verify of a small partition should stay within 1.5x of it)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

RUNS = 5
"""Runs of each probe (the median is shown)."""

_KDUMP = "import sys; from kdump.cli import main; sys.argv[0] = 'kdump'; main()"
"""What the ``kdump`` script runs, in a child of this interpreter."""

PROBES = (
    ("python", ["-c", "pass"]),
    ("python, import click", ["-c", "import click"]),
    ("kdump --version", ["-c", _KDUMP, "--version"]),
    ("kdump verify's modules loaded", ["-c", "import kdump.cli, kdump.commands.verify"]),
    ("kdump --files X.index's modules loaded", [
        "-c", "import kdump.cli, kdump.commands.dump, kdump.render.dump_index",
    ]),
)  # fmt: skip
"""What is measured: the interpreter, click, kdump's command line, and the modules verify and
an index's dump load (without reading any file: the start-up alone)."""


def _wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - start


def measure(runs: int = RUNS) -> dict[str, float]:
    """Each probe's median wall time in seconds, the probes taking turns run by run."""
    times: dict[str, list[float]] = {name: [] for name, _ in PROBES}
    for _ in range(runs):
        for name, args in PROBES:
            times[name].append(_wall(args))
    return {name: statistics.median(found) for name, found in times.items()}


def lines(runs: int | None = None) -> Iterator[str]:
    """The report: each probe's median and its ratio to ``import click`` (``RUNS`` runs)."""
    runs = RUNS if runs is None else runs
    found = measure(runs)
    click = found["python, import click"]
    yield f"start-up, median of {runs} runs each (wall, milliseconds; ratio to import click):"
    for name, seconds in found.items():
        yield f"  {name}: {seconds * 1000:.1f} ms ({seconds / click:.2f}x)"


__all__ = ["PROBES", "RUNS", "lines", "measure"]
