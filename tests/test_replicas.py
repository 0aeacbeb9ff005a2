"""`kdump replicas`: replicas of one partition built from partitions Kafka's own code wrote
(fixtures/oracle, batch positions and epochs from its manifest), cut, copied and extended with
batches from an independent encoder (tests/txnlog.py: kafka-python's builder); each answer is
worked out here from Kafka's code (LeaderEpochFileCache.endOffsetFor, AbstractFetcherThread),
never from kdump."""

from __future__ import annotations

import json
import struct
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from batchbytes import fix_crc
from clirun import run_kdump
from conftest import ORACLE
from jsonreader import raw
from txnlog import batch_bytes

from kdump.format.checkpoint import EpochEntry
from kdump.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from kdump.repair.rebuild import IndexConfig, recover_segment

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
    clean: bool = True,
) -> Path:
    """fixtures/oracle/NAME as broker BROKER's replica: ROOT/BROKER/<topic>-0 in a log dir,
    its batches below offset ``below`` kept (whole segments past it gone, snapshots dropped),
    ``append`` added to the last segment, its leader-epoch-checkpoint ``epochs`` (default: as
    its batches say) and its high watermark in replication-offset-checkpoint (default: none).
    ``clean``: the broker stopped cleanly (its marker, and each segment's indexes, as
    LogSegment.recover writes them): its load recovers no segment, and its leader epoch cache
    is the checkpoint's (a recovered segment adds the epochs its batches carry)."""
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
    if clean:
        (log_dir / ".kafka_cleanshutdown").write_text("")
        for log in partition.glob("*.log"):
            built = recover_segment(log.read_bytes(), int(log.stem), str(log), IndexConfig())
            log.with_suffix(".index").write_bytes(built.index)
            log.with_suffix(".timeindex").write_bytes(built.time_index)
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


# -- replicas built from Kafka's partitions ---------------------------------------------------


def lost_by_manifest(
    name: str, first: int, high_watermark: int | None = None, below: int | None = None
) -> dict[str, Any]:
    """What a truncation to ``first`` removes from fixtures/oracle/NAME (cut at ``below``),
    from Kafka's own manifest: whole batches from the one holding ``first``
    (LogSegment.truncateTo cuts at the batch translateOffset finds)."""
    end = 1 << 62 if below is None else below
    batches = [
        b for _, b in oracle_batches(name) if b["lastOffset"] >= first and b["baseOffset"] < end
    ]
    records = sum(b["lastOffset"] - b["baseOffset"] + 1 for b in batches)
    out = {
        "lost_records": records,
        "lost_batches": len(batches),
        "lost_offsets": [batches[0]["baseOffset"], batches[-1]["lastOffset"]],
        "lost_bytes": sum(b["sizeInBytes"] for b in batches),
        "lost_epochs": sorted({b["partitionLeaderEpoch"] for b in batches}),
    }
    if high_watermark is not None:
        out["lost_below_high_watermark"] = sum(
            max(0, min(b["lastOffset"] + 1, high_watermark) - b["baseOffset"]) for b in batches
        )
    return out


def base_timestamp(name: str, log: str, position: int) -> int:
    """A v2 batch's baseTimestamp (FORMAT.md §2: at byte 27 of the batch)."""
    data = (ORACLE / name / log).read_bytes()
    (ts,) = struct.unpack_from(">q", data, position + 27)
    return int(ts)


def replicas_json(*args: str) -> tuple[int, dict[str, Any]]:
    ran = run_kdump(["replicas", "--format", "json", *args])
    assert ran.exit_code in (0, 1, 2), ran.stderr
    document: dict[str, Any] = json.loads(ran.stdout)
    return ran.exit_code, document


def only_follower(document: dict[str, Any]) -> dict[str, Any]:
    (follower,) = document["followers"]
    return follower


def elected_at(root: Path, broker: str, since: int, batches: int, **kw: Any) -> Path:
    """plain-0 up to ``since`` (epochs 0 and 3), then ``batches`` batches of its own at epoch
    5 as the leader elected there."""
    epochs = [(0, 0), (3, 797), (5, since)]
    append = new_batches(since, batches, 5)
    return build(root, broker, "plain-0", below=since, epochs=epochs, append=append, **kw)


