"""``kdump metadata`` as text: the image for people (what is registered, which topics and
partitions with their leaders, the configs), and any subtree of it (a metadata shell path) as
indented ``name: value`` lines. Reads the JSON document kdump.kraft.node makes, so the two
formats say the same."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from kdump.kraft.image import DIRECTORY_MIGRATING
from kdump.kraft.loader import MetadataLoad
from kdump.units import iso
from kdump.untrusted import shown, shown_json


def load_lines(load: MetadataLoad, doc: dict[str, Any]) -> Iterator[str]:
    """The whole image, section by section."""
    yield f"metadata image of {load.location}"
    snapshot = load.snapshot
    if snapshot is None:
        yield "  from the log's first record (no snapshot)"
    else:
        yield (
            f"  from snapshot {snapshot.name} (end offset {snapshot.offset}, "
            f"epoch {snapshot.epoch})"
        )
    provenance = load.image.provenance
    # bootstrap.checkpoint (and the zero checkpoint) end before offset 0 with no log time:
    # Kafka writes them with end offset 0 and time 0, which is not 1970
    when = (
        ""
        if provenance.last_contained_log_time_ms <= 0
        else f", {iso(provenance.last_contained_log_time_ms)}"
    )
    where = (
        f"at offset {doc['offset']}"
        if doc["offset"] >= 0
        else f"before the log's first offset (offset {doc['offset']})"
    )
    yield (
        f"  {where}, epoch {doc['epoch']}{when}; {load.batches} batches, "
        f"{load.records} records read"
    )
    features = ", ".join(f"{k}={v}" for k, v in doc["features"].items())
    yield f"features: {features or 'none'}"
    yield from _brokers(doc["brokers"])
    yield from _controllers(doc["controllers"])
    yield from _topics(doc["topics"])
    yield from _configs(doc["configs"])
    yield from _simple("client quotas", doc["client_quotas"])
    yield f"producer ids: next {doc['producer_ids']['next_producer_id']}"
    yield from _simple("acls", doc["acls"])
    yield from _simple("scram", doc["scram"])
    yield from _simple("delegation tokens", doc["delegation_tokens"])


def _endpoints(endpoints: list[dict[str, Any]]) -> str:
    return ", ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in endpoints) or "no listener"


def _brokers(brokers: dict[str, Any]) -> Iterator[str]:
    yield f"brokers ({len(brokers)}):"
    for broker_id, b in brokers.items():
        state = ["fenced" if b["fenced"] else "unfenced"]
        if b["in_controlled_shutdown"]:
            state.append("in controlled shutdown")
        dirs = ", ".join(b["log_dirs"]) or "-"
        yield (
            f"  {broker_id}: epoch {b['epoch']}, {', '.join(state)}, rack {b['rack'] or '-'}, "
            f"{_endpoints(b['endpoints'])}, log dirs {dirs}"
        )


def _controllers(controllers: dict[str, Any]) -> Iterator[str]:
    yield f"controllers ({len(controllers)}):"
    for controller_id, c in controllers.items():
        yield f"  {controller_id}: {_endpoints(c['endpoints'])}"


def _topics(topics: dict[str, Any]) -> Iterator[str]:
    partitions = sum(len(t["partitions"]) for t in topics.values())
    yield f"topics ({len(topics)}, {partitions} partitions):"
    for name, topic in topics.items():
        yield f"  {name}  id {topic['id']}  {len(topic['partitions'])} partitions"
        for number, p in topic["partitions"].items():
            yield f"    {number}: {_partition(p)}"


def _partition(p: dict[str, Any]) -> str:
    leader = "none" if p["leader"] < 0 else str(p["leader"])
    words = [
        f"leader {leader} (epoch {p['leader_epoch']})",
        f"replicas {_ids(p['replicas'])}",
        f"isr {_ids(p['isr'])}",
    ]
    if p["eligible_leader_replicas"] or p["last_known_elr"]:
        words.append(
            f"elr {_ids(p['eligible_leader_replicas'])}, last known elr {_ids(p['last_known_elr'])}"
        )
    if any(d != DIRECTORY_MIGRATING for d in p["directories"]):
        words.append(f"dirs {', '.join(p['directories'])}")
    words.append(f"partition epoch {p['partition_epoch']}")
    return ", ".join(words)


def _ids(ids: list[int]) -> str:
    return "[" + ", ".join(map(str, ids)) + "]"


def _configs(configs: dict[str, dict[str, dict[str, str]]]) -> Iterator[str]:
    count = sum(len(resources) for resources in configs.values())
    yield f"configs ({count}):"
    for kind, resources in configs.items():
        for name, data in resources.items():
            which = f"{kind} {name}" if name else f"{kind} (cluster default)"
            yield f"  {which}: " + ", ".join(f"{k}={v}" for k, v in data.items())


def _simple(title: str, section: dict[str, Any]) -> Iterator[str]:
    if not section:
        yield f"{title}: none"
        return
    yield f"{title} ({len(section)}):"
    yield from tree_lines(section, 1)


def tree_lines(value: Any, depth: int = 0) -> Iterator[str]:
    """A subtree as indented ``name: value`` lines (the metadata shell's ``tree``), lists of
    plain values on one line."""
    pad = "  " * depth
    if not isinstance(value, Mapping):
        yield pad + _scalar(value)
        return
    for key, item in value.items():
        if isinstance(item, Mapping):
            yield f"{pad}{key}:"
            yield from tree_lines(item, depth + 1)
        elif isinstance(item, list) and any(isinstance(x, dict) for x in item):
            yield f"{pad}{key}:"
            for element in item:
                yield from tree_lines(element, depth + 1)
        else:
            yield f"{pad}{key}: {_scalar(item)}"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return str(value)


def json_lines(
    value: Any, depth: int = 0, key: str | None = None, last: bool = True
) -> Iterator[str]:
    """``value`` as JSON text, line by line: an object holding objects one member a line,
    indented two spaces a level; an object of plain values, and every list, on one line (a
    partition, a broker: one line each). Members made on demand (kdump.kraft.node.LazyObject)
    are made one at a time, so a big cluster's image is written in little memory."""
    pad, comma = "  " * depth, "" if last else ","
    head = pad if key is None else f"{pad}{json.dumps(shown(key), ensure_ascii=False)}: "
    if not isinstance(value, Mapping) or not _holds_objects(value):
        yield head + json.dumps(shown_json(_plain(value)), ensure_ascii=False) + comma
        return
    yield head + "{"
    count = len(value)
    for i, (name, item) in enumerate(value.items()):
        yield from json_lines(item, depth + 1, str(name), i == count - 1)
    yield pad + "}" + comma


def _holds_objects(value: Mapping[str, Any]) -> bool:
    if not isinstance(value, dict):
        return True  # made on demand: a big object (a cluster's topics)
    return any(isinstance(v, Mapping) and v for v in value.values())


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


__all__ = ["json_lines", "load_lines", "tree_lines"]
