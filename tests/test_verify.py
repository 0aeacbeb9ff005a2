"""`kdump verify` at library level: every case of fixtures/corrupt (made by
scripts/make_corrupt.py from Kafka-written partitions) reports its code, severity, file, position
and offset, and the exit code; the unmutated sources do not; every oracle and genuine broker
directory verifies clean; verify never writes; random damage gives findings, never an exception."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from batchbytes import v2_batch
from clirun import run_kdump
from conftest import CORRUPT, FIXTURES, ORACLE, REALFILES, oracle_manifest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.checks.findings import Finding, Severity
from kdump.checks.verify import VerifyOptions, VerifyResult, verify_paths
from kdump.commands.verify import exit_code
from kdump.errors import ExitCode, InputError
from kdump.format.walk import Pager
from kdump.speedups import pure_python

REPO = FIXTURES.parent
MAKE_CORRUPT = REPO / "scripts" / "make_corrupt.py"
NOT_A_LOG_DIR = "segmentio__kafka-go"  # hex dumps of Fetch responses, not segment files


@cache
def cases() -> dict[str, dict[str, Any]]:
    return json.loads((CORRUPT / "cases.json").read_text())  # type: ignore[no-any-return]


@cache
def documented_codes() -> frozenset[str]:
    """The finding codes docs/findings.md documents (its index table)."""
    doc = (REPO / "docs" / "findings.md").read_text()
    return frozenset(re.findall(r"^\| \[`([A-Z_]+)`\]", doc, re.M))


def options_from(args: list[str]) -> VerifyOptions:
    """The VerifyOptions the CLI builds from these extra options."""
    kw: dict[str, Any] = {}
    it = iter(args)
    for arg in it:
        if arg == "--deep":
            kw["deep"] = True
        else:
            kw[arg.removeprefix("--").replace("-", "_")] = int(next(it))
    return VerifyOptions(**kw)


def case_path(name: str, rel: str) -> str:
    return os.path.normpath(CORRUPT / name / rel)


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under ``root``: content hash, size, mtime."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            st_ = p.stat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest()
            out[str(p.relative_to(root))] = (digest, st_.st_size, st_.st_mtime_ns)
    return out


def verify_unchanged(
    root: Path, options: VerifyOptions, target: Path | None = None
) -> VerifyResult:
    """Verify ``target`` (default ``root``) and check that nothing under ``root`` changed."""
    before = snapshot(root)
    result = verify_paths([str(target or root)], options)
    assert snapshot(root) == before, f"verify changed files under {root}"
    return result


def describe(findings: list[Finding]) -> str:
    return "\n".join(
        f"  {f.severity.value} {f.code} {f.path} pos={f.position} off={f.offset}: {f.message}"
        for f in findings
    )


# --- fixtures/corrupt --------------------------------------------------------------------


def test_every_required_code_has_a_case() -> None:
    required = {
        "LOG_TRUNCATED_TAIL", "LOG_ZERO_TAIL", "LOG_CORRUPT_BATCH", "LOG_UNKNOWN_MAGIC",
        "LOG_CRC_MISMATCH",
        "LOG_OFFSET_BELOW_BASE", "LOG_OFFSET_NOT_INCREASING", "LOG_OFFSET_OVERFLOW",
        "LOG_OFFSET_GAP", "LOG_SEGMENT_OVERSIZE", "LOG_RECORD_COUNT_MISMATCH",
        "LOG_RECORD_OFFSET_OUT_OF_BATCH", "LOG_MAX_TIMESTAMP_MISMATCH", "LOG_CORRUPT_RECORD",
        "INDEX_MISALIGNED", "INDEX_PREALLOCATED", "INDEX_NOT_MONOTONIC",
        "INDEX_OFFSET_OUT_OF_RANGE", "INDEX_POSITION_BEYOND_LOG",
        "INDEX_POSITION_NOT_BATCH_BOUNDARY", "INDEX_UNSAFE_ENTRY", "INDEX_MULTI_BATCH_ENTRY",
        "INDEX_SANITY_CHECK_FAILS", "INDEX_MISSING", "INDEX_ORPHAN", "INDEX_OVERSIZE",
        "TIMEINDEX_MISALIGNED", "TIMEINDEX_PREALLOCATED", "TIMEINDEX_NOT_MONOTONIC",
        "TIMEINDEX_OFFSET_NOT_FOUND", "TIMEINDEX_TIMESTAMP_MISMATCH", "TIMEINDEX_BEHIND_MAX",
        "TIMEINDEX_SANITY_CHECK_FAILS", "TIMEINDEX_MISSING_FINAL_ENTRY", "TIMEINDEX_MISSING",
        "TXNINDEX_MISALIGNED", "TXNINDEX_NOT_MONOTONIC", "TXNINDEX_OUT_OF_RANGE",
        "SNAPSHOT_CRC_MISMATCH", "SNAPSHOT_CORRUPT", "PARTITION_SEGMENT_OVERLAP",
        "PARTITION_OFFSET_GAP", "PARTITION_LEFTOVER_FILE", "LEADER_EPOCH_INCONSISTENT",
        "PARTITION_METADATA_CORRUPT", "CHECKPOINT_CORRUPT", "CHECKPOINT_BEYOND_LOG_END",
    }  # fmt: skip
    covered = {c["code"] for c in cases().values()}
    assert required - covered == set()
    assert covered <= documented_codes(), covered - documented_codes()
    # both severities of the codes whose severity depends on where the damage is
    severities = {(c["code"], c["severity"]) for c in cases().values()}
    assert {("INDEX_PREALLOCATED", "info"), ("INDEX_PREALLOCATED", "warning")} <= severities
    assert {("CHECKPOINT_BEYOND_LOG_END", "error"), ("CHECKPOINT_BEYOND_LOG_END", "warning")} <= (
        severities
    )


def test_corrupt_fixtures_are_what_make_corrupt_writes(tmp_path: Path) -> None:
    out = tmp_path / "corrupt"
    subprocess.run([sys.executable, str(MAKE_CORRUPT), "--out", str(out)], check=True)
    committed, made = snapshot(CORRUPT), snapshot(out)
    assert sorted(committed) == sorted(made)
    differ = [p for p in committed if committed[p][0] != made[p][0]]
    assert differ == [], f"regenerate with: python scripts/make_corrupt.py ({differ[:5]})"


def test_corrupt_fixtures_stay_small() -> None:
    total = sum(size for _, size, _ in snapshot(CORRUPT).values())
    assert total < 3 * 2**20


@pytest.mark.parametrize("name", sorted(cases()))
def test_case_reports_its_code(name: str) -> None:
    c = cases()[name]
    target = Path(case_path(name, c["target"]))
    root = CORRUPT / name if (CORRUPT / name).exists() else target
    result = verify_unchanged(root, options_from(c["options"]), target)
    want_path = case_path(name, c["path"])
    hits = [f for f in result.findings if f.code == c["code"]]
    matching = [
        f
        for f in hits
        if os.path.normpath(f.path) == want_path
        and f.severity is Severity(c["severity"])
        and (c["position"] is None or f.position == c["position"])
        and (c["offset"] is None or f.offset == c["offset"])
    ]
    assert matching, (
        f"{name}: want {c['severity']} {c['code']} at {want_path} position={c['position']} "
        f"offset={c['offset']}; got\n{describe(result.findings)}"
    )
    assert exit_code(result, "error") == c["exit_code"], describe(result.findings)
    assert {f.code for f in result.findings} <= documented_codes()


@pytest.mark.parametrize(
    ("name", "clean"), [(n, d) for n in sorted(cases()) for d in cases()[n]["clean"]]
)
def test_clean_source_lacks_the_code(name: str, clean: str) -> None:
    c = cases()[name]
    result = verify_paths([str(FIXTURES / clean)], options_from(c["clean_options"]))
    assert [f for f in result.findings if f.code == c["code"]] == []


# --- Kafka-written and genuine directories verify clean ------------------------------------

ORACLE_DIRS = sorted(p.name for p in ORACLE.iterdir() if p.is_dir())
# What each oracle directory legitimately shows (fixtures/oracle/README.md, behaviours 1 and 5).
ORACLE_INFOS = {
    "activeprealloc-0": {
        "INDEX_PREALLOCATED",
        "TIMEINDEX_PREALLOCATED",
        "TIMEINDEX_SANITY_CHECK_FAILS",
    },
    "followerlive-0": {"INDEX_MULTI_BATCH_ENTRY"},
    "legacyv1-0": {"INDEX_MULTI_BATCH_ENTRY"},
}


@cache
def oracle_result(directory: str, deep: bool) -> VerifyResult:
    return verify_unchanged(ORACLE / directory, VerifyOptions(deep=deep))


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
@pytest.mark.parametrize("directory", ORACLE_DIRS)
def test_oracle_dir_is_healthy(directory: str, deep: bool) -> None:
    result = oracle_result(directory, deep)
    assert exit_code(result, "error") == ExitCode.OK
    assert exit_code(result, "warning") == ExitCode.OK, describe(result.findings)
    assert {f.severity for f in result.findings} <= {Severity.INFO}
    assert {f.code for f in result.findings} == ORACLE_INFOS.get(directory, set()), describe(
        result.findings
    )


@pytest.mark.parametrize("directory", ORACLE_DIRS)
def test_oracle_multi_batch_entries_are_the_ones_kafka_dump_log_reports(directory: str) -> None:
    """INDEX_MULTI_BATCH_ENTRY where DumpLogSegments --verify-index-only reports mismatches
    (manifest), with their number and first offset; nowhere else."""
    got = {
        os.path.basename(f.path): f
        for f in oracle_result(directory, False).findings
        if f.code == "INDEX_MULTI_BATCH_ENTRY"
    }
    want = {
        name: f["dumpLogSegmentsIndexMismatches_indexOffset_logOffset"]
        for name, f in oracle_manifest()["files"][directory].items()
        if name.endswith(".index") and f["dumpLogSegmentsIndexMismatches_indexOffset_logOffset"]
    }
    assert sorted(got) == sorted(want)
    for name, mismatches in want.items():
        assert got[name].offset == min(index_offset for index_offset, _ in mismatches)
        assert got[name].message.startswith(f"{len(mismatches)} of ")


def test_active_preallocated_space_is_reported_as_kafka_counts_it() -> None:
    files = oracle_manifest()["files"]["activeprealloc-0"]
    result = oracle_result("activeprealloc-0", False)
    findings = {(os.path.basename(f.path), f.code): f for f in result.findings}
    for suffix, code, entry_size in ((".index", "INDEX", 8), (".timeindex", "TIMEINDEX", 12)):
        name = f"00000000000000000225{suffix}"
        used = files[name]["entriesBeforeFirstZeroEntry"]
        f = findings[(name, f"{code}_PREALLOCATED")]
        assert f.severity is Severity.INFO
        assert f.position == used * entry_size
        assert f.message.startswith(f"{files[name]['fileSize'] - used * entry_size} zero-filled")
    # TimeIndex.sanityCheck fails on the zero tail (manifest), only an info on the active segment
    assert files["00000000000000000225.timeindex"]["sanityCheck"] != "ok"
    sanity = findings[("00000000000000000225.timeindex", "TIMEINDEX_SANITY_CHECK_FAILS")]
    assert sanity.severity is Severity.INFO
    assert files["00000000000000000225.index"]["sanityCheck"] == "ok"
    assert ("00000000000000000225.index", "INDEX_SANITY_CHECK_FAILS") not in findings


@pytest.mark.parametrize("directory", ORACLE_DIRS)
def test_oracle_summary_matches_the_manifest(directory: str) -> None:
    (report,) = oracle_result(directory, True).partitions
    files = sorted(oracle_manifest()["files"][directory].items())
    logs = [f for name, f in files if name.endswith(".log")]
    batches = [b for f in logs for b in f["batches"]]
    s = report.summary
    assert s.segments == len(logs)
    assert s.bytes == sum(f["sizeInBytes"] for f in logs)
    assert s.batches == sum(f["batchCount"] for f in logs) == len(batches)
    assert s.first_offset == batches[0]["baseOffset"]
    assert s.last_offset == batches[-1]["lastOffset"]
    assert s.records == sum(
        b["count"] if b["count"] is not None else len(b["records"]) for b in batches
    )
    stamps = [b["maxTimestamp"] for b in batches if b["maxTimestamp"] >= 0]
    assert (s.first_timestamp, s.last_timestamp) == (min(stamps), max(stamps))
    assert (s.errors, s.warnings) == (0, 0)


@pytest.mark.parametrize("directory", ["txn-0", "legacyv1-0", "variety-0"])
def test_releasing_scanned_pages_changes_nothing(
    directory: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan drops the pages it has read every Pager.window bytes (memory flat in
    segment size); releasing after every batch gives the same findings and summary, deep
    included."""
    monkeypatch.setattr(Pager, "window", 1)
    result = verify_paths([str(ORACLE / directory)], VerifyOptions(deep=True))
    want = oracle_result(directory, True)
    assert result.findings == want.findings
    assert result.summary() == want.summary()


