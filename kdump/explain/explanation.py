"""One partition explained: the facts of its segments, why each rolled, what retention and
the cleaner do with them, read from the partition directory and its log dir's checkpoints."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kdump.config import ConfigLayers, Settings, resolve_settings
from kdump.discovery import discover
from kdump.errors import ConfigError, InputError
from kdump.explain.compaction import CompactionExplanation, explain_compaction
from kdump.explain.retention import RetentionExplanation, SegmentRetention, explain_retention
from kdump.explain.rolls import (
    RollExplanation,
    active_roll,
    explain_roll,
    offset_index_max_entries,
    time_index_max_entries,
)
from kdump.explain.segments import SegmentFacts, read_segment_facts
from kdump.explain.transactions import open_transactions
from kdump.offset_map import BYTES_PER_ENTRY
from kdump.progress import NO_PROGRESS, Progress
from kdump.unified_log import OpenOptions, UnifiedLog

if TYPE_CHECKING:
    from kdump.unified_log import PartitionFacts

TINY_MIN_SEGMENTS = 10
"""Closed segments a partition needs before kdump calls its segments many and tiny."""
TINY_MEDIAN_BATCHES = 2
"""... and the median closed segment holds at most this many batches."""


@dataclass(frozen=True)
class ExplainOptions:
    now: int
    """The broker's clock for every time rule (epoch ms)."""
    deep: bool = False
    """Exact keys in the cleaner's map (memory grows with the keys), with per-key counts."""
    offset_map_bytes: int | None = None
    """The cleaner's key map size; None: log.cleaner.dedupe.buffer.size per cleaner thread."""


@dataclass(frozen=True)
class SegmentExplanation:
    facts: SegmentFacts
    roll: RollExplanation
    retention: SegmentRetention


@dataclass(frozen=True)
class TinySegments:
    """Many closed segments holding a batch or two each: the log rolls on nearly every append."""

    closed_segments: int
    median_batches: float
    median_size: float
    causes: tuple[tuple[str, int], ...]
    """Roll causes among the closed segments, most frequent first."""
    explanation: str


@dataclass(frozen=True)
class PartitionExplanation:
    path: str
    topic: str | None
    partition: int | None
    now: int
    settings: Settings
    log_start_offset: int
    log_start_offset_source: str
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str
    segments: tuple[SegmentExplanation, ...]
    retention: RetentionExplanation
    compaction: CompactionExplanation | None
    tiny_segments: TinySegments | None
    notes: tuple[str, ...]
    facts: PartitionFacts = field(kw_only=True, compare=False)
    """The opened partition's facts (the ``partition`` object of every JSON output)."""


@dataclass(frozen=True)
class ExplainResult:
    partitions: tuple[PartitionExplanation, ...]
    skipped: tuple[str, ...]
    """Partition directories with no segment to explain, and why."""
    unreadable: tuple[InputError, ...] = ()
    """Paths that could not be read or hold nothing of Kafka's (the others are explained)."""


def explain_paths(
    paths: list[str],
    layers: ConfigLayers,
    options: ExplainOptions,
    progress: Progress = NO_PROGRESS,
) -> ExplainResult:
    """Every partition under ``paths`` (partition dirs, log dirs), each with its topic's
    settings; ``progress`` hears of each partition's bytes of log."""
    resolve_settings(layers, None)  # a bad --config fails before any partition is read
    found = discover(paths, options=OpenOptions(now_ms=options.now, layers=layers), urls=False)
    logs = found.partitions
    done: list[PartitionExplanation] = []
    skipped: list[str] = []
    progress.total(sum(log.size for log in logs))
    for log in logs:
        if not log.segments:
            skipped.append(f"{log.location}: no segment .log files: not a partition directory")
            continue
        done.append(explain_partition(log, log.settings, options))
        log.close()
        progress.advance(log.size, log.location)
    return ExplainResult(tuple(done), tuple(skipped), tuple(found.errors))


