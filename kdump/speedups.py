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
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from kdump import _speedups

    class Native:
        """kdump._speedups as native() hands it back. A module cannot be named as a type; a
        class of its members can: each is the module's own, typed by kdump/_speedups.pyi, so
        mypy checks every call through native() against the stub."""

        HARDWARE_CRC = _speedups.HARDWARE_CRC
        WALK_COLUMNS = _speedups.WALK_COLUMNS
        RECORD_FIELDS = _speedups.RECORD_FIELDS
        RECORD_FAULTS = _speedups.RECORD_FAULTS
        CrcShare = _speedups.CrcShare
        hardware_crc = staticmethod(_speedups.hardware_crc)
        set_hardware_crc = staticmethod(_speedups.set_hardware_crc)
        crc32c = staticmethod(_speedups.crc32c)
        advise = staticmethod(_speedups.advise)
        start_writeback = staticmethod(_speedups.start_writeback)
        cached_pages = staticmethod(_speedups.cached_pages)
        mincore = staticmethod(_speedups.mincore)
        walk_v2 = staticmethod(_speedups.walk_v2)
        column_range = staticmethod(_speedups.column_range)
        count_masked = staticmethod(_speedups.count_masked)
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
        CLEAN_STATS = _speedups.CLEAN_STATS
        omap_put = staticmethod(_speedups.omap_put)
        omap_get = staticmethod(_speedups.omap_get)
        omap_put_records = staticmethod(_speedups.omap_put_records)
        omap_put_run = staticmethod(_speedups.omap_put_run)
        clean_run = staticmethod(_speedups.clean_run)
        clean_records = staticmethod(_speedups.clean_records)


def _load() -> tuple[Native | None, str]:
    """The C module, or None and why not (``kdump --version`` says it)."""
    if os.environ.get("KDUMP_PURE_PYTHON"):
        return None, "KDUMP_PURE_PYTHON is set"
    try:
        # not `from kdump import _speedups`: a module that is not there would raise a plain
        # ImportError, as one that is there but fails to load does
        import kdump._speedups as _speedups
    except ModuleNotFoundError:  # installed where no C compiler was (from the sdist, say)
        return None, "not built: this install has no C module"
    except ImportError as e:  # built for another Python or machine (a copied site-packages)
        return None, f"built for another Python or machine: {e}"
    return cast("Native", _speedups), ""  # the members Native names are the module's


_module, _why_off = _load()
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


def start_writeback(fd: int) -> None:
    """Have the kernel start writing ``fd``'s dirty pages back now, not waiting: a head start
    for the fsync that follows, which alone makes them durable. Without the C module (or off
    Linux) the fsync does all of it."""
    if _module is not None:
        _module.start_writeback(fd)  # an error only leaves the work to the fsync


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def fits_int64(*values: int) -> bool:
    """Whether values can cross into the C code, whose integers are int64. Beyond that (a
    segment file named past 2^63-1, say) the Python code takes the whole case."""
    return all(INT64_MIN <= v <= INT64_MAX for v in values)


def describe() -> str:
    """One line for ``kdump --version``, reports and benchmarks: which code runs, and which
    CRC-32C."""
    why = why_off()
    if why is not None:
        return f"off, pure Python ({why}); CRC-32C: {python_crc()}"
    return f"C; CRC-32C: {c_crc()}"


def why_off() -> str | None:
    """Why the C paths are off (None where they run)."""
    if _module is None:
        return _why_off
    return None if _enabled else "switched off"


def c_crc() -> str:
    """Which CRC-32C the C code runs: the processor's instructions (SSE4.2 on x86-64, the CRC
    extension of ARMv8) where the module was built with them and the processor has them."""
    assert _module is not None
    if _module.hardware_crc():
        return f"{_module.HARDWARE_CRC} instructions"
    if _module.HARDWARE_CRC is None:
        return "software (this build has no CRC instructions for this processor)"
    return f"software (this processor has no {_module.HARDWARE_CRC} CRC instructions)"


def python_crc() -> str:
    """Which CRC-32C the Python code runs (kdump.crc.python_crc32c)."""
    try:
        import crc32c
    except ImportError:  # pragma: no cover - where the package has no wheel
        return "crcmod's tables (software, slow)"
    return "the crc32c package, " + ("hardware" if crc32c.hardware_based else "software")


def how_to_enable() -> str | None:
    """Where the C paths are off for the process: how to get them, in one line (None where
    they are loaded). The distribution is kafka-kdump ("kdump" on PyPI is another project)."""
    if _module is not None:
        return None
    if os.environ.get("KDUMP_PURE_PYTHON"):
        return "unset KDUMP_PURE_PYTHON"
    from kdump import __version__

    # scripts/build-dist.sh's wheels: the stable-ABI build from 3.11 on, its own for 3.10
    tag = "cp310-cp310" if sys.version_info < (3, 11) else "cp311-abi3"
    wheel = f"kafka_kdump-{__version__}-{tag}-manylinux*_{os.uname().machine}.whl"
    return (
        f"pip install --force-reinstall --only-binary kafka-kdump 'kafka-kdump=={__version__}' "
        f"(a release's wheel for this Python and machine, built with them; or its file, {wheel}), "
        "or run kdump.pyz on x86-64 Linux; or reinstall where a C compiler and Python's headers "
        "are (Debian: apt install gcc python3-dev)"
    )
