"""kdump over a real S3 endpoint: moto's server on localhost with authentication on
(s3server.py), the Kafka-written partitions of fixtures/oracle and the tiered-storage samples of
fixtures/tiered uploaded in each layout tiered storage writes. ``dump``, ``verify`` and
``lookup`` of the URLs must say what they say of the same files on local disk; a store that
fails (through faultproxy.py) is one line on stderr, exit 3, and no traceback.

Every command runs as a child process, as a user runs it, reaching the store through the
standard credential chain (AWS_ACCESS_KEY_ID...) and AWS_ENDPOINT_URL.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import FIXTURES, ORACLE
from prometheus_client.parser import text_string_to_metric_families
from remoterun import (
    assert_one_error_line,
    kdump,
    kdump_in,
    same_names,
    sorted_lines,
    verify_json,
)
from s3server import BUCKET, S3Server, serving

pytest.importorskip("s3fs")
pytest.importorskip("moto")

TIERED = FIXTURES / "tiered"
PINTEREST = TIERED / "pinterest/ts-consumer/log-files/test_topic_a-0"
AIVEN = TIERED / "aiven-generated"
AIVEN_KEY = AIVEN / "test-rsa-private.pem"
AIVEN_STEMS = {
    "plain": "AAAAAAAAAAAAAAAAAAAAEQ",
    "zstd": "AAAAAAAAAAAAAAAAAAAAEg",
    "enc": "AAAAAAAAAAAAAAAAAAAAEw",
    "zstd-enc": "AAAAAAAAAAAAAAAAAAAAFA",
}
AIVEN_PARTITION = "test_topic_a-lZ6vvmajTWKDBUTV6SQAtQ/0"
PARTITIONS = sorted(p.name for p in ORACLE.iterdir() if p.is_dir())
TOPIC_ID = "lZ6vvmajTWKDBUTV6SQAtQ"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    with serving(tmp_path_factory.mktemp("s3")) as server:
        yield server


def segment_id(base_offset: int) -> str:
    """A Kafka Uuid.toString() for a segment: 22 url-safe base64 characters."""
    raw = (0xCAFE).to_bytes(8, "big") + base_offset.to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def upload_kafka_files(s3: S3Server, partition: Path) -> str:
    """A copied partition directory: Kafka's own file names under ``<topic>-<partition>/``."""
    return s3.put_tree(partition, f"backup/{partition.name}")


def upload_pinterest(s3: S3Server, partition: Path, local: Path) -> str:
    """Pinterest's uploader: ``<prefix>/<hash bits>/<cluster>/<topic>-<partition>/`` with each
    closed segment's .log, .index and .timeindex, and ``offset.wm``, the base offset of the
    last one uploaded. ``local`` gets the same files, for comparison."""
    logs = sorted(partition.glob("*.log"))[:-1]  # the active segment is never uploaded
    prefix = f"pinterest/0f3/cluster-a/{partition.name}"
    local.mkdir(parents=True)
    for log in logs:
        for suffix in (".log", ".index", ".timeindex"):
            f = log.with_suffix(suffix)
            if f.exists():
                s3.put(f"{prefix}/{f.name}", f.read_bytes())
                shutil.copy(f, local / f.name)
    s3.put(f"{prefix}/offset.wm", logs[-1].name[:20].encode())
    return f"s3://{BUCKET}/{prefix}"


