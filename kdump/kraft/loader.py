"""The metadata log replayed into the cluster's image, as Kafka's MetadataLoader builds it when a
broker or controller starts: the newest snapshot (``<end offset>-<epoch>.checkpoint``, read as
RecordsSnapshotReader reads it), then every record of the log after it (MetadataBatchLoader),
metadata transactions included.

Where kdump parts from Kafka, it says so rather than stop: a snapshot that does not read is
skipped for the next older one (a controller stops on it, a broker goes on without it); a record
the image refuses is a fault (Kafka's broker logs it and goes on, its controller stops); a
damaged batch, as the broker's recovery would cut the log there, ends the replay, and the image
up to it is still the answer.

The bytes are read through the one walk over a log (kdump.storage.records.FileRecords.walk,
stopping at the first batch recovery refuses), segment by segment of the opened partition
(kdump.unified_log.UnifiedLog).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from weakref import WeakKeyDictionary

from kdump.errors import FormatError, InputError, KdumpError
from kdump.format.batch import RecordBatch
from kdump.format.internal import decode_control_record, read_framed
from kdump.format.messages import MessageError, Readable, read_message
from kdump.format.names import (
    CHECKPOINT_SUFFIX,
    KRAFT_SNAPSHOT_DELETED_SUFFIX,
    KRAFT_SNAPSHOT_PARTIAL_SUFFIX,
    LOG_SUFFIX,
    METADATA_TOPIC,
)
from kdump.format.records import LEADER_CHANGE, SNAPSHOT_HEADER, Record, control_record_key
from kdump.format.schemas import clients
from kdump.format.schemas.metadata import METADATA_RECORD_TYPES
from kdump.format.walk import Stop, StopReason
from kdump.kraft.delta import MetadataDelta
from kdump.kraft.image import MetadataImage, MetadataProvenance, ReplayError
from kdump.log_scan import tail_damage
from kdump.storage.base import Storage
from kdump.storage.local import LocalStorage
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION = 23, 24, 25
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})")


@dataclass(frozen=True)
class SnapshotPath:
    """Snapshots.parse: a snapshot file's id (end offset, epoch) and whether it is a ``.part``
    a writer left or a ``.deleted`` one the cleaner renamed."""

    name: str
    path: str
    offset: int
    epoch: int
    partial: bool = False
    deleted: bool = False

    @property
    def snapshot_id(self) -> tuple[int, int]:
        """OffsetAndEpoch, ordered as Kafka's TreeMap of snapshots orders them."""
        return (self.offset, self.epoch)


def parse_snapshot_path(name: str, path: str) -> SnapshotPath | None:
    """Snapshots.parse: ``<20-digit offset>-<10-digit epoch>.checkpoint`` (or ``.part``,
    ``.deleted``); None for any other name."""
    partial = name.endswith(KRAFT_SNAPSHOT_PARTIAL_SUFFIX)
    deleted = name.endswith(KRAFT_SNAPSHOT_DELETED_SUFFIX)
    if not (partial or deleted or name.endswith(CHECKPOINT_SUFFIX)):
        return None
    match = _SNAPSHOT_NAME.match(name)
    if match is None:
        return None
    return SnapshotPath(name, path, int(match[1]), int(match[2]), partial, deleted)


@dataclass(frozen=True)
class Fault:
    """A record the loader could not apply (MetadataLoader's fault handler): which, and why."""

    path: str
    offset: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}: offset {self.offset}: {self.message}"


class LeaderChange(NamedTuple):
    """A LeaderChange control record: the epoch of its batch, the leader and the voters."""

    epoch: int
    offset: int
    leader_id: int
    voters: tuple[int, ...]


@dataclass
class MetadataLoad:
    """What the replay built and what it met on the way."""

    image: MetadataImage
    location: str
    """The metadata log's directory (or the snapshot file named on its own)."""
    snapshot: SnapshotPath | None = None
    """The snapshot the image starts from (None: the log from its start)."""
    skipped_snapshots: list[tuple[SnapshotPath, KdumpError]] = field(default_factory=list)
    """Newer snapshots that did not read (a controller would have stopped on the newest)."""
    damage: FormatError | None = None
    """Where a damaged batch ended the replay (file and byte)."""
    damage_code: str | None = None
    faults: list[Fault] = field(default_factory=list)
    aborted_transactions: int = 0
    open_transaction: int | None = None
    """The offset of a BeginTransactionRecord the log has no end for: its records are not in
    the image (Kafka publishes no unfinished transaction)."""
    batches: int = 0
    records: int = 0
    notes: list[str] = field(default_factory=list)
    log: UnifiedLog | None = None
    leader_changes: list[LeaderChange] = field(default_factory=list)
    """The LeaderChange control records of the log replayed, in order."""
    array_elements: int = 0
    """Replicas, ISRs and directories the partition records replayed hold, all told."""

    @property
    def is_clean(self) -> bool:
        """Whether the image is the one the broker would load, with nothing refused or cut."""
        return self.damage is None and not self.faults and not self.skipped_snapshots


