"""Every entry point of kdump._speedups given arguments it must refuse or bound, each call in a
child process: it gives what entry_points.py says (ok, or the exception), never a crash."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hostile.entry_points import ENTRY_POINTS, PRELUDE
from kdump import speedups

native = speedups.native()
pytestmark = pytest.mark.skipif(native is None, reason="kdump's C code is not built here")

CALLS = [(call, want) for rows in ENTRY_POINTS.values() for call, want in rows]


def _result_type(name: str) -> bool:
    """A named result the entry points hand back (WalkedRun...): made by them, never called."""
    found = getattr(native, name)
    return isinstance(found, type) and issubclass(found, tuple)


def test_every_entry_point_has_its_rows() -> None:
    assert native is not None
    entry_points = {
        n
        for n in dir(native)
        if not n.startswith("_") and callable(getattr(native, n)) and not _result_type(n)
    }
    assert entry_points - {"Record"} == set(ENTRY_POINTS)


def test_entry_points_refuse_or_bound_what_they_are_given() -> None:
    """All calls in one child each (a crash names its call); 0.1 s a child."""
    code = PRELUDE + "\nimport sys\nprint(outcome(lambda: exec(sys.argv[1], globals())))"
    got = {}
    for call, _ in CALLS:
        ran = subprocess.run([sys.executable, "-c", code, call], capture_output=True, text=True)
        got[call] = ran.stdout.strip() if ran.returncode == 0 else f"exit {ran.returncode}"
    assert got == dict(CALLS)
