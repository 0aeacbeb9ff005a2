"""``kdump metadata``: the image of KRaft metadata logs, against an independent replay
(tests/metadata_oracle.py) of the genuine broker-written logs and of logs written by an
independent encoder (tests/kraftlog.py); snapshots, transactions, damage, refused records,
redaction, the metadata shell's paths."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
from batchbytes import fix_crc
from clirun import run_kdump
from conftest import FIXTURES, REALFILES
from kraftlog import (
    ABORT,
    BEGIN,
    END,
    METADATA,
    SEGMENT,
    MetadataLog,
    config,
    feature,
    partition,
    register_broker,
    snapshot_bytes,
    snapshot_name,
    topic,
    write_metadata_dir,
)
from metadata_oracle import replay_dir
from test_verify import lock_held

from kdump.kraft.loader import load_metadata
from kdump.kraft.node import REDACTED, image_json, is_sensitive

GENUINE = sorted(REALFILES.rglob(METADATA))
ORDERS = "b3JkZXJzLXRvcGljLWlkAA"
AUDIT = "YXVkaXQtdG9waWMtaWQAAA"
DIR_A = "AAAAAAAAAAAAAAAAAAAAZQ"
DIR_B = "AAAAAAAAAAAAAAAAAAAAZg"


def image_of(path: Path, show_secrets: bool = True) -> dict[str, Any]:
    load = load_metadata(str(path))
    return image_json(
        load.image, None if load.snapshot is None else load.snapshot.path, show_secrets
    )


def kdump_json(*args: str) -> tuple[int, Any, str]:
    ran = run_kdump(["metadata", *args, "--format", "json"])
    return ran.exit_code, json.loads(ran.stdout) if ran.stdout else None, ran.stderr


@pytest.mark.parametrize(
    "directory", [*GENUINE, FIXTURES / "internal" / METADATA], ids=lambda p: p.parent.name
)
def test_image_is_the_independent_replay(directory: Path) -> None:
    assert image_of(directory) == replay_dir(directory)


def test_genuine_logs_are_what_they_hold() -> None:
    """Five brokers' logs as written: at least one of each fact the image keeps."""
    assert len(GENUINE) == 5
    images = [image_of(d) for d in GENUINE]
    assert all(i["offset"] > 0 and "metadata.version" in i["features"] for i in images)
    combined = next(i for d, i in zip(GENUINE, images, strict=True) if "nomanazeem" in str(d))
    assert combined["configs"]["topic"]["__consumer_offsets"] == {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": "104857600",
    }
    assert combined["configs"]["broker"] == {"": {"min.insync.replicas": "1"}}
    assert len(combined["topics"]["__consumer_offsets"]["partitions"]) == 50


def test_the_command_prints_the_image_of_a_log_dir() -> None:
    log_dir = next(d.parent for d in GENUINE if "nomanazeem" in str(d))
    code, doc, err = kdump_json(str(log_dir))
    assert (code, err) == (0, "")
    assert doc == replay_dir(log_dir / METADATA)
    assert list(doc) == [
        "offset", "epoch", "snapshot", "features", "brokers", "controllers", "topics",
        "configs", "client_quotas", "producer_ids", "acls", "scram", "delegation_tokens",
    ]  # fmt: skip
    ran = run_kdump(["metadata", str(log_dir)])
    assert ran.exit_code == 0
    assert "topics (2, 53 partitions):" in ran.stdout
    assert "  topic __consumer_offsets: cleanup.policy=compact" in ran.stdout


# -- logs written by the independent encoder ------------------------------------------------------


def cluster_log() -> MetadataLog:
    log = MetadataLog()
    log.leader_change()
    log.records(feature("metadata.version", 20), feature("group.version", 1))
    log.records(register_broker(1, 10, logDirs=[DIR_B, DIR_A]), register_broker(2, 11))
    log.records(
        topic("orders", ORDERS),
        partition(ORDERS, 0, [1, 2], 1, directories=[DIR_A, MIGRATING_DIR]),
        partition(ORDERS, 1, [2, 1], 2),
        config(2, "orders", "retention.ms", "3600000"),
        config(2, "orders", "segment.bytes", "1048576"),
    )
    log.records(("UnfenceBrokerRecord", {"id": 1, "epoch": 10}))
    log.records(
        ("PartitionChangeRecord", {"partitionId": 0, "topicId": ORDERS, "isr": [1], "leader": 2})
    )
    log.records(config(2, "orders", "segment.bytes", None), config(4, "", "log.retention.ms", "1"))
    return log