REALFILE_DIRS = sorted(
    p.name for p in REALFILES.iterdir() if p.is_dir() and p.name != NOT_A_LOG_DIR
)


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
@pytest.mark.parametrize("directory", REALFILE_DIRS)
def test_genuine_broker_dir_is_healthy(directory: str, deep: bool) -> None:
    """Exit 0; the only warnings are INDEX_MISSING, each where a copy dropped the 10 MiB
    preallocated indexes of an unclean stop's active segment (fixtures/realfiles/SOURCES.md)."""
    result = verify_unchanged(REALFILES / directory, VerifyOptions(deep=deep))
    assert exit_code(result, "error") == ExitCode.OK, describe(result.findings)
    serious = [f for f in result.findings if f.severity is not Severity.INFO]
    assert {f.code for f in serious} <= {"INDEX_MISSING"}, describe(serious)
    for f in serious:
        index = Path(f.path)
        partition, base = index.parent, index.name.split(".")[0]
        assert not index.exists() and not (partition / f"{base}.timeindex").exists()
        assert (partition / f"{base}.log").stat().st_size > 0
        logs = sorted(p.name for p in partition.glob("*.log"))
        assert logs[-1] == f"{base}.log", "only the active segment is preallocated"
        assert not (partition.parent / ".kafka_cleanshutdown").exists()


