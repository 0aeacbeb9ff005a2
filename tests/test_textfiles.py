"""Kafka's text files: offset checkpoints, leader-epoch-checkpoint, partition.metadata and
meta.properties, read as the broker reads them, from the genuine broker directories and from
broken copies whose errors must name the file, the line and the byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import REALFILES, REPO, by_content

from kdump.errors import FormatError
from kdump.format.checkpoint import EpochEntry, PartitionMetadata
from kdump.format.textfiles import (
    MetaProperties,
    TopicPartitionOffset,
    parse_properties,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    text_file_reader,
)

REAL_TEXT_FILES = sorted(
    p for p in REALFILES.rglob("*") if p.is_file() and text_file_reader(p.name) is not None
)


# The name picks the reader: a file is a distinct case by its name and its bytes.
@pytest.mark.parametrize("path", by_content(REAL_TEXT_FILES, REALFILES, lambda p: p.name))
def test_every_real_text_file_reads(path: Path) -> None:
    reader = text_file_reader(path.name)
    assert reader is not None
    result = reader(path.read_bytes(), str(path))
    if path.name.endswith("checkpoint"):
        # Line 2 holds the entry count; the reader returned that many entries.
        lines = path.read_text().splitlines()
        assert len(result) == (int(lines[1]) if len(lines) > 1 else 0)


def test_real_files_cover_every_kind() -> None:
    names = {p.name for p in REAL_TEXT_FILES}
    assert {
        "meta.properties",
        "partition.metadata",
        "leader-epoch-checkpoint",
        "recovery-point-offset-checkpoint",
        "replication-offset-checkpoint",
        "log-start-offset-checkpoint",
        "cleaner-offset-checkpoint",
    } <= names


KAFKA_13 = REALFILES / "13LAckHEart__kafka" / "data" / "kafka"


def test_real_values() -> None:
    assert read_leader_epoch_checkpoint(
        (KAFKA_13 / "__cluster_metadata-0" / "leader-epoch-checkpoint").read_bytes()
    ) == [EpochEntry(1, 0), EpochEntry(2, 913)]
    assert read_partition_metadata(
        (KAFKA_13 / "test-topic-0" / "partition.metadata").read_bytes()
    ) == PartitionMetadata(0, "nZVx63Q8SpqAECDuXUqSOw")
    assert read_offset_checkpoint((KAFKA_13 / "replication-offset-checkpoint").read_bytes()) == [
        TopicPartitionOffset("test-topic", 0, 0)
    ]
    assert read_meta_properties((KAFKA_13 / "meta.properties").read_bytes()) == MetaProperties(
        1, "kmVSdAwAQMSE2cgv4aeL8g", 1, "WerXdx86R9UAaHrQ0aXRpg"
    )
    zk_era = REALFILES / "panic08__kafka-starter-windows" / "kafka-logs" / "meta.properties"
    assert read_meta_properties(zk_era.read_bytes()) == MetaProperties(
        0, "JYMDBaA1Q3St4WsjB7OfvQ", 0, None
    )


def test_epochs_match_the_log_they_describe() -> None:
    """The leader epoch checkpoint's start offsets are where the log's epochs change."""
    from kdump.storage.local import open_log_file

    log = open_log_file(KAFKA_13 / "__cluster_metadata-0" / "00000000000000000000.log")
    starts: dict[int, int] = {}
    for batch in log.batches():
        starts.setdefault(batch.partition_leader_epoch, batch.base_offset)
    checkpoint = read_leader_epoch_checkpoint(
        (KAFKA_13 / "__cluster_metadata-0" / "leader-epoch-checkpoint").read_bytes()
    )
    assert [(e.epoch, e.start_offset) for e in checkpoint] == sorted(starts.items())


def error(reader, data: bytes) -> FormatError:  # type: ignore[no-untyped-def]
    with pytest.raises(FormatError) as info:
        reader(data, "dir/file")
    return info.value


@pytest.mark.parametrize(
    ("data", "position", "message"),
    [
        (b"1\n0\n", 0, "line 1: Unrecognised version:1, expected version: 0"),
        (b"0 \n0\n", 0, "line 1: Malformed line in checkpoint file: 0 "),
        (b"0\nx\n", 2, "line 2: Malformed line in checkpoint file: x"),
        (
            b"0\n2\nt 0 5\n",
            2,
            "line 2: Expected [2] entries in checkpoint file, but found only [1]",
        ),
        (
            b"0\n1\nt 0 5\nu 1 6\n",
            2,
            "line 2: Expected [1] entries in checkpoint file, but found only [2]",
        ),
        (b"0\n1\nt 0\n", 4, "line 3: Malformed line in checkpoint file: t 0"),
        (b"0\n1\nt zero 5\n", 4, "line 3: Malformed line in checkpoint file: t zero 5"),
        (b"0\n1\n t 0 5\n", 4, "line 3: Malformed line in checkpoint file:  t 0 5"),
        (b"0\n1\nt 0 99999999999999999999\n", 4, "line 3: Malformed line in checkpoint file"),
        (b"0\n-1\n", 2, "line 2: Illegal Capacity: -1"),
        (b"0\r\n1\r\nt \xff 5\r\n", 8, "line 3: malformed utf-8 input"),
    ],
    ids=[
        "version",
        "version-space",
        "count",
        "too-few",
        "too-many",
        "fields",
        "number",
        "leading-space",
        "long-range",
        "negative-count",
        "not-utf8",
    ],
)
def test_offset_checkpoint_errors(data: bytes, position: int, message: str) -> None:
    e = error(read_offset_checkpoint, data)
    assert e.path == "dir/file"
    assert e.position == position
    assert e.reason.startswith(message)
    assert str(e).startswith(f"dir/file:{position}: line ")


def test_checkpoint_forms_kafka_accepts() -> None:
    assert read_offset_checkpoint(b"") == []
    assert read_offset_checkpoint(b"0\n") == []  # no count line: no entries
    assert read_offset_checkpoint(b"0\r\n1\r\nt\t0  +5\r\n") == [TopicPartitionOffset("t", 0, 5)]
    assert read_offset_checkpoint(b"0\r1\rmy topic 0 5\r".replace(b"my ", b"")) == [
        TopicPartitionOffset("topic", 0, 5)
    ]
    assert read_leader_epoch_checkpoint(b"0\n2\n0 0\n3 120\n") == [
        EpochEntry(0, 0),
        EpochEntry(3, 120),
    ]
    e = error(read_leader_epoch_checkpoint, b"0\n1\n0 0 0\n")
    assert e.reason == "line 3: Malformed line in checkpoint file: 0 0 0"


@pytest.mark.parametrize(
    ("data", "position", "message"),
    [
        (b"version: 1\ntopic_id: nZVx63Q8SpqAECDuXUqSOw", None, None),
        (
            b"version: -1\ntopic_id: x\n",
            0,
            "line 1: Unrecognized version of partition metadata file: -1",
        ),
        (b"version:0\n", 0, "line 1: Malformed line in checkpoint file: version:0"),
        (b"version: 0\n", 11, "no topic_id line"),
        (
            b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",
            11,
            "line 2: Invalid topic ID in partition metadata file",
        ),
        (b"version: 0\ntopic_id: abc\n", 11, "line 2: Input string `abc` decoded as 2 bytes"),
        (
            b"version: 0\ntopic_id: " + b"A" * 30 + b"\n",
            11,
            "line 2: Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long",
        ),
    ],
    ids=[
        "newer-version",
        "negative-version",
        "one-field",
        "no-topic",
        "zero-uuid",
        "short-uuid",
        "long-uuid",
    ],
)
def test_partition_metadata(data: bytes, position: int | None, message: str | None) -> None:
    if message is None:
        assert read_partition_metadata(data) == PartitionMetadata(1, "nZVx63Q8SpqAECDuXUqSOw")
        return
    e = error(read_partition_metadata, data)
    assert (e.position, e.reason[: len(message)]) == (position, message)


def test_properties_syntax_is_javas() -> None:
    text = (
        b"# comment\n"
        b"  ! another\n"
        b"a=1\n"
        b"b : 2\n"
        b"c 3\n"
        b"d\\\n"
        b"   continued=4\n"
        b"e=x\\ty\\u00e9\n"
        b"f\\=g=5\n"
        b"h==6\n"
        b"\n"
        b"i\n"
        b"caf\xe9=latin1\n"
    )
    props = {k: v for k, (v, _) in parse_properties(text).items()}
    assert props == {
        "a": "1",
        "b": "2",
        "c": "3",
        "dcontinued": "4",
        "e": "x\tyé",
        "f=g": "5",
        "h": "=6",
        "i": "",
        "café": "latin1",
    }
    lines = {k: line.number for k, (_, line) in parse_properties(text).items()}
    assert lines["dcontinued"] == 6 and lines["café"] == 13


@pytest.mark.parametrize(
    ("data", "position", "message"),
    [
        (b"version=2\nnode.id=1\n", 0, "line 1: Unknown meta.properties version number 2"),
        (b"version=x\n", 0, "line 1: Invalid meta.properties version string 'x'"),
        (b"version=1\ncluster.id=c\n", 0, "Failed to find node.id"),
        (
            b"version=1\ncluster.id=c\nnode.id=one\n",
            23,
            "line 3: Unable to read node.id as a base-10 number.",
        ),
        (b"version=1\nnode.id=1\n", 0, "cluster.id was not found."),
        (
            b"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=zz\n",
            33,
            "line 4: Unable to read directory.id as a Uuid: ",
        ),
        (b"broker.id=x\n", 0, "line 1: Unable to read broker.id as a base-10 number."),
    ],
    ids=[
        "unknown-version",
        "bad-version",
        "no-node-id",
        "bad-node-id",
        "no-cluster-id",
        "bad-directory-id",
        "bad-broker-id",
    ],
)
def test_meta_properties_errors(data: bytes, position: int, message: str) -> None:
    e = error(read_meta_properties, data)
    assert (e.position, e.reason[: len(message)]) == (position, message)


def test_meta_properties_version_0_needs_little() -> None:
    assert read_meta_properties(b"") == MetaProperties(0, None, None, None)
    assert read_meta_properties(b"version = 0 \nbroker.id=3\n") == MetaProperties(0, None, 3, None)


def kdump(*args: str) -> tuple[int, str, str]:
    ran = run_kdump(list(args), cwd=REPO)
    return ran.exit_code, ran.stdout, ran.stderr


REAL = "fixtures/realfiles/13LAckHEart__kafka/data/kafka"


def test_dump_text_files_by_name() -> None:
    files = [
        f"{REAL}/meta.properties",
        f"{REAL}/__cluster_metadata-0/leader-epoch-checkpoint",
        f"{REAL}/replication-offset-checkpoint",
        f"{REAL}/test-topic-0/partition.metadata",
        f"{REAL}/cleaner-offset-checkpoint",
    ]
    code, out, err = kdump("--files", ",".join(files))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"Dumping {files[0]}",
        "version: 1 clusterId: kmVSdAwAQMSE2cgv4aeL8g nodeId: 1 "
        "directoryId: WerXdx86R9UAaHrQ0aXRpg",
        f"Dumping {files[1]}",
        "epoch: 1 startOffset: 0",
        "epoch: 2 startOffset: 913",
        f"Dumping {files[2]}",
        "topic: test-topic partition: 0 offset: 0",
        f"Dumping {files[3]}",
        "version: 0 topicId: nZVx63Q8SpqAECDuXUqSOw",
        f"Dumping {files[4]}",
    ]


def test_dump_text_files_as_jsonl() -> None:
    code, out, err = kdump(
        "dump",
        "--format",
        "jsonl",
        f"{REAL}/__cluster_metadata-0/leader-epoch-checkpoint",
        f"{REAL}/test-topic-0/partition.metadata",
    )
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "type": "epoch_entry",
            "file": f"{REAL}/__cluster_metadata-0/leader-epoch-checkpoint",
            "epoch": 1,
            "start_offset": 0,
        },
        {
            "type": "epoch_entry",
            "file": f"{REAL}/__cluster_metadata-0/leader-epoch-checkpoint",
            "epoch": 2,
            "start_offset": 913,
        },
        {
            "type": "partition_metadata",
            "file": f"{REAL}/test-topic-0/partition.metadata",
            "version": 0,
            "topic_id": "nZVx63Q8SpqAECDuXUqSOw",
        },
    ]


def test_a_broken_text_file_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "leader-epoch-checkpoint"
    broken.write_bytes(b"0\n2\n0 0\n")
    good = tmp_path / "recovery-point-offset-checkpoint"
    good.write_bytes(b"0\n1\nt 0 5\n")
    code, out, err = kdump("--files", f"{broken},{good}")
    assert out.splitlines() == [
        f"Dumping {broken}",
        f"Dumping {good}",
        "topic: t partition: 0 offset: 5",
    ]
    assert err == (
        f"kdump: {broken}:2: line 2: Expected [2] entries in checkpoint file, but found only [1]\n"
    )
    assert code == 2
    code, out, err = kdump("dump", "--format", "jsonl", str(broken))
    assert json.loads(out) == {
        "type": "error",
        "file": str(broken),
        "position": 2,
        "message": "line 2: Expected [2] entries in checkpoint file, but found only [1]",
    }


def test_other_names_stay_unknown(tmp_path: Path) -> None:
    other = tmp_path / "quorum-state"
    other.write_text("{}")
    code, out, err = kdump("--files", str(other))
    # Kafka's line for an unknown file; nothing at all dumped is bad input (issue 15)
    assert (code, out) == (3, f"Dumping {other}\n")
    assert err.splitlines() == [
        f"Ignoring unknown file {os.fspath(other)}",
        "kdump: no Kafka file to dump among the paths given",
    ]


def test_the_text_files_by_name_are_those_with_a_reader() -> None:
    """kdump.format.names.TEXT_FILES (what a dump tells a text file by, before it loads the
    readers' module) names the files text_file_reader reads, and only those."""
    from kdump.format.names import DUMPED_SUFFIXES, LEADER_EPOCH_SUFFIX, TEXT_FILES
    from kdump.format.textfiles import text_file_reader

    assert all(text_file_reader(name) is not None for name in TEXT_FILES)
    others = ["00000000000000000000" + s for s in (*DUMPED_SUFFIXES, LEADER_EPOCH_SUFFIX)]
    assert [n for n in [*others, "server.properties", "quorum-state"] if text_file_reader(n)] == []