MIGRATING_DIR = "AAAAAAAAAAAAAAAAAAAAAA"


def test_records_in_order(tmp_path: Path) -> None:
    d = write_metadata_dir(tmp_path, bytes(cluster_log().data))
    got = image_of(d)
    assert got == replay_dir(d)
    p0 = got["topics"]["orders"]["partitions"]["0"]
    assert (p0["leader"], p0["leader_epoch"], p0["partition_epoch"], p0["isr"]) == (2, 1, 1, [1])
    assert p0["directories"] == [DIR_A, MIGRATING_DIR]
    assert got["topics"]["orders"]["partitions"]["1"]["directories"] == [MIGRATING_DIR] * 2
    assert got["configs"]["topic"] == {"orders": {"retention.ms": "3600000"}}  # null deletes
    assert got["brokers"]["1"]["fenced"] is False and got["brokers"]["2"]["fenced"] is True
    assert got["brokers"]["1"]["log_dirs"] == [DIR_A, DIR_B]  # sorted as Uuid.compareTo
    assert got["offset"] == 13 and got["epoch"] == 1


def test_snapshot_then_the_log_after_it(tmp_path: Path) -> None:
    log = cluster_log()
    end = log.offset
    log.records(topic("audit", AUDIT), partition(AUDIT, 0, [2], 2))
    older = snapshot_bytes([feature("metadata.version", 7)], epoch=1)
    newer = snapshot_bytes(
        [feature("metadata.version", 21), register_broker(3, 5)],
        [topic("orders", ORDERS), partition(ORDERS, 0, [3], 3)],
        epoch=1,
    )
    snapshots = {
        snapshot_name(2, 1): older,
        snapshot_name(end, 1): newer,
        # a writer's leftover and a deleted one: never loaded (KafkaMetadataLog.recoverSnapshots)
        snapshot_name(end + 1, 1) + ".part": b"\x00" * 10,
        snapshot_name(end + 1, 1) + ".deleted": newer,
    }
    d = write_metadata_dir(tmp_path, bytes(log.data), snapshots)
    got = image_of(d)
    assert got == replay_dir(d)
    assert got["snapshot"] == str(d / snapshot_name(end, 1))
    assert got["features"] == {"metadata.version": 21}  # the snapshot replaced the image
    assert list(got["brokers"]) == ["3"]
    assert got["topics"]["orders"]["partitions"]["0"]["replicas"] == [3]
    assert got["topics"]["audit"]["partitions"]["0"]["leader"] == 2
    assert got["offset"] == end + 1


def test_an_unreadable_newest_snapshot_falls_back_to_the_older(tmp_path: Path) -> None:
    log = cluster_log()
    end = log.offset
    bad = bytearray(snapshot_bytes([feature("metadata.version", 21)]))
    bad[-3] ^= 0xFF  # the footer batch's bytes: its CRC no longer matches
    good = snapshot_bytes([feature("metadata.version", 20), register_broker(9, 1)])
    d = write_metadata_dir(
        tmp_path, bytes(log.data), {snapshot_name(3, 1): good, snapshot_name(end, 1): bytes(bad)}
    )
    code, doc, err = kdump_json(str(d))
    assert code == 2
    assert doc == replay_dir(d)
    assert doc["snapshot"] == str(d / snapshot_name(3, 1))
    footer = len(bad) - 75  # the footer batch is the last 75 bytes
    assert f"{d / snapshot_name(end, 1)}:{footer}: " in err
    assert "does not read (a controller stops on it" in err


