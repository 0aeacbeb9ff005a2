"""`kdump spark verify|export` and the "kafka-segments" data source on a local[2] Spark.

One SparkSession serves the module (start-up is the slow part); the CLI runs in-process through
kdump.cli.main and picks up that session. Expected values: `kdump verify` itself (the findings
must be identical row for row), kdump's own parse of each segment, and Kafka's answers in
fixtures/oracle/manifest.json. Corrupted copies are made in a temporary directory.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from hashlib import sha256
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from batchbytes import write_partition  # noqa: E402
from clirun import run_kdump  # noqa: E402
from conftest import CORRUPT, FIXTURES, GENERATED, ORACLE, REALFILES, REPO, oracle_manifest  # noqa: E402
from exportread import read_export  # noqa: E402
from jsonreader import raw  # noqa: E402
from rich.console import Console  # noqa: E402

from kdump.checks.verify import VerifyOptions, verify_paths  # noqa: E402
from kdump.crc import crc32c  # noqa: E402
from kdump.errors import KdumpError  # noqa: E402
from kdump.format.layout import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD  # noqa: E402
from kdump.render.progress_display import progress_display  # noqa: E402
from kdump.spark.extract import segment_tasks  # noqa: E402
from kdump.spark.job import FINDINGS_DIR  # noqa: E402
from kdump.spark.schema import RECORD_SCHEMA  # noqa: E402
from kdump.spark.session import build_session  # noqa: E402
from kdump.spark.source import KafkaSegmentsDataSource, register  # noqa: E402
from kdump.spark.stage_progress import stage_progress  # noqa: E402
from kdump.storage.local import open_log_file  # noqa: E402

REAL = [
    REALFILES / "13LAckHEart__kafka",
    REALFILES / "JitenPalaparthi__youtube-kafka-golang-rust",
    REALFILES / "christseng89__RealTime_Analysis",
]
PLAIN_258 = "00000000000000000258.log"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = build_session(
        "local[2]",
        {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
        log_level="ERROR",
    )
    yield session
    session.stop()


def test_verify_with_state_reads_only_what_changed(spark: Any, tmp_path: Path) -> None:
    """Issue 30: one state file per log dir, read and written by the driver; the second run
    reads the active segment only and says what the first said."""
    part = write_partition(tmp_path / "data" / "audit-0", (0, 100, 200))
    state = tmp_path / "state"
    args = ["spark", "verify", str(part), "--state", str(state), "--recheck-fraction", "0"]
    first = run_kdump([*args, "--format", "json"])
    second = run_kdump([*args, "--format", "json"])
    assert (first.exit_code, second.exit_code) == (0, 0), first.stderr
    assert [p.name for p in state.iterdir()] == [f"{str(part.parent).replace('/', '%2F')}.json"]
    first_doc, second_doc = json.loads(first.stdout), json.loads(second.stdout)
    first_run, second_run = first_doc.pop("run"), second_doc.pop("run")
    assert first_doc == second_doc
    sizes = [(part / f"{b:020d}.log").stat().st_size for b in (0, 100, 200)]
    assert (first_run["bytes_verified"], first_run["bytes_unchanged_skipped"]) == (sum(sizes), 0)
    assert (second_run["bytes_verified"], second_run["bytes_unchanged_skipped"]) == (
        sizes[2],
        sizes[0] + sizes[1],
    )
    local = run_kdump(["verify", str(part), "--format", "json"])
    local_doc = json.loads(local.stdout)
    local_doc.pop("run")
    assert local_doc == second_doc


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Copies of oracle partitions, each broken in one known way, under ``root``; a log dir
    beside it (discover takes a folder of partitions for a log dir and skips folders in it)."""
    root = tmp_path_factory.mktemp("damaged")
    broker = root.parent / f"{root.name}-broker"
    logs = oracle_manifest()["files"]

    crc = root / "crcplain-0"  # a flipped byte inside batch 3 of segment 258
    shutil.copytree(ORACLE / "plain-0", crc)
    crc_at = logs["plain-0"][PLAIN_258]["batches"][3]["position"]
    _flip(crc / PLAIN_258, crc_at + RECORD_BATCH_OVERHEAD + 2)

    torn = root / "tornlz4-0"  # the last segment loses its last 10 bytes
    shutil.copytree(ORACLE / "lz4-0", torn)
    last = max(torn.glob("*.log"))
    with open(last, "r+b") as f:
        f.truncate(last.stat().st_size - 10)
    torn_at = logs["lz4-0"][last.name]["batches"][-1]["position"]

    bad = root / "badrecord-0"  # batch 2 of segment 0: CRC right, first record's length wrong
    shutil.copytree(ORACLE / "plain-0", bad)
    bad_at = logs["plain-0"]["00000000000000000000.log"]["batches"][2]["position"]
    _rewrite_record_length(bad / "00000000000000000000.log", bad_at)

    broker.mkdir()  # a log dir whose checkpoint runs past a partition's end
    shutil.copytree(ORACLE / "gzip-0", broker / "gzip-0")
    shutil.copytree(ORACLE / "txn-0", broker / "txn-0")
    (broker / "txn-0" / "00000000000000000000.index").unlink()
    (broker / "recovery-point-offset-checkpoint").write_text("0\n2\ngzip 0 999999\ntxn 0 5\n")
    return {
        "root": root,
        "broker": broker,
        "crc": (crc / PLAIN_258, crc_at),
        "torn": (last, torn_at),
        "bad": (bad / "00000000000000000000.log", bad_at),
    }


def _flip(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)[0]
        f.seek(position)
        f.write(bytes([byte ^ 0xFF]))