def test_not_a_kafka_directory_is_an_input_error() -> None:
    result = verify_paths([str(REALFILES / NOT_A_LOG_DIR)], VerifyOptions())
    [error] = result.unreadable
    assert isinstance(error, InputError) and error.exit_code == ExitCode.BAD_INPUT == 3
    assert "holds no Kafka partition or log directory" in str(error)


def test_missing_path_is_an_input_error(tmp_path: Path) -> None:
    result = verify_paths([str(tmp_path / "nowhere")], VerifyOptions())
    assert [str(e) for e in result.unreadable] == [
        f"{tmp_path / 'nowhere'}: no such file or directory"
    ]


def test_an_unreadable_path_hides_nothing_of_the_others(tmp_path: Path) -> None:
    """A JBOD broker with one dead disk: every readable log dir is reported, the unreadable
    path named on stderr, exit code 3 (issue 15)."""
    from clirun import run_kdump

    gone = tmp_path / "dead-disk"
    ran = run_kdump(["verify", str(ORACLE / "plain-0"), str(gone), str(ORACLE / "txn-0")])
    assert ran.exit_code == ExitCode.BAD_INPUT
    assert ran.stderr == f"kdump: {gone}: no such file or directory\n"
    assert "plain-0" in ran.stdout and "txn-0" in ran.stdout
    alone = run_kdump(["verify", str(gone)])
    assert (alone.exit_code, alone.stdout) == (ExitCode.BAD_INPUT, "")


