"""`kdump txn`: a partition's producer state and transactions at its log end, read offline as
the broker would rebuild them, and what an open transaction blocks (notes §D).

For each data partition:

1. The producer state at the log end, as ``UnifiedLog.rebuildProducerState`` makes it after
   ``truncateAndReload``: the newest readable ``.snapshot`` with ``logStartOffset < offset <=
   logEndOffset`` (producers expired at ``now`` left out, unreadable snapshots skipped), then
   every batch whose last offset is at or past it (or past the log start offset, with none).
2. Alongside, in the same walk, the partition's history from its first batch with an empty
   state: every transaction a marker ends (commits and aborts per producer, aborted ranges),
   compared with each segment's ``.txnindex``.
3. The last stable offset, ``UnifiedLog.lastStableOffset``: the first unstable offset (the
   earliest ongoing transaction, or completed one whose marker is not below the high
   watermark), raised to the log start offset, if below the high watermark; else the high
   watermark (``replication-offset-checkpoint``; the log end offset when it has no entry).
4. Each open transaction against the coordinator's view (``__transaction_state``), with
   ``kafka-transactions.sh find-hanging``'s verdict and the ``abort`` command that ends it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.replay import replay_findings
from kdump.checks.segment import walk_in_order
from kdump.config import option_default
from kdump.discovery import discover
from kdump.errors import InputError, KdumpError
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.producer_replay import AbortedRange, TxnCounts
from kdump.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    CompletedTxn,
    ProducerStateEntry,
    TxnMetadata,
)
from kdump.progress import NO_PROGRESS, Progress
from kdump.txn.coordinator import (
    COMPLETE_STATES,
    CoordinatorView,
    TransactionMetadata,
    is_transaction_state,
    read_coordinator_view,
)
from kdump.unified_log import OpenOptions, UnifiedLog
from kdump.untrusted import shell_word

if TYPE_CHECKING:
    from kdump.unified_log import PartitionFacts

DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = option_default("transaction.max.timeout.ms")
"""transaction.max.timeout.ms; find-hanging's --max-transaction-timeout default (15 minutes)."""
SERVERS_PLACEHOLDER = "<bootstrap-servers>"


@dataclass(frozen=True)
class TxnOptions:
    now: int
    """The time ages are measured at (epoch ms): find-hanging's clock."""
    transaction_max_timeout_ms: int = DEFAULT_TRANSACTION_MAX_TIMEOUT_MS
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS
    batch_filter: BatchFilter = NO_FILTER
    """Which producers and transactions are shown (the state is always built from all)."""
    bootstrap_server: str | None = None
    transaction_state_partitions: int | None = None
    transaction_state_partitions_in_image: int | None = None
    """__transaction_state's partition count in the cluster's metadata image (kdump.kraft),
    where there is one: the count when none is given."""


@dataclass
class OpenTransaction:
    """A transaction the partition holds open at its log end."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    first_offset: int
    last_offset: int
    first_timestamp: int | None
    """The max timestamp of the batch that opened it (None: before the snapshot, not in the log)."""
    last_timestamp: int
    """The producer's last timestamp (ProducerStateEntry.lastTimestamp), what find-hanging ages."""
    leader_epoch: int | None
    age_ms: int
    hanging: bool
    """Older than the transaction timeout: find-hanging's candidate (now - lastTimestamp > max)."""
    transactional_id: str | None
    coordinator_state: str | None
    coordinator_partition: int | None
    """The __transaction_state partition the transactional id maps to."""
    coordinator: str
    """What the coordinator's view says about it, in words."""
    coordinator_disagrees: bool | None
    """Open here but complete, elsewhere or unknown at the coordinator (None: no view)."""
    find_hanging: bool | None
    """Whether find-hanging would list it (None: no coordinator view to ask)."""
    abort_command: str
    abort_command_legacy: str
    """The same abort for brokers before 3.0 (producer id, epoch and coordinator epoch)."""


@dataclass
class PartitionTransactions:
    path: str
    topic: str | None
    partition: int | None
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str
    last_stable_offset: int
    first_unstable_offset: int | None
    snapshot: str | None
    """The producer snapshot the state was loaded from (None: rebuilt from the log start)."""
    snapshot_offset: int | None
    replayed_from: int
    producers: list[ProducerStateEntry]
    rebuild_skipped: bool
    """A clean shutdown and no snapshot: the broker starts from an empty producer state
    (kdump.log_loader.Load.producer_state_skipped)."""
    expired_producers: list[int]
    """Producers the broker's periodic check would expire at ``now`` (no open transaction)."""
    open_transactions: list[OpenTransaction]
    unreplicated: list[CompletedTxn]
    """Transactions whose marker lies at or above the high watermark: they still hold the
    first unstable offset back (ProducerStateManager.unreplicatedTxns)."""
    aborted: list[AbortedRange]
    completed: dict[int, TxnCounts]
    blocked_records: int
    blocked_bytes: int
    batches: int
    findings: list[Finding] = field(default_factory=list)
    facts: PartitionFacts = field(kw_only=True)
    """The opened partition's facts (the ``partition`` object of every JSON output)."""

    @property
    def hanging(self) -> list[OpenTransaction]:
        return [t for t in self.open_transactions if t.hanging]


