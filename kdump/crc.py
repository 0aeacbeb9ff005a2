"""CRC-32C (magic v2 batches, producer snapshots) and CRC-32 (magic v0/v1 messages).

CRC-32C goes through the hardware-accelerated ``crc32c`` package when it is importable and
falls back to ``crcmod``'s table implementation otherwise; both give the same values.
"""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Callable

from kdump import speedups

Buffer = bytes | bytearray | memoryview | mmap.mmap


def _crcmod_crc32c() -> Callable[[Buffer], int]:
    import crcmod.predefined

    fn = crcmod.predefined.mkPredefinedCrcFun("crc-32c")
    return lambda data: fn(bytes(data))


def _fast_crc32c() -> Callable[[Buffer], int] | None:
    try:
        import crc32c as _crc32c
    except ImportError:  # pragma: no cover - exercised where the wheel is missing
        return None
    return _crc32c.crc32c


crc32c_crcmod: Callable[[Buffer], int] = _crcmod_crc32c()
crc32c: Callable[[Buffer], int] = _fast_crc32c() or crc32c_crcmod


def _crc32c_range_python(buf: Buffer, start: int, end: int) -> int:
    return crc32c(memoryview(buf)[start:end])


def crc32c_range(buf: Buffer, start: int, end: int) -> int:
    """CRC-32C of ``buf[start:end]`` without slicing it: one C call where kdump's C code runs."""
    native = speedups.native()
    if native is None:
        return _crc32c_range_python(buf, start, end)
    return int(native.crc32c(buf, start, end))


def crc32(data: Buffer) -> int:
    """CRC-32 (IEEE), as ``java.util.zip.CRC32`` computes it."""
    return zlib.crc32(data) & 0xFFFFFFFF
