"""Peak RSS of kdump on each hostile input of tests/hostile/cases.py (issue 27), against its bound.

Every case runs as a child (``tests/hostile/runner.py``: started from a small launcher, under an
address-space cap so an unbounded decoder fails instead of taking the machine down) and prints
its peak RSS (``ru_maxrss``) as a ratio to the bound: 2 x --max-batch-bytes + 100 MB where
records are decoded, 100 MB for a manifest. At the review's sizes (the default) no bound option
is given, so the bound is of the 256 MiB default.

Run from the repository root::

    .venv/bin/python bench/bench_hostile.py                      # the review's sizes, ~3 min
    .venv/bin/python bench/bench_hostile.py --scale suite        # the test suite's sizes
    .venv/bin/python bench/bench_hostile.py --kdump-tree /tmp/old --cap-gib 6   # a baseline

The inputs are built under bench/out/hostile/ (a few MB: they are bombs).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from hostile.cases import CASES, MB, Case  # noqa: E402
from hostile.runner import run_capped  # noqa: E402

OUT = REPO / "bench" / "out" / "hostile"


def run(case: Case, scale: str, cap: int, tree: str | None) -> str:
    work = OUT / case.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    suite = scale == "suite"
    ran = run_capped(case.args(work, suite), cap, kdump_tree=tree, environment=case.environment)
    limit = case.limit(suite)
    first = next((line for line in ran.stderr.splitlines() if line.strip()), "")
    shutil.rmtree(work / "out", ignore_errors=True)
    return (
        f"{case.name:<17} {ran.peak_rss / MB:8.0f} MB / {limit / MB:5.0f} MB = "
        f"{ran.peak_rss / limit:5.2f}  exit {ran.code:>3}  {ran.seconds:6.1f} s  "
        f"out {ran.stdout_bytes / MB:8.1f} MB  {first[-160:]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=("review", "suite"), default="review")
    parser.add_argument("--cap-gib", type=float, default=6.0, help="address-space cap per child")
    parser.add_argument("--kdump-tree", help="import kdump from this checkout (a baseline)")
    parser.add_argument("--only", nargs="*", help="case names")
    args = parser.parse_args()
    cap = int(args.cap_gib * (1 << 30))
    print(
        f"scale {args.scale}, cap {args.cap_gib} GiB of address space per child; peak RSS / "
        "bound (2 x --max-batch-bytes + 100 MB; manifests: 100 MB)",
        flush=True,
    )
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        print(run(case, args.scale, cap, args.kdump_tree), flush=True)


if __name__ == "__main__":
    main()
