"""Every option of ``kdump --files`` and ``kdump dump``, through the real console entry point
(kdump.cli.main under click's CliRunner): exit code, standard output and standard error.

Expected values come from Kafka's own answers (fixtures/oracle/manifest.json), from what the
independent encoder wrote (fixtures/generated/expected.json), or from the DumpLogSegments line
formats written out here; the golden files (tests/test_golden.py) pin the rest.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import sys
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
from clirun import Ran, run_kdump
from conftest import GENERATED, ORACLE, REPO, oracle_manifest
from javautf8 import java_new_string

from kdump.crc import crc32c
from kdump.errors import ExitCode
from kdump.format.internal import message_parser
from kdump.format.records import Record
from kdump.releases import Release
from kdump.render.dump_segments import java_hashmap_order, java_string_hash

PLAIN_258 = "fixtures/oracle/plain-0/00000000000000000258"
PLAIN_0 = "fixtures/oracle/plain-0/00000000000000000000"
TXN_0 = "fixtures/oracle/txn-0/00000000000000000000"
TXN_186 = "fixtures/oracle/txn-0/00000000000000000186"
GZIP_844 = "fixtures/oracle/gzip-0/00000000000000000844"
HEADERS = "fixtures/generated/headers-0/00000000000000000000.log"
TRUNCATED = "fixtures/generated/truncated-0/00000000000000000000.log"
BIG = "fixtures/generated/big-0/00000000000000001000.log"

OK, ERRORS, BAD_INPUT = 0, 2, 3


def kdump(*args: str, cwd: Path = REPO) -> Ran:
    return run_kdump(args, cwd)


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def lines(text: str) -> list[str]:
    return text.split("\n")[:-1] if text else []


# --------------------------------------------------------------------------- Kafka's answers


def kafka_batch_line(b: dict[str, Any]) -> str:
    """DumpLogSegments' batch line, filled with the values Kafka's classes reported."""
    if b["magic"] >= 2:
        head = (
            f"baseOffset: {b['baseOffset']} lastOffset: {b['lastOffset']} count: {b['count']} "
            f"baseSequence: {b['baseSequence']} lastSequence: {b['lastSequence']} "
            f"producerId: {b['producerId']} producerEpoch: {b['producerEpoch']} "
            f"partitionLeaderEpoch: {b['partitionLeaderEpoch']} "
            f"isTransactional: {java_bool(b['isTransactional'])} "
            f"isControl: {java_bool(b['isControl'])} deleteHorizonMs: OptionalLong.empty"
        )
    else:
        head = f"offset: {b['lastOffset']}"
    return (
        f"{head} position: {b['position']} {b['timestampType']}: {b['maxTimestamp']} "
        f"size: {b['sizeInBytes']} magic: {b['magic']} compresscodec: {b['compresscodec']} "
        f"crc: {b['crc']} isvalid: {java_bool(b['isValid'])}"
    )


def kafka_record_line(b: dict[str, Any], r: dict[str, Any]) -> str:
    line = (
        f"| offset: {r['offset']} {b['timestampType']}: {r['timestamp']} "
        f"keySize: {r['keySize']} valueSize: {r['valueSize']}"
    )
    if b["magic"] >= 2:
        line += f" sequence: {r['sequence']} headerKeys: [{','.join(r['headerKeys'])}]"
    else:
        line += f" isValid: {java_bool(r['isValid'])} crc: {r['crc']}"
    if b["isControl"]:
        line += f" endTxnMarker: {r['controlType']} coordinatorEpoch: {r['coordinatorEpoch']}"
    return line


def oracle_logs() -> list[str]:
    return [
        f"fixtures/oracle/{d}/{name}"
        for d, files in sorted(oracle_manifest()["files"].items())
        for name in sorted(files)
        if name.endswith(".log")
    ]


def manifest_entry(path: str) -> dict[str, Any]:
    _, _, directory, name = path.split("/")
    return oracle_manifest()["files"][directory][name]


@pytest.mark.parametrize("path", oracle_logs())
def test_batch_lines_are_kafkas(path: str) -> None:
    expected = manifest_entry(path)
    ran = kdump("--files", path)
    want = [f"Dumping {path}", f"Log starting offset: {int(Path(path).stem)}"]
    want += [kafka_batch_line(b) for b in expected["batches"]]
    assert (ran.exit_code, lines(ran.stdout), ran.stderr) == (OK, want, "")


def deep_oracle_logs() -> list[str]:
    dirs = oracle_manifest()["directories"]
    return [p for p in oracle_logs() if dirs[p.split("/")[2]]["records_dumped_for_all_batches"]]


@pytest.mark.parametrize("path", deep_oracle_logs())
def test_record_lines_are_kafkas(path: str) -> None:
    expected = manifest_entry(path)
    ran = kdump("--files", path, "--deep-iteration")
    want = [f"Dumping {path}", f"Log starting offset: {int(Path(path).stem)}"]
    for b in expected["batches"]:
        want.append(kafka_batch_line(b))
        want += [kafka_record_line(b, r) for r in b["records"]]
    assert (ran.exit_code, lines(ran.stdout), ran.stderr) == (OK, want, "")


def test_print_data_log_adds_the_key_and_payload_kafka_saw() -> None:
    path = TXN_0 + ".log"
    deep = lines(kdump("--files", path, "--deep-iteration").stdout)
    data = kdump("--files", path, "--print-data-log")
    assert data.exit_code == OK and data.stderr == ""
    records = [r for b in manifest_entry(path)["batches"] for r in b["records"]]
    record_lines = [line for line in lines(data.stdout) if line.startswith("| ")]
    assert len(record_lines) == len(records)
    for meta, line, r in zip(
        (x for x in deep if x.startswith("| ")), record_lines, records, strict=True
    ):
        if "endTxnMarker" in meta:
            assert line == meta  # control records never show their content
            continue
        key, value = line.removeprefix(f"{meta} key: ").split(" payload: ")
        assert sha256(key.encode()).hexdigest() == r["keySha256"]
        assert sha256(value.encode()).hexdigest() == r["valueSha256"]


# --------------------------------------------------------------------------- options


def test_print_data_log_implies_deep_iteration() -> None:
    plain = kdump("--files", PLAIN_258 + ".log")
    data = kdump("--files", PLAIN_258 + ".log", "--print-data-log")
    both = kdump("--files", PLAIN_258 + ".log", "--print-data-log", "--deep-iteration")
    assert data == both
    batch_lines = [x for x in lines(data.stdout) if not x.startswith("| ")]
    assert batch_lines == lines(plain.stdout)
    assert len(lines(data.stdout)) == len(batch_lines) + 257  # offsets 258..514


def test_a_decoder_implies_print_data_log() -> None:
    data = kdump("--files", HEADERS, "--print-data-log")
    for option in ("--key-decoder-class", "--value-decoder-class", "--key-decoder"):
        assert kdump("--files", HEADERS, option, "string") == data
    for kafka_class in ("kafka.serializer.StringDecoder", "org.apache.kafka.tools.StringDecoder"):
        assert kdump("--files", HEADERS, "--value-decoder-class", kafka_class) == data


def generated_records(path: str) -> list[dict[str, Any]]:
    expected = json.loads((GENERATED / "expected.json").read_text())["logs"]
    key = path.removeprefix("fixtures/generated/")
    return [r for b in expected[key]["batches"] for r in b["records"]]


@pytest.mark.parametrize(
    ("decoder", "encode"),
    [
        ("hex", bytes.hex),
        ("base64", lambda b: base64.b64encode(b).decode()),
        ("string", java_new_string),
    ],
)
def test_key_and_value_decoders(decoder: str, encode: Any) -> None:
    ran = kdump(
        "--files", HEADERS, "--key-decoder", decoder, "--value-decoder", decoder,
        "--skip-record-metadata",
    )  # fmt: skip
    assert (ran.exit_code, ran.stderr) == (OK, "")
    want = []
    for r in generated_records(HEADERS):
        parts = []
        if r["key"] is not None:
            parts.append("key: " + encode(bytes.fromhex(r["key"])))
        if r["value"] is not None:
            parts.append("payload: " + encode(bytes.fromhex(r["value"])))
        want.append("| " + " ".join(parts) if parts else "")
    got = ran.stdout.split("\n")
    records = "\n".join(x for x in got if not x.startswith(("Dumping", "Log ", "baseOffset")))
    assert records == "\n".join(want) + "\n"


def test_unknown_decoder_is_a_usage_error() -> None:
    ran = kdump("--files", HEADERS, "--value-decoder", "avro")
    assert ran.exit_code == BAD_INPUT
    assert ran.stdout == ""
    assert "unknown decoder 'avro'; use one of string, hex, base64" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_skip_record_metadata_keeps_batch_lines_and_one_line_per_record() -> None:
    deep = kdump("--files", TXN_0 + ".log", "--deep-iteration")
    skip = kdump("--files", TXN_0 + ".log", "--deep-iteration", "--skip-record-metadata")
    data = kdump("--files", TXN_0 + ".log", "--print-data-log", "--skip-record-metadata")
    assert deep.exit_code == skip.exit_code == data.exit_code == OK
    for d, s, p in zip(lines(deep.stdout), lines(skip.stdout), lines(data.stdout), strict=True):
        if d.startswith("| "):
            assert s == ""  # Kafka still ends every record with println()
            is_control = "endTxnMarker" in d
            assert p == "" if is_control else p.startswith("| key: ")
        else:
            assert d == s == p


def test_max_bytes_dumps_whole_batches_within_the_limit() -> None:
    full = lines(kdump("--files", PLAIN_258 + ".log").stdout)
    sizes = [int(x.split(" size: ")[1].split()[0]) for x in full[2:]]
    for limit in (0, sizes[0] - 1, sizes[0], sizes[0] + sizes[1] + 5, 10**9):
        fit, end = 0, 0
        while fit < len(sizes) and end + sizes[fit] <= limit:
            end += sizes[fit]
            fit += 1
        ran = kdump("--files", PLAIN_258 + ".log", "--max-bytes", str(limit))
        assert (ran.exit_code, lines(ran.stdout), ran.stderr) == (OK, full[: 2 + fit], "")


def test_max_bytes_suppresses_the_invalid_bytes_line_as_kafka_does() -> None:
    full = kdump("--files", TRUNCATED)
    assert full.exit_code == ERRORS
    assert lines(full.stdout)[-1] == "Found 40 invalid bytes at the end of 00000000000000000000.log"
    capped = kdump("--files", TRUNCATED, "--max-bytes", "100000")
    assert (capped.exit_code, capped.stdout) == (OK, full.stdout.rsplit("Found", 1)[0])


def test_negative_max_bytes_is_a_usage_error() -> None:
    ran = kdump("--files", PLAIN_258 + ".log", "--max-bytes", "-5")
    assert (ran.exit_code, ran.stdout) == (BAD_INPUT, "")
    assert "Invalid value for '--max-bytes'" in ran.stderr


def test_max_message_size_bounds_the_batch_an_index_entry_points_at() -> None:
    index = PLAIN_258 + ".index"
    ok = kdump("--files", index, "--verify-index-only", "--max-message-size", "5000")
    assert (ok.exit_code, ok.stdout, ok.stderr) == (OK, f"Dumping {index}\n", "")
    # the first entry points at position 5151, a batch of more than 100 bytes
    small = kdump("--files", index, "--max-message-size", "100")
    assert (small.exit_code, small.stdout) == (ERRORS, f"Dumping {index}\n")
    assert small.stderr == (
        f"kdump: {index}: no batch of {PLAIN_258}.log starts at position 5151\n"
    )


def test_max_batch_bytes_bounds_decompression() -> None:
    path = GZIP_844 + ".log"
    ran = kdump("--files", path, "--deep-iteration", "--max-batch-bytes", "100")
    assert ran.exit_code == ERRORS
    assert lines(ran.stdout) == lines(kdump("--files", path).stdout)[:3]
    assert ran.stderr == (f"kdump: {path}:0: decompressed payload exceeds the limit of 100 bytes\n")


def test_verify_index_only_prints_no_entry_but_still_verifies() -> None:
    follower = "fixtures/oracle/followerlive-0/00000000000000000386"
    shown = kdump("--files", follower + ".index")
    hidden = kdump("--files", follower + ".index", "--verify-index-only")
    assert shown.exit_code == hidden.exit_code == ERRORS
    assert hidden.stdout == f"Dumping {follower}.index\n"
    assert len(lines(shown.stdout)) == 1 + 13
    assert hidden.stderr == shown.stderr
    assert lines(shown.stderr)[0] == f"Mismatches in :{REPO}/{follower}.index"


def test_index_sanity_check_failure_is_one_line_and_the_run_goes_on() -> None:
    prealloc = "fixtures/oracle/activeprealloc-0/00000000000000000225.timeindex"
    good = PLAIN_258 + ".timeindex"
    ran = kdump("--files", f"{prealloc},{good}", "--index-sanity-check")
    assert ran.exit_code == ERRORS
    assert lines(ran.stdout) == [
        f"Dumping {prealloc}",
        f"Dumping {good}",
        f"{good} passed sanity check.",
    ]
    assert ran.stderr.count("\n") == 1
    assert ran.stderr.startswith(f"kdump: {prealloc}: sanity check failed: Corrupt time index")


def test_files_elements_and_unknown_files() -> None:
    txn = TXN_186 + ".txnindex"
    ran = kdump("--files", f"{txn},,fixtures/oracle/README.md,{txn},")
    assert ran.exit_code == OK
    assert lines(ran.stdout) == [
        f"Dumping {txn}",
        "version: 0 producerId: 1000 firstOffset: 126 lastOffset: 210 lastStableOffset: 211",
        "Dumping fixtures/oracle/README.md",
        f"Dumping {txn}",
        "version: 0 producerId: 1000 firstOffset: 126 lastOffset: 210 lastStableOffset: 211",
    ]
    assert ran.stderr == "Ignoring unknown file fixtures/oracle/README.md\n"


def test_paths_are_printed_as_java_io_file_prints_them() -> None:
    """dump renderer fix: DumpLogSegments prints File.toString(), which collapses '//'."""
    ran = kdump("--files", "fixtures//oracle/txn-0//00000000000000000186.txnindex")
    assert lines(ran.stdout)[0] == f"Dumping {TXN_186}.txnindex"


def test_version_and_help() -> None:
    version = kdump("--version")
    assert (version.exit_code, version.stderr) == (OK, "")
    assert version.stdout.startswith("kdump, version ")
    assert "\nfast paths: C; CRC-32C: " in version.stdout or "fast paths: off" in version.stdout
    helped = kdump("--help")
    assert (helped.exit_code, helped.stderr) == (OK, "")
    for option in (
        "--files", "--print-data-log", "--deep-iteration", "--verify-index-only",
        "--index-sanity-check", "--max-message-size", "--max-bytes", "--max-batch-bytes",
        "--skip-record-metadata", "--key-decoder-class", "--value-decoder-class",
    ):  # fmt: skip
        assert option in helped.stdout
    assert "--traceback" in helped.stdout  # a real, documented option (issue 13)


def test_no_files_prints_help_and_fails() -> None:
    ran = kdump()
    assert ran.exit_code == BAD_INPUT
    assert ran.stdout.startswith("Usage: kdump")


# --------------------------------------------------------------------------- bad input


def copy_segment_file(src: str, directory: Path) -> Path:
    target = directory / Path(src).name
    shutil.copyfile(REPO / src, target)
    return target


def patch(path: Path, position: int, fmt: str, *values: int) -> None:
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, position, *values)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("command", ["files", "dump"])
def test_size_below_14_is_one_line_and_other_files_are_dumped(tmp_path: Path, command: str) -> None:
    corrupt = copy_segment_file(PLAIN_258 + ".log", tmp_path)
    patch(corrupt, 1097 + 8, ">i", 13)  # the second batch's size field
    good = TXN_186 + ".txnindex"
    args = ("--files", f"{corrupt},{good}") if command == "files" else ("dump", str(corrupt), good)
    ran = kdump(*args, "--deep-iteration")
    assert ran.exit_code == ERRORS
    assert ran.stderr == (
        f"kdump: {corrupt}:1097: batch size 13 is below the minimum record overhead (14)\n"
    )
    out = lines(ran.stdout)
    first_batch = lines(kdump("--files", PLAIN_258 + ".log", "--deep-iteration").stdout)[2:17]
    assert out[:17] == [f"Dumping {corrupt}", "Log starting offset: 258", *first_batch]
    assert out[17:] == [
        f"Dumping {good}",
        "version: 0 producerId: 1000 firstOffset: 126 lastOffset: 210 lastStableOffset: 211",
    ]


def test_corrupt_batch_in_jsonl_is_an_error_object(tmp_path: Path) -> None:
    corrupt = copy_segment_file(PLAIN_258 + ".log", tmp_path)
    patch(corrupt, 1097 + 8, ">i", 13)
    ran = kdump("dump", "--format", "jsonl", str(corrupt))
    assert (ran.exit_code, ran.stderr) == (ERRORS, "")
    objects = [json.loads(x) for x in lines(ran.stdout)]
    assert [o["type"] for o in objects] == ["batch", "error"]
    assert objects[1] == {
        "type": "error",
        "file": str(corrupt),
        "position": 1097,
        "message": "batch size 13 is below the minimum record overhead (14)",
    }


def test_missing_file_exits_3() -> None:
    missing = "fixtures/nosuch/00000000000000000000.log"
    for args in (("--files", missing), ("dump", missing)):
        ran = kdump(*args)
        assert ran.exit_code == BAD_INPUT
        assert ran.stdout == f"Dumping {missing}\n"
        assert ran.stderr == f"kdump: {missing}: no such file\n"


def test_nothing_to_dump_exits_3(tmp_path: Path) -> None:
    """A missing path, an empty directory, a directory or file that is no Kafka file: one line
    and exit 3 (the report of issue 15: `kdump dump /nope` printed a line and exited 0)."""
    empty, other = tmp_path / "empty", tmp_path / "other"
    empty.mkdir()
    other.mkdir()
    (other / "notes.txt").write_text("not kafka\n")
    nope = str(tmp_path / "nope")
    for path, reason in (
        (nope, "no such file or directory"),
        (str(empty), "holds no Kafka file to dump (.log, .index, …)"),
        (str(other), "holds no Kafka file to dump (.log, .index, …)"),
    ):
        ran = kdump("dump", path)
        assert (ran.exit_code, ran.stdout, ran.stderr) == (
            BAD_INPUT,
            "",
            f"kdump: {path}: {reason}\n",
        )
    # an unknown suffix keeps kafka-dump-log.sh's line; nothing dumped at all is exit 3
    for args in (("dump", str(other / "notes.txt")), ("--files", nope)):
        ran = kdump(*args)
        assert ran.exit_code == BAD_INPUT
        assert ran.stderr.splitlines() == [
            f"Ignoring unknown file {args[1]}",
            "kdump: no Kafka file to dump among the paths given",
        ]
    # one Kafka file among unknown ones: Kafka's answer, exit 0
    ran = kdump("--files", f"{nope},{PLAIN_258}.index")
    assert ran.exit_code == OK and "Ignoring unknown file" in ran.stderr


def test_index_without_its_log_exits_3(tmp_path: Path) -> None:
    index = copy_segment_file(PLAIN_258 + ".index", tmp_path)
    ran = kdump("--files", str(index))
    assert ran.exit_code == BAD_INPUT
    assert ran.stdout == f"Dumping {index}\n"
    assert lines(ran.stderr) == [
        f"kdump: {tmp_path}/00000000000000000258.log: No such file or directory"
    ]


def test_non_consecutive_offsets_are_summarised(tmp_path: Path) -> None:
    """A log missing one batch: Kafka's summary, on stderr after all files."""
    full = lines(kdump("--files", PLAIN_0 + ".log").stdout)[2:]
    positions = [int(x.split(" position: ")[1].split()[0]) for x in full]
    data = (REPO / PLAIN_0).with_suffix(".log").read_bytes()
    gapped = tmp_path / "00000000000000000000.log"
    gapped.write_bytes(data[: positions[3]] + data[positions[4] :])
    removed_first = int(full[3].split("baseOffset: ")[1].split()[0])
    removed_last = int(full[3].split("lastOffset: ")[1].split()[0])
    ran = kdump("--files", str(gapped), "--deep-iteration")
    assert ran.exit_code == ERRORS
    assert lines(ran.stderr) == [
        f"Non-consecutive offsets in {gapped}",
        f"  {removed_first - 1} is followed by {removed_last + 1}",
    ]
    shallow = kdump("--files", str(gapped))  # detected with deep iteration only
    assert (shallow.exit_code, shallow.stderr) == (OK, "")


