"""``kdump compact``: one cleaning of each compacted partition, as the broker's log cleaner would
run it now (kdump.log_cleaner), counted (``--dry-run``), written (``--output-dir``) or swapped in
(``--in-place``): each group's cleaned ``.log`` streamed to disk batch by batch, its ``.index``
and ``.timeindex`` made by LogSegment.append's rule (the rule recovery also follows:
kdump.repair.rebuild), its ``.txnindex`` from the aborted transactions its kept ABORT markers
close, every file's mtime the replaced segments' last, and the partition's new
``cleaner-offset-checkpoint`` entry.

In place, as the broker's cleaner does it: the broker stopped (the log dir's ``.lock`` taken),
each group's cleaned segment written beside the segments it replaces, re-checked with verify's
checks, then swapped in (kdump.repair.swap: ``.cleaned``, ``.swap``, the old files deleted, each
kept as a backup) before the next group is cleaned; the checkpoint last.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kdump.checks.findings import Severity
from kdump.config import Settings
from kdump.errors import CleaningFailed, ConfigError, InputError
from kdump.explain.compaction import CompactionExplanation, explain_compaction
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
from kdump.format.textfiles import (
    TopicPartitionOffset,
    offset_checkpoint_bytes,
    read_offset_checkpoint,
)
from kdump.log_cleaner import (
    CleanedGroup,
    CleanedSegmentSink,
    CleaningResult,
)
from kdump.log_dir import LogDir
from kdump.offset_map import BYTES_PER_ENTRY
from kdump.repair.apply import Hook, WriteOptions, refuse_side_dir
from kdump.repair.files import Ownership, local_partitions, regular_lstat, remove_leftovers
from kdump.repair.plan import (
    CHECKPOINT,
    OFFSET_INDEX,
    SEGMENT_FILE,
    SNAPSHOT,
    TIME_INDEX,
    TXN_INDEX,
    FileChange,
    FileState,
    SegmentPaths,
    SegmentPlan,
    mapped,
)
from kdump.repair.rebuild import IndexConfig, recover_segment
from kdump.repair.recheck import recheck_segment
from kdump.repair.runner import lock_dirs, named_alone
from kdump.repair.swap import CleanedSegment, SwapSession
from kdump.repair.txn_index import txn_index_bytes
from kdump.segment import LogSegment
from kdump.storage.local import LocalStorage
from kdump.unified_log import UnifiedLog
from kdump.untrusted import undecodable


@dataclass(frozen=True)
class CompactOptions:
    now: int
    offset_map_bytes: int | None = None
    """The cleaner's key map; None: log.cleaner.dedupe.buffer.size / log.cleaner.threads."""
    output_dir: Path | None = None
    """Where the cleaned segments go (None: a dry run, or in place)."""
    in_place: SwapSession | None = None
    """Swap the cleaned segments in (the session holding the log dirs' locks and backups)."""


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
    """Files written under the output directory (in place: the partition's new files)."""
    replaced: list[str] = field(default_factory=list)
    """The partition's files the broker deletes when it swaps the cleaned segments in."""
    backups: list[str] = field(default_factory=list)
    """In place: where each file replaced (and the old checkpoint) is kept."""

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
            # Kafka's CleanerStats, as the broker's log line reports them (LogCleaner.recordStats:
            # "Start size: ... (N messages)", "End size: ... (M messages)")
            "cleaner_stats": {
                "messages_read": stats.messages_read,
                "bytes_read": stats.bytes_read,
                "messages_written": stats.messages_written,
                "bytes_written": stats.bytes_written,
            },
            "groups": [_group_dict(g) for g in r.groups],
            "failure": r.failure,
            "written": self.written,
            "replaced": self.replaced,
            "backups": self.backups,
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
    if options.output_dir is not None or options.in_place is not None:
        why = checkpoint_refusal(log)
        if why is not None:  # refused before a byte is written, not at the checkpoint
            raise InputError(log.location, why)
    facts = [read_segment_facts(log, s) for s in log.segments]
    txns = open_transactions(log)
    writer: _SegmentWriter | _InPlaceWriter | None = None
    if options.output_dir is not None:
        writer = _SegmentWriter(log, settings, options.output_dir / log.name)
    elif options.in_place is not None:
        writer = _InPlaceWriter(log, settings, options.in_place)
    try:
        # the explanation's preview is the cleaning (one Cleaner.doClean, its segments written
        # where asked, counted in any case), not a second pass over the same batches
        explanation = explain_compaction(
            log, facts, settings, options.now, log.log_start_offset, log.log_end_offset,
            log.high_watermark.value, txns.last_stable_offset, txns.transactions, memory, False,
            writer.open if writer else None, keep_cleaning=True,
        )  # fmt: skip
    finally:
        if writer is not None:
            writer.close()
    result = explanation.cleaning
    assert result is not None, "kept: keep_cleaning"
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
    elif isinstance(writer, _InPlaceWriter):
        done.written = writer.written  # the groups swapped in before the one that failed
    if isinstance(writer, _InPlaceWriter):
        done.backups = writer.backups
    done.replaced = _replaced(log, result)
    return done