def unclean_election(root: Path) -> tuple[Path, Path]:
    """A led at epoch 3 up to 1500 (high watermark 1400); B had only up to 1011 when it was
    elected uncleanly at epoch 5 and wrote 20 records."""
    a = build(root, "a", "plain-0", high_watermark=1400)
    b = elected_at(root, "b", 1011, 4)
    return a, b


def test_unclean_election_truncates_the_old_leader(tmp_path: Path) -> None:
    # A led at epoch 3 up to 1500 (high watermark 1400); B had only up to 1011 when it was
    # elected uncleanly at epoch 5 and wrote 20 records. A fetches at 1500 with epoch 3: B's
    # endOffsetFor(3) is the start of epoch 5, 1011 < 1500: diverging epoch (3, 1011). A's own
    # end of epoch 3 is its log end 1500 (its latest epoch), the epochs agree: it truncates
    # to min(1500, 1011, 1500) = 1011.
    a, b = unclean_election(tmp_path)
    code, document = replicas_json(str(a), str(b), "--export-lost", str(tmp_path / "lost"))
    assert code == 1
    # Partition.makeLeader: B caches the election's new epoch, 6, at its log end offset
    assert document["leader"] == {
        "path": str(b),
        "why": "the greatest latest leader epoch (5)",
        "leader_epoch": 6,
        "epoch_start_offset": 1031,
    }
    follower = only_follower(document)
    assert follower["path"] == str(a)
    assert follower["truncate_to"] == 1011
    expected = lost_by_manifest("plain-0", 1011, high_watermark=1400)
    assert {k: follower[k] for k in expected} == expected
    lost = [(log, b) for log, b in oracle_batches("plain-0") if b["baseOffset"] >= 1011]
    first = min(base_timestamp("plain-0", log, b["position"]) for log, b in lost)
    assert follower["lost_timestamps"] == [first, max(b["maxTimestamp"] for _, b in lost)]
    assert follower["lost_markers"] == [] and follower["differing_batches"] == 0
    facts = [r["partition"] for r in document["replicas"]]
    assert [(p["log_end_offset"], p["high_watermark"]) for p in facts] == [
        (1500, 1400),
        (1031, 1031),
    ]
    assert [r["leader_epoch_cache"] for r in document["replicas"]] == [
        [[0, 0], [3, 797]],
        [[0, 0], [3, 797], [5, 1011]],
    ]
    codes = [f["code"] for f in document["findings"]]
    assert codes == ["REPLICA_TRUNCATION_LOSS"]
    rebuilt = rebuild_batches(tmp_path / "lost" / "plain-0.replica-1.jsonl")
    assert rebuilt == {b["baseOffset"]: oracle_bytes("plain-0", log, b) for log, b in lost}


def oracle_bytes(name: str, log: str, batch: dict[str, Any]) -> bytes:
    data = (ORACLE / name / log).read_bytes()
    return data[batch["position"] : batch["position"] + batch["sizeInBytes"]]


