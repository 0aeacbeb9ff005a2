"""kdump.format.walk: the one walk over a .log, its stop reasons, and a log whose bytes arrive in
ranges (an object store's) walked the same as one read whole."""

from __future__ import annotations

import errno
import itertools
import mmap
import os
import random
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch
from conftest import fixture_logs
from hypothesis import example, given, settings
from hypothesis import strategies as st
from purepython import pure_python

from kdump import parallel, speedups
from kdump.errors import InputError
from kdump.format import walk as walk_module
from kdump.format.walk import (
    MADV_POPULATE_READ,
    BatchRun,
    Damaged,
    LogWalk,
    Pager,
    Producers,
    ReadAhead,
    StopReason,
    flag_batches,
    walk_resync,
)

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
@pytest.mark.parametrize("log", fixture_logs())
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
# zeros then a batch read as one batch whose size field spans the next three (bad CRC): the
# three are found inside its span, not skipped for the batch after it
@example([(b"", b""), (b"", b"\0\0"), (b"", bytes(6)), (b"", bytes(6)), (b"\0", b""), (b"", b"")])
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


# --- read-ahead: a walk over a mapped file pages the next windows in on a thread ---------


def _mapped_log(tmp_path: Path, batches: int, payload: int = 4000) -> Path:
    """A .log of ``batches`` uncompressed v2 batches (independent encoder), one corrupt CRC
    in the middle so the walk's verdicts are not all alike."""
    data = bytearray()
    for i in range(batches):
        data += v2_batch(i, bytes([i % 251]) * payload)
    data[len(data) // 2 + 100] ^= 0xFF
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    return path


def _walk_mapped(path: Path, each_run: Any = None, **kw: Any) -> tuple[list[Any], Any]:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        walk = LogWalk(buf, "seg.log", pager=Pager(buf), **kw)
        rows = []
        for run in walk:
            rows.extend(zip(*run.columns(), strict=True))
            if each_run is not None:
                each_run()
        return rows, walk.stop


def _read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if isinstance(t, ReadAhead)]


def _resident(path: Path) -> int:
    """Resident bytes of this process's mappings of ``path`` (/proc/self/smaps)."""
    total, inside = 0, False
    # names are bytes: another test's mapping may be of a file whose name is not UTF-8
    smaps = Path("/proc/self/smaps").read_bytes().decode("utf-8", "surrogateescape")
    for line in smaps.splitlines():
        fields = line.split()
        if len(fields) >= 5 and "-" in fields[0] and fields[0].replace("-", "").isalnum():
            inside = fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1]) * 1024
    return total


needs_c = pytest.mark.skipif(not speedups.built(), reason="read-ahead needs the C walk")


