"""The Spark jobs: `kdump spark verify` and `kdump spark export`.

The driver lists partition directories and segments (kdump.discovery.discover); executors
run the library's own checks and parsers on them; the driver assembles the result exactly as
`kdump verify` does (kdump.checks.verify.collect_result). Paths are made absolute on the driver
and must be visible to every executor (a shared or distributed file system); URLs (s3://, gs://,
az://, file://) need no shared mount: each executor reads its own segments' ranges through
kdump.storage.remote, with the driver's store options (endpoint, credentials' source, Aiven keys).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession

from kdump.checks.findings import Finding
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import PartitionResult, segments_to_check
from kdump.checks.segment import segment_result
from kdump.checks.verify import VerifyResult, collect_result, finish_result, verify_partition
from kdump.checks.verify_state import (
    AuditOptions,
    AuditSummary,
    SegmentIdentity,
    Verified,
    VerifyState,
    identify,
    key_of,
    restore_walk,
    reused_result,
    state_file,
    verified_record,
    walk_facts,
)
from kdump.config import MetadataConfigs
from kdump.discovery import discover
from kdump.errors import KdumpError, RemoteError
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.format.records import kept
from kdump.kraft.configs import take_node_image
from kdump.render.jsonl import to_json
from kdump.replicas import ReplicaChoice
from kdump.run import log_dir_of
from kdump.segment import LogSegment
from kdump.spark.extract import (
    ONE_REPLICA,
    ExportPlan,
    ReplicaRule,
    SegmentExport,
    SegmentTask,
    export_plan,
    visible_here,
)
from kdump.spark.schema import FINDINGS_SCHEMA, RECORD_SCHEMA, arrow_schema
from kdump.spark.ship import is_connect
from kdump.spark.tasks import default_parallelism, run_tasks
from kdump.storage import ObjectStore, absolute_location
from kdump.storage.arrow import output_filesystem
from kdump.unified_log import OpenOptions, UnifiedLog

TASKS_PER_CORE = 1
"""Verify packs partitions into this many Spark tasks per core, balanced by bytes of log
(pack_by_size): each task costs Spark tens of milliseconds, more than a shallow verify of
hundreds of MiB takes with kdump's C paths (bench/bench_spark.py: 2 tasks on local[2] beat 6
and 24, shallow and --deep)."""

OUTPUT_FORMATS = ("parquet", "json")


def absolute(paths: Sequence[str]) -> list[str]:
    """Executors do not share the driver's working directory (URLs are left as they are)."""
    return [absolute_location(p) for p in paths]


@dataclass
class PartitionPlan:
    """What ``--state`` lets a partition's task skip: the segments unchanged since verified
    clean (slot and record), and findings on those changed in place (by slot)."""

    reuse: list[tuple[int, Verified]] = field(default_factory=list)
    changed: list[tuple[int, Finding]] = field(default_factory=list)


VerifyJob = tuple[int, UnifiedLog, PartitionPlan | None, VerifyOptions]
"""(index, the opened partition: its storage travels with it, an object store's options too;
what the driver's state lets it skip; verify's options)."""

Records = list[tuple[str, Verified | None]]
"""What each segment walked leaves in the state (kdump.checks.verify_state.VerifyState.keep)."""

GroupResult = list[tuple[int, PartitionResult | tuple[str, int], Records]]


def verify_group(group: list[VerifyJob]) -> GroupResult:
    """One Spark task of `kdump spark verify`: its partitions verified, on an executor."""
    out: GroupResult = []
    for i, log, plan, options in group:
        try:
            visible_here(log.storage.local_path)
            walked = _apply_plan(log, plan, options)
            result = verify_partition(log, options)
            records = _records(log, walked, options) if plan is not None else []
            out.append((i, result, records))
        except KdumpError as e:
            out.append((i, (str(e), int(e.exit_code)), []))
    return out


