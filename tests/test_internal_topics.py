"""Decoders for Kafka's internal topics (--offsets-decoder, --transaction-log-decoder,
--cluster-metadata-decoder) and KRaft control records.

Two kinds of evidence:
- records built here byte by byte from the published schemas (a hand-written encoder, not the
  decoder's tables), with the JSON Kafka's own DumpLogSegmentsTest expects where it has one;
- the genuine broker directories in fixtures/realfiles/, checked against what the same brokers
  wrote elsewhere (partition.metadata topic ids, meta.properties ids, high watermarks), and a
  few exact lines.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from batchbytes import fix_crc, v2_batch
from clirun import run_kdump
from conftest import REALFILES, REPO

from kdump.errors import MessageError
from kdump.format import messages
from kdump.format.internal import (
    DELETE,
    cluster_metadata_parser,
    content_text,
    decode_control_record,
    offsets_parser,
    parse_metadata_record,
    transaction_log_parser,
    transaction_log_parser_for,
)
from kdump.format.messages import Readable, Versions, jackson, version_check
from kdump.format.records import Record, control_record_key
from kdump.format.schemas import clients, metadata
from kdump.format.textfiles import read_meta_properties, read_offset_checkpoint
from kdump.releases import Release
from kdump.storage.local import open_log_file

# --- an encoder written from the schema files' layout rules -----------------------------------


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def string(s: str | None) -> bytes:
    if s is None:
        return i16(-1)
    raw = s.encode()
    return i16(len(raw)) + raw


def cstring(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def blob(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def cblob(b: bytes | None) -> bytes:
    return uvarint(0) if b is None else uvarint(len(b) + 1) + b


def array(items: list[bytes] | None) -> bytes:
    return i32(-1) if items is None else i32(len(items)) + b"".join(items)


def carray(items: list[bytes] | None) -> bytes:
    return uvarint(0) if items is None else uvarint(len(items) + 1) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(p)) + p for t, p in fields)


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def frame(api_key: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def record(key: bytes | None, value: bytes | None, offset: int = 0) -> Record:
    return Record(offset, 0, key, value, (), -1, 0, 0)


def texts(parsed: tuple[object, object]) -> tuple[str | None, str | None]:
    key, value = parsed
    return (
        None if key is None else content_text(key),  # type: ignore[arg-type]
        None if value is None else content_text(value),  # type: ignore[arg-type]
    )


TOPIC_ID = "tpx8pd1IQDqJwMfGzXj6GA"


def with_id(text: str) -> str:
    return text.replace("@ID", TOPIC_ID)


# --- __consumer_offsets -----------------------------------------------------------------------

OFFSET_KEY = i16(1) + string("group") + string("topic") + i32(3)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            i16(0) + i64(100) + string("meta") + i64(1000),
            '{"version":"0","data":{"offset":100,"metadata":"meta","commitTimestamp":1000}}',
        ),
        (
            i16(1) + i64(100) + string("") + i64(1000) + i64(2000),
            '{"version":"1","data":{"offset":100,"metadata":"","commitTimestamp":1000,'
            '"expireTimestamp":2000}}',
        ),
        (
            i16(2) + i64(100) + string("m") + i64(1000),
            '{"version":"2","data":{"offset":100,"metadata":"m","commitTimestamp":1000}}',
        ),
        (
            i16(3) + i64(100) + i32(5) + string("m") + i64(1000),
            '{"version":"3","data":{"offset":100,"leaderEpoch":5,"metadata":"m",'
            '"commitTimestamp":1000}}',
        ),
        (
            i16(4) + i64(100) + i32(-1) + cstring("m") + i64(1000) + tags(),
            '{"version":"4","data":{"offset":100,"leaderEpoch":-1,"metadata":"m",'
            '"commitTimestamp":1000}}',
        ),
        (  # a tagged field this schema does not know is skipped, as Kafka skips it
            i16(4) + i64(7) + i32(2) + cstring("") + i64(9) + tags((9, b"\x01\x02\x03")),
            '{"version":"4","data":{"offset":7,"leaderEpoch":2,"metadata":"","commitTimestamp":9}}',
        ),
    ],
    ids=["v0", "v1", "v2", "v3", "v4", "v4-unknown-tag"],
)
def test_offset_commit_values_of_every_version(value: bytes, expected: str) -> None:
    key, payload = texts(offsets_parser(record(OFFSET_KEY, value)))
    assert key == '{"type":"1","data":{"group":"group","topic":"topic","partition":3}}'
    assert payload == expected


def test_legacy_offset_commit_record_type_0() -> None:
    key = i16(0) + string("g") + string("t") + i32(0)
    value = i16(0) + i64(5) + string("") + i64(6)
    assert texts(offsets_parser(record(key, value))) == (
        '{"type":"0","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"0","data":{"offset":5,"metadata":"","commitTimestamp":6}}',
    )


def test_schema_strings_decode_as_java_decodes_them() -> None:
    """Readable.readString is new String(bytes, UTF_8): an encoded surrogate (ED A0 80) is one
    U+FFFD, not Python's three (issue 29.3)."""
    group = b"g\xed\xa0\x80"
    key = i16(0) + i16(len(group)) + group + string("t") + i32(0)
    value = i16(0) + i64(5) + string("") + i64(6)
    shown, _ = texts(offsets_parser(record(key, value)))
    assert shown == '{"type":"0","data":{"group":"g\ufffd","topic":"t","partition":0}}'


