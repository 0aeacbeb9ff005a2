"""A partition opened once (Kafka's UnifiedLog over LocalLog): its segments and every fact the
broker works out about them, each computed once, when first asked, and shared by every command.

Discovery (kdump.discovery) hands these back. A fact that needs the log's bytes reads them in
one walk per segment (kdump.checks.segment: the walk verify's checks ride on); a command that
walks the segments itself (verify, in parallel) hands its results in (``take_result``), so no
segment is walked twice.

The facts and the broker's rules they follow:

- ``log_start_offset``: the log dir's log-start-offset-checkpoint entry when it is past the first
  segment's base offset, else that base offset (LogLoader.load).
- ``log_end_offset_on_disk``: after the last whole batch of the last segment (readNextOffset).
- ``damaged_from``: the first batch recovery refuses (a failed CRC, a header that does not
  parse, a torn tail): where ``kdump recover`` cuts the log, deleting every later segment
  (LogSegment.recover, LogLoader.recoverLog).
- ``broker_load`` and ``log_end_offset``: what the broker's next start does (LogLoader.load,
  kdump.log_loader.load): the segments it recovers (after an unclean stop, those from the
  recovery point on; always one missing its offset index), where it cuts one of them, the
  segments it deletes after that cut, the producer snapshots it deletes and writes, and where
  the log then ends (readNextOffset of the last segment). Damage in a segment it does not
  recover stays, unnoticed: the log then ends where the files say.
- ``high_watermark``: the replication-offset-checkpoint entry kept within [log start, log end]
  (UnifiedLog.updateHighWatermark); without one, kdump takes the log end (fully replicated).
- ``last_stable_offset``: the first unstable offset if below the high watermark, else the high
  watermark (UnifiedLog.lastStableOffset), from the producer state at the log end.
- ``recovery_point``: the recovery-point-offset-checkpoint entry, at most the log end
  (LogLoader.recoverLog).
"""

from __future__ import annotations

import os
import time
from bisect import bisect_right
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from kdump.config import (
    ConfigLayers,
    MetadataConfigs,
    Settings,
    option_default,
    resolve_settings,
)
from kdump.errors import (
    BudgetSpent,
    DecryptionKeyError,
    KdumpError,
    StoreError,
    as_kdump_error,
)
from kdump.format.compression import DEFAULT_MAX_BATCH_BYTES
from kdump.format.names import (
    DELETE_DIR_SUFFIX,
    DUMPED_SUFFIXES,
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    LOG_SUFFIX,
    METADATA_TOPIC,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    SNAPSHOT_SUFFIX,
    TXN_INDEX_SUFFIX,
    KeptLog,
    is_kdump_leftover,
    is_leftover_name,
    is_snapshot_name,
    kept_file_of,
    kept_logs_among,
    offset_in_name,
    parse_partition_dir,
)
from kdump.log_dir import LogDir
from kdump.log_loader import Load, SegmentState, Settlement, load, settle
from kdump.log_scan import Riders, RunConsumer, SegmentWalk, recover_scan
from kdump.segment import LogSegment
from kdump.storage.base import Storage, StoredFile
from kdump.storage.local import LocalStorage
from kdump.storage.reading import KEEP, ReadPolicy
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from typing import TypedDict

    from kdump.format.checkpoint import EpochEntry, PartitionMetadata
    from kdump.format.snapshot import ProducerSnapshot
    from kdump.leader_epoch import LeaderEpochFileCache
    from kdump.loss import CutLoss
    from kdump.producer_replay import ProducerReplay, ProducerStateAtEnd
    from kdump.storage.tiered import TieredStorage

SMALL_TEXT_FILE = 1 << 20
"""The most of a partition's own text files read (leader-epoch-checkpoint, partition.metadata)."""


Walker = Callable[[LogSegment, "RunConsumer | None"], SegmentWalk]
"""How a command walks a segment with a reader riding on it (verify's checks:
kdump.checks.segment.walker)."""


class SegmentRider(RunConsumer, Protocol):
    """A reader of a partition's batches riding on its segments' walks, told of each segment
    as its walk begins."""

    def begin(self, segment: LogSegment) -> None: ...


# The records below are NamedTuples, not frozen dataclasses: every command opens partitions,
# and a dataclass costs ten times a NamedTuple to define (issue 45).


class DamagedFrom(NamedTuple):
    """Where recovery cuts the log: the first batch it refuses, in the first segment that has
    one; ``offset`` is the first offset the cut removes (the log end offset after it)."""

    segment: int
    """The damaged segment's base offset."""
    position: int
    path: str
    offset: int

    def to_dict(self) -> dict[str, int]:
        return {"segment": self.segment, "position": self.position, "offset": self.offset}


class SnapshotFile(NamedTuple):
    """A producer state snapshot of the partition, named by the offset whose state it holds."""

    offset: int
    name: str
    path: str
    segment: LogSegment | None = None
    """Tiered storage keeps one per segment: that segment."""

    def storage_of(self, log: UnifiedLog) -> Storage:
        return log.storage if self.segment is None else self.segment.storage


