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
import contextlib
import mmap
import os
import struct
import sys
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kdump import speedups
from kdump.crc import Buffer
from kdump.format.index import OffsetIndex
from kdump.format.layout import NO_TIMESTAMP
from kdump.format.timeindex import TimeIndex
from kdump.format.walk import BatchRun
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump._speedups import GatherState as NativeGatherState

INT64_MAX = 2**63 - 1
ROW = 5
"""int64s per gathered row (PositionRow, OffsetRow)."""


class GatherState(NamedTuple):
    """Where a gather stands between two runs: the Python reference's. The C gather reads one
    by name and hands back its own ``kdump._speedups.GatherState`` of the same names
    (tests/test_speedups.py), read by name here too."""

    cursor_p: int
    """The next wanted position."""
    has_prev: int
    """Whether a batch came before (0 or 1), and ``prev_last`` its last offset."""
    prev_last: int
    cursor_o: int
    """The next wanted offset."""
    before: int
    """The greatest max timestamp so far."""
    prow_n: int
    """Position rows filled; ``orow_n`` offset rows."""
    orow_n: int
    has_raised: int
    """Whether a batch raised the max timestamp; the last one's base offset, last offset, max
    timestamp, the max before it and the last offset before it (INT64_MIN: none)."""
    raised_base: int
    raised_last: int
    raised_max_ts: int
    raised_before: int
    raised_prev_last: int
    rising: int
    """Whether every last offset so far rose (what ``want`` needs for a key named late)."""


_START = GatherState(
    cursor_p=0, has_prev=0, prev_last=0, cursor_o=0, before=NO_TIMESTAMP, prow_n=0, orow_n=0,
    has_raised=0, raised_base=0, raised_last=0, raised_max_ts=0, raised_before=0,
    raised_prev_last=0, rising=1,
)  # fmt: skip


def _replaced(state: GatherState | NativeGatherState, **changes: int) -> GatherState:
    """``state`` (either kind) with ``changes``, field by field by name: where a walk goes on
    from a verified prefix or a late key is named, not once a run."""
    fields = {name: getattr(state, name) for name in GatherState._fields}
    return GatherState(**(fields | changes))


def _map_noreserve() -> int:
    """Linux's MAP_NORESERVE: reserve no swap for a mapping ahead. Python's mmap module names
    it from 3.13; before, the value of the architectures that share the generic one, and none
    elsewhere (the kernel's overcommit heuristic then decides)."""
    if hasattr(mmap, "MAP_NORESERVE"):
        return int(mmap.MAP_NORESERVE)
    generic = ("x86_64", "i686", "aarch64", "armv7l", "riscv64", "s390x")
    return 0x4000 if hasattr(os, "uname") and os.uname().machine in generic else 0


MAP_NORESERVE = _map_noreserve()

MAPPED_ROOM = 1 << 20
"""Room of this many bytes or more is an anonymous mapping (see ``_room``), less an array."""


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
    return entry_keys(
        index.buf, index.used_entries, index.base_offset, isinstance(index, TimeIndex)
    )


