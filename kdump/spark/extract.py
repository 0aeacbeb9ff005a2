"""Records of one segment as Arrow batches: the valid prefix, and the findings that cut it.

The segment is first checked by the same pass as `kdump verify` (kdump.checks.log.scan_log);
records are exported up to the first batch the broker's recovery would truncate at. A batch
whose records do not decode ends the export too, and the deep form of the same pass names it.
Used by `kdump spark export` (one Spark task per segment) and the "kafka-segments" data source.
"""

from __future__ import annotations

import fnmatch
import os
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.segment import SegmentResult, check_segment
from kdump.checks.sink import FindingSink
from kdump.config import INTERNAL_TOPIC_CONFIGS
from kdump.discovery import Found, discover
from kdump.errors import InputError, KdumpError
from kdump.format.batch import Batch, RecordBatch
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.format.layout import TIMESTAMP_TYPE_NAMES
from kdump.format.names import LOG_SUFFIX, METADATA_TOPIC
from kdump.format.records import Record
from kdump.kraft.image import MetadataImage
from kdump.kraft.loader import metadata_load
from kdump.log_scan import LogScan
from kdump.replicas import ReplicaChoice, choose_replica, one_replica_each
from kdump.run import identify, log_dir_of
from kdump.segment import LogSegment
from kdump.spark.schema import BATCH_LEVEL
from kdump.storage import ObjectStore, Storage
from kdump.storage.records import FileRecords
from kdump.unified_log import OpenOptions, UnifiedLog

ROWS_PER_BATCH = 8192
BYTES_PER_BATCH = 32 << 20
"""Flush an Arrow batch at this many key+value bytes (binary columns address 2 GiB at most)."""

_RECORD_FIELDS = {
    name: itemgetter(Record._fields.index(name))
    for name in ("offset", "timestamp", "key", "value", "headers", "sequence")
}
"""Record-level columns: how each is taken from a decoded Record."""
_TASK_COLUMNS = {name: name for name in ("broker", "log_dir", "topic", "partition", "segment")} | {
    "segment_file": "log_path"
}
"""Columns the same for a whole segment: the SegmentTask field each comes from."""
_SIZE = itemgetter(Record._fields.index("size_in_bytes"))


@dataclass(frozen=True)
class SegmentTask:
    """One .log to export: what a Spark task needs, small and picklable. Its ``storage`` may
    be an object store: the executor then reads the object's ranges itself, no shared mount."""

    storage: Storage
    name: str
    """The .log's name in ``storage``."""
    log_path: str
    """The .log as output names it (a path or a URL)."""
    partition_path: str
    topic: str | None
    partition: int | None
    segment: int
    size: int = 0
    """Bytes of the .log (as listed), for balancing the work."""
    next_offset: int | None = None
    """The next segment's base offset (None: the partition's last segment)."""
    broker: int | None = None
    """The broker whose replica this is (its log dir's meta.properties), if known."""
    log_dir: str = ""
    files: tuple[tuple[str, str], ...] = ()
    """The segment's files (suffix, name), for its identity (kdump.checks.verify_state)."""

    is_active: bool = False
    """The partition's last segment (its indexes preallocated: checked as the broker has them)."""
    segment_id: str | None = None
    """A tiered segment's id (two uploads may share a base offset)."""

    def log_segment(self) -> LogSegment:
        files = dict(self.files) or {LOG_SUFFIX: self.name}
        return LogSegment(self.storage, self.segment, files, self.is_active, self.segment_id)


def visible_here(path: str | os.PathLike[str] | None) -> None:
    """Raise where a local ``path`` the driver listed is not on this executor: its file system
    is not shared (None: an object store's, read from anywhere)."""
    if path is None or os.path.isdir(path):
        return
    raise InputError(
        os.fspath(path),
        f"not found on the executor on {socket.gethostname()}, though the driver found it: "
        "every executor must see the paths under the same name (a shared or distributed file "
        "system), or read them from an object store (s3://...)",
    )


def topic_selected(topic: str | None, patterns: Sequence[str]) -> bool:
    """Whether ``--topic`` patterns (globs; none: every topic) take a partition's topic.
    Kafka's internal topics (``__consumer_offsets``...) only when a pattern names them (starts
    with their ``__``): a data team's ``*`` means its own topics."""
    internal = topic in INTERNAL_TOPIC_CONFIGS
    if not patterns:
        return not internal
    if topic is None:
        return False
    return any(
        fnmatch.fnmatchcase(topic, p) and (not internal or p.startswith("__")) for p in patterns
    )