def test_summaries_of_several_files_follow_java_hashmap_order() -> None:
    indexes = sorted(str(p.relative_to(REPO)) for p in (ORACLE / "followerlive-0").glob("*.index"))
    ran = kdump("--files", ",".join(indexes), "--verify-index-only")
    assert ran.exit_code == ERRORS
    headers = [x for x in lines(ran.stderr) if not x.startswith("  ")]
    absolute = [f"{REPO}/{p}" for p in indexes]
    assert headers == [f"Mismatches in :{p}" for p in java_hashmap_order(absolute)]
    manifest = oracle_manifest()["files"]["followerlive-0"]
    key = "dumpLogSegmentsIndexMismatches_indexOffset_logOffset"
    pairs = sum(len(manifest[Path(p).name][key]) for p in indexes)
    assert len(lines(ran.stderr)) == len(headers) + pairs


def test_java_string_hash_is_javas() -> None:
    # String.hashCode() values a JVM gives (unsigned here)
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == 0x80000000  # Integer.MIN_VALUE
    # one bucket (16 buckets: 'a' = 97 and 'q' = 113 share bucket 1): insertion order
    assert java_hashmap_order(["q", "c", "a", "b"]) == ["q", "a", "b", "c"]


def unknown_control_type_log(directory: Path) -> Path:
    """txn-0's COMMIT marker batch at position 1258, its control type rewritten to 9."""
    data = bytearray((REPO / TXN_0).with_suffix(".log").read_bytes()[1258 : 1258 + 78])
    key = data.index(b"\x08\x00\x00\x00\x01", 61)  # key length 4 (zig-zag 8), version 0, COMMIT
    struct.pack_into(">h", data, key + 3, 9)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    struct.pack_into(">q", data, 0, 0)
    path = directory / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    return path


