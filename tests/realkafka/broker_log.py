"""What a broker (or ``load_logs``) said it did while loading its logs, read from its log lines:
the lines LogManager, LogLoader, UnifiedLog and ProducerStateManager write at INFO and above
(their wording is the same in Kafka 4.0 and 4.4). Only the lines up to LogManager's
``Loaded N logs in X ms`` count: later ones are the running broker's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PREFIX = re.compile(r"\[(?:LogLoader|ProducerStateManager|UnifiedLog) partition=(\S+?)[,\]]")
_RECOVERING = re.compile(r"Recovering unflushed segment (\d+)\.")
_INDEX = re.compile(
    r"(?:Could not find offset index file corresponding to log file|Found a corrupted index "
    r"file corresponding to log file) (\S+?)(?:,| due to)"
)
_CORRUPTION = re.compile(r"Corruption found in segment (\d+), truncating to offset (\d+)")
_DELETING = re.compile(r"Deleting segments as part of log recovery: (.*)")
_SEGMENT = re.compile(r"LogSegment\(baseOffset=(\d+)")
_SNAPSHOT = re.compile(
    r"Wrote producer snapshot at offset (\d+) with (\d+) producer ids(?: in (\d+) ms)?"
)
_PRODUCER_STATE = re.compile(
    r"Producer state recovery took (\d+)ms for snapshot load and (\d+)ms for segment recovery "
    r"from offset (\d+)"
)
_REBUILD = re.compile(r"Loading producer state till offset (\d+)")
_RELOAD = re.compile(r"Reloading from producer snapshot and rebuilding producer state from offset")
_SNAPSHOT_LOADED = re.compile(
    r"Loading producer state from snapshot file 'SnapshotFile\(offset=(\d+)"
)
_SNAPSHOT_FAILED = re.compile(r"Failed to load producer snapshot from '.*?(\d{20})\.snapshot'")
_ORPHAN = re.compile(r"Found an orphaned index file (\S+), with no corresponding log file")
_SWAP = re.compile(r"Recovering file (\S+) by renaming from")
_COMPACTED = re.compile(r"Deleting segment files (\S+) that is compacted but has not been deleted")
_COMPLETED = re.compile(
    r"Completed load of Log\(dir=(\S+), .*?topic=(\S+), partition=(\d+), highWatermark=(-?\d+), "
    r"lastStableOffset=(-?\d+), logStartOffset=(-?\d+), logEndOffset=(-?\d+)\) with (\d+) "
    r"segments.* in (\d+) ?ms"
)
_LOADED = re.compile(r"Loaded (\d+) logs in (\d+) ?ms(?: \(unclean log dirs = \[(.*?)\]\))?")
_DIR_CLEAN = re.compile(r"Skipping recovery of (\d+) logs from (\S+) since clean shutdown file")
_DIR_UNCLEAN = re.compile(r"Recovering (\d+) logs from (\S+) since no clean shutdown file")


@dataclass
class Replay:
    """One producer state rebuild (UnifiedLog.rebuildProducerState) as the broker timed it:
    "Producer state recovery took X ms for snapshot load and Y ms for segment recovery from
    offset Z" (Z is the offset the state was rebuilt up to)."""

    snapshot_ms: int
    replay_ms: int
    to_offset: int


@dataclass
class LogLoad:
    """One partition's load, as the broker logged it."""

    partition: str
    """``topic-partition``, as the broker names it."""
    recovered_segments: list[int] = field(default_factory=list)
    """Base offsets of the segments LogLoader.recoverLog recovered (after an unclean stop)."""
    index_rebuilt: list[str] = field(default_factory=list)
    """``.log`` files recovered at load because an index was missing or corrupt."""
    truncated: list[tuple[int, int]] = field(default_factory=list)
    """(segment, offset): a segment recovery found corrupt and cut at that offset."""
    deleted_segments: list[int] = field(default_factory=list)
    """Segments deleted after a cut ("Deleting segments as part of log recovery")."""
    snapshots_written: list[int] = field(default_factory=list)
    """Offsets of the producer snapshots written while loading."""
    snapshot_write_ms: list[int] = field(default_factory=list)
    """How long each of those writes took (its flush to disk included), as the broker timed
    it."""
    producer_state_from: list[int] = field(default_factory=list)
    """Offsets producer state was rebuilt to (each "Producer state recovery took ...")."""
    producer_state_ms: int = 0
    """Time spent on producer state (snapshot load plus segment replay), summed."""
    rebuilds: list[tuple[int, bool]] = field(default_factory=list)
    """Each producer state rebuild (UnifiedLog.rebuildProducerState): the offset it rebuilds
    up to, and whether it reads the snapshots and the log (False: a clean shutdown with no
    snapshot, where it skips both and writes empty snapshots)."""
    replays: list[Replay] = field(default_factory=list)
    """Each producer state rebuild, in order (recoverSegment's, then the load's own)."""
    snapshots_loaded: list[int] = field(default_factory=list)
    """Offsets of the producer snapshots loaded ("Loading producer state from snapshot file")."""
    snapshots_failed: list[int] = field(default_factory=list)
    """Offsets of the snapshots that failed to load (skipped and deleted)."""
    orphan_indexes: list[str] = field(default_factory=list)
    """Index files with no ``.log``, deleted ("Found an orphaned index file")."""
    swapped: list[str] = field(default_factory=list)
    """``.swap`` files renamed into place ("Recovering file X by renaming")."""
    compacted_deleted: list[str] = field(default_factory=list)
    """Files of segments a completed swap replaces, deleted."""
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    segments: int | None = None
    load_ms: int | None = None
    dir: str | None = None


