"""``kdump compact``: one cleaning of each compacted partition, as the broker's log cleaner would
run it now (kdump.log_cleaner), counted (``--dry-run``) or written (``--output-dir``): each
group's cleaned ``.log`` streamed to disk batch by batch, its ``.index`` and ``.timeindex`` made
by LogSegment.append's rule (the rule recovery also follows: kdump.repair.rebuild), its
``.txnindex`` from the aborted transactions its kept ABORT markers close, every file's mtime the
replaced segments' last, and the partition's new ``cleaner-offset-checkpoint`` entry.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kdump.config import Settings
from kdump.errors import ConfigError, InputError
from kdump.explain.compaction import CompactionExplanation, explain_compaction, new_offset_map
from kdump.explain.segments import read_segment_facts
from kdump.explain.transactions import open_transactions
from kdump.format.names import (
    CLEANER_OFFSET_CHECKPOINT,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from kdump.format.textfiles import TopicPartitionOffset, offset_checkpoint_bytes
from kdump.log_cleaner import (
    CleanedBatch,
    CleanedGroup,
    Cleaner,
    CleaningResult,
    LogToClean,
)
from kdump.offset_map import BYTES_PER_ENTRY
from kdump.repair.producer_state import txn_index_bytes
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.segment import LogSegment
from kdump.unified_log import UnifiedLog


@dataclass(frozen=True)
class CompactOptions:
    now: int
    offset_map_bytes: int | None = None
    """The cleaner's key map; None: log.cleaner.dedupe.buffer.size / log.cleaner.threads."""
    output_dir: Path | None = None
    """Where the cleaned segments go (None: a dry run)."""


@dataclass
class Compaction:
    """One partition: the cleaner's choice (explain's words) and the cleaning's result."""

    log: UnifiedLog
    explanation: CompactionExplanation
    result: CleaningResult
    records_before: int
    bytes_before: int
    records_after: int
    bytes_after: int
    written: list[str] = field(default_factory=list)
    """Files written under the output directory."""
    replaced: list[str] = field(default_factory=list)
    """The partition's files the broker deletes when it swaps the cleaned segments in."""

    @property
    def checkpoint_after(self) -> int:
        return self.result.end_offset

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        stats = r.stats
        return {
            "partition": self.log.facts(),
            "cleanable": self.explanation.cleanable,
            "reason": self.explanation.reason,
            "first_dirty_offset": r.first_dirty_offset,
            "first_uncleanable_offset": r.first_uncleanable_offset,
            "checkpoint_before": self.explanation.checkpoint,
            "checkpoint_after": self.checkpoint_after,
            "offset_map": {
                "slots": r.map_slots,
                "max_entries": r.map_max_entries,
                "memory": r.map_memory,
                "keys": r.distinct_keys,
                "full_at_offset": r.map_full_at_offset,
                "holds_dirty_section": not r.partial,
            },
            "records_before": self.records_before,
            "records_after": self.records_after,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "dropped": {
                "superseded": stats.superseded,
                "tombstones": stats.tombstones,
                "aborted": stats.aborted,
                "no_key": stats.invalid_messages_read,
                "markers": stats.markers,
            },
            "tombstones_kept": stats.tombstones_kept,
            "tombstones_stamped": stats.tombstones_to_stamp,
            "markers_stamped": stats.markers_to_stamp,
            "empty_batches_kept": stats.empty_batches,
            "batches_rebuilt": stats.rebuilt_batches,
            "next_delete_horizon": stats.next_delete_horizon,
            "groups": [_group_dict(g) for g in r.groups],
            "failure": r.failure,
            "written": self.written,
            "replaced": self.replaced,
        }


def _group_dict(g: CleanedGroup) -> dict[str, Any]:
    return {
        "segments": g.segments,
        "kept_offsets": g.kept_offsets,
        "records_before": g.records_before,
        "records_after": g.records_after,
        "bytes_before": g.bytes_before,
        "bytes_after": g.bytes_after,
        "aborted_transactions": len(g.aborted_txns),
    }


