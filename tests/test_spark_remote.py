"""Spark over an object store: `kdump spark verify|export` and the "kafka-segments" source on
URLs, on local[2]. The executors read their segments' ranges through kdump.storage (no mount):
a file:// bucket in Kafka's RemoteStorageManager layout and Aiven's (zstd-compressed chunks),
and one run against the tests' S3 server (s3server.py, authentication on), written back to S3.

Expected values: `kdump verify` of the same URLs (identical findings), and the records of the
original Kafka-written segments parsed by kdump from local disk.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pq = pytest.importorskip("pyarrow.parquet")

from clirun import run_kdump  # noqa: E402
from conftest import FIXTURES, ORACLE  # noqa: E402
from exportread import read_export  # noqa: E402
from rlmmbuild import uuid_string  # noqa: E402
from s3server import S3Server  # noqa: E402

from kdump.spark.job import FINDINGS_DIR  # noqa: E402
from kdump.spark.source import register  # noqa: E402
from kdump.storage.local import open_log_file  # noqa: E402

TOPIC_ID = uuid_string(0x5EED)
AIVEN_ZSTD = FIXTURES / "tiered/aiven-generated/zstd/test_topic_a-lZ6vvmajTWKDBUTV6SQAtQ"
GENUINE_SEGMENT = FIXTURES / "tiered/pinterest/ts-consumer/log-files/test_topic_a-0"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from kdump.spark.session import build_session

    active = SparkSession.getActiveSession()
    if active is not None:  # test_spark's session: shared, stopped by its owner
        yield active
        return
    session = build_session("local[2]", {"spark.ui.enabled": "false"}, log_level="ERROR")
    yield session
    session.stop()


def _rsm_partition(bucket: Path, source: Path, topic: str, partition: int) -> None:
    """A partition directory's closed segments as LocalTieredStorage stores them."""
    d = bucket / f"{topic}-{partition}-{TOPIC_ID}"
    d.mkdir(parents=True)
    bases = sorted(int(p.stem) for p in source.glob("*.log"))
    for n, base in enumerate(bases):
        stem = f"{base:020d}-{uuid_string(0x100 + 16 * partition + n)}"
        for suffix in ("log", "index", "timeindex"):
            shutil.copyfile(source / f"{base:020d}.{suffix}", d / f"{stem}.{suffix}")
        nxt = source / f"{bases[n + 1] if n + 1 < len(bases) else 0:020d}.snapshot"
        (d / f"{stem}.snapshot").write_bytes(nxt.read_bytes() if nxt.exists() else b"")
        (d / f"{stem}.leader_epoch_checkpoint").write_text("0\n1\n0 0\n")


@pytest.fixture(scope="module")
def bucket(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bucket")
    _rsm_partition(root, ORACLE / "plain-0", "plain", 0)
    _rsm_partition(root, ORACLE / "lz4-0", "lz4", 0)
    shutil.copytree(AIVEN_ZSTD, root / "tiered" / AIVEN_ZSTD.name)
    return root


def _original_offsets() -> list[int]:
    """Every record offset of the segments the bucket holds, parsed from local disk."""
    offsets = []
    logs = [*sorted((ORACLE / "plain-0").glob("*.log")), *sorted((ORACLE / "lz4-0").glob("*.log"))]
    for log_path in [*logs, GENUINE_SEGMENT / "00000000000000000000.log"]:
        log = open_log_file(log_path)
        for batch in log.batches():
            offsets += [r.offset for r in log.records(batch)]
    return sorted(offsets)


def test_spark_verify_over_urls_is_kdump_verify(spark: Any, bucket: Path) -> None:
    url = bucket.as_uri()
    local = run_kdump(["verify", url, "--format", "json"])
    remote = run_kdump(["spark", "verify", url, "--format", "json", "--tasks", "2"])
    assert local.exit_code == remote.exit_code != 3, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b["findings"] == a["findings"]
    assert b["summary"]["by_partition"] == a["summary"]["by_partition"]
    assert a["summary"]["partitions"] == 3 and a["summary"]["batches"] > 0


def test_spark_export_and_source_over_urls(spark: Any, bucket: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = run_kdump(["spark", "export", bucket.as_uri(), "--output", out.as_uri()])
    assert ran.exit_code == 0, ran.stderr
    table = read_export(out)
    assert sorted(table.column("offset").to_pylist()) == _original_offsets()
    assert set(table.column("topic").to_pylist()) == {"plain", "lz4", "test_topic_a"}
    assert (out / "_SUCCESS").exists() and not (out / "_temporary").exists()
    # the segments' findings, index and snapshot ones too, as kdump verify has them
    verified = json.loads(run_kdump(["verify", bucket.as_uri(), "--format", "json"]).stdout)
    found = {(f["code"], f["path"]) for f in pq.read_table(out / FINDINGS_DIR).to_pylist()}
    assert found and found <= {(f["code"], f["path"]) for f in verified["findings"]}
    register(spark)
    df = spark.read.format("kafka-segments").load(bucket.as_uri())
    assert df.count() == len(_original_offsets())


# -- a real S3 endpoint (tests/s3server.py: moto's server, authentication on) ----------------


@pytest.fixture
def s3server(tmp_path: Path) -> Iterator[S3Server]:
    server = S3Server(tmp_path / "s3")
    server.workdir.mkdir()
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_spark_export_s3_to_s3(bucket: Path, s3server: S3Server, tmp_path: Path) -> None:
    s3 = s3server.client()
    s3.create_bucket(Bucket="tiered")
    s3.create_bucket(Bucket="lake")
    for path in bucket.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), "tiered", str(path.relative_to(bucket)))
    env = s3server.env()
    endpoint = env.pop("AWS_ENDPOINT_URL")  # given as the option instead
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "kdump",
            "spark",
            "export",
            "s3://tiered/",
            "--output",
            "s3://lake/records",
            "--endpoint-url",
            endpoint,
            "--master",
            "local[2]",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="lake")["Contents"]]
    assert "records/_SUCCESS" in keys
    assert not [k for k in keys if "_temporary" in k]
    parts = [k for k in keys if k.startswith("records/topic=")]
    offsets = []
    for key in parts:
        local = tmp_path / key.replace("/", "_")
        s3.download_file("lake", key, str(local))
        offsets += pq.read_table(local, columns=["offset"]).column("offset").to_pylist()
    assert sorted(offsets) == _original_offsets()