def rebuild_batches(jsonl: Path) -> dict[int, bytes]:
    """The batches of the exported records, built again by the independent encoder from the
    JSON alone (key, value, headers read back with the documented reader of docs/json.md,
    timestamps, offsets, producer fields, leader epoch)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    grouped: dict[int, list[dict[str, Any]]] = {}
    for line in jsonl.read_text().splitlines():
        record = json.loads(line)
        grouped.setdefault(record["batch_base_offset"], []).append(record)
    out = {}
    for base, records in grouped.items():
        head = records[0]
        builder = DefaultRecordBatchBuilder(
            2,
            0,
            head["is_transactional"],
            head["producer_id"],
            head["producer_epoch"],
            head["sequence"],
            1 << 24,
        )
        for r in records:
            headers = [(h["key"], raw(h["value"], h["value_encoding"])) for h in r["headers"]]
            key, value = raw(r["key"], r["key_encoding"]), raw(r["value"], r["value_encoding"])
            builder.append(r["offset"] - base, r["timestamp"], key, value, headers)
        built = bytearray(builder.build())
        struct.pack_into(">q", built, 0, base)
        struct.pack_into(">i", built, 12, head["partition_leader_epoch"])
        if head["is_control"]:
            (attributes,) = struct.unpack_from(">h", built, 21)
            struct.pack_into(">h", built, 21, attributes | 0x20)
        fix_crc(built, 0)
        out[base] = bytes(built)
    return out


def test_leader_change_without_loss(tmp_path: Path) -> None:
    # both at 1500 when B became leader at epoch 4 and wrote on; A fetches at 1500 with epoch 3:
    # B's end of epoch 3 is the start of epoch 4, 1500, not below A's fetch offset: no
    # divergence, nothing truncated
    a = build(tmp_path, "a", "plain-0")
    b = build(
        tmp_path,
        "b",
        "plain-0",
        epochs=[(0, 0), (3, 797), (4, 1500)],
        append=new_batches(1500, 2, 4),
    )
    code, document = replicas_json(str(a), str(b))
    assert code == 0
    follower = only_follower(document)
    # issue 44.6: Kafka's number, not null: getOffsetTruncationState's min(..., its log end)
    said = (follower["truncate_to"], follower["truncated"], follower["fetch_offset"])
    assert said == (1500, False, 1500) and follower["lost_records"] == 0
    assert follower["lost_offsets"] is None and document["findings"] == []
    text = run_kdump(["replicas", str(a), str(b)]).stdout.splitlines()
    assert "  truncates to 1500, its own log end: nothing is removed; it fetches from 1500" in text


def test_replica_restored_from_an_older_backup(tmp_path: Path) -> None:
    # B restored from a backup taken at offset 761 (epoch 0 only) and named leader: it caches
    # the election's epoch 4 at 761 (Partition.makeLeader). A fetches at 1500 with epoch 3:
    # B's endOffsetFor(3): floor 0, next epoch 4 from 761: (0, 761); 0 < 3: diverging. A's own
    # end of epoch 0 is 797 (its epoch 3's start); the epochs agree: min(797, 761, 1500) = 761
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0", below=761)
    code, document = replicas_json(str(a), str(b), "--leader", str(b))
    assert code == 1
    assert document["leader"]["why"] == "named with --leader"
    follower = only_follower(document)
    assert follower["truncate_to"] == 761
    expected = lost_by_manifest("plain-0", 761)
    assert {k: follower[k] for k in expected} == expected
    # the other way round, B follows: it fetches at 761 with epoch 0; A's end of epoch 0 is
    # 797 (the start of epoch 3), past 761: nothing to truncate, it catches up
    code, document = replicas_json(str(b), str(a))
    assert code == 0
    assert document["leader"]["path"] == str(a)
    assert document["leader"]["why"] == "the greatest latest leader epoch (3)"
    assert (only_follower(document)["truncate_to"], only_follower(document)["truncated"]) == (
        761,
        False,
    )


def test_epoch_older_than_the_leaders_first_truncates_fully(tmp_path: Path) -> None:
    # the leader deleted up to 797 (log-start-offset-checkpoint 797): LogLoader's
    # truncateFromStart(797) leaves its cache [(3, 797)]. B, restored with offsets below 515
    # and epoch 0, fetches at 515: endOffsetFor(0) has no floor entry: (0, 797), but 515 is
    # below the leader's log start: OffsetOutOfRange; the leader's log end 1500 is not below
    # 515 and its start 797 is past it: truncateFullyAndStartAt(797)
    a = build(tmp_path, "a", "plain-0")
    (a.parent / "log-start-offset-checkpoint").write_text("0\n1\nplain 0 797\n")
    b = build(tmp_path, "b", "plain-0", below=515)
    code, document = replicas_json(str(a), str(b))
    assert document["replicas"][0]["leader_epoch_cache"] == [[3, 797]]
    follower = only_follower(document)
    assert (follower["truncate_to"], follower["truncated_fully"]) == (797, True)
    expected = lost_by_manifest("plain-0", 0)
    expected = {**expected, "lost_records": 515, "lost_offsets": [0, 514]}
    below = [b for _, b in oracle_batches("plain-0") if b["baseOffset"] < 515]
    expected["lost_bytes"] = sum(b["sizeInBytes"] for b in below)
    expected["lost_batches"] = len(below)
    expected["lost_epochs"] = [0]
    assert {k: follower[k] for k in expected} == expected
    assert code == 1


def test_follower_without_leader_epochs_truncates_to_its_high_watermark(tmp_path: Path) -> None:
    # no epoch in B's cache: truncateToHighWatermark, to 1256 (a batch boundary); then it
    # fetches at 1256, inside the leader's log: no OffsetOutOfRange
    a = elected_at(tmp_path, "a", 1256, 2)
    b = build(tmp_path, "b", "plain-0", epochs=[], high_watermark=1256)
    code, document = replicas_json(str(a), str(b))
    follower = only_follower(document)
    assert follower["truncate_to"] == 1256
    expected = lost_by_manifest("plain-0", 1256, high_watermark=1256)
    assert {k: follower[k] for k in expected} == expected
    assert expected["lost_below_high_watermark"] == 0
    assert "truncateToHighWatermark" in follower["steps"][0]
    assert code == 1


def test_lost_commit_marker_leaves_a_hanging_transaction(tmp_path: Path) -> None:
    # txn-0 was written at epoch 7. B had it up to 104 (producer 2000's COMMIT at 104 not
    # yet fetched) when it was elected uncleanly at epoch 8 and wrote on. A fetches at 218
    # with epoch 7: B ends epoch 7 at 104: A truncates to 104 and drops that COMMIT: B's log
    # holds producer 2000's transaction open, with nothing to end it
    # (B stopped uncleanly: its load replays the log into its producer state, no snapshot
    # being there; after a clean stop it would hold none, and know no transaction open)
    a = build(tmp_path, "a", "txn-0")
    b = build(
        tmp_path,
        "b",
        "txn-0",
        below=104,
        epochs=[(7, 0), (8, 104)],
        append=new_batches(104, 2, 8),
        clean=False,
    )
    code, document = replicas_json(str(a), str(b))
    assert code == 1
    follower = only_follower(document)
    assert follower["truncate_to"] == 104
    markers = [b for _, b in oracle_batches("txn-0") if b["isControl"] and b["baseOffset"] >= 104]
    expected = []
    for m in markers:
        # hanging: the transaction this marker ends began below 104 (its producer's first
        # transactional batch after its previous marker)
        previous = [
            x["lastOffset"]
            for _, x in oracle_batches("txn-0")
            if x["isControl"]
            and x["producerId"] == m["producerId"]
            and x["baseOffset"] < m["baseOffset"]
        ]
        began = min(
            x["baseOffset"]
            for _, x in oracle_batches("txn-0")
            if x["producerId"] == m["producerId"]
            and not x["isControl"]
            and max(previous, default=-1) < x["baseOffset"] < m["baseOffset"]
        )
        kind = m["records"][0]["controlType"]
        expected.append((m["baseOffset"], m["producerId"], kind, began < 104))
    got = [
        (x["offset"], x["producer_id"], x["type"], x["hanging"]) for x in follower["lost_markers"]
    ]
    assert got == expected
    assert (104, 2000, "COMMIT", True) in got
    codes = [f["code"] for f in document["findings"]]
    assert codes.count("REPLICA_LOST_MARKER") == sum(hanging for *_, hanging in expected) == 1


def flipped_batch(partition: Path, fix: bool) -> tuple[int, int]:
    """Flip a byte in the value of the fifth batch of the third segment (Kafka's positions);
    ``fix``: its CRC made right again. The batch's base offset and position."""
    log, batch = [x for x in oracle_batches("plain-0") if x[0] == "00000000000000000515.log"][4]
    path = partition / log
    data = bytearray(path.read_bytes())
    data[batch["position"] + batch["sizeInBytes"] - 3] ^= 0x01
    if fix:
        fix_crc(data, batch["position"])
    path.write_bytes(bytes(data))
    return batch["baseOffset"], batch["position"]


def test_same_offset_different_bytes_is_divergence(tmp_path: Path) -> None:
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0")
    offset, position = flipped_batch(b, fix=True)
    code, document = replicas_json(str(a), str(b))
    assert code == 2
    assert document["leader"]["path"] == str(a)
    assert document["leader"]["why"] == (
        "the greatest latest leader epoch (3), then the greatest log end offset (1500), then "
        "the first named"
    )
    follower = only_follower(document)
    assert not follower["truncated"] and follower["differing_batches"] == 1
    (difference,) = follower["differences"]
    assert difference["offset"] == offset
    assert difference["follower"]["position"] == position
    assert difference["leader"]["path"].startswith(str(a))
    assert [f["code"] for f in document["findings"]] == ["REPLICA_BATCH_DIFFERS"]


def test_damaged_replica_is_an_error(tmp_path: Path) -> None:
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0")
    offset, position = flipped_batch(b, fix=False)
    code, document = replicas_json(str(a), str(b))
    assert code == 2
    damaged = document["replicas"][1]["partition"]["damaged_from"]
    assert (damaged["offset"], damaged["position"]) == (offset, position)
    (finding,) = document["replicas"][1]["findings"]
    assert (finding["severity"], finding["position"]) == ("error", position)
    assert only_follower(document)["differing_batches"] == 0


def test_replicas_of_different_partitions_are_refused(tmp_path: Path) -> None:
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "txn-0")
    ran = run_kdump(["replicas", str(a), str(b)])
    assert ran.exit_code == 3
    assert (
        ran.stderr
        == f"kdump: {b}: holds partition txn-0, not plain-0: replicas of one partition only\n"
    )
    ran = run_kdump(["replicas", str(a), str(a), "--leader", str(tmp_path)])
    assert ran.exit_code == 3 and "--leader" in ran.stderr
    ran = run_kdump(["replicas", str(a)])
    assert ran.exit_code == 3
    assert ran.stderr == (
        "kdump replicas: give two or more replicas of the partition (see 'kdump replicas --help')\n"
    )


