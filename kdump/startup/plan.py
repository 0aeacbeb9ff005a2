"""What a broker does to each of its log dirs when it starts, read from the opened partitions.

LogManager.loadLogs, per log dir: the clean-shutdown marker decides whether logs recover
(``.kafka_cleanshutdown``, deleted as soon as it is read); every partition directory but the
metadata log's is one job of the log dir's recovery pool; each job is LogLoader.load, whose
decisions (the leftover files settled, the segments recovered at open for their indexes, the
segments recovered from the recovery point after an unclean stop, the cut and the segments
deleted after it, the producer snapshots deleted, loaded and written, the producer state
replayed) are the opened partition's ``broker_load``: one home for LogLoader's rules, which
verify, ``recover --as-broker`` and this command all read. Here they are gathered per log dir,
with the bytes and batches each step reads (from the partition's own walks) and the time that
takes (kdump.startup.estimate).

The KRaft metadata log (``__cluster_metadata-0``) is not LogManager's: the raft layer loads it
first, on its own, with no recovery point and as after an unclean stop, on every start
(KafkaRaftLog.createLog); LogManager's "Loaded N logs" does not count it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from kdump.checks.codes import Code
from kdump.discovery import discover, natural_key
from kdump.errors import InputError, KdumpError
from kdump.format.names import (
    INDEX_SUFFIX,
    MARKED_DIR_SUFFIXES,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    parse_partition_dir,
)
from kdump.log_dir import LogDir
from kdump.log_loader import Settlement
from kdump.progress import NO_PROGRESS, Progress
from kdump.startup.estimate import (
    CALIBRATION,
    NOTHING,
    Calibration,
    Estimate,
    Work,
    log_dir_seconds,
)
from kdump.unified_log import OpenOptions, UnifiedLog

if TYPE_CHECKING:
    from kdump.unified_log import PartitionFacts

REMOTE_INDEX_CACHE = "remote-log-index-cache"
"""Tiered storage's index cache in a log dir (RemoteIndexCache.DIR_NAME): LogManager skips it."""
STRAY_CODES = frozenset(
    (Code.KRAFT_PARTITION_NOT_IN_IMAGE, Code.KRAFT_TOPIC_ID_MISMATCH, Code.KRAFT_TOPIC_ID_MISSING)
)
"""verify's findings on a partition the broker takes for a stray once it has the image."""


@dataclass(frozen=True)
class StartupOptions:
    """How the broker will run: its recovery threads per log dir, and where that came from."""

    recovery_threads: int = 2
    recovery_threads_source: str = "Kafka's default"
    calibration: Calibration = CALIBRATION


@dataclass(frozen=True)
class SegmentRecovery:
    """One LogSegment.recover run: the segment, why, and what it reads."""

    base_offset: int
    why: str
    """``unflushed`` (recoverLog, from the recovery point), or why LogLoader recovers it as it
    opens it (its indexes)."""
    bytes: int
    batches: int
    again: bool = False
    """Recovered a second time: recoverLog reaches a segment already recovered at open."""


@dataclass(frozen=True)
class ProducerReplay:
    """One UnifiedLog.rebuildProducerState that reads the log: from the snapshot it loads
    (None: none usable, so from the log start offset) up to ``to_offset``."""

    snapshot: int | None
    from_offset: int
    to_offset: int
    bytes: int
    batches: int


@dataclass(frozen=True)
class Truncation:
    """A recovery that cuts a segment: where its log then ends and what it removes."""

    segment: int
    offset: int
    bytes: int


