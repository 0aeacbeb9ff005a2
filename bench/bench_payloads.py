"""Issue 29: dumps of binary payloads, large and small batches, as a user runs them.

Builds (once, under bench/out/) segments of uncompressed magic v2 batches whose values are
random bytes (what Avro, Protobuf, compressed or encrypted values are to a decoder: not UTF-8)
or JSON-like text, ~100 bytes each, keys ``key-NNNNNN``, a header on every fourth record, in
three batch sizes: 16 KiB (~125 records), 1 KiB (~8 records) and one-record batches of ~150
bytes (a broker's usual). Then, each command a child process writing into ``wc -l``, best of
``--runs``, interleaved round by round:

- ``json``: ``kdump dump SEG --format jsonl --deep-iteration``, the default (issue 29's target:
  >= 0.5 M lines/s on binary values, as a whole command);
- ``json-base64``: the same with ``--key-decoder base64 --value-decoder base64``, the peer
  that writes the same lines with no UTF-8 test (every key and value base64);
- ``text``: ``kdump --files SEG --deep-iteration --print-data-log`` (kafka-dump-log's text).

Every figure is lines/s, with the ratios of json to its peers measured in the same run.
``--tree DIR`` runs another checkout's kdump (its C module built in place: the children start
in DIR); given twice, both run, alternated command by command, for a before/after in one run.

    .venv/bin/python bench/bench_payloads.py                   # 256 MiB segments
    .venv/bin/python bench/bench_payloads.py --size-mib 32 --runs 1
    .venv/bin/python bench/bench_payloads.py --tree /tmp/kdump-before --tree .
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench_dump import OUT, REPO, T0, build_segment
from kafka.record.default_records import DefaultRecordBatchBuilder

SIZES = {"16k": 16 << 10, "1k": 1 << 10, "one": 0}
"""Batch sizes: bytes a batch is filled to; 0: one record a batch."""
VALUE_BYTES = 100


def value(kind: str, rng: random.Random, n: int) -> bytes:
    if kind == "binary":
        return rng.randbytes(VALUE_BYTES)
    text = b'{"user":"user-%04d","event":"page-view","path":"/catalog/item/%06d","ms":%d}' % (
        n % 1000,
        n,
        n % 997,
    )
    return text[:VALUE_BYTES].ljust(VALUE_BYTES, b" ")


def template(kind: str, batch_bytes: int) -> tuple[bytearray, int]:
    """One v2 batch of ~``batch_bytes`` (one record for 0) and its record count."""
    rng = random.Random(29)
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    n = 0
    while n == 0 or (batch_bytes and builder.size() + VALUE_BYTES + 60 <= batch_bytes):
        headers = [("trace-id", b"%016x" % n)] if n % 4 == 0 else []
        builder.append(n, T0 + n, b"key-%06d" % n, value(kind, rng, n), headers)
        n += 1
    return builder.build(), n


def segment(kind: str, size: str, size_mib: int) -> Path:
    path = OUT / f"payloads-{kind}-{size}-{size_mib}m" / "00000000000000000000.log"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        batches, records = build_segment(path, size_mib, 0, template(kind, SIZES[size]))
        took = time.perf_counter() - start
        print(f"built {path.relative_to(REPO)}: {batches} batches, {records} records, {took:.1f} s")
    return path


def commands(log: Path) -> dict[str, list[str]]:
    return {
        "json": ["dump", str(log), "--format", "jsonl", "--deep-iteration"],
        "json-base64": [
            "dump", str(log), "--format", "jsonl", "--deep-iteration",
            "--key-decoder", "base64", "--value-decoder", "base64",
        ],
        "text": ["--files", str(log), "--deep-iteration", "--print-data-log"],
    }  # fmt: skip


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], tree: Path) -> tuple[float, float, int]:
    """Wall and CPU time of ``kdump ARGS | wc -l`` started in ``tree``, and the lines. CPU time
    (kdump's and wc's) is the figure a shared machine does not halve: 2 cores under a load of
    10 stretch wall time about fivefold."""
    start, cpu = time.perf_counter(), children_cpu()
    kdump = subprocess.Popen(
        [sys.executable, "-m", "kdump", *args], stdout=subprocess.PIPE, cwd=tree
    )
    wc = subprocess.run(["wc", "-l"], stdin=kdump.stdout, capture_output=True, check=True)
    assert kdump.stdout is not None
    kdump.stdout.close()
    if kdump.wait() not in (0, 1):
        sys.exit(f"kdump {' '.join(args)} exited {kdump.returncode}")
    return time.perf_counter() - start, children_cpu() - cpu, int(wc.stdout)


def describe(tree: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", "from kdump import speedups; print(speedups.describe())"],
        cwd=tree, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def rates_line(
    lines: int, least: dict[tuple[Path, str, str], float], tree: Path, clock: str, target: bool
) -> str:
    # one line per batch and record, as JSON Lines prints them: the text dump's own count
    # grows with the newline bytes of binary values
    rates = {name: lines / least[tree, name, clock] for name in ("json", "json-base64", "text")}
    json_rate = rates["json"]
    verdict = f"; target >= 0.5 M/s: {'met' if json_rate >= 0.5e6 else 'NOT met'}" if target else ""
    return (
        f"{clock:>4}: "
        + ", ".join(f"{n} {rate / 1e6:.2f} M lines/s" for n, rate in rates.items())
        + f"; json / json-base64 {json_rate / rates['json-base64']:.2f}, "
        f"json / text {json_rate / rates['text']:.2f}{verdict}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--tree", type=Path, action="append",
        help="a kdump checkout to run (default: this one); twice: both, alternated",
    )  # fmt: skip
    parser.add_argument("--kinds", default="binary,text")
    parser.add_argument("--sizes", default=",".join(SIZES))
    args = parser.parse_args()
    trees = args.tree or [REPO]
    for tree in trees:
        print(f"kdump in {tree}: C code {describe(tree)}", flush=True)
    print(f"best of {args.runs}, the trees alternated command by command", flush=True)
    for size in args.sizes.split(","):
        for kind in args.kinds.split(","):
            log = segment(kind, size, args.size_mib)
            least: dict[tuple[Path, str, str], float] = {}
            lines = 0
            for _ in range(args.runs):
                for name, command in commands(log).items():
                    for tree in trees:
                        took, cpu, printed = timed(command, tree)
                        for clock, t in (("wall", took), ("cpu", cpu)):
                            least[tree, name, clock] = min(least.get((tree, name, clock), t), t)
                        lines = printed if name == "json" else lines
            for tree in trees:
                for clock in ("wall", "cpu"):
                    rates = rates_line(lines, least, tree, clock, kind == "binary")
                    print(
                        f"{tree!s:20} {kind:6} {size:>3} batches, {lines:,} lines, {rates}",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
