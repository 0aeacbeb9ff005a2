"""Compaction: Kafka's running broker cleans real topics; ``kdump compact`` cleans a copy of them
taken before, and must write the same bytes, pass by pass, with its dry run's numbers what the
broker's cleaner reports.

The broker (the session's shared one) is given the smallest key map it takes
(``log.cleaner.dedupe.buffer.size`` 1 MiB: 39321 keys a pass) and a short cleaner back-off, both
dynamic; each topic is created with ``min.cleanable.dirty.ratio`` 1.0, which holds its cleaner
off (a log is cleaned when its dirty ratio is *above* that), written, copied once its high
watermark is checkpointed, then handed to the cleaner (ratio 0.01):

- ``compact-passes``: transactions (every third aborted), then 60000 keyed records (zstd, a
  tombstone every 7th) over 45000 keys: two passes, the first stopped where the map fills;
  ``delete.retention.ms`` 0, so the tombstones and the markers of emptied transactions the
  first pass stamps go in the second.
- ``compact-lag``: records two hours old, then new ones, ``min.compaction.lag.ms`` one hour: the
  cleanable range ends at the first segment holding a new record.

The broker's clock cannot be pinned; what depends on it is the delete horizon a pass stamps
(its ``now`` plus ``delete.retention.ms``). kdump runs each pass on the copy, sees which batches
it stamped, and takes that pass's ``now`` from the horizon the broker stamped on the same batch
(run again at that clock when it differs); a pass none of whose stamped batches outlives the
cleaning takes the latest clock known, which decides every horizon the same way the broker's
later clock did.

Then the broker stops, ``kdump compact --in-place`` runs on its own log dir and is killed in the
middle of a swap, and the broker starts on what is left: it completes the swap, and serves every
key's latest value.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from realkafka import Broker, Release, admin, client_log, create_topic, list_offsets, produce
from realkafka.clients import wait_until

from kdump.format.walk import iter_batches

pytestmark = pytest.mark.kafka

MAP_BYTES = (1 << 20) + 1
"""The least log.cleaner.dedupe.buffer.size the broker takes (more than 1 MiB per cleaner
thread, KafkaConfig.validateValues): 43690 slots, 39321 keys."""
HELD = "1.0"
"""min.cleanable.dirty.ratio that keeps the cleaner off a log: a ratio is never above 1."""
HOUR = 3_600_000

PASSES = "compact-passes"
LAG = "compact-lag"
TOPICS = {
    PASSES: {
        "cleanup.policy": "compact",
        "internal.segment.bytes": str(64 << 10),
        "delete.retention.ms": "0",
    },
    LAG: {
        "cleanup.policy": "compact",
        "internal.segment.bytes": "8192",
        "min.compaction.lag.ms": str(HOUR),
    },
}


def _set_topic(bootstrap: str, topic: str, ratio: str) -> None:
    with admin(bootstrap) as a:
        config = {**TOPICS[topic], "min.cleanable.dirty.ratio": ratio}
        a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=config)])


def _checkpoint(path: Path, topic: str) -> int | None:
    """``topic``-0's entry in an offset checkpoint file (None: no file, no entry)."""
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.split()
        if name == topic and partition == "0":
            return int(offset)
    return None


