"""Kafka as people run it today (4.1-4.4): today's schemas, the share-group-state and
remote-log-metadata decoders, records newer than kdump's schemas, the two layouts of share-group
version 0 values, and the text of newer kafka-dump-log.sh releases.

The bytes are built here field by field with the encoder of tests/test_internal_topics.py
(written from the layout rules, not from kdump's tables), or come from fixtures/internal/
(scripts/make_internal_fixtures.py, another hand-written encoder).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from test_internal_topics import (
    TOPIC_ID,
    carray,
    cblob,
    cstring,
    frame,
    i8,
    i16,
    i32,
    i64,
    record,
    string,
    tags,
    texts,
    uuid,
    uvarint,
)

from kdump.format.internal import (
    EARLY_ACCESS_4_0,
    KafkaText,
    cluster_metadata_parser,
    offsets_parser,
    remote_log_metadata_parser,
    share_group_state_parser,
)

INTERNAL = REPO / "fixtures" / "internal"
SEGMENT = "00000000000000000000.log"
SEGMENT_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

# --- today's group coordinator schemas -------------------------------------------------------


@settings(max_examples=1000, deadline=None)
@given(epoch=st.integers(-(2**31), 2**31 - 1), metadata_hash=st.integers(-(2**63), 2**63 - 1))
def test_share_group_metadata_of_kafka_4_1_reads_back(epoch: int, metadata_hash: int) -> None:
    """The issue's measurement: 1,000 random 4.1 ShareGroupMetadataValues, none failing."""
    value = i16(0) + i32(epoch) + i64(metadata_hash) + tags()
    key, payload = offsets_parser(record(i16(11) + string("g"), value))
    assert key == {"type": "11", "data": {"groupId": "g"}}
    assert payload == {"version": "0", "data": {"epoch": epoch, "metadataHash": metadata_hash}}


@settings(max_examples=200, deadline=None)
@given(initializing=st.lists(st.integers(0, 2**31 - 1), max_size=4))
def test_share_group_state_partition_metadata_of_today_reads_back(initializing: list[int]) -> None:
    info = uuid(TOPIC_ID) + cstring("t") + carray([i32(p) for p in initializing])
    value = i16(0) + carray([info + tags()]) + carray([]) + carray([]) + tags()
    _, payload = offsets_parser(record(i16(15) + string("g"), value))
    assert isinstance(payload, dict)
    assert payload["data"] == {
        "initializingTopics": [
            {
                "topicId": TOPIC_ID,
                "topicName": "t",
                "partitions": initializing,
            }
        ],
        "initializedTopics": [],
        "deletingTopics": [],
    }


