"""What the broker's LogLoader does first, before it loads a partition's segments: it settles the
files an interrupted delete, compaction or split left (``LogLoader.load`` and
``removeTempFilesAndCollectSwapFiles``):

1. every ``.deleted`` file is deleted (retention, a truncation or a compaction had removed
   it from the log; its asynchronous delete did not happen), but a KRaft snapshot's
   ``.checkpoint.deleted``, which the metadata log's own recovery settles;
2. a ``.swap`` file at or above the lowest ``.cleaned`` file's offset is deleted (a split that
   did not finish, KAFKA-6264), then every ``.cleaned`` file (a compaction's output that was
   never swapped in: the segments it was to replace are still in place);
3. the remaining ``.swap`` files complete their swap: every other file whose name starts with an
   offset from the lowest swapped segment's base offset up to the end of the highest one (its
   next offset) is deleted (the segments the compaction or split replaced), and each ``.swap``
   file is renamed without its suffix.

``settle`` works this out from a partition's file names (and the ``.log.swap`` files' batches);
verify says it, and ``kdump recover`` does it (each deleted file kept as a backup).
"""

from __future__ import annotations

from kdump.format.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    KRAFT_SNAPSHOT_DELETED_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    is_kdump_leftover,
    offset_in_name,
    parse_kept_log,
)
from kdump.storage.base import Storage
from kdump.tuples import NamedTuple


class Settlement:
    """What LogLoader does to a partition's leftover files at startup: the names it deletes,
    each with why, and the ``.swap`` files it renames (old name, new name), in that order."""

    def __init__(self) -> None:
        self.deleted: list[tuple[str, str]] = []
        self.renamed: list[tuple[str, str]] = []
        self.swapped: tuple[int, int] | None = None
        """The offsets the completed swaps cover (first, next): segments there are replaced."""

    def __bool__(self) -> bool:
        return bool(self.deleted or self.renamed)

    def why(self, name: str) -> str | None:
        """What the broker does with ``name`` at startup, or None (nothing)."""
        for deleted, why in self.deleted:
            if deleted == name:
                return why
        for old, new in self.renamed:
            if old == name:
                return f"the broker completes the swap at startup: renamed to {new}"
        return None


def settle(storage: Storage) -> Settlement:
    """LogLoader's first three passes over the files of the partition in ``storage``."""
    names = sorted(storage.files())
    out = Settlement()
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    swaps = [n for n in names if n.endswith(SWAP_SUFFIX)]
    lowest_cleaned = min((_offset(n) for n in cleaned), default=None)
    for name in names:
        # a KRaft snapshot marked for deletion is KafkaMetadataLog's to delete, not LogLoader's
        if name.endswith(DELETED_SUFFIX) and not name.endswith(KRAFT_SNAPSHOT_DELETED_SUFFIX):
            out.deleted.append((name, _DELETED))
    valid = []
    for name in swaps:
        if lowest_cleaned is not None and _offset(name) >= lowest_cleaned:
            out.deleted.append((name, _SPLIT))
        else:
            valid.append(name)
    out.deleted += [(name, _CLEANED) for name in cleaned]
    logs = [n for n in valid if n.removesuffix(SWAP_SUFFIX).endswith(LOG_SUFFIX)]
    if logs:
        first = min(_offset(n) for n in logs)
        after = max(_next_offset(storage, n) for n in logs)
        out.swapped = (first, after)
        replaced = f"a segment the swap of offsets {first}..{after - 1} replaces"
        for name in names:
            offset = offset_in_name(name)
            if name in swaps or offset is None or not first <= offset < after:
                continue
            if name.endswith(DELETED_SUFFIX) or name.endswith(CLEANED_SUFFIX):
                continue  # already deleted above
            if is_kdump_leftover(name) or parse_kept_log(name) is not None:
                continue  # kdump's own: not part of the partition
            out.deleted.append((name, f"the broker deletes it at startup: {replaced}"))
    out.renamed = [(name, name.removesuffix(SWAP_SUFFIX)) for name in valid]
    return out


_DELETED = (
    "the broker deletes it at startup, if not before: a file that retention, a truncation or "
    "a compaction took out of the log, deleted file.delete.delay.ms (60 s) later"
)
_SPLIT = (
    "the broker deletes it at startup: part of a segment split that did not finish (at or "
    "above a .cleaned file's offset, KAFKA-6264)"
)
_CLEANED = (
    "the broker deletes it at startup: a compaction's output that was never swapped in (the "
    "segments it was to replace are still in place)"
)


