"""How kdump reads local files on a live broker: the one place that decides what a read leaves in
the page cache and how fast it goes (``ReadPolicy``).

Page-cache neutral (issue 30; KIP-824 / KAFKA-13687: a dump tool reading whole segments evicts
the pages the broker serves from): before a file is read, ``mincore`` says which of its pages
are resident; as the walk passes a window, and when the file is closed, the pages it brought in
are dropped (``POSIX_FADV_DONTNEED``), never one that was resident before. As the ``nocache``
tool does, with the same blind spot: a page the broker itself reads in while kdump walks past is
dropped too.

``cachestat`` and ``mincore`` are the C module's (kdump._speedups); without it, the same calls
through ctypes (kdump.storage.libc), loaded then only: ctypes costs a short run 2 ms to import.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kdump import speedups
from kdump.errors import BudgetSpent
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from types import ModuleType

PAGE = mmap.PAGESIZE


_budget_local = threading.local()


class Budget:
    """--budget: when a run stops reading (kdump verify). A segment is not begun after the
    deadline, and one being read is left at its next read (``check``, from ``charge``), its
    rate limit's wait cut short: a run under a budget ends near it whatever --max-io-rate
    says (issue 39 point 7). The run's first segment is read whole whatever the budget
    (``reading(must_finish=True)``), so that runs under any budget get through a log dir.

    The deadline is on the monotonic clock, the system's: the same in a --jobs worker."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.deadline = clock() + seconds

    def __getstate__(self) -> dict[str, Any]:
        return {"deadline": self.deadline}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.clock, self.deadline = time.monotonic, state["deadline"]

    def left(self) -> float:
        return self.deadline - self.clock()

    def spent(self) -> bool:
        return self.left() <= 0

    def reading(self, must_finish: bool) -> _Reading:
        """This thread reads one segment now: ``must_finish``, whatever the budget."""
        return _Reading(must_finish)

    def check(self) -> None:
        """Raise BudgetSpent where this thread's segment is to be left now."""
        if not getattr(_budget_local, "must_finish", True) and self.spent():
            raise BudgetSpent()


class _Reading:
    def __init__(self, must_finish: bool) -> None:
        self.must_finish = must_finish

    def __enter__(self) -> None:
        self.before = getattr(_budget_local, "must_finish", True)
        _budget_local.must_finish = self.must_finish

    def __exit__(self, *exc: object) -> None:
        _budget_local.must_finish = self.before


class ReadPolicy(NamedTuple):
    """What reading a local file may cost the broker beside it.

    ``keep_cache``: leave what was read in the page cache (--keep-cache; every command but
    verify). ``max_io_rate``: bytes per second this process reads at most (--max-io-rate).
    ``budget``: when the run stops reading (--budget).
    """

    keep_cache: bool = True
    max_io_rate: int | None = None
    throttle: RateLimit | None = None
    budget: Budget | None = None

    @classmethod
    def live(
        cls, keep_cache: bool = False, max_io_rate: int | None = None, budget_ms: int | None = None
    ) -> ReadPolicy:
        """A policy for reading beside a running broker (verify's default: cache neutral)."""
        limit = RateLimit(max_io_rate) if max_io_rate else None
        budget = None if budget_ms is None else Budget(budget_ms / 1000)
        return cls(keep_cache, max_io_rate, limit, budget)

    def guard(
        self, fd: int, size: int, within: list[tuple[int, int]] | None = None
    ) -> CacheGuard | None:
        """What drops the pages a read of the open file ``fd`` brings in (None: keep them);
        ``within``: the byte ranges the reads stay in (else the whole file)."""
        if self.keep_cache or size == 0:
            return None
        return CacheGuard.open(fd, size, within)

    def blind_to(self, path: str | os.PathLike[str]) -> bool:
        """Whether this policy would drop pages but the kernel will not say which pages of
        ``path`` are cached (then it drops none)."""
        if self.keep_cache:
            return False
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return False  # the read says why
        try:
            return not _may_see_cache(fd)
        finally:
            os.close(fd)

    def charge(self, n: int) -> None:
        """``n`` more bytes were read: wait as long as the rate asks; raise BudgetSpent where
        the budget is spent (the wait ends at its deadline)."""
        budget = self.budget
        if budget is not None:
            budget.check()
        if self.throttle is not None:
            self.throttle.take(n, budget)


