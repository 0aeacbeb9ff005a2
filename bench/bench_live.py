"""kdump verify beside a live broker (issue 30): what it leaves in the page cache, what that
costs, the read rate it keeps, and what a second run of an incremental audit costs.

On a 1 GiB partition (bench_verify.py's: 4 segments of 256 MiB, 16 KiB batches, with indexes)
whose first half another process has read (the broker's hot pages) and whose second half is not
cached, each figure from ``kdump verify`` run as a child process, as cron runs it:

(a) residency after ``kdump verify``: the share of the pages cached before that still are
    (target >= 99%), the share of the others that now are (target <= 2%); and after
    ``--keep-cache`` (today's verify) for comparison;
(b) wall time of ``kdump verify`` as a ratio to ``kdump verify --keep-cache`` from the same
    state, the median of ``--runs`` alternating pairs (target <= 1.10);
(c) ``--max-io-rate 200MiB/s``: wall time against size / rate (target: not below it);
(d) ``--state``: a second run over an unchanged 1 GiB partition of 32 MiB segments (as a
    broker with segment.bytes=32MiB leaves it: one active segment, the rest closed), from a
    cold cache, as a ratio to the first (target <= 0.1). The active segment and the share due
    a re-read (1/30 of the closed ones, carried from run to run) are read every run.

Residency is read with mincore(2) from this process (kdump.storage.reading.residency):
it needs a filesystem whose pages can be dropped (ext4, xfs; not tmpfs), and a reader that may
see them (the files' owner, or root).

Each kdump run's byte code is compiled first (as ``pip install`` leaves it): with
PYTHONDONTWRITEBYTECODE set, every run would compile kdump again, ~0.2 s of a second run.

    .venv/bin/python bench/bench_live.py                 # 1 GiB; about 1.1 GiB of bench/out/
    .venv/bin/python bench/bench_live.py --size-mib 256 --runs 3
    .venv/bin/python bench/bench_live.py --only-state --baseline /tmp/old   # (d) only, against
        # another kdump tree (git worktree or archive with its C module built), in the same run
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench_verify import MIB, logs_of, partition

from kdump.storage.reading import PAGE, residency


def drop(logs: list[Path]) -> None:
    """Every page of the files out of the page cache (read-ahead in flight included)."""
    for _ in range(20):
        for log in logs:
            fd = os.open(log, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        if not any(sum(snapshot(log)) for log in logs):
            return
        time.sleep(0.05)
    raise SystemExit("the page cache keeps these files: tmpfs or overlay? (see the docstring)")


def snapshot(log: Path) -> bytes:
    found = residency(log)
    if found is None:
        raise SystemExit(f"{log}: mincore cannot see this file's page cache (not its owner)")
    return found


def warm_first_half(logs: list[Path]) -> dict[Path, bytes]:
    """Another process reads the first half of the partition's bytes (no read-ahead, which can
    land past the half after the read returns); the pages each file then has cached."""
    drop(logs)
    half = sum(log.stat().st_size for log in logs) // 2
    reader = (
        "import os, sys\n"
        "left = int(sys.argv[1])\n"
        "for name in sys.argv[2:]:\n"
        "    fd = os.open(name, os.O_RDONLY)\n"
        "    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)\n"
        "    at = 0\n"
        "    while left > 0 and (n := len(os.pread(fd, min(8 << 20, left), at))):\n"
        "        at += n; left -= n\n"
        "    os.close(fd)\n"
    )
    subprocess.run([sys.executable, "-c", reader, str(half), *map(str, logs)], check=True)
    time.sleep(0.2)
    return {log: snapshot(log) for log in logs}


def shares(before: dict[Path, bytes]) -> tuple[float, float]:
    """Of the pages cached before, the share still cached; of the others, the share now cached."""
    kept = was = added = was_not = 0
    for log, old in before.items():
        new = snapshot(log)
        for b, a in zip(old, new, strict=True):
            if b:
                was, kept = was + 1, kept + a
            else:
                was_not, added = was_not + 1, added + a
    return kept / max(1, was), added / max(1, was_not)


def compiled(tree: Path) -> None:
    """The byte code of the kdump package in ``tree`` written (what an install leaves)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(tree / "kdump")],
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )


def kdump(*args: str | Path, tree: Path | None = None) -> float:
    """Wall seconds of one ``kdump`` child (the kdump of ``tree``: this checkout's by default)."""
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kdump", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tree,  # python -m puts the working directory first on sys.path
    )
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"kdump {' '.join(map(str, args))}: {done.stderr.strip()}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rate-mib", type=int, default=200)
    parser.add_argument("--only-state", action="store_true", help="(d) only")
    parser.add_argument(
        "--baseline", type=Path, help="another kdump tree whose (d) is measured alongside"
    )
    args = parser.parse_args()
    compiled(Path(__file__).resolve().parent.parent)
    if args.baseline is not None:
        compiled(args.baseline)
    if not args.only_state:
        cache_and_rate(args)
    incremental(args, None)
    if args.baseline is not None:
        incremental(args, args.baseline)
    return 0


