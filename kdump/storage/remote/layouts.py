"""Which layout of tiered storage a bucket's objects follow, told from their keys alone.

- ``kafka-rsm``: Kafka's own RemoteStorageManager of its tests (LocalTieredStorage,
  RemoteLogSegmentFileset): ``<topic>-<partition>-<topicId>/<offset20>-<segmentId>.<suffix>``,
  suffixes ``log index timeindex txnindex snapshot leader_epoch_checkpoint``, byte copies of the
  broker's files.
- ``aiven``: Aiven's tiered-storage-for-apache-kafka (ObjectKeyFactory):
  ``<prefix><topic>-<topicId>/<partition>/<offset20>-<segmentId>.{log,indexes,rsm-manifest}``
  (kdump.storage.remote.aiven); before 2023-10 one object per index instead of ``.indexes``.
- ``kafka-files``: Kafka's own file names in ``<topic>-<partition>/`` (Pinterest's uploader:
  ``<prefix>/[<hash bits>/]<cluster>/<topic>-<partition>/<offset20>.{log,index,timeindex}`` and
  ``offset.wm``; or a copied partition directory, a backup).

Keys are read from their end, so any prefix (Aiven's ``key.prefix``, Pinterest's base prefix,
hash level and cluster) is allowed above. Topic ids and segment ids are Kafka's Uuid.toString()
(22 url-safe base64 characters, which may hold ``-``): the last 22 characters of a component.
Aiven's ``segment.format=iceberg`` writes no such objects: its Puffin segment manifests
(``<table>/metadata/<segmentId>.puffin``) are recognised and named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from kdump.format.names import LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA, PINTEREST_WATERMARK
from kdump.storage.remote.urls import join_url, url_name, url_parent

KAFKA_RSM = "kafka-rsm"
AIVEN = "aiven"
KAFKA_FILES = "kafka-files"
LAYOUT_NAMES = {
    KAFKA_RSM: "Kafka RemoteStorageManager (LocalTieredStorage)",
    AIVEN: "Aiven tiered-storage-for-apache-kafka",
    KAFKA_FILES: "Kafka file names (Pinterest tiered storage, or a copied partition directory)",
}

_UUID = r"[A-Za-z0-9_-]{22}"
_SEGMENT_NAME = re.compile(rf"^(?P<offset>\d{{20}})-(?P<id>{_UUID})\.(?P<suffix>[a-z_-]+)$")
_PLAIN_NAME = re.compile(r"^(?P<offset>\d{20})\.(?P<suffix>log|index|timeindex|txnindex|snapshot)$")
_RSM_DIR = re.compile(rf"^(?P<topic>.+)-(?P<partition>\d+)-(?P<id>{_UUID})$")
_TOPIC_ID_DIR = re.compile(rf"^(?P<topic>.+)-(?P<id>{_UUID})$")
_PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_PUFFIN = re.compile(rf"^(?P<id>{_UUID})\.puffin$")

RSM_SUFFIXES = ("log", "index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint")
AIVEN_SUFFIXES = ("log", "indexes", "rsm-manifest")
AIVEN_LEGACY_SUFFIXES = ("index", "timeindex", "snapshot", "txnindex", LEADER_EPOCH_CHECKPOINT)
"""Aiven's per-index objects of uploads before 2023-10 (one object per index, no ``.indexes``)."""
WATERMARK = PINTEREST_WATERMARK
PARTITION_EXTRAS = (WATERMARK, "_metadata", LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)


