"""Leader epochs: the leader-epoch-checkpoint's entries against the partitionLeaderEpoch the
batches carry (LeaderEpochFileCache; the broker truncates the cache to the log at startup)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kdump.log_scan import LogScan

if TYPE_CHECKING:
    from kdump.format.checkpoint import EpochEntry


def observed_epochs(scans: Iterable[LogScan | None]) -> list[tuple[int, int]]:
    """Where each epoch starts in the batches of ``scans`` (in segment order)."""
    observed: list[tuple[int, int]] = []
    for scan in scans:
        if scan is None:
            continue
        for epoch, offset in scan.epoch_starts:
            if epoch >= 0 and (not observed or observed[-1][0] != epoch):
                observed.append((epoch, offset))
    return observed


def leader_epoch_problems(
    entries: list[EpochEntry], observed: list[tuple[int, int]], log_end: int | None = None
) -> list[str]:
    """Where the checkpoint and the batches' partitionLeaderEpoch disagree (``log_end``: the
    log's end offset, where the batches are the whole log)."""
    problems = []
    if entries and observed and log_end is not None:
        latest = entries[-1]
        if latest.epoch not in {epoch for epoch, _ in observed} and (
            observed[0][1] <= latest.start_offset < log_end
        ):
            # LeaderEpochFileCache.endOffsetFor(an older epoch) answers this start offset: a
            # follower fetching from this replica as leader truncates there, though no batch
            # of the latest epoch is in the log (the cache is cut only at the log end)
            held_by = max((e for e in observed if e[1] <= latest.start_offset), key=lambda e: e[1])
            problems.append(
                f"the latest entry {tuple(latest)} starts inside the log, but no batch carries "
                f"epoch {latest.epoch} (offset {latest.start_offset} is in epoch {held_by[0]}'s "
                "batches)"
            )
    for a, b in itertools.pairwise(entries):
        if b.epoch <= a.epoch or b.start_offset < a.start_offset:
            problems.append(f"entries {tuple(a)} then {tuple(b)} do not both increase")
    starts = {e.epoch: e.start_offset for e in entries}
    for i, (epoch, offset) in enumerate(observed):
        if i and epoch < observed[i - 1][0]:
            problems.append(
                f"batches go back from epoch {observed[i - 1][0]} to {epoch} at offset {offset}"
            )
        if epoch not in starts:
            problems.append(
                f"batches from offset {offset} carry epoch {epoch}, which the checkpoint lacks"
            )
        elif i == 0 and starts[epoch] > offset:
            problems.append(
                f"epoch {epoch} starts at {starts[epoch]} in the checkpoint, but a batch at "
                f"offset {offset} already carries it"
            )
        elif i and starts[epoch] != offset:
            problems.append(
                f"epoch {epoch} starts at {starts[epoch]} in the checkpoint, at offset {offset} "
                "in the log"
            )
    return problems


__all__ = ["leader_epoch_problems", "observed_epochs"]