def upload_kafka_rsm(s3: S3Server, name: str, local: Path) -> str:
    """Kafka's RemoteStorageManager of its tests (RemoteLogSegmentFileset): each closed
    segment's files named ``<offset20>-<segmentId>.<suffix>`` in
    ``<topic>-<partition>-<topicId>/``, with the producer snapshot at the segment's end (the
    next segment's base offset) and the leader epochs from the log start to the segment's end,
    as RemoteLogManager copies them. ``local`` gets the same segments' files, for comparison."""
    partition = ORACLE / name
    prefix = f"rsm/{name}-{TOPIC_ID}"
    logs = sorted(partition.glob("*.log"))
    epochs: list[tuple[int, int]] = []
    batches = json.loads((ORACLE / "manifest.json").read_text())["files"][name]
    local.mkdir(parents=True)
    for log, after in itertools.pairwise(logs):  # the active segment is never copied
        base = int(log.name[:20])
        stem = f"{base:020d}-{segment_id(base)}"
        for suffix in ("log", "index", "timeindex", "txnindex"):
            f = log.with_suffix(f".{suffix}")
            if f.exists():
                s3.put(f"{prefix}/{stem}.{suffix}", f.read_bytes())
                shutil.copy(f, local / f.name)
        snapshot = after.with_suffix(".snapshot")
        s3.put(f"{prefix}/{stem}.snapshot", snapshot.read_bytes() if snapshot.exists() else b"")
        for batch in batches[log.name]["batches"]:
            epoch = batch["partitionLeaderEpoch"]
            if epoch >= 0 and (not epochs or epochs[-1][0] != epoch):
                epochs.append((epoch, batch["baseOffset"]))
        text = f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs)
        s3.put(f"{prefix}/{stem}.leader_epoch_checkpoint", text.encode())
    return f"s3://{BUCKET}/{prefix}"


def as_closed(verified: dict[str, Any]) -> dict[str, Any]:
    """A verify document with each partition's active segment left out: tiered storage holds
    closed segments only, where a local copy of them has its last one active, and no broker
    loads it (no ``load`` forecast): the facts the two tell apart by design."""
    out = json.loads(json.dumps(verified))
    for p in out["summary"]["by_partition"]:
        p["active_segment"] = None
        p["load"] = None
    return out


def found_where(verified: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["code"], f["path"]) for f in verified["findings"]}


# -- the same answers as local files -------------------------------------------------------------


@pytest.mark.parametrize("name", PARTITIONS)
def test_kafka_files_dump_verify_lookup_as_local(s3: S3Server, name: str) -> None:
    local = ORACLE / name
    url = upload_kafka_files(s3, local)
    env = s3.env()
    for args in (["dump"], ["dump", "--deep-iteration", "--print-data-log"]):
        there, here = kdump_in([*args, url + "/"], env), run_kdump([*args, str(local)])
        assert there.exit_code == here.exit_code
        assert same_names(there.stdout, url, local) == here.stdout
        assert sorted_lines(same_names(there.stderr, url, local)) == sorted_lines(here.stderr)
    there, here = (
        kdump_in(["verify", "--format", "json", url], env),
        run_kdump(["verify", "--format", "json", str(local)]),
    )
    remote = json.loads(same_names(json.dumps(verify_json(there)), url, local))
    plain = verify_json(here)
    # a copy of a log dir is read as the log dir: its last segment is the active one
    assert remote == plain
    assert there.exit_code == here.exit_code
    manifest = json.loads((ORACLE / "manifest.json").read_text())
    offsets = [b["baseOffset"] for f in sorted(manifest["files"][name]) if f.endswith(".log")
               for b in manifest["files"][name][f]["batches"][:2]]  # fmt: skip
    for offset in [*offsets[1:3], 10**9]:
        there = kdump_in(["lookup", url, "--offset", str(offset), "--format", "json"], env)
        here = run_kdump(["lookup", str(local), "--offset", str(offset), "--format", "json"])
        assert there.exit_code == here.exit_code
        assert same_names(there.stdout, url, local) == here.stdout


COPIED_DAMAGE = [
    "log-crc-mismatch",
    "log-truncated-tail",
    "log-unknown-magic",
    "index-missing",
    "timeindex-missing-final-entry",
    "snapshot-corrupt",
    "partition-leftover-file-swap",
    "checkpoint-beyond-log-end-recovery-point",
]
"""Damage of each kind a copy must show as on disk: cuts, index files, snapshots, leftovers,
a log dir's checkpoints."""


def without_fixes(verified: dict[str, Any]) -> dict[str, Any]:
    """A verify document with each finding's fix left out: kdump repairs local files, so a copy
    in a store is told what is wrong, not a command to run on it (the one difference), and
    the registry's advice where there is no command (what the fix's absence brings)."""
    out = json.loads(json.dumps(verified))
    for f in out["findings"]:
        f["fix"] = f["advice"] = None
    return out


