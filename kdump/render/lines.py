"""A dump's lines and what it collects, shared by the driver (kdump.render.dump_segments) and the
dumpers of each kind of file (kdump.render.dump_log, kdump.render.dump_index)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kdump.errors import InputError
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.format.layout import INT32_MAX
from kdump.format.names import offset_in_name
from kdump.releases import LATEST, Release
from kdump.render.describe import Decoder, default_decoder
from kdump.storage.base import StoredFile
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump.format.internal import NamedParser
    from kdump.format.walk import LogWalk
    from kdump.storage.records import FileRecords

DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
OUT, ERR = "out", "err"


class Line(NamedTuple):
    stream: str
    text: str


class Chunk(NamedTuple):
    """Whole lines for standard output, already encoded (the bulk renderer's)."""

    data: bytes


class DumpOptions(NamedTuple):
    """kafka-dump-log.sh's options, as kdump.commands.dump reads them (a record: every dump
    builds this module, and a frozen dataclass costs start-up to define, issue 45)."""

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


class DumpProblems:
    """What DumpLogSegments collects while dumping and reports on stderr at the end.

    Keys are absolute paths, as Kafka's getAbsolutePath gives them.
    """

    def __init__(self) -> None:
        self.index_mismatches: PairLists = {}
        self.time_index_mismatches: PairLists = {}
        self.out_of_order_timestamps: PairLists = {}
        self.shallow_offsets_not_found: PairLists = {}
        self.non_consecutive: PairLists = {}
        self.non_consecutive_not_kept: dict[str, int] = {}
        """Pairs past runs.MAX_GAPS per log: counted, not listed."""
        self.gaps_kept = 0
        """How many pairs a log keeps (runs.MAX_GAPS), where some were not kept."""
        self.failures = 0
        self.unreadable = 0
        self.trailing_bytes = 0
        self.invalid_batches = 0
        self.dumped = 0
        """Files of a kind kdump dumps (not ``Ignoring unknown file``), readable or not."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DumpProblems):
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"DumpProblems({vars(self)!r})"

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
        self.gaps_kept = max(self.gaps_kept, other.gaps_kept)
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


def base_offset_of(file: StoredFile) -> int:
    """The offset a segment file's 20-digit name gives (Kafka's offsetFromFileName)."""
    offset = offset_in_name(file.name)
    if offset is None:
        raise InputError(file.path, "file name is not a 20-digit base offset")
    return offset


class LogSpan(NamedTuple):
    """The part of a log one piece dumps: the batches from ``start`` to ``end`` (None: as far
    as the dump reads), whether it holds the file's first lines (the file's name, the log's
    header) and last (a torn tail, the walk's error), and the offset of the last record
    rendered before ``start`` (-1: none)."""

    start: int
    end: int | None
    first: bool
    last: bool
    last_offset: int = -1


WHOLE = LogSpan(0, None, True, True)
"""A whole log, as one process dumps it."""


def span_walk(log: FileRecords, opts: DumpOptions, span: LogSpan) -> LogWalk:
    """The walk a dump of ``log`` reads: as far as --max-bytes lets it, or one of --jobs'
    pieces (faulted in at once: too short for the walk's read-ahead thread)."""
    end = opts.max_bytes if span.end is None else span.end
    if span is not WHOLE:
        log.populate(span.start, min(end, log.size))
    return log.walk(span.start, end, max_batch_bytes=opts.max_batch_bytes)


__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "ERR",
    "OUT",
    "WHOLE",
    "Chunk",
    "DumpOptions",
    "DumpProblems",
    "Line",
    "LogSpan",
    "base_offset_of",
    "span_walk",
]
