"""The names of Kafka's files and directories, and of the files kdump itself leaves beside them:
each defined once, here (Kafka's LogFileUtils, UnifiedLog, LogManager and CheckpointFile).

Pure: names in, numbers and parts out; nothing here touches a file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kdump.tuples import NamedTuple

# -- a partition directory's files (LogFileUtils) ----------------------------------------------

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
"""A producer state snapshot, named by the offset whose state it holds."""
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
CHECKPOINT_SUFFIX = ".checkpoint"
"""A KRaft snapshot (``<20-digit end offset>-<10-digit epoch>.checkpoint``)."""
DELETED_SUFFIX = ".deleted"
"""A segment file retention or a replaced segment left to the async delete."""
CLEANED_SUFFIX = ".cleaned"
"""The cleaner's output before it is swapped in."""
SWAP_SUFFIX = ".swap"
"""A cleaned (or split) segment being swapped in for the segments it replaces."""
LEFTOVER_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
"""What an interrupted delete, compaction or swap leaves; LogLoader settles each at startup."""
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_SUFFIX = f".{LEADER_EPOCH_CHECKPOINT}"
"""A tiered segment's own leader-epoch checkpoint (every epoch from the log start to its end),
as Kafka's RemoteLogSegmentFileset names it beside the segment's other files."""

PINTEREST_WATERMARK = "offset.wm"
"""Pinterest's tiered storage marks a partition's prefix with this file: the base offset of the
last segment it uploaded (WatermarkFileHandler)."""

DUMPED_SUFFIXES = (*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX, CHECKPOINT_SUFFIX)
"""The files of a partition directory ``kdump dump DIR`` dumps (KRaft snapshots included)."""

# -- a log dir's files (LogManager, ReplicaManager) --------------------------------------------

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
"""The log dir's high watermarks (ReplicaManager writes it; Partition.createLog reads it)."""
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINTS = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)
METADATA_TOPIC = "__cluster_metadata"
"""The KRaft metadata log's topic (its one partition's directory: ``__cluster_metadata-0``)."""
QUORUM_STATE = "quorum-state"
"""A KRaft metadata log's election state (FileQuorumStateStore): leader, epoch, vote, voters."""
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
"""A KRaft log dir's bootstrap records, in a snapshot's format (BootstrapDirectory)."""
KRAFT_SNAPSHOT_PARTIAL_SUFFIX = CHECKPOINT_SUFFIX + ".part"
"""A KRaft snapshot being written (Snapshots.createTempFile); deleted at startup."""
KRAFT_SNAPSHOT_DELETED_SUFFIX = CHECKPOINT_SUFFIX + ".deleted"
"""A KRaft snapshot marked for deletion (Snapshots.markForDelete); deleted at startup."""
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
"""The log dir's clean shutdown marker (CleanShutdownFileHandler)."""
LOCK_FILE = ".lock"
"""What a running broker holds locked (LogManager.lockLogDirs)."""
META_PROPERTIES = "meta.properties"
TEXT_FILES = frozenset(
    (*OFFSET_CHECKPOINTS, LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, META_PROPERTIES)
)
"""Kafka's small text files, each with its reader (kdump.format.textfiles.text_file_reader)."""

# -- what kdump leaves beside Kafka's files ----------------------------------------------------

BACKUP_SUFFIX = ".kdump-bak"
"""A file a repair replaced, kept: ``NAME.kdump-bak``."""
CUT_SUFFIX = ".kdump-cut-"
"""The bytes ``kdump recover`` cut off a log: ``NAME.log.kdump-cut-POSITION``."""
TEMP_MARK = ".kdump-tmp-"
"""A file kdump is writing: ``.NAME.kdump-tmp-PID`` (hidden, and no segment suffix, so neither
Kafka nor kdump takes it for a segment file)."""
_LEFTOVER = re.compile(rf"^\.(?P<name>.+){re.escape(TEMP_MARK)}(?P<pid>\d+)(?:-[0-9a-f]+)?$")
"""``.NAME.kdump-tmp-PID-RANDOM`` (and ``.NAME.kdump-tmp-PID``, what earlier kdumps wrote)."""
_KEPT_LOG = re.compile(r"^(\d{20})\.log(?:\.kdump-cut-(\d+)|\.kdump-bak)(?:\.\d+)?$")
"""A log's bytes ``kdump recover`` kept: ``NAME.log.kdump-cut-POSITION`` (the bytes it cut off at
POSITION) or ``NAME.log.kdump-bak`` (a whole segment it deleted after a cut: a .log is never
replaced, so its backup is always a deletion's); ``.1``, ``.2``... when the name was taken."""


