"""KRaft metadata records (__cluster_metadata, snapshots) by type id.

Transcribed from Apache Kafka's JSON message schemas in
``metadata/src/main/resources/common/metadata/``: the facts only (field names, types, versions,
nullable and tagged versions, tags, defaults). Read by :mod:`kdump.format.messages`. See
kdump/format/schemas/SOURCES.md: as of trunk d79bd502 (2026-08-23).
"""

from __future__ import annotations

from kdump.format.messages import MessageSpec, field, message

# One field a line, as in the schema files: a data table, not code to reflow.
# ruff: noqa: E501
# fmt: off


REGISTER_BROKER_RECORD = message(
    "RegisterBrokerRecord", 0, "0-4", "0+",
    [
        field("BrokerId", "int32", "0+"),
        field("IsMigratingZkBroker", "bool", "2+", default="false"),
        field("IncarnationId", "uuid", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("EndPoints", "[]BrokerEndpoint", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]BrokerFeature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
        field("Rack", "string", "0+", nullable="0+"),
        field("Fenced", "bool", "0+", default="true"),
        field("InControlledShutdown", "bool", "1+", default="false"),
        field("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
        field("CordonedLogDirs", "[]uuid", "4+", nullable="4+", tagged="4+", tag=1, default="null"),
    ],
)


UNREGISTER_BROKER_RECORD = message(
    "UnregisterBrokerRecord", 1, "0", "0+",
    [
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
    ],
)


TOPIC_RECORD = message(
    "TopicRecord", 2, "0", "0+",
    [
        field("Name", "string", "0+"),
        field("TopicId", "uuid", "0+"),
    ],
)


PARTITION_RECORD = message(
    "PartitionRecord", 3, "0-2", "0+",
    [
        field("PartitionId", "int32", "0+", default="-1"),
        field("TopicId", "uuid", "0+"),
        field("Replicas", "[]int32", "0+"),
        field("Isr", "[]int32", "0+"),
        field("RemovingReplicas", "[]int32", "0+"),
        field("AddingReplicas", "[]int32", "0+"),
        field("Leader", "int32", "0+", default="-1"),
        field("LeaderRecoveryState", "int8", "0+", tagged="0+", tag=0, default="0"),
        field("LeaderEpoch", "int32", "0+", default="-1"),
        field("PartitionEpoch", "int32", "0+", default="-1"),
        field("Directories", "[]uuid", "1+"),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default="null"),
    ],
)


CONFIG_RECORD = message(
    "ConfigRecord", 4, "0", "0+",
    [
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Name", "string", "0+"),
        field("Value", "string", "0+", nullable="0+"),
    ],
)


PARTITION_CHANGE_RECORD = message(
    "PartitionChangeRecord", 5, "0-2", "0+",
    [
        field("PartitionId", "int32", "0+", default="-1"),
        field("TopicId", "uuid", "0+"),
        field("Isr", "[]int32", "0+", nullable="0+", tagged="0+", tag=0, default="null"),
        field("Leader", "int32", "0+", tagged="0+", tag=1, default="-2"),
        field("Replicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=2, default="null"),
        field("RemovingReplicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=3, default="null"),
        field("AddingReplicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=4, default="null"),
        field("LeaderRecoveryState", "int8", "0+", tagged="0+", tag=5, default="-1"),
        field("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null"),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6, default="null"),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default="null"),
    ],
)


FENCE_BROKER_RECORD = message(
    "FenceBrokerRecord", 7, "0", "0+",
    [
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)


UNFENCE_BROKER_RECORD = message(
    "UnfenceBrokerRecord", 8, "0", "0+",
    [
        field("Id", "int32", "0+"),
        field("Epoch", "int64", "0+"),
    ],
)


REMOVE_TOPIC_RECORD = message(
    "RemoveTopicRecord", 9, "0", "0+",
    [
        field("TopicId", "uuid", "0+"),
    ],
)


DELEGATION_TOKEN_RECORD = message(
    "DelegationTokenRecord", 10, "0", "0+",
    [
        field("Owner", "string", "0+"),
        field("Requester", "string", "0+"),
        field("Renewers", "[]string", "0+"),
        field("IssueTimestamp", "int64", "0+"),
        field("MaxTimestamp", "int64", "0+"),
        field("ExpirationTimestamp", "int64", "0+"),
        field("TokenId", "string", "0+"),
    ],
)


USER_SCRAM_CREDENTIAL_RECORD = message(
    "UserScramCredentialRecord", 11, "0", "0+",
    [
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
        field("Salt", "bytes", "0+"),
        field("StoredKey", "bytes", "0+"),
        field("ServerKey", "bytes", "0+"),
        field("Iterations", "int32", "0+"),
    ],
)


FEATURE_LEVEL_RECORD = message(
    "FeatureLevelRecord", 12, "0", "0+",
    [
        field("Name", "string", "0+"),
        field("FeatureLevel", "int16", "0+"),
    ],
)


CLIENT_QUOTA_RECORD = message(
    "ClientQuotaRecord", 14, "0", "0+",
    [
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
        field("Key", "string", "0+"),
        field("Value", "float64", "0+"),
        field("Remove", "bool", "0+"),
    ],
)


PRODUCER_IDS_RECORD = message(
    "ProducerIdsRecord", 15, "0", "0+",
    [
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+", default="-1"),
        field("NextProducerId", "int64", "0+"),
    ],
)


BROKER_REGISTRATION_CHANGE_RECORD = message(
    "BrokerRegistrationChangeRecord", 17, "0-3", "0+",
    [
        field("BrokerId", "int32", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("Fenced", "int8", "0+", tagged="0+", tag=0),
        field("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        field("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
        field("CordonedLogDirs", "[]uuid", "3+", nullable="3+", tagged="3+", tag=3, default="null"),
    ],
)


ACCESS_CONTROL_ENTRY_RECORD = message(
    "AccessControlEntryRecord", 18, "0", "0+",
    [
        field("Id", "uuid", "0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("PatternType", "int8", "0+"),
        field("Principal", "string", "0+"),
        field("Host", "string", "0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ],
)


REMOVE_ACCESS_CONTROL_ENTRY_RECORD = message(
    "RemoveAccessControlEntryRecord", 19, "0", "0+",
    [
        field("Id", "uuid", "0+"),
    ],
)


NO_OP_RECORD = message(
    "NoOpRecord", 20, "0", "0+",
    [
    ],
)


ZK_MIGRATION_RECORD = message(
    "ZkMigrationStateRecord", 21, "0", "0+",
    [
        field("ZkMigrationState", "int8", "0+"),
    ],
)


REMOVE_USER_SCRAM_CREDENTIAL_RECORD = message(
    "RemoveUserScramCredentialRecord", 22, "0", "0+",
    [
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
    ],
)


BEGIN_TRANSACTION_RECORD = message(
    "BeginTransactionRecord", 23, "0", "0+",
    [
        field("Name", "string", "0+", nullable="0+", tagged="0+", tag=0, default="null"),
    ],
)


END_TRANSACTION_RECORD = message(
    "EndTransactionRecord", 24, "0", "0+",
    [
    ],
)


ABORT_TRANSACTION_RECORD = message(
    "AbortTransactionRecord", 25, "0", "0+",
    [
        field("Reason", "string", "0+", nullable="0+", tagged="0+", tag=0, default="null"),
    ],
)


REMOVE_DELEGATION_TOKEN_RECORD = message(
    "RemoveDelegationTokenRecord", 26, "0", "0+",
    [
        field("TokenId", "string", "0+"),
    ],
)


REGISTER_CONTROLLER_RECORD = message(
    "RegisterControllerRecord", 27, "0", "0+",
    [
        field("ControllerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("ZkMigrationReady", "bool", "0+"),
        field("EndPoints", "[]ControllerEndpoint", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]ControllerFeature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
    ],
)


CLEAR_ELR_RECORD = message(
    "ClearElrRecord", 28, "0", "0+",
    [
        field("TopicName", "string", "0+"),
    ],
)


UNREGISTER_CONTROLLER_RECORD = message(
    "UnregisterControllerRecord", 29, "0", "0+",
    [
        field("ControllerId", "int32", "0+"),
    ],
)


METADATA_RECORD_TYPES: dict[int, MessageSpec] = {
    0: REGISTER_BROKER_RECORD,
    1: UNREGISTER_BROKER_RECORD,
    2: TOPIC_RECORD,
    3: PARTITION_RECORD,
    4: CONFIG_RECORD,
    5: PARTITION_CHANGE_RECORD,
    7: FENCE_BROKER_RECORD,
    8: UNFENCE_BROKER_RECORD,
    9: REMOVE_TOPIC_RECORD,
    10: DELEGATION_TOKEN_RECORD,
    11: USER_SCRAM_CREDENTIAL_RECORD,
    12: FEATURE_LEVEL_RECORD,
    14: CLIENT_QUOTA_RECORD,
    15: PRODUCER_IDS_RECORD,
    17: BROKER_REGISTRATION_CHANGE_RECORD,
    18: ACCESS_CONTROL_ENTRY_RECORD,
    19: REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    20: NO_OP_RECORD,
    21: ZK_MIGRATION_RECORD,
    22: REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    23: BEGIN_TRANSACTION_RECORD,
    24: END_TRANSACTION_RECORD,
    25: ABORT_TRANSACTION_RECORD,
    26: REMOVE_DELEGATION_TOKEN_RECORD,
    27: REGISTER_CONTROLLER_RECORD,
    28: CLEAR_ELR_RECORD,
    29: UNREGISTER_CONTROLLER_RECORD,
}

# fmt: on
