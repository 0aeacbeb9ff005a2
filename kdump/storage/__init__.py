"""Where Kafka's files are, behind one interface (kdump.storage.base.Storage): a directory on
disk (``local``), a prefix of an object store holding Kafka's own file names (``objects``: a
copy of a log dir, read as on disk), and tiered storage's layouts (``tiered``). The only place
in kdump that tells a path from a URL.

How to reach an object store (endpoint, credentials, retries) is an ``ObjectStore`` built from
the command's options and handed down, never a process-wide setting.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from kdump.storage.base import Storage
from kdump.storage.local import LocalStorage, path_text
from kdump.storage.remote.urls import is_url, url_name, url_parent
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump.storage.remote.options import StoreOptions
    from kdump.storage.remote.store import ObjectStore

_REMOTE = {
    "ObjectStore": "kdump.storage.remote.store",
    "StoreOptions": "kdump.storage.remote.options",
}


def __getattr__(name: str) -> Any:
    """ObjectStore and StoreOptions, loaded when first asked for: a run over local files builds
    no store, and their modules stay unloaded."""
    module = _REMOTE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def locate_file(raw: str, store: ObjectStore | None = None) -> tuple[Storage, str]:
    """The folder holding the file ``raw`` names (a path, or a URL of an object), and its name
    in it: what ``kdump dump FILE`` reads through."""
    if not is_url(raw):
        directory, name = os.path.split(path_text(raw))
        return LocalStorage(directory), name
    from kdump.storage.objects import ObjectStorage
    from kdump.storage.remote.store import ObjectStore

    store = store or ObjectStore()
    full = store.full_url(raw)
    return ObjectStorage(url_parent(full), store, None), url_name(full)


class Named(NamedTuple):
    """One file or folder a command-line argument names (``named``)."""

    location: str
    folder: bool
    """A directory, or a prefix with objects below it."""
    missing: bool
    """A path that is not there (an object is asked for when it is read)."""


def named(pattern: str, store: ObjectStore | None = None) -> list[Named]:
    """What a file argument names: a URL, the object itself or the prefix it is (one listing);
    a path, its glob's matches in name order (the path itself where it has no wildcard). None
    matched: an empty list."""
    if is_url(pattern):
        from kdump.storage.remote.store import ObjectStore

        store = store or ObjectStore()
        listed = store.listing(pattern)
        prefix = bool(listed) and list(listed) != [store.full_url(pattern)]
        return [Named(pattern, prefix, False)]
    import glob

    matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    return [Named(p, os.path.isdir(p), not os.path.lexists(p)) for p in matches]


def local_folder(location: str) -> LocalStorage | None:
    """The folder a path names; None for a URL: of an object-store prefix kdump asks for
    Kafka's partition files only (tiered storage keeps no more), not a log dir's own files."""
    return None if is_url(location) else LocalStorage(location)


def parent_location(location: str) -> str:
    """The folder holding a file or folder: an absolute path (the same whatever directory kdump
    was started in), or the URL of the prefix holding it."""
    if is_url(location):
        return url_parent(location)
    return os.path.dirname(os.path.abspath(location))


def absolute_location(location: str) -> str:
    """A path made absolute (another process, a Spark executor, has another working
    directory); a URL as it is."""
    return location if is_url(location) else os.path.abspath(location)


__all__ = [
    "LocalStorage",
    "Named",
    "ObjectStore",
    "Storage",
    "StoreOptions",
    "absolute_location",
    "is_url",
    "local_folder",
    "locate_file",
    "named",
    "parent_location",
]