@pytest.mark.parametrize("case", COPIED_DAMAGE)
def test_a_damaged_copy_in_a_store_has_the_findings_and_facts_on_disk(
    s3: S3Server, case: str
) -> None:
    """A copy of a broken log dir (or partition) in S3 is read as the directory it copies:
    the same findings (its active segment is active there too) and the same partition facts,
    the log end after recovery's cut included."""
    local = FIXTURES / "corrupt" / case
    url = s3.put_tree(local, f"copies/{case}")
    there = kdump_in(["verify", "--format", "json", url], s3.env())
    here = run_kdump(["verify", "--format", "json", str(local)])
    assert there.exit_code == here.exit_code
    remote = json.loads(same_names(json.dumps(verify_json(there)), url, local))
    assert without_fixes(remote) == without_fixes(verify_json(here))


@pytest.mark.parametrize("name", ["plain-0", "txn-0", "gzip-0"])
def test_pinterest_layout_as_local(s3: S3Server, name: str, tmp_path: Path) -> None:
    local = tmp_path / name
    url = upload_pinterest(s3, ORACLE / name, local)
    env = s3.env()
    # the bucket's root: the hash level and the cluster level are found, not given
    there = kdump_in(["verify", "--format", "json", f"s3://{BUCKET}/pinterest/"], env)
    here = run_kdump(["verify", "--format", "json", str(local)])
    found = [p for p in verify_json(there)["summary"]["by_partition"] if p["path"] == url]
    assert len(found) == 1
    plain = as_closed(verify_json(here))
    assert json.loads(same_names(json.dumps(found[0]), url, local)) == dict(
        plain["summary"]["by_partition"][0],
        warnings=found[0]["warnings"],
        errors=found[0]["errors"],
        active_segment=None,
    )
    there = kdump_in(["verify", "--format", "json", url], env)
    assert json.loads(same_names(json.dumps(verify_json(there)), url, local)) == plain
    there, here = kdump_in(["dump", url], env), run_kdump(["dump", str(local)])
    assert (there.exit_code, same_names(there.stdout, url, local)) == (here.exit_code, here.stdout)


@pytest.mark.parametrize("name", ["plain-0", "txn-0", "legacyv1-0"])
def test_kafka_rsm_layout_as_local(s3: S3Server, name: str, tmp_path: Path) -> None:
    local = tmp_path / name
    url = upload_kafka_rsm(s3, name, local)
    env = s3.env()
    for f in sorted(local.iterdir()):
        base = int(f.name[:20])
        obj = f"{url}/{base:020d}-{segment_id(base)}{f.suffix}"
        there = kdump_in(["dump", "--deep-iteration", obj], env)
        here = run_kdump(["dump", "--deep-iteration", str(f)])
        assert there.exit_code == here.exit_code
        assert same_names(there.stdout, url, local) == here.stdout
    there = verify_json(kdump_in(["verify", "--format", "json", url], env))
    here = as_closed(verify_json(run_kdump(["verify", "--format", "json", str(local)])))
    remote = json.loads(same_names(json.dumps(there), url, local))
    # the leader epochs and producer snapshots tiered storage keeps are checked too: all clean
    assert found_where(remote) == found_where(here)
    assert remote["summary"] == here["summary"]
    for at in (["--timestamp", "1700000000500"], ["--offset", "100"]):
        there_l = kdump_in(["lookup", url, *at, "--format", "json"], env)
        here_l = run_kdump(["lookup", str(local), *at, "--format", "json"])
        assert there_l.exit_code == here_l.exit_code
        found, wanted = (
            json.loads(same_names(there_l.stdout, url, local)),
            json.loads(here_l.stdout),
        )
        # the segments considered on the way differ where the local copy's last segment is
        # active (its largest timestamp read from the log's tail): the answer does not
        for key in ("outcome", "segment", "batch", "record", "list_offsets", "log_end_offset"):
            assert found.get(key) == wanted.get(key)


@pytest.fixture(scope="module")
def aiven_url(s3: S3Server) -> str:
    return s3.put_tree(AIVEN, "aiven")