@dataclass(frozen=True)
class ReplicaRule:
    """Which replicas of a topic-partition an export reads (issue 33 point 4)."""

    all_replicas: bool = False
    """Every copy found, as given; else one per topic-partition (replicas.one_replica_each)."""
    metadata: str | None = None
    """A ``__cluster_metadata-0`` directory, or a log dir holding one, naming the leaders; by
    default the paths' own (the most advanced copy, by the same rule as the replicas')."""


EVERY_REPLICA = ReplicaRule(all_replicas=True)
ONE_REPLICA = ReplicaRule()


def segment_tasks(
    paths: Sequence[str],
    store: ObjectStore | None = None,
    topics: Sequence[str] | None = None,
    replicas: ReplicaRule = EVERY_REPLICA,
) -> list[SegmentTask]:
    """The .log files under ``paths`` (as `kdump verify` finds them, URLs too), partition by
    partition; with ``topics`` (even none), of the partitions ``topic_selected`` takes."""
    return export_plan(paths, store, topics, replicas).tasks


@dataclass
class ExportPlan:
    """What an export reads: its tasks; the partitions they come from, opened on the driver
    (whose checks across segments run there once the tasks' walks are in: kdump.checks.verify
    .finish_result); the replica chosen where a topic-partition has several."""

    tasks: list[SegmentTask]
    segments: list[tuple[UnifiedLog, LogSegment]]
    """Each task's partition and segment, by the task's index."""
    found: Found
    logs: list[UnifiedLog]
    """The partitions exported."""
    choices: list[ReplicaChoice]


def export_plan(
    paths: Sequence[str],
    store: ObjectStore | None = None,
    topics: Sequence[str] | None = None,
    replicas: ReplicaRule = EVERY_REPLICA,
    options: VerifyOptions | None = None,
) -> ExportPlan:
    """``segment_tasks``, and the choices made where a topic-partition has several replicas."""
    opened = OpenOptions(max_batch_bytes=(options or VerifyOptions()).max_batch_bytes)
    found = discover(list(paths), store, opened)
    found.raise_first()
    logs = [log for log in found.partitions if topics is None or topic_selected(log.topic, topics)]
    brokers = _Brokers()
    every = chosen_replicas(found, logs, replicas, store, brokers)
    logs = [c.chosen for c in every]
    plan = ExportPlan([], [], found, logs, [c for c in every if c.others])
    for log in logs:
        for segment, task in _tasks(log, brokers.of(log)):
            plan.tasks.append(task)
            plan.segments.append((log, segment))
    return plan


def chosen_replicas(
    found: Found,
    logs: list[UnifiedLog],
    replicas: ReplicaRule,
    store: ObjectStore | None,
    brokers: _Brokers | None = None,
) -> list[ReplicaChoice]:
    """The replica of each topic-partition in ``logs`` an export reads (issue 33 point 4):
    the leader in the metadata image, else the most advanced copy (replicas.one_replica_each);
    every one of them with ``replicas.all_replicas``."""
    brokers = brokers or _Brokers()
    if replicas.all_replicas:
        return [ReplicaChoice(log, "every replica asked for", []) for log in logs]
    image = _metadata_image(found, replicas.metadata, store)

    def leader_of(log: UnifiedLog) -> int | None:
        return None if image is None else leader_in(image, log.topic, log.partition)

    return one_replica_each(logs, leader_of, brokers.of)


def _tasks(log: UnifiedLog, broker: int | None) -> Iterator[tuple[LogSegment, SegmentTask]]:
    for seg, after in zip(log.named_segments, [*log.named_segments[1:], None], strict=True):
        yield (
            seg,
            SegmentTask(
                seg.storage,
                seg.file_name(LOG_SUFFIX),
                seg.log_path,
                log.location,
                log.topic,
                log.partition,
                seg.base_offset,
                seg.log_size,
                after.base_offset if after is not None else None,
                broker,
                log_dir_of(log.location),
                tuple(sorted(seg.files.items())),
                seg.is_active,
                seg.segment_id,
            ),
        )


class _Brokers:
    """The broker id of each replica's log dir (its meta.properties), read once per log dir."""

    def __init__(self) -> None:
        self.ids: dict[str, int | None] = {}

    def of(self, log: UnifiedLog) -> int | None:
        log_dir = log_dir_of(log.location)
        if log_dir not in self.ids:
            self.ids[log_dir] = identify(log_dir).node_id
        return self.ids[log_dir]


