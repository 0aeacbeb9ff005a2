"""Checks of a segment's .txnindex and of producer state .snapshot files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.sink import FindingSink
from kdump.crc import Buffer
from kdump.errors import KdumpError, SnapshotCrcError
from kdump.format.snapshot import parse_producer_snapshot
from kdump.format.txnindex import CURRENT_VERSION, TransactionIndex
from kdump.log_scan import LogScan

if TYPE_CHECKING:
    from kdump.producer_state import InvalidTxnState


def check_txn_index(index: TransactionIndex, scan: LogScan | None, sink: FindingSink) -> None:
    path, size = index.path, index.file_size
    if not index.is_aligned:
        sink.add(
            Finding(
                "TXNINDEX_MISALIGNED",
                Severity.WARNING,
                path,
                f"{size} bytes is not a multiple of the {index.entry_size}-byte entry size; "
                "the broker rebuilds it",
                position=size - size % index.entry_size,
            )
        )
    prev_last = None
    last_log = scan.last_offset if scan is not None else None
    for i, txn in enumerate(index):
        offset, position = txn.last_offset, i * index.entry_size
        if txn.version != CURRENT_VERSION:
            sink.add(
                Finding(
                    "TXNINDEX_CORRUPT",
                    Severity.ERROR,
                    path,
                    f"entry {i} has version {txn.version}; the broker reads only version "
                    f"{CURRENT_VERSION}",
                    offset=offset,
                    position=position,
                )
            )
        if prev_last is not None and txn.last_offset <= prev_last:
            sink.add(
                Finding(
                    "TXNINDEX_NOT_MONOTONIC",
                    Severity.ERROR,
                    path,
                    f"entry {i} ends at offset {txn.last_offset}, not after the previous entry's "
                    f"{prev_last}: read-committed fetches may return aborted records",
                    offset=offset,
                    position=position,
                )
            )
        prev_last = txn.last_offset
        out_of_segment = txn.last_offset < index.base_offset or (
            last_log is not None and txn.last_offset > last_log
        )
        if out_of_segment or txn.first_offset > txn.last_offset:
            sink.add(
                Finding(
                    "TXNINDEX_OUT_OF_RANGE",
                    Severity.ERROR,
                    path,
                    f"entry {i} (producer {txn.producer_id}, offsets {txn.first_offset}.."
                    f"{txn.last_offset}) does not end inside this segment "
                    f"[{index.base_offset}, {last_log}]",
                    offset=offset,
                    position=position,
                )
            )


def check_snapshot_bytes(data: Buffer, path: str, sink: FindingSink) -> None:
    """A producer snapshot's bytes as ProducerStateManager reads them at startup."""
    try:
        parse_producer_snapshot(data, path)
    except SnapshotCrcError as e:
        sink.add(
            Finding(
                "SNAPSHOT_CRC_MISMATCH",
                Severity.WARNING,
                path,
                f"{e.reason}; the broker discards it and rebuilds producer state from the log",
                position=e.position,
            )
        )
    except KdumpError as e:
        sink.add(
            Finding(
                "SNAPSHOT_CORRUPT",
                Severity.WARNING,
                path,
                f"{e.reason}; the broker discards it and rebuilds producer state from the log",
                position=e.position,
            )
        )


def skipped_snapshot(path: str, e: Exception) -> Finding:
    """A producer snapshot the broker's load skips (and deletes): ProducerStateManager's
    loadFromSnapshot moves past one it cannot read to the next older one."""
    reason = getattr(e, "reason", str(e))
    return Finding(
        Code.SNAPSHOT_CORRUPT,
        Severity.WARNING,
        path,
        f"{reason}; skipped, as the broker skips it (and deletes it)",
        position=getattr(e, "position", None),
    )


def invalid_txn_state(found: InvalidTxnState) -> Finding:
    """The producer state's surprise (kdump.producer_state) as verify's finding."""
    return Finding(
        Code.TXN_STATE_INVALID,
        Severity.WARNING,
        found.path,
        found.message,
        offset=found.offset,
        position=found.position,
    )
