"""Replicas of one partition compared offline, by the broker's own rules: which one leads, where
each follower's log will be truncated when it fetches from that leader, what the truncation
drops, and where replicas hold different batches at the same offset.

The leader, as it becomes leader, caches the election's new epoch from its log end offset
(Partition.makeLeader). The follower's side is AbstractFetcherThread's (Kafka 2.7+, truncation
on fetch, KIP-595): a
follower with a leader epoch starts fetching at its log end offset with its latest epoch
(ReplicaManager.initialFetchOffset); the leader answers with the end of that epoch in its own
cache (Partition.fetchRecords: LeaderEpochFileCache.endOffsetFor) and, where the follower's log
goes past it, a diverging epoch; the follower truncates (getOffsetTruncationState) and fetches
again with the epoch it is left with, until nothing diverges. A follower with no epoch truncates
to its high watermark (truncateToHighWatermark); an epoch the leader cannot place, or a fetch
offset below the leader's log start, is OffsetOutOfRange (fetchOffsetAndTruncate).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.checks.codes import Code
from kdump.checks.epochs import observed_epochs
from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import leader_epoch_findings
from kdump.checks.segment import segment_result
from kdump.errors import ExitCode, KdumpError, OutputLimitError
from kdump.format.batch import Batch
from kdump.format.names import REPLICATION_OFFSET_CHECKPOINT
from kdump.format.records import ABORT, COMMIT
from kdump.leader_epoch import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochFileCache,
    OffsetAndEpoch,
)
from kdump.loss import OffsetSpan
from kdump.replica_content import (
    DEFAULT_KEY_MEMORY,
    ContentComparison,
    HeldBatch,
    below,
    cleaned_below,
    compare_content,
    held_batches,
)
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

MAX_FETCHES = 10_000
"""A follower truncates once per epoch at most; past this many rounds the model is wrong."""
SHOWN_DIFFERENCES = 20
"""Differing batches named one by one per follower (all are counted)."""


class OffsetTruncationState(NamedTuple):
    """kafka.server.OffsetTruncationState: where to truncate, and whether that is the last."""

    offset: int
    truncation_completed: bool


class EpochEndOffset(NamedTuple):
    """What the leader answers about an epoch (OffsetForLeaderEpochResponse's EpochEndOffset,
    a fetch response's divergingEpoch)."""

    leader_epoch: int
    end_offset: int


# -- the replicas' logs as the fetcher sees them ------------------------------------------------


class ReplicaLog:
    """What AbstractFetcherThread reads and changes of a replica's log (ReplicaFetcherThread's
    latestEpoch, logStartOffset, logEndOffset, endOffsetForEpoch, truncate): a copy of the
    opened partition's facts, changed as the broker would change them."""

    def __init__(self, log: UnifiedLog) -> None:
        cache = log.leader_epoch_cache
        self.leader_epoch_cache = LeaderEpochFileCache() if cache is None else cache.copy()
        self.log_start_offset = log.log_start_offset
        self.log_end_offset = log.log_end_offset
        self.high_watermark = start_high_watermark(log)
        self.first_segment_base_offset = log.segments[0].base_offset if log.segments else 0
        self.truncated_fully = False

    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch()

    def end_offset_for_epoch(self, leader_epoch: int) -> OffsetAndEpoch | None:
        """UnifiedLog.endOffsetForEpoch: None where the cache answers UNDEFINED_EPOCH_OFFSET."""
        epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)
        return None if offset == UNDEFINED_EPOCH_OFFSET else OffsetAndEpoch(offset, epoch)

    def truncate_to(self, target_offset: int) -> bool:
        """UnifiedLog.truncateTo: nothing past the log end (the epoch cache is truncated to it
        all the same); below the first segment, truncateFullyAndStartAt."""
        if target_offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if self.first_segment_base_offset > target_offset:
            self.truncate_fully_and_start_at(target_offset)
            return True
        self.log_end_offset = target_offset
        self.leader_epoch_cache.truncate_from_end(target_offset)
        self.log_start_offset = min(target_offset, self.log_start_offset)
        self.high_watermark = min(self.high_watermark, target_offset)
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """UnifiedLog.truncateFullyAndStartAt: every segment deleted, the epoch cache cleared."""
        self.log_start_offset = self.log_end_offset = self.high_watermark = new_offset
        self.first_segment_base_offset = new_offset
        self.leader_epoch_cache = LeaderEpochFileCache()
        self.truncated_fully = True