@dataclass
class PartitionStartup:
    """One partition's load at the broker's next start."""

    log: UnifiedLog
    raft: bool
    """The KRaft metadata log: loaded by the raft layer, before LogManager's logs."""
    clean_shutdown: bool
    """As this partition is loaded (the metadata log never is)."""
    recovery_point: int
    recoveries: list[SegmentRecovery] = field(default_factory=list)
    indexes_rebuilt: list[int] = field(default_factory=list)
    """Segments recovered at open because of their indexes (no .index, a .txnindex below the
    base): their indexes are rebuilt whether or not the shutdown was clean."""
    time_indexes_emptied: list[int] = field(default_factory=list)
    """Segments without a .timeindex that no recovery rebuilds: the broker creates it empty."""
    replays: list[ProducerReplay] = field(default_factory=list)
    producer_state_dropped: bool = False
    """A clean start and no producer snapshot: the broker skips the rebuild and starts the
    partition with no producer state (empty snapshots written), whatever the log holds."""
    truncations: list[Truncation] = field(default_factory=list)
    segments_deleted: list[int] = field(default_factory=list)
    """Segments deleted after a cut (recoverLog: "delete all remaining log")."""
    bytes_deleted: int = 0
    settlement: Settlement = field(default_factory=Settlement)
    orphan_indexes: list[str] = field(default_factory=list)
    snapshots_deleted: list[int] = field(default_factory=list)
    snapshots_written: list[int] = field(default_factory=list)
    directory: str | None = None
    """``delete``, ``future`` or ``stray``: how the directory's name marks it."""
    stray: str | None = None
    """Why the broker moves the directory aside (renamed ``-stray``) once it has the image."""
    failure: str | None = None
    """Why the load throws: the broker stops starting."""
    work: Work = field(default_factory=Work)
    seconds: Estimate = NOTHING
    facts: PartitionFacts | dict[str, NoReturn] = field(default_factory=dict)
    """The partition object (UnifiedLog.facts), taken while the partition is open (empty: a
    plan made as if the indexes were whole, not reported)."""
    seconds_with_indexes_whole: Estimate | None = None
    """The load's time had the segments of ``indexes_rebuilt`` whole indexes (what rebuilding
    them offline first leaves the broker to do)."""

    @property
    def recovers(self) -> bool:
        return bool(self.recoveries)

    @property
    def segments_to_recover(self) -> list[int]:
        return sorted({r.base_offset for r in self.recoveries})

    @property
    def bytes_to_recover(self) -> int:
        return sum(r.bytes for r in self.recoveries)

    @property
    def producer_state_from(self) -> int | None:
        """Where the first producer state replay that reads the log starts (the offset of the
        snapshot it loads, or the log start offset); None: no replay reads the log."""
        return self.replays[0].from_offset if self.replays else None

    @property
    def truncates_to(self) -> int | None:
        return min((t.offset for t in self.truncations), default=None)

    @property
    def bytes_truncated(self) -> int:
        return sum(t.bytes for t in self.truncations) + self.bytes_deleted

    @property
    def only_unflushed(self) -> bool:
        """All the broker does is re-read the unflushed segments (after an unclean stop, most
        partitions: their active segment), cutting nothing."""
        return (
            bool(self.recoveries)
            and all(r.why == "unflushed" for r in self.recoveries)
            and not (self.truncations or self.segments_deleted or self.replays)
            and not self._other_work
        )

    @property
    def _other_work(self) -> bool:
        return bool(
            self.settlement
            or self.orphan_indexes
            or self.producer_state_dropped
            or self.time_indexes_emptied
            or self.stray
            or self.failure
            or self.directory == "delete"
        )

    @property
    def has_work(self) -> bool:
        """Anything the broker does beyond opening the partition."""
        return bool(self.recoveries or self.replays) or self._other_work


@dataclass
class LogDirStartup:
    """One log dir: LogManager's part (its pool) and, where it holds it, the metadata log."""

    log_dir: LogDir
    clean_shutdown: bool
    recovery_threads: int
    partitions: list[PartitionStartup]
    """LogManager's logs, in the order it submits them (the directory's listing order)."""
    metadata: PartitionStartup | None = None
    not_partitions: list[str] = field(default_factory=list)
    """Directories in it whose names are no partition's: LogManager.loadLogs throws on the
    first ("Found directory ..., 'lost+found' is not in the form of topic-partition ...") and
    the broker does not start."""
    seconds: Estimate = NOTHING
    """LogManager's load of this log dir ("Loaded N logs" for it alone), the metadata log not
    counted."""

    @property
    def path(self) -> str:
        return self.log_dir.location

    @property
    def bytes_to_recover(self) -> int:
        return sum(p.bytes_to_recover for p in self.partitions)

    @property
    def recovering(self) -> list[PartitionStartup]:
        return [p for p in self.partitions if p.recovers]

    def seconds_with(self, threads: int, calibration: Calibration) -> Estimate:
        """The load with ``threads`` recovery threads."""
        return log_dir_seconds([p.work for p in self.partitions], threads, calibration)


@dataclass
class StartupResult:
    log_dirs: list[LogDirStartup]
    options: StartupOptions
    errors: list[KdumpError] = field(default_factory=list)

    @property
    def metadata(self) -> PartitionStartup | None:
        return next((d.metadata for d in self.log_dirs if d.metadata is not None), None)

    @property
    def seconds(self) -> Estimate:
        """The broker's whole load: the metadata log first, then the log dirs side by side
        (the slowest decides)."""
        return self.seconds_with(None)

    def seconds_with(self, threads: int | None) -> Estimate:
        """The whole load with ``threads`` recovery threads per log dir (None: as planned)."""
        calibration = self.options.calibration
        dirs = [
            d.seconds if threads is None else d.seconds_with(threads, calibration)
            for d in self.log_dirs
        ]
        slowest = Estimate(*(max((e[i] for e in dirs), default=0.0) for i in range(3)))
        raft = self.metadata.seconds if self.metadata is not None else NOTHING
        return raft.plus(slowest)

    @property
    def slowest(self) -> LogDirStartup | None:
        return max(self.log_dirs, key=lambda d: d.seconds.high, default=None)


