"""Metadata: ``kdump metadata --format json`` of each node's ``__cluster_metadata-0`` (read while
the cluster runs) against what the running three-node cluster reports through the Admin API:
topics and their ids, partitions with leader, leader epoch, replicas, ISR and ELR, the topics'
configs, the brokers.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from clirun import run_kdump
from kafka.admin import ConfigResource, ConfigResourceType
from realkafka import Cluster, admin, create_topic, wait_until

pytestmark = pytest.mark.kafka

TOPICS = {
    "meta-a": (3, 3, {"retention.ms": "3600000", "min.insync.replicas": "2"}, None),
    "meta-b": (2, 2, {"cleanup.policy": "compact,delete", "segment.bytes": "1048576"}, None),
    "meta-c": (0, 0, {}, {0: [2, 3], 1: [3, 1], 2: [1, 2]}),
}


def kafka_uuid(text: str) -> str:
    """Kafka's own spelling of a Uuid (Uuid.toString: base64url, no padding)."""
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode().rstrip("=")


def served(bootstrap: str) -> dict[str, Any]:
    """The cluster as the Admin API reports it: per topic its id, per partition leader,
    leader epoch, replicas, ISR and ELR (DescribeTopicPartitions), its dynamic configs
    (DescribeConfigs); the brokers (DescribeCluster)."""
    with admin(bootstrap) as a:
        topics = a.describe_topic_partitions(list(TOPICS))["topics"]
        configs = a.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t) for t in TOPICS], config_filter="all"
        )
        cluster = a.describe_cluster()
    out: dict[str, Any] = {"topics": {}, "configs": {}}
    for t in topics:
        out["topics"][t["name"]] = {
            "id": kafka_uuid(str(t["topic_id"])),
            "partitions": {
                str(p["partition_index"]): {
                    "leader": p["leader_id"],
                    "leader_epoch": p["leader_epoch"],
                    "replicas": p["replica_nodes"],
                    "isr": p["isr_nodes"],
                    "eligible_leader_replicas": p["eligible_leader_replicas"] or [],
                }
                for p in t["partitions"]
            },
        }
    for name, entries in configs["topic"].items():
        out["configs"][name] = {
            k: v["value"]
            for k, v in entries.items()
            if v["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        }
    out["brokers"] = sorted(b["broker_id"] for b in cluster["brokers"] if not b.get("is_fenced"))
    out["cluster_id"] = cluster["cluster_id"]
    return out


def from_files(node_log_dir: str) -> dict[str, Any]:
    ran = run_kdump(["metadata", node_log_dir, "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    image = json.loads(ran.stdout)
    out: dict[str, Any] = {"topics": {}, "configs": {}}
    for name in TOPICS:
        topic = image["topics"].get(name)
        if topic is None:
            continue
        out["topics"][name] = {
            "id": topic["id"],
            "partitions": {
                index: {
                    "leader": p["leader"],
                    "leader_epoch": p["leader_epoch"],
                    "replicas": p["replicas"],
                    "isr": p["isr"],
                    "eligible_leader_replicas": p["eligible_leader_replicas"] or [],
                }
                for index, p in topic["partitions"].items()
            },
        }
        out["configs"][name] = image["configs"].get("topic", {}).get(name, {})
    out["brokers"] = sorted(int(b) for b, v in image["brokers"].items() if not v["fenced"])
    return out


def test_kdump_metadata_is_what_the_cluster_reports(kafka_three: Cluster) -> None:
    cluster = kafka_three
    bootstrap = cluster.bootstrap
    for name, (partitions, replication, config, assignments) in TOPICS.items():
        create_topic(bootstrap, name, partitions, replication, config, assignments)

    def settled() -> dict[str, Any] | None:
        reported = served(bootstrap)
        full = all(
            sorted(p["isr"]) == sorted(p["replicas"])
            for t in reported["topics"].values()
            for p in t["partitions"].values()
        )
        return reported if full and reported["brokers"] == [1, 2, 3] else None

    reported = wait_until(settled, "every replica in sync on the three brokers")
    # a node's metadata log can trail the controller by what it has not fetched yet
    for broker in cluster:
        image = wait_until(
            lambda b=broker: (
                x if (x := from_files(str(b.log_dir)))["topics"].keys() == TOPICS.keys() else None
            ),
            f"node {broker.node_id}'s metadata log to hold the topics",
        )
        reported = served(bootstrap)
        expected = {k: v for k, v in reported.items() if k != "cluster_id"}
        assert image == expected, f"node {broker.node_id}"