def restamp(partition: Path, name: str, epochs: list[tuple[int, int]]) -> None:
    """Give the Kafka-written batches in ``partition`` the partitionLeaderEpoch ``epochs`` say
    (byte 12 of a v2 batch, FORMAT.md §2), their CRCs made right again."""
    for log, b in oracle_batches(name):
        path = partition / log
        if not path.exists() or b["position"] >= path.stat().st_size:
            continue
        epoch = max(e for e, start in epochs if start <= b["baseOffset"])
        data = bytearray(path.read_bytes())
        struct.pack_into(">i", data, b["position"] + 12, epoch)
        fix_crc(data, b["position"])
        path.write_bytes(bytes(data))


def test_follower_asks_again_with_its_earlier_epoch(tmp_path: Path) -> None:
    # leader A: epochs 0 from 0, 1 from 414, 3 from 617; follower B: 0 from 0, 2 from 505, log
    # end 663. B fetches at 663 with epoch 2: A's endOffsetFor(2) is (1, 617) (floor 1, next
    # epoch 3's start); 1 < 2: diverging. B's own end of epoch 1: its floor is 0, ending at
    # 505 where its epoch 2 starts: (0, 505); 0 is not 1: B truncates to min(505, 663) = 505
    # and asks again. Its cache keeps epoch 0 only; at 505 with epoch 0: A's endOffsetFor(0)
    # is (0, 414), below 505: diverging; B's end of epoch 0 (its latest) is its log end 505;
    # the epochs agree: min(505, 414, 505) = 414. At 414 with epoch 0: no divergence.
    leader_epochs, follower_epochs = [(0, 0), (1, 414), (3, 617)], [(0, 0), (2, 505)]
    a = build(tmp_path, "a", "plain-0", epochs=leader_epochs)
    restamp(a, "plain-0", leader_epochs)
    b = build(tmp_path, "b", "plain-0", below=663, epochs=follower_epochs)
    restamp(b, "plain-0", follower_epochs)
    code, document = replicas_json(str(a), str(b))
    assert code == 1
    assert all(r["findings"] == [] for r in document["replicas"])  # checkpoints match batches
    follower = only_follower(document)
    assert follower["truncate_to"] == 414
    assert follower["steps"] == [
        "fetch at 663 with last fetched epoch 2: diverging epoch 1 ending at 617; it truncates "
        "to 505 and asks again with its earlier epoch",
        "fetch at 505 with last fetched epoch 0: diverging epoch 0 ending at 414; it truncates "
        "to 414",
        "fetch at 414 with last fetched epoch 0: the leader's epoch 0 ends at 414: no "
        "divergence, it fetches from there",
    ]
    expected = lost_by_manifest("plain-0", 414, below=663)
    expected["lost_epochs"] = [0, 2]
    assert {k: follower[k] for k in expected} == expected
    assert follower["differing_batches"] == 0  # below 414 both hold epoch 0's same batches