@pytest.fixture(autouse=True)
def _a_free_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read ahead whatever else the machine runs (kdump.parallel.spare_cpu decides that)."""
    monkeypatch.setattr(parallel, "spare_cpu", lambda: True)


@needs_c
@pytest.mark.parametrize("until_invalid", [False, True])
def test_reading_ahead_changes_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, until_invalid: bool
) -> None:
    """Walked through a read-ahead thread (64 KiB windows over 4 MiB), the columns and the stop
    are those of the same bytes walked whole, by C and by Python; the thread runs during the
    walk and is gone after it."""
    monkeypatch.setattr(Pager, "window", 64 << 10)
    path = _mapped_log(tmp_path, 1000)
    seen: list[int] = []
    got = _walk_mapped(
        path, lambda: seen.append(len(_read_ahead_threads())), until_invalid=until_invalid
    )
    assert max(seen) == 1 and not _read_ahead_threads()
    data = path.read_bytes()
    want = walked(data, until_invalid=until_invalid)
    assert (got[0], got[1]._replace(error=None)) == want
    with pure_python():
        assert _walk_mapped(path, until_invalid=until_invalid)[0] == want[0]


@needs_c
@pytest.mark.parametrize("populate", [True, False], ids=["populate", "kernel-without-it"])
def test_reading_ahead_keeps_memory_flat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, populate: bool
) -> None:
    """Over a 32 MiB log in 1 MiB windows, at most the window walked, the windows read ahead
    and the one being released are resident at any run; where the kernel refuses
    MADV_POPULATE_READ (an advice it does not know) the walk reads by page faults alone."""
    monkeypatch.setattr(Pager, "window", 1 << 20)
    if not populate:
        monkeypatch.setattr(walk_module, "MADV_POPULATE_READ", 0x7FFF)
    path = _mapped_log(tmp_path, 8000)
    peaks: list[int] = []
    rows, stop = _walk_mapped(path, lambda: peaks.append(_resident(path)))
    assert len(rows) == 8000 and stop.reason is StopReason.END
    assert len(peaks) > 20 and max(peaks) <= (ReadAhead.AHEAD + 2) * Pager.window


FOLIO = 2 << 20
"""The largest folio of the page cache here (x86_64): a fault can map a whole one, so what is
resident reaches up to one past the last byte read."""


@needs_c
def test_a_read_ahead_the_kernel_refuses_leaves_the_releasing_to_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel refuses MADV_POPULATE_READ (before 5.14) the thread ends at once and
    the walk releases all it has passed at each window, as a walk alone does."""
    monkeypatch.setattr(Pager, "window", 4 << 20)
    monkeypatch.setattr(walk_module, "MADV_POPULATE_READ", 0x7FFF)
    path = _mapped_log(tmp_path, 12000)
    peaks: list[int] = []
    rows, stop = _walk_mapped(path, lambda: peaks.append(_resident(path)))
    assert len(rows) == 12000 and stop.reason is StopReason.END
    assert len(peaks) > 8 and max(peaks) <= Pager.window + FOLIO


@needs_c
@pytest.mark.parametrize("read_ahead", [True, False], ids=["read-ahead", "alone"])
def test_a_walk_left_early_leaves_nothing_resident(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: bool
) -> None:
    """A walk its reader leaves after a few runs (a lookup that found its batch, a recovery
    that stops) releases what it passed and what its thread paged in ahead of it."""
    monkeypatch.setattr(Pager, "window", 1 << 20)
    monkeypatch.setattr(parallel, "spare_cpu", lambda: read_ahead)
    path = _mapped_log(tmp_path, 8000)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        runs = iter(LogWalk(buf, "seg.log", pager=Pager(buf)))
        for _ in range(6):
            next(runs)
        assert _resident(path) > 0
        runs.close()  # __iter__'s finally: the pager closes
        assert not _read_ahead_threads()
        assert _resident(path) <= FOLIO  # past the last batch read, a folio's pages at most


class _SlowPopulate:
    """The C module, with a read-ahead that pages in slower than the walk goes (a busy CPU)."""

    def __init__(self, native: Any) -> None:
        self.native = native

    def __getattr__(self, name: str) -> Any:
        return getattr(self.native, name)

    def advise(self, buf: Any, start: int, end: int, advice: int) -> int:
        if advice == walk_module.MADV_POPULATE_READ:
            time.sleep(0.01)
        return int(self.native.advise(buf, start, end, advice))