def in_place_refusal(log: UnifiedLog) -> str | None:
    """Why ``log`` cannot be compacted in place (None: it can): a partition directory on local
    disk, whose topic is compacted as far as kdump is told, with nothing an interrupted
    compaction, delete or split left (the broker settles those at its start, before its
    cleaner runs: so does ``kdump recover``)."""
    if log.storage.local_path is None:
        return "not a local partition directory: --in-place writes local files only"
    if log.only is not None:
        return "segment files named: --in-place cleans a whole partition directory"
    if not log.settings.compact:
        return (
            f"cleanup.policy is {','.join(log.settings.cleanup_policy)} as far as kdump is "
            "told (the metadata image, --config, --server-properties, --describe-output): "
            "cleaning would drop records the broker keeps; give --config "
            "cleanup.policy=compact if the topic is compacted"
        )
    why = checkpoint_refusal(log)
    if why is not None:
        return why
    leftovers = [name for name, _ in log.settlement.deleted] + [
        old for old, _ in log.settlement.renamed
    ]
    if leftovers:
        return (
            f"{len(leftovers)} file(s) an interrupted compaction, delete or split left "
            f"({', '.join(sorted(leftovers)[:3])}{'...' if len(leftovers) > 3 else ''}): the "
            "broker settles them at its start, before its cleaner runs; run `kdump recover` on "
            "the partition first"
        )
    return None


def checkpoint_refusal(log: UnifiedLog) -> str | None:
    """Why a cleaning of ``log`` could not write its cleaner-offset-checkpoint entry (None: it
    can): a topic whose directory name is not UTF-8 (no Kafka topic is: Topic.validate allows
    ASCII letters, digits, '.', '_' and '-'), which a checkpoint line, UTF-8 text that Kafka
    reads strictly, cannot name."""
    tp = log.topic_partition
    if tp is None or not undecodable(tp[0]):
        return None
    return (
        "the topic's directory name is not UTF-8: a cleaner-offset-checkpoint entry (UTF-8 "
        "text) cannot name it, and no Kafka topic has such a name"
    )


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