@pytest.mark.parametrize("variant", sorted(AIVEN_STEMS))
def test_aiven_segment_is_the_segment_aiven_was_given(
    s3: S3Server, aiven_url: str, variant: str
) -> None:
    """Aiven's own code wrote these objects from Pinterest's segment 0: read from S3 (chunks,
    zstd, AES-GCM under an RSA-wrapped key), its files dump as that segment's files."""
    env = s3.env()
    stem = f"{aiven_url}/{variant}/{AIVEN_PARTITION}/00000000000000000000-{AIVEN_STEMS[variant]}"
    key = ["--private-key", str(AIVEN_KEY)]
    for suffix in ("log", "index", "timeindex"):
        there = kdump_in(["dump", "--deep-iteration", *key, f"{stem}.{suffix}"], env)
        here = run_kdump(
            ["dump", "--deep-iteration", str(PINTEREST / f"00000000000000000000.{suffix}")]
        )
        assert there.exit_code == here.exit_code
        assert there.stdout.replace(f"{stem}.", str(PINTEREST / "00000000000000000000.")) == (
            here.stdout
        )
    verified = verify_json(kdump_in(["verify", "--format", "json", *key, stem + ".log"], env))
    assert verified["summary"]["batches"] == 6  # as kdump dump of the local file counts them
    there = kdump_in(
        ["lookup", *key, f"{aiven_url}/{variant}/{AIVEN_PARTITION}", "--offset", "300"], env
    )
    here = run_kdump(["lookup", str(PINTEREST), "--offset", "300"])
    assert there.exit_code == here.exit_code == 0
    assert there.stdout.splitlines()[1:] == here.stdout.splitlines()[1:]


def test_aiven_encrypted_without_key_is_one_line(s3: S3Server, aiven_url: str) -> None:
    stem = f"{aiven_url}/enc/{AIVEN_PARTITION}/00000000000000000000-{AIVEN_STEMS['enc']}"
    ran = kdump(["dump", stem + ".log"], s3.env())
    assert_one_error_line(ran, re.escape(stem + ".log"), "--private-key")


# -- failures -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plain_url(s3: S3Server) -> str:
    return upload_kafka_files(s3, ORACLE / "plain-0")


FIRST_LOG = "plain-0/00000000000000000000.log"


@pytest.fixture
def healed(s3: S3Server) -> Iterator[S3Server]:
    yield s3
    s3.faults()


def test_503_mid_read_is_retried(healed: S3Server, plain_url: str) -> None:
    args = ["verify", "--format", "json", "--read-ahead", "4096", plain_url]
    clean = kdump(args, healed.env(via_proxy=True))
    healed.faults({"match": FIRST_LOG, "fault": "503", "after": 2, "times": 1})
    retried = kdump(args, healed.env(via_proxy=True))
    assert retried.exit_code == clean.exit_code == 0, retried.stderr
    assert verify_json(retried) == verify_json(clean)
    assert [f.split()[0] for f in healed.served()] == ["503"]


def test_cut_off_read_names_object_and_byte(healed: S3Server, plain_url: str) -> None:
    healed.faults({"match": FIRST_LOG, "fault": "cut", "after": 1})
    ran = kdump(["verify", "--read-ahead", "4096", plain_url], healed.env(via_proxy=True))
    line = assert_one_error_line(
        ran, re.escape(f"{plain_url}/00000000000000000000.log"), r"byte \d+"
    )
    assert len(healed.served()) >= 2, "every attempt was cut"
    print(line)


def test_short_answer_is_a_truncated_object(healed: S3Server, plain_url: str) -> None:
    healed.faults({"match": FIRST_LOG, "fault": "short", "after": 1})
    ran = kdump(["dump", "--read-ahead", "4096", plain_url + "/"], healed.env(via_proxy=True))
    assert_one_error_line(
        ran, re.escape(f"{plain_url}/00000000000000000000.log:") + r"\d+", "truncated object"
    )
    assert healed.served()