def get_offset_truncation_state(
    follower: ReplicaLog, leader_epoch_offset: EpochEndOffset, fetch_offset: int
) -> OffsetTruncationState:
    """AbstractFetcherThread.getOffsetTruncationState: where the follower truncates given the
    leader's answer (``fetch_offset``: the follower's initial fetch offset, its high watermark
    on the OffsetsForLeaderEpoch path)."""
    if leader_epoch_offset.end_offset == UNDEFINED_EPOCH_OFFSET:
        return OffsetTruncationState(fetch_offset, True)
    if leader_epoch_offset.leader_epoch == UNDEFINED_EPOCH:
        return OffsetTruncationState(
            min(leader_epoch_offset.end_offset, follower.log_end_offset), True
        )
    replica_end_offset = follower.log_end_offset
    found = follower.end_offset_for_epoch(leader_epoch_offset.leader_epoch)
    if found is None:
        # the follower tracks no epoch at or below the leader's: the leader's offset is used
        return OffsetTruncationState(min(leader_epoch_offset.end_offset, replica_end_offset), True)
    if found.leader_epoch != leader_epoch_offset.leader_epoch:
        # the follower does not know the leader's epoch: truncate to the end of its own
        # largest epoch below it, and ask again
        return OffsetTruncationState(min(found.offset, replica_end_offset), False)
    offset_to_truncate_to = min(found.offset, leader_epoch_offset.end_offset)
    return OffsetTruncationState(min(offset_to_truncate_to, replica_end_offset), True)


@dataclass
class Truncation:
    """Where a follower's log ends once it has fetched from the leader and truncated: the
    fetcher's steps in words, the offset its log is truncated to, and whether it was truncated
    fully (every segment deleted, fetching from the leader's start). Where nothing is removed
    ``truncate_to`` is still Kafka's number: getOffsetTruncationState's smaller of the offsets
    and the follower's own log end, its log end (UnifiedLog.truncateTo: "has no effect")."""

    steps: list[str] = field(default_factory=list)
    truncate_to: int = 0
    truncated: bool = False
    """Records are removed (the log end moves back, or every segment goes)."""
    truncated_fully: bool = False
    fetch_offset: int = 0
    """Where the follower then fetches from."""


def follower_truncation(
    leader: UnifiedLog, follower: UnifiedLog, leader_epoch: int | None = None
) -> Truncation:
    """What ``follower`` does to its log when it starts fetching from ``leader`` (the module's
    docstring gives Kafka's rules); ``leader_epoch``: the epoch the leader took at its log end
    offset when it became leader (None: it leads in its latest epoch already)."""
    lead, log = ReplicaLog(leader), ReplicaLog(follower)
    if leader_epoch is not None:
        # Partition.makeLeader: "a follower may have entries in its log from a later epoch
        # than any entry in the new leader's log ... we must cache the new leader epoch"
        lead.leader_epoch_cache.assign(leader_epoch, lead.log_end_offset)
    out = Truncation()
    start_end = log.log_end_offset
    if log.latest_epoch() is None:
        hw = log.high_watermark
        out.steps.append(
            f"no leader epoch in its cache: it truncates to its high watermark {hw} "
            "(truncateToHighWatermark) and fetches from there"
        )
        log.truncate_to(hw)
        _fetch_without_epoch(lead, log, out)
    else:
        _fetch_until_consistent(lead, log, out)
    out.truncated_fully = log.truncated_fully
    out.truncated = log.truncated_fully or log.log_end_offset < start_end
    out.truncate_to = out.fetch_offset = log.log_end_offset
    return out