PARTITION_RECORDS = frozenset({3, 5})
"""PartitionRecord and PartitionChangeRecord: what an image keeps arrays of, per partition."""
IMAGE_ARRAY_ELEMENTS = 1 << 25
"""The array elements the partition records of one replay may hold, all told: a cluster of a
million partitions of three replicas holds ten million; records that each keep under kdump's
bound of one message (kdump.format.messages.MESSAGE_ELEMENTS) cannot together take the image
past 2 x --max-batch-bytes + 100 MB (about 8 bytes an element, the tuples shared)."""


class _Replay:
    """MetadataBatchLoader over the batches of a log (or a snapshot): records in order, the
    transaction state, the provenance of the last batch applied."""

    def __init__(self, load: MetadataLoad, start: int) -> None:
        self.load = load
        self.delta = MetadataDelta(load.image)
        self.start = start
        """Records below this offset are the snapshot's: skipped."""
        self.transaction_start: int | None = None
        self.published = load.image.provenance
        """The provenance of the image Kafka last published (before an open transaction)."""
        self.last_offset = load.image.provenance.last_contained_offset

    def batch(self, log: FileRecords, batch: RecordBatch) -> None:
        load = self.load
        load.batches += 1
        epoch = batch.partition_leader_epoch
        if not batch.is_control:
            for record in log.records(batch):
                if record.offset >= self.start:
                    self.record(log.path, record, epoch, batch.max_timestamp)
                    self.last_offset = record.offset
        else:
            self.control(log, batch)
        self.last_offset = batch.last_offset
        provenance = MetadataProvenance(batch.last_offset, epoch, batch.max_timestamp)
        load.image.provenance = provenance
        if self.transaction_start is None:
            self.published = provenance

    def record(self, path: str, record: Record, epoch: int, time_ms: int) -> None:
        load = self.load
        load.records += 1
        try:
            spec, _, data = read_framed(record.value, METADATA_RECORD_TYPES)
        except MessageError as e:
            load.faults.append(Fault(path, record.offset, f"a record kdump cannot read: {e}"))
            return
        api_key = spec.api_key
        assert api_key is not None
        if api_key in PARTITION_RECORDS:
            held = sum(len(v) for v in data.values() if isinstance(v, list))
            if load.array_elements + held > IMAGE_ARRAY_ELEMENTS:
                what = f"a partition record of {held} replicas, ISRs and directories"
                self.fault(path, record, f"{what}, past the {IMAGE_ARRAY_ELEMENTS} kdump keeps")
                return
            load.array_elements += held
        if api_key == BEGIN_TRANSACTION:
            self.begin(path, record.offset, epoch, time_ms)
        elif api_key == END_TRANSACTION:
            if self.transaction_start is None:
                self.fault(path, record, "Encountered EndTransactionRecord without having seen "
                           "a BeginTransactionRecord")  # fmt: skip
            else:
                self.delta.commit()
                self.transaction_start = None
        elif api_key == ABORT_TRANSACTION:
            if self.transaction_start is None:
                self.fault(path, record, "Encountered AbortTransactionRecord without having "
                           "seen a BeginTransactionRecord")  # fmt: skip
            else:
                self.delta.abort()
                self.transaction_start = None
                load.aborted_transactions += 1
        else:
            try:
                self.delta.replay(api_key, data)
            except ReplayError as e:
                self.fault(path, record, str(e))

    def control(self, log: FileRecords, batch: RecordBatch) -> None:
        """A control batch: only the LeaderChange records are kept (verify's quorum checks)."""
        for record in log.records(batch):
            key = control_record_key(record)
            if key is None or key.type != LEADER_CHANGE:
                continue
            decoded = decode_control_record(LEADER_CHANGE, record)
            if decoded is not None and decoded.data is not None:
                voters = tuple(v["voterId"] for v in decoded.data.get("voters", []))
                change = LeaderChange(
                    batch.partition_leader_epoch, record.offset, decoded.data["leaderId"], voters
                )
                self.load.leader_changes.append(change)

    def begin(self, path: str, offset: int, epoch: int, time_ms: int) -> None:
        if self.transaction_start is not None:
            self.fault_at(path, offset, "Encountered BeginTransactionRecord while already in "
                          "a transaction")  # fmt: skip
            return
        # MetadataBatchLoader publishes what came before the transaction first
        self.published = MetadataProvenance(self.last_offset, epoch, time_ms)
        self.transaction_start = offset
        self.delta.begin()

    def fault(self, path: str, record: Record, message: str) -> None:
        self.fault_at(path, record.offset, message)

    def fault_at(self, path: str, offset: int, message: str) -> None:
        self.load.faults.append(Fault(path, offset, message))

    def finish(self) -> None:
        """The log ends: an open transaction is not in the image (never published)."""
        if self.transaction_start is not None:
            self.delta.abort()
            self.load.open_transaction = self.transaction_start
            self.load.image.provenance = self.published
            self.transaction_start = None


