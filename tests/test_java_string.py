"""Text identical to Kafka's on any bytes: ``new String(bytes, UTF_8)`` as the JDK replaces
malformed input (issue 29.3).

kafka-dump-log prints keys, values (StringDecoder) and header keys (Utils.utf8) as Java
decodes them; Python's ``decode("utf-8", "replace")`` writes one U+FFFD per byte of an encoded
surrogate where Java writes one for the three. The reference is tests/javautf8.py, the JDK's
decodeUTF8_UTF16 transcribed statement by statement; kdump's Python decoder
(kdump.java.java_string) and its C one (java_utf8_into, what the C renderer prints) are tested
against it on random bytes, and the reference itself against the JDK where one is installed.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from batchbytes import v2_batch, varint
from clirun import run_kdump
from conftest import GENERATED, ORACLE, REPO
from hypothesis import given, settings
from hypothesis import strategies as st
from javautf8 import java_new_string
from purepython import python_if

from kdump import speedups
from kdump.format.walk import iter_batches, iter_records
from kdump.java import java_string

NEW_STRING = REPO / "tests" / "data" / "java" / "NewString.java"
GOLDEN = REPO / "tests" / "golden" / "malformed-utf8-data.out"
MALFORMED = "malformed-utf8-0/00000000000000000000.log"
VARIETY_0 = ORACLE / "variety-0" / "00000000000000000000.log"

# the bytes where the rules differ: ASCII, continuation bytes at their sub-range edges, each
# kind of lead (the invalid C0, C1, F5-FF too), E0/ED/F0/F4 with their narrowed second bytes
EDGES = list(bytes.fromhex("00417f808f909fa0bfc0c1c2dfe0e1ecedeeeff0f1f3f4f5f7f8feff"))
byte_strings = st.lists(st.one_of(st.sampled_from(EDGES), st.integers(0, 255)), max_size=24).map(
    bytes
)


@settings(max_examples=3000, deadline=None)
@given(byte_strings)
def test_kdump_decodes_as_the_jdk_reference(data: bytes) -> None:
    expected = java_new_string(data)
    assert java_string(data) == expected
    assert java_string(memoryview(data)) == expected
    native = speedups.native()
    if native is not None:
        assert native.java_utf8(data) == expected.encode()


def test_an_encoded_surrogate_is_one_replacement() -> None:
    """The difference the issue measured: Python's decoder gives three."""
    assert b"\xed\xa0\x80".decode("utf-8", "replace") == "\ufffd" * 3
    assert java_new_string(b"\xed\xa0\x80") == java_string(b"\xed\xa0\x80") == "\ufffd"


def _jdk_strings(java: str, cases: list[bytes]) -> list[str]:
    ran = subprocess.run(
        [java, str(NEW_STRING)],
        input="".join(c.hex() + "\n" for c in cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    units = ran.stdout.split("\n")[: len(cases)]
    return [bytes.fromhex(u).decode("utf-16-be", "surrogatepass") for u in units]


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK on this machine")
def test_the_reference_is_the_jdks() -> None:
    """The transcription against the JDK itself: every string of up to two edge bytes and
    thousands of longer random ones."""
    rng = random.Random(29)
    cases = [bytes([a]) for a in range(256)] + [bytes([a, b]) for a in EDGES for b in EDGES]
    cases += [bytes(rng.choice(EDGES) for _ in range(rng.randint(3, 9))) for _ in range(8000)]
    cases += [rng.randbytes(rng.randint(0, 40)) for _ in range(2000)]
    java = shutil.which("java")
    assert java is not None
    assert _jdk_strings(java, cases) == [java_new_string(c) for c in cases]


def _malformed_fixture() -> tuple[dict[str, str], dict[str, bytes]]:
    """The JDK's text of each payload, as the fixture's generator recorded it, and the payload
    of each rule (the record's header key names it)."""
    expected = json.loads((GENERATED / "expected.json").read_text())["logs"][MALFORMED]
    payloads = {}
    for batch in expected["batches"]:
        for record in batch["records"]:
            [(rule, value)] = record["headers"]
            payloads[rule] = bytes.fromhex(value)
    return expected["java_new_string"], payloads


def test_the_golden_payloads_are_the_jdks_text() -> None:
    """Each record line of the golden dump of malformed-utf8-0 shows key and payload as the
    JDK decoded them when the fixture was made: the golden is Java's, not kdump's."""
    jdk, payloads = _malformed_fixture()
    lines = [x for x in GOLDEN.read_bytes().decode().split("\n") if x.startswith("| offset:")]
    assert len(lines) == len(payloads)
    for line, (rule, payload) in zip(lines, payloads.items(), strict=True):
        text = jdk[payload.hex()]
        assert line.endswith(f" headerKeys: [{rule}] key: {text} payload: {text}"), rule


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_header_keys_print_as_java_decodes_them(pure: bool, tmp_path: Path) -> None:
    """Header keys are Strings in Kafka (DefaultRecord.readHeaders: Utils.utf8)."""
    _, payloads = _malformed_fixture()
    key = payloads["surrogate-pair-cesu-8"] + b"k" + payloads["four-byte-bad-third"]
    headers = varint(1) + varint(len(key)) + key + varint(1) + b"v"
    body = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(-1) + headers
    log = v2_batch(0, varint(len(body)) + body)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(log)
    with python_if(pure):
        ran = run_kdump(["--files", str(path), "--deep-iteration"])
    want = java_new_string(key)
    assert want == "\ufffd\ufffdk\ufffdA\ufffd"
    assert f"headerKeys: [{want}]" in ran.stdout


def _variety_payload() -> bytes:
    buf = VARIETY_0.read_bytes()
    for batch in iter_batches(buf):
        for record in iter_records(buf, batch):
            if record.value is not None and len(record.value) > 300_000:
                return bytes(record.value)
    raise AssertionError("variety-0 has no 300 KiB value")


@pytest.mark.parametrize("pure", [False, True], ids=["c", "python"])
def test_variety_0_prints_kafkas_replacements(pure: bool) -> None:
    """Kafka's own kafka-dump-log (trunk, 2026-08) prints 126,881 U+FFFD for the segment with
    --deep-iteration --print-data-log (issue 29; Python's replacement gave 127,057)."""
    args = ["--files", str(VARIETY_0.relative_to(REPO)), "--deep-iteration", "--print-data-log"]
    with python_if(pure):
        ran = run_kdump(args, REPO)
    assert ran.exit_code == 0
    assert ran.stdout.count("\ufffd") == 126_881
    assert java_new_string(_variety_payload()) in ran.stdout


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK on this machine")
def test_variety_0_payload_is_the_jdks_text() -> None:
    java = shutil.which("java")
    assert java is not None
    payload = _variety_payload()
    assert _jdk_strings(java, [payload]) == [java_string(payload)]