def _fetch_until_consistent(lead: ReplicaLog, log: ReplicaLog, out: Truncation) -> None:
    """Fetches at the log end with the latest epoch (Partition.fetchRecords on the leader),
    truncating at each diverging epoch, until one no longer diverges."""
    for _ in range(MAX_FETCHES):
        fetch_offset, fetch_epoch = log.log_end_offset, log.latest_epoch()
        if fetch_epoch is None:  # truncation emptied the cache: a fetch with no epoch
            _fetch_without_epoch(lead, log, out)
            return
        found = lead.end_offset_for_epoch(fetch_epoch)
        asks = f"fetch at {fetch_offset} with last fetched epoch {fetch_epoch}"
        if found is None or found.leader_epoch == UNDEFINED_EPOCH:
            out.steps.append(
                f"{asks}: the leader's cache cannot place epoch {fetch_epoch} "
                "(endOffsetFor answers UNDEFINED_EPOCH_OFFSET): OffsetOutOfRange"
            )
            _fetch_offset_and_truncate(lead, log, out)
            return
        if fetch_offset < lead.log_start_offset:
            out.steps.append(
                f"{asks}: below the leader's log start {lead.log_start_offset}: OffsetOutOfRange"
            )
            _fetch_offset_and_truncate(lead, log, out)
            return
        if found.leader_epoch >= fetch_epoch and found.offset >= fetch_offset:
            out.steps.append(
                f"{asks}: the leader's epoch {found.leader_epoch} ends at {found.offset}: no "
                "divergence, it fetches from there"
            )
            return
        diverging = EpochEndOffset(found.leader_epoch, found.offset)
        state = get_offset_truncation_state(log, diverging, log.high_watermark)
        log.truncate_to(state.offset)
        out.steps.append(
            f"{asks}: diverging epoch {diverging.leader_epoch} ending at {diverging.end_offset}; "
            f"it truncates to {state.offset}"
            + ("" if state.truncation_completed else " and asks again with its earlier epoch")
        )
    raise KdumpError(f"no end to the follower's truncation after {MAX_FETCHES} fetches")


def _fetch_without_epoch(lead: ReplicaLog, log: ReplicaLog, out: Truncation) -> None:
    """A fetch with no last fetched epoch: only the leader's offsets bound it (LocalLog.read)."""
    offset = log.log_end_offset
    if lead.log_start_offset <= offset <= lead.log_end_offset:
        return
    out.steps.append(
        f"fetch at {offset} with no epoch: outside the leader's log "
        f"[{lead.log_start_offset}, {lead.log_end_offset}]: OffsetOutOfRange"
    )
    _fetch_offset_and_truncate(lead, log, out)


def _fetch_offset_and_truncate(lead: ReplicaLog, log: ReplicaLog, out: Truncation) -> None:
    """AbstractFetcherThread.fetchOffsetAndTruncate, on OffsetOutOfRange."""
    replica_end_offset = log.log_end_offset
    if lead.log_end_offset < replica_end_offset:
        out.steps.append(
            f"the leader's log end {lead.log_end_offset} is below its own {replica_end_offset}: "
            f"it truncates to {lead.log_end_offset}"
        )
        log.truncate_to(lead.log_end_offset)
    elif lead.log_start_offset > replica_end_offset:
        out.steps.append(
            f"its log end {replica_end_offset} is below the leader's log start "
            f"{lead.log_start_offset}: it truncates fully and starts at "
            f"{lead.log_start_offset} (truncateFullyAndStartAt)"
        )
        log.truncate_fully_and_start_at(lead.log_start_offset)
    else:
        out.steps.append(f"it keeps its log and fetches from {replica_end_offset}")


# -- what a truncation drops ----------------------------------------------------------------------


class LostMarker(NamedTuple):
    """A COMMIT or ABORT marker a truncation drops; ``hanging``: the leader's log holds that
    producer's transaction open below the truncation offset, which the marker ended."""

    offset: int
    producer_id: int
    producer_epoch: int
    type: str
    hanging: bool

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