def _write(release: Release, broker: Broker, log: Path) -> dict[str, int]:
    """Both topics written; their log end offsets."""
    now = int(time.time() * 1000)
    for topic in TOPICS:
        create_topic(
            broker.bootstrap,
            topic,
            config={**TOPICS[topic], "min.cleanable.dirty.ratio": HELD},
        )
    keyed = {"topic": PASSES, "partition": 0, "value_bytes": 10, "batch_size": 8192}
    old = {"topic": LAG, "partition": 0, "value_bytes": 60, "keys": 40, "batch_size": 1024}
    produce(
        release,
        broker.bootstrap,
        {
            **keyed,
            "records": 300,
            "keys": 50,
            "transactional_id": "compact-passes",
            "transaction_records": 20,
            "abort_every": 3,
        },
        {**keyed, "records": 60000, "keys": 45000, "tombstone_every": 7, "compression": "zstd"},
        {**old, "records": 400, "timestamp_start": now - 2 * HOUR, "tombstone_every": 9},
        {**old, "records": 60},
        log=log,
    )
    latest = list_offsets(broker.bootstrap, {(t, 0): "latest" for t in TOPICS})
    ends = {t: found[0] for (t, _), found in latest.items()}
    hw = broker.log_dir / "replication-offset-checkpoint"
    wait_until(
        lambda: all(_checkpoint(hw, t) == ends[t] for t in TOPICS),
        "the high watermarks checkpointed",
    )
    return ends


def _copy(broker: Broker, into: Path) -> Path:
    """The log dir's own files (not its .lock) and the two partitions, as they are now."""
    into.mkdir()
    for f in broker.log_dir.iterdir():
        if f.is_file() and f.name != ".lock":
            shutil.copy2(f, into)
    for topic in TOPICS:
        shutil.copytree(broker.partition_dir(topic, 0), into / f"{topic}-0")
    return into


def _horizons(partition: Path) -> dict[int, int | None]:
    """Base offset -> delete horizon of every batch in the partition's live .log files."""
    out: dict[int, int | None] = {}
    for log in sorted(partition.glob("*.log")):
        for batch in iter_batches(log.read_bytes()):
            out[batch.base_offset] = batch.delete_horizon_ms
    return out


def _segments(partition: Path) -> dict[str, bytes]:
    """The partition's segment files as the cleaning leaves them (the active segment's indexes,
    preallocated and trimmed on different schedules, left out)."""
    logs = sorted(partition.glob("*.log"))
    active = logs[-1].stem
    return {
        f.name: f.read_bytes()
        for f in sorted(partition.iterdir())
        if f.suffix in (".log", ".index", ".timeindex", ".txnindex")
        and not (f.stem == active and f.suffix != ".log")
    }


def _kdump(part: Path, topic: str, now: int, *args: str) -> dict[str, Any]:
    configs = [a for k, v in TOPICS[topic].items() for a in ("--config", f"{k}={v}")]
    ran = run_kdump(
        [
            *("compact", str(part), "--now", str(now), "--dedupe-buffer-size", str(MAP_BYTES)),
            *("--config", "min.cleanable.dirty.ratio=0.01", *configs, "--format", "json", *args),
        ]
    )
    assert ran.exit_code == 0, ran.stderr
    return dict(json.loads(ran.stdout.splitlines()[-1]))


def _records(part: Path) -> tuple[int, int]:
    """(records, bytes) of the partition's .log files."""
    count = size = 0
    for log in part.glob("*.log"):
        data = log.read_bytes()
        size += len(data)
        count += sum(b.records_count or 0 for b in iter_batches(data))
    return count, size


STATS = re.compile(r"cleaned log (?P<log>\S+) \(dirty section = \[(?P<first>\d+), (?P<end>\d+)\]\)")
SIZES = re.compile(r"(?P<what>Start|End) size: .* \((?P<n>[\d,]+) messages\)")


def _broker_passes(broker: Broker, topic: str) -> list[dict[str, int]]:
    """The broker's own account of each cleaning of ``topic``-0 (LogCleaner.recordStats): the
    dirty section and the records read and written."""
    passes: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    for line in broker.log_lines():
        found = STATS.search(line)
        if found:
            current = None
            if found["log"] == f"{topic}-0":
                current = {"first_dirty": int(found["first"]), "end": int(found["end"])}
                passes.append(current)
            continue
        size = SIZES.search(line)
        if size and current is not None:
            key = "read" if size["what"] == "Start" else "written"
            current[key] = int(size["n"].replace(",", ""))
    return passes


