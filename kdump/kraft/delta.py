"""What each metadata record does to the image: Kafka's MetadataDelta.replay and the sub-deltas
it dispatches to (ClusterDelta, TopicsDelta, ConfigurationsDelta...), applied to the image in
place, record by record.

Kafka gathers the records of a commit into a delta and applies it at the commit's end; kdump
applies each record at once, which gives the same image for every log Kafka's own controller
writes (a record refers only to what records before it made). While a metadata transaction is
open (KIP-868: BeginTransactionRecord ... EndTransactionRecord), every change is journaled, so
an AbortTransactionRecord, or a log that ends inside the transaction, takes it back: the image
Kafka publishes never holds an unfinished transaction (MetadataBatchLoader).

A record the image refuses (fencing a broker that is not registered, a change to a partition
that does not exist) raises ReplayError with Kafka's words and changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kdump.kraft.image import (
    METADATA_VERSION,
    BrokerRegistration,
    ControllerRegistration,
    DelegationTokenData,
    MetadataImage,
    PartitionRegistration,
    ReplayError,
    ScramCredentialData,
    StandardAcl,
    TopicImage,
    uuid_key,
)

TOPIC, BROKER = 2, 4  # ConfigResource.Type
FENCING_CHANGES = {1: True, 0: None, -1: False}  # BrokerRegistrationFencingChange
IN_CONTROLLED_SHUTDOWN_CHANGES = {0: None, 1: True}  # BrokerRegistrationInControlledShutdownChange
_MISSING = object()
_NO_ELR_CHANGE: dict[str, Any] = {
    "replicas": None,
    "directories": None,
    "isr": None,
    "removingReplicas": None,
    "addingReplicas": None,
    "leader": -2,
    "leaderRecoveryState": -1,
    "eligibleLeaderReplicas": [],
    "lastKnownElr": [],
}
"""The PartitionChangeRecord TopicDelta.maybeClearElr merges: empty ELRs, nothing else."""


class MetadataDelta:
    """Replays records onto ``image`` (changed in place); ``begin``/``commit``/``abort`` a
    metadata transaction."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._undo: list[tuple[Any, Any, Any]] | None = None

    # -- transactions ---------------------------------------------------------------------------

    @property
    def in_transaction(self) -> bool:
        return self._undo is not None

    def begin(self) -> None:
        self._undo = []

    def commit(self) -> None:
        self._undo = None

    def abort(self) -> None:
        """Take back every change since ``begin``, newest first."""
        undo, self._undo = self._undo or [], None
        for container, key, old in reversed(undo):
            if isinstance(container, dict):
                if old is _MISSING:
                    container.pop(key, None)
                else:
                    container[key] = old
            else:
                setattr(container, key, old)

    def _put(self, d: dict[Any, Any], key: Any, value: Any) -> None:
        if self._undo is not None:
            self._undo.append((d, key, d.get(key, _MISSING)))
        d[key] = value

    def _drop(self, d: dict[Any, Any], key: Any) -> None:
        if key not in d:
            return
        if self._undo is not None:
            self._undo.append((d, key, d[key]))
        del d[key]

    def _set(self, attribute: str, value: Any) -> None:
        if self._undo is not None:
            self._undo.append((self.image, attribute, getattr(self.image, attribute)))
        setattr(self.image, attribute, value)

    # -- records --------------------------------------------------------------------------------

    def replay(self, api_key: int, record: dict[str, Any]) -> None:
        """MetadataDelta.replay: the record (its fields as read_framed gives them) applied."""
        handler = _REPLAY.get(api_key)
        if handler is None:
            raise ReplayError(f"Unknown metadata record type {api_key}")
        handler(self, record)

    def register_broker(self, r: dict[str, Any]) -> None:
        self._put(self.image.brokers, r["brokerId"], BrokerRegistration.from_record(r))

    def unregister_broker(self, r: dict[str, Any]) -> None:
        self._drop(self.image.brokers, r["brokerId"])

    def _broker_or_throw(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        """ClusterDelta.getBrokerOrThrow."""
        broker = self.image.brokers.get(broker_id)
        if broker is None:
            raise ReplayError(
                f"Tried to {action} broker {broker_id}, but that broker was not registered."
            )
        if broker.epoch != epoch:
            raise ReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, did not "
                f"match the current broker epoch, {broker.epoch}"
            )
        return broker

    def fence_broker(self, r: dict[str, Any]) -> None:
        broker = self._broker_or_throw(r["id"], r["epoch"], "fence")
        self._put(self.image.brokers, r["id"], broker._replace(fenced=True))

    def unfence_broker(self, r: dict[str, Any]) -> None:
        broker = self._broker_or_throw(r["id"], r["epoch"], "unfence")
        self._put(self.image.brokers, r["id"], broker._replace(fenced=False))

    def change_broker_registration(self, r: dict[str, Any]) -> None:
        """ClusterDelta.replay(BrokerRegistrationChangeRecord): fenced 1/0/-1 (fence, no change,
        unfence), inControlledShutdown 0/1, log dirs when not empty."""
        broker = self._broker_or_throw(r["brokerId"], r["brokerEpoch"], "change")
        if r["fenced"] not in FENCING_CHANGES:
            raise ReplayError(
                f"Unable to replay BrokerRegistrationChangeRecord: unknown value for fenced "
                f"field: {r['fenced']}"
            )
        if r["inControlledShutdown"] not in IN_CONTROLLED_SHUTDOWN_CHANGES:
            raise ReplayError(
                "Unable to replay BrokerRegistrationChangeRecord: unknown value for "
                f"inControlledShutdown field: {r['inControlledShutdown']}"
            )
        fenced = FENCING_CHANGES[r["fenced"]]
        shutdown = IN_CONTROLLED_SHUTDOWN_CHANGES[r["inControlledShutdown"]]
        changed = broker._replace(
            fenced=broker.fenced if fenced is None else fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown if shutdown is None else shutdown,
            directories=tuple(sorted(r["logDirs"], key=uuid_key))
            if r["logDirs"]
            else broker.directories,
        )
        if changed != broker:
            self._put(self.image.brokers, r["brokerId"], changed)

    def register_controller(self, r: dict[str, Any]) -> None:
        self._put(self.image.controllers, r["controllerId"], ControllerRegistration.from_record(r))

    def unregister_controller(self, r: dict[str, Any]) -> None:
        self._drop(self.image.controllers, r["controllerId"])

    def topic(self, r: dict[str, Any]) -> None:
        """TopicsDelta.replay(TopicRecord): a new topic, with no partitions yet."""
        topic = TopicImage(r["name"], r["topicId"])
        self._put(self.image.topics_by_id, topic.id, topic)
        self._put(self.image.topics_by_name, topic.name, topic)

    def _topic_or_throw(self, topic_id: str) -> TopicImage:
        topic = self.image.topics_by_id.get(topic_id)
        if topic is None:
            raise ReplayError(f"Unable to find topic {topic_id}")
        return topic

    def partition(self, r: dict[str, Any]) -> None:
        topic = self._topic_or_throw(r["topicId"])
        self._put(topic.partitions, r["partitionId"], PartitionRegistration.from_record(r))

    def partition_change(self, r: dict[str, Any]) -> None:
        topic = self._topic_or_throw(r["topicId"])
        partition = topic.partitions.get(r["partitionId"])
        if partition is None:
            raise ReplayError(f"Unable to find partition {r['topicId']}:{r['partitionId']}")
        self._put(topic.partitions, r["partitionId"], partition.merge(r))

    def remove_topic(self, r: dict[str, Any]) -> None:
        """MetadataDelta.replay(RemoveTopicRecord): the topic and its configs go."""
        topic = self.image.topics_by_id.get(r["topicId"])
        if topic is None:
            raise ReplayError(
                f"Unable to delete topic with id {r['topicId']}: no such topic found."
            )
        self._drop(self.image.topics_by_id, topic.id)
        if self.image.topics_by_name.get(topic.name) is topic:
            self._drop(self.image.topics_by_name, topic.name)
        self._drop(self.image.configs, (TOPIC, topic.name))

    def clear_elr(self, r: dict[str, Any]) -> None:
        """TopicsDelta.replay(ClearElrRecord): the ELRs of the topic named, or of every topic
        (an empty name), cleared (TopicDelta.maybeClearElr: the partition epoch bumps)."""
        name = r["topicName"]
        if name:
            topic = self.image.topics_by_name.get(name)
            if topic is None:
                raise ReplayError(f"Unable to clear the ELRs of topic {name}: no such topic.")
            topics = [topic]
        else:
            topics = list(self.image.topics_by_id.values())
        for topic in topics:
            for partition_id, partition in list(topic.partitions.items()):
                if partition.elr or partition.last_known_elr:
                    self._put(topic.partitions, partition_id, partition.merge(_NO_ELR_CHANGE))

    def config(self, r: dict[str, Any]) -> None:
        """ConfigurationsDelta.replay(ConfigRecord): a null value deletes the key; a resource
        left with no key leaves the image."""
        resource = (r["resourceType"], r["resourceName"])
        configs = self.image.configs
        data = configs.get(resource)
        if data is None:
            if r["value"] is None:
                return
            data = {}
            self._put(configs, resource, data)
        if r["value"] is None:
            self._drop(data, r["name"])
            if not data:
                self._drop(configs, resource)
        else:
            self._put(data, r["name"], r["value"])

    def feature_level(self, r: dict[str, Any]) -> None:
        """FeaturesDelta.replay: level 0 removes a feature (metadata.version always has one)."""
        versions = self.image.finalized_versions
        if r["featureLevel"] == 0 and r["name"] != METADATA_VERSION:
            self._drop(versions, r["name"])
        else:
            self._put(versions, r["name"], r["featureLevel"])

    def zk_migration_state(self, r: dict[str, Any]) -> None:
        self._set("zk_migration_state", r["zkMigrationState"])

    def client_quota(self, r: dict[str, Any]) -> None:
        pairs = ((e["entityType"], e["entityName"]) for e in r["entity"])
        # a default (null) name sorts first: never compared with a name (a hostile record may
        # give one type twice)
        entity = tuple(sorted(pairs, key=lambda p: (p[0], p[1] is not None, p[1] or "")))
        quotas = self.image.client_quotas
        data = quotas.get(entity)
        if data is None:
            if r["remove"]:
                return
            data = {}
            self._put(quotas, entity, data)
        if r["remove"]:
            self._drop(data, r["key"])
            if not data:
                self._drop(quotas, entity)
        else:
            self._put(data, r["key"], r["value"])

    def producer_ids(self, r: dict[str, Any]) -> None:
        self._set("next_producer_id", r["nextProducerId"])

    def access_control_entry(self, r: dict[str, Any]) -> None:
        acl = StandardAcl(
            r["resourceType"],
            r["resourceName"],
            r["patternType"],
            r["principal"],
            r["host"],
            r["operation"],
            r["permissionType"],
        )
        self._put(self.image.acls, r["id"], acl)

    def remove_access_control_entry(self, r: dict[str, Any]) -> None:
        if r["id"] not in self.image.acls:
            raise ReplayError(
                f"Failed to find existing ACL with ID {r['id']} in either image or changes"
            )
        self._drop(self.image.acls, r["id"])

    def user_scram_credential(self, r: dict[str, Any]) -> None:
        users = self.image.scram.get(r["mechanism"])
        if users is None:
            users = {}
            self._put(self.image.scram, r["mechanism"], users)
        data = ScramCredentialData(r["salt"], r["storedKey"], r["serverKey"], r["iterations"])
        self._put(users, r["name"], data)

    def remove_user_scram_credential(self, r: dict[str, Any]) -> None:
        users = self.image.scram.get(r["mechanism"])
        if users is None:
            return
        self._drop(users, r["name"])
        if not users:
            self._drop(self.image.scram, r["mechanism"])

    def delegation_token(self, r: dict[str, Any]) -> None:
        data = DelegationTokenData(
            r["owner"],
            r["requester"],
            tuple(r["renewers"]),
            r["issueTimestamp"],
            r["maxTimestamp"],
            r["expirationTimestamp"],
        )
        self._put(self.image.delegation_tokens, r["tokenId"], data)

    def remove_delegation_token(self, r: dict[str, Any]) -> None:
        self._drop(self.image.delegation_tokens, r["tokenId"])

    def no_op(self, r: dict[str, Any]) -> None:
        """NoOpRecord: only the offset moves (the loader's provenance)."""


