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
from pathlib import Path

from kdump.checks.findings import Finding, Severity
from kdump.config import option_default
from kdump.discovery import discover, parse_partition_dir
from kdump.errors import InputError, KdumpError
from kdump.format.batch import RecordBatch
from kdump.format.filters import NO_FILTER, BatchFilter
from kdump.format.snapshot import ProducerSnapshot
from kdump.format.txnindex import AbortedTxn
from kdump.format.walk import BatchRun, Producers, flag_batches
from kdump.partition import REPLICATION_OFFSET_CHECKPOINT, PartitionLog, clamp_high_watermark
from kdump.progress import NO_PROGRESS, Progress, log_bytes
from kdump.segment import (
    FileRecords,
    Segment,
    base_offset_of,
)
from kdump.txn.coordinator import (
    COMPLETE_STATES,
    CoordinatorView,
    TransactionMetadata,
    is_transaction_state,
    read_coordinator_view,
)
from kdump.txn.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    Appended,
    CompletedTxn,
    MarkerWithoutTxn,
    ProducerStateEntry,
    ProducerStateManager,
    TxnMetadata,
    newest_readable_snapshot,
)

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
    """Which producers and transactions are reported (the state is always built from all)."""
    bootstrap_server: str | None = None
    transaction_state_partitions: int | None = None


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
class AbortedRange:
    """An aborted transaction: from its ABORT marker, its .txnindex entry, or both."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int | None
    segment: int
    """Base offset of the segment holding the marker (or the index entry)."""
    in_log: bool
    in_txn_index: bool
    producer_epoch: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None


@dataclass
class TxnCounts:
    commits: int = 0
    aborts: int = 0
    markers_without_data: int = 0
    """Markers whose producer had no open transaction: they complete nothing."""


@dataclass
class PartitionTxnReport:
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

    @property
    def hanging(self) -> list[OpenTransaction]:
        return [t for t in self.open_transactions if t.hanging]


@dataclass
class TxnResult:
    partitions: list[PartitionTxnReport]
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
    found = discover(paths)
    directories = [t.path for t in found.partitions]
    view = read_coordinator_view(
        [d for d in directories if is_transaction_state(d)], options.transaction_state_partitions
    )
    data = [d for d in directories if not is_transaction_state(d)]
    reports = []
    sizes = [log_bytes(d) for d in data]
    progress.total(sum(sizes))
    for directory, size in zip(data, sizes, strict=True):
        report = analyze_partition(directory, options, view)
        if report is not None:
            reports.append(report)
        progress.advance(size, str(directory))
    ids = {tid: view.partition_for(tid) for tid in transactional_ids}
    return TxnResult(reports, view, options, ids, list(found.errors))


# -- one partition -----------------------------------------------------------------------------


def analyze_partition(
    directory: Path, options: TxnOptions, view: CoordinatorView | None = None
) -> PartitionTxnReport | None:
    """The report for one partition directory (None: it holds no .log)."""
    view = view if view is not None else CoordinatorView()
    try:
        log = PartitionLog(directory)
    except InputError:
        return None
    findings: list[Finding] = []
    tp = parse_partition_dir(directory.resolve().name)
    topic, partition = tp if tp is not None else (None, None)
    segments = [s.segment for s in log.segments]
    try:
        log_start = log.log_start_offset
    except KdumpError as e:
        findings.append(_checkpoint_finding(e))
        log_start = segments[0].base_offset
    try:
        known_end: int | None = log.log_end_offset
    except KdumpError:
        known_end = None  # the walk below reports where the log is damaged
    checkpoint_hw = _high_watermark_checkpoint(log, findings)
    snapshot_path, snapshot = _latest_snapshot(directory, log_start, known_end, findings)
    state_hw = None if checkpoint_hw is None else max(checkpoint_hw, log_start)
    if snapshot is not None and snapshot_path is not None:
        state = ProducerStateManager.from_snapshot(
            snapshot, options.now, options.producer_id_expiration_ms, state_hw
        )
        state_from = base_offset_of(snapshot_path)
    else:
        state = ProducerStateManager(high_watermark=state_hw)
        state_from = log_start
    replay = _Replay(ProducerStateManager(), state, state_from)
    for segment in segments:
        replay.segment(segment)
    findings += replay.findings
    replay.aborted.sort(key=lambda a: (a.last_offset, a.producer_id))
    log_end = replay.log_end if replay.log_end is not None else segments[-1].base_offset
    if checkpoint_hw is None:
        high_watermark, hw_source = log_end, "log end (no replication-offset-checkpoint entry)"
    else:
        high_watermark = clamp_high_watermark(checkpoint_hw, log_start, log_end)
        hw_source = REPLICATION_OFFSET_CHECKPOINT
        if high_watermark != checkpoint_hw:
            hw_source += f" ({checkpoint_hw}, kept within [log start, log end])"
    state.on_high_watermark_updated(high_watermark)
    first_unstable = state.first_unstable_offset()
    if first_unstable is not None:
        first_unstable = max(first_unstable, log_start)  # UnifiedLog clamps it to the log start
    lso = (
        first_unstable
        if first_unstable is not None and first_unstable < high_watermark
        else high_watermark
    )
    blocked_records, blocked_bytes = _blocked(segments, lso)
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
    path = str(directory)
    findings += [_open_finding(path, t, options) for t in open_txns]
    aborted = [
        a
        for a in replay.aborted
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
    return PartitionTxnReport(
        path=path,
        topic=topic,
        partition=partition,
        log_start_offset=log_start,
        log_end_offset=log_end,
        high_watermark=high_watermark,
        high_watermark_source=hw_source,
        last_stable_offset=lso,
        first_unstable_offset=first_unstable,
        snapshot=None if snapshot is None else str(snapshot_path),
        snapshot_offset=None if snapshot is None else state_from,
        replayed_from=state_from,
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
            for pid, counts in sorted(replay.completed.items())
            if flt.matches_producer(pid, None)
        },
        blocked_records=blocked_records,
        blocked_bytes=blocked_bytes,
        batches=replay.batches,
        findings=findings,
    )


def _checkpoint_finding(e: KdumpError) -> Finding:
    return Finding(
        "CHECKPOINT_CORRUPT",
        Severity.WARNING,
        e.path or "",
        f"{e.reason}; read as absent",
        position=e.position,
    )


def _high_watermark_checkpoint(log: PartitionLog, findings: list[Finding]) -> int | None:
    """This partition's entry in the log dir's replication-offset-checkpoint (the last wins);
    an unreadable file is a finding and read as absent."""
    try:
        return log.checkpointed(REPLICATION_OFFSET_CHECKPOINT)
    except KdumpError as e:
        findings.append(_checkpoint_finding(e))
        return None


def _latest_snapshot(
    directory: Path, log_start: int, log_end: int | None, findings: list[Finding]
) -> tuple[Path | None, ProducerSnapshot | None]:
    """ProducerStateManager.truncateAndReload then loadFromSnapshot: snapshots at or below the
    log start offset or past the log end are deleted; the newest readable one of the rest."""
    found = newest_readable_snapshot(directory, log_start, log_end, findings)
    return (None, None) if found is None else (found[1], found[2])


class _Replay:
    """One walk over the partition's segments feeding two producer states: ``history`` from the
    first batch (markers, aborted ranges, the .txnindex comparison) and ``state`` from
    ``state_from`` (the broker's producer state at the log end)."""

    def __init__(
        self, history: ProducerStateManager, state: ProducerStateManager, state_from: int
    ) -> None:
        self.history, self.state, self.state_from = history, state, state_from
        self.pending = {
            first: txn for first, txn in state.ongoing_txns.items() if txn.first_timestamp is None
        }
        self.completed: dict[int, TxnCounts] = {}
        self.aborted: list[AbortedRange] = []
        self.findings: list[Finding] = []
        self.log_end: int | None = None
        self.batches = 0
        self._segment_aborts: dict[tuple[int, int], AbortedRange] = {}

    def _mode(self, part: BatchRun) -> Producers:
        if self.history.ongoing_txns or part.last_offset[part.n - 1] >= self.state_from:
            return Producers.ALL
        return Producers.TRANSACTIONAL

    def segment(self, segment: Segment) -> None:
        log = segment.log()
        self._segment_aborts = {}
        walk = log.walk(check_crc=False)
        for run in walk:
            self._run(log, run, segment.base_offset)
            self.batches += run.n
            self.log_end = run.last_offset[run.n - 1] + 1
        if self.log_end is None or self.log_end < segment.base_offset:
            self.log_end = segment.base_offset
        stop = walk.stop
        if stop is not None and stop.is_damage:
            reason = stop.error.reason if stop.error is not None else f"{stop.remaining} bytes"
            self.findings.append(
                Finding(
                    f"LOG_{stop.reason.name}",
                    Severity.WARNING,
                    log.path,
                    f"the log stops being readable here ({reason}); batches after it are not "
                    "in the producer state (the broker's recovery would truncate them)",
                    position=stop.position,
                )
            )
        self._compare_txn_index(segment)

    def _run(self, log: FileRecords, run: BatchRun, base_offset: int) -> None:
        done = 0
        while done < run.n:
            part = run.slice(done, run.n)
            mode = self._mode(part)
            restart = None
            for i in flag_batches(part, base_offset, producers=mode).flagged:
                if part.magic[i] < 2 or part.producer_id[i] < 0:
                    continue
                batch = part.batch(i)
                assert isinstance(batch, RecordBatch)
                self._one(log, batch)
                if self._mode(part) is not mode:  # a transaction opened or closed: flag anew
                    restart = i + 1
                    break
            if restart is None:
                return
            done += restart

    def _one(self, log: FileRecords, batch: RecordBatch) -> None:
        pending = self.pending.pop(batch.base_offset, None) if self.pending else None
        if pending is not None and batch.producer_id == pending.producer_id:
            pending.first_timestamp = batch.max_timestamp
            pending.leader_epoch = batch.partition_leader_epoch
        self._history(self.history.update(log.buf, batch, log.path), batch)
        if batch.last_offset >= self.state_from:
            self.state.update(log.buf, batch, log.path)

    def _history(self, result: Appended, batch: RecordBatch) -> None:
        if result is None:
            return
        if isinstance(result, Finding):
            self.findings.append(result)
            return
        counts = self.completed.setdefault(result.producer_id, TxnCounts())
        if isinstance(result, MarkerWithoutTxn):
            counts.markers_without_data += 1
            if result.is_aborted:
                self._segment_aborts[(result.producer_id, result.offset)] = AbortedRange(
                    result.producer_id,
                    -1,
                    result.offset,
                    None,
                    -1,
                    True,
                    False,
                    result.producer_epoch,
                    None,
                    None,
                )
            return
        if result.is_aborted:
            counts.aborts += 1
            self._segment_aborts[(result.producer_id, result.last_offset)] = _range(result)
        else:
            counts.commits += 1

    def _compare_txn_index(self, segment: Segment) -> None:
        """The aborts the markers of this segment end, beside its .txnindex entries."""
        index = segment.txn_index()
        indexed: dict[tuple[int, int], AbortedTxn] = {}
        if index is not None:
            for txn in index:
                indexed.setdefault((txn.producer_id, txn.last_offset), txn)
        path = str(segment.txn_index_path)
        for key, aborted in self._segment_aborts.items():
            aborted.segment = segment.base_offset
            entry = indexed.pop(key, None)
            if entry is None:
                if aborted.first_offset >= 0:
                    self.findings.append(
                        Finding(
                            "TXN_INDEX_MISSING_ABORT",
                            Severity.WARNING,
                            path,
                            f"the ABORT marker at offset {aborted.last_offset} ends producer "
                            f"{aborted.producer_id}'s transaction from offset "
                            f"{aborted.first_offset}, which the .txnindex does not list: "
                            "read_committed consumers receive its records as committed",
                            offset=aborted.last_offset,
                            fix=f"kdump rebuild-index {segment.log_path}",
                        )
                    )
                    self.aborted.append(aborted)
                continue  # a marker without data ends nothing: no range to report
            aborted.in_txn_index = True
            if aborted.first_offset < 0:
                aborted.first_offset = entry.first_offset  # its data lies before the log read
                aborted.last_stable_offset = entry.last_stable_offset
            elif entry.first_offset != aborted.first_offset:
                self.findings.append(
                    Finding(
                        "TXN_INDEX_DISAGREES",
                        Severity.WARNING,
                        path,
                        f"producer {aborted.producer_id}'s transaction aborted at offset "
                        f"{aborted.last_offset} starts at offset {aborted.first_offset} in the "
                        f"log, at {entry.first_offset} in the .txnindex",
                        offset=aborted.last_offset,
                        fix=f"kdump rebuild-index {segment.log_path}",
                    )
                )
            self.aborted.append(aborted)
        for entry in indexed.values():
            self.aborted.append(
                AbortedRange(
                    entry.producer_id,
                    entry.first_offset,
                    entry.last_offset,
                    entry.last_stable_offset,
                    segment.base_offset,
                    False,
                    True,
                )
            )
            self.findings.append(
                Finding(
                    "TXN_INDEX_WITHOUT_MARKER",
                    Severity.INFO,
                    path,
                    f"the .txnindex lists producer {entry.producer_id}'s abort at offset "
                    f"{entry.last_offset} (from offset {entry.first_offset}), where the log has "
                    "no ABORT marker of it (the cleaner may have removed the marker)",
                    offset=entry.last_offset,
                )
            )


def _range(txn: CompletedTxn) -> AbortedRange:
    return AbortedRange(
        txn.producer_id,
        txn.first_offset,
        txn.last_offset,
        txn.last_stable_offset,
        -1,
        True,
        False,
        txn.producer_epoch,
        txn.first_timestamp,
        txn.last_timestamp,
    )


def _blocked(segments: list[Segment], lso: int) -> tuple[int, int]:
    """Records and bytes from the last stable offset to the log end: what read_committed
    consumers cannot read yet (a batch across the LSO counts its offsets from it)."""
    records = size = 0
    for n, segment in enumerate(segments):
        if n + 1 < len(segments) and segments[n + 1].base_offset <= lso:
            continue
        for run in segment.log().walk(check_crc=False):
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
    head = (
        f"kafka-transactions.sh --bootstrap-server {servers or SERVERS_PLACEHOLDER} abort "
        f"--topic {topic if topic is not None else '<topic>'} "
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
    for report in result.partitions:
        for txn in report.open_transactions:
            unknown = txn.find_hanging is None and result.coordinator.is_empty
            if txn.find_hanging or (unknown and txn.hanging):
                rows.append(
                    (
                        str(report.topic),
                        str(report.partition),
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
    "PartitionTxnReport",
    "TxnCounts",
    "TxnOptions",
    "TxnResult",
    "abort_commands",
    "analyze_partition",
    "analyze_paths",
    "find_hanging_rows",
]
