"""Golden output of ``kdump --files``: the exact standard output, standard error and exit code
for a fixed set of fixtures and kafka-dump-log.sh option combinations.

There is no reference output made by Kafka's own tool in the fixtures, so the files in
tests/golden/ were written once by ``python scripts/regen_golden.py`` and then reviewed line
by line against DumpLogSegments' behaviour (FORMAT.md §8 and the dump-log research notes).
Where kdump deliberately prints something else than Kafka, the difference is listed, with its
reason, in KNOWN_DIFFERENCES below; everything else in a golden file is what Kafka prints.

Runs happen from the repository root with relative paths, so ``Dumping`` lines are stable; the
absolute paths of the stderr summaries have the repository root replaced by ``<REPO>``.
Each golden case keeps at most one file per summary section, because Kafka orders the files of
one section by java.util.HashMap over their absolute paths (tests/test_cli_dump.py covers that).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import NamedTuple

import pytest
from clirun import Ran, run_kdump
from conftest import ORACLE, REPO, oracle_files, oracle_manifest
from purepython import python_if

GOLDEN = REPO / "tests" / "golden"
REPO_PLACEHOLDER = "<REPO>"

KNOWN_DIFFERENCES: list[tuple[str, str]] = [
    (
        "first record is never non-consecutive",
        "Kafka's Java port (tools module, 2026) starts its non-consecutive check with prev = -1 "
        "and reports '-1 is followed by <first offset>' for every segment whose first record is "
        "not offset 0; the Scala tool skipped the first record. kdump keeps the Scala behaviour "
        "(a porting regression is not worth copying): see plain-258-deep.",
    ),
    (
        "exit code",
        "kafka-dump-log.sh exits 0 even when it reported problems; kdump exits 2 whenever it "
        "reported one (index mismatches, time index errors, invalid batches, a truncated tail, "
        "a file it could not dump), 3 when a file could not be read (KAFKA-20078, issue 2).",
    ),
    (
        "one error line instead of a stack trace, and the run goes on",
        "Where DumpLogSegments throws (size below 14, a failed --index-sanity-check, an index "
        "position with no batch, a missing file), it prints a stack trace, skips the remaining "
        "files and the summaries. kdump prints one 'kdump: PATH...: reason' line on stderr, "
        "dumps the other files and still prints the summaries: see activeprealloc-225-sanity.",
    ),
    (
        "Log starting offset of a missing .log",
        "Kafka prints 'Log starting offset: N' before it opens the file; kdump checks that the "
        "file exists first, so a missing .log gives 'Dumping PATH' and the error line only.",
    ),
    (
        "malformed control records",
        "A control record whose key is null or shorter than 4 bytes, or a marker value shorter "
        "than 6 bytes, makes Kafka throw; kdump prints 'controlType: UNKNOWN(-1)' or "
        "'coordinatorEpoch: ?' and goes on.",
    ),
    (
        "file names",
        "Kafka aborts on a --files element without a dot and parses any number before the first "
        "dot as the base offset; kdump ignores dotless names as unknown files and wants the "
        "20-digit names Kafka writes.",
    ),
    (
        "magic above 2 and impossible v2 sizes",
        "Kafka reads any magic >= 2 as a v2 batch, even when its size cannot hold a v2 header; "
        "kdump reports such a batch as corrupt at its position.",
    ),
    (
        "records newer than kdump's schemas",
        "Kafka's generated readers read a metadata or remote-log-metadata record of an unknown "
        "version with the newest layout they know; kdump refuses it with the words Kafka gives a "
        "record that does not read ('Failed to deserialize record with type T') rather than "
        "guess (issue 14). Coordinator records are refused by Kafka itself (UnknownRecordVersion).",
    ),
    (
        "time index verification reads lazily",
        "The Java tool reads every batch to the end of the log for each time index entry (the "
        "Scala one stopped at the match), so a corrupt batch after the match aborts it; kdump "
        "stops at the match like the Scala tool.",
    ),
    (
        "non-consecutive offsets past 100,000 per log are counted, not listed",
        "Kafka keeps every non-consecutive pair until the end of the run (a TreeMap in the Java "
        "tool, a list in the Scala one): a 22 KB batch of 38 M records sharing one offset made "
        "that gigabytes (issue 27). kdump keeps the first 100,000 per log (one per offset, as the "
        "TreeMap does, from 4.3) and ends that log's list with '  ... and N more, not kept "
        "(kdump keeps 100000)'.",
    ),
]
"""Where ``kdump --files`` deliberately differs from kafka-dump-log.sh, and why."""

ORA = "fixtures/oracle/"
GEN = "fixtures/generated/"
PLAIN_258 = ORA + "plain-0/00000000000000000258"
FOLLOWER_0 = ORA + "followerlive-0/00000000000000000000"
PREALLOC_225 = ORA + "activeprealloc-0/00000000000000000225"
LEGACY_0 = ORA + "legacyv1-0/00000000000000000000"
LEGACY_104 = ORA + "legacyv1-0/00000000000000000104"
TXN_0 = ORA + "txn-0/00000000000000000000"
TXN_63 = ORA + "txn-0/00000000000000000063"
TXN_186 = ORA + "txn-0/00000000000000000186"
TXN_218 = ORA + "txn-0/00000000000000000218"
VARIETY_0 = ORA + "variety-0/00000000000000000000"
VARIETY_7 = ORA + "variety-0/00000000000000000007"
LZ4_1175 = ORA + "lz4-0/00000000000000001175"
GZIP_844 = ORA + "gzip-0/00000000000000000844"
HEADERS = GEN + "headers-0/00000000000000000000.log"
TRUNCATED = GEN + "truncated-0/00000000000000000000.log"
BADCRC = GEN + "badcrc-0/00000000000000000000.log"
MALFORMED_UTF8 = GEN + "malformed-utf8-0/00000000000000000000.log"
TIMEINDEX_NOT_FOUND = (
    "fixtures/corrupt/timeindex-offset-not-found/txn-0/00000000000000000000.timeindex"
)
INTERNAL = "fixtures/internal/"
SEGMENT = "00000000000000000000.log"


class Case(NamedTuple):
    name: str
    args: tuple[str, ...]
    exit_code: int


def case(name: str, files: Sequence[str], *options: str, exit_code: int = 0) -> Case:
    return Case(name, ("--files", ",".join(files), *options), exit_code)


CASES: list[Case] = [
    # plain v2, uncompressed; a segment whose first offset is not 0
    case("plain-258", [PLAIN_258 + ".log"]),
    case("plain-258-deep", [PLAIN_258 + ".log"], "--deep-iteration"),
    case("plain-258-data", [PLAIN_258 + ".log"], "--print-data-log"),
    case("plain-258-data-skip", [PLAIN_258 + ".log"], "--print-data-log", "--skip-record-metadata"),
    case("plain-258-deep-skip", [PLAIN_258 + ".log"], "--deep-iteration", "--skip-record-metadata"),
    case("plain-258-max-bytes", [PLAIN_258 + ".log"], "--deep-iteration", "--max-bytes", "4000"),
    case("plain-258-max-bytes-0", [PLAIN_258 + ".log"], "--max-bytes", "0"),
    case(
        "plain-258-segment",
        [PLAIN_258 + s for s in (".log", ".index", ".timeindex", ".snapshot")],
    ),
    case(
        "plain-258-verify-index-only",
        [PLAIN_258 + ".index", PLAIN_258 + ".timeindex"],
        "--verify-index-only",
    ),
    case(
        "plain-258-sanity",
        [PLAIN_258 + ".index", PLAIN_258 + ".timeindex"],
        "--index-sanity-check",
    ),
    # codecs
    case("gzip-844-data", [GZIP_844 + ".log"], "--print-data-log"),
    case(
        "lz4-1175-segment",
        [LZ4_1175 + s for s in (".log", ".index", ".timeindex")],
        "--deep-iteration",
    ),
    case("snappy-deep", [GEN + "snappy-0/00000000000000000000.log"], "--deep-iteration"),
    case("zstd-deep", [GEN + "zstd-0/00000000000000000000.log"], "--deep-iteration"),
    # legacy magic v0 and v1
    case("legacyv1-0", [LEGACY_0 + ".log"]),
    case("legacyv1-0-data", [LEGACY_0 + ".log"], "--print-data-log"),
    case(
        "legacyv1-0-indexes",
        [LEGACY_0 + ".index", LEGACY_0 + ".timeindex"],
        exit_code=2,
    ),
    case(
        "legacyv1-104-segment",
        [LEGACY_104 + s for s in (".log", ".index", ".timeindex")],
        "--deep-iteration",
        "--skip-record-metadata",
    ),
    case("v0-data", [GEN + "v0-0/00000000000000000000.log"], "--print-data-log"),
    case("v1-data", [GEN + "v1-0/00000000000000000000.log"], "--print-data-log"),
    # transactions: control markers, txn index, producer snapshots
    case("txn-0-deep", [TXN_0 + ".log"], "--deep-iteration"),
    case("txn-0-data", [TXN_0 + ".log"], "--print-data-log"),
    case("txn-186-data-skip", [TXN_186 + ".log"], "--print-data-log", "--skip-record-metadata"),
    case(
        "txn-txnindex-snapshot",
        [
            TXN_0 + ".txnindex",
            TXN_63 + ".txnindex",
            TXN_63 + ".snapshot",
            TXN_186 + ".txnindex",
            TXN_186 + ".snapshot",
            TXN_218 + ".snapshot",
        ],
    ),
    case("idempotent-deep", [GEN + "idempotent-0/00000000000000000000.log"], "--deep-iteration"),
    # headers, null and empty keys and values, unicode, binary, decoders
    case("variety-0-data", [VARIETY_0 + ".log"], "--print-data-log", "--max-bytes", "324"),
    case(
        "variety-0-data-hex",
        [VARIETY_0 + ".log"],
        "--max-bytes",
        "324",
        "--key-decoder-class",
        "hex",
        "--value-decoder-class",
        "hex",
    ),
    case("variety-7-deep", [VARIETY_7 + ".log"], "--deep-iteration"),
    case("variety-0-indexes", [VARIETY_0 + ".index", VARIETY_0 + ".timeindex"]),
    case("headers-data", [HEADERS], "--print-data-log"),
    case("headers-base64", [HEADERS], "--value-decoder-class", "base64"),
    case("headers-key-hex", [HEADERS], "--key-decoder-class", "hex", "--skip-record-metadata"),
    # keys, values and header values that are not UTF-8: Java's replacement, rule by rule
    case("malformed-utf8-data", [MALFORMED_UTF8], "--print-data-log"),
    # indexes written the way a follower appends: every entry is a DumpLogSegments mismatch
    case("followerlive-0-indexes", [FOLLOWER_0 + ".index", FOLLOWER_0 + ".timeindex"], exit_code=2),
    case(
        "followerlive-0-verify-index-only",
        [FOLLOWER_0 + ".index", FOLLOWER_0 + ".timeindex"],
        "--verify-index-only",
        exit_code=2,
    ),
    # an active segment's preallocated index and time index
    case("activeprealloc-225-indexes", [PREALLOC_225 + ".index", PREALLOC_225 + ".timeindex"]),
    case(
        "activeprealloc-225-sanity",
        [PREALLOC_225 + ".index", PREALLOC_225 + ".timeindex", PLAIN_258 + ".index"],
        "--index-sanity-check",
        exit_code=2,
    ),
    # damage: a truncated tail, a flipped bit, a file kdump does not know
    case("truncated", [TRUNCATED], exit_code=2),
    case("truncated-deep", [TRUNCATED], "--deep-iteration", exit_code=2),
    case("truncated-max-bytes", [TRUNCATED], "--max-bytes", "1661", exit_code=0),
    case("badcrc-deep", [BADCRC], "--deep-iteration", exit_code=2),
    case("unknown-file", [ORA + "README.md", TXN_186 + ".txnindex"]),
    # Kafka 4.3 names the time index in this summary; 4.2 and older said "... in the log."
    case("timeindex-not-found", [TIMEINDEX_NOT_FOUND], exit_code=2),
    case("timeindex-not-found-4.2", [TIMEINDEX_NOT_FOUND], "--kafka-release", "4.2", exit_code=2),
    # internal topics as Kafka 4.1-4.4 write them (fixtures/internal/README.md)
    case("internal-offsets", [INTERNAL + "__consumer_offsets-0/" + SEGMENT], "--offsets-decoder"),
    case(
        "internal-transactions",
        [INTERNAL + "__transaction_state-0/" + SEGMENT],
        "--transaction-log-decoder",
    ),
    # Kafka 4.3 and older print the transaction state's id
    case(
        "internal-transactions-4.3",
        [INTERNAL + "__transaction_state-0/" + SEGMENT],
        "--transaction-log-decoder",
        "--kafka-release",
        "4.3",
    ),
    case(
        "internal-share-group-state",
        [INTERNAL + "__share_group_state-0/" + SEGMENT],
        "--share-group-state-decoder",
    ),
    case(
        "internal-remote-log-metadata",
        [INTERNAL + "__remote_log_metadata-0/" + SEGMENT],
        "--remote-log-metadata-decoder",
        "--skip-record-metadata",
    ),
    case(
        "internal-cluster-metadata",
        [
            INTERNAL + "__cluster_metadata-0/" + SEGMENT,
            INTERNAL + "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint",
        ],
        "--cluster-metadata-decoder",
    ),
]


def run_case(c: Case) -> Ran:
    ran = run_kdump(c.args, REPO)
    root = str(REPO)
    return ran._replace(
        stdout=ran.stdout.replace(root, REPO_PLACEHOLDER),
        stderr=ran.stderr.replace(root, REPO_PLACEHOLDER),
    )


def golden_paths(c: Case) -> tuple[Path, Path]:
    return GOLDEN / f"{c.name}.out", GOLDEN / f"{c.name}.err"


def read_golden(path: Path) -> str:
    """A golden file's text; a missing .err file means an empty standard error."""
    if not path.exists() and path.suffix == ".err":
        return ""
    return path.read_bytes().decode("utf-8")


