"""verify's checks of a KRaft metadata partition and of the log dir holding it: what stops a
controller or broker from starting, what it deletes or resets at startup, and where the log dir's
partitions disagree with the cluster's image.

The metadata partition's own files (``check_metadata_partition``, with the partition's result):
- ``quorum-state`` (FileQuorumStateStore): JSON the node reads at startup, its leader epoch
  against the log's (QuorumState.initialize), its leader and voters against the log's last
  LeaderChange record;
- the snapshots (KafkaMetadataLog.recoverSnapshots): unreadable ones, ``.part`` and ``.deleted``
  leftovers and those below the log start (deleted at startup), names against their contents
  (the epoch of their batches, the log's epoch and append time at their end offset), a snapshot
  past the log's end (the log is dropped: truncateToLatestSnapshot);
- the records the image refuses (MetadataLoader's faults).
The leader-epoch-checkpoint is checked against the batches as every partition's is
(LEADER_EPOCH_INCONSISTENT), damaged batches as every log's (LOG_*).

The log dir (``check_log_dir``, with the log dir's findings): ``bootstrap.checkpoint`` against
the log's zero checkpoint (KIP-1170 moved the bootstrap records there), ``meta.properties``
against the quorum and the registrations, and every partition directory's
``partition.metadata`` and assignment against the image. A log dir without the metadata log (a
broker's other log dirs) is checked against the image of its node's metadata log dir, where
that is read in the same run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.errors import KdumpError
from kdump.format.checkpoint import PartitionMetadata
from kdump.format.names import (
    BOOTSTRAP_CHECKPOINT,
    MARKED_DIR_SUFFIXES,
    META_PROPERTIES,
    PARTITION_METADATA,
    QUORUM_STATE,
)
from kdump.kraft.configs import node_metadata, readable_meta_properties
from kdump.kraft.image import MetadataImage
from kdump.kraft.loader import (
    MetadataLoad,
    SnapshotPath,
    load_snapshot_file,
    metadata_load,
    metadata_snapshots,
    snapshot_header_time,
)
from kdump.kraft.node import image_json
from kdump.log_dir import LogDir
from kdump.unified_log import SMALL_TEXT_FILE, UnifiedLog
from kdump.untrusted import command

STRAY = (
    "moves it aside, renamed TOPIC-PARTITION.ID-stray, and serves it no more; it "
    "stays on disk (LogManager.asyncDelete of a stray)"
)


def check_metadata_partition(log: UnifiedLog) -> Iterator[Finding]:
    """The metadata partition's own checks (see the module)."""
    load = metadata_load(log)
    yield from _quorum_state(log, load)
    yield from _snapshots(log, load)
    for fault in load.faults:
        yield Finding(
            "KRAFT_RECORD_REFUSED",
            Severity.ERROR,
            fault.path,
            f"{fault.message}: the record is not in the cluster's image; a broker logs this "
            "and goes on without it, a controller stops",
            offset=fault.offset,
        )


def _quorum_state(log: UnifiedLog, load: MetadataLoad) -> Iterator[Finding]:
    if not log.storage.exists(QUORUM_STATE):
        return
    path = log.storage.location_of(QUORUM_STATE)
    try:
        state = read_quorum_state(log.storage.read_bytes(QUORUM_STATE, SMALL_TEXT_FILE), path)
    except KdumpError as e:
        yield Finding(
            "KRAFT_QUORUM_STATE_CORRUPT",
            Severity.ERROR,
            path,
            f"{e.reason}: the node cannot read its election state and does not start "
            "(FileQuorumStateStore.readElectionState); the quorum's other voters hold it",
        )
        return
    epoch, leader = state["leaderEpoch"], state.get("leaderId", -1)
    log_epoch = load.image.provenance.last_contained_epoch
    if epoch < log_epoch:
        yield Finding(
            "KRAFT_QUORUM_STATE_BEHIND",
            Severity.WARNING,
            path,
            f"leader epoch {epoch}, below the log's last epoch {log_epoch}: the node starts "
            f"unattached at epoch {log_epoch} (QuorumState.initialize) and learns the leader "
            "from the quorum",
        )
    voters = [v["voterId"] for v in state.get("currentVoters") or []]
    change = next((c for c in reversed(load.leader_changes) if c.epoch == epoch), None)
    problems = []
    if voters and leader >= 0 and leader not in voters:
        problems.append(f"its leader {leader} is not one of its voters {voters}")
    if change is not None and leader >= 0 and change.leader_id != leader:
        problems.append(
            f"its leader for epoch {epoch} is {leader}, the log's LeaderChange at offset "
            f"{change.offset} says {change.leader_id}"
        )
    if change is not None and voters and sorted(change.voters) != sorted(voters):
        problems.append(
            f"its voters {voters} are not the voters of the log's LeaderChange at offset "
            f"{change.offset} ({list(change.voters)})"
        )
    for problem in problems:
        yield Finding(
            "KRAFT_QUORUM_STATE_LEADER",
            Severity.WARNING,
            path,
            f"{problem}: quorum-state was written by another election than the log's (a "
            "restored or copied file); the node follows the log's epoch once it fetches",
        )


