"""What `kdump txn` prints: rich tables on a terminal, plain columns on a pipe, one JSON document.

Text shows every timestamp as UTC ISO-8601 beside its epoch milliseconds; JSON keeps the
milliseconds.
"""

from __future__ import annotations

from typing import IO, Any

from kdump.checks.findings import Severity
from kdump.format.names import TXN_INDEX_SUFFIX
from kdump.producer_state import ProducerStateEntry
from kdump.render.console import Justify, TextConsole, TextTable
from kdump.render.verify import say_finding
from kdump.txn.analysis import (
    FIND_HANGING_HEADERS,
    AbortedRange,
    OpenTransaction,
    PartitionTransactions,
    TxnResult,
    find_hanging_rows,
)
from kdump.txn.coordinator import CoordinatorView, TransactionMetadata
from kdump.units import at, byte_count, duration
from kdump.untrusted import json_text

TEXT_ROWS = 50
"""Rows of a long table (aborted ranges, coordinator transactions) shown in text; JSON has all."""


def _dash(value: object) -> str:
    return "-" if value is None else str(value)


def pretty_print_table(headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """ToolsUtils.prettyPrintTable: each value left-aligned to its column's width, then a tab
    (after the last column too)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return ["".join(v.ljust(w) + "\t" for v, w in zip(row, widths, strict=True)) for row in
            [headers, *rows]]  # fmt: skip


# -- text ----------------------------------------------------------------------------------------


def _justify(left: bool) -> Justify:
    return "left" if left else "right"


def render_text(result: TxnResult, out: IO[str], terminal: bool) -> None:
    console = TextConsole(out, terminal)
    say = console.say

    options = result.options
    say(
        f"now {at(options.now)}; transaction timeout {duration(options.transaction_max_timeout_ms)}"
    )
    for txns in result.partitions:
        say("")
        _partition_text(txns, console)
    if not result.coordinator.is_empty:
        say("")
        _coordinator_text(result.coordinator, console)
    for tid, number in result.transactional_ids.items():
        view = result.coordinator
        say(
            f"transactional id {tid!r} maps to __transaction_state-{number} "
            f"({view.partition_count} partitions, {view.partition_count_words})"
        )
    hanging = [(r, t) for r in result.partitions for t in r.open_transactions if t.hanging]
    if hanging:
        say("")
        say("The way out: abort each hanging transaction (writes an ABORT marker at its partition)")
        for txns, txn in hanging:
            say(f"  # {txns.topic}-{txns.partition}, producer {txn.producer_id}")
            console.say_whole(f"  {txn.abort_command}")
            say("  # brokers before 3.0:")
            console.say_whole(f"  {txn.abort_command_legacy}")
    say("")
    say(
        "kafka-transactions.sh find-hanging would print"
        + (
            " (no __transaction_state read: every transaction past the timeout):"
            if result.coordinator.is_empty
            else ":"
        )
    )
    for line in pretty_print_table(FIND_HANGING_HEADERS, find_hanging_rows(result)):
        out.write(line + "\n")  # as the tool prints it: rich would expand the tabs
    findings = result.findings
    if findings:
        say("")
        for f in findings:
            say_finding(console, f)
    errors = sum(f.severity is Severity.ERROR for f in findings)
    warnings = sum(f.severity is Severity.WARNING for f in findings)
    open_count = len(result.open_transactions)
    say("")
    say(
        f"{len(result.partitions)} partition(s): {open_count} open transaction(s), "
        f"{len(hanging)} hanging; {errors} error(s), {warnings} warning(s)"
    )


def _partition_text(txns: PartitionTransactions, console: TextConsole) -> None:
    say = console.say
    name = f"{txns.topic}-{txns.partition}" if txns.topic is not None else txns.path
    say(f"== {name} ({txns.path})")
    say(
        f"log start offset {txns.log_start_offset}, log end offset {txns.log_end_offset}, "
        f"high watermark {txns.high_watermark} ({txns.high_watermark_source})"
    )
    if txns.rebuild_skipped:
        say(
            "producer state: none; after a clean shutdown with no producer snapshot the broker "
            "skips the rebuild and starts empty (no open transaction, no producer known)"
        )
    elif txns.snapshot is not None:
        say(
            f"producer state: snapshot {txns.snapshot}, then the batches from offset "
            f"{txns.replayed_from} on"
        )
    else:
        say(
            "producer state: no usable snapshot above the log start offset; rebuilt from the "
            f"log start offset {txns.replayed_from}"
        )
    unstable = (
        f" (first unstable offset {txns.first_unstable_offset})"
        if txns.first_unstable_offset is not None
        else ""
    )
    say(
        f"last stable offset {txns.last_stable_offset}{unstable}: {txns.blocked_records} "
        f"record(s), {byte_count(txns.blocked_bytes)} before the log end that read_committed "
        "consumers cannot read"
    )
    if txns.producers:
        console.table_or_records(_producers_table(txns.producers, txns.expired_producers))
    if txns.open_transactions:
        console.table_or_records(_open_table(txns.open_transactions))
        for txn in txns.open_transactions:
            say(f"  producer {txn.producer_id} at offset {txn.first_offset}: {txn.coordinator}")
    else:
        say("no open transaction")
    if txns.completed:
        table = TextTable("completed transactions")
        for column in ("producer id", "commits", "aborts", "markers without data"):
            table.add_column(column, "right")
        for pid, counts in txns.completed.items():
            table.add_row(
                str(pid), str(counts.commits), str(counts.aborts), str(counts.markers_without_data)
            )
        console.table_or_records(table)
    if txns.aborted:
        console.table_or_records(_aborted_table(txns.aborted))
        if len(txns.aborted) > TEXT_ROWS:
            say(f"  ... {len(txns.aborted) - TEXT_ROWS} more (--format json lists all)")


def _producers_table(entries: list[ProducerStateEntry], expired: list[int]) -> TextTable:
    table = TextTable("producer state at the log end")
    for column in (
        "producer id",
        "epoch",
        "last sequence",
        "last offset",
        "offset delta",
        "last timestamp",
        "coordinator epoch",
        "open txn from",
    ):
        table.add_column(column, _justify(column == "last timestamp"))
    gone = set(expired)
    for e in entries:
        table.add_row(
            str(e.producer_id) + (" (expired)" if e.producer_id in gone else ""),
            str(e.producer_epoch),
            str(e.last_sequence),
            str(e.last_offset),
            str(e.offset_delta),
            at(e.last_timestamp),
            str(e.coordinator_epoch),
            _dash(e.current_txn_first_offset),
        )
    return table


def _open_table(txns: list[OpenTransaction]) -> TextTable:
    table = TextTable("open transactions")
    for column in (
        "producer id",
        "epoch",
        "first offset",
        "last offset",
        "first timestamp",
        "last timestamp",
        "age",
        "hanging",
        "transactional id",
        "coordinator state",
    ):
        table.add_column(column, _justify("timestamp" in column))
    for t in txns:
        table.add_row(
            str(t.producer_id),
            str(t.producer_epoch),
            str(t.first_offset),
            str(t.last_offset),
            at(t.first_timestamp),
            at(t.last_timestamp),
            duration(t.age_ms),
            "HANGING" if t.hanging else "no",
            _dash(t.transactional_id),
            _dash(t.coordinator_state),
        )
    return table


def _aborted_table(aborted: list[AbortedRange]) -> TextTable:
    table = TextTable("aborted transactions")
    for column in ("producer id", "first offset", "last offset", "last stable offset", "from"):
        table.add_column(column, _justify(column == "from"))
    for a in aborted[:TEXT_ROWS]:
        source = " + ".join(
            name
            for name, present in (("marker", a.in_log), (TXN_INDEX_SUFFIX, a.in_txn_index))
            if present
        )
        table.add_row(
            str(a.producer_id),
            str(a.first_offset),
            str(a.last_offset),
            _dash(a.last_stable_offset),
            source,
        )
    return table


def _coordinator_text(view: CoordinatorView, console: TextConsole) -> None:
    say = console.say
    read = ", ".join(str(n) for n in view.partitions_read)
    say(
        f"== coordinator: __transaction_state partition(s) {read} read; "
        f"{view.partition_count} partitions ({view.partition_count_words})"
    )
    table = TextTable("transactional ids")
    for column in (
        "transactional id",
        "producer id",
        "epoch",
        "state",
        "partitions",
        "timeout ms",
        "last update",
        "__transaction_state",
    ):
        table.add_column(column, _justify(column in ("partitions", "last update")))
    txns = sorted(view.transactions.values(), key=lambda t: t.transactional_id)
    for t in txns[:TEXT_ROWS]:
        table.add_row(*_coordinator_row(t, view))
    console.table_or_records(table)
    if len(txns) > TEXT_ROWS:
        say(f"  ... {len(txns) - TEXT_ROWS} more (--format json lists all)")


def _coordinator_row(t: TransactionMetadata, view: CoordinatorView) -> list[str]:
    return [
        t.transactional_id,
        str(t.producer_id),
        str(t.producer_epoch),
        t.state,
        ", ".join(f"{topic}-{p}" for topic, p in t.topic_partitions) or "-",
        str(t.txn_timeout_ms),
        at(t.txn_last_update_timestamp),
        f"{t.partition} (hash: {view.partition_for(t.transactional_id)})",
    ]


# -- JSON ----------------------------------------------------------------------------------------


def render_json(result: TxnResult) -> str:
    return json_text(result_object(result), indent=2)


def result_object(result: TxnResult) -> dict[str, Any]:
    options = result.options
    view = result.coordinator
    return {
        "now": options.now,
        "transaction_max_timeout_ms": options.transaction_max_timeout_ms,
        "status": {0: "clean", 1: "open", 2: "hanging"}[result.status()],
        "partitions": [_partition_object(r) for r in result.partitions],
        "coordinator": None if view.is_empty else _coordinator_object(view),
        "transactional_ids": [
            {"transactional_id": tid, "partition": number, "partition_count": view.partition_count}
            for tid, number in result.transactional_ids.items()
        ],
        "find_hanging": [
            dict(zip(FIND_HANGING_HEADERS, row, strict=True)) for row in find_hanging_rows(result)
        ],
        "findings": [f.to_dict() for f in result.findings],
    }


def _partition_object(r: PartitionTransactions) -> dict[str, Any]:
    return {
        **r.facts,  # the partition's facts, the same keys as in every JSON output
        "path": r.path,
        "topic": r.topic,
        "partition": r.partition,
        "log_start_offset": r.log_start_offset,
        "log_end_offset": r.log_end_offset,
        "high_watermark": r.high_watermark,
        "high_watermark_source": r.high_watermark_source,
        "last_stable_offset": r.last_stable_offset,
        "first_unstable_offset": r.first_unstable_offset,
        "blocked_records": r.blocked_records,
        "blocked_bytes": r.blocked_bytes,
        "snapshot": r.snapshot,
        "snapshot_offset": r.snapshot_offset,
        "replayed_from": r.replayed_from,
        "rebuild_skipped": r.rebuild_skipped,
        "batches": r.batches,
        "producers": len(r.producers),
        "producer_state": [
            {
                "producer_id": e.producer_id,
                "producer_epoch": e.producer_epoch,
                "last_sequence": e.last_sequence,
                "last_offset": e.last_offset,
                "offset_delta": e.offset_delta,
                "last_timestamp": e.last_timestamp,
                "coordinator_epoch": e.coordinator_epoch,
                "current_txn_first_offset": e.current_txn_first_offset,
                "expired": e.producer_id in r.expired_producers,
            }
            for e in r.producers
        ],
        "open_transactions": [_open_object(t) for t in r.open_transactions],
        "aborted": [
            {
                "producer_id": a.producer_id,
                "first_offset": a.first_offset,
                "last_offset": a.last_offset,
                "last_stable_offset": a.last_stable_offset,
                "segment": a.segment,
                "in_log": a.in_log,
                "in_txn_index": a.in_txn_index,
            }
            for a in r.aborted
        ],
        "completed": [
            {
                "producer_id": pid,
                "commits": c.commits,
                "aborts": c.aborts,
                "markers_without_data": c.markers_without_data,
            }
            for pid, c in r.completed.items()
        ],
    }


def _open_object(t: OpenTransaction) -> dict[str, Any]:
    return {
        "producer_id": t.producer_id,
        "producer_epoch": t.producer_epoch,
        "coordinator_epoch": t.coordinator_epoch,
        "first_offset": t.first_offset,
        "last_offset": t.last_offset,
        "first_timestamp": t.first_timestamp,
        "last_timestamp": t.last_timestamp,
        "leader_epoch": t.leader_epoch,
        "age_ms": t.age_ms,
        "hanging": t.hanging,
        "transactional_id": t.transactional_id,
        "coordinator_state": t.coordinator_state,
        "coordinator_partition": t.coordinator_partition,
        "coordinator": t.coordinator,
        "coordinator_disagrees": t.coordinator_disagrees,
        "find_hanging": t.find_hanging,
        "abort_command": t.abort_command,
        "abort_command_legacy": t.abort_command_legacy,
    }


def _coordinator_object(view: CoordinatorView) -> dict[str, Any]:
    return {
        "partitions_read": view.partitions_read,
        "partition_count": view.partition_count,
        "partition_count_source": view.partition_count_source,
        "transactions": [
            {
                "transactional_id": t.transactional_id,
                "producer_id": t.producer_id,
                "producer_epoch": t.producer_epoch,
                "state": t.state,
                "partitions": [{"topic": topic, "partition": p} for topic, p in t.topic_partitions],
                "transaction_timeout_ms": t.txn_timeout_ms,
                "last_update_timestamp": t.txn_last_update_timestamp,
                "start_timestamp": t.txn_start_timestamp,
                "transaction_state_partition": t.partition,
                "offset": t.offset,
                "partition_for": view.partition_for(t.transactional_id),
            }
            for t in sorted(view.transactions.values(), key=lambda t: t.transactional_id)
        ],
    }
