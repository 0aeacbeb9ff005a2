"""The metadata image's configs as a config layer (kdump.config.MetadataConfigs, built by
kdump.kraft.configs.find_metadata_configs): where it sits among the others, what it takes from
the image, and explain and report on a log dir holding the metadata log naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import REALFILES
from kraftlog import (
    METADATA,
    SEGMENT,
    MetadataLog,
    config,
    partition,
    topic,
    write_metadata_dir,
)
from txnlog import batch_bytes

from kdump.config import (
    ConfigLayers,
    MetadataConfigs,
    RawSetting,
    Source,
    read_server_properties,
    resolve_settings,
)
from kdump.kraft.configs import find_metadata_configs

COMBINED = next(d.parent for d in REALFILES.rglob(METADATA) if "nomanazeem" in str(d))
"""A combined-mode node's log dir: its topics' partitions beside the metadata log."""
ORDERS = "b3JkZXJzLXRvcGljLWlkAA"


def image(**kw: object) -> MetadataConfigs:
    return MetadataConfigs("meta", 7, **kw)  # type: ignore[arg-type]


def test_the_image_sits_above_the_broker_and_below_explicit_settings(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("log.retention.hours=1\nlog.segment.bytes=2097152\nlog.cleaner.threads=2\n")
    metadata = image(
        topics={"orders": {"retention.ms": "60000", "index.interval.bytes": "100"}},
        cluster={"log.segment.bytes": "3145728", "log.cleaner.threads": "3"},
        broker={"log.cleaner.threads": "4"},
        node_id=1,
    )
    layers = ConfigLayers(server_properties=read_server_properties(props), metadata=metadata)
    s = resolve_settings(layers, "orders")
    assert (s.retention_ms, s.index_interval_bytes) == (60000, 100)
    assert s["retention.ms"].source is Source.METADATA
    assert s["retention.ms"].origin == "metadata image of meta at offset 7 (topic orders)"
    # the cluster's dynamic default over server.properties, the broker's own over both
    assert s.segment_bytes == 3145728
    assert s["segment.bytes"].origin.startswith("metadata image of meta at offset 7 (cluster")
    assert s.log_cleaner_threads == 4
    assert s["log.cleaner.threads"].origin == "metadata image of meta at offset 7 (broker 1)"
    # another topic: the image holds nothing of its own, the broker layers still apply
    other = resolve_settings(layers, "audit")
    assert other.retention_ms == 3_600_000 and other.segment_bytes == 3145728
    # --config wins over the image
    option = RawSetting("retention.ms", "5", Source.OPTION, "--config retention.ms=5")
    assert (
        resolve_settings(ConfigLayers(options=(option,), metadata=metadata), "orders").retention_ms
        == 5
    )


def test_the_image_wins_over_kafkas_internal_topic_config() -> None:
    metadata = image(topics={"__consumer_offsets": {"segment.bytes": "52428800"}})
    s = resolve_settings(ConfigLayers(metadata=metadata), "__consumer_offsets")
    assert s.segment_bytes == 52428800 and s["segment.bytes"].source is Source.METADATA
    assert s.compact  # cleanup.policy still Kafka's internal-topic config


def test_a_value_todays_validator_refuses_is_said_and_skipped() -> None:
    metadata = image(topics={"orders": {"segment.bytes": "1000"}})
    s = resolve_settings(ConfigLayers(metadata=metadata), "orders")
    assert s["segment.bytes"].source is Source.DEFAULT
    assert s.notes == (
        "metadata image of meta at offset 7 (topic orders): Invalid value 1000 for "
        "configuration segment.bytes: Value must be at least 1048576; not used",
    )


def test_found_beside_a_log_dir_a_partition_or_a_segment(tmp_path: Path) -> None:
    log = MetadataLog()
    log.records(
        topic("orders", ORDERS),
        config(2, "orders", "index.interval.bytes", "128"),
        config(4, "", "log.retention.hours", "2"),
        config(4, "5", "log.retention.hours", "3"),
        config(4, "6", "log.retention.hours", "4"),
    )
    log_dir = tmp_path / "broker"
    write_metadata_dir(log_dir, bytes(log.data))
    (log_dir / "meta.properties").write_text("version=1\nnode.id=5\ncluster.id=abc\n")
    (log_dir / "orders-0").mkdir()
    (log_dir / "orders-0" / SEGMENT).write_bytes(b"")
    for path in (log_dir, log_dir / "orders-0", log_dir / "orders-0" / SEGMENT):
        found = find_metadata_configs([str(path)])
        assert found is not None
        assert found.topics == {"orders": {"index.interval.bytes": "128"}}
        assert (found.cluster, found.broker, found.node_id) == (
            {"log.retention.hours": "2"},
            {"log.retention.hours": "3"},
            5,
        )
        assert found.offset == 4
    assert find_metadata_configs([str(tmp_path / "other" / "orders-0")]) is None
    named = find_metadata_configs([], str(log_dir / METADATA))
    assert named is not None and named.node_id == 5 and named.location == str(log_dir / METADATA)


def test_a_damaged_metadata_log_gives_its_configs_up_to_the_damage(tmp_path: Path) -> None:
    log = MetadataLog()
    log.records(config(2, "orders", "retention.ms", "1000"))
    log.records(config(2, "orders", "retention.ms", "2000"))
    data = bytearray(log.data)
    data[log.positions[1] + 61] ^= 0xFF
    write_metadata_dir(tmp_path, bytes(data))
    found = find_metadata_configs([str(tmp_path)])
    assert found is not None and found.topics == {"orders": {"retention.ms": "1000"}}
    assert found.notes == (
        f"the metadata log's replay stopped at {tmp_path / METADATA / SEGMENT}:"
        f"{log.positions[1]}: the batch's CRC does not match its bytes: configs as of offset 0",
    )
    s = resolve_settings(ConfigLayers(metadata=found), "orders")
    assert s.retention_ms == 1000 and s.notes == found.notes


def test_explain_on_a_combined_mode_log_dir_names_the_image() -> None:
    ran = run_kdump(["explain", str(COMBINED / "__consumer_offsets-0"), "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    [partition] = json.loads(ran.stdout)["partitions"]
    origin = f"metadata image of {COMBINED / METADATA} at offset 2066 (topic __consumer_offsets)"
    for name in ("segment.bytes", "cleanup.policy"):
        assert partition["setting_sources"][name] == {"source": "metadata image", "origin": origin}
    text = run_kdump(["explain", str(COMBINED / "__consumer_offsets-0")]).stdout
    assert f"  segment.bytes=104857600  [{origin}]" in text.splitlines()


def test_explain_takes_metadata_from_another_directory(tmp_path: Path) -> None:
    log = MetadataLog()
    log.records(config(2, "__consumer_offsets", "retention.ms", "77000"))
    write_metadata_dir(tmp_path, bytes(log.data))
    args = ["explain", str(COMBINED / "__consumer_offsets-0"), "--format", "json"]
    ran = run_kdump([*args, "--metadata", str(tmp_path)])
    assert ran.exit_code == 0, ran.stderr
    [partition] = json.loads(ran.stdout)["partitions"]
    assert partition["settings"]["retention.ms"] == 77000
    assert partition["setting_sources"]["segment.bytes"]["source"] == (
        "Kafka's internal-topic config"
    )  # the named image holds no segment.bytes: the one beside the partition is not read
    missing = run_kdump([*args, "--metadata", str(tmp_path / "nope")])
    assert missing.exit_code == 3
    assert missing.stderr == f"kdump: {tmp_path / 'nope'}: no such file or directory\n"


@pytest.mark.parametrize("command", [["rebuild-index"], ["recover", "--as-broker"]])
def test_rebuild_index_writes_at_each_topics_own_interval(
    tmp_path: Path, command: list[str]
) -> None:
    """index.interval.bytes=128 for orders in the image, nothing for audit: orders' index has
    an entry after each 180-byte batch (LogSegment.recover: one once more than 128 bytes
    passed since the last), audit's none in 20 batches (4096 bytes never pass). recover
    --as-broker rebuilds every segment after an unclean stop (no .kafka_cleanshutdown)."""
    log = MetadataLog()
    log.records(config(2, "orders", "index.interval.bytes", "128"))
    log_dir = tmp_path / "broker"
    write_metadata_dir(log_dir, bytes(log.data))
    batches = b"".join(
        batch_bytes(i, [1_780_000_000_000 + i], records=[(b"k", b"v" * 120)]) for i in range(20)
    )
    for name in ("orders-0", "audit-0"):
        (log_dir / name).mkdir()
        (log_dir / name / SEGMENT).write_bytes(batches)
    out = tmp_path / "out"
    ran = run_kdump([*command, str(log_dir / "orders-0"), str(log_dir / "audit-0"),
                     "--output-dir", str(out)])  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    index = SEGMENT.replace(".log", ".index")
    assert (out / "orders-0" / index).stat().st_size == 19 * 8
    assert (out / "audit-0" / index).stat().st_size == 0
    assert f"metadata image of {log_dir / METADATA} at offset 0 (topic orders)" in ran.stdout
    given = run_kdump([*command, str(log_dir / "orders-0"), "--output-dir",
                       str(tmp_path / "given"), "--index-interval-bytes", "4096"])  # fmt: skip
    assert given.exit_code == 0, given.stderr
    assert (tmp_path / "given" / "orders-0" / index).stat().st_size == 0  # the option wins


def java_hash_partition(text: str, count: int) -> int:
    """TransactionStateManager.partitionFor: Utils.abs(String.hashCode) % count."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % count


