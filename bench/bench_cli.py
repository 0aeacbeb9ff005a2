"""What a user gets: whole ``kdump`` commands as child processes, against the limits of issue 12.

Every figure is a ratio to a limit or a peer measured in the same run, or a rate with its
target beside it; nothing is compared with a number from another machine or another day.

(a) start-up: ``kdump verify`` on a tiny partition (target <= 0.15 s wall); it is subtracted from
    the child timings below ("start-up subtracted").
(b) the limit for verify and rebuild: a bare child that maps the same 1 GiB .log in the same
    8 MiB windows kdump's walk uses, releases them behind itself and CRC-32Cs every window
    (the faster of kdump's own C crc32c and the crc32c package), timed inside the child.
(c) ``kdump verify`` of that one-segment partition as a child, start-up subtracted: >= 0.9x (b);
    the 4-segment 1 GiB partition with ``--jobs 2``: >= 1.5x the one-process limit over its
    own four files (the same child; beside it, two such children at once, each over half the
    files, and one such child walking half the files in each of two threads started together,
    as ``--jobs 2`` does: what two CPUs can do at all).
(d) ``kdump rebuild-index`` of the 1 GiB segment (to --output-dir), its own start-up (the same
    command on a one-segment partition of TINY's first segment: it loads the repair modules,
    and writes, fsyncs and rechecks that segment's two new files) subtracted: >= 0.75x (b);
    beside it, the ratio with verify's start-up subtracted instead.
(e) deep text dump of a 256 MiB segment of 16 KiB batches into ``wc -l``: >= 0.75 M lines/s,
    peak RSS < 150 MB; JSON Lines deep dump: >= 0.5 M lines/s; shallow dump: <= 0.3 s.
(f) ``kdump verify --deep`` of that 256 MiB segment: >= 0.8x the library's own deep decode
    (records/s, in this process) measured in the same run.
(g) small batches, the size a broker usually writes: ``kdump verify`` and ``rebuild-index`` of
    1 GiB of 127-byte batches (8.45 M) in one segment, their start-ups subtracted, against the
    limit over that file (no target: every batch costs a header and a short CRC, so small
    batches run below the limit; the figure shows how far), with peak RSS.

Each child figure is the best of ``--runs`` (least wall time), timed alone as the limit is; its
peak RSS (of the whole process tree) comes from one more run, sampled every 10 ms. The ratios of
(c) and (d) are of least times (noise on a shared VM only slows a run, so each least time is
the best estimate of its own); beside each, the rounds' own ratios (a round's limit against its
kdump run less the start-up), as median and range: how far the figure moves with the VM.

The page cache's state moves the limit by up to 3x (bench/pagecache.py): ``--page-cache
written`` (the default) puts the files' pages as a broker's appends leave them, ``read-back``
as readahead brings an evicted segment back, ``as-found`` leaves them; each run prints the
share of the bytes the kernel maps in 2 MiB pieces.

Run from the repository root (needs the ``bench`` extra; builds bench/out/ on first use)::

    .venv/bin/python bench/bench_cli.py            # about 2.5 GiB of bench/out/
    .venv/bin/python bench/bench_cli.py --runs 1   # quicker, noisier
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from bench_dump import OUT, REPO, segment
from bench_repair import segment_dir
from bench_verify import logs_of, partition
from pagecache import STATES, prepare

from kdump import speedups

KDUMP = [sys.executable, "-m", "kdump"]
TINY = REPO / "fixtures" / "oracle" / "plain-0"
WINDOW = 8 << 20  # kdump.format.walk.Pager.window
PAGE = os.sysconf("SC_PAGE_SIZE")

LIMIT_CHILD = """
import mmap, sys, time
from kdump import speedups
import crc32c
crcs = [crc32c.crc32c]
if speedups.native() is not None:
    crcs.append(speedups.native().crc32c)
best = float("inf")
for crc in crcs:
    start = time.perf_counter()
    for path in sys.argv[2:]:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            for at in range(0, len(buf), WINDOW):
                crc(memoryview(buf)[at:at + WINDOW])
                buf.madvise(mmap.MADV_DONTNEED, at, min(WINDOW, len(buf) - at))
    best = min(best, time.perf_counter() - start)
print(best)
""".replace("WINDOW", str(WINDOW))

THREADS_CHILD = """
import mmap, sys, threading, time
import crc32c  # releases the GIL over long buffers, as kdump's walk does
def walk(paths):
    for path in paths:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            for at in range(0, len(buf), WINDOW):
                crc32c.crc32c(memoryview(buf)[at:at + WINDOW])
                buf.madvise(mmap.MADV_DONTNEED, at, min(WINDOW, len(buf) - at))
files = sys.argv[2:]
threads = [threading.Thread(target=walk, args=(files[half::2],)) for half in (0, 1)]
start = time.perf_counter()
for t in threads:
    t.start()
