"""bench_cli's (c), (d) and (g) against a peer tree: ``kdump verify`` and ``rebuild-index`` of
1 GiB in one segment of 127-byte and of 16 KiB batches, as child processes, this tree and
``--peer`` (another kdump tree, its C module built: e.g. a copy of ``kdump/`` before a change)
alternated round by round with the limit over each file (bench_cli's bare child), so a shared
machine's load moves both trees' figures alike.

Each figure is the least wall time of ``--runs`` rounds less the least start-up (the same
command on a tiny partition, per tree), as a ratio of the limit's least time; beside it the
median of the rounds' own ratios. The load average is printed with the figures; on a loaded
machine the wall times stretch with it, so beside them each command's CPU time (user + system
of the child, its least over the rounds, the tiny partition's subtracted) and the peer's over
this tree's: a before/after that the load moves little.

    .venv/bin/python bench/bench_small_batches.py --peer /tmp/old-tree --page-cache read-back
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys

from bench_cli import KDUMP, OUT, TINY, child, limit_seconds, tiny_one_segment
from bench_verify import logs_of, partition
from pagecache import STATES, prepare

SIZES = {"127-byte": 127, "16 KiB": 16 << 10}
KDUMP.insert(1, "-P")  # the children run in the repository: without -P its kdump comes first


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_with(tree: str | None, args: list[str]) -> tuple[float, float]:
    """Wall and CPU time of ``kdump ARGS`` with ``tree`` first on the import path (None: this
    one)."""
    saved = os.environ.get("PYTHONPATH")
    if tree is not None:
        os.environ["PYTHONPATH"] = tree
    try:
        cpu = _children_cpu()
        wall = child(args, sample=False).wall
        return wall, _children_cpu() - cpu
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", required=True, help="the other tree (holding kdump/)")
    parser.add_argument("--runs", type=int, default=5, help="rounds (least time taken)")
    parser.add_argument("--page-cache", choices=STATES, default="written")
    args = parser.parse_args()
    trees: dict[str, str | None] = {"peer": args.peer, "this": None}
    parts = {name: partition(1024, 1024, size) for name, size in SIZES.items()}
    shares = prepare([logs_of(p) for p in parts.values()], args.page_cache)
    print(f"page cache {args.page_cache}: 2 MiB folios {', '.join(f'{s:.0%}' for s in shares)}")
    scratch = OUT / "bench-small-rebuild"
    commands = {
        "verify": (["verify", str(TINY)], lambda p: ["verify", "--jobs", "1", str(p)]),
        "rebuild-index": (
            ["rebuild-index", "--jobs", "1", "--output-dir", str(scratch), str(tiny_one_segment())],
            lambda p: ["rebuild-index", "--jobs", "1", "--output-dir", str(scratch), str(p)],
        ),
    }
    times: dict[tuple[str, ...], list[float]] = {}
    cpus: dict[tuple[str, ...], list[float]] = {}
    for _ in range(args.runs):
        for name, part in parts.items():
            times.setdefault(("limit", name), []).append(limit_seconds(logs_of(part), 1))
        for tree_name, tree in trees.items():
            for command, (tiny, whole) in commands.items():
                for name, arguments in [("tiny", tiny)] + [(n, whole(p)) for n, p in parts.items()]:
                    shutil.rmtree(scratch, ignore_errors=True)
                    wall, cpu = run_with(tree, arguments)
                    times.setdefault((tree_name, command, name), []).append(wall)
                    cpus.setdefault((tree_name, command, name), []).append(cpu)
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPUs; "
          f"best of {args.runs}")  # fmt: skip
    for name in parts:
        limits = times[("limit", name)]
        print(f"{name} batches: limit {min(limits):.3f} s")
        for command in commands:
            net = {
                t: min(cpus[(t, command, name)]) - min(cpus[(t, command, "tiny")]) for t in trees
            }
            for tree_name in trees:
                start = min(times[(tree_name, command, "tiny")])
                walls = times[(tree_name, command, name)]
                best = min(limits) / max(min(walls) - start, 1e-3)
                rounds = [lim / max(w - start, 1e-3) for lim, w in zip(limits, walls, strict=True)]
                print(f"  {command:13} {tree_name}: {min(walls):.3f} s wall (start-up "
                      f"{start:.3f} s), {best:.2f}x the limit (rounds' median "
                      f"{statistics.median(rounds):.2f}); CPU {net[tree_name]:.3f} s "
                      f"less start-up")  # fmt: skip
            print(f"  {command:13} CPU peer/this: {net['peer'] / max(net['this'], 1e-3):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
