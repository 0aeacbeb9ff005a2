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
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from kdump import _speedups

    class Native:
        """kdump._speedups as native() hands it back. A module cannot be named as a type; a
        class of its members can: each is the module's own, typed by kdump/_speedups.pyi, so
        mypy checks every call through native() against the stub."""

        WALK_COLUMNS = _speedups.WALK_COLUMNS
        RECORD_FIELDS = _speedups.RECORD_FIELDS
        RECORD_FAULTS = _speedups.RECORD_FAULTS
        CrcShare = _speedups.CrcShare
        hardware_crc = staticmethod(_speedups.hardware_crc)
        set_hardware_crc = staticmethod(_speedups.set_hardware_crc)
        crc32c = staticmethod(_speedups.crc32c)
        advise = staticmethod(_speedups.advise)
        walk_v2 = staticmethod(_speedups.walk_v2)
        column_range = staticmethod(_speedups.column_range)
        flag_batches = staticmethod(_speedups.flag_batches)
        index_keys = staticmethod(_speedups.index_keys)
        gather = staticmethod(_speedups.gather)
        offset_index_check = staticmethod(_speedups.offset_index_check)
        time_index_check = staticmethod(_speedups.time_index_check)
        pack_entries = staticmethod(_speedups.pack_entries)
        index_points = staticmethod(_speedups.index_points)
        render_batches = staticmethod(_speedups.render_batches)
        render_payload = staticmethod(_speedups.render_payload)
        deep_check = staticmethod(_speedups.deep_check)
        set_record_class = staticmethod(_speedups.set_record_class)
        v2_records = staticmethod(_speedups.v2_records)


def _load() -> Native | None:
    if os.environ.get("KDUMP_PURE_PYTHON"):
        return None
    try:
        from kdump import _speedups
    except ImportError:  # pragma: no cover - a build without a C compiler
        return None
    return cast("Native", _speedups)  # the members Native names are the module's


_module = _load()
_enabled = _module is not None


def native() -> Native | None:
    """The compiled module, or None where the Python code must run."""
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
    """One line for ``kdump --version`` and benchmarks: which code runs."""
    if _module is None:
        why = "KDUMP_PURE_PYTHON is set" if os.environ.get("KDUMP_PURE_PYTHON") else "not built"
        return f"off ({why}): pure Python"
    if not _enabled:
        return "off (switched off): pure Python"
    crc = "hardware CRC-32C" if _module.hardware_crc() else "software CRC-32C (no CRC instructions)"
    return f"on ({crc})"