_KEPT_FILE = re.compile(r"^(.+?)(?:\.kdump-bak|\.kdump-cut-\d+)(?:\.\d+)?$")
"""Any file a kdump repair kept: ``NAME.kdump-bak`` (what it replaced or deleted) or
``NAME.kdump-cut-POSITION`` (what it cut off), ``.1``, ``.2``... when the name was taken."""


def kept_file_of(name: str) -> str | None:
    """The name of the file a kdump repair kept as ``name`` (None: no kept file)."""
    m = _KEPT_FILE.match(name)
    return None if m is None else m[1]


def is_kdump_leftover(name: str) -> bool:
    """A temporary file kdump writes and renames or removes before it exits: one that is
    still there was left by a run that was killed (SIGKILL, a power loss)."""
    return _LEFTOVER.match(name) is not None


def leftover_pid(name: str) -> int | None:
    """The process that wrote a leftover temporary file."""
    m = _LEFTOVER.match(name)
    return int(m["pid"]) if m else None


class KeptLog(NamedTuple):
    """A log's bytes ``kdump recover`` kept: from ``cut_at`` of the segment at ``base_offset``
    to its end (cut bytes), or all of it (``cut_at`` 0, a deleted segment)."""

    name: str
    base_offset: int
    cut_at: int


def kept_what(kept: KeptLog) -> str:
    """What a log file ``kdump recover`` kept is, in words."""
    segment = segment_file_name(kept.base_offset, LOG_SUFFIX)
    if kept.cut_at:
        return f"the bytes kdump recover cut from {segment} at position {kept.cut_at}"
    return f"segment {segment}, which kdump recover deleted after a cut before it"


def parse_kept_log(name: str) -> KeptLog | None:
    m = _KEPT_LOG.match(name)
    if m is None:
        return None
    return KeptLog(name, int(m[1]), int(m[2]) if m[2] is not None else 0)


def kept_logs_among(names: Iterable[str]) -> list[KeptLog]:
    """The log bytes ``kdump recover`` kept among ``names`` (a partition's files, or its
    directory under ``--backup-dir``), in offset order: what ``kdump salvage`` reads back."""
    found = [k for k in map(parse_kept_log, names) if k is not None]
    cuts = [k.base_offset for k in found if k.cut_at]
    # a deleted .log kept beside: after a cut below it; otherwise a segment a swap
    # replaced (its records are in the swapped-in segment), nothing to salvage
    kept = [k for k in found if k.cut_at or any(c < k.base_offset for c in cuts)]
    return sorted(kept, key=lambda k: (k.base_offset, k.cut_at))


# -- names -------------------------------------------------------------------------------------

BASE_OFFSET_DIGITS = 20
_BASE_NAME = re.compile(r"^(\d{20})$")
_TIERED_BASE_NAME = r"^(\d{20})-[A-Za-z0-9_-]{22}$"  # compiled by re when first used
"""Tiered storage's segment file names: the base offset and the segment's id."""
DELETE_DIR_SUFFIX = "-delete"
"""A deleted partition's directory (``topic-0.<id>-delete``): loaded, never recovered, then
deleted (UnifiedLog.DeleteDirSuffix)."""
FUTURE_DIR_SUFFIX = "-future"
"""A replica being moved to this log dir (``topic-0.<id>-future``, UnifiedLog.FutureDirSuffix)."""
STRAY_DIR_SUFFIX = "-stray"
"""A replica the metadata image no longer assigns here, moved aside (UnifiedLog.StrayDirSuffix)."""
MARKED_DIR_SUFFIXES = (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)
PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<id>[0-9a-f]{32})-(?P<state>delete|future|stray))?$"
)
"""Kafka's partition directory names (UnifiedLog.parseTopicPartitionName)."""


class SegmentName(NamedTuple):
    """A segment file's name, parsed: its base offset and suffix (``.log``...)."""

    base_offset: int
    suffix: str


