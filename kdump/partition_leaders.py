"""Which broker leads each topic-partition, by the KRaft metadata log (``__cluster_metadata-0``).

The image is replayed as a broker's MetadataLoader builds it: the newest snapshot
(``<end offset>-<epoch>.checkpoint``), then the log's records from the snapshot's end offset.
Only what names a leader is kept: TopicRecord (a topic id's name), PartitionRecord and
PartitionChangeRecord (whose Leader -2 means "unchanged", PartitionChangeRecord.json), and
RemoveTopicRecord. Control batches (LeaderChange, SnapshotHeader/Footer) carry no metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import KdumpError, MessageError
from kdump.format.batch import Batch
from kdump.format.internal import parse_metadata_record
from kdump.format.names import is_kraft_snapshot_name
from kdump.storage.records import FileRecords
from kdump.unified_log import UnifiedLog

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
LEADER_UNCHANGED = -2
"""PartitionChangeRecord's Leader default: the change leaves the leader as it was."""
NO_LEADER = -1


@dataclass
class MetadataImage:
    """The leaders of a replayed metadata log, by (topic name, partition)."""

    source: str
    """The metadata partition replayed."""
    end_offset: int = 0
    """The offset after the last record replayed."""
    topic_names: dict[str, str] = field(default_factory=dict)
    leader_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    """(topic id, partition) to the leader's broker id."""

    def leader(self, topic: str | None, partition: int | None) -> int | None:
        """The broker leading the partition; None when the image has no leader for it."""
        for (topic_id, number), leader in self.leader_ids.items():
            if number == partition and self.topic_names.get(topic_id) == topic:
                return leader if leader != NO_LEADER else None
        return None

    def apply(self, record: dict[str, Any]) -> None:
        kind, data = record["type"], record["data"]
        if kind == "TOPIC_RECORD":
            self.topic_names[data["topicId"]] = data["name"]
        elif kind == "REMOVE_TOPIC_RECORD":
            self.topic_names.pop(data["topicId"], None)
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            leader = data.get("leader", LEADER_UNCHANGED)
            if leader != LEADER_UNCHANGED:
                self.leader_ids[(data["topicId"], data["partitionId"])] = leader


def _metadata_records(records: FileRecords, batches: Iterator[Batch], start: int) -> Iterator[Any]:
    for batch in batches:
        if batch.is_control or batch.next_offset <= start:
            continue
        for record in records.records(batch):
            if record.offset >= start:
                yield record


def replay(log: UnifiedLog) -> MetadataImage:
    """The image of the metadata partition ``log``: its newest snapshot, then its records up
    to where recovery would cut it."""
    image = MetadataImage(log.location)
    snapshots = sorted(n for n in log.storage.files() if is_kraft_snapshot_name(n))
    if snapshots:
        name = snapshots[-1]
        snapshot = log.storage.open_log(name)
        try:
            _apply_all(image, _metadata_records(snapshot, snapshot.batches(), 0), name)
        finally:
            snapshot.close()
        image.end_offset = int(name[:20])
    for segment in log.segments:
        scan = log.result(segment).scan
        if scan is None:  # unreadable: its findings say why
            raise KdumpError(f"{segment.log_path}: unreadable; the metadata cannot be replayed")
        end = scan.valid_bytes if scan.first_invalid is None else scan.first_invalid
        records = segment.log
        batches = records.batches(0, end)
        _apply_all(image, _metadata_records(records, batches, image.end_offset), segment.log_path)
    image.end_offset = max(image.end_offset, log.log_end_offset)
    return image


def _apply_all(image: MetadataImage, records: Iterator[Any], path: str) -> None:
    try:
        for record in records:
            try:
                image.apply(parse_metadata_record(record.value))
            except MessageError:  # a record type kdump does not know names no leader
                continue
    except KdumpError as e:
        raise KdumpError(f"{path}: metadata not replayable: {e}") from e