MEMBER_METADATA = (  # ConsumerGroupMemberMetadataValue v0 up to its tagged fields
    i16(0)
    + cstring(None)
    + cstring(None)
    + cstring("c")
    + cstring("h")
    + carray([])
    + cstring(None)
    + i32(-1)
    + cstring(None)
)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (  # tags absent: their defaults, not printed
            i16(3) + string("g"),
            i16(0) + i32(1) + tags(),
            '{"version":"0","data":{"epoch":1}}',
        ),
        (
            i16(3) + string("g"),
            i16(0) + i32(1) + tags((0, i64(9))),
            '{"version":"0","data":{"epoch":1,"metadataHash":9}}',
        ),
        (  # trunk has no tag 1 (a CreationTimeMs was once assumed): skipped as unknown
            i16(3) + string("g"),
            i16(0) + i32(1) + tags((0, i64(9)), (1, i64(1700000000000))),
            '{"version":"0","data":{"epoch":1,"metadataHash":9}}',
        ),
        (
            i16(6) + string("g"),
            i16(0) + i32(4) + tags((0, i64(12))),
            '{"version":"0","data":{"assignmentEpoch":4,"assignmentTimestamp":12}}',
        ),
        (
            i16(8) + string("g") + string("m"),
            i16(0)
            + i32(2)
            + i32(1)
            + i8(0)
            + carray([uuid(TOPIC_ID) + carray([i32(3)]) + tags((0, carray(None)))])
            + carray([uuid(TOPIC_ID) + carray([]) + tags()])
            + tags(),
            # AssignmentEpochs defaults to an empty list (the spec's JSON null is the
            # generator's ""): absent it is not printed, a null one is.
            '{"version":"0","data":{"memberEpoch":2,"previousMemberEpoch":1,"state":0,'
            '"assignedPartitions":[{"topicId":"@ID","partitions":[3],"assignmentEpochs":null}],'
            '"partitionsPendingRevocation":[{"topicId":"@ID","partitions":[]}]}}',
        ),
        (
            i16(8) + string("g") + string("m"),
            i16(0)
            + i32(2)
            + i32(1)
            + i8(0)
            + carray([uuid(TOPIC_ID) + carray([i32(3)]) + tags((0, carray([i32(2)])))])
            + carray([uuid(TOPIC_ID) + carray([]) + tags((0, carray([])))])
            + tags(),
            '{"version":"0","data":{"memberEpoch":2,"previousMemberEpoch":1,"state":0,'
            '"assignedPartitions":[{"topicId":"@ID","partitions":[3],"assignmentEpochs":[2]}],'
            '"partitionsPendingRevocation":[{"topicId":"@ID","partitions":[]}]}}',
        ),
        (
            i16(1) + string("g") + string("t") + i32(0),
            i16(4) + i64(5) + i32(-1) + cstring("") + i64(6) + tags((0, uuid(TOPIC_ID))),
            '{"version":"4","data":{"offset":5,"leaderEpoch":-1,"metadata":"",'
            '"commitTimestamp":6,"topicId":"@ID"}}',
        ),
        (
            i16(17) + string("s"),
            i16(0) + i32(3) + i64(-1) + tags(),
            '{"version":"0","data":{"epoch":3,"metadataHash":-1}}',
        ),
        (
            i16(17) + string("s"),
            i16(0)
            + i32(3)
            + i64(-1)
            + tags(
                (0, i32(2)),
                (1, carray([cstring("num.standby.replicas") + cstring("1") + tags()])),
                (2, i32(3)),
                (3, i32(-1)),
            ),
            '{"version":"0","data":{"epoch":3,"metadataHash":-1,"validatedTopologyEpoch":2,'
            '"lastAssignmentConfigs":[{"key":"num.standby.replicas","value":"1"}],'
            '"storedDescriptionTopologyEpoch":3}}',
        ),
        (
            i16(12) + string("g"),
            i16(0) + i32(4) + tags((0, i64(12))),
            '{"version":"0","data":{"assignmentEpoch":4,"assignmentTimestamp":12}}',
        ),
        (
            i16(20) + string("s"),
            i16(0) + i32(4) + tags((0, i64(12))),
            '{"version":"0","data":{"assignmentEpoch":4,"assignmentTimestamp":12}}',
        ),
        (
            i16(22) + string("s") + string("m"),
            i16(0)
            + i32(2)
            + i32(1)
            + i8(0)
            + carray([cstring("0") + carray([i32(1)]) + tags((0, carray([i32(2)])))])
            + carray([])
            + carray([])
            + carray([])
            + carray([])
            + carray([])
            + tags(),
            '{"version":"0","data":{"memberEpoch":2,"previousMemberEpoch":1,"state":0,'
            '"activeTasks":[{"subtopologyId":"0","partitions":[1],"assignmentEpochs":[2]}],'
            '"standbyTasks":[],"warmupTasks":[],"activeTasksPendingRevocation":[],'
            '"standbyTasksPendingRevocation":[],"warmupTasksPendingRevocation":[]}}',
        ),
        (  # a tagged struct at its defaults but holding a tag kdump does not know: not the
            # default (the generated equals() compares unknown tags), so Kafka prints it
            i16(5) + string("g") + string("m"),
            MEMBER_METADATA + tags((0, uvarint(1) + i32(0) + carray([]) + tags((7, b"\x01")))),
            '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c",'
            '"clientHost":"h","subscribedTopicNames":[],"subscribedTopicRegex":null,'
            '"rebalanceTimeoutMs":-1,"serverAssignor":null,'
            '"classicMemberMetadata":{"sessionTimeoutMs":0,"supportedProtocols":[]}}}',
        ),
        (  # the same struct without the unknown tag is the default: not printed
            i16(5) + string("g") + string("m"),
            MEMBER_METADATA + tags((0, uvarint(1) + i32(0) + carray([]) + tags())),
            '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c",'
            '"clientHost":"h","subscribedTopicNames":[],"subscribedTopicRegex":null,'
            '"rebalanceTimeoutMs":-1,"serverAssignor":null}}',
        ),
        (  # null (its default is the empty struct, not null): printed
            i16(5) + string("g") + string("m"),
            MEMBER_METADATA + tags((0, uvarint(0))),
            '{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c",'
            '"clientHost":"h","subscribedTopicNames":[],"subscribedTopicRegex":null,'
            '"rebalanceTimeoutMs":-1,"serverAssignor":null,"classicMemberMetadata":null}}',
        ),
    ],
    ids=[
        "consumer-group-metadata-no-tags",
        "consumer-group-metadata-tags",
        "consumer-group-metadata-unknown-tag",
        "target-assignment-timestamp",
        "current-assignment-epochs-null",
        "current-assignment-epochs",
        "offset-commit-v4-topic-id",
        "streams-group-metadata",
        "streams-group-metadata-tags",
        "share-target-assignment-timestamp",
        "streams-target-assignment-timestamp",
        "streams-current-assignment-epochs",
        "classic-member-metadata-unknown-tag",
        "classic-member-metadata-default",
        "classic-member-metadata-null",
    ],
)
def test_today_group_coordinator_records(key: bytes, value: bytes, expected: str) -> None:
    assert texts(offsets_parser(record(key, value)))[1] == expected.replace("@ID", TOPIC_ID)


