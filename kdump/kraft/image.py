"""The cluster's metadata image (Kafka's org.apache.kafka.image.MetadataImage): what a broker or
controller knows once it has loaded the metadata log, as the sub-images Kafka keeps it in.

Each registration is an immutable tuple with Kafka's fields (PartitionRegistration,
BrokerRegistration...); the images hold them in dicts, which kdump.kraft.delta changes record by
record. Uuids are Kafka's ``Uuid.toString()`` (base64url, 22 characters), as every kdump output
prints them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import ReplayError
from kdump.tuples import NamedTuple

NO_LEADER = -1
NO_LEADER_CHANGE = -2
"""PartitionChangeRecord.leader when the leader did not change (LeaderConstants)."""
DIRECTORY_MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
"""DirectoryId.MIGRATING (Uuid 0, 0): a replica whose log dir was chosen before directory ids."""
LEADER_RECOVERY_NO_CHANGE = -1
LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}  # LeaderRecoveryState
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # ScramMechanism.mechanismName
ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}
METADATA_VERSION = "metadata.version"
"""The feature whose level is MetadataVersion (FeaturesImage keeps it apart)."""


_SHARED: dict[tuple[Any, ...], tuple[Any, ...]] = {}
"""Replica lists, ISRs and directory lists as one tuple each however many partitions hold them
(a cluster has few distinct ones): the image's memory is its partitions, not their lists."""
_SHARED_KEPT = 1 << 20


def shared(values: list[Any] | tuple[Any, ...] | None) -> tuple[Any, ...]:
    """``values`` as the one tuple of its contents (None: empty)."""
    if not values:
        return ()
    key = tuple(values)
    found = _SHARED.get(key)
    if found is None:
        if len(_SHARED) >= _SHARED_KEPT:
            _SHARED.clear()
        found = _SHARED[key] = key
    return found


def uuid_key(text: str) -> tuple[int, int]:
    """Uuid.compareTo's order: the most then the least significant 64 bits, as signed longs."""
    raw = base64.urlsafe_b64decode(text + "==")
    return (
        int.from_bytes(raw[:8], "big", signed=True),
        int.from_bytes(raw[8:], "big", signed=True),
    )


class PartitionRegistration(NamedTuple):
    """org.apache.kafka.metadata.PartitionRegistration: one partition's replicas and leader."""

    replicas: tuple[int, ...]
    directories: tuple[str, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> PartitionRegistration:
        """PartitionRegistration(PartitionRecord)."""
        replicas = shared(r["replicas"])
        directories = _check_directories(replicas, r["directories"], "PartitionRecord")
        return _new(
            cls,
            (
                replicas,
                _default_to_migrating(directories, len(replicas)),
                shared(r["isr"]),
                shared(r["removingReplicas"]),
                shared(r["addingReplicas"]),
                r["leader"],
                _leader_recovery_state(r["leaderRecoveryState"]),
                r["leaderEpoch"],
                r["partitionEpoch"],
                shared(r["eligibleLeaderReplicas"]),
                shared(r["lastKnownElr"]),
            ),
        )

    def merge(self, r: dict[str, Any]) -> PartitionRegistration:
        """PartitionRegistration.merge(PartitionChangeRecord): every field the record sets
        (null: unchanged); a new leader bumps the leader epoch; the partition epoch always."""
        replicas = self.replicas if r["replicas"] is None else shared(r["replicas"])
        directories = r["directories"]
        if directories is None:
            directories = self.directories
        elif r["replicas"] is not None:
            _check_directories(replicas, directories, "PartitionChangeRecord")
        leader, leader_epoch = self.leader, self.leader_epoch
        if r["leader"] != NO_LEADER_CHANGE:
            leader, leader_epoch = r["leader"], leader_epoch + 1
        state = r["leaderRecoveryState"]
        isr, elr, last_known_elr = r["isr"], r["eligibleLeaderReplicas"], r["lastKnownElr"]
        return _new(
            PartitionRegistration,
            (
                replicas,
                _default_to_migrating(directories, len(replicas)),
                self.isr if isr is None else shared(isr),
                self.removing_replicas
                if r["removingReplicas"] is None
                else shared(r["removingReplicas"]),
                self.adding_replicas
                if r["addingReplicas"] is None
                else shared(r["addingReplicas"]),
                leader,
                self.leader_recovery_state
                if state == LEADER_RECOVERY_NO_CHANGE
                else _leader_recovery_state(state),
                leader_epoch,
                self.partition_epoch + 1,
                self.elr if elr is None else shared(elr),
                self.last_known_elr if last_known_elr is None else shared(last_known_elr),
            ),
        )


_new = tuple.__new__


def _check_directories(
    replicas: tuple[int, ...], directories: list[str] | tuple[str, ...] | None, record: str
) -> Any:
    if directories and len(directories) != len(replicas):
        # InvalidReplicaDirectoriesException
        raise ReplayError(
            f"{record} has {len(replicas)} replicas but {len(directories)} directories"
        )
    return directories


def _default_to_migrating(
    directories: list[str] | tuple[str, ...] | None, replicas: int
) -> tuple[str, ...]:
    """PartitionRegistration.defaultToMigrating: no directories (a record from before them, or
    all MIGRATING) is MIGRATING for every replica."""
    if not directories or all(d == DIRECTORY_MIGRATING for d in directories):
        return shared([DIRECTORY_MIGRATING] * replicas)
    return shared(directories)


def _leader_recovery_state(value: int) -> int:
    if value not in LEADER_RECOVERY_STATES:
        # LeaderRecoveryState.of
        raise ReplayError(f"Value {value} is not a valid leader recovery state")
    return value


@dataclass(slots=True)
class TopicImage:
    """org.apache.kafka.image.TopicImage: a topic's name, id and partitions by id."""

    name: str
    id: str
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)


