"""``kdump metadata``'s replay of a big cluster's metadata log: time on one core and memory
against the image (issue 31: 1 M records in 10 s at most; memory proportional to the image,
not the log).

Builds (once) under bench/out/ the ``__cluster_metadata-0`` of a cluster of 50 brokers and
4,000 topics of 100 partitions, written by an independent encoder (records from Kafka's JSON
specs by tests/metadata_codec.py, batches by kafka-python's builder as tests/txnlog.py writes
them; one template per record kind and topic, its partition id patched): each topic created in
one batch (TopicRecord, 100 PartitionRecords v1 with directories, two ConfigRecords), then
leader and ISR changes (PartitionChangeRecords, 500 a batch), the heartbeat NoOpRecords a
controller writes one a batch, broker fencing and unfencing, until the log holds the records
asked for (1,000,000). A second log holds the same and as many changes again (2,000,000
records, the same image at its end): the replay's memory must not grow with it.

Measured, each the best of --runs (CPU time: the machine is shared):

(a) the replay alone, in this process (kdump.kraft.loader.load_metadata), CPU seconds and
    records per second;
(b) ``kdump metadata DIR --format json`` as a child process (start-up and the JSON of 400,000
    partitions, written topic by topic, included): CPU seconds and peak RSS;
(c) peak RSS of ``kdump metadata DIR /image/producerIds`` (the replay, a one-line answer) for
    the 1 M and the 2 M record logs.

Run from the repository root::

    .venv/bin/python bench/bench_metadata.py                  # 1 M records, about 2 minutes
    .venv/bin/python bench/bench_metadata.py --records 200000 # quicker
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"
sys.path.insert(0, str(REPO / "tests"))

from metadata_codec import encode  # noqa: E402
from txnlog import batch_bytes  # noqa: E402

from kdump.kraft.loader import load_metadata  # noqa: E402

BROKERS, PARTITIONS = 50, 100
T0 = 1_780_000_000_000
PARTITION_ID_AT = 3
"""A framed PartitionRecord or PartitionChangeRecord: frame (3 bytes), then PartitionId int32."""


def topic_id(n: int) -> str:
    import base64

    return base64.urlsafe_b64encode(struct.pack(">QQ", 0x5EED, n + 1)).rstrip(b"=").decode()


def dir_id(broker: int) -> str:
    import base64

    return base64.urlsafe_b64encode(struct.pack(">QQ", 0xD1, broker + 1)).rstrip(b"=").decode()


def with_partition(template: bytes, partition: int) -> bytes:
    raw = bytearray(template)
    struct.pack_into(">i", raw, PARTITION_ID_AT, partition)
    return bytes(raw)


def replicas_of(t: int, p: int) -> list[int]:
    first = (t * 7 + p) % BROKERS
    return [first, (first + 1) % BROKERS, (first + 2) % BROKERS]


def create_topic(t: int) -> list[bytes]:
    tid = topic_id(t)
    out = [encode("TopicRecord", {"name": f"topic-{t:05d}", "topicId": tid})]
    for p in range(PARTITIONS):
        replicas = replicas_of(t, p)
        data = {
            "partitionId": p,
            "topicId": tid,
            "replicas": replicas,
            "isr": replicas,
            "leader": replicas[0],
            "leaderEpoch": 0,
            "partitionEpoch": 0,
            "directories": [dir_id(b) for b in replicas],
        }
        out.append(encode("PartitionRecord", data, 1))
    for name, value in (
        ("retention.ms", str(3_600_000 * (1 + t % 48))),
        ("cleanup.policy", "delete"),
    ):
        data = {"resourceType": 2, "resourceName": f"topic-{t:05d}", "name": name, "value": value}
        out.append(encode("ConfigRecord", data))
    return out


def change_templates(t: int) -> list[bytes]:
    """Three PartitionChangeRecords of topic t, partition 0: a new leader, an ISR shrink, both."""
    tid = topic_id(t)
    return [
        encode("PartitionChangeRecord", {"partitionId": 0, "topicId": tid, "leader": 1}),
        encode("PartitionChangeRecord", {"partitionId": 0, "topicId": tid, "isr": [1, 2]}),
        encode(
            "PartitionChangeRecord", {"partitionId": 0, "topicId": tid, "leader": 2, "isr": [2]}
        ),
    ]


def topics_for(records: int) -> int:
    """4,000 topics (400,000 partitions) for a million records; fewer for fewer."""
    return min(4000, max(10, records // 250))


def batches(records: int, topics: int, seed: int = 31) -> Iterator[list[bytes]]:
    """The log's record batches, ``records`` records in all."""
    rng = random.Random(seed)
    yield [encode("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 20})]
    for b in range(BROKERS):
        data = {
            "brokerId": b,
            "incarnationId": dir_id(b),
            "brokerEpoch": 1000 + b,
            "endPoints": [
                {"name": "PLAINTEXT", "host": f"broker-{b}", "port": 9092, "securityProtocol": 0}
            ],
            "features": [
                {"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 20}
            ],
            "rack": f"rack-{b % 3}",
            "fenced": True,
            "inControlledShutdown": False,
            "logDirs": [dir_id(b)],
        }
        yield [encode("RegisterBrokerRecord", data, 3)]
        yield [encode("UnfenceBrokerRecord", {"id": b, "epoch": 1000 + b})]
    written = 1 + 2 * BROKERS
    for t in range(topics):
        batch = create_topic(t)
        written += len(batch)
        yield batch
    noop = encode("NoOpRecord", {})
    templates = [change_templates(t) for t in range(topics)]
    while written < records:
        if rng.random() < 0.1:
            written += 1
            yield [noop]
            continue
        n = min(500, records - written)
        yield [
            with_partition(rng.choice(templates[rng.randrange(topics)]), rng.randrange(PARTITIONS))
            for _ in range(n)
        ]
        written += n


def build(records: int, topics: int) -> Path:
    d = OUT / f"metadata-{records}-{topics}" / "__cluster_metadata-0"
    log = d / "00000000000000000000.log"
    if log.exists():
        return d.parent
    d.mkdir(parents=True, exist_ok=True)
    start, offset, count = time.perf_counter(), 0, 0
    with open(log.with_suffix(".tmp"), "wb") as f:
        for values in batches(records, topics):
            times = [T0 + offset + i for i in range(len(values))]
            f.write(batch_bytes(offset, times, leader_epoch=1, records=[(None, v) for v in values]))
            offset += len(values)
            count += 1
    log.with_suffix(".tmp").rename(log)
    print(
        f"built {log.relative_to(REPO)}: {offset} records in {count} batches, "
        f"{log.stat().st_size / 2**20:.0f} MiB, {time.perf_counter() - start:.0f} s"
    )
    return d.parent


def best_cpu(runs: int, fn: Callable[[], object]) -> float:
    out = []
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        out.append(time.process_time() - start)
    return min(out)


def child(args: list[str], runs: int) -> tuple[float, float]:
    """Least CPU seconds (user + system) and largest peak RSS (MiB) of ``kdump ARGS``."""
    cpus, rss = [], []
    for _ in range(runs):
        with open(os.devnull, "wb") as devnull:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kdump", *args], stdout=devnull, cwd=REPO
            )
            _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"kdump {' '.join(args)} exited {os.waitstatus_to_exitcode(status)}")
        cpus.append(usage.ru_utime + usage.ru_stime)
        rss.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return min(cpus), max(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    topics = topics_for(args.records)
    small, large = build(args.records, topics), build(2 * args.records, topics)
    print(f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")

    load = load_metadata(str(small))
    image = load.image
    partitions = sum(len(t.partitions) for t in image.topics_by_id.values())
    topics, brokers = len(image.topics_by_id), len(image.brokers)
    print(f"image: {topics} topics, {partitions} partitions, {brokers} brokers")
    cpu = best_cpu(args.runs, lambda: load_metadata(str(small)))
    rate = load.records / cpu
    print(f"(a) replay of {load.records:,} records: {cpu:.2f} s CPU, {rate:,.0f} records/s")
    cpu, rss = child(["metadata", str(small), "--format", "json"], args.runs)
    print(f"(b) kdump metadata --format json: {cpu:.2f} s CPU, peak RSS {rss:.0f} MiB")
    sizes = []
    for d in (small, large):
        _, rss = child(["metadata", str(d), "/image/producerIds"], 1)
        size = (d / "__cluster_metadata-0" / "00000000000000000000.log").stat().st_size / 2**20
        sizes.append((size, rss))
        print(f"(c) log of {size:.0f} MiB: peak RSS {rss:.0f} MiB")
    (s1, r1), (s2, r2) = sizes
    print(f"    the log x{s2 / s1:.1f}, peak RSS x{r2 / r1:.2f}")


if __name__ == "__main__":
    main()
