"""A test-only writer of KRaft metadata logs and snapshots, independent of kdump: batches from
kafka-python's builder (tests/txnlog.batch_bytes), metadata records from Kafka's JSON specs
(tests/metadata_codec.encode), control records (LeaderChange, SnapshotHeader/Footer) from the
clients specs by test_kafka_specs.Spec."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_specs import specs_in
from metadata_codec import encode
from test_kafka_specs import Spec
from txnlog import batch_bytes

T0 = 1_780_000_000_000
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
METADATA = "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"

Rec = tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], int]
"""A metadata record: its name, its fields (Kafka's JSON names), and its version (default 0)."""


def control_value(name: str, data: dict[str, Any]) -> bytes:
    spec = Spec(specs_in("clients")[name])
    fields = spec.spec["fields"]
    value = {f["name"]: data.get(f["name"], spec.default(f)) for f in fields}
    return spec.write(value, 0)


def control(kind: int, name: str, data: dict[str, Any]) -> tuple[bytes, bytes]:
    """A control record: key ``version int16 0, type int16``, the message as the value."""
    return struct.pack(">hh", 0, kind), control_value(name, data)


def leader_change(leader: int) -> tuple[bytes, bytes]:
    voter = {"VoterId": leader}
    data = {"LeaderId": leader, "Voters": [voter], "GrantingVoters": [voter]}
    return control(LEADER_CHANGE, "LeaderChangeMessage", data)


def framed(rec: Rec) -> bytes:
    name, data = rec[0], rec[1]
    version = rec[2] if len(rec) == 3 else 0  # type: ignore[misc]
    return encode(name, data, version)


@dataclass
class MetadataLog:
    """Batches appended in offset order; ``data`` is the log's bytes."""

    offset: int = 0
    data: bytearray = field(default_factory=bytearray)
    positions: list[int] = field(default_factory=list)
    """Where each batch starts."""

    def append(
        self, records: list[tuple[bytes | None, bytes]], epoch: int, is_control: bool
    ) -> int:
        base = self.offset
        self.positions.append(len(self.data))
        times = [T0 + base + i for i in range(len(records))]
        self.data += batch_bytes(
            base, times, leader_epoch=epoch, records=list(records), control=is_control
        )
        self.offset += len(records)
        return base

    def records(self, *recs: Rec, epoch: int = 1) -> int:
        """One batch of metadata records; its base offset."""
        return self.append([(None, framed(r)) for r in recs], epoch, False)

    def leader_change(self, leader: int = 1, epoch: int = 1) -> int:
        return self.append([leader_change(leader)], epoch, True)


def snapshot_bytes(*batches: list[Rec], epoch: int = 1, time_ms: int = T0) -> bytes:
    """A snapshot: the SnapshotHeader control batch, a batch per list of records, the footer."""
    log = MetadataLog()
    header = control(
        SNAPSHOT_HEADER, "SnapshotHeaderRecord", {"LastContainedLogTimestamp": time_ms}
    )
    log.append([header], epoch, True)
    for records in batches:
        log.records(*records, epoch=epoch)
    log.append([control(SNAPSHOT_FOOTER, "SnapshotFooterRecord", {})], epoch, True)
    return bytes(log.data)


def snapshot_name(offset: int, epoch: int) -> str:
    return f"{offset:020d}-{epoch:010d}.checkpoint"


def write_metadata_dir(
    root: Path, log: bytes | None = None, snapshots: dict[str, bytes] | None = None
) -> Path:
    """``root/__cluster_metadata-0`` with the log as its one segment and the snapshots."""
    d = root / METADATA
    d.mkdir(parents=True, exist_ok=True)
    if log is not None:
        (d / SEGMENT).write_bytes(log)
    for name, data in (snapshots or {}).items():
        (d / name).write_bytes(data)
    return d


def kraft_log_dir(
    log_dir: Path, configs: dict[str, dict[str, str]], partitions: tuple[str, ...], batches: int
) -> Path:
    """A KRaft broker's log dir (node 1): each of ``partitions`` one segment of ``batches``
    plain batches (tests/batchbytes), and the node's metadata log holding ``configs``, topic ->
    name -> value, as kafka-configs --alter has the controller record them."""
    from batchbytes import write_partition

    for name in partitions:
        write_partition(log_dir / name, (0,), batches=batches)
    metadata = MetadataLog()
    metadata.records(
        *(
            config(2, t, name, value)
            for t, named in configs.items()
            for name, value in named.items()
        )
    )
    write_metadata_dir(log_dir, bytes(metadata.data))
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    return log_dir


# -- records, by the fields tests set ------------------------------------------------------------


def topic(name: str, topic_id: str) -> Rec:
    return ("TopicRecord", {"name": name, "topicId": topic_id})


def partition(topic_id: str, number: int, replicas: list[int], leader: int, **more: Any) -> Rec:
    data = {
        "partitionId": number,
        "topicId": topic_id,
        "replicas": replicas,
        "isr": replicas,
        "leader": leader,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
        **more,
    }
    return ("PartitionRecord", data, 1 if "directories" in more else 0)


def config(resource_type: int, resource: str, name: str, value: str | None) -> Rec:
    data = {"resourceType": resource_type, "resourceName": resource, "name": name, "value": value}
    return ("ConfigRecord", data)


def register_broker(broker_id: int, epoch: int, host: str = "localhost", **more: Any) -> Rec:
    data = {
        "brokerId": broker_id,
        "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ",
        "brokerEpoch": epoch,
        "endPoints": [{"name": "PLAINTEXT", "host": host, "port": 9092, "securityProtocol": 0}],
        "features": [
            {"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 20}
        ],
        "rack": None,
        "fenced": True,
        "inControlledShutdown": False,
        **more,
    }
    return ("RegisterBrokerRecord", data, 3 if "logDirs" in more else 1)


def feature(name: str, level: int) -> Rec:
    return ("FeatureLevelRecord", {"name": name, "featureLevel": level})


BEGIN: Rec = ("BeginTransactionRecord", {"name": "test"})
END: Rec = ("EndTransactionRecord", {})
ABORT: Rec = ("AbortTransactionRecord", {"reason": "failover"})
