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
from collections import defaultdict
from functools import partial
from pathlib import Path

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
    incremental(args, [None] if args.baseline is None else [None, args.baseline])
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


def incremental(args: argparse.Namespace, trees: list[Path | None]) -> None:
    """(d), with the kdump of each tree (None: this checkout's), the trees taking turns run by
    run (a shared machine's load then weighs on each alike); medians, and minimums."""
    small = partition(args.size_mib, 32, 16 * 1024)
    logs = logs_of(small)
    tiny = partition(1, 1, 16 * 1024)
    took: dict[tuple[Path | None, str], list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as scratch:
        state, prom = Path(scratch) / "state.json", Path(scratch) / "verify.prom"
        rate = ("--max-io-rate", f"{args.rate_mib}MiB/s")
        cron = ("-q", "--nice", *rate, "--budget", "2h", "--state", state, "--prom", prom)
        for i in range(args.runs):
            for tree in trees[i % len(trees) :] + trees[: i % len(trees)]:
                run = partial(kdump, tree=tree)
                for name, flags in (("", ("-q", "--state", state)), ("cron", cron)):
                    state.unlink(missing_ok=True)
                    drop(logs)
                    took[tree, name + "first"].append(run("verify", small, *flags))
                    drop(logs)
                    took[tree, name + "second"].append(run("verify", small, *flags))
                drop(logs)  # the active segment only: no re-read due
                floor = ("-q", "--state", state, "--recheck-fraction", "0")
                took[tree, "floor"].append(run("verify", small, *floor))
                took[tree, "start"].append(run("verify", tiny, "-q"))
                took[tree, "version"].append(run("--version"))
    for tree in trees:
        report(args, len(logs), tree, {k: v for (t, k), v in took.items() if t == tree})


def report(
    args: argparse.Namespace, segments: int, tree: Path | None, took: dict[str, list[float]]
) -> None:
    if tree is not None:
        print(f"    the same with the kdump of {tree}:")
    for pick, label in ((statistics.median, "medians"), (min, "minimums")):
        first, second, floor, start, cron_first, cron_second, version = (
            pick(took[k])
            for k in ("first", "second", "floor", "start", "cronfirst", "cronsecond", "version")
        )
        print(
            f"(d) --state, {segments} segments ({label} of {args.runs}): second run "
            f"{second:.3f} s, first {first:.3f} s: ratio {second / first:.3f} (target <= 0.1); "
            f"less kdump's start-up ({start:.3f} s, verify of a 1 MiB partition): "
            f"{(second - start) / (first - start):.3f}"
        )
        print(
            f"    with --recheck-fraction 0 (the active segment only): {floor:.3f} s, ratio "
            f"{floor / first:.3f}, less start-up {(floor - start) / (first - start):.3f}"
        )
        print(
            f"    the README's cron line (--nice --max-io-rate {args.rate_mib}MiB/s --budget 2h "
            f"--state --prom): second run {cron_second:.3f} s, first {cron_first:.3f} s: ratio "
            f"{cron_second / cron_first:.3f} (target <= 0.1)"
        )
        print(f"    kdump --version: {version:.3f} s")


if __name__ == "__main__":
    sys.exit(main())