def test_tombstone_prints_delete() -> None:
    key, payload = texts(offsets_parser(record(OFFSET_KEY, None)))
    assert key is not None and payload == DELETE == "<DELETE>"


def subscription_v3() -> bytes:
    """ConsumerProtocolSubscription v3 (non-flexible): topics, userData, ownedPartitions,
    generationId, rackId."""
    owned = string("foo") + array([i32(0)])
    return i16(3) + array([string("foo")]) + blob(None) + array([owned]) + i32(0) + string("rack")


def assignment_v3() -> bytes:
    return i16(3) + array([string("foo") + array([i32(0)])]) + blob(None)


def group_metadata_v4(subscription: bytes, protocol_type: str = "consumer") -> bytes:
    member = (
        cstring("member")
        + cstring(None)  # groupInstanceId, v3+
        + cstring("client")
        + cstring("/127.0.0.1")
        + i32(300000)  # rebalanceTimeout, v1+
        + i32(45000)
        + cblob(subscription)
        + cblob(assignment_v3())
        + tags()
    )
    return (
        i16(4)
        + cstring(protocol_type)
        + i32(10)
        + cstring("range")
        + cstring("member")
        + i64(-1)
        + carray([member])
        + tags()
    )


def test_group_metadata_members_get_their_consumer_protocol_decoded() -> None:
    """DumpLogSegmentsTest's expected subscription/assignment JSON (dumplog.md §8)."""
    key, payload = texts(
        offsets_parser(record(i16(2) + string("group"), group_metadata_v4(subscription_v3())))
    )
    assert key == '{"type":"2","data":{"group":"group"}}'
    assert payload == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":null,"clientId":"client","clientHost":"/127.0.0.1",'
        '"rebalanceTimeout":300000,"sessionTimeout":45000,'
        '"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":[{"topic":"foo",'
        '"partitions":[0]}],"generationId":0,"rackId":"rack"},'
        '"assignment":{"assignedPartitions":[{"topic":"foo","partitions":[0]}],"userData":null}}]}}'
    )


def test_subscription_that_does_not_read_stays_base64() -> None:
    _, payload = offsets_parser(record(i16(2) + string("g"), group_metadata_v4(b"Subscription")))
    assert isinstance(payload, dict)
    member = payload["data"]["members"][0]
    assert member["subscription"] == "U3Vic2NyaXB0aW9u"  # the bytes, as Kafka keeps them
    assert member["assignment"]["assignedPartitions"] == [{"topic": "foo", "partitions": [0]}]


def test_only_the_consumer_protocol_is_decoded() -> None:
    _, payload = offsets_parser(
        record(i16(2) + string("g"), group_metadata_v4(subscription_v3(), "connect"))
    )
    assert isinstance(payload, dict)
    member = payload["data"]["members"][0]
    assert member["subscription"] == base64.b64encode(subscription_v3()).decode()
    assert member["assignment"] == base64.b64encode(assignment_v3()).decode()


def test_group_metadata_v0_has_no_later_fields() -> None:
    member = string("m") + string("c") + string("h") + i32(10000) + blob(b"\x00\x00") + blob(b"")
    value = i16(0) + string("consumer") + i32(1) + string(None) + string(None) + array([member])
    _, payload = texts(offsets_parser(record(i16(2) + string("g"), value)))
    assert payload == (
        '{"version":"0","data":{"protocolType":"consumer","generation":1,"protocol":null,'
        '"leader":null,"members":[{"memberId":"m","clientId":"c","clientHost":"h",'
        '"sessionTimeout":10000,"subscription":"AAA=","assignment":""}]}}'
    )


def test_consumer_group_records_are_named_by_type() -> None:
    assert texts(offsets_parser(record(i16(3) + string("group"), i16(0) + i32(7) + tags()))) == (
        '{"type":"3","data":{"groupId":"group"}}',
        '{"version":"0","data":{"epoch":7}}',
    )


def test_consumer_group_member_with_tagged_classic_metadata() -> None:
    classic = i32(45000) + carray([cstring("range") + cblob(b"\x01") + tags()]) + tags()
    value = (
        i16(0)
        + cstring(None)
        + cstring("rack-a")
        + cstring("client")
        + cstring("host")
        + carray([cstring("foo")])
        + cstring(None)
        + i32(-1)
        + cstring("uniform")
        + tags((0, uvarint(1) + classic))  # nullable struct: a marker, then the struct
    )
    key = i16(5) + string("g") + string("m")
    assert texts(offsets_parser(record(key, value)))[1] == (
        '{"version":"0","data":{"instanceId":null,"rackId":"rack-a","clientId":"client",'
        '"clientHost":"host","subscribedTopicNames":["foo"],"subscribedTopicRegex":null,'
        '"rebalanceTimeoutMs":-1,"serverAssignor":"uniform","classicMemberMetadata":'
        '{"sessionTimeoutMs":45000,"supportedProtocols":[{"name":"range","metadata":"AQ=="}]}}}'
    )
    # Without the tag the field is its default and is not printed.
    plain = value[: value.rindex(b"uniform") + len(b"uniform")] + tags()
    assert '"classicMemberMetadata"' not in texts(offsets_parser(record(key, plain)))[1]