@dataclass
class Lost:
    """The batches a truncation removes from a follower (whole batches: LogSegment.truncateTo
    cuts at the batch holding the offset)."""

    batches: list[HeldBatch] = field(default_factory=list)
    records: int = 0
    bytes: int = 0
    epochs: list[int] = field(default_factory=list)
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    below_high_watermark: int | None = 0
    """Records below the follower's own high watermark: acknowledged to acks=all producers
    from its point of view (None: no replication-offset-checkpoint entry tells it)."""
    markers: list[LostMarker] = field(default_factory=list)
    refetched: OffsetSpan = field(default_factory=OffsetSpan)
    """Batches the truncation removes that the leader holds the same: fetched again."""

    @property
    def offsets(self) -> tuple[int, int] | None:
        if not self.batches:
            return None
        return self.batches[0].batch.base_offset, self.batches[-1].batch.last_offset

    def add(self, held: HeldBatch, high_watermark: int | None) -> None:
        batch = held.batch
        self.batches.append(held)
        count = batch.last_offset - batch.base_offset + 1
        if isinstance(batch.records_count, int) and batch.magic >= 2:
            count = batch.records_count
        self.records += count
        self.bytes += batch.size
        epoch = batch.partition_leader_epoch
        if epoch is not None and epoch >= 0 and epoch not in self.epochs:
            self.epochs.append(epoch)
        first = _first_timestamp(batch)
        if first is not None:
            self.first_timestamp = (
                first if self.first_timestamp is None else min(self.first_timestamp, first)
            )
            last = max(first, batch.max_timestamp)
            self.last_timestamp = (
                last if self.last_timestamp is None else max(self.last_timestamp, last)
            )
        if high_watermark is None or self.below_high_watermark is None:
            self.below_high_watermark = None
        elif batch.base_offset < high_watermark:
            below = min(batch.last_offset + 1, high_watermark) - batch.base_offset
            self.below_high_watermark += min(below, count)


def _first_timestamp(batch: Batch) -> int | None:
    first = getattr(batch, "base_timestamp", None)
    if first is None:
        first = batch.max_timestamp
    return None if first is None or first < 0 else int(first)


def lost_records(
    follower: UnifiedLog, leader: UnifiedLog, truncation: Truncation, cleaned_to: int = 0
) -> Lost:
    """What ``truncation`` removes from ``follower`` that the leader does not hold (the same
    batch, by offsets, leader epoch and CRC, is fetched again: counted in ``refetched``);
    markers checked against what the leader holds open once the follower takes its log.
    Below ``cleaned_to`` the replicas' cleaners rewrote the batches by right: the leader's
    cleaned ones are fetched instead (counted in ``refetched``; their content is compared)."""
    lost = Lost()
    if not truncation.truncated:
        return lost
    start = follower.log_start_offset if truncation.truncated_fully else truncation.truncate_to
    hw = checkpointed_high_watermark(follower)
    on_leader = _Cursor(held_batches(leader, start))
    for held in held_batches(follower, start):
        if held.batch.last_offset < cleaned_to or on_leader.holds(held.batch):
            lost.refetched.add(held.batch.base_offset, held.batch.last_offset, 0, held.batch.size)
            continue
        lost.add(held, hw)
        if held.batch.is_control:
            marker = _marker(held, leader, truncation.truncate_to)
            if marker is not None:
                # a producer's first lost marker ends the transaction the leader holds open
                # below the truncation; its later ones end transactions begun above it
                if any(m.producer_id == marker.producer_id for m in lost.markers):
                    marker = marker._replace(hanging=False)
                lost.markers.append(marker)
    return lost


class _Cursor:
    """The leader's batches, read forward as the follower's are (both in offset order)."""

    def __init__(self, batches: Iterator[HeldBatch]) -> None:
        self.batches = batches
        self.current = next(batches, None)

    def holds(self, batch: Batch) -> bool:
        while self.current is not None and self.current.batch.last_offset < batch.base_offset:
            self.current = next(self.batches, None)
        return self.current is not None and _differs(self.current.batch, batch) is None


def start_high_watermark(log: UnifiedLog) -> int:
    """The high watermark the broker starts a replica with (Partition.createLog): its
    replication-offset-checkpoint entry, else 0 ("No checkpointed highwatermark is found"),
    kept within [log start, log end] (UnifiedLog.updateHighWatermark). With no entry that is
    its log start offset, not the log end offset the opened partition's facts assume: a
    follower with no leader epoch truncates there."""
    checkpointed = checkpointed_high_watermark(log)
    return log.log_start_offset if checkpointed is None else checkpointed


def checkpointed_high_watermark(log: UnifiedLog) -> int | None:
    """The high watermark when the log dir's replication-offset-checkpoint gives it (None: the
    opened partition assumes its log end offset, which says nothing of what was acknowledged)."""
    try:
        if log.checkpointed(REPLICATION_OFFSET_CHECKPOINT) is None:
            return None
    except KdumpError:
        return None
    return log.high_watermark.value