def entry_keys(buf: Buffer, used: int, base_offset: int, is_time: bool) -> array[int]:
    """index_keys of the first ``used`` entries in ``buf`` (time index entries: ``is_time``)."""
    native = speedups.native()
    if native is not None and speedups.fits_int64(base_offset):
        return array("q", native.index_keys(buf, used, base_offset, is_time))
    width = (TimeIndex if is_time else OffsetIndex).entry_struct.size
    view = memoryview(buf)[: used * width]
    if is_time:
        keys = {min(base_offset + rel, INT64_MAX) for _, rel in struct.iter_unpack(">qi", view)}
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
        self._position_room = _room(len(self.wanted_positions))
        self._offset_room = _room(len(self.wanted_offsets))
        self._state: GatherState | NativeGatherState = _START
        self._growing = False
        self._fed_position = -1
        """The position of the last batch fed."""
        self.complete = True
        """False once ``want`` was given a key whose batch had gone by and cannot be named."""

    def carry(self, prev_last: int | None, max_timestamp: int) -> None:
        """The walk fed here goes on from a verified prefix (kdump.checks.log.scan_log's
        ``prior``): the batch before the first one fed ended at ``prev_last`` (None: none),
        and the greatest max timestamp before it is ``max_timestamp``."""
        self._state = _replaced(
            self._state,
            has_prev=int(prev_last is not None),
            prev_last=0 if prev_last is None else prev_last,
            before=max_timestamp,
        )

    @classmethod
    def growing(cls, positions: int = 0, offsets: int = 0) -> IndexGather:
        """A gather whose keys come during the walk (``want``), as a rebuild makes its index
        entries: the rows of the new index files, gathered by the walk that makes them.
        ``positions``/``offsets``: room for that many keys of each, made once (the most the
        index files can hold: room not written to costs nothing), more made when exceeded."""
        gather = cls(None, None)
        gather._growing = True
        gather._position_room = _room(positions, or_else=0)
        gather._offset_room = _room(offsets, or_else=0)
        return gather

    def __getstate__(self) -> dict[str, object]:
        # to another process (a --jobs worker's result): the rows filled, not the mapping
        state = dict(self.__dict__)
        rooms = {"_position_room": self.position_rows, "_offset_room": self.offset_rows}
        for name, rows in rooms.items():
            state[name] = array("q")
            state[name].frombytes(rows.cast("B"))
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._position_room = memoryview(self._position_room)
        self._offset_room = memoryview(self._offset_room)

    def want(self, positions: Sequence[int], offsets: Sequence[int]) -> None:
        """More keys, above those given before, each before the walk feeds the batch it names.
        An offset whose batch has gone by can still be named when it is the last one that
        raised the max timestamp (a time index entry names that batch when the entry is made
        after it); any other late key leaves the gather incomplete."""
        if not self.complete:
            return
        if positions and positions[0] <= self._fed_position:
            self.complete = False  # its batch went by: a position is named by its own batch
            return
        if self._grow(positions, self.wanted_positions):
            self._position_room = _room_for(self._position_room, len(self.wanted_positions))
        # the keys whose batches went by come first (keys are sorted); one at most can be
        # named, the one a time index entry made after that batch names
        fed, fed_last = self._state.has_prev, self._state.prev_last
        late = 0
        while fed and late < len(offsets) and offsets[late] <= fed_last:
            late += 1
        if late > 1 or (late and not self._late_row(offsets[0])):
            self.complete = False
            return
        if self._grow(offsets[late:], self.wanted_offsets):
            self._offset_room = _room_for(self._offset_room, len(self.wanted_offsets))

    def _grow(self, keys: Sequence[int], wanted: array[int]) -> bool:
        """Keys (sorted, distinct: index_keys) after ``wanted``; whether they were (the caller
        makes a row of room each)."""
        if keys and wanted and keys[0] <= wanted[-1]:
            self.complete = False
            return False
        wanted.extend(keys)
        return True

    def _late_row(self, offset: int) -> bool:
        """The row of ``offset`` from the last batch that raised the max timestamp, if that
        batch is the first whose last offset reaches it; whether it was."""
        s = self._state
        wanted = self.wanted_offsets
        if (
            not (s.has_raised and s.rising and s.raised_prev_last < offset <= s.raised_last)
            or s.cursor_o != len(wanted)
            or (wanted and offset <= wanted[-1])
        ):
            return False
        self.wanted_offsets.append(offset)
        self._offset_room = _room_for(self._offset_room, s.orow_n + 1)
        self._offset_room[ROW * s.orow_n : ROW * (s.orow_n + 1)] = array(
            "q", (offset, s.raised_base, s.raised_last, s.raised_max_ts, s.raised_before)
        )
        self._state = _replaced(s, cursor_o=s.cursor_o + 1, orow_n=s.orow_n + 1)
        return True

    @property
    def position_rows(self) -> memoryview:
        return memoryview(self._position_room)[: ROW * self._state.prow_n]

    @property
    def offset_rows(self) -> memoryview:
        return memoryview(self._offset_room)[: ROW * self._state.orow_n]

    def feed(self, run: BatchRun) -> None:
        if not (self.wanted_positions or self.wanted_offsets or self._growing):
            return
        if run.n:
            self._fed_position = run.position[-1]
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
        s = self._state
        cursor_p, has_prev, prev_last, cursor_o = s.cursor_p, s.has_prev, s.prev_last, s.cursor_o
        before, prow_n, orow_n, rising = s.before, s.prow_n, s.orow_n, s.rising
        has_raised, r_base, r_last = s.has_raised, s.raised_base, s.raised_last
        r_max_ts, r_before, r_prev_last = s.raised_max_ts, s.raised_before, s.raised_prev_last
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
            if max_ts > before:
                has_raised, r_base, r_last, r_max_ts, r_before = 1, base, last, max_ts, before
                r_prev_last = prev_last if has_prev else speedups.INT64_MIN
                before = max_ts
            if has_prev and last <= prev_last:
                rising = 0
            has_prev, prev_last = 1, last
        self._state = GatherState(
            cursor_p=cursor_p, has_prev=has_prev, prev_last=prev_last, cursor_o=cursor_o,
            before=before, prow_n=prow_n, orow_n=orow_n, has_raised=has_raised,
            raised_base=r_base, raised_last=r_last, raised_max_ts=r_max_ts,
            raised_before=r_before, raised_prev_last=r_prev_last, rising=rising,
        )  # fmt: skip

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


def _room(rows: int, or_else: int | None = None) -> memoryview:
    """Room for ``rows`` rows, zeros. Large room is an anonymous mapping: the kernel makes
    its pages only as rows are written (in 2 MiB pages where it can), so room for every key an
    index can name costs what the rows written cost. Zeroing an array of 5 MiB of rows (a
    1 GiB segment's two indexes) instead took ~4 ms of page faults; growing one by doubling as
    a rebuild made entries, ~16 ms. Where no mapping can be had (a strict overcommit policy),
    an array of ``or_else`` rows (default: ``rows``) that ``_room_for`` grows."""
    size = ROW * rows * 8
    if size and size >= MAPPED_ROOM:
        try:
            return _mapped_room(size)
        except OSError:
            rows = rows if or_else is None else or_else
    return memoryview(array("q", [0]) * (ROW * rows))


def _mapped_room(size: int) -> memoryview:
    if not sys.platform.startswith("linux"):  # zero pages on demand there too
        return memoryview(mmap.mmap(-1, size)).cast("q")
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE
    room = mmap.mmap(-1, size, flags=flags)
    with contextlib.suppress(AttributeError, OSError):  # no transparent huge pages: 4 KiB
        room.madvise(mmap.MADV_HUGEPAGE)
    return memoryview(room).cast("q")


def _room_for(room: memoryview, rows: int) -> memoryview:
    """``room``, or where it has fewer than ``rows`` rows, room for twice as many (at least
    ``rows``) holding what it held."""
    if ROW * rows <= len(room):
        return room
    grown = _room(max(rows, 2 * len(room) // ROW))
    grown[: len(room)] = room
    return grown