def test_share_and_streams_group_keys() -> None:
    for record_type in (11, 17):
        key, _ = texts(offsets_parser(record(i16(record_type) + string("g"), None)))
        assert key == f'{{"type":"{record_type}","data":{{"groupId":"g"}}}}'


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (i16(99) + string("g"), None, "Unknown record type 99 at offset 7, skipping."),
        (b"\x00", None, "Error at offset 7, skipping. Could not read version from key's buffer."),
        (
            OFFSET_KEY,
            b"\x00",
            "Error at offset 7, skipping. Could not read version from value's buffer.",
        ),
        (
            OFFSET_KEY,
            i16(0) + i64(1) + i16(100) + b"x",
            "Error at offset 7, skipping. Could not read record with version 0 from value's "
            "buffer due to: Error reading byte array of 100 byte(s): only 1 byte(s) available.",
        ),
        (
            OFFSET_KEY,
            i16(0) + i64(1),
            "Error at offset 7, skipping. Could not read record with version 0 from value's "
            "buffer due to: null.",
        ),
        (
            i16(1) + string("g"),
            None,
            "Error at offset 7, skipping. Could not read record with version 1 from key's "
            "buffer due to: null.",
        ),
        (
            None,
            b"",
            "Failed to decode message at offset 7 using the specified decoder (message had a "
            "missing key)",
        ),
    ],
    ids=[
        "unknown-type",
        "short-key",
        "short-value",
        "string-past-end",
        "underflow",
        "short-key-body",
        "missing-key",
    ],
)
def test_coordinator_errors_are_kafkas_texts(
    key: bytes | None, value: bytes | None, expected: str
) -> None:
    assert texts(offsets_parser(record(key, value, offset=7))) == (expected, None)


# --- __transaction_state ----------------------------------------------------------------------


def test_transaction_log_v0_as_dump_log_segments_test_expects() -> None:
    """Kafka up to 4.3 prints the state's id; 4.4 (the default) its TransactionState name."""
    value = i16(0) + i64(123) + i16(0) + i32(0) + i8(0) + array([]) + i64(0) + i64(0)
    old = transaction_log_parser_for(Release(4, 3))
    assert texts(old(record(i16(0) + string("txnId"), value))) == (
        '{"type":"0","data":{"transactionalId":"txnId"}}',
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,'
        '"transactionStatus":0,"transactionPartitions":[],"transactionLastUpdateTimestampMs":0,'
        '"transactionStartTimestampMs":0}}',
    )
    assert texts(transaction_log_parser(record(i16(0) + string("txnId"), value)))[1] == (
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,'
        '"transactionStatus":"Empty","transactionPartitions":[],'
        '"transactionLastUpdateTimestampMs":0,"transactionStartTimestampMs":0}}'
    )


@pytest.mark.parametrize(
    ("status", "name"),
    [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ],
)
def test_transaction_states_by_name_as_kafka_4_4_prints_them(status: int, name: str) -> None:
    value = i16(0) + i64(1) + i16(0) + i32(60000) + i8(status) + array(None) + i64(2) + i64(-1)
    _, payload = transaction_log_parser(record(i16(0) + string("t"), value))
    assert isinstance(payload, dict) and payload["data"]["transactionStatus"] == name


@pytest.mark.parametrize("status", [9, -1])
def test_unknown_transaction_state_prints_its_id_as_a_string(status: int) -> None:
    """KAFKA-20712 (4.4): fromId's IllegalStateException is caught, String.valueOf(id) put."""
    value = i16(0) + i64(1) + i16(0) + i32(60000) + i8(status) + array(None) + i64(2) + i64(-1)
    key, payload = texts(transaction_log_parser(record(i16(0) + string("t"), value, offset=3)))
    assert key == '{"type":"0","data":{"transactionalId":"t"}}'
    assert payload is not None and f'"transactionStatus":"{status}",' in payload
    old = transaction_log_parser_for(Release(4, 3))(record(i16(0) + string("t"), value))
    assert isinstance(old.value, dict) and old.value["data"]["transactionStatus"] == status


def test_transaction_log_v1_with_tagged_producer_ids() -> None:
    partitions = carray(
        [
            cstring("topic1") + carray([i32(0), i32(1), i32(2)]) + tags(),
            cstring("topic2") + carray([i32(3), i32(4), i32(5)]) + tags(),
        ]
    )
    value = (
        i16(1)
        + i64(12)
        + i16(2)
        + i32(14)
        + i8(0)
        + partitions
        + i64(123)
        + i64(13)
        + tags((0, i64(11)), (1, i64(10)))
    )
    assert texts(transaction_log_parser(record(i16(0) + string("t"), value)))[1] == (
        '{"version":"1","data":{"producerId":12,"previousProducerId":11,"nextProducerId":10,'
        '"producerEpoch":2,"transactionTimeoutMs":14,"transactionStatus":"Empty",'
        '"transactionPartitions":[{"topic":"topic1","partitionIds":[0,1,2]},'
        '{"topic":"topic2","partitionIds":[3,4,5]}],"transactionLastUpdateTimestampMs":123,'
        '"transactionStartTimestampMs":13}}'
    )


def test_transaction_log_knows_only_record_type_0() -> None:
    assert texts(transaction_log_parser(record(i16(1) + string("t"), None))) == (
        "Unknown record type 1 at offset 0, skipping.",
        None,
    )