def _offset(name: str) -> int:
    offset = offset_in_name(name)
    return -1 if offset is None else offset


def _next_offset(storage: Storage, name: str) -> int:
    """A swapped segment's next offset (LogSegment.readNextOffset): after its last batch, or
    its base offset when it holds none."""
    log = storage.open_log(name)
    try:
        last = None
        walk = log.walk(0, None, check_crc=False)
        for run in walk:
            last = run.last_offset[-1]
    finally:
        log.close()
    return _offset(name) if last is None else last + 1


# -- the load itself: which segments the broker recovers, where its log then ends ---------------


class SegmentState(NamedTuple):
    """What the load needs to know of one segment (a ``.log`` and its files), in offset order.
    (Records on every command's path: NamedTuples, a tenth of a dataclass's start-up.)"""

    base_offset: int
    size: int
    """Bytes of the ``.log``."""
    has_index: bool
    """Its ``.index`` exists (LogSegment.sanityCheck throws NoSuchFileException without it)."""
    txn_index_corrupt: bool
    """Its ``.txnindex`` fails TransactionIndex.sanityCheck (CorruptIndexException)."""
    valid_bytes: int
    """Where LogSegment.recover would cut it (``size``: nowhere)."""
    recovered_next_offset: int
    """The offset after its last batch that recovery keeps (its base offset: none)."""
    next_offset: int
    """LogSegment.readNextOffset on the files as they are: from the offset index's last entry
    on, the offset after the last whole batch (its base offset when that entry's batch is not
    whole)."""
    next_offset_error: str | None = None
    """What that read throws on (a batch size below the minimum: zeros), if anything."""


class Replay(NamedTuple):
    """One UnifiedLog.rebuildProducerState that reads the log: the producer state loaded from
    the snapshot at ``snapshot`` (None: no usable one, so from the log start offset), then
    every batch from ``from_offset`` up to ``to_offset``."""

    snapshot: int | None
    from_offset: int
    to_offset: int


class Load(NamedTuple):
    """What LogLoader.load does at the broker's next start to a partition's segments (after
    ``settle``), and the facts it then holds."""

    clean_shutdown: bool
    recovery_point: int
    """The recovery-point-offset-checkpoint entry LogManager passes (0 without one)."""
    at_open: tuple[int, ...]
    """Segments recovered as they are opened (loadSegmentFiles): no ``.index``, or a
    ``.txnindex`` that fails its sanity check. A cut there deletes no later segment."""
    unflushed: tuple[int, ...]
    """Segments recoverLog recovers (after an unclean stop: from the one holding the recovery
    point on), up to and including the one it cuts."""
    cut: int | None
    """The unflushed segment recoverLog truncated (every later segment is then deleted)."""
    deleted: tuple[int, ...]
    """Segments deleted after that cut ("we had an invalid message, delete all remaining
    log")."""
    segments: tuple[tuple[int, int], ...]
    """(base offset, bytes) of every segment left, in order; the last is the active one."""
    log_end_offset: int
    snapshots_deleted: tuple[int, ...]
    """Producer snapshots the load deletes (ProducerStateManager.truncateAndReload,
    removeStraySnapshots, a deleted segment's own)."""
    snapshots_written: tuple[int, ...]
    """Producer snapshots the load writes (takeSnapshot as UnifiedLog.rebuildProducerState and
    recoverSegment replay the log), whether or not one was there."""
    failure: str | None = None
    """Why the load throws (the broker then stops starting): the log end read from a segment
    it did not recover, over bytes FileLogInputStream refuses."""
    replays: tuple[Replay, ...] = ()
    """The producer state rebuilds that read the log, in order (recoverSegment's, then the
    load's own)."""
    snapshots_left: tuple[int, ...] = ()
    """The producer snapshots on disk once the load is done, in order: a snapshot can be
    written and deleted again in one load (a segment recovered at open writes one at its end,
    removeStraySnapshots deletes it at the end of the load when it is no segment's base)."""
    producer_state_skipped: bool = False
    """A clean shutdown and no producer snapshot: rebuildProducerState skips the log (it takes
    the missing snapshots for an upgrade) and writes empty ones; the partition starts with no
    producer state."""

    @property
    def recovered(self) -> tuple[int, ...]:
        """Every segment the load runs LogSegment.recover on, in offset order."""
        return tuple(sorted(set(self.at_open) | set(self.unflushed)))

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.segments)


