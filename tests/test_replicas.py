"""`kdump replicas`: replicas of one partition built from partitions Kafka's own code wrote
(fixtures/oracle, batch positions and epochs from its manifest), cut, copied and extended with
batches from an independent encoder (tests/txnlog.py: kafka-python's builder); each answer is
worked out here from Kafka's code (LeaderEpochFileCache.endOffsetFor, AbstractFetcherThread),
never from kdump."""

from __future__ import annotations

import base64
import json
import shutil
import struct
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from batchbytes import fix_crc
from clirun import run_kdump
from conftest import ORACLE
from txnlog import COMMIT, batch_bytes, marker_bytes

from kdump.discovery import open_partition
from kdump.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from kdump.format.checkpoint import EpochEntry
from kdump.replicas import compare_replicas

T0 = 1700000000000
TOPIC = "plain"


@cache
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ORACLE / "manifest.json").read_text())
    return data


def oracle_batches(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(segment .log name, batch) of every batch Kafka wrote in fixtures/oracle/NAME."""
    files = manifest()["files"][name]
    return [
        (log, b) for log in sorted(files) if log.endswith(".log") for b in files[log]["batches"]
    ]


def checkpoint_text(entries: list[tuple[int, int]]) -> str:
    """LeaderEpochCheckpointFile: version 0, the count, then ``epoch startOffset`` lines."""
    return "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)


def observed(name: str, below: int) -> list[tuple[int, int]]:
    """Where each leader epoch starts among the batches below ``below`` (Kafka's manifest)."""
    out: list[tuple[int, int]] = []
    for _, b in oracle_batches(name):
        if b["baseOffset"] >= below:
            break
        if not out or out[-1][0] != b["partitionLeaderEpoch"]:
            out.append((b["partitionLeaderEpoch"], b["baseOffset"]))
    return out


def build(
    root: Path,
    broker: str,
    name: str,
    below: int | None = None,
    epochs: list[tuple[int, int]] | None = None,
    high_watermark: int | None = None,
    append: bytes = b"",
) -> Path:
    """fixtures/oracle/NAME as broker BROKER's replica: ROOT/BROKER/<topic>-0 in a log dir,
    its batches below offset ``below`` kept (whole segments past it gone, index files and
    snapshots dropped: the broker rebuilds them), ``append`` added to the last segment, its
    leader-epoch-checkpoint ``epochs`` (default: as its batches say) and its high watermark
    in replication-offset-checkpoint (default: none)."""
    log_dir = root / broker
    partition = log_dir / f"{name.rsplit('-', 1)[0]}-0"
    partition.mkdir(parents=True)
    end = below if below is not None else 1 << 62
    kept: dict[str, int] = {}
    for log, b in oracle_batches(name):
        if b["baseOffset"] < end:
            kept[log] = b["position"] + b["sizeInBytes"]
        elif log not in kept and int(log[:-4]) < end:
            kept[log] = 0
    last = max(kept)
    for log, size in kept.items():
        data = (ORACLE / name / log).read_bytes()[:size]
        (partition / log).write_bytes(data + (append if log == last else b""))
    entries = observed(name, end) if epochs is None else epochs
    (partition / "leader-epoch-checkpoint").write_text(checkpoint_text(entries))
    if high_watermark is not None:
        (log_dir / "replication-offset-checkpoint").write_text(
            f"0\n1\n{partition.name.rsplit('-', 1)[0]} 0 {high_watermark}\n"
        )
    return partition


def new_batches(base: int, count: int, epoch: int, per_batch: int = 5) -> bytes:
    """``count`` batches of ``per_batch`` records from offset ``base`` at leader epoch ``epoch``,
    as a new leader appends them (tests/txnlog.py's encoder)."""
    out = b""
    for i in range(count):
        offset = base + i * per_batch
        out += batch_bytes(
            offset, [T0 + 10**6 + offset + j for j in range(per_batch)], leader_epoch=epoch
        )
    return out


# -- LeaderEpochFileCache.endOffsetFor, case by case (LeaderEpochFileCacheTest's cases) ----------


def test_end_offset_for_follows_kafka() -> None:
    cache = LeaderEpochFileCache([EpochEntry(2, 10), EpochEntry(4, 20), EpochEntry(6, 30)])
    assert cache.end_offset_for(UNDEFINED_EPOCH, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert cache.end_offset_for(6, 40) == (6, 40)  # the latest: the log end offset
    assert cache.end_offset_for(4, 40) == (4, 30)
    assert cache.end_offset_for(5, 40) == (4, 30)  # unknown: the largest epoch below it
    assert cache.end_offset_for(1, 40) == (1, 10)  # older than the first: the first's start
    assert cache.end_offset_for(7, 40) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert LeaderEpochFileCache().end_offset_for(0, 5) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def test_assign_drops_entries_that_break_monotonicity() -> None:
    # maybeTruncateNonMonotonicEntries: a new entry removes later epochs and later starts
    cache = LeaderEpochFileCache([EpochEntry(2, 10), EpochEntry(4, 20), EpochEntry(3, 15)])
    assert cache.epoch_entries() == [EpochEntry(2, 10), EpochEntry(3, 15)]
    cache.truncate_from_start(12)
    assert cache.epoch_entries() == [EpochEntry(2, 12), EpochEntry(3, 15)]
    cache.truncate_from_end(15)
    assert cache.epoch_entries() == [EpochEntry(2, 12)]
