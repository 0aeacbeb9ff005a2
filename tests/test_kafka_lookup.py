"""Lookup: what the running broker answers (ListOffsets by timestamp, earliest and latest; a
consumer's offsetsForTimes; a consumer's fetch at an offset) against ``kdump lookup`` on the
same partition's files, read while the broker runs.

The data makes the time search work: two producers' timestamps interleave across batches (the
second writes earlier times than the first had reached), batches are plain, gzip and zstd,
small and larger, one producer transactional; small segments, so a lookup crosses segments and
their time indexes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from kafka import KafkaConsumer, TopicPartition
from realkafka import (
    Broker,
    Release,
    admin,
    client_log,
    create_topic,
    list_offsets,
    produce,
    wait_until,
)

pytestmark = pytest.mark.kafka

TOPIC = "lookup"
START = 1_700_000_000_000


def lookup(directory: Path, *args: str) -> Any:
    ran = run_kdump(["lookup", str(directory), *args, "--format", "json"])
    assert ran.exit_code in (0, 1), ran.stdout + ran.stderr
    return json.loads(ran.stdout)


def test_kdump_lookup_answers_as_the_broker(
    kafka_release: Release, kafka_broker: Broker, tmp_path: Path
) -> None:
    broker = kafka_broker
    create_topic(
        broker.bootstrap,
        TOPIC,
        1,
        config={"segment.index.bytes": "160", "index.interval.bytes": "2048"},
    )
    produce(
        kafka_release,
        broker.bootstrap,
        {"topic": TOPIC, "records": 300, "value_bytes": 120, "timestamp_start": START,
         "timestamp_step": 10, "linger_ms": 0, "batch_size": 2048, "keys": 9},
        {"topic": TOPIC, "records": 200, "value_bytes": 400, "timestamp_start": START + 1505,
         "timestamp_step": 7, "compression": "gzip", "batch_size": 8192, "idempotent": True},
        {"topic": TOPIC, "records": 120, "value_bytes": 80, "timestamp_start": START + 900,
         "timestamp_step": 3, "compression": "zstd", "transactional_id": "lookup",
         "transaction_records": 30, "abort_every": 2},
        {"topic": TOPIC, "records": 150, "value_bytes": 1500, "binary": True,
         "timestamp_start": START + 4000, "timestamp_step": 11, "linger_ms": 0},
        log=client_log(tmp_path),
    )  # fmt: skip
    directory = broker.partition_dir(TOPIC, 0)
    tp = (TOPIC, 0)

    with admin(broker.bootstrap) as client:
        earliest = list_offsets(client, {tp: "earliest"})[tp][0]
        latest = list_offsets(client, {tp: "latest"})[tp][0]
        said = lookup(directory, "--offset", "0")
        assert (said["log_start_offset"], said["log_end_offset"]) == (earliest, latest)

        # every record time, the times between them, before all and after all
        times = sorted({START - 5, START + 6000, *range(START, START + 5700, 37)})
        problems = []
        for t in times:
            served = list_offsets(client, {tp: t})[tp]
            answer = lookup(directory, "--timestamp", str(t))
            ours = answer.get("list_offsets") or {"offset": -1, "timestamp": -1}
            mine = (ours["offset"], ours["timestamp"])
            if served[0] == -1:
                theirs: tuple[int, int] = (-1, -1)
            else:
                theirs = (served[0], served[1])
                mine_epoch = ours.get("leader_epoch")
                if mine_epoch != served[2]:
                    problems.append(f"timestamp {t}: leader epoch {mine_epoch}, broker {served[2]}")
            if mine != theirs:
                problems.append(f"timestamp {t}: kdump {mine}, broker {theirs}")
    assert not problems, "\n".join(problems)

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, enable_auto_commit=False, auto_offset_reset="none"
    )
    try:
        partition = TopicPartition(TOPIC, 0)
        # offsetsForTimes, the consumer's own ListOffsets
        for t in times[::7]:
            found = consumer.offsets_for_times({partition: t})
            hit = found[partition]
            answer = lookup(directory, "--timestamp", str(t))
            ours = answer.get("list_offsets")
            assert (hit is None) == (ours is None), t
            if hit is not None and ours is not None:
                assert (hit.offset, hit.timestamp) == (ours["offset"], ours["timestamp"]), t

        # a fetch at an offset: the first record it returns is the one kdump finds
        consumer.assign([partition])
        for offset in range(0, latest, 41):

            def fetched(at: int = offset) -> Any:
                consumer.seek(partition, at)  # again each time: an error may have moved it
                return consumer.poll(timeout_ms=1000, max_records=1).get(partition)

            first = wait_until(fetched, f"a record at offset {offset}")[0]
            answer = lookup(directory, "--offset", str(offset))
            assert answer["outcome"] in ("found", "next"), answer["message"]
            if answer["batch"]["is_control"]:
                # a transaction marker: consumers never see it, the fetch goes on past it
                assert first.offset > offset
                continue
            record = answer["record"]
            assert (first.offset, first.timestamp) == (record["offset"], record["timestamp"])
    finally:
        consumer.close()
