"""kdump explain on compacted partitions: the cleaner's choice (LogCleanerManager) and what a
cleaning drops (Cleaner), with every answer worked out here from Kafka's rules."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from explainbuild import (
    HOUR,
    T0,
    batch,
    checkpoint,
    explain_one,
    marker,
    segment,
    txn_index,
)

from kdump.offset_map import BYTES_PER_ENTRY, SkimpyOffsetMap

NOW = T0 + HOUR
V = b"value"


def tombstone_partition(log_dir: Path) -> tuple[Path, list[int]]:
    """Segments 0 and 5 (dirty unless a checkpoint says otherwise) and the active 8."""
    d = log_dir / "keys-0"
    seg0 = [
        batch(0, [(b"k1", V), (b"k2", V), (b"k3", V)], T0),
        batch(3, [(b"k1", None)], T0, delete_horizon=NOW - 1),  # horizon passed
        batch(4, [(b"k2", None)], T0, delete_horizon=NOW + 1000),  # horizon ahead
    ]
    seg5 = [
        batch(5, [(b"k3", None)], T0 + 1),  # a tombstone no cleaning has stamped yet
        batch(6, [(b"k4", V)], T0 + 1),
        batch(7, [(None, V)], T0 + 1),  # no key: the cleaner drops it
    ]
    segment(d, seg0)
    segment(d, seg5)
    segment(d, [batch(8, [(b"k1", V)], T0 + 2)])
    return d, [b.size for b in seg0 + seg5]


def test_tombstones_and_superseded_records(tmp_path: Path) -> None:
    d, sizes = tombstone_partition(tmp_path)
    p = explain_one(d, "cleanup.policy=compact", now=NOW)
    c = p.compaction
    assert c is not None
    # no cleaner-offset-checkpoint: first dirty = log start 0; the active segment bounds it
    assert (c.first_dirty_offset, c.first_uncleanable_offset) == (0, 8)
    assert (c.clean_bytes, c.dirty_bytes, c.dirty_ratio) == (0, sum(sizes), 1.0)
    assert c.cleanable
    pv = c.preview
    # the map of [0, 8): k1->3, k2->4, k3->5, k4->6; the active segment's k1 at 8 is not in it
    assert (pv.distinct_keys, pv.end_offset) == (4, 8)
    # 0 k1, 1 k2, 2 k3 superseded; 3 k1 tombstone past its horizon; 7 has no key
    assert (pv.superseded, pv.tombstones, pv.no_key, pv.aborted) == (3, 1, 1, 0)
    assert pv.droppable_records == 5
    # batches 0, 3 and 7 go whole; batch 5's tombstone is stamped with a delete horizon, the new
    # base timestamp: its record's timestamp delta, 0 before (one varint byte), becomes
    # T0 + 1 - (NOW + delete.retention.ms) = -89,999,999 (zig-zag 179,999,997: four bytes)
    assert pv.droppable_bytes == sizes[0] + sizes[1] + sizes[5] - 3
    # 4 k2 (horizon ahead) and 5 k3 (no horizon: this cleaning stamps one) stay
    assert (pv.tombstones_kept, pv.tombstones_to_stamp) == (2, 1)
    assert pv.next_delete_horizon == NOW + 1000
    assert pv.records_read == 8


def test_checkpoint_in_range(tmp_path: Path) -> None:
    d, sizes = tombstone_partition(tmp_path)
    checkpoint(tmp_path, "cleaner-offset-checkpoint", {("keys", 0): 5})
    p = explain_one(d, "cleanup.policy=compact", now=NOW)
    c = p.compaction
    assert c is not None
    clean, dirty = sum(sizes[:3]), sum(sizes[3:])
    assert (c.checkpoint, c.first_dirty_offset) == (5, 5)
    assert (c.clean_bytes, c.dirty_bytes) == (clean, dirty)
    assert c.dirty_ratio == dirty / (clean + dirty)
    assert c.cleanable == (dirty / (clean + dirty) > 0.5)
    pv = c.preview
    # map of [5, 8): k3->5, k4->6. Clean section: k3 at 2 superseded; k1 and k2 not in the
    # map stay, except the k1 tombstone whose horizon passed; 7 has no key
    assert (pv.distinct_keys, pv.superseded, pv.tombstones, pv.no_key) == (2, 1, 1, 1)


@pytest.mark.parametrize("stored", [100, 2])
def test_checkpoint_out_of_range_resets_to_log_start(tmp_path: Path, stored: int) -> None:
    d, _ = tombstone_partition(tmp_path)
    checkpoint(tmp_path, "cleaner-offset-checkpoint", {("keys", 0): stored})
    checkpoint(tmp_path, "log-start-offset-checkpoint", {("keys", 0): 3})
    p = explain_one(d, "cleanup.policy=compact", now=NOW)
    c = p.compaction
    assert c is not None
    # 100 > log end offset 9, or 2 < log start offset 3: cleanableOffsets resets to 3
    assert (p.log_end_offset, p.log_start_offset) == (9, 3)
    assert c.first_dirty_offset == 3
    assert ("beyond the log end offset" if stored == 100 else "below the log start") in (
        c.checkpoint_note
    )


def test_open_transaction_bounds_cleaning(tmp_path: Path) -> None:
    d = tmp_path / "txn-0"
    segment(d, [batch(0, 5, T0)])
    segment(
        d,
        [
            batch(10, 1, T0),
            batch(12, [(b"x", V)], T0, producer_id=7, producer_epoch=0, transactional=True),
        ],
    )
    segment(d, [batch(20, 1, T0)])
    p = explain_one(d, "cleanup.policy=compact", now=NOW)
    c = p.compaction
    assert c is not None
    # last stable offset = the open transaction's first offset 12 < active base 20;
    # LogToClean snaps it down to the base of the segment holding it, 10
    assert [(t.producer_id, t.first_offset) for t in c.open_transactions] == [(7, 12)]
    assert (c.last_stable_offset, c.uncleanable_offset, c.first_uncleanable_offset) == (12, 12, 10)
    assert c.uncleanable_by == ("the last stable offset",)
    assert c.dirty_bytes == os.path.getsize(d / f"{0:020d}.log")


def test_committed_transaction_does_not_bound_cleaning(tmp_path: Path) -> None:
    d = tmp_path / "txn-0"
    segment(d, [batch(0, 5, T0)])
    txn = dict(producer_id=7, producer_epoch=0, transactional=True)
    segment(d, [batch(10, [(b"x", V)], T0, **txn), marker(11, True, 7)])  # type: ignore[arg-type]
    segment(d, [batch(20, 1, T0)])
    c = explain_one(d, "cleanup.policy=compact", now=NOW).compaction
    assert c is not None
    assert c.open_transactions == () and c.last_stable_offset == 21
    assert c.first_uncleanable_offset == 20


def test_aborted_transaction_data_is_dropped(tmp_path: Path) -> None:
    d = tmp_path / "abort-0"
    txn = dict(producer_id=5, producer_epoch=0, transactional=True)
    segment(
        d,
        [
            batch(0, [(b"a", V)], T0, **txn),  # type: ignore[arg-type]
            batch(1, [(b"b", V)], T0, **txn),  # type: ignore[arg-type]
            marker(2, False, 5),
            batch(3, [(b"c", V)], T0),
        ],
    )
    # the AbortedTxn the broker indexed: producer 5, offsets 0..2, last stable offset 3
    txn_index(d, 0, [(5, 0, 2, 3)])
    segment(d, [batch(10, 1, T0)])
    pv = explain_one(d, "cleanup.policy=compact", now=NOW).compaction.preview  # type: ignore[union-attr]
    # both data batches belong to the aborted transaction; the marker stays while any of
    # its batches is seen in this pass
    assert (pv.aborted, pv.markers, pv.droppable_records) == (2, 0, 2)
    assert pv.distinct_keys == 1  # only c: aborted batches are not mapped


def test_abort_marker_goes_once_its_data_is_gone_and_its_horizon_passed(tmp_path: Path) -> None:
    d = tmp_path / "abort-0"
    # an earlier cleaning removed the data and stamped the marker
    segment(d, [marker(2, False, 5, delete_horizon=NOW - 1), batch(3, [(b"c", V)], T0)], 0)
    txn_index(d, 0, [(5, 0, 2, 3)])
    segment(d, [batch(10, 1, T0)])
    pv = explain_one(d, "cleanup.policy=compact", now=NOW).compaction.preview  # type: ignore[union-attr]
    assert (pv.markers, pv.droppable_records) == (1, 1)


def test_min_compaction_lag(tmp_path: Path) -> None:
    d = tmp_path / "lag-0"
    segment(d, [batch(0, 1, T0)])
    segment(d, [batch(10, 1, NOW - 1000)])
    segment(d, [batch(20, 1, NOW)])
    c = explain_one(d, "cleanup.policy=compact", "min.compaction.lag.ms=60000", now=NOW).compaction
    assert c is not None
    # segment 10's largest timestamp NOW - 1000 > NOW - 60000: uncleanable from there
    assert (c.uncleanable_offset, c.first_uncleanable_offset) == (10, 10)
    assert c.uncleanable_by == ("min.compaction.lag.ms 60000",)


def test_max_compaction_lag_forces_a_cleaning(tmp_path: Path) -> None:
    log_dir = tmp_path
    d = log_dir / "lag-0"
    segment(d, [batch(0, 20, T0, value_size=200)])
    segment(d, [batch(30, 1, T0)])
    segment(d, [batch(40, 1, T0)])
    checkpoint(log_dir, "cleaner-offset-checkpoint", {("lag", 0): 30})
    clean = os.path.getsize(d / f"{0:020d}.log")
    dirty = os.path.getsize(d / f"{30:020d}.log")
    assert dirty / (clean + dirty) <= 0.5
    now = T0 + 2 * HOUR
    c = explain_one(d, "cleanup.policy=compact", now=now).compaction
    assert c is not None and not c.cleanable
    c = explain_one(
        d, "cleanup.policy=compact", f"max.compaction.lag.ms={HOUR}", now=now
    ).compaction
    assert c is not None and c.cleanable
    # cleanUntil = now - lag; the dirty segment's first batch T0 is (now - HOUR) - T0 past it
    assert c.max_compaction_delay_ms == now - HOUR - T0


def test_offset_map_fills_and_the_cleaning_stops_there(tmp_path: Path) -> None:
    d = tmp_path / "full-0"
    segment(d, [batch(i, [(b"k%d" % i, V)], T0) for i in range(20)])
    segment(d, [batch(20, 1, T0)])
    # 240 bytes: 10 slots of 24, filled to int(10 * 0.9) = 9 keys (k0..k8); the record at 9
    # does not fit, so the map's latest offset is 8 and the cleaning ends below 9
    for deep in (False, True):
        c = explain_one(
            d, "cleanup.policy=compact", now=NOW, offset_map_bytes=240, deep=deep
        ).compaction
        assert c is not None
        pv = c.preview
        assert (pv.map_slots, pv.map_max_entries, pv.distinct_keys) == (10, 9, 9)
        assert (pv.map_full_at_offset, pv.end_offset) == (9, 9)
        assert pv.droppable_records == 0


def test_deep_counts_per_key(tmp_path: Path) -> None:
    d = tmp_path / "deep-0"
    segment(d, [batch(0, [(b"a", V), (b"b", V), (b"a", V), (b"a", V)], T0)])
    segment(d, [batch(10, 1, T0)])
    pv = explain_one(d, "cleanup.policy=compact", now=NOW, deep=True).compaction.preview  # type: ignore[union-attr]
    assert pv.exact
    assert [(k.key, k.records, k.droppable) for k in pv.top_keys] == [(b"a", 3, 2), (b"b", 1, 0)]


def test_a_damaged_segment_makes_the_partition_uncleanable(tmp_path: Path) -> None:
    d = tmp_path / "torn-0"
    log = segment(d, [batch(0, 2, T0)])
    with open(log, "ab") as f:
        f.write(batch(2, 1, T0).data[:30])  # a torn write: the batch header, cut short
    segment(d, [batch(10, 1, T0)])
    p = explain_one(d, "cleanup.policy=compact", now=NOW)
    assert p.compaction is not None
    # the running broker's cleaner fails on it; the figures are the log as recovery leaves it
    assert any("KAFKA-19895" in n and "at offset 2" in n for n in p.compaction.notes)
    assert p.log_end_offset == 2
    assert any("LOG_TRUNCATED_TAIL" in n and "a torn, partial batch" in n for n in p.notes)


def test_skimpy_offset_map_probes_like_kafka() -> None:
    m = SkimpyOffsetMap(7 * BYTES_PER_ENTRY, 0.9)
    digest = hashlib.md5(b"x").digest()
    # attempt 0: Utils.abs(readIntBE(hash, 0)) % slots
    first = int.from_bytes(digest[:4], "big", signed=True)
    slot = abs(first) % 7
    m.put(b"x", 42)
    assert m._bytes[slot * 24 : slot * 24 + 16] == digest
    keys = [b"k%d" % i for i in range(6)]
    for i, k in enumerate(keys[:5]):
        m.put(k, i)
    m.put(b"k0", 100)  # an existing key: overwritten, size unchanged
    assert m.size == 6
    m.put(keys[5], 5)
    assert [m.get(k) for k in keys] == [100, 1, 2, 3, 4, 5]
    assert (m.get(b"x"), m.get(b"absent"), m.latest_offset) == (42, -1, 5)
    # SkimpyOffsetMap.put refuses any key once every slot is taken, even a known one
    with pytest.raises(ValueError):
        m.put(b"k0", 1)


def test_skimpy_offset_map_probes_the_next_hash_window_on_a_collision() -> None:
    slots = 7

    def slot(digest: bytes, attempt: int) -> int:
        # SkimpyOffsetMap.positionOf: readIntBE(hash, min(attempt, 12)) + max(0, attempt - 12)
        window = min(attempt, 12)
        probe = int.from_bytes(digest[window : window + 4], "big", signed=True)
        probe += max(0, attempt - 12)
        return abs(probe) % slots

    x = hashlib.md5(b"x").digest()
    other = next(
        k
        for k in (b"c%d" % i for i in range(1000))
        if slot(hashlib.md5(k).digest(), 0) == slot(x, 0)
    )
    digest = hashlib.md5(other).digest()
    attempt = next(a for a in range(1, 13) if slot(digest, a) != slot(x, 0))
    m = SkimpyOffsetMap(slots * BYTES_PER_ENTRY, 0.9)
    m.put(b"x", 1)
    m.put(other, 2)
    where = slot(digest, attempt) * BYTES_PER_ENTRY
    assert m._bytes[where : where + 16] == digest
    assert (m.get(b"x"), m.get(other)) == (1, 2)


def test_high_watermark_bounds_cleaning(tmp_path: Path) -> None:
    d = tmp_path / "hw-0"
    for base in (0, 10, 20):
        segment(d, [batch(base, 10, T0)])
    checkpoint(tmp_path, "replication-offset-checkpoint", {("hw", 0): 15})
    c = explain_one(d, "cleanup.policy=compact", now=NOW).compaction
    assert c is not None
    # no open transaction: last stable offset = high watermark 15 < active base 20; snapped
    # down to the base of the segment holding it
    assert (c.last_stable_offset, c.first_uncleanable_offset) == (15, 10)
    assert c.uncleanable_by[0].startswith("the last stable offset (the high watermark")
