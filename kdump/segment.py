"""The one place that opens files: read-only memory maps of segment files, and the layout of
segments in a partition directory (Kafka's LogSegment, FileRecords and file naming).
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kdump.crc import Buffer
from kdump.errors import InputError
from kdump.format.batch import Batch, iter_records
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.index import OffsetIndex
from kdump.format.records import Record
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.format.walk import RUN_BATCHES, LogWalk, Pager, iter_batches

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


def open_buffer(path: str | os.PathLike[str]) -> Buffer:
    """A read-only view of a file: an mmap, or empty bytes for an empty file."""
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
        )

    def pager(self) -> Pager:
        """How the walk reads this log: a memory map's pages released behind it. A log whose
        bytes arrive in ranges (an object in a store) has a pager that fetches them."""
        return Pager(self.buf)

    def batches(
        self,
        start: int = 0,
        end: int | None = None,
        max_size: int | None = None,
        run_batches: int = RUN_BATCHES,
    ) -> Iterator[Batch]:
        return iter_batches(self.buf, self.path, start, end, max_size, run_batches)

    def records(
        self, batch: Batch, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    ) -> Iterator[Record]:
        return iter_records(self.buf, batch, self.path, max_batch_bytes)

    def is_valid(self, batch: Batch) -> bool:
        return batch.is_valid(self.buf)

    def compute_checksum(self, batch: Batch) -> int:
        return batch.compute_checksum(self.buf)


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
