"""Ctrl-C and SIGTERM held back while a repair commits or rolls back, so that it stops between
two files, never inside one step's bookkeeping, and says where it stopped.

Whatever the process does with those signals (raise KeyboardInterrupt, raise from a SIGTERM
handler, die) it does when the held section ends: the signals caught meanwhile are raised
again, in order, with the process's own handlers back in place.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass
class Held:
    caught: list[int] = field(default_factory=list)

    def catch(self, signum: int, frame: FrameType | None) -> None:
        self.caught.append(signum)

    def pending(self) -> bool:
        """A signal came: the work should stop at its next safe point."""
        return bool(self.caught)

    @property
    def name(self) -> str:
        return signal.Signals(self.caught[0]).name if self.caught else ""


@contextmanager
def signals_held() -> Iterator[Held]:
    """Hold SIGINT, SIGTERM and SIGHUP back for the ``with`` block; raise them at its end.

    Only the main thread may set handlers: elsewhere nothing is held (``pending`` stays
    False). A handler set outside Python, or an ignored signal, is left alone.
    """
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    saved = {}
    for signum in HELD:
        before = signal.getsignal(signum)
        if before is None or before == signal.SIG_IGN:
            continue
        saved[signum] = signal.signal(signum, held.catch)
    try:
        yield held
    finally:
        for signum, before in saved.items():
            signal.signal(signum, before)
        for caught in dict.fromkeys(held.caught):
            signal.raise_signal(caught)


__all__ = ["HELD", "Held", "signals_held"]