def test_checkpoint_against_the_batches_epochs(tmp_path: Path) -> None:
    # the batches from 797 carry epoch 3; a checkpoint that lacks it is a finding, and the
    # cache the broker loads has epoch 0 only: the follower's latest epoch is 0
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0", epochs=[(0, 0)])
    code, document = replicas_json(str(a), str(b))
    replica = document["replicas"][1]
    assert replica["leader_epoch_cache"] == [[0, 0]]
    (finding,) = replica["findings"]
    assert finding["code"] == "LEADER_EPOCH_INCONSISTENT"
    assert finding["path"] == str(b / "leader-epoch-checkpoint")
    assert "epoch 3" in finding["message"]
    # B fetches at 1500 with epoch 0: A's end of epoch 0 is 797 (epoch 3's start): B truncates
    # to min(its own end of epoch 0, its log end 1500, 797) = 797; A holds the same batches
    # from there: B fetches them again, nothing is lost
    follower = only_follower(document)
    assert follower["truncate_to"] == 797
    again = lost_by_manifest("plain-0", 797)
    assert (follower["refetched_batches"], follower["refetched_offsets"]) == (
        again["lost_batches"],
        again["lost_offsets"],
    )
    assert follower["lost_records"] == 0 and follower["lost_offsets"] is None
    assert code == 0


