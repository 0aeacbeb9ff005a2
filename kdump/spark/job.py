"""The Spark jobs: `kdump spark verify` and `kdump spark export`.

The driver lists partition directories and segments (kdump.discovery.discover); executors
run the library's own checks and parsers on them; the driver assembles the result exactly as
`kdump verify` does (kdump.checks.verify.collect_result). Paths are made absolute on the driver
and must be visible to every executor (a shared or distributed file system); URLs (s3://, gs://,
az://, file://) need no shared mount: each executor reads its own segments' ranges through
kdump.storage.remote, with the driver's store options (endpoint, credentials' source, Aiven keys).
"""

from __future__ import annotations

import heapq
import os
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from kdump.checks.findings import Finding
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import PartitionResult
from kdump.checks.verify import VerifyResult, collect_result, verify_partition
from kdump.discovery import discover
from kdump.errors import KdumpError, RemoteError
from kdump.render.describe import kept
from kdump.render.jsonl import to_json
from kdump.spark.extract import SegmentExport, SegmentTask, segment_tasks
from kdump.spark.schema import FINDINGS_SCHEMA, RECORD_SCHEMA, arrow_schema
from kdump.storage import ObjectStore, is_url
from kdump.unified_log import OpenOptions, UnifiedLog

TASKS_PER_CORE = 1
"""Verify packs partitions into this many Spark tasks per core, balanced by bytes of log
(pack_by_size): each task costs Spark tens of milliseconds, more than a shallow verify of
hundreds of MiB takes with kdump's C paths (bench/bench_spark.py: 2 tasks on local[2] beat 6
and 24, shallow and --deep)."""

OUTPUT_FORMATS = ("parquet", "json")


def absolute(paths: Sequence[str]) -> list[str]:
    """Executors do not share the driver's working directory (URLs are left as they are)."""
    return [p if is_url(p) else os.path.abspath(p) for p in paths]


VerifyJob = tuple[int, UnifiedLog]
"""(index, the opened partition: its storage travels with it, an object store's options too)."""


def _verify_group(group: list[VerifyJob]) -> list[tuple[int, PartitionResult | tuple[str, int]]]:
    out: list[tuple[int, PartitionResult | tuple[str, int]]] = []
    for i, log in group:
        try:
            out.append((i, verify_partition(log)))
        except KdumpError as e:
            out.append((i, (str(e), int(e.exit_code))))
    return out


T = TypeVar("T")


def pack_by_size(items: Sequence[T], sizes: Sequence[int], bins: int) -> list[list[T]]:
    """``items`` in ``bins`` groups of about equal total size: largest first, each to the
    group with the least so far (LPT scheduling, within 4/3 of the best)."""
    groups: list[list[T]] = [[] for _ in range(bins)]
    heap = [(0, b) for b in range(bins)]
    for i in sorted(range(len(items)), key=lambda i: -sizes[i]):
        total, b = heapq.heappop(heap)
        groups[b].append(items[i])
        heapq.heappush(heap, (total + sizes[i], b))
    return groups


def _log_bytes(log: UnifiedLog) -> int:
    try:
        return log.size
    except KdumpError:  # unreadable here: the executor reports it
        return 0


def verify_on_spark(
    spark: SparkSession,
    paths: Sequence[str],
    options: VerifyOptions,
    tasks: int | None = None,
    store: ObjectStore | None = None,
) -> VerifyResult:
    """`kdump verify` with the partitions verified on the executors, ``tasks`` Spark tasks
    (default: TASKS_PER_CORE per core)."""
    found = discover(absolute(paths), store, OpenOptions(verify=options))
    found.raise_first()
    targets = found.partitions
    sc = spark.sparkContext
    slices = max(1, min(len(targets), tasks or sc.defaultParallelism * TASKS_PER_CORE))
    jobs: list[VerifyJob] = list(enumerate(targets))
    groups = pack_by_size(jobs, [_log_bytes(t) for t in targets], slices)
    rdd = sc.parallelize(groups, slices).flatMap(_verify_group)
    results: dict[int, PartitionResult] = {}
    for i, value in rdd.collect():
        if not isinstance(value, PartitionResult):
            raise RemoteError(*value)
        results[i] = value
    number = {id(t): i for i, t in enumerate(targets)}
    return collect_result(found, lambda t: results[number[id(t)]])