def _clean_like_the_broker(
    log_dir: Path, topic: str, theirs: dict[int, int | None], now: int
) -> list[dict[str, Any]]:
    """kdump's passes over the copy until it is cleaned as far as the broker's; each pass at the
    broker's clock for that pass where one of the batches it stamps tells it. Each pass's dry
    run, checked against what the pass then wrote."""
    part = log_dir / f"{topic}-0"
    saved = log_dir.with_name(log_dir.name + ".before")
    drm = int(TOPICS[topic].get("delete.retention.ms", "86400000"))
    passes: list[dict[str, Any]] = []
    while True:
        dry = _kdump(part, topic, now, "--dry-run")
        if dry["first_dirty_offset"] >= dry["first_uncleanable_offset"]:
            return passes
        before = _horizons(part)
        shutil.copytree(log_dir, saved)
        done = _kdump(part, topic, now, "--in-place")
        after = _horizons(part)
        stamped = [b for b, h in after.items() if h is not None and before.get(b) is None]
        clocks = {h - drm for b in stamped if (h := theirs.get(b)) is not None}
        assert len(clocks) <= 1, f"batches one pass stamped at different clocks: {clocks}"
        if clocks and clocks != {now}:
            (now,) = clocks  # the broker's clock for this pass: the pass again, at it
            shutil.rmtree(log_dir)
            shutil.copytree(saved, log_dir)
            dry = _kdump(part, topic, now, "--dry-run")
            done = _kdump(part, topic, now, "--in-place")
        shutil.rmtree(saved)
        assert (dry["records_after"], dry["bytes_after"]) == _records(part)
        assert done["checkpoint_after"] == dry["checkpoint_after"]
        passes.append(dry)


def test_the_brokers_cleaner_and_kdump_compact_write_the_same_bytes(
    kafka_release: Release, kafka_broker: Broker, tmp_path: Path
) -> None:
    bootstrap = kafka_broker.bootstrap
    broker_configs = {
        "log.cleaner.dedupe.buffer.size": str(MAP_BYTES),
        "log.cleaner.backoff.ms": "200",
    }
    with admin(bootstrap) as a:
        done = a.alter_configs(
            [ConfigResource(ConfigResourceType.BROKER, "1", configs=broker_configs)]
        )
    assert "Error" not in str(done), done
    try:
        ends = _write(kafka_release, kafka_broker, client_log(tmp_path))
        copy = _copy(kafka_broker, tmp_path / "copy")
        started = int(time.time() * 1000)
        uncleanable = {}
        for topic in TOPICS:
            dry = _kdump(copy / f"{topic}-0", topic, started, "--dry-run")
            uncleanable[topic] = dry["first_uncleanable_offset"]
            _set_topic(bootstrap, topic, "0.01")
        cleaned = kafka_broker.log_dir / "cleaner-offset-checkpoint"
        wait_until(
            lambda: all(_checkpoint(cleaned, t) == uncleanable[t] for t in TOPICS),
            "the broker's cleaner done with both topics",
        )
        for topic in TOPICS:
            _set_topic(bootstrap, topic, HELD)
    finally:
        with admin(bootstrap) as a:
            a.reset_configs(
                [ConfigResource(ConfigResourceType.BROKER, "1", configs=list(broker_configs))]
            )
    assert uncleanable[LAG] < ends[LAG] - 60, "the lag bound is below the new records"
    for topic in TOPICS:
        ours, theirs = copy / f"{topic}-0", kafka_broker.partition_dir(topic, 0)
        passes = _clean_like_the_broker(copy, topic, _horizons(theirs), started)
        broker_passes = _broker_passes(kafka_broker, topic)
        assert [(p["first_dirty_offset"], p["checkpoint_after"]) for p in passes] == [
            (p["first_dirty"], p["end"]) for p in broker_passes
        ]
        assert [p["cleaner_stats"]["messages_written"] for p in passes] == [
            p["written"] for p in broker_passes
        ]
        assert [p["cleaner_stats"]["messages_read"] for p in passes] == [
            p["read"] for p in broker_passes
        ]
        assert _segments(ours) == _segments(theirs), f"{topic}: kdump's bytes are not the broker's"
        assert _checkpoint(copy / "cleaner-offset-checkpoint", topic) == uncleanable[topic]
    assert len(_broker_passes(kafka_broker, PASSES)) == 2