for t in threads:
    t.join()
print(time.perf_counter() - start)
""".replace("WINDOW", str(WINDOW))


def _tree_rss_bytes(root: int) -> int:
    """The summed resident memory of ``root`` and its descendants, read from /proc."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid], rss[pid] = int(fields[1]), int(fields[21]) * PAGE
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return sum(rss.get(pid, 0) for pid in tree)


class TreeSampler(threading.Thread):
    """Peak of the process tree's summed RSS (``--jobs N`` forks workers), every 10 ms."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.done = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.01):
            self.peak = max(self.peak, _tree_rss_bytes(self.pid))


@dataclass(frozen=True)
class Ran:
    wall: float
    rss_mib: float
    """peak RSS, MiB: of the whole process tree where it forked workers"""
    lines: int = 0


def child(args: list[str], count_lines: bool = False, sample: bool = True) -> Ran:
    """Wall time and peak RSS of one ``kdump ARGS``; its stdout counted by ``wc -l`` or dropped.
    ``sample``: also sum the process tree's RSS every 10 ms (a /proc scan that takes CPU from
    the command, so timed runs go without it)."""
    start = time.perf_counter()
    if count_lines:
        proc = subprocess.Popen([*KDUMP, *args], stdout=subprocess.PIPE, cwd=REPO)
        sampler = TreeSampler(proc.pid)
        if sample:
            sampler.start()
        wc = subprocess.Popen(["wc", "-l"], stdin=proc.stdout, stdout=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        lines = int(wc.communicate()[0])
    else:
        with open(os.devnull, "wb") as devnull:
            proc = subprocess.Popen([*KDUMP, *args], stdout=devnull, cwd=REPO)
            sampler = TreeSampler(proc.pid)
            if sample:
                sampler.start()
            _, status, usage = os.wait4(proc.pid, 0)
        wall, lines = time.perf_counter() - start, 0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"kdump {' '.join(args)} exited {code}")
    sampler.done.set()
    if sample:
        sampler.join()
    peak = max(usage.ru_maxrss * 1024, sampler.peak)  # ru_maxrss: KiB on Linux
    return Ran(wall, peak / 2**20, lines)


def best(runs: int, args: list[str], count_lines: bool = False) -> Ran:
    """The least wall time of ``runs`` runs timed alone (as the limit is), and the peak RSS of
    one more run sampled."""
    timed = [child(args, count_lines, sample=False) for _ in range(runs)]
    sampled = child(args, count_lines)
    peak = max(sampled.rss_mib, *(r.rss_mib for r in timed))
    return Ran(min(r.wall for r in timed), peak, timed[0].lines)


def tiny_one_segment() -> Path:
    """A one-segment partition of Kafka-written bytes (the first segment of TINY's), made once:
    the same command on it is a command's start-up for a one-segment partition."""
    directory = OUT / "tiny-one-segment" / TINY.name
    if not directory.is_dir():
        directory.mkdir(parents=True)
        for suffix in (".log", ".index", ".timeindex"):
            name = "00000000000000000000" + suffix
            shutil.copyfile(TINY / name, directory / name)
    return directory


def _bare_interpreter() -> float:
    """Wall time of ``python -c pass``: how fast this machine starts any Python right now."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, cwd=REPO)
    return time.perf_counter() - start


def child_output(code: str, *args: str, cwd: Path = REPO) -> str:
    """What ``python -c code args`` prints (a bare child timing itself)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def limit_seconds(logs: list[Path], runs: int) -> float:
    """(b): the bare child's own timing, best of ``runs``."""
    return min(float(child_output(LIMIT_CHILD, "-", *map(str, logs))) for _ in range(runs))


def two_threads_seconds(logs: list[Path]) -> float:
    """One bare child walking every other file in each of two threads started together, as
    ``--jobs 2`` does: what two CPUs can do at once in one process (two children started
    one after the other overlap less, so they contend less for memory)."""
    return float(child_output(THREADS_CHILD, "-", *map(str, logs)))


def two_limits_seconds(logs: list[Path]) -> float:
    """Two bare children at once, each over every other file: the slower one's own timing."""
    children = [
        subprocess.Popen(
            [sys.executable, "-c", LIMIT_CHILD, "-", *map(str, logs[half::2])],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for half in (0, 1)
    ]
    return max(float(child.communicate()[0]) for child in children)


LIBRARY_CHILD = """
import mmap, sys, time
from bench_dump import kdump_deep
best, records = float("inf"), 0
with open(sys.argv[1], "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
    for _ in range(int(sys.argv[2])):
        start = time.perf_counter()
        records = kdump_deep(buf, 0, len(buf))
        best = min(best, time.perf_counter() - start)
print(records, records / best)
"""


def library_deep_rate(log: Path, runs: int) -> tuple[int, float]:
    """Records in ``log`` and records/s of the library's deep decode over it, in a child: a
    mapping read here would raise this process's peak RSS, which the children started after
    it inherit as their own (ru_maxrss counts the address space they were started from)."""
    records, rate = child_output(
        LIBRARY_CHILD, str(log), str(runs), cwd=Path(__file__).parent
    ).split()
    return int(records), float(rate)


class Ratios:
    """A ratio of least times, shown with the median and range of the rounds' own."""

    def __init__(self, best: float, rounds: list[float]) -> None:
        self.best, self.rounds = best, sorted(rounds)

    def __str__(self) -> str:
        median, low, high = statistics.median(self.rounds), self.rounds[0], self.rounds[-1]
        return f"{self.best:.2f} (rounds: median {median:.2f}, {low:.2f}-{high:.2f})"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="timings per measurement (best)")
    parser.add_argument(
        "--page-cache", choices=STATES, default="written",
        help="the state to put the files' cached pages in first (see bench/pagecache.py)",
    )  # fmt: skip
    args = parser.parse_args()
    runs = args.runs
    print(f"kdump: {speedups.describe()}; {os.cpu_count()} CPUs; best of {runs}", flush=True)

    one = partition(1024, 1024, 16 << 10)
    four = partition(1024, 256, 16 << 10)
    seg256 = segment_dir(256, 16)
    log256 = segment(256, 16)
    small = partition(1024, 1024, 127)
    gib = (logs_of(one)[0].stat().st_size) / 2**30
    shares = prepare(
        [logs_of(one), logs_of(four), [log256], logs_of(seg256), logs_of(small)], args.page_cache
    )
    print(
        f"page cache {args.page_cache}: in 2 MiB folios, {shares[0]:.0%} of the one-segment "
        f"partition's bytes, {shares[1]:.0%} of the four-segment one's, {shares[2]:.0%} and "
        f"{shares[3]:.0%} of the 256 MiB segments', {shares[4]:.0%} of the small batches'",
        flush=True,
    )

    # (a)-(d) interleaved, round by round, so a machine that speeds up or slows down during
    # the run (a shared VM does) moves the limit and kdump's figures alike
    scratch = OUT / "bench-cli-rebuild"
    tiny = ["verify", str(TINY)]
    # rebuild-index's own start-up: it loads the repair modules and writes, fsyncs and
    # rechecks the new files of a one-segment partition, as for the 1 GiB one
    tiny_rebuild = [
        "rebuild-index", "--jobs", "1", "--output-dir", str(scratch), str(tiny_one_segment())
    ]  # fmt: skip
    one_seg = ["verify", "--jobs", "1", str(one)]
    four_seg = ["verify", "--jobs", "2", str(four)]
    rebuild = ["rebuild-index", "--jobs", "1", "--output-dir", str(scratch), str(one)]
    times: dict[str, list[float]] = {
        "tiny": [], "limit": [], "limit4": [], "two4": [], "one": [], "four": [], "rebuild": [],
        "tiny_rebuild": [], "threads4": [],
    }  # fmt: skip
    for _ in range(runs):
        times["tiny"].append(child(tiny, sample=False).wall)
        shutil.rmtree(scratch, ignore_errors=True)
        times["tiny_rebuild"].append(child(tiny_rebuild, sample=False).wall)
        times["limit"].append(limit_seconds(logs_of(one), 1))
        times["limit4"].append(limit_seconds(logs_of(four), 1))
        times["two4"].append(two_limits_seconds(logs_of(four)))
        times["threads4"].append(two_threads_seconds(logs_of(four)))
        times["one"].append(child(one_seg, sample=False).wall)
        times["four"].append(child(four_seg, sample=False).wall)
        shutil.rmtree(scratch, ignore_errors=True)
        times["rebuild"].append(child(rebuild, sample=False).wall)
    shutil.rmtree(scratch, ignore_errors=True)
    startup, limit, limit4, _, v1, v2, rb, rebuild_startup, _ = (min(times[k]) for k in times)
    rss_one, rss_four = child(one_seg).rss_mib, child(four_seg).rss_mib

    def ratios(kdump: str, against: str, tiny: str = "tiny") -> Ratios:
        """The least limit over the least kdump time less the least start-up (the same
        command's on a tiny partition; noise on a shared VM only ever slows a run down, so
        each least time is the best estimate of its own), and beside it each round's limit
        over its kdump time less that start-up, as median and range: how much the figure
        moves with the VM's speed."""
        start = min(times[tiny])
        best = min(times[against]) / max(min(times[kdump]) - start, 1e-3)
        pairs = zip(times[against], times[kdump], strict=True)
        return Ratios(best, [lim / max(t - start, 1e-3) for lim, t in pairs])

    bare = min(_bare_interpreter() for _ in range(runs))
    print(
        f"(a) start-up, verify of a tiny partition: {startup:.3f} s "
        f"(target <= 0.15 s: {verdict(startup <= 0.15)}); this machine's bare interpreter "
        f"start (python -c pass): {bare:.3f} s",
        flush=True,
    )
    print(
        f"(b) limit: bare child, mapped 8 MiB windows + CRC-32C: {limit:.3f} s, "
        f"{gib / limit:.2f} GiB/s",
        flush=True,
    )
    got = ratios("one", "limit")
    print(
        f"(c) verify, 1 GiB in one segment: {v1:.3f} s wall, {rss_one:.0f} MiB; "
        f"{got}x the limit (target >= 0.9: {verdict(got.best >= 0.9)})",
        flush=True,
    )
    got = ratios("four", "limit4")
    two, threads = (
        Ratios(
            min(times["limit4"]) / min(times[k]),
            [a / b for a, b in zip(times["limit4"], times[k], strict=True)],
        )
        for k in ("two4", "threads4")
    )
    print(
        f"    verify --jobs 2, 1 GiB in 4 segments: {v2:.3f} s wall, {rss_four:.0f} MiB "
        f"(process tree); {got}x the one-process limit over those files, "
        f"{limit4:.3f} s (target >= 1.5: {verdict(got.best >= 1.5)}); two bare children "
        f"at once: {two}x; one bare child's two threads started together: {threads}x",
        flush=True,
    )
    got = ratios("rebuild", "limit", "tiny_rebuild")
    print(
        f"(d) rebuild-index, 1 GiB segment: {rb:.3f} s wall, its start-up (a tiny "
        f"partition) {rebuild_startup:.3f} s; {got}x the limit (target >= 0.75: "
        f"{verdict(got.best >= 0.75)}); less verify's start-up instead: "
        f"{ratios('rebuild', 'limit')}x",
        flush=True,
    )

    deep = best(runs, ["--files", str(log256), "--deep-iteration"], count_lines=True)
    rate = deep.lines / deep.wall
    print(
        f"(e) deep text dump, 256 MiB: {deep.lines:,} lines in {deep.wall:.2f} s = "
        f"{rate / 1e6:.2f} M lines/s (target >= 0.75: {verdict(rate >= 0.75e6)}), "
        f"peak RSS {deep.rss_mib:.0f} MiB (< 150 MB: {verdict(deep.rss_mib * 2**20 < 150e6)})",
        flush=True,
    )
    jsonl = best(runs, ["dump", str(log256), "--deep-iteration", "--format", "jsonl"], True)
    rate = jsonl.lines / jsonl.wall
    print(
        f"    JSON Lines deep dump: {jsonl.lines:,} lines in {jsonl.wall:.2f} s = "
        f"{rate / 1e6:.2f} M lines/s (target >= 0.5: {verdict(rate >= 0.5e6)}), "
        f"peak RSS {jsonl.rss_mib:.0f} MiB",
        flush=True,
    )
    shallow = best(runs, ["--files", str(log256)], count_lines=True)
    print(
        f"    shallow dump: {shallow.lines:,} lines in {shallow.wall:.3f} s "
        f"(target <= 0.3 s: {verdict(shallow.wall <= 0.3)})",
        flush=True,
    )

    records, library = library_deep_rate(seg256 / "00000000000000000000.log", runs)
    vdeep = best(runs, ["verify", "--deep", "--jobs", "1", str(seg256)])
    ratio = records / (vdeep.wall - startup) / library
    print(
        f"(f) verify --deep, 256 MiB: {vdeep.wall:.2f} s wall; library deep decode "
        f"{library / 1e6:.2f} M records/s; verify --deep at {ratio:.2f}x of it "
        f"(target >= 0.8: {verdict(ratio >= 0.8)})",
        flush=True,
    )

    small_limit = limit_seconds(logs_of(small), runs)
    small_verify = best(runs, ["verify", "--jobs", "1", str(small)])
    shutil.rmtree(scratch, ignore_errors=True)
    small_rebuild = best(runs, [*rebuild[:-1], str(small)])
    shutil.rmtree(scratch, ignore_errors=True)
    verify_ratio = small_limit / max(small_verify.wall - startup, 1e-3)
    rebuild_ratio = small_limit / max(small_rebuild.wall - rebuild_startup, 1e-3)
    print(
        f"(g) 127-byte batches, 1 GiB: limit {small_limit:.3f} s; verify {small_verify.wall:.3f} s "
        f"wall, {small_verify.rss_mib:.0f} MiB, {verify_ratio:.2f}x the limit; rebuild-index "
        f"{small_rebuild.wall:.3f} s, {small_rebuild.rss_mib:.0f} MiB, {rebuild_ratio:.2f}x "
        "(start-ups subtracted; no target)",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
