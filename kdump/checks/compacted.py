"""The invariants of a cleaned log (issue 41 point 3): what Kafka's cleaner guarantees below a
compacted partition's ``cleaner-offset-checkpoint`` entry, checked as verify's walk reads each
segment (``CleanedSectionCheck`` rides on ``check_segment``: no second pass over the batches).

A cleaning at time t (Cleaner.doClean) builds its key map over [first dirty, end), rewrites
every segment below ``end`` through MemoryRecords.filterTo and writes ``end`` to the checkpoint.
Below the checkpoint, once a pass has run:

- each key is held once (``COMPACTED_KEY_REPEATED``): shouldRetainRecord keeps a record of a key
  in the map only at the map's offset, and a key not in the map was held once by the pass before;
- each v2 tombstone is in a batch with a delete horizon (``COMPACTED_TOMBSTONE_UNSTAMPED``):
  filterTo stamps ``t + delete.retention.ms`` on a batch that keeps a tombstone;
- no tombstone's horizon is at or before t (``COMPACTED_TOMBSTONE_EXPIRED``): shouldRetainRecord
  drops it (kdump.log_cleaner.delete_horizon_passed);
- no marker of a transaction with no batch left has a horizon at or before t
  (``COMPACTED_MARKER_EXPIRED``): checkBatchRetention discards its record;
- no record of an aborted transaction is held (``COMPACTED_ABORTED_KEPT``): checkBatchRetention
  discards the records of every batch CleanedTransactionMetadata knows aborted.

The time t of the last pass is not on disk, but each pass stamps every batch it stamps with the
same ``t + delete.retention.ms``: the latest horizon found, less ``delete.retention.ms``, is a
time at or before the last pass, and a horizon at or before it is one a pass outlived. (A
``delete.retention.ms`` lowered since the stamp, or settings that are not the topic's, break
that reasoning: the findings say which value was used, and from where.)

What a cleaning leaves and these checks accept: batches kept empty (a producer's last batch, the
one ending at the high watermark: RETAIN_EMPTY) hold no record; tombstones and markers within
their horizon; a marker whose transaction still has a batch, or whose last batch went in the
last pass (it is stamped by the next one); everything at or above the checkpoint (the last
rewritten segment's records past the key map's end, in a pass the map could not hold: they
were copied, not cleaned); v0/v1 messages, which carry no horizon. Transactions are judged at
their marker, the record the ``.txnindex`` entry is made from, so the checks need no look
ahead into later indexes as the cleaner does.

Memory: the key check holds each distinct key below the checkpoint as its MD5 digest (the
cleaner's identity of a key) and the offset it was first met at, at most ``key_memory`` bytes
(``--compaction-key-memory``, 128 MiB by default: about a million keys at
kdump.offset_map.KEY_BYTES); past that, keys met for the first time are not checked for repeats
(those held still are) and an info finding says from which offset. Besides: per producer, the
transaction it has open; per distinct delete horizon (a pass stamps one), a count.

Segments walked as a unit, in order (``check_in_order``): the checks need the segments of a
partition in offset order, so verify hands them those of a compacted partition together. A run
that reuses some (``--state``: unchanged since verified clean) checks the segments it reads;
the cleaner rewrites every segment below the new checkpoint at each pass, so after a cleaning
they are all read again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.segment import SegmentResult, check_segment
from kdump.config import BROKER_CONFIGS, MetadataConfigs
from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.layout import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    NO_PRODUCER_ID,
    TRANSACTIONAL_BIT,
)
from kdump.format.names import CLEANER_OFFSET_CHECKPOINT, LOG_SUFFIX
from kdump.format.records import ABORT, COMMIT
from kdump.format.walk import BatchRun, Stop
from kdump.segment import LogSegment
from kdump.storage.records import FileRecords
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

if TYPE_CHECKING:
    from kdump.offset_map import KeyDigests

DEFAULT_KEY_MEMORY = VerifyOptions().compaction_key_memory
"""The key check's bound by default: the broker's dedupe buffer (128 MiB)."""
assert BROKER_CONFIGS["log.cleaner.dedupe.buffer.size"].default == DEFAULT_KEY_MEMORY
MAX_HORIZONS = 1024
"""Distinct delete horizons counted per partition (a pass stamps one); past it the latest
are forgotten first, as the ones least likely to have passed."""
SHOWN_KEY = 40


@dataclass(frozen=True)
class CleanedSection:
    """The section of a compacted partition below its cleaner checkpoint, and what its checks
    need before the walk (worked out where the run starts: the settings may need the cluster's
    metadata image)."""

    checkpoint: int
    """The partition's ``cleaner-offset-checkpoint`` entry: the checks look below it."""
    log_start: int
    delete_retention_ms: int
    delete_retention_source: str
    """Where ``delete.retention.ms`` came from, as the findings say it."""
    key_memory: int