def test_transaction_log_null_partitions() -> None:
    value = i16(0) + i64(1) + i16(0) + i32(60000) + i8(4) + array(None) + i64(2) + i64(-1)
    _, payload = transaction_log_parser(record(i16(0) + string("t"), value))
    assert isinstance(payload, dict)
    assert payload["data"]["transactionPartitions"] is None
    assert payload["data"]["transactionStatus"] == "CompleteCommit"


# --- __cluster_metadata -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            frame(2, 0, cstring("foo") + uuid(TOPIC_ID) + tags()),
            '{"type":"TOPIC_RECORD","version":0,"data":{"name":"foo","topicId":"@ID"}}',
        ),
        (
            frame(
                3,
                0,
                i32(1)
                + uuid(TOPIC_ID)
                + carray([i32(1), i32(2)])
                + carray([i32(1)])
                + carray([])
                + carray([])
                + i32(1)
                + i32(4)
                + i32(5)
                + tags((0, i8(1))),
            ),
            '{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":1,"topicId":"@ID",'
            '"replicas":[1,2],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,'
            '"leaderRecoveryState":1,"leaderEpoch":4,"partitionEpoch":5}}',
        ),
        (
            frame(
                3,
                2,
                i32(0)
                + uuid(TOPIC_ID)
                + carray([i32(1)])
                + carray([i32(1)])
                + carray([])
                + carray([])
                + i32(1)
                + i32(0)
                + i32(0)
                + carray([uuid("AAAAAAAAAAAAAAAAAAAAAQ")])
                + tags((1, carray([i32(2)])), (2, carray(None))),
            ),
            '{"type":"PARTITION_RECORD","version":2,"data":{"partitionId":0,"topicId":"@ID",'
            '"replicas":[1],"isr":[1],"removingReplicas":[],"addingReplicas":[],"leader":1,'
            '"leaderEpoch":0,"partitionEpoch":0,"directories":["AAAAAAAAAAAAAAAAAAAAAQ"],'
            '"eligibleLeaderReplicas":[2]}}',
        ),
        (
            frame(5, 0, i32(0) + uuid(TOPIC_ID) + tags((0, carray([i32(1)])), (1, i32(-1)))),
            '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
            '"topicId":"@ID","isr":[1],"leader":-1}}',
        ),
        (
            frame(
                0,
                1,
                i32(3)
                + uuid(TOPIC_ID)
                + i64(12)
                + carray([cstring("PLAINTEXT") + cstring("h") + u16(9092) + i16(0) + tags()])
                + carray([cstring("metadata.version") + i16(1) + i16(7) + tags()])
                + cstring(None)
                + i8(1)
                + i8(0)
                + tags(),
            ),
            '{"type":"REGISTER_BROKER_RECORD","version":1,"data":{"brokerId":3,'
            '"incarnationId":"@ID","brokerEpoch":12,"endPoints":[{"name":"PLAINTEXT","host":"h",'
            '"port":9092,"securityProtocol":0}],"features":[{"name":"metadata.version",'
            '"minSupportedVersion":1,"maxSupportedVersion":7}],"rack":null,"fenced":true,'
            '"inControlledShutdown":false}}',
        ),
        (
            frame(1, 0, i32(3) + i64(12) + tags()),
            '{"type":"UNREGISTER_BROKER_RECORD","version":0,"data":{"brokerId":3,"brokerEpoch":12}}',
        ),
        (
            frame(7, 0, i32(3) + i64(12) + tags()),
            '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":3,"epoch":12}}',
        ),
        (
            frame(8, 0, i32(3) + i64(12) + tags()),
            '{"type":"UNFENCE_BROKER_RECORD","version":0,"data":{"id":3,"epoch":12}}',
        ),
        (
            frame(12, 0, cstring("metadata.version") + i16(21) + tags()),
            '{"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
            '"featureLevel":21}}',
        ),
        (
            frame(
                4, 0, i8(2) + cstring("foo") + cstring("cleanup.policy") + cstring(None) + tags()
            ),
            '{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"foo",'
            '"name":"cleanup.policy","value":null}}',
        ),
        (
            frame(15, 0, i32(1) + i64(5) + i64(4000) + tags()),
            '{"type":"PRODUCER_IDS_RECORD","version":0,"data":{"brokerId":1,"brokerEpoch":5,'
            '"nextProducerId":4000}}',
        ),
        (frame(20, 0, tags()), '{"type":"NO_OP_RECORD","version":0,"data":{}}'),
        (
            frame(9, 0, uuid(TOPIC_ID) + tags()),
            '{"type":"REMOVE_TOPIC_RECORD","version":0,"data":{"topicId":"@ID"}}',
        ),
    ],
    ids=[
        "topic",
        "partition-v0",
        "partition-v2-elr",
        "partition-change",
        "register-broker",
        "unregister-broker",
        "fence",
        "unfence",
        "feature-level",
        "config",
        "producer-ids",
        "no-op",
        "remove-topic",
    ],
)
def test_metadata_records(value: bytes, expected: str) -> None:
    expected = expected.replace("@ID", TOPIC_ID)
    assert texts(cluster_metadata_parser(record(b"ignored key", value))) == (None, expected)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (frame(2, 0, cstring("foo")), "Failed to deserialize record with type 2"),
        (frame(20, 0, tags()) + b"\x00\x00", "Found 2 byte(s) of garbage after 20"),
        (
            uvarint(0) + uvarint(2),
            "Could not deserialize metadata record with frame version 0. Note that upgrades "
            "from the preview release of KRaft in 2.8 to newer versions are not supported.",
        ),
        (
            uvarint(2) + uvarint(2),
            "Could not deserialize metadata record due to unknown frame version 2(only frame "
            "version 1 is supported)",
        ),
        (b"", "Error while reading frame version"),
        (None, "Error while reading frame version"),
        (uvarint(1), "Error while reading type"),
        (uvarint(1) + uvarint(2), "Error while reading version"),
        (uvarint(1) + uvarint(40000), "Value for type was too large."),
        (b"\xff\xff\xff\xff\xff", "Error while reading frame version"),
    ],
    ids=[
        "short",
        "garbage",
        "frame-0",
        "frame-2",
        "empty",
        "null",
        "no-type",
        "no-version",
        "type-too-large",
        "varint-too-long",
    ],
)
def test_metadata_errors_are_kafkas_texts(value: bytes | None, message: str) -> None:
    assert texts(cluster_metadata_parser(record(None, value, offset=42))) == (
        None,
        f"Error at 42, skipping. {message}",
    )


