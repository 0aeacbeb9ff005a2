"""Settings of a verify run, named after the broker configs they mirror (defaults: Kafka's,
from kdump.config)."""

from __future__ import annotations

from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.tuples import NamedTuple


class VerifyOptions(NamedTuple):
    """A record (NamedTuple: a tenth of a frozen dataclass's start-up, issue 45)."""

    deep: bool = False
    index_interval_bytes: int | None = None
    """index.interval.bytes the broker ran with: an offset index denser than this is reported
    (info); None: not checked."""
    max_index_size: int | None = None
    """--max-index-size: the segment.index.bytes an index file is judged against, for every
    partition (None: each topic's own, from the settings' layers)."""
    segment_bytes: int | None = None
    """--segment-bytes: the segment.bytes a .log is judged against, for every partition (None:
    each topic's own)."""
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    max_findings_per_code: int = 50
    """Findings of one code in one file beyond this are counted in a single summary finding."""
    compaction_key_memory: int = 128 << 20
    """The bound of the key check of a compacted log below its cleaner checkpoint
    (kdump.checks.compacted; the broker's log.cleaner.dedupe.buffer.size by default)."""
