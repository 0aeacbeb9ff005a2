"""Issue 45 point 2: what verify's optional bookkeeping costs on 1 GiB of small batches, each
toggled from the command line, every run the whole command as a child process.

Variants, alternated round by round (page cache warm: each run reads the file the one before
read): the default (the page-cache guard on: what verify reads is dropped behind it); the guard
off (``--keep-cache``); ``--state`` to a fresh file (its bookkeeping of a first run: every
segment verified and remembered); ``--state`` to the file a run before wrote (the nightly
second run: the unchanged closed segments skipped). Start-up (the default on a one-segment
partition) is printed beside and subtracted; costs are per segment and per batch of the
difference from the guard-off run.

    .venv/bin/python bench/bench_overheads.py --runs 7
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_cli import tiny_one_segment
from bench_dump import REPO
from bench_verify import partition

LAUNCH = "import sys; from kdump.cli import main; sys.argv[0] = 'kdump'; sys.exit(main())"


def run(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-P", "-c", LAUNCH, "verify", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    big = partition(1024, 1024, 127)  # 1 GiB in one segment of 127-byte batches
    tiny = tiny_one_segment()
    work = Path(tempfile.mkdtemp(prefix="kdump-overheads-"))
    try:
        kept = work / "kept.json"
        run([f"--state={kept}", str(big)])
        variants = {
            "start-up (one-segment partition)": lambda i: [str(tiny)],
            "guard off (--keep-cache)": lambda i: ["--keep-cache", str(big)],
            "default (page-cache guard on)": lambda i: [str(big)],
            "--state, first run": lambda i: [f"--state={work / f'fresh{i}.json'}", str(big)],
            "--state, unchanged second run": lambda i: [f"--state={kept}", str(big)],
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        for i in range(args.runs):
            for name, argv in variants.items():
                times[name].append(run(argv(i)))
        batches = batch_count(big)
        median = {name: statistics.median(t) for name, t in times.items()}
        base = median["guard off (--keep-cache)"]
        print(f"1 GiB, 1 segment, {batches} batches; medians of {args.runs} runs (best)")
        print("| variant | wall | less start-up | against guard off |")
        print("| --- | --- | --- | --- |")
        for name, t in times.items():
            net = median[name] - median["start-up (one-segment partition)"]
            delta = median[name] - base
            versus = (
                f"{delta * 1e3:+.0f} ms, {delta / batches * 1e9:+.1f} ns/batch"
                if not name.startswith("start-up")
                else ""
            )
            print(f"| {name} | {median[name]:.3f} s ({min(t):.3f}) | {net:.3f} s | {versus} |")
    finally:
        shutil.rmtree(work)


def batch_count(directory: Path) -> int:
    """Batches of the segment, as verify's JSON counts them."""
    import json

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-P", "-c", LAUNCH, "verify", "--format", "json", str(directory)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = json.loads(out)
    return int(_first(found, "batches"))


def _first(value: object, key: str) -> int:
    if isinstance(value, dict):
        if key in value and isinstance(value[key], int):
            return value[key]
        for v in value.values():
            got = _first(v, key)
            if got:
                return got
    if isinstance(value, list):
        for v in value:
            got = _first(v, key)
            if got:
                return got
    return 0


if __name__ == "__main__":
    main()