def _rewrite_record_length(path: Path, batch_at: int) -> None:
    """Zig-zag varint 0x7E is 63: past the batch's end. The batch CRC is made right again."""
    data = bytearray(path.read_bytes())
    data[batch_at + RECORD_BATCH_OVERHEAD] = 0x7E
    (length,) = struct.unpack_from(">i", data, batch_at + 8)
    end = batch_at + 12 + length
    struct.pack_into(
        ">I", data, batch_at + CRC_OFFSET, crc32c(data[batch_at + ATTRIBUTES_OFFSET : end])
    )
    path.write_bytes(bytes(data))


def _roots(damaged: dict[str, Any]) -> list[str]:
    return [str(p) for p in (ORACLE, GENERATED, *REAL, damaged["root"], damaged["broker"])]


# --- verify ---------------------------------------------------------------------------------


def _expected_rows(paths: list[str], options: VerifyOptions) -> tuple[Any, list[dict[str, Any]]]:
    result = verify_paths(paths, options)
    rows = [f.to_dict() | {"partition_path": r.path} for r in result.partitions for f in r.findings]
    rows += [f.to_dict() | {"partition_path": None} for f in result.log_dir_findings]
    return result, rows


def test_verify_findings_identical_to_kdump_verify(
    spark: Any, damaged: dict[str, Any], tmp_path: Path
) -> None:
    roots = _roots(damaged)
    out = tmp_path / "findings"
    ran = run_kdump(["spark", "verify", *roots, "--format", "json", "-o", str(out), "--tasks", "3"])
    local = run_kdump(["verify", *roots, "--format", "json"])
    assert (ran.exit_code, local.exit_code) == (2, 2), ran.stderr
    spark_doc, local_doc = json.loads(ran.stdout), json.loads(local.stdout)
    assert spark_doc.pop("run")["command"] == "spark verify"
    assert local_doc.pop("run")["command"] == "verify"
    assert spark_doc == local_doc  # same findings, same summary, same order

    result, expected = _expected_rows(roots, VerifyOptions())
    assert pq.read_table(out).to_pylist() == expected
    codes = {(r["code"], r["path"]) for r in expected}
    crc_log, _ = damaged["crc"]
    assert ("LOG_CRC_MISMATCH", str(crc_log)) in codes
    assert ("LOG_TRUNCATED_TAIL", str(damaged["torn"][0])) in codes
    assert (
        "CHECKPOINT_BEYOND_LOG_END",
        str(damaged["broker"] / "recovery-point-offset-checkpoint"),
    ) in codes
    assert len(result.partitions) > 25

    # --deep, the text report, and the findings as JSON Lines.
    deep_out = tmp_path / "deep"
    ran = run_kdump(
        [
            "spark",
            "verify",
            str(damaged["root"]),
            "--deep",
            "--fail-on",
            "warning",
            "-o",
            str(deep_out),
            "--output-format",
            "json",
        ]
    )
    local = run_kdump(["verify", str(damaged["root"]), "--deep", "--fail-on", "warning"])
    assert (ran.exit_code, ran.stdout) == (local.exit_code, local.stdout)
    assert "LOG_CORRUPT_RECORD" in ran.stdout
    (part,) = deep_out.glob("part-*.json")
    rows = [json.loads(line) for line in part.read_text().splitlines()]
    assert rows == _expected_rows([str(damaged["root"])], VerifyOptions(deep=True))[1]

    again = run_kdump(["spark", "verify", str(damaged["root"]), "-o", str(deep_out)])
    assert again.exit_code == 3 and again.stdout == ""
    assert again.stderr == f"kdump: {deep_out}: already exists; --overwrite replaces it\n"


