"""Spark tasks for kdump's jobs: each input one task, run on an executor by kdump.spark.remote.

A classic session runs them as an RDD (``parallelize`` with one slice per input: the cheapest
task Spark has); Spark Connect, which has no RDDs, as ``mapInArrow`` over a one-row-per-partition
range joined with the inputs (a broadcast join keeps the range's partitions: one task per input,
no shuffle). Either way the results come back in the inputs' order, the first error an input
met ends the run in one line (RemoteError, its exit code), and the driver learns what each
executor ran (``executor_note``).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from pyspark.sql import SparkSession

import kdump
from kdump import __version__, speedups
from kdump.errors import RemoteError
from kdump.spark import remote
from kdump.spark.remote import RESULT_FIELDS, RESULT_SCHEMA, TaskRunner
from kdump.spark.ship import is_connect, session_key

DRIVER = (socket.gethostname(), os.path.realpath(os.path.dirname(kdump.__file__ or "")))
"""This host and the folder kdump runs from: executors that import those files run this kdump."""
_executors: dict[str, set[str]] = {}
"""Session key -> the facts (JSON) of each distinct executor its tasks ran on."""


def run_tasks(spark: SparkSession, target: str, inputs: Sequence[Any]) -> list[Any]:
    """``target`` ("module:function" of one input) applied to each of ``inputs``, one Spark
    task each, on the executors; the results in the inputs' order."""
    if not inputs:
        return []
    _by_value()
    runner = TaskRunner(target, __version__, DRIVER)
    items = [(i, pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)) for i, x in enumerate(inputs)]
    if is_connect(spark):
        rows = interruptible(spark, lambda: _connect_rows(spark, runner, items))
    else:
        rdd = spark.sparkContext.parallelize(items, len(items)).mapPartitions(runner.partition)
        rows = interruptible(spark, rdd.collect)
    return _results(
        spark, [dict(zip(RESULT_FIELDS, row, strict=True)) for row in rows], len(inputs)
    )


T = TypeVar("T")


def interruptible(spark: SparkSession, action: Callable[[], T]) -> T:
    """``action`` (a Spark job) run in a thread of its own while this one waits, so that a stop
    signal (Ctrl-C, SIGTERM: kdump.errors.Interrupted) cancels the session's jobs and unwinds
    at once, and the session stops with no application left running on the cluster. Not in
    the waiting thread itself: py4j pins each Python thread to one JVM thread, busy with the
    job, and a cancel sent on it would wait behind the job (pyspark's own SIGINT handler hangs
    so on a cluster)."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, action()))
        except BaseException as e:  # handed to the waiting thread
            outcome.append((False, e))

    job = threading.Thread(target=run, name="kdump-spark-job", daemon=True)
    job.start()
    try:
        while job.is_alive():
            job.join(WAIT_SECONDS)
    except KeyboardInterrupt:
        _cancel(spark)
        raise
    ok, value = outcome[0]
    if not ok:
        raise value
    return cast(T, value)


WAIT_SECONDS = 0.2
"""How often the waiting thread wakes: a signal is handled at its next wake at the latest."""


def _cancel(spark: SparkSession) -> None:
    with contextlib.suppress(Exception):  # a session already going: nothing left to cancel
        if is_connect(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()


def _connect_rows(
    spark: SparkSession, runner: TaskRunner, items: list[tuple[int, bytes]]
) -> list[tuple[Any, ...]]:
    import pyarrow as pa
    from pyspark.sql.functions import broadcast

    n = len(items)
    inputs = spark.createDataFrame(
        pa.table(
            {
                "id": pa.array([i for i, _ in items], pa.int64()),
                "payload": pa.array([p for _, p in items], pa.binary()),
            }
        )
    )
    one_each = spark.range(0, n, 1, n).join(broadcast(inputs), "id")
    table = one_each.mapInArrow(runner, RESULT_SCHEMA).toArrow()
    return [tuple(row[f] for f in RESULT_FIELDS) for row in table.to_pylist()]


def _results(spark: SparkSession, rows: list[dict[str, Any]], n: int) -> list[Any]:
    seen = _executors.setdefault(session_key(spark), set())
    seen.update(row["executor"] for row in rows)
    failed = sorted((row["task"], row["error"], row["exit_code"]) for row in rows if row["error"])
    if failed:
        _, message, exit_code = failed[0]
        raise RemoteError(message, exit_code)
    results: list[Any] = [None] * n
    for row in rows:
        results[row["task"]] = pickle.loads(row["result"])
    return results


def check_executors(spark: SparkSession) -> None:
    """Whether the executors' own kdump is this one (a task per core: each executor, as far as
    Spark spreads them), where none was shipped; RemoteError names the first that is not."""
    run_tasks(spark, "kdump.spark:probe", [None] * default_parallelism(spark))


def default_parallelism(spark: SparkSession) -> int:
    """The cores the application has (Spark's default parallelism); on Spark Connect, which
    does not say, the partitions of a range the server splits by the same default."""
    if not is_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    from pyspark.sql.functions import spark_partition_id

    split = spark.range(0, 1 << 16).select(spark_partition_id().alias("p"))
    return max(1, interruptible(spark, split.dropDuplicates().count))


def _by_value() -> None:
    """kdump.spark.remote's code goes with the job: the executor may have no kdump at all."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(remote)


def executor_note(spark: SparkSession) -> str | None:
    """One line where the session's executors ran kdump's pure Python though the driver runs
    its C module (their platform is not the one it was built for), else None."""
    if speedups.why_off() is not None:
        return None
    return pure_python_note([json.loads(f) for f in sorted(_executors.get(session_key(spark), ()))])


def pure_python_note(executors: list[dict[str, Any]]) -> str | None:
    """The note on the executors (kdump.spark.remote.executor_facts) that ran without kdump's C
    module; None where every one had it."""
    off = [f for f in executors if f.get("c_off")]
    if not off:
        return None
    hosts = sorted({f["host"] for f in off})
    return (
        f"the executors on {', '.join(hosts)} ran kdump's pure Python, slower than its C module "
        f"({off[0]['c_off']}); for it, install kdump's wheel for their platform there and run "
        "with --no-ship"
    )