def test_transactions_committed_aborted_and_open(tmp_path: Path) -> None:
    log = cluster_log()
    log.records(BEGIN, topic("audit", AUDIT))
    log.records(partition(AUDIT, 0, [1], 1), END)
    log.records(BEGIN, config(2, "orders", "retention.ms", "1"), ABORT)
    log.records(topic("later", "bGF0ZXItdG9waWMtaWQAAA"))
    begin = log.records(BEGIN, topic("never", "bmV2ZXItdG9waWMtaWQAAA"))
    log.records(config(2, "audit", "retention.ms", "5"))
    d = write_metadata_dir(tmp_path, bytes(log.data))
    code, doc, err = kdump_json(str(d))
    assert code == 0
    assert doc == replay_dir(d)
    assert set(doc["topics"]) == {"orders", "audit", "later"}
    assert doc["configs"]["topic"] == {"orders": {"retention.ms": "3600000"}}
    assert doc["offset"] == begin - 1  # the image Kafka last published
    assert f"the metadata transaction begun at offset {begin} has no end" in err
    assert "1 aborted metadata transaction(s)" in err


def test_a_damaged_batch_ends_the_replay_there(tmp_path: Path) -> None:
    log = cluster_log()
    log.records(topic("audit", AUDIT))
    position = log.positions[-1]
    log.records(topic("after", "YWZ0ZXItdG9waWMtaWQAAA"))
    data = bytearray(log.data)
    data[position + 70] ^= 0x01  # inside the audit batch's records
    d = write_metadata_dir(tmp_path, bytes(data))
    code, doc, err = kdump_json(str(d))
    assert code == 2
    assert doc == replay_dir(d)
    assert set(doc["topics"]) == {"orders"}
    assert doc["offset"] == 13  # the last batch before the damage
    assert f"{d / SEGMENT}:{position}: the batch's CRC does not match its bytes" in err
    assert "the replay stops here" in err


def test_a_torn_tail_ends_the_replay(tmp_path: Path) -> None:
    log = cluster_log()
    whole = len(log.data)
    log.records(topic("audit", AUDIT))
    d = write_metadata_dir(tmp_path, bytes(log.data[: whole + 30]))
    code, doc, err = kdump_json(str(d))
    assert code == 2
    assert doc == replay_dir(d)
    assert f"{d / SEGMENT}:{whole}: " in err and "torn, partial batch" in err


def test_a_refused_record_is_a_fault_and_the_rest_goes_on(tmp_path: Path) -> None:
    log = cluster_log()
    at = log.records(("FenceBrokerRecord", {"id": 7, "epoch": 1}))
    log.records(("FenceBrokerRecord", {"id": 1, "epoch": 99}), topic("audit", AUDIT))
    d = write_metadata_dir(tmp_path, bytes(log.data))
    code, doc, err = kdump_json(str(d))
    assert code == 2
    assert doc == replay_dir(d)
    assert "audit" in doc["topics"]
    assert (
        f"{d / SEGMENT}: offset {at}: Tried to fence broker 7, but that broker was not "
        "registered.: the record is not in the image" in err
    )
    assert "the given epoch, 99, did not match the current broker epoch, 10" in err


def test_a_later_epoch_snapshot_drops_the_log(tmp_path: Path) -> None:
    """KafkaMetadataLog.truncateToLatestSnapshot: a snapshot of epoch 5 over a log of epoch 1."""
    log = cluster_log()
    snapshot = snapshot_bytes([feature("metadata.version", 21)], epoch=5)
    d = write_metadata_dir(tmp_path, bytes(log.data), {snapshot_name(3, 5): snapshot})
    code, doc, err = kdump_json(str(d))
    assert code == 0
    assert doc["features"] == {"metadata.version": 21} and doc["topics"] == {}
    assert (doc["offset"], doc["epoch"]) == (2, 5)
    assert "truncateToLatestSnapshot" in err


def test_one_snapshot_named_on_its_own(tmp_path: Path) -> None:
    snapshot = snapshot_bytes([feature("metadata.version", 21), register_broker(3, 5)], epoch=4)
    d = write_metadata_dir(tmp_path, None, {snapshot_name(42, 4): snapshot})
    code, doc, _ = kdump_json(str(d / snapshot_name(42, 4)))
    assert code == 0
    assert (doc["offset"], doc["epoch"], list(doc["brokers"])) == (41, 4, ["3"])
    text = run_kdump(["metadata", str(d / snapshot_name(42, 4))]).stdout
    assert "; 3 batches, 2 records read" in text  # header, records, footer