def test_unknown_control_type_is_named_once(tmp_path: Path) -> None:
    """dump renderer fix: ControlRecordType.UNKNOWN prints as 'UNKNOWN(9)', not 'UNKNOWN(9)(9)'."""
    path = unknown_control_type_log(tmp_path)
    ran = kdump("--files", str(path), "--deep-iteration")
    assert (ran.exit_code, ran.stderr) == (OK, "")
    assert lines(ran.stdout)[-1] == (
        "| offset: 0 CreateTime: 1700000000115 keySize: 4 valueSize: 6 sequence: -1 "
        "headerKeys: [] controlType: UNKNOWN(9)"
    )


@pytest.mark.parametrize(
    ("version", "release", "refused"),
    [
        (0x0100, "4.4", "256 in transaction index {txn}, supported version range is 0 to 0"),
        (0x0100, "4.3", "1 in transaction index {txn}, current version is 0"),
        (0x0001, "4.4", "1 in transaction index {txn}, supported version range is 0 to 0"),
        (-1, "4.4", "-1 in transaction index {txn}, supported version range is 0 to 0"),
    ],
)
def test_txnindex_version_not_0_prints_no_entry(
    tmp_path: Path, version: int, release: str, refused: str
) -> None:
    """TransactionIndex refuses the second entry before any is printed: Kafka 4.4's generated
    AbortedTxn any int16 but 0 (KAFKA-19562), 4.3's a first byte above 0."""
    txn = copy_segment_file("fixtures/oracle/txn-0/00000000000000000063.txnindex", tmp_path)
    patch(txn, 34, ">h", version)
    ran = kdump("--files", str(txn), "--kafka-release", release)
    assert (ran.exit_code, ran.stdout) == (ERRORS, f"Dumping {txn}\n")
    message = refused.format(txn=txn)
    assert ran.stderr == f"kdump: {txn}:34: Unexpected aborted transaction version {message}\n"


