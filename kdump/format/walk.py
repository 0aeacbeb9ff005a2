"""The one walk over a .log: batch headers as columns, in runs, and why the walk stopped.

Every reader of a log (dump, JSON Lines, verify, recovery, lookup, Spark) asks this module for
its batches. It alone decides what a batch is and where the walk ends, following Kafka's
``FileLogInputStream.nextBatch``: 17 bytes or fewer left end the walk, a size below 14 (or
below a magic's own minimum) is a corrupt batch, an unknown magic ends it, a batch running
past the end of the range ends it. It alone chooses between the C scan (``kdump.speedups``)
and the Python reference below, which take the same decisions (tests/test_speedups.py).
``read_batch`` is that rule for one batch; ``iter_records`` the records of any batch.

A run is up to ``RUN_BATCHES`` consecutive batches, one int64 column per header field
(``COLUMNS``). Legacy v0/v1 messages (AbstractLegacyRecordBatch) fill the same columns: their
producer fields are Kafka's "none" constants, their records_count is -1 (countOrNull is null).
"""

from __future__ import annotations

import mmap
import re
import threading
from array import array
from collections.abc import Callable, Iterator, Sequence
from enum import Enum, IntEnum
from functools import partial
from typing import TYPE_CHECKING, TypeAlias

from kdump import speedups
from kdump.crc import Buffer
from kdump.errors import CorruptBatchError, FormatError, InputError, UnknownMagicError
from kdump.format.batch import Batch, LegacyRecordBatch, RecordBatch
from kdump.format.layout import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    DEFAULT_MAX_BATCH_BYTES,
    DELETE_HORIZON_BIT,
    HEADER_SIZE_UP_TO_MAGIC,
    INT32_MAX,
    LEGACY_HEADER_V0,
    LEGACY_HEADER_V1,
    LOG_HEADER,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    TRANSACTIONAL_BIT,
    V2_HEADER,
    java_long,
)
from kdump.format.records import Record, iter_v2_records
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump._speedups import CrcShare, RunColumns
    from kdump.speedups import Native

COLUMNS = (
    "position",
    "base_offset",
    "last_offset",
    "size",
    "partition_leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "records_count",
    "valid",
)
"""One int64 per batch each (int64: every header field fits, and C and array('q') share it).

``size`` is the whole batch (``batch_length`` + 12); ``last_offset`` wraps as Java's long;
``valid`` is 1 (CRC matches), 0 (it does not) or -1 (not checked)."""

Column: TypeAlias = "array[int] | memoryview"
"""One of a run's COLUMNS: int64s the C code reads as a buffer and Python indexes."""

RUN_BATCHES = 32768
"""Batches per run: 4 MiB of columns at most. A run's calls into C and its Python cost ~20 us
whatever its length; for ~100-byte batches runs of 4096 paid that every 26 us of header pass,
and were over before a thread sharing their CRCs woke (1 GiB of 127-byte batches, read back,
verify in-process: 0.19 s with runs of 4096, 0.13 s with 16384, 0.115 s with 32768)."""

UNCHECKED = -1
_NCOL = len(COLUMNS)
_new = tuple.__new__


class StopReason(str, Enum):
    """Why a walk ended (Kafka's iteration ends at the first three without an exception)."""

    END = "end"
    """Every byte of the file was a whole batch."""
    TRUNCATED_TAIL = "truncated_tail"
    """Bytes at the end of the file that are not a whole batch (a torn write)."""
    LIMIT = "limit"
    """The range asked for (``--max-bytes``, a lookup's span) ended before the file."""
    CORRUPT_BATCH = "corrupt_batch"
    """A size no batch can have: below 14, below a v1/v2 header, above ``max_size``."""
    UNKNOWN_MAGIC = "unknown_magic"
    INVALID_BATCH = "invalid_batch"
    """A batch whose CRC does not match, where the walk was asked to stop there (recovery)."""


class Stop(NamedTuple):
    reason: StopReason
    position: int
    """Where the walk stopped: the end of the last whole batch it gave (valid bytes)."""
    remaining: int
    """Bytes of the range after ``position``."""
    error: FormatError | None = None
    """For a corrupt batch or an unknown magic: Kafka's complaint, with file and position."""

    @property
    def is_damage(self) -> bool:
        """Whether the walk ended at something the broker's recovery would truncate."""
        return self.reason not in (StopReason.END, StopReason.LIMIT)


class RunFacts(NamedTuple):
    """What walk_v2 counts of a run's batches during its header pass (RunColumns.facts)."""

    least_max_timestamp: int
    greatest_max_timestamp: int
    transactional: int
    delete_horizon: int
    producer_batches: int
    """Batches with a producer id (idempotent or transactional producers)."""
    plain: bool
    """Each batch after the first follows the one before: its base offset is the last offset
    before plus one, its partition leader epoch the same; no last offset is below its base."""
    failed_crcs: int
    records: int
    """The batches' record counts summed (a count below zero counted as none)."""


