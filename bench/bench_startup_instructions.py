"""Issue 45 point 1's start-ups counted in instructions, not timed: each command a child under
valgrind (callgrind: instructions executed, user space, the child's whole life), as a ratio to
``python -c "import click"`` counted the same way.

A count does not move with the machine's load, where a wall time on a shared machine moves by
more than the goal's margin between runs (docs/benchmarks.md): it tells a change's effect on
start-up when bench_goals' timings cannot. It is not the goal itself (the goal is wall time, and
an instruction is not a fixed time: page faults, the C module's mapping and cache misses are
not counted), but on a quiet machine the two ratios move together. Bytecode is compiled first
(kdump's and the peer's), as a user's install has it.

    .venv/bin/python bench/bench_startup_instructions.py --peer /tmp/before
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench_cli import TINY, tiny_one_segment
from bench_dump import REPO
from bench_goals import INDEX_START, LAUNCH, VERIFY_START, VERSION_START

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(tree: Path | None, argv: list[str]) -> int:
    """Instructions of one child: ``kdump ARGV`` from ``tree`` (None: ``import click``)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-P", "-c", LAUNCH, *argv] if tree else [sys.executable, "-P", *argv]
    ran = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    found = _REFS.search(ran.stderr)
    if ran.returncode not in (0, 1) or found is None:
        sys.exit(f"{' '.join(command)} under valgrind: exit {ran.returncode}\n{ran.stderr[-2000:]}")
    return int(found[1].replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", type=Path, help="another kdump tree (its C module built)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (apt-get install valgrind)")
    trees = {"this": REPO} | ({"peer": args.peer.resolve()} if args.peer else {})
    for tree in trees.values():
        compileall.compile_dir(tree / "kdump", quiet=1)
    one = tiny_one_segment()
    rows = (
        (VERIFY_START, ["verify", str(one)]),
        (INDEX_START, ["--files", str(TINY / "00000000000000000000.index")]),
        (VERSION_START, ["--version"]),
    )
    click = instructions(None, ["-c", "import click"])
    print(f"python -c 'import click': {click / 1e6:.1f} M instructions")
    print("| job | " + " | ".join(trees) + " |")
    print("| --- |" + " --- |" * len(trees))
    for row, argv in rows:
        counts = [instructions(tree, argv) for tree in trees.values()]
        print(
            f"| {row} | " + " | ".join(f"{c / click:.3f}x ({c / 1e6:.0f} M)" for c in counts) + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
