"""The documented schemas of the Spark outputs: exported records and findings.

Record columns carry Kafka's names in snake_case. Batch-level columns repeat the values of the
batch that holds the record (DefaultRecordBatch for magic v2; for magic v0/v1 the shallow or
wrapper message, with producer fields -1 as Kafka's AbstractLegacyRecordBatch reports them).
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from kdump.errors import KdumpError

HEADER = StructType(
    [StructField("key", StringType(), False), StructField("value", BinaryType(), True)]
)

RECORD_COLUMNS: list[tuple[str, DataType, bool, str]] = [
    # name, type, nullable, meaning
    ("broker", IntegerType(), True, "the replica's broker: its log dir's meta.properties node.id"),
    ("log_dir", StringType(), False, "the log dir holding the partition directory"),
    ("topic", StringType(), True, "topic, from the partition directory name (null if unparsable)"),
    ("partition", IntegerType(), True, "partition number, from the directory name"),
    ("segment", LongType(), False, "base offset of the segment (its 20-digit file name)"),
    ("segment_file", StringType(), False, "the segment's .log (a path or a URL)"),
    ("batch_position", LongType(), False, "byte position of the batch in the .log"),
    ("offset", LongType(), False, "the record's offset"),
    ("timestamp", LongType(), False, "milliseconds since the epoch; -1 when none (magic v0)"),
    ("timestamp_type", StringType(), False, "CreateTime, LogAppendTime or NoTimestampType"),
    ("key", BinaryType(), True, "record key; null for a null key"),
    ("value", BinaryType(), True, "record value; null for a tombstone"),
    ("headers", ArrayType(HEADER, False), False, "record headers in order (v2; empty before)"),
    ("producer_id", LongType(), False, "batch producerId; -1 when not idempotent"),
    ("producer_epoch", ShortType(), False, "batch producerEpoch; -1 when none"),
    ("base_sequence", IntegerType(), False, "batch baseSequence; -1 when none"),
    ("sequence", IntegerType(), False, "the record's sequence (base_sequence + offset delta)"),
    ("partition_leader_epoch", IntegerType(), False, "batch partitionLeaderEpoch"),
    ("is_transactional", BooleanType(), False, "batch isTransactional"),
    ("is_control", BooleanType(), False, "batch isControl (commit/abort markers)"),
]

RECORD_SCHEMA = StructType([StructField(n, t, nullable) for n, t, nullable, _ in RECORD_COLUMNS])

BATCH_LEVEL = frozenset(
    {
        "broker",
        "log_dir",
        "topic",
        "partition",
        "segment",
        "segment_file",
        "batch_position",
        "timestamp_type",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "partition_leader_epoch",
        "is_transactional",
        "is_control",
    }
)
"""Columns known from the batch header alone: asking only for these skips record decoding."""

FINDINGS_SCHEMA = StructType(
    [
        StructField("code", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("path", StringType(), False),
        StructField("offset", LongType(), True),
        StructField("position", LongType(), True),
        StructField("message", StringType(), False),
        StructField("fix", StringType(), True),
        StructField("advice", StringType(), True),
        StructField("partition_path", StringType(), True),
    ]
)
"""One row per Finding, in `kdump verify`'s order; partition_path is null for log-dir findings."""


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark expects for ``schema`` from a Python source or mapInArrow."""
    return to_arrow_schema(schema, timezone="UTC")


def requested_columns(schema: StructType) -> list[str]:
    """The record columns a reader was asked for; an unknown column or type is a usage error."""
    known = {f.name: f.dataType for f in RECORD_SCHEMA.fields}
    for f in schema.fields:
        if f.name not in known:
            raise KdumpError(
                f"kafka-segments has no column {f.name!r}; columns: {', '.join(known)}"
            )
        if f.dataType.simpleString() != known[f.name].simpleString():
            raise KdumpError(
                f"kafka-segments column {f.name} is {known[f.name].simpleString()}, "
                f"not {f.dataType.simpleString()}"
            )
    return schema.fieldNames()
