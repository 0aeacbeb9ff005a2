"""The image as ``kdump metadata`` prints it: one JSON document (snake_case keys, as kdump's other
JSON), secrets redacted as the metadata shell's Normal criteria redact them unless asked, and the
metadata shell's paths (``/image/topics/byName/orders/0``, Kafka's MetadataNode tree) to select a
subtree of it.

Redaction (MetadataNodeRedactionCriteria.Normal): SCRAM credentials and delegation tokens whole;
a config value when the config is sensitive, which KafkaConfigSchema.isSensitive answers from the
config's type (PASSWORD) and answers yes for a config it does not know. kdump knows Kafka's topic
configs, the broker's, the groups' and client metrics' by name (kdump.kraft.safe_configs, from
Kafka's own ConfigDefs): any other config is redacted, as the shell redacts it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kdump.config import KAFKA_TOPIC_CONFIG_NAMES
from kdump.errors import InputError
from kdump.kraft.image import (
    SCRAM_MECHANISMS,
    SECURITY_PROTOCOLS,
    ZK_MIGRATION_STATES,
    BrokerRegistration,
    ClientQuotaEntity,
    ControllerRegistration,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    StandardAcl,
    TopicImage,
)
from kdump.kraft.safe_configs import BROKER_CONFIGS, CLIENT_METRICS_CONFIGS, GROUP_CONFIGS

REDACTED = "[redacted]"
CONFIG_RESOURCE_TYPES = {
    0: "UNKNOWN",
    2: "TOPIC",
    4: "BROKER",
    8: "BROKER_LOGGER",
    16: "CLIENT_METRICS",
    32: "GROUP",
}  # ConfigResource.Type
RESOURCE_TYPES = {
    0: "UNKNOWN",
    1: "ANY",
    2: "TOPIC",
    3: "GROUP",
    4: "CLUSTER",
    5: "TRANSACTIONAL_ID",
    6: "DELEGATION_TOKEN",
    7: "USER",
}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {
    0: "UNKNOWN",
    1: "ANY",
    2: "ALL",
    3: "READ",
    4: "WRITE",
    5: "CREATE",
    6: "DELETE",
    7: "ALTER",
    8: "DESCRIBE",
    9: "CLUSTER_ACTION",
    10: "DESCRIBE_CONFIGS",
    11: "ALTER_CONFIGS",
    12: "IDEMPOTENT_WRITE",
    13: "CREATE_TOKENS",
    14: "DESCRIBE_TOKENS",
}
ACL_PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}


def _name(table: dict[int, str], code: int) -> str:
    return table.get(code, str(code))


def is_sensitive(resource_type: int, name: str) -> bool:
    """KafkaConfigSchema.isSensitive: yes, unless Kafka defines the config and not as a
    PASSWORD (an allow-list: kdump.kraft.safe_configs); a broker logger's values are log levels."""
    if resource_type == 8:  # BROKER_LOGGER
        return False
    known = {
        2: KAFKA_TOPIC_CONFIG_NAMES,
        4: BROKER_CONFIGS,
        16: CLIENT_METRICS_CONFIGS,
        32: GROUP_CONFIGS,
    }.get(resource_type, frozenset())
    return name not in known


def endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {
        "name": e.name,
        "host": e.host,
        "port": e.port,
        "security_protocol": _name(SECURITY_PROTOCOLS, e.security_protocol),
    }


def broker_json(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "epoch": b.epoch,
        "incarnation_id": b.incarnation_id,
        "fenced": b.fenced,
        "in_controlled_shutdown": b.in_controlled_shutdown,
        "rack": b.rack,
        "endpoints": [endpoint_json(e) for e in b.listeners],
        "log_dirs": list(b.directories),
    }


def controller_json(c: ControllerRegistration) -> dict[str, Any]:
    return {
        "incarnation_id": c.incarnation_id,
        "zk_migration_ready": c.zk_migration_ready,
        "endpoints": [endpoint_json(e) for e in c.listeners],
    }


def partition_json(p: PartitionRegistration) -> dict[str, Any]:
    return {
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch,
        "eligible_leader_replicas": list(p.elr),
        "last_known_elr": list(p.last_known_elr),
        "directories": list(p.directories),
    }