def map_bytes(settings: Settings, given: int | None) -> int:
    """One cleaner thread's key map (LogCleaner: dedupe buffer / threads, at most 2^31-1)."""
    memory = settings.dedupe_buffer_bytes_per_thread if given is None else given
    if (memory // BYTES_PER_ENTRY) * settings.dedupe_load_factor <= 1:
        # the Cleaner's constructor refuses such a map
        raise ConfigError(
            f"offset map of {memory} bytes",
            "offset map is too small to fit in even a single message, so log cleaning will "
            "never make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
            "log.cleaner.threads",
        )
    return memory


def compact_partition(log: UnifiedLog, options: CompactOptions) -> Compaction:
    """The cleaner's decision for ``log`` at ``options.now`` and one cleaning of it (run
    whatever the decision: an operator asks what a cleaning would do)."""
    settings = log.settings
    if not log.segments:
        raise InputError(log.location, "no segment .log files: not a partition directory")
    memory = map_bytes(settings, options.offset_map_bytes)
    facts = [read_segment_facts(log, s) for s in log.segments]
    txns = open_transactions(log)
    explanation = explain_compaction(
        log, facts, settings, options.now, log.log_start_offset, log.log_end_offset,
        log.high_watermark.value, txns.last_stable_offset, txns.transactions, memory, False,
    )  # fmt: skip
    to_clean = LogToClean(
        explanation.first_dirty_offset,
        explanation.first_uncleanable_offset,
        explanation.clean_bytes,
        explanation.dirty_bytes,
        explanation.max_compaction_delay_ms > 0,
    )
    writer = None
    if options.output_dir is not None:
        writer = _SegmentWriter(log, settings, options.output_dir / log.name)
    offset_map = new_offset_map(memory, settings.dedupe_load_factor, False)
    try:
        cleaner = Cleaner(offset_map, options.now)
        result = cleaner.do_clean(log, to_clean, settings, writer.open if writer else None)
    finally:
        offset_map.close()
        if writer is not None:
            writer.close()
    cleaned = {base for g in result.groups for base in g.segments}
    untouched = [s for s in log.segments if s.base_offset not in cleaned]
    records_untouched = sum(_records_in(s) for s in untouched)
    bytes_untouched = sum(s.log_size for s in untouched)
    done = Compaction(
        log,
        explanation,
        result,
        records_before=records_untouched + sum(g.records_before for g in result.groups),
        bytes_before=log.size,
        records_after=records_untouched + sum(g.records_after for g in result.groups),
        bytes_after=bytes_untouched + sum(g.bytes_after for g in result.groups),
    )
    if writer is not None and result.failure is None:
        done.written = writer.finish(result)
    done.replaced = _replaced(log, result)
    return done


def _records_in(segment: LogSegment) -> int:
    """Records of a segment's batches: v2 headers' counts, legacy messages read."""
    count = 0
    for run in segment.log.walk(check_crc=False):
        for j in range(run.n):
            batch = run.batch(j)
            n = batch.records_count
            if n is None or n < 0:
                n = sum(1 for _ in segment.log.records(batch))
            count += n
    return count


def _replaced(log: UnifiedLog, result: CleaningResult) -> list[str]:
    """LocalLog.replaceSegments: every replaced segment's files go; those at a group's first
    base are replaced by the cleaned ones, the others deleted with their producer snapshots
    (UnifiedLog.deleteProducerSnapshots)."""
    names = []
    for group in result.groups:
        for base in group.segments:
            segment = log.segments[log.floor_segment(base)]
            names += [n for n in segment.files.values() if log.storage.exists(n)]
            if base != group.segments[0]:
                snapshot = segment_file_name(base, SNAPSHOT_SUFFIX)
                if log.storage.exists(snapshot):
                    names.append(snapshot)
    return names


class _Sink:
    """One cleaned segment's ``.log``, appended to as batches come."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def append(self, data: bytes | memoryview, batch: CleanedBatch) -> None:
        self.out.write(data)


class _SegmentWriter:
    """The cleaned segments of one partition under ``directory`` (made if missing)."""

    def __init__(self, log: UnifiedLog, settings: Settings, directory: Path) -> None:
        self.log = log
        self.directory = directory
        self.config = IndexConfig(settings.index_interval_bytes, settings.segment_index_bytes)
        self.open_file: BinaryIO | None = None
        self.groups: list[CleanedGroup] = []

    def open(self, group: CleanedGroup) -> _Sink:
        self.close()
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / segment_file_name(group.segments[0], LOG_SUFFIX)
        # O_EXCL: never over a file already there, never through a symlink
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.open_file = os.fdopen(fd, "wb", buffering=1 << 20)
        self.groups.append(group)
        return _Sink(self.open_file)

    def close(self) -> None:
        if self.open_file is not None:
            self.open_file.close()
            self.open_file = None

    def finish(self, result: CleaningResult) -> list[str]:
        """Each cleaned segment's index files, mtimes, and the checkpoint entry."""
        self.close()
        written = []
        for group in self.groups:
            base = group.segments[0]
            log_path = self.directory / segment_file_name(base, LOG_SUFFIX)
            files = [log_path]
            with open(log_path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                buf: bytes | mmap.mmap = (
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
                )
                try:
                    rebuilt = recover_segment(buf, base, str(log_path), self.config)
                finally:
                    if isinstance(buf, mmap.mmap):
                        buf.close()
            files.append(self._write(base, INDEX_SUFFIX, rebuilt.index))
            files.append(self._write(base, TIME_INDEX_SUFFIX, rebuilt.time_index))
            for path in files:
                # LogSegment.setLastModified: the replaced segments' last mtime
                os.utime(
                    path, ns=(group.last_modified * 1_000_000, group.last_modified * 1_000_000)
                )
            if group.aborted_txns:  # TransactionIndex creates its file on the first append
                # (and setLastModified leaves its mtime alone)
                txn = txn_index_bytes(group.aborted_txns)
                files.append(self._write(base, TXN_INDEX_SUFFIX, txn))
            written += [str(p) for p in files]
        tp = self.log.topic_partition
        if tp is not None:
            self.directory.parent.mkdir(parents=True, exist_ok=True)
            checkpoint = self.directory.parent / CLEANER_OFFSET_CHECKPOINT
            entries = [TopicPartitionOffset(tp[0], tp[1], result.end_offset)]
            _merge_checkpoint(checkpoint, entries)
            written.append(str(checkpoint))
        return written

    def _write(self, base: int, suffix: str, data: bytes) -> Path:
        path = self.directory / segment_file_name(base, suffix)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path


def _merge_checkpoint(path: Path, entries: list[TopicPartitionOffset]) -> None:
    """The output directory's cleaner-offset-checkpoint: earlier partitions' entries kept."""
    from kdump.format.textfiles import read_offset_checkpoint

    found = read_offset_checkpoint(path.read_bytes(), str(path)) if path.exists() else []
    named = {(e.topic, e.partition) for e in entries}
    kept = [e for e in found if (e.topic, e.partition) not in named] + entries
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(offset_checkpoint_bytes(kept))
    os.replace(tmp, path)