@pytest.mark.parametrize(("version", "printed"), [(0x0001, "0"), (-1, "-1")])
def test_txnindex_kafka_4_3_reads_the_first_byte_of_the_version(
    tmp_path: Path, version: int, printed: str
) -> None:
    """Up to 4.3 AbortedTxn.version() was the field's first byte: 0x0001 read as 0, -1 as -1,
    neither refused."""
    txn = copy_segment_file("fixtures/oracle/txn-0/00000000000000000063.txnindex", tmp_path)
    patch(txn, 34, ">h", version)
    ran = kdump("--files", str(txn), "--kafka-release", "4.3")
    assert ran.exit_code == 0, ran.stderr
    assert [line.split()[1] for line in lines(ran.stdout)[1:]] == ["0", printed, "0"]


def _snapshot(count: int, body: bytes, crc: int | None = None) -> bytes:
    after_crc = struct.pack(">i", count) + body
    return struct.pack(">hI", 1, crc32c(after_crc) if crc is None else crc) + after_crc


PRODUCER = struct.pack(">qhiqiqiq", 7, 1, 4, 10, 4, 1700000000000, -1, -1)


@pytest.mark.parametrize(
    ("data", "stderr"),
    [
        (b"", "null"),
        (b"\x00", "null"),
        (b"\x00\x02\x00", "Snapshot contained an unknown file version 2"),
        (b"\x00\x01\x00\x00\x00\x00\x00", "null"),
        (_snapshot(-1, b""), "non-nullable field producerEntries was serialized as null"),
        (
            _snapshot(5, b"\x00\x00"),
            "Tried to allocate a collection of size 5, but there are only 2 bytes remaining.",
        ),
        (_snapshot(2, PRODUCER), "null"),
        (_snapshot(2, PRODUCER, crc=1), "null"),  # the schema is read before the CRC is checked
    ],
)
def test_snapshot_errors_are_read_snapshots_words(tmp_path: Path, data: bytes, stderr: str) -> None:
    """ProducerStateManager.readSnapshot: the version, the generated reader, then the CRC."""
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(data)
    ran = kdump("--files", str(path))
    assert (ran.stdout, ran.stderr) == (
        f"Dumping {path}\n",
        f"Snapshot failed schema validation: {stderr}\n",
    )


