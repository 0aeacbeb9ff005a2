"""Where Kafka's files are: segment files, partition directories and broker log directories under
the paths an operator names, found one way for every command.

A path may be a segment file (that segment of its partition), a partition directory
(``topic-0/``, or ``topic-0.<id>-delete`` and the like), a broker log directory, or any folder
holding these, searched a few levels deep without following links. A path that cannot be read or
holds nothing of Kafka's is an ``InputError`` in ``Found.errors``: the others are still found,
so one dead disk of a JBOD broker hides nothing about the rest.

A URL (``s3://bucket/prefix``, ``file://...``; commands that read object stores ask for them
with ``urls=True``) is listed and its keys read in the layouts of tiered storage
(kdump.remote.layouts): each remote partition is a target with its segments' objects.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kdump.remote.layouts import RemotePartition

from kdump.errors import InputError
from kdump.format.checkpoint import LEADER_EPOCH_CHECKPOINT, OFFSET_CHECKPOINTS, PARTITION_METADATA
from kdump.remote import is_url
from kdump.segment import (
    CHECKPOINT_SUFFIX,
    SEGMENT_SUFFIXES,
    SNAPSHOT_SUFFIX,
    LogSegment,
    base_offset_of,
)

MAX_DEPTH = 6
"""How deep below a named folder partitions and log dirs are looked for."""

META_PROPERTIES = "meta.properties"
PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<id>[0-9a-f]{32})-(?P<state>delete|future|stray))?$"
)
"""Kafka's partition directory names (UnifiedLog.parseTopicPartitionName)."""

DUMPED_SUFFIXES = (*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX, CHECKPOINT_SUFFIX)
"""The files of a partition directory ``kdump dump DIR`` dumps (KRaft snapshots included)."""


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a partition directory's name, or None."""
    m = PARTITION_DIR.match(name)
    return (m["topic"], int(m["partition"])) if m else None


@dataclass(frozen=True)
class PartitionTarget:
    """A partition directory to work on."""

    path: Path
    only: frozenset[int] | None = None
    """Only these segments (when segment files were named), else every segment."""
    log_dir: Path | None = None
    """The broker log dir it was found in (None: named on its own)."""
    remote: RemotePartition | None = None
    """A partition in an object store: its URL, layout and segments (``path`` is then only
    its URL as a name; ``location`` says it)."""

    @property
    def location(self) -> str:
        """Where the partition is, as reports name it: a directory, or a URL."""
        return self.remote.url if self.remote is not None else str(self.path)

    @property
    def lock_dir(self) -> Path:
        """The log dir whose ``.lock`` a running broker holds over this partition."""
        return self.log_dir if self.log_dir is not None else self.path.parent

    @property
    def topic_partition(self) -> tuple[str, int] | None:
        return parse_partition_dir(self.path.name)


@dataclass
class LogDirTarget:
    path: Path
    partitions: list[PartitionTarget] = field(default_factory=list)


@dataclass
class Found:
    """What the paths hold: log dirs with their partitions, partitions named on their own (or
    found outside any log dir), and the paths that could not be read."""

    log_dirs: list[LogDirTarget] = field(default_factory=list)
    loose: list[PartitionTarget] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)

    @property
    def partitions(self) -> list[PartitionTarget]:
        """Every partition, log dirs' first, each once (named twice, or a segment of it named
        besides: the segments merged), in the order found."""
        merged: dict[str, PartitionTarget] = {}
        for target in [p for ld in self.log_dirs for p in ld.partitions] + self.loose:
            key = target.location if target.remote else os.path.realpath(target.path)
            seen = merged.get(key)
            if seen is None:
                merged[key] = target
            elif seen.only is not None:
                only = None if target.only is None else seen.only | target.only
                merged[key] = PartitionTarget(
                    seen.path, only, seen.log_dir or target.log_dir, seen.remote or target.remote
                )
        return list(merged.values())

    def raise_first(self) -> None:
        """For commands that need every path: the first unreadable one, as the error."""
        if self.errors:
            raise self.errors[0]


def discover(paths: list[str] | tuple[str, ...], urls: bool = False) -> Found:
    """The partitions and log dirs under ``paths`` (see the module's docstring); ``urls``:
    URLs are read (else each is an error: the command reads local files only)."""
    found = Found()
    for raw in paths:
        try:
            if is_url(raw):
                if not urls:
                    raise InputError(raw, "this command reads local files only, not URLs")
                _discover_url(raw, found)
                continue
            _discover_one(raw, found)
        except InputError as e:
            found.errors.append(e)
    return found


def _discover_one(raw: str, found: Found) -> None:
    path = Path(raw)
    if not path.exists():
        raise InputError(raw, "no such file or directory")
    if path.is_file():
        if not is_segment_name(path.name):
            raise InputError(raw, "not a Kafka segment file (NNNNNNNNNNNNNNNNNNNN.log ...)")
        found.loose.append(PartitionTarget(path.parent, frozenset({base_offset_of(path)})))
        return
    log_dirs, partitions = _search(path, 0, set())
    if not log_dirs and not partitions:
        raise InputError(raw, "holds no Kafka partition or log directory")
    found.log_dirs += log_dirs
    found.loose += partitions


