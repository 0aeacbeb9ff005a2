"""kdump explain: why each segment rolled (LogSegment.shouldRoll), one partition per cause.

Every expected answer is worked out here from Kafka's rules and the sizes, timestamps and
offsets the test wrote, never read back from kdump."""

from __future__ import annotations

from pathlib import Path

from explainbuild import T0, batch, explain_one, segment

MIB = 1024 * 1024
INT_MAX = 2**31 - 1


def test_size_roll_next_append_would_not_fit(tmp_path: Path) -> None:
    d = tmp_path / "sizes-0"
    first = [batch(i, 1, T0, value_size=100_000) for i in range(10)]
    second = [batch(10, 1, T0, value_size=100_000)]
    segment(d, first)
    segment(d, second)
    size = sum(b.size for b in first)
    # shouldRoll: size > segment.bytes - messagesSize, i.e. size + next > 1 MiB
    assert size <= MIB < size + second[0].size
    p = explain_one(d, "segment.bytes=1048576")
    closed, active = p.segments
    assert closed.roll.causes == ("size",)
    size_check = next(c for c in closed.roll.checks if c.cause == "size")
    assert f"{size} + next batch {second[0].size} = {size + second[0].size}" in size_check.evidence
    assert active.facts.active and active.roll.causes == ()


def test_time_roll_is_strict(tmp_path: Path) -> None:
    d = tmp_path / "times-0"
    segment(d, [batch(0, 1, T0), batch(1, 1, T0 + 10_000), batch(2, 1, T0 + 50_000)])
    segment(d, [batch(3, 1, T0 + 61_000)])
    p = explain_one(d, "segment.ms=60000")
    # waited = next batch max timestamp - first batch max timestamp = 61000 > 60000
    assert p.segments[0].roll.causes == ("time",)
    assert p.segments[0].roll.roll_jitter_ms is None
    e = tmp_path / "times-1"
    segment(e, [batch(0, 1, T0), batch(1, 1, T0 + 50_000)])
    segment(e, [batch(2, 1, T0 + 60_000)])
    # waited = 60000, not > segment.ms 60000: no time roll, and nothing else holds
    assert explain_one(e, "segment.ms=60000").segments[0].roll.causes == ("unknown",)


def test_time_roll_anchor_is_the_first_batch_max_timestamp(tmp_path: Path) -> None:
    d = tmp_path / "anchor-0"
    # a first batch whose max timestamp is later than the next batch's: the anchor is its max
    segment(d, [batch(0, 1, T0 + 30_000), batch(1, 1, T0)])
    segment(d, [batch(2, 1, T0 + 80_000)])
    p = explain_one(d, "segment.ms=60000")
    # 80000 - 30000 = 50000 ≤ 60000 (measured from the segment's first batch, not its minimum)
    assert p.segments[0].roll.causes == ("unknown",)


def test_jitter_window(tmp_path: Path) -> None:
    d = tmp_path / "jitter-0"
    segment(d, [batch(0, 1, T0), batch(1, 1, T0 + 52_000)])
    segment(d, [batch(2, 1, T0 + 55_000)])
    p = explain_one(d, "segment.ms=60000", "segment.jitter.ms=10000")
    roll = p.segments[0].roll
    # jitter j in [0, min(10000, 60000) - 1]; the roll needs 55000 > 60000 - j: j >= 5001;
    # the batch at +52000 did not roll it: 52000 <= 60000 - j, j <= 8000
    assert roll.causes == ("time",)
    assert roll.roll_jitter_ms is not None
    assert (roll.roll_jitter_ms.min_ms, roll.roll_jitter_ms.max_ms) == (5001, 8000)
    # without jitter the same files show no time roll
    assert explain_one(d, "segment.ms=60000").segments[0].roll.causes == ("unknown",)


def test_active_segment_time_window(tmp_path: Path) -> None:
    d = tmp_path / "activejitter-0"
    segment(d, [batch(0, 1, T0), batch(1, 1, T0 + 52_000)])
    p = explain_one(d, "segment.ms=60000", "segment.jitter.ms=10000")
    roll = p.segments[0].roll
    assert roll.roll_jitter_ms is not None
    # no roll yet at +52000: j <= 8000; a batch after T0 + 60000 - 8000 may roll it
    assert (roll.roll_jitter_ms.min_ms, roll.roll_jitter_ms.max_ms) == (0, 8000)
    assert any(str(T0 + 52_000) in n and str(T0 + 60_000) in n for n in roll.notes)