def cache_and_rate(args: argparse.Namespace) -> None:
    """(a), (b), (c)."""
    part = partition(args.size_mib, min(256, args.size_mib), 16 * 1024)
    logs = logs_of(part)
    size = sum(log.stat().st_size for log in logs)
    print(f"partition {part}: {size / MIB:.0f} MiB in {len(logs)} segments, {PAGE}-byte pages")

    before = warm_first_half(logs)
    kdump("verify", part, "-q")
    kept, added = shares(before)
    print(f"(a) after verify:              cached before and kept {kept:7.2%} (target >= 99%)")
    print(f"                               not cached before, now {added:7.2%} (target <= 2%)")
    before = warm_first_half(logs)
    kdump("verify", part, "-q", "--keep-cache")
    kept, added = shares(before)
    print(f"    after verify --keep-cache: cached before and kept {kept:7.2%}")
    print(f"                               not cached before, now {added:7.2%}")

    ratios = []
    for i in range(args.runs):
        took = {}
        for extra in [(), ("--keep-cache",)][:: 1 if i % 2 else -1]:  # each first in turn
            warm_first_half(logs)
            took[extra] = kdump("verify", part, "-q", *extra)
        ratios.append(took[()] / took[("--keep-cache",)])
    print(
        f"(b) verify / verify --keep-cache, wall time: median {statistics.median(ratios):.3f} "
        f"of {args.runs} pairs (min {min(ratios):.3f}, max {max(ratios):.3f}; target <= 1.10)"
    )

    warm_first_half(logs)
    rate = args.rate_mib * MIB
    took = kdump("verify", part, "-q", "--max-io-rate", f"{args.rate_mib}MiB/s")
    print(
        f"(c) --max-io-rate {args.rate_mib}MiB/s: {took:.2f} s for {size / MIB:.0f} MiB, "
        f"{took / (size / rate):.3f} x size / rate (target >= 1)"
    )


def incremental(args: argparse.Namespace, tree: Path | None) -> None:
    """(d), with the kdump of ``tree`` (None: this checkout's)."""
    run = partial(kdump, tree=tree)
    if tree is not None:
        print(f"    the same with the kdump of {tree}:")

    small = partition(args.size_mib, 32, 16 * 1024)
    small_logs = logs_of(small)
    tiny = partition(1, 1, 16 * 1024)
    firsts, seconds, floors, starts = [], [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch) / "state.json"
        for _ in range(args.runs):
            state.unlink(missing_ok=True)
            drop(small_logs)
            firsts.append(run("verify", small, "-q", "--state", state))
            drop(small_logs)
            seconds.append(run("verify", small, "-q", "--state", state))
            drop(small_logs)  # the active segment only: no re-read due
            floors.append(run("verify", small, "-q", "--state", state, "--recheck-fraction", "0"))
            starts.append(run("verify", tiny, "-q"))
    first, second, floor, start = map(statistics.median, (firsts, seconds, floors, starts))
    print(
        f"(d) --state, {len(small_logs)} segments: second run {second:.2f} s, first {first:.2f} s "
        f"(medians of {args.runs}): ratio {second / first:.3f} (target <= 0.1); less kdump's "
        f"start-up ({start:.2f} s, verify of a 1 MiB partition): "
        f"{(second - start) / (first - start):.3f}"
    )
    print(
        f"    with --recheck-fraction 0 (the active segment only): {floor:.2f} s, ratio "
        f"{floor / first:.3f}, less start-up {(floor - start) / (first - start):.3f}"
    )
    cron(args, small, small_logs, run)
    versions = [run("--version") for _ in range(args.runs)]
    print(f"    kdump --version: {statistics.median(versions):.3f} s (median of {args.runs})")


def cron(args: argparse.Namespace, small: Path, logs: list[Path], run: Any) -> None:
    """(d) as the README's cron line runs it: --max-io-rate, --budget, --prom and --nice too.
    The rate bounds both runs by the bytes they read, so start-up weighs less than above."""
    firsts, seconds = [], []
    with tempfile.TemporaryDirectory() as scratch:
        state, prom = Path(scratch) / "state.json", Path(scratch) / "verify.prom"
        flags = ("-q", "--nice", "--max-io-rate", f"{args.rate_mib}MiB/s", "--budget", "2h")
        flags += ("--state", str(state), "--prom", str(prom))
        for _ in range(args.runs):
            state.unlink(missing_ok=True)
            drop(logs)
            firsts.append(run("verify", small, *flags))
            drop(logs)
            seconds.append(run("verify", small, *flags))
    first, second = statistics.median(firsts), statistics.median(seconds)
    print(
        f"    the README's cron line (--nice --max-io-rate {args.rate_mib}MiB/s --budget 2h "
        f"--state --prom): second run {second:.2f} s, first {first:.2f} s: ratio "
        f"{second / first:.3f} (target <= 0.1)"
    )


if __name__ == "__main__":
    sys.exit(main())
