"""What the test suite covers of kdump/ at two commits, compared: no line or branch of kdump's
Python and no line or branch of its C code (kdump/_speedups.c, through gcov) that the suite
covered at the first may be uncovered at the second.

Made for changes to the tests that run fewer inputs (issue 26: each distinct fixture content
once, not once per copy): the code under test is the same at both commits, only the tests
differ. Each run exports the commit's tree (``git archive``) to a fresh directory, so both
start alike (no hypothesis database, no build left over), builds the C extension there with
gcov's instrumentation, runs the whole suite under ``coverage run`` (branches, subprocesses and
forked workers included; hypothesis seeded) and keeps the JSON reports::

    python scripts/compare_coverage.py run BEFORE_REV OUT_BEFORE
    python scripts/compare_coverage.py run AFTER_REV OUT_AFTER
    python scripts/compare_coverage.py compare OUT_BEFORE OUT_AFTER   # exit 1 if anything is lost

Run with the project's virtualenv (``.venv/bin/python``, with ``coverage`` installed in it);
a run takes two to three times as long as the suite. Extra arguments after ``--`` go to pytest.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
C_SOURCE = "kdump/_speedups.c"
HYPOTHESIS_SEED = "0"  # both runs draw the same examples, so a difference is the tests'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the suite of a commit under coverage")
    run.add_argument("rev", help="a commit, e.g. HEAD or main~1")
    run.add_argument("out", type=Path, help="a new directory for the tree and the reports")
    run.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    compare = commands.add_parser("compare", help="compare two runs' reports")
    compare.add_argument("before", type=Path)
    compare.add_argument("after", type=Path)
    compare.add_argument("--all", action="store_true", help="every file, not only changed ones")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run_suite(args.rev, args.out, args.pytest_args)
    return compare_runs(args.before, args.after, args.all)


# --------------------------------------------------------------------------- run


def run_suite(rev: str, out: Path, pytest_args: list[str]) -> int:
    out = out.resolve()
    out.mkdir(parents=True)
    tree = export(rev, out / "tree")
    c_objects = build_instrumented(tree, out / "c-build")
    rc = write_rc(tree, out)
    site = out / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PATIENT_TERMINATE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(site)])}
    coverage = [sys.executable, "-m", "coverage"]
    started = time.monotonic()
    ran = subprocess.run(
        [*coverage, "run", f"--rcfile={rc}", "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"--hypothesis-seed={HYPOTHESIS_SEED}", *pytest_args],
        cwd=tree, env=env, capture_output=True, text=True,
    )  # fmt: skip
    seconds = time.monotonic() - started
    (out / "pytest.log").write_text(ran.stdout + ran.stderr)
    subprocess.run([*coverage, "combine", f"--rcfile={rc}", "-q"], cwd=tree, env=env, check=True)
    subprocess.run(
        [*coverage, "json", f"--rcfile={rc}", "-q", "-o", str(out / "python.json")],
        cwd=tree, env=env, check=True,
    )  # fmt: skip
    if c_objects is not None:
        gcov_json(tree, c_objects, out / "c.json")
    summary = ran.stdout.strip().splitlines()[-1] if ran.stdout.strip() else ""
    meta = {
        "rev": rev,
        "commit": git("rev-parse", rev),
        "kdump_tree": git("rev-parse", f"{rev}:kdump"),
        "pytest_exit": ran.returncode,
        "pytest_summary": summary,
        "seconds": round(seconds),
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"{rev}: {summary} (exit {ran.returncode}, {seconds:.0f} s under coverage)")
    return ran.returncode


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO, check=True, capture_output=True, text=True
    ).stdout.strip()


def export(rev: str, tree: Path) -> Path:
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def build_instrumented(tree: Path, build: Path) -> Path | None:
    """kdump/_speedups.c compiled with gcov's counters (-O0: one count per source line), in
    place of the extension pip builds; None where there is no C compiler (Python only)."""
    build.mkdir()
    obj = build / "_speedups.o"
    include = sysconfig.get_paths()["include"]
    flags = ["--coverage", "-O0", "-std=c99", "-fPIC", f"-I{include}"]
    try:
        subprocess.run(["gcc", *flags, "-c", str(tree / C_SOURCE), "-o", str(obj)], check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"no instrumented C build ({e}): Python only", file=sys.stderr)
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    target = tree / "kdump" / f"_speedups{suffix}"
    subprocess.run(["gcc", "--coverage", "-shared", str(obj), "-o", str(target)], check=True)
    return build


# kdump.parallel terminates its workers when one sends an error: the worker that sent it is
# then ending, and killed while it saves its coverage data (that run loses the lines the worker
# ran, at random). In the measured runs only, a worker gets two seconds to end by itself first.
PATIENT_TERMINATE = """\
from multiprocessing.process import BaseProcess