def _marker(held: HeldBatch, leader: UnifiedLog, truncate_to: int) -> LostMarker | None:
    batch = held.batch
    kind = held.segment.log.marker_type(batch)
    if kind not in (ABORT, COMMIT):
        return None
    producer_id = int(getattr(batch, "producer_id", -1))
    open_on_leader = leader.loaded_producer_state.state.ongoing_txns.values()
    hanging = any(
        t.producer_id == producer_id and t.first_offset < truncate_to for t in open_on_leader
    )
    return LostMarker(
        batch.base_offset,
        producer_id,
        int(getattr(batch, "producer_epoch", -1)),
        "COMMIT" if kind == COMMIT else "ABORT",
        hanging,
    )


# -- batch by batch where they overlap ------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """Batches at the same offsets that differ on two replicas both reading them as valid."""

    offset: int
    leader: HeldBatch
    follower: HeldBatch
    what: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "what": self.what,
            "leader": _batch_dict(self.leader),
            "follower": _batch_dict(self.follower),
        }


def _batch_dict(held: HeldBatch) -> dict[str, Any]:
    b = held.batch
    return {
        "path": held.segment.log_path,
        "position": b.position,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "crc": b.crc,
        "partition_leader_epoch": b.partition_leader_epoch,
    }


def _differs(a: Batch, b: Batch) -> str | None:
    if (a.base_offset, a.last_offset) != (b.base_offset, b.last_offset):
        return (
            f"offsets {a.base_offset}..{a.last_offset} on the leader, "
            f"{b.base_offset}..{b.last_offset} on the follower"
        )
    if a.partition_leader_epoch != b.partition_leader_epoch:
        return (
            f"leader epoch {a.partition_leader_epoch} on the leader, "
            f"{b.partition_leader_epoch} on the follower"
        )
    if a.crc != b.crc or a.size != b.size:
        return f"crc {a.crc:#010x} on the leader, {b.crc:#010x} on the follower"
    return None


def differences(
    leader: UnifiedLog, follower: UnifiedLog, end: int, from_offset: int = 0
) -> Iterator[Difference]:
    """Batches below ``end`` (where the follower's log ends after truncation) that differ
    between the two, from the later of their log starts and ``from_offset``: the divergence a
    truncation keeps."""
    start = max(leader.log_start_offset, follower.log_start_offset, from_offset)
    lead = below(held_batches(leader, start), end)
    fol = below(held_batches(follower, start), end)
    a, b = next(lead, None), next(fol, None)
    while a is not None and b is not None:
        x, y = a.batch, b.batch
        if x.last_offset < y.base_offset:
            a = next(lead, None)
        elif y.last_offset < x.base_offset:
            b = next(fol, None)
        else:
            what = _differs(x, y)
            if what is not None:
                yield Difference(max(x.base_offset, y.base_offset), a, b, what)
            if x.last_offset <= y.last_offset:
                a = next(lead, None)
            if y.last_offset <= x.last_offset:
                b = next(fol, None)


# -- the comparison -----------------------------------------------------------------------------


@dataclass
class Follower:
    log: UnifiedLog
    truncation: Truncation
    lost: Lost
    differences: list[Difference]
    differing_batches: int
    content: ContentComparison | None = None
    """A compacted partition that either replica's cleaner rewrote: their contents compared
    (kdump.replica_content), and their batches only from ``batches_from`` on."""
    batches_from: int = 0
    exported_to: Path | None = None
    """Where ``export_lost`` wrote the records its truncation drops."""

    def to_dict(self) -> dict[str, Any]:
        lost, t = self.lost, self.truncation
        return {
            "path": self.log.location,
            "truncate_to": t.truncate_to,
            "truncated": t.truncated,
            "truncated_fully": t.truncated_fully,
            "fetch_offset": t.fetch_offset,
            "steps": t.steps,
            "lost_records": lost.records,
            "lost_batches": len(lost.batches),
            "lost_offsets": None if lost.offsets is None else list(lost.offsets),
            "lost_bytes": lost.bytes,
            "lost_epochs": lost.epochs,
            "lost_timestamps": None
            if lost.first_timestamp is None
            else [lost.first_timestamp, lost.last_timestamp],
            "lost_below_high_watermark": lost.below_high_watermark,
            "lost_markers": [m.to_dict() for m in lost.markers],
            "refetched_batches": lost.refetched.batches,
            "refetched_offsets": None
            if lost.refetched.first is None
            else [lost.refetched.first, lost.refetched.last],
            "differing_batches": self.differing_batches,
            "differences": [d.to_dict() for d in self.differences],
            "batches_compared_from": self.batches_from,
            "content": None if self.content is None else self.content.to_dict(),
            "exported_to": None if self.exported_to is None else str(self.exported_to),
        }