def test_verify_judges_each_topics_segment_bytes_as_kdump_verify(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 44.2: the executors judge a segment by its topic's segment.bytes from the node's
    KRaft image, replayed on the driver, as kdump verify does (orders: 1 MiB; audit: Kafka's
    default); the same findings, in the same order."""
    from kraftlog import kraft_log_dir

    orders = {"segment.bytes": "1048576", "segment.index.bytes": "1024"}
    log_dir = kraft_log_dir(tmp_path / "data", {"orders": orders}, ("orders-0", "audit-0"), 1300)
    ran = run_kdump(["spark", "verify", str(log_dir), "--format", "json"])
    local = run_kdump(["verify", str(log_dir), "--format", "json"])
    assert (ran.exit_code, local.exit_code) == (0, 0), ran.stderr
    spark_doc, local_doc = json.loads(ran.stdout), json.loads(local.stdout)
    spark_doc.pop("run"), local_doc.pop("run")
    assert spark_doc == local_doc
    over = sorted(
        (Path(f["path"]).parent.name, f["code"])
        for f in spark_doc["findings"]
        if f["code"].endswith("OVERSIZE")
    )
    assert over == [
        ("orders-0", "INDEX_OVERSIZE"),
        ("orders-0", "LOG_SEGMENT_OVERSIZE"),
        ("orders-0", "TIMEINDEX_OVERSIZE"),
    ]


def test_verify_missing_path_is_a_usage_error(spark: Any, tmp_path: Path) -> None:
    ran = run_kdump(["spark", "verify", str(tmp_path / "nope")])
    assert ran.exit_code == 3
    assert ran.stderr == f"kdump: {tmp_path / 'nope'}: no such file or directory\n"


# --- export ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(
    spark: Any, damaged: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("export") / "records"
    roots = [str(ORACLE), str(GENERATED), str(damaged["root"])]
    ran = run_kdump(["spark", "export", *roots, "--output", str(out)])
    return {"ran": ran, "out": out, "roots": roots, "table": read_export(out)}


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["topic"], row["partition"], row["segment"], row["offset"])


def _parsed_rows(
    log: str, topic: str, partition: int, end: int | None = None, broker: int | None = None
) -> list[dict[str, Any]]:
    """kdump's own parse of one .log, up to byte ``end``, as export rows (of ``broker``)."""
    records = open_log_file(log)
    segment = int(Path(log).name[:20])
    rows = []
    for batch in records.batches(0, end):
        for r in records.records(batch):
            rows.append(
                {
                    "broker": broker,
                    "log_dir": str(Path(log).parent.parent),
                    "topic": topic,
                    "partition": partition,
                    "segment": segment,
                    "segment_file": log,
                    "batch_position": batch.position,
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "timestamp_type": {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[
                        batch.timestamp_type
                    ],
                    "key": r.key,
                    "value": r.value,
                    "headers": [{"key": h.key, "value": h.value} for h in r.headers],
                    "producer_id": batch.producer_id,
                    "producer_epoch": batch.producer_epoch,
                    "base_sequence": batch.base_sequence,
                    "sequence": r.sequence,
                    "partition_leader_epoch": batch.partition_leader_epoch,
                    "is_transactional": batch.is_transactional,
                    "is_control": batch.is_control,
                }
            )
    return rows


def test_export_equals_parse_and_kafka_manifest(
    exported: dict[str, Any], damaged: dict[str, Any]
) -> None:
    ran, table = exported["ran"], exported["table"]
    assert ran.exit_code == 2  # the damaged copies hold errors; the job still finished
    assert table.schema.names == RECORD_SCHEMA.fieldNames()
    rows = sorted(table.to_pylist(), key=_key)

    cut = {
        str(damaged["crc"][0]): damaged["crc"][1],
        str(damaged["torn"][0]): None,  # a torn tail: every whole batch before it
        str(damaged["bad"][0]): damaged["bad"][1],
    }
    encoded = json.loads((GENERATED / "expected.json").read_text())["logs"]
    for name, log in encoded.items():
        if log["corruption"]:
            cut[str(GENERATED / name)] = log["corruption"]["position"]
    expected = []
    for task in segment_tasks(exported["roots"]):
        end = cut.get(task.log_path)
        expected += _parsed_rows(task.log_path, task.topic, task.partition, end, task.broker)
    assert rows == sorted(expected, key=_key)
    assert f"exported {len(rows)} record(s) from" in ran.stdout

    # Kafka's own answers: record counts of every oracle segment, values of the dumped records.
    by_segment: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in rows:
        by_segment.setdefault((f"{row['topic']}-{row['partition']}", row["segment"]), []).append(
            row
        )
    checked = 0
    for directory, files in oracle_manifest()["files"].items():
        for name, log in files.items():
            if not name.endswith(".log"):
                continue
            got = {r["offset"]: r for r in by_segment.get((directory, int(name[:20])), [])}
            count = sum(
                b["count"] if b["count"] is not None else len(b["records"]) for b in log["batches"]
            )
            assert len(got) == count, (directory, name)
            for b in log["batches"]:
                for rec in b.get("records", []):
                    row = got[rec["offset"]]
                    assert row["timestamp"] == rec["timestamp"]
                    assert row["timestamp_type"] == b["timestampType"]
                    assert _sha(row["key"]) == rec["keySha256"]
                    assert _sha(row["value"]) == rec["valueSha256"]
                    assert [h["key"] for h in row["headers"]] == rec["headerKeys"]
                    assert row["sequence"] == rec["sequence"]
                    assert (row["producer_id"], row["producer_epoch"]) == (
                        b["producerId"],
                        b["producerEpoch"],
                    )
                    assert row["base_sequence"] == b["baseSequence"]
                    assert row["partition_leader_epoch"] == b["partitionLeaderEpoch"]
                    assert (row["is_transactional"], row["is_control"]) == (
                        b["isTransactional"],
                        b["isControl"],
                    )
                    checked += 1
    assert checked > 1000

    # What the independent encoder wrote: every record before a corrupt batch.
    for name, log in encoded.items():
        directory, file_name = name.split("/")
        got = by_segment[(directory, int(file_name[:20]))]
        stop = cut.get(str(GENERATED / name), log["size"])
        wrote = [r for b in log["batches"] if b["position"] < stop for r in b["records"]]
        assert [(r["offset"], _hex(r["key"]), _hex(r["value"])) for r in got] == [
            (r["offset"], r["key"], r["value"]) for r in wrote
        ], name

    findings = pq.read_table(exported["out"] / FINDINGS_DIR).to_pylist()
    where = {(f["code"], f["path"], f["position"]) for f in findings}
    assert ("LOG_CRC_MISMATCH", str(damaged["crc"][0]), damaged["crc"][1]) in where
    assert ("LOG_TRUNCATED_TAIL", str(damaged["torn"][0]), damaged["torn"][1]) in where
    assert ("LOG_CORRUPT_RECORD", str(damaged["bad"][0]), damaged["bad"][1]) in where
    assert all(f["partition_path"] for f in findings)


def _hex(value: bytes | None) -> str | None:
    return None if value is None else value.hex()


def _sha(value: bytes | None) -> str | None:
    return None if value is None else sha256(value).hexdigest()


# --- the data source ------------------------------------------------------------------------


def test_data_source_reads_the_exported_rows(
    spark: Any, exported: dict[str, Any], damaged: dict[str, Any]
) -> None:
    register(spark)
    roots = [str(GENERATED), str(ORACLE / "txn-0"), str(damaged["crc"][0].parent)]
    df = spark.read.format("kafka-segments").option("paths", json.dumps(roots)).load()
    tasks = segment_tasks(roots)
    reader = KafkaSegmentsDataSource({"paths": json.dumps(roots)}).reader(RECORD_SCHEMA)
    assert [p.value for p in reader.partitions()] == tasks  # one input partition per segment
    topics = {t.topic for t in tasks}
    same = [r for r in exported["table"].to_pylist() if r["topic"] in topics]
    assert sorted(df.toArrow().to_pylist(), key=_key) == sorted(same, key=_key)

    # A batch-level schema: records are counted, not decoded, and the counts agree.
    narrow = (
        spark.read.format("kafka-segments")
        .schema("topic string, partition int, is_control boolean")
        .load(str(ORACLE / "txn-0"))
    )
    full = exported["table"].filter(pa.compute.equal(exported["table"]["topic"], "txn"))
    columns = ["topic", "partition", "is_control"]
    assert narrow.toArrow().sort_by("is_control").to_pylist() == (
        full.select(columns).sort_by("is_control").to_pylist()
    )

    failing = (
        spark.read.format("kafka-segments")
        .option("mode", "FAILFAST")
        .load(str(damaged["crc"][0].parent))
    )
    with pytest.raises(Exception, match="LOG_CRC_MISMATCH"):
        failing.count()


def test_export_as_json_keeps_every_byte(
    spark: Any, exported: dict[str, Any], damaged: dict[str, Any], tmp_path: Path
) -> None:
    """--output-format json (issue 29.1): the rows of the Parquet export, keys, values and
    header values rebuilt from their JSON with the documented reader (docs/json.md); binary
    values as base64."""
    roots = [str(GENERATED), str(ORACLE / "variety-0"), str(damaged["crc"][0].parent)]
    out = tmp_path / "records"
    ran = run_kdump(["spark", "export", *roots, "--output", str(out), "--output-format", "json"])
    assert ran.exit_code == 2, ran.stdout + ran.stderr  # the flipped byte's error
    assert ran.stdout.startswith("exported "), ran.stdout
    shown = [
        json.loads(line) | {"topic": part.parent.name.removeprefix("topic=")}
        for part in sorted(out.glob("topic=*/part-*.json"))
        for line in part.open()
    ]
    assert {r["value_encoding"] for r in shown} == {"utf8", "base64", None}
    rows = []
    for r in shown:
        key, value = (
            raw(r.pop("key"), r.pop("key_encoding")),
            raw(r.pop("value"), r.pop("value_encoding")),
        )
        headers = [
            {"key": h["key"], "value": raw(h["value"], h["value_encoding"])} for h in r["headers"]
        ]
        rows.append(r | {"key": key, "value": value, "headers": headers})
    topics = {t.topic for t in segment_tasks(roots)}
    same = [r for r in exported["table"].to_pylist() if r["topic"] in topics]
    assert sorted(rows, key=_key) == sorted(same, key=_key)
    assert pq.read_table(out / FINDINGS_DIR).num_rows > 0


# --- progress, and kdump without pyspark ----------------------------------------------------


def test_progress_shows_stage_and_task_counts(spark: Any) -> None:
    out = StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with progress_display(True, "tasks", console) as display, stage_progress(spark, display):
        spark.sparkContext.parallelize(range(4), 4).map(
            lambda x: __import__("time").sleep(0.5) or x
        ).collect()
    assert "stage " in out.getvalue() and "/4" in out.getvalue() and "tasks/s" in out.getvalue()


def test_without_pyspark_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)
    ran = run_kdump(["spark", "verify", str(ORACLE / "txn-0")])
    assert ran.exit_code == 3
    assert ran.stderr == (
        "kdump: kdump spark needs pyspark and pyarrow (pyspark is missing): "
        "pip install 'kafka-kdump[spark]'\n"
    )


def test_kdump_imports_no_pyspark() -> None:
    code = "import sys, kdump.cli; print('pyspark' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "False\n"


def test_verify_tasks_are_balanced_by_bytes_of_log() -> None:
    from kdump.spark.job import pack_by_size

    items = ["a", "b", "c", "d", "e", "f", "g"]
    sizes = [10, 9, 8, 7, 3, 2, 1]
    groups = pack_by_size(items, sizes, 2)
    assert sorted(x for g in groups for x in g) == items
    totals = sorted(sum(sizes[items.index(x)] for x in g) for g in groups)
    assert totals == [20, 20]
    assert pack_by_size(["x"], [5], 3) == [["x"], [], []]


def test_spark_run_prints_no_incubator_warning() -> None:
    """Spark's launcher always adds --add-modules=jdk.incubator.vector, and the JDK then
    prints a warning no option silences: a kdump Spark run's stderr must not carry it."""
    ran = subprocess.run(
        [sys.executable, "-m", "kdump", "spark", "verify", str(ORACLE / "plain-0")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    assert "kdump verify" in ran.stdout
    assert "incubator" not in ran.stderr, ran.stderr


@pytest.mark.parametrize(
    ("topic", "patterns", "taken"),
    [
        ("orders", (), True),
        ("__consumer_offsets", (), False),
        ("orders", ("ord*",), True),
        ("payments", ("ord*", "inv?ices"), False),
        ("__consumer_offsets", ("*",), False),
        ("__consumer_offsets", ("__consumer_offsets",), True),
        ("__transaction_state", ("__*",), True),
        (None, (), True),
        (None, ("*",), False),
    ],
)
def test_export_topics_internal_ones_only_when_named(
    topic: str | None, patterns: tuple[str, ...], taken: bool
) -> None:
    from kdump.spark.extract import topic_selected

    assert topic_selected(topic, patterns) is taken


def test_export_takes_the_topics_and_ranges_asked(spark: Any, tmp_path: Path) -> None:
    """Issue 33 point 5: --topic globs, --offset-range and --time-range as dump has them (the
    records of a batch cut to the range), internal topics left out unless named."""
    root = tmp_path / "logs"
    for name in ("plain-0", "gzip-0", "variety-0"):
        shutil.copytree(ORACLE / name, root / name)
    shutil.copytree(ORACLE / "plain-0", root / "__consumer_offsets-0")
    runs = iter(range(100))

    def export(*args: str) -> list[dict[str, Any]]:
        out = tmp_path / f"out{next(runs)}"
        ran = run_kdump(["spark", "export", str(root), "--output", str(out), *args])
        assert ran.exit_code == 0, ran.stderr
        return list(read_export(out).to_pylist())

    every = export()
    assert {r["topic"] for r in every} == {"plain", "gzip", "variety"}
    named = export("--topic", "__consumer_offsets", "--topic", "g*")
    assert {r["topic"] for r in named} == {"__consumer_offsets", "gzip"}

    def inside_a_batch(topic: str) -> list[dict[str, Any]]:
        """The rows of the topic's first batch of three records or more."""
        rows = sorted((r for r in every if r["topic"] == topic), key=_key)
        by_batch: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for r in rows:
            by_batch.setdefault((r["segment"], r["batch_position"]), []).append(r)
        return next(b for b in by_batch.values() if len(b) >= 3)

    batch = inside_a_batch("plain")
    low, high = batch[1]["offset"], batch[-1]["offset"] + 5
    ranged = export("--topic", "plain", "--offset-range", f"{low}:{high}")
    expected = [r["offset"] for r in every if r["topic"] == "plain" and low <= r["offset"] <= high]
    assert sorted(r["offset"] for r in ranged) == sorted(expected)

    plain = [r for r in every if r["topic"] == "plain"]
    times = sorted({r["timestamp"] for r in plain})
    t1, t2 = times[len(times) // 3] + 1, times[2 * len(times) // 3]
    timed = export("--topic", "plain", "--time-range", f"{t1}:{t2}")
    expected = [r["offset"] for r in plain if t1 <= r["timestamp"] <= t2]
    assert expected and sorted(r["offset"] for r in timed) == sorted(expected)


def test_export_names_the_offsets_a_damaged_segment_did_not_give(
    exported: dict[str, Any], damaged: dict[str, Any]
) -> None:
    """Issue 33 point 8: where a batch is damaged the export says which offsets its rows lack,
    to the next segment (exported as usual), or to the log's end for the last segment."""
    logs = oracle_manifest()["files"]
    findings = pq.read_table(exported["out"] / FINDINGS_DIR).to_pylist()
    gaps = {f["path"]: f for f in findings if f["code"] == "EXPORT_GAP"}
    assert not [p for p in gaps if p.startswith(str(ORACLE))]

    def base(log: Path) -> int:
        return int(log.name[:20])

    def next_base(log: Path) -> int:
        return min(base(p) for p in log.parent.glob("*.log") if base(p) > base(log))

    crc_log, crc_at = damaged["crc"]
    first = next(b for b in logs["plain-0"][PLAIN_258]["batches"] if b["position"] == crc_at)
    gap = gaps[str(crc_log)]
    assert (gap["severity"], gap["offset"], gap["position"]) == (
        "warning",
        first["baseOffset"],
        crc_at,
    )
    assert f"offsets {first['baseOffset']}..{next_base(crc_log) - 1} not exported" in gap["message"]

    bad_log, bad_at = damaged["bad"]
    first = next(
        b for b in logs["plain-0"]["00000000000000000000.log"]["batches"] if b["position"] == bad_at
    )
    assert gaps[str(bad_log)]["offset"] == first["baseOffset"]
    assert f"..{next_base(bad_log) - 1} not exported" in gaps[str(bad_log)]["message"]

    torn_log, _ = damaged["torn"]
    last = logs["lz4-0"][torn_log.name]["batches"][-1]
    assert gaps[str(torn_log)]["offset"] == last["baseOffset"]
    assert "to the log's end" in gaps[str(torn_log)]["message"]
    # the segments after the damaged one are exported all the same
    rows = exported["table"].to_pylist()
    assert any(r["topic"] == "crcplain" and r["segment"] > base(crc_log) for r in rows)


METADATA = REALFILES / "13LAckHEart__kafka/data/kafka/__cluster_metadata-0"
"""Kafka 3.8's metadata log: test-topic-0 led by broker 1 from offset 916, leaderless (-1)
from 1355 when the broker shut down."""


def _replicas_of_test_topic(root: Path) -> tuple[Path, Path]:
    """tests/test_replicas.py's unclean election as test-topic-0: A (broker 1) at epoch 3 up
    to 1500, B (broker 2) at epoch 5 up to 1031."""
    from test_replicas import unclean_election

    a, b = unclean_election(root)
    for partition, broker in ((a, 1), (b, 2)):
        (partition.parent / "meta.properties").write_text(
            f"version=1\nnode.id={broker}\ncluster.id=kmVSdAwAQMSE2cgv4aeL8g\n"
        )
        partition.rename(partition.parent / "test-topic-0")
    return a.parent / "test-topic-0", b.parent / "test-topic-0"


def _metadata_led_by_broker_1(into: Path) -> Path:
    """METADATA as it stood before the shutdown: its log cut before the batch of offset 1355."""
    copy = into / METADATA.name
    copy.mkdir(parents=True)
    log = METADATA / "00000000000000000000.log"
    records = open_log_file(log)
    cut = next(b.position for b in records.batches() if b.last_offset >= 1355)
    records.close()
    (copy / log.name).write_bytes(log.read_bytes()[:cut])
    return copy


def test_export_chooses_one_replica_per_partition(tmp_path: Path) -> None:
    """Issue 33 point 4, on the driver: the leader per the KRaft metadata (given, or in a log
    dir among the paths), else the greatest latest leader epoch as kdump replicas chooses; a
    leaderless partition in the metadata falls back to the same rule; --all-replicas: all."""
    from kdump.spark.extract import EVERY_REPLICA, ReplicaRule, export_plan

    a, b = _replicas_of_test_topic(tmp_path / "r")
    paths = [str(a.parent), str(b.parent)]

    def chosen(rule: ReplicaRule) -> tuple[set[str], list[tuple[str, str, list[str]]]]:
        plan = export_plan(paths, topics=(), replicas=rule)
        why = [(c.chosen.location, c.why, [o.location for o in c.others]) for c in plan.choices]
        return {t.partition_path for t in plan.tasks}, why

    assert chosen(ReplicaRule()) == (
        {str(b)},
        [(str(b), "the greatest latest leader epoch (5)", [str(a)])],
    )
    led = _metadata_led_by_broker_1(tmp_path / "meta")
    by_metadata = ({str(a)}, [(str(a), "the leader per the KRaft metadata (broker 1)", [str(b)])])
    assert chosen(ReplicaRule(metadata=str(led))) == by_metadata
    assert chosen(ReplicaRule(metadata=str(METADATA)))[0] == {str(b)}  # leaderless there
    assert chosen(EVERY_REPLICA) == ({str(a), str(b)}, [])
    shutil.copytree(led, a.parent / led.name)  # broker 1's own copy, found among the paths
    assert chosen(ReplicaRule()) == by_metadata
    with pytest.raises(KdumpError, match="holds no __cluster_metadata-0"):
        export_plan(paths, replicas=ReplicaRule(metadata=str(b)))


def test_export_writes_one_copy_and_says_which(spark: Any, tmp_path: Path) -> None:
    """Issue 33 point 4 end to end: replicas on two brokers give each offset once (the chosen
    replica's), the choice printed; --all-replicas keeps every copy's rows."""
    a, b = _replicas_of_test_topic(tmp_path / "r")
    out = tmp_path / "one"
    ran = run_kdump(["spark", "export", str(a.parent), str(b.parent), "--output", str(out)])
    assert ran.exit_code == 0, ran.stderr
    assert f"{b}: exported (the greatest latest leader epoch (5)); not {a}" in ran.stdout
    offsets = sorted(r["offset"] for r in read_export(out).to_pylist())
    assert offsets == list(range(1031))
    both = tmp_path / "all"
    ran = run_kdump(
        ["spark", "export", str(a.parent), str(b.parent), "-o", str(both), "--all-replicas"]
    )
    assert ran.exit_code == 0, ran.stderr
    assert read_export(both).num_rows == 1500 + 1031


def test_data_source_reads_one_replica_per_partition(spark: Any, tmp_path: Path) -> None:
    """Issue 33 point 4 for the "kafka-segments" data source: export's choice of replica
    (each offset once, the chosen copy's), every copy with all_replicas, the leader named by
    a metadata log with metadata. (ship=False: the executors' own kdump is checked first, here
    this process's files: issue 40.)"""
    register(spark, ship=False)
    a, b = _replicas_of_test_topic(tmp_path / "r")
    paths = json.dumps([str(a.parent), str(b.parent)])

    def read(**options: str) -> list[tuple[int, int]]:
        df = spark.read.format("kafka-segments").option("paths", paths)
        for name, value in options.items():
            df = df.option(name, value)
        return sorted((r["offset"], r["broker"]) for r in df.load().toArrow().to_pylist())

    assert read() == [(offset, 2) for offset in range(1031)]
    assert len(read(all_replicas="true")) == 1500 + 1031
    led = _metadata_led_by_broker_1(tmp_path / "meta")
    assert read(metadata=str(led)) == [(offset, 1) for offset in range(1500)]
    with pytest.raises(Exception, match="all_replicas is 'yes'"):
        read(all_replicas="yes")


def test_day_of_a_record_timestamp_is_its_utc_day() -> None:
    from kdump.spark.job import day_of

    days = day_of(pa.array([-1, 0, 86_399_999, 86_400_000, 1_700_006_400_000], pa.int64()))
    assert days.to_pylist() == [None, "1970-01-01", "1970-01-01", "1970-01-02", "2023-11-15"]


def test_export_laid_out_by_topic_and_day(spark: Any, tmp_path: Path) -> None:
    """Issue 33 point 6: Hive's layout, topic=T/day=D/ by the record timestamp's UTC day (a
    batch across midnight split), the topic and day in the directory names only; broker, log
    dir, topic, partition, offset and the segment file in every row."""
    from txnlog import batch_bytes

    root = tmp_path / "broker-7"
    midnight = 1_700_006_400_000  # 2023-11-15T00:00:00Z
    days = root / "days-3"
    days.mkdir(parents=True)
    log = days / "00000000000000000000.log"
    log.write_bytes(
        batch_bytes(0, [midnight - 1, midnight]) + batch_bytes(2, [midnight + 86_400_000])
    )
    (root / "meta.properties").write_text("version=1\nnode.id=7\ncluster.id=c\n")
    (root / "other-0").mkdir()
    (root / "other-0" / log.name).write_bytes(batch_bytes(0, [midnight - 3, midnight - 2, -1]))
    out = tmp_path / "out"
    ran = run_kdump(["spark", "export", str(root), "-o", str(out), "--partition-by", "day"])
    assert ran.exit_code == 0, ran.stderr
    assert sorted(str(p.parent.relative_to(out)) for p in out.glob("topic=*/*/*.parquet")) == [
        "topic=days/day=2023-11-14",
        "topic=days/day=2023-11-15",
        "topic=days/day=2023-11-16",
        "topic=other/day=2023-11-14",
        "topic=other/day=__HIVE_DEFAULT_PARTITION__",
    ]
    assert "topic" not in pq.read_schema(next(out.glob("topic=days/*/*.parquet"))).names
    rows = read_export(out, by_day=True).to_pylist()
    kept = ("broker", "log_dir", "topic", "partition", "offset", "segment_file", "day")
    assert sorted(tuple(r[k] for k in kept) for r in rows if r["topic"] == "days") == [
        (7, str(root), "days", 3, 0, str(log), "2023-11-14"),
        (7, str(root), "days", 3, 1, str(log), "2023-11-15"),
        (7, str(root), "days", 3, 2, str(log), "2023-11-16"),
    ]
    other = sorted((r["offset"], r["day"]) for r in rows if r["topic"] == "other")
    assert other == [(0, "2023-11-14"), (1, "2023-11-14"), (2, None)]  # -1: no timestamp


def test_export_resumes_and_skips_what_it_wrote(spark: Any, tmp_path: Path) -> None:
    """Issue 33 point 7: an interrupted export (a segment's files and marker missing) or a
    repeated one reads only the segments it has not written, or that changed since (verify's
    segment identity); the rows come out once each and _findings keeps every finding; other
    settings, or a directory that is not an export, are refused."""
    from kdump.spark.job import DONE_DIR

    logs = oracle_manifest()["files"]
    root = tmp_path / "logs"
    shutil.copytree(ORACLE / "gzip-0", root / "gzip-0")
    shutil.copytree(ORACLE / "plain-0", root / "plain-0")
    crc_at = logs["plain-0"][PLAIN_258]["batches"][3]["position"]
    _flip(root / "plain-0" / PLAIN_258, crc_at + RECORD_BATCH_OVERHEAD + 2)
    (root / "gzip-0" / "00000000000000000439.timeindex").unlink()  # an index finding
    out = tmp_path / "out"

    def export(*args: str) -> tuple[Any, list[tuple[Any, ...]], list[str]]:
        ran = run_kdump(["spark", "export", str(root), "-o", str(out), *args])
        rows = sorted(_key(r) for r in read_export(out).to_pylist()) if ran.exit_code != 3 else []
        codes = [f["code"] for f in pq.read_table(out / FINDINGS_DIR).to_pylist()]
        return ran, rows, sorted(codes)

    ran, rows, codes = export()
    assert ran.exit_code == 2, ran.stderr
    assert "(0 unchanged since an earlier run" in ran.stdout
    assert {"LOG_CRC_MISMATCH", "EXPORT_GAP", "TIMEINDEX_MISSING"} <= set(codes)
    assert len(rows) == len(set(rows))
    markers = sorted((out / DONE_DIR).iterdir())
    assert len(markers) == 9  # the segments of both partitions

    # an interruption: the job stopped before this segment's files and marker were in place
    lost = json.loads(markers[0].read_text())
    for name in lost["files"]:
        (out / name).unlink()
    markers[0].unlink()
    (out / "_SUCCESS").unlink()
    stamps = {m.name: m.stat().st_mtime_ns for m in markers[1:]}
    again, rows_again, codes_again = export()
    assert again.exit_code == 2, again.stderr
    assert "(8 unchanged since an earlier run" in again.stdout
    assert (rows_again, codes_again) == (rows, codes)
    assert {m.name: m.stat().st_mtime_ns for m in markers[1:]} == stamps
    assert (out / "_SUCCESS").exists() and markers[0].exists()

    # a segment changed since (the active one grew): read again, its old files replaced
    last = max((root / "plain-0").glob("*.log"))
    grown = batch_bytes_after(last)
    with open(last, "ab") as f:
        f.write(grown)
    third, rows_third, _ = export()
    assert "(8 unchanged since an earlier run" in third.stdout
    assert len(rows_third) == len(rows) + 5 and len(set(rows_third)) == len(rows_third)

    refused = run_kdump(["spark", "export", str(root), "-o", str(out), "--partition-by", "day"])
    assert refused.exit_code == 3 and "other settings" in refused.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x").write_text("")
    elsewhere = run_kdump(["spark", "export", str(root), "-o", str(tmp_path / "other")])
    assert elsewhere.exit_code == 3 and "not a kdump export" in elsewhere.stderr


def batch_bytes_after(log: Path) -> bytes:
    """A batch of five records after the last batch of ``log``."""
    from txnlog import batch_bytes

    records = open_log_file(log)
    end = max(b.next_offset for b in records.batches())
    records.close()
    return batch_bytes(end, [1_700_000_000_000 + i for i in range(5)])


def _beyond_log_end_and_epochs(into: Path) -> None:
    """A recovery point beyond txn-0's log end (what the log end is takes every segment) and
    a leader-epoch checkpoint that disagrees with plain-0's batches."""
    shutil.copytree(CORRUPT / "checkpoint-beyond-log-end-recovery-point" / "logdir", into)
    shutil.copytree(CORRUPT / "leader-epoch-inconsistent" / "plain-0", into / "plain-0")
    (into / "plain-0" / "00000000000000000258.index").unlink()  # a segment's own finding


def _corrupt_checkpoint_snapshot_metadata(into: Path) -> None:
    """A recovery-point checkpoint that does not parse; in txn-0 a corrupt producer snapshot
    and a corrupt partition.metadata."""
    shutil.copytree(CORRUPT / "checkpoint-corrupt" / "logdir", into)
    shutil.rmtree(into / "txn-0")
    shutil.copytree(CORRUPT / "snapshot-corrupt" / "txn-0", into / "txn-0")
    metadata = CORRUPT / "partition-metadata-corrupt" / "txn-0" / "partition.metadata"
    shutil.copy(metadata, into / "txn-0" / "partition.metadata")


def _topic_id_not_the_images(into: Path) -> None:
    """A KRaft log dir whose test-topic-0 holds another topic id than the metadata image's:
    the log dir's check against the image (its metadata partition, internal, not exported)."""
    shutil.copytree(FIXTURES / "corrupt-kraft" / "kraft-topic-id-mismatch" / "logdir", into)


@pytest.mark.parametrize(
    "build",
    [_beyond_log_end_and_epochs, _corrupt_checkpoint_snapshot_metadata, _topic_id_not_the_images],
)
def test_export_findings_are_verifys_fresh_and_resumed(
    spark: Any, tmp_path: Path, build: Any
) -> None:
    """Issue 33 point 7: _findings holds every finding `kdump verify` gives for the partitions
    exported, the partition's and the log dir's too (checkpoints, leader epochs, producer
    snapshots, partition.metadata), the same after a resumed export, which reads only the
    segment it had not written (the others' walks come back from their markers)."""
    from kdump.spark.job import DONE_DIR, export_on_spark

    root = tmp_path / "logdir"
    build(root)
    expected = [
        _finding_key(f.to_dict()) for f in verify_paths([str(root)], VerifyOptions()).findings
    ]
    log_dir_codes = ("CHECKPOINT_BEYOND_LOG_END", "CHECKPOINT_CORRUPT", "KRAFT_TOPIC_ID_MISMATCH")
    assert any(k[0] in log_dir_codes for k in expected)
    out = tmp_path / "out"

    def exported() -> tuple[Any, list[tuple[Any, ...]]]:
        result = export_on_spark(spark, [str(root)], str(out))
        rows = pq.read_table(out / FINDINGS_DIR).to_pylist()
        return result, [_finding_key(r) for r in rows if r["code"] != "EXPORT_GAP"]

    fresh, found = exported()
    assert found == expected
    assert fresh.skipped == 0

    markers = sorted((out / DONE_DIR).iterdir())
    lost = json.loads(markers[0].read_text())
    for name in lost["files"]:
        (out / name).unlink()
    markers[0].unlink()
    rewritten = markers[1:2]  # as an earlier kdump wrote it (no walk): exported again
    for marker in rewritten:
        older = json.loads(marker.read_text())
        del older["walk"]
        marker.write_text(json.dumps(older))
    resumed, found_again = exported()
    assert resumed.skipped == len(markers) - 1 - len(rewritten)
    assert found_again == expected


def test_export_findings_are_verifys_on_the_partitions_exported_only(
    spark: Any, tmp_path: Path
) -> None:
    """Issue 44 point 3: _findings is what `kdump verify` finds on the partitions exported, and
    nothing of those left out: a log dir whose other topic is not asked for (its checkpoint
    entry beyond that topic's end is not the export's), and two brokers' replicas, where the
    log dir of the replica not chosen has a recovery point past its end. Each time the same
    as verify of a copy holding only what was exported."""
    from kdump.spark.job import export_on_spark

    def export_findings(paths: list[Path], topics: tuple[str, ...] = ()) -> list[Any]:
        out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
        export_on_spark(spark, [str(p) for p in paths], str(out), topics=topics)
        rows = pq.read_table(out / FINDINGS_DIR).to_pylist()
        return [_finding_key(r) for r in rows if r["code"] != "EXPORT_GAP"]

    def verified(paths: list[Path]) -> list[Any]:
        result = verify_paths([str(p) for p in paths], VerifyOptions())
        return [_finding_key(f.to_dict()) for f in result.findings]

    root = tmp_path / "logdir"
    _beyond_log_end_and_epochs(root)
    assert "CHECKPOINT_BEYOND_LOG_END" in {k[0] for k in verified([root])}
    only_plain = tmp_path / "only-plain" / "logdir"
    shutil.copytree(root, only_plain)
    shutil.rmtree(only_plain / "txn-0")
    expected = [(k[0], k[1], k[2].replace(str(only_plain), str(root)), *k[3:])
                for k in verified([only_plain])]  # fmt: skip
    assert "LEADER_EPOCH_INCONSISTENT" in {k[0] for k in expected}
    assert "CHECKPOINT_BEYOND_LOG_END" not in {k[0] for k in expected}
    assert export_findings([root], topics=("plain",)) == expected

    a, b = _replicas_of_test_topic(tmp_path / "r")
    (a.parent / "recovery-point-offset-checkpoint").write_text("0\n1\ntest-topic 0 9999\n")
    assert "CHECKPOINT_BEYOND_LOG_END" in {k[0] for k in verified([a.parent])}
    assert export_findings([a.parent, b.parent]) == verified([b.parent])  # b is chosen


def _finding_key(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["code"], f["severity"], f["path"], f["offset"], f["position"], f["message"])


def test_session_settings_as_spark_submit_takes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40: spark-defaults.conf ($SPARK_CONF_DIR, java.util.Properties, values trimmed) under
    --conf, --master over both; spark.pyspark.python is the executors' Python (pyspark reads it
    from PYSPARK_PYTHON), this interpreter on a local master where none is named;
    spark.pyspark.driver.python another interpreter kdump runs again under, once."""
    from kdump.spark.session import driver_python, session_options, spark_defaults

    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("KDUMP_DRIVER_PYTHON", raising=False)
    assert spark_defaults() == {}
    (tmp_path / "spark-defaults.conf").write_text(
        "# a comment\nspark.master   spark://m:7077  \nspark.pyspark.python=/opt/x/python\n"
        "spark.pyspark.driver.python : /opt/d/python\n"
    )
    defaults = spark_defaults()
    assert defaults == {
        "spark.master": "spark://m:7077",
        "spark.pyspark.python": "/opt/x/python",
        "spark.pyspark.driver.python": "/opt/d/python",
    }
    options, python = session_options(None, {}, defaults, submitted=False)
    assert (options["spark.master"], python) == ("spark://m:7077", "/opt/x/python")
    conf = {"spark.pyspark.python": "/opt/y/python"}
    options, python = session_options("yarn", conf, defaults, submitted=False)
    assert (options["spark.master"], python) == ("yarn", "/opt/y/python")
    options, python = session_options(None, {}, {}, submitted=False)
    assert (options["spark.master"], python) == ("local[*]", sys.executable)
    assert session_options("spark://n:7077", {}, {}, submitted=False)[1] is None
    assert "spark.master" not in session_options(None, {}, {}, submitted=True)[0]
    java = "spark.driver.extraJavaOptions"
    log4j = session_options(None, {}, {}, submitted=False)[0][java]
    assert log4j.startswith("-Dlog4j2.configurationFile=file:") and " " not in log4j
    options, _ = session_options(None, {}, {java: "-Da=1"}, submitted=False)
    assert options[java] == f"{log4j} -Da=1"  # the site's options kept, after kdump's
    options, _ = session_options(None, {java: "-Db=2"}, {java: "-Da=1"}, submitted=False)
    assert options[java] == f"{log4j} -Db=2"

    assert driver_python({}) == "/opt/d/python"
    assert driver_python({"spark.pyspark.driver.python": sys.executable}) is None
    monkeypatch.setenv("KDUMP_DRIVER_PYTHON", "1")  # kdump run again already
    assert driver_python({}) is None