_REPLAY: dict[int, Callable[[MetadataDelta, dict[str, Any]], None]] = {
    0: MetadataDelta.register_broker,
    1: MetadataDelta.unregister_broker,
    2: MetadataDelta.topic,
    3: MetadataDelta.partition,
    4: MetadataDelta.config,
    5: MetadataDelta.partition_change,
    7: MetadataDelta.fence_broker,
    8: MetadataDelta.unfence_broker,
    9: MetadataDelta.remove_topic,
    10: MetadataDelta.delegation_token,
    11: MetadataDelta.user_scram_credential,
    12: MetadataDelta.feature_level,
    14: MetadataDelta.client_quota,
    15: MetadataDelta.producer_ids,
    17: MetadataDelta.change_broker_registration,
    18: MetadataDelta.access_control_entry,
    19: MetadataDelta.remove_access_control_entry,
    20: MetadataDelta.no_op,
    21: MetadataDelta.zk_migration_state,
    22: MetadataDelta.remove_user_scram_credential,
    26: MetadataDelta.remove_delegation_token,
    27: MetadataDelta.register_controller,
    28: MetadataDelta.clear_elr,
    29: MetadataDelta.unregister_controller,
}
"""MetadataDelta.replay's switch, by MetadataRecordType id (transaction markers, 23 to 25, are
the batch loader's)."""

__all__ = ["MetadataDelta"]
