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
- ``segments_recovered``: each LogSegment.recover run costs something whatever it reads (a
  producer state manager listing the directory, the indexes reset and trimmed);
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

from kdump.tuples import NamedTuple


@dataclass(frozen=True)
class Work:
    """What a partition's load reads."""

    recover_bytes: int = 0
    recover_batches: int = 0
    replay_bytes: int = 0
    replay_batches: int = 0
    snapshots_written: int = 0
    segments_recovered: int = 0
    logs: int = 1


@dataclass(frozen=True)
class Pace:
    """Seconds each unit of work takes, at one end of the calibrated range."""

    recover_byte: float
    recover_batch: float
    replay_byte: float
    """Zero with the files in the page cache (a replay reads batch headers only); a cold
    cache makes it read the pages those headers lie in."""
    replay_batch: float
    snapshot: float
    segment: float
    """What one LogSegment.recover run costs besides its bytes and batches (a producer state
    manager made for it, its indexes reset and trimmed)."""
    log: float

    def seconds(self, work: Work) -> float:
        return (
            work.recover_bytes * self.recover_byte
            + work.recover_batches * self.recover_batch
            + work.replay_bytes * self.replay_byte
            + work.replay_batches * self.replay_batch
            + work.snapshots_written * self.snapshot
            + work.segments_recovered * self.segment
            + work.logs * self.log
        )


class Estimate(NamedTuple):
    """A time at the fastest, the typical (median) and the slowest pace measured."""

    low: float
    typical: float
    high: float

    @property
    def bounds(self) -> tuple[float, float]:
        return self.low, self.high

    def plus(self, other: Estimate) -> Estimate:
        return Estimate(*(a + b for a, b in zip(self, other, strict=True)))

    def less(self, other: Estimate) -> Estimate:
        return Estimate(*(a - b for a, b in zip(self, other, strict=True)))


NOTHING = Estimate(0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Calibration:
    """The paces measured: the fastest, the median and the slowest of every round."""

    fast: Pace
    typical: Pace
    slow: Pace
    measured: str
    """Where and how, in words (the figures are in docs/startup.md)."""

    def seconds(self, work: Work) -> Estimate:
        return Estimate(
            self.fast.seconds(work), self.typical.seconds(work), self.slow.seconds(work)
        )


MIB = float(1 << 20)

CALIBRATION = Calibration(
    # each the best of the 20 rounds of docs/startup.md: an idle moment, the page cache warm
    fast=Pace(
        recover_byte=1 / (3300 * MIB),
        recover_batch=1 / 240_000,
        replay_byte=0.0,
        replay_batch=1 / 430_000,
        snapshot=0.001,
        segment=0.002,
        log=0.0028,
    ),
    # each the median of those rounds, the page cache warm
    typical=Pace(
        recover_byte=1 / (1446 * MIB),
        recover_batch=1 / 116_500,
        replay_byte=0.0,
        replay_batch=1 / 244_000,
        snapshot=0.002,
        segment=0.0035,
        log=0.0122,
    ),
    # each the worst: a loaded machine (load average 9 to 16 on 2 cores), or a cold page cache
    slow=Pace(
        recover_byte=1 / (190 * MIB),
        recover_batch=1 / 30_000,
        replay_byte=1 / (600 * MIB),
        replay_batch=1 / 21_000,
        snapshot=0.010,
        segment=0.025,
        log=0.054,
    ),
    measured="Kafka 4.4.0, 2 cores, docs/startup.md",
)
"""Measured by bench/bench_startup.py against the real broker (its own timings of each log's
load, each producer state replay and each snapshot write): docs/startup.md has every round."""


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
) -> Estimate:
    """A log dir's load, its partitions' ``works`` in the order LogManager submits them, at
    each pace."""
    return Estimate(
        *(
            schedule([pace.seconds(w) for w in works], threads)
            for pace in (calibration.fast, calibration.typical, calibration.slow)
        )
    )


__all__ = [
    "CALIBRATION",
    "NOTHING",
    "Calibration",
    "Estimate",
    "Pace",
    "Work",
    "log_dir_seconds",
    "schedule",
]
