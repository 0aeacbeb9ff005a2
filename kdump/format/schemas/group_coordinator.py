"""The group coordinator's records (__consumer_offsets): key and value schemas by record type.

Transcribed from Apache Kafka's JSON message schemas in
``group-coordinator/src/main/resources/common/message/``: the facts only (field names, types,
versions, nullable and tagged versions, tags, defaults). Read by :mod:`kdump.format.messages`.
As of Apache Kafka trunk d79bd502 (2026-08-23): see kdump/format/schemas/SOURCES.md, and
tests/test_kafka_specs.py, which checks these tables against that commit's spec files.
"""

from __future__ import annotations

from kdump.format.messages import MessageSpec, field, message, struct

# One field a line, as in the schema files: a data table, not code to reflow.
# ruff: noqa: E501
# fmt: off


LEGACY_OFFSET_COMMIT_KEY = message(
    "LegacyOffsetCommitKey", 0, "0", "none",
    [
        field("group", "string", "0"),
        field("topic", "string", "0"),
        field("partition", "int32", "0"),
    ],
)


LEGACY_OFFSET_COMMIT_VALUE = message(
    "LegacyOffsetCommitValue", 0, "0", "none",
    [
        field("offset", "int64", "0"),
        field("metadata", "string", "0"),
        field("commitTimestamp", "int64", "0"),
    ],
)


OFFSET_COMMIT_KEY = message(
    "OffsetCommitKey", 1, "0", "none",
    [
        field("group", "string", "0"),
        field("topic", "string", "0"),
        field("partition", "int32", "0"),
    ],
)


OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue", 1, "0-4", "4+",
    [
        field("offset", "int64", "0+"),
        field("leaderEpoch", "int32", "3+", default="-1"),
        field("metadata", "string", "0+"),
        field("commitTimestamp", "int64", "0+"),
        field("expireTimestamp", "int64", "1", default="-1"),
        field("topicId", "uuid", "4+", tagged="4+", tag=0),
    ],
)


GROUP_METADATA_KEY = message(
    "GroupMetadataKey", 2, "0", "none",
    [
        field("group", "string", "0"),
    ],
)


GROUP_METADATA_VALUE = message(
    "GroupMetadataValue", 2, "0-4", "4+",
    [
        field("protocolType", "string", "0+"),
        field("generation", "int32", "0+"),
        field("protocol", "string", "0+", nullable="0+"),
        field("leader", "string", "0+", nullable="0+"),
        field("currentStateTimestamp", "int64", "2+", default="-1"),
        field("members", "[]MemberMetadata", "0+"),
    ],
    common=[
        struct("MemberMetadata", "0+", [
            field("memberId", "string", "0+"),
            field("groupInstanceId", "string", "3+", nullable="3+", default="null"),
            field("clientId", "string", "0+"),
            field("clientHost", "string", "0+"),
            field("rebalanceTimeout", "int32", "1+", default="-1"),
            field("sessionTimeout", "int32", "0+"),
            field("subscription", "bytes", "0+"),
            field("assignment", "bytes", "0+"),
        ]),
    ],
)


CONSUMER_GROUP_METADATA_KEY = message(
    "ConsumerGroupMetadataKey", 3, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


CONSUMER_GROUP_METADATA_VALUE = message(
    "ConsumerGroupMetadataValue", 3, "0", "0+",
    [
        field("Epoch", "int32", "0+"),
        field("MetadataHash", "int64", "0+", tagged="0+", tag=0, default="0"),
    ],
)


CONSUMER_GROUP_PARTITION_METADATA_KEY = message(
    "ConsumerGroupPartitionMetadataKey", 4, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


CONSUMER_GROUP_PARTITION_METADATA_VALUE = message(
    "ConsumerGroupPartitionMetadataValue", 4, "0", "0+",
    [
        field("Topics", "[]TopicMetadata", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
            field("NumPartitions", "int32", "0+"),
            field("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("Racks", "[]string", "0+"),
            ]),
        ]),
    ],
)