def finding_rows(result: VerifyResult) -> list[tuple[Any, ...]]:
    """FINDINGS_SCHEMA rows in the order of ``result.findings``."""
    owned: list[tuple[Finding, str | None]] = [
        (f, r.path) for r in result.partitions for f in r.findings
    ]
    owned += [(f, None) for f in result.log_dir_findings]
    return [_row(f, partition_path) for f, partition_path in owned]


def _row(f: Finding, partition_path: str | None) -> tuple[Any, ...]:
    return (
        f.code,
        f.severity.value,
        f.path,
        f.offset,
        f.position,
        f.message,
        f.fix,
        f.advice,
        partition_path,
    )


def write_findings(
    spark: SparkSession,
    rows: list[tuple[Any, ...]],
    output: str,
    output_format: str = "parquet",
    overwrite: bool = False,
) -> None:
    """The findings as one file in ``output`` (their order kept), Parquet or JSON Lines."""
    df = spark.createDataFrame(rows, FINDINGS_SCHEMA).coalesce(1)
    _write(df, output, output_format, overwrite)


def refuse_existing(spark: SparkSession, output: str) -> None:
    """Fail before any work when ``output`` exists (on whatever file system Hadoop sees)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(output)
    if path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path):
        raise KdumpError(f"{output}: already exists; --overwrite replaces it")


def _write(df: DataFrame, output: str, output_format: str, overwrite: bool) -> None:
    writer = df.write.mode("overwrite" if overwrite else "errorifexists")
    if output_format == "json":
        writer.option("ignoreNullFields", "false").json(output)
    elif output_format == "parquet":
        writer.parquet(output)
    else:
        raise KdumpError(f"unknown output format {output_format!r}; use parquet or json")


@dataclass
class ExportResult:
    output: str
    segments: int = 0
    records: int = 0
    findings: list[Finding] = field(default_factory=list)
    finding_rows: list[tuple[Any, ...]] = field(default_factory=list)

    def checked(self) -> VerifyResult:
        """The findings as a VerifyResult, for its counts and `kdump verify`'s exit codes."""
        return VerifyResult(log_dir_findings=self.findings)


FINDINGS_DIR = "_findings"
"""Export findings go to DIR/_findings; readers of DIR skip names that start with _."""
TEMPORARY_DIR = "_temporary"
SUCCESS = "_SUCCESS"
"""Written last, as Spark's writers do: its absence marks an export that did not finish."""


def output_filesystem(output: str, store: ObjectStore) -> tuple[pafs.FileSystem, str]:
    """pyarrow's view of ``output``: a local path, or a URL through the fsspec file system kdump
    reads URLs with (kdump.storage.remote.store: the same endpoint, credentials chain and retries;
    PySpark's wheel has no Hadoop connector for s3a://, and pyarrow's own S3 client ignores
    AWS_ENDPOINT_URL)."""
    if is_url(output):
        from kdump.storage.remote.store import filesystem

        fs, path = filesystem(output, store.options)
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(output)


def export_object(row: dict[str, Any]) -> dict[str, Any]:
    """An exported row as JSON that keeps every byte, as ``kdump dump --format jsonl`` keeps
    them (issue 29): key, value and header values UTF-8 text or base64, each with its encoding."""
    shown: dict[str, Any] = {}
    for name, value in row.items():
        if name in ("key", "value"):
            shown[name], shown[f"{name}_encoding"] = kept(value)
        elif name == "headers":
            shown[name] = [_header_object(h["key"], *kept(h["value"])) for h in value]
        else:
            shown[name] = value
    return shown


def _header_object(key: str, value: str | None, encoding: str | None) -> dict[str, Any]:
    return {"key": key, "value": value, "value_encoding": encoding}


def _write_parquet(
    export: SegmentExport, schema: pa.Schema, fs: pafs.FileSystem, temporary: str
) -> None:
    with pq.ParquetWriter(temporary, schema, filesystem=fs) as writer:
        for batch in export.batches():
            writer.write_batch(batch)


