"""Issue 33's bench: a fleet of three brokers, the commands of the issue's table before and after,
the fleet audit, and the export with de-duplication and filters. ``--study`` instead: Spark
against one process in this process (task counts, export's extraction).

**The fleet** (the default). Builds (once) under bench/out/fleet-P x Mm/ one set of partitions
(``--partitions``, each ``--partition-mib`` MiB in ``--segment-mib`` segments, batch shapes in
turn: 127-byte, 1 KiB and 16 KiB batches, bench_verify.build_partition) and three "brokers"
holding a replica of every partition (replication factor 3: hard links, so the disk holds one
copy), each with its meta.properties; three partitions are damaged on broker 2 (a byte of a
batch flipped in its own copy). Then, as child processes (``python -P -m kdump``), for this tree
and for ``--before`` (another kdump tree, its C module built, first on PYTHONPATH; Spark's Python
workers inherit it), each command of one tree right after the other's:

(1) the issue's table, on broker 2's log dir: ``verify --jobs 1`` / ``--jobs 2``, ``spark verify
    --master local[2]`` (its findings must equal verify's), ``verify --deep --jobs 2`` / ``spark
    verify --deep``, ``spark export`` to Parquet (records/s), and ``dump PART --deep-iteration
    --format jsonl`` of one partition of 127-byte batches at ``--jobs 1`` / ``--jobs 2``;
(2) the fleet audit: each broker's ``verify LOGDIR --format json --output
    RESULTS/{broker_id}-{started}.json``, then ``report RESULTS``: one page, no segment read;
(3) ``spark export`` of the three brokers' log dirs, one replica per partition (the rows must
    be one copy's), then with ``--topic topic1 --time-range`` (the filters).

``--cluster`` (issue 40): every Spark command of (1) and (3) also on a standalone cluster of
this machine (tests/sparkcluster.py: a master and two workers of one core each, in JVMs of their
own; the executors' Python has pyspark's requirements and no kdump, which the driver ships), for
this tree: the same findings and records as local[2] (checked), and the time it takes.

What a tree lacks (its ``--help`` does not name the option) prints "n/a (not in before)". Wall
time and CPU time (user + system of the child and the children it waited for: a Spark
command's is its driver's Python only, not the JVM's), the 1-minute load average beside each
(other engineers share the 2 cores). Issue 33 asks for >= 8 GiB in
>= 200 partitions; the default is a quick look::

    .venv/bin/python bench/bench_spark.py                                # ~0.6 GiB a broker
    .venv/bin/python bench/bench_spark.py --cluster      # and on the standalone cluster too
    flock /work/helper-notes/bench.lock .venv/bin/python bench/bench_spark.py \
        --partitions 200 --partition-mib 42 --before /tmp/before33

**The study** (``--study``): builds (once) broker log directories under bench/out/: every
segment is Kafka-written v2 oracle logs (plain, gzip, lz4, variety, followerlive) appended one
after the other, each copy's batch base offsets moved up (the v2 base offset lies outside the
CRC), with the .index and .timeindex that LogSegment.recover writes for it
(kdump.repair.rebuild); each partition starts at a different offset. Then, on the same
directories:

(a) verify, shallow and --deep, of ``--study-partitions`` (default 210) partitions of
    ``--segments`` segments of ``--segment-kib`` KiB: one `kdump verify` run (verify_paths in
    this process) against verify_on_spark in a warm local[2] session at the default and other
    task counts (``--tasks``), interleaved, best of ``--runs``; then end to end as processes
    (`kdump verify DIR` against `kdump spark verify DIR --master local[2]`, JVM start-up
    included). Ratio = kdump / Spark (target >= 1.5 on 2 cores). The two reports must be
    identical or the bench stops.
(b) export: records/s of export_on_spark (one task per segment) on local[2] against one
    process running the same extraction (SegmentExport) into pyarrow's Parquet writer, on
    ``--export-segments`` segments of ``--export-segment-mib`` MiB, best of ``--runs``.

Run from the repository root (needs the ``spark`` extra and Java 17)::

    .venv/bin/python bench/bench_spark.py --study                  # ~2 GiB of bench/out/
"""

from __future__ import annotations

