"""Records of one segment as Arrow batches: the valid prefix, and the findings that cut it.

The segment is first checked by the same pass as `kdump verify` (kdump.checks.log.scan_log);
records are exported up to the first batch the broker's recovery would truncate at. A batch
whose records do not decode ends the export too, and the deep form of the same pass names it.
Used by `kdump spark export` (one Spark task per segment) and the "kafka-segments" data source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa

from kdump.checks.findings import Finding, Severity
from kdump.checks.log import LogScan, scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.discovery import discover
from kdump.errors import KdumpError
from kdump.format.batch import Batch, RecordBatch
from kdump.format.layout import TIMESTAMP_TYPE_NAMES
from kdump.format.names import LOG_SUFFIX
from kdump.format.records import Record
from kdump.spark.schema import BATCH_LEVEL
from kdump.storage import ObjectStore, Storage
from kdump.storage.records import FileRecords

ROWS_PER_BATCH = 8192
BYTES_PER_BATCH = 32 << 20
"""Flush an Arrow batch at this many key+value bytes (binary columns address 2 GiB at most)."""

_RECORD_FIELDS = {
    name: Record._fields.index(name)
    for name in ("offset", "timestamp", "key", "value", "headers", "sequence")
}
"""Record-level columns: where each lies in a decoded Record."""
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


def segment_tasks(paths: Sequence[str], store: ObjectStore | None = None) -> list[SegmentTask]:
    """The .log files under ``paths`` (as `kdump verify` finds them, URLs too), partition by
    partition."""
    found = discover(list(paths), store)
    found.raise_first()
    return [
        SegmentTask(
            seg.storage,
            seg.file_name(LOG_SUFFIX),
            seg.log_path,
            log.location,
            log.topic,
            log.partition,
            seg.base_offset,
            seg.log_size,
        )
        for log in found.partitions
        for seg in log.named_segments
    ]


class SegmentExport:
    """Iterate ``batches()`` for the Arrow batches; ``findings`` and ``records`` are complete
    once it is exhausted."""

    def __init__(
        self,
        task: SegmentTask,
        schema: pa.Schema,
        options: VerifyOptions | None = None,
        rows_per_batch: int = ROWS_PER_BATCH,
    ) -> None:
        self.task = task
        self.schema = schema
        self.options = options or VerifyOptions()
        self.rows_per_batch = rows_per_batch
        self.findings: list[Finding] = []
        self.records = 0
        self.valid_bytes = 0
        """Where the export stopped: the end of the last exported batch's valid prefix."""

    def _scan(self, log: FileRecords, deep: bool) -> LogScan:
        sink = FindingSink(self.options.max_findings_per_code)
        options = replace(self.options, deep=deep)
        scan = scan_log(log, self.task.segment, options, sink, self.task.partition_path)
        self.findings = sink.close()
        self.valid_bytes = scan.valid_bytes if scan.first_invalid is None else scan.first_invalid
        return scan

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            log = self.task.storage.open_log(self.task.name)
        except KdumpError as e:
            path = getattr(e, "path", self.task.log_path)
            self.findings = [Finding("FILE_UNREADABLE", Severity.ERROR, path, str(e))]
            return
        try:
            yield from self._batches(log)
        finally:
            log.close()  # a remote log's read-ahead threads, a local log's map

    def _batches(self, log: FileRecords) -> Iterator[pa.RecordBatch]:
        self._scan(log, deep=False)
        names = self.schema.names
        decode = not set(names) <= BATCH_LEVEL
        columns = _Columns(self.task, self.schema)
        for batch in log.batches(0, self.valid_bytes):
            try:
                slices = self._records(log, batch, decode)
            except KdumpError:
                # The deep pass of the same check names the batch and moves the valid end to it.
                self._scan(log, deep=True)
                break
            for records in slices:
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
    record columns by one transpose of the records, batch columns by one value per batch
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
        if name in ("topic", "partition", "segment"):
            return [getattr(self.task, name)]
        if name == "batch_position":
            return [b.position for b in self.batches]
        if name == "timestamp_type":
            return [TIMESTAMP_TYPE_NAMES[b.timestamp_type] for b in self.batches]
        return [getattr(b, name) for b in self.batches]

    def flush(self) -> pa.RecordBatch:
        fields = list(zip(*self.records, strict=True)) if self.records else None
        per_batch = pa.array(np.repeat(np.arange(len(self.batches)), self.counts))
        arrays = []
        for f in self.schema:
            column = _RECORD_FIELDS.get(f.name)
            if column is not None:
                arrays.append(pa.array(fields[column] if fields else [], type=f.type))
                continue
            values = self._batch_values(f.name)
            if len(values) == 1:  # the same for the whole segment
                arrays.append(pa.array(values * self.rows, type=f.type))
            else:
                arrays.append(pa.array(values, type=f.type).take(per_batch))
        self.batches, self.counts, self.records = [], [], []
        self.rows = self.bytes = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
