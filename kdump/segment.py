"""The one place that opens files: read-only memory maps of segment files, and the layout of
segments in a partition directory (Kafka's LogSegment, FileRecords and file naming); and a
segment opened for reading by offset and by time (SegmentFiles, for lookup and explain), its
indexes checked once before they are trusted (check_index).
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Generic, NamedTuple, Protocol, TypeVar

from kdump.crc import Buffer
from kdump.errors import FormatError, InputError
from kdump.format.batch import Batch, iter_records
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.index import IndexSearch, OffsetIndex, OffsetPosition, SearchType
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.records import Record
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.format.walk import RUN_BATCHES, LogWalk, Pager, iter_batches
from kdump.remote import is_url

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"
"""A KRaft snapshot (``<20-digit end offset>-<10-digit epoch>.checkpoint``)."""
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap")
_BASE_NAME = re.compile(r"^(\d{20})$")
_REMOTE_BASE_NAME = re.compile(r"^(\d{20})-[A-Za-z0-9_-]{22}$")
"""Tiered storage's segment file names: the base offset and the segment's id."""


def open_buffer(path: str | os.PathLike[str]) -> Buffer:
    """A read-only view of a file: an mmap, or empty bytes for an empty file; a URL's object
    (or for Aiven's layout, the file its objects hold) read whole (kdump.remote.files)."""
    if is_url(path):
        from kdump.remote.files import read_file

        return read_file(str(path))
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None


def base_offset_of(path: str | os.PathLike[str]) -> int:
    """The base offset a segment file's 20-digit name gives (Kafka's offsetFromFileName)."""
    stem = Path(path).name.split(".", 1)[0]
    if _REMOTE_BASE_NAME.match(stem):
        return int(stem[:20])
    if not _BASE_NAME.match(stem):
        raise InputError(str(path), "file name is not a 20-digit base offset")
    return int(stem)


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class FileRecords:
    """A .log file: its batches, read through a memory map."""

    def __init__(self, path: str | os.PathLike[str], buf: Buffer | None = None) -> None:
        self.path = str(path)
        self.buf = open_buffer(path) if buf is None else buf

    @property
    def size(self) -> int:
        return len(self.buf)

    def walk(
        self,
        start: int = 0,
        end: int | None = None,
        *,
        max_size: int | None = None,
        check_crc: bool = True,
        until_invalid: bool = False,
        run_batches: int = RUN_BATCHES,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> LogWalk:
        """The one walk over this log (kdump.format.walk), reading it in windows (``pager``) and
        handing back what it has passed, so memory stays flat."""
        return LogWalk(
            self.buf,
            self.path,
            start,
            end,
            max_size=max_size,
            check_crc=check_crc,
            until_invalid=until_invalid,
            pager=self.pager(),
            run_batches=run_batches,
            max_batch_bytes=max_batch_bytes,
        )

    def pager(self) -> Pager:
        """How the walk reads this log: a memory map's pages released behind it. A log whose
        bytes arrive in ranges (an object in a store) has a pager that fetches them."""
        return Pager(self.buf)

    def batch_pager(self) -> Pager | None:
        """The pager a read of a few batches needs: none for a mapped file (its bytes are all
        there, and nothing need be released), the fetching one for a log in an object store."""
        return None

    def batches(
        self,
        start: int = 0,
        end: int | None = None,
        max_size: int | None = None,
        run_batches: int = RUN_BATCHES,
    ) -> Iterator[Batch]:
        return iter_batches(
            self.buf, self.path, start, end, max_size, run_batches, self.batch_pager()
        )

    def records(
        self, batch: Batch, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> Iterator[Record]:
        return iter_records(self.buf, batch, self.path, max_batch_bytes)

    def is_valid(self, batch: Batch) -> bool:
        return batch.is_valid(self.buf)

    def compute_checksum(self, batch: Batch) -> int:
        return batch.compute_checksum(self.buf)


def open_log(path: str | os.PathLike[str]) -> FileRecords:
    """A .log to walk: a memory-mapped file, or a URL's object read in ranges as the walk goes
    (kdump.remote.mirror)."""
    if is_url(path):
        from kdump.remote.files import open_log as open_remote_log

        return open_remote_log(str(path))
    return FileRecords(path)


def open_offset_index(path: str | os.PathLike[str], base_offset: int | None = None) -> OffsetIndex:
    base = base_offset_of(path) if base_offset is None else base_offset
    return OffsetIndex(open_buffer(path), base, str(path))


def open_time_index(path: str | os.PathLike[str], base_offset: int | None = None) -> TimeIndex:
    base = base_offset_of(path) if base_offset is None else base_offset
    return TimeIndex(open_buffer(path), base, str(path))


def open_txn_index(
    path: str | os.PathLike[str], base_offset: int | None = None
) -> TransactionIndex:
    base = base_offset_of(path) if base_offset is None else base_offset
    return TransactionIndex(open_buffer(path), base, str(path))


@dataclass(frozen=True)
class LogSegment:
    """The files of one segment in a partition directory, named by its base offset."""

    directory: Path
    base_offset: int

    def path(self, suffix: str) -> Path:
        return self.directory / segment_file_name(self.base_offset, suffix)

    @property
    def log_path(self) -> Path:
        return self.path(LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self.path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self.path(TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> Path:
        return self.path(TXN_INDEX_SUFFIX)

    def log(self) -> FileRecords:
        return FileRecords(self.log_path)

    def offset_index(self) -> OffsetIndex | None:
        p = self.index_path
        return open_offset_index(p, self.base_offset) if p.exists() else None

    def time_index(self) -> TimeIndex | None:
        p = self.time_index_path
        return open_time_index(p, self.base_offset) if p.exists() else None

    def txn_index(self) -> TransactionIndex | None:
        p = self.txn_index_path
        return open_txn_index(p, self.base_offset) if p.exists() else None


class FileRef(Protocol):
    """A segment file as checks name it: a local Path, or a remote object's RemoteFile."""

    @property
    def name(self) -> str: ...

    def exists(self) -> bool: ...


class Segment(Protocol):
    """What checks ask of a segment: LogSegment (a directory's files) or, for one in an object
    store, kdump.remote.segment.RemoteSegment."""

    @property
    def base_offset(self) -> int: ...

    @property
    def directory(self) -> Path | str: ...

    @property
    def log_path(self) -> FileRef: ...

    @property
    def index_path(self) -> FileRef: ...

    @property
    def time_index_path(self) -> FileRef: ...

    @property
    def txn_index_path(self) -> FileRef: ...

    def log(self) -> FileRecords: ...

    def offset_index(self) -> OffsetIndex | None: ...

    def time_index(self) -> TimeIndex | None: ...

    def txn_index(self) -> TransactionIndex | None: ...


def list_segments(directory: str | os.PathLike[str]) -> list[LogSegment]:
    """Every segment of a partition directory that has any segment file, by base offset."""
    d = Path(directory)
    bases: set[int] = set()
    for entry in os.scandir(d):
        name = entry.name
        for suffix in SEGMENT_SUFFIXES:
            if name.endswith(suffix) and _BASE_NAME.match(name[: -len(suffix)]):
                bases.add(int(name[: -len(suffix)]))
    return [LogSegment(d, b) for b in sorted(bases)]


# -- a segment opened for reading by offset and by time (lookup, explain) ----------------------

IndexT = TypeVar("IndexT", OffsetIndex, TimeIndex)


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


_BEFORE_FIRST = {OffsetIndex: (-1, -1), TimeIndex: (-(1 << 63) - 1, 0)}
"""An entry before the first, so that the first must follow it too: an offset index's first entry
has a relative offset and position ≥ 0, a time index's a relative offset ≥ 0."""


def _trust_problem(index: OffsetIndex | TimeIndex, n: int, log_size: int) -> str | None:
    """Why a lookup must not use the first ``n`` entries: out of order (the format's one rule,
    ``follows``), or, in an offset index, pointing past the log."""
    bad = index.first_out_of_order(n, _BEFORE_FIRST[type(index)])
    end = n if bad is None else bad
    if isinstance(index, OffsetIndex):
        beyond = next((i for i, p in enumerate(index.positions(end)) if p >= log_size), None)
        if beyond is not None:
            position = index.entry(beyond).position
            return f"entry {beyond} points at position {position}, past the log's {log_size} bytes"
        if bad is not None:
            o, p = index.entry(bad)
            return (
                f"entry {bad} (offset {o} position {p}) does not follow entry {bad - 1} in "
                "offset and position"
            )
        return None
    if bad is not None:
        ts, o = index.entry(bad)
        return (
            f"entry {bad} (timestamp {ts} offset {o}) does not follow entry {bad - 1} "
            "(timestamps must increase, offsets never decrease)"
        )
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
    problem = _trust_problem(index, n, log_size)
    if problem is not None:
        return CheckedIndex(str(path), index, None, f"{path}: corrupt: {problem}; {what_instead}")
    if n == index.entries and (failure := index.sanity_check()) is not None:
        return CheckedIndex(str(path), index, None, f"{failure}; {what_instead}")
    return CheckedIndex(str(path), index, n, warning)


class LargestTimestamp(NamedTuple):
    """LogSegment.largestTimestamp, and where kdump read it."""

    timestamp: int
    source: str


class Start(NamedTuple):
    """Where a scan of a segment's log starts: the offset index search and the entry used."""

    offset: int
    search: IndexSearch[OffsetPosition] | None
    entry: OffsetPosition | None
    position: int


class Scan(NamedTuple):
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
        search = checked.index.search(offset, SearchType.FLOOR, checked.entries)
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
        from kdump.remote import is_url

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