@dataclass
class Replica:
    """One replica's own facts: the opened partition, its epoch cache, and what is wrong with
    it on its own (leader epochs against its batches, damage)."""

    log: UnifiedLog
    findings: list[Finding]

    @property
    def latest_epoch(self) -> int | None:
        cache = self.log.leader_epoch_cache
        return None if cache is None else cache.latest_epoch()

    @property
    def epochs_in_batches(self) -> list[tuple[int, int]]:
        """(leader epoch, offset it starts at) as the batches carry them."""
        return observed_epochs(
            segment_result(self.log, s, VerifyOptions()).scan for s in self.log.segments
        )

    def to_dict(self) -> dict[str, Any]:
        cache = self.log.leader_epoch_cache
        entries = self.log.leader_epoch_entries
        return {
            "partition": self.log.facts(),
            "high_watermark_source": self.log.high_watermark.source,
            "start_high_watermark": start_high_watermark(self.log),
            "leader_epoch_checkpoint": [list(e) for e in entries]
            if isinstance(entries, list)
            else None,
            "leader_epoch_cache": None
            if cache is None
            else [list(e) for e in cache.epoch_entries()],
            "latest_epoch": self.latest_epoch,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class ReplicasResult:
    replicas: list[Replica]
    leader: Replica
    leader_why: str
    leader_epoch: int
    """The epoch the leader takes at its log end offset when it becomes leader."""
    followers: list[Follower]
    findings: list[Finding]

    @property
    def all_findings(self) -> list[Finding]:
        """Each replica's own findings, then the followers'."""
        return [f for r in self.replicas for f in r.findings] + self.findings

    def exit_status(self) -> ExitCode:
        """ERRORS: batches differ at the same offset, or a replica is damaged; WARNINGS: a
        truncation drops records; else OK."""
        if any(f.severity is Severity.ERROR for f in self.all_findings):
            return ExitCode.ERRORS
        return ExitCode.WARNINGS if any(f.lost.records for f in self.followers) else ExitCode.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "replicas": [r.to_dict() for r in self.replicas],
            "leader": {
                "path": self.leader.log.location,
                "why": self.leader_why,
                "leader_epoch": self.leader_epoch,
                "epoch_start_offset": self.leader.log.log_end_offset,
            },
            "followers": [f.to_dict() for f in self.followers],
            "findings": [f.to_dict() for f in self.findings],
        }


def replica_findings(log: UnifiedLog) -> list[Finding]:
    """A replica on its own: the leader-epoch-checkpoint against its batches, and the damage
    recovery would cut it at (the errors verify finds there)."""
    found = leader_epoch_findings(
        log, [segment_result(log, s, VerifyOptions()).scan for s in log.segments]
    )
    for segment in log.segments:
        # a segment that cannot be read is left out of the comparison: say so
        found += [
            f
            for f in segment_result(log, segment, VerifyOptions()).findings
            if f.code == Code.FILE_UNREADABLE
        ]
    damaged = log.damaged_from
    if damaged is not None:
        segment = next(s for s in log.segments if s.base_offset == damaged.segment)
        found += [
            f
            for f in segment_result(log, segment, VerifyOptions()).findings
            if f.severity is Severity.ERROR and f.position == damaged.position
        ][:1] or [
            Finding(
                "REPLICA_DAMAGED",
                Severity.ERROR,
                damaged.path,
                f"recovery cuts the log here, at offset {damaged.offset}",
                damaged.offset,
                damaged.position,
            )
        ]
    return found


def new_leader_epoch(replicas: list[Replica]) -> int:
    """The epoch the chosen leader takes when it becomes leader: above every replica's latest
    (the controller bumps the leader epoch at each election)."""
    return max((r.latest_epoch for r in replicas if r.latest_epoch is not None), default=-1) + 1


