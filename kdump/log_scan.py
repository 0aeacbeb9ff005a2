"""What one walk of a segment's ``.log`` learns, as the broker's recovery reads it: Kafka's
LogSegment.recover (every batch's header and CRC, the first batch it refuses, where it cuts,
the leader epochs it meets) and readNextOffset (the log's last offset), in one pass whose
memory does not grow with the number of batches.

The model's own (``scan_segment``): the opened partition (kdump.unified_log) takes its log end
and its damage from here. Verify's checks (kdump.checks.log.scan_log) ride on the same walk and
add their findings; other readers (the producer state's replay, the audit of a compacted log)
ride on it as ``RunConsumer``.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from kdump.errors import KdumpError
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.layout import LOG_OVERHEAD, NO_TIMESTAMP
from kdump.format.walk import NO_EPOCH_YET, BatchRun, Flags, Stop, StopReason, flag_batches
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump.crc import Buffer

CUT_REASONS = frozenset(
    (StopReason.TRUNCATED_TAIL, StopReason.CORRUPT_BATCH, StopReason.UNKNOWN_MAGIC)
)
"""Why a walk ends before the end of its file where recovery cuts: bytes that are no batch."""

_NON_ZERO = rb"[^\x00]"  # compiled by re where a walk first stops


class TailDamage(NamedTuple):
    """What the bytes are where a walk ended before the end of its range, other than at a
    batch whose CRC does not match (that batch is damage of its own)."""

    name: str
    """Verify's code for it (kdump.checks.codes.Code: LOG_ZERO_TAIL, LOG_UNKNOWN_MAGIC,
    LOG_CORRUPT_BATCH, LOG_TRUNCATED_TAIL), the one word every command uses for it."""
    message: str
    lost: bool
    """Whether records may be lost there (all but zeros: nothing was written)."""


def tail_damage(stop: Stop, buf: Buffer) -> TailDamage | None:
    """The damage where ``stop`` ended a walk of ``buf`` short of its range's end, where
    recovery cuts (None: it did not, or at a failed CRC)."""
    if stop.reason not in CUT_REASONS:
        return None
    end = stop.position + stop.remaining
    if (
        stop.remaining >= LOG_OVERHEAD
        and re.compile(_NON_ZERO).search(buf, stop.position, end) is None
    ):
        # a power loss leaves the file's new length on disk without the data (or the broker
        # preallocated the segment, log.preallocate): zeros, not a torn batch (whose size
        # field, within its first 12 bytes, is not zero; fewer bytes may be a batch's start)
        return TailDamage(
            "LOG_ZERO_TAIL",
            f"{stop.remaining} zero bytes after the last batch, to the end of the file: space "
            "the broker preallocated (log.preallocate) or a write a power loss did not finish; "
            "they hold no records, and the broker's recovery truncates them",
            lost=False,
        )
    if stop.error is not None:
        unknown = stop.reason is StopReason.UNKNOWN_MAGIC
        return TailDamage(
            "LOG_UNKNOWN_MAGIC" if unknown else "LOG_CORRUPT_BATCH",
            f"{stop.error.reason}; nothing after it can be read",
            lost=True,
        )
    return TailDamage(
        "LOG_TRUNCATED_TAIL",
        f"{stop.remaining} bytes after the last whole batch are a torn, partial batch",
        lost=True,
    )


class Gather(Protocol):
    """What rides on the walk to check the index files (kdump.checks.gather.IndexGather)."""

    def feed(self, run: BatchRun) -> None: ...


class FirstBatch(NamedTuple):
    """A segment's first batch, as its header says (the roll anchor of
    LogSegment.timeWaitedForRoll, and the witness of the previous segment's roll)."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int
    magic: int


class RunConsumer(Protocol):
    """Another reader of the batches riding on a segment's walk (kdump txn's producer state):
    it sees every run the walk reads, in order, then where the walk stopped."""

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None: ...

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None: ...


class Riders:
    """Several readers riding on one walk (kdump report: the producer state replay and the audit
    of a compacted log), each told of every run and of the end, in order."""

    def __init__(self, *riders: RunConsumer) -> None:
        self.riders = riders

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None:
        for rider in self.riders:
            rider.take(log, run, base_offset)

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None:
        for rider in self.riders:
            rider.end(log, base_offset, stop)


