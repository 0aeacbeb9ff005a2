"""One partition, one truth (issue 26): verify, explain, txn, lookup, a recover plan and the report
give the same facts of a partition, each opening it afresh, and those facts are what Kafka's
recovery gives: the log end where recovery cuts the first damaged segment (the next offset of
the last batch before the damage, from Kafka's own manifest of the partition the damage was
made in), or the log end Kafka wrote when nothing is damaged."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import CORRUPT, ORACLE, REPO, oracle_manifest

from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.config import ConfigLayers
from kdump.discovery import discover, open_partition
from kdump.explain import ExplainOptions, explain_paths
from kdump.lookup import lookup_offset
from kdump.render.explain import partition_object
from kdump.render.plan import plan_object
from kdump.render.txn import result_object
from kdump.repair.plan import Scope, plan_recover, resolve_targets
from kdump.repair.rebuild import IndexConfig
from kdump.report import ReportOptions, collect
from kdump.txn.analysis import TxnOptions, analyze_paths
from kdump.unified_log import FACT_KEYS

NOW = 1_700_000_100_000
CUTS = (
    "LOG_CRC_MISMATCH",
    "LOG_CORRUPT_BATCH",
    "LOG_UNKNOWN_MAGIC",
    "LOG_TRUNCATED_TAIL",
    "LOG_ZERO_TAIL",
)
"""The findings where recovery cuts the log (LogSegment.recover)."""


@cache
def cases() -> dict[str, dict[str, Any]]:
    return json.loads((CORRUPT / "cases.json").read_text())  # type: ignore[no-any-return]


def partitions() -> list[tuple[str, Path]]:
    """Every oracle partition, and every corrupt fixture's partition copied and damaged (those
    verified in place are oracle partitions already)."""
    out = [(f"oracle/{d.name}", d) for d in sorted(ORACLE.iterdir()) if d.is_dir()]
    for name, case in sorted(cases().items()):
        target = (CORRUPT / name / case["target"]).resolve()
        if ORACLE in target.parents:
            continue
        for found in discover([str(target)]).partitions:
            out.append((f"{name}/{Path(found.location).name}", Path(found.location)))
    return out


def only_facts(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: obj[k] for k in FACT_KEYS}


def facts_everywhere(path: Path) -> dict[str, dict[str, Any]]:
    """The partition's facts as each command reports them, each from its own run."""
    raw = str(path)
    out = {}
    (verified,) = verify_paths([raw], VerifyOptions()).partitions
    out["verify"] = only_facts(verified.summary.to_dict())
    (explained,) = explain_paths([raw], ConfigLayers(), ExplainOptions(now=NOW)).partitions
    out["explain"] = only_facts(partition_object(explained))
    txn = result_object(analyze_paths([raw], TxnOptions(now=NOW)))
    if txn["partitions"]:
        out["txn"] = only_facts(txn["partitions"][0])
    out["lookup"] = lookup_offset(open_partition(raw), 0).facts
    logs = resolve_targets([raw])
    plan = plan_object("recover", plan_recover(logs, IndexConfig(), scope=Scope.DAMAGED), logs)
    out["recover --dry-run"] = plan["partitions"][0]
    (viewed,) = collect([raw], ReportOptions(now=NOW)).partitions
    out["report"] = viewed.facts
    return out


def kafkas_end(log_path: Path, position: int | None, source: str) -> int | None:
    """The next offset of the last batch before ``position`` of ``log_path`` in Kafka's
    manifest of the oracle partition the damage was made in (its base offset when none)."""
    batches = oracle_manifest()["files"][source][log_path.name]["batches"]
    before = [b for b in batches if position is None or b["position"] < position]
    return before[-1]["nextOffset"] if before else int(log_path.name[:20])


@pytest.mark.parametrize(("name", "path"), partitions(), ids=lambda v: str(v))
def test_every_command_reports_the_same_facts(name: str, path: Path) -> None:
    found = facts_everywhere(path)
    verified = found["verify"]
    for command, facts in found.items():
        assert facts == verified, f"{command} disagrees with verify"


@pytest.mark.parametrize(("name", "path"), partitions(), ids=lambda v: str(v))
def test_the_facts_are_what_kafkas_recovery_gives(name: str, path: Path) -> None:
    (result,) = verify_paths([str(path)], VerifyOptions()).partitions
    facts = result.summary.facts
    case = cases().get(name.split("/")[0])
    if case is None:  # an oracle partition: Kafka's own log end offset
        directory = oracle_manifest()["directories"][path.name]
        logs = sorted(f for f in oracle_manifest()["files"][path.name] if f.endswith(".log"))
        end = kafkas_end(path / logs[-1], None, path.name)
        assert directory.get("log_end_offset", end) == end
        assert (facts["log_end_offset"], facts["damaged_from"]) == (end, None)
        return
    if case["code"] not in CUTS:
        assert facts["damaged_from"] is None
        assert facts["log_end_offset"] == facts["log_end_offset_on_disk"]
        return
    log = CORRUPT / name.split("/")[0] / case["path"]
    source = case["source"].split("/")[-1]
    end = kafkas_end(log, case["position"], source)
    assert facts["damaged_from"] == {
        "segment": int(log.name[:20]),
        "position": case["position"],
        "offset": end,
    }
    assert facts["log_end_offset"] == end
    assert facts["high_watermark"] <= end and facts["last_stable_offset"] <= end


def test_the_facts_of_a_partition_cut_short_have_the_same_keys() -> None:
    """A run cut short (verify --budget) reports the same keys, null where not read; they
    are docs/json.md's ("JSON: a partition"), in its order."""
    page = (REPO / "docs" / "json.md").read_text()
    table = page[page.index("## JSON: a partition") : page.index("## Keys, values and headers")]
    rows = [line.split("|")[1] for line in table.splitlines() if line.startswith("| `")]
    assert tuple(k for row in rows for k in re.findall(r"`(\w+)`", row)) == FACT_KEYS
    log = open_partition(str(ORACLE / "txn-0"))
    assert list(log.facts()) == list(FACT_KEYS)
    log.cut_short = True
    assert list(log.facts()) == list(FACT_KEYS)


def test_the_facts_type_mypy_checks_has_the_keys_in_order() -> None:
    """``PartitionFacts`` (a TypedDict for mypy alone, defined under TYPE_CHECKING so verify's
    start-up makes no class) holds FACT_KEYS in order: mypy holds ``facts()`` and every field
    that keeps them to it, this test holds it to the keys every output shows."""
    import ast

    tree = ast.parse((REPO / "kdump" / "unified_log.py").read_text())
    typed = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "PartitionFacts"
    )
    keys = [
        node.target.id
        for node in typed.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    ]
    assert tuple(keys) == FACT_KEYS