class LoadedSnapshot(NamedTuple):
    """The snapshot the broker loads at startup (ProducerStateManager.truncateAndReload, then
    loadFromSnapshot), and the newer ones it skipped because they do not parse."""

    file: SnapshotFile | None
    snapshot: ProducerSnapshot | None
    skipped: tuple[tuple[SnapshotFile, KdumpError], ...] = ()


class OpenOptions(NamedTuple):
    """How an opened partition works its facts out."""

    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    """The largest decompressed batch a segment's walk accepts (--max-batch-bytes)."""
    now_ms: int | None = None
    """The broker's clock when it loads producer state (producers idle past their expiration
    are dropped); None: the time the facts are first asked for."""
    producer_id_expiration_ms: int = option_default("producer.id.expiration.ms")
    layers: ConfigLayers = ConfigLayers()
    """Where topic settings come from (--config, describe output, server.properties)."""
    reading: ReadPolicy = KEEP
    """How local ``.log`` files are read: page cache left as found, rate (verify's)."""


class Fact(NamedTuple):
    """A number and where it came from, in words (outputs show both)."""

    value: int
    source: str


FACT_KEYS = (
    "path",
    "topic",
    "partition",
    "log_start_offset",
    "log_end_offset",
    "log_end_offset_on_disk",
    "high_watermark",
    "last_stable_offset",
    "recovery_point",
    "segments",
    "active_segment",
    "bytes",
    "damaged_from",
    "load",
)
"""The keys of ``UnifiedLog.facts``, in order (``PartitionFacts``'s: tests/test_one_truth.py)."""

if TYPE_CHECKING:  # types for mypy alone: verify's start-up defines no class for them

    class LoadForecast(TypedDict):
        """``UnifiedLog.load_forecast``: what the broker's next start does to the partition."""

        clean_shutdown: bool
        recovery_point: int
        recovered_segments: list[int]
        cut_segment: int | None
        deleted_segments: list[int]
        snapshots_deleted: list[int]
        snapshots_written: list[int]
        snapshots_left: list[int]
        producer_state_skipped: bool
        fails: str | None

    class PartitionFacts(TypedDict):
        """``UnifiedLog.facts``: the ``partition`` object of every JSON output, FACT_KEYS in
        order (None beyond the first three where a run was cut short)."""

        path: str
        topic: str | None
        partition: int | None
        log_start_offset: int | None
        log_end_offset: int | None
        log_end_offset_on_disk: int | None
        high_watermark: int | None
        last_stable_offset: int | None
        recovery_point: int | None
        segments: int | None
        active_segment: int | None
        bytes: int | None
        damaged_from: dict[str, int] | None
        load: LoadForecast | None


