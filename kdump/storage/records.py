"""A ``.log``'s bytes as Kafka's FileRecords: batches read through the one walk
(kdump.format.walk), whatever holds the bytes (a memory-mapped file, a sparse mirror of an
object in a store)."""

from __future__ import annotations

import mmap
from collections.abc import Iterator

from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.records import Record, control_record_key
from kdump.format.walk import (
    RUN_BATCHES,
    LogWalk,
    Pager,
    iter_batches,
    iter_records,
    populate_pages,
    release_pages,
)
from kdump.storage.reading import KEEP, CacheGuard, ReadPolicy


class FileRecords:
    """A .log file: its batches, read through a memory map (``buf``). ``guard`` drops from the
    page cache what reading it brought in, ``policy`` paces the reads (kdump.storage.reading)."""

    def __init__(
        self,
        path: str,
        buf: Buffer,
        guard: CacheGuard | None = None,
        policy: ReadPolicy = KEEP,
    ) -> None:
        self.path = path
        self.buf = buf
        self.guard = guard
        self.policy = policy

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
        guard, policy = self.guard, self.policy
        return Pager(
            self.buf,
            None if guard is None else guard.release,
            None if policy.throttle is None else policy.charge,
        )

    def populate(self, start: int, end: int) -> None:
        """Fault in the pages of ``[start, end)`` now (a walk of a range too short for a
        read-ahead thread: a piece of a --jobs dump)."""
        populate_pages(self.buf, start, end)

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

    def marker_type(self, batch: Batch) -> int | None:
        """A control batch's ControlRecordType (COMMIT, ABORT, ...) from its first record's key;
        None where it has no record (a cleaning dropped it) or the record does not decode."""
        try:
            record = next(self.records(batch), None)
        except KdumpError:
            return None
        key = None if record is None else control_record_key(record)
        return None if key is None else key.type

    def is_valid(self, batch: Batch) -> bool:
        return batch.is_valid(self.buf)

    def compute_checksum(self, batch: Batch) -> int:
        return batch.compute_checksum(self.buf)

    def close(self) -> None:
        """Give back what holds the bytes: a memory map (and the file descriptor it keeps),
        now rather than with its last reference; an object's mirror (its own close)."""
        buf = self.buf
        if isinstance(buf, mmap.mmap) and not buf.closed:
            try:
                buf.close()
            except BufferError:  # a view still held: the map is freed with it, its pages now
                if self.guard is not None:
                    release_pages(buf, 0, len(buf))
        if self.guard is not None:
            self.guard.close()


__all__ = ["FileRecords"]