@needs_c
def test_a_read_ahead_overtaken_by_the_walk_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-ahead slower than the walk pages in windows the walk has passed (and released)
    by then: the walk releases them again, so memory stays flat and nothing of the log stays
    resident once the walk is done."""
    monkeypatch.setattr(Pager, "window", 1 << 20)
    slow = _SlowPopulate(speedups.native())
    monkeypatch.setattr(walk_module.speedups, "native", lambda: slow)
    path = _mapped_log(tmp_path, 8000)
    peaks: list[int] = []
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        walk = LogWalk(buf, "seg.log", pager=Pager(buf))
        for _run in walk:
            peaks.append(_resident(path))
        after = _resident(path)
    assert walk.stop is not None and walk.stop.reason is StopReason.END
    # the windows walked, read ahead and being released, and one the walk overtook (released
    # at the walk's next window), not a window more for each one overtaken
    assert max(peaks) <= (ReadAhead.AHEAD + 4) * Pager.window
    assert after <= Pager.window


class _CountedReleases:
    """The C module, counting which thread hands pages back (MADV_DONTNEED) and how much."""

    def __init__(self, native: Any) -> None:
        self.native = native
        self.released: dict[str, int] = {}
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.native, name)

    def advise(self, buf: Any, start: int, end: int, advice: int) -> int:
        if advice == mmap.MADV_DONTNEED:
            with self.lock:
                who = "read-ahead" if isinstance(threading.current_thread(), ReadAhead) else "walk"
                self.released[who] = self.released.get(who, 0) + end - start
        return int(self.native.advise(buf, start, end, advice))


@needs_c
def test_the_read_ahead_releases_what_the_walk_passed_while_it_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nothing to page in, the read-ahead thread hands back the windows the walk has
    passed (the walk meanwhile checks CRCs); the walk's own thread releases only what lies
    more than a window behind it, and the rest at the end (but the file's last, partial page),
    every byte walked released once, whichever thread did it."""
    monkeypatch.setattr(Pager, "window", 1 << 20)
    counted = _CountedReleases(speedups.native())
    monkeypatch.setattr(walk_module.speedups, "native", lambda: counted)
    path = _mapped_log(tmp_path, 8000)
    peaks: list[int] = []

    def consumer_takes_its_time() -> None:  # the thread is idle: it releases
        time.sleep(0.002)
        peaks.append(_resident(path))

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        walk = LogWalk(buf, "seg.log", pager=Pager(buf))
        for _run in walk:
            consumer_takes_its_time()
        after = _resident(path)
    assert walk.stop is not None and walk.stop.reason is StopReason.END
    assert counted.released.get("read-ahead", 0) > path.stat().st_size // 2
    assert sum(counted.released.values()) <= path.stat().st_size + Pager.window
    assert max(peaks) <= (ReadAhead.AHEAD + 2) * Pager.window and after <= mmap.PAGESIZE


# --- a walk's CRCs shared with its read-ahead thread (CrcShare) ---------------------------

_SHARED_BATCHES = [v2_batch(i, bytes([i % 251]) * (3000 + 97 * (i % 13))) for i in range(400)]
_SHARED_LOG = b"".join(_SHARED_BATCHES)
"""~1.3 MiB of batches of unequal sizes (independent encoder): runs longer than the thread's
lag behind the header pass (SHARE_LAG_BYTES), so it checks some of their CRCs."""
_SHARED_STARTS = [0, *itertools.accumulate(map(len, _SHARED_BATCHES))]


class _Helper(threading.Thread):
    """A read-ahead thread with no window to page in: it only takes CRC slices."""

    def __init__(self, share: Any) -> None:
        super().__init__(daemon=True)
        self.share, self.done = share, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            self.share.help(self.share.kicks())


needs_share = pytest.mark.skipif(
    not hasattr(speedups.native(), "CrcShare"), reason="CRC sharing needs the C module's threads"
)


