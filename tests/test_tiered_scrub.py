"""`kdump tiered scrub`: buckets (file:// trees in Kafka's RemoteStorageManager layout and
Aiven's, and the same trees in a real S3 server, s3server.py) against __remote_log_metadata,
from Kafka's genuine records (fixtures/tiered/kafka-rlmm) and records written by an independent
encoder (tests/rlmmbuild.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import FIXTURES
from remoterun import kdump
from rlmmbuild import (
    DELETE_FINISHED,
    DELETE_STARTED,
    FINISHED,
    GENUINE_SEGMENT,
    PARTITION_FINISHED,
    MetadataLog,
    Segment,
    aiven_segment,
    metadata_partition,
    rsm_segment,
    uuid_string,
)
from s3server import S3Server, serving

from kdump.java import murmur2
from kdump.tiered import metadata as rlmm
from kdump.units import parse_duration

RLMM = FIXTURES / "tiered/kafka-rlmm"
T0 = 1_700_000_000_000
HOUR = 3_600_000


def scrub(bucket: Path | str, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict]:
    """``bucket``: a local tree, or a URL; with ``env`` (the S3 server's) in a child process,
    as a user runs it: kdump keeps one file system per process and store options, which would
    tie later modules' S3 reads here to this module's server after it stops."""
    url = bucket if isinstance(bucket, str) else bucket.as_uri()
    command = ["tiered", "scrub", url, "--format", "json", *args]
    ran = run_kdump(command) if env is None else kdump(command, env)
    assert ran.exit_code != 3, ran.stderr
    return ran.exit_code, json.loads(ran.stdout)


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    with serving(tmp_path_factory.mktemp("s3")) as server:
        yield server


Store = tuple[Callable[[Path], str], dict[str, str] | None]
"""How a test's local tree is scrubbed: its URL (uploading it first), and the environment."""


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """The tree as a file:// bucket, or copied under a prefix of its own in the S3 server (an
    empty tree: a prefix holding nothing, as a mistyped one)."""
    if request.param == "file":
        return Path.as_uri, None
    server: S3Server = request.getfixturevalue("s3")
    return lambda tree: server.put_tree(tree, f"{tmp_path.name}/{tree.name}"), server.env()


def codes(doc: dict) -> dict[str, list[str]]:
    """Finding code -> the segment ids (or paths) it names."""
    out: dict[str, list[str]] = {}
    for f in doc["findings"]:
        name = f["path"].rsplit("/", 1)[-1]
        out.setdefault(f["code"], []).append(name[21:43] if name.endswith(".log") else name)
    return out


# -- Kafka's partitioner and replay --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [  # Kafka's UtilsTest.testMurmur2
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_is_kafkas(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_metadata_partition_is_kafkas() -> None:
    # a JDK run of Objects.hash + Kafka's RemoteLogMetadataTopicPartitioner(50) (tiered notes
    # §4.4), and the partition Kafka wrote the genuine records to
    assert [rlmm.metadata_partition("AAAAAAAAAAAAAAAAAAAAAQ", p, 50) for p in range(4)] == [
        35,
        6,
        18,
        29,
    ]
    assert [rlmm.metadata_partition("lZ6vvmajTWKDBUTV6SQAtQ", p, 50) for p in range(4)] == [
        9,
        49,
        25,
        46,
    ]
    assert rlmm.metadata_partition("lZ6vvmajTWKDBUTV6SQAtQ", 42, 50) == 33
    for p in range(20):
        tid = uuid_string(p * 7919 + 11)
        assert rlmm.metadata_partition(tid, p, 50) == metadata_partition(tid, p, 50)


def test_replay_of_genuine_records_is_kafkas_cache() -> None:
    """fixtures/tiered/kafka-rlmm/expected-state.txt: what Kafka's RemoteLogMetadataCache held."""
    m = rlmm.read_remote_log_metadata([str(RLMM)])
    assert m.read == {33: str(RLMM / "__remote_log_metadata-33")} and not m.findings
    p = m.partitions[("lZ6vvmajTWKDBUTV6SQAtQ", 42)]
    states = {
        sid[-2:]: (s.start_offset, s.end_offset, s.state_name) for sid, s in p.segments.items()
    }
    assert states == {
        "RA": (2500, 2999, "COPY_SEGMENT_STARTED"),
        "Mw": (1000, 2499, "COPY_SEGMENT_FINISHED"),
        "Ig": (1000, 1999, "COPY_SEGMENT_FINISHED"),
    }
    e0, e1 = p.epochs[0], p.epochs[1]
    assert {s[-2:] for s in e0.offset_to_id.values()} == {"Mw"} and e0.highest_offset == 1999
    assert {s[-2:] for s in e0.unreferenced} == {"Ig"}
    assert {s[-2:] for s in e1.offset_to_id.values()} == {"Mw"} and e1.highest_offset == 2499
    assert {s[-2:] for s in e1.unreferenced} == {"RA"}
    assert list(p.deleted) == ["AAAAAAAAAAAAAAAAAAAAEQ"]


def test_independent_encoder_writes_kafkas_bytes() -> None:
    """The test writer's record equals the genuine one (records.hex line 0): it encodes what
    Kafka encodes, so the scenarios below are Kafka's records."""
    first = (RLMM / "records.hex").read_text().splitlines()[0].split()[1]
    log = MetadataLog()
    s = Segment("topic1", "lZ6vvmajTWKDBUTV6SQAtQ", 42, uuid_string(0x11), 0, 999, {0: 0}, 100000)
    log.add(s, T0 + 1, max_time=T0)
    assert log.values[0] == bytes.fromhex(first)


# -- the genuine records over a Kafka RSM bucket --------------------------------------------


def _genuine_bucket(root: Path) -> Path:
    bucket = root / "kafka-tiered-storage"
    tid = "lZ6vvmajTWKDBUTV6SQAtQ"
    for n, start, size in ((0x33, 1000, 150000), (0x22, 1000, 100000), (0x44, 2500, 50000)):
        rsm_segment(bucket, Segment("topic1", tid, 42, uuid_string(n), start, 0, {}, size))
    rsm_segment(bucket, Segment("topic1", tid, 42, uuid_string(0x11), 0, 999, {}, 100000))
    rsm_segment(bucket, Segment("topic1", tid, 42, uuid_string(0x55), 3000, 0, {}, 10))
    return bucket


def test_genuine_records_over_rsm_bucket(tmp_path: Path) -> None:
    bucket = _genuine_bucket(tmp_path)
    code, doc = scrub(bucket, "--metadata", str(RLMM), "--now", str(T0 + 100))
    found = codes(doc)
    assert found == {
        "SCRUB_ORPHAN": [uuid_string(0x11), uuid_string(0x55)],  # deleted, and unknown
        "SCRUB_SUPERSEDED": [uuid_string(0x22)],  # B, re-uploaded as C by the new leader
        "SCRUB_COPY_IN_PROGRESS": [uuid_string(0x44)],
    }
    assert code == 0
    assert doc["summary"]["segments_by_state"]["live"] == 1
    assert doc["summary"]["metadata_partitions_read"] == [33]
    deleted = next(f for f in doc["findings"] if uuid_string(0x11) in f["path"])
    assert "DELETE_SEGMENT_FINISHED" in deleted["message"]
    # a day later the STARTED copy is stuck; --fail-on warning makes it count
    code, doc = scrub(bucket, "--metadata", str(RLMM), "--now", str(T0 + 24 * HOUR))
    assert codes(doc)["SCRUB_COPY_STUCK"] == [uuid_string(0x44)] and code == 0
    code, _ = scrub(bucket, "--metadata", str(RLMM), "--fail-on", "warning")
    assert code == 1


def test_finished_segment_missing_is_an_error(tmp_path: Path) -> None:
    bucket = _genuine_bucket(tmp_path)
    d = bucket / "topic1-42-lZ6vvmajTWKDBUTV6SQAtQ"
    for f in d.glob(f"*{uuid_string(0x33)}*"):
        f.unlink()
    code, doc = scrub(bucket, "--metadata", str(RLMM), "--now", str(T0))
    assert codes(doc)["SCRUB_SEGMENT_MISSING"] == [uuid_string(0x33)]
    assert code == 2


def test_text_output(tmp_path: Path) -> None:
    bucket = _genuine_bucket(tmp_path)
    ran = run_kdump(["tiered", "scrub", bucket.as_uri(), "--metadata", str(RLMM)])
    assert ran.exit_code == 0
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("warning SCRUB_ORPHAN file://")
    assert "metadata partitions read: 33" in lines[-1]
    assert "1 live, 1 superseded" in lines[-1]


# -- scenarios from the independent encoder -------------------------------------------------


TID = uuid_string(0xA1B2C3)


def _seg(n: int, start: int, end: int, epochs: dict[int, int], partition: int = 0) -> Segment:
    return Segment("orders", TID, partition, uuid_string(n), start, end, epochs, 20999)


def test_aiven_bucket_states(tmp_path: Path) -> None:
    bucket, logs = tmp_path / "bucket", tmp_path / "logs"
    number = metadata_partition(TID, 0)
    log = MetadataLog()
    live, dup_old, dup_new = _seg(1, 0, 361, {0: 0}), _seg(2, 362, 400, {0: 362}), None
    dup_new = _seg(3, 362, 500, {0: 362, 1: 450})
    stuck, incomplete, deleting = _seg(4, 501, 600, {1: 501}), _seg(5, 601, 700, {1: 601}), None
    deleting = _seg(6, 701, 800, {1: 701})
    log.copied(live, T0)
    log.copied(dup_old, T0 + 10, broker=1)
    log.copied(dup_new, T0 + 20, broker=2)  # leader change: broker 2 uploads a superset
    log.add(stuck, T0 + 30, broker=2)
    log.copied(incomplete, T0 + 40, broker=2)
    log.copied(deleting, T0 + 50, broker=2)
    log.update(deleting, DELETE_STARTED, T0 + 60, broker=2)
    log.write(logs, number)
    for s in (live, dup_old, dup_new, stuck, deleting):
        aiven_segment(bucket, s)
    aiven_segment(bucket, incomplete, objects=("log", "indexes"))  # no manifest
    code, doc = scrub(bucket, "--metadata", str(logs), "--now", str(T0 + 2 * HOUR))
    found = codes(doc)
    assert found == {
        "SCRUB_SUPERSEDED": [dup_old.segment_id],
        "SCRUB_COPY_STUCK": [stuck.segment_id],
        "SCRUB_SEGMENT_INCOMPLETE": [incomplete.segment_id],
        "SCRUB_DELETE_STUCK": [deleting.segment_id],
    }
    assert code == 2
    # within a longer grace, the two are under way
    code, doc = scrub(bucket, "--metadata", str(logs), "--now", str(T0 + 2 * HOUR), "--grace", "3h")
    found = codes(doc)
    assert found["SCRUB_COPY_IN_PROGRESS"] == [stuck.segment_id]
    assert found["SCRUB_DELETE_IN_PROGRESS"] == [deleting.segment_id]
    # --deep: every live segment's batches CRC-checked by verify (the genuine segment: clean)
    code, doc = scrub(bucket, "--metadata", str(logs), "--grace", "1000d", "--deep")
    assert doc["summary"]["deep"]["batches"] > 0
    assert "SCRUB_SEGMENT_INCOMPLETE" in codes(doc)


def test_overlap_kafka_leaves_referenced(tmp_path: Path) -> None:
    """S3 (95..150) finishes after S2 (100..199): Kafka's epoch state supersedes nothing (its
    highest offset 199 is past S3's end), so S1, S3 and S2 all stay referenced, overlapping."""
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    log = MetadataLog()
    s1, s2, s3 = _seg(1, 0, 99, {0: 0}), _seg(2, 100, 199, {0: 100}), _seg(3, 95, 150, {0: 95})
    for i, s in enumerate((s1, s2, s3)):
        log.copied(s, T0 + 10 * i)
        rsm_segment(bucket, s)
    log.write(logs, metadata_partition(TID, 0))
    code, doc = scrub(bucket, "--metadata", str(logs))
    overlaps = [f for f in doc["findings"] if f["code"] == "SCRUB_OVERLAP"]
    assert [f["offset"] for f in overlaps] == [95, 100]
    assert code == 0 and all(f["severity"] == "warning" for f in overlaps)


def test_duplicate_after_leader_change_is_no_warning(tmp_path: Path) -> None:
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    log = MetadataLog()
    old, new = _seg(1, 0, 100, {0: 0}), _seg(2, 0, 200, {0: 0, 1: 150})
    log.copied(old, T0)
    log.copied(new, T0 + 5, broker=2)
    for s in (old, new):
        rsm_segment(bucket, s)
    log.write(logs, metadata_partition(TID, 0))
    code, doc = scrub(bucket, "--metadata", str(logs), "--fail-on", "warning")
    assert codes(doc) == {"SCRUB_SUPERSEDED": [old.segment_id]} and code == 0


def test_size_mismatch_and_deleted_partition(tmp_path: Path) -> None:
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    short = _seg(1, 0, 99, {0: 0})
    gone = _seg(2, 0, 99, {0: 0}, partition=1)
    log0, log1 = MetadataLog(), MetadataLog()
    log0.copied(short, T0)
    log1.copied(gone, T0)
    log1.update(gone, DELETE_STARTED, T0 + 1)
    log1.update(gone, DELETE_FINISHED, T0 + 2)
    log1.delete_partition("orders", TID, 1, PARTITION_FINISHED, T0 + 3)
    n0, n1 = metadata_partition(TID, 0), metadata_partition(TID, 1)
    assert n0 != n1
    log0.write(logs, n0)
    log1.write(logs, n1)
    rsm_segment(bucket, short, log=b"\0" * 100)
    rsm_segment(bucket, gone)
    code, doc = scrub(bucket, "--metadata", str(logs))
    assert codes(doc) == {
        "SCRUB_SIZE_MISMATCH": [short.segment_id],
        "SCRUB_ORPHAN": [gone.segment_id],
    }
    assert code == 2


def test_no_metadata_given_is_never_an_orphan(tmp_path: Path) -> None:
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    here, elsewhere = _seg(1, 0, 99, {0: 0}), _seg(2, 0, 99, {0: 0}, partition=1)
    log = MetadataLog()
    log.copied(here, T0)
    log.write(logs, metadata_partition(TID, 0))
    rsm_segment(bucket, here)
    rsm_segment(bucket, elsewhere)
    code, doc = scrub(bucket, "--metadata", str(logs), "--fail-on", "warning")
    assert code == 0
    [note] = [f for f in doc["findings"] if f["code"] == "SCRUB_NO_METADATA"]
    assert "no metadata given" in note["message"]
    assert f"__remote_log_metadata-{metadata_partition(TID, 1)}" in note["message"]
    assert "SCRUB_ORPHAN" not in codes(doc)


def test_truncated_history_dropped_records_and_missing_partition(tmp_path: Path) -> None:
    """Metadata whose first records retention deleted: an unknown segment is not called an
    orphan; an update of a segment never added and an invalid transition are dropped, as the
    broker drops them; a partition of a listed topic with live segments and no object."""
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    known, unknown, lost = _seg(1, 100, 199, {0: 100}), _seg(2, 0, 99, {0: 0}), None
    lost = _seg(3, 0, 99, {0: 0}, partition=2)
    log = MetadataLog()
    log.update(unknown, FINISHED, T0)  # its STARTED record was deleted by retention
    log.copied(known, T0 + 1)
    log.update(known, DELETE_FINISHED, T0 + 2)  # FINISHED -> DELETE_FINISHED: invalid
    n0, n2 = metadata_partition(TID, 0), metadata_partition(TID, 2)
    log.write(logs, n0, first_offset=7)
    other = MetadataLog()
    other.copied(lost, T0)
    other.write(logs, n2)
    rsm_segment(bucket, known)
    rsm_segment(bucket, unknown)
    code, doc = scrub(bucket, "--metadata", str(logs))
    found = codes(doc)
    assert found["SCRUB_UNTRACKED"] == [unknown.segment_id]
    assert "SCRUB_ORPHAN" not in found
    assert len(found["SCRUB_METADATA_DROPPED"]) == 2
    [missing] = [f for f in doc["findings"] if f["code"] == "SCRUB_SEGMENT_MISSING"]
    assert missing["path"] == _log(bucket.as_uri(), "orders-2-" + TID, lost)
    assert "no object of orders-2" in missing["message"] and missing["severity"] == "error"
    assert code == 2


def test_deep_finds_a_corrupt_batch(tmp_path: Path) -> None:
    bucket, logs = tmp_path / "kafka-tiered-storage", tmp_path / "logs"
    data = bytearray((GENUINE_SEGMENT / "00000000000000000000.log").read_bytes())
    s = Segment("orders", TID, 0, uuid_string(9), 0, 361, {0: 0}, len(data))
    log = MetadataLog()
    log.copied(s, T0)
    log.write(logs, metadata_partition(TID, 0))
    data[200] ^= 0xFF
    rsm_segment(bucket, s, log=bytes(data))
    code, doc = scrub(bucket, "--metadata", str(logs))
    assert code == 0 and doc["findings"] == []
    code, doc = scrub(bucket, "--metadata", str(logs), "--deep")
    assert code == 2
    assert any(f["severity"] == "error" and ".log" in f["path"] for f in doc["findings"])


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bucket = _genuine_bucket(tmp_path)
    ran = run_kdump(["tiered", "scrub", bucket.as_uri(), "--metadata", str(GENUINE_SEGMENT)])
    assert ran.exit_code == 3
    assert ran.stderr.startswith("kdump: ") and "__remote_log_metadata" in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1
    ran = run_kdump(["tiered", "scrub", bucket.as_uri(), "--metadata", str(RLMM), "--grace", "x"])
    assert ran.exit_code == 3
    # nothing to compare: no object, and no COPY_SEGMENT_FINISHED segment to look for
    empty, logs = tmp_path / "empty", tmp_path / "logs"
    empty.mkdir()
    log = MetadataLog()
    log.add(_seg(1, 0, 99, {0: 0}), T0)
    log.write(logs, metadata_partition(TID, 0))
    ran = run_kdump(["tiered", "scrub", empty.as_uri(), "--metadata", str(logs)])
    assert ran.exit_code == 3 and "holds no tiered-storage segments" in ran.stderr
    assert ran.stdout == ""


# -- where the objects are: prefixes, layouts, folders ----------------------------------------


def _log(folder: str, name: str, s: Segment) -> str:
    return f"{folder.rstrip('/')}/{name}/{s.start:020d}-{s.segment_id}.log"


def _orders(logs: Path) -> dict[str, Segment]:
    """orders-0 with three live segments, a superseded one and a copy under way; orders-1 with
    one live segment: Kafka's records in their metadata partitions under ``logs``."""
    named = {
        "old": _seg(1, 0, 99, {0: 0}),
        "first": _seg(2, 0, 149, {0: 0, 1: 120}),  # the new leader's upload: "old" superseded
        "second": _seg(3, 150, 199, {1: 150}),
        "third": _seg(4, 200, 299, {1: 200}),
        "copying": _seg(5, 300, 399, {1: 300}),
        "other": _seg(6, 0, 49, {0: 0}, partition=1),
    }
    log0, log1 = MetadataLog(), MetadataLog()
    for name in ("old", "first", "second", "third"):
        log0.copied(named[name], T0 + 10 * len(log0.values), broker=2 if name != "old" else 1)
    log0.add(named["copying"], T0 + 100)
    log1.copied(named["other"], T0)
    log0.write(logs, metadata_partition(TID, 0))
    log1.write(logs, metadata_partition(TID, 1))
    return named


def _missing(doc: dict) -> dict[str, dict]:
    return {f["path"]: f for f in doc["findings"] if f["code"] == "SCRUB_SEGMENT_MISSING"}


def test_same_partition_under_two_prefixes_compared_apart(tmp_path: Path, store: Store) -> None:
    """Issue 27.9: a backup of the partition under another prefix, taken before the third
    segment was copied and still holding the second, which the broker's prefix lost. Merged by
    topic id and partition, the backup's second hid the loss (exit 0)."""
    logs, tree = tmp_path / "logs", tmp_path / "bucket"
    seg = _orders(logs)
    for name in ("old", "first", "third"):
        rsm_segment(tree / "live", seg[name])
    for name in ("old", "first", "second"):
        rsm_segment(tree / "backup", seg[name])
    rsm_segment(tree / "live", seg["other"])
    url_of, env = store
    url = url_of(tree)
    code, doc = scrub(url, "--metadata", str(logs), "--now", str(T0 + 200), env=env)
    folder = "orders-0-" + TID
    assert sorted(_missing(doc)) == [
        _log(f"{url}/backup", folder, seg["third"]),
        _log(f"{url}/live", folder, seg["second"]),
    ]
    [dup] = [f for f in doc["findings"] if f["code"] == "SCRUB_DUPLICATE_PARTITION"]
    assert f"{url}/backup (Kafka RemoteStorageManager" in dup["message"]
    assert f"{url}/live (Kafka RemoteStorageManager" in dup["message"]
    assert "orders-0" in dup["message"] and dup["severity"] == "warning"
    assert codes(doc)["SCRUB_SUPERSEDED"] == [seg["old"].segment_id] * 2  # once per copy
    assert code == 2
    # the broker's prefix alone (read where it is cheap): the same finding, and no duplicate
    live = (tree / "live").as_uri()
    code, alone = scrub(tree / "live", "--metadata", str(logs), "--now", str(T0 + 200))
    assert list(_missing(alone)) == [_log(live, folder, seg["second"])]
    assert "SCRUB_DUPLICATE_PARTITION" not in codes(alone) and code == 2


def test_empty_bucket_lacks_every_finished_segment(tmp_path: Path, store: Store) -> None:
    """Issue 28.12: an empty bucket, or a prefix holding nothing (a mistyped one), against
    metadata naming live segments: each is missing, looked for in each layout's names. It was
    "holds no tiered-storage segments", exit 3, as for a usage error."""
    logs, tree = tmp_path / "logs", tmp_path / "nothing-here"
    tree.mkdir()
    seg = _orders(logs)
    url_of, env = store
    url = url_of(tree)
    code, doc = scrub(url, "--metadata", str(logs), "--now", str(T0 + 200), env=env)
    missing = _missing(doc)
    # the live ones only: the superseded one and the copy under way are read by no consumer
    live = [("orders-0", seg[n]) for n in ("first", "second", "third")] + [
        ("orders-1", seg["other"])
    ]
    assert list(missing) == [_log(url, f"{name}-{TID}", s) for name, s in live]
    for (name, s), f in zip(live, missing.values(), strict=True):
        topic, number = name.split("-")
        assert f"no object of {name} (topic id {TID}) is under {url}" in f["message"]
        assert _log(url, f"{topic}-{TID}/{number}", s) in f["message"]  # Aiven's name
        assert f["offset"] == s.start and f["severity"] == "error"
    assert code == 2


def test_missing_partition_named_in_the_layout_found(tmp_path: Path) -> None:
    """Issue 28.12, whatever the layout: an Aiven bucket holding orders-0 and not orders-1 (its
    segment is looked for in Aiven's names only); a bucket of Kafka's plain file names (a copied
    partition directory, no segment ids) holds no KIP-405 segment at all."""
    logs = tmp_path / "logs"
    seg = _orders(logs)
    aiven = tmp_path / "aiven"
    for name in ("first", "second", "third"):
        aiven_segment(aiven / "prefix", seg[name])
    code, doc = scrub(aiven, "--metadata", str(logs), "--grace", "1000d")
    [f] = _missing(doc).values()
    assert f["path"] == _log((aiven / "prefix").as_uri(), f"orders-{TID}/1", seg["other"])
    assert "Aiven tiered-storage-for-apache-kafka names" in f["message"]
    assert "RemoteStorageManager" not in f["message"]
    assert code == 2
    plain = tmp_path / "plain" / "orders-0"
    plain.mkdir(parents=True)
    shutil.copy(GENUINE_SEGMENT / "00000000000000000000.log", plain)
    code, doc = scrub(plain.parent, "--metadata", str(logs), "--grace", "1000d")
    assert list(codes(doc)) == ["SCRUB_NOT_KIP405", "SCRUB_SEGMENT_MISSING"]
    assert len(_missing(doc)) == 4 and code == 2


def test_url_of_one_folder_is_compared_with_its_metadata_alone(tmp_path: Path) -> None:
    """A URL naming one partition's folder (RSM) or one topic's (Aiven): the metadata's other
    partitions are outside it, not missing; an empty folder lacks its own segments only."""
    logs, bucket = tmp_path / "logs", tmp_path / "bucket"
    seg = _orders(logs)
    for name in ("old", "first", "second", "third"):
        rsm_segment(bucket, seg[name])
    folder = bucket / f"orders-0-{TID}"
    code, doc = scrub(folder, "--metadata", str(logs), "--grace", "1000d", "--fail-on", "warning")
    assert list(codes(doc)) == ["SCRUB_SUPERSEDED", "SCRUB_PARTITIONS_ELSEWHERE"]
    assert code == 0
    empty = bucket / f"orders-1-{TID}"
    empty.mkdir()
    code, doc = scrub(empty, "--metadata", str(logs), "--grace", "1000d")
    assert list(_missing(doc)) == [
        f"{empty.as_uri()}/00000000000000000000-{seg['other'].segment_id}.log"
    ]
    assert code == 2
    aiven = tmp_path / "aiven"
    aiven_segment(aiven, seg["other"])
    topic = aiven / f"orders-{TID}"
    code, doc = scrub(topic, "--metadata", str(logs), "--grace", "1000d")
    assert list(_missing(doc)) == [
        _log(topic.as_uri(), "0", seg[n]) for n in ("first", "second", "third")
    ]
    assert code == 2


def test_parse_duration() -> None:
    assert parse_duration("90s") == 90_000
    assert parse_duration("500ms") == 500
    assert parse_duration("2h") == 2 * HOUR
    assert parse_duration("1d") == 24 * HOUR
    assert parse_duration("1234") == 1234
    with pytest.raises(ValueError):
        parse_duration("soon")