def first_difference(expected: str, got: str) -> str | None:
    """The first differing line pair, for a readable failure."""
    pairs = zip_longest(expected.split("\n"), got.split("\n"), fillvalue="<end of output>")
    for i, (a, b) in enumerate(pairs):
        if a != b:
            return f"line {i + 1}:\n  golden: {a!r}\n  kdump:  {b!r}"
    return None


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_golden(c: Case) -> None:
    assert_golden(c, run_case(c))


PAYLOAD_CASES = [c for c in CASES if c.name in ("malformed-utf8-data", "variety-0-data")]


@pytest.mark.parametrize("c", PAYLOAD_CASES, ids=[c.name for c in PAYLOAD_CASES])
def test_golden_payloads_in_pure_python(c: Case) -> None:
    """The cases whose payloads are not UTF-8 give the same bytes without the C renderer."""
    with python_if(True):
        ran = run_case(c)
    assert_golden(c, ran)


def assert_golden(c: Case, ran: Ran) -> None:
    out_path, err_path = golden_paths(c)
    for stream, path, got in (("stdout", out_path, ran.stdout), ("stderr", err_path, ran.stderr)):
        diff = first_difference(read_golden(path), got)
        if diff is not None:
            pytest.fail(f"{c.name}: {stream} differs from {path.name} at {diff}", pytrace=False)
    assert ran.exit_code == c.exit_code