# --- KRaft control records --------------------------------------------------------------------


def control(control_type: int, value: bytes | None, offset: int = 0) -> str | None:
    decoded = decode_control_record(control_type, record(i16(0) + i16(control_type), value, offset))
    return None if decoded is None else decoded.text()


def test_control_records_as_print_control_record_prints_them() -> None:
    voter = (
        i32(1)
        + uuid(TOPIC_ID)
        + carray([cstring("CONTROLLER") + cstring("localhost") + u16(9093) + tags()])
        + (i16(0) + i16(1) + tags())
        + tags()
    )
    assert control(5, i16(0) + i16(1) + tags()) == ' KRaftVersion {"version":0,"kRaftVersion":1}'
    assert control(3, i16(0) + i64(10000) + tags()) == (
        ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":10000}'
    )
    assert control(4, i16(0) + tags()) == ' SnapshotFooter {"version":0}'
    assert control(6, i16(0) + carray([voter]) + tags()) == with_id(
        ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"@ID",'
        '"endpoints":[{"name":"CONTROLLER","host":"localhost","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )
    voters = carray([i32(1) + tags(), i32(2) + tags()])
    assert control(2, i16(0) + i32(1) + voters + carray([i32(1) + tags()]) + tags()) == (
        ' LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1},{"voterId":2}],'
        '"grantingVoters":[{"voterId":1}]}'
    )
    assert control(0, i16(0) + i32(0)) is None  # end-transaction markers are dumplog's
    assert control(7, b"") is None


def test_control_record_that_does_not_read_is_reported_on_the_record() -> None:
    assert control(5, i16(0), offset=3) == " KRaftVersion Error at offset 3: null"
    assert control(4, None, offset=3) == " SnapshotFooter Error at offset 3: the value is null"


# --- the generic reader -----------------------------------------------------------------------


def test_version_checks_are_the_generators() -> None:
    # A field "3+" in a message valid for 0-4: tested as version >= 3.
    assert version_check(Versions(3, 0x7FFF), Versions(0, 4), 2)[0] is False
    assert version_check(Versions(3, 0x7FFF), Versions(0, 4), 9)[0] is True
    # A field "0-3" in a message valid for 0-3 is read at any version: no check was generated.
    assert version_check(Versions(0, 3), Versions(0, 3), 9)[0] is True
    # "1" in 0-4 is a full range check.
    assert [version_check(Versions(1, 1), Versions(0, 4), v)[0] for v in (0, 1, 2)] == [
        False,
        True,
        False,
    ]
    assert version_check(messages.NONE, Versions(0, 4), 1)[0] is False


def test_reader_errors_carry_the_java_messages() -> None:
    sub = i16(9) + array([string("foo")]) + blob(None) + array([string("t") + array([])])
    spec = clients.CONSUMER_PROTOCOL_SUBSCRIPTION
    r = Readable(sub)
    version = r.read_short()
    with pytest.raises(MessageError, match=r"^Can't read version 9 of TopicPartition$"):
        messages.read_message(spec, r, version)
    with pytest.raises(MessageError, match="non-nullable field topics was serialized as null"):
        messages.read_message(spec, Readable(array(None)), 0)
    with pytest.raises(MessageError, match=r"^non-nullable field topics element was serialized"):
        messages.read_message(spec, Readable(array([i16(-2)]) + blob(None)), 0)
    with pytest.raises(MessageError, match=r"^string field name had invalid length 40000$"):
        messages.read_message(metadata.TOPIC_RECORD, Readable(uvarint(40001)), 0)
    with pytest.raises(MessageError, match="Tried to allocate a collection of size 1000, but"):
        messages.read_message(spec, Readable(i32(1000)), 0)
    with pytest.raises(MessageError, match="converted value: "):
        Readable(b"\xff\xff\xff\xff\xff").read_unsigned_varint()
    assert Readable(b"\xff\xff\xff\xff\x0f").read_unsigned_varint() == -1  # a Java int


def test_tag_not_valid_for_version() -> None:
    spec = metadata.PARTITION_CHANGE_RECORD
    body = i32(0) + uuid(TOPIC_ID) + tags((8, carray([])))  # Directories is tagged from v1
    with pytest.raises(MessageError, match=r"^Tag 8 is not valid for version 0$"):
        messages.read_message(spec, Readable(body), 0)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (100.5, "100.5"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (-0.0, "-0.0"),
        (1048576.0, "1048576.0"),
    ],
)
def test_doubles_print_as_java_does(value: float, text: str) -> None:
    assert messages.java_double(value) == text