# --- records newer than kdump's schemas --------------------------------------------------------


@pytest.mark.parametrize("record_type", [9, 18, 24])
def test_record_types_trunk_does_not_have_are_unknown(record_type: int) -> None:
    """9 and 18 (Share/StreamsGroupPartitionMetadata) were removed in 2025 (KAFKA-17747), 24
    never existed: trunk's CoordinatorRecordType refuses them."""
    parsed = offsets_parser(record(i16(record_type) + string("g"), i16(0) + tags(), offset=5))
    assert texts(parsed) == (f"Unknown record type {record_type} at offset 5, skipping.", None)


def test_a_value_version_above_the_schema_is_not_guessed() -> None:
    """It used to be read with version 0's layout; Kafka refuses it (UnknownRecordVersion)."""
    value = i16(1) + i32(7) + i64(8) + tags()
    parsed = offsets_parser(record(i16(11) + string("g"), value, offset=4))
    assert texts(parsed) == (
        "Error at offset 4, skipping. Found an unknown record version 1 for 11 type",
        None,
    )
    assert isinstance(parsed.key, KafkaText)
    assert parsed.key.jsonl == (
        {"type": "11", "data": {"groupId": "g"}},
        {
            "error": "Error at offset 4, skipping. Found an unknown record version 1 for 11 type",
            "unknown_version": True,
            "version": "1",
            "hex": (i32(7) + i64(8) + tags()).hex(),
        },
    )
    negative = offsets_parser(record(i16(1) + string("g") + string("t") + i32(0), i16(-1)))
    assert texts(negative)[0] == (
        "Error at offset 0, skipping. Found an unknown record version -1 for 1 type"
    )


def test_an_unknown_record_type_names_type_and_bytes_in_jsonl() -> None:
    parsed = offsets_parser(record(i16(77) + string("g"), i16(0) + b"\x01", offset=9))
    assert texts(parsed) == ("Unknown record type 77 at offset 9, skipping.", None)
    assert isinstance(parsed.key, KafkaText)
    assert parsed.key.jsonl == (
        {
            "error": "Unknown record type 77 at offset 9, skipping.",
            "type": "77",
            "hex": string("g").hex(),
        },
        {"version": "0", "hex": "01"},
    )


