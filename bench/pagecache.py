"""The state of a file's pages in the page cache, which moves verify's limit by up to 3x.

Linux keeps a cached file in folios of 4 KiB up to 2 MiB. Mapping a 2 MiB folio costs one
page-table step; mapping 512 small ones costs 512 (in faults of 16 pages each, and as many
entries to clear when the walk releases them). Measured on this machine class: CRC-32C over a
mapped 1 GiB .log takes ~0.09 s when its pages sit in 2 MiB folios and ~0.21-0.26 s when they
sit in small ones; the CRC is the same, the rest is the kernel's.

Which state a segment is in depends on how its pages came into the cache:

- ``written``: a broker's appends leave the pages its writes made (a few KiB each: small
  folios). The state of a live partition's segments, and of a freshly built bench file.
- ``read-back``: a segment evicted and read again is brought in by the kernel's readahead,
  in folios as large as the readahead window allows (2 MiB ones here: read_ahead_kb 8192).

``huge_share`` reports the state; ``set_state`` puts files into one, so a run is comparable
with another. Both are Linux-only and need transparent huge pages set to ``madvise`` or
``always`` to see 2 MiB folios (else the share reads 0).
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

HUGE = 2 << 20
STATES = ("as-found", "written", "read-back")


def prepare(groups: list[list[Path]], state: str) -> list[float]:
    """``set_state`` over every group's files, then each group's ``huge_share``: in a child
    process, so the mappings and reads leave this process's peak RSS alone (a child's
    ru_maxrss starts from its parent's)."""
    args = [state] + [",".join(map(str, group)) for group in groups]
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return [float(share) for share in out.stdout.split()]


def huge_share(paths: list[Path]) -> float:
    """The share of the files' bytes the kernel maps in 2 MiB pieces (FilePmdMapped), touched
    through a mapping that asks for them (MADV_HUGEPAGE); reading a page not yet cached would
    bring it in, so call this on files already read."""
    mapped = total = 0
    for path in paths:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            buf.madvise(mmap.MADV_HUGEPAGE)
            for at in range(0, len(buf), HUGE):
                buf[at]  # map the folio this byte sits in
            mapped += _pmd_mapped(os.fstat(f.fileno()).st_ino)
            total += len(buf)
    return mapped / total if total else 0.0


def _pmd_mapped(inode: int) -> int:
    """Bytes of this process's mappings of ``inode`` mapped in 2 MiB pieces."""
    mapped, ours = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0]:  # a mapping's first line: range perms offset dev inode path
                ours = len(fields) >= 5 and fields[4] == str(inode)
            elif ours and fields[0] == "FilePmdMapped:":
                mapped += int(fields[1]) * 1024
    return mapped


def set_state(paths: list[Path], state: str) -> None:
    """Put the files' cached pages into ``state`` (see the module's docstring); ``as-found``
    leaves them alone."""
    if state == "as-found":
        return
    for path in paths:
        if state == "written":
            _rewrite(path)
        elif state == "read-back":
            _read_back(path)
        else:
            raise ValueError(f"page-cache state {state!r}: one of {', '.join(STATES)}")


def _rewrite(path: Path, chunk: int = 64 << 20, append: int = 16 << 10) -> None:
    """Write the file's bytes again in 16 KiB appends over evicted pages, as a broker's
    appends made them: the page cache then holds the folios those writes made."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
        size, at = os.fstat(fd).st_size, 0
        while at < size:
            data = os.pread(fd, chunk, at)
            os.posix_fadvise(fd, at, len(data), os.POSIX_FADV_DONTNEED)  # clean: dropped
            for i in range(0, len(data), append):
                os.pwrite(fd, data[i : i + append], at + i)
            at += len(data)
        os.fsync(fd)  # written back now, not during the timings
    finally:
        os.close(fd)


def _read_back(path: Path, chunk: int = 1 << 20) -> None:
    """Evict the file and read it again, as a consumer, a copy or a backup brings a segment
    back: the kernel's readahead makes the folios (2 MiB ones here for ~90 % of the bytes)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, chunk):
            pass
    finally:
        os.close(fd)


if __name__ == "__main__":
    state, *groups = sys.argv[1:]
    files = [[Path(p) for p in group.split(",")] for group in groups]
    set_state([path for group in files for path in group], state)
    print(*(huge_share(group) for group in files))