def cleaned_section(log: UnifiedLog, key_memory: int = DEFAULT_KEY_MEMORY) -> CleanedSection | None:
    """The cleaned section of ``log`` when it is a compacted partition (its settings,
    kdump.config's layers) with a ``cleaner-offset-checkpoint`` entry above its log start, read
    whole from local disk; None otherwise. Settings that do not resolve (a conflict Kafka
    refuses) leave it unchecked, as the broker leaves such a log uncleaned."""
    if log.only is not None or log.tiered or log.is_metadata_log or not log.segments:
        return None
    try:
        checkpoint = log.checkpointed(CLEANER_OFFSET_CHECKPOINT)
        settings = log.settings
    except KdumpError:  # an unreadable checkpoint file is the log dir's own finding
        return None
    if checkpoint is None or not settings.compact or checkpoint <= log.log_start_offset:
        return None
    retention = settings["delete.retention.ms"]
    return CleanedSection(
        checkpoint=checkpoint,
        log_start=log.log_start_offset,
        delete_retention_ms=settings.delete_retention_ms,
        delete_retention_source=retention.origin or "Kafka's default",
        key_memory=key_memory,
    )


def cleaned_sections(
    logs: Sequence[UnifiedLog],
    key_memory: int = DEFAULT_KEY_MEMORY,
    find_image: bool = True,
    images: dict[str, MetadataConfigs | None] | None = None,
) -> dict[int, CleanedSection]:
    """The cleaned sections of ``logs`` (by ``id`` of the log): ``cleaned_section`` of each. A
    partition with a cleaner checkpoint entry whose settings come without a KRaft image (no
    ``--metadata``) takes its node's image (``find_image``): the metadata partition of its log
    dir, or of its node's metadata log dir, among ``logs`` (replayed once, for verify's KRaft
    checks too), else the one beside it (kdump.kraft.configs.take_node_image)."""
    images = {} if images is None else images
    out = {}
    for log in logs:
        if find_image and _has_entry(log):
            # the image's modules where a cleaner checkpoint entry asks for its settings
            from kdump.kraft.configs import take_node_image

            take_node_image(log, logs, images)
        cleaned = cleaned_section(log, key_memory)
        if cleaned is not None:
            out[id(log)] = cleaned
    return out


def _has_entry(log: UnifiedLog) -> bool:
    try:
        return log.checkpointed(CLEANER_OFFSET_CHECKPOINT) is not None
    except KdumpError:
        return False


@dataclass
class _OpenTxn:
    """A producer's transaction as the walk has met it so far, from its first batch (an empty
    one too: the cleaner keeps a marker while its transaction has any): its records below the
    checkpoint."""

    records: int = 0
    first: tuple[str, int, int] | None = None
    """(path, offset, batch position) of its first record below the checkpoint."""
    keys: list[_KeyMet] = field(default_factory=list)
    """Its records' keys below the checkpoint, checked once its marker says it committed (an
    aborted transaction's keys are no key of the log: the cleaner's map skips them)."""


class _KeyMet(NamedTuple):
    key: bytes
    offset: int
    path: str
    position: int


@dataclass
class _Horizon:
    """Tombstones or markers of one segment carrying one delete horizon."""

    count: int = 0
    offset: int = 0
    position: int = 0
    producer_id: int = NO_PRODUCER_ID


