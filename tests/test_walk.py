"""kdump.format.walk: the one walk over a .log, its stop reasons, and a log whose bytes arrive in
ranges (an object store's) walked the same as one read whole."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch
from conftest import FIXTURES
from purepython import pure_python

from kdump.errors import InputError
from kdump.format.walk import LogWalk, Pager, StopReason

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
