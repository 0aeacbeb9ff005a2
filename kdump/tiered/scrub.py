"""`kdump tiered scrub`: a bucket's listing against what ``__remote_log_metadata`` says of each
segment (kdump.tiered.metadata), as typed findings.

Per user partition in the bucket (Kafka's RemoteStorageManager layout or Aiven's: both name a
segment by its RemoteLogSegmentId), each segment's objects are classified by the state Kafka's
replay leaves it in (docs/tiered.md):

- unknown to the metadata, or its deletion (or its partition's) finished: an orphan, which
  Kafka will never delete (warning);
- COPY_SEGMENT_STARTED, or DELETE_SEGMENT_STARTED, for longer than the grace period: a copy or a
  deletion that stopped (warning); within it, one under way (info);
- COPY_SEGMENT_FINISHED but superseded by a later upload (a new leader's re-upload): tracked by
  Kafka, deleted by retention (info);
- COPY_SEGMENT_FINISHED and read by consumers: its objects must all be there (error if not).

Then the segments the metadata reads from that the bucket lacks (error), whether their
partition's folder is there or not, and the overlaps Kafka's leader-epoch state left both
referenced (warning). Where the dump does not hold the metadata partition of a bucket's
partition, that partition is "no metadata given", never orphaned.

A partition found under two prefixes (a backup beside the broker's objects) is compared once
per prefix and named a duplicate: the broker reads under one only. A URL naming one partition's
folder, or one Aiven topic's, is compared with that partition's or topic's metadata alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.errors import InputError
from kdump.progress import NO_PROGRESS, Progress
from kdump.storage import ObjectStore
from kdump.storage.remote.layouts import (
    AIVEN,
    KAFKA_RSM,
    LAYOUT_NAMES,
    Folder,
    Layouts,
    RemotePartition,
    RemoteSegmentRef,
    folder_readings,
    parse_listing,
    partition_folder,
    segment_stem,
)
from kdump.storage.remote.urls import join_url
from kdump.tiered.metadata import (
    COPY_SEGMENT_FINISHED,
    COPY_SEGMENT_STARTED,
    DEFAULT_METADATA_PARTITIONS,
    DELETE_PARTITION_FINISHED,
    DELETE_SEGMENT_STARTED,
    REMOTE_LOG_METADATA_TOPIC,
    PartitionMetadata,
    RemoteLogMetadata,
    SegmentMetadata,
    TopicIdPartition,
    read_remote_log_metadata,
)
from kdump.units import duration, iso

DEFAULT_GRACE_MS = 60 * 60 * 1000
"""--grace: one hour. The broker copies a closed segment (at most segment.bytes, 1 GiB by
default) in one call between COPY_SEGMENT_STARTED and COPY_SEGMENT_FINISHED, seconds to minutes
even under remote.log.manager.copy.max.bytes.per.second quotas of a few MiB/s; its task runs every
remote.log.manager.task.interval.ms (30 s). A STARTED record an hour old is a copy whose broker
died or gave up without the DELETE_SEGMENT_STARTED a failed copy writes."""

_UNDER_WAY = {
    COPY_SEGMENT_STARTED: (
        "copying",
        "COPY",
        "a copy that stopped; Kafka lists it as unreferenced and deletes it only when retention "
        "reaches it",
    ),
    DELETE_SEGMENT_STARTED: (
        "deleting",
        "DELETE",
        "a deletion that stopped; the leader retries it",
    ),
}
"""State -> (class counted, finding code's middle, what a stopped one means)."""

CLASSES = ("live", "superseded", "copying", "deleting", "stuck", "orphan", "no-metadata")


@dataclass
class ScrubOptions:
    now_ms: int
    grace_ms: int = DEFAULT_GRACE_MS


@dataclass
class ScrubResult:
    findings: list[Finding] = field(default_factory=list)
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    classes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    metadata_partitions: list[int] = field(default_factory=list)
    deep: Any = None
    """The VerifyResult of --deep (every batch CRC-checked), or None."""

    def all_findings(self) -> list[Finding]:
        return self.findings + ([] if self.deep is None else self.deep.findings)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.all_findings():
            out[f.severity.value] += 1
        return out

    def summary(self) -> dict[str, Any]:
        out = {
            "partitions": self.partitions,
            "segments": self.segments,
            "bytes": self.bytes,
            "segments_by_state": dict(self.classes),
            "metadata_partitions_read": self.metadata_partitions,
            "findings": self.counts(),
        }
        if self.deep is not None:
            out["deep"] = self.deep.summary()
        return out


def scrub(
    layouts: Layouts, metadata: RemoteLogMetadata, options: ScrubOptions, url: str
) -> ScrubResult:
    """Compare the partitions listed under ``url`` with the replayed metadata."""
    result = ScrubResult(metadata_partitions=sorted(metadata.read))
    result.findings.extend(metadata.findings)
    copies: dict[TopicIdPartition, list[RemotePartition]] = {}
    for p in layouts.partitions:
        result.partitions += 1
        result.segments += len(p.segments)
        result.bytes += sum(size for s in p.segments for _, _, size in s.objects)
        if p.topic_id is None or p.layout not in (KAFKA_RSM, AIVEN):
            result.findings.append(_not_tiered(p))
            continue
        copies.setdefault((p.topic_id, p.partition), []).append(p)
    iceberg = set(layouts.puffins)
    for key, found in sorted(copies.items()):
        _scrub_copies(key, found, metadata, options, result, iceberg)
    scope = _Scope.of(url, copies, metadata)
    _absent_partitions(scope, copies, metadata, iceberg, result)
    return result


def _scrub_copies(
    key: TopicIdPartition,
    found: list[RemotePartition],
    metadata: RemoteLogMetadata,
    options: ScrubOptions,
    result: ScrubResult,
    iceberg: set[str],
) -> None:
    """One partition, under one prefix or more. Kafka reads and deletes under the one prefix its
    RemoteStorageManager is configured with, so each copy is compared on its own: a stale
    backup's objects never stand in for the broker's missing ones (issue 27)."""
    if len(found) > 1:
        result.findings.append(_duplicate(found))
    if not metadata.covers(*key):
        result.classes["no-metadata"] += sum(len(p.segments) for p in found)
        result.findings.append(_no_metadata(found[0], metadata))
        return
    known = metadata.partitions.get(key)
    for p in found:
        _PartitionScrub(p, known, metadata, options, result, iceberg).run()
    if known is not None:
        result.findings.extend(_overlaps(found[0], known))


def _duplicate(found: list[RemotePartition]) -> Finding:
    first = found[0]
    places = ", ".join(f"{p.prefix} ({LAYOUT_NAMES[p.layout]})" for p in found)
    return Finding(
        "SCRUB_DUPLICATE_PARTITION",
        Severity.WARNING,
        first.url,
        f"{first.name} (topic id {first.topic_id}) is under {len(found)} prefixes: {places}. "
        "The broker reads and deletes under the one prefix it is configured with; the others "
        "are copies it never reads nor deletes. Each copy was compared on its own; scrub the "
        "broker's prefix alone for its verdict",
    )


def _not_tiered(p: RemotePartition) -> Finding:
    return Finding(
        "SCRUB_NOT_KIP405",
        Severity.INFO,
        p.url,
        f"{p.name}: segments named by offset only ({p.layout}), not by a RemoteLogSegmentId: "
        f"not written by a RemoteStorageManager, so {REMOTE_LOG_METADATA_TOPIC} does not "
        "describe them (kdump verify checks them)",
    )


def _no_metadata(p: RemotePartition, metadata: RemoteLogMetadata) -> Finding:
    assert p.topic_id is not None
    number = metadata.metadata_partition(p.topic_id, p.partition)
    return Finding(
        "SCRUB_NO_METADATA",
        Severity.INFO,
        p.url,
        f"{p.name} (topic id {p.topic_id}): no metadata given: its segment states are in "
        f"{REMOTE_LOG_METADATA_TOPIC}-{number} (of {metadata.partition_count}), which the dump "
        f"does not hold; its {len(p.segments)} segment(s) were not compared",
    )


@dataclass
class _PartitionScrub:
    """One copy of a partition (one folder) against its replayed metadata."""

    partition: RemotePartition
    known: PartitionMetadata | None
    metadata: RemoteLogMetadata
    options: ScrubOptions
    result: ScrubResult
    iceberg: set[str]
    """Segment ids the bucket holds as Iceberg rows (Aiven segment.format=iceberg)."""

    def run(self) -> None:
        p = self.partition
        referenced = set() if self.known is None else self.known.referenced()
        listed = {ref.segment_id for ref in p.segments if ref.segment_id is not None}
        for ref in p.segments:
            if ref.segment_id is not None:
                self._segment(p, ref, referenced)
        if self.known is None:
            return
        for segment in _by_offset(self.known, referenced - listed - self.iceberg):
            self.result.findings.append(
                _segment_missing(segment, [(p.layout, p.url)], f"{p.url} holds none of its objects")
            )

    def _add(
        self, code: str, severity: Severity, path: str, message: str, offset: int | None = None
    ) -> None:
        self.result.findings.append(Finding(code, severity, path, message, offset=offset))

    def _segment(self, p: RemotePartition, ref: RemoteSegmentRef, referenced: set[str]) -> None:
        sid = ref.segment_id
        assert sid is not None
        where = ref.url("log")
        known = self.known
        segment = None if known is None else known.segments.get(sid)
        if segment is None:
            self._unknown(p, ref, where)
            return
        if segment.state in _UNDER_WAY:
            self._under_way(segment, where)
        elif segment.state == COPY_SEGMENT_FINISHED and sid not in referenced:
            self._count("superseded")
            self._add(
                "SCRUB_SUPERSEDED",
                Severity.INFO,
                where,
                f"segment {sid} (offsets {segment.start_offset}..{segment.end_offset}) was "
                "uploaded again by a later leader: Kafka marks it unreferenced and deletes it "
                "by retention (normal after a leader change)",
                segment.start_offset,
            )
        elif segment.state == COPY_SEGMENT_FINISHED:
            self._count("live")
            self._live(ref, segment, where)

    def _under_way(self, segment: SegmentMetadata, where: str) -> None:
        """A copy or a deletion STARTED: under way within --grace, stopped beyond it."""
        verb, code, stopped = _UNDER_WAY[segment.state]
        age = self.options.now_ms - segment.event_timestamp
        stuck = age > self.options.grace_ms
        self._count("stuck" if stuck else verb)
        self._add(
            f"SCRUB_{code}_STUCK" if stuck else f"SCRUB_{code}_IN_PROGRESS",
            Severity.WARNING if stuck else Severity.INFO,
            where,
            f"segment {segment.segment_id} is {segment.state_name} since "
            f"{iso(segment.event_timestamp)} ({duration(max(age, 0))} before --now), by broker "
            f"{segment.broker_id}" + (f": longer than --grace, {stopped}" if stuck else ""),
            segment.start_offset,
        )

    def _count(self, name: str) -> None:
        self.result.classes[name] += 1

    def _unknown(self, p: RemotePartition, ref: RemoteSegmentRef, where: str) -> None:
        sid = ref.segment_id
        assert sid is not None and p.topic_id is not None
        known = self.known
        self._count("orphan")
        if known is not None and sid in known.deleted:
            gone = known.deleted[sid]
            why = (
                f"its deletion finished (DELETE_SEGMENT_FINISHED at "
                f"{iso(gone.event_timestamp)}) but its objects remain"
            )
        elif known is not None and sid in known.deleted_segments_of_partition:
            why = "its partition's deletion finished (DELETE_PARTITION_FINISHED)"
        elif (
            known is not None
            and known.partition_delete is not None
            and (known.partition_delete[0] == DELETE_PARTITION_FINISHED)
        ):
            why = "no metadata names it and its partition's deletion finished"
        else:
            first = self.metadata.truncated(p.topic_id, p.partition)
            if first is not None:
                number = self.metadata.metadata_partition(p.topic_id, p.partition)
                self._add(
                    "SCRUB_UNTRACKED",
                    Severity.INFO,
                    where,
                    f"segment {sid}: no metadata names it, but {REMOTE_LOG_METADATA_TOPIC}-"
                    f"{number} starts at offset {first} (older records deleted by retention): "
                    "it may be older than that history; not called an orphan",
                    ref.base_offset,
                )
                return
            why = "no metadata names it"
        size = sum(s for _, _, s in ref.objects)
        self._add(
            "SCRUB_ORPHAN",
            Severity.WARNING,
            where,
            f"segment {sid} ({len(ref.objects)} object(s), {size} bytes): {why}; Kafka will "
            "never read or delete it",
            ref.base_offset,
        )

    def _live(self, ref: RemoteSegmentRef, segment: SegmentMetadata, where: str) -> None:
        if not ref.complete:
            have = ", ".join("." + s for s, _, _ in ref.objects)
            self._add(
                "SCRUB_SEGMENT_INCOMPLETE",
                Severity.ERROR,
                where,
                f"segment {segment.segment_id} is COPY_SEGMENT_FINISHED and read by consumers, "
                f"but the bucket holds only {have}: fetches of offsets "
                f"{segment.start_offset}..{segment.end_offset} fail",
                segment.start_offset,
            )
            return
        found = ref.object("log")
        if ref.layout == KAFKA_RSM and found is not None and found[1] != segment.size:
            self._add(
                "SCRUB_SIZE_MISMATCH",
                Severity.ERROR,
                found[0],
                f"the .log object has {found[1]} bytes, the metadata says the segment copied had "
                f"{segment.size} (segmentSizeInBytes)",
                segment.start_offset,
            )


def _overlaps(p: RemotePartition, known: PartitionMetadata) -> Iterator[Finding]:
    """Once per partition, however many copies the bucket holds: a fact of the metadata."""
    for epoch, a, b in known.overlaps():
        yield Finding(
            "SCRUB_OVERLAP",
            Severity.WARNING,
            _log_url(p.url, b),
            f"in leader epoch {epoch}, segment {b.segment_id} (from {b.leader_epochs[epoch]}) "
            f"starts inside segment {a.segment_id} (to {a.epoch_end(epoch)}), and Kafka keeps "
            "both referenced: fetches of the overlap read the later one, and retention may "
            "delete the earlier one's remaining offsets with it",
            offset=b.leader_epochs[epoch],
        )


def _by_offset(known: PartitionMetadata, segment_ids: set[str]) -> list[SegmentMetadata]:
    return sorted((known.segments[s] for s in segment_ids), key=lambda s: s.start_offset)


def _log_url(folder: str, segment: SegmentMetadata) -> str:
    """Where the layouts naming segments by id put a segment's .log in a partition's folder."""
    return join_url(folder, f"{segment_stem(segment.start_offset, segment.segment_id)}.log")


def _segment_missing(
    segment: SegmentMetadata, folders: list[tuple[str, str]], where: str
) -> Finding:
    """SCRUB_SEGMENT_MISSING; ``folders``: (layout, partition folder) its objects were looked
    for in, ``where``: what is there instead."""
    if len(folders) == 1:
        names = f"{LAYOUT_NAMES[folders[0][0]]} names"
    else:
        names = "; ".join(
            f"{LAYOUT_NAMES[layout]}: {_log_url(f, segment)}" for layout, f in folders
        )
    return Finding(
        "SCRUB_SEGMENT_MISSING",
        Severity.ERROR,
        _log_url(folders[0][1], segment),
        f"segment {segment.segment_id} (offsets {segment.start_offset}..{segment.end_offset}, "
        f"{segment.size} bytes) is COPY_SEGMENT_FINISHED and read by consumers, but {where} "
        f"(looked for {names}): fetches of those offsets fail",
        offset=segment.start_offset,
    )


@dataclass(frozen=True)
class _Scope:
    """What the bucket URL covers: one folder (a partition's, an Aiven topic's) when its last
    components read as one the metadata or the listing confirms, else every partition below
    it. Within it, a partition the metadata reads remote segments of lacks them if no object
    of it is listed, whatever the listing holds besides (issue 28)."""

    url: str
    folder: Folder | None
    places: list[tuple[str, str]]
    """(layout, prefix) where a partition with no object was looked for: the folder's; else
    where the bucket's partitions are; in an empty bucket, the URL in each layout."""

    @classmethod
    def of(
        cls, url: str, copies: dict[TopicIdPartition, list[RemotePartition]], m: RemoteLogMetadata
    ) -> _Scope:
        listed = [p for found in copies.values() for p in found]
        named = [(p.topic, p.topic_id, p.partition) for p in m.partitions.values()]
        named += [(p.topic, p.topic_id or "", p.partition) for p in listed]
        for folder in folder_readings(url):
            if any(folder.holds(*n) for n in named):
                return cls(url, folder, [(folder.layout, folder.prefix)])
        places = sorted({(p.layout, p.prefix) for p in listed})
        return cls(url, None, places or [(KAFKA_RSM, url), (AIVEN, url)])

    def covers(self, known: PartitionMetadata) -> bool:
        return self.folder is None or self.folder.holds(
            known.topic, known.topic_id, known.partition
        )

    def folders(self, known: PartitionMetadata) -> list[tuple[str, str]]:
        """(layout, partition folder) of ``known`` at each place."""
        return [
            (layout, partition_folder(layout, prefix, known.topic, known.partition, known.topic_id))
            for layout, prefix in self.places
        ]


def _absent_partitions(
    scope: _Scope,
    copies: dict[TopicIdPartition, list[RemotePartition]],
    metadata: RemoteLogMetadata,
    iceberg: set[str],
    result: ScrubResult,
) -> None:
    """Partitions the metadata reads remote segments of, with no object in the bucket: each
    such segment missing when the URL covers the partition, else one note for all (the URL
    is one topic's or partition's folder)."""
    outside = 0
    for key, known in sorted(metadata.partitions.items()):
        live = known.referenced() - iceberg
        if key in copies or not live:
            continue
        if not scope.covers(known):
            outside += 1
            continue
        where = f"no object of {known.name} (topic id {known.topic_id}) is under {scope.url}"
        folders = scope.folders(known)
        for segment in _by_offset(known, live):
            result.findings.append(_segment_missing(segment, folders, where))
    if outside:
        assert scope.folder is not None
        result.findings.append(
            Finding(
                "SCRUB_PARTITIONS_ELSEWHERE",
                Severity.INFO,
                scope.url,
                f"{outside} partition(s) with remote segments in the metadata are outside this "
                f"URL, the {LAYOUT_NAMES[scope.folder.layout]} folder of "
                f"{_folder_of(scope.folder)}: not compared",
            )
        )


def _folder_of(folder: Folder) -> str:
    if folder.partition is None:
        return f"topic {folder.topic} (topic id {folder.topic_id})"
    return f"{folder.topic}-{folder.partition} (topic id {folder.topic_id})"


def scrub_bucket(
    url: str,
    metadata_paths: list[str],
    options: ScrubOptions,
    partition_count: int = DEFAULT_METADATA_PARTITIONS,
    deep: VerifyOptions | None = None,
    progress: Progress = NO_PROGRESS,
    jobs: int = 1,
    store: ObjectStore | None = None,
) -> ScrubResult:
    """List ``url``, replay the metadata under ``metadata_paths``, compare; with ``deep``, every
    remote segment is checked as `kdump verify` checks it (each batch's CRC)."""

    store = store or ObjectStore()
    metadata = read_remote_log_metadata(metadata_paths, partition_count, store)
    layouts = parse_listing(store.listing(url).items())
    result = scrub(layouts, metadata, options, store.full_url(url))
    looked_for = any(f.code == Code.SCRUB_SEGMENT_MISSING for f in result.findings)
    if not layouts.partitions and not layouts.puffins and not looked_for:
        raise InputError(
            url,
            "holds no tiered-storage segments in a layout kdump knows, and the metadata names "
            "no COPY_SEGMENT_FINISHED segment that belongs there",
        )
    if layouts.puffins:
        result.findings.append(
            Finding(
                "SCRUB_ICEBERG",
                Severity.INFO,
                url,
                f"{len(layouts.puffins)} Iceberg segment manifest(s) (Aiven segment.format="
                "iceberg): those segments are rows of an Iceberg table, not compared",
            )
        )
    if deep is not None and layouts.partitions:
        from kdump.checks.verify import verify_paths

        urls = [p.url for p in layouts.partitions]
        result.deep = verify_paths(urls, deep, progress, jobs, store)
    return result


__all__ = [
    "DEFAULT_GRACE_MS",
    "ScrubOptions",
    "ScrubResult",
    "scrub",
    "scrub_bucket",
]
