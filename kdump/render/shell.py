"""Commands kdump prints for a person to run: as this host runs kdump, with paths quoted.

A finding's fix is stored as ``kdump recover DIR`` (JSON keeps that form: a fleet's results
are read on other hosts). Printed for a person it starts the way kdump was started here: where
the host has no ``kdump`` command but the one-file build (``python3 kdump.pyz ...``), a fix that
says ``kdump ...`` would fail as pasted.
"""

from __future__ import annotations

import os
import shlex
import sys

PROGRAM = "kdump"
"""How a command kdump stores names kdump."""

ONE_FILE_SUFFIX = ".pyz"
"""The one-file build (scripts/build_pyz.py): Python runs it as ``python3 kdump.pyz``, with the
archive as ``sys.argv[0]``."""


def program() -> str:
    """``kdump``, or, run from the one-file build, this Python and the archive (absolute: the
    command then works from any directory)."""
    started = sys.argv[0] if sys.argv else ""
    if not started.endswith(ONE_FILE_SUFFIX):
        return PROGRAM
    return shlex.join([sys.executable or "python3", os.path.abspath(started)])


def runnable(command: str) -> str:
    """A stored ``kdump ...`` command as this host runs it (other commands as they are)."""
    head, space, rest = command.partition(" ")
    if head != PROGRAM or not space:
        return command
    return f"{program()} {rest}"


def shell_word(text: str) -> str:
    """``text`` as one word of a POSIX shell command line (a path with a space or a quote in
    its name pastes as that one path)."""
    return shlex.quote(text)


__all__ = ["ONE_FILE_SUFFIX", "PROGRAM", "program", "runnable", "shell_word"]
