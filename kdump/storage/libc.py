"""The page cache's system calls through ctypes, where kdump's C module is not there (a build
without a compiler, ``KDUMP_PURE_PYTHON``): cachestat(2) and mincore(2), as
kdump._speedups's ``cached_pages`` and ``mincore`` make them; and ioprio_set(2) for --nice,
which glibc has no wrapper for. Imported only then: ctypes costs a short run 2 ms."""

from __future__ import annotations

import ctypes
import errno
import mmap
from typing import Any

_SYS_CACHESTAT = 451
"""cachestat(2), Linux 6.5+: one number on every architecture (asm-generic's table)."""

IOPRIO_CLASS_IDLE = 3
_IOPRIO_CLASS_SHIFT = 13
_IOPRIO_WHO_PROCESS = 1
_SYS_IOPRIO_SET = {"x86_64": 251, "aarch64": 30, "i686": 289, "armv7l": 314, "ppc64le": 273}
"""ioprio_set's number (linux/ioprio.h, each architecture's syscall table): glibc has no
wrapper and Python no os.ioprio_set."""


class _CachestatRange(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Cachestat(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")
    ]


_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            # the process's own symbols hold libc's: no ctypes.util.find_library, which
            # imports subprocess and runs ldconfig, a tenth of a short run
            libc = ctypes.CDLL(None, use_errno=True)
            libc.mmap.restype = ctypes.c_void_p
            libc.mmap.argtypes = [
                ctypes.c_void_p,
                ctypes.c_size_t,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_int,
                ctypes.c_long,
            ]
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
            _LIBC = libc
        except (OSError, AttributeError):  # no libc with mincore: nothing is dropped
            _LIBC = False
    return _LIBC or None


def available() -> bool:
    """Whether libc's calls can be made here."""
    return _libc() is not None


def cached_pages(fd: int, start: int, size: int) -> int:
    """Pages of the file's bytes [start, start + size) the page cache holds, or -errno."""
    found = _Cachestat()
    span = _CachestatRange(start, size)
    if _libc().syscall(_SYS_CACHESTAT, fd, ctypes.byref(span), ctypes.byref(found), 0) != 0:
        return -ctypes.get_errno()
    return int(found.nr_cache)


def mincore(fd: int, start: int, size: int) -> bytes | None:
    """A byte per page of the file's bytes [start, start + size) (``start`` page aligned), bit
    0 set where cached; None where it cannot be asked."""
    libc = _libc()
    addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
    if addr in (None, ctypes.c_void_p(-1).value):
        return None
    try:
        vec = ctypes.create_string_buffer((size + mmap.PAGESIZE - 1) // mmap.PAGESIZE)
        if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(size), vec) != 0:
            return None
        return vec.raw
    finally:
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(size))


def idle_io_priority(machine: str) -> int:
    """This process into the idle I/O class (``ionice -c 3``): 0, or the errno (ENOSYS where
    this machine's ioprio_set number is not known)."""
    number = _SYS_IOPRIO_SET.get(machine)
    if number is None:
        return errno.ENOSYS
    value = IOPRIO_CLASS_IDLE << _IOPRIO_CLASS_SHIFT
    if _libc().syscall(number, _IOPRIO_WHO_PROCESS, 0, value) != 0:
        return ctypes.get_errno()
    return 0


__all__ = ["available", "cached_pages", "idle_io_priority", "mincore"]