@dataclass
class LoadReport:
    """Every log load in a run of lines, and LogManager's total."""

    logs: dict[str, LogLoad] = field(default_factory=dict)
    loaded: int | None = None
    """N of "Loaded N logs in X ms" (None: not logged yet)."""
    load_ms: int | None = None
    unclean_log_dirs: list[str] = field(default_factory=list)
    log_dirs: dict[str, tuple[int, bool]] = field(default_factory=dict)
    """Per log dir: (logs to load, whether its clean shutdown marker was found), as LogManager
    announces each ("Skipping recovery of N logs ..." / "Recovering N logs ...")."""

    def log(self, partition: str) -> LogLoad:
        return self.logs.setdefault(partition, LogLoad(partition))

    @classmethod
    def parse(cls, lines: list[str]) -> LoadReport:
        report = cls()
        for line in lines:
            m = _LOADED.search(line)
            if m:
                report.loaded, report.load_ms = int(m[1]), int(m[2])
                report.unclean_log_dirs = [d.strip() for d in (m[3] or "").split(",") if d]
                break
            m = _DIR_CLEAN.search(line) or _DIR_UNCLEAN.search(line)
            if m:
                report.log_dirs[m[2]] = (int(m[1]), m.re is _DIR_CLEAN)
                continue
            m = _COMPLETED.search(line)
            if m:
                load = report.log(f"{m[2]}-{m[3]}")
                load.dir = m[1]
                load.high_watermark, load.last_stable_offset = int(m[4]), int(m[5])
                load.log_start_offset, load.log_end_offset = int(m[6]), int(m[7])
                load.segments, load.load_ms = int(m[8]), int(m[9])
                continue
            prefix = _PREFIX.search(line)
            if prefix is None:
                continue
            load = report.log(prefix[1])
            if m := _RECOVERING.search(line):
                load.recovered_segments.append(int(m[1]))
            elif m := _INDEX.search(line):
                load.index_rebuilt.append(m[1])
            elif m := _CORRUPTION.search(line):
                load.truncated.append((int(m[1]), int(m[2])))
            elif m := _DELETING.search(line):
                load.deleted_segments += [int(b) for b in _SEGMENT.findall(m[1])]
            elif m := _SNAPSHOT.search(line):
                load.snapshots_written.append(int(m[1]))
                if m[3] is not None:
                    load.snapshot_write_ms.append(int(m[3]))
            elif m := _REBUILD.search(line):
                load.rebuilds.append((int(m[1]), False))
            elif _RELOAD.search(line) and load.rebuilds:
                load.rebuilds[-1] = (load.rebuilds[-1][0], True)
            elif m := _PRODUCER_STATE.search(line):
                load.producer_state_ms += int(m[1]) + int(m[2])
                load.producer_state_from.append(int(m[3]))
                load.replays.append(Replay(int(m[1]), int(m[2]), int(m[3])))
            elif m := _SNAPSHOT_LOADED.search(line):
                load.snapshots_loaded.append(int(m[1]))
            elif m := _SNAPSHOT_FAILED.search(line):
                load.snapshots_failed.append(int(m[1]))
            elif m := _ORPHAN.search(line):
                load.orphan_indexes.append(m[1])
            elif m := _SWAP.search(line):
                load.swapped.append(m[1])
            elif m := _COMPACTED.search(line):
                load.compacted_deleted.append(m[1])
        return report