# -- building it -------------------------------------------------------------------------------


def plan_startup(
    paths: Sequence[str],
    options: StartupOptions | None = None,
    progress: Progress = NO_PROGRESS,
) -> StartupResult:
    """The broker's start on the log dirs under ``paths`` (each log dir whole: its partitions
    load together, in one pool)."""
    options = options or StartupOptions()
    found = discover(paths, urls=False, options=OpenOptions())
    errors: list[KdumpError] = list(found.errors)
    logs = found.partitions
    for log in logs:
        if log.log_dir is None:
            errors.append(InputError(log.location, "not inside a log dir: give the log dir"))
    by_dir: dict[int, list[UnifiedLog]] = {id(d): [] for d in found.log_dirs}
    dirs: dict[int, LogDir] = {id(d): d for d in found.log_dirs}
    for log in logs:
        if log.log_dir is not None:
            by_dir.setdefault(id(log.log_dir), []).append(log)
            dirs[id(log.log_dir)] = log.log_dir
    progress.total(len(logs))
    strays = _strays(list(dirs.values()), logs)
    out = []
    for key in sorted(dirs, key=lambda k: natural_key(dirs[k].location)):
        log_dir = dirs[key]
        out.append(_log_dir(log_dir, by_dir[key], options, strays, progress))
    return StartupResult(out, options, errors)


def _log_dir(
    log_dir: LogDir,
    logs: list[UnifiedLog],
    options: StartupOptions,
    strays: dict[str, str],
    progress: Progress,
) -> LogDirStartup:
    clean = log_dir.had_clean_shutdown
    metadata = None
    partitions = []
    for log in _listing_order(log_dir, logs):
        planned = plan_partition(log, strays.get(log.location), options.calibration)
        progress.advance(1, log.location)
        log.close()
        if planned.raft:
            metadata = planned
        else:
            partitions.append(planned)
    threads = options.recovery_threads
    d = LogDirStartup(log_dir, clean, threads, partitions, metadata, _not_partitions(log_dir))
    d.seconds = d.seconds_with(threads, options.calibration)
    return d


def _not_partitions(log_dir: LogDir) -> list[str]:
    """The folders of ``log_dir`` LogManager cannot parse as a partition directory
    (LocalLog.parseTopicPartitionName), but tiered storage's index cache, which it skips."""
    try:
        names = log_dir.storage.folders()
    except InputError:
        return []
    return [n for n in names if n != REMOTE_INDEX_CACHE and parse_partition_dir(n) is None]


def _listing_order(log_dir: LogDir, logs: list[UnifiedLog]) -> list[UnifiedLog]:
    """LogManager submits a log dir's partitions in ``File.listFiles`` order, the directory's
    own (readdir), which ``os.listdir`` gives too; by name where it cannot be listed."""
    local = log_dir.storage.local_path
    by_name = {log.storage.name: log for log in logs}
    try:
        names = os.listdir(local) if local is not None else []
    except OSError:
        names = []
    ordered = [by_name.pop(n) for n in names if n in by_name]
    return ordered + sorted(by_name.values(), key=lambda log: natural_key(log.storage.name))


def _strays(log_dirs: list[LogDir], logs: list[UnifiedLog]) -> dict[str, str]:
    """Partitions the broker moves aside once it has loaded the metadata image, by location,
    with verify's word on why (kdump.kraft.checks)."""
    from kdump.kraft.checks import check_log_dir

    out: dict[str, str] = {}
    for log_dir in log_dirs:
        for f in check_log_dir(log_dir, logs):
            if f.code in STRAY_CODES:
                location = _partition_of(f.path, logs)
                if location is not None:
                    out.setdefault(location, f.message)
    return out


def _partition_of(path: str, logs: list[UnifiedLog]) -> str | None:
    for log in logs:
        if path == log.location or path.startswith(log.location + os.sep):
            return log.location
    return None