def acl_json(a: StandardAcl) -> dict[str, Any]:
    return {
        "resource_type": _name(RESOURCE_TYPES, a.resource_type),
        "resource_name": a.resource_name,
        "pattern_type": _name(PATTERN_TYPES, a.pattern_type),
        "principal": a.principal,
        "host": a.host,
        "operation": _name(ACL_OPERATIONS, a.operation),
        "permission_type": _name(ACL_PERMISSION_TYPES, a.permission_type),
    }


def quota_entity_name(entity: ClientQuotaEntity) -> str:
    """ClientQuotasImageNode.clientQuotaEntityToString: ``clientId(x)_ip(y)_user(z)``, parens
    and backslashes escaped; a default entity (no name) as ``<default>``, which the shell has no
    word for."""

    def escape(text: str | None) -> str:
        if text is None:
            return "<default>"
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    words = {"client-id": "clientId", "ip": "ip", "user": "user"}
    found = dict(entity)
    parts = [f"{word}({escape(found[kind])})" for kind, word in words.items() if kind in found]
    parts += [f"{kind}({escape(name)})" for kind, name in entity if kind not in words]
    return "_".join(parts)


def config_type_key(resource_type: int) -> str:
    """The key of a config resource type in the JSON: ``topic``, ``broker``..."""
    return _name(CONFIG_RESOURCE_TYPES, resource_type).lower()


def image_json(
    image: MetadataImage, snapshot: str | None = None, show_secrets: bool = False
) -> dict[str, Any]:
    """The image as one JSON document (docs/metadata.md's ``kdump metadata --format json``)."""
    configs: dict[str, dict[str, dict[str, str]]] = {"topic": {}, "broker": {}}
    for (kind, name), data in sorted(image.configs.items()):
        configs.setdefault(config_type_key(kind), {})[name] = {
            key: (REDACTED if not show_secrets and is_sensitive(kind, key) else value)
            for key, value in sorted(data.items())
        }
    return {
        "offset": image.provenance.last_contained_offset,
        "epoch": image.provenance.last_contained_epoch,
        "snapshot": snapshot,
        "features": dict(sorted(image.finalized_versions.items())),
        "brokers": {str(i): broker_json(b) for i, b in sorted(image.brokers.items())},
        "controllers": {str(i): controller_json(c) for i, c in sorted(image.controllers.items())},
        "topics": LazyObject(
            sorted(image.topics_by_name),
            lambda name: topic_json(image.topics_by_name[name]),
        ),
        "configs": configs,
        "client_quotas": {
            quota_entity_name(entity): dict(sorted(quotas.items()))
            for entity, quotas in sorted(image.client_quotas.items(), key=_entity_order)
        },
        "producer_ids": {"next_producer_id": image.next_producer_id},
        "acls": {i: acl_json(a) for i, a in sorted(image.acls.items())},
        "scram": scram_json(image, show_secrets),
        "delegation_tokens": delegation_tokens_json(image, show_secrets),
    }


def topic_json(topic: TopicImage) -> dict[str, Any]:
    partitions = sorted(topic.partitions.items())
    return {"id": topic.id, "partitions": {str(p): partition_json(r) for p, r in partitions}}


class LazyObject(Mapping[str, Any]):
    """A JSON object whose members are made when read, one at a time: a big cluster's topics
    are written out without the whole document in memory at once."""

    def __init__(self, keys: list[str], make: Callable[[str], Any]) -> None:
        self._keys, self._make = keys, make
        self._known = frozenset(keys)

    def __getitem__(self, key: str) -> Any:
        if key not in self._known:
            raise KeyError(key)
        return self._make(key)

    def __contains__(self, key: object) -> bool:
        return key in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def _entity_order(item: tuple[ClientQuotaEntity, Any]) -> str:
    return quota_entity_name(item[0])


