"""The log cleaner's key map (SkimpyOffsetMap), and an exact one for ``--deep``.

SkimpyOffsetMap keeps, in a fixed array of ``memory // 24`` slots, the MD5 hash of a key (16
bytes) and the last offset seen for it (8 bytes); an all-zero slot is empty. The slot of a hash
on attempt ``a`` is ``abs(readIntBE(hash, min(a, 12)) + max(0, a - 12)) % slots``: the first 13
probes read successive 4-byte windows of the hash, then the search goes on linearly. Two keys
with the same MD5 are the same key to it (the older record is dropped): nothing detects that.
The cleaner stops putting keys once ``size`` reaches ``slots * load factor`` and cleans only up to
where the map filled (Cleaner.buildOffsetMapForSegment).

kdump's map has the same slots, hashes and probes, in anonymous memory: touched only where keys
land (in huge pages where the kernel has them), and never more than the size given. The C module
puts and gets (and the cleaner's hot loops fill and read the map there: kdump.log_cleaner); this
code is the reference (tests/test_compact_speedups.py compares the two maps byte for byte).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import mmap
import struct
from collections.abc import Callable
from typing import Any, TypeVar

from kdump import speedups

HASH_SIZE = 16
BYTES_PER_ENTRY = HASH_SIZE + 8
_EMPTY = bytes(BYTES_PER_ENTRY)
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
V = TypeVar("V")
INT_MIN = -(1 << 31)


def _java_int(value: int) -> int:
    return (value + (1 << 31)) % (1 << 32) - (1 << 31)


def _anonymous(size: int) -> mmap.mmap:
    """Private anonymous memory of ``size`` bytes, in huge pages where the kernel gives them: a
    key's slot lies anywhere in the map, and with 4 KiB pages each probe missed the TLB too
    (a shared mapping, mmap's default, is shmem, which the kernel keeps in small pages)."""
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    memory = mmap.mmap(-1, size, flags=flags) if flags else mmap.mmap(-1, size)
    huge = getattr(mmap, "MADV_HUGEPAGE", None)
    if huge is not None:
        with contextlib.suppress(OSError):  # no transparent huge pages here: small ones
            memory.madvise(huge)
    return memory


class SkimpyOffsetMap:
    """Kafka's SkimpyOffsetMap over ``memory`` bytes, MD5 keys."""

    def __init__(self, memory: int, load_factor: float) -> None:
        self.slots = memory // BYTES_PER_ENTRY
        if self.slots < 1:
            raise ValueError(f"an offset map of {memory} bytes has no slot")
        self.max_entries = int(self.slots * load_factor)
        """Cleaner.buildOffsetMapForSegment's maxDesiredMapSize: (int) (slots * loadFactor)."""
        self._bytes = _anonymous(self.slots * BYTES_PER_ENTRY)
        self.entries = 0
        self.latest_offset = -1
        """OffsetMap.latestOffset: the last offset put or passed over (-1: none)."""
        self.native = speedups.native()
        """The C module, when it is there: it puts and gets (None: the code below)."""

    @property
    def buffer(self) -> mmap.mmap:
        """The slots, as the C module reads and writes them."""
        return self._bytes

    @property
    def size(self) -> int:
        return self.entries

    @property
    def memory(self) -> int:
        return self.slots * BYTES_PER_ENTRY

    def _position(self, digest: bytes, attempt: int) -> int:
        window = min(attempt, HASH_SIZE - 4)
        probe = _java_int(_INT.unpack_from(digest, window)[0] + max(0, attempt - HASH_SIZE + 4))
        probe = 0 if probe == INT_MIN else abs(probe)  # Utils.abs
        return (probe % self.slots) * BYTES_PER_ENTRY

    def put(self, key: bytes, offset: int) -> None:
        if self.entries >= self.slots:
            raise ValueError(f"offset map full: {self.entries} entries in {self.slots} slots")
        if self.native is not None:
            self.entries += self.native.omap_put(self._bytes, self.slots, key, offset)
            self.latest_offset = offset
            return
        digest = key_digest(key)
        buf = self._bytes
        attempt = 0
        position = self._position(digest, attempt)
        while buf[position : position + BYTES_PER_ENTRY] != _EMPTY:
            if buf[position : position + HASH_SIZE] == digest:
                _LONG.pack_into(buf, position + HASH_SIZE, offset)
                self.latest_offset = offset
                return
            attempt += 1
            position = self._position(digest, attempt)
        buf[position : position + HASH_SIZE] = digest
        _LONG.pack_into(buf, position + HASH_SIZE, offset)
        self.latest_offset = offset
        self.entries += 1

    def get(self, key: bytes) -> int:
        """The offset stored for ``key``'s hash, or -1."""
        if self.native is not None:
            return self.native.omap_get(self._bytes, self.slots, key)
        digest = key_digest(key)
        buf = self._bytes
        for attempt in range(self.slots + HASH_SIZE - 4):
            position = self._position(digest, attempt)
            if buf[position : position + BYTES_PER_ENTRY] == _EMPTY:
                return -1
            if buf[position : position + HASH_SIZE] == digest:
                return int(_LONG.unpack_from(buf, position + HASH_SIZE)[0])
        return -1

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def close(self) -> None:
        self._bytes.close()


class ExactOffsetMap:
    """``--deep``: the same capacity and rules, keyed by the key bytes themselves (no hash
    collisions), in a dict whose memory grows with the keys."""

    def __init__(self, slots: int, load_factor: float) -> None:
        self.slots = slots
        self.max_entries = int(slots * load_factor)
        self.offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    @property
    def size(self) -> int:
        return len(self.offsets)

    @property
    def memory(self) -> int:
        return self.slots * BYTES_PER_ENTRY

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key] = offset
        self.latest_offset = offset

    def get(self, key: bytes) -> int:
        return self.offsets.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset

    def close(self) -> None:
        self.offsets.clear()


OffsetMap = SkimpyOffsetMap | ExactOffsetMap


try:  # CPython's own MD5: twice the speed of OpenSSL's on keys of a few dozen bytes
    _md5: Callable[[bytes], Any] = importlib.import_module("_md5").md5
except ImportError:  # an interpreter built without it
    _md5 = hashlib.md5


def key_digest(key: bytes) -> bytes:
    """A key's MD5 digest, as the cleaner's map hashes it."""
    return _md5(key).digest()


KEY_BYTES = 128
"""What one key of a ``KeyDigests`` costs, measured in CPython 3.11 (tracemalloc): its digest's
bytes object (49), its dict slot at two-thirds load (about 48) and an int value (32)."""


class KeyDigests(dict[bytes, V]):
    """Keys met, by MD5 digest (the cleaner's identity of a key: two keys with one MD5 are one
    key to SkimpyOffsetMap), each with a value; bounded by ``max_bytes`` counted at
    ``key_bytes`` a key: once that many are held it is ``full`` and ``add`` holds no new key
    (those held are still found). kdump's audits of compacted logs keep their keys here
    (kdump.checks.compacted, kdump.replica_content)."""

    def __init__(self, max_bytes: int, key_bytes: int = KEY_BYTES) -> None:
        super().__init__()
        self.max_keys = max(max_bytes // key_bytes, 1)
        self.full = False

    def add(self, digest: bytes, value: V) -> bool:
        """Hold ``value`` for ``digest``; False (nothing held) when a new key finds it full."""
        if digest not in self and len(self) >= self.max_keys:
            self.full = True
            return False
        self[digest] = value
        return True
