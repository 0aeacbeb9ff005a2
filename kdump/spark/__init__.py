"""kdump on Apache Spark (extra ``spark``): distributed verify, record export to Parquet, and
the "kafka-segments" data source, all on the same checks and parsers as the CLI."""


def probe(_: object) -> None:
    """A task with nothing to do: the check of the executor before it is the work
    (kdump.spark.tasks.check_executors)."""