def _walk(replay: _Replay, log: FileRecords, start_offset: int) -> bool:
    """Replay the batches of one file from ``start_offset``; False where damage ended it (the
    load's ``damage`` then says where)."""
    walk = log.walk(until_invalid=True)
    try:
        for run in walk:
            for i in range(run.n):
                if run.last_offset[i] < start_offset:
                    continue
                batch = run.batch(i)
                if not isinstance(batch, RecordBatch):
                    raise FormatError(log.path, batch.position, "a legacy message in a KRaft log")
                replay.batch(log, batch)
    except FormatError as e:  # a record that does not decode, a batch that does not decompress
        replay.load.damage = e
        replay.load.damage_code = "LOG_CORRUPT_RECORD"
        return False
    assert walk.stop is not None
    damage = walk_damage(log, walk.stop)
    if damage is not None:
        replay.load.damage_code, replay.load.damage = damage
        return False
    return True


def walk_damage(log: FileRecords, stop: Stop) -> tuple[str, FormatError] | None:
    """Where a walk that stops at the first batch recovery refuses ended at damage: verify's
    code for it and the error, with file and byte (None: it ended at the file's end)."""
    if stop.reason is StopReason.INVALID_BATCH:
        error = FormatError(log.path, stop.position, "the batch's CRC does not match its bytes")
        return "LOG_CRC_MISMATCH", error
    damage = tail_damage(stop, log.buf)
    if damage is None:
        return None
    return damage.name, FormatError(log.path, stop.position, damage.message)


# -- snapshots --------------------------------------------------------------------------------


def metadata_snapshots(storage: Storage) -> list[SnapshotPath]:
    """Every snapshot file of the directory (``.part`` and ``.deleted`` ones too), by id."""
    found = []
    for name in storage.files():
        parsed = parse_snapshot_path(name, storage.location_of(name))
        if parsed is not None:
            found.append(parsed)
    return sorted(found, key=lambda s: (s.snapshot_id, s.partial, s.deleted))


def retained_snapshots(storage: Storage, log_start_offset: int) -> list[SnapshotPath]:
    """KafkaMetadataLog.recoverSnapshots: the immutable snapshots at or past the log start
    offset (``.part``, ``.deleted`` and older ones are deleted at startup)."""
    return [
        s
        for s in metadata_snapshots(storage)
        if not s.partial and not s.deleted and s.offset >= log_start_offset
    ]


def read_snapshot(
    log: FileRecords, delta: MetadataDelta, faults: list[Fault]
) -> Iterator[RecordBatch]:
    """RecordsSnapshotReader: the snapshot's batches, the first a control batch whose first
    record is the SnapshotHeader; every record of the others replayed into ``delta`` (a record
    the image refuses is added to ``faults``, with its offset in the snapshot, and the rest
    goes on, as MetadataLoader.loadSnapshot does). Raises FormatError where the snapshot does
    not read."""
    walk = log.walk(until_invalid=True)
    first = True
    for run in walk:
        for batch in run.batches():
            if not isinstance(batch, RecordBatch):
                raise FormatError(log.path, batch.position, "a legacy message in a snapshot")
            records = list(log.records(batch))
            if first:
                _check_header(log.path, batch, records)
                first = False
            yield batch
            if batch.is_control:
                continue
            for record in records:
                try:
                    spec, _, data = read_framed(record.value, METADATA_RECORD_TYPES)
                except MessageError as e:
                    raise FormatError(
                        log.path, batch.position, f"record {record.offset}: {e}"
                    ) from None
                assert spec.api_key is not None
                try:
                    delta.replay(spec.api_key, data)
                except ReplayError as e:
                    faults.append(Fault(log.path, record.offset, str(e)))
    assert walk.stop is not None
    damage = walk_damage(log, walk.stop)
    if damage is not None:
        raise damage[1]
    if first:
        raise FormatError(log.path, 0, "no batch: an empty snapshot has no SnapshotHeader")


