"""An independent replay of a KRaft metadata directory into the JSON ``kdump metadata`` prints,
sharing no code with kdump: batches framed by hand and read by kafka-python
(DefaultRecordBatch), values decoded from Kafka's JSON specs (tests/metadata_codec.decode), and
the image built straight in the output's shape from Kafka's rules as its image classes state
them (MetadataDelta and the sub-deltas, PartitionRegistration.merge, MetadataBatchLoader's
transactions: here a transaction's records wait in a list until its end, where kdump journals
and undoes).

It replays what the tests give it; it is no second kdump (no faults worded, no findings).
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatch
from metadata_codec import decode

MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
CONFIG_TYPES = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}


def batches(data: bytes) -> list[DefaultRecordBatch]:
    """The whole, valid batches from the start, up to the first that is not (recovery's cut)."""
    out, pos = [], 0
    while pos + 17 < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        batch = DefaultRecordBatch(data[pos:end])
        if not batch.validate_crc():
            break
        out.append(batch)
        pos = end
    return out


def _uuid_order(text: str) -> tuple[int, int]:
    high, low = struct.unpack(">qq", base64.urlsafe_b64decode(text + "=="))
    return high, low


def _endpoints(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": e["name"],
            "host": e["host"],
            "port": e["port"],
            "security_protocol": PROTOCOLS[e["securityProtocol"]],
        }
        for e in records
    ]


def _dirs(directories: list[str] | None, replicas: int) -> list[str]:
    if not directories or set(directories) == {MIGRATING}:
        return [MIGRATING] * replicas
    return list(directories)


class Image:
    """The image, kept in the JSON's own shape (keys as strings) as records arrive."""

    def __init__(self) -> None:
        self.features: dict[str, int] = {}
        self.brokers: dict[int, dict[str, Any]] = {}
        self.controllers: dict[int, dict[str, Any]] = {}
        self.topics: dict[str, dict[str, Any]] = {}  # by id: name, id, partitions
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.next_producer_id = -1

    def apply(self, name: str, r: dict[str, Any]) -> None:
        getattr(self, name)(r)

    def FeatureLevelRecord(self, r: dict[str, Any]) -> None:
        if r["featureLevel"] == 0 and r["name"] != "metadata.version":
            self.features.pop(r["name"], None)
        else:
            self.features[r["name"]] = r["featureLevel"]

    def ZkMigrationStateRecord(self, r: dict[str, Any]) -> None:
        pass

    def NoOpRecord(self, r: dict[str, Any]) -> None:
        pass

    def RegisterBrokerRecord(self, r: dict[str, Any]) -> None:
        self.brokers[r["brokerId"]] = {
            "epoch": r["brokerEpoch"],
            "incarnation_id": r["incarnationId"],
            "fenced": r["fenced"],
            "in_controlled_shutdown": r["inControlledShutdown"],
            "rack": r["rack"],
            "endpoints": _endpoints(r["endPoints"]),
            "log_dirs": sorted(r.get("logDirs") or [], key=_uuid_order),
        }

    def UnregisterBrokerRecord(self, r: dict[str, Any]) -> None:
        self.brokers.pop(r["brokerId"], None)

    def _broker(self, broker_id: int, epoch: int) -> dict[str, Any] | None:
        broker = self.brokers.get(broker_id)
        return broker if broker is not None and broker["epoch"] == epoch else None

    def FenceBrokerRecord(self, r: dict[str, Any]) -> None:
        if (broker := self._broker(r["id"], r["epoch"])) is not None:
            broker["fenced"] = True

    def UnfenceBrokerRecord(self, r: dict[str, Any]) -> None:
        if (broker := self._broker(r["id"], r["epoch"])) is not None:
            broker["fenced"] = False

    def BrokerRegistrationChangeRecord(self, r: dict[str, Any]) -> None:
        broker = self._broker(r["brokerId"], r["brokerEpoch"])
        if broker is None:
            return
        if r["fenced"] in (1, -1):
            broker["fenced"] = r["fenced"] == 1
        if r.get("inControlledShutdown") == 1:
            broker["in_controlled_shutdown"] = True
        if r.get("logDirs"):
            broker["log_dirs"] = sorted(r["logDirs"], key=_uuid_order)

    def RegisterControllerRecord(self, r: dict[str, Any]) -> None:
        self.controllers[r["controllerId"]] = {
            "incarnation_id": r["incarnationId"],
            "zk_migration_ready": r["zkMigrationReady"],
            "endpoints": _endpoints(r["endPoints"]),
        }

    def UnregisterControllerRecord(self, r: dict[str, Any]) -> None:
        self.controllers.pop(r["controllerId"], None)

    def TopicRecord(self, r: dict[str, Any]) -> None:
        self.topics[r["topicId"]] = {"name": r["name"], "id": r["topicId"], "partitions": {}}

    def RemoveTopicRecord(self, r: dict[str, Any]) -> None:
        gone = self.topics.pop(r["topicId"], None)
        if gone is not None:
            self.configs.pop((2, gone["name"]), None)

    def PartitionRecord(self, r: dict[str, Any]) -> None:
        self.topics[r["topicId"]]["partitions"][r["partitionId"]] = {
            "replicas": r["replicas"],
            "isr": r["isr"],
            "leader": r["leader"],
            "leader_epoch": r["leaderEpoch"],
            "partition_epoch": r["partitionEpoch"],
            "eligible_leader_replicas": r.get("eligibleLeaderReplicas") or [],
            "last_known_elr": r.get("lastKnownElr") or [],
            "directories": _dirs(r.get("directories"), len(r["replicas"])),
        }

    def PartitionChangeRecord(self, r: dict[str, Any]) -> None:
        p = self.topics[r["topicId"]]["partitions"][r["partitionId"]]
        if r["replicas"] is not None:
            p["replicas"] = r["replicas"]
        if r["isr"] is not None:
            p["isr"] = r["isr"]
        if r["leader"] != -2:
            p["leader"] = r["leader"]
            p["leader_epoch"] += 1
        p["partition_epoch"] += 1
        if r.get("eligibleLeaderReplicas") is not None:
            p["eligible_leader_replicas"] = r["eligibleLeaderReplicas"]
        if r.get("lastKnownElr") is not None:
            p["last_known_elr"] = r["lastKnownElr"]
        directories = r.get("directories")
        p["directories"] = _dirs(
            p["directories"] if directories is None else directories, len(p["replicas"])
        )

    def ConfigRecord(self, r: dict[str, Any]) -> None:
        key = (r["resourceType"], r["resourceName"])
        data = self.configs.setdefault(key, {})
        if r["value"] is None:
            data.pop(r["name"], None)
        else:
            data[r["name"]] = r["value"]
        if not data:
            del self.configs[key]

    def ProducerIdsRecord(self, r: dict[str, Any]) -> None:
        self.next_producer_id = r["nextProducerId"]

    def json(self, offset: int, epoch: int, snapshot: str | None) -> dict[str, Any]:
        configs: dict[str, Any] = {"topic": {}, "broker": {}}
        for (kind, name), data in sorted(self.configs.items()):
            configs.setdefault(CONFIG_TYPES[kind], {})[name] = dict(sorted(data.items()))
        topics = {t["name"]: t for t in self.topics.values()}
        return {
            "offset": offset,
            "epoch": epoch,
            "snapshot": snapshot,
            "features": dict(sorted(self.features.items())),
            "brokers": {str(k): v for k, v in sorted(self.brokers.items())},
            "controllers": {str(k): v for k, v in sorted(self.controllers.items())},
            "topics": {
                name: {
                    "id": t["id"],
                    "partitions": {str(k): v for k, v in sorted(t["partitions"].items())},
                }
                for name, t in sorted(topics.items())
            },
            "configs": configs,
            "client_quotas": {},
            "producer_ids": {"next_producer_id": self.next_producer_id},
            "acls": {},
            "scram": {},
            "delegation_tokens": {},
        }


