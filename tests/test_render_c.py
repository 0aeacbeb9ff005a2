"""The C renderer of dump lines (render_batches, render_payload) against the Python templates.

Every distinct fixture log and hypothesis-made batches (any header bits, keys and values that
are not UTF-8, control characters, quotes, headers, compression, damage) are dumped twice, as
text and as JSON Lines, under every option that changes a line: with the C code and with
``pure_python()``. The bytes on standard output and the problems reported must be the same.
"""

from __future__ import annotations

import gc
import os
import struct
from pathlib import Path
from typing import Any

import pytest
from batchbytes import fix_crc, v2_batch, varint
from conftest import ORACLE, fixture_logs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from purepython import pure_python

from kdump import speedups
from kdump.format.filters import BatchFilter, Range
from kdump.releases import Release
from kdump.render.describe import DECODERS
from kdump.render.dump_segments import ERR, Chunk, DumpOptions, DumpProblems, dump_files
from kdump.render.fields import _BATCH_VALUES, _RECORD_TEXT, _RECORD_VALUES
from kdump.render.jsonl import dump_file_objects, to_json

native = speedups.native()
pytestmark = pytest.mark.skipif(native is None, reason="kdump's C code is not built here")


OPTIONS = {
    "shallow": DumpOptions(),
    "deep": DumpOptions(deep_iteration=True),
    "data": DumpOptions(print_data_log=True),
    "data-skip": DumpOptions(print_data_log=True, skip_record_metadata=True),
    "skip": DumpOptions(deep_iteration=True, skip_record_metadata=True),
    "hex": DumpOptions(print_data_log=True, key_decoder=DECODERS["hex"]),
    "base64": DumpOptions(print_data_log=True, value_decoder=DECODERS["base64"]),
    "max-bytes": DumpOptions(deep_iteration=True, max_bytes=300),
    "filter": DumpOptions(print_data_log=True, batch_filter=BatchFilter(offsets=Range(3, 40))),
    "scala": DumpOptions(
        print_data_log=True, skip_record_metadata=True, release=Release.parse("4.2")
    ),
}


def text_dump(path: Path, opts: DumpOptions) -> tuple[bytes, str, DumpProblems]:
    problems = DumpProblems()
    out, err = bytearray(), []
    for item in dump_files([str(path)], opts, problems):
        if isinstance(item, Chunk):
            out += item.data
        elif item.stream == ERR:
            err.append(item.text)
        else:
            out += item.text.encode() + b"\n"
    return bytes(out), "\n".join(err), problems


def json_dump(path: Path, opts: DumpOptions) -> tuple[bytes, DumpProblems]:
    problems = DumpProblems()
    out = bytearray()
    for obj in dump_file_objects(str(path), opts, problems):
        out += obj if isinstance(obj, bytes) else to_json(obj).encode() + b"\n"
    return bytes(out), problems


def both(fn: Any) -> tuple[Any, Any]:
    with pure_python():
        pure = fn()
    return fn(), pure


def test_the_c_renderer_knows_the_python_fields() -> None:
    """One vocabulary: every field the C code renders has a Python rendering, and back."""
    assert native is not None
    python = set(_BATCH_VALUES) | set(_RECORD_VALUES) | set(_RECORD_TEXT)
    c_fields = set(native.RENDER_FIELDS)
    assert c_fields <= python
    assert python - c_fields == {"record_is_valid", "record_crc"}  # legacy records: Python's


@pytest.mark.parametrize("name", OPTIONS)
@pytest.mark.parametrize("log", fixture_logs())
def test_every_fixture_dumps_the_same(log: Path, name: str) -> None:
    opts = OPTIONS[name]
    fast, pure = both(lambda: text_dump(log, opts))
    assert fast == pure
    fast, pure = both(lambda: json_dump(log, opts))
    assert fast == pure


# --------------------------------------------------------------------------- made batches


def field(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def record(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[bytes, bytes | None]],
) -> bytes:
    body = b"\x00" + varint(ts_delta) + varint(offset_delta) + field(key) + field(value)
    body += varint(len(headers)) + b"".join(varint(len(k)) + k + field(v) for k, v in headers)
    return varint(len(body)) + body


