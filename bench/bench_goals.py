"""Issue 45's table in one run: start-up, the hot paths against the fresh-process limit, and
the dumps, each whole command a child process as a user runs it.

Rows (the goal beside each):

- start-up: ``kdump verify`` of a one-segment partition and ``kdump --files X.index``, as
  ratios to ``python -c "import click"`` (<= 1.5x); ``kdump --version`` beside them;
- ``verify`` and ``rebuild-index`` of 1 GiB in one segment, of 16 KiB and of 127-byte batches,
  as ratios to the limit: a bare child mapping the same file in kdump's 8 MiB windows and
  CRC-32C-ing it (bench_cli's), timed inside the child; kdump's wall time has its own start-up
  subtracted (the same command on a one-segment partition); peak RSS beside (< 150 MB);
- ``kdump --files SEG`` (shallow, 256 MiB of 16 KiB batches): seconds, start-up included;
- the deep text dump (``--deep-iteration --print-data-log``) and the JSON Lines dump
  (``dump --format jsonl --deep-iteration``) of 256 MiB of 16 KiB batches of binary values
  into ``wc -l``: lines/s, one line per batch and record (as JSON Lines prints them; the text
  dump's own count grows with the newline bytes of binary values);
- ``--jobs 2`` against ``--jobs 1`` (issue 44 point 8), the same dumps of 256 MiB of plain
  batches (text values) into ``wc -l`` and into a file (in /dev/shm where there is one): the
  ratio of their wall times (>= 1.5 on 2 CPUs; peak RSS beside is the largest of one process
  of the tree), and of their CPU times (what the workers cost beside one process).

The page cache: ``warm`` runs find the files cached as a broker's appends leave them
(bench/pagecache.py's ``written``); ``cold`` ones (``--cold``) find them evicted, before every
run of the limit and of kdump alike (the limit then reads them from disk too).

Each round runs every row once for this tree and, with ``--peer DIR`` (another kdump tree, its
C module built: a before), once for the peer, the two alternated row by row, so a shared
machine's load moves both alike. Figures are medians over the rounds of each round's own
ratio (its limit against its kdump run); the best round beside. The load average is printed.

    .venv/bin/python bench/bench_goals.py --peer /tmp/before --runs 7
    .venv/bin/python bench/bench_goals.py --runs 3 --only startup
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench_cli import LIMIT_CHILD, TINY, tiny_one_segment
from bench_dump import OUT, REPO
from bench_dump import segment as text_segment
from bench_payloads import segment as payload_segment
from bench_verify import logs_of, partition
from pagecache import prepare

LAUNCH = "import re, sys; from kdump.cli import main; sys.argv[0] = 'kdump'; sys.exit(main())"
"""What the installed ``kdump`` script runs (-P: the tree comes from PYTHONPATH alone)."""
GROUPS = ("startup", "verify", "dump", "jobs")
STARTUPS = 5
"""Start-ups of each kind per tree per round."""
CLICK = "python -c 'import click', seconds"
VERIFY_START = "start-up: verify, one segment"
INDEX_START = "start-up: --files X.index"
VERSION_START = "start-up: --version"


@dataclass(frozen=True)
class Ran:
    wall: float
    cpu: float
    rss_mib: float
    lines: int = 0


def run(
    tree: Path | None,
    argv: list[str],
    lines: bool = False,
    kdump: bool = True,
    to_file: Path | None = None,
) -> Ran:
    """One child: ``kdump ARGV`` from ``tree`` (None: a bare ``python ARGV``), its stdout
    dropped, counted by ``wc -l`` (``lines``) or written to ``to_file``."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-P", "-c", LAUNCH, *argv] if kdump else [sys.executable, *argv]
    peak = OUT / f"bench-goals-peak-{os.getpid()}"
    if TIME.exists():
        command = [str(TIME), "-f", "%M", "-o", str(peak), *command]
    start = time.perf_counter()
    if lines:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=REPO)
        wc = subprocess.Popen(["wc", "-l"], stdin=proc.stdout, stdout=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        counted = int(wc.communicate()[0])
    else:
        with open(to_file or os.devnull, "wb") as sink:
            proc = subprocess.Popen(command, stdout=sink, env=env, cwd=REPO)
            _, status, usage = os.wait4(proc.pid, 0)
        wall, counted = time.perf_counter() - start, 0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {code}")
    rss = usage.ru_maxrss
    if TIME.exists():  # the child's own peak, in KiB (the last line: time's own)
        rss = int(peak.read_text().split()[-1])
        peak.unlink()
    return Ran(wall, usage.ru_utime + usage.ru_stime, rss / 1024, counted)


TIME = Path("/usr/bin/time")
"""GNU time, which forks the command from its own small process: on Linux a process's peak
RSS (ru_maxrss) survives execve, and a child forked (or vforked) from this big process would
start from this process's peak (every row printed 106 MiB); GNU time's child starts from
time's. Where there is none, the child's own figure (an upper bound)."""


COLD = """\
    import os
    for path in sys.argv[2:]:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
"""
"""Run before each of the limit's passes (one per CRC-32C code) where the files start cold."""


def limit(logs: list[Path], cold: bool = False) -> float:
    """bench_cli's bare child over ``logs``, its own timing; ``cold``: each of its passes
    starts with the files evicted."""
    code = (
        LIMIT_CHILD.replace("for crc in crcs:\n", "for crc in crcs:\n" + COLD)
        if cold
        else LIMIT_CHILD
    )
    assert code != LIMIT_CHILD or not cold
    out = subprocess.run(
        [sys.executable, "-c", code, "-", *map(str, logs)],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return float(out)


def evict(paths: list[Path]) -> None:
    """Drop the files' pages from the page cache (written back first)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class Samples:
    """Every round's figure of each (row, tree), and the runs behind them."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], list[float]] = {}
        self.rss: dict[tuple[str, str], float] = {}

    def add(self, row: str, tree: str, value: float, rss: float = 0.0) -> None:
        self.values.setdefault((row, tree), []).append(value)
        self.rss[row, tree] = max(self.rss.get((row, tree), 0.0), rss)

    def cell(self, row: str, tree: str, unit: str, higher: bool) -> str:
        got = self.values.get((row, tree))
        if not got:
            return "-"
        best = max(got) if higher else min(got)
        rss = self.rss.get((row, tree), 0.0)
        extra = f", {rss:.0f} MiB" if rss else ""
        return f"{statistics.median(got):.2f}{unit} (best {best:.2f}{extra})"

    def relative(self, row: str, tree: str, to: str) -> None:
        """Turn ``row``'s seconds into ratios to the median of ``to``'s (same tree)."""
        base = self.median(to, tree)
        if base and (row, tree) in self.values:
            self.values[row, tree] = [v / base for v in self.values[row, tree]]

    def median(self, row: str, tree: str) -> float | None:
        got = self.values.get((row, tree))
        return statistics.median(got) if got else None


def compile_tree(tree: Path) -> None:
    """Every module's bytecode written before the first round, as an installed package has it
    (a shell with PYTHONDONTWRITEBYTECODE set would otherwise compile the modules that lack it
    in every child, a start-up no user pays)."""
    compileall.compile_dir(tree / "kdump", quiet=1)


@dataclass(frozen=True)
class Row:
    name: str
    unit: str
    goal: float
    higher: bool
    """Whether more is better (ratios, rates) or less (seconds)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="rounds (medians over them)")
    parser.add_argument("--peer", type=Path, help="another kdump tree (its C module built)")
    parser.add_argument("--only", default=",".join(GROUPS), help="groups: " + ",".join(GROUPS))
    parser.add_argument("--cold", action="store_true", help="also with the files evicted")
    args = parser.parse_args()
    groups = set(args.only.split(","))
    trees: dict[str, Path] = {"this": REPO}
    if args.peer is not None:
        trees["peer"] = args.peer.resolve()
    for tree in trees.values():
        compile_tree(tree)

    big = partition(1024, 1024, 16 << 10)
    small = partition(1024, 1024, 127)
    shallow_log = text_segment(256, 16)
    binary_log = payload_segment("binary", "16k", 256)
    plain_log = payload_segment("text", "16k", 256)
    one = tiny_one_segment()
    index = str(TINY / "00000000000000000000.index")
    scratch = OUT / "bench-goals-rebuild"
    files = [*logs_of(big), *logs_of(small), shallow_log, binary_log, plain_log]
    samples = Samples()
    # a file in memory where there is one: a disk's write-back would time the disk
    shm = Path("/dev/shm")
    sink_file = (shm if shm.is_dir() else OUT) / f"kdump-bench-goals-{os.getpid()}"
    load = [os.getloadavg()[0]]

    def rebuild(part: Path) -> list[str]:
        shutil.rmtree(scratch, ignore_errors=True)
        return ["rebuild-index", "--jobs", "1", "--output-dir", str(scratch), str(part)]

    def starts(tree: Path) -> dict[str, float]:
        return {
            "verify": run(tree, ["verify", str(one)]).wall,
            "rebuild": run(tree, rebuild(one)).wall,
        }

    def hot(tree_name: str, tree: Path, cache: str, base: dict[str, float]) -> None:
        for size, part in (("16 KiB", big), ("127-byte", small)):
            logs = logs_of(part)
            for command in ("verify", "rebuild"):
                bound = limit(logs, cold=cache == "cold")
                if cache == "cold":
                    evict(logs)
                argv = (
                    rebuild(part) if command == "rebuild" else ["verify", "--jobs", "1", str(part)]
                )
                got = run(tree, argv)
                ratio = bound / max(got.wall - base[command], 1e-3)
                samples.add(
                    f"{command} 1 GiB, {size} batches, {cache}", tree_name, ratio, got.rss_mib
                )

    for _ in range(args.runs):
        if "startup" in groups:
            for tree_name, tree in trees.items():
                # each start-up beside its own import click, several times: a start-up is
                # short enough for one burst of another process's load to double it
                for _ in range(STARTUPS):
                    # its peak RSS beside: a child known to be small checks the column
                    click = run(None, ["-P", "-c", "import click"], kdump=False)
                    samples.add(CLICK, tree_name, click.wall, click.rss_mib)
                    for row, argv in (
                        (VERIFY_START, ["verify", str(one)]),
                        (INDEX_START, ["--files", index]),
                        (VERSION_START, ["--version"]),
                    ):
                        samples.add(row, tree_name, run(tree, argv).wall)
        if groups & {"verify", "dump", "jobs"}:
            prepare([files], "written")  # as a broker's appends leave them, every round
        if "verify" in groups:
            for tree_name, tree in trees.items():
                hot(tree_name, tree, "warm", starts(tree))
        if "dump" in groups:
            for tree_name, tree in trees.items():
                got = run(tree, ["--files", str(shallow_log)], lines=True)
                samples.add("shallow --files, 256 MiB, seconds", tree_name, got.wall, got.rss_mib)
                for row, argv in (
                    ("deep text dump, binary values, M lines/s",
                     ["--files", str(binary_log), "--deep-iteration", "--print-data-log"]),
                    ("JSON Lines dump, binary values, M lines/s",
                     ["dump", str(binary_log), "--deep-iteration", "--format", "jsonl"]),
                ):  # fmt: skip
                    got = run(tree, argv, lines=True)
                    samples.add(row, tree_name, LINES[binary_log] / got.wall / 1e6, got.rss_mib)
        if "jobs" in groups:  # issue 44.8: --jobs 2 against --jobs 1, into wc -l and a file
            for tree_name, tree in trees.items():
                text = ["--files", str(plain_log), "--deep-iteration", "--print-data-log"]
                jsonl = ["dump", str(plain_log), "--deep-iteration", "--format", "jsonl"]
                for name, argv in (("deep text", text), ("JSON Lines", jsonl)):
                    for sink in ("pipe", "file"):
                        ran = []
                        for jobs in ("1", "2"):
                            target = sink_file if sink == "file" else None
                            got = run(tree, [*argv, "--jobs", jobs], sink == "pipe", to_file=target)
                            ran.append(got)
                        row = f"{name} dump, --jobs 2 / --jobs 1, into a {sink}"
                        samples.add(row, tree_name, ran[0].wall / ran[1].wall, got.rss_mib)
                        samples.add(f"{row}, CPU", tree_name, ran[1].cpu / ran[0].cpu)
        if "verify" in groups and args.cold:
            for tree_name, tree in trees.items():
                hot(tree_name, tree, "cold", starts(tree))
        load.append(os.getloadavg()[0])
    shutil.rmtree(scratch, ignore_errors=True)
    sink_file.unlink(missing_ok=True)

    rows = [
        Row(CLICK, " s", 0, False),
        Row(VERIFY_START, "x", 1.5, False),
        Row(INDEX_START, "x", 1.5, False),
        Row(VERSION_START, "x", 0, False),
    ]
    for cache in ("warm", "cold"):
        for command, goals in (("verify", (1.2, 0.6)), ("rebuild", (1.5, 0.5))):
            for size, goal in zip(("16 KiB", "127-byte"), goals, strict=True):
                rows.append(Row(f"{command} 1 GiB, {size} batches, {cache}", "x", goal, True))
    rows += [
        Row("shallow --files, 256 MiB, seconds", " s", 0.2, False),
        Row("deep text dump, binary values, M lines/s", "", 3.0, True),
        Row("JSON Lines dump, binary values, M lines/s", "", 0.75, True),
    ]
    for name in ("deep text", "JSON Lines"):
        for sink in ("pipe", "file"):
            jobs_row = f"{name} dump, --jobs 2 / --jobs 1, into a {sink}"
            rows += [Row(jobs_row, "x", 1.5, True), Row(f"{jobs_row}, CPU", "x", 0, False)]
    for tree_name in trees:
        for row in (VERIFY_START, INDEX_START, VERSION_START):
            samples.relative(row, tree_name, CLICK)
    print(
        f"{os.cpu_count()} CPUs, load average (1 min) {min(load):.1f}-{max(load):.1f} over the "
        f"run; {args.runs} round(s); medians (best); start-ups as ratios to the median "
        "import click; hot paths: the limit over the kdump run less its start-up"
    )
    header = ["job", *trees, "goal"]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for spec in rows:
        if all(samples.median(spec.name, t) is None for t in trees):
            continue
        cells = [samples.cell(spec.name, t, spec.unit, spec.higher) for t in trees]
        verdict = ""
        if spec.goal:
            median = samples.median(spec.name, "this")
            ok = median is not None and (
                median >= spec.goal if spec.higher else median <= spec.goal
            )
            met = "met" if ok else "NOT met"
            verdict = f"{'>=' if spec.higher else '<='} {spec.goal}: {met}"
        print(f"| {spec.name} | " + " | ".join(cells) + f" | {verdict} |")
    return 0


class _Lines(dict[Path, int]):
    """Lines a deep dump of a segment prints, one per batch and per record: counted once from
    the JSON Lines dump (this tree's)."""

    def __missing__(self, log: Path) -> int:
        counted = run(REPO, ["dump", str(log), "--deep-iteration", "--format", "jsonl"], True)
        self[log] = counted.lines
        return counted.lines


LINES = _Lines()

if __name__ == "__main__":
    sys.exit(main())