def _apply_plan(
    log: UnifiedLog, plan: PartitionPlan | None, options: VerifyOptions
) -> list[LogSegment]:
    """The plan's reused results handed in, its changed segments walked with their finding;
    the segments this task walks."""
    segments = segments_to_check(log)
    if plan is None:
        return segments
    for slot, known in plan.reuse:
        segment = log.all_segments[slot]
        log.take_result(segment, reused_result(segment, known, options.max_findings_per_code))
    for slot, finding in plan.changed:
        segment_result(log, log.all_segments[slot], options).sink.add(finding)
    reused = {slot for slot, _ in plan.reuse}
    return [s for s in segments if s.slot not in reused]


def _records(log: UnifiedLog, walked: list[LogSegment], options: VerifyOptions) -> Records:
    now_ms = int(time.time() * 1000)
    out: Records = []
    for segment in walked:
        key = key_of(segment)
        if key is not None:
            result = segment_result(log, segment, options)
            out.append((key, verified_record(segment, result.scan, result.findings, now_ms)))
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
    audit: AuditOptions | None = None,
) -> VerifyResult:
    """`kdump verify` with the partitions verified on the executors, ``tasks`` Spark tasks
    (default: TASKS_PER_CORE per core). ``audit.state``: a directory holding one state file
    per log dir (kdump.checks.verify_state), read and written here on the driver."""
    opened = OpenOptions(max_batch_bytes=options.max_batch_bytes)
    found = discover(absolute(paths), store, opened)
    found.raise_first()
    targets = found.partitions
    _take_node_images(targets)
    states = _States(audit or AuditOptions())
    plans = [states.plan(t) for t in targets]
    slices = max(1, min(len(targets), tasks or default_parallelism(spark) * TASKS_PER_CORE))
    jobs: list[VerifyJob] = [(i, t, plans[i], options) for i, t in enumerate(targets)]
    groups = pack_by_size(jobs, [_log_bytes(t) for t in targets], slices)
    results: dict[int, PartitionResult] = {}
    for outcome in run_tasks(spark, "kdump.spark.job:verify_group", groups):
        for i, value, records in outcome:
            if not isinstance(value, PartitionResult):
                raise RemoteError(*value)
            results[i] = value
            states.keep(targets[i], records)
    states.save()
    number = {id(t): i for i, t in enumerate(targets)}
    result = collect_result(found, lambda t: results[number[id(t)]])
    result.audit = states.summary
    return result


def _take_node_images(targets: list[UnifiedLog]) -> None:
    """Each partition's settings from its node's KRaft image too, replayed here on the driver
    once a log dir, as verify_paths does (kdump.kraft.configs.take_node_image): the
    executors judge segment.bytes, segment.index.bytes and cleanup.policy by the topic's own."""
    images: dict[str, MetadataConfigs | None] = {}
    for log in targets:
        take_node_image(log, targets, images)


