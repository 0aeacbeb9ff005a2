"""``pure_python()``: kdump with every C fast path off, for comparing the two on the same bytes
(tests/test_speedups.py, fuzz/targets.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import pytest

from kdump import speedups


@contextmanager
def pure_python() -> Iterator[None]:
    """kdump's one switch off (speedups.pure_python), and the C module made to fail if any
    code still reaches it past the switch."""
    mp = pytest.MonkeyPatch()
    module = speedups._module
    assert module is not None

    def called(*args: Any) -> Any:
        raise AssertionError("the C code ran in pure_python()")

    for name in dir(module):
        if callable(getattr(module, name)) and not name.startswith("__"):
            mp.setattr(module, name, called)
    try:
        with speedups.pure_python():
            yield
    finally:
        mp.undo()


def python_if(pure: bool) -> AbstractContextManager[None]:
    """``pure_python()`` when asked for and the C code is there to turn off; else nothing to do
    (a build without the C code, or a suite run with KDUMP_PURE_PYTHON=1, is pure already)."""
    return pure_python() if pure and speedups.built() else nullcontext()