def choose_leader(replicas: list[Replica], named: int | None) -> tuple[Replica, str]:
    """The replica named leader, else the one with the greatest latest epoch, then the greatest
    log end offset (the first named of equals)."""
    if named is not None:
        return replicas[named], "named with --leader"
    best = max(
        range(len(replicas)),
        key=lambda i: (
            -1 if replicas[i].latest_epoch is None else replicas[i].latest_epoch,
            replicas[i].log.log_end_offset,
            -i,
        ),
    )
    leader = replicas[best]
    epoch, end = leader.latest_epoch, leader.log.log_end_offset
    why = f"the greatest latest leader epoch ({'none' if epoch is None else epoch})"
    tied = [r for r in replicas if r.latest_epoch == epoch]
    if len(tied) > 1:
        why += f", then the greatest log end offset ({end})"
        if sum(r.log.log_end_offset == end for r in tied) > 1:
            why += ", then the first named"
    return leader, why


@dataclass
class ReplicaChoice:
    """The replica of a topic-partition a reader takes (one copy per partition), and why."""

    chosen: UnifiedLog
    why: str
    others: list[UnifiedLog]


def choose_replica(
    logs: list[UnifiedLog], leader_id: int | None, broker_of: Callable[[UnifiedLog], int | None]
) -> ReplicaChoice:
    """The replica on broker ``leader_id`` (the leader per the KRaft metadata), else the one
    ``choose_leader`` takes, as `kdump replicas` does."""
    on_leader = [log for log in logs if leader_id is not None and broker_of(log) == leader_id]
    if on_leader:
        chosen, why = on_leader[0], f"the leader per the KRaft metadata (broker {leader_id})"
    else:
        replica, why = choose_leader([Replica(log, []) for log in logs], None)
        chosen = replica.log
        if leader_id is not None:
            why = f"{why} (the leader per the KRaft metadata, broker {leader_id}, is not given)"
    return ReplicaChoice(chosen, why, [log for log in logs if log is not chosen])


def one_replica_each(
    logs: list[UnifiedLog],
    leader_of: Callable[[UnifiedLog], int | None],
    broker_of: Callable[[UnifiedLog], int | None],
) -> list[ReplicaChoice]:
    """One replica per topic-partition of ``logs`` (a partition whose directory name does not
    parse is its own), in the order first found."""
    groups: dict[object, list[UnifiedLog]] = {}
    for log in logs:
        groups.setdefault(log.topic_partition or log.location, []).append(log)
    return [
        ReplicaChoice(group[0], "the only replica", [])
        if len(group) == 1
        else choose_replica(group, leader_of(group[0]), broker_of)
        for group in groups.values()
    ]


def compare_replicas(
    logs: list[UnifiedLog],
    leader_index: int | None = None,
    key_memory: int = DEFAULT_KEY_MEMORY,
) -> ReplicasResult:
    """Compare the replicas ``logs`` of one partition (``leader_index``: the one the user
    names leader; ``key_memory``: the bound of a compacted partition's content comparison)."""
    replicas = [Replica(log, replica_findings(log)) for log in logs]
    leader, why = choose_leader(replicas, leader_index)
    epoch = new_leader_epoch(replicas)
    followers, findings = [], []
    for replica in replicas:
        if replica is leader:
            continue
        follower = _follow(leader.log, replica.log, epoch, key_memory)
        followers.append(follower)
        findings += follower_findings(follower, leader.log)
    return ReplicasResult(replicas, leader, why, epoch, followers, findings)


def _follow(leader: UnifiedLog, log: UnifiedLog, leader_epoch: int, key_memory: int) -> Follower:
    truncation = follower_truncation(leader, log, leader_epoch)
    # each broker's cleaner rewrites the segments below its checkpoint on its own schedule:
    # there the batches differ by right, and what a consumer reads is compared instead
    cleaned = [c for c in (cleaned_below(leader), cleaned_below(log)) if c is not None]
    content = compare_content(leader, log, key_memory) if cleaned else None
    batches_from = max(cleaned, default=0)
    lost = lost_records(log, leader, truncation, batches_from)
    end = truncation.truncate_to
    end = 0 if truncation.truncated_fully else min(end, leader.log_end_offset)
    shown: list[Difference] = []
    count = 0
    for difference in differences(leader, log, end, batches_from):
        count += 1
        if len(shown) < SHOWN_DIFFERENCES:
            shown.append(difference)
    return Follower(log, truncation, lost, shown, count, content, batches_from)