def read_quorum_state(data: bytes, path: str) -> dict[str, Any]:
    """FileQuorumStateStore.readElectionState: QuorumStateData as JSON, with its version."""
    try:
        state = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KdumpError(f"not JSON ({e})", path) from None
    if not isinstance(state, dict) or "data_version" not in state:
        raise KdumpError("no data_version field (QuorumStateData)", path)
    for name in ("leaderId", "leaderEpoch", "votedId"):
        if not isinstance(state.get(name), int):
            raise KdumpError(f"no {name} integer (QuorumStateData)", path)
    return state


def _snapshots(log: UnifiedLog, load: MetadataLoad) -> Iterator[Finding]:
    start = log.log_start_offset
    for snapshot in metadata_snapshots(log.storage):
        if snapshot.partial or snapshot.deleted or snapshot.offset < start:
            why = (
                "a snapshot being written when the node stopped"
                if snapshot.partial
                else "a snapshot marked for deletion"
                if snapshot.deleted
                else f"a snapshot below the log start offset {start}"
            )
            yield Finding(
                "KRAFT_SNAPSHOT_LEFTOVER",
                Severity.WARNING,
                snapshot.path,
                f"{why}; {BROKER_FIXES} (KafkaMetadataLog.recoverSnapshots deletes it)",
                offset=snapshot.offset,
            )
    skipped = dict((s.name, e) for s, e in load.skipped_snapshots)
    for snapshot, error in load.skipped_snapshots:
        yield Finding(
            "KRAFT_SNAPSHOT_UNREADABLE",
            Severity.ERROR,
            error.path or snapshot.path,
            f"{error.reason}: a node loads its newest snapshot at startup, a controller stops "
            "on this one, a broker goes on without its records; kdump loaded the next older "
            f"snapshot and the log after it ({command('kdump', 'metadata', log.location)})",
            offset=snapshot.offset,
            position=error.position,
        )
    for snapshot in (s for s in metadata_snapshots(log.storage) if s.name not in skipped):
        if not (snapshot.partial or snapshot.deleted or snapshot.offset < start):
            yield from _snapshot_against_log(log, load, snapshot)


def _snapshot_against_log(
    log: UnifiedLog, load: MetadataLoad, snapshot: SnapshotPath
) -> Iterator[Finding]:
    """A readable snapshot's name against its batches and the log at its end offset."""
    records = log.storage.open_log(snapshot.name)
    try:
        epochs = {b.partition_leader_epoch for b in records.batches()}
        header_time = snapshot_header_time(records)
    except KdumpError:
        return  # unreadable: said as such when it is the one loaded
    finally:
        records.close()
    problems = []
    if epochs - {snapshot.epoch}:
        problems.append(
            f"its name says epoch {snapshot.epoch}, its batches {sorted(epochs)} (a snapshot "
            "is written at its own epoch)"
        )
    at_end = _log_batch_at(log, snapshot.offset - 1)
    end = log.log_end_offset
    if at_end is not None:
        epoch, time_ms = at_end
        if epoch != snapshot.epoch:
            problems.append(
                f"the log's batch holding offset {snapshot.offset - 1} is of epoch {epoch}"
            )
        if header_time not in (-1, time_ms):
            problems.append(
                f"its SnapshotHeader says the last record was appended at {header_time}, the "
                f"log's batch at {time_ms}"
            )
    for problem in problems:
        yield Finding(
            "KRAFT_SNAPSHOT_MISMATCH",
            Severity.WARNING,
            snapshot.path,
            f"snapshot {snapshot.name}: {problem}: it is not a snapshot of this log (a copied "
            "or renamed file); a node loading it holds another history than its log",
            offset=snapshot.offset,
        )
    last_epoch = _last_epoch(log)
    if snapshot.offset > end or (last_epoch is not None and snapshot.epoch > last_epoch):
        where = (
            f"end offset {snapshot.offset} past the log end offset {end}"
            if snapshot.offset > end
            else f"epoch {snapshot.epoch} past the log's last epoch {last_epoch}"
        )
        yield Finding(
            "KRAFT_SNAPSHOT_BEYOND_LOG_END",
            Severity.WARNING,
            snapshot.path,
            f"snapshot {snapshot.name}: {where}: at startup the node drops its whole log and "
            "starts from this snapshot (KafkaMetadataLog.truncateToLatestSnapshot); a follower "
            "that fetched a snapshot and stopped leaves this, a copied file does too",
            offset=snapshot.offset,
        )