@needs_share
@given(
    st.sets(st.integers(0, len(_SHARED_LOG) - 1), max_size=6),
    st.integers(0, 39),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_shared_crcs_give_the_same_verdicts(
    flips: set[int], start_batch: int, until_invalid: bool
) -> None:
    """walk_v2 with its CRCs shared with a helping thread gives the columns, verdicts and next
    position of walk_v2 alone, whichever bytes are flipped (header bytes end the walk early
    in both), from any batch on, stopping before the first bad CRC or not."""
    native = speedups.native()
    data = bytearray(_SHARED_LOG)
    for at in flips:
        data[at] ^= 0x5A
    start = _SHARED_STARTS[start_batch]
    share = native.CrcShare()
    helper = _Helper(share)
    helper.start()
    try:
        for _ in range(3):
            args = (bytes(data), start, len(data), len(data), 2**31 - 1, 4096, True, until_invalid)
            shared, alone = native.walk_v2(*args, share), native.walk_v2(*args)
            assert shared == alone
            assert shared.columns.facts == alone.columns.facts  # failed CRCs counted by both
    finally:
        helper.done.set()
        share.close()
        helper.join()
    assert share.counts()[0] == 3  # every run of a walk given a share is opened there


@needs_share
def test_close_ends_help_whenever_it_comes() -> None:
    """A thread in ``help`` waits awake a while before it sleeps; a close at any moment of that
    wait, or after it, ends ``help`` (a close missed while it was awake left the read-ahead
    thread asleep for ever, and the walk's ``finish`` joining it)."""
    native = speedups.native()
    rng = random.Random(29)
    for _ in range(300):
        share = native.CrcShare()
        helper = threading.Thread(target=share.help, args=(share.kicks(),), daemon=True)
        helper.start()
        deadline = time.perf_counter() + rng.uniform(0, 400e-6)
        while time.perf_counter() < deadline:
            pass
        share.close()
        helper.join(timeout=10)
        assert not helper.is_alive()


@needs_share
def test_two_walks_given_one_share_each_get_their_own_verdicts() -> None:
    """A share holds one walk's run at a time (issue 27 point 10): a second walk given the same
    share while a run is posted checks its own CRCs. A run posted over another let the first
    walk return, its CRCs unchecked, while the helping thread still read its buffer."""
    native = speedups.native()
    other = b"".join(v2_batch(i + 7, bytes([i % 13]) * (2000 + 31 * (i % 7))) for i in range(600))
    logs = [_SHARED_LOG, other]
    alone = [native.walk_v2(log, 0, len(log), len(log), 2**31 - 1, 4096, True, False)
             for log in logs]  # fmt: skip
    share = native.CrcShare()
    helper = _Helper(share)
    helper.start()
    got: list[list[Any]] = [[], []]

    def walk(k: int) -> None:
        log = logs[k]
        for _ in range(150):
            got[k].append(native.walk_v2(log, 0, len(log), len(log), 2**31 - 1, 4096, True,
                                         False, share))  # fmt: skip

    walkers = [threading.Thread(target=walk, args=(k,), daemon=True) for k in (0, 1)]
    try:
        for w in walkers:
            w.start()
        for w in walkers:
            w.join(timeout=60)  # runs posted over each other could also wait for ever
        assert not any(w.is_alive() for w in walkers)
    finally:
        helper.done.set()
        share.close()
        helper.join()
    for k in (0, 1):
        assert all(run == alone[k] for run in got[k])


@needs_share
def test_the_read_ahead_takes_a_share_of_the_crcs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a 16 MiB log in 2 MiB windows, with CRCs failing here and there, a walk through the
    read-ahead thread shares its runs' CRCs with it (the thread checks some of them, within a
    few walks) and gives the rows and stop of the same bytes walked whole."""
    monkeypatch.setattr(Pager, "window", 2 << 20)
    path = _mapped_log(tmp_path, 4000)
    data = bytearray(path.read_bytes())
    for at in range(500_000, len(data), 3_000_000):
        data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    shares: list[Any] = []
    real = Pager.share

    def noted(pager: Pager) -> Any:
        share = real.fget(pager)  # type: ignore[attr-defined]
        if share is not None:
            shares.append(share)
        return share

    monkeypatch.setattr(Pager, "share", property(noted))
    want = walked(bytes(data))
    for _ in range(20):
        got = _walk_mapped(path)
        assert (got[0], got[1]._replace(error=None)) == want
        if any(share.counts()[1] for share in shares):
            break
    assert any(share.counts()[0] for share in shares)
    assert any(share.counts()[1] for share in shares), "the thread never took a slice"


@needs_c
def test_a_walk_left_early_stops_reading_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Pager, "window", 64 << 10)
    path = _mapped_log(tmp_path, 1000)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        for _ in LogWalk(buf, "seg.log", pager=Pager(buf)):
            assert len(_read_ahead_threads()) == 1
            break
        assert not _read_ahead_threads()


@needs_c
def test_a_map_closed_under_the_read_ahead_ends_it_quietly(tmp_path: Path) -> None:
    path = _mapped_log(tmp_path, 100)
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    ahead = ReadAhead(speedups.native(), buf, 0, len(buf), 64 << 10)
    ahead.reached(200_000)
    buf.close()
    ahead.run()  # no exception: the thread would print none
    assert ahead.filled == 200_000  # caught up with the walk; nothing paged in past it


@needs_c
def test_advise_reports_the_kernels_errno(tmp_path: Path) -> None:
    """The kernel's refusal comes back as its errno: MADV_POPULATE_READ over pages the file no
    longer has (truncated under the map) is EFAULT, or EINVAL on a kernel before 5.14."""
    path = _mapped_log(tmp_path, 10)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        native = speedups.native()
        assert native.advise(buf, 0, len(buf), mmap.MADV_DONTNEED) == 0
        os.truncate(path, 0)
        assert native.advise(buf, 0, len(buf), MADV_POPULATE_READ) in (errno.EFAULT, errno.EINVAL)
        assert native.advise(buf, 10, 10, MADV_POPULATE_READ) == 0  # nothing to advise


@needs_c
def test_advise_takes_only_a_memory_map_and_the_advice_kdump_gives(tmp_path: Path) -> None:
    """Issue 27 point 10: MADV_DONTNEED given over a bytes object's pages zeroed the heap around
    it (a crash); advice beyond kdump's own (MADV_REMOVE frees a shared map's file blocks)."""
    native = speedups.native()
    for not_a_map in (b"x" * 100, bytearray(1 << 16), memoryview(b"x" * 8192)):
        with pytest.raises(TypeError, match=r"must be an mmap\.mmap"):
            native.advise(not_a_map, 0, 10**12, mmap.MADV_DONTNEED)
    with mmap.mmap(-1, 8192) as buf, pytest.raises(ValueError, match="advice 9 is not one"):
        native.advise(buf, 0, 8192, 9)


@needs_c
@given(
    st.lists(
        st.tuples(
            st.sampled_from([1, 1, 1, 1, 0, 2, -3]),  # the step from the last offset before
            st.integers(0, 3),  # last offset delta
            st.sampled_from([5, 5, 5, 6]),  # partition leader epoch
            st.sampled_from([-1, -1, 7]),  # producer id
            st.sampled_from([0, 0, 0x10, 0x20]),  # transactional, control
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from([0, 100, 2**31 - 30, 2**63 - 80]),
    st.sampled_from([0, 100, 2**31 - 60]),
    st.one_of(st.none(), st.integers(0, 39)),
    st.sampled_from(list(Producers)),
    st.tuples(st.booleans(), st.integers(-5, 120), st.sampled_from([5, 6])),
)
@settings(max_examples=300, deadline=None)
def test_a_plain_run_is_flagged_as_any_run(
    shapes: list[tuple[int, int, int, int, int]],
    first: int,
    segment_base: int,
    flip: int | None,
    producers: Producers,
    carried: tuple[bool, int, int],
) -> None:
    """flag_batches' short way for a run walk_v2 saw as plain (RunFacts) flags what the long
    way flags over the same columns: gaps, offsets going back, epochs changing, producer
    batches, failed CRCs, offsets past 2^31-1 from the segment's base, the carried state."""
    native = speedups.native()
    batches, last = [], first - 1
    for step, delta, epoch, producer_id, attributes in shapes:
        base = last + step
        if not -(2**63) <= base <= 2**63 - 1 - delta:
            break
        batch = bytearray(
            v2_batch(base, b"r", attributes=attributes, producer_id=producer_id,
                     last_offset_delta=delta)
        )  # fmt: skip
        struct.pack_into(">i", batch, 12, epoch)  # outside the CRC
        batches.append(bytes(batch))
        last = base + delta
    log = bytearray(b"".join(batches))
    if flip is not None and flip < len(batches):
        log[sum(map(len, batches[: flip + 1])) - 1] ^= 1  # a record byte: its CRC fails
    walked = native.walk_v2(bytes(log), 0, len(log), len(log), 2**31 - 1, 64, True, False)
    run = BatchRun.from_native(walked.n, walked.columns)
    long_way = BatchRun(run.n, run.columns())
    assert run.facts is not None and long_way.facts is None
    has_prev, back, epoch = carried
    prev_last = max(-(2**63), run.base_offset[0] - 1 - back)
    want = flag_batches(long_way, segment_base, has_prev, prev_last, epoch, producers)
    assert flag_batches(run, segment_base, has_prev, prev_last, epoch, producers) == want
