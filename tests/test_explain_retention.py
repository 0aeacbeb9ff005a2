"""kdump explain: what retention deletes (UnifiedLog.deleteOldSegments), with answers worked out
here from Kafka's rules: time, size and log start offset passes, the prefix rule, the high
watermark, future timestamps, and time indexes that make a segment go early or never."""

from __future__ import annotations

import os
from pathlib import Path

from explainbuild import HOUR, T0, batch, checkpoint, explain_one, segment

DAY = 24 * HOUR


def three_segments(d: Path, stamps: tuple[int, int, int] = (T0, T0 + 1000, T0 + 2000)) -> None:
    """Segments at offsets 0, 100, 200 (the active one), each one batch of 10 records."""
    for base, ts in zip((0, 100, 200), stamps, strict=True):
        segment(d, [batch(base, 10, ts)])


def deletable(p: object) -> list[str | None]:
    return [s.retention.deletable for s in p.segments]  # type: ignore[attr-defined]


def test_time_retention_is_strict_and_a_prefix(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    three_segments(d)
    now = T0 + 1000 + HOUR  # segment 100 is exactly retention.ms old: kept (strict >)
    p = explain_one(d, f"retention.ms={HOUR}", now=now)
    assert deletable(p) == ["time", None, None]
    r = p.retention
    assert (r.deletable_segments, r.deletable_bytes) == (1, p.segments[0].facts.size)
    assert r.log_start_offset_after == 100
    assert r.blocked_by is not None
    assert (r.blocked_by.base_offset, r.blocked_by.kind) == (100, "not_expired")
    # deletable at largestTimestamp + retention.ms + 1, and never before the segment ahead
    assert [s.retention.deletable_at for s in p.segments] == [
        T0 + HOUR + 1,
        T0 + 1000 + HOUR + 1,
        T0 + 2000 + HOUR + 1,
    ]
    assert (r.next_deletable_at, r.next_deletable_base_offset) == (T0 + 1000 + HOUR + 1, 100)


def test_time_retention_takes_the_active_segment_last(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    three_segments(d)
    p = explain_one(d, f"retention.ms={HOUR}", now=T0 + 2 * HOUR)
    # every segment old enough and the high watermark (no checkpoint: the log end) covers all
    assert deletable(p) == ["time", "time", "time"]
    assert p.retention.blocked_by is None
    assert any("rolls a new, empty active segment" in n for n in p.retention.notes)


def test_size_retention(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    three_segments(d)
    sizes = [os.path.getsize(d / f"{b:020d}.log") for b in (0, 100, 200)]
    total = sum(sizes)
    # diff = total - retention.bytes; delete oldest first while diff - size >= 0
    keep = sizes[1] + sizes[2]
    p = explain_one(d, f"retention.bytes={keep}", "retention.ms=-1")
    assert total - keep - sizes[0] == 0
    assert deletable(p) == ["size", None, None]
    p = explain_one(d, f"retention.bytes={keep + 1}", "retention.ms=-1")
    assert deletable(p) == [None, None, None]
    assert p.retention.blocked_by is not None
    assert "below retention.bytes" in p.retention.blocked_by.reason


def test_log_start_offset_retention(tmp_path: Path) -> None:
    log_dir = tmp_path / "logdir"
    d = log_dir / "logs-0"
    for base in (0, 100, 200, 300):
        segment(d, [batch(base, 10, T0)])
    checkpoint(log_dir, "log-start-offset-checkpoint", {("logs", 0): 250})
    for policy in ("delete", "compact"):
        p = explain_one(d, f"cleanup.policy={policy}", "retention.ms=-1", now=T0)
        # a segment goes when the next one starts at or below the log start offset 250
        assert p.log_start_offset == 250
        assert deletable(p) == ["log_start_offset", "log_start_offset", None, None]
        assert p.retention.passes[0] == "log_start_offset"


def test_high_watermark_bounds_deletion(tmp_path: Path) -> None:
    log_dir = tmp_path / "logdir"
    d = log_dir / "logs-0"
    three_segments(d)
    checkpoint(log_dir, "replication-offset-checkpoint", {("logs", 0): 150})
    p = explain_one(d, f"retention.ms={HOUR}", now=T0 + DAY)
    assert p.high_watermark == 150
    # segment 0 ends below 100 <= 150; segment 100 runs to 200 > 150
    assert deletable(p) == ["time", None, None]
    assert p.retention.blocked_by is not None
    assert p.retention.blocked_by.kind == "high_watermark"
    assert p.segments[1].retention.deletable_at is None


def test_future_timestamp_blocks_everything_after_it(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    future = T0 + 30 * DAY
    three_segments(d, (T0, future, T0 + 2000))
    now = T0 + DAY
    p = explain_one(d, f"retention.ms={HOUR}", now=now)
    assert deletable(p) == ["time", None, None]
    b = p.retention.blocked_by
    assert b is not None and (b.base_offset, b.kind) == (100, "future_timestamp")
    # segment 200 is old enough itself, but goes only after segment 100
    assert [s.retention.deletable_at for s in p.segments[1:]] == [future + HOUR + 1] * 2


def test_padded_time_index_makes_a_segment_deletable_early(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    # segment 0: a real entry, then the zero tail an unclean stop leaves; the broker counts
    # every whole entry and takes the last, (0, base offset): largest timestamp 0
    segment(d, [batch(0, 10, T0 + 5000)], zero_time_entries=3)
    segment(d, [batch(100, 10, T0 + 6000)])
    now = T0 + 10_000  # the data is 5 s old, retention is an hour
    p = explain_one(d, f"retention.ms={HOUR}", now=now)
    first = p.segments[0]
    assert first.facts.largest_timestamp == 0
    assert first.retention.deletable == "time"
    effect = first.facts.time_index_effect
    assert effect is not None and effect.effect == "early"
    assert effect.log_max_timestamp == T0 + 5000
    assert any(f.startswith("TIMEINDEX_PREALLOCATED") for f in effect.findings)


def test_damaged_time_index_makes_a_segment_never_deletable(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    garbage = 2**62  # a last entry past the year 9999
    segment(d, [batch(0, 10, T0)], time_entries=[(T0, 9), (garbage, 9)])
    segment(d, [batch(100, 10, T0)])
    p = explain_one(d, f"retention.ms={HOUR}", now=T0 + DAY)
    first = p.segments[0]
    assert first.facts.largest_timestamp == garbage
    assert first.retention.deletable is None and first.retention.deletable_at is None
    effect = first.facts.time_index_effect
    assert effect is not None and effect.effect == "never"
    assert any(f.startswith("TIMEINDEX_") for f in effect.findings)
    b = p.retention.blocked_by
    assert b is not None and (b.base_offset, b.kind) == (0, "future_timestamp")


def test_no_time_index_falls_back_to_the_file_mtime(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    log = segment(d, [batch(0, 10, T0 + DAY)], time_index=False)
    segment(d, [batch(100, 10, T0 + DAY)])
    mtime = T0 - DAY
    os.utime(log, ns=(mtime * 1_000_000, mtime * 1_000_000))
    p = explain_one(d, f"retention.ms={HOUR}", now=T0 + DAY + 1000)
    first = p.segments[0]
    # LogSegment.largestTimestamp: no time index entry -> lastModified()
    assert (first.facts.largest_timestamp, first.facts.largest_timestamp_source) == (
        mtime,
        "file mtime",
    )
    assert first.retention.deletable == "time"
    assert first.facts.time_index_effect is not None
    assert first.facts.time_index_effect.effect == "early"


def test_compacted_topic_without_a_cleaner_gets_no_retention(tmp_path: Path) -> None:
    d = tmp_path / "logs-0"
    three_segments(d)
    p = explain_one(d, "cleanup.policy=compact,delete", "log.cleaner.enable=false", now=T0 + DAY)
    assert deletable(p) == [None, None, None]
    assert p.retention.passes == ()
    assert p.compaction is not None and not p.compaction.cleanable
