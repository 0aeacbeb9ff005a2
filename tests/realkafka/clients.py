"""Real clients against the test brokers: Kafka's own Java producer (``java/Produce.java``) writes
the data; kafka-python's admin client asks what the brokers serve (ListOffsets, Metadata,
DescribeConfigs, ElectLeaders).

A produce job is a dict (the JSON ``Produce`` reads), every field optional but ``topic``:

    topic, partition            where to (no partition: the producer's partitioner)
    records                     how many (default 100); -1: until killed (``Producing``)
    value_bytes, binary         each value's size (100) and kind: repeated text, or random bytes
    keys, tombstone_every       keys cycle over ``key-0..key-(keys-1)`` (0: null keys); every
                                n-th value null
    headers                     headers per record
    compression, batch_size, linger_ms, acks     as the producer configs (none, 16384, 5, all)
    idempotent                  enable.idempotence (off by default: a plain producer)
    transactional_id            a transactional producer: ``transaction_records`` per
                                transaction (10), every ``abort_every``-th one aborted (0: none);
                                ``open_at_end``: the process dies inside its last transaction
    timestamp_start, timestamp_step   CreateTime of record i (default: the producer's clock)
    seed                        of the random bytes
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic, OffsetSpec, OffsetTimestamp

from .release import Release

WAIT_TIMEOUT = 120.0


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_TIMEOUT) -> Any:
    """Poll ``condition`` until it returns something true (returned); AssertionError naming
    ``what`` after ``timeout`` seconds. Exceptions from it count as not yet."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            found = condition()
            if found:
                return found
        except Exception as e:  # a broker still electing, a connection refused
            last = e
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last!r})")


@contextmanager
def admin(bootstrap: str) -> Iterator[KafkaAdminClient]:
    client = wait_until(
        lambda: KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000),
        f"an admin connection to {bootstrap}",
    )
    try:
        yield client
    finally:
        client.close()


def leaders(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> leader node id (-1: none), from a Metadata request."""
    with admin(bootstrap) as a:
        out = {}
        for t in a.describe_topics(topics):
            if t["error_code"] != 0:
                raise AssertionError(f"topic {t['name']}: error {t['error_code']}")
            for p in t["partitions"]:
                out[(t["name"], p["partition_index"])] = p["leader_id"]
        return out


def wait_for_leaders(
    bootstrap: str, topics: list[str], expect: Mapping[tuple[str, int], int] | None = None
) -> dict[tuple[str, int], int]:
    """Until every partition of ``topics`` has a leader (the one ``expect`` names, where it
    names one) and that leader answers ListOffsets for it."""

    def ready() -> dict[tuple[str, int], int] | None:
        found = leaders(bootstrap, topics)
        if not found or any(v < 0 for v in found.values()):
            return None
        if expect and any(found.get(k) != v for k, v in expect.items()):
            return None
        list_offsets(bootstrap, {tp: "latest" for tp in found})
        return found

    return wait_until(ready, f"leaders of {topics}")  # type: ignore[no-any-return]


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
    assignments: Mapping[int, list[int]] | None = None,
) -> None:
    """CreateTopics, then wait until each partition has a leader that serves it."""
    topic = NewTopic(
        name,
        -1 if assignments else partitions,
        -1 if assignments else replication_factor,
        replica_assignments=dict(assignments) if assignments else None,
        topic_configs=dict(config or {}),
    )
    with admin(bootstrap) as a:
        a.create_topics([topic])
    wait_for_leaders(bootstrap, [name])


_SPECS = {"earliest": -2, "latest": -1, "max_timestamp": -3}


def list_offsets(
    bootstrap: str | KafkaAdminClient,
    specs: Mapping[tuple[str, int], str | int],
    isolation: int = 0,
) -> dict[tuple[str, int], tuple[int, int, int]]:
    """ListOffsets: for each (topic, partition), ``"earliest"``, ``"latest"``,
    ``"max_timestamp"`` or a timestamp (the first offset whose timestamp is at or after it):
    the (offset, timestamp, leader epoch) the leader answers (offset -1: none). ``isolation``
    1 is read_committed (the latest offset is then the last stable offset). ``bootstrap``
    may be an open admin client (many queries, one connection)."""
    wire = {
        TopicPartition(t, p): OffsetSpec(_SPECS[s]) if isinstance(s, str) else OffsetTimestamp(s)
        for (t, p), s in specs.items()
    }
    if isinstance(bootstrap, KafkaAdminClient):
        answer = bootstrap.list_partition_offsets(wire, isolation_level=isolation)
    else:
        with admin(bootstrap) as a:
            answer = a.list_partition_offsets(wire, isolation_level=isolation)
    return {
        (tp.topic, tp.partition): (r.offset, r.timestamp, r.leader_epoch)
        for tp, r in answer.items()
    }


def produce(release: Release, bootstrap: str, *jobs: Mapping[str, Any], log: Path) -> list[Any]:
    """Run the jobs in order with Kafka's Java producer; one summary per job: ``sent``,
    ``acked``, ``transactions``, ``offsets`` {partition: [first, last] acknowledged}."""
    result = release.run(
        "Produce", bootstrap, *(json.dumps(dict(j)) for j in jobs), log=log, timeout=600
    )
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


class Producing:
    """A producer running in the background until killed (``records: -1``): what the broker
    has acknowledged so far, per partition, is ``acked`` (the greatest offset)."""

    def __init__(self, release: Release, bootstrap: str, job: Mapping[str, Any], log: Path) -> None:
        command = release.java_command(
            "Produce", bootstrap, json.dumps({**job, "records": -1}), log=log
        )
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.acked: dict[int, int] = {}
        self.count = 0
        self._lock = threading.Lock()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()

    def _read(self, stdout: IO[str]) -> None:
        for line in stdout:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "ack":
                p, offset = int(parts[1]), int(parts[2])
                with self._lock:
                    self.acked[p] = max(self.acked.get(p, -1), offset)
                    self.count += 1

    def wait_acked(self, records: int) -> None:
        """Until the broker has acknowledged at least ``records`` records."""

        def enough() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"the producer exited with {self.process.returncode}")
            return self.count >= records

        wait_until(enough, f"{records} records acknowledged")

    def kill(self) -> dict[int, int]:
        """Kill the producer; the acknowledged offsets, as they stood."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._reader.join()
        with self._lock:
            return dict(self.acked)