class _States:
    """The state files of a Spark run's log dirs (one each, in ``audit.state``), on the driver."""

    def __init__(self, audit: AuditOptions) -> None:
        self.audit = audit
        self.files: dict[str, VerifyState] = {}
        self.summary = AuditSummary(asked=audit.state is not None)

    def plan(self, log: UnifiedLog) -> PartitionPlan | None:
        segments = segments_to_check(log)
        if segments:
            self.summary.saw(int(time.time() * 1000))  # read by this run
        if self.audit.state is None or log.storage.local_path is None:
            self.summary.bytes_verified += sum(s.log_size for s in segments)
            return None
        state = self._state(log)
        if state.warning and not self.summary.state_warning:
            self.summary.state_warning = state.warning
        plan = state.plan(segments, self.audit.recheck_fraction)
        for segment, known in plan.reuse:
            self.summary.bytes_unchanged_skipped += segment.log_size
            self.summary.saw(known.verified_ms)
        self.summary.bytes_verified += sum(s.log_size for s in plan.walk)
        changed = [(s.slot, plan.changed[id(s)]) for s in plan.walk if id(s) in plan.changed]
        return PartitionPlan([(s.slot, known) for s, known in plan.reuse], changed)

    def _state(self, log: UnifiedLog) -> VerifyState:
        assert self.audit.state is not None
        log_dir = log_dir_of(log.location)
        if log_dir not in self.files:
            self.files[log_dir] = VerifyState.load(state_file(self.audit.state, log_dir))
        return self.files[log_dir]

    def keep(self, log: UnifiedLog, records: Records) -> None:
        if records:
            state = self._state(log)
            for key, verified in records:
                state.keep(key, verified)

    def save(self) -> None:
        if self.audit.state is not None and self.files:
            os.makedirs(self.audit.state, exist_ok=True)
        for state in self.files.values():
            state.save()


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
    """Fail before any work when ``output`` exists (on whatever file system Hadoop sees). A
    Spark Connect client cannot look at the server's file systems: there Spark's writer refuses
    it, after the work (kdump.spark.job._write: mode ``error``)."""
    if is_connect(spark):
        return
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(output)
    if path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).exists(path):
        raise KdumpError(f"{output}: already exists; --overwrite replaces it")


def _write(df: DataFrame, output: str, output_format: str, overwrite: bool) -> None:
    # "error", not "errorifexists": the Spark Connect client knows only the first name
    writer = df.write.mode("overwrite" if overwrite else "error")
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
    skipped: int = 0
    """Segments written by an earlier run and unchanged since: not read again."""
    findings: list[Finding] = field(default_factory=list)
    finding_rows: list[tuple[Any, ...]] = field(default_factory=list)
    choices: list[ReplicaChoice] = field(default_factory=list)
    """The replica exported of each topic-partition found more than once, and why."""

    def checked(self) -> VerifyResult:
        """The findings as a VerifyResult, for its counts and `kdump verify`'s exit codes."""
        return VerifyResult(log_dir_findings=self.findings)


FINDINGS_DIR = "_findings"
"""Export findings go to DIR/_findings; readers of DIR skip names that start with _."""
TEMPORARY_DIR = "_temporary"
DONE_DIR = "_segments"
"""One marker per segment exported (its identity, files, records, walk), written last."""
SETTINGS = "_export.json"
"""The settings of the export: a run with others does not resume it."""
SUCCESS = "_SUCCESS"
"""Written last, as Spark's writers do: its absence marks an export that did not finish."""


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


PARTITION_BY = ("topic", "day")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
"""A null partition value's directory name, as Hive, Spark and pyarrow write and read it."""


def day_of(timestamps: pa.Array) -> pa.Array:
    """The UTC day (YYYY-MM-DD) of each record timestamp; null for Kafka's -1 (no timestamp)."""
    days = pc.strftime(pc.cast(timestamps, pa.timestamp("ms", tz="UTC")), "%Y-%m-%d")
    return pc.if_else(pc.equal(timestamps, -1), pa.scalar(None, pa.string()), days)


def _directory(name: str, value: Any) -> str:
    return f"{name}={HIVE_NULL if value is None else value}"