import argparse
import itertools
import json
import mmap
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow.parquet as pq
from bench_dump import T0
from bench_verify import build_partition

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.commands.verify import exit_code
from kdump.format.layout import LOG_HEADER
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from kdump.format.walk import iter_batches
from kdump.render.verify import render_json
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.spark.extract import SegmentExport, segment_tasks
from kdump.spark.job import TASKS_PER_CORE, export_on_spark, verify_on_spark
from kdump.spark.schema import RECORD_SCHEMA, arrow_schema
from kdump.spark.session import build_session
from kdump.unified_log import local_segments

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
ORACLE = REPO / "fixtures" / "oracle"
TEMPLATES = ["plain-0", "gzip-0", "lz4-0", "variety-0", "followerlive-0"]
KDUMP = Path(sys.executable).with_name("kdump")
MASTER = "local[2]"
PARTITION_SPACING = 100_000_000
"""Partition i's first offset is i times this: every partition has other base offsets."""


def shifted(source: bytes, shift: int) -> tuple[bytes, int]:
    """A .log's bytes with every batch's base offset moved up by ``shift``; its last offset."""
    data = bytearray(source)
    last = -1
    for batch in iter_batches(data):
        offset, size = LOG_HEADER.unpack_from(data, batch.position)
        LOG_HEADER.pack_into(data, batch.position, offset + shift, size)
        last = batch.last_offset + shift
    return bytes(data), last


