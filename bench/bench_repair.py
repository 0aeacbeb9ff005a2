"""kdump rebuild-index on a large segment: its time as a ratio to kdump verify of the same
segment (target <= 1.2), and its peak memory, which must not grow with the segment.

Builds (once) .log files of 16 KiB magic v2 batches under bench/out/ (git-ignored) with
bench_dump.py's builder, gives each its rebuilt indexes (a complete segment, as verify sees
one), then measures:

(a) the CPU time (user + system, from the child's rusage: steady on a shared machine, where
    wall time is not) and the wall time of ``kdump rebuild-index --output-dir`` (plan, write,
    fsync, rename, verify's index checks of the new files) against ``kdump verify`` of the
    segment, each the best of --runs child processes; then the same two in-process
    (``recover_segment`` alone and ``verify_segment``), without interpreter start-up;
(b) the peak RSS of the rebuild-index child on the big segment and on a small one (flat: the
    walk unmaps the log pages it has passed), with verify's for comparison. The children are
    started before this process maps anything large, as Linux carries a parent's RSS high-water
    mark into a child's ru_maxrss.

Run from the repository root::

    .venv/bin/python bench/bench_repair.py                 # 1 GiB segment
    .venv/bin/python bench/bench_repair.py --size-mib 256  # quicker
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dump import build_segment

from kdump.checks.options import VerifyOptions
from kdump.checks.segment import check_segment
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.segment import local_segment
from kdump.storage.local import map_file

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
KDUMP = [sys.executable, "-m", "kdump"]


def segment_dir(size_mib: int, batch_kib: int) -> Path:
    """bench/out/repair-<size>m-<batch>k/: one segment with Kafka's rebuilt indexes."""
    d = OUT / f"repair-{size_mib}m-{batch_kib}k"
    log = d / "00000000000000000000.log"
    if not (d / "00000000000000000000.index").exists():
        d.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        batches, records = build_segment(log, size_mib, batch_kib)
        print(f"built {log.relative_to(REPO)}: {batches} batches, {records} records in "
              f"{time.perf_counter() - start:.1f} s")  # fmt: skip
        run(["rebuild-index", "--no-backup", str(d)])
    return d


class Ran(NamedTuple):
    cpu: float
    """user + system seconds"""
    wall: float
    rss: float
    """peak resident set, MiB"""


def run(args: list[str]) -> Ran:
    """CPU time, wall time and peak RSS of one ``kdump ARGS`` child process."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen([*KDUMP, *args], stdout=devnull, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"kdump {' '.join(args)} exited {code}")
    return Ran(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024)  # KiB on Linux


def best(runs: int, fn: Callable[[], Ran]) -> Ran:
    """Least CPU and wall time, largest peak RSS, over ``runs`` calls."""
    got = [fn() for _ in range(runs)]
    return Ran(min(r.cpu for r in got), min(r.wall for r in got), max(r.rss for r in got))


def rebuild_child(d: Path, scratch: Path) -> Ran:
    shutil.rmtree(scratch, ignore_errors=True)
    return run(["rebuild-index", "--output-dir", str(scratch), str(d)])


def in_process(runs: int, d: Path) -> tuple[float, float]:
    seg = local_segment(d, 0, True)
    buf = map_file(seg.log_path)
    config, options = IndexConfig(), VerifyOptions()

    def timed(fn: Callable[[], object]) -> float:
        out = float("inf")
        for _ in range(runs):
            gc.collect()
            start = time.perf_counter()
            fn()
            out = min(out, time.perf_counter() - start)
        return out

    t_rebuild = timed(lambda: recover_segment(buf, 0, str(seg.log_path), config))
    t_verify = timed(lambda: check_segment(seg, options))
    return t_rebuild, t_verify


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="big segment (default 1024)")
    parser.add_argument("--small-mib", type=int, default=64, help="small segment (default 64)")
    parser.add_argument("--batch-kib", type=int, default=16, help="batch size (default 16)")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (best)")
    args = parser.parse_args()

    big = segment_dir(args.size_mib, args.batch_kib)
    small = segment_dir(args.small_mib, args.batch_kib)
    scratch = OUT / "repair-scratch"
    size = (big / "00000000000000000000.log").stat().st_size
    python = sys.version.split()[0]
    print(f"segment: {big.relative_to(REPO)}, {size / 2**20:.0f} MiB, Python {python}")
    run(["verify", str(big)])  # page the log in before any timing

    verify = best(args.runs, lambda: run(["verify", str(big)]))
    rebuild = best(args.runs, lambda: rebuild_child(big, scratch))
    small_rebuild = best(args.runs, lambda: rebuild_child(small, scratch))
    small_verify = best(1, lambda: run(["verify", str(small)]))
    shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n(a) time of a child process (best of {args.runs})   cpu s   wall s")
    print(f"  kdump verify                       {verify.cpu:6.2f}   {verify.wall:6.2f}")
    print(f"  kdump rebuild-index --output-dir   {rebuild.cpu:6.2f}   {rebuild.wall:6.2f}")
    print(f"  ratio rebuild / verify             {rebuild.cpu / verify.cpu:6.2f}   "
          f"{rebuild.wall / verify.wall:6.2f}   (target <= 1.2)")  # fmt: skip
    print("\n(b) peak RSS of the child process")
    print(f"  rebuild-index, {args.small_mib:5d} MiB segment   {small_rebuild.rss:7.0f} MiB")
    print(f"  rebuild-index, {args.size_mib:5d} MiB segment   {rebuild.rss:7.0f} MiB   "
          f"(growth {rebuild.rss - small_rebuild.rss:+.0f} MiB)")  # fmt: skip
    print(f"  verify,        {args.small_mib:5d} MiB segment   {small_verify.rss:7.0f} MiB")
    print(f"  verify,        {args.size_mib:5d} MiB segment   {verify.rss:7.0f} MiB")

    r_lib, v_lib = in_process(args.runs, big)
    print(f"\n(c) in-process, best of {args.runs}: recover_segment {r_lib:.2f} s, "
          f"verify_segment {v_lib:.2f} s, ratio {r_lib / v_lib:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
