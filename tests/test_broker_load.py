"""kdump's forecast of the broker's next load (``UnifiedLog.broker_load``, kdump.log_loader)
against what Kafka's own LogManager did to the same damaged copies of a partition a real broker
wrote (fixtures/realkafka: scripts/make_realkafka_fixtures.py; the live version of these checks
is tests/test_kafka_damage.py). No Java here: Kafka's answers are in expected.json.

Each case is a difference the real-broker scenarios found, where kdump had answered otherwise:
a torn active segment after a clean stop ends where readNextOffset ends it (the segment's base
offset: the offset index's last entry points into the torn batch); damage in a segment the
broker does not recover (clean stop, or below the recovery point) stays, the log ending where
the files say; segments, active segment and bytes are those the load leaves; the producer
snapshots the load deletes and writes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from realkafka.damage import (
    deleted_index,
    flipped_middle,
    no_snapshots,
    torn_at_last_index_entry,
    torn_tail,
    write_recovery_points,
    zero_tail,
)

from kdump.checks.findings import Severity
from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.discovery import discover

REAL = FIXTURES / "realkafka"
EXPECTED: dict[str, Any] = json.loads((REAL / "expected.json").read_text())["cases"]
DAMAGE = {
    "torn-tail": torn_tail,
    "torn-indexed-tail": torn_at_last_index_entry,
    "flipped-middle": flipped_middle,
    "deleted-index": deleted_index,
    "no-snapshots": no_snapshots,
    "zero-tail": zero_tail,
}


def damaged(tmp_path: Path, case: str) -> Path:
    """The fixture's log dir copied, and damaged as the case's name says (as the fixture
    script did before Kafka loaded it)."""
    log_dir = tmp_path / "clean-stop"
    shutil.copytree(REAL / "clean-stop", log_dir)
    name = max((n for n in DAMAGE if case.startswith(n)), key=len)
    DAMAGE[name](log_dir / "orders-0")
    if "-crash" in case:
        (log_dir / ".kafka_cleanshutdown").unlink()
    if case.endswith("-recovered"):
        write_recovery_points(log_dir, {"orders-0": 0})
    return log_dir


LOADED = sorted(c for c in EXPECTED if "error" not in EXPECTED[c])


@pytest.mark.parametrize("case", LOADED)
def test_broker_load_is_kafkas(tmp_path: Path, case: str) -> None:
    kafka = EXPECTED[case]
    log_dir = damaged(tmp_path, case)
    (log,) = discover([str(log_dir / "orders-0")]).partitions
    facts = log.facts()
    load = log.broker_load
    ours = {
        "log_end_offset": facts["log_end_offset"],
        "segments": facts["segments"],
        "active_segment": facts["active_segment"],
        "bytes": facts["bytes"],
        "recovered_segments": list(load.recovered),
        "deleted_segments": list(load.deleted),
        "snapshots": list(load.snapshots_left),
    }
    assert ours == kafka


def test_torn_tail_after_a_clean_stop_ends_at_the_segment_base(tmp_path: Path) -> None:
    """readNextOffset starts at the offset index's last entry; that entry names the torn
    batch, so no batch is found and the log ends at the active segment's base offset, not
    after the last whole batch on disk: the broker then appends at that base offset again."""
    log_dir = damaged(tmp_path, "torn-indexed-tail-clean")
    (log,) = discover([str(log_dir / "orders-0")]).partitions
    active = log.segments[-1].base_offset
    assert log.log_end_offset == active == EXPECTED["torn-indexed-tail-clean"]["log_end_offset"]
    assert log.log_end_offset_on_disk > active
    assert log.broker_load.recovered == ()


def test_damage_below_the_recovery_point_is_not_cut(tmp_path: Path) -> None:
    """A flipped byte in a middle segment below the recovery point: the broker does not
    recover that segment and keeps the whole log (kdump said it would end at the bad batch);
    kdump recover, asked, still cuts it there (damaged_from)."""
    log_dir = damaged(tmp_path, "flipped-middle-crash-below-recovery-point")
    (log,) = discover([str(log_dir / "orders-0")]).partitions
    assert log.damaged_from is not None
    end = EXPECTED["flipped-middle-crash-below-recovery-point"]["log_end_offset"]
    assert log.log_end_offset == log.log_end_offset_on_disk == end
    assert log.damaged_from.offset < end
    (partition,) = verify_paths([str(log_dir)], VerifyOptions()).partitions
    (said,) = partition.summary.startup
    assert said.startswith(f"does not recover segment {log.damaged_from.segment} (it lies below")
    assert f"consumers that reach offset {log.damaged_from.offset} fail on it" in said


def test_zero_tail_after_a_clean_stop_fails_the_load(tmp_path: Path) -> None:
    """Zeros after the active segment's last batch with the clean shutdown marker: Kafka's load
    throws reading the log end (CorruptRecordException, expected.json): verify says the broker
    will not start (PARTITION_LOAD_FAILS, an error), where it used to say only that recovery
    would cut the zeros."""
    assert "CorruptRecordException" in EXPECTED["zero-tail-clean"]["error"]
    log_dir = damaged(tmp_path, "zero-tail-clean")
    result = verify_paths([str(log_dir)], VerifyOptions())
    found = [f for f in result.findings if f.code == "PARTITION_LOAD_FAILS"]
    active = max(p.name for p in (log_dir / "orders-0").glob("*.log"))
    assert active in EXPECTED["zero-tail-clean"]["error"]
    assert [(f.severity, Path(f.path).name) for f in found] == [(Severity.ERROR, active)]
    (log,) = discover([str(log_dir / "orders-0")]).partitions
    assert log.broker_load.failure is not None
