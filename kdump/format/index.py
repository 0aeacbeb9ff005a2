"""Kafka's sparse indexes (AbstractIndex) and the offset index (.index, OffsetIndex).

An offset index entry is 8 bytes: ``relative_offset int32, position int32``; the absolute offset
is the segment's base offset plus the relative one. Files are preallocated and memory-mapped by
the broker, so a file left by an unclean stop ends in zero-filled entries.
"""

from __future__ import annotations

import struct
import sys
from abc import ABC, abstractmethod
from array import array
from collections.abc import Iterator
from enum import Enum
from functools import cached_property
from typing import Generic, TypeVar

from kdump.crc import Buffer
from kdump.format.layout import OFFSET_INDEX_ENTRY
from kdump.tuples import NamedTuple

E = TypeVar("E", bound=tuple[int, int])

_ZERO_CHUNK = 64 * 1024
_ZEROS = bytes(_ZERO_CHUNK)


class SearchType(Enum):
    """AbstractIndex.SearchResultType: FLOOR is Kafka's lookup, CEILING the smallest entry ≥."""

    FLOOR = "largest_lower_bound"
    CEILING = "smallest_upper_bound"


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class Probe(NamedTuple):
    """One comparison of the binary search: the slot, its entry, and the entry's key against
    the target (-1 below, 0 equal, 1 above)."""

    slot: int
    entry: tuple[int, int]
    comparison: int


# a plain class, not a NamedTuple (Python 3.10 refuses a generic one, and kdump runs on 3.10)
# nor a dataclass (every command reading an index builds this module: a dataclass costs
# start-up to define, issue 45)
class IndexSearch(Generic[E]):
    """AbstractIndex.indexSlotRangeFor run once, with the slots it compared (``kdump lookup``
    shows them)."""

    __slots__ = ("entries", "entry", "kind", "path", "probes", "search", "slot", "target")

    def __init__(
        self,
        path: str,
        kind: str,
        target: int,
        search: SearchType,
        entries: int,
        probes: tuple[Probe, ...],
        slot: int,
        entry: E | None,
    ) -> None:
        self.path, self.kind, self.target, self.search = path, kind, target, search
        self.entries, self.probes, self.slot = entries, probes, slot
        self.entry: E | None = entry

    def __repr__(self) -> str:
        return (
            f"IndexSearch({self.path!r}, {self.kind}, target={self.target}, slot={self.slot}, "
            f"entry={self.entry!r})"
        )


def entry_due(bytes_since_last_entry: int, index_interval_bytes: int) -> bool:
    """LogSegment.append and LogSegment.recover: a batch (before Kafka 4.0: an append) gets an
    offset index entry when more than index.interval.bytes were appended since the last entry
    (or the segment's start): entries are always more than that many .log bytes apart."""
    return bytes_since_last_entry > index_interval_bytes


def trailing_zero_bytes(buf: Buffer, start: int = 0) -> int:
    """How many bytes at the end of ``buf`` (after ``start``) are zero, read 64 KiB at a time.

    A whole zero chunk is told by one comparison (a memcmp), twenty times faster than
    bytes.rstrip's byte-by-byte scan: a preallocated 10 MiB index is mostly such chunks.
    """
    view = memoryview(buf)
    end = len(view)
    while end > start:
        lo = max(start, end - _ZERO_CHUNK)
        chunk = bytes(view[lo:end])
        if chunk != _ZEROS[: end - lo]:
            return len(view) - (lo + len(chunk.rstrip(b"\x00")))
        end = lo
    return len(view) - start


