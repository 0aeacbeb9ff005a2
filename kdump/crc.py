"""CRC-32C (magic v2 batches, producer snapshots) and CRC-32 (magic v0/v1 messages).

CRC-32C runs in kdump's C code where it is built (kdump.speedups), else through the
hardware-accelerated ``crc32c`` package, else ``crcmod``'s tables; all give the same values.
The packages are imported only when the Python path first needs one (start-up stays short).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from functools import cache

from kdump import speedups

Buffer = bytes | bytearray | memoryview | mmap.mmap


def crc32c_crcmod(data: Buffer) -> int:
    """CRC-32C by crcmod's tables: the reference the others are tested against."""
    return _crcmod()(bytes(data))


@cache
def _crcmod() -> Callable[[bytes], int]:
    import crcmod.predefined

    return crcmod.predefined.mkPredefinedCrcFun("crc-32c")


@cache
def python_crc32c() -> Callable[[Buffer], int]:
    """The Python path's CRC-32C: the ``crc32c`` package, or crcmod where it is missing."""
    try:
        import crc32c as package
    except ImportError:  # pragma: no cover - exercised where the wheel is missing
        return crc32c_crcmod
    return package.crc32c


def crc32c(data: Buffer) -> int:
    """CRC-32C of ``data``."""
    native = speedups.native()
    if native is None:
        return python_crc32c()(data)
    return native.crc32c(data)


def crc32c_range(buf: Buffer, start: int, end: int) -> int:
    """CRC-32C of ``buf[start:end]`` without slicing it: one C call where kdump's C code runs."""
    native = speedups.native()
    if native is None:
        return python_crc32c()(memoryview(buf)[start:end])
    return native.crc32c(buf, start, end)


def crc32(data: Buffer) -> int:
    """CRC-32 (IEEE), as ``java.util.zip.CRC32`` computes it."""
    import zlib  # magic v0/v1 messages only: a run over v2 batches starts without it

    return zlib.crc32(data) & 0xFFFFFFFF