def _log_batch_at(log: UnifiedLog, offset: int) -> tuple[int, int] | None:
    """(leader epoch, append time) of the log's batch holding ``offset``, if the log has it."""
    if offset < 0:
        return None
    i = log.floor_segment(offset)
    if i < 0:
        return None
    segment = log.segments[i]
    for batch in segment.log.batches():
        if batch.base_offset <= offset <= batch.last_offset:
            return batch.partition_leader_epoch, batch.max_timestamp
        if batch.base_offset > offset:
            break
    return None


def _last_epoch(log: UnifiedLog) -> int | None:
    for segment in reversed(log.segments_after_recovery):
        scan = log.walk(segment).scan  # (verify walked it: the partition's checks come last)
        if scan is not None and scan.epoch_starts:
            return int(scan.epoch_starts[-1][0])
    return None


# -- the log dir -----------------------------------------------------------------------------------


def check_log_dir(log_dir: LogDir, logs: Sequence[UnifiedLog]) -> Iterator[Finding]:
    """The log dir's files against its metadata partition's image (see the module), or, where
    it holds none, against the image of its node's metadata log dir (``node_metadata``);
    nothing where there is none. ``logs``: every partition found in the run."""
    mine = [log for log in logs if log.found_in(log_dir)]
    own = next((log for log in mine if log.is_metadata_log), None)
    metadata = own if own is not None else node_metadata(log_dir, logs)
    if metadata is None:
        return
    load = metadata_load(metadata)
    if own is not None:
        yield from _bootstrap(log_dir, metadata)
    meta = readable_meta_properties(log_dir)
    node_id = None if meta is None else meta.node_id
    if meta is not None:
        yield from _meta_against_image(log_dir, metadata, load.image, meta)
    for log in mine:
        if log is not metadata and log.topic is not None:
            yield from _partition_against_image(log, load, node_id)


def _bootstrap(log_dir: LogDir, metadata: UnifiedLog) -> Iterator[Finding]:
    zero = "00000000000000000000-0000000000.checkpoint"
    if not (log_dir.storage.exists(BOOTSTRAP_CHECKPOINT) and metadata.storage.exists(zero)):
        return
    try:
        bootstrap = load_snapshot_file(log_dir.storage, BOOTSTRAP_CHECKPOINT)
        checkpoint = load_snapshot_file(metadata.storage, zero)
    except KdumpError:
        return  # an unreadable zero checkpoint is KRAFT_SNAPSHOT_UNREADABLE's
    left = image_json(bootstrap.image, show_secrets=True)
    right = image_json(checkpoint.image, show_secrets=True)
    differ = [k for k in left if k not in ("offset", "epoch", "snapshot") and left[k] != right[k]]
    if differ:
        yield Finding(
            "KRAFT_BOOTSTRAP_MISMATCH",
            Severity.WARNING,
            log_dir.storage.location_of(BOOTSTRAP_CHECKPOINT),
            f"its bootstrap records differ from the metadata log's zero checkpoint "
            f"{metadata.storage.location_of(zero)} in {', '.join(differ)}: the two were "
            "formatted apart (kafka-storage.sh format); Kafka 4.1 on reads the zero checkpoint "
            "(KIP-1170)",
        )


def _meta_against_image(
    log_dir: LogDir, metadata: UnifiedLog, image: MetadataImage, meta: Any
) -> Iterator[Finding]:
    path = log_dir.storage.location_of(META_PROPERTIES)
    problems = []
    voters = _voters(metadata)
    node = meta.node_id
    known = set(image.brokers) | set(image.controllers) | set(voters)
    if node is not None and known and node not in known:
        problems.append(
            f"node.id {node} is neither a registered broker, a registered controller nor a "
            f"voter of the quorum ({_ids(image.brokers)} brokers, {_ids(image.controllers)} "
            f"controllers, voters {sorted(voters)}): this log dir belongs to another node"
        )
    broker = image.brokers.get(node) if node is not None else None
    directory = meta.directory_id
    # a broker from before directory ids registers none
    registered = broker.directories if broker is not None else ()
    if registered and directory is not None and directory not in registered:
        problems.append(
            f"directory.id {directory} is not one of broker {node}'s registered log dirs "
            f"{list(registered)}: its replicas here are assigned elsewhere"
        )
    cluster = _quorum_cluster_id(metadata)
    if cluster and meta.cluster_id is not None and cluster != meta.cluster_id:
        problems.append(
            f"cluster.id {meta.cluster_id} is not the quorum's {cluster} (quorum-state): the "
            "node refuses to start"
        )
    for problem in problems:
        yield Finding("KRAFT_META_PROPERTIES_MISMATCH", Severity.WARNING, path, problem)


