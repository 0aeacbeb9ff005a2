"""The time index (.timeindex, Kafka's TimeIndex): 12-byte entries
``timestamp int64, relative_offset int32``. Entry (T, O): the batch holding offset O has max
timestamp T, and no earlier batch of the segment has a larger one.
"""

from __future__ import annotations

from kdump.format.index import AbstractIndex, SearchType
from kdump.format.layout import NO_TIMESTAMP, TIME_INDEX_ENTRY
from kdump.tuples import NamedTuple


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex[TimestampOffset]):
    """The ``.timeindex`` file of a segment."""

    entry_struct = TIME_INDEX_ENTRY
    kind = "time index"

    def entry(self, i: int) -> TimestampOffset:
        timestamp, rel = self.entry_struct.unpack_from(self.buf, i * self.entry_struct.size)
        return TimestampOffset(timestamp, self.base_offset + rel)

    @staticmethod
    def follows(previous: tuple[int, int], entry: tuple[int, int]) -> bool:
        """Timestamps strictly increase; offsets never decrease."""
        return entry[0] > previous[0] and entry[1] >= previous[1]

    def entry_offset(self, i: int) -> int:
        return self.entry(i).offset

    @property
    def last_entry(self) -> TimestampOffset:
        """TimeIndex.lastEntry: (-1, base offset) when empty."""
        if not self.entries:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(self.entries - 1)

    def lookup(self, target: int, entries: int | None = None) -> TimestampOffset:
        """TimeIndex.lookup: the largest entry with timestamp ≤ target, else (-1, base)."""
        slot = self.slot_for(target, SearchType.FLOOR, entries)
        if slot == -1:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def ceiling(self, target: int, entries: int | None = None) -> TimestampOffset | None:
        """The smallest entry with timestamp ≥ target, or None."""
        slot = self.slot_for(target, SearchType.CEILING, entries)
        return None if slot == -1 else self.entry(slot)

    def sanity_check(self) -> str | None:
        """TimeIndex.sanityCheck: the CorruptIndexException text, or None when it passes."""
        if self.entries:
            last, first = self.last_entry, self.entry(0)
            if last.timestamp < first.timestamp:
                return (
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                    f"but the last timestamp is {last.timestamp} which is less than the first "
                    f"timestamp {first.timestamp}"
                )
            if last.offset < self.base_offset:
                return (
                    f"Corrupt time index found, time index file ({self.path}) has non-zero size "
                    f"but the last offset is {last.offset} which is less than the first offset "
                    f"{self.base_offset}"
                )
        if not self.is_aligned:
            return (
                f"Time index file {self.path} is corrupt, found {self.file_size} bytes which is "
                f"neither positive nor a multiple of {self.entry_size}."
            )
        return None
