"""`kdump txn`: partitions written here with an independent encoder (tests/txnlog.py), the
answers worked out below from Kafka's rules (notes §D), not from kdump.

The log dir built by ``log_dir`` (T0 = 1700000000000, NOW = T0 + 1 h)::

    segment 0   0..2  P1001 txn e0 seq 0      3..4 P1001 txn seq 3     5 COMMIT P1001 (cepoch 7)
                6..7  P1002 txn e0 seq 0      8    ABORT P1002        9 P1004 idempotent seq 0
    segment 10  10..11 P1003 txn (T0+10s, never ended)                 12 P1005 txn seq 0
    segment 13  13..14 P1005 txn seq 1        15 ABORT P1005 (spans the roll)
                16 COMMIT P1006 (no data)     17..18 P1007 txn (NOW-1min) 19 plain
    snapshots   0 (at the log start: discarded), 10 (the state at the roll + P1009, expired
                P1008), 13 (corrupt: skipped), 25 (past the log end: discarded)
    .txnindex   0: (1002, 6, 8, lso 9)    13: (1005, 12, 15, lso 10: P1003 still open)
    replication-offset-checkpoint: orders 0 -> 20
    __transaction_state-0..2 (3 partitions): app-committed P1001 CompleteCommit, app-hanging
                P1003 CompleteCommit (disagrees), app-roll P1005 CompleteAbort, app-young P1007
                Ongoing [orders-0], app-gone written then tombstoned
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from batchbytes import v2_batch
from clirun import on_terminal, run_kdump
from txnlog import (
    ABORT,
    COMMIT,
    PartitionWriter,
    batch_bytes,
    java_string_hash,
    partition_for,
    snapshot_bytes,
    txn_index_bytes,
    txn_log_key,
    txn_log_value,
)

from kdump.format.filters import BatchFilter
from kdump.txn.analysis import TxnOptions, analyze_paths
from kdump.txn.coordinator import partition_for as kdump_partition_for

T0 = 1_700_000_000_000
NOW = T0 + 3_600_000
DAY = 86_400_000
ONGOING, COMPLETE_COMMIT, COMPLETE_ABORT = 1, 4, 5


def write_orders(directory: Path) -> dict[int, int]:
    """The data partition; returns base offset -> size of each batch."""
    w = PartitionWriter(directory)
    sizes = {}

    def keep(batch: object) -> None:
        sizes[batch.base_offset] = len(batch.data)  # type: ignore[attr-defined]

    keep(w.data(3, T0 + 1000, 1001, 0, 0, True))
    keep(w.data(2, T0 + 2000, 1001, 0, 3, True))
    keep(w.marker(1001, 0, COMMIT, 7, T0 + 3000))
    keep(w.data(2, T0 + 4000, 1002, 0, 0, True))
    keep(w.marker(1002, 0, ABORT, 7, T0 + 5000))
    keep(w.data(1, T0 + 6000, 1004, 0, 0, False))
    w.roll()
    keep(w.data(2, T0 + 10_000, 1003, 0, 0, True))
    keep(w.data(1, T0 + 11_000, 1005, 0, 0, True))
    w.roll()
    keep(w.data(2, T0 + 12_000, 1005, 0, 1, True))
    keep(w.marker(1005, 0, ABORT, 7, T0 + 13_000))
    keep(w.marker(1006, 0, COMMIT, 7, T0 + 14_000))
    keep(w.data(2, NOW - 60_000, 1007, 0, 0, True))
    keep(w.data(1, NOW - 30_000))
    w.write()
    w.write_file(f"{0:020d}.snapshot", snapshot_bytes([(1010, 0, 0, 0, 0, NOW, -1, 0)]))
    at_roll = [
        (1001, 0, 4, 4, 1, T0 + 3000, 7, -1),
        (1002, 0, 1, 7, 1, T0 + 5000, 7, -1),
        (1004, 0, 0, 9, 0, T0 + 6000, -1, -1),
        (1008, 1, 9, 3, 0, NOW - 2 * DAY, -1, -1),  # idle two days: expired when loaded
        (1009, 3, 41, -1, 0, NOW - 120_000, 5, -1),  # only the snapshot knows it
    ]
    w.write_file(f"{10:020d}.snapshot", snapshot_bytes(at_roll))
    corrupt = bytearray(snapshot_bytes([(1011, 0, 0, 12, 0, NOW, -1, 12)]))
    corrupt[-1] ^= 0xFF
    w.write_file(f"{13:020d}.snapshot", bytes(corrupt))
    w.write_file(f"{25:020d}.snapshot", snapshot_bytes([(1012, 0, 0, 24, 0, NOW, -1, 24)]))
    w.write_file(f"{0:020d}.txnindex", txn_index_bytes([(1002, 6, 8, 9)]))
    w.write_file(f"{13:020d}.txnindex", txn_index_bytes([(1005, 12, 15, 10)]))
    return sizes


def write_transaction_state(log_dir: Path) -> None:
    records = {
        "app-committed": txn_log_value(1001, 0, 60000, COMPLETE_COMMIT, {}, T0 + 3000, T0),
        "app-hanging": txn_log_value(1003, 0, 60000, COMPLETE_COMMIT, {}, T0 + 20_000, T0),
        "app-roll": txn_log_value(1005, 0, 60000, COMPLETE_ABORT, {}, T0 + 13_000, T0),
        "app-young": txn_log_value(
            1007, 0, 60000, ONGOING, {"orders": [0]}, NOW - 60_000, NOW - 60_000
        ),
        "app-gone": txn_log_value(1013, 0, 60000, COMPLETE_ABORT, {}, T0, T0),
    }
    per_partition: dict[int, list[tuple[bytes, bytes | None]]] = {0: [], 1: [], 2: []}
    for tid, value in records.items():
        per_partition[partition_for(tid, 3)].append((txn_log_key(tid), value))
    per_partition[partition_for("app-gone", 3)].append((txn_log_key("app-gone"), None))
    for number, items in per_partition.items():
        w = PartitionWriter(log_dir / f"__transaction_state-{number}")
        for key, value in items:
            w.raw(batch_bytes(w.next_offset, [T0], records=[(key, value)]), 1)
        w.write()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("txn") / "logdir"
    root.mkdir()
    write_orders(root / "orders-0")
    write_transaction_state(root)
    (root / "replication-offset-checkpoint").write_text("0\n1\norders 0 20\n")
    return root


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, int]:
    return write_orders(tmp_path_factory.mktemp("sizes") / "orders-0")


def analyze(*paths: Path, **options: object) -> object:
    return analyze_paths([str(p) for p in paths], TxnOptions(now=NOW, **options))  # type: ignore[arg-type]


def test_placement_of_the_test_ids_is_what_the_hash_gives() -> None:
    """Java's String.hashCode worked by hand: known values, then Utils.abs and the modulo."""
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)  # Utils.abs(MIN_VALUE) is 0
    assert java_string_hash("app-hanging") == -1801759100
    assert [partition_for(t, 3) for t in ("app-committed", "app-hanging", "app-young")] == [0, 2, 2]
    for tid, count, expected in [
        ("hello", 50, 99162322 % 50),
        ("polygenelubricants", 50, 0),
        ("app-hanging", 50, 1801759100 % 50),
        ("app-young", 3, 416483180 % 3),
        ("", 7, 0),
    ]:
        assert kdump_partition_for(tid, count) == expected