# --- random damage: findings, never an exception -------------------------------------------

# Small single segments: v2 with gzip and control batches, v1 wrappers (gzip/snappy/lz4), lz4 v2.
SMALL = [("txn-0", 186), ("legacyv1-0", 104), ("lz4-0", 1175), ("gzip-0", 844)]


def segment_files(directory: str, base: int) -> list[Path]:
    return sorted((ORACLE / directory).glob(f"{base:020d}.*"))


def copy_segment(directory: str, base: int, into: Path) -> Path:
    """The files of one segment in a partition directory of their own; the .log's path."""
    part = into / directory
    part.mkdir()
    for p in segment_files(directory, base):
        if p.suffix != ".snapshot":
            shutil.copyfile(p, part / p.name)
    return part / f"{base:020d}.log"


def batch_boundaries(directory: str, base: int) -> set[int]:
    f = oracle_manifest()["files"][directory][f"{base:020d}.log"]
    return {b["position"] for b in f["batches"]} | {f["sizeInBytes"]}


def log_findings(result: VerifyResult, log: Path, codes: set[str]) -> list[Finding]:
    return [f for f in result.findings if f.code in codes and f.path == str(log)]


@pytest.mark.parametrize("source", SMALL, ids=lambda s: f"{s[0]}/{s[1]}")
def test_truncation_at_and_near_every_batch_boundary(
    source: tuple[str, int], tmp_path: Path
) -> None:
    """On a boundary nothing is torn; 1, 17 (a header too short to read) or 18 bytes past one
    are a torn tail."""
    log = copy_segment(*source, tmp_path)
    original = log.read_bytes()
    boundaries = batch_boundaries(*source)
    for boundary in sorted(boundaries):
        for extra in (0, 1, 17, 18):
            size = boundary + extra
            if size > len(original) or (extra and size in boundaries):
                continue
            log.write_bytes(original[:size])
            result = verify_paths([str(log.parent)], VerifyOptions())
            torn = log_findings(result, log, {"LOG_TRUNCATED_TAIL", "LOG_CORRUPT_BATCH"})
            if extra:
                assert [(f.code, f.position) for f in torn] == [("LOG_TRUNCATED_TAIL", boundary)]
            else:
                assert torn == [], f"cut on the boundary {size}"