def segment_file_name(base_offset: int, suffix: str) -> str:
    """LogFileUtils.filenamePrefixFromOffset: the base offset in 20 digits, then the suffix."""
    return f"{base_offset:020d}{suffix}"


def parse_segment_name(name: str) -> SegmentName | None:
    """The base offset and suffix of a segment file of a partition directory (``.log``,
    ``.index``, ``.timeindex``, ``.txnindex``), or None for any other name."""
    for suffix in SEGMENT_SUFFIXES:
        if name.endswith(suffix) and _BASE_NAME.match(name[: -len(suffix)]):
            return SegmentName(int(name[: -len(suffix)]), suffix)
    return None


def offset_in_name(name: str) -> int | None:
    """The 20-digit offset a file's name starts with (segment files, snapshots; a tiered
    segment's ``<offset>-<id>`` too), or None (LogFileUtils.offsetFromFileName)."""
    stem = name.split(".", 1)[0]
    if _BASE_NAME.match(stem) or re.match(_TIERED_BASE_NAME, stem):
        return int(stem[:BASE_OFFSET_DIGITS])
    return None


def is_segment_name(name: str) -> bool:
    """A segment's file of a partition directory: a 20-digit base offset and a segment suffix
    (or a snapshot). Tiered storage's ``<offset>-<id>.log`` objects are not."""
    return parse_segment_name(name) is not None or is_snapshot_name(name)


def is_snapshot_name(name: str) -> bool:
    return (
        name.endswith(SNAPSHOT_SUFFIX)
        and _BASE_NAME.match(name[: -len(SNAPSHOT_SUFFIX)]) is not None
    )


_KRAFT_SNAPSHOT = r"^\d{20}-\d{10}\.checkpoint$"  # compiled by re when first used


def is_kraft_snapshot_name(name: str) -> bool:
    """A KRaft snapshot of a metadata log's directory: ``<end offset>-<epoch>.checkpoint``."""
    return re.match(_KRAFT_SNAPSHOT, name) is not None


def is_leftover_name(name: str) -> bool:
    """A file an interrupted delete, compaction or swap left (``.deleted``, ``.cleaned``,
    ``.swap``)."""
    return name.endswith(LEFTOVER_SUFFIXES)


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory's name, or None."""
    m = PARTITION_DIR.match(name)
    return (m["topic"], int(m["partition"])) if m else None


__all__ = [
    "BACKUP_SUFFIX",
    "BOOTSTRAP_CHECKPOINT",
    "CHECKPOINT_SUFFIX",
    "CLEANED_SUFFIX",
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN",
    "CUT_SUFFIX",
    "DELETED_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "DUMPED_SUFFIXES",
    "FUTURE_DIR_SUFFIX",
    "INDEX_SUFFIX",
    "INDEX_SUFFIXES",
    "KRAFT_SNAPSHOT_DELETED_SUFFIX",
    "KRAFT_SNAPSHOT_PARTIAL_SUFFIX",
    "LEADER_EPOCH_CHECKPOINT",
    "LEADER_EPOCH_SUFFIX",
    "LEFTOVER_SUFFIXES",
    "LOCK_FILE",
    "LOG_START_OFFSET_CHECKPOINT",
    "LOG_SUFFIX",
    "MARKED_DIR_SUFFIXES",
    "META_PROPERTIES",
    "OFFSET_CHECKPOINTS",
    "PARTITION_DIR",
    "PARTITION_METADATA",
    "PINTEREST_WATERMARK",
    "QUORUM_STATE",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "SEGMENT_SUFFIXES",
    "SNAPSHOT_SUFFIX",
    "STRAY_DIR_SUFFIX",
    "SWAP_SUFFIX",
    "TEMP_MARK",
    "TEXT_FILES",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "KeptLog",
    "SegmentName",
    "is_kdump_leftover",
    "is_kraft_snapshot_name",
    "is_leftover_name",
    "is_segment_name",
    "is_snapshot_name",
    "kept_file_of",
    "kept_logs_among",
    "leftover_pid",
    "offset_in_name",
    "parse_kept_log",
    "parse_partition_dir",
    "parse_segment_name",
    "segment_file_name",
]