def test_snapshot_bytes_after_the_last_producer_are_not_read(tmp_path: Path) -> None:
    """The generated reader stops after the producers it was told of; the CRC covers the rest."""
    path = tmp_path / "00000000000000000010.snapshot"
    path.write_bytes(_snapshot(1, PRODUCER + b"\xff" * 5))
    ran = kdump("--files", str(path))
    assert ran.stderr == ""
    assert lines(ran.stdout)[1] == (
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 4 "
        "lastOffset: 10 offsetDelta: 4 timestamp: 1700000000000"
    )


# --- the Scala tool's text (--kafka-release 4.0-4.2; the Java port from 4.3, KAFKA-14579)


def test_scala_tool_closes_a_legacy_records_crc_with_a_brace() -> None:
    log = "fixtures/oracle/legacyv1-0/00000000000000000000.log"
    java = [x for x in lines(kdump("--files", log, "--deep-iteration").stdout) if " crc: " in x]
    scala = kdump("--files", log, "--deep-iteration", "--kafka-release", "4.2").stdout
    records = [x for x in lines(scala) if x.startswith("| ")]
    assert records and all(x.endswith("}") for x in records)
    assert [x for x in lines(scala) if " crc: " in x] == [
        x + "}" if x.startswith("| ") else x for x in java
    ]


