"""What Kafka's TopicBasedRemoteLogMetadataManager knows of each remote segment, replayed from a
dump of ``__remote_log_metadata`` partitions.

Records are decoded by kdump's own decoder of that topic (kdump.format.internal.read_framed with
kdump.format.schemas.remote_log_metadata, the one ``kdump dump --remote-log-metadata-decoder``
uses) and replayed, in offset order within each metadata partition, through a port of the
broker's in-memory state: RemotePartitionMetadataStore (partition deletes),
RemoteLogMetadataCache (segment states, RemoteLogSegmentState.isValidTransition) and
RemoteLogLeaderEpochState (per leader epoch: start offset -> segment, and the "unreferenced"
segments a later upload superseded). Sources: apache/kafka trunk, storage/src/main/java/org/
apache/kafka/server/log/remote/metadata/storage/ (docs/tiered.md).

A user partition's records live in one metadata partition, chosen by
RemoteLogMetadataTopicPartitioner: ``toPositive(murmur2(int32 big-endian of
Objects.hash(topicId.lsb, topicId.msb, partition))) % remote.log.metadata.topic.num.partitions``.
"""

from __future__ import annotations

import base64
import bisect
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kdump.checks.findings import Finding, Severity
from kdump.discovery import discover
from kdump.errors import InputError, MessageError, UnknownMetadataRecord
from kdump.format.internal import read_framed
from kdump.format.schemas.remote_log_metadata import (
    REMOTE_LOG_METADATA_RECORD_TYPES,
    REMOTE_LOG_SEGMENT_STATES,
    REMOTE_PARTITION_DELETE_STATES,
)
from kdump.internal_topics import partition_records
from kdump.java import long_hash, murmur2, objects_hash
from kdump.storage import ObjectStore

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
DEFAULT_METADATA_PARTITIONS = 50
"""remote.log.metadata.topic.num.partitions (TopicBasedRemoteLogMetadataManagerConfig)."""

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = (
    0,
    1,
    2,
    3,
)
DELETE_PARTITION_FINISHED = 2
_NEXT_STATES = {
    COPY_SEGMENT_STARTED: (COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED),
    COPY_SEGMENT_FINISHED: (DELETE_SEGMENT_STARTED,),
    DELETE_SEGMENT_STARTED: (DELETE_SEGMENT_FINISHED,),
}

TopicIdPartition = tuple[str, int]
"""(topic id as Uuid.toString(), partition): how Kafka keys a partition's remote metadata."""


def metadata_partition(topic_id: str, partition: int, partition_count: int) -> int:
    """RemoteLogMetadataTopicPartitioner.metadataPartition: the ``__remote_log_metadata``
    partition holding the records of ``topic_id``'s partition."""
    raw = base64.urlsafe_b64decode(topic_id + "==")
    msb = int.from_bytes(raw[:8], "big", signed=True)
    lsb = int.from_bytes(raw[8:16], "big", signed=True)
    h = objects_hash(long_hash(lsb), long_hash(msb), partition)
    return (murmur2((h & 0xFFFFFFFF).to_bytes(4, "big")) & 0x7FFFFFFF) % partition_count


def state_name(state: int) -> str:
    return REMOTE_LOG_SEGMENT_STATES.get(state, f"UNKNOWN({state})")


def is_valid_transition(source: int | None, target: int) -> bool:
    """RemoteLogSegmentState.isValidTransition."""
    if source is None:
        return target == COPY_SEGMENT_STARTED
    if source == target:
        return True  # retries and fail-overs repeat a state
    return target in _NEXT_STATES.get(source, ())