class LogScan:
    """What one pass over a .log learned: totals and the first and last of what matters, never
    a value per batch (memory stays flat whatever the number of batches), and what the index
    checks gathered (``gather``).

    A plain class, not a dataclass: every command that reads a log builds this module, and a
    dataclass of this many fields costs more start-up to define than the walk of a small
    partition (issue 45). ``FACTS`` names what a state file keeps (kdump.checks.verify_state);
    two scans are equal when their facts but ``stop`` are."""

    FACTS = (
        "path", "base_offset", "size", "batches", "first_offset", "last_offset",
        "min_timestamp", "max_timestamp", "valid_bytes", "first_invalid", "epoch_starts",
        "recovered_last_offset", "records", "wrappers_not_counted", "gaps", "legacy_batches",
        "transactional_batches", "delete_horizon_batches", "first_batch",
        "max_timestamp_after_first", "index_end_position", "max_timestamp_to_index_end",
        "last_position", "last_epoch", "stop",
    )  # fmt: skip
    __slots__ = (*FACTS, "gather")

    def __init__(
        self, path: str, base_offset: int, size: int, gather: Gather | None = None
    ) -> None:
        self.path, self.base_offset, self.size = path, base_offset, size
        self.batches = 0
        self.first_offset: int | None = None
        """The first batch's base offset."""
        self.last_offset: int | None = None
        """The last batch's last offset."""
        self.min_timestamp = NO_TIMESTAMP
        """The smallest batch max timestamp (the segment's first, as verify's summary shows
        it)."""
        self.max_timestamp = NO_TIMESTAMP
        self.valid_bytes = 0
        """End of the last whole batch: where iteration stopped."""
        self.first_invalid: int | None = None
        """Position of the first batch the broker's recovery would truncate at."""
        self.epoch_starts: list[tuple[int, int]] = []
        """(partition leader epoch, first offset) wherever the epoch changes between batches."""
        self.recovered_last_offset: int | None = None
        """The last offset before ``first_invalid`` (None: no whole batch before it): where the
        log ends once recovery cuts it there."""
        self.records = 0
        """Decoded with --deep; without, as the headers count them (``header_records``)."""
        self.wrappers_not_counted = 0
        """Compressed v0/v1 wrappers whose records were not counted (only --deep
        decompresses)."""
        self.gaps = 0
        self.legacy_batches = 0
        self.transactional_batches = 0
        """Transactional data and control batches: a producer state replay has work only
        here."""
        self.delete_horizon_batches = 0
        """Batches carrying a delete horizon: the cleaner rewrote them."""
        self.first_batch: FirstBatch | None = None
        self.max_timestamp_after_first = NO_TIMESTAMP
        """The largest batch max timestamp of every batch but the first."""
        self.index_end_position = -1
        """The position of the offset index's last written entry (-1: none)."""
        self.max_timestamp_to_index_end = NO_TIMESTAMP
        """The largest batch max timestamp of the batches at or before
        ``index_end_position``."""
        self.last_position = -1
        """Where the last batch starts (-1: no batch)."""
        self.last_epoch = NO_EPOCH_YET
        """The partition leader epoch the walk ended in (what a walk resumed after it
        carries)."""
        self.stop: Stop | None = None
        """Why the walk ended (the end of the file, or damage)."""
        self.gather = gather

    def resumed(self, path: str, size: int, gather: Gather | None) -> LogScan:
        """A copy of this scan's facts to go on from (``scan_log``'s ``prior``): the file's
        path and size now, its own gather, no stop yet."""
        scan = LogScan(path, self.base_offset, size, gather)
        for name in self.FACTS[3:-1]:
            setattr(scan, name, getattr(self, name))
        scan.epoch_starts = list(self.epoch_starts)
        return scan

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LogScan):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.FACTS if n != "stop")

    __hash__ = None  # type: ignore[assignment]  # mutable: as a dataclass's

    def __repr__(self) -> str:
        return f"LogScan({self.path!r}, base_offset={self.base_offset}, batches={self.batches})"

    def attend(self, run: BatchRun, i: int, carried_prev: int | None, carried_epoch: int) -> None:
        """What batch i of ``run`` (one ``flag_batches`` flagged) tells of the segment: a legacy
        message, a new partition leader epoch (LogSegment.recover's leader epoch cache), or a
        batch whose CRC fails, where recovery cuts."""
        base = run.base_offset[i]
        if run.magic[i] < 2:
            self.legacy_batches += 1
        else:
            before = run.partition_leader_epoch[i - 1] if i else carried_epoch
            if run.partition_leader_epoch[i] != before:
                self.epoch_starts.append((run.partition_leader_epoch[i], base))
        if run.valid[i] == 0:
            self.refuse(run.position[i], run.last_offset[i - 1] if i else carried_prev)

    def refuse(self, position: int, prev_last: int | None) -> None:
        """The batch at ``position`` is one recovery refuses (LogSegment.recover stops at the
        first); ``prev_last``: the last offset of the batch before it (None: none)."""
        if self.first_invalid is None:
            self.first_invalid = position
            self.recovered_last_offset = prev_last

    def end(self, stop: Stop) -> None:
        """The walk ended at ``stop``: bytes there that are no batch (a torn write, a corrupt
        header, an unknown magic, zeros) are where recovery cuts."""
        self.stop = stop
        self.valid_bytes = stop.position
        if stop.reason in CUT_REASONS:
            self.refuse(stop.position, self.last_offset)

    def take(self, run: BatchRun) -> None:
        """Count a run of the walk in the totals, and feed the index gather."""
        least, greatest = run.timestamp_range() or (self.min_timestamp, self.max_timestamp)
        if self.first_offset is None:
            self.first_offset = run.base_offset[0]
            self.min_timestamp = least
            self.first_batch = FirstBatch(
                run.position[0],
                run.base_offset[0],
                run.last_offset[0],
                run.size[0],
                run.max_timestamp[0],
                run.magic[0],
            )
            rest = run.slice(1, run.n).timestamp_range() if run.n > 1 else None
        else:
            self.min_timestamp = min(self.min_timestamp, least)
            rest = (least, greatest)
        if rest is not None:
            self.max_timestamp_after_first = max(self.max_timestamp_after_first, rest[1])
        self.max_timestamp = max(self.max_timestamp, greatest)
        if run.position[0] <= self.index_end_position:
            k = bisect_right(run.position, self.index_end_position)
            up_to = (least, greatest) if k == run.n else run.timestamp_range(k)
            if up_to is not None:
                self.max_timestamp_to_index_end = max(self.max_timestamp_to_index_end, up_to[1])
        self.transactional_batches += run.transactional_batches()
        self.delete_horizon_batches += run.delete_horizon_batches()
        self.last_offset = run.last_offset[-1]
        self.last_position = run.position[-1]
        self.batches += run.n
        if self.gather is not None:
            self.gather.feed(run)


