"""``kdump verify``'s audit of compacted logs below the cleaner checkpoint
(kdump.checks.compacted), against Kafka's own cleaner: every partition Kafka 4.4's Cleaner cleaned
(fixtures/compaction/*/kafka) verifies clean of the audit's findings, while Kafka's outputs with
damage made at the byte level (a batch of the input, written by kafka-python's encoder, put
back; a header flag cleared; a batch cut out) and partitions built with that independent
encoder (scripts/make_compaction_fixtures.py's builders) raise each finding, and what a cleaning
legitimately leaves alike is left alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cleanedcopies import (
    DELETE_HORIZON,
    NAMES,
    SCENARIOS,
    batch_at,
    edit_header,
    input_batch,
    kafka_copy,
    spec,
    splice,
)
from clirun import run_kdump
from conftest import REPO, script_module

from kdump.checks.compacted import CleanedSection, check_in_order, cleaned_section
from kdump.checks.options import VerifyOptions
from kdump.checks.registry import CODES
from kdump.config import ConfigLayers, parse_config_option
from kdump.discovery import discover
from kdump.unified_log import OpenOptions

AUDIT = {c.code for c in CODES if c.area == "compacted"}
build = script_module("make_compaction_fixtures")


def _kafka_copy(name: str, tmp: Path) -> tuple[Path, Path]:
    return kafka_copy(name, tmp / "logdir")


def _verify(log_dir: Path, configs: list[str], *extra: str) -> list[dict[str, Any]]:
    args = ["verify", str(log_dir), "--format", "json", *extra]
    for c in configs:
        args += ["--config", c]
    ran = run_kdump(args)
    assert ran.exit_code in (0, 2), ran.stderr
    return list(json.loads(ran.stdout)["findings"])


def _audit(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in findings if f["code"] in AUDIT]


# -- Kafka's cleaner's output is clean ------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_kafkas_cleaned_partitions_raise_no_audit_finding(name: str, tmp_path: Path) -> None:
    log_dir, part = _kafka_copy(name, tmp_path)
    scenario = spec(name)
    layers = ConfigLayers(options=tuple(parse_config_option(c) for c in scenario["configs"]))
    (log,) = discover([str(part)], options=OpenOptions(layers=layers)).partitions
    assert cleaned_section(log) is not None, "the audit did not run"
    assert _audit(_verify(log_dir, scenario["configs"])) == []


def test_the_same_partitions_before_their_cleaning_raise_the_audits_findings() -> None:
    """The audit is not blind: Kafka's inputs, taken as if cleaned up to the checkpoint Kafka's
    cleaning wrote, hold what that cleaning removed."""
    seen: set[str] = set()
    for name in NAMES:
        scenario = spec(name)
        source = (
            REPO / "fixtures" / "oracle" / scenario["oracle"]
            if "oracle" in scenario
            else next(p for p in (SCENARIOS / name / "input").iterdir() if p.is_dir())
        )
        (log,) = discover([str(source)]).partitions
        checkpoint = int(scenario["kafka"].split("end_offset ")[1].split()[0])
        plan = CleanedSection(checkpoint, log.log_start_offset, 3_600_000, "test", 1 << 27)
        results = check_in_order(log, log.segments, VerifyOptions(), plan)
        seen |= {f.code for r in results for f in r.findings if f.code in AUDIT}
    assert {
        "COMPACTED_KEY_REPEATED",
        "COMPACTED_ABORTED_KEPT",
        "COMPACTED_TOMBSTONE_UNSTAMPED",
    } <= seen


# -- each invariant broken ------------------------------------------------------------------------


def test_a_superseded_batch_put_back_repeats_its_keys(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("codecs", tmp_path)
    log = part / "00000000000000000000.log"
    splice(log, 0, 0, input_batch("codecs", 0))  # keys key-0..key-5 at offsets 0..5
    found = _audit(_verify(log_dir, spec("codecs")["configs"]))
    assert {f["code"] for f in found} == {"COMPACTED_KEY_REPEATED"}
    first = found[0]
    assert first["severity"] == "warning" and first["path"] == str(log)
    assert first["offset"] >= 60 and "also at offset" in first["message"]
    assert first["advice"]


def test_an_aborted_transaction_put_back_is_named_with_its_txnindex_entry(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("transactions", tmp_path)
    log = part / "00000000000000000000.log"
    splice(log, 0, 0, input_batch("transactions", 0))  # producer 1000, aborted at offset 4
    (found,) = _audit(_verify(log_dir, spec("transactions")["configs"]))
    assert found["code"] == "COMPACTED_ABORTED_KEPT" and found["severity"] == "warning"
    assert found["offset"] == 0 and "aborted at offset 4" in found["message"]
    assert "the .txnindex lists the transaction" in found["message"]


def test_an_aborted_transaction_no_txnindex_lists_is_read_as_committed(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("transactions", tmp_path)
    splice(part / "00000000000000000000.log", 0, 0, input_batch("transactions", 0))
    index = part / "00000000000000000000.txnindex"
    splice(index, 0, 34)  # its first entry: producer 1000, offsets 0..4
    (found,) = _audit(_verify(log_dir, spec("transactions")["configs"]))
    assert found["code"] == "COMPACTED_ABORTED_KEPT" and found["severity"] == "error"
    assert "read them as committed" in found["message"]


def test_a_tombstone_without_its_horizon(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("horizons", tmp_path)
    log = part / "00000000000000000000.log"
    edit_header(log, 8, clear=DELETE_HORIZON)  # key-3's tombstone, stamped now + 1000
    (found,) = _audit(_verify(log_dir, spec("horizons")["configs"]))
    assert found["code"] == "COMPACTED_TOMBSTONE_UNSTAMPED" and found["offset"] == 8
    assert found["position"] == batch_at(log, 8)[0]


def test_a_tombstone_past_the_last_cleanings_horizon(tmp_path: Path) -> None:
    """Kafka's pass stamped key-4's tombstone now + delete.retention.ms: it ran at ``now``, so
    a tombstone whose horizon is before ``now`` is one it should have dropped; the one whose
    horizon is ``now + 1000`` it rightly kept."""
    scenario = spec("horizons")
    log_dir, part = _kafka_copy("horizons", tmp_path)
    edit_header(part / "00000000000000000000.log", 8, horizon=scenario["now"] - 1)
    (found,) = _audit(_verify(log_dir, scenario["configs"]))
    assert found["code"] == "COMPACTED_TOMBSTONE_EXPIRED" and found["offset"] == 8
    assert f"delete horizon {scenario['now'] - 1}" in found["message"]
    assert "delete.retention.ms 3600000, --config delete.retention.ms=3600000" in found["message"]
    # with Kafka's default (a day) the last cleaning may have run a day before its horizons
    assert _audit(_verify(log_dir, ["cleanup.policy=compact"])) == []


def test_a_marker_past_its_horizon_once_its_transaction_is_gone(tmp_path: Path) -> None:
    """Producer 77's marker carries a horizon Kafka's pass had passed; it kept the marker
    because the transaction's batch stayed (empty: the producer's last). Without that batch
    the marker is one a cleaning drops."""
    log_dir, part = _kafka_copy("horizons", tmp_path)
    log = part / "00000000000000000000.log"
    assert _audit(_verify(log_dir, spec("horizons")["configs"])) == []
    splice(log, *batch_at(log, 9))
    (found,) = _audit(_verify(log_dir, spec("horizons")["configs"]))
    assert found["code"] == "COMPACTED_MARKER_EXPIRED" and found["offset"] == 10
    assert "producer 77" in found["message"]


def test_the_key_check_says_where_its_memory_ran_out(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("codecs", tmp_path)
    splice(part / "00000000000000000000.log", 0, 0, input_batch("codecs", 0))
    configs = spec("codecs")["configs"]
    found = _audit(_verify(log_dir, configs, "--compaction-key-memory", "384"))  # 3 keys
    limited = [f for f in found if f["code"] == "COMPACTED_KEY_CHECK_LIMITED"]
    assert len(limited) == 1 and limited[0]["severity"] == "info"
    assert limited[0]["offset"] == 3 and "held 3 keys" in limited[0]["message"]
    repeats = [f for f in found if f["code"] == "COMPACTED_KEY_REPEATED"]
    assert 0 < len(repeats) < len(_audit(_verify(log_dir, configs)))  # those held still are


def test_only_compacted_topics_are_audited(tmp_path: Path) -> None:
    """cleanup.policy from the settings' layers: a server.properties that compacts every topic
    counts, as does --config; by default a topic is not compacted."""
    log_dir, part = _kafka_copy("codecs", tmp_path)
    splice(part / "00000000000000000000.log", 0, 0, input_batch("codecs", 0))
    assert _audit(_verify(log_dir, [])) == []
    props = tmp_path / "server.properties"
    props.write_text("log.cleanup.policy=compact,delete\n")
    assert _audit(_verify(log_dir, [], "--server-properties", str(props)))
    kept = ["cleanup.policy=delete"]
    assert _audit(_verify(log_dir, kept, "--server-properties", str(props))) == []


def test_one_process_or_several_give_the_same_audit(tmp_path: Path) -> None:
    log_dir, part = _kafka_copy("codecs", tmp_path)
    splice(part / "00000000000000000000.log", 0, 0, input_batch("codecs", 0))
    other = log_dir / "codecs-1"
    shutil.copytree(part, other)
    configs = spec("codecs")["configs"]
    one = _verify(log_dir, configs, "--jobs", "1")
    assert _audit(one) and one == _verify(log_dir, configs, "--jobs", "2")
    # --deep works in processes: the audit's findings come back the same
    assert _audit(_verify(log_dir, configs, "--jobs", "2", "--deep")) == _audit(one)


# -- what a run that skips segments cannot judge ---------------------------------------------------


def test_a_marker_whose_transaction_lies_in_a_skipped_segment_is_not_judged(
    tmp_path: Path,
) -> None:
    """A run that reuses a segment (--state) does not see its batches: a marker after it, with
    a passed horizon, may end a transaction whose batch is there; it is not called expired."""
    part = tmp_path / "audit-0"
    part.mkdir()
    t0, hour = build.T0, build.HOUR
    data = build.batch(0, build.kv([1], b"t"), t0, pid=5, epoch=0, seq=0, txn=True)
    build.write_segment(part, [data])
    build.write_segment(
        part,
        [
            build.marker(1, True, 5, 0, t0 + 1, horizon=t0 + hour),
            build.batch(2, [(b"key-2", None)], t0 + 2, horizon=t0 + 3 * hour),
        ],
    )
    build.write_segment(part, [build.batch(3, build.kv([3], b"a"), t0 + 3)])
    (log,) = discover([str(part)]).partitions
    plan = CleanedSection(3, 0, hour, "test", 1 << 20)
    every = check_in_order(log, log.segments, VerifyOptions(), plan)
    assert not [f for r in every for f in r.findings if f.code in AUDIT]
    later = check_in_order(log, log.segments[1:], VerifyOptions(), plan)
    assert not [f for r in later for f in r.findings if f.code in AUDIT]
    # walked whole without the transaction's batch, the same marker is one a cleaning drops
    (part / "00000000000000000000.log").write_bytes(b"")
    (log,) = discover([str(part)]).partitions
    gone = check_in_order(log, log.segments, VerifyOptions(), plan)
    assert [f.code for r in gone for f in r.findings if f.code in AUDIT] == [
        "COMPACTED_MARKER_EXPIRED"
    ]


def test_the_report_gives_verifys_audit(tmp_path: Path) -> None:
    """kdump report walks each partition once with the producer state replay riding on it: the
    audit rides along and its findings are verify's."""
    from kdump.report.collect import ReportOptions, collect

    log_dir, part = _kafka_copy("transactions", tmp_path)
    splice(part / "00000000000000000000.log", 0, 0, input_batch("transactions", 0))
    configs = spec("transactions")["configs"]
    layers = ConfigLayers(options=tuple(parse_config_option(c) for c in configs))
    model = collect([str(log_dir)], ReportOptions(now=spec("transactions")["now"], layers=layers))
    (partition,) = model.partitions
    reported = [(f.code, f.offset, f.message) for f in partition.findings if f.code in AUDIT]
    verified = [(f["code"], f["offset"], f["message"]) for f in _audit(_verify(log_dir, configs))]
    assert reported == verified and reported[0][0] == "COMPACTED_ABORTED_KEPT"
