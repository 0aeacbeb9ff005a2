"""What the producer state's replay meets (kdump.producer_replay), in verify's words: a finding
each, in the order the replay met them (kdump txn and kdump report show them).

The replay's warnings beside verify's own: where recovery cuts the log is verify's error of
the same code; here it says what the producer state leaves out."""

from __future__ import annotations

from kdump.checks import fixes
from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.txn import invalid_txn_state, skipped_snapshot
from kdump.producer_replay import (
    Met,
    ReplayCut,
    ReplayUnreadable,
    SnapshotSkipped,
    TxnIndexMismatch,
)


def replay_findings(met: list[Met]) -> list[Finding]:
    return [_finding(m) for m in met]


def _finding(met: Met) -> Finding:
    if isinstance(met, SnapshotSkipped):
        return skipped_snapshot(met.path, met.error)
    if isinstance(met, ReplayCut):
        return Finding(
            met.damage,
            Severity.WARNING,
            met.path,
            f"{met.why}: recovery cuts the log here, so batches from here on are not in the "
            "producer state",
            offset=met.offset,
            position=met.position,
        )
    if isinstance(met, ReplayUnreadable):
        return Finding(
            Code.FILE_UNREADABLE,
            Severity.WARNING,
            met.path,
            f"{met.reason}: the producer state stops before this segment",
        )
    if isinstance(met, TxnIndexMismatch):
        return _txn_index_finding(met)
    return invalid_txn_state(met)


def _txn_index_finding(met: TxnIndexMismatch) -> Finding:
    pid, last = met.producer_id, met.last_offset
    if met.log_first is None:
        return Finding(
            Code.TXN_INDEX_WITHOUT_MARKER,
            Severity.INFO,
            met.txn_index_path,
            f"the .txnindex lists producer {pid}'s abort at offset {last} (from offset "
            f"{met.index_first}), where the log has no ABORT marker of it (the cleaner may "
            "have removed the marker)",
            offset=last,
        )
    if met.index_first is None:
        code = Code.TXN_INDEX_MISSING_ABORT
        message = (
            f"the ABORT marker at offset {last} ends producer {pid}'s transaction from offset "
            f"{met.log_first}, which the .txnindex does not list: read_committed consumers "
            "receive its records as committed"
        )
    else:
        code = Code.TXN_INDEX_DISAGREES
        message = (
            f"producer {pid}'s transaction aborted at offset {last} starts at offset "
            f"{met.log_first} in the log, at {met.index_first} in the .txnindex"
        )
    fix = fixes.rebuild_index(met.log_path)
    return Finding(code, Severity.WARNING, met.txn_index_path, message, offset=last, fix=fix)