def test_object_gone_after_listing(healed: S3Server, plain_url: str, tmp_path: Path) -> None:
    healed.faults({"match": "plain-0/00000000000000000000.timeindex", "fault": "404"})
    prom = tmp_path / "kdump.prom"
    ran = kdump(["verify", "--prom", str(prom), plain_url], healed.env(via_proxy=True))
    assert_one_error_line(
        ran, re.escape(f"{plain_url}/00000000000000000000.timeindex"), "no such object"
    )
    # nothing half-written: the metrics file whole (written on failure too), no temporary left
    assert [p.name for p in tmp_path.iterdir()] == ["kdump.prom"]
    exits = [
        sample.value
        for family in text_string_to_metric_families(prom.read_text())
        for sample in family.samples
        if sample.name == "kdump_exit_status"
    ]
    assert exits == [3]
    assert healed.served()


def test_missing_object(s3: S3Server, plain_url: str) -> None:
    for command in (["dump"], ["verify"], ["lookup", "--offset", "0"]):
        ran = kdump([*command, f"{plain_url}/no-such-segment.log"], s3.env())
        assert_one_error_line(ran, re.escape(f"{plain_url}/no-such-segment.log"), "no such")


def test_truncated_aiven_log_object(s3: S3Server) -> None:
    """A ``.log`` object shorter than its manifest's chunk index says: the object, the byte."""
    partition = AIVEN / "plain" / AIVEN_PARTITION
    prefix = f"truncated/{AIVEN_PARTITION}"
    for f in partition.iterdir():
        data = f.read_bytes()
        s3.put(f"{prefix}/{f.name}", data[:-100] if f.suffix == ".log" else data)
    url = f"s3://{BUCKET}/{prefix}"
    log = f"{url}/00000000000000000000-{AIVEN_STEMS['plain']}.log"
    for command in (["dump", log], ["verify", url]):
        ran = kdump(command, s3.env())
        assert_one_error_line(ran, re.escape(log) + r":\d+", "truncated object")


@pytest.mark.parametrize(
    ("override", "wanted"),
    [
        ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "SignatureDoesNotMatch|signature"),
        ({"AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000"}, "InvalidAccessKeyId|Access Key"),
    ],
)
def test_wrong_credentials(
    s3: S3Server, plain_url: str, override: dict[str, str], wanted: str
) -> None:
    for command in (["dump", plain_url + "/"], ["verify", plain_url]):
        ran = kdump(command, s3.env(**override))
        assert_one_error_line(ran, re.escape(plain_url), "credentials refused", wanted)


def test_authentication_is_on(s3: S3Server, plain_url: str) -> None:
    """The server refuses what it is not signed for: the tests above are not vacuous."""
    ran = kdump(["verify", "--anon", plain_url], s3.env())
    assert ran.exit_code == 3


# -- audits across a fleet (issue 33) ------------------------------------------------------------


def test_brokers_write_their_results_to_a_bucket_and_the_fleet_page_reads_them(
    s3: S3Server, tmp_path: Path
) -> None:
    """Each broker's cron PUTs its verify result under its own name; ``kdump report`` reads the
    prefix back: every broker, from the results alone."""
    env = s3.env()
    target = f"s3://{BUCKET}/audits/{{cluster_id}}/{{broker_id}}/{{started}}.json"
    for broker in (1, 2):
        log_dir = tmp_path / f"broker{broker}"
        shutil.copytree(ORACLE / "plain-0", log_dir / "orders-0")
        (log_dir / "meta.properties").write_text(f"version=1\nnode.id={broker}\ncluster.id=C1\n")
        ran = kdump_in(["verify", str(log_dir), "--format", "json", "--output", target], env)
        assert (ran.exit_code, ran.stdout) == (0, ""), ran.stderr
    keys = sorted(
        o["Key"] for o in s3.client().list_objects_v2(Bucket=BUCKET, Prefix="audits/")["Contents"]
    )
    assert [k.split("/")[1:3] for k in keys] == [["C1", "1"], ["C1", "2"]]
    page = tmp_path / "fleet.html"
    ran = kdump_in(["report", f"s3://{BUCKET}/audits/", "-o", str(page), "-q"], env)
    assert ran.exit_code == 0, ran.stderr
    assert "2 broker(s), 2 partition(s)" in page.read_text()
