"""`kdump spark verify` on local[2] against one `kdump verify` process, and export records/s.

Builds (once) broker log directories under bench/out/: every segment is Kafka-written v2
oracle logs (plain, gzip, lz4, variety, followerlive) appended one after the other, each copy's
batch base offsets moved up (the v2 base offset lies outside the CRC), with the .index and
.timeindex that LogSegment.recover writes for it (kdump.repair.rebuild); each partition starts
at a different offset. Then, on the same directories:

(a) verify, shallow and --deep, of ``--partitions`` (default 210) partitions of
    ``--segments`` segments of ``--segment-kib`` KiB: one `kdump verify` run (verify_paths in
    this process) against verify_on_spark in a warm local[2] session at the default and other
    task counts (``--tasks``), interleaved, best of ``--runs``; then end to end as processes
    (`kdump verify DIR` against `kdump spark verify DIR --master local[2]`, JVM start-up
    included). Ratio = kdump / Spark (target >= 1.5 on 2 cores). The two reports must be
    identical or the bench stops.
(b) export: records/s of export_on_spark (one task per segment) on local[2] against one
    process running the same extraction (SegmentExport) into pyarrow's Parquet writer, on
    ``--export-segments`` segments of ``--export-segment-mib`` MiB, best of ``--runs``.

Wall time, not CPU time, since parallelism is what is measured; the 1-minute load average is
printed beside each number, as other processes share the 2 cores. Run from the repository root
(needs the ``spark`` extra and Java 17)::

    .venv/bin/python bench/bench_spark.py                  # ~2 GiB of bench/out/
    .venv/bin/python bench/bench_spark.py --partitions 200 --runs 1 --skip-export
"""

from __future__ import annotations

import argparse
import itertools
import mmap
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from kdump.render.report import render_json

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.commands.verify import exit_code
from kdump.format.layout import LOG_HEADER
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from kdump.format.walk import iter_batches
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
        for data in [s.log_path.read_bytes()]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=210)
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
    modes = (False,) if args.skip_deep else (False, True)
    print(f"{os.cpu_count()} cores; Spark master {MASTER}")
    verify_root = build_log_dir(
        f"spark-verify-{args.partitions}x{args.segments}x{args.segment_kib}k",
        args.partitions,
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


if __name__ == "__main__":
    sys.exit(main())