def build_log_dir(name: str, partitions: int, segments: int, segment_kib: int) -> Path:
    """A broker log dir under bench/out/ (built on first use), as the module docstring says."""
    root = OUT / name / "kafka-logs"
    if root.exists():
        return root
    start = time.perf_counter()
    sources = [
        (data, next(iter_batches(data)).base_offset)
        for t in TEMPLATES
        for s in local_segments(ORACLE / t)
        for data in [Path(s.log_path).read_bytes()]
    ]
    rotation = itertools.cycle(sources)
    tmp = root.with_name("kafka-logs.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "meta.properties").write_text("version=1\nbroker.id=0\n")
    for p in range(partitions):
        part = tmp / f"bench-{p}"
        part.mkdir()
        next_offset = p * PARTITION_SPACING
        for _ in range(segments):
            base = next_offset
            log = part / segment_file_name(base, LOG_SUFFIX)
            with open(log, "wb") as f:
                while f.tell() < segment_kib * 1024:
                    data, first = next(rotation)
                    moved, last = shifted(data, next_offset - first)
                    f.write(moved)
                    next_offset = last + 1
            with open(log, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                recovered = recover_segment(buf, base, str(log), IndexConfig())
                (part / segment_file_name(base, INDEX_SUFFIX)).write_bytes(recovered.index)
                (part / segment_file_name(base, TIME_INDEX_SUFFIX)).write_bytes(
                    recovered.time_index
                )
                del recovered
    tmp.rename(root)
    size = sum(p.stat().st_size for p in root.rglob("*.log"))
    print(
        f"built {root.relative_to(REPO)}: {partitions} partitions x {segments} segments, "
        f"{size / 2**20:.0f} MiB of .log in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return root


def wall(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def line(label: str, seconds: float, extra: str = "") -> None:
    print(f"  {label:<44} {seconds:7.2f} s  {extra}  ({load()})", flush=True)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KDUMP), *args], capture_output=True, text=True, check=False)


def bench_verify(spark: Any, root: Path, deep: bool, runs: int, task_counts: list[int]) -> None:
    """verify_paths and verify_on_spark at each task count, interleaved, best of ``runs``."""
    options = VerifyOptions(deep=deep)
    paths = [str(root)]
    default = spark.sparkContext.defaultParallelism * TASKS_PER_CORE
    counts = [default, *(t for t in task_counts if t != default)]
    best = {0: float("inf"), **{t: float("inf") for t in counts}}
    results: dict[int, Any] = {}
    for _ in range(runs):
        seconds, results[0] = wall(lambda: verify_paths(paths, options))
        best[0] = min(best[0], seconds)
        for tasks in counts:
            seconds, results[tasks] = wall(
                lambda t=tasks: verify_on_spark(spark, paths, options, t)
            )
            best[tasks] = min(best[tasks], seconds)
    local = results[0]
    if any(render_json(r) != render_json(local) for r in results.values()):
        sys.exit(f"verify_on_spark {'deep' if deep else 'shallow'} differs from verify_paths")
    s = local.summary()
    print(
        f"\nverify {'--deep' if deep else 'shallow'}: {s['partitions']} partitions, "
        f"{s['segments']} segments, {s['batches']} batches, {s['bytes'] / 2**20:.0f} MiB; "
        f"findings {s['findings']}, exit {exit_code(local, 'error')}; best of {runs}"
    )
    line("kdump verify (verify_paths, 1 process)", best[0])
    for tasks in counts:
        note = " (default)" if tasks == default else ""
        line(
            f"verify_on_spark, warm, {tasks} tasks{note}",
            best[tasks],
            f"ratio {best[0] / best[tasks]:.2f}",
        )


def bench_processes(root: Path, deep: bool) -> None:
    flags = ["--deep"] if deep else []
    local_s, local = wall(lambda: run("verify", str(root), "--format", "json", *flags))
    cold_s, cold = wall(
        lambda: run("spark", "verify", str(root), "--format", "json", "--master", MASTER, *flags)
    )
    if (local.returncode, local.stdout) != (cold.returncode, cold.stdout):
        sys.exit(f"kdump spark verify differs from kdump verify:\n{cold.stderr[-2000:]}")
    label = "--deep " if deep else ""
    line(f"process: kdump verify {label}DIR", local_s)
    line(
        f"process: kdump spark verify {label}DIR (JVM start)",
        cold_s,
        f"ratio {local_s / cold_s:.2f}",
    )


def bench_export(spark: Any, root: Path, runs: int) -> None:
    """Records/s of the export, one Spark task per segment, against one process."""
    tasks = segment_tasks([str(root)])
    schema = arrow_schema(RECORD_SCHEMA)
    local_out, out = OUT / "spark-export-local", OUT / "spark-export"

    def one_process() -> int:
        shutil.rmtree(local_out, ignore_errors=True)
        local_out.mkdir(parents=True)
        total = 0
        for i, task in enumerate(tasks):
            export = SegmentExport(task, schema)
            with pq.ParquetWriter(local_out / f"part-{i:05d}.parquet", schema) as writer:
                for batch in export.batches():
                    writer.write_batch(batch)
            total += export.records
        return total

    local_best = spark_best = float("inf")
    records = exported = 0
    for _ in range(runs):
        seconds, records = wall(one_process)
        local_best = min(local_best, seconds)
        seconds, result = wall(
            lambda: export_on_spark(spark, [str(root)], str(out), overwrite=True)
        )
        spark_best = min(spark_best, seconds)
        exported = result.records
    assert exported == records, (exported, records)
    parquet = sum(p.stat().st_size for p in out.glob("*.parquet"))
    print(
        f"\nexport: {records} records from {len(tasks)} segments "
        f"({parquet / 2**20:.0f} MiB of Parquet)"
    )
    line(
        f"SegmentExport + pyarrow Parquet, 1 process, best of {runs}",
        local_best,
        f"{records / local_best:8.0f} records/s",
    )
    line(
        f"export_on_spark, warm, {len(tasks)} tasks, best of {runs}",
        spark_best,
        f"{records / spark_best:8.0f} records/s  ratio {local_best / spark_best:.2f}",
    )


def study(args: argparse.Namespace) -> int:
    modes = (False,) if args.skip_deep else (False, True)
    print(f"{os.cpu_count()} cores; Spark master {MASTER}")
    verify_root = build_log_dir(
        f"spark-verify-{args.study_partitions}x{args.segments}x{args.segment_kib}k",
        args.study_partitions,
        args.segments,
        args.segment_kib,
    )
    export_root = build_log_dir(
        f"spark-export-{args.export_segments}x{args.export_segment_mib}m",
        (args.export_segments + 1) // 2,
        2,
        args.export_segment_mib * 1024,
    )
    spark = build_session(MASTER, {"spark.ui.enabled": "false"})
    try:
        spark.sparkContext.parallelize(range(4), 2).count()  # start the Python workers
        for deep in modes:
            if not args.skip_verify:
                counts = args.tasks if args.tasks is not None else [2, 24]
                bench_verify(spark, verify_root, deep, args.runs, counts)
        if not args.skip_export:
            bench_export(spark, export_root, args.runs)
    finally:
        spark.stop()
    if not args.skip_processes:
        print("\nend to end, one process each:")
        for deep in modes:
            bench_processes(verify_root, deep)
    return 0


# -- the fleet (issue 33) ------------------------------------------------------------------------

SHAPES = (127, 1024, 16 * 1024)
BROKERS = (1, 2, 3)
DAMAGED = 3
TIME_RANGE = f"{T0}:{T0 + 600_000}"
"""The first ten minutes of every partition's records (bench_verify: a batch a second)."""
NOT_IN_BEFORE = "n/a (not in before)"
AUDITS_ROW = "fleet: verify --output of brokers 1, 2, 3"
THREE = "spark export of 3 brokers, one replica each"
REPORT_ROW = "fleet: report RESULTS (3 results, no segment read)"


def build_fleet(partitions: int, partition_mib: int, segment_mib: int) -> Path:
    """bench/out/fleet-…/ with partitions/ (one copy) and broker{1,2,3}/kafka-logs/."""
    root = OUT / f"fleet-{partitions}x{partition_mib}m"
    if (root / "done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    start = time.perf_counter()
    source = root / "partitions"
    for p in range(partitions):
        shape = SHAPES[p % len(SHAPES)]
        build_partition(source / f"topic{p % 20}-{p // 20}", partition_mib, segment_mib, shape)
    for broker in BROKERS:
        log_dir = root / f"broker{broker}" / "kafka-logs"
        shutil.copytree(source, log_dir, copy_function=os.link)
        (log_dir / "meta.properties").write_text(
            f"version=1\nnode.id={broker}\ncluster.id=bench-fleet-1\n"
        )
    for part in damaged_partitions(root):
        log = min(part.glob("*.log"))
        data = bytearray(log.read_bytes())  # its own copy: the other brokers keep theirs
        data[len(data) // 2] ^= 0xFF
        log.unlink()
        log.write_bytes(bytes(data))
    (root / "done").touch()
    size = sum(p.stat().st_size for p in source.rglob("*.log"))
    print(
        f"built {root.relative_to(REPO)}: {partitions} partitions x 3 replicas, "
        f"{size / 2**30:.2f} GiB of .log per broker, in {time.perf_counter() - start:.0f} s",
        flush=True,
    )
    return root


def damaged_partitions(root: Path) -> list[Path]:
    return sorted(p for p in (root / "broker2" / "kafka-logs").iterdir() if p.is_dir())[:DAMAGED]


class Ran(NamedTuple):
    wall: float
    cpu: float
    """User + system seconds of the child and the children it waited for (not Spark's JVM)."""
    code: int
    stdout: str
    load: float

    def figure(self) -> str:
        return f"{self.wall:.2f} s wall, {self.cpu:.2f} s CPU (load {self.load:.1f})"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Placement(NamedTuple):
    """Where a Spark command runs: its name in the table, its options, its environment."""

    name: str
    args: list[str]
    env: dict[str, str]


LOCAL = Placement(MASTER, ["--master", MASTER], {})


def standalone() -> tuple[Placement, Any]:
    """tests/sparkcluster.py's cluster (a master and two workers of one core each on this
    machine, executors whose Python has no kdump: it is shipped), started; and the cluster."""
    sys.path.insert(0, str(REPO / "tests"))
    from sparkcluster import CLUSTER

    cluster = CLUSTER.ready()
    python = f"spark.pyspark.python={cluster.executor_python}"
    env = {k: cluster.env()[k] for k in ("SPARK_CONF_DIR", "SPARK_LOCAL_IP")}
    return Placement("standalone", ["--master", cluster.url, "--conf", python], env), cluster


def kdump_in(
    tree: str | None,
    args: list[str],
    keep_stdout: bool = True,
    env_extra: dict[str, str] | None = None,
) -> Ran:
    """``kdump ARGS`` as a child process of ``tree`` (None: this one): ``python -P`` and the
    working directory bench/out/, so that no other tree's kdump comes first (Spark's Python
    workers put their working directory first on their path)."""
    env = dict(os.environ)
    env.update(env_extra or {})
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = tree
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "kdump", *args],
        stdout=subprocess.PIPE if keep_stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=OUT,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1, 2):
        sys.exit(f"kdump {' '.join(args)} ({tree or 'this tree'}): exit {done.returncode}\n"
                 f"{done.stderr[-2000:]}")  # fmt: skip
    load = os.getloadavg()[0]
    return Ran(wall, _children_cpu() - cpu, done.returncode, done.stdout or "", load)


def offers(tree: str | None, command: list[str], option: str) -> bool:
    """Whether ``kdump COMMAND --help`` of ``tree`` names ``option``."""
    return option in kdump_in(tree, [*command, "--help"]).stdout


def exported_records(ran: Ran) -> int:
    found = re.search(r"exported (\d+) record", ran.stdout)
    if found is None:
        sys.exit(f"spark export printed no record count: {ran.stdout[-500:]}")
    return int(found.group(1))


def findings_of(ran: Ran) -> list[Any]:
    return json.loads(ran.stdout)["findings"]


class Table:
    """The figures of each row for each tree, printed as they come and once more at the end."""

    def __init__(self, trees: dict[str, str | None]) -> None:
        self.trees = trees
        self.rows: dict[str, dict[str, str]] = {}

    def put(self, row: str, tree: str, text: str) -> None:
        self.rows.setdefault(row, {})[tree] = text
        print(f"  {row:<58} {tree:<7} {text}", flush=True)

    def markdown(self) -> str:
        names = list(self.trees)
        lines = [f"| command | {' | '.join(names)} |", f"| --- |{' --- |' * len(names)}"]
        for row, cells in self.rows.items():
            lines.append(f"| {row} | {' | '.join(cells.get(n, '-') for n in names)} |")
        return "\n".join(lines)


def table_rows(table: Table, root: Path, work: Path, placements: list[Placement]) -> None:
    """(1): the issue's table, each command in every tree one after the other, each Spark
    command at each placement (local[2], and the standalone cluster with --cluster)."""
    log_dir = str(root / "broker2" / "kafka-logs")
    part = str(root / "broker1" / "kafka-logs" / "topic0-0")  # 127-byte batches
    out = work / "export"
    rows: list[tuple[str, list[str], Placement | None]] = [
        ("verify --jobs 1", ["verify", log_dir, "--jobs", "1", "--format", "json"], None),
        ("verify --jobs 2", ["verify", log_dir, "--jobs", "2", "--format", "json"], None),
        *((f"spark verify ({p.name})", ["spark", "verify", log_dir, "--format", "json"], p)
          for p in placements),
        ("verify --deep --jobs 2",
         ["verify", log_dir, "--deep", "--jobs", "2", "--format", "json"], None),
        *((f"spark verify --deep ({p.name})",
           ["spark", "verify", log_dir, "--deep", "--format", "json"], p) for p in placements),
    ]  # fmt: skip
    for label, args, where in rows:
        for name, tree in table.trees.items():
            if where is not None and where is not LOCAL and tree is not None:
                table.put(label, name, "n/a (ships only this tree)")
                continue
            extra = [] if where is None else where.args
            ran = kdump_in(tree, [*args, *extra], env_extra=None if where is None else where.env)
            table.put(label, name, f"{ran.figure()}, exit {ran.code}")
            if label.startswith("spark"):
                local = "verify --deep --jobs 2" if "--deep" in args else "verify --jobs 1"
                same = table.rows[local].get(f"{name}:findings")
                if same != json.dumps(findings_of(ran)):
                    sys.exit(f"{name}: {label}'s findings differ from verify's")
            else:
                table.rows[label][f"{name}:findings"] = json.dumps(findings_of(ran))
    for where in placements:
        label = f"spark export to Parquet ({where.name})"
        for name, tree in table.trees.items():
            if where is not LOCAL and tree is not None:
                table.put(label, name, "n/a (ships only this tree)")
                continue
            export_row(table, label, name, tree, [log_dir], out, where)
    for jobs in ("1", "2"):
        args = ["dump", part, "--deep-iteration", "--format", "jsonl", "--jobs", jobs]
        for name, tree in table.trees.items():
            ran = kdump_in(tree, args, keep_stdout=False)
            table.put(
                f"dump PART --deep-iteration --format jsonl --jobs {jobs}", name, ran.figure()
            )


def export_row(
    table: Table,
    label: str,
    name: str,
    tree: str | None,
    args: list[str],
    out: Path,
    where: Placement,
) -> None:
    """``spark export ARGS -o OUT`` of ``tree`` at ``where``: its time and records/s in the
    table (its record count kept for the checks)."""
    shutil.rmtree(out, ignore_errors=True)
    ran = kdump_in(
        tree, ["spark", "export", *args, "-o", str(out), *where.args], env_extra=where.env
    )
    records = exported_records(ran)
    table.put(
        label, name, f"{ran.figure()}, {records:,} records, {records / ran.wall:,.0f} records/s"
    )
    table.rows[label][f"{name}:records"] = str(records)
    shutil.rmtree(out, ignore_errors=True)


def fleet_rows(table: Table, root: Path, work: Path, placements: list[Placement]) -> None:
    """(2) and (3): what the before tree cannot do prints NOT_IN_BEFORE."""
    logs = [str(root / f"broker{b}" / "kafka-logs") for b in BROKERS]
    for name, tree in table.trees.items():
        results = work / f"results-{name}"
        shutil.rmtree(results, ignore_errors=True)
        if not offers(tree, ["verify"], "--output"):
            table.put(AUDITS_ROW, name, NOT_IN_BEFORE)
            table.put(REPORT_ROW, name, NOT_IN_BEFORE)
            continue
        results.mkdir(parents=True)
        audits = []
        for log_dir in logs:
            target = str(results / "{broker_id}-{started}.json")
            audits.append(
                kdump_in(tree, ["verify", log_dir, "--format", "json", "-q", "-o", target])
            )
        page = work / f"fleet-{name}.html"
        report = kdump_in(tree, ["report", str(results), "-o", str(page)])
        table.put(
            AUDITS_ROW,
            name,
            ", ".join(f"{a.wall:.2f} s (exit {a.code})" for a in audits)
            + f" (load {audits[-1].load:.1f})",
        )
        table.put(
            REPORT_ROW,
            name,
            f"{report.figure()}, {page.stat().st_size / 2**10:.0f} KiB",
        )
        shutil.rmtree(results, ignore_errors=True)
    out = work / "export"
    filtered = ["--topic", "topic1", "--time-range", TIME_RANGE]
    for label, option, extra, where in (
        *((f"{THREE} ({p.name})", "--all-replicas", [], p) for p in placements),
        (f"the same with --topic topic1 --time-range ({MASTER})", "--time-range", filtered, LOCAL),
    ):
        for name, tree in table.trees.items():
            if not offers(tree, ["spark", "export"], option):
                table.put(label, name, NOT_IN_BEFORE)
                continue
            if where is not LOCAL and tree is not None:
                table.put(label, name, "n/a (ships only this tree)")
                continue
            export_row(table, label, name, tree, [*logs, *extra], out, where)


def fleet(args: argparse.Namespace) -> int:
    print(f"{os.cpu_count()} cores; Spark master {MASTER}; load {os.getloadavg()}")
    root = build_fleet(args.partitions, args.partition_mib, args.segment_mib)
    trees: dict[str, str | None] = {}
    if args.before is not None:
        trees["before"] = args.before
    trees["after"] = None
    table = Table(trees)
    work = root / "work"
    work.mkdir(exist_ok=True)
    placements, cluster = [LOCAL], None
    try:
        if args.cluster:
            where, cluster = standalone()
            placements.append(where)
            print(f"standalone cluster {cluster.url}: 2 workers of 1 core, executors' Python "
                  f"{cluster.executor_python} (no kdump: shipped)")  # fmt: skip
        if not args.skip_table:
            print("(1) the issue's table, broker 2's log dir")
            table_rows(table, root, work, placements)
        print("(2) the fleet audit, (3) the export of the three brokers")
        fleet_rows(table, root, work, placements)
    finally:
        if cluster is not None:
            cluster.stop()
    for where in placements:
        one = table.rows.get(f"spark export to Parquet ({where.name})", {}).get("after:records")
        copies = table.rows[f"{THREE} ({where.name})"].get("after:records")
        if one is not None and copies is not None and not int(one) <= int(copies) < 2 * int(one):
            # broker 2's own export lacks what its damage cut; three copies would be 3x
            sys.exit(f"{where.name}: three brokers gave {copies} records, broker 2 alone {one}")
    records = {table.rows[f"{THREE} ({p.name})"].get("after:records") for p in placements}
    if len(records) != 1:
        sys.exit(f"the placements exported other numbers of records: {records}")
    shutil.rmtree(work, ignore_errors=True)
    print("\n" + table.markdown())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=30)
    parser.add_argument("--partition-mib", type=int, default=20)
    parser.add_argument("--segment-mib", type=int, default=8)
    parser.add_argument("--before", default=None, help="the tree before (holding kdump/)")
    parser.add_argument("--skip-table", action="store_true", help="(2) and (3) only")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="each Spark command on tests/sparkcluster.py's standalone cluster too (issue 40)",
    )
    parser.add_argument("--study", action="store_true", help="the in-process study instead")
    parser.add_argument("--study-partitions", type=int, default=210)
    parser.add_argument("--segments", type=int, default=2)
    parser.add_argument("--segment-kib", type=int, default=4096)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", type=int, nargs="*", default=None)
    parser.add_argument("--export-segments", type=int, default=12)
    parser.add_argument("--export-segment-mib", type=int, default=16)
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--skip-processes", action="store_true")
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--skip-deep", action="store_true", help="shallow verify only")
    args = parser.parse_args()
    return study(args) if args.study else fleet(args)


if __name__ == "__main__":
    sys.exit(main())
