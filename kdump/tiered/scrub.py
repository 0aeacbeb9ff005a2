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

Then the segments the metadata reads from that the bucket lacks (error), and the overlaps Kafka's
leader-epoch state left both referenced (warning). Where the dump does not hold the metadata
partition of a bucket's partition, that partition is "no metadata given", never orphaned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.errors import InputError
from kdump.progress import NO_PROGRESS, Progress
from kdump.storage import ObjectStore
from kdump.storage.remote.layouts import AIVEN, KAFKA_RSM, RemotePartition, RemoteSegmentRef
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
    partitions: list[RemotePartition], metadata: RemoteLogMetadata, options: ScrubOptions
) -> ScrubResult:
    """Compare the bucket's partitions with the replayed metadata."""
    result = ScrubResult(metadata_partitions=sorted(metadata.read))
    result.findings.extend(metadata.findings)
    in_bucket: dict[tuple[str, int], list[RemotePartition]] = {}
    for p in partitions:
        result.partitions += 1
        result.segments += len(p.segments)
        result.bytes += sum(size for s in p.segments for _, _, size in s.objects)
        if p.topic_id is None or p.layout not in (KAFKA_RSM, AIVEN):
            result.findings.append(_not_tiered(p))
            continue
        in_bucket.setdefault((p.topic_id, p.partition), []).append(p)
    for (topic_id, number), found in sorted(in_bucket.items()):
        if not metadata.covers(topic_id, number):
            result.classes["no-metadata"] += sum(len(p.segments) for p in found)
            result.findings.append(_no_metadata(found[0], metadata))
            continue
        known = metadata.partitions.get((topic_id, number))
        scrubber = _PartitionScrub(found, known, metadata, options, result)
        scrubber.run()
    _absent_partitions(in_bucket, metadata, result)
    return result


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
    found: list[RemotePartition]
    known: PartitionMetadata | None
    metadata: RemoteLogMetadata
    options: ScrubOptions
    result: ScrubResult

    def run(self) -> None:
        listed: set[str] = set()
        referenced = set() if self.known is None else self.known.referenced()
        for p in self.found:
            for ref in p.segments:
                if ref.segment_id is None:
                    continue
                listed.add(ref.segment_id)
                self._segment(p, ref, referenced)
        if self.known is None:
            return
        p = self.found[0]
        for sid in sorted(referenced - listed):
            segment = self.known.segments[sid]
            self._add(
                "SCRUB_SEGMENT_MISSING",
                Severity.ERROR,
                _expected_url(p, segment),
                f"segment {sid} (offsets {segment.start_offset}..{segment.end_offset}, "
                f"{segment.size} bytes) is COPY_SEGMENT_FINISHED and read by consumers, but the "
                "bucket holds none of its objects: fetches of those offsets fail",
                segment.start_offset,
            )
        for epoch, a, b in self.known.overlaps():
            self._add(
                "SCRUB_OVERLAP",
                Severity.WARNING,
                _expected_url(p, b),
                f"in leader epoch {epoch}, segment {b.segment_id} (from {b.leader_epochs[epoch]}) "
                f"starts inside segment {a.segment_id} (to {a.epoch_end(epoch)}), and Kafka keeps "
                "both referenced: fetches of the overlap read the later one, and retention may "
                "delete the earlier one's remaining offsets with it",
                b.leader_epochs[epoch],
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


def _expected_url(p: RemotePartition, segment: SegmentMetadata) -> str:
    """Where the layout puts a segment's .log in this partition's folder."""
    return f"{p.url}/{segment.start_offset:020d}-{segment.segment_id}.log"


def _absent_partitions(
    in_bucket: dict[tuple[str, int], list[RemotePartition]],
    metadata: RemoteLogMetadata,
    result: ScrubResult,
) -> None:
    """Partitions the metadata reads remote segments of, with no object in the bucket: an error
    when the bucket holds other partitions of the topic (the listing covers it), else one note
    (the URL is another topic's prefix, or another bucket)."""
    topics = {topic_id for topic_id, _ in in_bucket}
    elsewhere = 0
    for key, known in sorted(metadata.partitions.items()):
        live = known.referenced()
        if key in in_bucket or not live:
            continue
        if key[0] not in topics:
            elsewhere += 1
            continue
        first = min(known.segments[s].start_offset for s in live)
        result.findings.append(
            Finding(
                "SCRUB_PARTITION_MISSING",
                Severity.ERROR,
                f"{known.name} (topic id {known.topic_id})",
                f"{len(live)} segment(s) from offset {first} are COPY_SEGMENT_FINISHED and read "
                "by consumers, but the bucket holds no object of this partition",
                offset=first,
            )
        )
    if elsewhere:
        result.findings.append(
            Finding(
                "SCRUB_PARTITIONS_ELSEWHERE",
                Severity.INFO,
                REMOTE_LOG_METADATA_TOPIC,
                f"{elsewhere} partition(s) of topics with no object under this URL have remote "
                "segments in the metadata: not compared (another prefix or bucket)",
            )
        )


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
    from kdump.storage.remote.layouts import parse_listing

    store = store or ObjectStore()
    metadata = read_remote_log_metadata(metadata_paths, partition_count, store)
    layouts = parse_listing(store.listing(url).items())
    if not layouts.partitions and not layouts.puffins:
        # a mistyped bucket or prefix, not "every segment missing"
        raise InputError(url, "holds no tiered-storage segments in a layout kdump knows")
    result = scrub(layouts.partitions, metadata, options)
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
