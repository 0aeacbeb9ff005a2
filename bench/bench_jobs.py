"""``--jobs 1`` against ``--jobs 2``, every command that forks or threads, small and large batches.

Issue 33: parallel work must be faster than one process on every command, or not be the default.
Builds (once) a log dir under bench/out/ with one partition per batch shape: 127-byte batches
(one record each, what a busy producer with linger.ms=0 writes), 1 KiB and 16 KiB batches
(bench_verify.build_partition: v2, uncompressed, the indexes Kafka's recovery writes), and a
partition of Kafka-written oracle logs in every codec (bench_spark.build_log_dir: gzip, lz4,
transactions). Then runs each command as a child process with ``--jobs 1`` and ``--jobs 2``,
alternately, best of ``--runs``, and prints wall time, CPU time (user + system, the process and
its workers) and the ratios (jobs 1 / jobs 2: above 1, two are faster). The 1-minute load
average is printed beside each row: on a shared machine the wall ratio means something only
when the load is below 1 (``--jobs 2`` needs two idle CPUs; the CPU time does not).

    .venv/bin/python bench/bench_jobs.py                       # ~600 MiB of bench/out/
    .venv/bin/python bench/bench_jobs.py --mib 32 --runs 1     # a quick look
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench_dump import OUT
from bench_spark import build_log_dir
from bench_verify import build_partition

KDUMP = str(Path(sys.executable).with_name("kdump"))
SHAPES = {"127b": 127, "1k": 1024, "16k": 16 * 1024}


def log_dir(mib: int, segment_mib: int) -> Path:
    """The bench's log dir (built on first use): one partition per shape."""
    root = OUT / f"jobs-{mib}m" / "kafka-logs"
    if root.exists():
        return root
    tmp = root.with_name("kafka-logs.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "meta.properties").write_text("version=1\nbroker.id=0\n")
    for name, batch_bytes in SHAPES.items():
        build_partition(tmp / f"batches{name}-0", mib, segment_mib, batch_bytes)
    codecs = build_log_dir(f"jobs-codecs-{mib}m", 1, max(1, mib // segment_mib), segment_mib * 1024)
    shutil.copytree(codecs / "bench-0", tmp / "codecs-0", copy_function=os.link)
    tmp.rename(root)
    return root


def child(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``kdump`` child (its workers' CPU included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([KDUMP, *args, "-q"], stdout=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 2):
        sys.exit(f"kdump {' '.join(args)}: exit {done.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare(label: str, args: list[str], runs: int) -> None:
    best: dict[int, tuple[float, float]] = {}
    for _ in range(runs):
        for jobs in (1, 2):
            wall, cpu = child([*args, "--jobs", str(jobs)])
            old = best.get(jobs, (float("inf"), float("inf")))
            best[jobs] = (min(old[0], wall), min(old[1], cpu))
    (w1, c1), (w2, c2) = best[1], best[2]
    print(
        f"  {label:<40} wall {w1:6.2f} / {w2:6.2f} s = {w1 / w2:4.2f}   "
        f"cpu {c1:6.2f} / {c2:6.2f} s = {c1 / c2:4.2f}   (load {os.getloadavg()[0]:.1f})",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128, help="MiB of .log per partition (128)")
    parser.add_argument("--segment-mib", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = log_dir(args.mib, args.segment_mib)
    print(f"{os.cpu_count()} CPUs; {root}: jobs 1 / jobs 2, best of {args.runs}")
    for part in sorted(root.iterdir()):
        if not part.is_dir():
            continue
        name = part.name.removesuffix("-0")
        print(part.name)
        compare(f"dump {name}", ["dump", str(part)], args.runs)
        compare(f"dump {name} --deep-iteration", ["dump", str(part), "--deep-iteration"], args.runs)
        compare(
            f"dump {name} --deep-iteration --format jsonl",
            ["dump", str(part), "--deep-iteration", "--format", "jsonl"],
            args.runs,
        )
    print("the log dir")
    compare("verify", ["verify", str(root)], args.runs)
    compare("verify --deep", ["verify", "--deep", str(root)], args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