def scram_json(image: MetadataImage, show_secrets: bool) -> dict[str, Any]:
    """ScramCredentialDataNode: salt and keys in hex, all four fields redacted unless asked."""
    out: dict[str, Any] = {}
    for mechanism, users in sorted(image.scram.items()):
        out[_name(SCRAM_MECHANISMS, mechanism)] = {
            user: {
                "salt": data.salt.hex() if show_secrets else REDACTED,
                "stored_key": data.stored_key.hex() if show_secrets else REDACTED,
                "server_key": data.server_key.hex() if show_secrets else REDACTED,
                "iterations": data.iterations if show_secrets else REDACTED,
            }
            for user, data in sorted(users.items())
        }
    return out


def delegation_tokens_json(image: MetadataImage, show_secrets: bool) -> dict[str, Any]:
    """DelegationTokenDataNode: every field redacted unless asked, the token id too (the
    tokens are then numbered, in the order of their ids)."""
    out: dict[str, Any] = {}
    for n, (token_id, data) in enumerate(sorted(image.delegation_tokens.items()), 1):
        fields = {
            "owner": data.owner,
            "requester": data.requester,
            "renewers": list(data.renewers),
            "issue_timestamp": data.issue_timestamp,
            "max_timestamp": data.max_timestamp,
            "expiration_timestamp": data.expiration_timestamp,
        }
        if show_secrets:
            out[token_id] = fields
        else:
            out[f"{REDACTED}-{n}"] = dict.fromkeys(fields, REDACTED)
    return out


# -- the metadata shell's paths ----------------------------------------------------------------


def shell_tree(doc: dict[str, Any], image: MetadataImage) -> dict[str, Any]:
    """The image's JSON under the names of Kafka's MetadataNode tree (MetadataImageNode and
    its children), for ``select``."""
    by_name, by_id = image.topics_by_name, image.topics_by_id
    return {
        "image": {
            "provenance": {"offset": doc["offset"], "epoch": doc["epoch"]},
            "features": {
                "metadataVersion": doc["features"].get("metadata.version"),
                "zkMigrationState": _name(ZK_MIGRATION_STATES, image.zk_migration_state),
                **{f"finalized_{k}": v for k, v in doc["features"].items()},
            },
            "cluster": {"brokers": doc["brokers"], "controllers": doc["controllers"]},
            "topics": {
                "byName": LazyObject(sorted(by_name), lambda n: _topic_node(by_name[n])),
                "byId": LazyObject(sorted(by_id), lambda i: _topic_node(by_id[i])),
            },
            "configs": {
                (kind.upper() if not name else f"{kind.upper()}:{name}"): data
                for kind, resources in doc["configs"].items()
                for name, data in resources.items()
            },
            "clientQuotas": doc["client_quotas"],
            "producerIds": {"nextProducerId": doc["producer_ids"]["next_producer_id"]},
            "acls": {"byId": doc["acls"]},
            "scram": doc["scram"],
            "delegationToken": doc["delegation_tokens"],
        }
    }


def _topic_node(topic: TopicImage) -> dict[str, Any]:
    """TopicImageNode: name, id, then each partition by its number."""
    return {"name": topic.name, "id": topic.id, **topic_json(topic)["partitions"]}


def select(doc: dict[str, Any], image: MetadataImage, path: str) -> Any:
    """The subtree at a metadata shell path (``/image/topics/byName/orders/0``); ``/`` or
    ``/image`` is the whole document. An InputError names the first part not found."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts == ["image"]:
        return doc
    node: Any = shell_tree(doc, image)
    walked = ""
    for part in parts:
        if not isinstance(node, Mapping) or part not in node:
            raise InputError(path, f"{walked or '/'} has no {part!r} ({_holds(node)})")
        node = node[part]
        walked += "/" + part
    return node


NAMES_SHOWN = 12


def _holds(node: Any) -> str:
    if not isinstance(node, Mapping):
        return "it is a value"
    if not node:
        return "it is empty"
    names = sorted(map(str, node))
    more = f", ... ({len(names)} in all)" if len(names) > NAMES_SHOWN else ""
    return "it holds: " + ", ".join(names[:NAMES_SHOWN]) + more


__all__ = ["REDACTED", "image_json", "is_sensitive", "quota_entity_name", "select", "shell_tree"]
