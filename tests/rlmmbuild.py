"""A test-only writer of ``__remote_log_metadata`` partitions, independent of kdump: record values
encoded by hand from Kafka's message schemas (RemoteLogSegmentMetadataRecord,
RemoteLogSegmentMetadataUpdateRecord, RemotePartitionDeleteMetadataRecord, all v0, flexible)
in RemoteLogMetadataSerde's frame (uvarint frame version 1, API key, version), batched by
kafka-python's builder (tests/txnlog.py); the metadata partition of a user partition by
RemoteLogMetadataTopicPartitioner's rule, written from its Java source again here; and trees of
objects as Kafka's LocalTieredStorage (RemoteLogSegmentFileset) and Aiven's ObjectKeyFactory
name them."""

from __future__ import annotations

import base64
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from conftest import FIXTURES
from txnlog import batch_bytes

STARTED, FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3
PARTITION_MARKED, PARTITION_STARTED, PARTITION_FINISHED = 0, 1, 2
GENUINE_SEGMENT = FIXTURES / "tiered/pinterest/ts-consumer/log-files/test_topic_a-0"
AIVEN_PLAIN = FIXTURES / "tiered/aiven-generated/plain/test_topic_a-lZ6vvmajTWKDBUTV6SQAtQ/0"
AIVEN_PLAIN_STEM = "00000000000000000000-AAAAAAAAAAAAAAAAAAAAEQ"


