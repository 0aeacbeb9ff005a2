"""A remote log read through the one walk: a sparse mirror of its bytes, filled in ranges.

The mirror is an anonymous private memory map of the log's (decoded) size, handed to the walk and
the C paths as the ``FileRecords`` buffer, so every reader of a log keeps its one code path. Only
what the walk asks for is fetched (a ``RemotePager``: a window of bytes when the walk reaches
bytes not there, the next window prefetched while the walk works on this one) and what it has
passed is handed back (MADV_DONTNEED): resident memory stays a few windows whatever the size.

An anonymous mapping rather than the sparse temporary file of the first design: no disk is used,
nothing is left behind by a killed process, and handing pages back is one madvise (no
fallocate(PUNCH_HOLE)).

Bytes never fetched (or handed back) read as zeros in the map, so nothing may read them: the walk
reads only what its pager says is there; ``RemoteRecords`` fetches a batch's bytes before it
decodes records or checks a CRC of its own.
"""

from __future__ import annotations

import bisect
import mmap
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from kdump.crc import Buffer
from kdump.format.batch import Batch
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.records import Record
from kdump.format.walk import Pager
from kdump.storage.records import FileRecords

Fetch = Callable[[int, int], Iterator[tuple[int, bytes]]]
"""Decoded bytes covering [start, end): (position, bytes) pieces, which may reach beyond."""

PAGE = mmap.PAGESIZE


