"""KRaft control records and the consumer protocol's subscription and assignment.

Transcribed from Apache Kafka's JSON message schemas in
``clients/src/main/resources/common/message/``, as of trunk d79bd502 (2026-08-23; unchanged since
e6d24211, 2024-12-27): the facts only (field names, types, versions, nullable and tagged versions,
tags, defaults). Read by :mod:`kdump.format.messages`. See kdump/format/schemas/SOURCES.md.
"""

from __future__ import annotations

from kdump.format.messages import field, message, struct

# One field a line, as in the schema files: a data table, not code to reflow.
# fmt: off


LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage", None, "0-1", "0+",
    [
        field("Version", "int16", "0+"),
        field("LeaderId", "int32", "0+"),
        field("Voters", "[]Voter", "0+"),
        field("GrantingVoters", "[]Voter", "0+"),
    ],
    common=[
        struct("Voter", "0+", [
            field("VoterId", "int32", "0+"),
            field("VoterDirectoryId", "uuid", "1+"),
        ]),
    ],
)


SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord", None, "0", "0+",
    [
        field("Version", "int16", "0+"),
        field("LastContainedLogTimestamp", "int64", "0+"),
    ],
)


SNAPSHOT_FOOTER_RECORD = message(
    "SnapshotFooterRecord", None, "0", "0+",
    [
        field("Version", "int16", "0+"),
    ],
)


KRAFT_VERSION_RECORD = message(
    "KRaftVersionRecord", None, "0", "0+",
    [
        field("Version", "int16", "0+"),
        field("KRaftVersion", "int16", "0+"),
    ],
)


VOTERS_RECORD = message(
    "VotersRecord", None, "0", "0+",
    [
        field("Version", "int16", "0+"),
        field("Voters", "[]Voter", "0+", fields=[
            field("VoterId", "int32", "0+"),
            field("VoterDirectoryId", "uuid", "0+"),
            field("Endpoints", "[]Endpoint", "0+", fields=[
                field("Name", "string", "0+"),
                field("Host", "string", "0+"),
                field("Port", "uint16", "0+"),
            ]),
            field("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
                field("MinSupportedVersion", "int16", "0+"),
                field("MaxSupportedVersion", "int16", "0+"),
            ]),
        ]),
    ],
)


CONSUMER_PROTOCOL_SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", None, "0-3", "none",
    [
        field("Topics", "[]string", "0+"),
        field("UserData", "bytes", "0+", nullable="0+", default="null", zero_copy=True),
        field("OwnedPartitions", "[]TopicPartition", "1+", fields=[
            field("Topic", "string", "1+"),
            field("Partitions", "[]int32", "1+"),
        ]),
        field("GenerationId", "int32", "2+", default="-1"),
        field("RackId", "string", "3+", nullable="3+", default="null"),
    ],
)


CONSUMER_PROTOCOL_ASSIGNMENT = message(
    "ConsumerProtocolAssignment", None, "0-3", "none",
    [
        field("AssignedPartitions", "[]TopicPartition", "0+", fields=[
            field("Topic", "string", "0+"),
            field("Partitions", "[]int32", "0+"),
        ]),
        field("UserData", "bytes", "0+", nullable="0+", default="null", zero_copy=True),
    ],
)


# fmt: on
