"""The share coordinator's records (__share_group_state): key and value schemas by record type.

Transcribed from Apache Kafka's JSON message schemas in
``share-coordinator/src/main/resources/common/message/``: the facts only (field names, types,
versions, nullable and tagged versions, tags, defaults). Read by :mod:`kdump.format.messages`.
See kdump/format/schemas/SOURCES.md: as of trunk d79bd502 (2026-08-23).

A ShareSnapshot is the whole state of one share-partition, a ShareUpdate a change to it; both
are keyed by group, topic id and partition (ShareCoordinatorRecordSerde).
"""

from __future__ import annotations

from kdump.format.messages import MessageSpec, field, message

# One field a line, as in the schema files: a data table, not code to reflow.
# fmt: off


SHARE_SNAPSHOT_KEY = message(
    "ShareSnapshotKey", 0, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("TopicId", "uuid", "0"),
        field("Partition", "int32", "0"),
    ],
)


SHARE_SNAPSHOT_VALUE = message(
    "ShareSnapshotValue", 0, "0", "0+",
    [
        field("SnapshotEpoch", "int32", "0+"),
        field("StateEpoch", "int32", "0+"),
        field("LeaderEpoch", "int32", "0+"),
        field("StartOffset", "int64", "0+"),
        field("DeliveryCompleteCount", "int32", "0+", tagged="0+", tag=0, default="-1"),
        field("CreateTimestamp", "int64", "0+"),
        field("WriteTimestamp", "int64", "0+"),
        field("StateBatches", "[]StateBatch", "0+", fields=[
            field("FirstOffset", "int64", "0+"),
            field("LastOffset", "int64", "0+"),
            field("DeliveryState", "int8", "0+"),
            field("DeliveryCount", "int16", "0+"),
        ]),
    ],
)


SHARE_UPDATE_KEY = message(
    "ShareUpdateKey", 1, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("TopicId", "uuid", "0"),
        field("Partition", "int32", "0"),
    ],
)


SHARE_UPDATE_VALUE = message(
    "ShareUpdateValue", 1, "0", "0+",
    [
        field("SnapshotEpoch", "int32", "0+"),
        field("LeaderEpoch", "int32", "0+"),
        field("StartOffset", "int64", "0+"),
        field("DeliveryCompleteCount", "int32", "0+", tagged="0+", tag=0, default="-1"),
        field("StateBatches", "[]StateBatch", "0+", fields=[
            field("FirstOffset", "int64", "0+"),
            field("LastOffset", "int64", "0+"),
            field("DeliveryState", "int8", "0+"),
            field("DeliveryCount", "int16", "0+"),
        ]),
    ],
)


COORDINATOR_RECORD_TYPES: dict[int, tuple[MessageSpec, MessageSpec]] = {
    0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}

# fmt: on