_terminate = BaseProcess.terminate


def _patient_terminate(self):
    self.join(2.0)
    if self.exitcode is None:
        _terminate(self)


BaseProcess.terminate = _patient_terminate
"""


def write_rc(tree: Path, out: Path) -> Path:
    rc = out / "coveragerc"
    rc.write_text(
        "[run]\n"
        "branch = True\n"
        f"source = {tree / 'kdump'}\n"
        "parallel = True\n"
        f"data_file = {out / '.coverage'}\n"
        # kdump's jobs fork workers and read ahead in threads; the suite runs kdump and pytest
        # itself (the pure-Python run) in subprocesses
        "concurrency = thread,multiprocessing\n"
        "patch = subprocess\n"
    )
    return rc


def gcov_json(tree: Path, objects: Path, target: Path) -> None:
    gcov = ["gcov", "--branch-probabilities", "--json-format", "-o", str(objects)]
    subprocess.run([*gcov, str(tree / C_SOURCE)], cwd=objects, check=True, capture_output=True)
    (report,) = objects.glob("*.gcov.json.gz")
    target.write_bytes(gzip.decompress(report.read_bytes()))


# --------------------------------------------------------------------------- compare

Covered = dict[str, tuple[set[Any], set[Any], int, int]]
"""file -> (covered lines, covered branches, lines, branches)"""


def python_coverage(run: Path) -> Covered:
    files = json.loads((run / "python.json").read_text())["files"]
    out: Covered = {}
    for name, f in files.items():
        lines = set(f["executed_lines"])
        branches = {tuple(b) for b in f.get("executed_branches", [])}
        all_lines = len(f["executed_lines"]) + len(f["missing_lines"])
        all_branches = len(branches) + len(f.get("missing_branches", []))
        out[name] = (lines, branches, all_lines, all_branches)
    return out


def c_coverage(run: Path) -> Covered:
    """gcov's lines and branches (a branch: its line and its place among the line's arcs)."""
    path = run / "c.json"
    if not path.exists():
        return {}
    out: Covered = {}
    for f in json.loads(path.read_text())["files"]:
        if not f["file"].endswith(C_SOURCE):
            continue
        lines: set[Any] = set()
        branches: set[Any] = set()
        n_lines = n_branches = 0
        for line in f["lines"]:
            n_lines += 1
            if line["count"]:
                lines.add(line["line_number"])
            for i, b in enumerate(line.get("branches", [])):
                n_branches += 1
                if b["count"]:
                    branches.add((line["line_number"], i))
        out[C_SOURCE] = (lines, branches, n_lines, n_branches)
    return out


def compare_runs(before: Path, after: Path, show_all: bool) -> int:
    metas = [json.loads((run / "meta.json").read_text()) for run in (before, after)]
    for meta in metas:
        print(f"- {meta['rev']} ({meta['commit'][:10]}): {meta['pytest_summary']}")
    if metas[0]["kdump_tree"] != metas[1]["kdump_tree"]:
        print("kdump/ differs between the two commits: lines are not comparable", file=sys.stderr)
        return 2
    lost = 0
    for kind, read in (("Python", python_coverage), ("C (gcov)", c_coverage)):
        old, new = read(before), read(after)
        if not old and not new:
            continue
        print(f"\n{kind}\n")
        lost += table(old, new, show_all)
    print(f"\n{lost or 'nothing'} covered before and not after")
    return 1 if lost else 0


def table(old: Covered, new: Covered, show_all: bool) -> int:
    print("| file | lines before | lines after | of | branches before | branches after | of |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    empty: tuple[set[Any], set[Any], int, int] = (set(), set(), 0, 0)
    totals = [0] * 6
    lost = 0
    for name in sorted(set(old) | set(new)):
        o, n = old.get(name, empty), new.get(name, empty)
        row = [len(o[0]), len(n[0]), max(o[2], n[2]), len(o[1]), len(n[1]), max(o[3], n[3])]
        totals = [t + r for t, r in zip(totals, row, strict=True)]
        gone_lines, gone_branches = o[0] - n[0], o[1] - n[1]
        lost += len(gone_lines) + len(gone_branches)
        if show_all or row[0] != row[1] or row[3] != row[4] or gone_lines or gone_branches:
            print(f"| {name} | " + " | ".join(map(str, row)) + " |")
        for what, gone in (("line", gone_lines), ("branch", gone_branches)):
            if gone:
                print(f"|   lost {what}s: {spans(gone)} |", file=sys.stderr)
    print("| **total** | " + " | ".join(map(str, totals)) + " |")
    return lost


def spans(items: Iterable[Any]) -> str:
    return ", ".join(str(i) for i in sorted(items)[:40])


if __name__ == "__main__":
    sys.exit(main())
