"""Dump: every segment, index, snapshot and internal-topic file a real broker wrote, dumped by
the release's own DumpLogSegments (what ``kafka-dump-log.sh`` runs: the tools module's Java
port, or 4.0's Scala one) and by
``kdump --files``, with each option set and each decoder: the same stdout.

The broker writes: a topic with every codec, headers, null keys and tombstones, idempotent and
transactional batches (aborts and commits, so control batches and ``.txnindex`` files); a
consumer group's commits (``__consumer_offsets``); the transactions' coordinator records
(``__transaction_state``); a share group's state (``__share_group_state``); its own
``__cluster_metadata`` (records, and a KRaft snapshot where it took one). The log dir is copied
first (the controller appends to its metadata log all the time), and both tools read the copy.

Kafka's output is compared whole; where the two tools differ on purpose it is one of
tests/test_golden.py's KNOWN_DIFFERENCES, applied here by name. kdump prints what today's
``kafka-dump-log.sh`` prints: the tool is 4.4.0's whatever release wrote the files (4.0's own
tool words control records, the transaction log and share-group state records the older way).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from clirun import run_kdump
from kafka import KafkaConsumer
from realkafka import (
    Broker,
    Release,
    Unavailable,
    client_log,
    create_topic,
    produce,
    release,
    unavailable,
)
from realkafka.fixtures import DEFAULT_VERSION

pytestmark = pytest.mark.kafka

TOPIC = "dump"
DUMPED = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")


def write(release: Release, broker: Broker, log: Path) -> None:
    create_topic(broker.bootstrap, TOPIC, 2, config={"segment.index.bytes": "400"})
    jobs = [
        {"topic": TOPIC, "records": 200, "value_bytes": 90, "keys": 6, "headers": 2,
         "compression": codec, "linger_ms": 0, "batch_size": 4096}
        for codec in ("none", "gzip", "snappy", "lz4", "zstd")
    ]  # fmt: skip
    jobs += [
        {"topic": TOPIC, "records": 150, "value_bytes": 300, "binary": True, "idempotent": True},
        {"topic": TOPIC, "records": 60, "keys": 4, "tombstone_every": 3},
        {"topic": TOPIC, "records": 120, "transactional_id": "dump-txn", "transaction_records": 20,
         "abort_every": 2, "compression": "lz4"},
    ]  # fmt: skip
    produce(release, broker.bootstrap, *jobs, log=log)
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=broker.bootstrap,
        group_id="dump-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        seen = 0
        while seen < 500:
            batch = consumer.poll(timeout_ms=5000)
            seen += sum(len(v) for v in batch.values())
            consumer.commit()
    finally:
        consumer.close()
    read = release.run("ShareConsume", broker.bootstrap, "dump-share", TOPIC, "300", log=log)
    assert int(read.stdout.split()[-1]) >= 300


def files(log_dir: Path, keep: Callable[[Path], bool]) -> list[str]:
    return [
        str(f)
        for d in sorted(p for p in log_dir.iterdir() if p.is_dir())
        for f in sorted(d.iterdir())
        if f.suffix in DUMPED and keep(f)
    ]


def differences(release: Release, log: Path, names: list[str], options: list[str]) -> list[str]:
    """DumpLogSegments and ``kdump --files`` on ``names``: where their stdout differs. Where
    Kafka throws on a file (KNOWN_DIFFERENCES 'one error line instead of a stack trace, and the
    run goes on': an index entry of a live active segment pointing past its batches, a sanity
    check failing on its preallocated tail), its output up to there must begin kdump's for the
    same files, kdump must name that file on stderr, and both go on from the next file."""
    problems = []
    i = 0
    while i < len(names):
        result = release.run(
            release.dump_log_segments,
            "--files",
            ",".join(names[i:]),
            *options,
            log=log,
            heap="512m",
            check=False,
        )
        theirs = without_first_non_consecutive(result.stdout).split("\n")
        chunk, failed = names[i:], None
        if result.returncode != 0:
            dumped = [x.removeprefix("Dumping ") for x in theirs if x.startswith("Dumping ")]
            assert dumped, result.stderr
            failed = dumped[-1]
            chunk = names[i : names.index(failed, i) + 1]
        ran = run_kdump(["--files", ",".join(chunk), *options])
        assert ran.exit_code in (0, 2), ran.stderr
        ours = ran.stdout.split("\n")
        if failed is not None:
            if failed not in ran.stderr:
                problems.append(f"Kafka throws on {failed}, kdump says nothing of it")
            while theirs and theirs[-1] == "":
                theirs.pop()
            ours = ours[: len(theirs)]
        if ours != theirs:
            at = next(
                (k for k, (x, y) in enumerate(zip(ours, theirs, strict=False)) if x != y), None
            )
            at = min(len(ours), len(theirs)) if at is None else at
            problems.append(
                f"first difference at line {at + 1}:\n"
                f"  kdump: {ours[at] if at < len(ours) else '<end>'}\n"
                f"  Kafka: {theirs[at] if at < len(theirs) else '<end>'}"
            )
        i += len(chunk)
    return problems


def without_first_non_consecutive(kafka: str) -> str:
    """KNOWN_DIFFERENCES 'first record is never non-consecutive': the Java tool reports
    '-1 is followed by N' for a segment whose first record is not offset 0."""
    out, lines = [], kafka.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Non-consecutive offsets in") and i + 1 < len(lines):
            rest = [x for x in lines[i + 1 :] if x.startswith("  ")]
            real = [x for x in rest if not x.startswith("  -1 is followed by")]
            if not real:
                i += 1 + len(rest)
                continue
            out.append(line)
            out += real
            i += 1 + len(rest)
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def internal(topic: str) -> Callable[[Path], bool]:
    return lambda f: (
        f.parent.name.rsplit("-", 1)[0] == topic
        and f.suffix
        in (
            ".log",
            ".checkpoint",
        )
    )


def logs(f: Path) -> bool:
    return f.suffix == ".log"


def indexes(f: Path) -> bool:
    """Index files of closed segments, and the live active ones of one partition: Kafka's tool
    throws on each active one (its preallocated entries), and is started again after it, so one
    partition's show that path without a JVM start per partition."""
    if f.suffix not in (".index", ".timeindex"):
        return False
    active = max(p.name[:20] for p in f.parent.glob("*.log"))
    return f.name[:20] != active or f.parent.name == f"{TOPIC}-0"


