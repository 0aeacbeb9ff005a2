"""Stage and task counts of the running Spark jobs, on the driver's terminal.

A thread polls SparkContext.statusTracker() and draws one rich progress bar per stage on
stderr; the command enables it only when stderr is a terminal.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession
from rich.console import Console
from rich.progress import Progress, TaskID

POLL_SECONDS = 0.2


@contextmanager
def stage_progress(
    spark: SparkSession, enabled: bool, console: Console | None = None
) -> Iterator[None]:
    if not enabled:
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    bars: dict[int, TaskID] = {}

    with Progress(console=console or Console(stderr=True), transient=True) as progress:

        def poll() -> None:
            while True:
                active = set(tracker.getActiveStageIds())
                for stage_id in active | set(bars):
                    info = tracker.getStageInfo(stage_id)
                    if info is None:
                        continue
                    if stage_id not in bars:
                        bars[stage_id] = progress.add_task("", total=info.numTasks)
                    running = f", {info.numActiveTasks} running" if stage_id in active else ""
                    progress.update(
                        bars[stage_id],
                        completed=info.numCompletedTasks,
                        description=f"stage {stage_id}: {info.numCompletedTasks}/"
                        f"{info.numTasks} tasks{running}",
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
