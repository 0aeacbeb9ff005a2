"""A partition's segments in tiered storage (KIP-405), in the layout a plugin wrote them
(kdump.storage.remote.layouts: Kafka's RemoteStorageManager, Aiven's, Pinterest's): closed
segments only, as Kafka tiers them, each with its own producer snapshot and leader-epoch
checkpoint; no active segment, no log dir.

A segment's files are read by Kafka's suffixes whatever the layout stores them as: an object of
their own (Kafka's RSM, Pinterest), or a part of Aiven's ``.indexes`` object placed by its
manifest (kdump.storage.remote.files).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from kdump.crc import Buffer
from kdump.format.names import (
    INDEX_SUFFIX,
    LEADER_EPOCH_CHECKPOINT,
    LEADER_EPOCH_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kdump.storage.base import SMALL_FILE_LIMIT, SegmentSet, Storage
from kdump.storage.records import FileRecords
from kdump.storage.remote.layouts import AIVEN, LAYOUT_NAMES, RemotePartition
from kdump.storage.remote.store import ObjectStore
from kdump.storage.remote.urls import join_url, url_name

_KAFKA_SUFFIXES = {
    "log": LOG_SUFFIX,
    "index": INDEX_SUFFIX,
    "timeindex": TIME_INDEX_SUFFIX,
    "txnindex": TXN_INDEX_SUFFIX,
    "snapshot": SNAPSHOT_SUFFIX,
    "leader_epoch_checkpoint": LEADER_EPOCH_SUFFIX,
    LEADER_EPOCH_CHECKPOINT: LEADER_EPOCH_SUFFIX,
}
"""A layout's object suffix -> Kafka's file suffix."""
_AIVEN_PARTS = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, SNAPSHOT_SUFFIX)


class TieredStorage(Storage):
    """One partition's objects in a tiered-storage layout."""

    kind = "tiered"
    closed_segments_only = True

    def __init__(self, partition: RemotePartition, store: ObjectStore) -> None:
        self.partition = partition
        self.store = store
        self.location = partition.url

    def __repr__(self) -> str:
        return f"TieredStorage({self.location!r}, {self.partition.layout!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TieredStorage) and other.partition == self.partition

    def __hash__(self) -> int:
        return hash(self.location)

    @property
    def layout(self) -> str:
        return self.partition.layout

    @property
    def layout_name(self) -> str:
        return LAYOUT_NAMES.get(self.layout, self.layout)

    @property
    def name(self) -> str:
        return self.partition.name

    @cached_property
    def _files(self) -> dict[str, int]:
        found = {
            url_name(url): size for ref in self.partition.segments for _, url, size in ref.objects
        }
        found.update((name, size) for name, _, size in self.partition.extras)
        return dict(sorted(found.items()))

    def files(self) -> Mapping[str, int]:
        return self._files

    def folders(self) -> list[str]:
        return []

    def folder(self, name: str) -> Storage:
        raise NotImplementedError("a tiered partition has no folders")

    @cached_property
    def _segment_sets(self) -> list[SegmentSet]:
        out = []
        for ref in self.partition.segments:
            files = {
                _KAFKA_SUFFIXES[suffix]: url_name(url)
                for suffix, url, _ in ref.objects
                if suffix in _KAFKA_SUFFIXES
            }
            if ref.layout == AIVEN:
                # the index files live in the .indexes object, as its manifest places them
                files.update((s, f"{ref.stem}{s}") for s in (*_AIVEN_PARTS, LEADER_EPOCH_SUFFIX))
            out.append(SegmentSet(ref.base_offset, files, ref.segment_id))
        return out

    def segment_sets(self) -> list[SegmentSet]:
        return self._segment_sets

    def exists(self, name: str) -> bool:
        if name in self._files:
            return True
        if self.layout != AIVEN:
            return False
        known = self.__dict__.setdefault("_in_manifest", {})
        if name not in known:
            from kdump.storage.remote.files import file_exists

            known[name] = file_exists(self.location_of(name), self.store)
        return bool(known[name])

    def read(self, name: str, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        from kdump.storage.remote.files import read_file

        return read_file(self.location_of(name), self.store, limit)

    def open_log(self, name: str) -> FileRecords:
        from kdump.storage.remote.files import open_log

        return open_log(self.location_of(name), self.store, self._files.get(name))

    def modified_ms(self, name: str) -> int:
        return self.store.modified_ms(self.location_of(name))

    def location_of(self, name: str) -> str:
        return join_url(self.location, name)


__all__ = ["TieredStorage"]