def _write_json(
    export: SegmentExport, schema: pa.Schema, fs: pafs.FileSystem, temporary: str
) -> None:
    with fs.open_output_stream(temporary) as out:
        for batch in export.batches():
            out.write(
                b"".join(to_json(export_object(r)).encode() + b"\n" for r in batch.to_pylist())
            )


_WRITERS = {"parquet": _write_parquet, "json": _write_json}


@dataclass(frozen=True)
class _WriteSegments:
    """Runs on an executor: each SegmentTask's records into one Parquet or JSON Lines file,
    written under _temporary and moved into place, so a retried task replaces its file, never
    adds one."""

    output: str
    options: VerifyOptions
    store: ObjectStore
    output_format: str = "parquet"

    def __call__(
        self, items: Iterable[tuple[int, SegmentTask]]
    ) -> Iterator[tuple[int, int, list[Finding]]]:
        fs, base = output_filesystem(self.output, self.store)
        schema = arrow_schema(RECORD_SCHEMA)
        write = _WRITERS[self.output_format]
        for index, task in items:
            export = SegmentExport(task, schema, self.options)
            name = f"part-{index:05d}-{task.segment:020d}.{self.output_format}"
            temporary = f"{base}/{TEMPORARY_DIR}/{name}.{uuid.uuid4().hex}"
            write(export, schema, fs, temporary)
            fs.move(temporary, f"{base}/{name}")
            yield index, export.records, export.findings


def export_on_spark(
    spark: SparkSession,
    paths: Sequence[str],
    output: str,
    options: VerifyOptions | None = None,
    overwrite: bool = False,
    store: ObjectStore | None = None,
    output_format: str = "parquet",
) -> ExportResult:
    """Every record of every segment under ``paths`` into Parquet (or JSON Lines: ``json``) at
    ``output``, one Spark task per segment; a corrupt segment gives its valid prefix and its
    findings, never a failure.

    Executors write the Parquet files with pyarrow, straight from the Arrow batches: through
    Spark's writer the JVM spent more CPU re-encoding the rows than the extraction itself.
    """
    if output_format not in _WRITERS:
        raise KdumpError(f"unknown output format {output_format!r}; use parquet or json")
    options = options or VerifyOptions()
    store = store or ObjectStore()
    fs, base = output_filesystem(output, store)
    if fs.get_file_info(base).type != pafs.FileType.NotFound:
        if not overwrite:
            raise KdumpError(f"{output}: already exists; --overwrite replaces it")
        fs.delete_dir(base)
    tasks = segment_tasks(absolute(paths), store)
    fs.create_dir(f"{base}/{TEMPORARY_DIR}", recursive=True)
    sc = spark.sparkContext
    # One element per slice: parallelize keeps them apart, so each segment is one Spark task.
    rdd = sc.parallelize(list(enumerate(tasks)), max(1, len(tasks)))
    outcomes = sorted(
        rdd.mapPartitions(_WriteSegments(output, options, store, output_format)).collect()
    )
    temporary = f"{base}/{TEMPORARY_DIR}"
    # an object store has no empty folders: the prefix went with its last object
    if fs.get_file_info(temporary).type != pafs.FileType.NotFound:
        fs.delete_dir(temporary)
    result = ExportResult(output, segments=len(tasks))
    for index, records, findings in outcomes:
        result.records += records
        result.findings += findings
        result.finding_rows += [_row(f, tasks[index].partition_path) for f in findings]
    fs.create_dir(f"{base}/{FINDINGS_DIR}")
    table = pa.Table.from_pylist(
        [dict(zip(FINDINGS_SCHEMA.fieldNames(), row, strict=True)) for row in result.finding_rows],
        schema=arrow_schema(FINDINGS_SCHEMA),
    )
    pq.write_table(table, f"{base}/{FINDINGS_DIR}/part-00000.parquet", filesystem=fs)
    with fs.open_output_stream(f"{base}/{SUCCESS}"):
        pass
    return result