def test_scala_tool_prints_a_first_payload_without_the_indent() -> None:
    """--skip-record-metadata and a null key: ``| payload:`` from 4.3, `` payload:`` before."""
    args = ("--files", PLAIN_0 + ".log", "--print-data-log", "--skip-record-metadata")
    java, scala = lines(kdump(*args).stdout), lines(kdump(*args, "--kafka-release", "4.2").stdout)
    keyless = [i for i, x in enumerate(java) if x.startswith("| payload: ")]
    assert keyless
    for i, (j, s) in enumerate(zip(java, scala, strict=True)):
        assert s == (j[1:] if i in keyless else j)


def test_scala_tool_ends_a_snapshot_line_without_batch_metadata_with_a_space(
    tmp_path: Path,
) -> None:
    path = tmp_path / "00000000000000000010.snapshot"
    no_batch = struct.pack(">qhiqiqiq", 7, 1, -1, -1, 0, 1700000000000, 3, 5)
    path.write_bytes(_snapshot(1, no_batch))
    line = (
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: 3 currentTxnFirstOffset: "
        "OptionalLong[5] lastTimestamp: 1700000000000"
    )
    assert lines(kdump("--files", str(path)).stdout)[1] == line
    assert lines(kdump("--files", str(path), "--kafka-release", "4.2").stdout)[1] == line + " "