def test_txn_takes_transaction_state_partitions_from_the_image(tmp_path: Path) -> None:
    state_id = "dHJhbnNhY3Rpb25zdGF0ZQ"
    log = MetadataLog()
    log.records(
        topic("__transaction_state", state_id),
        *(partition(state_id, p, [1], 1) for p in range(7)),
    )
    log_dir = tmp_path / "broker"
    write_metadata_dir(log_dir, bytes(log.data))
    (log_dir / "orders-0").mkdir()
    (log_dir / "orders-0" / SEGMENT).write_bytes(b"")
    ran = run_kdump(["txn", str(log_dir), "--transactional-id", "payments-7", "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    [found] = json.loads(ran.stdout)["transactional_ids"]
    assert found == {
        "transactional_id": "payments-7",
        "partition": java_hash_partition("payments-7", 7),
        "partition_count": 7,
    }


def test_report_draws_index_density_against_the_topics_own_interval(tmp_path: Path) -> None:
    from kdump.report import ReportOptions, collect

    log = MetadataLog()
    log.records(config(2, "orders", "index.interval.bytes", "128"))
    log_dir = tmp_path / "broker"
    write_metadata_dir(log_dir, bytes(log.data))
    for name in ("orders-0", "audit-0"):
        (log_dir / name).mkdir()
        (log_dir / name / SEGMENT).write_bytes(b"")
    layers = ConfigLayers(metadata=find_metadata_configs([str(log_dir)]))
    model = collect([str(log_dir)], ReportOptions(now=0, layers=layers))
    intervals = {p.topic: p.index_interval_bytes for d in model.log_dirs for p in d.partitions}
    assert intervals["orders"] == 128 and intervals["audit"] == 4096


def test_txn_takes_producer_id_expiration_from_the_image(tmp_path: Path) -> None:
    """producer.id.expiration.ms is a dynamic broker config (KIP-854): the cluster's default
    in the image (1 s) drops a producer idle a minute, Kafka's 1 day does not; this broker's
    own (node.id 1 in meta.properties) wins over the cluster's; the option over both."""
    log = MetadataLog()
    log.records(config(4, "", "producer.id.expiration.ms", "1000"))
    log_dir = tmp_path / "broker"
    write_metadata_dir(log_dir, bytes(log.data))
    (log_dir / "orders-0").mkdir()
    t0 = 1_780_000_000_000
    (log_dir / "orders-0" / SEGMENT).write_bytes(batch_bytes(0, [t0], 4000, 0, 0))

    def expired(*more: str) -> list[int]:
        args = ["txn", str(log_dir / "orders-0"), "--now", str(t0 + 60_000), "--format", "json"]
        ran = run_kdump([*args, *more])
        assert ran.exit_code == 0, ran.stderr
        [partition] = json.loads(ran.stdout)["partitions"]
        return [p["producer_id"] for p in partition["producer_state"] if p["expired"]]

    assert expired() == [4000]
    assert expired("--producer-id-expiration-ms", "86400000") == []
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=c\n")
    own = MetadataLog()
    own.records(
        config(4, "", "producer.id.expiration.ms", "1000"),
        config(4, "1", "producer.id.expiration.ms", "3600000"),
    )
    write_metadata_dir(log_dir, bytes(own.data))
    assert expired() == []


def test_txn_goes_on_where_the_metadata_log_beside_does_not_read(tmp_path: Path) -> None:
    """An empty __cluster_metadata-0 beside the partitions: txn analyses them all the same,
    with Kafka's settings, and says why it has no image (as explain's settings do)."""
    log_dir = tmp_path / "broker"
    (log_dir / METADATA).mkdir(parents=True)
    (log_dir / "orders-0").mkdir()
    (log_dir / "orders-0" / SEGMENT).write_bytes(batch_bytes(0, [1_780_000_000_000], 4000, 0, 0))
    ran = run_kdump(["txn", str(log_dir), "--format", "json"])
    assert ran.exit_code == 0, ran.stderr
    assert [p["partition"] for p in json.loads(ran.stdout)["partitions"]] == [0]
    assert ran.stderr == f"kdump: note: no metadata image: {log_dir / METADATA}: holds no Kafka " \
        "partition or log directory\n"  # fmt: skip