SETTLE = "compact-settle"


def _latest(bootstrap: str, topic: str) -> dict[bytes, bytes | None]:
    """Every key's latest value as a consumer reads the partition (None: a tombstone)."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000
    )
    tp = TopicPartition(topic, 0)
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        latest: dict[bytes, bytes | None] = {}
        while consumer.position(tp) < end:
            for records in consumer.poll(timeout_ms=2000).values():
                for r in records:
                    latest[r.key] = r.value
        return latest
    finally:
        consumer.close()


def test_the_broker_settles_a_killed_in_place_compaction(
    kafka_release: Release, kafka_broker: Broker, tmp_path: Path
) -> None:
    """Stopped cleanly, the broker's own partition compacted in place by kdump (the topic's
    settings read from the broker's metadata log), killed once the second group's ``.swap``
    files are there and its replaced files half deleted; the broker starts on that, completes
    the swap as LogLoader does, and serves every key's latest value and the same offsets."""
    bootstrap = kafka_broker.bootstrap
    create_topic(
        bootstrap,
        SETTLE,
        config={"cleanup.policy": "compact", "internal.segment.bytes": "4096"},
    )
    produce(
        kafka_release,
        bootstrap,
        {"topic": SETTLE, "partition": 0, "records": 500, "keys": 40, "value_bytes": 40,
         "tombstone_every": 9, "batch_size": 512},
        log=client_log(tmp_path),
    )  # fmt: skip
    before = _latest(bootstrap, SETTLE)
    offsets = _ends(bootstrap)
    part = kafka_broker.partition_dir(SETTLE, 0)
    kafka_broker.stop()
    segments = sorted(part.glob("*.log"))
    assert len(segments) >= 4
    steps: list[str] = []
    child = os.fork()
    if child == 0:  # kdump compact --in-place, killed at the second group's first deletion
        from kdump.commands.options import config_layers
        from kdump.compact import CompactOptions, compact_in_place
        from kdump.discovery import discover
        from kdump.unified_log import OpenOptions

        def crash(step: str, path: Path) -> None:
            steps.append(step)
            if steps.count("swap") > 3 and step == "deleted":
                os._exit(9)

        try:
            now = int(time.time() * 1000)
            layers = config_layers((), None, None, paths=(str(part),))
            found = discover(
                [str(part)], options=OpenOptions(now_ms=now, layers=layers), urls=False
            )
            for _ in compact_in_place(found.partitions, CompactOptions(now=now), hook=crash):
                pass
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 9, "kdump was not killed mid-swap"
    left = sorted(p.name for p in part.iterdir())
    assert any(n.endswith(".log.swap") for n in left), left
    kafka_broker.start()
    lines = kafka_broker.log_lines()
    assert any("from interrupted swap operation" in line for line in lines)
    assert any(f"{SETTLE}-0" in line and "Recovering file" in line for line in lines)
    assert not [n for n in (p.name for p in part.iterdir()) if n.endswith((".swap", ".cleaned"))]
    assert _ends(bootstrap) == offsets
    assert _latest(bootstrap, SETTLE) == before
    for backup in part.glob("*.kdump-bak*"):  # kdump's, not the broker's: the log dir as it was
        backup.unlink()


def _ends(bootstrap: str) -> tuple[int, int]:
    """The partition's earliest and latest offsets, as ListOffsets answers them."""
    ends = list_offsets(bootstrap, {(SETTLE, 0): "earliest"})[(SETTLE, 0)][0]
    return ends, list_offsets(bootstrap, {(SETTLE, 0): "latest"})[(SETTLE, 0)][0]