KEEP = ReadPolicy()
"""Read as any program does: what is read stays cached, as fast as the disk goes."""


class RateLimit:
    """A rate over the whole run (not a burst allowance): after ``n`` bytes in all, at least
    ``n / rate`` seconds have passed since it was made. Shared by the run's threads; the
    processes ``--jobs`` forks (kdump.parallel) each take an equal share of it."""

    def __init__(
        self,
        rate: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if rate <= 0:
            raise ValueError(f"rate must be positive, not {rate}")
        self.rate, self.clock, self.sleep = rate, clock, sleep or _pause
        self.started = clock()
        self.taken = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._share = float(rate)

    def __getstate__(self) -> dict[str, Any]:
        return {"rate": self.rate}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["rate"])  # type: ignore[misc]

    def take(self, n: int, budget: Budget | None = None) -> None:
        """``n`` more bytes were read: return once the run is no faster than the rate. With a
        ``budget``, the wait is cut at its deadline, where ``budget.check`` decides."""
        with self._lock:
            if os.getpid() != self._pid:  # a forked worker: its share, from now
                from kdump.parallel import run_processes

                self._pid, self.started, self.taken = os.getpid(), self.clock(), 0
                self._share = self.rate / max(1, run_processes())
            self.taken += n
            due = self.started + self.taken / self._share
        while (wait := due - self.clock()) > 0:
            if budget is not None and 0 < budget.left() < wait:
                self.sleep(budget.left())
                budget.check()  # past the deadline: left here, or read on (must finish)
                continue
            self.sleep(wait)


def _pause(seconds: float) -> None:
    """A wait a stopped run ends at once, in its worker threads too (kdump.parallel.pause):
    Ctrl-C at --max-io-rate stops within a second, not when the segments being read are."""
    from kdump.parallel import pause

    pause(seconds)


class CacheGuard:
    """One open file's pages as they were before kdump read it: ``release`` drops from the page
    cache what lies in a range and was not resident then."""

    def __init__(
        self,
        fd: int,
        size: int,
        uncached: list[tuple[int, int]],
        watched: list[tuple[int, int]] | None = None,
    ) -> None:
        self.fd, self.size = fd, size
        self.uncached = uncached
        """Byte ranges (page aligned) that were not resident before the read, in order."""
        self.watched = [(0, size)] if watched is None else watched
        """The page-aligned byte ranges whose residency was asked (the reads stay in them)."""
        self._starts = [s for s, _ in uncached]

    @classmethod
    def open(
        cls, fd: int, size: int, within: list[tuple[int, int]] | None = None
    ) -> CacheGuard | None:
        """A guard over ``fd`` (its own descriptor, duplicated), or None where the kernel will
        not say what is resident (then nothing is dropped). ``within``: the byte ranges the
        reads stay in; only their pages are asked about (a few headers of a 1 GiB segment
        cost a page's mincore each, not the file's)."""
        watched = [(0, size)] if within is None else _page_ranges(within, size)
        uncached = []
        for lo, hi in watched:
            resident = resident_pages(fd, hi - lo, lo)
            if resident is None:
                return None
            uncached += [(lo + a, lo + b) for a, b in uncached_ranges(resident)]
        return cls(os.dup(fd), size, uncached, None if within is None else watched)

    def release(self, start: int, end: int) -> None:
        """Drop the pages of ``[start, end)`` that were not resident before. The caller has
        unmapped them first: the kernel keeps a page some mapping still holds."""
        if self.fd < 0:
            return
        i = max(0, bisect_right(self._starts, start) - 1)
        for lo, hi in self.uncached[i:]:
            if lo >= end:
                break
            lo, hi = max(lo, start), min(hi, end)
            if hi > lo:
                os.posix_fadvise(self.fd, lo, hi - lo, os.POSIX_FADV_DONTNEED)

    def close(self) -> None:
        """Drop every page the reads brought in (the file's map is gone), and the descriptor."""
        if self.fd < 0:
            return
        try:
            for _ in range(_ROUNDS):
                self.release(0, self.size + PAGE)
                left = self._left_cached()
                if not left:
                    break
                self._wait_for_reads(left)
        finally:
            os.close(self.fd)
            self.fd = -1

    def _left_cached(self) -> list[tuple[int, int]]:
        """The runs of pages not resident before that are resident now."""
        if not self.uncached:
            return []  # all were resident: there is nothing to ask about
        left = []
        size = os.fstat(self.fd).st_size
        for start, end in self.watched:
            resident = resident_pages(self.fd, min(end, size) - start, start)
            if resident is None:
                return []
            flags = resident.translate(_LOW_BIT)
            for lo, hi in self.uncached:
                lo, hi = max(lo, start) - start, min(hi, end) - start
                for m in re.compile(_PRESENT).finditer(
                    flags, lo // PAGE, min(hi // PAGE, len(flags))
                ):
                    left.append((start + m.start() * PAGE, start + m.end() * PAGE))
        return left

    def _wait_for_reads(self, ranges: list[tuple[int, int]]) -> None:
        """Wait for the kernel's reads of these pages to end: a page it is still reading ahead
        is locked, and DONTNEED passes it by. A read of it waits for the lock; through a
        descriptor of its own advised RANDOM, it starts no read-ahead of its own."""
        fd = os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for lo, hi in ranges:
                for at in range(lo, hi, PAGE):
                    os.pread(fd, 1, at)
        finally:
            os.close(fd)


