"""``kdump explain``: why each segment rolled, what retention deletes and when, why the cleaner
does or does not clean, decided from the files as Kafka decides it (see each module).

Library first: ``explain_paths`` (or ``explain_partition`` on an opened ``UnifiedLog``) returns
frozen dataclasses; ``kdump.render.explain`` prints them; ``kdump.config`` resolves settings.
"""

from __future__ import annotations

from kdump.explain.compaction import CleaningPreview, CompactionExplanation, KeyCount
from kdump.explain.explanation import (
    ExplainOptions,
    ExplainResult,
    PartitionExplanation,
    SegmentExplanation,
    TinySegments,
    explain_partition,
    explain_paths,
)
from kdump.explain.retention import Blocker, RetentionExplanation, SegmentRetention
from kdump.explain.rolls import ROLL_CAUSES, JitterWindow, RollCheck, RollExplanation
from kdump.explain.segments import FirstBatch, SegmentFacts, TimeIndexEffect

__all__ = [
    "ROLL_CAUSES",
    "Blocker",
    "CleaningPreview",
    "CompactionExplanation",
    "ExplainOptions",
    "ExplainResult",
    "FirstBatch",
    "JitterWindow",
    "KeyCount",
    "PartitionExplanation",
    "RetentionExplanation",
    "RollCheck",
    "RollExplanation",
    "SegmentExplanation",
    "SegmentFacts",
    "SegmentRetention",
    "TimeIndexEffect",
    "TinySegments",
    "explain_partition",
    "explain_paths",
]