@dataclass(frozen=True)
class Exported:
    follower: Follower
    path: Path
    records: int


def export_lost(
    result: ReplicasResult, directory: Path, max_output_bytes: int | None = None
) -> list[Exported]:
    """The records each follower's truncation drops, in salvage's JSON Lines form (lossless:
    offsets, timestamps, producer fields, ``reproducible``), one file per follower:
    ``DIRECTORY/<partition dir>.replica-<N>.jsonl``, N its place on the command line (from
    1). Written whole or not at all."""
    import json

    from kdump.repair.files import Ownership
    from kdump.repair.salvage import AtomicFile, output_limit, record_object

    directory.mkdir(parents=True, exist_ok=True)
    owner = Ownership.like(os.stat(directory)).mine()
    out = []
    for follower in result.followers:
        lost = follower.lost
        if not lost.batches:
            continue
        n = next(i for i, r in enumerate(result.replicas, 1) if r.log is follower.log)
        path = directory / f"{follower.log.name}.replica-{n}.jsonl"
        limit = output_limit(lost.bytes, max_output_bytes)
        topic, partition = follower.log.topic, follower.log.partition
        written = count = 0
        with AtomicFile(path, "w", owner) as f:
            for held in lost.batches:
                for record in held.segment.log.records(held.batch):
                    line = json.dumps(record_object(held.batch, record, topic, partition))
                    written += len(line) + 1
                    if written > limit:
                        raise OutputLimitError(
                            f"the lost records' JSON Lines would pass {limit} bytes in the "
                            "batch at this position; nothing written (raise --max-output-bytes)",
                            held.segment.log_path,
                            held.batch.position,
                        )
                    f.write(line + "\n")
                    count += 1
        follower.exported_to = path
        out.append(Exported(follower, path, count))
    return out


def follower_findings(follower: Follower, leader: UnifiedLog) -> list[Finding]:
    out = []
    lost, t, path = follower.lost, follower.truncation, follower.log.location
    if lost.records:
        first, last = lost.offsets or (None, None)
        if lost.below_high_watermark is None:
            acked = " (no high watermark checkpointed: how many were acknowledged is unknown)"
        elif lost.below_high_watermark:
            acked = f", {lost.below_high_watermark} of them below its high watermark (acknowledged)"
        else:
            acked = ", none below its high watermark"
        out.append(
            Finding(
                "REPLICA_TRUNCATION_LOSS",
                Severity.WARNING,
                path,
                f"fetching from {leader.location} truncates it to {t.truncate_to}: "
                f"{lost.records} records, offsets {first}..{last}, {lost.bytes} bytes{acked}",
                t.truncate_to,
            )
        )
    for marker in lost.markers:
        if not marker.hanging:  # its transaction began past the truncation: dropped whole
            continue
        out.append(
            Finding(
                "REPLICA_LOST_MARKER",
                Severity.WARNING,
                path,
                f"the truncation drops the {marker.type} marker of producer "
                f"{marker.producer_id} at offset {marker.offset}, and the leader holds that "
                "transaction open below it: it hangs",
                marker.offset,
            )
        )
    if follower.content is not None:
        out += follower.content.findings
    for d in follower.differences:
        out.append(
            Finding(
                "REPLICA_BATCH_DIFFERS",
                Severity.ERROR,
                d.follower.segment.log_path,
                f"offset {d.offset}: {d.what} ({d.leader.where} against {d.follower.where}); "
                "both are valid and the truncation keeps it",
                d.offset,
                d.follower.batch.position,
            )
        )
    return out


__all__ = [
    "Difference",
    "EpochEndOffset",
    "Follower",
    "HeldBatch",
    "Lost",
    "LostMarker",
    "OffsetTruncationState",
    "Replica",
    "ReplicaLog",
    "ReplicasResult",
    "Truncation",
    "compare_replicas",
    "export_lost",
    "follower_truncation",
    "get_offset_truncation_state",
    "held_batches",
    "lost_records",
]
