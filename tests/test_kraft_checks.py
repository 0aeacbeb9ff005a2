"""verify's KRaft checks (kdump.kraft.checks): every case of fixtures/corrupt-kraft (made by
scripts/make_kraft_corrupt.py from genuine KRaft log dirs) reports its code, severity, file,
position and offset, and the exit code; the genuine log dirs report none of them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, REALFILES
from test_verify import describe, documented_codes, snapshot, verify_unchanged

from kdump.checks.findings import Severity
from kdump.checks.registry import REGISTRY
from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.commands.verify import exit_code

CORRUPT = FIXTURES / "corrupt-kraft"
MAKE = FIXTURES.parent / "scripts" / "make_kraft_corrupt.py"
KRAFT_LOG_DIRS = sorted(d.parent for d in REALFILES.rglob("__cluster_metadata-0"))


@cache
def cases() -> dict[str, dict[str, Any]]:
    return json.loads((CORRUPT / "cases.json").read_text())  # type: ignore[no-any-return]


def test_every_kraft_check_has_a_case() -> None:
    codes = {c["code"] for c in cases().values()}
    assert {
        "KRAFT_QUORUM_STATE_CORRUPT", "KRAFT_QUORUM_STATE_BEHIND", "KRAFT_QUORUM_STATE_LEADER",
        "KRAFT_SNAPSHOT_UNREADABLE", "KRAFT_SNAPSHOT_LEFTOVER", "KRAFT_SNAPSHOT_MISMATCH",
        "KRAFT_SNAPSHOT_BEYOND_LOG_END", "KRAFT_BOOTSTRAP_MISMATCH",
        "KRAFT_META_PROPERTIES_MISMATCH", "KRAFT_TOPIC_ID_MISMATCH",
        "KRAFT_PARTITION_NOT_IN_IMAGE", "KRAFT_RECORD_REFUSED", "LEADER_EPOCH_INCONSISTENT",
        "KRAFT_TOPIC_ID_MISSING",
    } <= codes  # fmt: skip
    assert codes <= documented_codes(), codes - documented_codes()


def test_fixtures_are_what_the_script_writes(tmp_path: Path) -> None:
    out = tmp_path / "made"
    subprocess.run([sys.executable, str(MAKE), "--out", str(out)], check=True)
    committed, made = snapshot(CORRUPT), snapshot(out)
    differ = sorted(
        k
        for k in committed.keys() | made.keys()
        if committed.get(k, (0,))[0:2] != made.get(k, (1,))[0:2]
    )
    assert differ == [], f"regenerate with: python scripts/make_kraft_corrupt.py ({differ[:5]})"


@pytest.mark.parametrize("name", sorted(cases()))
def test_case_reports_its_code(name: str) -> None:
    c = cases()[name]
    root = CORRUPT / name
    result = verify_unchanged(root, VerifyOptions(), root / c["target"])
    want = os.path.normpath(root / c["path"])
    matching = [
        f
        for f in result.findings
        if f.code == c["code"]
        and os.path.normpath(f.path) == want
        and f.severity is Severity(c["severity"])
        and (c["position"] is None or f.position == c["position"])
        and (c["offset"] is None or f.offset == c["offset"])
    ]
    assert matching, f"{name}: want {c['severity']} {c['code']} at {want}; got\n" + describe(
        result.findings
    )
    assert exit_code(result, "error") == c["exit_code"], describe(result.findings)


@pytest.mark.parametrize("log_dir", KRAFT_LOG_DIRS, ids=lambda p: p.parent.name)
def test_genuine_kraft_log_dirs_report_no_kraft_finding(log_dir: Path) -> None:
    result = verify_paths([str(log_dir)], VerifyOptions())
    found = [f for f in result.findings if f.code.startswith("KRAFT_")]
    assert found == [], describe(found)


def test_a_brokers_other_log_dir_is_checked_against_its_metadata_log_dirs_image(
    tmp_path: Path,
) -> None:
    """A broker with two log dirs keeps the metadata log in one (metadata.log.dir): verify of
    both checks the other's partitions against that image, the two told to be one broker's by
    meta.properties (cluster.id and node.id); another node's log dir is not."""
    genuine = next(d for d in KRAFT_LOG_DIRS if (d / "demo-topic-1").is_dir())
    first, second, stranger = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    shutil.copytree(genuine, first)
    meta = (first / "meta.properties").read_text()
    for other, node in ((second, "node.id=1"), (stranger, "node.id=7")):
        other.mkdir()
        shutil.copytree(first / "demo-topic-1", other / "demo-topic-1")
        (other / "demo-topic-1" / "partition.metadata").write_text(
            "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAZQ\n"
        )
        (other / "meta.properties").write_text(meta.replace("node.id=1", node))
    shutil.rmtree(first / "demo-topic-1")
    result = verify_paths([str(first), str(second), str(stranger)], VerifyOptions())
    refused = [f for f in result.findings if f.code == "KRAFT_TOPIC_ID_MISMATCH"]
    assert [Path(f.path) for f in refused] == [second / "demo-topic-1" / "partition.metadata"], (
        describe(result.findings)
    )
    assert refused[0].severity is Severity.ERROR


@pytest.mark.parametrize(
    ("name", "texts"),
    [
        ("kraft-partition-not-in-image", ("message", "at_startup", "advice")),
        # a topic id not in the image (LogManager.isStrayKraftReplica looks the id up)
        ("kraft-topic-id-mismatch", ("message", "at_startup")),
    ],
)
def test_a_stray_replica_is_said_to_be_moved_aside_not_deleted(
    name: str, texts: tuple[str, ...]
) -> None:
    """LogManager.asyncDelete(isStray): 'Move aside stray partitions, don't delete them' (the
    directory renamed <topic>-<partition>.<uuid>-stray and left): the finding, its registry entry
    and its advice say so."""
    c = cases()[name]
    result = verify_paths([str(CORRUPT / name / c["target"])], VerifyOptions())
    [found] = [f for f in result.findings if f.code == c["code"]]
    said = {
        "message": found.message,
        "at_startup": REGISTRY[found.code].at_startup,
        "advice": found.advice or "",
    }
    for text in (said[t] for t in texts):
        assert "-stray" in text and "delete" not in text.replace("deleted topic", ""), text
