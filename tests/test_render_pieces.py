"""The Python renderer's line of a long record comes in pieces (kdump.render.runs.line_pieces):
a legacy message's value of many MB, a damaged record, a decoder only Python runs or
KDUMP_PURE_PYTHON never has its whole line (JSON: six bytes a control byte) in memory at once.
The pieces joined are the bytes of the line rendered whole, byte for byte."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch, varint
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st
from purepython import python_if

from kdump.format.internal import message_parser
from kdump.format.records import long_bytes, lossless
from kdump.java import java_string, java_string_slices
from kdump.releases import Release
from kdump.render import jsonl, runs
from kdump.render.describe import DECODERS
from kdump.render.dump_segments import ERR, Chunk, DumpOptions, DumpProblems, dump_files
from kdump.render.jsonl import dump_file_objects, json_parts, to_json
from kdump.untrusted import escape_json_text

AWKWARD = '"\\\x00\x01\x1f\x7f\x85\xad\u200b\u2028\ufeffé€😀\udc80\udcff\n\tab'
"""What JSON or a terminal escapes, multi-byte characters, a name's undecodable bytes (lone
surrogates U+DC80..U+DCFF, which escape_json_text writes ``\\\\xNN``)."""


@contextmanager
def sliced(chars: int, long_record: int = 0, per_part: int = 3) -> Iterator[None]:
    """Every record long, its text cut every ``chars`` characters (a long array every
    ``per_part`` scalars): the cuts fall next to every kind of character."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "SLICE_CHARS", chars)
        mp.setattr(runs, "LONG_RECORD", long_record)
        mp.setattr(jsonl, "_SCALARS_PER_PART", per_part)
        yield


def _joined_or_error(make: Any) -> bytes | type[BaseException]:
    try:
        return make()
    except UnicodeError as e:
        return type(e)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(st.sampled_from(AWKWARD + "\ud800") | st.characters(), max_size=40),
    lambda inner: (
        st.lists(inner, max_size=8)
        | st.dictionaries(st.text(st.sampled_from(AWKWARD), max_size=4) | st.integers(), inner)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_json_values, chars=st.integers(1, 9))
def test_json_in_pieces_is_the_json_of_the_whole(value: Any, chars: int) -> None:
    """``json_parts`` escaped and encoded a piece at a time gives ``to_json``'s line, its text
    cut next to every kind of character (a lone surrogate outside a name's bytes, which UTF-8
    cannot carry, fails both alike)."""
    obj = {"type": "record", "value": value}
    whole = _joined_or_error(lambda: to_json(obj).encode() + b"\n")
    with sliced(chars):
        pieces = _joined_or_error(
            lambda: b"".join(runs.line_pieces(jsonl.json_parts(obj), escape_json_text))
        )
    assert pieces == whole


@pytest.mark.parametrize("at", range(-7, 8))
@pytest.mark.parametrize("char", AWKWARD)
def test_an_escape_at_a_slice_s_edge(char: str, at: int) -> None:
    """Each awkward character at and around the edge of a real slice (SLICE_CHARS)."""
    edge = runs.SLICE_CHARS
    text = "x" * (edge + at) + char + "y" * edge + char * 3
    obj = {"value": text, "headers": [{"key": char, "value": text}]}
    assert len(list(json_parts(text))) > 3  # the string went in slices
    whole = to_json(obj).encode() + b"\n"
    assert b"".join(runs.line_pieces(json_parts(obj), escape_json_text)) == whole


def test_a_long_array_of_numbers_goes_in_parts() -> None:
    numbers = [*range(-5000, 5000), 1.5, None, True, False]
    parts = list(json_parts({"replicas": numbers}))
    assert len(parts) > 3
    assert "".join(parts) == to_json({"replicas": numbers})


# -------------------------------------------------------------------- whole dumps, in pieces


def legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None) -> bytes:
    """A magic v0 or v1 message (LegacyRecord), uncompressed, its CRC from the magic on."""
    body = bytes([magic, 0]) + (struct.pack(">q", 1_700_000_000_000) if magic else b"")
    for data in (key, value):
        body += struct.pack(">i", -1) if data is None else struct.pack(">i", len(data)) + data
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


_PATTERN = AWKWARD.encode("utf-8", "surrogateescape")
VALID_LONG = (('é€😀\x01\x7f\x85\u200b"\\\n\tab'.encode()) * 20_000)[:300_001]
BROKEN_LONG = (_PATTERN + b"\xed\xa0\x80\xf0\x90\x80\xe2\x82\xc3\xff\x80") * 9_000
"""... not UTF-8: JSON's base64, Java's U+FFFD in text."""


def _field(data: bytes | None) -> bytes:
    return varint(-1) if data is None else varint(len(data)) + data


def _v2_record(delta: int, key: bytes | None, value: bytes | None, headers: Any) -> bytes:
    body = bytes([0]) + varint(0) + varint(delta) + _field(key) + _field(value)
    body += varint(len(headers)) + b"".join(_field(k) + _field(v) for k, v in headers)
    return varint(len(body)) + body


