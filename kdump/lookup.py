"""Finding a message the way the broker does (FORMAT.md §6), with every step kept for display.

By offset (LocalLog.read): the segment with the greatest base offset ≤ the target, the largest
``.index`` entry ≤ the target (none: position 0), then batches from that position to the first
whose last offset ≥ the target (FileRecords.searchForOffsetFromPosition); a segment holding no
such batch passes the read on to the next one. By timestamp (UnifiedLog.fetchOffsetByTimestamp,
the ListOffsets answer): the first segment whose largest timestamp ≥ T, the largest ``.timeindex``
entry ≤ T (none: the base offset), the ``.index`` entry for max(that offset, log start offset),
then batch by batch to the first record with timestamp ≥ T and offset ≥ the log start offset
(FileRecords.searchForTimestamp).

Kafka trusts its index files; kdump checks them first. A missing, misaligned or non-monotonic
index is not used (the log is scanned from position 0 instead), a preallocated one is searched
only over the entries before its zero tail, and an entry whose position does not start a valid
batch at or below the target sends the scan back to position 0. Each such fallback leaves a
warning in the result; the answer stays the one a healthy index gives.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

from kdump.discovery import discover, parse_partition_dir
from kdump.errors import FormatError, InputError
from kdump.format.batch import Batch
from kdump.format.index import OffsetIndex, OffsetPosition, SearchType
from kdump.format.layout import NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP
from kdump.format.records import Record
from kdump.format.textfiles import read_offset_checkpoint
from kdump.format.timeindex import TimeIndex, TimestampOffset
from kdump.remote import is_url
from kdump.segment import FileRecords, FileRef, LogSegment, Segment, list_segments, open_buffer

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"

IndexT = TypeVar("IndexT", OffsetIndex, TimeIndex)


class Probe(NamedTuple):
    """One comparison of the binary search: the slot, its entry, and the entry's key against
    the target (-1 below, 0 equal, 1 above)."""

    slot: int
    entry: tuple[int, int]
    comparison: int


@dataclass(frozen=True)
class IndexSearch:
    """AbstractIndex.indexSlotRangeFor run once, with the slots it compared."""

    path: str
    kind: str
    target: int
    search: SearchType
    entries: int
    probes: tuple[Probe, ...]
    slot: int
    entry: OffsetPosition | TimestampOffset | None


def search_index(
    index: IndexT,
    target: int,
    search: SearchType = SearchType.FLOOR,
    entries: int | None = None,
) -> IndexSearch:
    """FLOOR (the largest entry ≤ target: Kafka's lookup) or CEILING (the smallest entry ≥
    target) over the first ``entries`` entries (default: all, as Kafka counts them).

    Kafka's binarySearch never compares its lower bound inside the loop, so a CEILING whose
    target equals the first entry of the range searched answers the entry after it
    (AbstractIndex.indexSlotRangeFor; its FLOOR answers are right). The search did compare that
    entry equal, so kdump answers it: the smallest entry ≥ target.
    """
    slots: list[int] = []
    slot = index.slot_for(target, search, entries, slots)
    probes = []
    for s in slots:
        entry = index.entry(s)
        key = index.key(entry)
        probes.append(Probe(s, entry, (key > target) - (key < target)))
    if search is SearchType.CEILING:
        slot = next((p.slot for p in probes if p.comparison == 0), slot)
    n = index.entries if entries is None else entries
    return IndexSearch(
        index.path,
        index.kind,
        target,
        search,
        n,
        tuple(probes),
        slot,
        None if slot == -1 else index.entry(slot),
    )


def floor_offset_entry(
    index: OffsetIndex, target: int, entries: int | None = None
) -> OffsetPosition:
    """OffsetIndex.lookup through search_index: the floor entry, else (base offset, 0)."""
    entry = search_index(index, target, SearchType.FLOOR, entries).entry
    return OffsetPosition(index.base_offset, 0) if entry is None else OffsetPosition(*entry)


def floor_time_entry(index: TimeIndex, target: int, entries: int | None = None) -> TimestampOffset:
    """TimeIndex.lookup through search_index: the floor entry, else (-1, base offset)."""
    entry = search_index(index, target, SearchType.FLOOR, entries).entry
    if entry is None:
        return TimestampOffset(NO_TIMESTAMP, index.base_offset)
    return TimestampOffset(*entry)


# -- index health ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckedIndex(Generic[IndexT]):
    """An index file and how much of it a lookup may trust.

    ``entries`` is None when the index must not be used at all (missing, misaligned, entries
    out of order): the lookup then scans the log. ``warning`` says why, or that only the
    entries before a preallocated zero tail are searched.
    """

    path: str
    index: IndexT | None
    entries: int | None
    warning: str | None

    @property
    def usable(self) -> bool:
        return self.index is not None and self.entries is not None


def _monotonic_problem(index: OffsetIndex | TimeIndex, n: int, log_size: int) -> str | None:
    view = memoryview(index.buf)[: n * index.entry_size]
    if isinstance(index, OffsetIndex):
        prev_rel, prev_pos = -1, -1
        for i, (rel, pos) in enumerate(index.entry_struct.iter_unpack(view)):
            if rel <= prev_rel or pos <= prev_pos:
                return (
                    f"entry {i} (offset {index.base_offset + rel} position {pos}) does not "
                    f"follow entry {i - 1} in offset and position"
                )
            if pos >= log_size:
                return f"entry {i} points at position {pos}, past the log's {log_size} bytes"
            prev_rel, prev_pos = rel, pos
        if n and index.relative_offset(0) < 0:
            return f"entry 0 has offset {index.entry(0).offset}, below the base offset"
        return None
    prev_ts, prev_rel = None, 0
    for i, (ts, rel) in enumerate(index.entry_struct.iter_unpack(view)):
        if rel < prev_rel or (prev_ts is not None and ts <= prev_ts):
            return (
                f"entry {i} (timestamp {ts} offset {index.base_offset + rel}) does not follow "
                f"entry {i - 1} (timestamps must increase, offsets never decrease)"
            )
        prev_ts, prev_rel = ts, rel
    return None


def check_index(
    path: FileRef, index: IndexT | None, log_size: int, what_instead: str = "scanning the log"
) -> CheckedIndex[IndexT]:
    """How far a lookup may trust ``index`` (None: the file is missing)."""
    if index is None:
        return CheckedIndex(str(path), None, None, f"{path}: missing; {what_instead}")
    if not index.is_aligned:
        failure = index.sanity_check()
        return CheckedIndex(str(path), index, None, f"{failure}; {what_instead}")
    used = index.used_entries
    n = index.entries_before_first_zero_entry() if used else 0
    warning = None
    if index.entries and not used:
        return CheckedIndex(
            str(path),
            index,
            None,
            f"{path}: all {index.entries} entries are zero (preallocated, never written); "
            f"{what_instead}",
        )
    if n < index.entries:
        warning = (
            f"{path}: preallocated: {n} of {index.entries} entries written before the zero "
            f"tail; searching those {n}"
        )
    problem = _monotonic_problem(index, n, log_size)
    if problem is not None:
        return CheckedIndex(str(path), index, None, f"{path}: corrupt: {problem}; {what_instead}")
    if n == index.entries and (failure := index.sanity_check()) is not None:
        return CheckedIndex(str(path), index, None, f"{failure}; {what_instead}")
    return CheckedIndex(str(path), index, n, warning)


# -- segments ----------------------------------------------------------------------------------


class TimestampAndOffset(NamedTuple):
    """FileRecords.TimestampAndOffset: what ListOffsets answers (leader epoch None: unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int | None


class LargestTimestamp(NamedTuple):
    """LogSegment.largestTimestamp, and where kdump read it."""

    timestamp: int
    source: str


@dataclass(frozen=True)
class Start:
    """Where a scan of a segment's log starts: the offset index search and the entry used."""

    offset: int
    search: IndexSearch | None
    entry: OffsetPosition | None
    position: int


@dataclass(frozen=True)
class Scan:
    """A scan of one segment's log: from where, how many batches and bytes, and what it found.

    ``restarted`` holds the warning when the index position had to be given up for 0.
    """

    segment: str
    start: Start
    position: int
    batches_scanned: int
    bytes_scanned: int
    batch: Batch | None
    batch_is_valid: bool | None
    record: Record | None
    restarted: str | None = None


class SegmentFiles:
    """One segment opened for lookups: its log, and its indexes checked once."""

    def __init__(self, segment: Segment, is_active: bool) -> None:
        self.segment = segment
        self.is_active = is_active

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset

    @property
    def log_path(self) -> str:
        return str(self.segment.log_path)

    @cached_property
    def log(self) -> FileRecords:
        return self.segment.log()

    @cached_property
    def offset_index(self) -> CheckedIndex[OffsetIndex]:
        s = self.segment
        return check_index(s.index_path, s.offset_index(), self.log.size)

    @cached_property
    def time_index(self) -> CheckedIndex[TimeIndex]:
        s = self.segment
        return check_index(
            s.time_index_path,
            s.time_index(),
            self.log.size,
            "reading timestamps from the log",
        )

    def offset_index_warnings(self) -> list[str]:
        return [self.offset_index.warning] if self.offset_index.warning else []

    def time_index_warnings(self) -> list[str]:
        """Warnings about what the time index gave for this segment (and, for the active
        segment, the offset index its log tail was found through)."""
        found = [self.time_index.warning] if self.time_index.warning else []
        largest = self.largest_timestamp
        if largest.source == _FROM_EMPTY_TIME_INDEX:
            found.append(
                f"{self.segment.time_index_path}: empty, but the log holds timestamps up to "
                f"{largest.timestamp}; read them from the log"
            )
        if largest.source == _FROM_TIME_INDEX_AND_TAIL:
            found += self.offset_index_warnings()
        return found

    def start_for(self, offset: int) -> Start:
        """The offset index's FLOOR entry for ``offset`` and the position it gives."""
        checked = self.offset_index
        if not checked.usable:
            return Start(offset, None, None, 0)
        assert checked.index is not None
        search = search_index(checked.index, offset, SearchType.FLOOR, checked.entries)
        entry = None if search.entry is None else OffsetPosition(*search.entry)
        return Start(offset, search, entry, 0 if entry is None else entry.position)

    def scan(self, start: Start, match: Callable[[Batch], Record | bool | None]) -> Scan:
        """Batches from ``start.position`` to the first that ``match`` accepts.

        ``match`` returns True (this batch), a Record (this batch, this record) or a falsy
        value (go on). The first batch at an index position must be a valid batch starting at
        or below ``start.offset``; otherwise the index entry is wrong and the scan restarts at 0.
        """
        restarted = None
        if start.position > 0:
            restarted = self._bad_start(start)
        position = 0 if restarted else start.position
        count = read = 0
        for batch in self.log.batches(position):
            count += 1
            read += batch.size
            found = match(batch)
            if found:
                record = None if isinstance(found, bool) else found
                valid = self.log.is_valid(batch)
                return Scan(
                    self.log_path, start, position, count, read, batch, valid, record, restarted
                )
        return Scan(self.log_path, start, position, count, read, None, None, None, restarted)

    def _bad_start(self, start: Start) -> str | None:
        where = (
            f"{self.segment.index_path}: entry {start.entry} points at position {start.position}"
        )
        try:
            first = next(self.log.batches(start.position), None)
        except FormatError as e:
            return f"{where}, where no batch parses ({e.reason}); scanning from position 0"
        if first is None:
            return f"{where}, at the log's truncated tail; scanning from position 0"
        if not self.log.is_valid(first):
            return f"{where}, where the batch fails its CRC; scanning from position 0"
        if first.base_offset > start.offset:
            return (
                f"{where}, where the batch starts at offset {first.base_offset}, above "
                f"{start.offset}; scanning from position 0"
            )
        return None

    @cached_property
    def largest_timestamp(self) -> LargestTimestamp:
        """LogSegment.largestTimestamp (maxTimestampSoFar): the last time index entry of a
        closed segment; for the active segment also the batches after that entry (a broker
        keeps the true maximum in memory); read from the log when the time index cannot say."""
        checked = self.time_index
        if not checked.usable or not checked.entries:
            ts = _max_timestamp(self.log.batches())
            source = "log"
            if checked.usable and ts != NO_TIMESTAMP:
                source = _FROM_EMPTY_TIME_INDEX
            return LargestTimestamp(ts, source)
        assert checked.index is not None and checked.entries is not None
        last = checked.index.entry(checked.entries - 1)
        if not self.is_active:
            return LargestTimestamp(last.timestamp, "time index")
        position = self.start_for(last.offset).position
        tail = _max_timestamp(self.log.batches(position))
        return LargestTimestamp(max(last.timestamp, tail), _FROM_TIME_INDEX_AND_TAIL)

    @cached_property
    def last_modified(self) -> int:
        """LogSegment.lastModified: the .log file's modification time, epoch milliseconds."""
        if is_url(str(self.segment.log_path)):
            from kdump.remote.store import modified_ms

            return modified_ms(str(self.segment.log_path))
        try:
            return os.stat(str(self.segment.log_path)).st_mtime_ns // 1_000_000
        except OSError as e:
            raise InputError(str(self.segment.log_path), e.strerror or str(e)) from None

    @cached_property
    def largest_timestamp_as_loaded(self) -> LargestTimestamp:
        """LogSegment.largestTimestamp as a broker that loads these files has it, damage and all.

        A closed segment's value is the last entry of its ``.timeindex`` as AbstractIndex counts
        entries on open (every whole entry, a preallocated zero tail included) with no sanity
        check (LogLoader skips the index checks below the recovery point); a running broker
        holds the active segment's true maximum in memory (``largest_timestamp``). No
        timestamp (-1), an empty index or none at all: the ``.log`` file's mtime.
        """
        if self.is_active:
            largest = self.largest_timestamp
            if largest.timestamp >= 0:
                return largest
        else:
            index = self.segment.time_index()
            if index is not None and (last := index.last_entry).timestamp >= 0:
                return LargestTimestamp(last.timestamp, TIME_INDEX_LAST_ENTRY)
        return LargestTimestamp(self.last_modified, FILE_MTIME)

    @cached_property
    def next_offset(self) -> int:
        """LogSegment.readNextOffset: the offset after the last batch, or the base offset."""
        checked = self.offset_index
        position = 0
        if checked.usable and checked.entries:
            assert checked.index is not None
            position = checked.index.entry(checked.entries - 1).position
        last = None
        for batch in self.log.batches(position):
            last = batch
        return self.base_offset if last is None else last.next_offset


TIME_INDEX_LAST_ENTRY = "time index (last entry)"
FILE_MTIME = "file mtime"
_FROM_EMPTY_TIME_INDEX = "log (time index empty)"
_FROM_TIME_INDEX_AND_TAIL = "time index + log tail"


def _max_timestamp(batches: Iterator[Batch]) -> int:
    return max((b.max_timestamp for b in batches), default=NO_TIMESTAMP)


def translate_offset(segment: SegmentFiles, offset: int) -> Scan:
    """LogSegment.translateOffset: the first batch of the segment whose last offset ≥ offset,
    searched from the offset index's FLOOR entry."""
    return segment.scan(segment.start_for(offset), lambda b: b.last_offset >= offset)


def first_record_at_or_after(log: FileRecords, batch: Batch, offset: int) -> Record | None:
    return next((r for r in log.records(batch) if r.offset >= offset), None)


@dataclass(frozen=True)
class TimestampSearch:
    """LogSegment.findOffsetByTimestamp: the time index step, then the scan it starts."""

    time_index_search: IndexSearch | None
    time_index_entry: TimestampOffset
    scan: Scan

    @property
    def answer(self) -> TimestampAndOffset | None:
        record, batch = self.scan.record, self.scan.batch
        if record is None or batch is None:
            return None
        epoch = batch.partition_leader_epoch
        return TimestampAndOffset(
            record.timestamp, record.offset, None if epoch == NO_PARTITION_LEADER_EPOCH else epoch
        )


def find_offset_by_timestamp(
    segment: SegmentFiles, timestamp: int, starting_offset: int
) -> TimestampSearch:
    """LogSegment.findOffsetByTimestamp(timestamp, startingOffset) and
    FileRecords.searchForTimestamp: the first record with timestamp ≥ ``timestamp`` and offset
    ≥ ``starting_offset``, batch by batch from the time index's FLOOR entry."""
    checked = segment.time_index
    search = None
    entry = TimestampOffset(NO_TIMESTAMP, segment.base_offset)
    if checked.usable:
        assert checked.index is not None
        search = search_index(checked.index, timestamp, SearchType.FLOOR, checked.entries)
        if search.entry is not None:
            entry = TimestampOffset(*search.entry)
    start = segment.start_for(max(entry.offset, starting_offset))

    def match(batch: Batch) -> Record | None:
        if batch.max_timestamp < timestamp:
            return None
        return next(
            (
                r
                for r in segment.log.records(batch)
                if r.timestamp >= timestamp and r.offset >= starting_offset
            ),
            None,
        )

    return TimestampSearch(search, entry, segment.scan(start, match))


# -- the partition -----------------------------------------------------------------------------


class PartitionLog:
    """A partition directory opened for lookups: segments by base offset and the log start."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._directory: Path | None = None
        segments: list[Segment]
        if is_url(directory):
            self.location = str(directory)
            segments = _remote_segments(self.location)
        else:
            self._directory = Path(directory)
            self.location = str(self._directory)
            segments = list(_local_segments(self._directory))
        if not segments:
            raise InputError(str(directory), "no segment .log files: not a partition directory")
        # tiered storage holds closed segments only: a remote partition has no active one
        # (as verify takes it, kdump.checks.partition)
        active = len(segments) - 1 if self._directory is not None else -1
        self.segments = [SegmentFiles(s, i == active) for i, s in enumerate(segments)]
        self.base_offsets = [s.base_offset for s in segments]

    @property
    def directory(self) -> Path:
        """The local partition directory (what commands other than lookup read)."""
        if self._directory is None:
            raise InputError(self.location, "this command reads local partition directories only")
        return self._directory

    def checkpointed(self, name: str) -> int | None:
        """This partition's entry in the log dir's offset checkpoint file ``name`` (the last
        one wins, as in Kafka's map), or None (no such file, or no entry)."""
        if self._directory is None:
            return None  # a remote partition has no log dir
        checkpoint = self.directory.parent / name
        tp = parse_partition_dir(self.directory.resolve().name)
        if tp is None or not checkpoint.is_file():
            return None
        entries = read_offset_checkpoint(bytes(open_buffer(checkpoint)), str(checkpoint))
        found = [e.offset for e in entries if (e.topic, e.partition) == tp]
        return found[-1] if found else None

    @cached_property
    def log_start_offset_checkpoint(self) -> int | None:
        """This partition's entry in the log dir's log-start-offset-checkpoint, or None."""
        return self.checkpointed(LOG_START_OFFSET_CHECKPOINT)

    @property
    def log_start_offset(self) -> int:
        """The first segment's base offset, unless the log dir's checkpoint says more."""
        first = self.base_offsets[0]
        checkpointed = self.log_start_offset_checkpoint
        return first if checkpointed is None else max(first, checkpointed)

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    def floor_segment(self, offset: int) -> int:
        """The index of the segment with the greatest base offset ≤ offset (-1: none)."""
        return bisect_right(self.base_offsets, offset) - 1


def _local_segments(directory: Path) -> list[LogSegment]:
    if not directory.exists():
        raise InputError(str(directory), "no such directory")
    if not directory.is_dir():
        raise InputError(str(directory), "not a directory (give a partition directory)")
    try:
        return [s for s in list_segments(directory) if s.log_path.is_file()]
    except OSError as e:
        raise InputError(str(directory), e.strerror or str(e)) from None


def _remote_segments(url: str) -> list[Segment]:
    """The segments of the one remote partition under ``url`` (kdump.discovery)."""
    from kdump.remote.segment import RemoteSegment

    found = discover([url], urls=True)
    if found.errors:
        raise found.errors[0]
    partitions = [t.remote for t in found.loose if t.remote is not None]
    if len(partitions) != 1:
        names = ", ".join(p.url for p in partitions)
        raise InputError(url, f"holds {len(partitions)} partitions ({names}): give one")
    return [RemoteSegment(ref) for ref in partitions[0].segments if ref.object("log")]


# -- lookups -----------------------------------------------------------------------------------


class Outcome(str, Enum):
    FOUND = "found"
    OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
    AT_LOG_END = "at_log_end"
    NO_OFFSET = "no_offset"


@dataclass(frozen=True)
class SegmentStep:
    """A segment the lookup considered, and why it was taken or passed over."""

    log_path: str
    base_offset: int
    chosen: bool
    reason: str
    largest_timestamp: LargestTimestamp | None = None


@dataclass(frozen=True)
class Lookup:
    """A lookup's answer and the path to it."""

    mode: str
    target: int
    directory: str
    log_start_offset: int
    log_end_offset: int
    outcome: Outcome
    segments: tuple[SegmentStep, ...]
    scans: tuple[Scan, ...] = ()
    time_search: TimestampSearch | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def scan(self) -> Scan | None:
        """The scan that gave the answer (the last one)."""
        return self.scans[-1] if self.scans else None

    @property
    def segment(self) -> str | None:
        return None if self.scan is None else self.scan.segment

    @property
    def batch(self) -> Batch | None:
        return None if self.scan is None else self.scan.batch

    @property
    def record(self) -> Record | None:
        return None if self.scan is None else self.scan.record

    @property
    def bytes_scanned(self) -> int:
        return sum(s.bytes_scanned for s in self.scans)

    @property
    def answer(self) -> TimestampAndOffset | None:
        return None if self.time_search is None else self.time_search.answer


class _Trail:
    """What a lookup collects on its way: segments, scans, warnings (in order, once each)."""

    def __init__(self, log: PartitionLog, mode: str, target: int) -> None:
        self.log, self.mode, self.target = log, mode, target
        self.steps: list[SegmentStep] = []
        self.scans: list[Scan] = []
        self.warnings: dict[str, None] = {}

    def warn(self, *warnings: str | None) -> None:
        self.warnings.update((w, None) for w in warnings if w)

    def finish(self, outcome: Outcome, time_search: TimestampSearch | None = None) -> Lookup:
        return Lookup(
            self.mode,
            self.target,
            self.log.location,
            self.log.log_start_offset,
            self.log.log_end_offset,
            outcome,
            tuple(self.steps),
            tuple(self.scans),
            time_search,
            tuple(self.warnings),
        )


def lookup_offset(log: PartitionLog, offset: int) -> Lookup:
    """What a fetch at ``offset`` reads: the batch holding it and the record itself.

    Outside [log start, log end] the broker answers OFFSET_OUT_OF_RANGE; at the log end itself
    a fetch returns no records (AT_LOG_END).
    """
    trail = _Trail(log, "offset", offset)
    if offset < log.log_start_offset or offset > log.log_end_offset:
        return trail.finish(Outcome.OFFSET_OUT_OF_RANGE)
    first = log.floor_segment(offset)
    for seg in log.segments[first:]:
        reason = (
            f"greatest base offset ≤ {offset}"
            if seg.base_offset <= offset
            else "the read moves on to the next segment"
        )
        trail.warn(*seg.offset_index_warnings())
        scan = translate_offset(seg, offset)
        trail.warn(scan.restarted)
        trail.steps.append(
            SegmentStep(seg.log_path, seg.base_offset, scan.batch is not None, reason)
        )
        if scan.batch is None:
            trail.scans.append(scan)
            continue
        record = first_record_at_or_after(seg.log, scan.batch, offset)
        trail.scans.append(replace(scan, record=record))
        return trail.finish(Outcome.FOUND)
    return trail.finish(Outcome.AT_LOG_END)


def lookup_timestamp(log: PartitionLog, timestamp: int) -> Lookup:
    """ListOffsets by timestamp: the first record with timestamp ≥ ``timestamp`` as the broker
    finds it (UnifiedLog.fetchOffsetByTimestamp), or NO_OFFSET (the broker answers -1)."""
    trail = _Trail(log, "timestamp", timestamp)
    for seg in log.segments:
        largest = seg.largest_timestamp
        chosen = largest.timestamp >= timestamp
        reason = f"largest timestamp {'≥' if chosen else '<'} {timestamp}"
        trail.steps.append(SegmentStep(seg.log_path, seg.base_offset, chosen, reason, largest))
        trail.warn(*seg.time_index_warnings())
        if not chosen:
            continue
        trail.warn(*seg.offset_index_warnings())
        found = find_offset_by_timestamp(seg, timestamp, log.log_start_offset)
        trail.warn(found.scan.restarted)
        trail.scans.append(found.scan)
        outcome = Outcome.FOUND if found.answer is not None else Outcome.NO_OFFSET
        return trail.finish(outcome, found)
    return trail.finish(Outcome.NO_OFFSET)