@dataclass
class CleanedSectionCheck:
    """The checks of one partition's cleaned section, fed its segments' walks in offset order
    (a RunConsumer: ``begin`` each segment, then ``take`` its runs and ``end``; ``skipped`` for
    a segment the run does not read), then ``finish`` (``deliver``)."""

    section: CleanedSection
    findings: list[Finding] = field(default_factory=list)
    keys: KeyDigests[int] = field(init=False)
    _open: dict[int, _OpenTxn] = field(default_factory=dict)
    _known: set[int] | None = None
    """After a skipped segment: the producers whose marker was met since (None: no skip), the
    only ones whose transactions the walk has seen whole."""
    _tombstones: dict[tuple[str, int], _Horizon] = field(default_factory=dict)
    _markers: dict[tuple[str, int], _Horizon] = field(default_factory=dict)
    latest_horizon: int | None = None
    _waiting: int = 0
    """Keys of open transactions held until their markers."""
    full_at: tuple[str, int] | None = None
    """(path, offset) of the first record whose key the full key check could not hold."""
    log_end: int | None = None
    stopped: bool = False
    """Recovery cuts the log here (a batch whose CRC fails, damage): nothing after is checked."""
    _segment: LogSegment | None = None
    _ended: bool = False
    _aborted: set[tuple[int, int]] | None = None
    _digest: Callable[[bytes], bytes] = field(init=False)

    def __post_init__(self) -> None:
        # here, not at the top: hashlib (OpenSSL) and the cleaner's module cost a verify of
        # nothing compacted its start-up
        from kdump.offset_map import KeyDigests, key_digest

        self.keys = KeyDigests(self.section.key_memory)
        self._digest = key_digest

    # -- riding on the walk -------------------------------------------------------------------

    def begin(self, segment: LogSegment) -> None:
        if self._segment is not None and not self._ended:
            self.skipped(self._segment)  # its walk never ran: unreadable
        self._segment = segment
        self._ended = False
        self._aborted = None

    def skipped(self, segment: LogSegment) -> None:
        """A segment the run does not read (unchanged since verified, or unreadable): what its
        transactions hold is unknown, so none open across it is judged."""
        if segment.base_offset < self.section.checkpoint:
            self._open.clear()
            self._waiting = 0
            self._known = set()

    def take(self, log: FileRecords, run: BatchRun, base_offset: int) -> None:
        if self.stopped:
            return
        checkpoint = self.section.checkpoint
        for j in range(run.n):
            if not run.valid[j]:  # recovery cuts the log at a batch whose CRC fails
                self.stopped = True
                return
            self.log_end = run.last_offset[j] + 1
            if run.magic[j] < 2:
                if run.base_offset[j] < checkpoint:
                    self._data(log, run.batch(j), None)
                continue
            attributes = run.attributes[j]
            if attributes & DELETE_HORIZON_BIT:  # the horizon is the base timestamp's place
                horizon = run.base_timestamp[j]
                if self.latest_horizon is None or horizon > self.latest_horizon:
                    self.latest_horizon = horizon
            below = run.base_offset[j] < checkpoint
            if attributes & CONTROL_BIT:
                # above the checkpoint a marker matters only to a transaction begun below it
                if below or run.producer_id[j] in self._open:
                    self._marker(log, run.batch(j))
                continue
            if below:
                producer = run.producer_id[j]
                txn = self._open_txn(producer) if attributes & TRANSACTIONAL_BIT else None
                self._data(log, run.batch(j), txn)

    def end(self, log: FileRecords, base_offset: int, stop: Stop | None) -> None:
        self._ended = True
        if stop is not None and stop.is_damage:
            self.stopped = True

    # -- what a batch says ----------------------------------------------------------------------

    def _open_txn(self, producer: int) -> _OpenTxn:
        txn = self._open.get(producer)
        if txn is None:
            txn = self._open[producer] = _OpenTxn()
        return txn

    def _data(self, log: FileRecords, batch: Batch, txn: _OpenTxn | None) -> None:
        checkpoint = self.section.checkpoint
        horizon = batch.delete_horizon_ms
        stamped = batch.magic >= 2
        keys, digest_of, room = self.keys, self._digest, self.keys.max_keys
        try:
            for record in log.records(batch):
                offset = record.offset
                if offset >= checkpoint:
                    break
                key = record.key
                if txn is not None:  # judged at its marker
                    txn.records += 1
                    if txn.first is None:
                        txn.first = (log.path, offset, batch.position)
                    if key is not None:
                        self._defer(txn, _KeyMet(key, offset, log.path, batch.position))
                elif key is not None:
                    digest = digest_of(key)
                    # a key met for the first time inline, held or not: this loop is what these
                    # checks cost, microseconds a record (and past the bound most keys are new)
                    if digest not in keys:
                        if len(keys) < room:
                            keys[digest] = offset
                        elif self.full_at is None:
                            self.full_at = (log.path, offset)
                    else:
                        self._key(_KeyMet(key, offset, log.path, batch.position), digest)
                if record.value is None and stamped:
                    self._tombstone(log, batch, offset, horizon)
        except KdumpError:
            return  # records that do not decode: verify --deep names them

    def _defer(self, txn: _OpenTxn, met: _KeyMet) -> None:
        """Hold a transaction's key until its marker; past the key check's bound in keys held
        and waiting, checked at once (an aborted one's key then counts as the log's)."""
        self._waiting += 1
        if len(self.keys) + self._waiting > self.keys.max_keys:
            self._waiting -= 1
            self._key(met)
        else:
            txn.keys.append(met)

    def _key(self, met: _KeyMet, digest: bytes | None = None) -> None:
        keys = self.keys
        if digest is None:
            digest = self._digest(met.key)
        first = keys.get(digest)
        if first is None:
            if not keys.add(digest, met.offset) and self.full_at is None:
                self.full_at = (met.path, met.offset)
            return
        if met.offset < first:  # a transaction's key, checked at its marker
            keys[digest] = met.offset
        key = met.key
        shown = repr(key[:SHOWN_KEY]) + ("..." if len(key) > SHOWN_KEY else "")
        self.findings.append(
            Finding(
                "COMPACTED_KEY_REPEATED",
                Severity.WARNING,
                met.path,
                f"key {shown} is also at offset {first}, both below the cleaner checkpoint "
                f"{self.section.checkpoint}: a cleaning keeps one record of a key there "
                "(Cleaner.shouldRetainRecord keeps only the offset its key map holds)",
                offset=met.offset,
                position=met.position,
            )
        )

    def _tombstone(self, log: FileRecords, batch: Batch, offset: int, horizon: int | None) -> None:
        if horizon is None:
            self.findings.append(
                Finding(
                    "COMPACTED_TOMBSTONE_UNSTAMPED",
                    Severity.WARNING,
                    log.path,
                    f"a tombstone below the cleaner checkpoint {self.section.checkpoint} in a "
                    "batch with no delete horizon: a cleaning "
                    "that keeps a tombstone stamps its batch with its time + "
                    "delete.retention.ms (MemoryRecords.filterTo)",
                    offset=offset,
                    position=batch.position,
                )
            )
            return
        self._count(self._tombstones, log.path, horizon, offset, batch)

    def _count(
        self,
        table: dict[tuple[str, int], _Horizon],
        path: str,
        horizon: int,
        offset: int,
        batch: Batch,
    ) -> None:
        found = table.get((path, horizon))
        if found is None:
            if len(table) >= MAX_HORIZONS:
                latest = max(table, key=lambda k: k[1])
                if latest[1] <= horizon:
                    return
                del table[latest]
            found = table[(path, horizon)] = _Horizon(0, offset, batch.position, batch.producer_id)
        found.count += 1

    def _marker(self, log: FileRecords, batch: Batch) -> None:
        """A control batch: the end of its producer's transaction (an empty one, whose record a
        cleaning dropped, ends nothing: CleanedTransactionMetadata.onControlBatchRead)."""
        kind = log.marker_type(batch)
        if kind not in (ABORT, COMMIT):
            return
        producer = batch.producer_id
        txn = self._open.pop(producer, None)
        known = self._known is None or producer in self._known
        if self._known is not None:
            self._known.add(producer)
        if txn is not None:
            self._waiting -= len(txn.keys)
            if kind == COMMIT:
                for met in txn.keys:
                    self._key(met)
            elif txn.records:
                self._aborted_kept(batch, txn)
        below = batch.base_offset < self.section.checkpoint
        horizon = batch.delete_horizon_ms
        if below and known and txn is None and horizon is not None:
            self._count(self._markers, log.path, horizon, batch.base_offset, batch)

    def _aborted_kept(self, marker: Batch, txn: _OpenTxn) -> None:
        assert txn.first is not None
        path, first, position = txn.first
        listed = (marker.producer_id, marker.base_offset) in self._aborted_listed()
        why = (
            "read_committed consumers skip them (the .txnindex lists the transaction)"
            if listed
            else "no .txnindex entry lists the transaction: read_committed consumers read "
            "them as committed, and the cleaner, which learns of aborted transactions from "
            "the .txnindex, keeps them"
        )
        self.findings.append(
            Finding(
                "COMPACTED_ABORTED_KEPT",
                Severity.WARNING if listed else Severity.ERROR,
                path,
                f"{txn.records} record(s) from offset {first} of producer "
                f"{marker.producer_id}'s transaction aborted at offset {marker.base_offset}, "
                f"below the cleaner checkpoint {self.section.checkpoint}: a cleaning removes an "
                f"aborted transaction's records (Cleaner: discardBatchRecords); {why}",
                offset=first,
                position=position,
            )
        )

    def _aborted_listed(self) -> set[tuple[int, int]]:
        """(producer id, last offset) of the current segment's ``.txnindex`` entries."""
        if self._aborted is None:
            self._aborted = set()
            index = None if self._segment is None else self._segment.txn_index
            if index is not None:
                self._aborted = {(t.producer_id, t.last_offset) for t in index}
        return self._aborted

    # -- once every segment is walked -----------------------------------------------------------

    def deliver(self, results: Iterable[SegmentResult]) -> None:
        """``finish``, each finding handed to the walk of the segment it names."""
        by_path = {r.scan.path: r for r in results if r.scan is not None}
        for finding in self.finish():
            target = by_path.get(finding.path)
            if target is not None:
                target.sink.add(finding)

    def finish(self) -> list[Finding]:
        """The findings; none where the broker would not trust the checkpoint (outside the
        log's offsets: LogCleanerManager cleans such a log from its start again)."""
        from kdump.log_cleaner import first_dirty_offset

        if self._segment is not None and not self._ended:
            self.skipped(self._segment)
        section = self.section
        if self.log_end is None or (
            first_dirty_offset(section.checkpoint, section.log_start, self.log_end)
            != section.checkpoint
        ):
            return []
        out = list(self.findings)
        if self.latest_horizon is not None:
            cleaned_by = self.latest_horizon - section.delete_retention_ms
            out += self._expired(self._tombstones, cleaned_by, "tombstone", "tombstones")
            out += self._expired(self._markers, cleaned_by, "marker", "markers")
        if self.full_at is not None:
            out.append(self._limited())
        return out

    def _expired(
        self, table: dict[tuple[str, int], _Horizon], cleaned_by: int, one: str, many: str
    ) -> list[Finding]:
        from kdump.log_cleaner import delete_horizon_passed

        section = self.section
        code = "COMPACTED_TOMBSTONE_EXPIRED" if one == "tombstone" else "COMPACTED_MARKER_EXPIRED"
        what = (
            "tombstones whose horizon has passed"
            if one == "tombstone"
            else "the markers of transactions with no batch left whose horizon has passed"
        )
        out = []
        for (path, horizon), h in sorted(table.items(), key=lambda kv: kv[1].offset):
            if not delete_horizon_passed(horizon, cleaned_by):
                continue
            whose = f" (producer {h.producer_id})" if one == "marker" else ""
            out.append(
                Finding(
                    code,
                    Severity.WARNING,
                    path,
                    f"{h.count} {one if h.count == 1 else many} with delete horizon {horizon} "
                    f"below the cleaner checkpoint {section.checkpoint}, the first at offset "
                    f"{h.offset}{whose}: the latest horizon stamped in this partition, "
                    f"{self.latest_horizon}, shows a cleaning at {cleaned_by} or later "
                    f"(delete.retention.ms {section.delete_retention_ms}, "
                    f"{section.delete_retention_source}), and a cleaning drops {what}",
                    offset=h.offset,
                    position=h.position,
                )
            )
        return out

    def _limited(self) -> Finding:
        assert self.full_at is not None
        path, offset = self.full_at
        return Finding(
            "COMPACTED_KEY_CHECK_LIMITED",
            Severity.INFO,
            path,
            f"the key check held {len(self.keys)} keys ({self.section.key_memory} bytes, "
            f"--compaction-key-memory) and was full at offset {offset}: keys met for the "
            "first time from there on are not checked for repeats (those held still are)",
            offset=offset,
        )


def check_in_order(
    log: UnifiedLog,
    segments: Sequence[LogSegment],
    options: VerifyOptions,
    cleaned: CleanedSection | None,
    keep_open: bool = False,
) -> list[SegmentResult]:
    """The walks of ``segments`` of ``log`` (some or all of them, by base offset) with every
    check of each and, with a ``cleaned`` section, its checks riding on them: their
    findings go to the walk of the segment each names. The results are in ``segments``' order."""
    if cleaned is None:
        return [check_segment(s, options, keep_open=keep_open) for s in segments]
    check = CleanedSectionCheck(cleaned)
    given = {s.slot for s in segments}
    results: dict[int, SegmentResult] = {}
    for segment in log.all_segments:
        has_log = LOG_SUFFIX in segment.files
        if segment.slot not in given:
            if has_log:
                check.skipped(segment)
            continue
        if has_log:
            check.begin(segment)
        results[segment.slot] = check_segment(segment, options, check, keep_open)
    check.deliver(results.values())
    return [results[s.slot] for s in segments]


__all__ = [
    "DEFAULT_KEY_MEMORY",
    "CleanedSection",
    "CleanedSectionCheck",
    "check_in_order",
    "cleaned_section",
    "cleaned_sections",
]