def _check_header(path: str, batch: RecordBatch, records: list[Record]) -> None:
    key = control_record_key(records[0]) if records and batch.is_control else None
    if key is None:
        raise FormatError(
            path, batch.position, "First batch is not a control batch with at least one record"
        )
    if key.type != SNAPSHOT_HEADER:
        raise FormatError(
            path,
            batch.position,
            f"First control record is not a snapshot header ({key.type_name})",
        )


def snapshot_header_time(log: FileRecords) -> int:
    """The SnapshotHeader's lastContainedLogTimestamp (the provenance's time)."""
    for batch in log.batches(run_batches=1):
        assert isinstance(batch, RecordBatch)
        record = next(iter(log.records(batch)))
        assert record.value is not None
        header = read_message(clients.SNAPSHOT_HEADER_RECORD, Readable(record.value), 0)
        return int(header["lastContainedLogTimestamp"])
    return -1


def load_snapshot(load: MetadataLoad, snapshot: SnapshotPath, storage: Storage) -> None:
    """MetadataLoader.loadSnapshot: the snapshot replaces the image (a fresh one, as
    finishSnapshot drops whatever the snapshot does not hold). Raises FormatError where the
    snapshot does not read; the image is then left as it was."""
    image = MetadataImage()
    delta = MetadataDelta(image)
    faults: list[Fault] = []
    log = storage.open_log(snapshot.name)
    batches = records = 0
    try:
        for batch in read_snapshot(log, delta, faults):
            batches += 1
            records += 0 if batch.is_control else batch.records_count
        time_ms = snapshot_header_time(log)
    finally:
        log.close()
    image.provenance = MetadataProvenance(snapshot.offset - 1, snapshot.epoch, time_ms)
    load.image = image
    load.snapshot = snapshot
    load.faults.extend(faults)
    load.batches += batches
    load.records += records


# -- the log ------------------------------------------------------------------------------------


_LOADS: WeakKeyDictionary[UnifiedLog, MetadataLoad] = WeakKeyDictionary()


def metadata_load(log: UnifiedLog) -> MetadataLoad:
    """The metadata partition's replay, done once per opened partition for every reader (the
    command, verify's checks, the config layer)."""
    found = _LOADS.get(log)
    if found is None:
        found = _LOADS[log] = load_metadata_log(log)
    return found


def load_metadata_log(log: UnifiedLog) -> MetadataLoad:
    """The image a broker or controller loads from this metadata partition (see the module)."""
    load = MetadataLoad(MetadataImage(), log.location, log=log)
    start = log.log_start_offset
    for snapshot in reversed(retained_snapshots(log.storage, start)):
        try:
            load_snapshot(load, snapshot, log.storage)
            break
        except KdumpError as e:
            load.skipped_snapshots.append((snapshot, e))
    from_offset = load.image.provenance.last_contained_offset + 1
    if load.snapshot is None and start > 0:
        load.notes.append(
            f"the log starts at offset {start} and no snapshot reads: the records before it "
            'are not in the image (KafkaMetadataLog refuses this: "Inconsistent snapshot '
            'state")'
        )
    replay = _Replay(load, from_offset)
    segments = log.segments
    for i, segment in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].base_offset <= from_offset:
            continue  # wholly the snapshot's
        if not _walk(replay, segment.log, from_offset):
            break
    replay.finish()
    _truncate_to_snapshot(load, log)
    return load


def _truncate_to_snapshot(load: MetadataLoad, log: UnifiedLog) -> None:
    """KafkaMetadataLog.truncateToLatestSnapshot: a snapshot of a later epoch than the log's
    last batch, or of the same epoch past its end, makes the broker drop the whole log (a
    follower that fetched a snapshot and stopped before truncating): the image is the
    snapshot's alone."""
    snapshot = load.snapshot
    if snapshot is None or load.image.provenance.last_contained_offset < snapshot.offset:
        return  # nothing of the log was replayed
    last_epoch = load.image.provenance.last_contained_epoch
    end = load.image.provenance.last_contained_offset + 1
    if snapshot.epoch > last_epoch or (snapshot.epoch == last_epoch and snapshot.offset > end):
        load.notes.append(
            f"snapshot {snapshot.name} is of a later epoch than the log's end: the broker "
            "drops the log after it (KafkaMetadataLog.truncateToLatestSnapshot)"
        )
        fresh = MetadataLoad(MetadataImage(), load.location, log=log)
        load_snapshot(fresh, snapshot, log.storage)
        load.image, load.faults = fresh.image, fresh.faults
        load.batches, load.records = fresh.batches, fresh.records