def test_jackson_escapes() -> None:
    assert jackson({"a": 'q"\\\n\t\x01é/'}) == '{"a":"q\\"\\\\\\n\\t\\u0001é/"}'
    assert jackson([True, None, 2, 1.5]) == "[true,null,2,1.5]"


# --- the genuine broker directories -----------------------------------------------------------


def real_logs(topic: str) -> list[Path]:
    return sorted(p for p in REALFILES.rglob(f"{topic}-*/*.log") if p.stat().st_size)


def records_of(path: Path) -> Iterator[tuple[Record, bool]]:
    log = open_log_file(path)
    for batch in log.batches():
        for r in log.records(batch):
            yield r, batch.is_control


@pytest.mark.parametrize("path", real_logs("__consumer_offsets"), ids=lambda p: str(p.parent))
def test_every_real_consumer_offsets_record_decodes(path: Path) -> None:
    for r, _ in records_of(path):
        key, value = offsets_parser(r)
        assert isinstance(key, dict), (r.offset, key)
        assert isinstance(value, dict) or (value == DELETE and r.value is None), (r.offset, value)
        if key["type"] == "1" and isinstance(value, dict):
            # The coordinator stamps the commit just before it appends the record.
            assert 0 <= r.timestamp - value["data"]["commitTimestamp"] < 1000
        if key["type"] == "2" and isinstance(value, dict):
            for member in value["data"]["members"]:
                if value["data"]["protocolType"] == "consumer":
                    assert isinstance(member["subscription"], dict)
                    assert isinstance(member["assignment"], dict)


def test_real_commits_stay_within_the_high_watermark() -> None:
    base = REALFILES / "nomanazeem__Kafka-java" / "kafka-logs"
    watermarks = {
        (e.topic, e.partition): e.offset
        for e in read_offset_checkpoint((base / "replication-offset-checkpoint").read_bytes())
    }
    commits = 0
    for r, _ in records_of(base / "__consumer_offsets-15" / "00000000000000000000.log"):
        key, value = offsets_parser(r)
        if isinstance(key, dict) and key["type"] == "1" and isinstance(value, dict):
            tp = (key["data"]["topic"], key["data"]["partition"])
            assert 0 <= value["data"]["offset"] <= watermarks[tp]
            commits += 1
    assert commits == 252


@pytest.mark.parametrize(
    "path",
    real_logs("__cluster_metadata") + sorted(REALFILES.rglob("*.checkpoint")),
    ids=lambda p: str(p.relative_to(REALFILES)),
)
def test_every_real_metadata_record_decodes(path: Path) -> None:
    log_dir = path.parent if path.suffix == ".checkpoint" else path.parent.parent
    meta = read_meta_properties((log_dir / "meta.properties").read_bytes())
    for r, is_control in records_of(path):
        if is_control:
            key = control_record_key(r)
            assert key is not None
            decoded = decode_control_record(key.type, r)
            assert decoded is not None and decoded.error is None, (r.offset, decoded)
            continue
        payload = parse_metadata_record(r.value)
        assert "data" in payload, (r.offset, payload)
        data = payload["data"]
        if payload["type"] == "TOPIC_RECORD":
            # The topic id partition.metadata carries, written by the same broker.
            topic_dirs = sorted(log_dir.glob(f"{data['name']}-*/partition.metadata"))
            for metadata_file in topic_dirs:
                assert f"topic_id: {data['topicId']}" in metadata_file.read_text()
        if payload["type"] == "REGISTER_BROKER_RECORD" and meta.node_id is not None:
            assert data["brokerId"] == meta.node_id
        if payload["type"] == "PARTITION_RECORD" and "directories" in data:
            assert data["directories"] == [meta.directory_id] * len(data["replicas"])


def test_real_topic_ids_were_cross_checked() -> None:
    """The partition.metadata comparison above is not vacuous."""
    base = REALFILES / "13LAckHEart__kafka" / "data" / "kafka"
    names = [
        p["data"]["name"]
        for r, c in records_of(base / "__cluster_metadata-0" / "00000000000000000000.log")
        if not c and (p := parse_metadata_record(r.value))["type"] == "TOPIC_RECORD"
    ]
    assert names == ["test-topic"]
    assert (base / "test-topic-0" / "partition.metadata").exists()


def kdump_out(*args: str) -> list[str]:
    ran = run_kdump(list(args), cwd=REPO)
    assert ran.exit_code == 0, ran.stderr
    assert ran.stderr == ""
    return ran.stdout.splitlines()


REAL = "fixtures/realfiles"
FIRST = "00000000000000000000.log"
NOMANAZEEM = f"{REAL}/nomanazeem__Kafka-java/kafka-logs"
DANIEL_OFFSETS_7 = f"{REAL}/DanielMorales9__kafkafun/data/kafka/__consumer_offsets-7/{FIRST}"
CHRISTSENG_METADATA = (
    f"{REAL}/christseng89__RealTime_Analysis/kafka-logs/__cluster_metadata-0/{FIRST}"
)