@dataclass(frozen=True)
class RemoteSegmentRef:
    """One segment's objects in a store: plain, picklable data (for --jobs and Spark)."""

    layout: str
    partition_url: str
    base_offset: int
    segment_id: str | None
    objects: tuple[tuple[str, str, int], ...]
    """(suffix, URL, size) of each object of the segment found."""

    def object(self, suffix: str) -> tuple[str, int] | None:
        for s, url, size in self.objects:
            if s == suffix:
                return url, size
        return None

    @property
    def stem(self) -> str:
        return segment_stem(self.base_offset, self.segment_id)

    def url(self, suffix: str) -> str:
        """The URL of this segment's file ``suffix`` (an object, or for Aiven a part of one)."""
        return f"{self.partition_url}/{self.stem}.{suffix}"

    @property
    def log_size(self) -> int:
        found = self.object("log")
        return 0 if found is None else found[1]

    @property
    def complete(self) -> bool:
        """Whether every object the layout writes is there (Aiven: the manifest, written last,
        and the two before it; Kafka's RSM: at least the log, indexes and snapshot)."""
        have = {s for s, _, _ in self.objects}
        if self.layout == AIVEN:
            return {"log", "indexes", "rsm-manifest"} <= have or (
                {"log", "rsm-manifest"} <= have and not have & {"indexes"}
            )
        if self.layout == KAFKA_RSM:
            return {"log", "index", "timeindex", "snapshot"} <= have
        return "log" in have


@dataclass(frozen=True)
class RemotePartition:
    """One partition's objects in a store."""

    url: str
    layout: str
    topic: str
    partition: int
    topic_id: str | None
    segments: tuple[RemoteSegmentRef, ...]
    extras: tuple[tuple[str, str, int], ...] = ()
    """(name, URL, size) of the partition's other objects (``offset.wm``, ``_metadata``...)."""

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def prefix(self) -> str:
        """The URL above the layout's own folders: RSM's storage directory, Aiven's
        ``key.prefix``, the folder holding a copied partition directory."""
        return url_parent(url_parent(self.url) if self.layout == AIVEN else self.url)

    def extra(self, name: str) -> str | None:
        return next((url for n, url, _ in self.extras if n == name), None)


def segment_stem(base_offset: int, segment_id: str | None) -> str:
    """A segment's file or object name without its suffix: ``<offset20>-<segmentId>`` in the
    layouts that name it by RemoteLogSegmentId, Kafka's ``<offset20>`` otherwise."""
    base = f"{base_offset:020d}"
    return base if segment_id is None else f"{base}-{segment_id}"


def partition_folder(layout: str, prefix: str, topic: str, partition: int, topic_id: str) -> str:
    """The URL of a partition's folder below ``prefix`` in a layout naming segments by id:
    RemoteTopicPartitionDirectory's ``<topic>-<partition>-<topicId>``, Aiven's
    ObjectKeyFactory ``<topic>-<topicId>/<partition>``."""
    if layout == AIVEN:
        return join_url(prefix, f"{topic}-{topic_id}/{partition}")
    return join_url(prefix, f"{topic}-{partition}-{topic_id}")


@dataclass(frozen=True)
class Folder:
    """A reading of a URL's last components as one folder of a layout naming segments by id:
    one partition's (``partition`` set) or an Aiven topic's."""

    layout: str
    prefix: str
    topic: str
    topic_id: str
    partition: int | None

    def holds(self, topic: str, topic_id: str, partition: int) -> bool:
        return (topic, topic_id) == (self.topic, self.topic_id) and self.partition in (
            None,
            partition,
        )


def folder_readings(url: str) -> list[Folder]:
    """Every way the end of ``url`` reads as a partition's or an Aiven topic's folder. A name
    like ``orders-0-<topicId>`` is both RSM's folder of partition 0 of ``orders`` and Aiven's
    folder of the topic ``orders-0``: the caller asks which one its metadata knows."""
    name, parent_url = url_name(url), url_parent(url)
    out = []
    if (r := _RSM_DIR.match(name)) is not None:
        out.append(Folder(KAFKA_RSM, parent_url, r["topic"], r["id"], int(r["partition"])))
    if (t := _TOPIC_ID_DIR.match(name)) is not None:
        out.append(Folder(AIVEN, parent_url, t["topic"], t["id"], None))
    if name.isdigit() and (t := _TOPIC_ID_DIR.match(url_name(parent_url))) is not None:
        out.append(Folder(AIVEN, url_parent(parent_url), t["topic"], t["id"], int(name)))
    return out


@dataclass
class Layouts:
    """What a listing holds: partitions by URL, Iceberg segment manifests, the rest."""

    partitions: list[RemotePartition] = field(default_factory=list)
    puffins: dict[str, str] = field(default_factory=dict)
    """Segment id -> URL of an Iceberg-format segment's Puffin manifest."""
    unknown: list[str] = field(default_factory=list)


