"""How long a broker's log loading takes: the work each partition's load does, priced at rates
measured on the real broker (docs/startup.md), spread over the log dir's recovery threads as
LogManager.loadLogs spreads it.

The work, in the units the broker's time goes to (bench/bench_startup.py measured each apart):

- ``recover``: LogSegment.recover re-reads a segment whole: every batch's CRC (a cost per byte)
  and its header, index entries and producer state (a cost per batch);
- ``replay``: UnifiedLog.rebuildProducerState reads each batch's header after the snapshot it
  loads (a cost per batch: it never reads the records);
- ``snapshots_written``: each producer snapshot the load writes is flushed to disk (a cost
  each: the broker times them, "Wrote producer snapshot at offset N ... in X ms");
- ``logs``: a log that needs neither still costs its opening (files, snapshot, checkpoints).

LogManager gives each log dir its own pool of ``num.recovery.threads.per.data.dir`` threads and
submits one job per partition directory in the order the directory lists them
(``File.listFiles``, unsorted); each thread takes the next job when it is free. The log dirs
load side by side, so the slowest decides; the KRaft metadata log is loaded before them, by
the raft layer, on one thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    """What a partition's load reads."""

    recover_bytes: int = 0
    recover_batches: int = 0
    replay_bytes: int = 0
    replay_batches: int = 0
    snapshots_written: int = 0
    logs: int = 1


@dataclass(frozen=True)
class Pace:
    """Seconds each unit of work takes, at one end of the calibrated range."""

    recover_byte: float
    recover_batch: float
    replay_batch: float
    snapshot: float
    log: float

    def seconds(self, work: Work) -> float:
        return (
            work.recover_bytes * self.recover_byte
            + work.recover_batches * self.recover_batch
            + work.replay_batches * self.replay_batch
            + work.snapshots_written * self.snapshot
            + work.logs * self.log
        )


@dataclass(frozen=True)
class Calibration:
    """The two ends of the range: the fastest and the slowest pace measured."""

    fast: Pace
    slow: Pace
    measured: str
    """Where and how, in words (the figures are in docs/startup.md)."""

    def seconds(self, work: Work) -> tuple[float, float]:
        return self.fast.seconds(work), self.slow.seconds(work)


def per_second(rate: float) -> float:
    return 1.0 / rate


MIB = float(1 << 20)

CALIBRATION = Calibration(
    fast=Pace(
        recover_byte=per_second(1200 * MIB),
        recover_batch=per_second(115_000),
        replay_batch=per_second(375_000),
        snapshot=0.001,
        log=0.005,
    ),
    slow=Pace(
        recover_byte=per_second(300 * MIB),
        recover_batch=per_second(25_000),
        replay_batch=per_second(40_000),
        snapshot=0.050,
        log=0.060,
    ),
    measured="Kafka 4.4.0 on 2 cores (bench/bench_startup.py; docs/startup.md)",
)
"""Placeholder figures, replaced by the calibration's (see docs/startup.md)."""


def schedule(durations: Sequence[float], threads: int) -> float:
    """When the last of ``durations`` ends, the jobs taken in order by the first of
    ``threads`` threads to be free (Executors.newFixedThreadPool's queue)."""
    if not durations:
        return 0.0
    free = [0.0] * max(1, min(threads, len(durations)))
    for d in durations:
        heapq.heapreplace(free, free[0] + d)
    return max(free)


def log_dir_seconds(
    works: Sequence[Work], threads: int, calibration: Calibration = CALIBRATION
) -> tuple[float, float]:
    """A log dir's load, its partitions' ``works`` in the order LogManager submits them, at
    each end of the calibrated range."""
    fast = schedule([calibration.fast.seconds(w) for w in works], threads)
    slow = schedule([calibration.slow.seconds(w) for w in works], threads)
    return fast, slow


__all__ = [
    "CALIBRATION",
    "Calibration",
    "Pace",
    "Work",
    "log_dir_seconds",
    "schedule",
]