def test_offset_index_full(tmp_path: Path) -> None:
    d = tmp_path / "offsetfull-0"
    # index.interval.bytes 0: every batch but the first gets an entry: 9 batches, 8 entries;
    # one timestamp throughout, so the time index holds a single entry
    segment(d, [batch(i, 1, T0) for i in range(9)], interval=0)
    segment(d, [batch(9, 1, T0)], interval=0)
    p = explain_one(d, "segment.index.bytes=64")
    # OffsetIndex.isFull: entries >= maxEntries = 64 / 8 = 8
    assert p.segments[0].facts.offset_index_entries == 8
    assert p.segments[0].roll.causes == ("offset_index_full",)


def test_time_index_full_one_entry_early(tmp_path: Path) -> None:
    d = tmp_path / "timefull-0"
    # 10 batches of one size S at rising timestamps, index.interval.bytes S: an entry when
    # more than S bytes passed since the last one, so at batches 2, 4, 6, 8 (4 offset and 4
    # time entries); batch 9 holds the largest timestamp: the roll appends a closing entry
    batches = [batch(i, 1, T0 + i) for i in range(10)]
    assert len({b.size for b in batches}) == 1
    segment(d, batches, interval=batches[0].size)
    segment(d, [batch(10, 1, T0 + 10)])
    p = explain_one(d, "segment.index.bytes=64")
    facts = p.segments[0].facts
    assert (facts.offset_index_entries, facts.time_index_entries) == (4, 5)
    # TimeIndex.isFull at the roll: 4 entries >= maxEntries - 1 = 64 // 12 - 1 = 4, where
    # OffsetIndex.isFull (4 >= 64 // 8 = 8) does not hold yet
    assert p.segments[0].roll.causes == ("time_index_full",)


def test_time_index_not_full_without_closing_entry(tmp_path: Path) -> None:
    d = tmp_path / "timenotfull-0"
    # 8 batches: entries at batches 2, 4, 6, then the closing one: 4 in the file, 3 at the
    # roll, and 3 < 4
    batches = [batch(i, 1, T0 + i) for i in range(8)]
    segment(d, batches, interval=batches[0].size)
    segment(d, [batch(8, 1, T0 + 8)])
    p = explain_one(d, "segment.index.bytes=64")
    assert p.segments[0].facts.time_index_entries == 4
    assert p.segments[0].roll.causes == ("unknown",)


def test_offset_overflow(tmp_path: Path) -> None:
    d = tmp_path / "overflow-0"
    segment(d, [batch(0, 1, T0), batch(INT_MAX - 1, 1, T0)])
    first = batch(INT_MAX + 5, 1, T0)
    segment(d, [first])
    p = explain_one(d)
    # next batch last offset - base offset = 2^31 + 4 > Integer.MAX_VALUE
    assert first.last_offset - 0 > INT_MAX
    assert p.segments[0].roll.causes == ("offset_overflow",)


def test_unknown_on_a_cleaned_segment(tmp_path: Path) -> None:
    d = tmp_path / "cleaned-0"
    # what the cleaner leaves: offsets 0 and 7 kept, a tombstone batch stamped with a horizon
    segment(d, [batch(0, 1, T0), batch(7, [(b"k", None)], T0, delete_horizon=T0 + 86_400_000)])
    segment(d, [batch(20, 1, T0 + 1000)])
    p = explain_one(d)
    roll = p.segments[0].roll
    assert roll.causes == ("unknown",)
    assert {c.cause for c in roll.checks} == {
        "size",
        "time",
        "offset_index_full",
        "time_index_full",
        "offset_overflow",
    }
    assert any("cleaner rewrote" in n for n in roll.notes)
    assert any("offsets 8..19 are in no segment" in n for n in roll.notes)


def test_many_tiny_segments(tmp_path: Path) -> None:
    d = tmp_path / "tiny-0"
    for i in range(12):
        segment(d, [batch(i, 1, T0 + i)])
    p = explain_one(d, "segment.index.bytes=4")
    # segment.index.bytes 4: an offset index of 4 // 8 = 0 entries is always full (KAFKA-6388)
    assert all("offset_index_full" in s.roll.causes for s in p.segments[:-1])
    tiny = p.tiny_segments
    assert tiny is not None
    assert (tiny.closed_segments, tiny.median_batches) == (11, 1)
    assert "offset_index_full" in tiny.explanation
    few = tmp_path / "few-0"
    for i in range(3):
        segment(few, [batch(i, 1, T0 + i)])
    assert explain_one(few, "segment.index.bytes=4").tiny_segments is None


def test_roll_without_an_append(tmp_path: Path) -> None:
    d = tmp_path / "emptynext-0"
    segment(d, [batch(0, 3, T0)])
    (d / f"{3:020d}.log").write_bytes(b"")  # rolled at the log end, nothing appended yet
    p = explain_one(d)
    closed, active = p.segments
    assert closed.roll.causes == ("unknown",)
    assert any("next segment is empty" in n for n in closed.roll.notes)
    # an empty active segment is never deleted; the log end offset is its base offset
    assert p.log_end_offset == 3 and active.facts.size == 0