def _discover_url(url: str, found: Found) -> None:
    """The remote partitions under ``url``, or the one holding the segment object it names."""
    from kdump.remote.layouts import parse_listing, segment_of
    from kdump.remote.store import full_url, listing

    objects = listing(url)
    if not objects:
        raise InputError(url, "no such object or prefix")
    named = None
    if list(objects) == [full_url(url)]:
        # one object: its segment, found among its partition's objects
        named = next(iter(objects))
        objects = listing(named.rsplit("/", 1)[0])
    layouts = parse_listing(objects.items())
    if not layouts.partitions:
        raise InputError(url, _nothing_there(layouts.puffins))
    for partition in layouts.partitions:
        only = None
        if named is not None:
            segment = segment_of(partition, named)
            if segment is None:
                continue
            partition = segment
            only = frozenset({segment.segments[0].base_offset})
        found.loose.append(PartitionTarget(Path(partition.url), only, None, partition))
    if named is not None and not found.loose:
        raise InputError(named, "not an object of a segment in a layout kdump knows")


def _nothing_there(puffins: dict[str, str]) -> str:
    if puffins:
        return (
            f"holds {len(puffins)} Iceberg segment manifest(s) (Aiven segment.format=iceberg): "
            "those segments are rows of an Iceberg table, not Kafka segment files"
        )
    return (
        "holds no Kafka segments in a layout kdump knows (Kafka's RemoteStorageManager, Aiven, "
        "Pinterest or Kafka file names)"
    )


def is_segment_name(name: str) -> bool:
    """A segment's file: a 20-digit base offset and a segment suffix (or a snapshot)."""
    return name.endswith((*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX)) and name[:20].isdigit()


def is_partition_dir(d: Path) -> bool:
    try:
        names = os.listdir(d)
    except OSError:
        return False
    if any(is_segment_name(n) for n in names):
        return True
    markers = (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)
    return parse_partition_dir(d.name) is not None and any(n in markers for n in names)


def _is_log_dir(d: Path) -> bool:
    names = set(os.listdir(d))
    if names & {META_PROPERTIES, *OFFSET_CHECKPOINTS}:
        return True
    return any((d / n).is_dir() and is_partition_dir(d / n) for n in names)


def natural_key(name: str | os.PathLike[str]) -> tuple[str | int, ...]:
    """The order a person expects of partition and log dir names: runs of digits compare as
    numbers (``topic-2`` before ``topic-10``, ``data2`` before ``data10``). Every list of
    partitions or log dirs kdump prints is in this order."""
    parts = re.split(r"(\d+)", os.fspath(name))
    # split alternates text and digits, text first: the same kinds meet at every place
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts))


def _subdirs(d: Path) -> list[Path]:
    return sorted(
        (p for p in d.iterdir() if p.is_dir() and not p.is_symlink()),
        key=lambda p: natural_key(p.name),
    )


def _partitions_of(log_dir: Path) -> list[PartitionTarget]:
    subdirs = _subdirs(log_dir)
    return [PartitionTarget(p, None, log_dir) for p in subdirs if is_partition_dir(p)]


def _search(
    d: Path, depth: int, seen: set[str]
) -> tuple[list[LogDirTarget], list[PartitionTarget]]:
    real = os.path.realpath(d)
    if real in seen or depth > MAX_DEPTH:
        return [], []
    seen.add(real)
    if is_partition_dir(d):
        return [], [PartitionTarget(d)]
    log_dirs: list[LogDirTarget] = []
    partitions: list[PartitionTarget] = []
    try:
        children = _subdirs(d)
        if _is_log_dir(d):
            log_dir = LogDirTarget(d, _partitions_of(d))
            log_dirs.append(log_dir)
            # a folder holding partitions may hold further log dirs beside them
            owned = {p.path for p in log_dir.partitions}
            children = [c for c in children if c not in owned]
    except OSError as e:
        raise InputError(str(d), e.strerror or str(e)) from None
    for child in children:
        a, b = _search(child, depth + 1, seen)
        log_dirs += a
        partitions += b
    return log_dirs, partitions


def partition_files(directory: str | os.PathLike[str]) -> list[str]:
    """The Kafka files of a partition directory, in name order (what ``kdump dump DIR``
    dumps)."""
    return [
        os.path.join(directory, name)
        for name in sorted(os.listdir(directory))
        if name.endswith(DUMPED_SUFFIXES)
    ]


def check_named_segments(target: PartitionTarget) -> None:
    """A segment named by one of its files must have its ``.log`` (an InputError if not)."""
    for base in sorted(target.only or ()):
        log = LogSegment(target.path, base).log_path
        if not log.is_file():
            raise InputError(str(log), "no such file: the segment's .log is missing")


def refuse_output_inside(
    output_dir: Path, targets: list[PartitionTarget], what: str = "output directory"
) -> None:
    """An output (or backup: ``what``) directory inside (or equal to) a partition or log dir
    being read is refused (an InputError): what kdump writes there would sit among the
    broker's own files, where the broker takes a new directory for a partition and refuses to
    start on its name."""
    out = Path(os.path.realpath(output_dir))
    for target in targets:
        for kind, d in (("partition", target.path), ("log dir", target.lock_dir)):
            inside = Path(os.path.realpath(d))
            if out == inside or inside in out.parents:
                where = "is" if out == inside else "lies inside"
                raise InputError(
                    str(output_dir),
                    f"{what} {where} the {kind} {d} it reads; choose one outside the broker's data",
                )


__all__ = [
    "Found",
    "LogDirTarget",
    "PartitionTarget",
    "check_named_segments",
    "discover",
    "is_partition_dir",
    "is_segment_name",
    "natural_key",
    "parse_partition_dir",
    "partition_files",
    "refuse_output_inside",
]