def load_snapshot_file(storage: Storage, name: str) -> MetadataLoad:
    """One snapshot file named on its own (``<offset>-<epoch>.checkpoint`` or a log dir's
    ``bootstrap.checkpoint``): its image."""
    path = storage.location_of(name)
    snapshot = parse_snapshot_path(name, path)
    if snapshot is None:
        snapshot = SnapshotPath(name, path, 0, 0)  # bootstrap.checkpoint: BOOTSTRAP_SNAPSHOT_ID
    load = MetadataLoad(MetadataImage(), path)
    load_snapshot(load, snapshot, storage)
    return load


# -- where the metadata is ---------------------------------------------------------------------


def holds_snapshots(log: UnifiedLog) -> bool:
    """A folder of KRaft snapshots (a copy of a metadata partition under another name)."""
    return any(parse_snapshot_path(n, "") is not None for n in log.storage.files())


def load_metadata(path: str) -> MetadataLoad:
    """``kdump metadata PATH``: a ``__cluster_metadata-0`` directory, a log dir holding one, or
    one snapshot file."""
    from kdump.discovery import discover

    p = Path(path)
    if p.is_file():
        if not p.name.endswith(CHECKPOINT_SUFFIX):
            hint = "name the directory holding it" if p.name.endswith(LOG_SUFFIX) else ""
            raise InputError(
                path,
                "not a KRaft snapshot (<offset>-<epoch>.checkpoint)"
                + (f": {hint}" if hint else ""),
            )
        return load_snapshot_file(LocalStorage(p.parent), p.name)
    if not p.exists():
        raise InputError(path, "no such file or directory")
    found = discover([path])
    found.raise_first()
    logs = [log for log in found.partitions if log.is_metadata_log]
    if not logs and len(found.partitions) == 1 and holds_snapshots(found.partitions[0]):
        logs = found.partitions
    if not logs:
        raise InputError(
            path, f"holds no {METADATA_TOPIC}-0 directory (a KRaft broker's or controller's)"
        )
    if len(logs) > 1:
        names = ", ".join(log.location for log in logs)
        raise InputError(path, f"holds {len(logs)} metadata logs ({names}): name one")
    return metadata_load(logs[0])


FAULTS_SHOWN = 20
"""Faults said one by one; past these, how many more."""


def load_messages(load: MetadataLoad) -> list[str]:
    """What a reader of the image must know, one line each: ``error:`` where the image is not
    the one the broker loads cleanly, ``note:`` otherwise."""
    out = []
    for snapshot, error in load.skipped_snapshots:
        out.append(
            f"error: {error}: snapshot {snapshot.name} does not read (a controller stops on "
            "it, a broker goes on without its records); the image starts from the next older "
            "snapshot (or the log's start)"
        )
    if load.damage is not None:
        out.append(
            f"error: {load.damage}: the replay stops here, as the broker's recovery cuts the "
            f"log here; the image is as of offset {load.image.offset}"
        )
    for fault in load.faults[:FAULTS_SHOWN]:
        out.append(
            f"error: {fault}: the record is not in the image (a broker logs this and goes on; "
            "a controller stops)"
        )
    if len(load.faults) > FAULTS_SHOWN:
        out.append(f"error: {len(load.faults) - FAULTS_SHOWN} more records not in the image")
    if load.open_transaction is not None:
        out.append(
            f"note: the metadata transaction begun at offset {load.open_transaction} has no "
            "end in the log: its records are not in the image (Kafka publishes none of it)"
        )
    if load.aborted_transactions:
        out.append(
            f"note: {load.aborted_transactions} aborted metadata transaction(s): their records "
            "are not in the image"
        )
    out.extend(f"note: {note}" for note in load.notes)
    return out


__all__ = [
    "FAULTS_SHOWN",
    "Fault",
    "LeaderChange",
    "MetadataLoad",
    "SnapshotPath",
    "load_messages",
    "load_metadata",
    "load_metadata_log",
    "load_snapshot_file",
    "metadata_load",
    "metadata_snapshots",
    "parse_snapshot_path",
    "retained_snapshots",
]
