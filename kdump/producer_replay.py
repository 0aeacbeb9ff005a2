"""The partition's producer state replayed as the broker rebuilds it at startup
(UnifiedLog.rebuildProducerState after ProducerStateManager.truncateAndReload), in one walk of
its segments, up to where recovery cuts the log.

One replay feeds two producer states: ``history``, from the first batch (every transaction a
marker ends, aborted ranges, each segment's ``.txnindex`` compared), and ``state``, from the
loaded snapshot's offset on (the broker's producer state at the log end: open transactions,
the first unstable offset). It rides on a command's own walk of the segments (kdump.checks:
``begin``, ``take``, ``end`` for each segment, in order), or walks them itself (``run``). The
opened partition (kdump.unified_log) sets it up from its snapshot and finishes it at its end.

What it meets on the way (a snapshot the load skips, where it stops, a marker the state
refuses, a ``.txnindex`` that disagrees with the markers) it keeps as values, in order
(``ProducerStateAtEnd.met``): verify words them as findings (kdump.checks.txn.replay_findings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kdump.errors import KdumpError, as_kdump_error
from kdump.format.batch import RecordBatch
from kdump.format.txnindex import AbortedTxn
from kdump.format.walk import BatchRun, Producers, Stop, flag_batches
from kdump.log_scan import tail_damage
from kdump.producer_state import (
    Appended,
    CompletedTxn,
    InvalidTxnState,
    MarkerWithoutTxn,
    ProducerStateManager,
)
from kdump.segment import LogSegment
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable

    from kdump.format.snapshot import ProducerSnapshot


class SnapshotSkipped(NamedTuple):
    """A newer snapshot the load skips because it does not parse: ProducerStateManager's
    loadFromSnapshot moves on to the next older one (and deletes it)."""

    path: str
    error: KdumpError


class ReplayCut(NamedTuple):
    """Where recovery cuts the log (a batch whose CRC fails, bytes that are no batch): the
    replay stops there, and nothing after it is in the producer state."""

    path: str
    damage: str
    """What the bytes there are, in the word every command uses (LOG_CRC_MISMATCH, or
    kdump.log_scan.TailDamage's name)."""
    why: str
    position: int
    offset: int | None = None


class ReplayUnreadable(NamedTuple):
    """A segment that cannot be read: the replay stops before it (what it holds is unknown)."""

    path: str
    reason: str


class TxnIndexMismatch(NamedTuple):
    """A segment's aborts as its markers end them beside its ``.txnindex``, where they differ:
    an abort the index does not list (``index_first`` None), one it lists from another first
    offset, or an entry with no ABORT marker in the log (``log_first`` None)."""

    txn_index_path: str
    log_path: str
    producer_id: int
    last_offset: int
    log_first: int | None
    index_first: int | None


Met = SnapshotSkipped | ReplayCut | ReplayUnreadable | InvalidTxnState | TxnIndexMismatch
"""What the replay meets on the way, kept in order (``ProducerStateAtEnd.met``)."""


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
class ProducerStateAtEnd:
    """What the replay left: the broker's producer state at the log end (``state``), the
    partition's transaction history, and what it met on the way."""

    state: ProducerStateManager
    state_from: int
    """The offset the state was replayed from: the loaded snapshot's, or the log start."""
    snapshot_path: str | None
    completed: dict[int, TxnCounts]
    aborted: list[AbortedRange]
    met: list[Met]
    log_end: int | None
    """After the last batch replayed (None: none)."""
    batches: int
    first_unstable_offset: int | None
    """ProducerStateManager.firstUnstableOffset once the high watermark is known."""
    skipped: bool = False
    """The broker skips the rebuild (a clean shutdown, no snapshot): ``state`` is empty and
    ``state_from`` the log end (kdump.log_loader.Load.producer_state_skipped)."""


class ProducerReplay:
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
        self.met: list[Met] = []
        self.log_end: int | None = None
        self.batches = 0
        self.cut = False
        """Recovery's cut was met: nothing after it is replayed."""
        self.snapshot_path: str | None = None
        self.skipped = False
        """The broker skips the rebuild (``skip_rebuild``)."""
        self._segment: LogSegment | None = None
        self._segment_aborts: dict[tuple[int, int], AbortedRange] = {}

    @classmethod
    def start(
        cls,
        snapshot: ProducerSnapshot | None,
        state_from: int,
        now_ms: int,
        expiration_ms: int,
        high_watermark: int | None,
    ) -> ProducerReplay:
        """A replay set up as the broker's load sets it up: the state of ``snapshot`` (taken
        at ``state_from``; producers expired at ``now_ms`` left out), or an empty one replayed
        from ``state_from`` (the log start); ``high_watermark``: the checkpointed one."""
        if snapshot is not None:
            state = ProducerStateManager.from_snapshot(
                snapshot, now_ms, expiration_ms, high_watermark
            )
        else:
            state = ProducerStateManager(high_watermark=high_watermark)
        return cls(ProducerStateManager(), state, state_from)

    def skipped_snapshots(self, skipped: Iterable[tuple[str, KdumpError]]) -> None:
        """The newer snapshots the load skipped because they do not parse (path, why)."""
        self.met += [SnapshotSkipped(path, e) for path, e in skipped]

    def skip_rebuild(self, high_watermark: int | None, log_end: int) -> None:
        """The rebuild the broker skips (a clean stop, no snapshot): no producer state, as of
        the log end."""
        self.state = ProducerStateManager(high_watermark=high_watermark)
        self.state_from = log_end
        self.skipped = True

    def at_end(self, high_watermark: int) -> ProducerStateAtEnd:
        """What the replay left, once every segment was replayed and the high watermark is
        known."""
        self.aborted.sort(key=lambda a: (a.last_offset, a.producer_id))
        state = self.state
        state.on_high_watermark_updated(high_watermark)
        return ProducerStateAtEnd(
            state=state,
            state_from=self.state_from,
            snapshot_path=self.snapshot_path,
            completed=self.completed,
            aborted=self.aborted,
            met=self.met,
            log_end=self.log_end,
            batches=self.batches,
            first_unstable_offset=state.first_unstable_offset(),
            skipped=self.skipped,
        )

    def _mode(self, part: BatchRun) -> Producers:
        if self.history.ongoing_txns or part.last_offset[part.n - 1] >= self.state_from:
            return Producers.ALL
        return Producers.TRANSACTIONAL

    # -- riding on a walk: each segment in order -------------------------------------------

    def begin(self, segment: LogSegment) -> None:
        self._segment = segment
        self._segment_aborts = {}

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None:
        if self.cut:
            return
        invalid = _first_invalid(run)
        if invalid is not None:
            # recovery cuts the log at the first batch whose CRC fails: nothing from it on is
            # the broker's (LogSegment.recover, LogLoader.recoverLog)
            where = run.position[invalid]
            self._cut_at(log, "LOG_CRC_MISMATCH", where, "its CRC fails", run.base_offset[invalid])
            run = run.slice(0, invalid)
            if not run.n:
                return
        self._run(log, run, base_offset)
        self.batches += run.n
        self.log_end = run.last_offset[run.n - 1] + 1

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None:
        if self.log_end is None or self.log_end < base_offset:
            self.log_end = base_offset
        if not self.cut and stop is not None and stop.is_damage:
            why = stop.error.reason if stop.error is not None else f"{stop.remaining} bytes"
            why = f"the log stops being readable here ({why})"
            damage = tail_damage(stop, log.buf)
            # the word verify gives the same bytes (a zero tail is LOG_ZERO_TAIL, not a torn batch)
            self._cut_at(log, damage.name if damage else "LOG_CRC_MISMATCH", stop.position, why)
        self._compare_txn_index(self._segment)

    def _cut_at(
        self, log: FileRecords, damage: str, position: int, why: str, offset: int | None = None
    ) -> None:
        """The replay stops where recovery cuts the log."""
        self.cut = True
        self.met.append(ReplayCut(log.path, damage, why, position, offset))

    def unreadable(self, segment: LogSegment, error: KdumpError) -> None:
        """A segment that cannot be read: the replay stops before it (what it holds is unknown)."""
        self.cut = True
        self.met.append(ReplayUnreadable(error.path or segment.log_path, error.reason))

    # -- walking the segments itself ------------------------------------------------------

    def run(self, segments: list[LogSegment], position: int = 0) -> None:
        """Replay ``segments`` in order, each in one walk of its own (CRCs checked: recovery's
        cut is where the replay stops), the first from ``position``."""
        for n, segment in enumerate(segments):
            if self.cut:
                break
            self.begin(segment)
            try:
                log = segment.log
            except (KdumpError, OSError) as e:
                self.unreadable(segment, as_kdump_error(e, segment.log_path))
                break
            walk = log.walk(position if n == 0 else 0)
            for run in walk:
                self.take(log, run, segment.base_offset)
                if self.cut:
                    break
            self.end(log, segment.base_offset, walk.stop)

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
        if isinstance(result, InvalidTxnState):
            self.met.append(result)
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

    def _compare_txn_index(self, segment: LogSegment | None) -> None:
        """The aborts the markers of this segment end, beside its .txnindex entries."""
        if segment is None:
            return
        index = segment.txn_index
        indexed: dict[tuple[int, int], AbortedTxn] = {}
        if index is not None:
            for txn in index:
                indexed.setdefault((txn.producer_id, txn.last_offset), txn)
        path = str(segment.txn_index_path)

        def mismatch(pid: int, last: int, log_first: int | None, index_first: int | None) -> None:
            self.met.append(
                TxnIndexMismatch(path, segment.log_path, pid, last, log_first, index_first)
            )

        for key, aborted in self._segment_aborts.items():
            aborted.segment = segment.base_offset
            entry = indexed.pop(key, None)
            if entry is None:
                if aborted.first_offset >= 0:
                    mismatch(aborted.producer_id, aborted.last_offset, aborted.first_offset, None)
                    self.aborted.append(aborted)
                continue  # a marker without data ends nothing: no range to report
            aborted.in_txn_index = True
            if aborted.first_offset < 0:
                aborted.first_offset = entry.first_offset  # its data lies before the log read
                aborted.last_stable_offset = entry.last_stable_offset
            elif entry.first_offset != aborted.first_offset:
                first = aborted.first_offset
                mismatch(aborted.producer_id, aborted.last_offset, first, entry.first_offset)
            self.aborted.append(aborted)
        for entry in indexed.values():
            if self.cut and self.log_end is not None and entry.last_offset >= self.log_end:
                continue  # past recovery's cut: the rebuilt .txnindex will not list it
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
            mismatch(entry.producer_id, entry.last_offset, None, entry.first_offset)


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


def _first_invalid(run: BatchRun) -> int | None:
    """The first batch of ``run`` whose CRC was checked and failed (``valid`` 0; -1 is not
    checked, 1 matches)."""
    try:
        low = bytes(memoryview(run.valid).cast("B")[0::8])
    except TypeError:  # not a buffer: a list of the Python walk
        return next((i for i, v in enumerate(run.valid) if v == 0), None)
    found = low.find(0)
    return None if found < 0 else found