def load(
    segments: list[SegmentState],
    clean_shutdown: bool,
    recovery_point: int,
    log_start_checkpoint: int,
    snapshots: list[int],
    corrupt_snapshots: frozenset[int] = frozenset(),
    recover_log: bool = True,
) -> Load:
    """LogLoader.load's recovery for one partition: loadSegmentFiles (recover a segment with no
    offset index or a corrupt transaction index, truncating it but deleting nothing after it),
    recoverLog (after an unclean stop, every segment from the recovery point's on, in order,
    until one is truncated: every later one deleted), then the log end offset
    (readNextOffset of the last segment) and the producer snapshots the two rebuild and delete
    on the way (``_Snapshots``). ``corrupt_snapshots``: offsets of snapshots that do not parse
    (loadFromSnapshot deletes each and tries the next older); ``recover_log`` False: a
    ``-delete`` directory, whose load skips recoverLog."""
    snaps = _Snapshots(snapshots, corrupt_snapshots)
    size = {s.base_offset: s.size for s in segments}
    next_offset = {s.base_offset: s.next_offset for s in segments}
    loaded: list[int] = []
    at_open = []
    for s in segments:
        if not s.has_index or s.txn_index_corrupt:
            at_open.append(s.base_offset)
            snaps.recover(loaded, s.base_offset, s.recovered_next_offset, log_start_checkpoint)
            size[s.base_offset] = s.valid_bytes
            next_offset[s.base_offset] = s.recovered_next_offset
        loaded.append(s.base_offset)
    unflushed: list[int] = []
    cut = None
    deleted: list[int] = []
    if not clean_shutdown and recover_log and segments:
        by_base = {s.base_offset: s for s in segments}
        floor = max((b for b in loaded if b <= recovery_point), default=loaded[0])
        pending = [b for b in loaded if b >= floor]
        for i, base in enumerate(pending):
            s = by_base[base]
            unflushed.append(base)
            snaps.recover(loaded, base, s.recovered_next_offset, log_start_checkpoint)
            size[base] = s.valid_bytes
            next_offset[base] = s.recovered_next_offset
            # a segment recovered at open was cut then: recovering it again cuts nothing,
            # so nothing after it is deleted (LogLoader.recoverLog sees 0 bytes truncated)
            if s.valid_bytes < s.size and base not in at_open:
                cut, deleted = base, pending[i + 1 :]
                loaded = [b for b in loaded if b not in deleted]
                snaps.segments_deleted(deleted)
                break
    log_start = max(log_start_checkpoint, loaded[0]) if loaded else log_start_checkpoint
    log_end = next_offset[loaded[-1]] if loaded else log_start_checkpoint
    if not recover_log:
        # a directory scheduled for deletion is loaded with next offset 0 (LogLoader.load):
        # its end is never read, and the producer state is rebuilt to 0 (no snapshot written)
        log_end = 0
    failure = None
    if recover_log and loaded and loaded[-1] not in at_open and loaded[-1] not in unflushed:
        last = next(s for s in segments if s.base_offset == loaded[-1])
        if last.next_offset_error is not None:
            failure = (
                f"reading the log end of segment {last.base_offset}, which it does not recover, "
                f"it throws CorruptRecordException ({last.next_offset_error})"
            )
    # deleteSegmentsIfLogStartGreaterThanLogEnd (a log start checkpoint past this end: every
    # segment deleted, the log started empty there) is left to verify's
    # CHECKPOINT_BEYOND_LOG_END, which measures the checkpoint against this end
    snaps.finish(loaded, log_start, log_end, clean_shutdown)
    kept = tuple((b, size[b]) for b in loaded) or ((log_start_checkpoint, 0),)
    return Load(
        clean_shutdown,
        recovery_point,
        tuple(at_open),
        tuple(unflushed),
        cut,
        tuple(deleted),
        kept,
        log_end,
        tuple(sorted(snaps.deleted)),
        tuple(sorted(snaps.written)),
        failure,
        tuple(snaps.replays),
        tuple(sorted(snaps.disk)),
        snaps.skipped,
    )


