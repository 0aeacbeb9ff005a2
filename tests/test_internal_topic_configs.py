"""Kafka's internal-topic config: the topic configs Kafka sets on the internal topics it
creates, between the broker's settings and the topic's own (--config, describe output).

Answers from Kafka's sources, not from kdump:
- GroupCoordinatorService.groupMetadataTopicConfigs: cleanup.policy=compact,
  segment.bytes=offsets.topic.segment.bytes (GroupCoordinatorConfig default 100 * 1024 * 1024);
- TransactionStateManager.transactionTopicConfigs: compact,
  segment.bytes=transaction.state.log.segment.bytes (TransactionLogConfig default 100 MiB);
- ShareCoordinatorService.shareGroupStateTopicConfigs: delete ("as defined in KIP-932"),
  segment.bytes=share.coordinator.state.topic.segment.bytes (default 100 MiB);
- TopicBasedRemoteLogMetadataManager: retention.ms=remote.log.metadata.topic.retention.ms
  (default -1);
- KafkaMetadataLog: segment.bytes=metadata.log.segment.bytes (1 GiB), segment.ms=
  metadata.log.segment.ms (7 days), retention.ms=-1 and retention.bytes=-1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import REALFILES
from test_explain_config import DESCRIBE_ALL, layers
from test_metrics import one, parse

from kdump.config import Source, resolve_settings

HUNDRED_MIB = 100 * 1024 * 1024
WEEK_MS = 7 * 24 * 60 * 60 * 1000
BHEEM = REALFILES / "Bheem6005__kafka" / "kafka-logs"


@pytest.mark.parametrize(
    ("topic", "expected"),
    [
        ("__consumer_offsets", {"cleanup.policy": ("compact",), "segment.bytes": HUNDRED_MIB}),
        ("__transaction_state", {"cleanup.policy": ("compact",), "segment.bytes": HUNDRED_MIB}),
        ("__share_group_state", {"cleanup.policy": ("delete",), "segment.bytes": HUNDRED_MIB}),
        ("__remote_log_metadata", {"retention.ms": -1}),
        (
            "__cluster_metadata",
            {
                "segment.bytes": 1024 * 1024 * 1024,
                "segment.ms": WEEK_MS,
                "retention.ms": -1,
                "retention.bytes": -1,
            },
        ),
    ],
)
def test_each_internal_topic_gets_the_configs_kafka_creates_it_with(
    tmp_path: Path, topic: str, expected: dict[str, object]
) -> None:
    s = resolve_settings(layers(tmp_path), topic)
    for name, value in expected.items():
        assert s[name].value == value, name
        assert s[name].source is Source.INTERNAL_TOPIC
        assert s[name].origin.startswith("Kafka's internal-topic config")
    # what Kafka does not set stays the broker's default
    assert s["delete.retention.ms"].source is Source.DEFAULT


def test_an_ordinary_topic_has_no_internal_topic_config(tmp_path: Path) -> None:
    s = resolve_settings(layers(tmp_path), "orders")
    assert all(e.source is not Source.INTERNAL_TOPIC for e in s.entries)
    assert s.cleanup_policy == ("delete",) and s.segment_bytes == 1073741824


def test_the_broker_config_kafka_copies_is_followed_and_named(tmp_path: Path) -> None:
    server = "offsets.topic.segment.bytes=52428800\nlog.segment.bytes=2097152\n"
    s = resolve_settings(layers(tmp_path, server=server), "__consumer_offsets")
    assert s.segment_bytes == 52428800
    assert "offsets.topic.segment.bytes=52428800" in s["segment.bytes"].origin
    assert "server.properties:1" in s["segment.bytes"].origin
    # log.segment.bytes is the broker default for other topics, not for this one
    assert resolve_settings(layers(tmp_path, server=server), "orders").segment_bytes == 2097152
    t = resolve_settings(
        layers(tmp_path, "transaction.state.log.segment.bytes=1048576"), "__transaction_state"
    )
    assert t.segment_bytes == 1048576


def test_the_topic_own_configs_win(tmp_path: Path) -> None:
    # the describe output's __consumer_offsets section says compact,delete
    s = resolve_settings(layers(tmp_path, describe=DESCRIBE_ALL), "__consumer_offsets")
    assert s.cleanup_policy == ("compact", "delete")
    assert s["cleanup.policy"].source is Source.DESCRIBE
    o = resolve_settings(layers(tmp_path, "cleanup.policy=delete"), "__transaction_state")
    assert o.cleanup_policy == ("delete",) and o["cleanup.policy"].source is Source.OPTION


def test_consumer_offsets_of_a_real_broker_are_not_deleted_by_time(tmp_path: Path) -> None:
    """Bheem6005's broker: 50 __consumer_offsets partitions and cities-0, all written in 2022.
    Kafka compacts __consumer_offsets and never deletes it by time; cities-0 is an ordinary
    topic with the broker defaults (delete, 7 days), so its one segment is past retention."""
    ran = run_kdump(["explain", "--format", "json", str(BHEEM)])
    assert ran.exit_code == 0, ran.stderr
    doc = json.loads(ran.stdout)
    by_topic: dict[str, list[dict[str, object]]] = {}
    for p in doc["partitions"]:
        by_topic.setdefault(p["topic"], []).append(p)
    assert len(by_topic["__consumer_offsets"]) == 50
    for p in by_topic["__consumer_offsets"]:
        settings = p["settings"]
        assert settings["cleanup.policy"] == ["compact"], p["path"]
        assert settings["segment.bytes"] == HUNDRED_MIB
        assert p["retention"]["deletable_segments"] == 0, p["path"]
    text = run_kdump(["explain", str(BHEEM / "__consumer_offsets-0")]).stdout
    assert "deletable now (time)" not in text
    assert "Kafka's internal-topic config" in text


def test_prom_counts_only_what_retention_really_deletes(tmp_path: Path) -> None:
    prom = tmp_path / "explain.prom"
    assert run_kdump(["explain", str(BHEEM), "--prom", str(prom)]).exit_code == 0
    m = parse(prom)
    cities = BHEEM / "cities-0" / "00000000000000000000.log"
    assert one(m, "kdump_retention_deletable_segments") == 1
    assert one(m, "kdump_retention_deletable_bytes") == cities.stat().st_size