def plan_partition(
    log: UnifiedLog,
    stray: str | None = None,
    calibration: Calibration = CALIBRATION,
    indexes_whole: frozenset[int] = frozenset(),
) -> PartitionStartup:
    """One partition's load, from its ``broker_load`` and its segments' walks (as if the
    segments ``indexes_whole`` had whole indexes, for advice)."""
    load = log.broker_load_with(indexes_whole) if indexes_whole else log.broker_load
    by_base = {s.base_offset: s for s in log.segments}
    state = _directory_state(log)
    p = PartitionStartup(
        log,
        raft=log.is_metadata_log,
        clean_shutdown=load.clean_shutdown,
        recovery_point=load.recovery_point,
        settlement=log.settlement,
        orphan_indexes=[name for s in log.orphan_segments for name in sorted(s.files.values())],
        directory=state,
        stray=stray if state is None else None,
        failure=load.failure,
    )
    at_open = set(load.at_open)
    for base in load.at_open:
        segment = by_base[base]
        p.recoveries.append(_recovery(log, segment, _why_at_open(segment)))
    p.indexes_rebuilt = sorted(at_open)
    for base in load.unflushed:
        p.recoveries.append(_recovery(log, by_base[base], "unflushed", again=base in at_open))
    recovered = {r.base_offset for r in p.recoveries}
    # LogSegment.sanityCheck resizes a .timeindex it had to create to nothing; an empty
    # segment has nothing to index anyway
    p.time_indexes_emptied = [
        s.base_offset
        for s in log.segments
        if not s.has(TIME_INDEX_SUFFIX) and s.base_offset not in recovered and s.log_size
    ]
    kept = dict(load.segments)
    for base in sorted(recovered):
        segment = by_base[base]
        if base in kept and kept[base] < segment.log_size:
            scan = log.walk(segment).scan
            last = None if scan is None else scan.recovered_last_offset
            offset = base if last is None else last + 1
            p.truncations.append(Truncation(base, offset, segment.log_size - kept[base]))
    p.segments_deleted = list(load.deleted)
    p.bytes_deleted = sum(by_base[b].log_size for b in load.deleted)
    p.snapshots_deleted = list(load.snapshots_deleted)
    p.snapshots_written = list(load.snapshots_written)
    # the broker skips any partition's rebuild then; only one with records loses anything
    p.producer_state_dropped = load.producer_state_skipped and (
        log.log_end_offset > log.log_start_offset
    )
    p.replays = [_replay(log, r) for r in load.replays]
    p.work = Work(
        recover_bytes=p.bytes_to_recover,
        recover_batches=sum(r.batches for r in p.recoveries),
        replay_bytes=sum(r.bytes for r in p.replays),
        replay_batches=sum(r.batches for r in p.replays),
        snapshots_written=len(p.snapshots_written),
        segments_recovered=len(p.recoveries),
    )
    p.seconds = calibration.seconds(p.work)
    if not indexes_whole:
        p.facts = log.facts()
        if p.indexes_rebuilt:
            whole = frozenset(p.indexes_rebuilt)
            p.seconds_with_indexes_whole = plan_partition(log, stray, calibration, whole).seconds
    return p


def _directory_state(log: UnifiedLog) -> str | None:
    """``delete``, ``future`` or ``stray``: what the directory's name marks it as."""
    name = log.storage.name
    for suffix in MARKED_DIR_SUFFIXES:
        if name.endswith(suffix):
            return suffix.removeprefix("-")
    return None


def _why_at_open(segment: Any) -> str:
    if not segment.has(INDEX_SUFFIX):
        return "no offset index"
    return "its .txnindex fails the sanity check (an entry below the segment's base offset)"


def _recovery(log: UnifiedLog, segment: Any, why: str, again: bool = False) -> SegmentRecovery:
    """What LogSegment.recover reads of ``segment``: every batch up to the first it refuses
    (after a recovery at open cut it, the second reads what is left)."""
    scan = log.walk(segment).scan
    if scan is None:
        return SegmentRecovery(segment.base_offset, why, segment.log_size, 0, again)
    size = scan.valid_bytes if again and scan.first_invalid is not None else segment.log_size
    return SegmentRecovery(segment.base_offset, why, size, scan.batches, again)


def _replay(log: UnifiedLog, replay: Any) -> ProducerReplay:
    """What a producer state rebuild reads: the batches from its start offset up to its end,
    segment by segment (LogSegments.values(mapEndOffset, lastOffset)); the first segment from
    the position its offset index gives for the start offset."""
    start, end = replay.from_offset, replay.to_offset
    total_bytes = total_batches = 0
    first = log.floor_segment(start)
    for i, segment in enumerate(log.segments):
        if i < max(first, 0) or segment.base_offset >= end:
            continue
        scan = log.walk(segment).scan
        size = segment.log_size if scan is None else scan.valid_bytes
        batches = 0 if scan is None else scan.batches
        read = size
        if i == first and start > segment.base_offset:
            position = min(segment.start_for(start).position, size)
            read = size - position
            batches = batches * read // size if size else 0
        total_bytes += read
        total_batches += batches
    return ProducerReplay(replay.snapshot, start, end, total_bytes, total_batches)


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


__all__ = [
    "LogDirStartup",
    "PartitionStartup",
    "ProducerReplay",
    "SegmentRecovery",
    "StartupOptions",
    "StartupResult",
    "Truncation",
    "plan_partition",
    "plan_startup",
]