def _segment(tmp: Path) -> Path:
    """Legacy messages (v0, v1) and a v2 batch, long keys, values and headers among short."""
    data = b"".join(
        legacy_message(i, magic, key, value)
        for i, (magic, key, value) in enumerate(
            [
                (0, b"k", b"short"),
                (0, None, VALID_LONG),
                (1, BROKEN_LONG, VALID_LONG),
                (1, VALID_LONG, None),
                (0, b"k", BROKEN_LONG),
            ]
        )
    )
    records = [
        _v2_record(0, b"k", VALID_LONG, [(b"h", BROKEN_LONG), (VALID_LONG, None)]),
        _v2_record(1, BROKEN_LONG, b"v", [(b"h", b"v")]),
        _v2_record(2, None, None, []),
    ]
    data += v2_batch(5, b"".join(records), records_count=3, last_offset_delta=2)
    path = tmp / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def _text(path: Path, opts: DumpOptions) -> bytes:
    out = bytearray()
    for item in dump_files([str(path)], opts, DumpProblems()):
        if isinstance(item, Chunk):
            out += item.data
        elif item.stream != ERR:
            out += item.text.encode() + b"\n"
    return bytes(out)


def _json(path: Path, opts: DumpOptions) -> bytes:
    out = bytearray()
    for obj in dump_file_objects(str(path), opts, DumpProblems()):
        out += obj if isinstance(obj, bytes) else to_json(obj).encode() + b"\n"
    return bytes(out)


TEXT_OPTIONS = {
    "data": DumpOptions(print_data_log=True),
    "data-skip": DumpOptions(print_data_log=True, skip_record_metadata=True),
    "scala": DumpOptions(
        print_data_log=True, skip_record_metadata=True, release=Release.parse("4.2")
    ),
    "scala-metadata": DumpOptions(print_data_log=True, release=Release.parse("4.2")),
    "hex": DumpOptions(print_data_log=True, key_decoder=DECODERS["hex"]),
    "deep": DumpOptions(deep_iteration=True),
}


@pytest.mark.parametrize("pure", [True, False], ids=["pure", "c"])
@pytest.mark.parametrize("name", TEXT_OPTIONS)
def test_a_long_record_s_line_in_pieces_is_the_whole_line(
    tmp_path: Path, name: str, pure: bool
) -> None:
    """Legacy messages (which only Python renders) and a v2 batch (Python's under
    KDUMP_PURE_PYTHON) of long keys, values and headers, text and JSON Lines: the same bytes as
    every line rendered whole, no piece of more than a slice's bytes (JSON's ``\\\\u0001``:
    six bytes a character)."""
    path = _segment(tmp_path)
    opts = TEXT_OPTIONS[name]
    line_pieces, sizes = runs.line_pieces, []

    def counted(*args: Any) -> Iterator[bytes]:
        for piece in line_pieces(*args):
            sizes.append(len(piece))
            yield piece

    for dump in (_text, _json):
        with python_if(pure):
            with sliced(1000, long_record=1 << 62):
                whole = dump(path, opts)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(runs, "line_pieces", counted)
                pieces = dump(path, opts)
        assert pieces == whole
    if name != "deep":  # records' lines with data in them: the long ones in pieces
        assert len(sizes) > 30 and max(sizes) <= 6 * runs.SLICE_CHARS + 1


PARSED = [
    ("generated/v0-0/00000000000000000000.log", None),
    ("generated/v1-0/00000000000000000000.log", None),
    ("compaction/oracle-variety/kafka/variety-0/00000000000000000000.log", None),
    ("compaction/transactions/input/transactions-0/00000000000000000000.log", None),
    (
        "realfiles/DanielMorales9__kafkafun/data/kafka/__consumer_offsets-39/"
        "00000000000000000000.log",
        "offsets",
    ),
    (
        "corrupt-kraft/kraft-topic-id-missing/logdir/__cluster_metadata-0/00000000000000000000.log",
        "cluster-metadata",
    ),
]


@pytest.mark.parametrize(("log", "parser"), PARSED, ids=[p[0].split("/")[-2] for p in PARSED])
def test_kafka_s_logs_in_pieces_are_the_same(log: str, parser: str | None) -> None:
    """Kafka-written logs (legacy messages, control batches, an internal topic's decoded
    records) with every record rendered in pieces of a few characters: the same bytes."""
    path = FIXTURES / log
    base = DumpOptions(print_data_log=True)
    opts = base if parser is None else base._replace(message_parser=message_parser(parser))
    with python_if(True):
        for dump in (_text, _json):
            whole = dump(path, opts)
            with sliced(7):
                pieces = dump(path, opts)
            assert pieces == whole


_BYTES = st.lists(
    st.sampled_from(
        [b"a", b"\x01", b"\x80", b"\xbf", b"\xc2", b"\xc3\xa9", b"\xe2\x82", b"\xe2\x82\xac"]
    )
    | st.sampled_from(
        [b"\xed\xa0", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x9f\x98\x80", b"\xf0\x90"]
    )
    | st.sampled_from([b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xff", b"\xf8\x88\x80\x80\x80"])
    | st.binary(max_size=6),
    max_size=40,
).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(data=_BYTES, step=st.integers(1, 9))
def test_java_s_text_in_slices_is_the_whole(data: bytes, step: int) -> None:
    """Kafka's StringDecoder's text a slice at a time (a long value in the text dump): cut
    only where Java's and Python's decoders start afresh, the slices give the whole's text."""
    assert "".join(java_string_slices(data, step)) == java_string(data)


@settings(max_examples=500, deadline=None)
@given(data=_BYTES, step=st.integers(1, 9))
def test_kept_bytes_in_slices_are_the_whole(data: bytes, step: int) -> None:
    """A long value's lossless JSON text (UTF-8 or base64) a slice at a time: the same text and
    encoding as ``lossless`` of the whole."""
    text = long_bytes(data, step)
    assert ("".join(text.texts(step)), text.encoding) == lossless(data)