@pytest.mark.parametrize(
    ("value", "text", "facts"),
    [
        (
            frame(99, 2, b"\x07"),
            "Error at 3, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
            "Unknown metadata id 99",
            {"type": 99, "unknown_type": True, "version": 2, "hex": "07"},
        ),
        (
            frame(2, 1, cstring("t") + uuid(TOPIC_ID) + tags()),
            "Error at 3, skipping. Failed to deserialize record with type 2",
            {
                "type": "TOPIC_RECORD",
                "version": 1,
                "unknown_version": True,
                "hex": (cstring("t") + uuid(TOPIC_ID) + tags()).hex(),
            },
        ),
    ],
    ids=["type", "version"],
)
def test_newer_metadata_records_are_not_guessed(
    value: bytes, text: str, facts: dict[str, object]
) -> None:
    parsed = cluster_metadata_parser(record(None, value, offset=3))
    assert texts(parsed) == (None, text)
    assert isinstance(parsed.value, KafkaText)
    assert parsed.value.jsonl == (None, {"error": text, **facts})


def test_today_metadata_records() -> None:
    cordoned = frame(
        17, 3, i32(1) + i64(2) + tags((2, carray([uuid(TOPIC_ID)])), (3, carray(None)))
    )
    assert texts(cluster_metadata_parser(record(None, cordoned)))[1] == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":1,'
        f'"brokerEpoch":2,"logDirs":["{TOPIC_ID}"]}}}}'
    )
    assert texts(cluster_metadata_parser(record(None, frame(29, 0, i32(3) + tags()))))[1] == (
        '{"type":"UNREGISTER_CONTROLLER_RECORD","version":0,"data":{"controllerId":3}}'
    )


# --- share-group version 0: two layouts --------------------------------------------------------


def test_share_group_metadata_in_the_4_0_early_access_layout() -> None:
    parsed = offsets_parser(record(i16(11) + string("g"), i16(0) + i32(5) + tags(), offset=2))
    text = (
        "Error at offset 2, skipping. Could not read record with version 0 from value's buffer "
        "due to: null."
    )
    assert texts(parsed) == (text, None)
    assert isinstance(parsed.key, KafkaText)
    assert parsed.key.jsonl == (
        {"type": "11", "data": {"groupId": "g"}},
        {"version": "0", "layout": EARLY_ACCESS_4_0, "data": {"epoch": 5}, "error": text},
    )


def test_bytes_neither_layout_reads_keep_todays_error() -> None:
    parsed = offsets_parser(record(i16(11) + string("g"), i16(0) + b"\x00\x01", offset=1))
    assert texts(parsed) == (
        "Error at offset 1, skipping. Could not read record with version 0 from value's buffer "
        "due to: null.",
        None,
    )
    assert not isinstance(parsed.key, KafkaText)


def test_jsonl_names_the_layout_and_the_exit_code_says_nothing_is_damaged() -> None:
    log = INTERNAL / "__consumer_offsets-0" / SEGMENT
    ran = run_kdump(["dump", str(log), "--format", "jsonl", "--offsets-decoder"])
    assert (ran.exit_code, ran.stderr) == (0, "")
    records = [o for o in map(json.loads, ran.stdout.splitlines()) if o["type"] == "record"]
    layouts = [r["value"].get("layout") for r in records if isinstance(r["value"], dict)]
    assert layouts.count(EARLY_ACCESS_4_0) == 2
    assert records[10]["value"]["unknown_version"] is True
    assert records[11]["key"]["type"] == "99" and records[12]["value"] is None
    text = run_kdump(["--files", str(log), "--offsets-decoder"])
    assert text.exit_code == 0


# --- --share-group-state-decoder ---------------------------------------------------------------


def share_key(record_type: int) -> bytes:
    return i16(record_type) + string("g") + uuid(TOPIC_ID) + i32(3)