def test_text_prom_and_a_replica_in_an_object_store(tmp_path: Path) -> None:
    # the unclean election of test_unclean_election_truncates_the_old_leader, A read through
    # a file:// URL (an object-store prefix holding a copy of the partition)
    a, b = unclean_election(tmp_path)
    url = f"file://{a}"
    prom = tmp_path / "replicas.prom"
    ran = run_kdump(["replicas", url, str(b), "--prom", str(prom)])
    lost = lost_by_manifest("plain-0", 1011, high_watermark=1400)
    first, last = lost["lost_offsets"]
    assert ran.exit_code == 1 and ran.stderr == ""
    lines = ran.stdout.splitlines()
    assert lines[:2] == ["2 replicas of plain-0", f"  {url}"]
    assert f"leader: {b} (the greatest latest leader epoch (5))" in lines
    follower = lines[lines.index(f"follower {url}:") :]
    assert follower[1:5] == [
        "  fetch at 1500 with last fetched epoch 3: diverging epoch 3 ending at 1011; it "
        "truncates to 1011",
        "  fetch at 1011 with last fetched epoch 3: the leader's epoch 3 ends at 1011: no "
        "divergence, it fetches from there",
        "  truncated to 1011",
        f"  drops {lost['lost_records']} records in {lost['lost_batches']} batches, offsets "
        f"{first}..{last}, {lost['lost_bytes']} bytes, leader epochs 3",
    ]
    assert (
        f"  below its high watermark (acknowledged): {lost['lost_below_high_watermark']} records"
        in follower
    )
    samples = {
        line.split("{", 1)[0]: line.rsplit(" ", 1)[1]
        for line in prom.read_text().splitlines()
        if line.startswith("kdump_replica_")
    }
    assert samples == {
        "kdump_replica_lost_records": str(lost["lost_records"]),
        "kdump_replica_lost_bytes": str(lost["lost_bytes"]),
        "kdump_replica_lost_acknowledged_records": str(lost["lost_below_high_watermark"]),
        "kdump_replica_lost_markers": "0",
        "kdump_replica_differing_batches": "0",
    }