texts = st.one_of(
    st.binary(max_size=12),
    st.text(max_size=8).map(str.encode),
    # long enough for the C code's eight-bytes-at-a-time paths, with what JSON escapes
    st.text(st.sampled_from('ab"\\\n\x1f\x7fé€'), min_size=8, max_size=40).map(str.encode),
    st.sampled_from([b'"', b"\\", b"\n\t\r\b\f\x00\x1f\x7f", "é€😀".encode(), b"\xed\xa0\x80"]),
)
maybe = st.one_of(st.none(), texts)
records_strategy = st.lists(
    st.tuples(
        st.integers(0, 3),  # offset delta step
        st.integers(-5, 5),  # timestamp delta
        maybe,
        maybe,
        st.lists(st.tuples(texts, maybe), max_size=2),
    ),
    min_size=1,
    max_size=4,
)
batch_strategy = st.tuples(
    records_strategy,
    st.sampled_from([0, 0x08, 0x10, 0x40, 0x48, 0x07, 0x05]),  # attributes bits
    st.sampled_from([-1, 0, 2**31 - 2]),  # base sequence
    st.sampled_from([0, 1]),  # codec: none, gzip
)


def build(batches: list[Any]) -> bytes:
    import gzip

    out, base = bytearray(), 0
    for recs, attributes, base_sequence, codec in batches:
        payload, delta = b"", 0
        for step, ts, key, value, headers in recs:
            delta += step
            payload += record(delta, ts, key, value, headers)
        if codec:
            payload = gzip.compress(payload)
        data = bytearray(v2_batch(base, payload, codec, len(recs), delta))
        attributes = codec | (attributes & ~0x07)
        struct.pack_into(">h", data, 21, attributes)
        struct.pack_into(">i", data, 53, base_sequence)
        fix_crc(data, 0)
        out += data
        base += delta + 1 + len(out) % 3  # some gaps: non-consecutive offsets
    return bytes(out)


MADE_OPTIONS = {
    **OPTIONS,
    # Kafka's StringDecoder asked for: Java's text in JSON too (the default keeps the bytes)
    "string": DumpOptions(
        print_data_log=True, key_decoder=DECODERS["string"], value_decoder=DECODERS["string"]
    ),
}


@given(st.lists(batch_strategy, min_size=1, max_size=4), st.sampled_from(list(MADE_OPTIONS)))
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_made_batches_dump_the_same(
    tmp_path_factory: pytest.TempPathFactory, batches: list[Any], name: str
) -> None:
    path = tmp_path_factory.mktemp("made") / "00000000000000000000.log"
    path.write_bytes(build(batches))
    opts = MADE_OPTIONS[name]
    fast, pure = both(lambda: text_dump(path, opts))
    assert fast == pure
    fast, pure = both(lambda: json_dump(path, opts))
    assert fast == pure


@given(st.lists(batch_strategy, min_size=1, max_size=3), st.data())
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_damaged_batches_dump_the_same(
    tmp_path_factory: pytest.TempPathFactory, batches: list[Any], data: st.DataObject
) -> None:
    """Records cut, lengths wrong, CRCs fixed again: the errors come in the same place with
    the same lines before them, whichever code renders."""
    raw = bytearray(build(batches))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(61, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        fix_crc(raw, 0)
    path = tmp_path_factory.mktemp("damaged") / "00000000000000000000.log"
    path.write_bytes(bytes(raw))
    opts = OPTIONS[data.draw(st.sampled_from(["deep", "data", "skip"]))]
    fast, pure = both(lambda: text_dump(path, opts))
    assert fast == pure
    fast, pure = both(lambda: json_dump(path, opts))
    assert fast == pure


def test_a_run_longer_than_one_output_chunk_is_rendered_in_pieces(tmp_path: Path) -> None:
    """render_batches stops past its output limit; the lines after it still come, in order."""
    assert native is not None
    from kdump.render import runs

    recs = [(1, 0, b"k" * 100, b"v" * 900, [])] * 50
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build([(recs, 0, -1, 0)] * 30))
    whole = text_dump(path, OPTIONS["data"])
    mp = pytest.MonkeyPatch()
    mp.setattr(runs, "OUTPUT_CHUNK", 3000)
    try:
        pieces = text_dump(path, OPTIONS["data"])
    finally:
        mp.undo()
    assert pieces == whole
    assert whole[0].count(b"\n") == 2 + 30 * 51  # Dumping, Log starting offset, lines