def test_share_snapshot_and_update() -> None:
    batch = i64(0) + i64(4) + i8(2) + i16(1) + tags()
    snapshot = i16(0) + i32(1) + i32(2) + i32(3) + i64(0) + i64(10) + i64(11) + carray([batch])
    key, payload = texts(share_group_state_parser(record(share_key(0), snapshot + tags())))
    assert key == f'{{"type":"0","data":{{"groupId":"g","topicId":"{TOPIC_ID}","partition":3}}}}'
    assert payload == (
        '{"version":"0","data":{"snapshotEpoch":1,"stateEpoch":2,"leaderEpoch":3,"startOffset":0,'
        '"createTimestamp":10,"writeTimestamp":11,"stateBatches":[{"firstOffset":0,"lastOffset":4,'
        '"deliveryState":2,"deliveryCount":1}]}}'
    )
    update = i16(0) + i32(1) + i32(3) + i64(-1) + carray([]) + tags((0, i32(7)))
    assert texts(share_group_state_parser(record(share_key(1), update)))[1] == (
        '{"version":"0","data":{"snapshotEpoch":1,"leaderEpoch":3,"startOffset":-1,'
        '"deliveryCompleteCount":7,"stateBatches":[]}}'
    )
    assert texts(share_group_state_parser(record(share_key(1), None)))[1] == "<DELETE>"
    assert texts(share_group_state_parser(record(share_key(2), None, offset=5))) == (
        "Unknown record type 2 at offset 5, skipping.",
        None,
    )


# --- --remote-log-metadata-decoder ------------------------------------------------------------


def tip(name: str = "t", partition: int = 0) -> bytes:
    return cstring(name) + uuid(TOPIC_ID) + i32(partition) + tags()


def segment_metadata(
    start: int = 0,
    end: int = 9,
    epochs: list[tuple[int, int]] | None = None,
    custom: bytes | None = None,
    state: int = 1,
    tagged: bytes = tags(),
) -> bytes:
    pairs = [(0, 0)] if epochs is None else epochs
    return frame(
        0,
        0,
        tip()
        + uuid(SEGMENT_ID)
        + tags()
        + i64(start)
        + i64(end)
        + i32(2)
        + i64(100)
        + i64(200)
        + carray([i32(e) + i64(o) + tags() for e, o in pairs])
        + i32(300)
        + cblob(custom)
        + i8(state)
        + tagged,
    )


def remote(value: bytes | None, offset: int = 0) -> str:
    _, payload = texts(remote_log_metadata_parser(record(None, value, offset)))
    assert payload is not None
    return payload


SEGMENT_TEXT = f"RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:t-0, id={SEGMENT_ID}}}"


def test_remote_log_segment_metadata_as_its_to_string_prints() -> None:
    assert remote(segment_metadata(epochs=[(3, 7), (1, 2), (3, 8)], custom=b"ab")) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_TEXT}, startOffset=0, "
        "endOffset=9, brokerId=2, maxTimestampMs=100, eventTimestampMs=200, "
        "segmentLeaderEpochs={1=2, 3=8}, segmentSizeInBytes=300, "
        "customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_FINISHED, "
        "txnIdxEmpty=false}"
    )
    assert remote(segment_metadata(tagged=tags((0, b"\x01")))).endswith(", txnIdxEmpty=true}")