def test_scala_tool_lists_non_consecutive_offsets_newest_first(tmp_path: Path) -> None:
    """The Java port's TreeMap sorts them; the Scala tool prepended each to a List."""
    full = lines(kdump("--files", PLAIN_0 + ".log").stdout)[2:]
    positions = [int(x.split(" position: ")[1].split()[0]) for x in full]
    data = (REPO / PLAIN_0).with_suffix(".log").read_bytes()
    gapped = tmp_path / "00000000000000000000.log"
    gapped.write_bytes(
        data[: positions[3]] + data[positions[4] : positions[6]] + data[positions[7] :]
    )
    java = lines(kdump("--files", str(gapped), "--deep-iteration").stderr)
    scala = lines(
        kdump("--files", str(gapped), "--deep-iteration", "--kafka-release", "4.2").stderr
    )
    assert len(java) == 3 and java[1] < java[2]
    assert scala == [java[0], java[2], java[1]]


def test_scala_tool_lists_index_mismatches_as_found_newest_first(tmp_path: Path) -> None:
    """An index naming one offset twice: the Java port's TreeMap keeps one line (the last
    put), the Scala tool's List both, newest first."""
    follower = "fixtures/oracle/followerlive-0/00000000000000000386"
    index = copy_segment_file(follower + ".index", tmp_path)
    copy_segment_file(follower + ".log", tmp_path)
    entries = index.read_bytes()
    index.write_bytes(entries[:16] + entries[:8] + entries[16:24])
    java = lines(kdump("--files", str(index), "--verify-index-only").stderr)
    scala = lines(
        kdump("--files", str(index), "--verify-index-only", "--kafka-release", "4.2").stderr
    )
    assert java[0] == scala[0] == f"Mismatches in :{index}"
    assert len(scala) == len(java) + 1
    assert sorted(set(scala[1:])) == sorted(java[1:])


def test_scala_tool_names_the_record_interface_of_its_package() -> None:
    null_value = Record(5, 0, None, None, (), -1, 0, 0)
    texts = {
        release: str(message_parser("remote-log-metadata", Release.parse(release))(null_value)[1])
        for release in ("4.2", "4.3")
    }
    assert texts["4.3"].endswith('"org.apache.kafka.common.record.internal.Record.value()" is null')
    assert texts["4.2"] == texts["4.3"].replace(".record.internal.Record", ".record.Record")


# --------------------------------------------------------------------------- kdump dump


def test_dump_text_is_kafka_dump_log_output() -> None:
    files = [PLAIN_258 + ".log", PLAIN_258 + ".index", "fixtures/oracle/README.md"]
    for options in ((), ("--print-data-log",), ("--verify-index-only",)):
        assert kdump("dump", *files, *options) == kdump("--files", ",".join(files), *options)
        assert kdump("dump", "--format", "text", *files, *options) == kdump(
            "--files", ",".join(files), *options
        )


def dumped(ran: Ran) -> list[str]:
    return [x.removeprefix("Dumping ") for x in lines(ran.stdout) if x.startswith("Dumping ")]


def test_dump_globs_expand_sorted() -> None:
    ran = kdump("dump", "fixtures/oracle/lz4-0/*.index", "fixtures/oracle/txn-0/*.txnindex")
    assert (ran.exit_code, ran.stderr) == (OK, "")
    lz4 = sorted(str(p.relative_to(REPO)) for p in (ORACLE / "lz4-0").glob("*.index"))
    txn = sorted(str(p.relative_to(REPO)) for p in (ORACLE / "txn-0").glob("*.txnindex"))
    assert dumped(ran) == lz4 + txn


def test_dump_directory_dumps_its_segment_files() -> None:
    ran = kdump("dump", "fixtures/oracle/txn-0")
    assert (ran.exit_code, ran.stderr) == (OK, "")
    names = sorted(os.listdir(ORACLE / "txn-0"))
    assert dumped(ran) == [f"fixtures/oracle/txn-0/{n}" for n in names]


def test_dump_glob_without_match_exits_3() -> None:
    ran = kdump("dump", "fixtures/oracle/txn-0/*.nothing")
    assert (ran.exit_code, ran.stdout) == (BAD_INPUT, "")
    assert "fixtures/oracle/txn-0/*.nothing: no file matches" in ran.stderr


BATCH_KEYS = {
    "type", "file", "position", "base_offset", "last_offset", "count", "magic", "compression",
    "crc", "is_valid", "timestamp_type", "max_timestamp", "producer_id", "producer_epoch",
    "base_sequence", "last_sequence", "partition_leader_epoch", "is_transactional",
    "is_control", "size",
}  # fmt: skip
RECORD_KEYS = {
    "type", "offset", "timestamp", "key_size", "value_size", "sequence", "header_keys", "key",
    "value",
}  # fmt: skip


def jsonl(*args: str) -> tuple[Ran, list[dict[str, Any]]]:
    ran = kdump("dump", "--format", "jsonl", *args)
    return ran, [json.loads(x) for x in lines(ran.stdout)]


