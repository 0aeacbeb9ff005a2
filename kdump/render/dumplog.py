"""kafka-dump-log.sh, transcribed: the same lines, in the same order, on the same stream.

Follows DumpLogSegments (Kafka 4.x, tools module). Where Kafka would die with a stack trace,
kdump prints one line naming the file and byte position and goes on with the next file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from kdump.decoders import apply_decoder
from kdump.errors import DecryptionKeyError, FormatError, InputError, KdumpError, StoreError
from kdump.format.batch import Batch
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.format.index import OffsetIndex
from kdump.format.internal import NamedParser, content_text, decode_control_record
from kdump.format.layout import INT32_MAX, NO_TIMESTAMP
from kdump.format.names import (
    BOOTSTRAP_CHECKPOINT,
    CHECKPOINT_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_in_name,
)
from kdump.format.records import (
    ABORT,
    COMMIT,
    CONTROL_TYPE_NAMES,
    Record,
    control_record_key,
    end_transaction_marker,
)
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.textfiles import text_file_entries, text_file_reader
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import ABORTED_TXN, TransactionIndex, legacy_version, unexpected_version
from kdump.format.txnindex import CURRENT_VERSION as TXN_INDEX_VERSION
from kdump.format.walk import LogWalk, StopReason
from kdump.java import java_string_hash
from kdump.parallel import stream_ordered
from kdump.progress import NO_PROGRESS, Progress
from kdump.releases import LATEST, Release
from kdump.render import runs
from kdump.render.describe import Decoder, default_decoder, optional_long
from kdump.render.escape import ESCAPE_NAMES
from kdump.render.fields import BatchFields, RecordContext, RecordFields
from kdump.render.runs import PythonBatch, RunRenderer
from kdump.storage import ObjectStore, locate_file
from kdump.storage.base import StoredFile
from kdump.storage.records import FileRecords

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
OUT, ERR = "out", "err"


class Line(NamedTuple):
    stream: str
    text: str


class Chunk(NamedTuple):
    """Whole lines for standard output, already encoded (the bulk renderer's)."""

    data: bytes


@dataclass(frozen=True)
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_bytes: int = INT32_MAX
    skip_record_metadata: bool = False
    key_decoder: Decoder = default_decoder
    value_decoder: Decoder = default_decoder
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    # --offsets-decoder and friends: replaces the key/value decoders when set.
    message_parser: NamedParser | None = None
    # --kafka-release: whose kafka-dump-log.sh text to print where releases differ.
    release: Release = LATEST
    # --producer-id, --offset-range...: batches left out are never decoded (kdump/format/filters.py)
    batch_filter: BatchFilter = NO_FILTER

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.print_data_log


PairLists = dict[str, list[tuple[int, int]]]


@dataclass
class DumpProblems:
    """What DumpLogSegments collects while dumping and reports on stderr at the end.

    Keys are absolute paths, as Kafka's getAbsolutePath gives them.
    """

    index_mismatches: PairLists = field(default_factory=dict)
    time_index_mismatches: PairLists = field(default_factory=dict)
    out_of_order_timestamps: PairLists = field(default_factory=dict)
    shallow_offsets_not_found: PairLists = field(default_factory=dict)
    non_consecutive: PairLists = field(default_factory=dict)
    non_consecutive_not_kept: dict[str, int] = field(default_factory=dict)
    """Pairs past runs.MAX_GAPS per log: counted, not listed."""
    failures: int = 0
    unreadable: int = 0
    trailing_bytes: int = 0
    invalid_batches: int = 0
    dumped: int = 0
    """Files of a kind kdump dumps (not ``Ignoring unknown file``), readable or not."""

    @property
    def found(self) -> bool:
        return bool(
            self.failures
            or self.trailing_bytes
            or self.invalid_batches
            or self.index_mismatches
            or self.time_index_mismatches
            or self.out_of_order_timestamps
            or self.shallow_offsets_not_found
            or self.non_consecutive
        )

    def merge(self, other: DumpProblems) -> None:
        """Add what another file's dump collected (dumped in another process), as if in turn."""
        for name in _TABLES:
            mine: PairLists = getattr(self, name)
            for path, pairs in getattr(other, name).items():
                mine.setdefault(path, []).extend(pairs)
        for name in ("failures", "unreadable", "trailing_bytes", "invalid_batches", "dumped"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for path, count in other.non_consecutive_not_kept.items():
            not_kept = self.non_consecutive_not_kept
            not_kept[path] = not_kept.get(path, 0) + count


_TABLES = (
    "index_mismatches",
    "time_index_mismatches",
    "out_of_order_timestamps",
    "shallow_offsets_not_found",
    "non_consecutive",
)


def _abs(path: str) -> str:
    """File.getAbsolutePath: a relative path joined to the working directory (a URL, kept)."""
    if "://" in path or os.path.isabs(path):
        return path
    return os.path.join(os.getcwd(), path)


def _note(table: PairLists, path: str, pair: tuple[int, int]) -> None:
    table.setdefault(_abs(path), []).append(pair)


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a java.util.HashMap holding ``keys`` inserted in this order.

    Buckets are ``spread(hash) & (capacity - 1)``; capacity starts at 16 and doubles past a 0.75
    load; iteration runs bucket by bucket, insertion order within one.
    """
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


_BATCH_TAIL = (
    "position: {position} {timestamp_type}: {max_timestamp} size: {size} magic: {magic} "
    "compresscodec: {compression} crc: {crc} isvalid: {is_valid}"
)
BATCH_V2 = (
    "baseOffset: {base_offset} lastOffset: {last_offset} count: {count} "
    "baseSequence: {base_sequence} lastSequence: {last_sequence} producerId: {producer_id} "
    "producerEpoch: {producer_epoch} partitionLeaderEpoch: {partition_leader_epoch} "
    "isTransactional: {is_transactional} isControl: {is_control} "
    "deleteHorizonMs: {delete_horizon_ms} " + _BATCH_TAIL
)
"""DumpLogSegments.printBatchLevel for a magic v2 batch (fields: kdump.render.fields)."""
BATCH_LEGACY = "offset: {last_offset} " + _BATCH_TAIL
"""... and for a legacy v0/v1 message: its offset is its last."""

_RECORD_HEAD = (
    "| offset: {offset} {timestamp_type}: {timestamp} keySize: {key_size} valueSize: {value_size}"
)
RECORD_V2 = _RECORD_HEAD + " sequence: {sequence} headerKeys: [{header_keys}]"
"""DumpLogSegments.dumpBatchRecords' metadata of a v2 record."""
RECORD_LEGACY = _RECORD_HEAD + " isValid: {record_is_valid} crc: {record_crc}"
RECORD_LEGACY_SCALA = RECORD_LEGACY + "}}"
"""The Scala tool (Kafka <= 4.2) closed a legacy record's crc with a stray ``}``."""
CONTROL = "{control}"
"""A control record's type (and marker or KRaft record) after its metadata."""


def batch_line(batch: Batch, position: int, valid: bool) -> str:
    """DumpLogSegments.printBatchLevel."""
    template = BATCH_V2 if batch.magic >= 2 else BATCH_LEGACY
    return template.format_map(BatchFields(batch._replace(position=position), valid))


def record_template(magic: int, is_control: bool, opts: DumpOptions) -> str:
    """The record line's template: metadata (unless skipped), a control record's type, then
    the key and payload with --print-data-log (never for control records)."""
    parts = []
    release = opts.release
    if not opts.skip_record_metadata:
        if magic >= 2:
            parts.append(RECORD_V2)
        else:
            parts.append(
                RECORD_LEGACY_SCALA if release.legacy_crc_has_stray_brace else RECORD_LEGACY
            )
        if is_control:
            parts.append(CONTROL)
    if opts.print_data_log and not is_control:
        if not opts.skip_record_metadata:
            parts.append("{content}")
        else:
            parts.append(
                "{content_first}" if release.indents_first_payload else "{content_first_scala}"
            )
    return "".join(parts)


class _TextRecordFields(RecordFields):
    """The record fields plus ``control``, which only the text dump shows."""

    __slots__ = ()

    def __getitem__(self, name: str) -> str:
        if name == "control":
            return _control_text(self.record)
        return super().__getitem__(name)


def _control_text(record: Record) -> str:
    key = control_record_key(record)
    if key is None:
        return " controlType: UNKNOWN(-1)"
    if key.type in (ABORT, COMMIT):
        marker = end_transaction_marker(record)
        epoch = "?" if marker is None else marker.coordinator_epoch
        return f" endTxnMarker: {key.type_name} coordinatorEpoch: {epoch}"
    decoded = decode_control_record(key.type, record)
    if decoded is not None:
        return decoded.text()
    # ControlRecordType.toString() is the bare enum name, UNKNOWN for ids it does not know.
    name = CONTROL_TYPE_NAMES.get(key.type, "UNKNOWN")
    return f" controlType: {name}({key.type})"


def record_line(record: Record, batch: Batch, opts: DumpOptions) -> str:
    """One record of a deep iteration: metadata, then content (DumpLogSegments.dumpBatchRecords).

    Kafka always ends the record with a newline, so a record with nothing to show is an empty line.
    """
    template = record_template(batch.magic, batch.is_control, opts)
    ctx = RecordContext(
        batch, opts.key_decoder, opts.value_decoder, lambda r: record_content(r, opts)
    )
    return template.format_map(_TextRecordFields(record, ctx))


def record_content(record: Record, opts: DumpOptions) -> tuple[str | None, str | None]:
    """The key and payload texts (None: not printed): the message parser's, or the decoders'."""
    if opts.message_parser is not None:
        key, value = opts.message_parser(record)
        return (
            None if key is None else content_text(key),
            None if value is None else content_text(value),
        )
    return (
        None if record.key is None else apply_decoder(opts.key_decoder, record.key, record.offset),
        None
        if record.value is None
        else apply_decoder(opts.value_decoder, record.value, record.offset),
    )


def base_offset_of(file: StoredFile) -> int:
    """The offset a segment file's 20-digit name gives (Kafka's offsetFromFileName)."""
    offset = offset_in_name(file.name)
    if offset is None:
        raise InputError(file.path, "file name is not a 20-digit base offset")
    return offset


def _log_header(file: StoredFile) -> str:
    path, name = file.path, file.name
    if name == BOOTSTRAP_CHECKPOINT:
        return "KRaft bootstrap snapshot"
    if name.endswith(CHECKPOINT_SUFFIX):
        match = _SNAPSHOT_NAME.match(name)
        if match is None:
            raise InputError(path, "KRaft snapshot name is not <20-digit offset>-<10-digit epoch>")
        return f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}"
    return f"Log starting offset: {base_offset_of(file)}"


def log_renderer(
    log: FileRecords,
    opts: DumpOptions,
    python_batch: PythonBatch,
    *,
    as_json: bool,
    batch_template: str,
    record_template: str,
) -> RunRenderer:
    """The bulk renderer of a log's lines under these options (text or JSON Lines)."""
    return RunRenderer(
        log,
        python_batch,
        as_json=as_json,
        batch_template=batch_template,
        record_template=record_template if opts.deep else None,
        key_decoder=opts.key_decoder,
        value_decoder=opts.value_decoder,
        records_in_c=opts.message_parser is None,
        max_batch_bytes=opts.max_batch_bytes,
        distinct_gaps=opts.release.sorts_summary_offsets,
    )


def rendered(
    walk: LogWalk,
    renderer: RunRenderer,
    problems: DumpProblems,
    path: str,
    batch_filter: BatchFilter,
) -> Iterator[bytes]:
    """Every run of the walk as lines (the batches ``batch_filter`` keeps: the others are never
    decoded), then the walk's error where it ended at one; what the renderer saw (invalid
    batches; with text, non-consecutive offsets) goes to ``problems`` even when a batch
    raises."""
    try:
        for run in walk:
            yield from renderer.run(batch_filter.apply(run))
    finally:
        problems.invalid_batches += renderer.invalid
        # batches left out by a filter are gaps, not offsets out of order
        if not renderer.as_json and batch_filter.is_empty:
            for pair in renderer.gaps:
                _note(problems.non_consecutive, path, pair)
            if renderer.gaps_not_kept:
                not_kept = problems.non_consecutive_not_kept
                not_kept[_abs(path)] = not_kept.get(_abs(path), 0) + renderer.gaps_not_kept
    stop = walk.stop
    assert stop is not None
    if stop.error is not None:
        raise stop.error


def _dump_log(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems
) -> Iterator[Line | Chunk]:
    path = file.path
    yield Line(OUT, _log_header(file))
    log = file.open_log()
    walk = log.walk(0, opts.max_bytes, max_batch_bytes=opts.max_batch_bytes)

    def python_batch(batch: Batch, valid: bool, skip: int = 0) -> Iterator[str]:
        return _batch_lines(log, batch, valid, opts, renderer, skip)

    renderer = log_renderer(
        log,
        opts,
        python_batch,
        as_json=False,
        batch_template=BATCH_V2,
        record_template=record_template(2, False, opts),
    )
    yield from map(Chunk, rendered(walk, renderer, problems, path, opts.batch_filter))
    stop = walk.stop
    assert stop is not None
    # Kafka's rule: the trailing bytes are reported only when no --max-bytes was given.
    if stop.remaining and stop.reason in _TRAILING and opts.max_bytes == INT32_MAX:
        problems.trailing_bytes += stop.remaining
        yield Line(OUT, f"Found {stop.remaining} invalid bytes at the end of {file.name}")


def _batch_lines(
    log: FileRecords,
    batch: Batch,
    valid: bool,
    opts: DumpOptions,
    renderer: RunRenderer,
    skip: int = 0,
) -> Iterator[str]:
    """One batch's line and its records' lines, by the Python templates (after ``skip``
    records the C renderer gave: no batch line then)."""
    if not skip:
        yield batch_line(batch, batch.position, valid)
    if opts.deep:
        for record in islice(log.records(batch, opts.max_batch_bytes), skip, None):
            renderer.note_record(record.offset)
            yield record_line(record, batch, opts)


_TRAILING = (StopReason.TRUNCATED_TAIL, StopReason.LIMIT)


def _log_beside(file: StoredFile) -> FileRecords:
    return file.beside(LOG_SUFFIX).open_log()


def _first_batch_at(log: FileRecords, position: int, max_size: int, path: str) -> Batch:
    end = min(log.size, position + max_size)
    batch = next(log.batches(position, end, run_batches=1), None)
    if batch is None:
        raise KdumpError(f"{path}: no batch of {log.path} starts at position {position}")
    return batch


def _dump_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    path = file.path
    log = _log_beside(file)
    index = OffsetIndex(file.read(), base_offset_of(file), path)
    if index.entries == 0:
        yield Line(OUT, f"{path} is empty.")
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
    yield Line(OUT, f"{path} passed sanity check.")


LOOKUP_RUN = 16
"""Batches read at a time while looking for a time index entry's batch: it is a batch or two
past the offset index's position (a walk's full run of 4096 made a large index's check
quadratic)."""


def _dump_time_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
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


def _dump_txn_index(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
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


def _dump_snapshot(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
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
    return " ".join(
        f"{re.sub(r'_([a-z])', lambda m: m[1].upper(), name)}: {value}"
        for name, value in entry._asdict().items()
        if value is not None
    )


def _dump_text_file(file: StoredFile, opts: DumpOptions, problems: DumpProblems) -> Iterator[Line]:
    """Checkpoint files, partition.metadata, meta.properties (kdump's own; Kafka skips them)."""
    for entry in text_file_entries(file.name, bytes(file.read()), file.path):
        yield Line(OUT, text_entry_line(entry))


DUMPERS = {
    LOG_SUFFIX: _dump_log,
    CHECKPOINT_SUFFIX: _dump_log,
    INDEX_SUFFIX: _dump_index,
    TIME_INDEX_SUFFIX: _dump_time_index,
    TXN_INDEX_SUFFIX: _dump_txn_index,
    SNAPSHOT_SUFFIX: _dump_snapshot,
}


def java_file_path(path: str) -> str:
    """``new File(path).toString()``: repeated '/' collapsed, a trailing '/' dropped.

    DumpLogSegments prints and keys its summaries by File objects, never by the raw argument.
    """
    if "://" in path:
        return path
    normal = re.sub("/+", "/", path)
    return normal[:-1] if len(normal) > 1 and normal.endswith("/") else normal


T = TypeVar("T")
Dumper = Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[T]]


def dispatch(
    file: StoredFile,
    opts: DumpOptions,
    problems: DumpProblems,
    dumpers: Mapping[str, Dumper[T]],
    text_dumper: Dumper[T],
    unknown: Callable[[], T],
    failed: Callable[[KdumpError], T],
) -> Iterator[T]:
    """Pick the dumper for a file by its suffix (or text-file name) and run it; a KdumpError
    ends this file with ``failed(error)``, and the run goes on; an object store that fails
    (StoreError), or an encrypted segment without its key, ends the run."""
    name, path = file.name, file.path
    dumper = dumpers.get(name[name.rfind(".") :] if "." in name else "")
    if text_file_reader(name) is not None:
        dumper = text_dumper
    if dumper is None:
        yield unknown()
        return
    problems.dumped += 1
    try:
        if not file.exists():
            local = file.storage.local_path
            there = local is not None and os.path.exists(os.path.join(local, name))
            what = "no such object" if local is None else "no such file"
            raise InputError(path, "not a file" if there else what)
        yield from dumper(file, opts, problems)
    except (StoreError, DecryptionKeyError):
        raise  # the store failed (or a key is missing), not this file: the run ends here
    except KdumpError as e:
        problems.failures += 1
        problems.unreadable += isinstance(e, InputError)
        yield failed(e)


def dump_file(
    named: str | StoredFile, opts: DumpOptions, problems: DumpProblems
) -> Iterator[Line | Chunk]:
    """The lines for one file; a KdumpError ends this file with one line on stderr."""
    file = stored_file(named)
    path = file.path
    yield Line(OUT, f"Dumping {path}")
    yield from dispatch(
        file,
        opts,
        problems,
        DUMPERS,
        _dump_text_file,
        lambda: Line(ERR, f"Ignoring unknown file {path}"),
        lambda e: Line(ERR, f"kdump: {e}"),
    )


def _in_java_order(table: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for path in java_hashmap_order(list(table)):
        yield path, table[path]


def _offset_pairs(
    found: list[tuple[int, int]], release: Release, descending: bool = False
) -> list[tuple[int, int]]:
    """Index mismatches and non-consecutive offsets as the tool keeps them: the Java port in a
    TreeMap (sorted, one entry per offset, the last put winning), the Scala tool in a List it
    prepended to (newest first, every pair)."""
    if not release.sorts_summary_offsets:
        return found[::-1]
    latest = dict(found)
    return [(k, latest[k]) for k in sorted(latest, reverse=descending)]


def summary_lines(problems: DumpProblems, release: Release = LATEST) -> Iterator[Line]:
    """The problem summaries DumpLogSegments prints on stderr after all files."""
    for path, found in _in_java_order(problems.index_mismatches):
        yield Line(ERR, f"Mismatches in :{path}")
        # TreeMap(Collections.reverseOrder()): the highest index offset first.
        for index_offset, log_offset in _offset_pairs(found, release, descending=True):
            yield Line(ERR, f"  Index offset: {index_offset}, log offset: {log_offset}")
    for path, found in _in_java_order(problems.time_index_mismatches):
        yield Line(ERR, f"Found timestamp mismatch in :{path}")
        for index_ts, log_ts in found:
            yield Line(ERR, f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
    for path, found in _in_java_order(problems.out_of_order_timestamps):
        yield Line(ERR, f"Found out of order timestamp in :{path}")
        for index_ts, prev in found:
            yield Line(ERR, f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev}")
    for path, found in _in_java_order(problems.shallow_offsets_not_found):
        if release.names_file_of_unfound_offsets:
            yield Line(ERR, f"The following indexed offsets are not found in :{path}")
        else:
            yield Line(ERR, "The following indexed offsets are not found in the log.")
        for indexed, log_offset in found:
            yield Line(ERR, f"Indexed offset: {indexed}, found log offset: {log_offset}")
    for path, found in _in_java_order(problems.non_consecutive):
        yield Line(ERR, f"Non-consecutive offsets in {path}")
        for first, second in _offset_pairs(found, release):
            yield Line(ERR, f"  {first} is followed by {second}")
        not_kept = problems.non_consecutive_not_kept.get(path)
        if not_kept:
            # kdump's own line: Kafka's tool lists every pair (and runs out of memory first)
            yield Line(ERR, f"  ... and {not_kept} more, not kept (kdump keeps {runs.MAX_GAPS})")


def as_lines(items: Iterable[Line | Chunk]) -> Iterator[Line]:
    """The dump as one Line per line (chunks of rendered lines split): for callers that read
    lines, not bytes."""
    for item in items:
        if isinstance(item, Chunk):
            for text in item.data.decode().split("\n")[:-1]:
                yield Line(OUT, text)
        else:
            yield item


def dump_files(
    paths: Sequence[str | StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int = 1,
    progress: Progress = NO_PROGRESS,
) -> Iterator[Line | Chunk]:
    """Every file's lines, in order (dumped in ``jobs`` processes), then the summaries."""
    yield from dumped(paths, opts, problems, jobs, _dump_file_joined, progress)
    yield from summary_lines(problems, opts.release)


JOINED_BYTES = 1 << 20
"""Standard output's lines are handed on in chunks of about this size (Output's own)."""


def joined(items: Iterable[Line | Chunk]) -> Iterator[Line | Chunk]:
    """The same output, standard output's lines encoded and joined into Chunks (standard
    error's kept in place between them): a worker process hands the parent one chunk where it
    had thousands of lines, and does the encoding itself (issue 33: the parent encoding every
    line left --jobs 2 slower than --jobs 1)."""
    pending = bytearray()
    for item in items:
        if isinstance(item, Chunk):
            pending += item.data
        elif item.stream == ERR:
            if pending:
                yield Chunk(bytes(pending))
                pending.clear()
            yield item
            continue
        else:
            pending += item.text.encode("utf-8", ESCAPE_NAMES) + b"\n"
        if len(pending) >= JOINED_BYTES:
            yield Chunk(bytes(pending))
            pending.clear()
    if pending:
        yield Chunk(bytes(pending))


def _dump_file_joined(
    file: StoredFile, opts: DumpOptions, problems: DumpProblems
) -> Iterator[Line | Chunk]:
    return joined(dump_file(file, opts, problems))


def dumped(
    named: Sequence[str | StoredFile],
    opts: DumpOptions,
    problems: DumpProblems,
    jobs: int,
    per_file: Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[T]],
    progress: Progress = NO_PROGRESS,
) -> Iterator[T]:
    """What ``per_file`` yields for each file, in order, dumped in ``jobs`` processes; what
    each file's dump collects goes to ``problems``; ``progress`` hears of each file done."""
    paths = [stored_file(f) for f in named]
    one = partial(_with_problems, per_file=per_file, opts=opts)
    paths_left = iter(paths)
    for item in stream_ordered(one, paths, jobs, weight=_size):
        if isinstance(item, DumpProblems):
            problems.merge(item)  # a file's last item
            file = next(paths_left)
            progress.advance(file.size, file.path)
        else:
            yield item


def stored_file(file: str | StoredFile, store: ObjectStore | None = None) -> StoredFile:
    """A file to dump, named by a path or a URL (printed as kafka-dump-log.sh prints its
    File: ``java_file_path``), or already found in a storage."""
    if isinstance(file, StoredFile):
        return file
    storage, name = locate_file(file, store)
    return StoredFile(storage, name, java_file_path(file))


def _size(file: StoredFile) -> int:
    return file.size


def _with_problems(
    file: StoredFile,
    per_file: Callable[[StoredFile, DumpOptions, DumpProblems], Iterator[T]],
    opts: DumpOptions,
) -> Iterator[T | DumpProblems]:
    problems = DumpProblems()
    yield from per_file(file, opts, problems)
    yield problems