class _Snapshots:
    """The producer snapshot files through a load, by offset: each recovered segment replays
    its state with a fresh ProducerStateManager (recoverSegment), which reads the snapshots on
    disk then; the log's own one is made before the load and reads them again at its end
    (removeStraySnapshots). Only offsets matter here: when a snapshot is written or deleted,
    never what it holds.

    ProducerStateManager's rules kept: ``takeSnapshot`` writes at the map end offset only when
    that is past the last snapshot offset; ``truncateAndReload(start, end)`` deletes snapshots
    above ``end`` or at or below ``start`` and loads the newest left; the replay of
    ``rebuildProducerState`` snapshots at the base offsets of the last two segments as it
    passes them, and at its end offset."""

    def __init__(self, on_disk: list[int], corrupt: frozenset[int] = frozenset()) -> None:
        self.corrupt = set(corrupt)
        """Snapshots that do not parse (and are deleted when a load reaches them)."""
        self.replays: list[Replay] = []
        self.skipped = False
        self.disk = set(on_disk)
        self.at_start = set(on_disk)
        self.deleted: set[int] = set()
        self.written: set[int] = set()
        self.known_to_log = set(on_disk)
        """The log's own ProducerStateManager's map, read before the load."""

    def _delete(self, offset: int) -> None:
        if offset in self.disk:
            self.disk.discard(offset)
            if offset in self.at_start or offset in self.written:
                self.deleted.add(offset)

    def _write(self, offset: int) -> None:
        self.disk.add(offset)
        self.written.add(offset)
        self.deleted.discard(offset)

    def _rebuild(
        self, segments: list[int], log_start: int, last: int, clean: bool, known: set[int]
    ) -> tuple[int, int]:
        """UnifiedLog.rebuildProducerState with a manager that knows the snapshots ``known``
        (deletions it makes go to disk); its (map end, last snapshot) offsets after."""
        wanted = {last}
        if segments:
            wanted.add(segments[-1])
            if len(segments) > 1:
                wanted.add(segments[-2])
        if not known and clean:
            self.skipped = True
            map_end, snap = 0, 0
            for offset in sorted(wanted):  # second-last base, last base, the end offset
                map_end = offset
                if map_end > snap:
                    self._write(map_end)
                    snap = map_end
            return map_end, snap
        self.skipped = False
        for offset in sorted(known):
            if offset > last or offset <= log_start:
                known.discard(offset)
                self._delete(offset)
        newest = max(known, default=None)
        while newest is not None and newest in self.corrupt:
            # loadFromSnapshot: "Failed to load producer snapshot", deleted, the next older
            known.discard(newest)
            self._delete(newest)
            self.corrupt.discard(newest)
            newest = max(known, default=None)
        map_end = snap = log_start if newest is None else newest
        if last > map_end:
            self.replays.append(Replay(newest, map_end, last))
            floor = max((b for b in segments if b <= map_end), default=None)
            for base in segments:
                if base >= last or (floor is not None and base < floor):
                    continue
                map_end = max(base, map_end, log_start)
                if base in wanted and map_end > snap:
                    self._write(map_end)
                    snap = map_end
        map_end = last
        if map_end > snap:
            self._write(map_end)
            snap = map_end
        return map_end, snap

    def recover(self, segments: list[int], base: int, next_offset: int, log_start: int) -> None:
        """LogLoader.recoverSegment: a fresh manager rebuilt up to ``base`` over ``segments``
        (those loaded so far: as loadSegmentFiles opens them, the earlier ones; in recoverLog,
        all of them, whose last two base offsets it snapshots at), the segment recovered (its
        map end is then ``next_offset``), a snapshot taken."""
        map_end, snap = self._rebuild(segments, log_start, base, False, set(self.disk))
        map_end = max(map_end, next_offset)
        if map_end > snap:
            self._write(map_end)

    def segments_deleted(self, bases: list[int]) -> None:
        """deleteProducerSnapshotsAsync: the snapshot named by each deleted segment's base
        offset, if the log's own manager knew it (it read the directory before the load)."""
        for base in bases:
            if base in self.known_to_log:
                self._delete(base)

    def finish(self, segments: list[int], log_start: int, log_end: int, clean: bool) -> None:
        """removeStraySnapshots (every snapshot not at a segment's base offset but the newest
        such), then the log's own rebuild up to the log end offset."""
        bases = set(segments)
        stray = [o for o in sorted(self.disk) if o not in bases]
        for offset in stray[:-1]:
            self._delete(offset)
        if stray and segments and stray[-1] < max(segments):
            self._delete(stray[-1])  # the newest stray too, below the last segment
        self._rebuild(segments, log_start, log_end, clean, set(self.disk))


__all__ = ["Load", "Replay", "SegmentState", "Settlement", "load", "settle"]