class _SegmentFiles:
    """One segment's rows laid out as ``topic=T/[day=D/]NAME``, Hive's layout (Spark's
    partitionBy): the partition columns in the directory names, not in the files. Each file is
    written under _temporary and moved into place at the end, so a retried task replaces its
    files, never adds some."""

    def __init__(
        self, fs: pafs.FileSystem, base: str, name: str, by_day: bool, output_format: str
    ) -> None:
        self.fs, self.base, self.name = fs, base, name
        self.by_day, self.output_format = by_day, output_format
        schema = arrow_schema(RECORD_SCHEMA)
        self.file_schema = schema.remove(schema.get_field_index("topic"))
        self.open: dict[str, tuple[str, Any]] = {}
        """directory -> (temporary file, its writer)"""

    def write(self, topic: str | None, batch: pa.RecordBatch) -> None:
        batch = batch.drop_columns(["topic"])
        directory = _directory("topic", topic)
        if not self.by_day:
            self._write(directory, batch)
            return
        days = day_of(batch.column("timestamp"))
        for day in pc.unique(days).to_pylist():
            chosen = pc.is_null(days) if day is None else pc.equal(days, day)
            self._write(f"{directory}/{_directory('day', day)}", batch.filter(chosen))

    def _write(self, directory: str, batch: pa.RecordBatch) -> None:
        if directory not in self.open:
            temporary = f"{self.base}/{TEMPORARY_DIR}/{self.name}.{uuid.uuid4().hex}"
            if self.output_format == "parquet":
                writer: Any = pq.ParquetWriter(temporary, self.file_schema, filesystem=self.fs)
            else:
                writer = self.fs.open_output_stream(temporary)
            self.open[directory] = (temporary, writer)
        _, writer = self.open[directory]
        if self.output_format == "parquet":
            writer.write_batch(batch)
        else:
            lines = (to_json(export_object(r)).encode() + b"\n" for r in batch.to_pylist())
            writer.write(b"".join(lines))

    def close(self, topic: str | None) -> list[str]:
        """The files moved into place (a segment of no row: one empty file when not by day,
        so that the schema is there to read)."""
        if not self.open and not self.by_day:
            empty = pa.RecordBatch.from_pylist([], schema=self.file_schema)
            self._write(_directory("topic", topic), empty)
        placed = []
        for directory, (temporary, writer) in self.open.items():
            writer.close()
            self.fs.create_dir(f"{self.base}/{directory}", recursive=True)
            final = f"{self.base}/{directory}/{self.name}"
            self.fs.move(temporary, final)
            placed.append(final)
        return placed


@dataclass(frozen=True)
class _WriteSegments:
    """What every segment of an export is written with (one per export, in each task)."""

    output: str
    options: VerifyOptions
    store: ObjectStore
    output_format: str = "parquet"
    batch_filter: BatchFilter = NO_FILTER
    by_day: bool = False


def write_segment(job: tuple[_WriteSegments, SegmentTask]) -> tuple[int, dict[str, Any]]:
    """One Spark task of `kdump spark export`, on an executor: the segment's records into
    Parquet or JSON Lines files (one per topic, or per topic and day: _SegmentFiles), then its
    marker; its records and its walk."""
    how, task = job
    fs, base = output_filesystem(how.output, how.store)
    if isinstance(fs, pafs.LocalFileSystem):
        # made by the driver: written without it, the files would stay on this executor's disk
        visible_here(f"{base}/{TEMPORARY_DIR}")
    visible_here(task.partition_path if task.storage.local_path is not None else None)
    schema = arrow_schema(RECORD_SCHEMA)
    export = SegmentExport(task, schema, how.options, batch_filter=how.batch_filter)
    marker = marker_name(task)
    name = f"part-{marker[:16]}-{task.segment:020d}.{how.output_format}"
    files = _SegmentFiles(fs, base, name, how.by_day, how.output_format)
    for batch in export.batches():
        files.write(task.topic, batch)
    placed = files.close(task.topic)
    identity = identify(task.log_segment(), export.last_position)
    assert export.walk is not None  # batches() is exhausted
    walk = walk_facts(export.walk)
    done = {
        "log": task.log_path,
        "identity": None if identity is None else asdict(identity),
        "last_position": export.last_position,
        "files": [p[len(base) + 1 :] for p in placed],
        "records": export.records,
        "walk": walk,
    }
    # written last: a segment without its marker is exported again
    _write_json_file(fs, base, f"{DONE_DIR}/{marker}", done)
    return export.records, walk


