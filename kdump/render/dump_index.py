"""kafka-dump-log.sh's lines for the files beside a log: offset and time indexes (each entry
checked against the log, DumpLogSegments.dumpIndex and dumpTimeIndex), transaction indexes,
producer snapshots, and the text files kdump reads too (checkpoints, partition.metadata)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kdump.errors import FormatError, KdumpError
from kdump.format.batch import Batch
from kdump.format.index import OffsetIndex
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.names import INDEX_SUFFIX, LOG_SUFFIX
from kdump.format.timeindex import TimeIndex
from kdump.render.describe import optional_long
from kdump.render.lines import (
    ERR,
    OUT,
    DumpOptions,
    DumpProblems,
    Line,
    _abs,
    _note,
    base_offset_of,
)
from kdump.storage.base import StoredFile
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple
from kdump.untrusted import terminal


def _log_beside(file: StoredFile) -> FileRecords:
    return file.beside(LOG_SUFFIX).open_log()


def _first_batch_at(log: FileRecords, position: int, max_size: int, path: str) -> Batch:
    end = min(log.size, position + max_size)
    batch = next(log.batches(position, end, run_batches=1), None)
    if batch is None:
        raise KdumpError(f"{path}: no batch of {log.path} starts at position {position}")
    return batch


def dump_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    path = file.path
    log = _log_beside(file)
    index = OffsetIndex(file.read(), base_offset_of(file), path)
    if index.entries == 0:
        yield Line(OUT, f"{terminal(path)} is empty.")
        return
    if opts.index_sanity_check:
        yield from _sanity(path, index.sanity_check())
        return
    pager = log.pager()  # entries go up the log: hand back the pages behind them
    for i in range(index.entries_before_first_zero_entry()):
        entry = index.entry(i)
        pager.advance(max(0, min(entry.position, log.size)))
        batch = _first_batch_at(log, entry.position, opts.max_message_size, path)
        if batch.last_offset != entry.offset:
            _note(problems.index_mismatches, path, (entry.offset, batch.last_offset))
        if not opts.verify_index_only:
            yield Line(OUT, f"offset: {entry.offset} position: {entry.position}")


def _sanity(path: str, failure: str | None) -> Iterator[Line]:
    if failure is not None:
        raise KdumpError(f"{path}: sanity check failed: {failure}")
    yield Line(OUT, f"{terminal(path)} passed sanity check.")


LOOKUP_RUN = 16
"""Batches read at a time while looking for a time index entry's batch: it is a batch or two
past the offset index's position (a walk's full run of 4096 made a large index's check
quadratic)."""


def dump_time_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    path = file.path
    log = _log_beside(file)
    beside = file.beside(INDEX_SUFFIX)
    index = OffsetIndex(beside.read(), base_offset_of(file), beside.path)
    time_index = TimeIndex(file.read(), base_offset_of(file), path)
    if opts.index_sanity_check:
        yield from _sanity(path, time_index.sanity_check())
        return
    prev_timestamp = NO_TIMESTAMP
    pager = log.pager()  # entries go up the log: hand back the pages behind them
    for i in range(time_index.entries_before_first_zero_entry()):
        entry = time_index.entry(i)
        position = index.lookup(entry.offset).position
        pager.advance(max(0, min(position, log.size)))
        batches = log.batches(position, run_batches=LOOKUP_RUN)
        batch = next((b for b in batches if b.last_offset >= entry.offset), None)
        if batch is None:
            _note(problems.shallow_offsets_not_found, path, (entry.offset, -1))
        elif batch.last_offset != entry.offset:
            _note(problems.shallow_offsets_not_found, path, (entry.offset, batch.last_offset))
        else:
            max_ts = max((r.timestamp for r in log.records(batch)), default=NO_TIMESTAMP)
            if max_ts != entry.timestamp:
                _note(problems.time_index_mismatches, path, (entry.timestamp, max_ts))
            if prev_timestamp >= entry.timestamp:
                _note(problems.out_of_order_timestamps, path, (entry.timestamp, prev_timestamp))
        if not opts.verify_index_only:
            yield Line(OUT, f"timestamp: {entry.timestamp} offset: {entry.offset}")
        prev_timestamp = entry.timestamp


def dump_txn_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    # each kind's format imported by its own dump: a run of offset indexes loads none of them
    from kdump.format.txnindex import (
        ABORTED_TXN,
        TransactionIndex,
        legacy_version,
        unexpected_version,
    )
    from kdump.format.txnindex import CURRENT_VERSION as TXN_INDEX_VERSION

    path = file.path
    generated = opts.release.reads_generated_aborted_txn
    entries = list(TransactionIndex(file.read(), base_offset_of(file), path))
    for i, t in enumerate(entries):
        # TransactionIndex reads every entry before DumpLogSegments prints one, and refuses a
        # version it does not read, so such a file prints no entry at all.
        if generated and t.version != TXN_INDEX_VERSION:
            message = unexpected_version(t.version, _abs(path))
        elif not generated and legacy_version(t.version) > TXN_INDEX_VERSION:
            message = (
                f"Unexpected aborted transaction version {legacy_version(t.version)} in "
                f"transaction index {_abs(path)}, current version is {TXN_INDEX_VERSION}"
            )
        else:
            continue
        raise FormatError(path, i * ABORTED_TXN.size, message)
    for t in entries:
        # 4.4 prints AbortedTxn.HIGHEST_SUPPORTED_VERSION, the only version it reads.
        version = TXN_INDEX_VERSION if generated else legacy_version(t.version)
        yield Line(
            OUT,
            f"version: {version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}",
        )


def dump_snapshot(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    from kdump.format.snapshot import parse_producer_snapshot

    try:
        snapshot = parse_producer_snapshot(file.read(), file.path)
    except FormatError as e:
        # DumpLogSegments prints a CorruptSnapshotException's message alone and goes on.
        problems.failures += 1
        yield Line(ERR, e.reason)
        return
    for producer in snapshot.producers:
        text = (
            f"producerId: {producer.producer_id} producerEpoch: {producer.producer_epoch} "
            f"coordinatorEpoch: {producer.coordinator_epoch} "
            f"currentTxnFirstOffset: {optional_long(producer.open_transaction)} "
            f"lastTimestamp: {producer.last_timestamp}"
        )
        meta = producer.batch_metadata
        if meta is None and opts.release.snapshot_line_has_trailing_space:
            text += " "
        if meta is not None:
            text += (
                f" firstSequence: {meta.first_seq} lastSequence: {meta.last_seq} "
                f"lastOffset: {meta.last_offset} offsetDelta: {meta.offset_delta} "
                f"timestamp: {meta.timestamp}"
            )
        yield Line(OUT, text)


def text_entry_line(entry: NamedTuple) -> str:
    """``epoch: 0 startOffset: 0``: the entry's fields, camelCase as Kafka names them."""
    return terminal(  # a checkpoint's topic, meta.properties' cluster id: the broker's words
        " ".join(
            f"{re.sub(r'_([a-z])', lambda m: m[1].upper(), name)}: {value}"
            for name, value in entry._asdict().items()
            if value is not None
        )
    )


def dump_text_file(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    """Checkpoint files, partition.metadata, meta.properties (kdump's own; Kafka skips them)."""
    from kdump.format.textfiles import text_file_entries

    for entry in text_file_entries(file.name, bytes(file.read()), file.path):
        yield Line(OUT, text_entry_line(entry))


__all__ = [
    "dump_index",
    "dump_snapshot",
    "dump_text_file",
    "dump_time_index",
    "dump_txn_index",
    "text_entry_line",
]
