"""``pure_python()``: kdump with every C fast path off, for comparing the two on the same bytes
(tests/test_speedups.py, fuzz/targets.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