def test_export_is_refused_inside_a_replica(tmp_path: Path) -> None:
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0", below=761)
    inside = a / "lost"
    ran = run_kdump(["replicas", str(a), str(b), "--leader", str(b), "--export-lost", str(inside)])
    assert ran.exit_code == 3
    assert ran.stderr.startswith(f"kdump: {inside}: ") and "lies inside the partition" in ran.stderr
    assert not inside.exists()


def test_named_leader_behind_in_epochs_caches_its_new_epoch(tmp_path: Path) -> None:
    # B, restored from a backup, led on in epoch 0 up to 1011 (its batches from 797 carry 0,
    # A's carry 3), and is named leader. Without the election's epoch B's cache could not
    # place A's epoch 3 (endOffsetFor: UNDEFINED_EPOCH_OFFSET), and fetchOffsetAndTruncate
    # would cut A at B's log end 1011 only, keeping A's epoch-3 batches 797..1010 beside
    # B's epoch-0 ones. With it (epoch 4 from 1011): endOffsetFor(3) is (0, 1011), diverging;
    # A's end of epoch 0 is 797: min(797, 1011, 1500) = 797, and nothing differs below it.
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0", below=1011, epochs=[(0, 0)])
    restamp(b, "plain-0", [(0, 0)])
    code, document = replicas_json(str(a), str(b), "--leader", str(b))
    assert document["leader"]["leader_epoch"] == 4
    follower = only_follower(document)
    assert follower["truncate_to"] == 797
    assert follower["differing_batches"] == 0
    expected = lost_by_manifest("plain-0", 797)
    assert {k: follower[k] for k in expected} == expected
    assert code == 1