@dataclass
class SegmentMetadata:
    """RemoteLogSegmentMetadata with its updates applied (createWithUpdates), and where the
    records that say so are."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int
    leader_epochs: dict[int, int]
    """Epoch -> its first offset in the segment, epochs ascending (a TreeMap in Kafka)."""
    size: int
    broker_id: int
    state: int
    event_timestamp: int
    """eventTimestampMs of the record that set ``state`` (the broker's clock then)."""
    metadata_partition: int
    metadata_offset: int

    @property
    def state_name(self) -> str:
        return state_name(self.state)

    def epoch_end(self, epoch: int) -> int:
        """RemoteLogMetadataCache.highestOffsetForEpoch: the last offset of ``epoch`` here."""
        later = [start for e, start in self.leader_epochs.items() if e > epoch]
        return min(later) - 1 if later else self.end_offset


@dataclass
class LeaderEpochState:
    """RemoteLogLeaderEpochState: one leader epoch's segments by start offset (the ones reads
    go to), the unreferenced ones, and the highest offset copied in the epoch."""

    starts: list[int] = field(default_factory=list)
    offset_to_id: dict[int, str] = field(default_factory=dict)
    unreferenced: set[str] = field(default_factory=set)
    highest_offset: int | None = None

    def copy_started(self, segment_id: str) -> None:
        self.unreferenced.add(segment_id)

    def copy_finished(self, start: int, segment_id: str, epoch_end: int) -> None:
        # An upload covering this epoch from an earlier or equal start supersedes the last ones
        # (a new leader re-uploading what the old one had copied): they become unreferenced.
        while (
            self.starts
            and self.starts[-1] >= start
            and self.highest_offset is not None
            and self.highest_offset <= epoch_end
        ):
            last = self.starts.pop()
            self.unreferenced.add(self.offset_to_id.pop(last))
        if start not in self.offset_to_id:
            bisect.insort(self.starts, start)
        self.offset_to_id[start] = segment_id
        self.unreferenced.discard(segment_id)
        if self.highest_offset is None or epoch_end > self.highest_offset:
            self.highest_offset = epoch_end

    def delete_started(self, start: int, segment_id: str) -> None:
        if self.offset_to_id.get(start) == segment_id:
            del self.offset_to_id[start]
            self.starts.remove(start)
        self.unreferenced.add(segment_id)

    def delete_finished(self, segment_id: str) -> None:
        self.unreferenced.discard(segment_id)


@dataclass
class PartitionMetadata:
    """RemoteLogMetadataCache of one user partition, plus what a scrub needs that Kafka forgets:
    segments whose deletion finished, and the partition's delete state."""

    topic: str
    topic_id: str
    partition: int
    segments: dict[str, SegmentMetadata] = field(default_factory=dict)
    epochs: dict[int, LeaderEpochState] = field(default_factory=dict)
    deleted: dict[str, SegmentMetadata] = field(default_factory=dict)
    """DELETE_SEGMENT_FINISHED: Kafka forgot them, their objects should be gone."""
    partition_delete: tuple[int, int] | None = None
    """(RemotePartitionDeleteState, eventTimestampMs) of the last partition delete record."""
    deleted_segments_of_partition: dict[str, SegmentMetadata] = field(default_factory=dict)
    """Segments known before DELETE_PARTITION_FINISHED dropped the partition's cache."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def epoch(self, epoch: int) -> LeaderEpochState:
        return self.epochs.setdefault(epoch, LeaderEpochState())

    def referenced(self) -> set[str]:
        """Segments some epoch maps an offset to: those a consumer's fetch reads."""
        return {sid for state in self.epochs.values() for sid in state.offset_to_id.values()}

    def overlaps(self) -> Iterator[tuple[int, SegmentMetadata, SegmentMetadata]]:
        """(epoch, a, b): referenced segments of one epoch whose offsets overlap there, which
        Kafka's replay left both referenced (b's start is below a's end in that epoch)."""
        for epoch, state in sorted(self.epochs.items()):
            ids = [state.offset_to_id[s] for s in state.starts]
            for a_id, b_id in itertools.pairwise(ids):
                a, b = self.segments.get(a_id), self.segments.get(b_id)
                if a is None or b is None:
                    continue
                if a.epoch_end(epoch) >= b.leader_epochs[epoch]:
                    yield epoch, a, b


@dataclass
class RemoteLogMetadata:
    """The replayed state of every user partition whose metadata partition was read."""

    partition_count: int = DEFAULT_METADATA_PARTITIONS
    read: dict[int, str] = field(default_factory=dict)
    """Metadata partition -> the directory it was read from."""
    first_offsets: dict[int, int] = field(default_factory=dict)
    """Metadata partition -> its first offset: above 0, older records were deleted and some
    segments' history is missing."""
    partitions: dict[TopicIdPartition, PartitionMetadata] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    placed: set[tuple[TopicIdPartition, int]] = field(default_factory=set)
    """(user partition, metadata partition) pairs whose placement was checked."""

    def metadata_partition(self, topic_id: str, partition: int) -> int:
        return metadata_partition(topic_id, partition, self.partition_count)

    def covers(self, topic_id: str, partition: int) -> bool:
        """Whether the metadata partition of that user partition was read."""
        return self.metadata_partition(topic_id, partition) in self.read

    def truncated(self, topic_id: str, partition: int) -> int | None:
        """The first offset of that partition's metadata partition when it is above 0."""
        first = self.first_offsets.get(self.metadata_partition(topic_id, partition))
        return first if first else None


def read_remote_log_metadata(
    paths: list[str],
    partition_count: int = DEFAULT_METADATA_PARTITIONS,
    store: ObjectStore | None = None,
) -> RemoteLogMetadata:
    """Replay every ``__remote_log_metadata-N`` directory under ``paths``."""
    found = discover(paths, store)
    if found.errors:
        raise found.errors[0]
    directories = sorted(
        ((tp[1], log) for log in found.partitions
         if (tp := log.topic_partition) is not None and tp[0] == REMOTE_LOG_METADATA_TOPIC),
        key=lambda pair: pair[0],
    )  # fmt: skip
    if not directories:
        raise InputError(", ".join(paths), f"holds no {REMOTE_LOG_METADATA_TOPIC} partition")
    out = RemoteLogMetadata(partition_count)
    for number, log in directories:
        if number >= partition_count:
            raise InputError(
                log.location,
                f"{REMOTE_LOG_METADATA_TOPIC} has more than the {partition_count} partitions "
                "of --metadata-partitions",
            )
        if number in out.read:
            continue  # the same partition from two brokers: the first one given
        out.read[number] = log.location
        _replay_partition(log, number, out)
    return out


def _replay_partition(log: UnifiedLog, number: int, out: RemoteLogMetadata) -> None:
    def unreadable(path: str, position: int, reason: str) -> None:
        out.findings.append(_unreadable(path, position, reason))

    for path, batch, record in partition_records(log, unreadable, check_crc=True):
        out.first_offsets.setdefault(number, batch.base_offset)
        _replay_value(record.value, number, record.offset, out, path)


def _unreadable(path: str, position: int, reason: str) -> Finding:
    return Finding(
        "SCRUB_METADATA_UNREADABLE",
        Severity.WARNING,
        path,
        f"{reason}: the segment states after this point may be missing",
        position=position,
    )


def _replay_value(
    value: bytes | None, number: int, offset: int, out: RemoteLogMetadata, path: str
) -> None:
    if value is None:
        return  # a tombstone (KIP-1266's compacted topic): nothing to apply
    try:
        spec, _, data = read_framed(value, REMOTE_LOG_METADATA_RECORD_TYPES)
    except (MessageError, UnknownMetadataRecord) as e:
        out.findings.append(
            Finding(
                "SCRUB_METADATA_UNREADABLE",
                Severity.WARNING,
                path,
                f"record {offset} of {REMOTE_LOG_METADATA_TOPIC}-{number}: {e}; skipped",
                offset=offset,
            )
        )
        return
    replay = _Replay(out, number, offset, path)
    if spec.api_key == 0:
        replay.segment_metadata(data)
    elif spec.api_key == 1:
        replay.segment_update(data)
    elif spec.api_key == 2:
        replay.partition_delete(data)


@dataclass
class _Replay:
    out: RemoteLogMetadata
    number: int
    offset: int
    path: str

    def _partition(self, tip: dict[str, Any]) -> PartitionMetadata:
        key = (tip["id"], tip["partition"])
        if (key, self.number) not in self.out.placed:
            self.out.placed.add((key, self.number))  # checked once, not per record
            self._check_placement(tip, key)
        found = self.out.partitions.get(key)
        if found is None:
            found = PartitionMetadata(tip["name"], tip["id"], tip["partition"])
            self.out.partitions[key] = found
        return found

    def _check_placement(self, tip: dict[str, Any], key: TopicIdPartition) -> None:
        expected = self.out.metadata_partition(*key)
        if expected != self.number:
            self.out.findings.append(
                Finding(
                    "SCRUB_METADATA_PARTITION_COUNT",
                    Severity.WARNING,
                    self.path,
                    f"{tip['name']}-{tip['partition']} is in {REMOTE_LOG_METADATA_TOPIC}-"
                    f"{self.number}, but with {self.out.partition_count} partitions it maps to "
                    f"{expected}: pass --metadata-partitions with the topic's partition count",
                    offset=self.offset,
                )
            )

    def _dropped(self, what: str) -> None:
        # Kafka logs these and goes on (checkStateTransition, RemoteResourceNotFoundException)
        self.out.findings.append(
            Finding(
                "SCRUB_METADATA_DROPPED",
                Severity.WARNING,
                self.path,
                f"record {self.offset} of {REMOTE_LOG_METADATA_TOPIC}-{self.number}: {what}; "
                "the broker drops it too",
                offset=self.offset,
            )
        )

    def segment_metadata(self, d: dict[str, Any]) -> None:
        """RemoteLogMetadataCache.addCopyInProgressSegment."""
        rid = d["remoteLogSegmentId"]
        p = self._partition(rid["topicIdPartition"])
        sid = rid["id"]
        state = d["remoteLogSegmentState"]
        if state != COPY_SEGMENT_STARTED:
            self._dropped(f"segment {sid} added in state {state_name(state)}, not STARTED")
            return
        existing = p.segments.get(sid)
        if not is_valid_transition(None if existing is None else existing.state, state):
            assert existing is not None
            self._dropped(f"segment {sid}: {existing.state_name} -> {state_name(state)}")
            return
        epochs = {e["leaderEpoch"]: e["offset"] for e in d["segmentLeaderEpochs"]}
        segment = SegmentMetadata(
            p.topic,
            p.topic_id,
            p.partition,
            sid,
            d["startOffset"],
            d["endOffset"],
            dict(sorted(epochs.items())),
            d["segmentSizeInBytes"],
            d["brokerId"],
            state,
            d["eventTimestampMs"],
            self.number,
            self.offset,
        )
        for epoch in segment.leader_epochs:
            p.epoch(epoch).copy_started(sid)
        p.segments[sid] = segment

    def segment_update(self, d: dict[str, Any]) -> None:
        """RemoteLogMetadataCache.updateRemoteLogSegmentMetadata."""
        rid = d["remoteLogSegmentId"]
        p = self._partition(rid["topicIdPartition"])
        sid, target = rid["id"], d["remoteLogSegmentState"]
        segment = p.segments.get(sid)
        if segment is None:
            if sid not in p.deleted:
                self._dropped(f"update of segment {sid} to {state_name(target)}, never added")
            return
        if target == COPY_SEGMENT_STARTED or not is_valid_transition(segment.state, target):
            self._dropped(f"segment {sid}: {segment.state_name} -> {state_name(target)}")
            return
        segment.state, segment.event_timestamp = target, d["eventTimestampMs"]
        segment.broker_id = d["brokerId"]
        for epoch, start in segment.leader_epochs.items():
            state = p.epoch(epoch)
            if target == COPY_SEGMENT_FINISHED:
                state.copy_finished(start, sid, segment.epoch_end(epoch))
            elif target == DELETE_SEGMENT_STARTED:
                state.delete_started(start, sid)
            elif target == DELETE_SEGMENT_FINISHED:
                state.delete_finished(sid)
        if target == DELETE_SEGMENT_FINISHED:
            p.deleted[sid] = p.segments.pop(sid)

    def partition_delete(self, d: dict[str, Any]) -> None:
        """RemotePartitionMetadataStore.handleRemotePartitionDeleteMetadata: FINISHED drops the
        partition's state."""
        p = self._partition(d["topicIdPartition"])
        state = d["remotePartitionDeleteState"]
        if state not in REMOTE_PARTITION_DELETE_STATES:
            self._dropped(f"partition delete state {state} unknown")
            return
        p.partition_delete = (state, d["eventTimestampMs"])
        if state == DELETE_PARTITION_FINISHED:
            p.deleted_segments_of_partition.update(p.segments)
            p.deleted_segments_of_partition.update(p.deleted)
            p.segments, p.epochs, p.deleted = {}, {}, {}


__all__ = [
    "DEFAULT_METADATA_PARTITIONS",
    "REMOTE_LOG_METADATA_TOPIC",
    "LeaderEpochState",
    "PartitionMetadata",
    "RemoteLogMetadata",
    "SegmentMetadata",
    "metadata_partition",
    "read_remote_log_metadata",
]
