"""kdump.format.timeindex: the time index (.timeindex) from bytes encoded here with struct:
entries, Kafka's lookup and its miss, the ordering rule, the broker's sanity check."""

from __future__ import annotations

import struct

from kdump.format.timeindex import TimeIndex

BASE = 100


def time_index_of(*entries: tuple[int, int], zeros: int = 0) -> TimeIndex:
    data = b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries) + bytes(12 * zeros)
    return TimeIndex(data, BASE, "test.timeindex")


def test_entries_lookup_and_miss() -> None:
    index = time_index_of((1000, 1), (2000, 4), (3000, 4), zeros=2)
    assert index.used_entries == 3 and index.entry(1) == (2000, 104)
    assert index.lookup(2500, 3) == (2000, 104)
    assert index.lookup(10, 3) == (-1, BASE)  # no entry at or below: (-1, base offset)
    assert index.search(2500).probes  # the search keeps the slots it compared


def test_timestamps_rise_offsets_never_fall() -> None:
    assert time_index_of((1000, 1), (2000, 1)).first_out_of_order() is None  # same offset: fine
    assert time_index_of((1000, 1), (1000, 2)).first_out_of_order() == 1
    assert time_index_of((1000, 3), (2000, 2)).first_out_of_order() == 1
    assert TimeIndex.follows((1, 5), (2, 5)) and not TimeIndex.follows((1, 5), (2, 4))


def test_sanity_check() -> None:
    assert time_index_of((1000, 1), (2000, 4)).sanity_check() is None
    assert time_index_of((2000, 4), (1000, 1)).first_out_of_order() == 1
