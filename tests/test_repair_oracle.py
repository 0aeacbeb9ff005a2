"""Rebuilt indexes are byte for byte what Kafka's own LogSegment.recover wrote
(manifest ``recoveredIndexBytes``), and rebuilt .txnindex files are the ones Kafka's
ProducerStateManager and TransactionIndex wrote for fixtures/oracle/txn-0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import ORACLE, oracle_manifest
from repair_support import copy_partition, tree

from kdump.format.txnindex import AbortedTxn
from kdump.producer_state import ProducerStateManager
from kdump.repair.plan import plan_rebuild_index, resolve_targets
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.repair.txn_index import txn_index_bytes
from kdump.storage.local import map_file
from kdump.unified_log import local_segments


def recovered_cases() -> list[tuple[str, str, int, dict[str, Any]]]:
    out = []
    for directory, files in sorted(oracle_manifest()["files"].items()):
        for name, info in sorted(files.items()):
            for key, expected in sorted(info.get("recoveredIndexBytes", {}).items()):
                interval = int(key.split("=", 1)[1])
                out.append((directory, name, interval, expected))
    return out


CASES = recovered_cases()


def test_every_recovered_case_is_covered() -> None:
    dirs = {c[0] for c in CASES}
    assert dirs == {"plain-0", "followerlive-0", "legacyv1-0"}
    assert {c[2] for c in CASES} == {100, 1024, 4096}
    assert len(CASES) == 3 * (6 + 6 + 2)


@pytest.mark.parametrize(
    ("directory", "name", "interval", "expected"),
    CASES,
    ids=[f"{c[0]}/{c[1][:20]}@{c[2]}" for c in CASES],
)
def test_recover_segment_matches_kafka(
    directory: str, name: str, interval: int, expected: dict[str, Any]
) -> None:
    path = ORACLE / directory / name
    out = recover_segment(map_file(path), int(name[:20]), str(path), IndexConfig(interval))
    assert out.index.hex() == expected["indexHex"]
    assert out.time_index.hex() == expected["timeindexHex"]
    assert out.truncated_bytes == expected["truncatedBytes"]
    assert out.stop is None and out.findings == []


@pytest.mark.parametrize("directory", ["plain-0", "followerlive-0", "legacyv1-0"])
@pytest.mark.parametrize("interval", [100, 1024, 4096])
def test_cli_rebuild_writes_kafka_bytes(directory: str, interval: int, tmp_path: Path) -> None:
    partition = copy_partition(directory, tmp_path)
    ran = run_kdump(["rebuild-index", str(partition), "--index-interval-bytes", str(interval)])
    assert ran.exit_code == 0, ran.stderr
    assert not [line for line in ran.stdout.splitlines() if line.startswith(("error", "warning"))]
    assert "verify:" not in ran.stdout or "0 errors, 0 warnings" in ran.stdout
    files = oracle_manifest()["files"][directory]
    for name, info in files.items():
        if not name.endswith(".log"):
            continue
        expected = info["recoveredIndexBytes"][f"index.interval.bytes={interval}"]
        base = name[:20]
        assert (partition / f"{base}.index").read_bytes().hex() == expected["indexHex"]
        assert (partition / f"{base}.timeindex").read_bytes().hex() == expected["timeindexHex"]
        assert (partition / name).read_bytes() == (ORACLE / directory / name).read_bytes()


def test_cli_rebuild_at_the_interval_kafka_wrote_changes_nothing(tmp_path: Path) -> None:
    """plain-0 was written at 4096 by single-batch appends: its live indexes are the rebuilt ones,
    so an in-place rebuild has nothing to do and writes nothing (no backups either)."""
    partition = copy_partition("plain-0", tmp_path)
    before = tree(partition)
    ran = run_kdump(["rebuild-index", str(partition)])
    assert ran.exit_code == 0
    assert "0 file(s) (0 of 6 segment(s), 0 of 1 partition(s)) written" in ran.stdout
    assert tree(partition) == before


# -- transaction index --------------------------------------------------------------------------


def expected_aborted(name: str) -> list[AbortedTxn]:
    info = oracle_manifest()["files"]["txn-0"].get(name)
    if info is None:
        return []
    return [
        AbortedTxn(
            t["version"], t["producerId"], t["firstOffset"], t["lastOffset"], t["lastStableOffset"]
        )
        for t in info["abortedTxns"]
    ]


def test_txn_walk_from_the_partition_start_reproduces_every_txnindex() -> None:
    producers = ProducerStateManager()
    for seg in local_segments(ORACLE / "txn-0"):
        out = recover_segment(
            map_file(seg.log_path),
            seg.base_offset,
            str(seg.log_path),
            IndexConfig(1024),
            producers,
        )
        txn_index = Path(seg.txn_index_path)
        assert out.aborted_txns == expected_aborted(txn_index.name)
        if txn_index.exists():
            assert txn_index_bytes(out.aborted_txns) == txn_index.read_bytes()
        else:
            assert out.aborted_txns == []
        assert out.index == Path(seg.index_path).read_bytes()
        assert out.time_index == Path(seg.time_index_path).read_bytes()


def test_abort_spanning_a_roll_lands_in_the_markers_segment() -> None:
    """pid 1000's transaction opens at 126 (segment 126) and is aborted at 210 (segment 186)."""
    [txn] = expected_aborted("00000000000000000186.txnindex")
    assert (txn.producer_id, txn.first_offset, txn.last_offset) == (1000, 126, 210)
    assert not (ORACLE / "txn-0" / "00000000000000000126.txnindex").exists()


