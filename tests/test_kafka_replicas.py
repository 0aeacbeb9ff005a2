"""Replicas: an unclean leader election on the three-node cluster. A partition on brokers 2 and
3 (``unclean.leader.election.enable=true``): both in sync, then broker 3 stopped, broker 2 takes
writes only it has (acks=1) and is killed; broker 3 comes back, is elected uncleanly and takes
writes of its own. With both stopped, ``kdump replicas`` on their two directories says where
broker 2 will truncate when it follows broker 3, and what that drops. Then both start: broker
2's own log lines say where it truncated, and once it has caught up its log is the leader's,
batch for batch, as kdump said it would be.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from realkafka import (
    Cluster,
    Release,
    admin,
    client_log,
    create_topic,
    leaders,
    list_offsets,
    produce,
    wait_until,
)

pytestmark = pytest.mark.kafka

TOPIC = "replicas"
TP = (TOPIC, 0)
TRUNCATING = re.compile(
    rf"Truncating partition {TOPIC}-0 with TruncationState\(offset=(\d+), completed=true\)"
)


def isr(bootstrap: str) -> list[int]:
    with admin(bootstrap) as a:
        topic = a.describe_topic_partitions([TOPIC])["topics"][0]
    return sorted(topic["partitions"][0]["isr_nodes"])


def batches(partition: Path) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, partition leader epoch, crc) of every batch, as kdump dump
    reads them."""
    names = sorted(str(p) for p in partition.glob("*.log"))
    ran = run_kdump(["dump", *names, "--format", "jsonl"])
    assert ran.exit_code == 0, ran.stderr
    out = []
    for line in ran.stdout.splitlines():
        row = json.loads(line)
        if row.get("type") == "batch":
            out.append(
                (row["base_offset"], row["last_offset"], row["partition_leader_epoch"], row["crc"])
            )
    return out


def test_kdump_replicas_predicts_the_followers_truncation(
    kafka_release: Release, kafka_three: Cluster, tmp_path: Path
) -> None:
    cluster = kafka_three
    one, two, three = cluster.brokers
    log = client_log(tmp_path)
    create_topic(
        one.bootstrap,
        TOPIC,
        assignments={0: [2, 3]},
        config={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"},
    )
    job = {"topic": TOPIC, "partition": 0, "value_bytes": 200, "linger_ms": 0}
    produce(kafka_release, one.bootstrap, {**job, "records": 300}, log=log)
    wait_until(lambda: isr(one.bootstrap) == [2, 3], "both replicas in sync")

    three.stop()
    wait_until(lambda: isr(one.bootstrap) == [2], "broker 3 out of the ISR")
    produce(kafka_release, one.bootstrap, {**job, "records": 120, "acks": "1"}, log=log)
    two.kill()
    three.start()

    def elected() -> bool:
        if leaders(one.bootstrap, [TOPIC]).get(TP) == 3:
            return True
        with admin(one.bootstrap) as a:
            a.elect_leaders(1, {TOPIC: [0]}, raise_errors=False)  # UNCLEAN
        return False

    wait_until(elected, "broker 3 elected uncleanly")
    produce(kafka_release, three.bootstrap, {**job, "records": 50, "acks": "1"}, log=log)
    leader_end = list_offsets(three.bootstrap, {TP: "latest"})[TP][0]
    three.stop()

    follower, leader = two.partition_dir(TOPIC, 0), three.partition_dir(TOPIC, 0)
    ran = run_kdump(["replicas", str(follower), str(leader), "--format", "json"])
    assert ran.exit_code == 1, ran.stdout + ran.stderr  # a truncation drops records
    said: Any = json.loads(ran.stdout)
    assert Path(said["leader"]["path"]).parent.parent.name == "node3"
    (predicted,) = said["followers"]
    assert predicted["truncate_to"] is not None

    three.start()
    two.start()
    wait_until(lambda: isr(one.bootstrap) == [2, 3], "broker 2 back in sync")
    truncations = [int(m[1]) for line in two.log_lines() if (m := TRUNCATING.search(line))]
    assert truncations, "broker 2 logged no truncation"
    assert truncations[0] == predicted["truncate_to"]
    # what the truncation dropped is what kdump said it drops: broker 2's acks=1 records past it
    first_lost, last_lost = predicted["lost_offsets"]
    assert first_lost == predicted["truncate_to"]
    assert last_lost == 300 + 120 - 1
    # and the follower, caught up, holds the leader's batches
    assert list_offsets(one.bootstrap, {TP: "latest"})[TP][0] == leader_end
    assert batches(follower) == batches(leader)
