"""Crash: a broker SIGKILLed while producers write to it. Before it starts again, kdump says what
its recovery will do; then the real broker starts, and what it serves (ListOffsets,
DescribeProducers), the files it leaves and its own log lines are compared with kdump's word
(verify's facts, ``recover --as-broker``, ``txn``, ``startup``).

One broker (the session's shared one), every partition of its log dir compared, internal topics
included: a plain producer with small batches, an idempotent one with lz4 and larger batches
(both still writing when the broker dies), and a transactional one (gzip, every third
transaction aborted) on a topic whose small ``segment.index.bytes`` rolls a segment every few
kilobytes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from kafka import TopicPartition
from realkafka import (
    Broker,
    Producing,
    Release,
    admin,
    client_log,
    create_topic,
    list_offsets,
    produce,
    wait_for_leaders,
)
from realkafka.broker_log import LoadReport
from realkafka.files import partition_differences, snapshot_offsets
from startup_check import check_load, check_time, startup_json

pytestmark = pytest.mark.kafka

TOPICS = ["crash", "crash-txn"]


def kdump_json(*args: str) -> Any:
    ran = run_kdump([*args, "--format", "json"])
    assert ran.exit_code in (0, 1, 2), ran.stderr
    return json.loads(ran.stdout)


def crash(release: Release, broker: Broker, log: Path) -> dict[int, int]:
    """Write, kill the broker mid-write; the offsets it had acknowledged per partition of
    ``crash``."""
    create_topic(broker.bootstrap, "crash", 2, config={"segment.bytes": "1048576"})
    create_topic(broker.bootstrap, "crash-txn", 1, config={"segment.index.bytes": "160"})
    produce(
        release,
        broker.bootstrap,
        {
            "topic": "crash-txn",
            "records": 600,
            "value_bytes": 300,
            "keys": 7,
            "transactional_id": "crash-txn",
            "transaction_records": 25,
            "abort_every": 3,
            "compression": "gzip",
        },
        log=log,
    )
    plain = {"topic": "crash", "value_bytes": 100, "linger_ms": 0, "acks": "1"}
    idempotent = {"topic": "crash", "value_bytes": 700, "binary": True, "idempotent": True}
    writers = [Producing(release, broker.bootstrap, j, log) for j in (plain, idempotent)]
    for w in writers:
        w.wait_acked(2500)
    broker.kill()
    acked: dict[int, int] = {}
    for w in writers:
        for p, offset in w.kill().items():
            acked[p] = max(acked.get(p, -1), offset)
    return acked


def producers_served(bootstrap: str, partitions: list[tuple[str, int]]) -> dict[str, list[Any]]:
    """DescribeProducers: each partition's producer state as the leader holds it."""
    with admin(bootstrap) as a:
        found = a.describe_producers([TopicPartition(t, p) for t, p in partitions])
    return {
        f"{tp.topic}-{tp.partition}": sorted(
            (
                s.producer_id,
                s.producer_epoch,
                s.last_sequence,
                s.last_timestamp,
                s.coordinator_epoch,
                s.current_transaction_start_offset,
            )
            for s in state.active_producers
        )
        for tp, state in found.items()
    }


def producers_predicted(txn: Any) -> dict[str, list[Any]]:
    return {
        p["path"].rsplit("/", 1)[-1]: sorted(
            (
                s["producer_id"],
                s["producer_epoch"],
                s["last_sequence"],
                s["last_timestamp"],
                s["coordinator_epoch"],
                # the wire's -1 is JSON's null: no open transaction
                -1 if s["current_txn_first_offset"] is None else s["current_txn_first_offset"],
            )
            for s in p["producer_state"]
        )
        for p in txn["partitions"]
    }


def test_kdump_says_what_the_brokers_recovery_does(
    kafka_release: Release, kafka_broker: Broker, tmp_path: Path
) -> None:
    broker = kafka_broker
    acked = crash(kafka_release, broker, client_log(tmp_path))
    log_dir = broker.log_dir

    verified = kdump_json("verify", str(log_dir))
    predicted = {p["path"].rsplit("/", 1)[-1]: p for p in verified["summary"]["by_partition"]}
    txn = kdump_json("txn", str(log_dir))
    said = startup_json(log_dir)
    repaired = tmp_path / "kdump"
    shutil.copytree(log_dir, repaired)
    ran = run_kdump(["recover", "--as-broker", str(repaired)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr

    broker.start()
    loaded = LoadReport.parse(broker.log_lines())
    # kdump startup's list is the broker's (tests/startup_check.py)
    assert check_load(said, loaded, log_dir) == []
    assert check_time(said, loaded, log_dir) is None
    topics = sorted({p["topic"] for p in predicted.values() if p["topic"] != "__cluster_metadata"})
    wait_for_leaders(broker.bootstrap, topics)
    partitions = [(p["topic"], p["partition"]) for p in predicted.values() if p["topic"] in topics]
    latest = list_offsets(broker.bootstrap, {tp: "latest" for tp in partitions})
    earliest = list_offsets(broker.bootstrap, {tp: "earliest" for tp in partitions})

    # every acknowledged record survives the kill (SIGKILL keeps the page cache)
    for p, offset in acked.items():
        assert latest[("crash", p)][0] > offset

    assert loaded.loaded == len(predicted) - 1  # LogManager loads all but the metadata log
    for (topic, p), (end, *_) in sorted(latest.items()):
        name = f"{topic}-{p}"
        fact, load = predicted[name], loaded.logs[name]
        said = (fact["log_start_offset"], fact["log_end_offset"], fact["segments"])
        served = (earliest[(topic, p)][0], end, load.segments)
        assert said == served, name
        assert (load.log_start_offset, load.log_end_offset) == served[:2], name
        forecast = fact["load"]
        assert forecast["recovered_segments"] == sorted(set(load.recovered_segments)), name
        assert forecast["deleted_segments"] == load.deleted_segments, name
        assert partition_differences(repaired / name, log_dir / name, snapshots=False) == []
        # the snapshots the broker's load left are the ones kdump named (it writes none itself:
        # its repaired copy holds those it found less those it deleted)
        assert snapshot_offsets(log_dir / name) == forecast["snapshots_left"], name
        left = set(forecast["snapshots_left"]) - set(forecast["snapshots_written"])
        assert set(snapshot_offsets(repaired / name)) >= left, name

    tps = [tp for tp in partitions if tp[0] in TOPICS]
    served_producers = producers_served(broker.bootstrap, tps)
    predicted_producers = producers_predicted(txn)
    for name, state in served_producers.items():
        assert predicted_producers[name] == state, name
