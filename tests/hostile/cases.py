"""The hostile inputs, one table: what each is, how to build it at a size, the kdump command
that reads it, and the memory it may take. tests/hostile/test_hostile.py runs every case small
(a cap well below what unbounded code needs, seconds in all); bench/bench_hostile.py runs them
at the sizes of the security review (issue 27) and prints peak RSS against the bound.

A new decoder joins by adding a row: a builder of the bytes that make it allocate what they
claim, and the command that decodes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from hostile.bombs import (
    BLOCK,
    EMPTY_HEADER,
    EMPTY_RECORD,
    EMPTY_V0_MESSAGE,
    ZSTD,
    aiven_segment,
    compressed,
    fixed_index,
    header_bomb,
    invalid_batch,
    legacy_message,
    legacy_wrapper_bomb,
    metadata_log_dir,
    record_bomb,
    value_bomb,
    variable_index_claiming,
    write_segment,
)
from hostile.runner import PYTHON

MIB = 1 << 20
MB = 1_000_000
DEFAULT_MAX_BATCH_BYTES = 256 * MIB
"""kdump's --max-batch-bytes default (kdump.format.layout), the bound at the review's sizes."""
CONSTANT = 100 * MB
"""What the bound allows beyond the batch: the interpreter, kdump, its libraries, a slice."""
ADDRESS_SPACE = 150 * MB
SPARK_CONSTANT = 200 * MB
"""... for the Spark export's extraction, which loads pyarrow, numpy and pyspark's type mapping
besides: 123 MiB on a segment of a few batches, where the CLI takes 20 MiB."""

Build = Callable[[Path, int], list[str]]
"""(an empty scratch directory, the case's size) -> the kdump arguments."""


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    build: Build
    suite_size: int
    """Decompressed bytes (or chunks) in the suite: the least that proves the bound."""
    review_size: int
    """... as the security review built it."""
    decodes: bool = True
    """The bound is 2 x the batch bytes + CONSTANT; else (a manifest, nothing decoded) CONSTANT."""
    codes: tuple[int, ...] = (0, 1, 2)
    stderr: str = ""
    """A regular expression stderr matches (one clear line for refused input)."""
    suite_options: tuple[str, ...] = ("--max-batch-bytes", "{size}")
    """Given in the suite (at the review's sizes the defaults hold): the bound set as the batch's
    own size, so the suite holds kdump to the decompressed bytes it was given."""
    max_batch_bytes: int | None = None
    """A --max-batch-bytes the command gives itself: the bound, whatever the size."""
    sized_batch: bool = False
    """The command gives itself --max-batch-bytes of the case's size: the bound at both sizes."""
    constant: int = CONSTANT
    address_space: int = ADDRESS_SPACE
    """The cap on the child's address space beyond ``limit``: what the interpreter and its
    libraries map without touching (code, thread stacks, malloc's arenas)."""
    environment: dict[str, str] | None = None
    """Variables kdump runs with besides (``KDUMP_PURE_PYTHON``: the Python renderer)."""

    def args(self, tmp: Path, suite: bool) -> list[str]:
        size = self.suite_size if suite else self.review_size
        options = [o.format(size=size) for o in self.suite_options] if suite else []
        return [*self.build(tmp, size), *options]

    def limit(self, suite: bool) -> int:
        """Peak RSS allowed: 2 x the batch bytes + CONSTANT, where records are decoded (the batch
        bytes: a --max-batch-bytes the case gives, the bomb's own size in the suite, the default
        at the review's sizes)."""
        if not self.decodes:
            return self.constant
        size = self.suite_size if suite else self.review_size
        batch = self.max_batch_bytes or (
            size if suite or self.sized_batch else DEFAULT_MAX_BATCH_BYTES
        )
        return 2 * batch + self.constant


def _records(size: int) -> int:
    return size // len(EMPTY_RECORD)


def _bomb_dir(tmp: Path, size: int, **header: int) -> str:
    part = tmp / "bomb-0"
    write_segment(part, record_bomb(_records(size), **header))
    return str(part)


def _dump(*options: str) -> Build:
    return lambda tmp, size: ["dump", _bomb_dir(tmp, size), "--deep-iteration", *options]


def _lookup(tmp: Path, size: int) -> list[str]:
    return ["lookup", _bomb_dir(tmp, size), "--offset", "5"]


def _verify_deep(tmp: Path, size: int) -> list[str]:
    # a max timestamp below the records' makes the Python checks open the batch (the C pass
    # only counts clean batches)
    return ["verify", _bomb_dir(tmp, size, max_timestamp=0), "--deep"]


def _salvage(tmp: Path, size: int) -> list[str]:
    part = tmp / "logs" / "cut-0"  # the output directory may not lie in the log dir
    write_segment(part, invalid_batch() + record_bomb(_records(size), base_offset=1))
    return ["salvage", str(part), "--output-dir", str(tmp / "out")]


def _txn(tmp: Path, size: int) -> list[str]:
    # a commit marker batch (transactional, control) whose payload is the bomb
    header = {"attributes": 0x30, "producer_id": 7, "producer_epoch": 0}
    return ["txn", _bomb_dir(tmp, size, **header)]


def _explain(tmp: Path, size: int) -> list[str]:
    part = tmp / "bomb-0"
    # the cleaner reads segments below the active one: the bomb, then a segment after it
    write_segment(part, record_bomb(_records(size)))
    write_segment(part, record_bomb(1, base_offset=11), base_offset=11)
    return [
        "explain",
        str(part),
        "--config",
        "cleanup.policy=compact",
        "--config",
        "min.cleanable.dirty.ratio=0",
    ]


_SPARK_EXTRACT = """
import sys
from kdump.spark.extract import SegmentExport, segment_tasks
from kdump.spark.schema import RECORD_SCHEMA, arrow_schema
rows = 0
for task in segment_tasks(sys.argv[1:]):
    rows += sum(b.num_rows for b in SegmentExport(task, arrow_schema(RECORD_SCHEMA)).batches())
print(rows)
"""


def _spark_extract(tmp: Path, size: int) -> list[str]:
    # what each task of `kdump spark export` runs, without a Spark session around it
    return [PYTHON, _SPARK_EXTRACT, _bomb_dir(tmp, size)]


def _legacy(*command: str) -> Build:
    def build(tmp: Path, size: int) -> list[str]:
        part = tmp / "legacy-0"
        write_segment(part, legacy_wrapper_bomb(size // len(EMPTY_V0_MESSAGE)))
        return [command[0], str(part), *command[1:]]

    return build


def _aiven(chunk_index: Callable[[int], dict[str, object]], log_size: int) -> Build:
    def build(tmp: Path, size: int) -> list[str]:
        return ["dump", aiven_segment(tmp / "bucket", chunk_index(size), bytes(log_size))]

    return build


def _aiven_zeros(tmp: Path, size: int) -> list[str]:
    """One compressed chunk of ``size`` zero bytes (a zstd frame of 1 GiB is 32 KB)."""
    log = compressed(bytes(BLOCK), size // BLOCK, ZSTD)
    index = fixed_index(size, size, len(log), len(log))
    return ["dump", aiven_segment(tmp / "bucket", index, log, compression=True)]


def _headers(*command: str) -> Build:
    """``command`` (its first word) over a partition whose one record holds ``size`` bytes of
    empty headers (issue 39: 10 M took a JSON Lines dump to 1.5 GB)."""

    def build(tmp: Path, size: int) -> list[str]:
        part = tmp / "headers-0"
        write_segment(part, header_bomb(size // len(EMPTY_HEADER)))
        return [command[0], str(part), *command[1:]]

    return build


def _salvage_headers(tmp: Path, size: int) -> list[str]:
    part = tmp / "logs" / "cut-0"
    write_segment(part, invalid_batch() + header_bomb(size // len(EMPTY_HEADER), base_offset=1))
    return ["salvage", str(part), "--output-dir", str(tmp / "out")]


def _value(byte: int, *command: str, header: bool = False) -> Build:
    """``command`` over a partition whose one record's value is ``size`` copies of ``byte``:
    0x01, UTF-8 that JSON escapes six bytes a byte (a 64 MB value took a JSON Lines dump to
    683 MB, against a bound of 228 MB); 0x80, no UTF-8, which Kafka's StringDecoder prints as a
    U+FFFD a byte (three bytes). ``header``: a header's value instead."""

    def build(tmp: Path, size: int) -> list[str]:
        part = tmp / "value-0"
        write_segment(part, value_bomb(size - VALUE_FRAMING, byte, header=header))
        return [command[0], str(part), *command[1:], "--max-batch-bytes", str(size)]

    return build


def _legacy_value(byte: int, *command: str, header: bool = False) -> Build:
    """``command`` over a partition whose one magic v0 message's value is ``size`` copies of
    ``byte`` (less its framing): the Python renderer's line, which the C one leaves legacy
    messages to (``header``: a legacy message has none)."""
    assert not header

    def build(tmp: Path, size: int) -> list[str]:
        part = tmp / "legacy-value-0"
        write_segment(part, legacy_message(0, 0, bytes([byte]) * (size - VALUE_FRAMING)))
        return [command[0], str(part), *command[1:], "--max-batch-bytes", str(size)]

    return build


def _replicas(*command: str) -> Build:
    """``command`` over a log dir whose metadata log holds one PartitionRecord of ``size``
    bytes of replicas (issue 39: 30 M took ``kdump metadata`` to 3.2 GB, verify to 1.09 GB)."""

    def build(tmp: Path, size: int) -> list[str]:
        log_dir = metadata_log_dir(tmp / "logdir", size // 4)
        where = log_dir / "__cluster_metadata-0" if command[0] == "metadata" else log_dir
        return [command[0], str(where), *command[1:]]

    return build


HEADERS_BATCH = 32 * MIB
"""The review's --max-batch-bytes for its header bomb (``dump --format jsonl --max-batch-bytes
32MiB``): the payload fits, so the record is decoded, and the bound is 2 x 32 MiB + 100 MB."""
REVIEW_HEADERS = 10_000_000 * len(EMPTY_HEADER)
"""The review's: 10 M empty headers in one record (20 MB in a 1.8 KB file)."""
BATCH_OPTION = ("--max-batch-bytes", str(HEADERS_BATCH))
REVIEW_REPLICAS = 30_000_000 * 4
REVIEW_VALUE = 64 * MB
"""The review's value of control bytes: 64 MB, dumped with --max-batch-bytes 64MB (the bound:
2 x 64 MB + 100 MB)."""
VALUE_FRAMING = 64
"""What the record around the value takes of --max-batch-bytes (a value of the size less this)."""

REVIEW_RECORDS = 38_000_000 * len(EMPTY_RECORD)
"""The review's bomb: 38 M records of 7 bytes (266 MB, within the 256 MiB default)."""

CASES = [
    Case("dump-text", "dump --deep-iteration of a record bomb", _dump(), 8 * MIB, REVIEW_RECORDS),
    Case(
        "dump-jsonl",
        "dump --format jsonl --deep-iteration of a record bomb",
        _dump("--format", "jsonl"),
        8 * MIB,
        REVIEW_RECORDS,
    ),
    Case(
        "lookup",
        "lookup --offset 5 through a record bomb",
        _lookup,
        32 * MIB,
        REVIEW_RECORDS,
        suite_options=(),
    ),
    Case(
        "verify-deep",
        "verify --deep of a record bomb the C pass flags",
        _verify_deep,
        32 * MIB,
        REVIEW_RECORDS,
    ),
    Case(
        "salvage",
        "salvage of a record bomb behind an invalid batch",
        _salvage,
        32 * MIB,
        REVIEW_RECORDS,
        codes=(3,),
        stderr=r"would pass \d+ bytes \(--max-output-bytes\)",
        suite_options=("--max-output-bytes", str(MIB)),
    ),
    Case(
        "txn",
        "txn over a commit marker batch holding a record bomb",
        _txn,
        32 * MIB,
        REVIEW_RECORDS,
        suite_options=(),
    ),
    Case(
        "explain",
        "explain compaction reading a record bomb",
        _explain,
        32 * MIB,
        REVIEW_RECORDS,
        suite_options=(),
    ),
    Case(
        "spark-extract",
        "the Spark export's extraction of a record bomb",
        _spark_extract,
        8 * MIB,
        REVIEW_RECORDS,
        suite_options=(),
        constant=SPARK_CONSTANT,
        address_space=1500 * MB,  # pyarrow's allocator maps 1.4 GB up front
    ),
    Case(
        "legacy-verify",
        "plain verify of a gzip v0 wrapper of inner messages",
        _legacy("verify"),
        16 * MIB,
        7_800_000 * len(EMPTY_V0_MESSAGE),
    ),
    Case(
        "legacy-dump",
        "plain dump of a gzip v0 wrapper of inner messages",
        _legacy("dump"),
        16 * MIB,
        7_800_000 * len(EMPTY_V0_MESSAGE),
    ),
    Case(
        "legacy-limit",
        "plain verify of a wrapper past --max-batch-bytes (the limit honoured)",
        _legacy("verify", "--max-batch-bytes", str(MIB)),
        64 * MIB,
        7_800_000 * len(EMPTY_V0_MESSAGE),
        suite_options=(),
        max_batch_bytes=MIB,
    ),
    Case(
        "headers-jsonl",
        "dump --format jsonl --deep-iteration of a record of empty headers",
        _headers("dump", "--format", "jsonl", "--deep-iteration", *BATCH_OPTION),
        8 * MIB,
        REVIEW_HEADERS,
        suite_options=(),
        max_batch_bytes=HEADERS_BATCH,
    ),
    Case(
        "headers-text",
        "dump --deep-iteration of a record of empty headers",
        _headers("dump", "--deep-iteration", *BATCH_OPTION),
        8 * MIB,
        REVIEW_HEADERS,
        suite_options=(),
        max_batch_bytes=HEADERS_BATCH,
    ),
    Case(
        "headers-lookup",
        "lookup --format json of a record of empty headers",
        _headers("lookup", "--offset", "0", "--format", "json"),
        8 * MIB,
        REVIEW_HEADERS,
        codes=(0, 1, 2, 3),
        suite_options=(),
    ),
    Case(
        "headers-verify-deep",
        "verify --deep of a record of empty headers",
        _headers("verify", "--deep", *BATCH_OPTION),
        8 * MIB,
        REVIEW_HEADERS,
        suite_options=(),
        max_batch_bytes=HEADERS_BATCH,
    ),
    Case(
        "headers-salvage",
        "salvage of a record of empty headers behind an invalid batch",
        _salvage_headers,
        8 * MIB,
        REVIEW_HEADERS,
        suite_options=(),
    ),
    Case(
        "replicas-metadata",
        "kdump metadata of a PartitionRecord of millions of replicas",
        _replicas("metadata"),
        32 * MIB,
        REVIEW_REPLICAS,
        suite_options=(),
    ),
    Case(
        "replicas-verify",
        "verify of a log dir whose metadata log holds a PartitionRecord of millions of replicas",
        _replicas("verify"),
        32 * MIB,
        REVIEW_REPLICAS,
    ),
    Case(
        "aiven-variable",
        "an Aiven variable chunk index claiming 2^31-1 chunks",
        _aiven(lambda n: variable_index_claiming(n, 200), 0),
        2**31 - 1,
        2**31 - 1,
        decodes=False,
        codes=(3,),
        stderr=r"chunk",
        suite_options=(),
    ),
    Case(
        "aiven-fixed",
        "an Aiven fixed chunk index of 1-byte chunks over a large file",
        _aiven(lambda n: fixed_index(1, n, 1, 1), 32 << 10),
        10**8,
        3 * 10**9,
        decodes=False,
        codes=(3,),
        stderr=r"chunk",
        suite_options=(),
    ),
    Case(
        "aiven-chunk-size",
        "an Aiven chunk of 1 GiB (zeros, zstd) in a 32 KB object",
        _aiven_zeros,
        1 << 30,
        1 << 30,
        decodes=False,
        codes=(3,),
        stderr=r"chunk",
        suite_options=(),
    ),
]

_JSONL = ("dump", "--format", "jsonl", "--deep-iteration")
_TEXT = ("dump", "--deep-iteration", "--print-data-log")
_VALUES = [
    # name, what, the value's byte and command, header, a legacy message
    ("value-jsonl", "a record whose value is control bytes", 0x01, _JSONL, False, False),
    (
        "header-value-jsonl",
        "a record whose header's value is control bytes",
        0x01,
        _JSONL,
        True,
        False,
    ),
    ("value-text", "a record whose value is not UTF-8", 0x80, _TEXT, False, False),
    ("legacy-value-jsonl", "a v0 message whose value is control bytes", 0x01, _JSONL, False, True),
    ("legacy-value-text", "a v0 message whose value is not UTF-8", 0x80, _TEXT, False, True),
]
"""A value (or header's value) of many MB that a line shows: kept as it is, a line of 6 bytes
a byte in JSON (control bytes) or 3 in text (U+FFFD); a legacy message's line is the Python
renderer's."""
CASES += [
    Case(
        name,
        f"{' '.join(command)} of {what}",
        (_legacy_value if legacy else _value)(byte, *command, header=header),
        16 * MIB,
        REVIEW_VALUE,
        suite_options=(),
        sized_batch=True,
    )
    for name, what, byte, command, header, legacy in _VALUES
]
PURE_PYTHON = {"KDUMP_PURE_PYTHON": "1"}
CASES += [
    replace(
        case,
        name=f"pure-{case.name}",
        what=f"{case.what}, by the Python renderer (KDUMP_PURE_PYTHON=1)",
        environment=PURE_PYTHON,
    )
    for case in CASES
    if case.name in ("value-jsonl", "header-value-jsonl", "value-text")
]
