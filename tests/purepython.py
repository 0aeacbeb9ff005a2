"""``pure_python()``: kdump with every C fast path off, for comparing the two on the same bytes
(tests/test_speedups.py, fuzz/targets.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kdump import speedups
from kdump.crc import _crc32c_range_python
from kdump.format import batch as batch_module
from kdump.format.batch import RecordBatch


@contextmanager
def pure_python() -> Iterator[None]:
    """Every kdump module's C hooks off, and the C module itself made to fail if called."""
    mp = pytest.MonkeyPatch()
    for name, module in list(sys.modules.items()):
        if not name.startswith("kdump") or name == "kdump._speedups":
            continue
        if hasattr(module, "_native"):
            mp.setattr(module, "_native", None)
        if hasattr(module, "crc32c_range"):
            mp.setattr(module, "crc32c_range", _crc32c_range_python)
    mp.setattr(RecordBatch, "is_valid", batch_module._is_valid_python)
    native = speedups.native
    assert native is not None

    def called(*args: Any) -> Any:
        raise AssertionError("the C code ran in pure_python()")

    for name in dir(native):
        if callable(getattr(native, name)) and not name.startswith("__"):
            mp.setattr(native, name, called)
    try:
        yield
    finally:
        mp.undo()