def test_golden_bootstrap_snapshot() -> None:
    path = f"{NOMANAZEEM}/bootstrap.checkpoint"
    out = kdump_out("--files", path, "--cluster-metadata-decoder", "--skip-record-metadata")
    assert out[:2] == [f"Dumping {path}", "KRaft bootstrap snapshot"]
    records = [line for line in out if line.startswith("|") or not line]
    assert records == [
        "",  # the SnapshotHeader control record: metadata skipped, nothing else printed
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":'
        '"metadata.version","featureLevel":29}}',
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":'
        '"eligible.leader.replicas.version","featureLevel":1}}',
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"group.version",'
        '"featureLevel":1}}',
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"share.version",'
        '"featureLevel":1}}',
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":'
        '"streams.version","featureLevel":1}}',
        '| payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":'
        '"transaction.version","featureLevel":2}}',
        "",  # the SnapshotFooter
    ]


def test_golden_snapshot_control_records_in_plain_deep_iteration() -> None:
    """printControlRecord decodes KRaft control records whatever the decoder."""
    path = f"{NOMANAZEEM}/bootstrap.checkpoint"
    out = kdump_out("--files", path, "--deep-iteration")
    assert out[3] == (
        "| offset: 0 CreateTime: 1779275436169 keySize: 4 valueSize: 11 sequence: -1 "
        'headerKeys: [] SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}'
    )
    assert out[-1] == (
        "| offset: 7 CreateTime: 1779275436227 keySize: 4 valueSize: 3 sequence: -1 "
        'headerKeys: [] SnapshotFooter {"version":0}'
    )


def test_golden_cluster_metadata_lines() -> None:
    path = f"{REAL}/13LAckHEart__kafka/data/kafka/__cluster_metadata-0/{FIRST}"
    out = kdump_out("--files", path, "--cluster-metadata-decoder")
    assert out[3] == (
        "| offset: 0 CreateTime: 1725786572072 keySize: 4 valueSize: 19 sequence: -1 "
        'headerKeys: [] LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],'
        '"grantingVoters":[{"voterId":1}]}'
    )
    wanted = {
        38: '{"type":"TOPIC_RECORD","version":0,"data":{"name":"test-topic",'
        '"topicId":"nZVx63Q8SpqAECDuXUqSOw"}}',
        39: '{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":0,'
        '"topicId":"nZVx63Q8SpqAECDuXUqSOw","replicas":[1],"isr":[1],"removingReplicas":[],'
        '"addingReplicas":[],"leader":1,"leaderEpoch":0,"partitionEpoch":0}}',
        910: '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
        '"topicId":"nZVx63Q8SpqAECDuXUqSOw","leader":-1}}',
    }
    found = {}
    for line in out:
        m = re.match(r"\| offset: (\d+) .* headerKeys: \[\] payload: (.*)$", line)
        if m and int(m[1]) in wanted:
            found[int(m[1])] = m[2]
    assert found == wanted


def test_golden_consumer_offsets_lines() -> None:
    path = (
        f"{REAL}/nomanazeem__Kafka-java/kafka-logs/__consumer_offsets-15/00000000000000000000.log"
    )
    out = kdump_out("--files", path, "--offsets-decoder")
    assert out[5] == (
        "| offset: 1 CreateTime: 1779275925650 keySize: 14 valueSize: 281 sequence: 0 "
        'headerKeys: [] key: {"type":"2","data":{"group":"demo-group"}} payload: '
        '{"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range",'
        '"leader":"consumer-demo-group-1-e7eb8c0a-db96-4153-8483-c02511a843ad",'
        '"currentStateTimestamp":1779275925640,"members":[{"memberId":'
        '"consumer-demo-group-1-e7eb8c0a-db96-4153-8483-c02511a843ad","groupInstanceId":null,'
        '"clientId":"consumer-demo-group-1","clientHost":"/192.168.65.1",'
        '"rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":'
        '["demo-topic"],"userData":null,"ownedPartitions":[],"generationId":-1,"rackId":null},'
        '"assignment":{"assignedPartitions":[{"topic":"demo-topic","partitions":[0,1,2]}],'
        '"userData":null}}]}}'
    )
    assert out[7].endswith(
        'key: {"type":"1","data":{"group":"demo-group","topic":"demo-topic","partition":2}} '
        'payload: {"version":"4","data":{"offset":0,"leaderEpoch":-1,"metadata":"",'
        '"commitTimestamp":1779275930663}}'
    )


def test_golden_tombstone_and_old_versions() -> None:
    path = (
        f"{REAL}/DanielMorales9__kafkafun/data/kafka/__consumer_offsets-7/00000000000000000000.log"
    )
    out = kdump_out("--files", path, "--offsets-decoder", "--skip-record-metadata")
    assert out[-1] == (
        '| key: {"type":"2","data":{"group":"console-consumer-48987"}} payload: <DELETE>'
    )
    path = f"{REAL}/anchor123__kafka/tmp/kafka-logs/__consumer_offsets-21/{FIRST}"
    out = kdump_out("--files", path, "--offsets-decoder", "--skip-record-metadata")
    assert out[3] == (
        '| key: {"type":"2","data":{"group":"console-consumer-27984"}} payload: {"version":"1",'
        '"data":{"protocolType":"consumer","generation":1,"protocol":"range","leader":'
        '"consumer-1-58b92483-6a29-4d36-8949-ffa48bc07142","members":[{"memberId":'
        '"consumer-1-58b92483-6a29-4d36-8949-ffa48bc07142","clientId":"consumer-1",'
        '"clientHost":"/127.0.0.1","rebalanceTimeout":300000,"sessionTimeout":10000,'
        '"subscription":{"topics":["test"],"userData":""},"assignment":{"assignedPartitions":'
        '[{"topic":"test","partitions":[0]}],"userData":""}}]}}'
    )
    assert '{"version":"1","data":{"offset":' in out[5]


