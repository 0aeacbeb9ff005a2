"""Write segments of Kafka's internal topics as Kafka 4.1-4.4 brokers write them.

No genuine broker directory written by Kafka >= 4.1 with share groups, streams groups,
``__share_group_state`` or ``__remote_log_metadata`` was found in public repositories (see
fixtures/internal/README.md), so these are generated:

- the record batches by kafka-python's ``DefaultRecordBatchBuilder`` (another client's writer;
  the control bit of KRaft control batches and the base offsets patched as
  scripts/make_fixtures.py documents);
- the keys and values by the small encoder below, written from the message layout rules
  (big-endian fixed types, unsigned varints, compact strings, bytes and arrays with length + 1,
  a tagged-field section ending every flexible struct) and from each schema's field list as
  Kafka's JSON spec gives it. It shares no code with kdump's reader, and is not kdump's schema
  tables run backwards: every record below is spelled out field by field.

Regenerate (from the repository root; the script owns fixtures/internal/*/ segments)::

    python scripts/make_internal_fixtures.py
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "fixtures" / "internal"
T0 = 1_780_000_000_000  # 2026-05-28
TOPIC_ID = "Tu7n0QQ9RK2fVzZ5cS8fXw"
SEGMENT_ID = "s3gM3ntIdAAAAAAAAAAAAQ"
DIR_A = "AAAAAAAAAAAAAAAAAAAAAg"
DIR_B = "AAAAAAAAAAAAAAAAAAAAAw"

# --------------------------------------------------------------------------- primitives


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


def boolean(v: bool) -> bytes:
    return b"\x01" if v else b"\x00"


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def string(s: str) -> bytes:
    """A non-flexible string: int16 length."""
    raw = s.encode()
    return i16(len(raw)) + raw


def cstring(s: str | None) -> bytes:
    """A compact (flexible) string: unsigned varint length + 1, 0 for null."""
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def cbytes(b: bytes | None) -> bytes:
    return uvarint(0) if b is None else uvarint(len(b) + 1) + b


def carray(items: list[bytes] | None) -> bytes:
    return uvarint(0) if items is None else uvarint(len(items) + 1) + b"".join(items)


def array(items: list[bytes] | None) -> bytes:
    return i32(-1) if items is None else i32(len(items)) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    """The tagged-field section: count, then tag, size and value, in increasing tag order."""
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(p)) + p for t, p in fields)


def frame(api_key: int, version: int, body: bytes) -> bytes:
    """AbstractApiMessageSerde: frame version 1, API key and version as unsigned varints."""
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


# --------------------------------------------------------------------------- batches

V2_CRC_AT, V2_ATTRIBUTES_AT = 17, 21
CONTROL_BIT = 0x20


def batch(
    base_offset: int,
    records: list[tuple[bytes | None, bytes | None]],
    timestamp: int,
    control: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 24,
    )
    for i, (key, value) in enumerate(records):
        assert builder.append(i, timestamp, key, value, []) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)  # outside the CRC
    if control:
        struct.pack_into(">h", buf, V2_ATTRIBUTES_AT, CONTROL_BIT)
        struct.pack_into(">I", buf, V2_CRC_AT, calc_crc32c(bytes(buf[V2_ATTRIBUTES_AT:])))
    return bytes(buf)


def log_of(records: list[tuple[bytes | None, bytes | None]], one_per_batch: bool = True) -> bytes:
    if not one_per_batch:
        return batch(0, records, T0)
    return b"".join(batch(i, [r], T0 + i) for i, r in enumerate(records))


# --------------------------------------------------------------------------- __consumer_offsets


def group_key(record_type: int, group: str, member: str | None = None) -> bytes:
    """Coordinator keys: record type, then GroupId (and MemberId), non-flexible."""
    return i16(record_type) + string(group) + (b"" if member is None else string(member))


def consumer_offsets() -> list[tuple[bytes | None, bytes | None]]:
    topic = uuid(TOPIC_ID)
    partition_info = cstring("orders") + carray([i32(0), i32(1)])
    return [
        # 0 ConsumerGroupMetadataValue v0: Epoch; tagged MetadataHash (0)
        (group_key(3, "orders-app"), i16(0) + i32(5) + tags((0, i64(-4242424242)))),
        # 1 ConsumerGroupTargetAssignmentMetadataValue v0: AssignmentEpoch; tagged timestamp (0)
        (group_key(6, "orders-app"), i16(0) + i32(5) + tags((0, i64(T0 - 10)))),
        # 2 ConsumerGroupCurrentMemberAssignmentValue v0, TopicPartitions with AssignmentEpochs
        (
            group_key(8, "orders-app", "m-1"),
            i16(0)
            + i32(5)
            + i32(4)
            + i8(0)
            + carray([topic + carray([i32(0), i32(1)]) + tags((0, carray([i32(5), i32(3)])))])
            + carray([])
            + tags(),
        ),
        # 3 OffsetCommitValue v4 with its tagged topicId (0)
        (
            i16(1) + string("orders-app") + string("orders") + i32(1),
            i16(4) + i64(42) + i32(7) + cstring("") + i64(T0 - 1) + tags((0, topic)),
        ),
        # 4 ShareGroupMetadataValue v0, today's layout: Epoch, MetadataHash
        (group_key(11, "share-app"), i16(0) + i32(3) + i64(-42) + tags()),
        # 5 ShareGroupMetadataValue v0 as Kafka 4.0's early access wrote it: Epoch only
        (group_key(11, "share-app"), i16(0) + i32(2) + tags()),
        # 6 ShareGroupStatePartitionMetadataValue v0, today's layout
        (
            group_key(15, "share-app"),
            i16(0)
            + carray([topic + partition_info + tags()])
            + carray([])
            + carray([topic + cstring("orders") + tags()])
            + tags(),
        ),
        # 7 ShareGroupStatePartitionMetadataValue v0, 4.0's layout (no InitializingTopics)
        (
            group_key(15, "share-app"),
            i16(0)
            + carray([topic + cstring("orders") + carray([i32(0), i32(1)]) + tags()])
            + carray([])
            + tags(),
        ),
        # 8 StreamsGroupMetadataValue v0: Epoch, MetadataHash; tagged ValidatedTopologyEpoch
        # (0), LastAssignmentConfigs (1), StoredDescriptionTopologyEpoch (2)
        (
            group_key(17, "streams-app"),
            i16(0)
            + i32(9)
            + i64(77)
            + tags(
                (0, i32(2)),
                (1, carray([cstring("num.standby.replicas") + cstring("1") + tags()])),
                (2, i32(2)),
            ),
        ),
        # 9 StreamsGroupCurrentMemberAssignmentValue v0: six TaskIds arrays, the first with its
        # tagged AssignmentEpochs (0)
        (
            group_key(22, "streams-app", "m-1"),
            i16(0)
            + i32(9)
            + i32(8)
            + i8(0)
            + carray(
                [cstring("0") + carray([i32(0), i32(1)]) + tags((0, carray([i32(9), i32(8)])))]
            )
            + carray([])
            + carray([])
            + carray([])
            + carray([])
            + carray([])
            + tags(),
        ),
        # 10 a ShareGroupMetadataValue version no Kafka release has written yet
        (group_key(11, "share-app"), i16(1) + i32(4) + i64(1) + tags()),
        # 11 a record type no Kafka release has written yet
        (group_key(99, "future-app"), i16(0) + i32(1) + tags()),
        # 12 a tombstone
        (group_key(11, "share-app"), None),
    ]


# --------------------------------------------------------------------------- __transaction_state


def transaction_state() -> list[tuple[bytes | None, bytes | None]]:
    key = i16(0) + string("txn-1")
    return [
        # v1 (flexible): CompleteCommit (4), tagged PreviousProducerId (0), NextProducerId (1),
        # ClientTransactionVersion (2), NextProducerEpoch (3)
        (
            key,
            i16(1)
            + i64(1000)
            + i16(3)
            + i32(60000)
            + i8(4)
            + carray([cstring("orders") + carray([i32(0), i32(1)]) + tags()])
            + i64(T0 + 5)
            + i64(T0)
            + tags((0, i64(999)), (1, i64(1001)), (2, i16(2)), (3, i16(0))),
        ),
        # v0 (not flexible): Ongoing (1)
        (
            key,
            i16(0)
            + i64(1000)
            + i16(4)
            + i32(60000)
            + i8(1)
            + array([string("orders") + array([i32(2)])])
            + i64(T0 + 9)
            + i64(T0 + 8),
        ),
    ]


# --------------------------------------------------------------------------- __share_group_state


def share_key(record_type: int) -> bytes:
    """ShareSnapshotKey (0) / ShareUpdateKey (1): GroupId, TopicId, Partition, non-flexible."""
    return i16(record_type) + string("share-app") + uuid(TOPIC_ID) + i32(0)


def state_batch(first: int, last: int, state: int, count: int) -> bytes:
    return i64(first) + i64(last) + i8(state) + i16(count) + tags()


def share_group_state() -> list[tuple[bytes | None, bytes | None]]:
    return [
        # ShareSnapshotValue v0: SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset,
        # CreateTimestamp, WriteTimestamp, StateBatches; tagged DeliveryCompleteCount (0)
        (
            share_key(0),
            i16(0)
            + i32(0)
            + i32(1)
            + i32(2)
            + i64(10)
            + i64(T0 - 100)
            + i64(T0)
            + carray([state_batch(10, 14, 0, 1), state_batch(15, 15, 4, 5)])
            + tags((0, i32(2))),
        ),
        # ShareUpdateValue v0: SnapshotEpoch, LeaderEpoch, StartOffset, StateBatches
        (
            share_key(1),
            i16(0) + i32(0) + i32(2) + i64(-1) + carray([state_batch(16, 16, 2, 1)]) + tags(),
        ),
        (share_key(1), None),
    ]


# --------------------------------------------------------------------------- __remote_log_metadata


def topic_id_partition(name: str, partition: int) -> bytes:
    return cstring(name) + uuid(TOPIC_ID) + i32(partition) + tags()


def segment_id_entry() -> bytes:
    return topic_id_partition("orders", 0) + uuid(SEGMENT_ID) + tags()


def leader_epochs(*pairs: tuple[int, int]) -> bytes:
    return carray([i32(e) + i64(o) + tags() for e, o in pairs])


def remote_log_metadata() -> list[tuple[bytes | None, bytes | None]]:
    return [
        # RemoteLogSegmentMetadataRecord (0): segment id, offsets, broker, times, epochs, size,
        # custom metadata, state; tagged TxnIndexEmpty (0)
        (
            None,
            frame(
                0,
                0,
                segment_id_entry()
                + i64(0)
                + i64(99)
                + i32(1)
                + i64(T0 - 1000)
                + i64(T0)
                + leader_epochs((2, 50), (0, 0))
                + i32(16384)
                + cbytes(None)
                + i8(0)
                + tags((0, boolean(True))),
            ),
        ),
        # RemoteLogSegmentMetadataUpdateRecord (1): COPY_SEGMENT_FINISHED, 5 bytes of metadata
        (
            None,
            frame(
                1,
                0,
                segment_id_entry() + i32(1) + i64(T0 + 50) + cbytes(b"s3://") + i8(1) + tags(),
            ),
        ),
        # RemoteLogSegmentMetadataSnapshotRecord (3)
        (
            None,
            frame(
                3,
                0,
                uuid(SEGMENT_ID)
                + i64(0)
                + i64(99)
                + i32(1)
                + i64(T0 - 1000)
                + i64(T0 + 50)
                + leader_epochs((0, 0), (2, 50))
                + i32(16384)
                + cbytes(b"s3://")
                + i8(1)
                + tags(),
            ),
        ),
        # RemotePartitionDeleteMetadataRecord (2): DELETE_PARTITION_MARKED
        (
            None,
            frame(2, 0, topic_id_partition("orders", 0) + i32(1) + i64(T0 + 90) + i8(0) + tags()),
        ),
        # a segment state no RemoteLogSegmentState has: the update's constructor refuses it
        (
            None,
            frame(1, 0, segment_id_entry() + i32(1) + i64(T0 + 60) + cbytes(None) + i8(9) + tags()),
        ),
        # an API key no Kafka release has written yet
        (None, frame(7, 0, tags())),
    ]


# --------------------------------------------------------------------------- __cluster_metadata


def feature_level(name: str, level: int) -> bytes:
    return frame(12, 0, cstring(name) + i16(level) + tags())


def cluster_metadata() -> list[tuple[bytes | None, bytes | None]]:
    endpoint = cstring("PLAINTEXT") + cstring("broker-1") + u16(9092) + i16(0) + tags()
    return [
        # RegisterBrokerRecord v4: ... LogDirs (tag 0), CordonedLogDirs (tag 1, nullable)
        (
            None,
            frame(
                0,
                4,
                i32(1)
                + boolean(False)
                + uuid(TOPIC_ID)
                + i64(7)
                + carray([endpoint])
                + carray([cstring("metadata.version") + i16(7) + i16(29) + tags()])
                + cstring(None)
                + boolean(True)
                + boolean(False)
                + tags((0, carray([uuid(DIR_A), uuid(DIR_B)])), (1, carray([uuid(DIR_B)]))),
            ),
        ),
        # BrokerRegistrationChangeRecord v3: CordonedLogDirs (tag 3) emptied
        (None, frame(17, 3, i32(1) + i64(7) + tags((0, i8(-1)), (3, carray([]))))),
        # UnregisterControllerRecord (29)
        (None, frame(29, 0, i32(3000) + tags())),
        # a RegisterBrokerRecord version no Kafka release has written yet
        (None, frame(0, 9, i32(1) + tags())),
        # a metadata record type no Kafka release has written yet
        (None, frame(99, 0, tags())),
    ]


def bootstrap_snapshot() -> bytes:
    """Kafka 4.4 writes the bootstrap records into the 0-0 checkpoint: header, records, footer."""
    header = (i16(0) + i16(3), i16(0) + i64(0) + tags())
    footer = (i16(0) + i16(4), i16(0) + tags())
    records: list[tuple[bytes | None, bytes | None]] = [
        (None, feature_level("metadata.version", 29)),
        (None, feature_level("kraft.version", 1)),
        (None, feature_level("share.version", 1)),
        (None, feature_level("streams.version", 1)),
    ]
    return (
        batch(0, [header], T0, control=True)
        + batch(1, records, T0)
        + batch(1 + len(records), [footer], T0, control=True)
    )


# --------------------------------------------------------------------------- files

SEGMENT = "00000000000000000000.log"
FILES: dict[str, bytes] = {
    f"__consumer_offsets-0/{SEGMENT}": log_of(consumer_offsets()),
    f"__transaction_state-0/{SEGMENT}": log_of(transaction_state()),
    f"__share_group_state-0/{SEGMENT}": log_of(share_group_state()),
    f"__remote_log_metadata-0/{SEGMENT}": log_of(remote_log_metadata(), one_per_batch=False),
    f"__cluster_metadata-0/{SEGMENT}": log_of(cluster_metadata(), one_per_batch=False),
    "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint": bootstrap_snapshot(),
}


def main() -> None:
    for name, data in FILES.items():
        path = OUT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{path.relative_to(REPO)}: {len(data)} bytes")


if __name__ == "__main__":
    main()
