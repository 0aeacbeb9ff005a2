"""`kdump replicas` output: text for people, one JSON object for programs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kdump.checks.codes import Code
from kdump.format.names import REPLICATION_OFFSET_CHECKPOINT
from kdump.render.verify import finding_line
from kdump.replicas import (
    Follower,
    Replica,
    ReplicasResult,
    checkpointed_high_watermark,
    start_high_watermark,
)
from kdump.units import iso

if TYPE_CHECKING:
    from kdump.run import RunInfo


def render_json(result: ReplicasResult, run: RunInfo | None = None) -> str:
    document = result.to_dict()
    if run is not None:
        document["run"] = run.to_dict(result.all_findings)
    return json.dumps(document, indent=2)


def text_lines(result: ReplicasResult) -> Iterator[str]:
    yield f"{len(result.replicas)} replicas of {result.leader.log.name}"
    for replica in result.replicas:
        yield from _replica_lines(replica)
    yield ""
    leader = result.leader.log
    yield f"leader: {leader.location} ({result.leader_why})"
    yield (
        f"  takes leader epoch {result.leader_epoch} from its log end offset "
        f"{leader.log_end_offset} (Partition.makeLeader)"
    )
    for follower in result.followers:
        yield ""
        yield from _follower_lines(follower)
    findings = result.all_findings
    exported = {f.log.location: f.exported_to for f in result.followers if f.exported_to}
    if findings:
        yield ""
        yield "findings:"
        for f in findings:
            to = exported.get(f.path) if f.code == Code.REPLICA_TRUNCATION_LOSS else None
            if to is None:
                yield "  " + finding_line(f)
            else:  # done: its advice, to export them, is not given again
                yield f"  {finding_line(f, advice=False)} [exported to {to}]"


def _replica_lines(replica: Replica) -> Iterator[str]:
    log = replica.log
    hw = log.high_watermark
    yield f"  {log.location}"
    if checkpointed_high_watermark(log) is None:
        # the broker starts it at 0, within [log start, log end] (Partition.createLog): what
        # it was is not known, as "acknowledged: unknown" below says
        high = (
            f"high watermark not checkpointed (no {REPLICATION_OFFSET_CHECKPOINT} entry): "
            f"the broker starts it at its log start {start_high_watermark(log)}"
        )
    else:
        high = f"high watermark {hw.value} ({hw.source})"
    yield f"    log start {log.log_start_offset}, log end {log.log_end_offset}, {high}"
    cache = log.leader_epoch_cache
    if cache is None:
        epochs = "the leader-epoch-checkpoint does not parse"
    elif not cache.epoch_entries():
        carried = ", ".join(f"{e} from {o}" for e, o in replica.epochs_in_batches)
        epochs = "none (no leader-epoch-checkpoint entry)"
        if carried:
            # LogSegment.recover assigns them, for the segments the broker recovers only
            epochs = (
                f"none in its leader-epoch-checkpoint, though its batches carry {carried}: the "
                "broker's cache gets those of the segments its recovery reads, and no others"
            )
    else:
        epochs = ", ".join(f"{e.epoch} from {e.start_offset}" for e in cache.epoch_entries())
    yield f"    leader epochs: {epochs}"
    damaged = log.damaged_from
    if damaged is not None:
        where = f"{damaged.path}:{damaged.position}"
        yield f"    damaged: recovery cuts it at {where} (offset {damaged.offset})"


def _follower_lines(follower: Follower) -> Iterator[str]:
    t, lost = follower.truncation, follower.lost
    yield f"follower {follower.log.location}:"
    for step in t.steps:
        yield f"  {step}"
    if not t.truncated:
        yield (
            f"  truncates to {t.truncate_to}, its own log end: nothing is removed; it fetches "
            f"from {t.fetch_offset}"
        )
    else:
        how = "truncated fully, to start at" if t.truncated_fully else "truncated to"
        yield f"  {how} {t.truncate_to}"
        again = lost.refetched
        if again.batches:
            yield (
                f"  fetches again {again.batches} batches, offsets {again.first}..{again.last}: "
                "the leader holds the same"
            )
        if not lost.records:
            yield "  drops nothing the leader lacks"
    if lost.records:
        first, last = lost.offsets or (0, 0)
        yield (
            f"  drops {lost.records} records in {len(lost.batches)} batches, offsets "
            f"{first}..{last}, {lost.bytes} bytes, leader epochs "
            f"{', '.join(map(str, lost.epochs)) or 'none'}"
        )
        if lost.first_timestamp is not None and lost.last_timestamp is not None:
            yield f"  written {iso(lost.first_timestamp)} .. {iso(lost.last_timestamp)}"
        if lost.below_high_watermark is None:
            yield "  acknowledged: unknown (no high watermark checkpointed)"
        else:
            yield f"  below its high watermark (acknowledged): {lost.below_high_watermark} records"
        if follower.exported_to is not None:
            yield f"  exported to {follower.exported_to}"
        for m in lost.markers:
            hangs = (
                "the leader holds its transaction open: it hangs"
                if m.hanging
                else "its transaction began past the truncation and goes with it"
            )
            yield f"  {m.type} marker of producer {m.producer_id} at {m.offset} dropped: {hangs}"
    content = follower.content
    if content is not None:
        yield (
            f"  compacted: compared by content over offsets {content.start}..{content.end - 1} "
            f"(batches only from {follower.batches_from}: below, the replicas' cleaners rewrote "
            f"them): {content.leader_keys} keys on the leader, {content.follower_keys} on the "
            f"follower, {content.differing_keys} differing"
        )
    if follower.differing_batches:
        n = follower.differing_batches
        yield f"  {n} batch(es) differ from the leader's where both keep them"


__all__ = ["render_json", "text_lines"]