def export_on_spark(
    spark: SparkSession,
    paths: Sequence[str],
    output: str,
    options: VerifyOptions | None = None,
    overwrite: bool = False,
    store: ObjectStore | None = None,
    output_format: str = "parquet",
    topics: Sequence[str] = (),
    batch_filter: BatchFilter = NO_FILTER,
    replicas: ReplicaRule = ONE_REPLICA,
    partition_by: str = "topic",
) -> ExportResult:
    """Every record of every segment under ``paths`` into Parquet (or JSON Lines: ``json``) at
    ``output``, one Spark task per segment; a corrupt segment gives its valid prefix and its
    findings, never a failure. ``topics`` (globs) and ``batch_filter`` choose what is exported
    (kdump.spark.extract: topic_selected; the records of a kept batch in its offset and time
    ranges); ``replicas``: one copy per topic-partition (kdump.spark.extract.export_plan) unless
    every replica is asked for.

    An export of the same settings already at ``output`` (interrupted, or complete) is resumed:
    a segment written before whose files are unchanged since (its identity, as verify's
    ``--state`` keeps it) is skipped, its records and its walk (facts and findings:
    kdump.checks.verify_state.walk_facts) taken from its marker (DIR/_segments); ``overwrite``
    starts afresh. With every segment's walk in, the driver ends as `kdump verify` does
    (kdump.checks.verify.finish_result): DIR/_findings holds every finding verify gives on the
    partitions exported and their log dirs (checkpoints, leader epochs, producer snapshots...),
    and each damaged segment's EXPORT_GAP.

    Executors write the Parquet files with pyarrow, straight from the Arrow batches: through
    Spark's writer the JVM spent more CPU re-encoding the rows than the extraction itself.
    """
    if output_format not in OUTPUT_FORMATS:
        raise KdumpError(f"unknown output format {output_format!r}; use parquet or json")
    if partition_by not in PARTITION_BY:
        raise KdumpError(f"unknown --partition-by {partition_by!r}; use topic or day")
    options = options or VerifyOptions()
    store = store or ObjectStore()
    fs, base = output_filesystem(output, store)
    settings = {
        "format": output_format,
        "partition_by": partition_by,
        "topics": list(topics),
        "filter": repr(batch_filter),
        "max_batch_bytes": options.max_batch_bytes,
        "replicas": repr(replicas),
    }
    _prepare(fs, base, output, settings, overwrite)
    plan = export_plan(absolute(paths), store, topics, replicas, options)
    tasks = plan.tasks
    result = ExportResult(output, segments=len(tasks), choices=plan.choices)
    written = _written_before(fs, base)
    todo: list[tuple[int, SegmentTask]] = []
    cap = options.max_findings_per_code
    for index, task in enumerate(tasks):
        known = written.get(marker_name(task))
        if known is not None and _unchanged(task, known) and _take_walk(plan, index, known, cap):
            result.skipped += 1
            result.records += known["records"]
            continue
        if known is not None:  # changed since: its old files go, the segment is read again
            for name in [*known["files"], f"{DONE_DIR}/{marker_name(task)}"]:
                fs.delete_file(f"{base}/{name}")
        todo.append((index, task))
    fs.create_dir(f"{base}/{TEMPORARY_DIR}", recursive=True)
    how = _WriteSegments(
        output, options, store, output_format, batch_filter, by_day=partition_by == "day"
    )
    # each segment one Spark task
    outcomes = run_tasks(spark, "kdump.spark.job:write_segment", [(how, t) for _, t in todo])
    temporary = f"{base}/{TEMPORARY_DIR}"
    # an object store has no empty folders: the prefix went with its last object
    if fs.get_file_info(temporary).type != pafs.FileType.NotFound:
        fs.delete_dir(temporary)
    for (index, _), (records, walk) in zip(todo, outcomes, strict=True):
        result.records += records
        log, segment = plan.segments[index]
        log.take_result(segment, restore_walk(segment, walk, cap))
    # every finding verify gives on these partitions and their log dirs, by verify's own code
    checked = finish_result(plan.found, plan.logs, options)
    result.findings = checked.findings
    result.finding_rows = finding_rows(checked)
    fs.create_dir(f"{base}/{FINDINGS_DIR}")
    table = pa.Table.from_pylist(
        [dict(zip(FINDINGS_SCHEMA.fieldNames(), row, strict=True)) for row in result.finding_rows],
        schema=arrow_schema(FINDINGS_SCHEMA),
    )
    pq.write_table(table, f"{base}/{FINDINGS_DIR}/part-00000.parquet", filesystem=fs)
    with fs.open_output_stream(f"{base}/{SUCCESS}"):
        pass
    return result