class Mirror:
    """The bytes of a remote log fetched so far, at their positions in a sparse memory map."""

    def __init__(self, name: str, size: int, fetch: Fetch, read_ahead: int) -> None:
        self.name, self.size, self.fetch = name, size, fetch
        self.read_ahead = max(PAGE, read_ahead)
        self.buf: Buffer = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE) if size else b""
        self._starts: list[int] = []  # resident [start, end) ranges, sorted, disjoint
        self._ends: list[int] = []
        self._lock = threading.Lock()
        self._prefetch: Future[None] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self.fetched = 0
        """Bytes fetched in all (for tests and the bench)."""

    # -- resident ranges --------------------------------------------------------------------

    def resident_end(self, position: int) -> int:
        """The end of the resident range holding ``position`` (``position`` when none does)."""
        with self._lock:
            i = bisect.bisect_right(self._starts, position) - 1
            if i >= 0 and self._ends[i] > position:
                return self._ends[i]
            return position

    def holds(self, start: int, end: int) -> bool:
        return end <= start or self.resident_end(start) >= end

    def _missing(self, start: int, end: int) -> list[tuple[int, int]]:
        gaps, at = [], start
        with self._lock:
            i = max(0, bisect.bisect_right(self._starts, start) - 1)
            while at < end and i < len(self._starts):
                s, e = self._starts[i], self._ends[i]
                if e <= at:
                    i += 1
                    continue
                if s > at:
                    gaps.append((at, min(s, end)))
                at = max(at, e)
                i += 1
        if at < end:
            gaps.append((at, end))
        return gaps

    def _add(self, start: int, end: int) -> None:
        with self._lock:
            i = bisect.bisect_left(self._ends, start)
            j = bisect.bisect_right(self._starts, end)
            if i < j:
                start, end = min(start, self._starts[i]), max(end, self._ends[j - 1])
            self._starts[i:j] = [start]
            self._ends[i:j] = [end]

    def _remove(self, start: int, end: int) -> None:
        with self._lock:
            i = bisect.bisect_right(self._ends, start)
            j = bisect.bisect_left(self._starts, end)
            keep_s: list[int] = []
            keep_e: list[int] = []
            for s, e in zip(self._starts[i:j], self._ends[i:j], strict=True):
                if s < start:
                    keep_s.append(s)
                    keep_e.append(start)
                if e > end:
                    keep_s.append(end)
                    keep_e.append(e)
            self._starts[i:j] = keep_s
            self._ends[i:j] = keep_e

    # -- fetching and handing back ----------------------------------------------------------

    def fill(self, start: int, end: int, keep_from: int | None = None) -> None:
        """Make ``[start, end)`` resident (clipped to the log). Past the memory budget (four
        read-ahead windows), ranges outside ``[keep_from, end + read_ahead)`` are handed back
        first: what earlier walks left (``keep_from`` defaults to ``start``)."""
        start, end = max(0, start), min(end, self.size)
        self._wait_prefetch()
        if self.resident_bytes() + (end - start) > 4 * self.read_ahead:
            keep = start if keep_from is None else keep_from
            self.release(0, keep)
            self.release(end + self.read_ahead, self.size)
        for a, b in self._missing(start, end):
            self._store(a, b)

    def resident_bytes(self) -> int:
        with self._lock:
            return sum(e - s for s, e in zip(self._starts, self._ends, strict=True))

    def _store(self, start: int, end: int) -> None:
        buf = self.buf
        assert isinstance(buf, mmap.mmap)
        for position, data in self.fetch(start, end):
            stop = min(position + len(data), self.size)
            buf[position:stop] = data[: stop - position]
            self.fetched += stop - position
            self._add(position, stop)

    def prefetch(self, start: int, end: int) -> None:
        """Fetch ``[start, end)`` in the background while the walk works (once at a time)."""
        start, end = max(0, start), min(end, self.size)
        if start >= end or self._prefetch is not None:
            return
        gaps = self._missing(start, end)
        if not gaps:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="kdump-prefetch")
        self._prefetch = self._pool.submit(self._fill_gaps, gaps)

    def _fill_gaps(self, gaps: list[tuple[int, int]]) -> None:
        for a, b in gaps:
            self._store(a, b)

    def _wait_prefetch(self) -> None:
        pending, self._prefetch = self._prefetch, None
        if pending is not None:
            pending.result()  # its error (a StoreError) is this read's

    def release(self, start: int, end: int) -> None:
        """Hand back the whole pages of ``[start, end)``: they are no longer resident."""
        buf = self.buf
        first = -(-start // PAGE) * PAGE
        last = self.size if end >= self.size else end - end % PAGE
        if last <= first or not isinstance(buf, mmap.mmap):
            return
        self._wait_prefetch()
        self._remove(first, last)
        buf.madvise(mmap.MADV_DONTNEED, first, last - first)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class RemotePager(Pager):
    """A walk's reads of a mirror: a window fetched whenever the walk reaches bytes not there
    (and the one after it prefetched), the pages passed handed back at each boundary."""

    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        self.window = mirror.read_ahead
        self.buf = None
        self.released = 0
        self.available = 0
        self._from: int | None = None

    def advance(self, position: int) -> int:
        # Nothing is fetched here: the walk asks (ensure) when it reaches bytes not there, so a
        # walk that ends (or stops at its range's end) fetches nothing beyond what it read.
        if self._from is not None and position > self._from:
            self.mirror.release(self._from, position)
        self._from = position
        self.available = self.mirror.resident_end(position)
        return position + self.window

    def ensure(self, end: int) -> int:
        mirror, start = self.mirror, self.available
        mirror.fill(start, max(end, start + self.window), keep_from=self._from)
        self.available = mirror.resident_end(start if self._from is None else self._from)
        mirror.prefetch(self.available, self.available + self.window)
        return self.available


class RemoteRecords(FileRecords):
    """A remote ``.log`` as ``FileRecords``: the walk reads it through a ``RemotePager``; a
    batch's own bytes are fetched before its records are decoded or its CRC computed."""

    def __init__(self, mirror: Mirror) -> None:
        super().__init__(mirror.name, mirror.buf)
        self.mirror = mirror

    def pager(self) -> Pager:
        return RemotePager(self.mirror)

    def batch_pager(self) -> Pager:
        return self.pager()

    def _have(self, batch: Batch) -> None:
        if not self.mirror.holds(batch.position, batch.end):
            self.mirror.fill(batch.position, batch.end)

    def records(
        self, batch: Batch, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> Iterator[Record]:
        self._have(batch)
        return super().records(batch, max_batch_bytes)

    def is_valid(self, batch: Batch) -> bool:
        self._have(batch)
        return super().is_valid(batch)

    def compute_checksum(self, batch: Batch) -> int:
        self._have(batch)
        return super().compute_checksum(batch)

    def close(self) -> None:
        self.mirror.close()


__all__ = ["Fetch", "Mirror", "RemotePager", "RemoteRecords"]