class UnifiedLog:
    """One partition: ``storage`` holds its files; ``log_dir`` is the broker log dir it was
    found in (None: named on its own, or in tiered storage); ``only``: the segments named, when
    the user named segment files (the facts are still the whole partition's)."""

    def __init__(
        self,
        storage: Storage,
        log_dir: LogDir | None = None,
        only: frozenset[int] | None = None,
        options: OpenOptions | None = None,
        topic_partition: tuple[str, int] | None = None,
    ) -> None:
        self.storage = storage
        self.log_dir = log_dir
        self.only = only
        self.open_options = options or OpenOptions()
        self._topic_partition = topic_partition
        self._results: dict[int, SegmentWalk] = {}
        self._snapshots: dict[str, bytes] = {}
        self.cut_short = False
        """A run stopped before it read all of the partition (verify --budget, Ctrl-C): what
        needs every segment read is not known (``facts``), and is not read after the stop."""
        self.left: set[int] = set()
        """The segments a run left unread (its --budget spent: ``leave``), by slot."""

    @cached_property
    def now_ms(self) -> int:
        now = self.open_options.now_ms
        return time.time_ns() // 1_000_000 if now is None else now

    @property
    def producer_id_expiration_ms(self) -> int:
        return self.open_options.producer_id_expiration_ms

    def __repr__(self) -> str:
        return f"UnifiedLog({self.location!r})"

    def found_in(self, log_dir: LogDir) -> bool:
        """One of the partition directories found in ``log_dir``."""
        return self.log_dir is log_dir and self.location in log_dir.partition_dirs

    def __getstate__(self) -> dict[str, object]:
        # to another process (a Spark executor): what opens it, not what was read here
        keep = ("storage", "log_dir", "only", "open_options", "_topic_partition", "cut_short")
        return {
            **{k: self.__dict__[k] for k in keep},
            "_results": {},
            "_snapshots": {},
            "left": set(),
        }

    # -- identity ---------------------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the partition is, as output names it: a directory, or a URL."""
        return self.storage.location

    @property
    def name(self) -> str:
        return self.storage.name

    @property
    def kind(self) -> str:
        return self.storage.kind

    @property
    def tiered(self) -> bool:
        return self.storage.closed_segments_only

    @property
    def remote_partition(self) -> TieredStorage | None:
        """The partition's folder in tiered storage (its layout, its manifest), or None: a
        partition of a log dir, on disk or copied to an object store."""
        if not self.storage.closed_segments_only:
            return None  # (tiered storage's modules stay unloaded for a local partition)
        from kdump.storage.tiered import TieredStorage

        return self.storage if isinstance(self.storage, TieredStorage) else None

    @cached_property
    def topic_partition(self) -> tuple[str, int] | None:
        if self._topic_partition is not None:
            return self._topic_partition
        return parse_partition_dir(self.storage.name)

    @property
    def topic(self) -> str | None:
        tp = self.topic_partition
        return None if tp is None else tp[0]

    @property
    def is_metadata_log(self) -> bool:
        """The KRaft metadata partition (``__cluster_metadata-0``), on a broker's disk or a
        copy of one: tiered storage never holds it."""
        return self.topic == METADATA_TOPIC and not self.tiered

    @property
    def partition(self) -> int | None:
        tp = self.topic_partition
        return None if tp is None else tp[1]

    # -- segments ---------------------------------------------------------------------------

    @cached_property
    def all_segments(self) -> list[LogSegment]:
        """Every segment any of whose files is here, by base offset (then id); only those with
        a ``.log`` are the log's (``segments``), the others are orphan index files."""
        sets = self.storage.segment_sets()
        with_log = [i for i, s in enumerate(sets) if LOG_SUFFIX in s.files]
        active = -1 if self.tiered or not with_log else with_log[-1]
        return [
            LogSegment(self.storage, s.base_offset, s.files, i == active, s.segment_id, i)
            for i, s in enumerate(sets)
        ]

    @cached_property
    def segments(self) -> list[LogSegment]:
        """The log's segments (those with a ``.log``), by base offset; the last is the active
        one, except in tiered storage."""
        return [s for s in self.all_segments if LOG_SUFFIX in s.files]

    @property
    def orphan_segments(self) -> list[LogSegment]:
        """Index files with no ``.log``: LogLoader deletes them."""
        return [s for s in self.all_segments if LOG_SUFFIX not in s.files]

    @property
    def named_segments(self) -> list[LogSegment]:
        """The segments the user named (all of them when a partition was named)."""
        if self.only is None:
            return self.segments
        return [s for s in self.segments if s.base_offset in self.only]

    @property
    def active_segment(self) -> LogSegment | None:
        last = self.segments[-1] if self.segments else None
        return last if last is not None and last.is_active else None

    @cached_property
    def base_offsets(self) -> list[int]:
        return [s.base_offset for s in self.segments]

    def floor_segment(self, offset: int) -> int:
        """The index of the segment with the greatest base offset <= offset (-1: none)."""
        return bisect_right(self.base_offsets, offset) - 1

    @property
    def has_batches(self) -> bool:
        """Whether any segment holds a whole batch."""
        return any((r.scan is not None and r.scan.batches > 0) for r in self.walks())

    @property
    def size(self) -> int:
        """Bytes of the log's ``.log`` files (LogSegment.size summed)."""
        return sum(s.log_size for s in self.segments)

    # -- each segment's walk ----------------------------------------------------------------

    def walk(self, segment: LogSegment) -> SegmentWalk:
        """What ``segment``'s walk gave: the walk a command did and handed in (verify's, with
        its checks on it), else the segment's own recovery walk (LogSegment.recover, findings
        apart), done once, when first asked."""
        found = self._results.get(segment.slot)
        if found is None:
            found = self._recover(segment, None)
            self._results[segment.slot] = found
        return found

    def walks(self) -> list[SegmentWalk]:
        return [self.walk(s) for s in self.segments]

    def handed_in(self, segment: LogSegment) -> SegmentWalk | None:
        """The walk of ``segment`` done so far (None: none yet)."""
        return self._results.get(segment.slot)

    def walked(self, segment: LogSegment) -> bool:
        """Whether ``segment``'s walk is done (or was handed in)."""
        return segment.slot in self._results

    def take_result(self, segment: LogSegment, result: SegmentWalk) -> None:
        """A segment's walk done elsewhere (verify's workers): kept as this log's."""
        self._results[segment.slot] = result

    def leave(self, segment: LogSegment) -> None:
        """A run left ``segment`` unread (its budget spent): the facts are told nothing of it,
        and nothing reads it for them (a budget bounds the run: issue 39 point 7)."""
        self.left.add(segment.slot)
        self._results[segment.slot] = SegmentWalk(segment.base_offset, segment.slot, None)

    def _recover(self, segment: LogSegment, consumer: RunConsumer | None) -> SegmentWalk:
        """The segment's own walk: LogSegment.recover's reading of its ``.log`` (its files stay
        open for what the command reads next; the partition closes them)."""
        if LOG_SUFFIX not in segment.files:
            return SegmentWalk(segment.base_offset, segment.slot, None)
        try:
            scan = recover_scan(
                segment.log, segment.base_offset, consumer, self.open_options.max_batch_bytes
            )
        except (StoreError, DecryptionKeyError, BudgetSpent):  # the run's, not the segment's
            raise
        except (KdumpError, OSError) as e:
            error = as_kdump_error(e, segment.directory)
            return SegmentWalk(segment.base_offset, segment.slot, None, error)
        return SegmentWalk(segment.base_offset, segment.slot, scan)

    def walk_in_order(
        self, rider: SegmentRider | None = None, walker: Walker | None = None
    ) -> None:
        """Every segment's walk, in order, with the producer state replay riding on it: one
        walk of each segment gives the facts, the producer state (what kdump txn and kdump
        report need) and, with verify's ``walker``, its checks; ``rider`` rides along too (the
        audit of a compacted log: kdump.checks.compacted). Segments walked already are not
        walked again (the replay then walks on its own, when asked)."""
        if any(s.slot in self._results for s in self.segments):
            return
        walk = walker or self._recover
        replay = self._start_replay(None)
        for segment in self.segments:
            if not replay.cut:
                replay.begin(segment)
            if rider is not None:
                rider.begin(segment)
            riders = [r for r in (None if replay.cut else replay, rider) if r is not None]
            consumer = riders[0] if len(riders) == 1 else Riders(*riders) if riders else None
            found = walk(segment, consumer)
            self._results[segment.slot] = found
            if found.error is not None and not replay.cut:
                replay.unreadable(segment, found.error)
        self.adopt_producer_state(self._finish_replay(replay))

    # -- offsets ----------------------------------------------------------------------------

    def checkpointed(self, name: str) -> int | None:
        """This partition's entry in its log dir's checkpoint ``name`` (None: no log dir, no
        file, no entry); an unreadable file raises its error."""
        tp = self.topic_partition
        if self.log_dir is None or tp is None:
            return None
        return self.log_dir.checkpointed(name, tp)

    @property
    def unreadable_checkpoints(self) -> list[KdumpError]:
        """The log dir's offset checkpoints this partition's facts read that do not parse:
        each counts as absent, as the broker counts it (kdump verify reports them)."""
        if self.log_dir is None:
            return []
        names = (
            LOG_START_OFFSET_CHECKPOINT,
            REPLICATION_OFFSET_CHECKPOINT,
            RECOVERY_POINT_CHECKPOINT,
        )
        return [e for n in names if (e := self.log_dir.checkpoint(n).error) is not None]

    @cached_property
    def log_start(self) -> Fact:
        """LogLoader.load: the checkpoint's log start offset when past the first segment's base
        offset, else that base offset. An unreadable checkpoint counts as absent (the broker
        then takes the base offset too)."""
        first = self.segments[0].base_offset if self.segments else 0
        try:
            checkpointed = self.checkpointed(LOG_START_OFFSET_CHECKPOINT)
        except KdumpError:
            checkpointed = None
        if checkpointed is not None and checkpointed > first:
            return Fact(checkpointed, LOG_START_OFFSET_CHECKPOINT)
        return Fact(first, "the first segment's base offset")

    @property
    def log_start_offset(self) -> int:
        return self.log_start.value

    @cached_property
    def log_end_offset_on_disk(self) -> int:
        """The offset after the last whole batch of the last segment, CRCs or not (what the
        broker's readNextOffset reads), or its base offset when it holds none."""
        if not self.segments:
            return self.log_start_offset
        last = self.segments[-1]
        scan = self.walk(last).scan
        if scan is None or scan.last_offset is None:
            return last.base_offset
        if self.tiered:  # a re-upload of older offsets may come last: the furthest one
            return (
                max(
                    (r.scan.last_offset for r in self.walks() if r.scan and r.scan.last_offset),
                    default=last.base_offset - 1,
                )
                + 1
            )
        return scan.last_offset + 1

    @cached_property
    def damaged_from(self) -> DamagedFrom | None:
        """The first batch recovery refuses, in segment order (None: nothing to cut)."""
        for segment in self.segments:
            scan = self.walk(segment).scan
            if scan is None or scan.first_invalid is None:
                continue
            last = scan.recovered_last_offset
            offset = segment.base_offset if last is None else last + 1
            return DamagedFrom(segment.base_offset, scan.first_invalid, segment.log_path, offset)
        return None

    @property
    def log_end_offset(self) -> int:
        """``logEndOffset`` once the broker has loaded the partition (``broker_load``); in
        tiered storage, which no broker loads, where a cut at ``damaged_from`` ends it."""
        if self.tiered:
            damaged = self.damaged_from
            return self.log_end_offset_on_disk if damaged is None else damaged.offset
        return self.broker_load.log_end_offset

    @property
    def segments_after_recovery(self) -> list[LogSegment]:
        """The segments the broker keeps once it has loaded the partition."""
        if self.tiered:
            return self.segments
        kept = {base for base, _ in self.broker_load.segments}
        return [s for s in self.segments if s.base_offset in kept]

    @cached_property
    def broker_load(self) -> Load:
        """What LogLoader.load does to this partition at the broker's next start (after
        LogLoader settles the leftover files): from the log dir's clean shutdown marker (no
        log dir known: an unclean stop), its recovery-point and log-start checkpoint entries
        (none, or unreadable: 0, as LogManager passes them), each segment's files and where
        recovery would cut it. The KRaft metadata log is the raft layer's: it loads it with
        no recovery point nor log start (0) and as after an unclean stop, on every start
        (KafkaRaftLog.createLog). A ``-delete`` directory's load skips recoverLog."""
        return self.broker_load_with()

    def broker_load_with(self, indexes_whole: frozenset[int] = frozenset()) -> Load:
        """``broker_load``, or the same load as if the segments ``indexes_whole`` had whole
        indexes (what ``kdump rebuild-index`` of them first would spare the broker)."""
        metadata = self.is_metadata_log
        clean = not metadata and self.log_dir is not None and self.log_dir.had_clean_shutdown
        last = self.segments[-1] if self.segments else None
        states = []
        for s in self.segments:
            state = self._segment_state(s, s is last)
            if s.base_offset in indexes_whole:
                state = state._replace(has_index=True, txn_index_corrupt=False)
            states.append(state)
        return load(
            states,
            clean,
            0 if metadata else self._checkpointed_or_zero(RECOVERY_POINT_CHECKPOINT),
            0 if metadata else self._checkpointed_or_zero(LOG_START_OFFSET_CHECKPOINT),
            [f.offset for f in self.snapshot_files],
            frozenset(f.offset for f in self.snapshot_files if not self._snapshot_parses(f)),
            recover_log=not self.storage.name.endswith(DELETE_DIR_SUFFIX),
        )

    def _snapshot_parses(self, file: SnapshotFile) -> bool:
        try:
            self.read_snapshot(file)
        except KdumpError:
            return False
        return True

    def _checkpointed_or_zero(self, name: str) -> int:
        try:
            return self.checkpointed(name) or 0
        except KdumpError:
            return 0

    def _segment_state(self, segment: LogSegment, last: bool) -> SegmentState:
        """``last``: the log end is read from this one (readNextOffset reads its index and
        log tail; of the others only what their walk found is needed)."""
        scan = self.walk(segment).scan
        size = segment.log_size
        if scan is None:  # unreadable: nothing kdump can say it cuts
            return SegmentState(
                segment.base_offset, size, segment.has(INDEX_SUFFIX), False, size,
                segment.base_offset, segment.base_offset,
            )  # fmt: skip
        if scan.first_invalid is None:
            valid, kept = size, scan.last_offset
        else:
            valid, kept = scan.first_invalid, scan.recovered_last_offset
        recovered_next = segment.base_offset if kept is None else kept + 1
        txn = segment.txn_index if segment.has(TXN_INDEX_SUFFIX) else None
        read = segment.read_next_offset if last else None
        return SegmentState(
            segment.base_offset,
            size,
            segment.has(INDEX_SUFFIX),
            txn is not None and txn.sanity_check() is not None,
            valid,
            recovered_next,
            recovered_next if read is None else read.offset,
            None if read is None or read.error is None else read.error.reason,
        )

    @cached_property
    def high_watermark(self) -> Fact:
        """Partition.createLog: the checkpointed high watermark kept within [log start, log end]
        (UnifiedLog.updateHighWatermark); with no entry (or no readable file) kdump assumes the
        log is fully replicated: the log end offset."""
        try:
            checkpointed = self.checkpointed(REPLICATION_OFFSET_CHECKPOINT)
        except KdumpError:
            checkpointed = None
        end = self.log_end_offset
        if checkpointed is None:
            return Fact(
                end, f"no {REPLICATION_OFFSET_CHECKPOINT} entry: assumed the log end offset"
            )
        clamped = min(max(checkpointed, self.log_start_offset), end)
        source = REPLICATION_OFFSET_CHECKPOINT
        if clamped != checkpointed:
            source += f" ({checkpointed}, kept within [log start, log end])"
        return Fact(clamped, source)

    @cached_property
    def recovery_point(self) -> int | None:
        """The checkpointed recovery point, at most the log end offset (LogLoader.recoverLog);
        None where there is no entry."""
        try:
            point = self.checkpointed(RECOVERY_POINT_CHECKPOINT)
        except KdumpError:
            return None
        return None if point is None else min(point, self.log_end_offset)

    # -- producer state ---------------------------------------------------------------------

    @cached_property
    def snapshot_files(self) -> list[SnapshotFile]:
        """The partition's producer snapshots by offset (tiered storage: one per segment)."""
        if self.tiered:
            return [
                SnapshotFile(s.base_offset, s.file_name(SNAPSHOT_SUFFIX), s.snapshot_path, s)
                for s in self.segments
                if SNAPSHOT_SUFFIX in s.files and s.has(SNAPSHOT_SUFFIX)
            ]
        found = []
        for name in self.storage.files():
            if is_snapshot_name(name):
                offset = offset_in_name(name)
                assert offset is not None
                found.append(SnapshotFile(offset, name, self.storage.location_of(name)))
        return sorted(found, key=lambda f: f.offset)

    def snapshot_bytes(self, file: SnapshotFile) -> bytes:
        """A snapshot's bytes, read once (verify's check and the producer state replay both
        read the newest one; a snapshot holds a few dozen bytes per producer)."""
        found = self._snapshots.get(file.name)
        if found is None:
            found = self._snapshots[file.name] = file.storage_of(self).read_bytes(file.name)
        return found

    def read_snapshot(self, file: SnapshotFile) -> ProducerSnapshot:
        from kdump.format.snapshot import parse_producer_snapshot  # a partition with snapshots

        return parse_producer_snapshot(self.snapshot_bytes(file), file.path)

    def snapshot_between(self, above: int | None, at_most: int | None) -> LoadedSnapshot:
        """Of the snapshots with ``above < offset <= at_most`` (None: no bound), the newest that
        parses, and the newer ones that do not (the broker skips and deletes them)."""
        skipped: list[tuple[SnapshotFile, KdumpError]] = []
        for file in reversed(self.snapshot_files):
            if (above is not None and file.offset <= above) or (
                at_most is not None and file.offset > at_most
            ):
                continue
            try:
                return LoadedSnapshot(file, self.read_snapshot(file), tuple(skipped))
            except KdumpError as e:
                skipped.append((file, e))
        return LoadedSnapshot(None, None, tuple(skipped))

    @cached_property
    def loaded_snapshot(self) -> LoadedSnapshot:
        """ProducerStateManager.truncateAndReload then loadFromSnapshot: snapshots at or below
        the log start offset or past the log end are dropped; the newest readable one of the
        rest is loaded."""
        return self.snapshot_between(self.log_start_offset, self.log_end_offset)

    @cached_property
    def producer_state(self) -> ProducerStateAtEnd:
        """The producer state at the log end, as UnifiedLog.rebuildProducerState makes it:
        the loaded snapshot, then every batch after it up to the recovery cut (one replay);
        none at all where the broker skips the rebuild (a clean stop, no snapshot)."""
        replay = self._start_replay(self.log_end_offset)
        replay.run(self.segments)
        return self._finish_replay(replay)

    def _start_replay(self, at_most: int | None) -> ProducerReplay:
        """A replay set up as the broker's load sets it up: the newest readable snapshot with
        ``log start < offset <= at_most`` loaded (producers expired at ``now_ms`` left out),
        the state replayed from its offset (from the log start with none)."""
        # the replay's modules where a producer state is asked for (a plain partition's facts
        # need none: no transaction after its snapshot)
        from kdump.producer_replay import ProducerReplay

        loaded = self.snapshot_between(self.log_start_offset, at_most)
        hw = self._checkpointed_high_watermark()
        state_hw = None if hw is None else max(hw, self.log_start_offset)
        start = None if loaded.snapshot is None or loaded.file is None else loaded.file
        replay = ProducerReplay.start(
            loaded.snapshot if start is not None else None,
            self.log_start_offset if start is None else start.offset,
            self.now_ms,
            self.producer_id_expiration_ms,
            state_hw,
        )
        replay.snapshot_path = None if start is None else start.path
        replay.skipped_snapshots((file.path, e) for file, e in loaded.skipped)
        return replay

    def _finish_replay(self, replay: ProducerReplay) -> ProducerStateAtEnd:
        """The state at the log end once every segment was replayed; a replay whose snapshot
        lies past where recovery cuts the log is done again from an older one (the broker
        deletes snapshots past the log end before it loads one)."""
        if replay.state_from > self.log_end_offset and replay.snapshot_path is not None:
            replay = self._start_replay(self.log_end_offset)
            replay.run(self.segments)
        if not self.tiered and self.segments and self.broker_load.producer_state_skipped:
            # a clean stop and no snapshot: the broker takes it for an upgrade, skips the
            # rebuild and starts with no producer state (UnifiedLog.rebuildProducerState)
            hw = self._checkpointed_high_watermark()
            replay.skip_rebuild(None if hw is None else max(hw, 0), self.log_end_offset)
        return replay.at_end(self.high_watermark.value)

    def _checkpointed_high_watermark(self) -> int | None:
        try:
            return self.checkpointed(REPLICATION_OFFSET_CHECKPOINT)
        except KdumpError:
            return None

    def adopt_producer_state(self, state: ProducerStateAtEnd) -> None:
        """A replay done during a command's own walk of the segments (kdump txn, report)."""
        self.__dict__["producer_state"] = state

    @cached_property
    def last_stable(self) -> Fact:
        """UnifiedLog.lastStableOffset: the first unstable offset (raised to the log start) if
        below the high watermark, else the high watermark. Without a transaction open in the
        loaded snapshot and with no transactional batch after it, nothing is unstable and no
        replay is needed."""
        hw = self.high_watermark.value
        if self.left:  # a replay would read what the run left: not asked for
            return Fact(hw, "high watermark: not every segment read (--budget)")
        if "producer_state" not in self.__dict__ and not self._transactions_after_snapshot():
            return Fact(hw, "high watermark: no open transaction")
        first_unstable = self.loaded_producer_state.first_unstable_offset
        if first_unstable is not None:
            first_unstable = max(first_unstable, self.log_start_offset)
            if first_unstable < hw:
                return Fact(first_unstable, "first unstable offset: an open transaction")
        return Fact(hw, "high watermark: no open transaction below it")

    @property
    def last_stable_offset(self) -> int:
        return self.last_stable.value

    @cached_property
    def loaded_producer_state(self) -> ProducerStateAtEnd:
        """The producer state the broker's load leaves at the log end, as it rebuilds it
        (UnifiedLog.rebuildProducerState): the loaded snapshot, then the batches from its offset
        on, read from where the offset index puts it (what lies below is not read again). Its
        ``state`` is ``producer_state``'s; its history (``completed``, ``aborted``, ``met``) is
        of the batches read only: kdump txn's, from the first batch, is ``producer_state``
        (this, where that is known)."""
        if "producer_state" in self.__dict__:
            return self.producer_state
        replay = self._start_replay(self.log_end_offset)
        segments = self.segments[max(self.floor_segment(replay.state_from), 0) :]
        position = segments[0].read_position(replay.state_from) if segments else 0
        replay.run(segments, position)
        return self._finish_replay(replay)

    def _transactions_after_snapshot(self) -> bool:
        loaded = self.loaded_snapshot
        if loaded.snapshot is not None and any(
            e.current_txn_first_offset >= 0 for e in loaded.snapshot.producers
        ):
            return True
        start = self.log_start_offset if loaded.file is None else loaded.file.offset
        for segment in self.segments_after_recovery:
            scan = self.walk(segment).scan
            if scan is None:
                return True  # unread: cannot tell, so replay
            reaches = scan.last_offset is not None and scan.last_offset >= start
            if reaches and scan.transactional_batches:
                return True
        return False

    # -- the partition's other files --------------------------------------------------------

    @cached_property
    def leader_epoch_entries(self) -> list[EpochEntry] | KdumpError | None:
        """The leader-epoch-checkpoint's entries; its error when it does not parse; None when
        there is none."""
        return self._small_text(LEADER_EPOCH_CHECKPOINT)

    @cached_property
    def leader_epoch_cache(self) -> LeaderEpochFileCache | None:
        """The leader epoch cache as LogLoader.load leaves it: the checkpoint's entries
        assigned one by one (empty without a checkpoint: Kafka creates the file empty); then
        each segment the load recovers (``broker_load``) assigns the epochs its batches carry,
        up to its cut, each above the latest (LogSegment.recover); then truncated from the end
        at the log end offset and from the start at the log-start-offset-checkpoint entry (0
        without one, as LogManager passes it). None when the checkpoint does not parse (the
        broker takes the log dir offline)."""
        from kdump.leader_epoch import LeaderEpochFileCache  # replicas' question, not verify's

        entries = self.leader_epoch_entries
        if isinstance(entries, KdumpError):
            return None
        cache = LeaderEpochFileCache(entries or ())
        if not self.tiered:
            recovered = set(self.broker_load.recovered)
            for segment in self.segments:
                scan = self.walk(segment).scan
                if segment.base_offset not in recovered or scan is None:
                    continue
                cut = scan.recovered_last_offset if scan.first_invalid is not None else None
                for epoch, base in scan.epoch_starts:
                    if scan.first_invalid is not None and (cut is None or base > cut):
                        break  # past the batch recovery cuts at
                    latest = cache.latest_epoch()
                    if epoch >= 0 and (latest is None or epoch > latest):
                        cache.assign(epoch, base)
        cache.truncate_from_end(self.log_end_offset)
        try:
            start = self.checkpointed(LOG_START_OFFSET_CHECKPOINT)
        except KdumpError:
            start = None
        cache.truncate_from_start(0 if start is None else start)
        return cache

    @cached_property
    def partition_metadata(self) -> PartitionMetadata | KdumpError | None:
        return self._small_text(PARTITION_METADATA)

    def _small_text(self, name: str) -> Any:
        """The partition's text file ``name``, read by its reader (its entries, its error);
        None where there is none."""
        if self.tiered or not self.storage.exists(name):
            return None
        from kdump.format.textfiles import text_file_reader  # a partition with the file only

        parse = text_file_reader(name)
        assert parse is not None, name
        path = self.storage.location_of(name)
        try:
            return parse(self.storage.read_bytes(name, SMALL_TEXT_FILE), path)
        except KdumpError as e:
            return e

    @property
    def leftover_files(self) -> list[str]:
        """``.deleted``, ``.cleaned`` and ``.swap`` files an interrupted delete, compaction or
        swap left (LogLoader settles each at startup)."""
        return [n for n in self.storage.files() if is_leftover_name(n)]

    @cached_property
    def settings(self) -> Settings:
        """The topic's settings, each with where it came from (kdump.config's layers)."""
        return resolve_settings(self.open_options.layers, self.topic)

    def adopt_metadata(self, image: MetadataConfigs) -> None:
        """The KRaft image that speaks for this partition's topic, found once it was open (its
        node's metadata partition): its settings are read from it from now on."""
        layers = self.open_options.layers._replace(metadata=image)
        self.open_options = self.open_options._replace(layers=layers)
        self.__dict__.pop("settings", None)

    @cached_property
    def settlement(self) -> Settlement:
        """What LogLoader does to ``leftover_files`` at the broker's next start."""
        return settle(self.storage)

    @property
    def kdump_leftovers(self) -> list[str]:
        """Temporary files a kdump run stopped by force left (``.NAME.kdump-tmp-PID``)."""
        return [n for n in self.storage.files() if is_kdump_leftover(n)]

    @property
    def kept_files(self) -> list[str]:
        """Every file a kdump repair kept here (replaced, deleted or cut off), by name."""
        return sorted(n for n in self.storage.files() if kept_file_of(n) is not None)

    @property
    def kept_logs(self) -> list[KeptLog]:
        """The log bytes ``kdump recover`` kept here (cut off a log, or a whole segment it
        deleted after a cut), in offset order: what ``kdump salvage`` reads back."""
        return kept_logs_among(self.storage.files())

    @cached_property
    def kept_losses(self) -> dict[str, CutLoss]:
        """What each of ``kept_logs`` holds (by name), and what of it is whole and valid."""
        kept_logs = self.kept_logs
        if not kept_logs:
            return {}
        # what a cut removes is counted only where a recover kept some (its module likewise)
        from kdump.loss import cut_loss

        out = {}
        for kept in kept_logs:
            log = self.storage.open_log(kept.name)
            try:
                out[kept.name] = cut_loss(log.buf, 0, log.path)
            finally:
                log.close()
        return out

    def dump_files(self) -> list[StoredFile]:
        """The files ``kdump dump`` dumps of this partition, in name order: its segment files,
        snapshots and KRaft snapshots (in tiered storage: each segment's, an Aiven segment's
        index files out of its ``.indexes`` object)."""
        names = {n for n in self.storage.files() if n.endswith(DUMPED_SUFFIXES)}
        if self.tiered:
            for segment in self.segments:
                names.update(n for n in segment.files.values() if n.endswith(DUMPED_SUFFIXES))
        location = self.storage.location_of
        return [
            StoredFile(self.storage, n, location(n))
            for n in sorted(names)
            if self.storage.exists(n)
        ]

    # -- the facts every command reports ----------------------------------------------------

    def facts(self) -> PartitionFacts:
        """The ``partition`` object of every JSON output: the same keys, the same numbers,
        wherever a partition is reported (null where a run was cut short: ``cut_short``)."""
        if self.cut_short:
            return {
                "path": self.location,
                "topic": self.topic,
                "partition": self.partition,
                "log_start_offset": None,
                "log_end_offset": None,
                "log_end_offset_on_disk": None,
                "high_watermark": None,
                "last_stable_offset": None,
                "recovery_point": None,
                "segments": None,
                "active_segment": None,
                "bytes": None,
                "damaged_from": None,
                "load": None,
            }
        damaged = self.damaged_from
        if self.tiered:
            active = self.active_segment
            segments, active_base, size = len(self.segments), None, self.size
            active_base = None if active is None else active.base_offset
        elif not self.segments:  # the broker would make one, empty: none is there yet
            segments, active_base, size = 0, None, 0
        else:
            kept = self.broker_load.segments
            segments, active_base = len(kept), kept[-1][0]
            size = self.broker_load.bytes
        return {
            "path": self.location,
            "topic": self.topic,
            "partition": self.partition,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "log_end_offset_on_disk": self.log_end_offset_on_disk,
            "high_watermark": self.high_watermark.value,
            "last_stable_offset": self.last_stable_offset,
            "recovery_point": self.recovery_point,
            "segments": segments,
            "active_segment": active_base,
            "bytes": size,
            "damaged_from": None if damaged is None else damaged.to_dict(),
            "load": None if self.tiered else self.load_forecast(),
        }

    def load_forecast(self) -> LoadForecast:
        """``broker_load`` as JSON: what the broker's next start does to this partition."""
        found = self.broker_load
        return {
            "clean_shutdown": found.clean_shutdown,
            "recovery_point": found.recovery_point,
            "recovered_segments": list(found.recovered),
            "cut_segment": found.cut,
            "deleted_segments": list(found.deleted),
            "snapshots_deleted": list(found.snapshots_deleted),
            "snapshots_written": list(found.snapshots_written),
            "snapshots_left": list(found.snapshots_left),
            "producer_state_skipped": found.producer_state_skipped,
            "fails": found.failure,
        }

    def close(self) -> None:
        """Give back what reading the partition holds (each segment's maps and their file
        descriptors); a later read opens its files again."""
        for segment in self.all_segments:
            segment.close()

    def __enter__(self) -> UnifiedLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def local_segments(directory: str | os.PathLike[str]) -> list[LogSegment]:
    """Every segment of a partition directory on disk that has any segment file, by base
    offset (the last one with a ``.log`` marked active, as the opened partition marks it)."""
    return list(UnifiedLog(LocalStorage(directory)).all_segments)


__all__ = [
    "DamagedFrom",
    "Fact",
    "LoadedSnapshot",
    "SnapshotFile",
    "UnifiedLog",
    "local_segments",
]
