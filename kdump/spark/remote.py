"""The first code of every task of kdump's Spark jobs, on the executor (issue 40).

This module travels with each job by value: cloudpickle sends its code, not a reference to it
(kdump.spark.tasks registers it), so it runs where the executor's Python has no kdump, or
another version of it, and says so in one line where otherwise the task would fail somewhere
inside or, worse, answer with other code. The task's input travels pickled apart (bytes) for the
same reason: no kdump object is unpickled before the executor is known to run the driver's
kdump. It imports nothing but the standard library at the top, and no other part of kdump.

Each task yields one row per input: its result pickled, or the one-line error of a KdumpError
and its exit code, and the executor's facts (host, Python, kdump and where it came from, why
its C module is off) for the driver's note on pure-Python executors (kdump.spark.tasks).
"""

from __future__ import annotations

import importlib
import json
import os
import pickle
import socket
import sys
from collections.abc import Iterable, Iterator
from typing import Any

RESULT_FIELDS = ("task", "result", "error", "exit_code", "executor")
RESULT_SCHEMA = "task long, result binary, error string, exit_code int, executor string"
"""A task's output row (Spark's DDL): the index of its input, then RESULT_FIELDS' values."""
BAD_INPUT = 3
"""kdump.errors.ExitCode.BAD_INPUT: what an executor without the driver's kdump ends with."""


def executor_facts(version: str, driver: tuple[str, str] = ("", "")) -> tuple[str | None, str]:
    """What is wrong with this executor's kdump for a driver running ``version`` (None: it runs
    that version, or the driver's own files: ``driver`` is its host and kdump's folder there),
    and this executor's facts as JSON."""
    host = socket.gethostname()
    facts: dict[str, Any] = {"host": host, "python": sys.executable}
    try:
        import kdump
    except ImportError:
        return (
            f"the executors' Python ({sys.executable} on {host}) has no kdump: let kdump ship "
            f"itself to the executors (without --no-ship), or install kdump {version} there"
        ), json.dumps(facts)
    where = os.path.dirname(kdump.__file__ or "")
    facts.update(kdump=kdump.__version__, origin=where)
    # the driver's own files (a local master): the same code, whatever version the files say
    # now (an editable install's _version.py is rewritten by a build while the driver runs)
    own = (host, os.path.realpath(where)) == driver
    if kdump.__version__ != version and not own:
        return (
            f"the executors run kdump {kdump.__version__} ({where}, Python {sys.executable} on "
            f"{host}); the driver runs kdump {version}: let kdump ship itself to the executors "
            f"(without --no-ship), or install kdump {version} there"
        ), json.dumps(facts)
    from kdump import speedups
    from kdump.format.compression import decompressor

    facts.update(c_off=speedups.why_off(), decompressor=decompressor())
    return None, json.dumps(facts)


class TaskRunner:
    """Runs ``target`` ("module:function", a function of one input) on each input of a task,
    once the executor is known to run kdump ``version`` (or the files of ``driver``: its host
    and kdump's folder there)."""

    def __init__(self, target: str, version: str, driver: tuple[str, str] = ("", "")) -> None:
        self.target, self.version, self.driver = target, version, driver

    def rows(self, items: Iterable[tuple[int, bytes]]) -> Iterator[tuple[Any, ...]]:
        """RESULT_FIELDS for each (index, pickled input)."""
        problem, facts = executor_facts(self.version, self.driver)
        for task, payload in items:
            if problem is not None:
                yield task, None, problem, BAD_INPUT, facts
                continue
            yield (task, *self._run(payload), facts)

    def _run(self, payload: bytes) -> tuple[bytes | None, str | None, int | None]:
        from kdump.errors import KdumpError

        module, name = self.target.split(":")
        function = getattr(importlib.import_module(module), name)
        try:
            result = function(pickle.loads(payload))
        except KdumpError as e:  # the input's own error: one line on the driver, its exit code
            return None, str(e), int(e.exit_code)
        return pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL), None, None

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        """DataFrame.mapInArrow's function (Spark Connect has no RDDs): one Arrow batch per
        input, so each result leaves the task as soon as it is made."""
        import pyarrow as pa

        schema = pa.schema(
            [
                ("task", pa.int64()),
                ("result", pa.binary()),
                ("error", pa.string()),
                ("exit_code", pa.int32()),
                ("executor", pa.string()),
            ]
        )
        for batch in batches:
            items = zip(
                batch.column("id").to_pylist(), batch.column("payload").to_pylist(), strict=True
            )
            for row in self.rows(items):
                yield pa.RecordBatch.from_pylist(
                    [dict(zip(RESULT_FIELDS, row, strict=True))], schema=schema
                )

    def partition(self, items: Iterable[tuple[int, bytes]]) -> Iterator[tuple[Any, ...]]:
        """RDD.mapPartitions's function (a classic session: cheaper per task than Arrow's)."""
        return self.rows(items)
