"""Issue 30: verify beside a live broker: page-cache neutral, throttled, nice, incremental,
resumable within a budget."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batchbytes import v2_batch

from kdump.format.names import LOG_SUFFIX, segment_file_name
from kdump.storage.reading import PAGE, resident_pages, uncached_ranges

MIB = 1 << 20


def _write_log(part: Path, base: int, mib: int, seed: int = 0) -> Path:
    """A .log of ``mib`` MiB of uncompressed 64 KiB v2 batches (the independent encoder)."""
    part.mkdir(parents=True, exist_ok=True)
    payload = 64 * 1024 - 61
    batches = [v2_batch(base + i, bytes([(i + seed) % 251]) * payload) for i in range(mib * 16)]
    path = part / segment_file_name(base, LOG_SUFFIX)
    with open(path, "wb") as f:
        f.write(b"".join(batches))
        f.flush()
        os.fsync(f.fileno())  # dirty pages are not dropped: written back first
    return path


def _resident(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        found = resident_pages(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)
    if found is None:
        pytest.skip(f"{path}: mincore cannot see this file's page cache")
    return bytes(b & 1 for b in found)


def _drop(path: Path, start: int = 0) -> None:
    for pause in (0.01, 0.05, 0.2, 1.0):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, start, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        if not any(_resident(path)[start // PAGE :]):
            return
        time.sleep(pause)  # read-ahead in flight: its pages are dropped once read
    if any(_resident(path)[start // PAGE :]):
        # tmpfs and overlay upper layers keep pages that have no disk behind them
        pytest.skip(f"{path}: this filesystem keeps its pages cached (tmpfs, overlay?)")


def _kdump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *map(str, args)], capture_output=True, text=True
    )


def _shares(before: bytes, after: bytes) -> tuple[float, float]:
    """Of the pages resident before, the share still resident; of the others, the share now
    resident."""
    kept = [a for b, a in zip(before, after, strict=True) if b]
    added = [a for b, a in zip(before, after, strict=True) if not b]
    return sum(kept) / max(1, len(kept)), sum(added) / max(1, len(added))


@pytest.fixture
def half_cached(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A partition of one 24 MiB segment (three of the walk's windows) whose first half is in
    the page cache (read by this process) and whose second half is not."""
    part = tmp_path / "live-0"
    log = _write_log(part, 0, 24)
    _drop(log)
    with open(log, "rb") as f:
        # no read-ahead: it can land past the half after the read has returned
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_RANDOM)
        f.read(12 * MIB)
    _drop(log, 12 * MIB)
    before = _resident(log)
    assert 0 < sum(before) < len(before)
    return part, log, before


def test_verify_leaves_the_page_cache_as_it_found_it(
    half_cached: tuple[Path, Path, bytes],
) -> None:
    part, log, before = half_cached
    done = _kdump("verify", part, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    kept, added = _shares(before, _resident(log))
    assert kept >= 0.99
    assert added <= 0.02


def test_keep_cache_leaves_what_verify_read_cached(half_cached: tuple[Path, Path, bytes]) -> None:
    part, log, before = half_cached
    done = _kdump("verify", part, "--keep-cache", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    kept, added = _shares(before, _resident(log))
    assert kept >= 0.99
    assert added >= 0.9


def test_uncached_ranges_cover_absent_pages_and_everything_past_the_end() -> None:
    vector = bytes([1, 0, 0, 1, 0b10, 1, 0])  # bits other than bit 0 are reserved
    assert uncached_ranges(vector, 7 * PAGE) == [
        (1 * PAGE, 3 * PAGE),
        (4 * PAGE, 5 * PAGE),
        (6 * PAGE, 1 << 62),
    ]
    assert uncached_ranges(bytes([1, 1]), 2 * PAGE) == [(2 * PAGE, 1 << 62)]