class AbstractIndex(ABC, Generic[E]):
    """Entries of a fixed size over a buffer; Kafka's binary search and its warm-entry split."""

    entry_struct: struct.Struct
    kind = "index"

    def __init__(self, buf: Buffer, base_offset: int, path: str = "<bytes>") -> None:
        self.buf = buf
        self.base_offset = base_offset
        self.path = path

    @property
    def entry_size(self) -> int:
        return self.entry_struct.size

    @property
    def file_size(self) -> int:
        return len(self.buf)

    @property
    def entries(self) -> int:
        """Kafka's count on open: every whole entry in the file, zero tail included."""
        return len(self.buf) // self.entry_size

    @property
    def is_aligned(self) -> bool:
        return len(self.buf) % self.entry_size == 0

    @abstractmethod
    def entry(self, i: int) -> E: ...

    def key(self, entry: E) -> int:
        return entry[0]

    def __iter__(self) -> Iterator[E]:
        return (self.entry(i) for i in range(self.entries))

    def __len__(self) -> int:
        return self.entries

    @cached_property
    def zero_tail_entries(self) -> int:
        """Whole entries at the end of the file that are entirely zero: preallocated space
        (counted once: a preallocated index is megabytes of zeros, and its buffer is read-only)."""
        whole = self.entries * self.entry_size
        return trailing_zero_bytes(memoryview(self.buf)[:whole]) // self.entry_size

    @property
    def used_entries(self) -> int:
        """Entries before the zero-filled tail (what a broker had written)."""
        return self.entries - self.zero_tail_entries

    def entries_before_first_zero_entry(self) -> int:
        """DumpLogSegments' stop rule: the first entry i > 0 whose offset is the base offset."""
        used = self.used_entries
        for i in range(1, used):
            if self.entry_offset(i) == self.base_offset:
                return i
        return used if used > 0 or self.entries == 0 else min(1, self.entries)

    @abstractmethod
    def entry_offset(self, i: int) -> int: ...

    @abstractmethod
    def sanity_check(self) -> str | None:
        """AbstractIndex.sanityCheck: the CorruptIndexException text, or None when it passes."""

    def _compare(self, i: int, target: int, probes: list[int] | None = None) -> int:
        if probes is not None:
            probes.append(i)
        k = self.key(self.entry(i))
        return (k > target) - (k < target)

    def slot_for(
        self,
        target: int,
        search: SearchType = SearchType.FLOOR,
        entries: int | None = None,
        probes: list[int] | None = None,
    ) -> int:
        """AbstractIndex.indexSlotRangeFor over the first ``entries`` entries (default: all).

        ``probes``, when given, receives every slot compared, in order (for ``kdump lookup``).
        """
        n = self.entries if entries is None else entries
        if n == 0:
            return -1
        first_hot = max(0, n - 1 - 8192 // self.entry_size)
        if self._compare(first_hot, target, probes) < 0:
            return self._binary_search(target, search, first_hot, n - 1, n, probes)
        if self._compare(0, target, probes) > 0:
            return -1 if search is SearchType.FLOOR else 0
        return self._binary_search(target, search, 0, first_hot, n, probes)

    def _binary_search(
        self,
        target: int,
        search: SearchType,
        lo: int,
        hi: int,
        n: int,
        probes: list[int] | None = None,
    ) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            c = self._compare(mid, target, probes)
            if c > 0:
                hi = mid - 1
            elif c < 0:
                lo = mid
            else:
                return mid
        if search is SearchType.FLOOR:
            return lo
        return -1 if lo == n - 1 else lo + 1

    def search(
        self, target: int, search: SearchType = SearchType.FLOOR, entries: int | None = None
    ) -> IndexSearch[E]:
        """``slot_for`` with the slots it compared: FLOOR (the largest entry ≤ target: Kafka's
        lookup) or CEILING (the smallest entry ≥ target) over the first ``entries`` entries
        (default: all, as Kafka counts them).

        Kafka's binarySearch never compares its lower bound inside the loop, so a CEILING whose
        target equals the first entry of the range searched answers the entry after it
        (AbstractIndex.indexSlotRangeFor; its FLOOR answers are right). The search did compare
        that entry equal, so this answers it: the smallest entry ≥ target.
        """
        slots: list[int] = []
        slot = self.slot_for(target, search, entries, slots)
        probes = []
        for s in slots:
            entry = self.entry(s)
            key = self.key(entry)
            probes.append(Probe(s, entry, (key > target) - (key < target)))
        if search is SearchType.CEILING:
            slot = next((p.slot for p in probes if p.comparison == 0), slot)
        n = self.entries if entries is None else entries
        return IndexSearch(
            self.path,
            self.kind,
            target,
            search,
            n,
            tuple(probes),
            slot,
            None if slot == -1 else self.entry(slot),
        )

    @staticmethod
    @abstractmethod
    def follows(previous: tuple[int, int], entry: tuple[int, int]) -> bool:
        """ "Entries increase": may ``entry`` come right after ``previous`` (raw or absolute
        entries alike)? The rule the broker's appends keep and its searches rely on; stronger
        than ``sanity_check``, which is all the broker itself checks at startup. (The C walk's
        offset_index_check and time_index_check test the same rule natively.)"""

    def first_out_of_order(
        self, entries: int | None = None, before: tuple[int, int] | None = None
    ) -> int | None:
        """The first of the first ``entries`` entries (default: all) that does not ``follow``
        the one before it (the first: ``before``, a raw entry, when given), or None."""
        n = self.entries if entries is None else entries
        view = memoryview(self.buf)[: n * self.entry_size]
        previous = before
        for i, entry in enumerate(self.entry_struct.iter_unpack(view)):
            if previous is not None and not self.follows(previous, entry):
                return i
            previous = entry
        return None


class OffsetIndex(AbstractIndex[OffsetPosition]):
    """The ``.index`` file of a segment (Kafka's OffsetIndex)."""

    entry_struct = OFFSET_INDEX_ENTRY
    kind = "offset index"

    def entry(self, i: int) -> OffsetPosition:
        rel, position = self.entry_struct.unpack_from(self.buf, i * self.entry_struct.size)
        return OffsetPosition(self.base_offset + rel, position)

    @staticmethod
    def follows(previous: tuple[int, int], entry: tuple[int, int]) -> bool:
        """Offsets and positions both strictly increase."""
        return entry[0] > previous[0] and entry[1] > previous[1]

    def entry_offset(self, i: int) -> int:
        return self.entry(i).offset

    def relative_offset(self, i: int) -> int:
        return int(self.entry_struct.unpack_from(self.buf, i * self.entry_struct.size)[0])

    @property
    def last_offset(self) -> int:
        return self.entry(self.entries - 1).offset if self.entries else self.base_offset

    def positions(self, entries: int | None = None) -> list[int]:
        """The .log positions of the first ``entries`` entries (default: the used ones)."""
        n = self.used_entries if entries is None else entries
        words = array("i")
        words.frombytes(memoryview(self.buf)[: n * self.entry_size])
        if sys.byteorder == "little":
            words.byteswap()
        return words[1::2].tolist()

    def lookup(self, target: int, entries: int | None = None) -> OffsetPosition:
        """OffsetIndex.lookup: the largest entry with offset ≤ target, else (base, 0)."""
        slot = self.slot_for(target, SearchType.FLOOR, entries)
        return OffsetPosition(self.base_offset, 0) if slot == -1 else self.entry(slot)

    def ceiling(self, target: int, entries: int | None = None) -> OffsetPosition | None:
        """The smallest entry with offset ≥ target, or None."""
        slot = self.slot_for(target, SearchType.CEILING, entries)
        return None if slot == -1 else self.entry(slot)

    def sanity_check(self) -> str | None:
        """OffsetIndex.sanityCheck: the CorruptIndexException text, or None when it passes."""
        if self.entries and self.last_offset < self.base_offset:
            return (
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last "
                f"offset is {self.last_offset} which is less than the base offset "
                f"{self.base_offset}."
            )
        if not self.is_aligned:
            return (
                f"Index file {self.path} is corrupt, found {self.file_size} bytes which is "
                f"neither positive nor a multiple of {self.entry_size}."
            )
        return None