@dataclass
class _Building:
    layout: str
    topic: str
    partition: int
    topic_id: str | None
    segments: dict[tuple[int, str | None], list[tuple[str, str, int]]] = field(default_factory=dict)
    extras: list[tuple[str, str, int]] = field(default_factory=list)


def parse_listing(listing: Iterable[tuple[str, int]]) -> Layouts:
    """The partitions and segments of a store's listing (URL, size), each in its layout."""
    building: dict[str, _Building] = {}
    out = Layouts()
    for url, size in listing:
        name = url_name(url)
        parent_url = url_parent(url)
        parent = url_name(parent_url)
        grand = url_name(url_parent(parent_url))
        m = _SEGMENT_NAME.match(name)
        if m is not None:
            seg = (int(m["offset"]), m["id"])
            suffix = m["suffix"]
            if parent.isdigit() and (t := _TOPIC_ID_DIR.match(grand)) is not None:
                if suffix in AIVEN_SUFFIXES + AIVEN_LEGACY_SUFFIXES:
                    b = building.setdefault(
                        parent_url, _Building(AIVEN, t["topic"], int(parent), t["id"])
                    )
                    b.segments.setdefault(seg, []).append((suffix, url, size))
                    continue
            elif (r := _RSM_DIR.match(parent)) is not None and suffix in RSM_SUFFIXES:
                b = building.setdefault(
                    parent_url, _Building(KAFKA_RSM, r["topic"], int(r["partition"]), r["id"])
                )
                b.segments.setdefault(seg, []).append((suffix, url, size))
                continue
        m = _PLAIN_NAME.match(name)
        p = _PARTITION_DIR.match(parent)
        if p is not None and (m is not None or name in PARTITION_EXTRAS):
            b = building.setdefault(
                parent_url, _Building(KAFKA_FILES, p["topic"], int(p["partition"]), None)
            )
            if m is not None:
                b.segments.setdefault((int(m["offset"]), None), []).append((m["suffix"], url, size))
            else:
                b.extras.append((name, url, size))
            continue
        if (q := _PUFFIN.match(name)) is not None and parent == "metadata":
            out.puffins[q["id"]] = url
            continue
        out.unknown.append(url)
    for partition_url, b in building.items():
        if b.layout == KAFKA_FILES:
            _snapshots_aside(b)
        if not b.segments:
            out.unknown += [url for _, url, _ in b.extras]
            continue
        ordered = sorted(b.segments.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
        segments = tuple(
            RemoteSegmentRef(b.layout, partition_url, base, sid, tuple(sorted(objects)))
            for (base, sid), objects in ordered
        )
        out.partitions.append(
            RemotePartition(
                partition_url, b.layout, b.topic, b.partition, b.topic_id, segments, tuple(b.extras)
            )
        )
    out.partitions.sort(key=lambda p: (p.topic, p.partition, p.url))
    return out


def _snapshots_aside(b: _Building) -> None:
    """A producer snapshot with no segment file beside it is no segment (as in a partition
    directory, kdump.segment.list_segments): the log end's snapshot, kept as an extra."""
    for key, objects in list(b.segments.items()):
        if all(suffix == "snapshot" for suffix, _, _ in objects):
            b.extras += [(url_name(url), url, size) for _, url, size in objects]
            del b.segments[key]


def segment_of(partition: RemotePartition, url: str) -> RemotePartition | None:
    """``partition`` with only the segment one of whose objects ``url`` is, or None."""
    for segment in partition.segments:
        if any(u == url for _, u, _ in segment.objects):
            return replace(partition, segments=(segment,))
    return None


__all__ = [
    "AIVEN",
    "KAFKA_FILES",
    "KAFKA_RSM",
    "LAYOUT_NAMES",
    "Folder",
    "Layouts",
    "RemotePartition",
    "RemoteSegmentRef",
    "folder_readings",
    "parse_listing",
    "partition_folder",
    "segment_stem",
]
