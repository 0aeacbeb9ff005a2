"""TopicBasedRemoteLogMetadataManager's records (__remote_log_metadata) by API key.

Transcribed from Apache Kafka's JSON message schemas in ``storage/src/main/resources/message/``:
the facts only (field names, types, versions, nullable and tagged versions, tags, defaults).
Read by :mod:`kdump.format.messages`; framed as metadata records are (frame version, API key,
version, message: RemoteLogMetadataSerde over AbstractApiMessageSerde). See
kdump/format/schemas/SOURCES.md: as of trunk d79bd502 (2026-08-23).

``REMOTE_LOG_SEGMENT_STATES`` and ``REMOTE_PARTITION_DELETE_STATES`` are the id -> name tables
of the enums RemoteLogSegmentState and RemotePartitionDeleteState.
"""

from __future__ import annotations

from kdump.format.messages import FieldSpec, MessageSpec, field, message

# One field a line, as in the schema files: a data table, not code to reflow.
# ruff: noqa: E501
# fmt: off


def _topic_id_partition() -> list[FieldSpec]:
    return [
        field("Name", "string", "0+"),
        field("Id", "uuid", "0+"),
        field("Partition", "int32", "0+"),
    ]


def _segment_leader_epochs() -> list[FieldSpec]:
    return [
        field("LeaderEpoch", "int32", "0+"),
        field("Offset", "int64", "0+"),
    ]


REMOTE_LOG_SEGMENT_METADATA_RECORD = message(
    "RemoteLogSegmentMetadataRecord", 0, "0", "0+",
    [
        field("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=[
            field("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_topic_id_partition()),
            field("Id", "uuid", "0+"),
        ]),
        field("StartOffset", "int64", "0+"),
        field("EndOffset", "int64", "0+"),
        field("BrokerId", "int32", "0+"),
        field("MaxTimestampMs", "int64", "0+"),
        field("EventTimestampMs", "int64", "0+"),
        field("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_segment_leader_epochs()),
        field("SegmentSizeInBytes", "int32", "0+"),
        field("CustomMetadata", "bytes", "0+", nullable="0+", default="null"),
        field("RemoteLogSegmentState", "int8", "0+"),
        field("TxnIndexEmpty", "bool", "0+", tagged="0+", tag=0),
    ],
)


REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = message(
    "RemoteLogSegmentMetadataUpdateRecord", 1, "0", "0+",
    [
        field("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=[
            field("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_topic_id_partition()),
            field("Id", "uuid", "0+"),
        ]),
        field("BrokerId", "int32", "0+"),
        field("EventTimestampMs", "int64", "0+"),
        field("CustomMetadata", "bytes", "0+", nullable="0+", default="null"),
        field("RemoteLogSegmentState", "int8", "0+"),
    ],
)


REMOTE_PARTITION_DELETE_METADATA_RECORD = message(
    "RemotePartitionDeleteMetadataRecord", 2, "0", "0+",
    [
        field("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_topic_id_partition()),
        field("BrokerId", "int32", "0+"),
        field("EventTimestampMs", "int64", "0+"),
        field("RemotePartitionDeleteState", "int8", "0+"),
    ],
)


REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = message(
    "RemoteLogSegmentMetadataSnapshotRecord", 3, "0", "0+",
    [
        field("SegmentId", "uuid", "0+"),
        field("StartOffset", "int64", "0+"),
        field("EndOffset", "int64", "0+"),
        field("BrokerId", "int32", "0+"),
        field("MaxTimestampMs", "int64", "0+"),
        field("EventTimestampMs", "int64", "0+"),
        field("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_segment_leader_epochs()),
        field("SegmentSizeInBytes", "int32", "0+"),
        field("CustomMetadata", "bytes", "0+", nullable="0+", default="null"),
        field("RemoteLogSegmentState", "int8", "0+"),
        field("TxnIndexEmpty", "bool", "0+", tagged="0+", tag=0),
    ],
)


REMOTE_LOG_METADATA_RECORD_TYPES: dict[int, MessageSpec] = {
    0: REMOTE_LOG_SEGMENT_METADATA_RECORD,
    1: REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD,
    2: REMOTE_PARTITION_DELETE_METADATA_RECORD,
    3: REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD,
}

REMOTE_LOG_SEGMENT_STATES: dict[int, str] = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}

REMOTE_PARTITION_DELETE_STATES: dict[int, str] = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}

# fmt: on