@pytest.mark.parametrize(("tail", "code"), [
    (bytes(11), "LOG_TRUNCATED_TAIL"),  # may be a batch's first bytes: its offset's high zeros
    (bytes(12), "LOG_ZERO_TAIL"),
    (bytes(2335), "LOG_ZERO_TAIL"),
    (bytes(2335) + b"\x01", "LOG_CORRUPT_BATCH"),  # not zeros to the end: garbage
])  # fmt: skip
def test_zeros_after_the_last_batch_are_one_finding_with_their_length(
    tmp_path: Path, tail: bytes, code: str
) -> None:
    """Issue 28.6: a power loss's zero tail was LOG_CORRUPT_BATCH ("batch size 0") and, short,
    "a torn, partial batch"; it is one finding, named for what it is, and recover clears it."""
    log = copy_segment("txn-0", 186, tmp_path)
    end = log.stat().st_size
    with open(log, "ab") as f:
        f.write(tail)
    result = verify_paths([str(log.parent)], VerifyOptions())
    damage = [f for f in result.findings if f.code.startswith("LOG_")]
    assert [(f.code, f.position) for f in damage] == [(code, end)], describe(result.findings)
    if code == "LOG_ZERO_TAIL":
        assert damage[0].severity is Severity.WARNING
        assert damage[0].message.startswith(f"{len(tail)} zero bytes after the last batch")
        assert damage[0].fix == f"kdump recover {log.parent}"
    assert run_kdump(["recover", str(log.parent)]).exit_code == ExitCode.OK
    assert log.stat().st_size == end
    again = verify_paths([str(log.parent)], VerifyOptions())
    assert [f.code for f in again.findings if f.severity is not Severity.INFO] == []


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(source=st.sampled_from(SMALL), cut=st.floats(0, 1, exclude_max=True), deep=st.booleans())
def test_truncation_is_found_unless_on_a_batch_boundary(
    source: tuple[str, int], cut: float, deep: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = copy_segment(*source, Path(tmp))
        size = int(log.stat().st_size * cut)
        with open(log, "r+b") as f:
            f.truncate(size)
        result = verify_paths([str(log.parent)], VerifyOptions(deep=deep))
    torn = log_findings(result, log, {"LOG_TRUNCATED_TAIL", "LOG_CORRUPT_BATCH"})
    if size in batch_boundaries(*source):
        assert torn == []
    else:
        assert torn, f"cut at {size}:\n{describe(result.findings)}"
        assert all(f.severity is Severity.ERROR for f in torn)
        assert exit_code(result, "error") == ExitCode.ERRORS


@PROPERTY
@given(
    source=st.sampled_from(SMALL),
    which=st.integers(0, 3),
    flips=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)), min_size=1, max_size=6
    ),
    deep=st.booleans(),
)
def test_bit_flips_give_findings_not_exceptions(
    source: tuple[str, int], which: int, flips: list[tuple[float, int]], deep: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = copy_segment(*source, Path(tmp))
        files = sorted(p for p in log.parent.iterdir() if p.stat().st_size)
        target = files[which % len(files)]
        data = bytearray(target.read_bytes())
        for where, bit in flips:
            data[int(len(data) * where)] ^= 1 << bit
        target.write_bytes(data)
        result = verify_paths([str(log.parent)], VerifyOptions(deep=deep))
    assert {f.code for f in result.findings} <= documented_codes()
    assert exit_code(result, "never") == ExitCode.OK


CRC_FIELD = {0: 12, 1: 12, 2: 17}
MAGIC_AT = 16  # where the crc field starts: legacy message, v2 batch


@PROPERTY
@given(
    source=st.sampled_from(SMALL),
    pick=st.integers(0, 10**6),
    where=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
)
def test_a_bit_flip_under_a_crc_is_a_crc_mismatch_of_that_batch(
    source: tuple[str, int], pick: int, where: float, bit: int
) -> None:
    """CRC-32C (v2) and CRC-32 (v0/v1) catch every single-bit error: a flip in the crc field
    or the bytes it covers gives LOG_CRC_MISMATCH at that batch."""
    directory, base = source
    batches = oracle_manifest()["files"][directory][f"{base:020d}.log"]["batches"]
    b = batches[pick % len(batches)]
    crc_at = CRC_FIELD[b["magic"]]
    start, end = b["position"] + crc_at, b["position"] + b["sizeInBytes"]
    position = start + int((end - start) * where)
    with tempfile.TemporaryDirectory() as tmp:
        log = copy_segment(directory, base, Path(tmp))
        data = bytearray(log.read_bytes())
        data[position] ^= 1 << bit
        log.write_bytes(data)
        result = verify_paths([str(log.parent)], VerifyOptions())
    if position == b["position"] + MAGIC_AT and data[position] not in (0, 1, 2):
        # The magic byte lies under a legacy message's CRC; a flip to another magic makes
        # the batch unreadable, which verify reports as such at the same batch.
        (unknown,) = log_findings(result, log, {"LOG_UNKNOWN_MAGIC"})
        assert unknown.position == b["position"]
        return
    (crc,) = log_findings(result, log, {"LOG_CRC_MISMATCH"})
    assert crc.position == b["position"]
    if b["magic"] == 2:
        assert crc.offset == b["baseOffset"]
    # A v0/v1 wrapper's base offset is its first inner offset, learnt by decompressing (as
    # Kafka's baseOffset() does): a flip in the payload can make it anything.


def test_a_last_offset_past_two_to_the_63_is_reported_not_raised(tmp_path: Path) -> None:
    """base_offset + lastOffsetDelta wraps in Java's long; verify reports it as Kafka sees it."""
    part = tmp_path / "topic-0"
    part.mkdir()
    first = v2_batch(0, b"", records_count=0)
    wrapped = v2_batch(2**63 - 3, b"", records_count=0, last_offset_delta=9)
    (part / "00000000000000000000.log").write_bytes(first + wrapped)
    result = verify_paths([str(part)], VerifyOptions())
    found = {(f.code, f.offset, f.position) for f in result.findings}
    assert ("LOG_OFFSET_NOT_INCREASING", 2**63 - 3, len(first)) in found
    assert ("LOG_OFFSET_OVERFLOW", 2**63 - 3, len(first)) in found
    assert exit_code(result, "error") == ExitCode.ERRORS


@pytest.mark.parametrize("command", ["verify", "txn", "explain"])
def test_a_long_path_is_printed_whole_on_a_pipe(tmp_path: Path, command: str) -> None:
    """On a pipe (cron, grep) a table is printed at its natural width: a partition path longer
    than any terminal is never cut short with an ellipsis (a CI clone path found this)."""
    from clirun import run_kdump

    deep = tmp_path.joinpath(*["a-rather-long-log-directory-name"] * 8, "txn-0")
    shutil.copytree(ORACLE / "txn-0", deep)
    ran = run_kdump([command, str(deep)])
    assert ran.stderr == "" and ran.exit_code in (0, 1, 2)  # txn-0 holds a hanging transaction
    assert "…" not in ran.stdout
    lines = ran.stdout.splitlines()
    if command == "verify":  # the log dir once above its table, the partition's name in it
        assert f"kdump verify: {deep.parent}/" in lines
        assert any(line.split()[:1] == ["txn-0"] for line in lines)
    else:
        assert any(str(deep) in line for line in lines)


@pytest.mark.parametrize("c", [True, False], ids=["C", "Python"])
@pytest.mark.parametrize("directory", ORACLE_DIRS)
def test_index_at_the_interval_kafka_wrote_it_with_is_not_denser(directory: str, c: bool) -> None:
    """Kafka writes an entry once more than index.interval.bytes were appended since the last:
    checked at the interval each oracle dir was written with (manifest), no entry is closer;
    at 16 times that, every index with an entry is reported, with the first entry. The C and
    the Python fast test find the closest entries alike."""
    interval = int(oracle_manifest()["directories"][directory]["config"]["index.interval.bytes"])
    with nullcontext() if c else pure_python():
        at_own = verify_paths(
            [str(ORACLE / directory)], VerifyOptions(index_interval_bytes=interval)
        )
        wider = verify_paths(
            [str(ORACLE / directory)], VerifyOptions(index_interval_bytes=16 * interval)
        )
    assert [f for f in at_own.findings if f.code == "INDEX_DENSER_THAN_INTERVAL"] == []
    dense = {
        os.path.basename(f.path): f
        for f in wider.findings
        if f.code == "INDEX_DENSER_THAN_INTERVAL"
    }
    files = oracle_manifest()["files"][directory]
    with_entries = {
        name: f["entryList"][0]
        for name, f in files.items()
        if name.endswith(".index") and f.get("entryList")
    }
    for name, finding in dense.items():
        assert finding.severity is Severity.INFO and name in with_entries
    first_gaps = {name: entry[1] for name, entry in with_entries.items()}
    for name, position in first_gaps.items():
        if position <= 16 * interval:  # the first entry itself is within the wider interval
            assert dense[name].offset == with_entries[name][0]


@pytest.mark.parametrize("name", ["index-not-monotonic", "timeindex-not-monotonic"])
def test_not_monotonic_is_the_formats_one_ordering_rule(name: str) -> None:
    """verify's *_NOT_MONOTONIC (found by the C walk's fast test, or its Python twin) is where the
    format's ``first_out_of_order`` says, and lookup's index trust refuses the same file."""
    from conftest import offset_index_at, time_index_at

    from kdump.segment import check_index

    c = cases()[name]
    path = Path(case_path(name, c["path"]))
    index = offset_index_at(path) if path.suffix == ".index" else time_index_at(path)
    first = index.first_out_of_order(index.used_entries)
    assert first is not None
    result = verify_paths([case_path(name, c["target"])], VerifyOptions())
    positions = [
        f.position for f in result.findings if f.code == c["code"] and Path(f.path) == path
    ]
    assert positions and min(positions) == first * index.entry_size
    log_size = path.with_suffix(".log").stat().st_size
    checked = check_index(path, index, log_size)
    assert not checked.usable and f"entry {first} " in str(checked.warning)


def test_time_index_entries_inside_batches_are_named() -> None:
    """A genuine __consumer_offsets time index (a broker before KAFKA-16310): entries name the
    first record with the largest timestamp, inside its batch. kafka-dump-log.sh's check
    reports each; verify names them once, as info, and exits 0 (docs/dump.md)."""
    repo = REALFILES / "aryan-jadon__Distributed-Kafka-Clusters"
    part = repo / "data/kafka-logs/__consumer_offsets-22"
    timeindex = part / "00000000000000000000.timeindex"
    dumped = run_kdump(["--files", str(timeindex), "--verify-index-only"])
    mismatches = [ln for ln in dumped.stderr.splitlines() if ln.startswith("Indexed offset: ")]
    assert dumped.exit_code == ExitCode.ERRORS
    assert mismatches[0] == "Indexed offset: 52, found log offset: 54"
    result = verify_paths([str(part)], VerifyOptions())
    assert [(f.code, f.severity, f.offset) for f in result.findings] == [
        ("TIMEINDEX_ENTRY_INSIDE_BATCH", Severity.INFO, 52)
    ]
    assert result.findings[0].message.startswith(f"{len(mismatches)} entries name an offset")
    assert exit_code(result, "error") == ExitCode.OK


HOLD_LOCK = """
import fcntl, sys
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fcntl(F_SETLK): Kafka's FileChannel.tryLock
print("locked", flush=True)
sys.stdin.read()
"""


@contextmanager
def lock_held(lock: Path) -> Iterator[int]:
    """A child holding ``lock`` as a live broker does, until the block ends: its pid."""
    lock.write_bytes(b"")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield holder.pid
    finally:
        holder.communicate("", timeout=30)


def test_verify_says_when_a_broker_holds_the_log_dir(tmp_path: Path) -> None:
    """A live broker holds <log dir>/.lock (a POSIX record lock): verify says so, as info, and
    takes no lock itself."""
    log_dir = tmp_path / "kafka-logs"
    shutil.copytree(ORACLE / "plain-0", log_dir / "plain-0")
    lock = log_dir / ".lock"
    lock.write_bytes(b"")
    assert [f.code for f in verify_paths([str(log_dir)], VerifyOptions()).findings] == []
    with lock_held(lock) as pid:
        for path in (log_dir, log_dir / "plain-0"):  # the log dir, or a partition in it
            result = verify_paths([str(path)], VerifyOptions())
            assert [(f.code, f.severity, f.path) for f in result.findings] == [
                ("LOG_DIR_LOCKED", Severity.INFO, str(lock))
            ]
            assert f"held by process {pid}" in result.findings[0].message
            assert exit_code(result, "warning") == ExitCode.OK
    assert [f.code for f in verify_paths([str(log_dir)], VerifyOptions()).findings] == []


def test_partitions_in_natural_order(tmp_path: Path) -> None:
    """topic-2 before topic-10, everywhere partitions are listed (one key: natural_key)."""
    from kdump.discovery import discover, natural_key

    names = ["t-10", "t-2", "t-1", "u-0", "t-0"]
    for name in names:
        shutil.copytree(ORACLE / "plain-0", tmp_path / "logs" / name)
    want = ["t-0", "t-1", "t-2", "t-10", "u-0"]
    assert sorted(names, key=natural_key) == want
    found = discover([str(tmp_path / "logs")])
    assert [t.name for t in found.partitions] == want
    result = verify_paths([str(tmp_path / "logs")], VerifyOptions())
    assert [Path(r.path).name for r in result.partitions] == want
    ran = run_kdump(["verify", str(tmp_path / "logs")])
    cells = [ln.split()[0] for ln in ran.stdout.splitlines() if ln.strip()]
    assert [c for c in cells if c in names] == want


def _startup(path: Path) -> list[str]:
    ran = run_kdump(["verify", "--format", "json", str(path)])
    (partition,) = json.loads(ran.stdout)["summary"]["by_partition"]
    return list(partition["startup"])


@pytest.mark.parametrize(
    ("case", "rebuilds"),
    [
        ("index-missing", True),  # NoSuchFileException: LogLoader recovers the segment
        ("index-sanity-check-fails", False),  # unchecked since Kafka 2.3 (KAFKA-7283)
        ("timeindex-sanity-check-fails", False),
        ("txnindex-out-of-range", False),  # ends past the segment: passes sanityCheck
    ],
)
def test_startup_rebuilds_only_what_the_broker_checks(case: str, rebuilds: bool) -> None:
    startup = _startup(FIXTURES / "corrupt" / case)
    assert any(line.startswith("rebuilds the indexes") for line in startup) is rebuilds


def test_startup_recovers_a_segment_whose_txnindex_ends_below_its_base(tmp_path: Path) -> None:
    """TransactionIndex.sanityCheck throws CorruptIndexException for an aborted transaction
    ending below the segment's base offset, and LogLoader recovers that segment."""
    partition = tmp_path / "txn-0"
    shutil.copytree(ORACLE / "txn-0", partition)
    later = sorted(partition.glob("*.log"))[1]
    base = int(later.name.split(".")[0])
    assert base > 10
    # version, producer id, first offset, last offset, last stable offset (34 bytes)
    entry = struct.pack(">hqqqq", 0, 7, 5, 10, 10)
    later.with_suffix(".txnindex").write_bytes(entry)
    assert _startup(partition) == ["rebuilds the indexes of 1 segment(s)"]


@pytest.mark.parametrize(
    "partition",
    [
        ORACLE / "activeprealloc-0",
        FIXTURES / "corrupt" / "index-sanity-check-fails",
        FIXTURES / "corrupt" / "timeindex-sanity-check-fails",
    ],
    ids=lambda p: p.name,
)
def test_no_sanity_finding_claims_a_startup_check(partition: Path) -> None:
    """Since Kafka 2.3 the broker runs no offset or time index check at startup (KAFKA-7283):
    a finding of kafka-dump-log's check must not say it does."""
    ran = run_kdump(["verify", "--format", "json", str(partition)])
    said = [f["message"] for f in json.loads(ran.stdout)["findings"] if "SANITY" in f["code"]]
    assert said and not [m for m in said if "startup check" in m], said
