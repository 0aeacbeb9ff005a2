"""What verify's index checks need from a log, gathered during its one walk.

An offset index entry (O, P) is checked against the batch starting at position P and the batch
before it; a time index entry (T, O) against the first batch whose last offset reaches O and
the largest max timestamp of the batches before that one. Before the walk, the index files say
which positions and offsets they name (``index_keys``); during it, ``IndexGather.feed`` keeps a
row for each of those and nothing else. Memory follows the index entries, never the number of
batches (a 1 GiB segment of 100-byte batches has ten million of them).
"""

from __future__ import annotations

import bisect
import struct
from array import array
from typing import NamedTuple

from kdump import speedups
from kdump.format.index import OffsetIndex
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.timeindex import TimeIndex
from kdump.format.walk import BatchRun

INT64_MAX = 2**63 - 1
ROW = 5
"""int64s per gathered row (PositionRow, OffsetRow)."""


class PositionRow(NamedTuple):
    """The batch starting at ``position``, and the last offset of the batch before it."""

    position: int
    base_offset: int
    last_offset: int
    prev_last: int | None


class OffsetRow(NamedTuple):
    """The first batch whose last offset reaches ``offset``, and the largest max timestamp of
    the batches before it (-1: none)."""

    offset: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    max_before: int


def index_keys(index: OffsetIndex | TimeIndex) -> array[int]:
    """The sorted distinct positions (offset index) or offsets (time index) the used entries
    name; an offset past int64 counts as 2^63-1 (above every log offset either way)."""
    used, is_time = index.used_entries, isinstance(index, TimeIndex)
    native = speedups.native()
    if native is not None and speedups.fits_int64(index.base_offset):
        return array("q", native.index_keys(index.buf, used, index.base_offset, is_time))
    view = memoryview(index.buf)[: used * index.entry_size]
    if is_time:
        keys = {
            min(index.base_offset + rel, INT64_MAX) for _, rel in struct.iter_unpack(">qi", view)
        }
    else:
        keys = {position for _, position in struct.iter_unpack(">ii", view)}
    return array("q", sorted(keys))


class IndexGather:
    """The rows one segment's index checks need, fed the walk's runs in order."""

    def __init__(self, offset_index: OffsetIndex | None, time_index: TimeIndex | None) -> None:
        self.wanted_positions = index_keys(offset_index) if offset_index else array("q")
        self.wanted_offsets = index_keys(time_index) if time_index else array("q")
        # room for a row per wanted key, made once (each key is met at most once); the rows
        # filled so far are what position_rows and offset_rows give
        self._position_room = array("q", [0]) * (ROW * len(self.wanted_positions))
        self._offset_room = array("q", [0]) * (ROW * len(self.wanted_offsets))
        # next wanted position, a batch before?, its last offset, next wanted offset, max ts,
        # position rows, offset rows
        self._state: tuple[int, ...] = (0, 0, 0, 0, NO_TIMESTAMP, 0, 0)

    @property
    def position_rows(self) -> memoryview:
        return memoryview(self._position_room)[: ROW * self._state[5]]

    @property
    def offset_rows(self) -> memoryview:
        return memoryview(self._offset_room)[: ROW * self._state[6]]

    def feed(self, run: BatchRun) -> None:
        if not (self.wanted_positions or self.wanted_offsets):
            return
        native = speedups.native()
        if native is not None:
            self._state = native.gather(
                run.position, run.base_offset, run.last_offset, run.max_timestamp,
                self.wanted_positions, self.wanted_offsets, self._position_room,
                self._offset_room, self._state,
            )  # fmt: skip
            return
        self._feed_python(run)

    def _feed_python(self, run: BatchRun) -> None:
        """The reference: the same merge as the C code's, batch by batch."""
        cursor_p, has_prev, prev_last, cursor_o, before, prow_n, orow_n = self._state
        wp, wo = self.wanted_positions, self.wanted_offsets
        prows, orows = self._position_room, self._offset_room
        for j in range(run.n):
            pos, base, last = run.position[j], run.base_offset[j], run.last_offset[j]
            max_ts = run.max_timestamp[j]
            while cursor_p < len(wp) and wp[cursor_p] < pos:
                cursor_p += 1
            if cursor_p < len(wp) and wp[cursor_p] == pos:
                prows[ROW * prow_n : ROW * (prow_n + 1)] = array(
                    "q", (pos, base, last, prev_last, has_prev)
                )
                prow_n += 1
                cursor_p += 1
            while cursor_o < len(wo) and wo[cursor_o] <= last:
                orows[ROW * orow_n : ROW * (orow_n + 1)] = array(
                    "q", (wo[cursor_o], base, last, max_ts, before)
                )
                orow_n += 1
                cursor_o += 1
            before = max(before, max_ts)
            has_prev, prev_last = 1, last
        self._state = (cursor_p, has_prev, prev_last, cursor_o, before, prow_n, orow_n)

    def position_row(self, position: int) -> PositionRow | None:
        """The batch starting exactly at ``position``, if one does (and the index named it)."""
        row = _find(self.position_rows, ROW, position)
        if row is None:
            return None
        pos, base, last, prev_last, has_prev = row
        return PositionRow(pos, base, last, prev_last if has_prev else None)

    def offset_row(self, offset: int) -> OffsetRow | None:
        """The first batch whose last offset is ≥ ``offset`` (if the index named it)."""
        row = _find(self.offset_rows, ROW, offset)
        return None if row is None else OffsetRow(*row)


def _find(rows: memoryview, width: int, key: int) -> tuple[int, ...] | None:
    """The row whose first value is ``key`` among rows sorted by it."""
    keys = memoryview(rows)[::width]
    i = bisect.bisect_left(keys, key)
    if i < len(keys) and keys[i] == key:
        return tuple(rows[i * width : (i + 1) * width])
    return None