def test_the_other_three_remote_log_records() -> None:
    update = frame(1, 0, tip() + uuid(SEGMENT_ID) + tags() + i32(4) + i64(5) + cblob(None))
    assert remote(update + i8(3) + tags()) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_TEXT}, "
        "customMetadata=Optional.empty, state=DELETE_SEGMENT_FINISHED, eventTimestampMs=5, "
        "brokerId=4}"
    )
    delete = frame(2, 0, tip("orders", 12) + i32(1) + i64(6) + i8(2) + tags())
    assert remote(delete) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={TOPIC_ID}:orders-12, "
        "state=DELETE_PARTITION_FINISHED, eventTimestampMs=6, brokerId=1}"
    )
    snapshot = frame(
        3,
        0,
        uuid(SEGMENT_ID)
        + i64(1)
        + i64(2)
        + i32(3)
        + i64(4)
        + i64(5)
        + carray([i32(0) + i64(1) + tags()])
        + i32(6)
        + cblob(b"")
        + i8(2)
        + tags(),
    )
    assert remote(snapshot) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID}, startOffset=1, endOffset=2, "
        "maxTimestampMs=4, segmentLeaderEpochs={0=1}, segmentSizeInBytes=6, "
        "customMetadata=Optional[CustomMetadata{0 bytes}], state=DELETE_SEGMENT_STARTED, "
        "txnIdxEmpty=false}"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            segment_metadata(start=-1),
            "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative",
        ),
        (
            segment_metadata(start=5, end=4),
            "Unexpected end offset = 4. EndOffset for a remote segment cannot be less than "
            "startOffset = 5",
        ),
        (segment_metadata(epochs=[]), "segmentLeaderEpochs can not be null or empty"),
        (segment_metadata(state=4), "state can not be null"),
        (frame(2, 0, tip() + i32(1) + i64(6) + i8(3) + tags()), "null"),
        (
            frame(4, 0, tags()),
            "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4",
        ),
        (frame(2, 0, tip()), "Failed to deserialize record with type 2"),
        (
            frame(2, 1, tip() + i32(1) + i64(6) + i8(0) + tags()),
            "Failed to deserialize record with type 2",
        ),
        (segment_metadata() + b"\x00", "Found 1 byte(s) of garbage after 0"),
        (
            b"\x00",
            "Could not deserialize metadata record with frame version 0. Note that upgrades "
            "from the preview release of KRaft in 2.8 to newer versions are not supported.",
        ),
        (
            None,
            'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
            '"org.apache.kafka.common.record.internal.Record.value()" is null',
        ),
    ],
    ids=[
        "negative-start",
        "end-below-start",
        "no-epochs",
        "unknown-segment-state",
        "unknown-delete-state",
        "unknown-api-key",
        "short",
        "newer-version",
        "garbage",
        "frame-0",
        "null-value",
    ],
)
def test_remote_log_metadata_errors_are_kafkas(value: bytes | None, message: str) -> None:
    assert remote(value, offset=8) == f"Error at offset 8, skipping. {message}"


def test_remote_log_metadata_jsonl_carries_fields_and_text(tmp_path: Path) -> None:
    log = INTERNAL / "__remote_log_metadata-0" / SEGMENT
    ran = run_kdump(["dump", str(log), "--format", "jsonl", "--remote-log-metadata-decoder"])
    assert (ran.exit_code, ran.stderr) == (0, "")
    values = [o["value"] for o in map(json.loads, ran.stdout.splitlines()) if o["type"] == "record"]
    assert values[0]["type"] == "RemoteLogSegmentMetadataRecord"
    assert values[0]["data"]["segmentLeaderEpochs"] == [
        {"leaderEpoch": 2, "offset": 50},
        {"leaderEpoch": 0, "offset": 0},
    ]
    assert values[0]["text"].startswith("RemoteLogSegmentMetadata{")
    assert values[5] == {
        "error": "Error at offset 5, skipping. org.apache.kafka.common.errors."
        "UnsupportedVersionException: Unknown metadata id 7",
        "type": 7,
        "unknown_type": True,
        "version": 0,
        "hex": "00",
    }


# --- options ------------------------------------------------------------------------------------


def test_decoders_keep_kafkas_precedence() -> None:
    """offsets, transaction log, cluster metadata, remote log metadata, share group state."""
    log = str(INTERNAL / "__share_group_state-0" / SEGMENT)
    both = run_kdump(
        ["--files", log, "--remote-log-metadata-decoder", "--share-group-state-decoder"]
    )
    assert "payload: Error at offset 0, skipping. Could not deserialize" in both.stdout


def test_an_unknown_release_is_a_usage_error() -> None:
    ran = run_kdump(["--files", "x.log", "--kafka-release", "3.9"])
    assert ran.exit_code == 3 and "--kafka-release" in ran.stderr


def test_internal_fixtures_are_what_the_script_writes() -> None:
    """fixtures/internal/ is reproducible from scripts/make_internal_fixtures.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_internal_fixtures", REPO / "scripts" / "make_internal_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, data in module.FILES.items():
        assert (INTERNAL / name).read_bytes() == data, name