def _ids(found: dict[int, Any]) -> str:
    return str(sorted(found)) if found else "no"


def _quorum_state_of(metadata: UnifiedLog) -> dict[str, Any] | None:
    if not metadata.storage.exists(QUORUM_STATE):
        return None
    try:
        data = metadata.storage.read_bytes(QUORUM_STATE, SMALL_TEXT_FILE)
        return read_quorum_state(data, metadata.storage.location_of(QUORUM_STATE))
    except KdumpError:
        return None


def _voters(metadata: UnifiedLog) -> list[int]:
    state = _quorum_state_of(metadata) or {}
    voters = [v["voterId"] for v in state.get("currentVoters") or []]
    changes = metadata_load(metadata).leader_changes
    return voters or (list(changes[-1].voters) if changes else [])


def _quorum_cluster_id(metadata: UnifiedLog) -> str | None:
    state = _quorum_state_of(metadata) or {}
    cluster = state.get("clusterId")
    return cluster if isinstance(cluster, str) and cluster else None


def _partition_against_image(
    log: UnifiedLog, load: MetadataLoad, node_id: int | None
) -> Iterator[Finding]:
    """A partition directory against the image: its topic id (partition.metadata), and whether
    the image still assigns it here."""
    image = load.image
    topic_partition = log.topic_partition
    if topic_partition is None or log.storage.name.endswith(MARKED_DIR_SUFFIXES):
        return
    name, number = topic_partition
    topic = image.topics_by_name.get(name)
    recorded = log.partition_metadata
    path = log.location
    if (
        topic is not None
        and isinstance(recorded, PartitionMetadata)
        and recorded.topic_id != topic.id
    ):
        yield Finding(
            "KRAFT_TOPIC_ID_MISMATCH",
            Severity.ERROR,
            log.storage.location_of(PARTITION_METADATA),
            f"topic id {recorded.topic_id}, but the cluster's image says {name} is "
            f"{topic.id}: the directory is of a deleted topic of the same name; from Kafka "
            f"3.7 the broker takes it for a stray and {STRAY}, before 3.7 it refuses the "
            "partition (InconsistentTopicIdException)",
        )
        return
    if load.damage is not None or not image.topics_by_id:
        return  # an image cut short, or none: it cannot say a partition is gone
    registration = None if topic is None else topic.partitions.get(number)
    if registration is None:
        gone = f"topic {name} is not" if topic is None else f"partition {number} of {name} is not"
        yield Finding(
            "KRAFT_PARTITION_NOT_IN_IMAGE",
            Severity.WARNING,
            path,
            f"{gone} in the cluster's image (offset {image.offset}): the broker takes the "
            f"directory for a stray replica of a deleted topic and {STRAY}",
        )
    elif node_id is not None and node_id not in registration.replicas:
        yield Finding(
            "KRAFT_PARTITION_NOT_IN_IMAGE",
            Severity.WARNING,
            path,
            f"the cluster's image assigns {name}-{number} to brokers "
            f"{list(registration.replicas)}, not to this node {node_id}: the replica was "
            f"reassigned away, and the broker takes it for a stray and {STRAY}",
        )
    elif recorded is None and log.log_end_offset > log.log_start_offset:
        assert topic is not None
        yield Finding(
            "KRAFT_TOPIC_ID_MISSING",
            Severity.WARNING,
            path,
            f"no {PARTITION_METADATA}, so no topic id, beside records "
            f"{log.log_start_offset}..{log.log_end_offset - 1}: from Kafka 3.7 the broker "
            f"takes the directory for a stray (LogManager.isStrayKraftReplica) and {STRAY}, "
            f"and fetches the replica afresh; the image's id for {name} is {topic.id}",
        )


__all__ = [
    "check_log_dir",
    "check_metadata_partition",
    "read_quorum_state",
]
