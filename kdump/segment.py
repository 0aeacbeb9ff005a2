"""One segment of a partition: its files in a storage (kdump.storage), by Kafka's suffixes, each
opened once and shared by every reader (Kafka's LogSegment); and how far a lookup may trust its
index files (``check_index``), checked once before they are trusted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Generic, TypeVar

from kdump.crc import Buffer
from kdump.errors import FormatError, InputError
from kdump.format.batch import Batch
from kdump.format.index import IndexSearch, OffsetIndex, OffsetPosition, SearchType
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.names import (
    INDEX_SUFFIX,
    LEADER_EPOCH_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from kdump.format.records import Record
from kdump.format.timeindex import TimeIndex
from kdump.format.walk import StopReason
from kdump.storage.base import Storage
from kdump.storage.local import LocalStorage, close_map
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump.format.txnindex import TransactionIndex

IndexT = TypeVar("IndexT", OffsetIndex, TimeIndex)


class CheckedIndex(Generic[IndexT]):
    """An index file and how much of it a lookup may trust.

    ``entries`` is None when the index must not be used at all (missing, misaligned, entries
    out of order): the lookup then scans the log. ``warning`` says why, or that only the
    entries before a preallocated zero tail are searched. (A plain class: generic, so no
    NamedTuple on Python 3.10, and no dataclass's start-up, issue 45.)
    """

    __slots__ = ("entries", "index", "path", "warning")

    def __init__(
        self, path: str, index: IndexT | None, entries: int | None, warning: str | None
    ) -> None:
        self.path: str = path
        self.index: IndexT | None = index
        self.entries, self.warning = entries, warning

    def __repr__(self) -> str:
        return f"CheckedIndex({self.path!r}, entries={self.entries}, warning={self.warning!r})"

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


def _instead(failure: str | None, what_instead: str) -> str:
    # Kafka's CorruptIndexException text ends with a period: not before the semicolon
    return f"{(failure or '').removesuffix('.')}; {what_instead}"


def check_index(
    path: str, index: IndexT | None, log_size: int, what_instead: str = "scanning the log"
) -> CheckedIndex[IndexT]:
    """How far a lookup may trust ``index`` (None: the file is missing)."""
    if index is None:
        return CheckedIndex(str(path), None, None, f"{path}: missing; {what_instead}")
    if not index.is_aligned:
        failure = index.sanity_check()
        return CheckedIndex(str(path), index, None, _instead(failure, what_instead))
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
        return CheckedIndex(str(path), index, None, _instead(failure, what_instead))
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
    damage: FormatError | None = None
    """Bytes the scan met that do not parse, before it found what it looked for."""


class LogSegment:
    """The files of one segment (Kafka's LogSegment): its ``.log`` and index files as a listing
    found them in ``storage`` (``files``: suffix -> name), each opened once.

    ``is_active``: the partition's last segment, which the broker appends to (never in tiered
    storage). ``slot``: its place among the partition's segments (two uploads in tiered storage
    may share a base offset).
    """

    def __init__(
        self,
        storage: Storage,
        base_offset: int,
        files: Mapping[str, str],
        is_active: bool = False,
        segment_id: str | None = None,
        slot: int = 0,
    ) -> None:
        self.storage = storage
        self.base_offset = base_offset
        self.files = dict(files)
        self.is_active = is_active
        self.segment_id = segment_id
        self.slot = slot

    def __repr__(self) -> str:
        return f"LogSegment({self.storage.location!r}, {self.base_offset}, active={self.is_active})"

    def __getstate__(self) -> dict[str, object]:
        # what was opened stays behind: another process opens its own
        keep = ("storage", "base_offset", "files", "is_active", "segment_id", "slot")
        return {k: self.__dict__[k] for k in keep}

    # -- names ------------------------------------------------------------------------------

    def file_name(self, suffix: str) -> str:
        """The name of this segment's file ``suffix``, present or not."""
        return self.files.get(suffix) or segment_file_name(self.base_offset, suffix)

    def has(self, suffix: str) -> bool:
        name = self.files.get(suffix)
        return name is not None and self.storage.exists(name)

    def path(self, suffix: str) -> str:
        """How output names the file ``suffix`` (a path or a URL), present or not."""
        return self.storage.location_of(self.file_name(suffix))

    def local_path(self, suffix: str) -> str:
        """The file ``suffix`` on disk (repairs write local files only)."""
        directory = self.storage.local_path
        if directory is None:
            raise InputError(self.storage.location, "repairs write local files only")
        return os.path.join(directory, self.file_name(suffix))

    @property
    def directory(self) -> str:
        return self.storage.location

    @property
    def log_path(self) -> str:
        return self.path(LOG_SUFFIX)

    @property
    def index_path(self) -> str:
        return self.path(INDEX_SUFFIX)

    @property
    def time_index_path(self) -> str:
        return self.path(TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> str:
        return self.path(TXN_INDEX_SUFFIX)

    @property
    def snapshot_path(self) -> str:
        """A tiered segment's own producer snapshot."""
        return self.path(SNAPSHOT_SUFFIX)

    @property
    def leader_epoch_path(self) -> str:
        """A tiered segment's own leader-epoch checkpoint."""
        return self.path(LEADER_EPOCH_SUFFIX)

    @property
    def log_size(self) -> int:
        """Bytes of the ``.log`` as listed (LogSegment.size)."""
        name = self.files.get(LOG_SUFFIX)
        return 0 if name is None else self.storage.size_of(name)

    # -- files, opened once -----------------------------------------------------------------

    @cached_property
    def log(self) -> FileRecords:
        return self.storage.open_log(self.file_name(LOG_SUFFIX))

    def _read(self, suffix: str) -> tuple[str, Buffer] | None:
        if not self.has(suffix):
            return None
        name = self.file_name(suffix)
        return self.storage.location_of(name), self.storage.read(name)

    @cached_property
    def offset_index(self) -> OffsetIndex | None:
        found = self._read(INDEX_SUFFIX)
        return None if found is None else OffsetIndex(found[1], self.base_offset, found[0])

    @cached_property
    def time_index(self) -> TimeIndex | None:
        found = self._read(TIME_INDEX_SUFFIX)
        return None if found is None else TimeIndex(found[1], self.base_offset, found[0])

    @cached_property
    def txn_index(self) -> TransactionIndex | None:
        found = self._read(TXN_INDEX_SUFFIX)
        if found is None:
            return None
        from kdump.format.txnindex import TransactionIndex  # a segment with aborted txns only

        return TransactionIndex(found[1], self.base_offset, found[0])

    @cached_property
    def last_modified(self) -> int:
        """LogSegment.lastModified: the .log file's modification time, epoch milliseconds."""
        return self.storage.modified_ms(self.file_name(LOG_SUFFIX))

    def close(self) -> None:
        """Give back what reading it holds (each memory map keeps a file descriptor; an
        object's mirror, its pages): a later read opens the files again."""
        for name in _OPENED:
            opened = self.__dict__.pop(name, None)
            if isinstance(opened, FileRecords):
                opened.close()
            elif opened is not None and name in _INDEXES:
                close_map(opened.buf)

    # -- reads by offset and by time (lookup, explain) ----------------------------------------

    @cached_property
    def checked_offset_index(self) -> CheckedIndex[OffsetIndex]:
        """How far a lookup may trust the offset index (checked once)."""
        return check_index(self.index_path, self.offset_index, self.log.size)

    @cached_property
    def checked_time_index(self) -> CheckedIndex[TimeIndex]:
        return check_index(
            self.time_index_path,
            self.time_index,
            self.log.size,
            "reading timestamps from the log",
        )

    def offset_index_warnings(self) -> list[str]:
        return [self.checked_offset_index.warning] if self.checked_offset_index.warning else []

    def time_index_warnings(self) -> list[str]:
        """Warnings about what the time index gave for this segment (and, for the active
        segment, the offset index its log tail was found through)."""
        found = [self.checked_time_index.warning] if self.checked_time_index.warning else []
        largest = self.largest_timestamp
        if largest.source == _FROM_EMPTY_TIME_INDEX:
            found.append(
                f"{self.time_index_path}: empty, but the log holds timestamps up to "
                f"{largest.timestamp}; read them from the log"
            )
        if largest.source == _FROM_TIME_INDEX_AND_TAIL:
            found += self.offset_index_warnings()
        return found

    def start_for(self, offset: int) -> Start:
        """The offset index's FLOOR entry for ``offset`` and the position it gives."""
        checked = self.checked_offset_index
        if not checked.usable:
            return Start(offset, None, None, 0)
        assert checked.index is not None
        search = checked.index.search(offset, SearchType.FLOOR, checked.entries)
        entry = None if search.entry is None else OffsetPosition(*search.entry)
        return Start(offset, search, entry, 0 if entry is None else entry.position)

    def read_position(self, offset: int) -> int:
        """Where a read of the batches from ``offset`` starts (LogSegment.translateOffset's
        search): the offset index's FLOOR entry's position, where a whole batch with a
        matching CRC starts at or below ``offset``; else 0."""
        start = self.start_for(offset)
        if start.position <= 0 or self._bad_start(start) is not None:
            return 0
        return start.position

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
        try:
            for batch in self.log.batches(position):
                count += 1
                read += batch.size
                found = match(batch)
                if found:
                    record = None if isinstance(found, bool) else found
                    valid = self.log.is_valid(batch)
                    return Scan(
                        self.log_path, start, position, count, read, batch, valid, record,
                        restarted,
                    )  # fmt: skip
        except FormatError as e:
            # the read reaches bytes that do not parse: where, and why (recovery cuts there)
            return Scan(self.log_path, start, position, count, read, None, None, None, restarted, e)
        return Scan(self.log_path, start, position, count, read, None, None, None, restarted)

    def _bad_start(self, start: Start) -> str | None:
        where = f"{self.index_path}: entry {start.entry} points at position {start.position}"
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
        checked = self.checked_time_index
        if not checked.usable or not checked.entries:
            ts = self._tail(0).max_timestamp
            source = "log"
            if checked.usable and ts != NO_TIMESTAMP:
                source = _FROM_EMPTY_TIME_INDEX
            return LargestTimestamp(ts, source)
        assert checked.index is not None and checked.entries is not None
        last = checked.index.entry(checked.entries - 1)
        if not self.is_active:
            return LargestTimestamp(last.timestamp, "time index")
        position = self.start_for(last.offset).position
        tail = self._tail(position).max_timestamp
        return LargestTimestamp(max(last.timestamp, tail), _FROM_TIME_INDEX_AND_TAIL)

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
            index = self.time_index
            if index is not None and (last := index.last_entry).timestamp >= 0:
                return LargestTimestamp(last.timestamp, TIME_INDEX_LAST_ENTRY)
        return LargestTimestamp(self.last_modified, FILE_MTIME)

    @property
    def next_offset(self) -> int:
        """LogSegment.readNextOffset, as the broker reads it from these files
        (``read_next_offset``)."""
        return self.read_next_offset.offset

    @cached_property
    def read_next_offset(self) -> NextOffset:
        """LogSegment.readNextOffset, as the broker reads it from these files: the offset
        index's last entry as AbstractIndex counts entries (every whole one, no check), the
        first whole batch from its position whose last offset reaches the entry's offset
        (translateOffset), then the offset after the last whole batch from there (no CRC
        checked). No such batch (the entry points into a torn tail, or past the end): the
        base offset, as read() then returns nothing. A batch size no batch can have on the
        way (zeros) makes FileLogInputStream throw CorruptRecordException: ``error``."""
        index = self.offset_index
        target, position = self.base_offset, 0
        if index is not None and index.entries:
            last = index.entry(index.entries - 1)
            target, position = last.offset, last.position
        if not 0 <= position <= self.log.size:
            # past the end: no batch there; negative (a garbage entry): FileRecords refuses the
            # slice, so no batch either
            return NextOffset(self.base_offset, None)
        found = False
        last_offset = None
        walk = self.log.walk(position, check_crc=False)
        for run in walk:
            for i in range(run.n):
                if not found and run.last_offset[i] < target:
                    continue
                found = True
                last_offset = run.last_offset[i]
        stop = walk.stop
        error = stop.error if stop is not None and stop.reason is StopReason.CORRUPT_BATCH else None
        return NextOffset(self.base_offset if last_offset is None else last_offset + 1, error)

    def _tail(self, position: int) -> _Tail:
        """The batches from ``position`` to where the log stops parsing: their greatest max
        timestamp and the last one's last offset (a damaged tail ends the walk, never raises:
        where it ends is the checks' business)."""
        greatest, last = NO_TIMESTAMP, None
        for run in self.log.walk(position, check_crc=False):
            found = run.timestamp_range()
            if found is not None:
                greatest = max(greatest, found[1])
            last = run.last_offset[run.n - 1]
        return _Tail(greatest, last)


def local_segment(
    directory: str | os.PathLike[str], base_offset: int, is_active: bool = False
) -> LogSegment:
    """The segment ``base_offset`` of a partition directory on disk, its files as listed."""
    storage = LocalStorage(directory)
    files = next((s.files for s in storage.segment_sets() if s.base_offset == base_offset), {})
    return LogSegment(storage, base_offset, files, is_active)


_OPENED = (
    "log",
    "offset_index",
    "time_index",
    "txn_index",
    "checked_offset_index",
    "checked_time_index",
)
"""What a LogSegment opens and keeps (``close`` lets go of it)."""
_INDEXES = ("offset_index", "time_index", "txn_index")
"""Those of _OPENED that are an index over its mapped file (``buf``)."""


class NextOffset(NamedTuple):
    offset: int
    error: FormatError | None
    """What the broker's read throws on, reading it (None: nothing)."""


class _Tail(NamedTuple):
    max_timestamp: int
    last_offset: int | None


TIME_INDEX_LAST_ENTRY = "time index (last entry)"
FILE_MTIME = "file mtime"
_FROM_EMPTY_TIME_INDEX = "log (time index empty)"
_FROM_TIME_INDEX_AND_TAIL = "time index + log tail"