def _metadata_image(
    found: Found, metadata: str | None, store: ObjectStore | None
) -> MetadataImage | None:
    if metadata is not None:
        given = discover([metadata], store)
        given.raise_first()
        copies = [log for log in given.partitions if log.is_metadata_log]
        if not copies:
            raise InputError(metadata, f"holds no {METADATA_TOPIC}-0 partition")
    else:
        copies = [log for log in found.partitions if log.is_metadata_log]
        if not copies:
            return None
    return metadata_load(choose_replica(copies, None, lambda log: None).chosen).image


def leader_in(image: MetadataImage, topic: str | None, partition: int | None) -> int | None:
    """The partition's leader's broker id in the image (None: no such partition, or no
    leader: -1, as a controlled shutdown of its last replica leaves it)."""
    topic_image = image.topics_by_name.get(topic) if topic is not None else None
    registration = None if topic_image is None else topic_image.partitions.get(partition or 0)
    if registration is None or partition is None or registration.leader < 0:
        return None
    return registration.leader


class SegmentExport:
    """Iterate ``batches()`` for the Arrow batches; ``findings`` and ``records`` are complete
    once it is exhausted."""

    def __init__(
        self,
        task: SegmentTask,
        schema: pa.Schema,
        options: VerifyOptions | None = None,
        rows_per_batch: int = ROWS_PER_BATCH,
        batch_filter: BatchFilter = NO_FILTER,
    ) -> None:
        self.task = task
        self.schema = schema
        self.options = options or VerifyOptions()
        self.rows_per_batch = rows_per_batch
        self.batch_filter = batch_filter
        self.findings: list[Finding] = []
        self.records = 0
        self.read_to = task.segment
        """The offset after the last batch read (exported or filtered out)."""
        self.undecodable = False
        self.valid_bytes = 0
        """Where the export stopped: the end of the last exported batch's valid prefix."""
        self.last_position = -1
        """Where the segment's last batch starts, as the scan found it (for its identity)."""
        self.walk: SegmentResult | None = None
        """The check's result (its findings, with the export's gap): for the partition's
        checks across segments, on the driver."""

    def _check(self, segment: LogSegment, deep: bool) -> LogScan | None:
        """`kdump verify`'s walk of the segment with every check of it (its indexes too:
        kdump.checks.segment.check_segment); its findings are the export's."""
        options = self.options._replace(deep=deep)
        result = check_segment(segment, options, keep_open=True)
        self.walk = result
        self.findings = result.sink.close()
        scan = result.scan
        if scan is not None:
            self.last_position = scan.last_position
            self.valid_bytes = (
                scan.valid_bytes if scan.first_invalid is None else scan.first_invalid
            )
        return scan

    def batches(self) -> Iterator[pa.RecordBatch]:
        segment = self.task.log_segment()
        try:
            scan = self._check(segment, deep=False)
            if scan is not None:
                yield from self._batches(segment, scan.first_invalid is not None)
        except KdumpError as e:  # a store's or a key's error: the segment is not read
            path = getattr(e, "path", None) or self.task.log_path
            sink = FindingSink(self.options.max_findings_per_code)
            sink.add(Finding("FILE_UNREADABLE", Severity.ERROR, path, str(e)))
            self.walk = SegmentResult(segment.base_offset, segment.slot, None, sink, e)
            self.findings = sink.close()
        finally:
            segment.close()  # a remote log's read-ahead threads, a local log's maps

    def _batches(self, segment: LogSegment, damaged: bool) -> Iterator[pa.RecordBatch]:
        yield from self._rows(segment)
        if damaged or self.undecodable:
            gap = self._gap(self.read_to)
            self.findings.append(gap)
            if self.walk is not None:
                self.walk.sink.add(gap)

    def _gap(self, first: int) -> Finding:
        """The offsets this segment holds that the export did not write: from the first not
        read to the next segment's base (issue 33: rows never silently missing)."""
        task = self.task
        end = task.next_offset
        if end is None:
            span = f"offsets {first} to the log's end (the partition's last segment)"
        else:
            span = f"offsets {first}..{end - 1}" if end > first else "no offset"
        return Finding(
            "EXPORT_GAP",
            Severity.WARNING,
            task.log_path,
            f"{span} not exported: the segment is damaged at byte {self.valid_bytes} (the "
            "finding beside this one); later segments are exported",
            offset=first,
            position=self.valid_bytes,
        )

    def _rows(self, segment: LogSegment) -> Iterator[pa.RecordBatch]:
        log = segment.log
        names = self.schema.names
        flt = self.batch_filter
        decode = not set(names) <= BATCH_LEVEL or flt.cuts_records
        columns = _Columns(self.task, self.schema)
        every = flt.is_empty  # no test a batch (127-byte batches: a tenth of the export)
        for batch in log.batches(0, self.valid_bytes):
            if not every and not flt.matches_batch(batch):
                self.read_to = batch.next_offset
                continue
            try:
                slices = self._records(log, batch, decode)
            except KdumpError:
                # The deep pass of the same check names the batch and moves the valid end to it.
                self._check(segment, deep=True)
                self.undecodable = True
                break
            self.read_to = batch.next_offset
            for records in slices:
                if flt.cuts_records and not isinstance(records, int):
                    records = [r for r in records if flt.matches_record(r.offset, r.timestamp)]
                self.records += columns.add(batch, records)
                if columns.rows >= self.rows_per_batch or columns.bytes >= BYTES_PER_BATCH:
                    yield columns.flush()
        if columns.rows:
            yield columns.flush()

    def _records(
        self, log: FileRecords, batch: Batch, decode: bool
    ) -> Iterable[list[Record] | int]:
        """The batch's records in slices of at most ``rows_per_batch`` (or only their number
        when no record column is wanted); raises before the first slice where one does not
        decode (a batch is exported whole or not at all).

        A batch of more records than a slice (a decompression bomb holds 38 M in 22 KB) is
        decoded twice: once to check every record, kept never, then a slice at a time, so it
        costs its payload and a slice, not its records at once (issue 27)."""
        records = log.records
        limit = self.options.max_batch_bytes
        if decode or (not isinstance(batch, RecordBatch) and batch.compression):
            if isinstance(batch, RecordBatch) and batch.records_count <= self.rows_per_batch:
                whole = list(records(batch, limit))
                return [whole if decode else len(whole)]
            count = sum(1 for _ in records(batch, limit))
            if not decode:
                return [count]
            rest = iter(records(batch, limit))
            return iter(lambda: list(islice(rest, self.rows_per_batch)), [])
        if isinstance(batch, RecordBatch):
            if batch.records_count < 0:
                raise KdumpError(f"invalid record count {batch.records_count}")
            return [batch.records_count]
        return [1]