@dataclass
class TxnResult:
    partitions: list[PartitionTransactions]
    coordinator: CoordinatorView
    options: TxnOptions
    transactional_ids: dict[str, int] = field(default_factory=dict)
    """--transactional-id ID: the __transaction_state partition each maps to."""
    unreadable: list[InputError] = field(default_factory=list)
    """Paths that could not be read or hold nothing of Kafka's (the others are analysed)."""

    @property
    def findings(self) -> list[Finding]:
        return [f for p in self.partitions for f in p.findings] + self.coordinator.findings

    @property
    def open_transactions(self) -> list[OpenTransaction]:
        return [t for p in self.partitions for t in p.open_transactions]

    def status(self) -> int:
        """0 nothing open, 1 open but younger than the timeout, 2 hanging (verify's codes)."""
        found = self.open_transactions
        if any(t.hanging for t in found):
            return 2
        return 1 if found else 0


def analyze_paths(
    paths: list[str],
    options: TxnOptions,
    transactional_ids: tuple[str, ...] = (),
    progress: Progress = NO_PROGRESS,
) -> TxnResult:
    """Everything under ``paths``: __transaction_state partitions make the coordinator's view,
    every other partition is analysed against it."""
    opened = OpenOptions(
        now_ms=options.now, producer_id_expiration_ms=options.producer_id_expiration_ms
    )
    found = discover(paths, options=opened, urls=False)
    logs = found.partitions
    view = read_coordinator_view(
        [log for log in logs if is_transaction_state(log)],
        options.transaction_state_partitions,
        options.transaction_state_partitions_in_image,
    )
    data = [log for log in logs if not is_transaction_state(log)]
    partitions = []
    progress.total(sum(log.size for log in data))
    for log in data:
        txns = analyze_partition(log, options, view)
        log.close()
        if txns is not None:
            partitions.append(txns)
        progress.advance(log.size, log.location)
    ids = {tid: view.partition_for(tid) for tid in transactional_ids}
    return TxnResult(partitions, view, options, ids, list(found.errors))


# -- one partition -----------------------------------------------------------------------------


def analyze_partition(
    log: UnifiedLog, options: TxnOptions, view: CoordinatorView | None = None
) -> PartitionTransactions | None:
    """The transactions of one partition (None: it holds no .log). Its segments are walked once,
    the producer state replay riding on the walk (UnifiedLog.walk_in_order)."""
    view = view if view is not None else CoordinatorView()
    if not log.segments:
        return None
    walk_in_order(log, VerifyOptions())  # verify's checks as its defaults run them
    end = log.producer_state
    findings: list[Finding] = [_checkpoint_finding(e) for e in log.unreadable_checkpoints]
    findings += replay_findings(end.met)
    state = end.state
    hw = log.high_watermark
    lso = log.last_stable_offset
    first_unstable = end.first_unstable_offset
    if first_unstable is not None:
        first_unstable = max(first_unstable, log.log_start_offset)
    topic, partition = log.topic, log.partition
    blocked_records, blocked_bytes = _blocked(log, lso)
    flt = options.batch_filter
    entries = sorted(state.producers.values(), key=lambda e: e.producer_id)
    open_txns = [
        _open_transaction(txn, state.producers[txn.producer_id], topic, partition, options, view)
        for txn in sorted(state.ongoing_txns.values(), key=lambda t: t.first_offset)
        if txn.producer_id in state.producers
    ]
    open_txns = [
        t
        for t in open_txns
        if flt.matches_span(
            t.producer_id,
            t.producer_epoch,
            t.leader_epoch,
            t.first_offset,
            t.last_offset,
            t.first_timestamp,
            t.last_timestamp,
        )
    ]
    path = log.location
    findings += [_open_finding(path, t, options) for t in open_txns]
    aborted = [
        a
        for a in end.aborted
        if flt.matches_span(
            a.producer_id,
            a.producer_epoch,
            None,
            a.first_offset,
            a.last_offset,
            a.first_timestamp,
            a.last_timestamp,
        )
    ]
    return PartitionTransactions(
        path=path,
        topic=topic,
        partition=partition,
        log_start_offset=log.log_start_offset,
        log_end_offset=log.log_end_offset,
        high_watermark=hw.value,
        high_watermark_source=hw.source,
        last_stable_offset=lso,
        first_unstable_offset=first_unstable,
        snapshot=end.snapshot_path,
        snapshot_offset=None if end.snapshot_path is None else end.state_from,
        replayed_from=end.state_from,
        rebuild_skipped=end.skipped,
        producers=[e for e in entries if flt.matches_producer(e.producer_id, e.producer_epoch)],
        expired_producers=[
            e.producer_id
            for e in entries
            if e.is_expired(options.now, options.producer_id_expiration_ms)
        ],
        open_transactions=open_txns,
        unreplicated=sorted(state.unreplicated_txns.values(), key=lambda t: t.first_offset),
        aborted=aborted,
        completed={
            pid: counts
            for pid, counts in sorted(end.completed.items())
            if flt.matches_producer(pid, None)
        },
        blocked_records=blocked_records,
        blocked_bytes=blocked_bytes,
        batches=end.batches,
        findings=findings,
        facts=log.facts(),
    )


