"""kdump's optional C fast paths (kdump/_speedups.c), or None where they were not built.

The pure-Python code in kdump.format and kdump.checks is the reference: the C functions do
only the common, well-formed case and hand everything else back to it, so results are the
same either way. ``KDUMP_PURE_PYTHON=1`` in the environment turns the C paths off.
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("KDUMP_PURE_PYTHON"):
        return None
    try:
        from kdump import _speedups
    except ImportError:  # pragma: no cover - a build without a C compiler
        return None
    return _speedups


native = _load()
"""The compiled module, or None."""

hardware_crc = bool(native is not None and native.HARDWARE_CRC)
"""Whether the C code computes CRC-32C in hardware; where it cannot, the ``crc32c`` package
(which knows more processors) does the CRCs and the C scan of verify stays off."""

native_crc = native if hardware_crc else None
"""The compiled module where its CRC-32C runs in hardware: for the paths that check CRCs."""


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(*values: int) -> bool:
    """Whether values can cross into the C code, whose integers are int64. Beyond that (a
    segment file named past 2^63-1, say) the Python code takes the whole case."""
    return all(INT64_MIN <= v <= INT64_MAX for v in values)


def describe() -> str:
    """One line for reports and benchmarks: which code runs."""
    if native is None:
        why = "KDUMP_PURE_PYTHON is set" if os.environ.get("KDUMP_PURE_PYTHON") else "not built"
        return f"off ({why}): pure Python"
    crc = "hardware CRC-32C" if hardware_crc else "CRC-32C by the crc32c package"
    return f"on ({crc})"