def test_case_names_are_unique_and_golden_files_have_cases() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    owned = {p.name for c in CASES for p in golden_paths(c)}
    stray = sorted(
        p.name for p in GOLDEN.iterdir() if p.name not in owned and not p.name.startswith(".")
    )
    assert stray == [], "golden files without a case: run scripts/regen_golden.py"


def _pairs(stderr: str, prefix: str) -> list[list[int]]:
    pairs = []
    for line in stderr.splitlines():
        if line.startswith(prefix):
            a, b = line[len(prefix) :].split(", ")
            pairs.append([int(a), int(b.rsplit(" ", 1)[1])])
    return pairs


@pytest.mark.parametrize(("directory", "name"), oracle_files(".index"))
def test_index_verification_reports_what_kafka_reports(directory: str, name: str) -> None:
    """The stderr mismatch summary lists the pairs DumpLogSegments' check gave on Kafka's side,
    in its order (descending index offset), and nothing else."""
    expected = oracle_manifest()["files"][directory][name]
    kafka_pairs = expected["dumpLogSegmentsIndexMismatches_indexOffset_logOffset"]
    path = (ORACLE / directory / name).relative_to(REPO)
    ran = run_kdump(["--files", str(path), "--verify-index-only"], REPO)
    empty = f"{path} is empty.\n" if expected["entries"] == 0 else ""
    assert ran.stdout == f"Dumping {path}\n{empty}"
    assert _pairs(ran.stderr, "  Index offset: ") == sorted(kafka_pairs, reverse=True)
    header = [f"Mismatches in :{REPO / path}"] if kafka_pairs else []
    assert [line for line in ran.stderr.splitlines() if not line.startswith("  ")] == header
    assert ran.exit_code == (2 if kafka_pairs else 0)


@pytest.mark.parametrize(("directory", "name"), oracle_files(".timeindex"))
def test_time_index_verification_reports_what_kafka_reports(directory: str, name: str) -> None:
    expected = oracle_manifest()["files"][directory][name]
    path = (ORACLE / directory / name).relative_to(REPO)
    ran = run_kdump(["--files", str(path), "--verify-index-only"], REPO)
    assert expected["dumpLogSegmentsTimeIndexErrors"] == []
    assert (ran.exit_code, ran.stdout, ran.stderr) == (0, f"Dumping {path}\n", "")