def test_render_batches_refuses_wrong_templates() -> None:
    assert native is not None
    columns = tuple(memoryview(bytes(8)).cast("q") for _ in native.WALK_COLUMNS)
    for template in ("{offset}", "{nope}", "a } b", "{unclosed"):
        with pytest.raises(ValueError):
            native.render_batches(b"", columns, 0, False, template, None, 1, 1, -1, 1 << 20)
    with pytest.raises(TypeError):
        native.render_batches(b"", columns[:3], 0, False, "x", None, 1, 1, -1, 1 << 20)


@given(st.lists(batch_strategy, min_size=1, max_size=3), st.data())
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_batches_rendered_a_slice_at_a_time_dump_the_same(
    tmp_path_factory: pytest.TempPathFactory, batches: list[Any], data: st.DataObject
) -> None:
    """Output chunks of a few lines: every compressed or large batch's records come from C a
    slice at a time (render_payload from a position), and where C stops inside a batch (text
    that is not UTF-8, damage) Python goes on from that record: the same bytes as the pure
    Python dump, line for line (issue 27: a batch's lines are never built whole)."""
    from kdump.render import runs

    raw = bytearray(build(batches))
    if data.draw(st.booleans()):
        raw[data.draw(st.integers(61, len(raw) - 1))] = data.draw(st.integers(0, 255))
        fix_crc(raw, 0)
    path = tmp_path_factory.mktemp("sliced") / "00000000000000000000.log"
    path.write_bytes(bytes(raw))
    opts = OPTIONS[data.draw(st.sampled_from(["deep", "data", "skip", "hex", "scala"]))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "OUTPUT_CHUNK", data.draw(st.integers(1, 300)))
        fast, pure = both(lambda: text_dump(path, opts))
        assert fast == pure
        fast, pure = both(lambda: json_dump(path, opts))
        assert fast == pure


def test_render_payload_gives_a_batch_a_slice_at_a_time() -> None:
    """render_payload stops past max_output and says where to go on; the slices joined are the
    batch rendered in one call."""
    assert native is not None
    recs = [(1, 0, b"key", b"value-%d" % i, []) for i in range(40)]
    data = build([(recs, 0, -1, 0)])
    columns = tuple(memoryview(bytes(8)).cast("q") for _ in native.WALK_COLUMNS)
    columns = tuple(
        memoryview(struct.pack("<q", v)).cast("q")
        for v in (0, 0, 39, len(data), 0, 2, 0, 0, 39, 1700000000000, 1700000000000, -1, -1,
                  -1, 40, 1)
    )  # fmt: skip
    payload = data[61:]
    template, record_template = "batch {count}", "| offset: {offset} {content}"
    whole = native.render_payload(payload, columns, 0, False, template, record_template, 1, 1, -1)
    assert whole is not None
    pos, first, last, out = 0, 0, -1, b""
    calls = 0
    while first < 40:
        got = native.render_payload(
            payload, columns, 0, False, template, record_template, 1, 1, last, pos, first, 50
        )
        assert got is not None
        data_, last, _, pos, first, resume = got
        assert resume is None  # short values: no line stops part way
        out += data_
        calls += 1
    assert out == whole[0] and pos == len(payload) and calls > 5