def _checkpoint_finding(e: KdumpError) -> Finding:
    return Finding(
        "CHECKPOINT_CORRUPT",
        Severity.WARNING,
        e.path or "",
        f"{e.reason}; read as absent",
        position=e.position,
    )


def _blocked(log: UnifiedLog, lso: int) -> tuple[int, int]:
    """Records and bytes from the last stable offset to the log end (after recovery's cut):
    what read_committed consumers cannot read yet (a batch across the LSO counts its offsets
    from it)."""
    records = size = 0
    if lso >= log.log_end_offset:
        return 0, 0  # nothing is unstable: no walk needed
    segments = log.segments_after_recovery
    damaged = log.damaged_from
    for n, segment in enumerate(segments):
        if n + 1 < len(segments) and segments[n + 1].base_offset <= lso:
            continue
        end = None
        if damaged is not None and segment.base_offset == damaged.segment:
            end = damaged.position
        # from the offset index's entry for the LSO, as a read_committed fetch there reads
        start = segment.read_position(lso) if segment.base_offset <= lso else 0
        for run in segment.log.walk(start, end, check_crc=False):
            if run.last_offset[run.n - 1] < lso:
                continue
            for i in range(run.n):
                base, last = run.base_offset[i], run.last_offset[i]
                if last < lso:
                    continue
                count = run.records_count[i] if run.records_count[i] >= 0 else last - base + 1
                records += min(count, last - lso + 1) if base < lso else count
                size += run.size[i]
    return records, size


# -- open transactions and the coordinator -------------------------------------------------------