class _SegmentFiles:
    """A cleaned segment's index files, made from its ``.log`` as LogSegment.append makes them
    (the rule recovery follows: kdump.repair.rebuild), and its ``.txnindex`` (None: no entry,
    so no file: TransactionIndex creates its file on the first append)."""

    def __init__(self, log_path: Path, base: int, config: IndexConfig, group: CleanedGroup):
        with open(log_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            buf: bytes | mmap.mmap = (
                mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            )
            try:
                rebuilt = recover_segment(buf, base, str(log_path), config)
            finally:
                if isinstance(buf, mmap.mmap):
                    buf.close()
        self.index, self.time_index = rebuilt.index, rebuilt.time_index
        self.txn_index = txn_index_bytes(group.aborted_txns) if group.aborted_txns else None


def _set_mtime(fd_or_path: int | Path, group: CleanedGroup) -> None:
    """LogSegment.setLastModified: the replaced segments' last mtime (the .log and the offset
    and time indexes; it leaves the .txnindex alone)."""
    ns = group.last_modified * 1_000_000
    os.utime(fd_or_path, ns=(ns, ns))


class _Sink:
    """One cleaned segment's ``.log`` under the output directory, appended to as batches come;
    its other files once its group is cleaned."""

    def __init__(self, writer: _SegmentWriter, group: CleanedGroup, path: Path) -> None:
        self.writer, self.group, self.path = writer, group, path
        # O_EXCL: never over a file already there, never through a symlink
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.out: BinaryIO | None = os.fdopen(fd, "wb", buffering=1 << 20)

    def append(self, data: bytes | memoryview) -> None:
        assert self.out is not None
        self.out.write(data)

    def done(self) -> None:
        self.close()
        base = self.group.segments[0]
        made = _SegmentFiles(self.path, base, self.writer.config, self.group)
        files = [self.path]
        files.append(self.writer.write(base, INDEX_SUFFIX, made.index))
        files.append(self.writer.write(base, TIME_INDEX_SUFFIX, made.time_index))
        for path in files:
            _set_mtime(path, self.group)
        if made.txn_index is not None:
            files.append(self.writer.write(base, TXN_INDEX_SUFFIX, made.txn_index))
        self.writer.written += [str(p) for p in files]

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


class _GroupWriter:
    """Where one partition's cleaned segments go, one sink per group (the cleaner's ``sinks``),
    each closed when the next opens or the cleaning ends."""

    sink: _Sink | _InPlaceSink | None = None

    def open(self, group: CleanedGroup) -> CleanedSegmentSink:
        self.close()
        self.sink = self.new_sink(group)
        return self.sink

    def new_sink(self, group: CleanedGroup) -> _Sink | _InPlaceSink:
        raise NotImplementedError

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None


class _SegmentWriter(_GroupWriter):
    """The cleaned segments of one partition under ``directory`` (made if missing), and the
    checkpoint entry beside it."""

    def __init__(self, log: UnifiedLog, settings: Settings, directory: Path) -> None:
        self.log = log
        self.directory = directory
        self.config = IndexConfig(settings.index_interval_bytes, settings.segment_index_bytes)
        self.written: list[str] = []

    def new_sink(self, group: CleanedGroup) -> _Sink:
        self.directory.mkdir(parents=True, exist_ok=True)
        return _Sink(self, group, self.directory / segment_file_name(group.segments[0], LOG_SUFFIX))

    def finish(self, result: CleaningResult) -> list[str]:
        """The checkpoint entry, once every group is written."""
        self.close()
        tp = self.log.topic_partition
        if tp is not None:
            self.directory.parent.mkdir(parents=True, exist_ok=True)
            checkpoint = self.directory.parent / CLEANER_OFFSET_CHECKPOINT
            entries = [TopicPartitionOffset(tp[0], tp[1], result.end_offset)]
            _merge_checkpoint(checkpoint, entries)
            self.written.append(str(checkpoint))
        return self.written

    def write(self, base: int, suffix: str, data: bytes) -> Path:
        path = self.directory / segment_file_name(base, suffix)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path


class _InPlaceSink:
    """One cleaned segment written beside the segments it replaces and swapped in for them once
    its group is cleaned (kdump.repair.swap), as Cleaner.cleanSegments does."""

    def __init__(self, writer: _InPlaceWriter, group: CleanedGroup) -> None:
        self.writer, self.group = writer, group
        log, directory = writer.log, writer.directory
        base = group.segments[0]
        self.segment = CleanedSegment(SegmentPlan(SegmentPaths(directory, base), False))
        why = f"replaced by the segment cleaned from {len(group.segments)} segment(s)"
        for n, first in enumerate(group.segments):
            replaced = log.segments[log.floor_segment(first)]
            for name in sorted(replaced.files.values()):
                self._goes(self.segment.replaced, directory / name, SEGMENT_FILE, why)
            if n:  # UnifiedLog.replaceSegments: the swallowed segments' snapshots go too
                snapshot = directory / segment_file_name(first, SNAPSHOT_SUFFIX)
                self._goes(self.segment.snapshots, snapshot, SNAPSHOT, why)
        self.log_path = directory / segment_file_name(base, LOG_SUFFIX)
        fd, self.temp = self._new(self.log_path)
        self.out: BinaryIO | None = os.fdopen(fd, "wb", buffering=1 << 20)

    @staticmethod
    def _goes(into: list[FileChange], path: Path, kind: str, why: str) -> None:
        state = FileState.of(path)
        if state is not None:
            into.append(FileChange(path, kind, state, 0, delete=True, difference=why))

    def _new(self, final: Path) -> tuple[int, Path]:
        """A temporary file for ``final``, owned like the file it replaces (else the first
        replaced segment's .log)."""
        model = regular_lstat(final) or regular_lstat(self.log_path)
        owner = Ownership.like(model if model is not None else os.stat(final.parent))
        return self.writer.session.new_file(self.segment, final, owner)

    def append(self, data: bytes | memoryview) -> None:
        assert self.out is not None
        self.out.write(data)

    def done(self) -> None:
        assert self.out is not None
        out, self.out = self.out, None
        with out:
            out.flush()
            _set_mtime(out.fileno(), self.group)
            os.fsync(out.fileno())
        writer, base = self.writer, self.group.segments[0]
        made = _SegmentFiles(self.temp, base, writer.config, self.group)
        staged = {OFFSET_INDEX: made.index, TIME_INDEX: made.time_index}
        if made.txn_index is not None:
            staged[TXN_INDEX] = made.txn_index
        for kind, content in staged.items():
            fd, _ = self._new(self.log_path.with_suffix(_SUFFIX_OF[kind]))
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                if kind != TXN_INDEX:
                    _set_mtime(f.fileno(), self.group)
                os.fsync(f.fileno())
        with mapped(self.temp) as log_bytes:
            findings = recheck_segment(str(self.log_path), log_bytes, base, staged, writer.config)
        errors = [f for f in findings if f.severity is Severity.ERROR]
        session = writer.session
        if errors:
            session.rollback()
            session.next_unit()
            raise CleaningFailed(
                f"{errors[0].path}: the cleaned segment fails verify's checks ({errors[0].code}: "
                f"{errors[0].message}); nothing was changed for it (a kdump bug: please report "
                "it)"
            )
        session.keep(self.segment)
        gone = session.swap_in(self.segment)
        writer.written += [str(f.final) for f in self.segment.new]
        writer.backups += [str(w.backup) for w in gone if w.backup is not None]

    def close(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None


_SUFFIX_OF = {
    OFFSET_INDEX: INDEX_SUFFIX,
    TIME_INDEX: TIME_INDEX_SUFFIX,
    TXN_INDEX: TXN_INDEX_SUFFIX,
}


class _InPlaceWriter(_GroupWriter):
    """One partition's cleaned segments swapped in group by group, then its
    cleaner-offset-checkpoint entry (the log dir's file rewritten whole, as
    LogCleanerManager.doneCleaning does, the old one kept)."""

    def __init__(self, log: UnifiedLog, settings: Settings, session: SwapSession) -> None:
        directory = log.storage.local_path
        assert directory is not None, "checked by in_place_refusal"
        self.log, self.directory, self.session = log, Path(directory), session
        self.config = IndexConfig(settings.index_interval_bytes, settings.segment_index_bytes)
        self.written: list[str] = []
        self.backups: list[str] = []

    def new_sink(self, group: CleanedGroup) -> _InPlaceSink:
        return _InPlaceSink(self, group)

    def finish(self, result: CleaningResult) -> list[str]:
        self.close()
        tp = self.log.topic_partition
        if tp is None:
            return self.written
        (where,) = local_partitions([self.log])
        log_dir = where.log_dir
        path = log_dir / CLEANER_OFFSET_CHECKPOINT
        # read now, not as the partition was opened: an earlier partition's entry may be new
        found = LogDir(LocalStorage(log_dir)).checkpoint(CLEANER_OFFSET_CHECKPOINT)
        entries = dict(found.entries) if found.error is None else {}
        if entries.get(tp) == result.end_offset and found.exists:
            return self.written
        entries[tp] = result.end_offset
        content = offset_checkpoint_bytes(
            [TopicPartitionOffset(t, p, o) for (t, p), o in entries.items()]
        )
        change = FileChange(
            path, CHECKPOINT, FileState.of(path), len(content), content,
            difference=f"{tp[0]}-{tp[1]} cleaned up to {result.end_offset}",
        )  # fmt: skip
        plan = SegmentPlan(SegmentPaths(log_dir, 0), False, changes=[change])
        self.session.stage(plan, [change])
        done = self.session.commit_unit()
        self.written.append(str(path))
        self.backups += [str(w.backup) for w in done if w.backup is not None]
        return self.written


def _merge_checkpoint(path: Path, entries: list[TopicPartitionOffset]) -> None:
    """The output directory's cleaner-offset-checkpoint: earlier partitions' entries kept."""

    found = read_offset_checkpoint(path.read_bytes(), str(path)) if path.exists() else []
    named = {(e.topic, e.partition) for e in entries}
    kept = [e for e in found if (e.topic, e.partition) not in named] + entries
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(offset_checkpoint_bytes(kept))
    os.replace(tmp, path)


def compact_in_place(
    logs: list[UnifiedLog],
    options: CompactOptions,
    backup_dir: Path | None = None,
    hook: Hook | None = None,
) -> Iterator[Compaction]:
    """``kdump compact --in-place``: every partition checked first (in_place_refusal), the log
    dirs' locks taken (a running broker refuses the run), kdump's own temporary files that a
    killed run left removed; then one cleaning of each partition, swapped in group by group.
    A failure or a signal undoes the group in progress; the groups before it stay done, as
    they do when the broker's cleaner stops."""
    for log in logs:
        why = in_place_refusal(log)
        if why is not None:
            raise InputError(log.location, why)
    if backup_dir is not None:
        refuse_side_dir(backup_dir, "--backup-dir", local_partitions(logs))
    session = SwapSession(WriteOptions(backup_dir=backup_dir), hook)
    with session:
        log_dirs = lock_dirs(logs)
        session.lock_log_dirs(log_dirs, False, lambda message: None)
        # the log dirs, and the partitions named on their own, may be links the operator made
        session.trust(log_dirs)
        session.trust(p.path for p in local_partitions(named_alone(logs)))
        remove_leftovers(p.path for p in local_partitions(logs))
        for log in logs:
            yield compact_partition(log, dataclasses.replace(options, in_place=session))
