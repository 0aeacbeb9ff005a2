"""`kdump report` against `kdump verify` of the same log dir, both as child processes: the report
walks every segment once, as verify does (issue 26's target: at most 1.3x verify's time).

Builds (or reuses) ``bench/out/report-N/logdir`` as bench/bench_report.py does: N partitions
hard-linked from the oracle fixtures, every tenth a copy of the corrupt ``txn-0``. Runs the two
commands alternately, ``--runs`` rounds, and prints each one's best and median wall time, the CPU
time (user + system) the children used, and the ratios with the verdict. Run from the repository
root with nothing else running (the ratio of wall times is the target):

    .venv/bin/python bench/bench_report_ratio.py --partitions 2000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_report import build  # noqa: E402

LIMIT = 1.3
KDUMP = str(ROOT / ".venv" / "bin" / "kdump")


def timed(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the child's user + system) of one run of ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    log_dir = build(args.partitions)
    out = Path(tempfile.mkdtemp()) / "report.html"
    commands = {
        "verify": [KDUMP, "verify", str(log_dir), "-q"],
        "report": [KDUMP, "report", str(log_dir), "-o", str(out), "-q"],
    }
    timed(commands["verify"])  # the page cache warmed the same way for both
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    for _ in range(args.runs):
        for name, cmd in commands.items():
            wall, cpu = timed(cmd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    print(f"{args.partitions} partitions, {args.runs} rounds, {os.cpu_count()} CPUs")
    for name in commands:
        w, c = walls[name], cpus[name]
        print(
            f"  {name:<7} wall best {min(w):.2f} s, median {statistics.median(w):.2f} s; "
            f"CPU median {statistics.median(c):.2f} s"
        )
    ratio = min(walls["report"]) / min(walls["verify"])
    medians = statistics.median(walls["report"]) / statistics.median(walls["verify"])
    rounds = [r / v for r, v in zip(walls["report"], walls["verify"], strict=True)]
    verdict = "met" if ratio <= LIMIT else "NOT met"
    print(
        f"report / verify: {ratio:.2f} (best), {medians:.2f} (medians), rounds "
        f"{min(rounds):.2f}..{max(rounds):.2f}; limit {LIMIT}: {verdict}"
    )


if __name__ == "__main__":
    main()