def uuid_string(n: int) -> str:
    """Kafka's Uuid.toString() of Uuid(0, n): url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).rstrip(b"=").decode()


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _string(s: str) -> bytes:
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def _uuid(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "==")


NO_TAGS = b"\x00"


def _topic_id_partition(topic: str, topic_id: str, partition: int) -> bytes:
    return _string(topic) + _uuid(topic_id) + struct.pack(">i", partition) + NO_TAGS


def _segment_id(topic: str, topic_id: str, partition: int, segment_id: str) -> bytes:
    return _topic_id_partition(topic, topic_id, partition) + _uuid(segment_id) + NO_TAGS


def _frame(api_key: int, body: bytes) -> bytes:
    return _uvarint(1) + _uvarint(api_key) + _uvarint(0) + body


def _murmur2(data: bytes) -> int:
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = 0x9747B28C ^ len(data)
    n4 = len(data) // 4
    for i in range(n4):
        (k,) = struct.unpack_from("<I", data, 4 * i)
        k = k * m & mask
        k ^= k >> 24
        k = k * m & mask
        h = (h * m & mask) ^ k
    rest = data[4 * n4 :]
    for i in reversed(range(len(rest))):
        h ^= rest[i] << (8 * i)
    if rest:
        h = h * m & mask
    h ^= h >> 13
    h = h * m & mask
    return h ^ (h >> 15)


def metadata_partition(topic_id: str, partition: int, count: int = 50) -> int:
    """toPositive(murmur2(toBytes(Objects.hash(lsb, msb, partition)))) % count."""
    msb, lsb = struct.unpack(">qq", _uuid(topic_id))

    def long_hash(v: int) -> int:
        v &= (1 << 64) - 1
        return (v ^ (v >> 32)) & 0xFFFFFFFF

    h = 1
    for element in (long_hash(lsb), long_hash(msb), partition & 0xFFFFFFFF):
        h = (31 * h + element) & 0xFFFFFFFF
    return (_murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % count


@dataclass
class Segment:
    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start: int
    end: int
    epochs: dict[int, int]
    size: int = 1000


@dataclass
class MetadataLog:
    """The records of one ``__remote_log_metadata`` partition, in the order appended."""

    values: list[bytes] = field(default_factory=list)

    def add(self, s: Segment, time: int, broker: int = 1, max_time: int | None = None) -> None:
        """RemoteLogSegmentMetadataRecord in COPY_SEGMENT_STARTED."""
        body = (
            _segment_id(s.topic, s.topic_id, s.partition, s.segment_id)
            + struct.pack(
                ">qqiqq", s.start, s.end, broker, time if max_time is None else max_time, time
            )
            + _uvarint(len(s.epochs) + 1)
            + b"".join(struct.pack(">iq", e, o) + NO_TAGS for e, o in s.epochs.items())
            + struct.pack(">i", s.size)
            + b"\x00"  # CustomMetadata: null
            + bytes([STARTED])
            + NO_TAGS
        )
        self.values.append(_frame(0, body))

    def update(self, s: Segment, state: int, time: int, broker: int = 1) -> None:
        body = (
            _segment_id(s.topic, s.topic_id, s.partition, s.segment_id)
            + struct.pack(">iq", broker, time)
            + b"\x00"
            + bytes([state])
            + NO_TAGS
        )
        self.values.append(_frame(1, body))

    def delete_partition(
        self, topic: str, topic_id: str, partition: int, state: int, time: int
    ) -> None:
        body = (
            _topic_id_partition(topic, topic_id, partition)
            + struct.pack(">iq", 1, time)
            + bytes([state])
            + NO_TAGS
        )
        self.values.append(_frame(2, body))

    def copied(self, s: Segment, time: int, broker: int = 1) -> None:
        self.add(s, time, broker)
        self.update(s, FINISHED, time + 1, broker)

    def write(self, log_dir: Path, number: int, first_offset: int = 0) -> Path:
        """``log_dir/__remote_log_metadata-<number>/00000000000000000000.log``, a batch a
        record, null keys (as ProducerManager sends them)."""
        directory = log_dir / f"__remote_log_metadata-{number}"
        directory.mkdir(parents=True)
        data = b"".join(
            batch_bytes(first_offset + i, [1700000000000 + i], records=[(None, v)])
            for i, v in enumerate(self.values)
        )
        (directory / f"{first_offset:020d}.log").write_bytes(data)
        (directory / f"{first_offset:020d}.index").write_bytes(b"")
        (directory / f"{first_offset:020d}.timeindex").write_bytes(b"")
        return directory


def rsm_segment(bucket: Path, s: Segment, log: bytes | None = None, objects: tuple = ()) -> Path:
    """LocalTieredStorage's files of a segment: ``<topic>-<partition>-<topicId>/<offset20>-
    <segmentId>.{log,index,timeindex,snapshot,leader_epoch_checkpoint}`` (``objects``: only
    these suffixes)."""
    d = bucket / f"{s.topic}-{s.partition}-{s.topic_id}"
    d.mkdir(parents=True, exist_ok=True)
    stem = f"{s.start:020d}-{s.segment_id}"
    files = {
        "log": log if log is not None else b"\0" * s.size,
        "index": b"",
        "timeindex": b"",
        "snapshot": b"",
        "leader_epoch_checkpoint": b"0\n1\n0 0\n",
    }
    for suffix, data in files.items():
        if not objects or suffix in objects:
            (d / f"{stem}.{suffix}").write_bytes(data)
    return d / f"{stem}.log"


def aiven_segment(bucket: Path, s: Segment, objects: tuple = ()) -> Path:
    """Aiven's three objects of a segment, ``<topic>-<topicId>/<partition>/<offset20>-<id>.
    {log,indexes,rsm-manifest}``: the genuine untransformed objects Aiven's code wrote
    (fixtures/tiered/aiven-generated/plain), under this segment's key."""
    d = bucket / f"{s.topic}-{s.topic_id}" / str(s.partition)
    d.mkdir(parents=True, exist_ok=True)
    stem = f"{s.start:020d}-{s.segment_id}"
    for suffix in ("log", "indexes", "rsm-manifest"):
        if not objects or suffix in objects:
            shutil.copyfile(AIVEN_PLAIN / f"{AIVEN_PLAIN_STEM}.{suffix}", d / f"{stem}.{suffix}")
    return d / f"{stem}.log"