def test_jsonl_batches_and_records_carry_kafkas_values() -> None:
    path = TXN_0 + ".log"
    ran, objects = jsonl(path, "--deep-iteration")
    assert (ran.exit_code, ran.stderr) == (OK, "")
    want: list[dict[str, Any]] = []
    for b in manifest_entry(path)["batches"]:
        want.append({
            "type": "batch", "file": path, "position": b["position"],
            "base_offset": b["baseOffset"], "last_offset": b["lastOffset"], "count": b["count"],
            "magic": b["magic"], "compression": b["compresscodec"], "crc": b["crc"],
            "is_valid": b["isValid"], "timestamp_type": b["timestampType"],
            "max_timestamp": b["maxTimestamp"], "producer_id": b["producerId"],
            "producer_epoch": b["producerEpoch"], "base_sequence": b["baseSequence"],
            "last_sequence": b["lastSequence"],
            "partition_leader_epoch": b["partitionLeaderEpoch"],
            "is_transactional": b["isTransactional"], "is_control": b["isControl"],
            "size": b["sizeInBytes"],
        })  # fmt: skip
        for r in b["records"]:
            want.append({
                "type": "record", "offset": r["offset"], "timestamp": r["timestamp"],
                "key_size": r["keySize"], "value_size": r["valueSize"],
                "sequence": r["sequence"], "header_keys": r["headerKeys"],
            })  # fmt: skip
    assert len(objects) == len(want)
    for obj, expected in zip(objects, want, strict=True):
        required = BATCH_KEYS if expected["type"] == "batch" else RECORD_KEYS
        assert required <= obj.keys()
        assert {k: obj[k] for k in expected} == expected


def test_jsonl_key_and_value_go_through_the_decoders() -> None:
    records = generated_records(HEADERS)
    for decoder, encode in (("string", java_new_string), ("hex", bytes.hex)):
        ran, objects = jsonl(HEADERS, "--key-decoder", decoder, "--value-decoder", decoder)
        assert ran.exit_code == OK
        got = [(o["key"], o["value"]) for o in objects if o["type"] == "record"]
        assert got == [
            tuple(None if x is None else encode(bytes.fromhex(x)) for x in (r["key"], r["value"]))
            for r in records
        ]
        # each rendering named by its decoder (issue 29.1), null for null
        shown = [o for o in objects if o["type"] == "record"]
        assert [(o["key_encoding"], o["value_encoding"]) for o in shown] == [
            tuple(None if x is None else decoder for x in (r["key"], r["value"])) for r in records
        ]


def test_jsonl_index_and_time_index_entries_are_kafkas() -> None:
    base = "fixtures/oracle/plain-0/00000000000000000258"
    ran, objects = jsonl(base + ".index", base + ".timeindex")
    assert ran.exit_code == OK
    files = oracle_manifest()["files"]["plain-0"]
    assert [(o["type"], o["offset"], o["position"]) for o in objects[:4]] == [
        ("index_entry", o, p) for o, p in files["00000000000000000258.index"]["entryList"]
    ]
    assert [(o["type"], o["timestamp"], o["offset"]) for o in objects[4:]] == [
        ("time_index_entry", t, o) for t, o in files["00000000000000000258.timeindex"]["entryList"]
    ]


def test_jsonl_truncated_tail_and_max_bytes() -> None:
    ran, objects = jsonl(TRUNCATED)
    assert ran.exit_code == ERRORS
    assert objects[-1] == {
        "type": "truncated_tail",
        "file": TRUNCATED,
        "position": 1621,
        "bytes": 40,
    }
    # jsonl renderer fix: bytes cut off by --max-bytes are no truncated tail
    ran, objects = jsonl(PLAIN_258 + ".log", "--max-bytes", "4000")
    assert ran.exit_code == OK
    assert [o["type"] for o in objects] == ["batch"] * 4


# --------------------------------------------------------------------------- pipes


def test_closed_pipe_is_quiet() -> None:
    """`kdump ... | head -1`: the reader goes away, kdump stops without a word."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdump", "--files", BIG, "--deep-iteration"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=60) == ExitCode.PIPE_CLOSED  # cut short: 141, as shells say
    assert first == f"Dumping {BIG}\n".encode()
    assert stderr == b""


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_a_log_dir_is_dumped_as_its_partitions(tmp_path: Path, fmt: str) -> None:
    """Issue 33 point 2: ``kdump dump LOGDIR`` takes a log dir, as verify and export do (its
    own files, a lock and an empty lost+found beside the partitions), and dumps every
    partition's files in the order naming the partitions gives."""
    log_dir = tmp_path / "kafka-logs"
    for source, name in (("plain-0", "orders-0"), ("txn-0", "orders-1")):
        shutil.copytree(ORACLE / source, log_dir / name)
    (log_dir / "lost+found").mkdir()
    (log_dir / ".lock").touch()
    (log_dir / "meta.properties").write_text("version=1\nbroker.id=3\ncluster.id=abc\n")
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 5\n")
    args = ["dump", "--deep-iteration", "--format", fmt]
    whole = run_kdump([*args, str(log_dir)])
    partitions = run_kdump([*args, str(log_dir / "orders-0"), str(log_dir / "orders-1")])
    assert whole.exit_code == ExitCode.OK, whole.stderr
    assert whole == partitions and "orders-1" in whole.stdout