CONSUMER_GROUP_MEMBER_METADATA_KEY = message(
    "ConsumerGroupMemberMetadataKey", 5, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


CONSUMER_GROUP_MEMBER_METADATA_VALUE = message(
    "ConsumerGroupMemberMetadataValue", 5, "0", "0+",
    [
        field("InstanceId", "string", "0+", nullable="0+"),
        field("RackId", "string", "0+", nullable="0+"),
        field("ClientId", "string", "0+"),
        field("ClientHost", "string", "0+"),
        field("SubscribedTopicNames", "[]string", "0+"),
        field("SubscribedTopicRegex", "string", "0+", nullable="0+"),
        field("RebalanceTimeoutMs", "int32", "0+", default="-1"),
        field("ServerAssignor", "string", "0+", nullable="0+"),
        field("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+", tagged="0+", tag=0, fields=[
            field("SessionTimeoutMs", "int32", "0+"),
            field("SupportedProtocols", "[]ClassicProtocol", "0+", fields=[
                field("Name", "string", "0+"),
                field("Metadata", "bytes", "0+"),
            ]),
        ]),
    ],
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = message(
    "ConsumerGroupTargetAssignmentMetadataKey", 6, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ConsumerGroupTargetAssignmentMetadataValue", 6, "0", "0+",
    [
        field("AssignmentEpoch", "int32", "0+"),
        field("AssignmentTimestamp", "int64", "0+", tagged="0+", tag=0, default="0"),
    ],
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = message(
    "ConsumerGroupTargetAssignmentMemberKey", 7, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ConsumerGroupTargetAssignmentMemberValue", 7, "0", "0+",
    [
        field("TopicPartitions", "[]TopicPartition", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)


CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = message(
    "ConsumerGroupCurrentMemberAssignmentKey", 8, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ConsumerGroupCurrentMemberAssignmentValue", 8, "0", "0+",
    [
        field("MemberEpoch", "int32", "0+"),
        field("PreviousMemberEpoch", "int32", "0+"),
        field("State", "int8", "0+"),
        field("AssignedPartitions", "[]TopicPartitions", "0+"),
        field("PartitionsPendingRevocation", "[]TopicPartitions", "0+"),
    ],
    common=[
        struct("TopicPartitions", "0+", [
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
            # The spec's JSON null default is the generator's "": an empty list, not null.
            field("AssignmentEpochs", "[]int32", "0+", nullable="0+", tagged="0+", tag=0),
        ]),
    ],
)


SHARE_GROUP_MEMBER_METADATA_KEY = message(
    "ShareGroupMemberMetadataKey", 10, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


SHARE_GROUP_MEMBER_METADATA_VALUE = message(
    "ShareGroupMemberMetadataValue", 10, "0", "0+",
    [
        field("RackId", "string", "0+", nullable="0+"),
        field("ClientId", "string", "0+"),
        field("ClientHost", "string", "0+"),
        field("SubscribedTopicNames", "[]string", "0+"),
    ],
)


SHARE_GROUP_METADATA_KEY = message(
    "ShareGroupMetadataKey", 11, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


SHARE_GROUP_METADATA_VALUE = message(
    "ShareGroupMetadataValue", 11, "0", "0+",
    [
        field("Epoch", "int32", "0+"),
        field("MetadataHash", "int64", "0+"),
    ],
)


# Kafka 4.0's early-access share groups wrote version 0 without MetadataHash (added untagged in
# 2025, KIP-1101, the version staying 0): the layout bytes of that release were written in.
SHARE_GROUP_METADATA_VALUE_4_0 = message(
    "ShareGroupMetadataValue", 11, "0", "0+",
    [
        field("Epoch", "int32", "0+"),
    ],
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = message(
    "ShareGroupTargetAssignmentMetadataKey", 12, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "ShareGroupTargetAssignmentMetadataValue", 12, "0", "0+",
    [
        field("AssignmentEpoch", "int32", "0+"),
        field("AssignmentTimestamp", "int64", "0+", tagged="0+", tag=0, default="0"),
    ],
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = message(
    "ShareGroupTargetAssignmentMemberKey", 13, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "ShareGroupTargetAssignmentMemberValue", 13, "0", "0+",
    [
        field("TopicPartitions", "[]TopicPartition", "0+", fields=[
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = message(
    "ShareGroupCurrentMemberAssignmentKey", 14, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "ShareGroupCurrentMemberAssignmentValue", 14, "0", "0+",
    [
        field("MemberEpoch", "int32", "0+"),
        field("PreviousMemberEpoch", "int32", "0+"),
        field("State", "int8", "0+"),
        field("AssignedPartitions", "[]TopicPartitions", "0+"),
    ],
    common=[
        struct("TopicPartitions", "0+", [
            field("TopicId", "uuid", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)


SHARE_GROUP_STATE_PARTITION_METADATA_KEY = message(
    "ShareGroupStatePartitionMetadataKey", 15, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = message(
    "ShareGroupStatePartitionMetadataValue", 15, "0", "0+",
    [
        field("InitializingTopics", "[]TopicPartitionsInfo", "0+"),
        field("InitializedTopics", "[]TopicPartitionsInfo", "0+"),
        field("DeletingTopics", "[]TopicInfo", "0+"),
    ],
    common=[
        struct("TopicPartitionsInfo", "0+", [
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
        struct("TopicInfo", "0+", [
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
        ]),
    ],
)


# Kafka 4.0's early-access layout of version 0: no InitializingTopics (added untagged in 2025,
# KAFKA-18827, the version staying 0).
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_4_0 = message(
    "ShareGroupStatePartitionMetadataValue", 15, "0", "0+",
    [
        field("InitializedTopics", "[]TopicPartitionsInfo", "0+"),
        field("DeletingTopics", "[]TopicInfo", "0+"),
    ],
    common=[
        struct("TopicPartitionsInfo", "0+", [
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
        struct("TopicInfo", "0+", [
            field("TopicId", "uuid", "0+"),
            field("TopicName", "string", "0+"),
        ]),
    ],
)


CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = message(
    "ConsumerGroupRegularExpressionKey", 16, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("RegularExpression", "string", "0"),
    ],
)


CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = message(
    "ConsumerGroupRegularExpressionValue", 16, "0", "0+",
    [
        field("Topics", "[]string", "0+"),
        field("Version", "int64", "0+"),
        field("Timestamp", "int64", "0+"),
    ],
)


STREAMS_GROUP_METADATA_KEY = message(
    "StreamsGroupMetadataKey", 17, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


STREAMS_GROUP_METADATA_VALUE = message(
    "StreamsGroupMetadataValue", 17, "0", "0+",
    [
        field("Epoch", "int32", "0+"),
        field("MetadataHash", "int64", "0+"),
        field("ValidatedTopologyEpoch", "int32", "0+", tagged="0+", tag=0, default="-1"),
        field("LastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tagged="0+", tag=1),
        field("StoredDescriptionTopologyEpoch", "int32", "0+", tagged="0+", tag=2, default="-1"),
        field("FailedDescriptionTopologyEpoch", "int32", "0+", tagged="0+", tag=3, default="-1"),
    ],
    common=[
        struct("LastAssignmentConfig", "0+", [
            field("Key", "string", "0+"),
            field("Value", "string", "0+"),
        ]),
    ],
)


STREAMS_GROUP_MEMBER_METADATA_KEY = message(
    "StreamsGroupMemberMetadataKey", 19, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


STREAMS_GROUP_MEMBER_METADATA_VALUE = message(
    "StreamsGroupMemberMetadataValue", 19, "0", "0+",
    [
        field("InstanceId", "string", "0+", nullable="0+"),
        field("RackId", "string", "0+", nullable="0+"),
        field("ClientId", "string", "0+"),
        field("ClientHost", "string", "0+"),
        field("RebalanceTimeoutMs", "int32", "0+", default="-1"),
        field("TopologyEpoch", "int32", "0+"),
        field("ProcessId", "string", "0+"),
        field("UserEndpoint", "Endpoint", "0+", nullable="0+", default="null"),
        field("ClientTags", "[]KeyValue", "0+"),
    ],
    common=[
        struct("Endpoint", "0+", [
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
        ]),
        struct("KeyValue", "0+", [
            field("Key", "string", "0+"),
            field("Value", "string", "0+"),
        ]),
    ],
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = message(
    "StreamsGroupTargetAssignmentMetadataKey", 20, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = message(
    "StreamsGroupTargetAssignmentMetadataValue", 20, "0", "0+",
    [
        field("AssignmentEpoch", "int32", "0+"),
        field("AssignmentTimestamp", "int64", "0+", tagged="0+", tag=0, default="0"),
    ],
)


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = message(
    "StreamsGroupTargetAssignmentMemberKey", 21, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = message(
    "StreamsGroupTargetAssignmentMemberValue", 21, "0", "0+",
    [
        field("ActiveTasks", "[]TaskIds", "0+"),
        field("StandbyTasks", "[]TaskIds", "0+"),
        field("WarmupTasks", "[]TaskIds", "0+"),
    ],
    common=[
        struct("TaskIds", "0+", [
            field("SubtopologyId", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
    ],
)


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = message(
    "StreamsGroupCurrentMemberAssignmentKey", 22, "0", "none",
    [
        field("GroupId", "string", "0"),
        field("MemberId", "string", "0"),
    ],
)


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = message(
    "StreamsGroupCurrentMemberAssignmentValue", 22, "0", "0+",
    [
        field("MemberEpoch", "int32", "0+"),
        field("PreviousMemberEpoch", "int32", "0+"),
        field("State", "int8", "0+"),
        field("ActiveTasks", "[]TaskIds", "0+"),
        field("StandbyTasks", "[]TaskIds", "0+"),
        field("WarmupTasks", "[]TaskIds", "0+"),
        field("ActiveTasksPendingRevocation", "[]TaskIds", "0+"),
        field("StandbyTasksPendingRevocation", "[]TaskIds", "0+"),
        field("WarmupTasksPendingRevocation", "[]TaskIds", "0+"),
    ],
    common=[
        struct("TaskIds", "0+", [
            field("SubtopologyId", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
            field("AssignmentEpochs", "[]int32", "0+", nullable="0+", tagged="0+", tag=0),
        ]),
    ],
)


STREAMS_GROUP_TOPOLOGY_KEY = message(
    "StreamsGroupTopologyKey", 23, "0", "none",
    [
        field("GroupId", "string", "0"),
    ],
)


STREAMS_GROUP_TOPOLOGY_VALUE = message(
    "StreamsGroupTopologyValue", 23, "0", "0+",
    [
        field("Epoch", "int32", "0+"),
        field("Subtopologies", "[]Subtopology", "0+", fields=[
            field("SubtopologyId", "string", "0+"),
            field("SourceTopics", "[]string", "0+"),
            field("SourceTopicRegex", "[]string", "0+"),
            field("StateChangelogTopics", "[]TopicInfo", "0+"),
            field("RepartitionSinkTopics", "[]string", "0+"),
            field("RepartitionSourceTopics", "[]TopicInfo", "0+"),
            field("CopartitionGroups", "[]CopartitionGroup", "0+", fields=[
                field("SourceTopics", "[]int16", "0+"),
                field("SourceTopicRegex", "[]int16", "0+"),
                field("RepartitionSourceTopics", "[]int16", "0+"),
            ]),
        ]),
    ],
    common=[
        struct("TopicConfig", "0+", [
            field("key", "string", "0+"),
            field("value", "string", "0+"),
        ]),
        struct("TopicInfo", "0+", [
            field("Name", "string", "0+"),
            field("Partitions", "int32", "0+"),
            field("ReplicationFactor", "int16", "0+"),
            field("TopicConfigs", "[]TopicConfig", "0+"),
        ]),
    ],
)


COORDINATOR_RECORD_TYPES: dict[int, tuple[MessageSpec, MessageSpec]] = {
    0: (LEGACY_OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    17: (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}

# Version 0 values whose layout changed without a version bump: the layout Kafka 4.0's early
# access wrote, tried only when today's layout does not read (see kdump.format.internal).
EARLY_ACCESS_4_0_LAYOUTS: dict[int, MessageSpec] = {
    11: SHARE_GROUP_METADATA_VALUE_4_0,
    15: SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_4_0,
}

# fmt: on
