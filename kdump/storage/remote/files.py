"""Segment files by URL, whatever the layout stores them as (kdump.storage's object-store and
tiered implementations read through these). Every function takes the ``ObjectStore`` to read
with.

A file of Kafka's layouts is one object. Aiven's segment is three objects, so its files have
the names Kafka gives them beside those objects: ``<offset20>-<segmentId>.log`` is the ``.log``
object decoded through its manifest's chunk index, ``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex`` and ``.leader-epoch-checkpoint`` are the parts of ``.indexes`` the manifest
places (decrypted). Manifests and data keys are read once per process and store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from kdump.errors import StoreError
from kdump.format.names import LEADER_EPOCH_CHECKPOINT
from kdump.storage.remote.aiven import Detransform, Manifest, parse_manifest, unwrap_data_key
from kdump.storage.remote.mirror import Mirror, RemoteRecords
from kdump.storage.remote.store import ObjectStore
from kdump.storage.remote.urls import url_name, url_parent

_AIVEN_FILE = re.compile(r"^(?P<stem>\d{20}-[A-Za-z0-9_-]{22})\.(?P<suffix>[a-z_-]+)$")
AIVEN_PARTS = {
    "index": "offset",
    "timeindex": "timestamp",
    "snapshot": "producerSnapshot",
    LEADER_EPOCH_CHECKPOINT: "leaderEpoch",  # Aiven's suffix before 2023-10: Kafka's name
    "leader_epoch_checkpoint": "leaderEpoch",
    "txnindex": "transaction",
}
"""Kafka's file suffix -> the ``segmentIndexes`` entry of an Aiven manifest holding that file."""


@dataclass(frozen=True)
class AivenSegment:
    """An Aiven segment's manifest, read, with its data key unwrapped."""

    stem_url: str
    manifest: Manifest
    data_key: bytes | None

    @property
    def log_url(self) -> str:
        return f"{self.stem_url}.log"

    @property
    def indexes_url(self) -> str:
        return f"{self.stem_url}.indexes"

    def detransform(self) -> Detransform:
        return Detransform(self.manifest, self.data_key)


def looks_aiven(url: str) -> tuple[str, str] | None:
    """(stem URL, suffix) when ``url`` is named as an Aiven segment's file would be."""
    m = _AIVEN_FILE.match(url_name(url))
    parent = url_parent(url)
    if m is None or not url_name(parent).isdigit() or len(url_name(url_parent(parent))) < 24:
        return None
    return f"{parent}/{m['stem']}", m["suffix"]


@lru_cache(maxsize=64)
def aiven_segment(stem_url: str, store: ObjectStore) -> AivenSegment | None:
    """The Aiven segment whose objects start with ``stem_url``, or None (no manifest)."""
    url = f"{stem_url}.rsm-manifest"
    try:
        data = store.read_object(url, 16 << 20)
    except StoreError as e:
        if e.reason == "no such object":
            return None
        raise
    manifest = parse_manifest(data, url)
    key = None
    if manifest.encryption is not None:
        key = unwrap_data_key(manifest.encryption, store.options.private_keys, f"{stem_url}.log")
    return AivenSegment(stem_url, manifest, key)


def read_file(url: str, store: ObjectStore, limit: int = 1 << 30) -> bytes:
    """A small segment file (index, snapshot, checkpoint) by URL."""
    aiven = looks_aiven(url)
    if aiven is not None and aiven[1] in AIVEN_PARTS:
        segment = aiven_segment(aiven[0], store)
        if segment is not None:
            return aiven_part(segment, aiven[1], url, store)
    return store.read_object(url, limit)


def aiven_part(segment: AivenSegment, suffix: str, url: str, store: ObjectStore) -> bytes:
    """One index file out of an Aiven segment's ``.indexes`` object (decrypted)."""
    placed = segment.manifest.indexes.get(AIVEN_PARTS[suffix])
    if placed is None:
        raise StoreError(url, f"no such file: the manifest of {segment.stem_url} has no {suffix}")
    position, size = placed
    data = store.read_range(segment.indexes_url, position, position + size)
    if not size:
        return b""
    return segment.detransform().decrypt(data, segment.indexes_url, position)


def file_exists(url: str, store: ObjectStore) -> bool:
    """Whether the file ``url`` names is there (for Aiven: in its segment's manifest)."""
    aiven = looks_aiven(url)
    if aiven is not None and (aiven[1] in AIVEN_PARTS or aiven[1] == "log"):
        segment = aiven_segment(aiven[0], store)
        if segment is not None:
            if aiven[1] == "log":
                return True
            return segment.manifest.indexes.get(AIVEN_PARTS[aiven[1]]) is not None
    return store.exists(url)


def open_log(url: str, store: ObjectStore, size: int | None = None) -> RemoteRecords:
    """A remote ``.log`` for the walk (``size``: the object's, when a listing gave it)."""
    read_ahead = store.options.read_ahead
    aiven = looks_aiven(url)
    if aiven is not None and aiven[1] == "log":
        segment = aiven_segment(aiven[0], store)
        if segment is not None:
            return RemoteRecords(_aiven_mirror(segment, url, size, store))
    stored = store.size(url) if size is None else size

    def fetch(start: int, end: int) -> Iterator[tuple[int, bytes]]:
        yield start, store.read_range(url, start, end)

    return RemoteRecords(Mirror(url, stored, fetch, read_ahead))


def _aiven_mirror(segment: AivenSegment, url: str, size: int | None, store: ObjectStore) -> Mirror:
    read_ahead = store.options.read_ahead
    index = segment.manifest.chunk_index
    index.check(url, store.size(url) if size is None else size)
    detransform = segment.detransform()

    def fetch(start: int, end: int) -> Iterator[tuple[int, bytes]]:
        chunks = index.chunks(start, end)
        if not chunks:
            return
        data = store.read_range(
            url, index.stored_offset(chunks.start), index.stored_offset(chunks.stop)
        )
        yield from detransform.chunks(data, chunks.start, url)

    # a whole number of chunks a window, at least one
    window = max(1, read_ahead // index.original_chunk_size) * index.original_chunk_size
    return Mirror(url, index.original_file_size, fetch, window)


def aiven_files(segment: AivenSegment) -> list[str]:
    """The index files an Aiven segment's ``.indexes`` holds, by Kafka's names."""
    return [
        f"{segment.stem_url}.{suffix}"
        for suffix in ("index", "timeindex", "snapshot", "txnindex")
        if segment.manifest.indexes.get(AIVEN_PARTS[suffix]) is not None
    ]


__all__ = [
    "AIVEN_PARTS",
    "AivenSegment",
    "aiven_files",
    "aiven_part",
    "aiven_segment",
    "file_exists",
    "looks_aiven",
    "open_log",
    "read_file",
]
