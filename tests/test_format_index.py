"""kdump.format.index: the offset index (.index) from bytes encoded here with struct, not by
kdump: entries, the zero tail, Kafka's search and its probes, the one ordering rule, the
broker's sanity check, the index.interval.bytes rule."""

from __future__ import annotations

import struct

from kdump.format.index import OffsetIndex, SearchType, entry_due

BASE = 100


def index_of(*entries: tuple[int, int], zeros: int = 0) -> OffsetIndex:
    """An offset index of (relative offset, position) entries, then ``zeros`` zero entries."""
    data = b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries) + bytes(8 * zeros)
    return OffsetIndex(data, BASE, "test.index")


def test_entries_are_absolute_and_the_zero_tail_is_not_used() -> None:
    index = index_of((1, 10), (5, 4200), zeros=3)
    assert index.entries == 5 and index.used_entries == 2 and index.zero_tail_entries == 3
    assert index.entry(1) == (105, 4200)
    assert index.positions() == [10, 4200]


def test_search_floor_and_ceiling_with_probes() -> None:
    index = index_of((1, 10), (5, 4200), (9, 9000))
    floor = index.search(BASE + 6)
    assert floor.entry == (105, 4200) and floor.slot == 1
    assert all(p.comparison == (p.entry[0] > 106) - (p.entry[0] < 106) for p in floor.probes)
    assert index.search(BASE, SearchType.FLOOR).entry is None
    assert index.lookup(BASE) == (BASE, 0)  # Kafka's miss: the base offset at position 0
    assert index.search(BASE + 6, SearchType.CEILING).entry == (109, 9000)
    assert index.search(BASE + 10, SearchType.CEILING).entry is None


def test_entries_increase_in_offset_and_position() -> None:
    assert index_of((1, 10), (5, 4200), (9, 9000)).first_out_of_order() is None
    assert index_of((1, 10), (5, 4200), (5, 9000)).first_out_of_order() == 2
    assert index_of((1, 10), (5, 10)).first_out_of_order() == 1
    # the entry before the first, when given, is checked against too
    assert index_of((-1, 10)).first_out_of_order(before=(-1, -1)) == 0
    assert OffsetIndex.follows((1, 10), (2, 11)) and not OffsetIndex.follows((1, 10), (2, 10))


def test_sanity_check_is_weaker_than_the_ordering_rule() -> None:
    out_of_order = index_of((5, 10), (1, 4200), (9, 9000))
    assert out_of_order.first_out_of_order() == 1
    assert out_of_order.sanity_check() is None  # the broker's startup check only looks at the end
    below_base = index_of((1, 10), (-1, 20))
    assert below_base.sanity_check() is not None and "less than the base offset" in str(
        below_base.sanity_check()
    )
    misaligned = OffsetIndex(struct.pack(">ii", 1, 10) + b"\x00\x01", BASE, "test.index")
    assert "multiple of 8" in str(misaligned.sanity_check())


def test_an_entry_is_due_after_more_than_the_interval() -> None:
    assert not entry_due(4096, 4096) and entry_due(4097, 4096)
    assert entry_due(1, 0)  # index.interval.bytes 0: an entry for every batch
