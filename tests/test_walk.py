"""kdump.format.walk: the one walk over a .log, its stop reasons, and a log whose bytes arrive in
ranges (an object store's) walked the same as one read whole."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from purepython import pure_python

from kdump.errors import InputError
from kdump.format.walk import Damaged, LogWalk, Pager, StopReason, walk_resync

LOGS = sorted(FIXTURES.rglob("*.log"))
RECORD = b"\x0e\x00\x00\x00\x02k\x02v\x00"  # one record: key "k", value "v"


class Drip(Pager):
    """A pager whose bytes arrive ``step`` at a time, as ranged reads of an object would."""

    window = 300

    def __init__(self, buf: bytes, step: int) -> None:
        super().__init__(buf)
        self.size, self.step = len(buf), step
        self.available = min(step, self.size)
        self.asked: list[int] = []

    def ensure(self, end: int) -> int:
        self.asked.append(end)
        while self.available < min(end, self.size):
            self.available = min(self.available + self.step, self.size)
        return self.available


def walked(buf: bytes, pager: Pager | None = None, **kw: Any) -> tuple[list[Any], Any]:
    walk = LogWalk(buf, "seg.log", pager=pager, **kw)
    rows = [row for run in walk for row in zip(*run.columns(), strict=True)]
    assert walk.stop is not None
    return rows, walk.stop._replace(error=None if walk.stop.error is None else str(walk.stop.error))


@pytest.mark.parametrize("step", [1, 61, 1000])
@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_a_log_arriving_in_ranges_walks_as_one_read_whole(log: Path, step: int) -> None:
    data = log.read_bytes()
    whole = walked(data)
    assert walked(data, Drip(data, step)) == whole
    with pure_python():
        assert walked(data, Drip(data, step)) == whole


def test_bytes_that_never_arrive_are_an_input_error() -> None:
    data = v2_batch(0, RECORD) * 3

    class Stuck(Drip):
        def ensure(self, end: int) -> int:
            return self.available

    with pytest.raises(InputError, match="did not arrive"):
        walked(data, Stuck(data, 100))


def test_stop_reasons() -> None:
    one = v2_batch(0, RECORD)
    assert walked(one)[1].reason is StopReason.END
    assert walked(one + one[:20])[1][:3] == (StopReason.TRUNCATED_TAIL, len(one), 20)
    assert walked(one + one[:10])[1].reason is StopReason.TRUNCATED_TAIL  # 17 bytes or fewer
    assert walked(one * 2, end=len(one) + 5)[1][:3] == (StopReason.LIMIT, len(one), 5)
    small = bytearray(one)
    struct.pack_into(">i", small, 8, 13)  # a size below 14
    assert walked(one + bytes(small))[1].reason is StopReason.CORRUPT_BATCH
    magic = bytearray(one)
    magic[16] = 7
    assert walked(one + bytes(magic))[1].reason is StopReason.UNKNOWN_MAGIC
    crc = bytearray(one)
    crc[17] ^= 1
    rows, stop = walked(one + bytes(crc) + one, until_invalid=True)
    assert len(rows) == 1 and stop[:2] == (StopReason.INVALID_BATCH, len(one))
    rows, stop = walked(one + bytes(crc) + one)
    assert [row[-1] for row in rows] == [1, 0, 1] and stop.reason is StopReason.END


# -- walk_resync: finding the footing again after damage (salvage) --------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(min_size=0, max_size=40), st.binary(min_size=0, max_size=30)),
        min_size=1,
        max_size=6,
    )
)
def test_walk_resync_finds_every_whole_valid_batch_between_garbage(
    parts: list[tuple[bytes, bytes]],
) -> None:
    """Batches (independently encoded) separated by garbage and zero runs: every one is found,
    at its position, and the stretches between are the damaged ones."""
    data, want = bytearray(), []
    for i, (payload, garbage) in enumerate(parts):
        batch = v2_batch(100 * i, payload)
        want.append((len(data), 100 * i))
        data += batch
        data += garbage + bytes(len(garbage) % 7)
    got, damaged = [], []
    for part in walk_resync(bytes(data)):
        if isinstance(part, Damaged):
            damaged.append(part)
        else:
            got += [(part.position[i], part.base_offset[i]) for i in range(part.n)]
    # garbage may by chance hold a valid batch only with a matching CRC-32C: never here
    assert got == want
    covered = sorted([(p, p + len(v2_batch(o, parts[o // 100][0]))) for p, o in want] +
                     [(d.start, d.end) for d in damaged])  # fmt: skip
    assert all(a[1] == b[0] for a, b in itertools.pairwise(covered))
    assert not covered or covered[-1][1] == len(data)
