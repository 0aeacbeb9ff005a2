"""The segment's own recovery walk (kdump.log_scan: LogSegment.recover's reading, findings apart)
and verify's walk (kdump.checks.log.scan_log, its checks riding on the same loop) learn the same
facts of every segment: where recovery cuts, the offset before it, the last offset, the leader
epochs, where the walk stopped. The opened partition's facts come from the first when no verify
run walked the segment, from the second when one did (tests/test_one_truth.py: every command
reports the same facts)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORRUPT, ORACLE

from kdump.checks.log import scan_log
from kdump.checks.options import VerifyOptions
from kdump.checks.sink import FindingSink
from kdump.log_scan import LogScan, recover_scan
from kdump.storage.local import open_log_file

FACTS = (
    "batches", "first_offset", "last_offset", "valid_bytes", "first_invalid",
    "recovered_last_offset", "epoch_starts", "legacy_batches", "transactional_batches",
    "last_position", "last_epoch", "gaps", "first_batch",
)  # fmt: skip


def logs() -> list[Path]:
    found = sorted(CORRUPT.rglob("*.log")) + sorted(ORACLE.rglob("*.log"))
    return [p for p in found if p.name[:20].isdigit()]


def facts(scan: LogScan) -> dict[str, object]:
    stop = scan.stop
    assert stop is not None
    said = (stop.reason, stop.position, stop.remaining, str(stop.error))  # errors: by their words
    return {name: getattr(scan, name) for name in FACTS} | {"stop": said}


@pytest.mark.parametrize("path", logs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_recovery_walk_learns_what_verify_s_walk_does(path: Path) -> None:
    base = int(path.name[:20])
    log = open_log_file(path)
    try:
        own = recover_scan(log, base)
        verified = scan_log(log, base, VerifyOptions(), FindingSink(100), str(path.parent))
    finally:
        log.close()
    assert facts(own) == facts(verified)


def test_damage_is_where_recovery_cuts() -> None:
    """The cases of a batch recovery refuses: a CRC that fails, a torn tail, zeros."""
    cut = {}
    for case in ("log-crc-mismatch", "log-truncated-tail", "log-zero-tail"):
        for path in sorted((CORRUPT / case).rglob("*.log")):
            log = open_log_file(path)
            try:
                scan = recover_scan(log, int(path.name[:20]))
            finally:
                log.close()
            if scan.first_invalid is not None:
                cut[case] = scan.first_invalid
                assert scan.first_invalid <= scan.valid_bytes <= scan.size
    assert sorted(cut) == ["log-crc-mismatch", "log-truncated-tail", "log-zero-tail"]


def test_the_model_names_tail_damage_by_verify_s_codes() -> None:
    """The segment's own walk names the bytes where it stopped short (tail_damage, which the
    KRaft loader reads too) with the words verify's registry holds; verify adds the severity:
    zeros a warning (nothing written there), the rest errors."""
    from kdump.checks.codes import Code
    from kdump.checks.findings import Severity
    from kdump.checks.log import stop_damage
    from kdump.errors import FormatError
    from kdump.format.walk import Stop, StopReason
    from kdump.log_scan import tail_damage

    torn = FormatError("x.log", 0, "bad")
    cases = {
        (StopReason.TRUNCATED_TAIL, bytes(20), None): (Code.LOG_ZERO_TAIL, Severity.WARNING),
        (StopReason.TRUNCATED_TAIL, b"\1" * 5, None): (Code.LOG_TRUNCATED_TAIL, Severity.ERROR),
        (StopReason.CORRUPT_BATCH, b"\1" * 20, torn): (Code.LOG_CORRUPT_BATCH, Severity.ERROR),
        (StopReason.UNKNOWN_MAGIC, b"\1" * 20, torn): (Code.LOG_UNKNOWN_MAGIC, Severity.ERROR),
    }
    for (reason, tail, error), (code, severity) in cases.items():
        stop = Stop(reason, 0, len(tail), error)
        damage = tail_damage(stop, tail)
        assert damage is not None and damage.name == getattr(Code, damage.name) == code
        found = stop_damage(stop, tail)
        assert found is not None and found[:2] == (code, severity)
    assert tail_damage(Stop(StopReason.END, 0, 0), b"") is None
    assert tail_damage(Stop(StopReason.INVALID_BATCH, 0, 9), b"\1" * 9) is None
