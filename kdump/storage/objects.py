"""Kafka's files under a prefix of an object store, by their own names: a backup or a copy of a
broker's log dir (``aws s3 sync /var/lib/kafka/data s3://bucket/broker-1/``). Read with the same
semantics as the directory it copies: the last segment is the active one, producer snapshots,
leader-epoch checkpoints and the log dir's offset checkpoints count as on disk."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from kdump.crc import Buffer
from kdump.errors import KdumpError
from kdump.storage.base import SMALL_FILE_LIMIT, Storage
from kdump.storage.records import FileRecords
from kdump.storage.remote.store import ObjectStore
from kdump.storage.remote.urls import join_url


class ObjectStorage(Storage):
    """A prefix of an object store and the objects below it (one listing, taken once)."""

    kind = "object-store"

    def __init__(self, url: str, store: ObjectStore, listing: Mapping[str, int] | None) -> None:
        self.location = url.rstrip("/")
        self.store = store
        self._listing = listing
        """Every object below the prefix, at any depth: URL -> size (None: only the objects
        directly below it, listed when first asked)."""

    @cached_property
    def listing(self) -> Mapping[str, int]:
        if self._listing is not None:
            return self._listing
        try:
            return self.store.files_in(self.location)
        except KdumpError:
            return {}

    def __repr__(self) -> str:
        return f"ObjectStorage({self.location!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectStorage) and other.location == self.location

    def __hash__(self) -> int:
        return hash(self.location)

    @cached_property
    def _children(self) -> tuple[dict[str, int], list[str]]:
        prefix = self.location + "/"
        files: dict[str, int] = {}
        folders: set[str] = set()
        for url, size in self.listing.items():
            if not url.startswith(prefix):
                continue
            rest = url[len(prefix) :]
            head, sep, _ = rest.partition("/")
            if sep:
                folders.add(head)
            elif rest:
                files[rest] = size
        return dict(sorted(files.items())), sorted(folders)

    def files(self) -> Mapping[str, int]:
        return self._children[0]

    def folders(self) -> list[str]:
        return self._children[1]

    def folder(self, name: str) -> ObjectStorage:
        url = join_url(self.location, name)
        prefix = url + "/"
        below = {u: s for u, s in self.listing.items() if u.startswith(prefix)}
        return ObjectStorage(url, self.store, below)

    def exists(self, name: str) -> bool:
        if name in self.files():
            return True
        from kdump.storage.remote.files import looks_aiven

        if looks_aiven(self.location_of(name)) is None:
            return False
        # an Aiven segment's index file is a part of its .indexes object, named by the manifest
        from kdump.storage.remote.files import file_exists

        return file_exists(self.location_of(name), self.store)

    def read(self, name: str, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        from kdump.storage.remote.files import read_file

        # an Aiven segment's index file named alone is a part of its .indexes object
        return read_file(self.location_of(name), self.store, limit)

    def open_log(self, name: str) -> FileRecords:
        from kdump.storage.remote.files import open_log

        return open_log(self.location_of(name), self.store, self.files().get(name))

    def modified_ms(self, name: str) -> int:
        return self.store.modified_ms(self.location_of(name))

    def location_of(self, name: str) -> str:
        return join_url(self.location, name)


__all__ = ["ObjectStorage"]