def abort_commands(
    servers: str | None,
    topic: str | None,
    partition: int | None,
    first_offset: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> tuple[str, str]:
    """kafka-transactions.sh abort: by start offset (brokers 3.0+), and by producer (older)."""
    # the topic is a directory's name, the servers the user's: quoted; a placeholder is not
    head = (
        f"kafka-transactions.sh --bootstrap-server "
        f"{SERVERS_PLACEHOLDER if servers is None else shell_word(servers)} abort "
        f"--topic {'<topic>' if topic is None else shell_word(topic)} "
        f"--partition {partition if partition is not None else '<partition>'}"
    )
    return (
        f"{head} --start-offset {first_offset}",
        f"{head} --producer-id {producer_id} --producer-epoch {producer_epoch} "
        f"--coordinator-epoch {max(coordinator_epoch, 0)}",
    )


def _open_transaction(
    txn: TxnMetadata,
    entry: ProducerStateEntry,
    topic: str | None,
    partition: int | None,
    options: TxnOptions,
    view: CoordinatorView,
) -> OpenTransaction:
    age = options.now - entry.last_timestamp
    hanging = age > options.transaction_max_timeout_ms  # find-hanging: strictly older
    meta = None if view.is_empty else view.by_producer_id(txn.producer_id)
    words, disagrees = _coordinator_words(txn, topic, partition, view, meta)
    abort, legacy = abort_commands(
        options.bootstrap_server,
        topic,
        partition,
        txn.first_offset,
        txn.producer_id,
        entry.producer_epoch,
        entry.coordinator_epoch,
    )
    return OpenTransaction(
        producer_id=txn.producer_id,
        producer_epoch=entry.producer_epoch,
        coordinator_epoch=entry.coordinator_epoch,
        first_offset=txn.first_offset,
        last_offset=txn.last_offset,
        first_timestamp=txn.first_timestamp,
        last_timestamp=entry.last_timestamp,
        leader_epoch=txn.leader_epoch,
        age_ms=age,
        hanging=hanging,
        transactional_id=None if meta is None else meta.transactional_id,
        coordinator_state=None if meta is None else meta.state,
        coordinator_partition=None if meta is None else view.partition_for(meta.transactional_id),
        coordinator=words,
        coordinator_disagrees=disagrees,
        find_hanging=None if disagrees is None else hanging and disagrees,
        abort_command=abort,
        abort_command_legacy=legacy,
    )


def _coordinator_words(
    txn: TxnMetadata,
    topic: str | None,
    partition: int | None,
    view: CoordinatorView,
    meta: TransactionMetadata | None,
) -> tuple[str, bool | None]:
    """find-hanging's test: no transactional id has this producer id, or the coordinator's
    transaction does not include this partition."""
    if view.is_empty:
        return "no __transaction_state partition read: the coordinator's view is unknown", None
    tp = f"{topic}-{partition}"
    if meta is None:
        if view.is_partial:
            # the id may live in a partition not read: neither verdict can be given
            read = len(set(view.partitions_read))
            return (
                f"unknown (its __transaction_state partition was not read): no transactional id "
                f"in the {read} of {view.partition_count} partitions read has producer id "
                f"{txn.producer_id}; kafka-transactions.sh find-hanging against the cluster "
                "decides",
                None,
            )
        return (
            f"unknown to the coordinator: no transactional id in __transaction_state has "
            f"producer id {txn.producer_id}; nothing will ever end it",
            True,
        )
    who = f"transactional id {meta.transactional_id!r}"
    if meta.includes(topic, partition):
        return (
            f"{meta.state} at the coordinator ({who}, epoch {meta.producer_epoch}), which will "
            "finish it or abort it at its timeout",
            False,
        )
    if meta.state in COMPLETE_STATES:
        return (
            f"complete at the coordinator ({who}: {meta.state}, epoch {meta.producer_epoch}), "
            f"yet open on {tp}: the marker never arrived, nothing will ever end it",
            True,
        )
    return (
        f"the coordinator's {meta.state} transaction of {who} does not include {tp}: "
        "nothing will end it here",
        True,
    )


def _open_finding(path: str, txn: OpenTransaction, options: TxnOptions) -> Finding:
    minutes = _java_minutes(txn.age_ms)
    timeout = _java_minutes(options.transaction_max_timeout_ms)
    what = (
        f"producer {txn.producer_id} (epoch {txn.producer_epoch}) has a transaction open since "
        f"offset {txn.first_offset}, last written {minutes} min ago"
    )
    if txn.hanging:
        return Finding(
            "TXN_HANGING",
            Severity.ERROR,
            path,
            f"{what}, past the {timeout} min transaction timeout: it holds the last stable offset "
            f"at {txn.first_offset} for read_committed consumers and the cleaner; "
            f"{txn.coordinator}",
            offset=txn.first_offset,
            fix=txn.abort_command,
        )
    if txn.coordinator_disagrees:
        return Finding(
            "TXN_OPEN",
            Severity.WARNING,
            path,
            f"{what}, within the {timeout} min timeout, but it will hang: {txn.coordinator}",
            offset=txn.first_offset,
            fix=txn.abort_command,
        )
    return Finding(
        "TXN_OPEN",
        Severity.WARNING,
        path,
        f"{what}, within the {timeout} min transaction timeout; {txn.coordinator}",
        offset=txn.first_offset,
    )


FIND_HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)
"""TransactionsCommand.FindHangingTransactionsCommand's columns."""


def find_hanging_rows(result: TxnResult) -> list[tuple[str, ...]]:
    """The rows find-hanging would print: transactions older than the timeout that the
    coordinator does not have open on their partition (all of them, when no
    __transaction_state was read; none whose coordinator partition was not read)."""
    rows: list[tuple[str, ...]] = []
    for txns in result.partitions:
        for txn in txns.open_transactions:
            unknown = txn.find_hanging is None and result.coordinator.is_empty
            if txn.find_hanging or (unknown and txn.hanging):
                rows.append(
                    (
                        str(txns.topic),
                        str(txns.partition),
                        str(txn.producer_id),
                        str(txn.producer_epoch),
                        str(txn.coordinator_epoch),
                        str(txn.first_offset),
                        str(txn.last_timestamp),
                        str(_java_minutes(txn.age_ms)),
                    )
                )
    return rows


def _java_minutes(ms: int) -> int:
    """TimeUnit.MILLISECONDS.toMinutes: truncated towards zero."""
    return -(-ms // 60000) if ms < 0 else ms // 60000


__all__ = [
    "DEFAULT_TRANSACTION_MAX_TIMEOUT_MS",
    "FIND_HANGING_HEADERS",
    "AbortedRange",
    "OpenTransaction",
    "PartitionTransactions",
    "TxnCounts",
    "TxnOptions",
    "TxnResult",
    "abort_commands",
    "analyze_partition",
    "analyze_paths",
    "find_hanging_rows",
]