def test_checkpoint_that_does_not_parse(tmp_path: Path) -> None:
    # the broker takes such a log dir offline; kdump says so and models the replica with no
    # epoch: it truncates to its high watermark, 1256, and the leader holds the same from there
    a = build(tmp_path, "a", "plain-0")
    b = build(tmp_path, "b", "plain-0", high_watermark=1256)
    (b / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")
    code, document = replicas_json(str(a), str(b))
    replica = document["replicas"][1]
    assert replica["leader_epoch_cache"] is None and replica["leader_epoch_checkpoint"] is None
    (finding,) = replica["findings"]
    assert finding["code"] == "LEADER_EPOCH_INCONSISTENT"
    follower = only_follower(document)
    assert (follower["truncate_to"], follower["lost_records"]) == (1256, 0)
    again = lost_by_manifest("plain-0", 1256)
    assert follower["refetched_offsets"] == again["lost_offsets"]
    assert code == 0


@pytest.mark.parametrize(("start", "flagged"), [(1400, True), (1470, False)])
def test_a_latest_epoch_no_batch_carries_inside_the_log(
    tmp_path: Path, start: int, flagged: bool
) -> None:
    """A checkpoint whose latest entry (4, 1400) starts where the batches still carry epoch 3:
    the cache keeps it (it is cut only at the log end), and endOffsetFor(3) answers 1400. At
    the log end (1470) it is where a new leader's epoch starts, and fine."""
    partition = build(tmp_path, "a", "plain-0", below=1470)
    (partition / "leader-epoch-checkpoint").write_text(
        checkpoint_text([*observed("plain-0", 1470), (4, start)])
    )
    ran = run_kdump(["verify", str(partition), "--format", "json"])
    messages = [f["message"] for f in json.loads(ran.stdout)["findings"]]
    said = [m for m in messages if "no batch carries epoch 4" in m]
    assert bool(said) is flagged, messages
    if flagged:
        assert said == [
            "the latest entry (4, 1400) starts inside the log, but no batch carries epoch 4 "
            "(offset 1400 is in epoch 3's batches)"
        ]


def test_no_checkpointed_high_watermark_is_kafkas_start_and_said_alike(tmp_path: Path) -> None:
    """Issue 44.6: with no replication-offset-checkpoint entry a replica's line said "assumed
    the log end offset" and its loss "acknowledged: unknown"; and a follower with no epoch
    truncated to that assumed log end, where the broker starts the high watermark at 0, kept
    within [log start, log end] (Partition.createLog), and truncates there. Both lines now say
    it is not checkpointed, and the follower truncates to its log start, fetching the rest
    again."""
    a = elected_at(tmp_path, "a", 1256, 2)
    b = build(tmp_path, "b", "plain-0", epochs=[])
    code, document = replicas_json(str(a), str(b))
    assert code == 1
    follower = only_follower(document)
    assert (follower["truncate_to"], follower["truncated"]) == (0, True)
    assert "truncates to its high watermark 0 (truncateToHighWatermark)" in follower["steps"][0]
    expected = lost_by_manifest("plain-0", 1256)
    assert {k: follower[k] for k in expected} == expected
    assert follower["refetched_offsets"] == [0, 1255]
    assert follower["lost_below_high_watermark"] is None
    assert [r["start_high_watermark"] for r in document["replicas"]] == [0, 0]
    text = run_kdump(["replicas", str(a), str(b)]).stdout
    assert (
        text.count(
            "high watermark not checkpointed (no replication-offset-checkpoint entry): the broker "
            "starts it at its log start 0"
        )
        == 2
    )
    assert "assumed the log end offset" not in text
    assert "  acknowledged: unknown (no high watermark checkpointed)" in text


def test_leader_epochs_none_in_the_checkpoint_says_what_the_batches_carry(tmp_path: Path) -> None:
    """Issue 44.6: "leader epochs: none" although the batches carry epochs: the checkpoint
    has none, and the broker's cache gets a segment's epochs only where its load recovers that
    segment (LogSegment.recover assigns them). After a clean stop it recovers none; after an
    unclean one, every segment from the recovery point: then the cache is the batches'."""
    clean = build(tmp_path / "clean", "b", "plain-0", epochs=[])
    unclean = build(tmp_path / "unclean", "b", "plain-0", epochs=[], clean=False)
    leader = build(tmp_path, "a", "plain-0")
    for b, epochs in ((clean, []), (unclean, [[0, 0], [3, 797]])):
        _, document = replicas_json(str(leader), str(b), "--leader", str(leader))
        assert document["replicas"][1]["leader_epoch_cache"] == epochs
    text = run_kdump(["replicas", str(leader), str(clean), "--leader", str(leader)]).stdout
    assert (
        "    leader epochs: none in its leader-epoch-checkpoint, though its batches carry 0 from "
        "0, 3 from 797: the broker's cache gets those of the segments its recovery reads, and "
        "no others"
    ) in text.splitlines()


def test_the_advice_to_export_is_not_repeated_once_exported(tmp_path: Path) -> None:
    """Issue 44.6: with --export-lost given, the loss's advice still told to run it: the
    follower's lines say where its records went, the finding says so instead of advising."""
    a, b = unclean_election(tmp_path)
    lost = tmp_path / "lost"
    ran = run_kdump(["replicas", str(a), str(b), "--export-lost", str(lost)])
    assert ran.exit_code == 1
    written = lost / "plain-0.replica-1.jsonl"
    assert written.exists() and "--export-lost" not in ran.stdout
    assert f"  exported to {written}" in ran.stdout.splitlines()
    (finding,) = [line for line in ran.stdout.splitlines() if "REPLICA_TRUNCATION_LOSS" in line]
    assert finding.endswith(f"[exported to {written}]")
    doc = json.loads(
        run_kdump(
            ["replicas", str(a), str(b), "--export-lost", str(lost), "--format", "json"]
        ).stdout
    )
    assert only_follower(doc)["exported_to"] == str(written)
    assert only_follower(replicas_json(str(a), str(b))[1])["exported_to"] is None