# Text a line stops in: every character JSON or a terminal escapes, multi-byte characters and
# sequences that are not UTF-8, in a period that is no divisor of the C code's slice (3 << 16),
# so the slices' cuts fall inside each in turn.
_PATTERN = 'é€😀\x01\x1f\x7f\x85\u200b"\\\n\tab'.encode()
VALID_LONG = (_PATTERN * (700_000 // len(_PATTERN)))[:700_000]
"""700 KB of UTF-8: four of the C code's slices and some."""
BROKEN_LONG = (_PATTERN + b"\xed\xa0\x80\xf0\x90\x80\xe2\x82\xc3\xff\x80") * (
    700_000 // (len(_PATTERN) + 11)
)
"""... not UTF-8: surrogates, cut sequences, stray bytes (Java's U+FFFD, or base64 in JSON)."""


@pytest.mark.parametrize("chunk", [100, 1 << 20])
@pytest.mark.parametrize("name", ["data", "data-skip", "hex", "base64", "string", "scala"])
@pytest.mark.parametrize("codec", [0, 1])
def test_a_line_longer_than_a_chunk_comes_in_pieces(
    tmp_path: Path, name: str, codec: int, chunk: int
) -> None:
    """A key, value or header of many MB (control bytes: six bytes of JSON each) is rendered by
    C a slice at a time, each call stopping part way through the line once the output passes the
    chunk and the next going on from there: the same bytes as the pure Python dump, whatever
    the decoder, compressed or not, with short records around it."""
    from kdump.render import runs

    recs = [
        (1, 0, b"k", b"short", []),
        (1, 0, VALID_LONG, BROKEN_LONG, [(b"h", b"v")]),
        (1, 0, None, VALID_LONG, []),
        (1, 0, BROKEN_LONG, None, []),
        (1, 0, b"k", b"v", [(b"h", b"v"), (VALID_LONG, BROKEN_LONG), (b"h2", VALID_LONG)]),
        (1, 0, b"k", b"v", [(BROKEN_LONG, None), (b"h3", b"v")]),
        (1, 0, b"k2", b"short", []),
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build([(recs, 0, -1, codec)]))
    opts = MADE_OPTIONS[name]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "OUTPUT_CHUNK", chunk)
        text, pure = both(lambda: text_dump(path, opts))
        assert text == pure
        lines, pure = both(lambda: json_dump(path, opts))
        assert lines == pure
    assert lines[0].count(b"\n") == 8  # the batch and its seven records


def test_a_json_value_of_control_bytes_is_json_dumps_escaped(tmp_path: Path) -> None:
    """The JSON Lines value of a long text of control bytes, come from C in pieces, is
    json.dumps' string of it made safe for a terminal (kdump.untrusted.escape_json_text)."""
    import json

    from kdump.untrusted import escape_json_text

    value = bytes(range(1, 0x20)) * 40_000 + VALID_LONG  # 1.9 MB: 9 MB of JSON
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build([([(0, 0, None, value, [])], 0, -1, 1)]))
    out, _ = json_dump(path, OPTIONS["deep"])
    line = json.loads(out.splitlines()[1])
    assert line["value"].encode() == value and line["value_encoding"] == "utf8"
    expected = escape_json_text(json.dumps(value.decode(), ensure_ascii=False))
    assert b'"value":' + expected.encode() + b',"value_encoding"' in out


@pytest.mark.parametrize(
    ("step", "release", "kept", "more"),
    [
        (2, "4.3", 3, 6),  # nine distinct pairs: three kept, six counted
        (0, "4.3", 1, 0),  # one pair nine times: the Java tool's TreeMap keeps it once
        (0, "4.2", 3, 6),  # ... the Scala tool listed each
    ],
)
def test_non_consecutive_pairs_past_the_cap_are_counted_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int, release: str, kept: int, more: int
) -> None:
    """Kafka's tool keeps every non-consecutive pair for its summary: a batch of millions of
    records with one offset (a decompression bomb) made that gigabytes. kdump keeps
    runs.MAX_GAPS per log and counts the rest, in the C and the Python renderer alike."""
    from kdump.render import runs

    monkeypatch.setattr(runs, "MAX_GAPS", 3)
    recs = [(step, 0, None, None, [])] * 10
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build([(recs, 0, -1, 1)]))
    opts = DumpOptions(deep_iteration=True, release=Release.parse(release))
    fast, pure = both(lambda: text_dump(path, opts))
    assert fast[:2] == pure[:2]
    lines = fast[1].splitlines()
    assert sum(" is followed by " in line for line in lines) == kept
    assert (f"  ... and {more} more, not kept (kdump keeps 3)" in lines) == bool(more)


def test_a_dump_closes_its_log_without_the_garbage_collector() -> None:
    """The text renderer and its Python fallback refer to each other: the log's memory map (and
    its file descriptor) must be closed by the dump, not by a collection that the CLI's
    threshold makes rare (a suite of dumps ran out of descriptors)."""
    log = ORACLE / "plain-0" / "00000000000000000000.log"
    gc.collect()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            text_dump(log, OPTIONS["deep"])
            json_dump(log, OPTIONS["deep"])
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()