class SegmentWalk:
    """What a segment's walk gave its partition: ``scan`` (None: no ``.log``, or left unread),
    and, where the ``.log`` could not be read, why (``error``). Verify's walk gives more (its
    findings: kdump.checks.segment.SegmentResult, a SegmentWalk too). A plain class: it is
    built for every segment a command reads (issue 45)."""

    __slots__ = ("base_offset", "error", "scan", "slot")

    def __init__(
        self,
        base_offset: int,
        slot: int,
        scan: LogScan | None,
        error: KdumpError | None = None,
    ) -> None:
        self.base_offset, self.slot, self.scan, self.error = base_offset, slot, scan, error

    @property
    def unread(self) -> bool:
        return self.error is not None

    def __repr__(self) -> str:
        kind = type(self).__name__
        return f"{kind}({self.base_offset}, slot={self.slot}, unread={self.unread})"


RunHook = Callable[[BatchRun, Flags, "int | None", int], None]
"""Called with each run, its flags, the last offset and epoch carried into it (verify's
checks: kdump.checks.log.scan_log)."""


def scan_segment(
    log: FileRecords,
    scan: LogScan,
    consumer: RunConsumer | None = None,
    hook: RunHook | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> LogScan:
    """Walk ``log`` once into ``scan`` (fresh, or ``LogScan.resumed`` to go on after a verified
    prefix: the walk starts where it ended, the batch before carried over): every batch's
    header and CRC, where recovery would cut; ``consumer`` and ``hook`` see every run."""
    base_offset = scan.base_offset
    has_prev = scan.last_offset is not None
    prev_last = scan.last_offset if scan.last_offset is not None else 0
    epoch = scan.last_epoch
    walk = log.walk(scan.valid_bytes, max_batch_bytes=max_batch_bytes)
    for run in walk:
        flags = flag_batches(run, base_offset, has_prev, prev_last, epoch)
        carried = prev_last if has_prev else None
        for i in flags.flagged:
            scan.attend(run, i, carried, epoch)
        if hook is not None:
            hook(run, flags, carried, epoch)
        scan.gaps += flags.gaps
        scan.take(run)
        if consumer is not None:
            consumer.take(log, run, base_offset)
        has_prev, prev_last, epoch = flags.has_prev, flags.prev_last, flags.epoch
    scan.last_epoch = epoch
    stop = walk.stop
    assert stop is not None
    scan.end(stop)
    if consumer is not None:
        consumer.end(log, base_offset, stop)
    return scan


def recover_scan(
    log: FileRecords,
    base_offset: int,
    consumer: RunConsumer | None = None,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
) -> LogScan:
    """LogSegment.recover's walk of a segment, findings apart: what the opened partition's facts
    need when no verify run walked it."""
    return scan_segment(
        log, LogScan(log.path, base_offset, log.size), consumer, None, max_batch_bytes
    )


__all__ = [
    "CUT_REASONS",
    "FirstBatch",
    "Gather",
    "LogScan",
    "Riders",
    "RunConsumer",
    "RunHook",
    "SegmentWalk",
    "TailDamage",
    "recover_scan",
    "scan_segment",
    "tail_damage",
]