def _low_bytes(column: Column) -> bytes:
    """The lowest byte of each int64 of a column (little-endian): where the attribute bits of a
    batch are, as bytes, so that bytes' own C methods count them."""
    return bytes(memoryview(column).cast("B")[0::8])


def _bits_table(mask: int) -> bytes:
    return bytes(1 if b & mask else 0 for b in range(256))


_TRANSACTIONAL = TRANSACTIONAL_BIT | CONTROL_BIT
_BITS_TABLES = {mask: _bits_table(mask) for mask in (_TRANSACTIONAL, DELETE_HORIZON_BIT)}
"""The attribute bits a run's batches are counted by, each in the lowest byte of the
attributes (walk_v2 counts the same: TRANSACTIONAL_OR_CONTROL, DELETE_HORIZON_BIT)."""


def _count_bits(attributes: Column, mask: int) -> int:
    """How many batches of a run's attributes column have a bit of ``mask`` (one of
    _BITS_TABLES') set."""
    native = speedups.native()
    if native is not None:
        return native.count_masked(attributes, mask)
    return _low_bytes(attributes).translate(_BITS_TABLES[mask]).count(1)


class BatchRun:
    """Consecutive batches as columns; ``run.base_offset[i]`` is batch i's base offset."""

    __slots__ = ("n", "facts", *COLUMNS)

    n: int
    position: Column
    base_offset: Column
    last_offset: Column
    size: Column
    partition_leader_epoch: Column
    magic: Column
    crc: Column
    attributes: Column
    last_offset_delta: Column
    base_timestamp: Column
    max_timestamp: Column
    producer_id: Column
    producer_epoch: Column
    base_sequence: Column
    records_count: Column
    valid: Column

    def __init__(self, n: int, columns: Sequence[Column], facts: RunFacts | None = None) -> None:
        self.n = n
        self.facts = facts
        """What the C scan saw in passing (None: counted from the columns when asked)."""
        for name, column in zip(COLUMNS, columns, strict=True):
            setattr(self, name, column)

    @classmethod
    def from_native(cls, n: int, data: RunColumns) -> BatchRun:
        """The C scan's columns: one block, column after column of int64s, each
        column's room an equal share of it (wider than n where the run is full: walk_v2)."""
        view = memoryview(data).cast("q")
        room = len(view) // _NCOL
        facts = data.facts
        return cls(
            n,
            [view[i * room : i * room + n] for i in range(_NCOL)],
            None if facts is None else RunFacts(*facts),
        )

    def __len__(self) -> int:
        return self.n

    @property
    def end(self) -> int:
        """The position after the run's last batch."""
        return self.position[-1] + self.size[-1]

    def batch(self, i: int) -> Batch:
        """Batch i as the header tuple the rest of kdump reads (RecordBatch, LegacyRecordBatch)."""
        if self.magic[i] >= 2:
            return _new(
                RecordBatch,
                (
                    self.position[i],
                    self.base_offset[i],
                    self.size[i] - LOG_OVERHEAD,
                    self.partition_leader_epoch[i],
                    self.magic[i],
                    self.crc[i],
                    self.attributes[i],
                    self.last_offset_delta[i],
                    self.base_timestamp[i],
                    self.max_timestamp[i],
                    self.producer_id[i],
                    self.producer_epoch[i],
                    self.base_sequence[i],
                    self.records_count[i],
                ),
            )
        return _new(
            LegacyRecordBatch,
            (
                self.position[i],
                self.last_offset[i],
                self.size[i] - LOG_OVERHEAD,
                self.crc[i],
                self.magic[i],
                self.attributes[i],
                self.max_timestamp[i],
                self.base_offset[i],
            ),
        )

    def batches(self) -> Iterator[Batch]:
        return map(self.batch, range(self.n))

    def timestamp_range(self, stop: int | None = None) -> tuple[int, int] | None:
        """The least and greatest max timestamp of the first ``stop`` batches (all of them:
        None); None where there are none."""
        stop = self.n if stop is None else max(0, min(stop, self.n))
        if stop == self.n and self.facts is not None:
            return self.facts.least_max_timestamp, self.facts.greatest_max_timestamp
        native = speedups.native()
        if native is not None:
            return native.column_range(self.max_timestamp, stop)
        column = self.max_timestamp[:stop]
        return (min(column), max(column)) if stop else None

    def columns(self) -> list[Column]:
        return [getattr(self, name) for name in COLUMNS]

    def transactional_batches(self) -> int:
        """Transactional data and control batches among the run's."""
        if self.facts is not None:
            return self.facts.transactional
        return _count_bits(self.attributes, _TRANSACTIONAL)

    def delete_horizon_batches(self) -> int:
        """Batches carrying a delete horizon (the cleaner rewrote them) among the run's."""
        if self.facts is not None:
            return self.facts.delete_horizon
        return _count_bits(self.attributes, DELETE_HORIZON_BIT)

    def header_records(self) -> tuple[int, int]:
        """The records the run's headers count, without decompressing anything: a v2 batch's
        recordsCount (one below zero counted as none), one for a plain v0/v1 message; and
        the compressed v0/v1 wrappers, whose inner messages only decompressing counts."""
        if self.facts is not None:
            return self.facts.records, 0
        if self.n and min(self.magic) >= 2:
            return sum(c for c in self.records_count if c > 0), 0
        records = wrappers = 0
        for i in range(self.n):
            if self.magic[i] >= 2:
                records += max(0, self.records_count[i])
            elif self.attributes[i] & COMPRESSION_MASK:
                wrappers += 1
            else:
                records += 1
        return records, wrappers

    def slice(self, start: int, stop: int) -> BatchRun:
        """Batches ``start`` to ``stop`` (exclusive) of this run, as a run."""
        if start == 0 and stop == self.n:
            return self
        columns = [memoryview(c)[start:stop] for c in self.columns()]
        return BatchRun(stop - start, columns)


