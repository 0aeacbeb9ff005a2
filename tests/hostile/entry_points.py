"""Every entry point of kdump/_speedups.c given what it must refuse or bound (issue 27 point 10:
``advise(b'...', 0, 10**12, 4)`` gave MADV_DONTNEED to the heap around a bytes object). Each
row is Python code run in a child (a crash is a signal there, not the end of the test run),
printing what it got: ``ok`` or the name of the exception raised. A new entry point joins by a
row; tests/hostile/test_entry_points.py checks every one the module has is here."""

from __future__ import annotations

PRELUDE = """
import mmap, threading
from array import array
from kdump import _speedups as c

def outcome(call):
    try:
        call()
    except Exception as e:
        return type(e).__name__
    return "ok"

def columns(*rows):
    return tuple(array("q", [row[k] for row in rows]) for k in range(16))

# position, base offset, last offset, size, epoch, magic, crc, attributes, last offset delta,
# base timestamp, max timestamp, producer id, epoch, base sequence, records count, valid
HUGE = columns((2**62, 0, 0, 2**62, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 2**31 - 1, 1))
NEGATIVE = columns((-61, 0, 0, 61, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, -5, 1))
SEVEN = bytes([0x0C, 0, 0, 0, 1, 1, 0])
"""

ENTRY_POINTS: dict[str, list[tuple[str, str]]] = {
    "advise": [
        ("c.advise(b'x' * 100, 0, 10**12, 4)", "TypeError"),  # the review's crash
        ("c.advise(bytearray(1 << 16), 0, 1 << 16, 4)", "TypeError"),
        ("c.advise(memoryview(mmap.mmap(-1, 4096)), 0, 4096, 4)", "TypeError"),
        ("c.advise(mmap.mmap(-1, 8192), -10**12, 10**12, 4)", "ok"),
        ("c.advise(mmap.mmap(-1, 8192), 0, 8192, 9)", "ValueError"),  # MADV_REMOVE
        ("m = mmap.mmap(-1, 4096); m.close(); c.advise(m, 0, 4096, 4)", "ValueError"),
    ],
    "crc32c": [
        ("c.crc32c(b'abc', -10**12, 10**12)", "ok"),
        ("c.crc32c(b'abc', 3, 1)", "ok"),
        ("c.crc32c(object())", "TypeError"),
    ],
    "hardware_crc": [("c.hardware_crc()", "ok")],
    # the page cache's calls: a descriptor that is not open, ranges past the file or negative
    "cached_pages": [
        ("c.cached_pages(-1, 0, 4096)", "ok"),
        ("import tempfile; c.cached_pages(tempfile.TemporaryFile().fileno(), -5, -1)", "ok"),
        ("c.cached_pages(0, 2**63, 1)", "OverflowError"),
        ("c.cached_pages('x', 0, 1)", "TypeError"),
    ],
    # a head start on write-back: any descriptor (closed, a pipe, read-only) gives an errno back
    "start_writeback": [
        ("import errno; assert c.start_writeback(2**30) in (errno.EBADF, errno.ENOSYS)", "ok"),
        ("import errno, os; r, w = os.pipe(); assert c.start_writeback(w) != 0", "ok"),
        ("f = open('/proc/self/exe', 'rb'); assert c.start_writeback(f) == 0", "ok"),
        ("c.start_writeback(-1)", "ValueError"),
        ("c.start_writeback(2**63)", "OverflowError"),
        ("c.start_writeback('x')", "TypeError"),
    ],
    "mincore": [
        ("c.mincore(-1, 0, 4096)", "ok"),
        ("import tempfile; c.mincore(tempfile.TemporaryFile().fileno(), 0, 2**62)", "ok"),
        ("f = open('/proc/self/exe', 'rb'); assert len(c.mincore(f.fileno(), 0, 2**62)) > 0", "ok"),
        ("c.mincore(0, 1, 4096)", "ok"),
        ("c.mincore(0, 0, 2**63)", "OverflowError"),
    ],
    "set_hardware_crc": [("c.set_hardware_crc(c.set_hardware_crc(True))", "ok")],
    "walk_v2": [
        ("c.walk_v2(b'x' * 100, 10**12, 10**12, 10**12, 2**40, 10**9, True, True)", "ok"),
        ("c.walk_v2(b'', -5, -1, -1, -1, -1, True, False)", "ok"),
        ("c.walk_v2(b'\\xff' * 200, 0, 2**62, 2**62, 2**62, 2**62, True, False)", "ok"),
        ("c.walk_v2(b'', 0, 0, 0, 0, 1, True, False, 5)", "TypeError"),
    ],
    "CrcShare": [
        ("s = c.CrcShare(); s.close(); s.help(0); s.kick(); s.counts()", "ok"),
        ("c.CrcShare().help('x')", "TypeError"),
    ],
    "RunColumns": [
        ("c.RunColumns()", "TypeError"),
        (
            "r = c.walk_v2(b'', 0, 0, 0, 10, 10, True, False).columns; memoryview(r); "
            "r.facts; len(r); r.__buffer__(0); r == r; r == 3",
            "ok",
        ),
        ("c.walk_v2(b'', 0, 0, 0, 10, 10, True, False).columns.__buffer__()", "TypeError"),
    ],
    "column_range": [
        ("c.column_range(array('q', [3, 1]), 10**12)", "ok"),
        ("c.column_range(array('q', [3, 1]), -1)", "ok"),
        ("c.column_range(array('i', [1]), 1)", "TypeError"),
    ],
    "count_masked": [
        ("c.count_masked(array('q', [16, -1, 0, 2**62]), 2**63 - 1)", "ok"),
        ("c.count_masked(array('q'), 0x30)", "ok"),
        ("c.count_masked(array('i', [1]), 1)", "TypeError"),
        ("c.count_masked(array('q', [1]), 2**64)", "OverflowError"),
    ],
    "flag_batches": [
        (
            "c.flag_batches(*[array('q', [1] * k) for k in range(7)], 0, True, 2**63 - 1, 0, 2)",
            "ok",
        ),
    ],
    "index_points": [
        (
            "c.index_points(array('q', [2**62]), array('q'), array('q', [1]), -1, -2**63, 0, 0)",
            "ok",
        ),
    ],
    "pack_entries": [
        (
            "c.pack_entries(array('q', [2**62, -1]), array('q', [2**40]), -2**63, False, -1, -1)",
            "ok",
        ),
        ("c.pack_entries(array('q', [1, 2]), array('q', [5, 1]), 0, True, -2**63, 2**62)", "ok"),
    ],
    "index_keys": [
        ("c.index_keys(b'\\0' * 8, 10**12, 2**63 - 1, True)", "ok"),
        ("c.index_keys(b'', -1, 0, False)", "ok"),
    ],
    "gather": [
        (
            "c.gather(*[array('q', [1, 2])] * 4, array('q', [9] * 3), array('q', [1]),"
            " bytearray(7), bytearray(8),"
            " c.GatherState((10**6, 0, 0, -5, 0, 10**6, -1, 0, 0, 0, 0, 0, 0, 1)))",
            "ok",
        ),
        # a state read by name: a bare tuple has no names
        (
            "c.gather(*[array('q', [1, 2])] * 4, array('q', [9] * 3), array('q', [1]),"
            " bytearray(7), bytearray(8), (0,) * 14)",
            "TypeError",
        ),
        ("c.gather(*[array('q', [1])] * 6, b'\\0' * 40, bytearray(40), (0,) * 14)", "BufferError"),
    ],
    "offset_index_check": [
        ("c.offset_index_check(b'\\0' * 16, 10**12, 2**63 - 1, array('q', [1, 2]), -1, -1)", "ok"),
    ],
    "time_index_check": [
        ("c.time_index_check(b'\\xff' * 24, 10**12, 2**63 - 1, array('q', [1] * 3))", "ok"),
    ],
    "render_batches": [
        ("c.render_batches(b'x' * 100, HUGE, 0, False, 'b', '{offset}', 1, 1, -1, 1 << 20)", "ok"),
        (
            "c.render_batches(b'x' * 100, NEGATIVE, -7, True, '{}', '{offset}', 9, -9, -1, -1)",
            "ValueError",
        ),
        ("c.render_batches(b'x' * 100, NEGATIVE, 0, True, 'b', '{offset}', 9, -9, -1, -1)", "ok"),
        ("c.render_batches(b'x' * 100, HUGE, 0, False, 'b', '{offset}', 1, 1, -1, 9, -5)", "ok"),
    ],
    "render_payload": [
        ("c.render_payload(SEVEN, HUGE, 0, False, 'b', '{offset}', 1, 1, -1, 0, 2**62, 1)", "ok"),
        ("c.render_payload(SEVEN, HUGE, 0, False, 'b', '{offset}', 1, 1, -1, 10**12)", "ok"),
        ("c.render_payload(SEVEN, HUGE, 0, False, 'b', '{offset}', 1, 1, -1, -1)", "ValueError"),
        ("c.render_payload(SEVEN, HUGE, 5, False, 'b', '{offset}', 1, 1, -1)", "IndexError"),
        ("c.render_payload(SEVEN, NEGATIVE, 0, True, 'b', '{offset}', 1, 1, -1, 0, 0, -9)", "ok"),
        ("c.render_payload(SEVEN, HUGE, 0, True, 'b', '{value}', 4, 4, -1, 0, 0, 9, -1)", "ok"),
        ("c.render_payload(SEVEN, HUGE, 0, True, 'b', '{value}', 4, 4, -1, 0, 2**62, 1)", "ok"),
    ],
    "java_utf8": [
        ("assert c.java_utf8(b'\\xed\\xa0\\x80' * 4096) == '\\ufffd'.encode() * 4096", "ok"),
        ("c.java_utf8(b'')", "ok"),
        ("c.java_utf8(mmap.mmap(-1, 4096))", "ok"),
        ("c.java_utf8(object())", "TypeError"),
        ("m = mmap.mmap(-1, 4096); m.close(); c.java_utf8(m)", "ValueError"),
    ],
    "deep_check": [
        ("c.deep_check(b'x' * 100, HUGE, 0, None)", "ok"),
        ("c.deep_check(b'x' * 100, HUGE, 0, SEVEN)", "ok"),
        ("c.deep_check(b'', NEGATIVE, 10**12, None)", "ok"),
    ],
    "set_record_class": [("c.set_record_class(5)", "TypeError")],
    "v2_records": [
        ("c.v2_records(b'', 2**62, 0, 0, None, -1, tuple, tuple)", "ok"),
        ("c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, tuple, -1)", "ValueError"),
        ("c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, tuple, 8)", "ValueError"),
        ("c.v2_records(SEVEN, 9, 0, 0, None, -1, tuple, tuple, 0, 2**62, -1)", "ValueError"),
        ("c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, int)", "TypeError"),
        ("c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, tuple, 0, 0, 9, 9, -1)", "ValueError"),
        ("c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, tuple, 0, 0, 9, 9, 0)", "ok"),
        # a C record before kdump.format.records gave the Python Record it prints as
        ("repr(c.v2_records(SEVEN, 1, 0, 0, None, -1, tuple, tuple)[0][0])", "RuntimeError"),
    ],
    "omap_put": [
        ("c.omap_put(bytearray(48), 2, b'k', 5)", "ok"),
        ("c.omap_put(b'x' * 48, 2, b'k', 5)", "BufferError"),  # a map it may not write
        ("c.omap_put(bytearray(48), 3, b'k', 5)", "ValueError"),  # more slots than bytes
        ("c.omap_put(bytearray(48), 0, b'k', 5)", "ValueError"),
        (
            "m = bytearray(48); c.omap_put(m, 2, b'a', 1); c.omap_put(m, 2, b'b', 2); "
            "c.omap_put(m, 2, b'c', 3)",
            "ValueError",
        ),  # full: it must not probe forever
    ],
    "omap_get": [
        ("c.omap_get(bytearray(24 * 5), 5, b'k' * 10**6)", "ok"),
        ("c.omap_get(bytearray(48), 2**62, b'k')", "ValueError"),
        ("c.omap_get(bytearray(b'\\xff' * 48), 2, b'k')", "ok"),  # every slot another key's
    ],
    "omap_put_records": [
        ("c.omap_put_records(bytearray(48), 2, 10**9, 0, SEVEN, 2**62, 0, 0, None, 0)", "ok"),
        ("c.omap_put_records(bytearray(48), 2, 10**9, 0, SEVEN, -5, 0, 0, None, 0)", "ok"),
        ("c.omap_put_records(bytearray(48), 2, 10**9, 0, SEVEN, 1, 0, 0, 'x', 0)", "TypeError"),
    ],
    "omap_put_run": [
        ("c.omap_put_run(b'\\xff' * 200, 0, 2**62, bytearray(48), 2, 2**62, 0, 0)", "ok"),
        ("c.omap_put_run(b'x' * 100, -10**12, 10**12, bytearray(48), 2, 1, 0, 0)", "ok"),
        ("c.omap_put_run(b'', 0, 0, b'x' * 48, 2, 1, 0, 0)", "BufferError"),
    ],
    "clean_run": [
        ("c.clean_run(b'\\xff' * 200, 0, 2**62, bytearray(48), 2, 2**62, 0, 0, 0, 2**62)", "ok"),
        ("c.clean_run(b'x' * 100, -10**12, 10**12, bytearray(48), 2, 0, 0, 0, 0, -1)", "ok"),
        ("c.clean_run(b'', 0, 0, bytearray(8), 2, 0, 0, 0, 0, 1)", "ValueError"),
    ],
    "clean_records": [
        ("c.clean_records(SEVEN, 2**62, 0, 0, None, bytearray(48), 2, 0, 0, None, 0)", "ok"),
        ("c.clean_records(SEVEN, 2**31, 0, 0, None, bytearray(48), 2, 10, 0, None, 0)", "ok"),
        ("c.clean_records(SEVEN, 1, 0, 0, None, bytearray(48), 2, 10, 0, 'x', 0)", "TypeError"),
    ],
}
"""Entry point -> (a call, what it must give). Not imported here: kdump.format.records (it
sets the Record class), so the last row sees the module as a caller of it alone would."""
