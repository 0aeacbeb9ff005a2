"""Lossless JSON (issue 29.1): every key, value and header value kdump writes as JSON gives back
its exact bytes, read with the documented reader (docs/json.md).

Every record of the oracle, corrupt and generated fixtures is dumped as JSON Lines, rebuilt with
the reader docs/json.md documents (run from the page itself), and compared byte for byte with
what kafka-python, an independent parser, reads from the same file. Then the other outputs that
print record bytes: lookup, salvage, explain's top keys; and the decoders' names.
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import FIXTURES, GENERATED, ORACLE
from explainbuild import T0, batch, explain_one, segment
from jsonreader import raw
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch
from purepython import python_if

from kdump.render.dump_segments import DumpOptions, DumpProblems
from kdump.render.explain import _compaction_lines, compaction_object
from kdump.render.jsonl import dump_file_objects, to_json

Rebuilt = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def distinct_logs() -> list[Path]:
    """Every fixture log of the oracle, corrupt and generated sets, one per distinct content."""
    seen: dict[str, Path] = {}
    for root in (ORACLE, FIXTURES / "corrupt", GENERATED):
        for path in sorted(root.rglob("*.log")):
            seen.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
    return list(seen.values())


LOGS = distinct_logs()
BATCH_LENGTH = struct.Struct(">i")
LENGTH_AT, MAGIC_AT, LOG_OVERHEAD = 8, 16, 12


def kafka_python_batches(data: bytes) -> dict[int, list[Rebuilt]]:
    """The records of each batch kafka-python reads whole, by the batch's position."""
    batches: dict[int, list[Rebuilt]] = {}
    pos = 0
    while pos + MAGIC_AT < len(data):
        (length,) = BATCH_LENGTH.unpack_from(data, pos + LENGTH_AT)
        size = LOG_OVERHEAD + length
        if length < 0 or pos + size > len(data):
            break
        chunk = bytes(data[pos : pos + size])
        magic = data[pos + MAGIC_AT]
        try:
            batch = DefaultRecordBatch(chunk) if magic == 2 else LegacyRecordBatch(chunk, magic)
            batches[pos] = [
                (r.offset, r.key, r.value, list(getattr(r, "headers", []))) for r in batch
            ]
        except Exception:  # kafka-python cannot read it: damage the comparison leaves out
            pass
        pos += size
    return batches


def kdump_batches(path: Path) -> dict[int, list[Rebuilt]]:
    """The records of each batch in kdump's JSON Lines, their bytes rebuilt by the reader."""
    problems = DumpProblems()
    out = bytearray()
    for obj in dump_file_objects(str(path), DumpOptions(deep_iteration=True), problems):
        out += obj if isinstance(obj, bytes) else to_json(obj).encode() + b"\n"
    batches: dict[int, list[Rebuilt]] = {}
    records: list[Rebuilt] = []
    for line in out.decode().splitlines():
        obj = json.loads(line)
        if obj["type"] == "batch":
            records = batches.setdefault(obj["position"], [])
        elif obj["type"] == "record":
            headers = [(h["key"], raw(h["value"], h["value_encoding"])) for h in obj["headers"]]
            key, value = (
                raw(obj["key"], obj["key_encoding"]),
                raw(obj["value"], obj["value_encoding"]),
            )
            assert (key is None, value is None) == (obj["key_size"] < 0, obj["value_size"] < 0)
            records.append((obj["offset"], key, value, headers))
    return batches


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_every_record_rebuilds_byte_for_byte(log: Path, pure: bool) -> None:
    expected = kafka_python_batches(log.read_bytes())
    with python_if(pure):
        got = kdump_batches(log)
    # kdump's dump ends a file at its first error, as kafka-dump-log does: every batch
    # kafka-python reads before that is compared
    last = max(got, default=-1)
    compared = [pos for pos in expected if pos <= last]
    assert compared and set(compared) <= set(got)
    assert {pos: got[pos] for pos in compared} == {pos: expected[pos] for pos in compared}


def test_the_fixtures_hold_binary_keys_values_and_header_values() -> None:
    """The comparison above covers base64 as well as text: the fixtures hold both."""
    encodings = set()
    for log in (GENERATED / "malformed-utf8-0" / "00000000000000000000.log",):
        ran = run_kdump(["dump", str(log), "--format", "jsonl", "--deep-iteration"])
        for obj in map(json.loads, ran.stdout.splitlines()):
            if obj["type"] == "record":
                encodings |= {obj["key_encoding"], obj["value_encoding"]}
                encodings |= {h["value_encoding"] for h in obj["headers"]}
    assert encodings == {"utf8", "base64"}


def test_lookup_json_keeps_a_binary_value() -> None:
    """variety-0's 300 KiB random value: base64 in lookup's record, its bytes kafka-python's."""
    log = ORACLE / "variety-0" / "00000000000000000000.log"
    [record] = [
        r for rs in kafka_python_batches(log.read_bytes()).values() for r in rs if r[0] == 6
    ]
    ran = run_kdump(["lookup", str(log.parent), "--offset", "6", "--format", "json"])
    shown = json.loads(ran.stdout)["record"]
    assert (shown["key_encoding"], shown["value_encoding"]) == ("utf8", "base64")
    assert raw(shown["value"], shown["value_encoding"]) == record[2]
    assert raw(shown["key"], shown["key_encoding"]) == record[1]


def test_explain_top_keys_keep_binary_keys(tmp_path: Path) -> None:
    d = tmp_path / "keys-0"
    binary = b"\xff\x00k"
    segment(d, [batch(0, [(binary, b"v"), (b"a", b"v"), (binary, b"w")], T0)])
    segment(d, [batch(10, 1, T0)])
    c = explain_one(d, "cleanup.policy=compact", now=T0 + 10**9, deep=True).compaction
    assert c is not None
    shown = compaction_object(c)
    assert shown is not None
    top = shown["cleaning"]["top_keys"]
    assert [(raw(k["key"], k["key_encoding"]), k["records"]) for k in top] == [
        (binary, 2),
        (b"a", 1),
    ]
    assert [k["key_encoding"] for k in top] == ["base64", "utf8"]
    assert any("key '0xff006b': 2 records" in line for line in _compaction_lines(c))


def test_salvage_help_names_the_encodings_its_json_carries() -> None:
    """The help said "header values in base64" after salvage's JSON had become dump's."""
    from kdump.repair.salvage import record_object
    from kdump.storage.local import open_log_file

    records = open_log_file(GENERATED / "malformed-utf8-0" / "00000000000000000000.log")
    batch = next(iter(records.batches(0, None)))
    shown = record_object(batch, next(iter(records.records(batch))), "t", 0)
    encodings = {k for k in shown if k.endswith("_encoding")}
    encodings |= {k for h in shown["headers"] for k in h if k.endswith("_encoding")}
    assert encodings == {"key_encoding", "value_encoding"}
    help_text = " ".join(run_kdump(["salvage", "--help"]).stdout.split())
    assert all(name in help_text for name in encodings), help_text
    assert "in base64" not in help_text
