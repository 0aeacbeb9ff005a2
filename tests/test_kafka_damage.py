"""Damage: a stopped broker's partitions damaged on disk, one kind of damage per partition; one
copy repaired by ``kdump recover --as-broker``, another loaded by Kafka's own LogManager
(``load_logs``: the broker's startup load, no broker around it). kdump's facts before the repair
must be what Kafka then holds (log start and end, segments, active segment, bytes), its plan
must recover the segments Kafka recovers, and the two copies must be equal file for file (but
the differences tests/realkafka/files.py names).

Each case runs twice: after a clean stop (``.kafka_cleanshutdown`` there: Kafka recovers no
segment but those missing an index, and does not notice damage in the log) and as after a
crash (the marker removed: it recovers from each partition's recovery point on; the cases that
need it have that point at 0, as a crash before the first checkpoint leaves it).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from realkafka import Broker, Cluster, Release, client_log, create_topic, load_logs, produce
from realkafka.damage import (
    corrupt_timeindex,
    deleted_index,
    flipped_middle,
    leftovers,
    no_snapshots,
    torn_tail,
    write_recovery_points,
    zero_tail,
)
from realkafka.files import partition_differences, snapshot_offsets
from realkafka.fixtures import running

pytestmark = pytest.mark.kafka

TOPIC = "damage"
CONFIG = {
    # small segments (a roll each 16 index entries, about 16 KiB), dense indexes
    "segment.index.bytes": "128",
    "index.interval.bytes": "1024",
}


BOTH = ("clean", "crash")
CASES: dict[str, tuple[Callable[[Path], None], bool, tuple[str, ...]]] = {
    # name: (damage, recovery point at 0 in the crash variant, variants)
    "torn-tail": (torn_tail, False, BOTH),
    "flipped-middle-recovered": (flipped_middle, True, BOTH),
    "flipped-middle-below-recovery-point": (flipped_middle, False, BOTH),
    "deleted-index": (deleted_index, False, BOTH),
    "corrupt-timeindex": (corrupt_timeindex, True, BOTH),
    # after a clean stop Kafka's load throws on it: test_zero_tail_after_a_clean_stop
    "zero-tail": (zero_tail, False, ("crash",)),
    "no-snapshots": (no_snapshots, False, BOTH),
    "leftovers": (leftovers, False, BOTH),
}
PARTITIONS = {name: p for p, name in enumerate(CASES)}


@pytest.fixture(scope="module")
def stopped(
    kafka_release: Release, kafka_single: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Broker, Path]]:
    """The damage topic written by an idempotent and a transactional producer, then the broker
    stopped cleanly and its log dir copied (the broker is started again by the next test that
    needs it)."""
    broker = running(kafka_single)
    work = tmp_path_factory.mktemp("damage")
    create_topic(broker.bootstrap, TOPIC, len(CASES), config=CONFIG)
    jobs: list[dict[str, Any]] = []
    for p in PARTITIONS.values():
        jobs.append(
            {
                "topic": TOPIC,
                "partition": p,
                "records": 250,
                "value_bytes": 200,
                "idempotent": True,
                "linger_ms": 0,
                "batch_size": 1024,
                "keys": 5,
            }
        )
        jobs.append(
            {
                "topic": TOPIC,
                "partition": p,
                "records": 60,
                "value_bytes": 150,
                "transactional_id": f"damage-{p}",
                "transaction_records": 10,
                "abort_every": 2,
                "compression": "snappy",
            }
        )
        jobs.append(
            {
                "topic": TOPIC,
                "partition": p,
                "records": 100,
                "value_bytes": 300,
                "idempotent": True,
                "linger_ms": 0,
                "batch_size": 1024,
            }
        )
    produce(kafka_release, broker.bootstrap, *jobs, log=client_log(work))
    broker.stop()
    shutil.copytree(broker.log_dir, work / "stopped")
    yield broker, work / "stopped"


def kdump_json(*args: str) -> Any:
    ran = run_kdump([*args, "--format", "json"])
    assert ran.exit_code in (0, 1, 2), ran.stderr
    return json.loads(ran.stdout)


@pytest.mark.parametrize("variant", ["clean", "crash"])
def test_kdump_recover_leaves_what_kafka_loads(
    kafka_release: Release, stopped: tuple[Broker, Path], tmp_path: Path, variant: str
) -> None:
    broker, source = stopped
    original = tmp_path / "original"
    shutil.copytree(source, original)
    for name, (damage, _, variants) in CASES.items():
        if variant in variants:
            damage(original / f"{TOPIC}-{PARTITIONS[name]}")
    if variant == "crash":
        (original / ".kafka_cleanshutdown").unlink()
        write_recovery_points(
            original, {f"{TOPIC}-{PARTITIONS[n]}": 0 for n, (_, zero, _) in CASES.items() if zero}
        )
    ours, kafka = tmp_path / "kdump", tmp_path / "kafka"
    shutil.copytree(original, ours)
    shutil.copytree(original, kafka)

    verified = kdump_json("verify", str(ours))
    said = {Path(p["path"]).name: p for p in verified["summary"]["by_partition"]}
    ran = run_kdump(["recover", "--as-broker", str(ours)])
    assert ran.exit_code in (0, 2), ran.stdout + ran.stderr

    loaded = load_logs(
        kafka_release, broker.properties_file, kafka, {TOPIC: CONFIG}, client_log(tmp_path)
    )
    assert loaded.error is None
    problems = []
    for name, p in PARTITIONS.items():
        tp = f"{TOPIC}-{p}"
        fact, load, lines = said[tp], loaded.logs[tp], loaded.report.logs[tp]
        keys = ("log_start_offset", "log_end_offset", "segments", "active_segment")
        ours_facts = {k: fact[k] for k in keys} | {"bytes": fact["bytes"]}
        theirs = {k: load[k] for k in keys} | {"bytes": load["size"]}
        if ours_facts != theirs:
            problems.append(f"{name}: kdump says {ours_facts}, Kafka has {theirs}")
        forecast = fact["load"]
        rebuilt = set(lines.recovered_segments) | {
            int(Path(f).name.split(".")[0]) for f in lines.index_rebuilt
        }
        said_load = (forecast["recovered_segments"], forecast["deleted_segments"])
        did = (sorted(rebuilt), sorted(lines.deleted_segments))
        if said_load != did:
            problems.append(
                f"{name}: kdump says the load recovers, deletes {said_load}; Kafka {did}"
            )
        problems += [
            f"{name}: {d}"
            for d in partition_differences(
                ours / tp, kafka / tp, broker_started=False, snapshots=False
            )
        ]
        # the snapshots Kafka's load leaves, kdump names (it writes none: it leaves that to
        # the broker)
        expected = forecast["snapshots_left"]
        if snapshot_offsets(kafka / tp) != expected:
            problems.append(
                f"{name}: snapshots kdump expects {expected}, Kafka left "
                f"{snapshot_offsets(kafka / tp)}"
            )
    assert not problems, "\n".join(problems)


def test_zero_tail_after_a_clean_stop(
    kafka_release: Release, stopped: tuple[Broker, Path], tmp_path: Path
) -> None:
    """Zeros after the active segment's last batch, and the clean shutdown marker: Kafka's
    load reads the log end without recovering (readNextOffset) and throws on the zeros
    (FileLogInputStream: a batch size below the minimum): the broker does not start. kdump
    says so, and ``kdump recover`` (which cuts the zeros) lets it load."""
    broker, source = stopped
    original = tmp_path / "original"
    shutil.copytree(source, original)
    tp = f"{TOPIC}-{PARTITIONS['zero-tail']}"
    zero_tail(original / tp)
    kafka = tmp_path / "kafka"
    shutil.copytree(original, kafka)
    loaded = load_logs(
        kafka_release, broker.properties_file, kafka, {TOPIC: CONFIG}, client_log(tmp_path)
    )
    assert loaded.error is not None and "CorruptRecordException" in loaded.error
    verified = kdump_json("verify", str(original))
    found = [f for f in verified["findings"] if f["code"] == "PARTITION_LOAD_FAILS"]
    assert [Path(f["path"]).parent.name for f in found] == [tp]
    assert verified["summary"]["findings"]["error"] == 1
    ran = run_kdump(["recover", str(original)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    again = load_logs(
        kafka_release, broker.properties_file, original, {TOPIC: CONFIG}, client_log(tmp_path)
    )
    assert again.error is None
    said = {
        Path(p["path"]).name: p
        for p in kdump_json("verify", str(original))["summary"]["by_partition"]
    }
    assert again.logs[tp]["log_end_offset"] == said[tp]["log_end_offset"]
