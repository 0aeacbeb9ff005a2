"""How a long run tells how far it is: the library reports, the command line draws.

Library functions that walk many files take a ``Progress`` (``NO_PROGRESS`` by default): they
say once how much work lies ahead (``total``, in bytes of ``.log`` read, or tasks) and then, as
each piece is done, how much more is done and what it was (``advance``). Nothing here draws or
imports a terminal library: ``kdump.render.progress_display.progress`` is the one display.
"""

from __future__ import annotations

from typing import Protocol


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