def test_producer_state_is_the_snapshot_then_the_batches_after_it(log_dir: Path) -> None:
    result = analyze(log_dir)
    (report,) = result.partitions  # type: ignore[attr-defined]
    assert report.snapshot == str(log_dir / "orders-0" / f"{10:020d}.snapshot")
    assert report.replayed_from == 10
    state = {
        e.producer_id: (
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in report.producers
    }
    assert state == {
        1001: (0, 4, 4, 1, T0 + 3000, 7, None),  # from the snapshot
        1002: (0, 1, 7, 1, T0 + 5000, 7, None),
        1003: (0, 1, 11, 1, T0 + 10_000, -1, 10),
        1004: (0, 0, 9, 0, T0 + 6000, -1, None),
        # a marker of the same epoch keeps the batches; its timestamp is the marker's
        1005: (0, 2, 14, 1, T0 + 13_000, 7, None),
        # a marker without data: a new epoch (from none) forgets batches, no transaction
        1006: (0, -1, -1, 0, T0 + 14_000, 7, None),
        1007: (0, 1, 18, 1, NOW - 60_000, -1, 17),
        1009: (3, -1, -1, 0, NOW - 120_000, 5, None),  # LastOffset -1: no batch
    }
    # 1008 expired at load; the snapshots at 0 (= log start), 13 (corrupt) and 25 (past the
    # log end) are not used: 1010, 1011 and 1012 never appear
    codes = [(f.code, Path(f.path).name) for f in report.findings]
    assert ("SNAPSHOT_CORRUPT", f"{13:020d}.snapshot") in codes
    assert report.expired_producers == []


def test_open_transactions_last_stable_offset_and_what_it_blocks(
    log_dir: Path, sizes: dict[int, int]
) -> None:
    result = analyze(log_dir)
    (report,) = result.partitions  # type: ignore[attr-defined]
    assert (report.log_start_offset, report.log_end_offset, report.high_watermark) == (0, 20, 20)
    opened = {t.producer_id: t for t in report.open_transactions}
    assert list(opened) == [1003, 1007]
    hanging, young = opened[1003], opened[1007]
    assert (hanging.first_offset, hanging.last_offset) == (10, 11)
    assert (hanging.first_timestamp, hanging.last_timestamp) == (T0 + 10_000, T0 + 10_000)
    assert hanging.age_ms == NOW - (T0 + 10_000) and hanging.hanging
    assert (young.first_offset, young.last_offset, young.age_ms, young.hanging) == (
        17,
        18,
        60_000,
        False,
    )
    # LSO = min(HW, earliest open first offset) = 10
    assert report.first_unstable_offset == 10 and report.last_stable_offset == 10
    assert report.blocked_records == 10  # offsets 10..19, one record each
    assert report.blocked_bytes == sum(size for base, size in sizes.items() if base >= 10)
    assert result.status() == 2  # type: ignore[attr-defined]


def test_completed_transactions_and_aborted_ranges(log_dir: Path) -> None:
    (report,) = analyze(log_dir).partitions  # type: ignore[attr-defined]
    counts = {
        pid: (c.commits, c.aborts, c.markers_without_data) for pid, c in report.completed.items()
    }
    assert counts == {1001: (1, 0, 0), 1002: (0, 1, 0), 1005: (0, 1, 0), 1006: (0, 0, 1)}
    aborted = [
        (a.producer_id, a.first_offset, a.last_offset, a.last_stable_offset, a.segment)
        for a in report.aborted
    ]
    # 1005's abort: marker in segment 13; LSO 10 because 1003's transaction is open
    assert aborted == [(1002, 6, 8, 9, 0), (1005, 12, 15, 10, 13)]
    assert all(a.in_log and a.in_txn_index for a in report.aborted)
    assert not [f for f in report.findings if f.code.startswith("TXN_INDEX")]


def test_the_coordinator_view_and_the_classic_hanging_case(log_dir: Path) -> None:
    result = analyze(log_dir)
    view = result.coordinator  # type: ignore[attr-defined]
    assert view.partitions_read == [0, 1, 2]
    assert (view.partition_count, view.partition_count_source) == (3, "directory")
    assert sorted(view.transactions) == ["app-committed", "app-hanging", "app-roll", "app-young"]
    assert view.transactions["app-hanging"].state == "CompleteCommit"
    assert view.transactions["app-young"].topic_partitions == (("orders", 0),)
    assert not view.findings  # every id sits where the hash puts it
    opened = {t.producer_id: t for t in result.open_transactions}  # type: ignore[attr-defined]
    hanging, young = opened[1003], opened[1007]
    assert (hanging.transactional_id, hanging.coordinator_state) == (
        "app-hanging",
        "CompleteCommit",
    )
    assert hanging.coordinator_partition == 2
    assert hanging.coordinator_disagrees and hanging.find_hanging
    assert "complete at the coordinator" in hanging.coordinator
    assert (young.transactional_id, young.coordinator_state) == ("app-young", "Ongoing")
    assert young.coordinator_disagrees is False and young.find_hanging is False


def test_a_wrong_partition_count_is_noticed(log_dir: Path) -> None:
    view = analyze(log_dir, transaction_state_partitions=50).coordinator  # type: ignore[attr-defined]
    assert view.partition_count_source == "given"
    assert [f.code for f in view.findings] == ["TXN_COORDINATOR_PARTITION_COUNT"]


def test_cli_text_abort_command_and_find_hanging(log_dir: Path) -> None:
    ran = run_kdump(["txn", str(log_dir), "--now", str(NOW)])
    assert ran.exit_code == 2, ran.stderr
    assert ran.stderr == ""
    command = (
        "kafka-transactions.sh --bootstrap-server <bootstrap-servers> abort --topic orders "
        "--partition 0 --start-offset 10"
    )
    assert f"  {command}\n" in ran.stdout
    assert "--producer-id 1003 --producer-epoch 0 --coordinator-epoch 0" in ran.stdout
    # ToolsUtils.prettyPrintTable: values padded to the column, each followed by a tab
    assert (
        "Topic \tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
        "LastTimestamp\tDuration(min)\t\n"
        f"orders\t0        \t1003      \t0            \t-1              \t10         \t"
        f"{T0 + 10_000}\t59           \t\n"
    ) in ran.stdout
    assert f"{T0 + 10_000} (2023-11-14T22:13:30.000Z)" in ran.stdout  # ISO beside epoch ms
    assert "error   TXN_HANGING" in ran.stdout and "warning TXN_OPEN" in ran.stdout
    assert "SNAPSHOT_CORRUPT" in ran.stdout


def test_at_80_columns_no_value_is_cut_and_each_command_is_whole(log_dir: Path) -> None:
    """Issue 44.9: on an 80-column terminal `kdump txn` cut values and headers (`1700…`,
    `first offs…`) and folded its abort commands. A table too wide is printed as records; a
    command, or a finding's fix, has a line of its own, whole."""
    ran = on_terminal(["txn", str(log_dir), "--now", str(NOW)], columns=80)
    assert ran.exit_code == 2, ran.stdout
    assert "…" not in ran.stdout
    lines = ran.stdout.splitlines()
    assert f"  first timestamp    {T0 + 10_000} (2023-11-14T22:13:30.000Z)" in lines
    command = (
        "kafka-transactions.sh --bootstrap-server <bootstrap-servers> abort --topic orders "
        "--partition 0 --start-offset 10"
    )
    assert f"  {command}" in lines and f"  fix: {command}" in lines
    piped = run_kdump(["txn", str(log_dir), "--now", str(NOW)]).stdout
    assert "open transactions\n producer id | epoch | first offset |" in piped  # a pipe: tables


def test_cli_json_shape(log_dir: Path) -> None:
    ran = run_kdump(
        ["txn", str(log_dir), "--format", "json", "--now", "2023-11-14T23:13:20Z"]
    )  # the same NOW, as ISO-8601
    assert ran.exit_code == 2
    doc = json.loads(ran.stdout)
    (part,) = doc["partitions"]
    for key in (
        "path",
        "topic",
        "partition",
        "log_end_offset",
        "last_stable_offset",
        "blocked_records",
        "blocked_bytes",
        "open_transactions",
        "aborted",
        "producers",
    ):
        assert key in part
    assert (part["topic"], part["partition"], part["log_end_offset"]) == ("orders", 0, 20)
    assert (part["last_stable_offset"], part["blocked_records"], part["producers"]) == (10, 10, 8)
    first = part["open_transactions"][0]
    assert {k: first[k] for k in ("producer_id", "producer_epoch", "first_offset")} == {
        "producer_id": 1003,
        "producer_epoch": 0,
        "first_offset": 10,
    }
    assert (first["last_offset"], first["first_timestamp"], first["last_timestamp"]) == (
        11,
        T0 + 10_000,
        T0 + 10_000,
    )
    assert (first["age_ms"], first["hanging"]) == (NOW - T0 - 10_000, True)
    assert (first["transactional_id"], first["coordinator_state"]) == (
        "app-hanging",
        "CompleteCommit",
    )
    assert first["abort_command"].endswith("--topic orders --partition 0 --start-offset 10")
    aborted = part["aborted"][0]
    assert (aborted["producer_id"], aborted["first_offset"], aborted["last_offset"]) == (1002, 6, 8)
    assert isinstance(part["open_transactions"][1]["hanging"], bool)
    assert doc["status"] == "hanging"


def test_bootstrap_server_goes_into_the_command(log_dir: Path) -> None:
    ran = run_kdump(
        ["txn", str(log_dir), "--now", str(NOW), "--bootstrap-server", "b1:9092,b2:9092"]
    )
    assert (
        "kafka-transactions.sh --bootstrap-server b1:9092,b2:9092 abort --topic orders "
        "--partition 0 --start-offset 10"
    ) in ran.stdout


def test_exit_codes_follow_what_is_reported(log_dir: Path) -> None:
    """The filters choose what is reported; the state is still built from every batch."""
    young = run_kdump(["txn", str(log_dir), "--now", str(NOW), "--producer-id", "1007"])
    assert young.exit_code == 1
    assert "producer 1007" in young.stdout and "TXN_HANGING" not in young.stdout
    done = run_kdump(["txn", str(log_dir), "--now", str(NOW), "--producer-id", "1001"])
    assert done.exit_code == 0
    by_offset = run_kdump(
        ["txn", str(log_dir), "--now", str(NOW), "--offset-range", "17:", "--format", "json"]
    )
    doc = json.loads(by_offset.stdout)
    assert by_offset.exit_code == 1
    assert [t["producer_id"] for t in doc["partitions"][0]["open_transactions"]] == [1007]
    assert doc["partitions"][0]["last_stable_offset"] == 10  # 1003 still holds it
    # a transaction ages from the producer's last timestamp: at T0 + 11 s it is young
    early = run_kdump(["txn", str(log_dir / "orders-0"), "--now", str(T0 + 11_000)])
    assert early.exit_code == 1


def test_transactional_id_placement_option(log_dir: Path) -> None:
    ran = run_kdump(
        [
            *("txn", str(log_dir / "orders-0"), "--transactional-id", "hello"),
            *("--now", str(NOW), "--transaction-state-partitions", "50"),
        ]
    )
    assert "transactional id 'hello' maps to __transaction_state-22 (50 partitions, given)" in (
        ran.stdout
    )


# -- smaller partitions, one rule each ---------------------------------------------------------


def test_a_marker_above_the_high_watermark_holds_the_lso(tmp_path: Path) -> None:
    """unreplicatedTxns: a completed transaction whose marker is not below the HW still
    counts for the first unstable offset; with no checkpoint the HW is the log end."""
    w = PartitionWriter(tmp_path / "logdir" / "t-0")
    w.data(2, T0, 7, 0, 0, True)
    w.marker(7, 0, COMMIT, 1, T0 + 1)
    w.data(1, T0 + 2)
    w.write()
    (report,) = analyze(tmp_path / "logdir").partitions  # type: ignore[attr-defined]
    assert (report.high_watermark, report.last_stable_offset, report.blocked_records) == (4, 4, 0)
    (tmp_path / "logdir" / "replication-offset-checkpoint").write_text("0\n1\nt 0 2\n")
    (report,) = analyze(tmp_path / "logdir").partitions  # type: ignore[attr-defined]
    assert (report.high_watermark, report.first_unstable_offset) == (2, 0)
    assert (report.last_stable_offset, report.blocked_records) == (0, 4)
    assert not report.open_transactions


def test_the_lso_is_never_below_the_log_start_offset(tmp_path: Path) -> None:
    """UnifiedLog clamps the first unstable offset up to the log start offset. A replay starts
    at the log start, so only a snapshot can know a transaction opened below it."""
    w = PartitionWriter(tmp_path / "logdir" / "t-0")
    w.data(2, T0, 7, 0, 0, True)
    w.data(3, T0 + 1)
    w.write()
    w.write_file(f"{5:020d}.snapshot", snapshot_bytes([(7, 0, 1, 1, 1, T0, -1, 0)]))
    (tmp_path / "logdir" / "log-start-offset-checkpoint").write_text("0\n1\nt 0 3\n")
    result = analyze(tmp_path / "logdir")
    (report,) = result.partitions  # type: ignore[attr-defined]
    assert report.log_start_offset == 3
    assert (report.first_unstable_offset, report.last_stable_offset) == (3, 3)
    assert report.blocked_records == 2  # the batch 2..4 across the LSO counts offsets 3 and 4
    assert report.open_transactions[0].first_offset == 0
    assert result.status() == 2  # type: ignore[attr-defined]


def test_no_coordinator_view_lists_every_old_transaction(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path / "logdir" / "payments-3")
    w.data(1, T0, 42, 2, 0, True)
    w.write()
    ran = run_kdump(["txn", str(tmp_path / "logdir" / "payments-3"), "--now", str(NOW)])
    assert ran.exit_code == 2
    assert "no __transaction_state partition read" in ran.stdout
    assert "payments\t3        \t42" in ran.stdout
    doc = json.loads(
        run_kdump(["txn", str(tmp_path / "logdir"), "--now", str(NOW), "--format", "json"]).stdout
    )
    txn = doc["partitions"][0]["open_transactions"][0]
    assert (txn["find_hanging"], txn["coordinator_state"], txn["transactional_id"]) == (
        None,
        None,
        None,
    )


def test_a_producer_unknown_to_the_coordinator_hangs(log_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(log_dir, tmp_path / "logdir"))
    w = PartitionWriter(copy / "payments-0")
    w.data(2, T0, 4242, 0, 0, True)
    w.write()
    result = analyze(copy, batch_filter=BatchFilter(producer_id=4242))
    (txn,) = result.open_transactions  # type: ignore[attr-defined]
    assert txn.transactional_id is None and txn.find_hanging
    assert txn.coordinator.startswith("unknown to the coordinator")


def test_the_txn_index_beside_the_markers(log_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(log_dir / "orders-0", tmp_path / "orders-0"))
    (copy / f"{0:020d}.txnindex").write_bytes(
        txn_index_bytes([(1002, 7, 8, 9), (1001, 0, 5, 6)])  # wrong first offset; no ABORT at 5
    )
    (copy / f"{13:020d}.txnindex").unlink()
    (report,) = analyze(copy).partitions  # type: ignore[attr-defined]
    codes = sorted(f.code for f in report.findings if f.code.startswith("TXN_INDEX"))
    assert codes == ["TXN_INDEX_DISAGREES", "TXN_INDEX_MISSING_ABORT", "TXN_INDEX_WITHOUT_MARKER"]
    aborted = {(a.producer_id, a.last_offset): (a.in_log, a.in_txn_index) for a in report.aborted}
    assert aborted == {(1002, 8): (True, True), (1001, 5): (False, True), (1005, 15): (True, False)}


def test_a_marker_whose_data_is_before_the_log_takes_its_range_from_the_index(
    tmp_path: Path,
) -> None:
    w = PartitionWriter(tmp_path / "t-0", next_offset=100, segments={100: []}, current=100)
    w.marker(9, 0, ABORT, 3, T0)
    w.write()
    w.write_file(f"{100:020d}.txnindex", txn_index_bytes([(9, 90, 100, 101)]))
    (report,) = analyze(tmp_path / "t-0").partitions  # type: ignore[attr-defined]
    assert [(a.first_offset, a.last_offset, a.in_log, a.in_txn_index) for a in report.aborted] == [
        (90, 100, True, True)
    ]
    assert report.completed[9].markers_without_data == 1
    assert not report.findings


def test_a_damaged_log_is_a_finding_not_a_traceback(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path / "t-0")
    w.data(1, T0, 7, 0, 0, True)
    w.raw(v2_batch(1, b"\x00" * 20)[:30], 1)  # a torn write
    w.write()
    ran = run_kdump(["txn", str(tmp_path / "t-0"), "--now", str(NOW)])
    assert ran.exit_code == 2 and ran.stderr == ""
    assert "LOG_TRUNCATED_TAIL" in ran.stdout
    missing = run_kdump(["txn", str(tmp_path / "nothing")])
    assert missing.exit_code == 3
    assert missing.stderr.strip().count("\n") == 0 and "nothing" in missing.stderr
    bad = run_kdump(["txn", str(tmp_path / "t-0"), "--offset-range", "9:3"])
    assert bad.exit_code == 3 and "ends before it starts" in bad.stderr


def coordinator_partition(log_dir: Path, number: int, ids: dict[str, int]) -> None:
    """__transaction_state-<number> holding each transactional id -> producer id, Ongoing
    on orders-0."""
    w = PartitionWriter(log_dir / f"__transaction_state-{number}")
    for tid, pid in ids.items():
        value = txn_log_value(pid, 0, 60000, 1, {"orders": [0]}, T0, T0)  # 1: Ongoing
        w.raw(batch_bytes(w.next_offset, [T0], records=[(txn_log_key(tid), value)]), 1)
    w.write()


def test_a_producer_missing_from_a_partial_coordinator_view_is_unknown(
    log_dir: Path, tmp_path: Path
) -> None:
    """A broker holding one __transaction_state partition of Kafka's default 50: a producer id
    not found there may live in any of the 49 others, so no verdict, and no find-hanging row
    on that basis."""
    root = tmp_path / "logdir"
    shutil.copytree(log_dir / "orders-0", root / "orders-0")
    tid = next(t for t in (f"app-{i}" for i in range(1000)) if partition_for(t, 50) == 7)
    coordinator_partition(root, 7, {tid: 5555})  # where Kafka's 50 partitions put it
    result = analyze(root)
    view = result.coordinator  # type: ignore[attr-defined]
    assert (view.partition_count, view.partition_count_source) == (50, "default")
    assert not view.findings
    hanging = next(t for t in result.open_transactions if t.producer_id == 1003)  # type: ignore[attr-defined]
    assert hanging.hanging and hanging.find_hanging is None
    assert hanging.coordinator.startswith(
        "unknown (its __transaction_state partition was not read)"
    )
    assert "nothing will ever end it" not in hanging.coordinator
    ran = run_kdump(["txn", str(root), "--now", str(NOW), "--format", "json"])
    doc = json.loads(ran.stdout)
    assert doc["find_hanging"] == []
    text = run_kdump(["txn", str(root), "--now", str(NOW)]).stdout
    assert "50 partitions (Kafka's default transaction.state.log.num.partitions" in text


def test_the_partition_count_is_kafkas_default_unless_the_directory_shows_otherwise(
    tmp_path: Path,
) -> None:
    # 0..2 all there, and each id where 3 partitions put it but not where 50 do: 3
    three = {t: partition_for(t, 3) for t in (f"x-{i}" for i in range(200))}
    chosen = {
        n: next(t for t, m in three.items() if m == n and partition_for(t, 50) != n)
        for n in range(3)
    }
    for n, t in chosen.items():
        coordinator_partition(tmp_path / "three", n, {t: 100 + n})
    view = analyze(tmp_path / "three").coordinator  # type: ignore[attr-defined]
    assert (view.partition_count, view.partition_count_source) == (3, "directory")
    # only partition 7, its id not where 50 partitions put it: 50 stays a labelled guess
    t = next(t for t in (f"y-{i}" for i in range(200)) if partition_for(t, 50) != 7)
    coordinator_partition(tmp_path / "gap", 7, {t: 7})
    view = analyze(tmp_path / "gap").coordinator  # type: ignore[attr-defined]
    assert (view.partition_count, view.partition_count_source) == (50, "guess")
    assert [f.code for f in view.findings] == ["TXN_COORDINATOR_PARTITION_COUNT"]
    # a partition above 49 read: at least that many
    coordinator_partition(tmp_path / "many", 63, {})
    view = analyze(tmp_path / "many").coordinator  # type: ignore[attr-defined]
    assert (view.partition_count, view.partition_count_source) == (64, "guess")


def test_a_zero_tail_is_named_as_verify_names_it(tmp_path: Path) -> None:
    """A power loss's zero-filled tail: txn's cut carries verify's code for the same bytes."""
    w = PartitionWriter(tmp_path / "t-0")
    w.data(1, T0, 7, 0, 0, True)
    w.raw(b"\x00" * 64, 1)
    w.write()
    ran = run_kdump(["txn", str(tmp_path / "t-0"), "--now", str(NOW)])
    verified = run_kdump(["verify", str(tmp_path / "t-0")])
    assert "LOG_ZERO_TAIL" in verified.stdout
    assert "LOG_ZERO_TAIL" in ran.stdout and "LOG_TRUNCATED_TAIL" not in ran.stdout
