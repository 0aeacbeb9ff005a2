"""Where Kafka's files are: the partitions and broker log directories under the paths an operator
names, found one way for every command and handed back opened (kdump.unified_log.UnifiedLog,
kdump.log_dir.LogDir).

A path may be a segment file (that segment of its partition), a partition directory
(``topic-0/``, or ``topic-0.<id>-delete`` and the like), a broker log directory, or any folder
holding these, searched a few levels deep without following links; on disk or in an object
store (``s3://bucket/prefix``, ``file://...``), where a copy of a log dir is read as on disk and
the layouts of tiered storage are recognised (kdump.storage.remote.layouts). A path that cannot
be read or holds nothing of Kafka's is an ``InputError`` in ``Found.errors``: the others are
still found, so one dead disk of a JBOD broker hides nothing about the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kdump.errors import InputError
from kdump.format.names import (
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    PARTITION_METADATA,
    PINTEREST_WATERMARK,
    is_kraft_snapshot_name,
    is_segment_name,
    offset_in_name,
    parse_partition_dir,
)
from kdump.log_dir import LogDir
from kdump.storage import is_url
from kdump.storage.base import Storage
from kdump.storage.local import LocalStorage, path_text
from kdump.storage.remote.urls import url_name, url_parent
from kdump.unified_log import OpenOptions, UnifiedLog

if TYPE_CHECKING:
    from kdump.storage import ObjectStore

MAX_DEPTH = 6
"""How deep below a named folder partitions and log dirs are looked for."""


class Found:
    """What the paths hold: log dirs with their partitions, partitions named on their own (or
    found outside any log dir), and the paths that could not be read."""

    def __init__(self) -> None:
        self.log_dirs: list[LogDir] = []
        self.owned: list[UnifiedLog] = []
        """The partitions of ``log_dirs``, log dir by log dir (each points back to its own)."""
        self.loose: list[UnifiedLog] = []
        self.errors: list[InputError] = []

    @property
    def partitions(self) -> list[UnifiedLog]:
        """Every partition, log dirs' first, each once (named twice, or a segment of it named
        besides: the segments merged), in the order found."""
        merged: dict[str, UnifiedLog] = {}
        for log in self.owned + self.loose:
            key = _key(log)
            seen = merged.get(key)
            if seen is None:
                merged[key] = log
            elif seen.only is not None:
                seen.only = None if log.only is None else seen.only | log.only
        return list(merged.values())

    def raise_first(self) -> None:
        """For commands that need every path: the first unreadable one, as the error."""
        if self.errors:
            raise self.errors[0]


NAMED_PARTITIONS = 3
"""Partitions a refusal of a log dir names (lookup: one partition is wanted)."""


def open_partition(
    raw: str, store: ObjectStore | None = None, options: OpenOptions | None = None
) -> UnifiedLog:
    """The one partition ``raw`` names (a directory, or a prefix in an object store): for the
    commands that work on one partition (lookup, salvage)."""
    if not is_url(raw):
        if not os.path.exists(raw):
            raise InputError(raw, "no such directory")
        if not os.path.isdir(raw):
            raise InputError(raw, "not a directory (give a partition directory)")
    found = discover([raw], store, options)
    found.raise_first()
    logs = [log for log in found.partitions if log.segments] or found.partitions
    if not logs or not logs[0].segments:
        raise InputError(raw, "no segment .log files: not a partition directory")
    if len(logs) > 1:
        # a log dir holds thousands: a few names, the rest counted (one line, as every error)
        names = ", ".join(log.name for log in logs[:NAMED_PARTITIONS])
        if len(logs) > NAMED_PARTITIONS:
            names += f" and {len(logs) - NAMED_PARTITIONS} more"
        raise InputError(
            raw, f"holds {len(logs)} partitions ({names}): give one, such as {logs[0].location}"
        )
    return logs[0]


def _key(log: UnifiedLog) -> str:
    local = log.storage.local_path
    return os.path.realpath(local) if local is not None else log.location


def discover(
    paths: Iterable[str],
    store: ObjectStore | None = None,
    options: OpenOptions | None = None,
    urls: bool = True,
) -> Found:
    """The partitions and log dirs under ``paths`` (see the module's docstring), opened with
    ``options``; URLs are read through ``store`` (``urls`` False: each is an error, for the
    commands that write local files only)."""
    search = _Search(store, options or OpenOptions())
    for raw in paths:
        try:
            if is_url(raw):
                if not urls:
                    raise InputError(raw, "this command reads local files only, not URLs")
                search.url(raw)
            else:
                search.local(raw)
        except InputError as e:
            search.found.errors.append(e)
    return search.found


class _Search:
    def __init__(self, store: ObjectStore | None, options: OpenOptions) -> None:
        self._store, self.options = store, options
        self.found = Found()
        self._log_dirs: dict[str, LogDir] = {}
        self._tiered: set[str] = set()
        """Prefixes read in a tiered layout: not searched again as folders."""

    # -- opening ----------------------------------------------------------------------------

    def _log_dir(self, storage: Storage) -> LogDir:
        """One LogDir per folder, however often it is met (its checkpoints read once)."""
        found = self._log_dirs.get(storage.location)
        if found is None:
            found = self._log_dirs[storage.location] = LogDir(storage)
        return found

    def _open(
        self, storage: Storage, parent: Storage | None, only: frozenset[int] | None = None
    ) -> UnifiedLog:
        log_dir = None if parent is None else self._log_dir(parent)
        return UnifiedLog(storage, log_dir, only, self.options)

    # -- local paths ------------------------------------------------------------------------

    def local(self, raw: str) -> None:
        path = path_text(raw)
        if not os.path.exists(path):
            raise InputError(raw, "no such file or directory")
        if os.path.isfile(path):
            name = os.path.basename(path)
            if not is_segment_name(name):
                raise InputError(raw, "not a Kafka segment file (NNNNNNNNNNNNNNNNNNNN.log ...)")
            offset = offset_in_name(name)
            assert offset is not None
            folder = LocalStorage(os.path.dirname(path), self.options.reading)
            self.found.loose.append(
                self._open(folder, _parent(folder.location), frozenset({offset}))
            )
            return
        self.tree(LocalStorage(path, self.options.reading), _parent(path), raw)

    def tree(self, root: Storage, parent: Storage | None, raw: str) -> None:
        log_dirs, owned, partitions = self._search(root, parent, 0, set())
        if not log_dirs and not partitions:
            raise InputError(raw, "holds no Kafka partition or log directory")
        self.found.log_dirs += log_dirs
        self.found.owned += owned
        self.found.loose += partitions

    def _search(
        self, d: Storage, parent: Storage | None, depth: int, seen: set[str]
    ) -> tuple[list[LogDir], list[UnifiedLog], list[UnifiedLog]]:
        """The log dirs under ``d``, their partitions, and the partitions outside any."""
        local = d.local_path
        real = os.path.realpath(local) if local is not None else d.location
        if real in seen or depth > MAX_DEPTH:
            return [], [], []
        seen.add(real)
        if self._is_tiered(d):
            return [], [], []
        if is_partition_dir(d):
            return [], [], [self._open(d, parent)]
        log_dirs: list[LogDir] = []
        owned: list[UnifiedLog] = []
        partitions: list[UnifiedLog] = []
        children = [
            c
            for c in (d.folder(name) for name in sorted(d.folders(), key=natural_key))
            if not self._is_tiered(c)
        ]
        if _is_log_dir(d, children):
            log_dir = self._log_dir(d)
            mine = [c for c in children if is_partition_dir(c)]
            log_dir.partition_dirs = {c.location for c in mine}
            owned += [UnifiedLog(c, log_dir, None, self.options) for c in mine]
            log_dirs.append(log_dir)
            # a folder holding partitions may hold further log dirs beside them
            names = {c.location for c in mine}
            children = [c for c in children if c.location not in names]
        for child in children:
            a, b, c = self._search(child, d, depth + 1, seen)
            log_dirs += a
            owned += b
            partitions += c
        return log_dirs, owned, partitions

    def _is_tiered(self, d: Storage) -> bool:
        """A prefix read in a tiered layout (url()), not as a folder: one the layouts claimed,
        or Pinterest's, which its watermark file marks."""
        if d.location in self._tiered:
            return True
        return d.local_path is None and PINTEREST_WATERMARK in d.files()

    # -- URLs -------------------------------------------------------------------------------

    @property
    def store(self) -> ObjectStore:
        """The store URLs are read through: the caller's, else one of default options, made
        when the first URL is met (a run over local paths makes none)."""
        if self._store is None:
            from kdump.storage.remote.store import ObjectStore

            self._store = ObjectStore()
        return self._store

    def url(self, url: str) -> None:
        """The partitions under ``url``: copies of log dirs (Kafka's own names, read as on
        disk) and tiered storage's layouts; or the one holding the segment object it names."""
        from kdump.storage.objects import ObjectStorage

        listing = self.store.listing(url)
        if not listing:
            raise InputError(url, "no such object or prefix")
        full = self.store.full_url(url)
        if list(listing) == [full]:
            self._one_object(full, url_parent(full))
            return
        before = len(self.found.loose) + len(self.found.log_dirs)
        tiered = self._tiered_partitions(listing, None)
        self._tiered.update(log.location for log in tiered)
        root = ObjectStorage(full, self.store, listing)
        try:
            self.tree(root, _object_parent(full, self.store), url)
        except InputError:
            if not tiered:
                raise InputError(url, _nothing_there(listing)) from None
        self.found.loose += [p for p in tiered]
        if len(self.found.loose) + len(self.found.log_dirs) == before:
            raise InputError(url, _nothing_there(listing))

    def _tiered_partitions(self, listing: dict[str, int], named: str | None) -> list[UnifiedLog]:
        """The partitions of ``listing`` in tiered storage's layouts (Pinterest's told by its
        watermark file; plain Kafka names without one are a copy, read as on disk)."""
        from kdump.storage.remote.layouts import KAFKA_FILES, parse_listing, segment_of
        from kdump.storage.tiered import TieredStorage

        out = []
        for partition in parse_listing(listing.items()).partitions:
            if partition.layout == KAFKA_FILES and partition.extra(PINTEREST_WATERMARK) is None:
                continue
            only = None
            if named is not None:
                one = segment_of(partition, named)
                if one is None:
                    continue
                partition, only = one, frozenset({one.segments[0].base_offset})
            storage = TieredStorage(partition, self.store)
            out.append(
                UnifiedLog(
                    storage, None, only, self.options, (partition.topic, partition.partition)
                )
            )
        return out

    def _one_object(self, url: str, prefix: str) -> None:
        """A segment object named: that segment of the partition holding it."""
        from kdump.storage.objects import ObjectStorage

        listing = self.store.listing(prefix)
        tiered = self._tiered_partitions(listing, url)
        if tiered:
            self.found.loose += tiered
            return
        name = url_name(url)
        offset = offset_in_name(name)
        if not is_segment_name(name) or offset is None:
            raise InputError(url, "not an object of a segment in a layout kdump knows")
        folder = ObjectStorage(prefix, self.store, listing)
        self.found.loose.append(
            self._open(folder, _object_parent(prefix, self.store), frozenset({offset}))
        )


def _parent(path: str) -> Storage | None:
    """The folder holding the directory ``path`` (written as path_text writes it): its log
    dir, when it is a partition."""
    if path in (".", "/", "//"):  # no name: pathlib's resolve().parent
        parent = os.path.dirname(os.path.realpath(path))
    else:
        parent = path_text(os.path.dirname(path))
    return None if parent == path else LocalStorage(parent)


def _object_parent(url: str, store: ObjectStore) -> Storage | None:
    """The prefix holding ``url``, its own objects listed when first asked (a log dir's
    checkpoints), never the whole tree below it."""
    from kdump.storage.objects import ObjectStorage

    parent = url_parent(url)
    if parent == url or parent.endswith(":/") or parent.endswith(":"):
        return None
    return ObjectStorage(parent, store, None)


def _nothing_there(listing: dict[str, int]) -> str:
    from kdump.storage.remote.layouts import parse_listing

    puffins = parse_listing(listing.items()).puffins
    if puffins:
        return (
            f"holds {len(puffins)} Iceberg segment manifest(s) (Aiven segment.format=iceberg): "
            "those segments are rows of an Iceberg table, not Kafka segment files"
        )
    return (
        "holds no Kafka segments in a layout kdump knows (Kafka's RemoteStorageManager, Aiven, "
        "Pinterest or Kafka file names)"
    )


def is_partition_dir(d: Storage) -> bool:
    """A folder holding a segment's files, or named as a partition and holding its metadata."""
    try:
        names = d.files()
    except InputError:
        return False
    if any(is_segment_name(n) or is_kraft_snapshot_name(n) for n in names):
        return True
    markers = (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)
    return parse_partition_dir(d.name) is not None and any(n in names for n in markers)


def _is_log_dir(d: Storage, children: list[Storage]) -> bool:
    if set(d.files()) & {META_PROPERTIES, *OFFSET_CHECKPOINTS}:
        return True
    return any(is_partition_dir(c) for c in children)


def natural_key(name: str | os.PathLike[str]) -> tuple[str | int, ...]:
    """The order a person expects of partition and log dir names: runs of digits compare as
    numbers (``topic-2`` before ``topic-10``, ``data2`` before ``data10``). Every list of
    partitions or log dirs kdump prints is in this order."""
    parts = re.split(r"(\d+)", os.fspath(name))
    # split alternates text and digits, text first: the same kinds meet at every place
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def check_named_segments(log: UnifiedLog) -> None:
    """A segment named by one of its files must have its ``.log`` (an InputError if not)."""
    have = {s.base_offset for s in log.segments}
    for base in sorted(log.only or ()):
        if base not in have:
            path = log.storage.location_of(f"{base:020d}.log")
            raise InputError(path, "no such file: the segment's .log is missing")


__all__ = [
    "Found",
    "check_named_segments",
    "discover",
    "is_partition_dir",
    "natural_key",
    "open_partition",
]
