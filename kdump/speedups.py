"""The one switch between kdump's optional C fast paths (kdump/_speedups.c) and its Python code.

The Python code in kdump.format and kdump.checks is the reference: each C function takes only
the common, well-formed case and hands everything else back, so results are the same either way
(tests/test_speedups.py compares the two on the same bytes). Callers ask ``native()`` at the
start of a unit of work (a run of batches, an index walk) and take the Python path on None.

``KDUMP_PURE_PYTHON=1`` in the environment turns the C paths off for a process;
``pure_python()`` does it for a block of code; ``software_crc()`` makes the C code compute
CRC-32C with its own table-driven code, as on processors without CRC instructions.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any


def _load() -> ModuleType | None:
    if os.environ.get("KDUMP_PURE_PYTHON"):
        return None
    try:
        from kdump import _speedups
    except ImportError:  # pragma: no cover - a build without a C compiler
        return None
    return _speedups


_module = _load()
_enabled = _module is not None


def native() -> Any:
    """The compiled module, or None where the Python code must run (typed Any: the module's
    stub is kdump/_speedups.pyi)."""
    return _module if _enabled else None


def built() -> bool:
    """Whether the C module was built and loaded in this process."""
    return _module is not None


@contextmanager
def pure_python() -> Iterator[None]:
    """Run a block on the Python code alone (the reference the C code is compared with)."""
    global _enabled
    was = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = was


@contextmanager
def software_crc() -> Iterator[None]:
    """Run a block with the C code's own software CRC-32C (what a processor without CRC
    instructions runs), so the test suite covers that path on any machine."""
    if _module is None:
        yield
        return
    was = _module.set_hardware_crc(False)
    try:
        yield
    finally:
        _module.set_hardware_crc(was)


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(*values: int) -> bool:
    """Whether values can cross into the C code, whose integers are int64. Beyond that (a
    segment file named past 2^63-1, say) the Python code takes the whole case."""
    return all(INT64_MIN <= v <= INT64_MAX for v in values)


def describe() -> str:
    """One line for reports and benchmarks: which code runs."""
    if _module is None:
        why = "KDUMP_PURE_PYTHON is set" if os.environ.get("KDUMP_PURE_PYTHON") else "not built"
        return f"off ({why}): pure Python"
    if not _enabled:
        return "off (switched off): pure Python"
    crc = "hardware CRC-32C" if _module.hardware_crc() else "software CRC-32C (no CRC instructions)"
    return f"on ({crc})"