def plan_txn(paths: list[str]) -> dict[str, bytes]:
    out = {}
    for plan in plan_rebuild_index(resolve_targets(paths), IndexConfig(1024)):
        for change in plan.changes:
            if change.path.suffix == ".txnindex":
                assert change.content is not None
                out[change.path.name] = change.content
    return out


def test_one_segment_starts_from_the_producer_snapshot() -> None:
    """Rebuilding only segment 186 reads 186.snapshot (pid 1000 open since 126)."""
    got = plan_txn([str(ORACLE / "txn-0" / "00000000000000000186.log")])
    expected = (ORACLE / "txn-0" / "00000000000000000186.txnindex").read_bytes()
    assert got == {"00000000000000000186.txnindex": expected}


def test_one_segment_without_snapshots_replays_from_the_partition_start(tmp_path: Path) -> None:
    partition = copy_partition("txn-0", tmp_path)
    for snapshot in partition.glob("*.snapshot"):
        snapshot.unlink()
    got = plan_txn([str(partition / "00000000000000000186.log")])
    expected = (ORACLE / "txn-0" / "00000000000000000186.txnindex").read_bytes()
    assert got == {"00000000000000000186.txnindex": expected}


def test_a_snapshot_inside_the_walk_replays_the_rest_of_its_segment(tmp_path: Path) -> None:
    """With 186.snapshot gone, 126.snapshot (pid 1000 not yet open) is the latest at or below
    186: segment 126 is replayed from there, and the transaction opening at 126 is seen."""
    partition = copy_partition("txn-0", tmp_path)
    (partition / "00000000000000000186.snapshot").unlink()
    got = plan_txn([str(partition / "00000000000000000186.log")])
    expected = (ORACLE / "txn-0" / "00000000000000000186.txnindex").read_bytes()
    assert got == {"00000000000000000186.txnindex": expected}


def test_a_corrupt_snapshot_is_skipped_as_the_broker_does(tmp_path: Path) -> None:
    partition = copy_partition("txn-0", tmp_path)
    snapshot = partition / "00000000000000000186.snapshot"
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    plans = list(
        plan_rebuild_index(resolve_targets([str(snapshot.with_suffix(".log"))]), IndexConfig(1024))
    )
    assert [f.code for f in plans[0].findings] == ["SNAPSHOT_CORRUPT"]
    txn = [c for c in plans[0].changes if c.path.suffix == ".txnindex"]
    assert txn[0].content == (ORACLE / "txn-0" / "00000000000000000186.txnindex").read_bytes()


def test_cli_rebuilds_deleted_txnindex_files(tmp_path: Path) -> None:
    partition = copy_partition("txn-0", tmp_path)
    originals = {p.name: p.read_bytes() for p in partition.glob("*.txnindex")}
    for p in partition.glob("*index"):
        p.unlink()
    ran = run_kdump(["rebuild-index", str(partition), "--index-interval-bytes", "1024"])
    assert ran.exit_code == 0, ran.stderr
    assert {p.name: p.read_bytes() for p in partition.glob("*.txnindex")} == originals
    for name in ("00000000000000000000.index", "00000000000000000126.timeindex"):
        assert (partition / name).read_bytes() == (ORACLE / "txn-0" / name).read_bytes()
    assert run_kdump(["verify", str(partition), "--index-interval-bytes", "1024"]).exit_code == 0
