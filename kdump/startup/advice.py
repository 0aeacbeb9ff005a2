"""What would make a broker's start shorter, from its planned load (kdump.startup.plan):

- more recovery threads per log dir, and for how much (the slowest log dir with each count;
  beyond the partitions that have work, or the machine's cores when the files are cached,
  more threads add nothing);
- which partitions dominate (one partition is one thread's job: no thread count splits it);
- an index that forces a recovery at open, and the producer state replay that follows it
  (KAFKA-5829: LogLoader's recovery of a segment deletes every producer snapshot above it),
  rebuilt offline first (``kdump rebuild-index``), and the time that saves: the same
  partition's load planned again as if its indexes were whole;
- a producer state replayed from the log start for want of a snapshot, which kdump cannot
  spare the broker (it writes no producer snapshots): said, with what it costs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from kdump.startup.estimate import Calibration, Estimate, Work
from kdump.startup.plan import PartitionStartup, StartupResult
from kdump.units import seconds_range as span
from kdump.untrusted import command

SHARE = 0.25
"""A partition that is this share of its log dir's work dominates it."""
GAIN = 0.10
"""Advice that saves less than this share of the estimate is left out."""
WORTH = 10.0
"""Seconds (typical) below which a start is short enough: no thread or partition advice."""


@dataclass(frozen=True)
class Advice:
    kind: str
    """``threads``, ``dominant``, ``rebuild-index`` or ``replay``."""
    text: str
    seconds: Estimate | None = None
    """The estimate if the advice is followed (threads), or the time it saves."""
    partition: str | None = None
    command: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "seconds": None if self.seconds is None else [round(s, 3) for s in self.seconds.bounds],
            "partition": self.partition,
            "command": self.command,
        }


def advise(result: StartupResult) -> list[Advice]:
    calibration = result.options.calibration
    out = []
    out += _threads(result)
    out += _dominant(result)
    for d in result.log_dirs:
        for p in d.partitions:
            out += _repairs(p, calibration)
    return out


def _threads(result: StartupResult) -> list[Advice]:
    """The next count that saves enough, and the most that still saves (up to the partitions
    that have work: one partition is one job)."""
    now = result.seconds
    if now.typical < WORTH:
        return []
    busy = max((sum(1 for p in d.partitions if p.has_work) for d in result.log_dirs), default=0)
    found: list[tuple[int, Estimate]] = []
    more = result.options.recovery_threads * 2
    while more <= min(max(busy, 1), 64) * 2:
        then = result.seconds_with(more)
        if (found[-1][1].high if found else now.high) - then.high < GAIN * now.high:
            break
        found.append((more, then))
        more *= 2
    cores = os.cpu_count() or 1
    out = []
    shown = found[:1] + found[1:][-1:]
    for threads, then in shown:
        note = (
            f" (this machine has {cores} cores: with the files in the page cache the re-reads "
            "are CPU-bound, and threads beyond the cores shorten only the waits on the disk)"
            if threads > cores and threads == shown[-1][0]
            else ""
        )
        out.append(
            Advice(
                "threads",
                f"num.recovery.threads.per.data.dir={threads}: about {span(*then)} instead of "
                f"{span(*now)}{note}",
                then,
            )
        )
    return out


def _dominant(result: StartupResult) -> list[Advice]:
    slowest = result.slowest
    if slowest is None or slowest.seconds.typical < WORTH:
        return []
    total = sum(p.seconds.high for p in slowest.partitions)
    out = []
    for p in sorted(slowest.partitions, key=lambda p: -p.seconds.high)[:3]:
        if not p.has_work or total <= 0 or p.seconds.high < SHARE * total:
            break
        share = round(100 * p.seconds.high / total)
        out.append(
            Advice(
                "dominant",
                f"{p.log.storage.name} is {share}% of the work of {slowest.path} "
                f"({span(*p.seconds)}): one partition is one thread's job, which no thread "
                "count splits",
                p.seconds,
                p.log.location,
            )
        )
    return out


def _repairs(p: PartitionStartup, calibration: Calibration) -> list[Advice]:
    out = []
    if p.indexes_rebuilt and p.seconds_with_indexes_whole is not None:
        saved = p.seconds.less(p.seconds_with_indexes_whole)
        paths = [s.log_path for s in p.log.segments if s.base_offset in set(p.indexes_rebuilt)]
        suggested = command("kdump", "rebuild-index", *paths)  # kdump.untrusted: each quoted
        out.append(
            Advice(
                "rebuild-index",
                f"{p.log.storage.name}: segment(s) {', '.join(map(str, p.indexes_rebuilt))} "
                "force a recovery at open, which deletes the producer snapshots above them "
                "and so a replay after it; rebuilding their indexes before the start "
                f"(`{suggested}`) saves about {span(*saved)}",
                saved,
                p.log.location,
                suggested,
            )
        )
    full = [r for r in p.replays if r.snapshot is None and r.batches]
    if full and not p.indexes_rebuilt:
        replay = full[0]
        cost = calibration.seconds(
            Work(replay_bytes=replay.bytes, replay_batches=replay.batches, logs=0)
        )
        out.append(
            Advice(
                "replay",
                f"{p.log.storage.name}: no usable producer snapshot at or below offset "
                f"{replay.to_offset}, so the broker replays {replay.batches} batches from the "
                f"log start ({span(*cost)}); kdump writes no producer snapshots, so nothing "
                "offline spares it",
                cost,
                p.log.location,
            )
        )
    return out


__all__ = ["Advice", "advise"]