MADV_POPULATE_READ = 22
"""Linux 5.14+: fault a range of a mapping in now (Python's mmap module has no name for it)."""


def populate_pages(buf: Buffer, start: int, end: int) -> None:
    """Fault in the pages of ``buf[start:end]`` now, in one call (MADV_POPULATE_READ, Linux
    5.14+; elsewhere nothing): a walk over a range shorter than a window, which no read-ahead
    thread serves, then takes no page fault of its own (a piece of --jobs' dumps)."""
    native = speedups.native()
    if native is not None and isinstance(buf, mmap.mmap) and end > start:
        native.advise(buf, start, end, MADV_POPULATE_READ)


def release_pages(buf: mmap.mmap | None, start: int, end: int) -> None:
    """Hand the pages of ``buf[start:end]`` back (MADV_DONTNEED: they stay in the page cache);
    without the GIL where the C module is there."""
    if buf is None or end <= start:
        return
    native = speedups.native()
    if native is not None:
        native.advise(buf, start, end, mmap.MADV_DONTNEED)
    else:
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)


class Pager:
    """How a walk reads its log. For a memory-mapped file: it hands back the pages it has
    passed (MADV_DONTNEED; they stay in the page cache), so resident memory stays flat over a
    segment of any size. Runs end at window boundaries, where ``advance`` is called.

    A walk over more than a window of a mapped file also reads ahead (``read_ahead``): a
    thread faults the next windows in while the walk's thread checks CRCs, so page faults, which
    bound a single thread, cost the walk little time.

    A log whose bytes arrive in ranges (an object store) has a pager that says how many bytes
    from the start are readable (``available``) and reads more on ``ensure``: the walk never
    mistakes bytes not yet read for a torn tail."""

    window = 8 << 20
    _ahead: ReadAhead | None = None

    def __init__(
        self,
        buf: Buffer,
        drop: Callable[[int, int], None] | None = None,
        charge: Callable[[int], None] | None = None,
    ) -> None:
        usable = hasattr(mmap, "MADV_DONTNEED") and isinstance(buf, mmap.mmap)
        self.buf: mmap.mmap | None = buf if usable else None  # type: ignore[assignment]
        self.released = 0
        self.available = len(buf)
        self.drop = drop
        """What else releasing a range does (kdump.storage.reading: drop from the page
        cache the pages the walk brought in)."""
        self.charge = charge
        """Told the bytes the walk has read since it was last told (a rate limit)."""
        self._charged: int | None = None

    def advance(self, position: int) -> int:
        """The walk has reached ``position``: what lies before it is released (by the
        read-ahead thread, if there is one, or here); the next boundary."""
        if self.charge is not None:
            if self._charged is not None and position > self._charged:
                self.charge(position - self._charged)
            self._charged = position
        if self._ahead is not None:
            self._ahead.reached(position)
        self._release(position)
        return position + self.window

    def release(self, start: int, end: int) -> None:
        """Hand back the pages of ``[start, end)``, and whatever ``drop`` does with them."""
        release_pages(self.buf, start, end)
        if self.drop is not None and self.buf is not None and end > start:
            self.drop(start, end)

    def _release(self, position: int) -> None:
        # With a read-ahead thread, the thread releases what the walk has passed while it has
        # nothing to page in (the walk checks CRCs meanwhile); the walk's own thread releases
        # only what lies more than a window behind it, so what is resident stays bounded
        # however little CPU the thread gets (a busy machine).
        if self._ahead is not None:
            # a thread that stopped (a kernel without MADV_POPULATE_READ) releases nothing
            behind = self.window if self._ahead.is_alive() else 0
            self._ahead.release(position - behind)
            return
        end = position - position % mmap.PAGESIZE
        if end > self.released:
            self.release(self.released, end)
        self.released = max(self.released, end)

    def read_ahead(self, start: int, end: int) -> None:
        """The walk will read every byte from ``start`` to ``end``: page it in ahead of the
        walk, where that pays (a mapped file, more than a window, the C walk: its CRC loop
        runs without the GIL, a CPU free for the thread)."""
        native = speedups.native()
        if self.buf is None or native is None or end - start <= self.window or self._ahead:
            return
        from kdump.parallel import spare_cpu

        if not spare_cpu():
            return
        self._ahead = ReadAhead(
            native, self.buf, start, end, self.window, self.released, self.release
        )
        self._ahead.start()

    @property
    def share(self) -> CrcShare | None:
        """Where the walk shares its CRC work with the read-ahead thread (None: no thread)."""
        return self._ahead.share if self._ahead is not None else None

    def close(self, position: int) -> None:
        """The walk ended at ``position`` (or was left there): stop reading ahead, release
        what lies before it."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.finish()
            # with what it paged in last, behind the walk (overtaken) or ahead of it (a walk
            # left early, or ended at damage: nothing reads those windows now)
            ahead.release(max(position, ahead.filled))
            self.released = max(self.released, ahead.released)
        self.advance(position)

    def ensure(self, end: int) -> int:
        """Make the bytes before ``end`` readable; how many from the start now are."""
        return self.available


class ReadAhead(threading.Thread):
    """A walk's pager thread: keeps ``AHEAD`` windows past the walk's position faulted in, no
    further, and releases what the walk has passed, so memory stays flat (the walk itself
    releases what lies more than a window behind it). Where the kernel refuses
    MADV_POPULATE_READ (before Linux 5.14) the thread ends and the walk's own page faults do
    the reading and the walk the releasing, as without this thread."""

    AHEAD = 2
    """Windows kept ready: one being read ahead while the walk is in the other."""

    def __init__(
        self,
        native: Native,
        buf: mmap.mmap,
        start: int,
        end: int,
        window: int,
        released: int = 0,
        release: Callable[[int, int], None] | None = None,
    ) -> None:
        super().__init__(name="kdump-read-ahead", daemon=True)
        self.native, self.buf, self.end, self.window = native, buf, end, window
        self._release = release or partial(release_pages, buf)
        """How a range is handed back (the pager's: it may drop it from the page cache)."""
        self.filled = start
        self.released = released
        """Every page before it has been released since it was last paged in (but those
        from ``_paged_from`` on)."""
        self._position = start
        self._closed = False
        self._changed = threading.Condition()
        self._paged_from = end
        """The lowest start of the windows paged in since the last release that reached it:
        a window begun ahead of the walk can be overtaken, and released, before it is done."""
        self.share = native.CrcShare() if hasattr(native, "CrcShare") else None
        """The walk's CRC work, which this thread takes a share of when it has no window to
        page in (the C module's CrcShare; None where it has none)."""

    def release(self, position: int) -> None:
        """Release the pages before ``position`` not released since they were paged in (by
        either thread: each claims its range under the lock, so no page is released twice)."""
        with self._changed:
            claimed = self._claim(position)
        if claimed is not None:
            self._release(*claimed)

    def _claim(self, position: int) -> tuple[int, int] | None:
        """The range to release for ``position`` (None: nothing), marked released (lock held)."""
        end = position - position % mmap.PAGESIZE
        start = min(self.released, self._paged_from)
        start -= start % mmap.PAGESIZE
        if end <= start:
            return None
        # what was paged in past ``end`` may lie below ``released``: kept for a later claim
        self._paged_from = self.end if self.filled <= end else max(self._paged_from, end)
        self.released = max(self.released, end)
        return start, end

    def reached(self, position: int) -> None:
        with self._changed:
            self._position = position
            self._changed.notify()
        if self.share is not None:
            self.share.kick()

    def finish(self) -> None:
        """Stop, and wait for the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        if self.share is not None:
            self.share.close()
        self.join()

    def _next_fill(self) -> int | None:
        """Wait until there is a window to read ahead: where it ends; None: closed. Waiting,
        the thread releases what the walk has passed and checks the CRCs the walk shares
        (``share``)."""
        while True:
            kicks = self.share.kicks() if self.share is not None else 0
            with self._changed:
                if self._closed:
                    return None
                self.filled = max(self.filled, self._position)  # never behind the walk
                ahead = self._position + self.AHEAD * self.window
                fill = min(self.end, ahead, self.filled + self.window)
                if fill > self.filled:
                    return fill
                claimed = self._claim(self._position)
                if claimed is None and self.share is None:
                    self._changed.wait()
                    continue
            if claimed is not None:
                self._release(*claimed)
            elif self.share is not None:
                self.share.help(kicks)  # until the walk moves on (a kick) or ends

    def run(self) -> None:
        try:
            while (fill := self._next_fill()) is not None:
                if self.native.advise(self.buf, self.filled, fill, MADV_POPULATE_READ):
                    return  # not this kernel: the walk's page faults read instead
                with self._changed:
                    self._paged_from = min(self._paged_from, self.filled)
                    self.filled = fill
        except ValueError:  # the map was closed under a walk left unfinished: nothing to do
            return


class LogWalk:
    """Iterate for the runs; ``stop`` says why and where the walk ended, once it has.

    ``start``/``end`` bound the range (``end`` beyond the file is the file's end); ``max_size``
    refuses larger batches as corrupt (DumpLogSegments' --max-message-size); ``check_crc``
    fills the ``valid`` column; ``until_invalid`` ends the walk before the first batch whose
    CRC fails (LogSegment.recover); ``max_batch_bytes`` bounds what a v0/v1 wrapper's base
    offset decompresses (--max-batch-bytes). ``path`` names the file in errors.
    """

    def __init__(
        self,
        buf: Buffer,
        path: str = "<bytes>",
        start: int = 0,
        end: int | None = None,
        *,
        max_size: int | None = None,
        check_crc: bool = True,
        until_invalid: bool = False,
        run_batches: int = RUN_BATCHES,
        pager: Pager | None = None,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    ) -> None:
        size = len(buf)
        if not 0 <= start <= size:
            raise CorruptBatchError(path, start, f"position {start} is outside the file")
        self.buf, self.path, self.start = buf, path, start
        self.end = size if end is None else max(start, min(end, size))
        self.file_size = size
        self.max_size = max_size
        # batch lengths are int32: any limit outside [-1, 2^31-1] acts as its nearest end
        self.largest = INT32_MAX if max_size is None else max(min(max_size, INT32_MAX), -1)
        self.check_crc = check_crc or until_invalid
        self.until_invalid = until_invalid
        self.run_batches = max(1, run_batches)
        self.pager = pager
        self.max_batch_bytes = max_batch_bytes
        self.stop: Stop | None = None
        self._walked = start
        """The end of the last run handed out."""

    def __iter__(self) -> Iterator[BatchRun]:
        position, end = self.start, self.end
        pager = self.pager
        if pager is None:
            yield from self._runs(position, end, None)
            return
        pager.read_ahead(position, end)
        try:
            yield from self._runs(position, end, pager)
        finally:  # ended, or left by its reader after the last run it took
            pager.close(self.stop.position if self.stop is not None else self._walked)

    def _runs(self, position: int, end: int, pager: Pager | None) -> Iterator[BatchRun]:
        boundary = pager.advance(position) if pager is not None else end
        while self.stop is None:
            if pager is not None and position >= boundary:
                boundary = pager.advance(position)
            limit = min(boundary, end)
            # the walk reads no further than the bytes that have arrived
            edge = min(end, pager.available) if pager is not None else end
            native = speedups.native()
            if native is not None:
                walked = native.walk_v2(
                    self.buf, position, limit, edge, self.largest, self.run_batches,
                    self.check_crc, self.until_invalid, pager.share if pager else None,
                )  # fmt: skip
                position = walked.position
                if walked.n:
                    self._walked = position
                    yield BatchRun.from_native(walked.n, walked.columns)
                if walked.n == self.run_batches or limit <= position < end:
                    continue
                # the C scan stops where it needs Python: the batches up to the next one it
                # takes (v2), or the end, here
                run, position, ended = self._python_run(
                    position, limit, edge, self.run_batches, True
                )
            else:
                run, position, ended = self._python_run(position, limit, edge, self.run_batches)
            if run.n:
                self._walked = position
                yield run
            if ended and edge < end:
                assert pager is not None
                self._more(pager, position, edge)
            elif ended or (self.stop is None and position >= end):
                self._finish(position)

    def _more(self, pager: Pager, position: int, edge: int) -> None:
        """The bytes that have arrived end inside the batch at ``position``: have its whole
        header, then the whole batch, arrive."""
        need = position + RECORD_BATCH_OVERHEAD
        if position + LOG_OVERHEAD <= edge:
            need = max(need, position + LOG_OVERHEAD + _size_field(self.buf, position))
        if pager.ensure(min(need, self.end)) <= edge:
            raise InputError(self.path, f"bytes after {edge} did not arrive")

    def _python_run(
        self, position: int, limit: int, edge: int, most: int, until_v2: bool = False
    ) -> tuple[BatchRun, int, bool]:
        """The reference: up to ``most`` batches starting before ``limit`` and ending before
        ``edge`` (the bytes there are), batch by batch, with the decisions the C scan takes;
        whether the bytes ran out (the caller decides: an end, or more to read), else sets
        ``stop`` where the walk ends at damage. ``until_v2`` ends the run before a v2 batch
        (after the first batch), for the C scan to take it."""
        buf, path = self.buf, self.path
        columns: list[array[int]] = [array("q") for _ in COLUMNS]
        appends = [c.append for c in columns]
        n, ended = 0, False
        while n < most and position < limit:
            if position + HEADER_SIZE_UP_TO_MAGIC >= edge:
                ended = True
                break
            if until_v2 and n and buf[position + MAGIC_OFFSET] == 2:
                break
            try:
                batch = read_batch(buf, position, edge, path, self.max_size, self.max_batch_bytes)
            except UnknownMagicError as e:
                self.stop = Stop(StopReason.UNKNOWN_MAGIC, position, self.end - position, e)
                break
            except CorruptBatchError as e:
                self.stop = Stop(StopReason.CORRUPT_BATCH, position, self.end - position, e)
                break
            if batch is None:
                ended = True
                break
            valid = int(batch.is_valid(buf)) if self.check_crc else UNCHECKED
            if not valid and self.until_invalid:
                self.stop = Stop(StopReason.INVALID_BATCH, position, self.end - position)
                break
            for append, value in zip(appends, _row(batch, valid), strict=True):
                append(value)
            n += 1
            position = batch.end
        return BatchRun(n, columns), position, ended

    def _finish(self, position: int) -> None:
        """The range holds no further whole batch: an end, a torn tail or the range's limit."""
        remaining = self.end - position
        if self.end < self.file_size:
            reason = StopReason.LIMIT
        else:
            reason = StopReason.TRUNCATED_TAIL if remaining else StopReason.END
        self.stop = Stop(reason, position, remaining)

    def batches(self) -> Iterator[Batch]:
        """The batches one by one, as header tuples."""
        for run in self:
            yield from run.batches()


def _plain(run: BatchRun, segment_base: int, producers: Producers) -> bool:
    """Whether no batch of the run but the first can need a closer look (see flag_batches):
    every CRC matched, each batch follows the one before in the same epoch (walk_v2 takes v2
    batches only), the offsets lie from the segment's base to 2^31-1 past it, and none is a
    producer batch ``producers`` asks for."""
    facts = run.facts
    if facts is None or not facts.plain or facts.failed_crcs:
        return False
    if run.base_offset[0] < segment_base or run.last_offset[-1] - segment_base > INT32_MAX:
        return False
    if producers is Producers.ALL:
        return facts.producer_batches == 0
    return producers is Producers.IGNORED or facts.transactional == 0 or not facts.producer_batches


def _flag_plain(
    run: BatchRun,
    segment_base: int,
    has_prev: bool,
    prev_last: int,
    epoch: int,
    producers: Producers,
) -> Flags:
    """flag_batches of a plain run (``_plain``): its first batch against what came before it,
    the long way; the others follow it."""
    head = BatchRun(1, [memoryview(c)[:1] for c in run.columns()])  # no facts: the long way
    first = flag_batches(head, segment_base, has_prev, prev_last, epoch, producers)
    return first._replace(prev_last=run.last_offset[-1], epoch=run.partition_leader_epoch[-1])


class Producers(IntEnum):
    """Which producer batches ``flag_batches`` flags: recovery's producer state needs them."""

    IGNORED = 0
    TRANSACTIONAL = 1
    """Transactional or control batches of a producer (nothing is open)."""
    ALL = 2
    """Every batch with a producer id (a transaction is open)."""


class Flags(NamedTuple):
    """What ``flag_batches`` found in a run, and the state it carries to the next one."""

    flagged: list[int]
    gaps: int
    first_gap: tuple[int, int] | None
    """(previous last offset, next base offset) of the first gap."""
    has_prev: bool
    prev_last: int
    epoch: int


NO_EPOCH_YET: int = -(2**63)
"""The epoch before the first batch: never a batch's (partition leader epochs are int32)."""


def flag_batches(
    run: BatchRun,
    segment_base: int,
    has_prev: bool = False,
    prev_last: int = 0,
    epoch: int = NO_EPOCH_YET,
    producers: Producers = Producers.IGNORED,
) -> Flags:
    """The batches of ``run`` that need a closer look, by number, for verify and recovery: a
    failed CRC; a base offset not above the previous batch's last offset, below the segment's
    base offset, or a last offset below the base or more than 2^31-1 past the segment's base
    (relative offsets overflow); a new partition leader epoch; a legacy message; a producer
    batch ``producers`` asks for; the first batch of the segment. Gaps between batches (normal
    after compaction) are counted, never flagged. Pass ``has_prev``, ``prev_last`` and ``epoch``
    from the previous run's result."""
    if _plain(run, segment_base, producers):
        return _flag_plain(run, segment_base, has_prev, prev_last, epoch, producers)
    native = speedups.native()
    if native is not None and speedups.fits_int64(segment_base, prev_last):
        return Flags(*native.flag_batches(
            run.base_offset, run.last_offset, run.partition_leader_epoch, run.magic, run.valid,
            run.producer_id, run.attributes, segment_base, has_prev, prev_last, epoch,
            int(producers),
        ))  # fmt: skip
    flagged = []
    gaps, first_gap = 0, None
    for i in range(run.n):
        base, last = run.base_offset[i], run.last_offset[i]
        attention = (
            run.valid[i] == 0
            or run.magic[i] < 2
            or run.partition_leader_epoch[i] != epoch
            or last < base
            or base < segment_base
            or last - segment_base > INT32_MAX
            or not has_prev
        )
        if has_prev:
            if base <= prev_last:
                attention = True
            elif base != prev_last + 1:
                gaps += 1
                first_gap = first_gap or (prev_last, base)
        if producers and run.producer_id[i] >= 0:
            transactional = run.attributes[i] & (TRANSACTIONAL_BIT | CONTROL_BIT)
            attention = attention or producers is Producers.ALL or bool(transactional)
        if attention:
            flagged.append(i)
        has_prev, prev_last, epoch = True, last, run.partition_leader_epoch[i]
    return Flags(flagged, gaps, first_gap, has_prev, prev_last, epoch)


def read_batch(
    buf: Buffer,
    position: int,
    end: int,
    path: str = "<bytes>",
    max_size: int | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Batch | None:
    """The batch at ``position``, or None where Kafka's iteration stops (a truncated tail).

    Follows FileLogInputStream.nextBatch: 17 bytes or fewer left end the iteration, a size
    below 14 is corruption, a batch running past ``end`` ends the iteration. A compressed v0/v1
    wrapper is decompressed (at most ``max_batch_bytes``) for its first inner offset.
    """
    if position + HEADER_SIZE_UP_TO_MAGIC >= end:
        return None
    offset, size = LOG_HEADER.unpack_from(buf, position)
    magic = buf[position + MAGIC_OFFSET]
    if size < RECORD_OVERHEAD_V0:
        raise CorruptBatchError(
            path, position, f"batch size {size} is below the minimum record overhead (14)"
        )
    if max_size is not None and size > max_size:
        raise CorruptBatchError(
            path, position, f"batch size {size} exceeds the maximum message size {max_size}"
        )
    if position + LOG_OVERHEAD + size > end:
        return None
    if magic == 2:
        if size + LOG_OVERHEAD < RECORD_BATCH_OVERHEAD:
            raise CorruptBatchError(
                path, position, f"v2 batch size {size} is below the batch header size (49)"
            )
        return _new(RecordBatch, (position, *V2_HEADER.unpack_from(buf, position)))
    if magic in (0, 1):
        return _legacy_batch(buf, position, magic, size, path, max_batch_bytes)
    raise UnknownMagicError(path, position, f"unknown magic {magic} (offset {offset})")


def _legacy_batch(
    buf: Buffer, position: int, magic: int, size: int, path: str, max_batch_bytes: int
) -> Batch:
    if magic == 1 and size < RECORD_OVERHEAD_V1:
        raise CorruptBatchError(path, position, f"v1 message size {size} is below the minimum (22)")
    if magic == 0:
        offset, _, crc, _, attributes = LEGACY_HEADER_V0.unpack_from(buf, position)
        timestamp = NO_TIMESTAMP
    else:
        offset, _, crc, _, attributes, timestamp = LEGACY_HEADER_V1.unpack_from(buf, position)
    base_offset = offset
    if attributes & COMPRESSION_MASK:
        from kdump.format.legacy import legacy_wrapper_base_offset  # v0/v1 batches only

        base_offset = legacy_wrapper_base_offset(buf, position, path, offset, max_batch_bytes)
    return LegacyRecordBatch(position, offset, size, crc, magic, attributes, timestamp, base_offset)


def iter_records(
    buf: Buffer,
    batch: Batch,
    path: str = "<bytes>",
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> Iterator[Record]:
    """The records of any batch, decoded lazily."""
    if isinstance(batch, RecordBatch):
        return iter_v2_records(buf, batch, path, max_batch_bytes)
    from kdump.format.legacy import iter_legacy_records  # v0/v1 batches only

    return iter_legacy_records(buf, batch, path, max_batch_bytes)


def _size_field(buf: Buffer, position: int) -> int:
    return max(0, int(LOG_HEADER.unpack_from(buf, position)[1]))


def iter_batches(
    buf: Buffer,
    path: str = "<bytes>",
    start: int = 0,
    end: int | None = None,
    max_size: int | None = None,
    run_batches: int = RUN_BATCHES,
    pager: Pager | None = None,
) -> Iterator[Batch]:
    """Every batch from ``start`` to ``end`` in file order, as header tuples (no CRC check);
    raises the walk's error where it ends at a corrupt batch or an unknown magic. A caller
    that wants the first batch or two passes a small ``run_batches``; ``pager``: how the bytes
    are read (kdump.segment.FileRecords.pager)."""
    walk = LogWalk(
        buf,
        path,
        start,
        end,
        max_size=max_size,
        check_crc=False,
        run_batches=run_batches,
        pager=pager,
    )
    yield from walk.batches()
    if walk.stop is not None and walk.stop.error is not None:
        raise walk.stop.error


def _row(batch: Batch, valid: int) -> tuple[int, ...]:
    if isinstance(batch, RecordBatch):
        return (
            batch.position,
            batch.base_offset,
            batch.last_offset,
            batch.batch_length + LOG_OVERHEAD,
            batch.partition_leader_epoch,
            batch.magic,
            batch.crc,
            batch.attributes,
            batch.last_offset_delta,
            batch.base_timestamp,
            batch.max_timestamp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.records_count,
            valid,
        )
    return (
        batch.position,
        batch.base_offset,
        batch.offset,
        batch.message_size + LOG_OVERHEAD,
        NO_PARTITION_LEADER_EPOCH,
        batch.magic,
        batch.crc,
        batch.attributes,
        java_long(batch.offset - batch.base_offset),
        batch.timestamp,
        batch.timestamp,
        NO_PRODUCER_ID,
        NO_PRODUCER_EPOCH,
        NO_SEQUENCE,
        -1,
        valid,
    )


class Damaged(NamedTuple):
    """Bytes ``start``..``end`` (exclusive) of a log that hold no whole, valid batch."""

    start: int
    end: int


_NON_ZERO = rb"[^\x00]"  # compiled by re where a walk first meets bytes that are no batch
_SIZE_FIELD = 8
"""Where a batch's size field starts: after its 8-byte offset."""


def valid_batch_at(buf: Buffer, position: int, end: int, path: str = "<bytes>") -> Batch | None:
    """The batch at ``position`` if a whole one with a known magic, a size it can have and a
    matching CRC starts there (the three things that make bytes a batch again), else None."""
    if position + HEADER_SIZE_UP_TO_MAGIC >= end or buf[position + MAGIC_OFFSET] > 2:
        return None
    try:
        batch = read_batch(buf, position, end, path)
    except CorruptBatchError:
        return None
    return batch if batch is not None and batch.is_valid(buf) else None


def resync(
    buf: Buffer, position: int, end: int, path: str = "<bytes>", before: int | None = None
) -> int | None:
    """The first position at or after ``position`` (and before ``before``) where a whole, valid
    batch ending by ``end`` starts, or None: how a reader finds its footing again after damage,
    byte by byte."""
    last = end if before is None else min(end, before)
    while position + HEADER_SIZE_UP_TO_MAGIC < end and position < last:
        # a batch's size field (14 at least) has a non-zero byte: skip runs of zeros at once
        found = re.compile(_NON_ZERO).search(buf, position + _SIZE_FIELD, end)
        if found is None:
            return None
        position = max(position, found.start() - _SIZE_FIELD - 3)
        if position >= last:
            return None
        if valid_batch_at(buf, position, end, path) is not None:
            return position
        position += 1
    return None


def walk_resync(buf: Buffer, path: str = "<bytes>", start: int = 0) -> Iterator[BatchRun | Damaged]:
    """The walk that does not stop at damage (for salvage): the runs of whole, valid batches
    from ``start`` to the end of the file, and between them the ``Damaged`` stretches it
    stepped over, finding its footing again on the next bytes that are a batch (magic, size,
    CRC: ``resync``)."""
    end = len(buf)
    position = start
    while position < end:
        walk = LogWalk(buf, path, position, until_invalid=True, pager=Pager(buf))
        yield from walk
        stop = walk.stop
        assert stop is not None
        if not stop.is_damage:
            return
        damaged = stop.position
        batch = None
        if stop.reason is StopReason.INVALID_BATCH:
            batch = read_batch(buf, damaged, end, path)
        if batch is None:
            after = resync(buf, damaged + 1, end, path)
        else:
            # a bad CRC with a sound size field: whole batches may still start inside its span
            # (the size field garbage too); if none does, the next is most likely right after
            after = resync(buf, damaged + 1, end, path, before=batch.end)
            if after is None:
                after = resync(buf, batch.end, end, path)
        yield Damaged(damaged, end if after is None else after)
        if after is None:
            return
        position = after


__all__ = [
    "COLUMNS",
    "BatchRun",
    "Damaged",
    "Flags",
    "LogWalk",
    "Pager",
    "Producers",
    "Stop",
    "StopReason",
    "flag_batches",
    "iter_batches",
    "iter_records",
    "read_batch",
    "resync",
    "valid_batch_at",
    "walk_resync",
]

_compiled = speedups.native()
if _compiled is not None and tuple(_compiled.WALK_COLUMNS) != COLUMNS:  # pragma: no cover
    raise ImportError("kdump._speedups was built from another kdump/_speedups.c: reinstall kdump")
