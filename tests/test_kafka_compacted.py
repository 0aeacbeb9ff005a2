"""A compacted topic on a real three-broker cluster: each broker's cleaner cleans its own replica
(its own clock: the delete horizons it stamps, so the bytes, differ), and ``kdump replicas``
finds the three equal in content; ``kdump verify`` of each broker's log dir, the topic's
``cleanup.policy`` read from the node's own KRaft metadata log, audits each cleaned log clean.

Keys written over and over, tombstones, and a transactional producer's committed and aborted
transactions; 1 MiB segments so the cleaner has closed segments to clean. About 30 seconds with
the cluster started."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from realkafka import Cluster, client_log, create_topic, produce, wait_until

from kdump.checks.compacted import cleaned_sections
from kdump.discovery import discover

pytestmark = pytest.mark.kafka

TOPIC = "compacted-replicas"
CLEANED_WITHIN = 120.0
"""Seconds each broker's cleaner may take (log.cleaner.backoff.ms is 15 s between its looks)."""


def _copy(source: Path, into: Path) -> None:
    """A live log dir copied; a file the broker deletes meanwhile (a ``.deleted`` segment, an
    old snapshot) is left out."""

    def copy(src: str, dst: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            shutil.copy2(src, dst)

    shutil.copytree(source, into, copy_function=copy)


def _json(*args: str) -> tuple[int, Any]:
    ran = run_kdump([*args, "--format", "json"])
    assert ran.exit_code in (0, 1, 2), ran.stderr
    return ran.exit_code, json.loads(ran.stdout)


def test_replicas_each_cleaned_by_its_broker_compare_equal_in_content(
    kafka_three: Cluster, tmp_path: Path
) -> None:
    cluster = kafka_three
    bootstrap = cluster.bootstrap
    create_topic(
        bootstrap,
        TOPIC,
        1,
        replication_factor=3,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1048576",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    produce(
        cluster.release,
        bootstrap,
        {"topic": TOPIC, "records": 3000, "value_bytes": 900, "keys": 40, "tombstone_every": 9},
        {
            "topic": TOPIC,
            "records": 400,
            "value_bytes": 500,
            "keys": 40,
            "transactional_id": "compacted-replicas",
            "transaction_records": 20,
            "abort_every": 3,
        },
        # key-30..key-59 deleted, and left so: the tombstones each cleaner stamps with its own
        # clock (now + delete.retention.ms) make the three replicas' bytes differ
        {"topic": TOPIC, "records": 60, "keys": 60, "tombstone_every": 1},
        {"topic": TOPIC, "records": 1500, "value_bytes": 900, "keys": 30},
        log=client_log(tmp_path),
    )

    def cleaned() -> bool:
        return all(b.cleaned_to(TOPIC, 0) == b.active_base(TOPIC, 0) for b in cluster)

    wait_until(cleaned, "each broker's cleaner to clean up to its active segment", CLEANED_WITHIN)
    copies = []
    for broker in cluster:
        into = tmp_path / f"node{broker.node_id}"
        _copy(broker.log_dir, into)
        copies.append(into / f"{TOPIC}-0")
    cleaned_bytes = {b"".join(p.read_bytes() for p in sorted(c.glob("*.log"))[:-1]) for c in copies}
    assert len(cleaned_bytes) > 1, "the three cleanings wrote the same bytes: nothing to compare"

    code, document = _json("replicas", *map(str, copies))
    assert document["findings"] == [] and code == 0
    for follower in document["followers"]:
        content = follower["content"]
        assert content is not None and content["differing_keys"] == 0
        assert content["leader_keys"] == content["follower_keys"] > 0
        assert follower["differing_batches"] == 0

    for copy in copies:
        (log,) = [p for p in discover([str(copy.parent)]).partitions if p.topic == TOPIC]
        assert cleaned_sections([log]), "cleanup.policy=compact was not read from the KRaft image"
        _, verified = _json("verify", str(copy.parent))
        compacted = [f for f in verified["findings"] if f["code"].startswith("COMPACTED_")]
        assert compacted == []
