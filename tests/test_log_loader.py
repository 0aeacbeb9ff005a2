"""kdump.log_loader.load, LogLoader.load's decisions, on segment states made to order: the rules
the real broker showed (tests/test_kafka_startup.py runs each against it), one test each."""

from __future__ import annotations

from kdump.log_loader import Load, Replay, SegmentState, load

SEGMENTS = (0, 100, 200, 300)


def states(
    *, no_index: tuple[int, ...] = (), cut: dict[int, int] | None = None
) -> list[SegmentState]:
    """Four segments of 100 offsets, 1000 bytes each; ``cut``: base -> where recovery cuts
    (valid bytes, then 50 offsets kept)."""
    cut = cut or {}
    out = []
    for base in SEGMENTS:
        valid = cut.get(base, 1000)
        kept = base + (50 if base in cut else 100)
        out.append(SegmentState(base, 1000, base not in no_index, False, valid, kept, kept))
    return out


def test_a_segment_cut_at_open_is_not_cut_again_by_recover_log() -> None:
    # LogLoader.loadSegmentFiles recovers a segment missing its .index and truncates it; when
    # recoverLog recovers it again it truncates nothing, so no later segment is deleted
    found = load(states(no_index=(100,), cut={100: 400}), False, 0, 0, [100, 200, 300])
    assert found.at_open == (100,)
    assert found.unflushed == SEGMENTS
    assert found.cut is None and found.deleted == ()
    assert found.segments == ((0, 1000), (100, 400), (200, 1000), (300, 1000))
    assert found.log_end_offset == 400


def test_a_cut_in_recover_log_deletes_every_later_segment() -> None:
    found = load(states(cut={100: 400}), False, 0, 0, [100, 200, 300])
    assert (found.cut, found.deleted) == (100, (200, 300))
    assert found.log_end_offset == 150


def test_a_recovery_at_open_deletes_the_snapshots_above_and_forces_a_replay() -> None:
    # KAFKA-5829: recoverSegment's truncateAndReload deletes the snapshots above the segment;
    # the load's own rebuild then replays from the one recovery wrote at the segment's end
    found = load(states(no_index=(100,)), True, 400, 0, [100, 200, 300, 400])
    assert found.replays == (Replay(200, 200, 400),)
    assert 300 in found.snapshots_written and 400 in found.snapshots_written


def test_no_snapshot_after_a_clean_stop_skips_the_rebuild() -> None:
    found = load(states(), True, 400, 0, [])
    assert found.producer_state_skipped and found.replays == ()
    assert found.snapshots_written == (200, 300, 400)  # empty ones: second-last, last, end


def test_no_snapshot_after_a_crash_replays_from_the_log_start() -> None:
    found: Load = load(states(), False, 400, 0, [])
    assert not found.producer_state_skipped
    assert found.unflushed == (300,)
    assert found.replays[0] == Replay(None, 0, 300)


def test_a_corrupt_snapshot_is_skipped_for_the_next_older() -> None:
    # loadFromSnapshot deletes it and loads the one before; the replay writes it again, whole
    found = load(states(), False, 400, 0, [100, 200, 300], frozenset({300}))
    assert found.replays[0] == Replay(200, 200, 300)
    assert 300 in found.snapshots_written and 300 in found.snapshots_left


def test_a_delete_directory_does_not_recover_its_log() -> None:
    found = load(states(), False, 0, 0, [100, 200, 300], recover_log=False)
    assert found.unflushed == () and found.recovered == ()


def test_a_delete_directory_loads_with_next_offset_0() -> None:
    # LogLoader.load gives a directory scheduled for deletion next offset 0: the producer state
    # is truncated to it (every snapshot above deleted) and no replay writes one (the real
    # broker, tests/test_kafka_leftovers.py then test_kafka_startup.py, wrote none at 400)
    found = load(states(), False, 0, 0, [], recover_log=False)
    assert found.log_end_offset == 0 and found.snapshots_written == ()
    kept = load(states(), False, 0, 0, [100, 200, 300], recover_log=False)
    assert kept.snapshots_deleted == (100, 200, 300) and kept.snapshots_written == ()


def test_a_snapshot_written_and_deleted_in_one_load_is_not_left() -> None:
    # segment 100 recovered at open (no .index), cut at offset 150: recovery writes 150 at its
    # end; removeStraySnapshots deletes it at the end (no segment starts there)
    found = load(states(no_index=(100,), cut={100: 400}), False, 0, 0, [100, 200, 300])
    assert 150 in found.snapshots_written
    assert 150 not in found.snapshots_left
