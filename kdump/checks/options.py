"""Settings of a verify run, named after the broker configs they mirror."""

from __future__ import annotations

from dataclasses import dataclass

from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES


@dataclass(frozen=True)
class VerifyOptions:
    deep: bool = False
    index_interval_bytes: int = 4096
    """index.interval.bytes: how far apart the broker writes index entries."""
    max_index_size: int = 10485760
    """log.index.size.max.bytes (segment.index.bytes)."""
    segment_bytes: int = 1073741824
    """log.segment.bytes (segment.bytes)."""
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_findings_per_code: int = 50
    """Findings of one code in one file beyond this are counted in a single summary finding."""
