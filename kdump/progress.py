"""How a long run tells how far it is: the library reports, the command line draws.

Library functions that walk many files take a ``Progress`` (``NO_PROGRESS`` by default): they
say once how much work lies ahead (``total``, in bytes of ``.log`` read, or tasks) and then, as
each piece is done, how much more is done and what it was (``advance``). Nothing here draws or
imports a terminal library: ``kdump.render.progress.progress`` is the one display.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from kdump.storage.remote import is_url

LOG_SUFFIX = ".log"


class Progress(Protocol):
    def total(self, amount: int) -> None:
        """The work ahead, in the display's unit (bytes unless it says otherwise)."""

    def advance(self, amount: int, what: str) -> None:
        """``amount`` more is done; ``what`` names the file or partition just finished."""


class _NoProgress:
    def total(self, amount: int) -> None:
        pass

    def advance(self, amount: int, what: str) -> None:
        pass


NO_PROGRESS: Progress = _NoProgress()


def file_size(path: str | os.PathLike[str]) -> int:
    """Bytes of a file, 0 when it cannot be read (the work itself says why), or a URL."""
    if is_url(path):
        return 0  # an object's size costs a request; the work reports it
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def log_bytes(directory: str | os.PathLike[str], only: Iterable[int] | None = None) -> int:
    """Bytes of the ``.log`` files of a partition directory (of segments ``only``): the work a
    walk of that partition does, measured from its directory listing alone."""
    wanted = None if only is None else set(only)
    total = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not name.endswith(LOG_SUFFIX) or not name[:20].isdigit():
            continue
        if wanted is not None and int(name[:20]) not in wanted:
            continue
        with contextlib.suppress(OSError):
            total += entry.stat(follow_symlinks=False).st_size
    return total


def partitions_bytes(directories: Iterable[Path]) -> int:
    return sum(log_bytes(d) for d in directories)