def explain_partition(
    log: UnifiedLog, settings: Settings, options: ExplainOptions
) -> PartitionExplanation:
    now = options.now
    facts = [read_segment_facts(log, s) for s in log.segments]
    log_start, log_end = log.log_start, log.log_end_offset
    high_watermark = log.high_watermark
    rolls = [
        explain_roll(f, facts[i + 1], settings) if i + 1 < len(facts) else active_roll(f, settings)
        for i, f in enumerate(facts)
    ]
    retention = explain_retention(
        facts, settings, now, log_start.value, log_end, high_watermark.value
    )
    compaction = None
    notes = [f.damage + ": kdump verify tells more" for f in facts if f.damage is not None]
    notes += list(settings.notes)
    notes += [
        f"{e}: read as absent, as the broker reads it (kdump verify tells more)"
        for e in log.unreadable_checkpoints
    ]

    if settings.compact:
        txns = open_transactions(log)
        compaction = explain_compaction(
            log, facts, settings, now, log_start.value, log_end, high_watermark.value,
            txns.last_stable_offset, txns.transactions, _map_bytes(settings, options),
            options.deep,
        )  # fmt: skip
    return PartitionExplanation(
        path=log.location,
        topic=log.topic,
        partition=log.partition,
        now=now,
        settings=settings,
        log_start_offset=log_start.value,
        log_start_offset_source=log_start.source,
        log_end_offset=log_end,
        high_watermark=high_watermark.value,
        high_watermark_source=high_watermark.source,
        segments=tuple(
            SegmentExplanation(f, r, s)
            for f, r, s in zip(facts, rolls, retention.segments, strict=True)
        ),
        retention=retention,
        compaction=compaction,
        tiny_segments=_tiny_segments(facts, rolls, settings),
        notes=tuple(notes),
        facts=log.facts(),
    )


def _map_bytes(settings: Settings, options: ExplainOptions) -> int:
    memory = options.offset_map_bytes
    if memory is None:
        memory = settings.dedupe_buffer_bytes_per_thread
    if (memory // BYTES_PER_ENTRY) * settings.dedupe_load_factor <= 1:
        # the Cleaner's constructor refuses such a map
        raise ConfigError(
            f"offset map of {memory} bytes",
            "offset map is too small to fit in even a single message, so log cleaning will "
            "never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
            "log.cleaner.threads",
        )
    return memory


def _tiny_segments(
    facts: list[SegmentFacts], rolls: list[RollExplanation], settings: Settings
) -> TinySegments | None:
    closed = facts[:-1]
    if len(closed) < TINY_MIN_SEGMENTS:
        return None
    median_batches = statistics.median(f.batches for f in closed)
    if median_batches > TINY_MEDIAN_BATCHES:
        return None
    causes = Counter(c for r in rolls[:-1] for c in r.causes).most_common()
    top = causes[0][0]
    hints = {
        "size": f"segment.bytes {settings.segment_bytes} holds only a batch or two",
        "time": (
            f"segment.ms {settings.max_segment_ms} ms is shorter than the time between batches"
        ),
        "offset_index_full": (
            f"segment.index.bytes {settings.segment_index_bytes} leaves room for "
            f"{offset_index_max_entries(settings.segment_index_bytes)} offset index entries"
        ),
        "time_index_full": (
            f"segment.index.bytes {settings.segment_index_bytes} leaves room for "
            f"{time_index_max_entries(settings.segment_index_bytes)} time index entries (one "
            "kept for the closing entry)"
        ),
        "offset_overflow": "offsets jump by more than 2^31 between batches",
        "unknown": "no rule explains it with today's settings: they changed since, or "
        "something else rolls the log",
    }
    median_size = statistics.median(f.size for f in closed)
    return TinySegments(
        closed_segments=len(closed),
        median_batches=median_batches,
        median_size=median_size,
        causes=tuple(causes),
        explanation=(
            f"{len(closed)} closed segments hold a median of {median_batches:g} batch(es), "
            f"{median_size:g} bytes: the log rolls on nearly every append; mostly by "
            f"{top}: {hints.get(top, top)}"
        ),
    )
