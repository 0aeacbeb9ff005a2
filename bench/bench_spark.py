"""`kdump spark verify` on local[2] against one `kdump verify` process, and export records/s.

Builds (once) a broker log directory of ``--partitions`` (default 210) partition directories
under bench/out/, each made of Kafka-written oracle segments (plain, gzip, lz4, variety,
followerlive) repeated until the partition holds about ``--partition-kib`` KiB, every copy with
its batches' base offsets moved up (the v2 base offset lies outside the CRC, and the .index and
.timeindex hold offsets relative to the segment's base, so they stay right as copied). Then:

(a) wall time of one `kdump verify DIR --format json` process and of `kdump spark verify DIR
    --master local[2] --format json` processes (JVM start-up included), and of verify_on_spark
    in a warm session at several task counts; shallow and --deep. Ratio = kdump / Spark
    (target >= 1.5 on 2 cores). Both reports must be identical, or the bench stops.
(b) export: records/s of export_on_spark (one task per segment) on local[2], against one
    process running the same per-segment extraction (SegmentExport) into pyarrow's Parquet
    writer, on partitions of two segments of ``--export-segment-mib`` MiB (oracle v2 logs
    appended with their offsets moved up).

Wall time, not CPU time, since parallelism is what is measured; the machine's load average is
printed beside the numbers, as other processes share the 2 cores. Run from the repository root
(needs the ``spark`` extra and Java 17)::

    .venv/bin/python bench/bench_spark.py                       # ~0.5 GiB of bench/out/
    .venv/bin/python bench/bench_spark.py --partitions 200 --partition-kib 1024
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from kdump.checks.verify import VerifyOptions
from kdump.format.batch import LOG_HEADER, iter_batches
from kdump.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    list_segments,
    segment_file_name,
)
from kdump.spark.extract import SegmentExport, segment_tasks
from kdump.spark.job import export_on_spark, verify_on_spark
from kdump.spark.schema import RECORD_SCHEMA, arrow_schema
from kdump.spark.session import build_session

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
ORACLE = REPO / "fixtures" / "oracle"
TEMPLATES = ["plain-0", "gzip-0", "lz4-0", "variety-0", "followerlive-0"]
KDUMP = Path(sys.executable).with_name("kdump")
MASTER = "local[2]"


def shifted(source: Path, shift: int) -> tuple[bytes, int, int]:
    """A .log's bytes with every batch's base offset moved up by ``shift``; its first and last
    offsets after the move."""
    data = bytearray(source.read_bytes())
    first = last = -1
    for batch in iter_batches(data, str(source)):
        offset, size = LOG_HEADER.unpack_from(data, batch.position)
        LOG_HEADER.pack_into(data, batch.position, offset + shift, size)
        first = batch.base_offset + shift if first < 0 else first
        last = batch.last_offset + shift
    return bytes(data), first, last


def build_partition(part: Path, template: Path, first_offset: int, kib: int) -> None:
    segments = list_segments(template)
    span = max(s.base_offset for s in segments) + 10_000  # past the template's last offset
    size = sum(s.log_path.stat().st_size for s in segments)
    copies = max(1, kib * 1024 // size)
    part.mkdir(parents=True)
    for copy in range(copies):
        shift = first_offset + copy * span
        for seg in segments:
            base = seg.base_offset + shift
            data, _, _ = shifted(seg.log_path, shift)
            (part / segment_file_name(base, LOG_SUFFIX)).write_bytes(data)
            for suffix, source in (
                (INDEX_SUFFIX, seg.index_path),
                (TIME_INDEX_SUFFIX, seg.time_index_path),
            ):
                shutil.copyfile(source, part / segment_file_name(base, suffix))


def log_dir(partitions: int, kib: int) -> Path:
    """The bench log dir for these sizes under bench/out/, built on first use."""
    root = OUT / f"spark-{partitions}p-{kib}k" / "kafka-logs"
    if root.exists():
        return root
    start = time.perf_counter()
    tmp = root.with_name("kafka-logs.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    (tmp / "meta.properties").write_text("version=1\nbroker.id=0\n")
    for i in range(partitions):
        name = TEMPLATES[i % len(TEMPLATES)]
        topic = name.removesuffix("-0")
        build_partition(tmp / f"{topic}-{i}", ORACLE / name, i * 10_000_000, kib)
    tmp.rename(root)
    size = sum(p.stat().st_size for p in root.rglob("*.log"))
    print(
        f"built {root.relative_to(REPO)}: {partitions} partitions, {size / 2**20:.0f} MiB of "
        f".log in {time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return root


def export_dir(segments: int, mib: int) -> Path:
    """Partitions of two big segments each, every segment the v2 oracle logs appended one after
    the other (offsets moved up) until it holds ``mib`` MiB: segments of a realistic size."""
    root = OUT / f"spark-export-{segments}x{mib}m" / "kafka-logs"
    if root.exists():
        return root
    start = time.perf_counter()
    sources = [s.log_path for name in TEMPLATES for s in list_segments(ORACLE / name)]
    tmp = root.with_name("kafka-logs.part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    next_offset, n = 0, 0
    for i in range(segments):
        part = tmp / f"export-{i // 2}"
        part.mkdir(exist_ok=True)
        base, size = next_offset, 0
        with open(part / segment_file_name(base, LOG_SUFFIX), "wb") as f:
            while size < mib * 2**20:
                source = sources[n % len(sources)]
                n += 1
                first = next(iter_batches(source.read_bytes())).base_offset
                data, _, last = shifted(source, next_offset - first)
                f.write(data)
                size += len(data)
                next_offset = last + 1
        next_offset = 0 if i % 2 else next_offset
    tmp.rename(root)
    print(
        f"built {root.relative_to(REPO)}: {segments} segments of {mib} MiB in "
        f"{time.perf_counter() - start:.1f} s",
        flush=True,
    )
    return root


def wall(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KDUMP), *args], capture_output=True, text=True, check=False)


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def bench_verify(root: Path, deep: bool, task_counts: list[int]) -> None:
    flags = ["--deep"] if deep else []
    label = "deep" if deep else "shallow"
    local_s, local = wall(lambda: run("verify", str(root), "--format", "json", *flags))
    cold_s, cold = wall(
        lambda: run("spark", "verify", str(root), "--format", "json", "--master", MASTER, *flags)
    )
    if (local.returncode, local.stdout) != (cold.returncode, cold.stdout):
        sys.exit(f"kdump spark verify {label} differs from kdump verify:\n{cold.stderr[-2000:]}")
    summary = json.loads(local.stdout)["summary"]
    print(
        f"\nverify {label}: {summary['partitions']} partitions, {summary['segments']} segments, "
        f"{summary['batches']} batches, {summary['bytes'] / 2**20:.0f} MiB; findings "
        f"{summary['findings']}"
    )
    print(f"  kdump verify (1 process)             {local_s:7.2f} s   ({load()})")
    print(
        f"  kdump spark verify (new JVM)         {cold_s:7.2f} s   ratio {local_s / cold_s:.2f}"
        f"   ({load()})"
    )
    spark = build_session(MASTER, {"spark.ui.enabled": "false"})
    try:
        options = VerifyOptions(deep=deep)
        verify_on_spark(spark, [str(root)], options)  # start the Python workers
        for tasks in task_counts:
            seconds, _ = wall(lambda t=tasks: verify_on_spark(spark, [str(root)], options, t))
            print(
                f"  verify_on_spark, warm, {tasks:4d} tasks   {seconds:7.2f} s   "
                f"ratio {local_s / seconds:.2f}   ({load()})"
            )
    finally:
        spark.stop()


def bench_export(root: Path) -> None:
    """Records/s of the export, one Spark task per segment, against one process."""
    tasks = segment_tasks([str(root)])
    schema = arrow_schema(RECORD_SCHEMA)

    local_out = OUT / "spark-export-local"
    shutil.rmtree(local_out, ignore_errors=True)
    local_out.mkdir(parents=True)

    def one_process() -> int:
        total = 0
        for i, task in enumerate(tasks):
            export = SegmentExport(task, schema)
            with pq.ParquetWriter(local_out / f"part-{i:05d}.parquet", schema) as writer:
                for batch in export.batches():
                    writer.write_batch(batch)
            total += export.records
        return total

    local_s, records = wall(one_process)
    out = OUT / "spark-export"
    spark = build_session(MASTER, {"spark.ui.enabled": "false"})
    try:
        export_on_spark(spark, [str(root)], str(out), overwrite=True)  # warm up
        spark_s, result = wall(
            lambda: export_on_spark(spark, [str(root)], str(out), overwrite=True)
        )
    finally:
        spark.stop()
    assert result.records == records, (result.records, records)
    parquet = sum(p.stat().st_size for p in out.glob("*.parquet"))
    print(
        f"\nexport: {records} records from {len(tasks)} segments "
        f"({parquet / 2**20:.0f} MiB of Parquet)"
    )
    print(
        f"  SegmentExport + pyarrow Parquet, 1 process {local_s:7.2f} s   "
        f"{records / local_s:9.0f} records/s   ({load()})"
    )
    print(
        f"  export_on_spark, warm ({len(tasks)} tasks)  {spark_s:7.2f} s   "
        f"{records / spark_s:9.0f} records/s   ratio {local_s / spark_s:.2f}   ({load()})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=210)
    parser.add_argument("--partition-kib", type=int, default=2048)
    parser.add_argument("--tasks", type=int, nargs="*", default=None)
    parser.add_argument("--export-segments", type=int, default=12)
    parser.add_argument("--export-segment-mib", type=int, default=16)
    parser.add_argument("--skip-verify", action="store_true")
    parser.add_argument("--skip-export", action="store_true")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; Spark master {MASTER}")
    if not args.skip_verify:
        root = log_dir(args.partitions, args.partition_kib)
        counts = args.tasks or [2, 6, 24, args.partitions]
        bench_verify(root, deep=False, task_counts=counts)
        bench_verify(root, deep=True, task_counts=counts)
    if not args.skip_export:
        bench_export(export_dir(args.export_segments, args.export_segment_mib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