def _take_walk(plan: ExportPlan, index: int, known: dict[str, Any], cap: int) -> bool:
    """The walk a marker kept handed to the segment's partition; False where it cannot be
    used (a marker of an older kdump: the segment is exported again)."""
    log, segment = plan.segments[index]
    try:
        log.take_result(segment, restore_walk(segment, known["walk"], cap))
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


def _prepare(
    fs: pafs.FileSystem, base: str, output: str, settings: dict[str, Any], overwrite: bool
) -> None:
    """``output`` deleted (``overwrite``), or an export of the same settings to resume, or
    new; anything else there is refused. _SUCCESS goes until the run completes."""
    if fs.get_file_info(base).type != pafs.FileType.NotFound:
        if overwrite:
            fs.delete_dir(base)
        else:
            before = _read_json(fs, f"{base}/{SETTINGS}")
            if before is None:
                raise KdumpError(
                    f"{output}: already exists, not a kdump export; --overwrite replaces it"
                )
            if before != settings:
                raise KdumpError(
                    f"{output}: exported before with other settings ({before}); "
                    "--overwrite replaces it"
                )
            if fs.get_file_info(f"{base}/{SUCCESS}").type != pafs.FileType.NotFound:
                fs.delete_file(f"{base}/{SUCCESS}")
            return
    fs.create_dir(base, recursive=True)
    _write_json_file(fs, base, SETTINGS, settings)


def marker_name(task: SegmentTask) -> str:
    """A segment's marker (and its files' stem): a digest of its real path (verify's state
    key, kdump.checks.verify_state.key_of), or of its URL."""
    key = key_of(task.log_segment()) or task.log_path
    return hashlib.sha256(key.encode()).hexdigest()[:32] + ".json"


def _unchanged(task: SegmentTask, known: dict[str, Any]) -> bool:
    was = known.get("identity")
    if was is None:  # not on local disk: no identity, always read again
        return False
    try:
        before = SegmentIdentity.from_dict(was)  # read typed: a marker of an older kdump
    except ValueError:
        return False
    now = identify(task.log_segment(), int(known["last_position"]))
    return now is not None and now == before


def _written_before(fs: pafs.FileSystem, base: str) -> dict[str, dict[str, Any]]:
    selector = pafs.FileSelector(f"{base}/{DONE_DIR}", allow_not_found=True)
    out = {}
    for info in fs.get_file_info(selector):
        marker = _read_json(fs, info.path)
        if isinstance(marker, dict):
            out[info.base_name] = marker
    return out


def _read_json(fs: pafs.FileSystem, path: str) -> Any:
    try:
        with fs.open_input_stream(path) as f:
            return json.loads(f.read())
    except (FileNotFoundError, ValueError):
        return None


def _write_json_file(fs: pafs.FileSystem, base: str, name: str, value: Any) -> None:
    """Written under _temporary and moved into place: a reader sees all of it or none."""
    temporary = f"{base}/{TEMPORARY_DIR}/{uuid.uuid4().hex}"
    fs.create_dir(f"{base}/{TEMPORARY_DIR}", recursive=True)
    with fs.open_output_stream(temporary) as out:
        out.write(json.dumps(value).encode())
    fs.create_dir(os.path.dirname(f"{base}/{name}"), recursive=True)
    fs.move(temporary, f"{base}/{name}")