TRANSACTION = ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord")


def _records(batch: DefaultRecordBatch) -> list[tuple[int, str, dict[str, Any]]]:
    out = []
    for record in batch:
        try:
            name, _, data = decode(record.value)
        except (ValueError, KeyError):
            continue  # what kdump cannot read either (a newer record): not in the image
        out.append((record.offset, name, data))
    return out


def replay_dir(directory: Path) -> dict[str, Any]:
    """The image of a metadata directory: the newest snapshot whose batches all read, then the
    log's records from its end offset on."""
    image = Image()
    offset = epoch = -1
    snapshot = None
    names = sorted(
        (p for p in directory.glob("*.checkpoint") if len(p.name) == 42),
        key=lambda p: (int(p.name[:20]), int(p.name[21:31])),
    )
    for path in reversed(names):
        data = path.read_bytes()
        found = batches(data)
        if not found or sum(b.size_in_bytes for b in found) != len(data):
            continue
        for batch in found:
            if not batch.is_control_batch:
                for _, name, record in _records(batch):
                    image.apply(name, record)
        offset, epoch, snapshot = int(path.name[:20]) - 1, int(path.name[21:31]), str(path)
        break
    pending: list[tuple[str, dict[str, Any]]] | None = None
    published = (offset, epoch)
    for log in sorted(directory.glob("*.log")):
        for batch in batches(log.read_bytes()):
            if batch.last_offset <= offset and snapshot is not None:
                continue
            if not batch.is_control_batch:
                for record_offset, name, record in _records(batch):
                    if record_offset <= offset:
                        continue
                    if name == "BeginTransactionRecord":
                        pending = []
                        published = (record_offset - 1, batch.leader_epoch)
                    elif name == "EndTransactionRecord" and pending is not None:
                        for held in pending:
                            image.apply(*held)
                        pending = None
                    elif name == "AbortTransactionRecord":
                        pending = None
                    elif pending is not None:
                        pending.append((name, record))
                    else:
                        image.apply(name, record)
            offset, epoch = batch.last_offset, batch.leader_epoch
    if pending is not None:
        offset, epoch = published
    return image.json(offset, epoch, snapshot)