def test_the_zero_checkpoint_named_on_its_own(tmp_path: Path) -> None:
    """The metadata shell refuses 00000000000000000000-0000000000.checkpoint (the bootstrap
    records KIP-1170 puts there); kdump reads it as any snapshot."""
    zero = snapshot_bytes([feature("metadata.version", 21)], epoch=0)
    d = write_metadata_dir(tmp_path, None, {snapshot_name(0, 0): zero})
    code, doc, err = kdump_json(str(d / snapshot_name(0, 0)))
    assert (code, err) == (0, "")
    assert (doc["offset"], doc["epoch"], doc["features"]) == (-1, 0, {"metadata.version": 21})
    text = run_kdump(["metadata", str(d / snapshot_name(0, 0))]).stdout
    assert "  before the log's first offset (offset -1), epoch 0" in text


def test_a_genuine_bootstrap_checkpoint_in_words() -> None:
    """Kafka writes bootstrap.checkpoint with end offset 0 and log time 0: no offset yet and
    no time, not 'at offset -1 … 1970'."""
    (bootstrap, *_) = sorted(REALFILES.rglob("bootstrap.checkpoint"))
    ran = run_kdump(["metadata", str(bootstrap)])
    assert ran.exit_code == 0, ran.stderr
    assert "\n  before the log's first offset (offset -1), epoch 0; " in ran.stdout
    assert "1970" not in ran.stdout


def test_a_live_nodes_directory_is_read_without_its_lock(tmp_path: Path) -> None:
    """The metadata shell takes the log dir's .lock and refuses a running node's directory
    (KAFKA-15956); kdump takes no lock and reads it while the node holds it."""
    log_dir = tmp_path / "kafka-logs"
    shutil.copytree(GENUINE[0], log_dir / METADATA)
    with lock_held(log_dir / ".lock"):
        code, doc, err = kdump_json(str(log_dir))
        assert (code, err) == (0, "")
        assert doc == image_of(GENUINE[0], show_secrets=False)


def test_what_else_the_image_keeps(tmp_path: Path) -> None:
    acl_id = "YWNsLWlkLTAwMDAwMDAwMA"
    log = cluster_log()
    log.records(
        feature("group.version", 0),  # level 0 removes a feature
        ("ProducerIdsRecord", {"brokerId": 1, "brokerEpoch": 10, "nextProducerId": 5000}),
        ("ClientQuotaRecord", {
            "entity": [{"entityType": "user", "entityName": "al(i)ce"},
                       {"entityType": "client-id", "entityName": None}],
            "key": "producer_byte_rate", "value": 1024.0, "remove": False,
        }),
        ("AccessControlEntryRecord", {
            "id": acl_id, "resourceType": 2, "resourceName": "orders", "patternType": 3,
            "principal": "User:alice", "host": "*", "operation": 3, "permissionType": 3,
        }),
        ("RegisterControllerRecord", {
            "controllerId": 3000, "incarnationId": ORDERS, "zkMigrationReady": False,
            "endPoints": [{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}],
            "features": [],
        }),
        ("UnregisterBrokerRecord", {"brokerId": 2, "brokerEpoch": 11}),
    )  # fmt: skip
    d = write_metadata_dir(tmp_path, bytes(log.data))
    doc = image_of(d)
    assert doc["features"] == {"metadata.version": 20}
    assert doc["producer_ids"] == {"next_producer_id": 5000}
    assert doc["client_quotas"] == {
        "clientId(<default>)_user(al\\(i\\)ce)": {"producer_byte_rate": 1024.0}
    }
    assert doc["acls"] == {
        acl_id: {
            "resource_type": "TOPIC", "resource_name": "orders", "pattern_type": "LITERAL",
            "principal": "User:alice", "host": "*", "operation": "READ",
            "permission_type": "ALLOW",
        }
    }  # fmt: skip
    assert list(doc["controllers"]) == ["3000"] and list(doc["brokers"]) == ["1"]
    log.records(
        ("ClearElrRecord", {"topicName": ""}),
        ("UnregisterControllerRecord", {"controllerId": 3000}),
        ("RemoveAccessControlEntryRecord", {"id": acl_id}),
        ("RemoveTopicRecord", {"topicId": ORDERS}),
    )
    d = write_metadata_dir(tmp_path / "2", bytes(log.data))
    doc = image_of(d)
    assert doc["controllers"] == {} and doc["acls"] == {} and doc["topics"] == {}
    assert doc["configs"]["topic"] == {}  # the topic's configs went with it