class Endpoint(NamedTuple):
    """A listener of a broker or controller registration (BrokerEndpoint, ControllerEndpoint)."""

    name: str
    host: str
    port: int
    security_protocol: int


class BrokerRegistration(NamedTuple):
    """org.apache.kafka.metadata.BrokerRegistration."""

    id: int
    epoch: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...]
    supported_features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: tuple[str, ...]
    """Sorted as the constructor sorts them (Uuid.compareTo)."""

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> BrokerRegistration:
        return cls(
            r["brokerId"],
            r["brokerEpoch"],
            r["incarnationId"],
            endpoints(r["endPoints"]),
            features(r["features"]),
            r["rack"],
            r["fenced"],
            r["inControlledShutdown"],
            r["isMigratingZkBroker"],
            tuple(sorted(r["logDirs"], key=uuid_key)),
        )


class ControllerRegistration(NamedTuple):
    """org.apache.kafka.metadata.ControllerRegistration."""

    id: int
    incarnation_id: str
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...]
    supported_features: dict[str, tuple[int, int]]

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> ControllerRegistration:
        return cls(
            r["controllerId"],
            r["incarnationId"],
            r["zkMigrationReady"],
            endpoints(r["endPoints"]),
            features(r["features"]),
        )


def endpoints(records: list[dict[str, Any]]) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e["name"], e["host"], e["port"], e["securityProtocol"]) for e in records)


def features(records: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    return {f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"]) for f in records}


class StandardAcl(NamedTuple):
    """org.apache.kafka.metadata.authorizer.StandardAcl: an AccessControlEntryRecord's fields
    (the enums by their codes)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class ScramCredentialData(NamedTuple):
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class DelegationTokenData(NamedTuple):
    """DelegationTokenData: TokenInformation's fields."""

    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


ConfigResource = tuple[int, str]
"""ConfigResource: (Type id, name); the name "" is the type's default (the cluster's, for
BROKER)."""
ClientQuotaEntity = tuple[tuple[str, str | None], ...]
"""ClientQuotaEntity: (entity type, name or None for the default) pairs, sorted by type."""


class MetadataProvenance(NamedTuple):
    """Where an image was read up to: the last offset and epoch of the last batch applied, and
    its append time (MetadataProvenance)."""

    last_contained_offset: int
    last_contained_epoch: int
    last_contained_log_time_ms: int


EMPTY_PROVENANCE = MetadataProvenance(-1, -1, -1)


@dataclass(slots=True)
class MetadataImage:
    """org.apache.kafka.image.MetadataImage: every sub-image, by its Kafka name."""

    provenance: MetadataProvenance = EMPTY_PROVENANCE
    finalized_versions: dict[str, int] = field(default_factory=dict)
    """FeaturesImage.finalizedVersions, metadata.version among them (FeaturesImage holds that
    one apart, as a MetadataVersion)."""
    zk_migration_state: int = 0
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, ControllerRegistration] = field(default_factory=dict)
    topics_by_id: dict[str, TopicImage] = field(default_factory=dict)
    topics_by_name: dict[str, TopicImage] = field(default_factory=dict)
    configs: dict[ConfigResource, dict[str, str]] = field(default_factory=dict)
    client_quotas: dict[ClientQuotaEntity, dict[str, float]] = field(default_factory=dict)
    next_producer_id: int = -1
    """ProducerIdsImage.nextProducerId (-1: none allocated yet)."""
    acls: dict[str, StandardAcl] = field(default_factory=dict)
    scram: dict[int, dict[str, ScramCredentialData]] = field(default_factory=dict)
    delegation_tokens: dict[str, DelegationTokenData] = field(default_factory=dict)

    @property
    def offset(self) -> int:
        return self.provenance.last_contained_offset

    @property
    def is_empty(self) -> bool:
        return self == MetadataImage(self.provenance)


__all__ = [
    "BrokerRegistration",
    "ClientQuotaEntity",
    "ConfigResource",
    "ControllerRegistration",
    "DelegationTokenData",
    "Endpoint",
    "MetadataImage",
    "MetadataProvenance",
    "PartitionRegistration",
    "ReplayError",
    "ScramCredentialData",
    "StandardAcl",
    "TopicImage",
]
