"""kdump over gs:// and az://: real emulators on localhost (emulators.py), gcp-storage-emulator
for Google Cloud Storage and Azurite for Azure Blob Storage, reached through gcsfs and adlfs as a
user reaches the real stores (STORAGE_EMULATOR_HOST, AZURE_STORAGE_CONNECTION_STRING).

Kafka-written partitions of fixtures/oracle are uploaded in the plain Kafka file layout;
``dump``, ``verify`` and ``lookup`` of the URLs must say what they say of the same files on local
disk, as test_remote_s3.py checks for s3://. A missing object is one line, exit 3.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from clirun import run_kdump
from conftest import ORACLE
from emulators import AzuriteBlob, Emulator, GcsEmulator, azurite_blob
from remoterun import (
    assert_one_error_line,
    kdump,
    kdump_in,
    same_names,
    sorted_lines,
    verify_json,
)

PARTITIONS = ["txn-0", "plain-0"]


def _gcs() -> Emulator:
    pytest.importorskip("gcsfs")
    pytest.importorskip("gcp_storage_emulator")
    return GcsEmulator()


def _azure() -> Emulator:
    pytest.importorskip("adlfs")
    if azurite_blob() is None:
        pytest.skip("azurite-blob not on PATH: scripts/ensure-test-system-deps.sh installs it")
    return AzuriteBlob()


@pytest.fixture(scope="module", params=[_gcs, _azure], ids=["gs", "az"])
def store(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    emulator = request.param()
    try:
        emulator.start()
        for name in PARTITIONS:
            emulator.put_tree(ORACLE / name, f"backup/{name}")
        yield emulator
    finally:
        emulator.stop()


def lookup_offsets(name: str) -> list[int]:
    """Offsets inside the partition's first segments, and one past its end."""
    manifest = json.loads((ORACLE / "manifest.json").read_text())["files"][name]
    logs = sorted(f for f in manifest if f.endswith(".log"))
    offsets = [b["baseOffset"] for f in logs for b in manifest[f]["batches"][:2]]
    return [*offsets[1:3], 10**9]


@pytest.mark.parametrize("name", PARTITIONS)
def test_kafka_files_dump_verify_lookup_as_local(store: Emulator, name: str) -> None:
    local = ORACLE / name
    url = f"{store.scheme}://{store.bucket}/backup/{name}"
    env = store.env()
    for args in (["dump"], ["dump", "--deep-iteration", "--print-data-log"]):
        there, here = kdump_in([*args, url + "/"], env), run_kdump([*args, str(local)])
        assert here.exit_code == 0 and here.stdout
        assert there.exit_code == here.exit_code, there.stderr
        assert same_names(there.stdout, url, local) == here.stdout
        assert sorted_lines(same_names(there.stderr, url, local)) == sorted_lines(here.stderr)
    there = kdump_in(["verify", "--format", "json", url], env)
    here = run_kdump(["verify", "--format", "json", str(local)])
    assert there.exit_code == here.exit_code, there.stderr
    assert json.loads(same_names(json.dumps(verify_json(there)), url, local)) == verify_json(here)
    for offset in lookup_offsets(name):
        there = kdump_in(["lookup", url, "--offset", str(offset), "--format", "json"], env)
        here = run_kdump(["lookup", str(local), "--offset", str(offset), "--format", "json"])
        assert there.exit_code == here.exit_code, there.stderr
        assert same_names(there.stdout, url, local) == here.stdout


def test_missing_object(store: Emulator) -> None:
    missing = f"{store.scheme}://{store.bucket}/backup/txn-0/no-such-segment.log"
    for command in (["dump"], ["verify"], ["lookup", "--offset", "0"]):
        ran = kdump([*command, missing], store.env())
        assert_one_error_line(ran, re.escape(missing), "no such", scheme=store.scheme)