class _Columns:
    """The batches and records since the last flush, turned into one Arrow batch per flush:
    record columns a field of every record at a time, batch columns by one value per batch
    repeated with Arrow's take (batches hold few records; per-row Python work dominated)."""

    def __init__(self, task: SegmentTask, schema: pa.Schema) -> None:
        self.task, self.schema = task, schema
        self.batches: list[Batch] = []
        self.counts: list[int] = []
        self.records: list[Record] = []
        self.rows = 0
        self.bytes = 0

    def add(self, batch: Batch, records: list[Record] | int) -> int:
        if isinstance(records, int):
            n = records
        else:
            n = len(records)
            self.records += records
            self.bytes += sum(map(_SIZE, records))
        self.batches.append(batch)
        self.counts.append(n)
        self.rows += n
        return n

    def _batch_values(self, name: str) -> list[Any]:
        if name in _TASK_COLUMNS:
            return [getattr(self.task, _TASK_COLUMNS[name])]
        if name == "batch_position":
            return [b.position for b in self.batches]
        if name == "timestamp_type":
            return [TIMESTAMP_TYPE_NAMES[b.timestamp_type] for b in self.batches]
        return [getattr(b, name) for b in self.batches]

    def flush(self) -> pa.RecordBatch:
        per_batch = pa.array(np.repeat(np.arange(len(self.batches)), self.counts))
        arrays = []
        for f in self.schema:
            field = _RECORD_FIELDS.get(f.name)
            if field is not None:
                # one field of each record (zip(*records) made every field of every record,
                # the wanted or not: 6-7 s of a 10 M-record segment's 13-16 s)
                arrays.append(pa.array(list(map(field, self.records)), type=f.type))
                continue
            values = self._batch_values(f.name)
            if len(values) == 1:  # the same for the whole segment: one value, repeated in C
                # (a list of it converted row by row cost 0.2-0.5 s per column per 10 M rows)
                arrays.append(pa.repeat(pa.scalar(values[0], type=f.type), self.rows))
            else:
                arrays.append(pa.array(values, type=f.type).take(per_batch))
        self.batches, self.counts, self.records = [], [], []
        self.rows = self.bytes = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