CASES: dict[str, tuple[Callable[[Path], bool], list[str]]] = {
    "every file": (lambda f: True, []),
    "deep": (logs, ["--deep-iteration", "--print-data-log"]),
    "deep, no metadata": (logs, ["--deep-iteration", "--skip-record-metadata"]),
    "offsets decoder": (internal("__consumer_offsets"), ["--offsets-decoder"]),
    "transaction log decoder": (internal("__transaction_state"), ["--transaction-log-decoder"]),
    "cluster metadata decoder": (internal("__cluster_metadata"), ["--cluster-metadata-decoder"]),
    "share group state decoder": (internal("__share_group_state"), ["--share-group-state-decoder"]),
    "index sanity check": (indexes, ["--index-sanity-check"]),
    "verify index only": (indexes, ["--verify-index-only"]),
}  # fmt: skip


@pytest.fixture(scope="module")
def dump_tool(kafka_release: Release) -> Release:
    """The release whose DumpLogSegments kdump is compared with: 4.4.0's."""
    if kafka_release.version == DEFAULT_VERSION:
        return kafka_release
    try:
        return release(DEFAULT_VERSION)
    except Unavailable as e:
        unavailable(str(e))


@pytest.fixture(scope="module")
def written(
    kafka_release: Release, kafka_single: object, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    from realkafka.fixtures import running

    broker = running(kafka_single)  # type: ignore[arg-type]
    work = tmp_path_factory.mktemp("dump")
    write(kafka_release, broker, client_log(work))
    copy = work / "copy"
    shutil.copytree(broker.log_dir, copy)
    return copy


@pytest.mark.parametrize("case", list(CASES))
def test_kdump_files_prints_what_dump_log_segments_prints(
    dump_tool: Release, written: Path, tmp_path: Path, case: str
) -> None:
    keep, options = CASES[case]
    names = files(written, keep)
    assert names, f"the broker wrote no file for {case}"
    problems = differences(dump_tool, client_log(tmp_path), names, options)
    assert not problems, "\n".join(problems)