_ROUNDS = 3
"""Drops of what a closed file's reads left cached (read-ahead in flight), at most."""


def _page_ranges(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """``ranges`` widened to whole pages, cut at ``size``, merged, in order (none empty)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        lo, hi = start // PAGE * PAGE, min(size, -(-end // PAGE) * PAGE)
        if hi <= lo:
            continue
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def uncached_ranges(resident: bytes) -> list[tuple[int, int]]:
    """The byte ranges whose pages ``resident`` (mincore's vector) marks absent, page aligned.
    Nothing past the file's size when it was opened: a read never goes there (the map ends at
    that size), and what lies there is what the broker appended since, the pages its consumers
    read next."""
    # bit 0 is the page's residency; the other bits are reserved (mincore(2))
    flags = resident.translate(_LOW_BIT)
    return [(m.start() * PAGE, m.end() * PAGE) for m in re.finditer(_ABSENT, flags)]


_LOW_BIT = bytes(b & 1 for b in range(256))
# compiled (and cached) by re when first used: a run that watches no pages compiles neither
_ABSENT = b"\x00+"
_PRESENT = b"\x01+"


def resident_pages(fd: int, size: int, start: int = 0) -> bytes | None:
    """The residency of ``size`` bytes of the file ``fd`` from ``start`` (page aligned), as
    mincore(2) gives it: a byte per page, bit 0 set where the page is in the page cache; None
    where the answer cannot be trusted.

    Since Linux 5.2 (CVE-2019-5489) mincore reports the page cache of a file mapping only to a
    process that owns the file or may write it (``can_do_mincore``); to any other it says every
    page is resident, whatever is. That answer is no answer: it is not asked.
    """
    if size <= 0 or not _may_see_cache(fd):
        return None
    calls = _system()
    if calls is None:
        return None
    counted = _counted_residency(calls, fd, start, size)
    return counted if counted is not None else calls.mincore(fd, start, size)


_COUNTED_SPAN = 8 << 20
"""The bytes cachestat counts at once: a GiB is 128 counts (0.5 ms), mincore walks it page by
page (19 ms); only a span partly cached is walked."""


def _counted_residency(calls: Any, fd: int, start: int, size: int) -> bytes | None:
    """``resident_pages`` by cachestat's counts of each span: all or none of a span's pages
    cached is answered by the count, a span partly cached by mincore; None without cachestat."""
    vector = []
    for at in range(start, start + size, _COUNTED_SPAN):
        span = min(_COUNTED_SPAN, start + size - at)
        pages = (span + PAGE - 1) // PAGE
        cached = _cached_pages(calls, fd, at, span)
        if cached is None:
            return None
        if cached in (0, pages):
            vector.append((b"\x01" if cached else b"\x00") * pages)
            continue
        walked = calls.mincore(fd, at, span)
        if walked is None:
            return None
        vector.append(walked)
    return b"".join(vector)


def _may_see_cache(fd: int) -> bool:
    """The kernel's can_do_mincore for a file: its owner, a capable process, or a writer."""
    euid = os.geteuid()
    if euid == 0 or os.fstat(fd).st_uid == euid:
        return True
    return os.access(f"/proc/self/fd/{fd}", os.W_OK)


_HAS_CACHESTAT = True


def _cached_pages(calls: Any, fd: int, start: int, size: int) -> int | None:
    """How many pages of ``size`` bytes from ``start`` the page cache holds (cachestat(2),
    which counts a large folio at once), or None where the kernel has no cachestat."""
    global _HAS_CACHESTAT
    if not _HAS_CACHESTAT:
        return None
    cached = calls.cached_pages(fd, start, size)
    if cached < 0:
        if -cached == errno.ENOSYS:
            _HAS_CACHESTAT = False
        return None
    return int(cached)


def _system() -> Any:
    """What answers cachestat and mincore: the C module, else ctypes over libc (None: no
    libc to call)."""
    native = speedups.native()
    if native is not None:
        return native
    return _libc_calls()


def _libc_calls() -> ModuleType | None:
    # ctypes, only where the C module is not there (or turned off): 2 ms of a short run
    from kdump.storage import libc

    return libc if libc.available() else None


def read_ranges(
    path: str | os.PathLike[str], ranges: list[tuple[int, int]], policy: ReadPolicy = KEEP
) -> tuple[os.stat_result, list[bytes]]:
    """The file's status and the bytes of each ``(start, end)`` range (short at its end), read
    as ``policy`` says and without read-ahead (a few headers, not a stream)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        status = os.fstat(fd)
        guard = policy.guard(fd, status.st_size, ranges)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            return status, [os.pread(fd, max(0, end - start), start) for start, end in ranges]
        finally:
            if guard is not None:
                guard.close()
    finally:
        os.close(fd)


def residency(path: str | os.PathLike[str]) -> bytes | None:
    """A byte per page of the file ``path``: 1 where the page is in the page cache now, else 0
    (what tests and bench/ read from outside the process that read the file); None where
    mincore cannot tell."""
    fd = os.open(path, os.O_RDONLY)
    try:
        found = resident_pages(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return None if found is None else found.translate(_LOW_BIT)


def lower_priority() -> list[str]:
    """--nice: this process (and the workers it forks) runs at the lowest CPU priority and in
    the idle I/O class (what ``nice -n 19 ionice -c 3`` gives: disk time only when nobody else
    wants it; the CFQ and BFQ schedulers honour it, mq-deadline and none do not). What could
    not be lowered, in words (a note, not an error)."""
    notes = []
    try:
        os.nice(19 - os.nice(0))
    except OSError as e:
        notes.append(f"CPU priority unchanged: {e.strerror or e}")
    libc = _libc_calls()
    machine = os.uname().machine
    error = None if libc is None else libc.idle_io_priority(machine)
    if libc is None or error == errno.ENOSYS:
        notes.append(f"I/O priority unchanged: no ioprio_set on {machine}")
    elif error:
        notes.append(f"I/O priority unchanged: {os.strerror(error)}")
    return notes


__all__ = [
    "KEEP",
    "CacheGuard",
    "RateLimit",
    "ReadPolicy",
    "lower_priority",
    "read_ranges",
    "residency",
    "resident_pages",
    "uncached_ranges",
]