def test_clear_elr_bumps_the_partition_epoch(tmp_path: Path) -> None:
    log = MetadataLog()
    log.records(
        topic("orders", ORDERS),
        ("PartitionRecord", {
            "partitionId": 0, "topicId": ORDERS, "replicas": [1, 2], "isr": [1], "leader": 1,
            "leaderEpoch": 4, "partitionEpoch": 6, "eligibleLeaderReplicas": [2],
            "lastKnownElr": [],
        }, 2),
        ("ClearElrRecord", {"topicName": "orders"}),
    )  # fmt: skip
    doc = image_of(write_metadata_dir(tmp_path, bytes(log.data)))
    p0 = doc["topics"]["orders"]["partitions"]["0"]
    assert (p0["eligible_leader_replicas"], p0["partition_epoch"], p0["leader_epoch"]) == ([], 7, 4)


def secrets_log() -> MetadataLog:
    log = MetadataLog()
    log.records(
        ("UserScramCredentialRecord", {
            "name": "alice", "mechanism": 1, "salt": "c2FsdA==", "storedKey": "a2V5",
            "serverKey": "c2s=", "iterations": 4096,
        }),
        ("DelegationTokenRecord", {
            "owner": "User:a", "requester": "User:a", "renewers": ["User:b"],
            "issueTimestamp": 1, "maxTimestamp": 3, "expirationTimestamp": 2, "tokenId": "tok",
        }),
        config(4, "1", "listener.name.internal.ssl.keystore.password", "hunter2"),
        config(4, "1", "log.retention.ms", "1000"),
        config(2, "orders", "some.plugin.setting", "unknown-to-kafka"),
        config(2, "orders", "retention.ms", "1000"),
    )  # fmt: skip
    return log


def test_secrets_are_redacted_unless_asked(tmp_path: Path) -> None:
    d = write_metadata_dir(tmp_path, bytes(secrets_log().data))
    code, doc, _ = kdump_json(str(d))
    assert code == 0
    assert doc["scram"] == {"SCRAM-SHA-256": {"alice": dict.fromkeys(
        ("salt", "stored_key", "server_key", "iterations"), REDACTED)}}  # fmt: skip
    [(key, token)] = doc["delegation_tokens"].items()
    assert "tok" not in key and set(token.values()) == {REDACTED}
    assert doc["configs"]["broker"]["1"] == {
        "listener.name.internal.ssl.keystore.password": REDACTED,
        "log.retention.ms": "1000",
    }
    assert doc["configs"]["topic"]["orders"] == {
        "retention.ms": "1000",
        "some.plugin.setting": REDACTED,  # a config Kafka does not know: sensitive to it
    }
    text = run_kdump(["metadata", str(d)]).stdout
    assert "hunter2" not in text and "c2FsdA" not in text and "73616c74" not in text
    _, shown, _ = kdump_json(str(d), "--show-secrets")
    assert shown["scram"]["SCRAM-SHA-256"]["alice"] == {
        "salt": "73616c74", "stored_key": "6b6579", "server_key": "736b", "iterations": 4096,
    }  # fmt: skip
    assert shown["delegation_tokens"]["tok"]["renewers"] == ["User:b"]
    assert shown["configs"]["broker"]["1"]["listener.name.internal.ssl.keystore.password"] == (
        "hunter2"
    )


BROKER = 4