# --- options and renderers --------------------------------------------------------------------


def test_decoder_options_imply_print_data_log_and_keep_kafkas_precedence() -> None:
    path = CHRISTSENG_METADATA
    metadata = kdump_out("--files", path, "--cluster-metadata-decoder")
    assert 'payload: {"type":"BEGIN_TRANSACTION_RECORD"' in metadata[5]
    # --offsets-decoder wins over --cluster-metadata-decoder: metadata records have no key.
    both = kdump_out("--files", path, "--cluster-metadata-decoder", "--offsets-decoder")
    assert both[5].endswith(
        "headerKeys: [] key: Failed to decode message at offset 1 using the specified decoder "
        "(message had a missing key)"
    )
    assert kdump_out("dump", path, "--transaction-log-decoder")[5].endswith(
        "key: Failed to decode message at offset 1 using the specified decoder "
        "(message had a missing key)"
    )


def kdump_jsonl(*args: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in kdump_out("dump", "--format", "jsonl", *args)]


def test_jsonl_carries_real_json_objects() -> None:
    records = [
        o for o in kdump_jsonl("--offsets-decoder", DANIEL_OFFSETS_7) if o["type"] == "record"
    ]
    assert records[0]["key"] == {"type": "2", "data": {"group": "console-consumer-48987"}}
    assert records[0]["value"]["version"] == "3"  # type: ignore[index]
    assert records[-1]["value"] is None  # the tombstone
    # the rendering named by its option (issue 29.1); a tombstone's value has none
    assert (records[0]["key_encoding"], records[0]["value_encoding"]) == ("offsets", "offsets")
    assert records[-1]["value_encoding"] is None
    objs = kdump_jsonl("--deep-iteration", CHRISTSENG_METADATA)
    controls = [o["control"] for o in objs if o.get("control_type") == "LEADER_CHANGE"]
    assert controls[0] == {
        "version": 0,
        "leaderId": 1,
        "voters": [{"voterId": 1}],
        "grantingVoters": [{"voterId": 1}],
    }


def write_control_and_data_log(path: Path) -> None:
    """A .log with a KRaft control batch (KRaftVersion) and a data batch of metadata records."""

    def v2_record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
        def zz(n: int) -> bytes:
            return uvarint((n << 1) ^ (n >> 63))

        body = b"\x00" + zz(0) + zz(offset_delta)
        body += zz(-1) if key is None else zz(len(key)) + key
        body += zz(-1) if value is None else zz(len(value)) + value
        body += zz(0)
        return zz(len(body)) + body

    control_batch = bytearray(v2_batch(0, v2_record(0, i16(0) + i16(5), i16(0) + i16(1) + tags())))
    control_batch[21:23] = i16(0x20)  # the control bit
    fix_crc(control_batch, 0)
    data = v2_record(0, None, frame(2, 0, cstring("foo") + uuid(TOPIC_ID) + tags()))
    data += v2_record(1, None, frame(2, 0, b"\x05"))
    path.write_bytes(bytes(control_batch) + v2_batch(1, data, records_count=2, last_offset_delta=1))


def test_a_bad_record_does_not_stop_the_dump(tmp_path: Path) -> None:
    log = tmp_path / "00000000000000000000.log"
    write_control_and_data_log(log)
    ran = run_kdump(["--files", str(log), "--cluster-metadata-decoder"])
    lines = ran.stdout.splitlines()
    assert ran.exit_code == 0 and ran.stderr == ""
    assert lines[3].endswith('headerKeys: [] KRaftVersion {"version":0,"kRaftVersion":1}')
    assert lines[5].endswith(
        with_id(
            'payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"foo","topicId":"@ID"}}'
        )
    )
    assert lines[6].endswith(
        "payload: Error at 2, skipping. Failed to deserialize record with type 2"
    )


def test_kraft_snapshot_checkpoint_is_dumped_as_a_log(tmp_path: Path) -> None:
    """A metadata snapshot, ``<end offset>-<epoch>.checkpoint``, found in a partition directory."""
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    bootstrap = REPO / NOMANAZEEM / "bootstrap.checkpoint"
    snapshot = partition / "00000000000000000008-0000000001.checkpoint"
    snapshot.write_bytes(bootstrap.read_bytes())
    ran = run_kdump(["dump", str(partition), "--cluster-metadata-decoder"])
    lines = ran.stdout.splitlines()
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert lines[:2] == [f"Dumping {snapshot}", "Snapshot end offset: 8, epoch: 1"]
    assert lines[3].endswith('SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}')
    assert lines[-1].endswith('SnapshotFooter {"version":0}')
    assert sum('"type":"FEATURE_LEVEL_RECORD"' in line for line in lines) == 6
