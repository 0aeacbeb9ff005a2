"""Stage and task counts of the running Spark jobs, on the driver's terminal.

A thread polls SparkContext.statusTracker() and keeps one bar per stage (tasks done of the
stage's tasks, their rate, time left) in kdump's progress display
(``kdump.render.progress_display.progress_display``); the command passes none when stderr is no
terminal.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pyspark.sql import SparkSession

if TYPE_CHECKING:
    from kdump.render.progress_display import ProgressDisplay

POLL_SECONDS = 0.2


@contextmanager
def stage_progress(spark: SparkSession, display: ProgressDisplay | None) -> Iterator[None]:
    if display is None:
        yield
        return
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        with _connect_progress(spark, display):
            yield
        return
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    bars: dict[int, Any] = {}

    def poll() -> None:
        while True:
            active = set(tracker.getActiveStageIds())
            for stage_id in active | set(bars):
                info = tracker.getStageInfo(stage_id)
                if info is None:
                    continue
                if stage_id not in bars:
                    bars[stage_id] = display.bar(f"stage {stage_id}", info.numTasks)
                running = f", {info.numActiveTasks} running" if stage_id in active else ""
                bars[stage_id].set(
                    info.numCompletedTasks, info.numTasks, f"stage {stage_id}{running}"
                )
            if stop.wait(POLL_SECONDS):
                return

    thread = threading.Thread(target=poll, name="kdump-spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _connect_progress(spark: SparkSession, display: ProgressDisplay) -> Iterator[None]:
    """Spark Connect has no status tracker here: the server reports each operation's stages
    to a progress handler as it runs."""
    from pyspark.sql.connect.shell.progress import ProgressHandler

    bars: dict[int, Any] = {}

    class Stages(ProgressHandler):
        def __call__(
            self, stages: Any, inflight_tasks: int, operation_id: str | None, done: bool
        ) -> None:
            for stage in stages or ():
                if stage.stage_id not in bars:
                    bars[stage.stage_id] = display.bar(f"stage {stage.stage_id}", stage.num_tasks)
                running = "" if stage.done else f", {inflight_tasks} running"
                bars[stage.stage_id].set(
                    stage.num_completed_tasks, stage.num_tasks, f"stage {stage.stage_id}{running}"
                )

    handler = Stages()
    spark.registerProgressHandler(handler)
    try:
        yield
    finally:
        spark.removeProgressHandler(handler)