@pytest.mark.parametrize(
    ("name", "sensitive"),
    [
        # Kafka's PASSWORD configs (the metadata shell redacts them)
        ("ssl.key.password", True),
        ("listener.name.internal.ssl.keystore.key", True),
        ("ssl.truststore.certificates", True),
        ("listener.name.sasl_ssl.plain.sasl.jaas.config", True),
        ("password.encoder.old.secret", True),
        ("delegation.token.master.key", True),
        ("sasl.oauthbearer.assertion.private.key.passphrase", True),
        # a remote storage manager's own config: unknown to Kafka, so sensitive to it
        ("rsm.config.storage.azure.account.key", True),
        # secrets under names no word list knows (issue 39 point 8): unknown, so redacted
        ("config.providers.vault.param.token", True),
        ("rsm.config.storage.azure.connection.string", True),
        ("rsm.config.storage.azure.sas.token", True),
        ("ldap.bind.pw", True),
        ("ssl.keystore.passwd", True),
        ("schema.registry.basic.auth.user.info", True),
        ("listener.name.internal.ssl.keystore.location", True),  # unknown as a name: redacted
        # Kafka's configs of other types
        ("ssl.keystore.location", False),
        ("ssl.keystore.type", False),
        ("log.retention.ms", False),
        ("delegation.token.expiry.time.ms", False),
    ],
)
def test_a_broker_config_holding_a_secret_is_sensitive(name: str, sensitive: bool) -> None:
    assert is_sensitive(BROKER, name) is sensitive


KAFKA_PASSWORD_CONFIGS = (
    "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.password", "ssl.truststore.certificates",
    "sasl.jaas.config", "sasl.oauthbearer.client.credentials.client.secret",
    "sasl.oauthbearer.assertion.private.key.passphrase", "delegation.token.secret.key",
)  # fmt: skip
"""Kafka 4.4.0's broker configs of type PASSWORD (scripts/KafkaConfigNames.java)."""


def test_the_allow_list_holds_no_secret_and_the_usual_configs() -> None:
    from kdump.kraft.safe_configs import BROKER_CONFIGS

    assert BROKER_CONFIGS.isdisjoint(KAFKA_PASSWORD_CONFIGS)
    assert {"num.partitions", "log.dirs", "listeners", "ssl.keystore.location"} <= BROKER_CONFIGS
    assert len(BROKER_CONFIGS) == 369


@pytest.mark.parametrize(
    ("subtree", "expected"),
    [
        ("/image/topics/byName/orders/1", {"leader": 2}),
        ("/image/topics/byId/" + ORDERS + "/name", "orders"),
        ("/image/configs/TOPIC:orders", {"retention.ms": "3600000"}),
        ("/image/configs/BROKER/log.retention.ms", "1"),
        ("/image/cluster/brokers/1", {"fenced": False}),
        ("/image/features/metadataVersion", 20),
        ("/image/features/finalized_group.version", 1),
        ("/image/producerIds/nextProducerId", -1),
        ("/image/provenance", {"offset": 13, "epoch": 1}),
    ],
)
def test_metadata_shell_paths_select_a_subtree(tmp_path: Path, subtree: str, expected: Any) -> None:
    d = write_metadata_dir(tmp_path, bytes(cluster_log().data))
    code, value, _ = kdump_json(str(d), subtree)
    assert code == 0
    if isinstance(expected, dict):
        assert {k: value[k] for k in expected} == expected
    else:
        assert value == expected


def test_a_path_not_in_the_image_names_what_is(tmp_path: Path) -> None:
    d = write_metadata_dir(tmp_path, bytes(cluster_log().data))
    ran = run_kdump(["metadata", str(d), "/image/topics/byName/nope"])
    assert ran.exit_code == 3
    assert ran.stderr == (
        "kdump: /image/topics/byName/nope: /image/topics/byName has no 'nope' (it holds: orders)\n"
    )
    text = run_kdump(["metadata", str(d), "/image/topics/byName/orders/0"]).stdout
    assert text.splitlines()[:3] == ["replicas: [1, 2]", "isr: [1]", "leader: 2"]


def test_no_metadata_log_there(tmp_path: Path) -> None:
    (tmp_path / "orders-0").mkdir()
    (tmp_path / "orders-0" / SEGMENT).write_bytes(b"")
    ran = run_kdump(["metadata", str(tmp_path)])
    assert ran.exit_code == 3
    assert ran.stderr == (
        f"kdump: {tmp_path}: holds no __cluster_metadata-0 directory (a KRaft broker's or "
        "controller's)\n"
    )


