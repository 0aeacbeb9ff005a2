"""`kdump spark export`'s output read as a query engine reads it (Hive's layout: the topic, and
the day with --partition-by day, from the directory names)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from kdump.spark.schema import RECORD_SCHEMA


def read_export(out: Path | str, by_day: bool = False) -> pa.Table:
    """The exported rows in RECORD_SCHEMA's column order (then ``day`` when by day)."""
    keys = [("topic", pa.string())] + ([("day", pa.string())] if by_day else [])
    partitioning = ds.partitioning(pa.schema(keys), flavor="hive")
    fmt = "json" if any(Path(out).glob("topic=*/**/*.json")) else "parquet"
    table = ds.dataset(str(out), format=fmt, partitioning=partitioning).to_table()
    return table.select(RECORD_SCHEMA.fieldNames() + (["day"] if by_day else []))
