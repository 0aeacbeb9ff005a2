"""The "kafka-segments" PySpark data source (Spark 4 Python Data Source API)::

    from kdump.spark.source import register
    register(spark)
    df = spark.read.format("kafka-segments").load("/shared/kafka-logs")

One input partition per segment (.log), read into Arrow batches by the same code as
`kdump spark export`, with the schema of kdump.spark.schema.RECORD_SCHEMA.

Options: ``path`` (what ``load()`` sets) or ``paths`` (a JSON list), both anything
`kdump verify` accepts, URLs (s3://, gs://, az://, file://) too: each executor reads its own
segments' ranges from the store; ``endpoint_url`` and ``anon`` as kdump's --endpoint-url and
--anon (credentials: the provider's standard chain on each executor); ``mode`` PERMISSIVE
(default: the valid prefix of a corrupt segment, as Spark's file readers do) or FAILFAST (fail
naming the file and byte position); ``max_batch_bytes`` (largest decompressed batch).

One copy per topic-partition, as `kdump spark export` reads them (kdump.spark.extract
.chosen_replicas: the leader per the KRaft metadata, else the most advanced replica):
replicas of several brokers under the paths give each row once. ``all_replicas`` ``true``
reads every copy; ``metadata`` (a ``__cluster_metadata-0`` directory, or a log dir holding
one) names the leaders, as export's --metadata.

Column pruning: Spark does not tell a Python data source which columns a query uses, but it
passes a schema given with ``.schema(...)``. Ask for a subset of the columns that way; when all
of them are batch-level (kdump.spark.schema.BATCH_LEVEL) records are counted, not decoded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from kdump.checks.findings import Severity
from kdump.checks.options import VerifyOptions
from kdump.errors import KdumpError
from kdump.spark.extract import (
    ReplicaRule,
    SegmentExport,
    SegmentTask,
    segment_tasks,
    visible_here,
)
from kdump.spark.schema import RECORD_SCHEMA, arrow_schema, requested_columns
from kdump.storage import ObjectStore, StoreOptions, absolute_location

NAME = "kafka-segments"
MODES = ("PERMISSIVE", "FAILFAST")


class KafkaSegmentsDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return RECORD_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaSegmentsReader(dict(self.options), schema)


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        requested_columns(schema)
        self.schema = schema
        self.paths = _paths(options)
        mode = options.get("mode", "PERMISSIVE").upper()
        if mode not in MODES:
            raise KdumpError(f"{NAME}: mode {mode!r} is not one of {', '.join(MODES)}")
        self.fail_fast = mode == "FAILFAST"
        self.options = VerifyOptions()
        self.store = ObjectStore(
            StoreOptions(
                endpoint_url=options.get("endpoint_url") or None,
                anon=_flag(options, "anon"),
            )
        )
        if "max_batch_bytes" in options:
            self.options = self.options._replace(max_batch_bytes=int(options["max_batch_bytes"]))
        self.replicas = ReplicaRule(
            all_replicas=_flag(options, "all_replicas"), metadata=options.get("metadata") or None
        )

    def partitions(self) -> list[InputPartition]:
        tasks = segment_tasks(self.paths, self.store, replicas=self.replicas)
        return [InputPartition(task) for task in tasks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        task = partition.value
        if not isinstance(task, SegmentTask):  # Spark reads one empty partition when none
            return
        visible_here(task.partition_path if task.storage.local_path is not None else None)
        export = SegmentExport(task, arrow_schema(self.schema), self.options)
        yield from export.batches()
        if self.fail_fast:
            cut = [f for f in export.findings if f.severity is Severity.ERROR]
            if cut:
                f = cut[0]
                where = f.path if f.position is None else f"{f.path}:{f.position}"
                raise KdumpError(f"{where}: {f.code}: {f.message}")


def _flag(options: dict[str, str], name: str) -> bool:
    value = options.get(name, "false").lower()
    if value not in ("true", "false"):
        raise KdumpError(f"{NAME}: option {name} is {value!r}, not true or false")
    return value == "true"


def _paths(options: dict[str, str]) -> list[str]:
    if "paths" in options:
        paths = json.loads(options["paths"])
    elif "path" in options:
        paths = [options["path"]]
    else:
        raise KdumpError(f'{NAME}: give a path: spark.read.format("{NAME}").load(path)')
    return [absolute_location(p) for p in paths]


def register(spark: SparkSession, ship: bool = True) -> None:
    """Make ``spark.read.format("kafka-segments")`` available in this session, kdump shipped to
    its executors (kdump.spark.ship). ``ship=False`` (a cluster that forbids shipping code):
    their own kdump is checked, one task per core, to be this version (a RemoteError names the
    executor's Python and version where it is not)."""
    from kdump.spark.ship import ship as ship_to
    from kdump.spark.tasks import check_executors

    if ship:
        ship_to(spark)
    else:
        check_executors(spark)
    spark.dataSource.register(KafkaSegmentsDataSource)