def test_a_batch_of_many_records_straddling_the_snapshot(tmp_path: Path) -> None:
    """Records below the snapshot's end offset in the batch that crosses it are the
    snapshot's: skipped."""
    log = MetadataLog()
    log.records(topic("orders", ORDERS), topic("audit", AUDIT), topic("x", DIR_A))
    snapshot = snapshot_bytes([topic("orders", ORDERS)])
    d = write_metadata_dir(tmp_path, bytes(log.data), {snapshot_name(1, 1): snapshot})
    assert set(image_of(d)["topics"]) == {"orders", "audit", "x"}
    assert image_of(d) == replay_dir(d)


def test_leader_epoch_of_batches_is_the_provenance(tmp_path: Path) -> None:
    log = cluster_log()
    log.leader_change(leader=2, epoch=3)
    data = bytearray(log.data)
    struct.pack_into(">i", data, log.positions[-1] + 12, 3)
    fix_crc(data, log.positions[-1])
    doc = image_of(write_metadata_dir(tmp_path, bytes(data)))
    assert (doc["offset"], doc["epoch"]) == (14, 3)


def test_a_copy_of_a_metadata_directory_under_another_name(tmp_path: Path) -> None:
    snapshot = snapshot_bytes([feature("metadata.version", 21)])
    d = write_metadata_dir(tmp_path, bytes(cluster_log().data), {snapshot_name(2, 1): snapshot})
    copy = d.rename(tmp_path / "metadata-backup")
    code, doc, _ = kdump_json(str(copy))
    assert code == 0 and doc == replay_dir(copy)


def test_a_refused_record_in_a_snapshot_leaves_the_rest_of_it(tmp_path: Path) -> None:
    """MetadataLoader.loadSnapshot hands a record the image refuses to its fault handler and
    goes on with the next: the records after it are in the image."""
    snapshot = snapshot_bytes(
        [feature("metadata.version", 21), ("FenceBrokerRecord", {"id": 7, "epoch": 1})],
        [topic("orders", ORDERS), partition(ORDERS, 0, [1], 1)],
    )
    d = write_metadata_dir(tmp_path, None, {snapshot_name(9, 1): snapshot})
    code, doc, err = kdump_json(str(d))
    assert code == 2
    assert doc["features"] == {"metadata.version": 21} and list(doc["topics"]) == ["orders"]
    name = d / snapshot_name(9, 1)
    assert f"{name}: offset 2: Tried to fence broker 7, but that broker was not registered." in err


@pytest.mark.parametrize("seed", range(12))
def test_changed_record_bytes_give_faults_never_an_exception(tmp_path: Path, seed: int) -> None:
    """Bytes inside records changed and the batches' CRCs made right again (what a buggy
    writer, not the disk, would leave): every record still reads or is a fault; the replay
    goes on."""
    import random

    rng = random.Random(seed)
    source = next(d for d in GENUINE if "nomanazeem" in str(d))
    data = bytearray((source / SEGMENT).read_bytes())
    positions, pos = [], 0
    while pos + 61 < len(data):
        positions.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    for at in rng.sample(positions, 40):
        length = struct.unpack_from(">i", data, at + 8)[0]
        for _ in range(3):
            data[at + 61 + rng.randrange(length + 12 - 61)] = rng.randrange(256)
        fix_crc(data, at)
    d = write_metadata_dir(tmp_path, bytes(data))
    ran = run_kdump(["metadata", str(d), "--format", "json"])
    assert ran.exit_code in (0, 2), ran.stderr
    assert "unexpected" not in ran.stderr and "Traceback" not in ran.stderr
    json.loads(ran.stdout)


def test_partition_records_past_what_an_image_keeps_are_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39 point 4: records each within kdump's bound of one message can still add up;
    past IMAGE_ARRAY_ELEMENTS (all told), a partition record is refused as a fault naming why,
    and the image holds the ones before."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from hostile.bombs import metadata_log_dir

    from kdump.kraft import loader

    monkeypatch.setattr(loader, "IMAGE_ARRAY_ELEMENTS", 2500)
    log_dir = metadata_log_dir(tmp_path / "logdir", 1000, records=3)
    load = load_metadata(str(log_dir / "__cluster_metadata-0"))
    ((fault),) = load.faults
    assert fault.offset == 3
    assert "a partition record of 1001 replicas, ISRs and directories, past the 2500" in (
        fault.message
    )
    (topic,) = load.image.topics_by_id.values()
    assert sorted(topic.partitions) == [0, 1]
