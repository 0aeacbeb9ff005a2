"""The configs of a KRaft metadata image as a config layer (kdump.config.MetadataConfigs): what
explain, report and the repairs read a topic's settings from, where a broker's log dir holds the
metadata log (a combined-mode node, or a broker: every KRaft broker keeps a copy of the metadata
log in its metadata log dir) or ``--metadata DIR`` names one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.config import MetadataConfigs
from kdump.errors import KdumpError
from kdump.format.names import METADATA_TOPIC
from kdump.kraft.delta import BROKER, TOPIC
from kdump.log_dir import LogDir
from kdump.storage.local import LocalStorage

if TYPE_CHECKING:
    from kdump.format.textfiles import MetaProperties
    from kdump.kraft.loader import MetadataLoad
    from kdump.unified_log import UnifiedLog

METADATA_DIR = f"{METADATA_TOPIC}-0"


def metadata_configs(load: MetadataLoad, node_id: int | None = None) -> MetadataConfigs:
    """The image's topic configs, its cluster-wide broker default and ``node_id``'s own."""
    configs = load.image.configs
    notes = []
    if load.damage is not None:
        notes.append(
            f"the metadata log's replay stopped at {load.damage}: configs as of offset "
            f"{load.image.offset}"
        )
    return MetadataConfigs(
        location=load.location,
        offset=load.image.offset,
        topics={name: data for (kind, name), data in configs.items() if kind == TOPIC},
        cluster=configs.get((BROKER, ""), {}),
        broker={} if node_id is None else configs.get((BROKER, str(node_id)), {}),
        node_id=node_id,
        notes=tuple(notes),
    )


def metadata_dir_near(path: str) -> Path | None:
    """The ``__cluster_metadata-0`` of the log dir ``path`` names or lies in: ``path`` itself
    (a log dir), its parent (a partition directory), its grandparent (a segment file)."""
    p = Path(path)
    for candidate in (p, p.parent, p.parent.parent):
        found = candidate / METADATA_DIR
        if found.is_dir():
            return found
    return None


def find_metadata(paths: Iterable[str], metadata: str | None = None) -> MetadataLoad | None:
    """The metadata image ``metadata`` names (a ``__cluster_metadata-0`` directory, a log dir
    holding one, or a snapshot), else the first one found beside ``paths``
    (``metadata_dir_near``); None where there is none. One that does not read raises."""
    found = metadata
    if found is None:
        found = next((str(d) for d in map(metadata_dir_near, paths) if d is not None), None)
    if found is None:
        return None
    # the replay's modules are a tenth of a short run's start-up: loaded where there is one
    from kdump.kraft.loader import load_metadata

    return load_metadata(found)


def found_metadata(
    paths: Iterable[str], metadata: str | None = None
) -> tuple[MetadataLoad | None, str | None]:
    """``find_metadata``'s image, where one found beside ``paths`` that does not read is no
    image and a note saying why, not an error (``metadata`` named: its error): the commands
    that read it beside their paths go on without it. (None, None): there is none."""
    try:
        return find_metadata(paths, metadata), None
    except KdumpError as e:
        if metadata is not None:
            raise
        return None, f"no metadata image: {e}"


def find_metadata_configs(
    paths: Iterable[str], metadata: str | None = None
) -> MetadataConfigs | None:
    """The config layer of ``found_metadata``'s image; one that does not read is a layer with
    no configs and the note saying why."""
    load, note = found_metadata(paths, metadata)
    if note is not None:
        found = next(d for d in map(metadata_dir_near, paths) if d is not None)
        return MetadataConfigs(str(found), -1, notes=(note,))
    return None if load is None else node_configs(load)


def node_configs(load: MetadataLoad) -> MetadataConfigs:
    """The config layer of ``load``'s image for the node whose log dir holds it: the broker
    whose own dynamic configs apply is the log dir's meta.properties ``node.id``."""
    where = Path(load.location)
    if where.is_file():  # a snapshot named on its own
        where = where.parent
    log_dir = LogDir(LocalStorage(where.parent if where.name == METADATA_DIR else where))
    try:
        meta = log_dir.meta_properties()
    except KdumpError:  # verify reports it; the configs are the cluster's and the broker's own
        meta = None
    return metadata_configs(load, None if meta is None else meta.node_id)


def take_node_image(
    log: UnifiedLog,
    logs: Sequence[UnifiedLog],
    images: dict[str, MetadataConfigs | None],
    replay: bool = True,
) -> None:
    """``log``'s settings from its node's KRaft image too, where none was given
    (``--metadata``): the metadata partition of its log dir, or of its node's metadata log
    dir, among ``logs``, else the one beside it; replayed once for the log dirs in
    ``images`` (``replay`` False: only one already there, for a run that reads no more)."""
    if log.open_options.layers.metadata is not None or log.tiered:
        return
    key = log.log_dir.location if log.log_dir is not None else log.location
    if key not in images:
        if not replay:
            return
        images[key] = _image_of(log, logs)
    image = images[key]
    if image is not None:
        log.adopt_metadata(image)


def node_metadata(log_dir: LogDir, logs: Sequence[UnifiedLog]) -> UnifiedLog | None:
    """The metadata partition of the same node's metadata log dir (metadata.log.dir), among
    ``logs``: a broker with several log dirs keeps the metadata log in one of them, and
    applies its image to the partitions of every one. The same node: meta.properties of the
    same cluster.id and node.id."""
    meta = readable_meta_properties(log_dir)
    if meta is None or meta.node_id is None:
        return None
    for log in logs:
        other = log.log_dir
        if other is None or other is log_dir or not log.is_metadata_log:
            continue
        found = readable_meta_properties(other) if log.found_in(other) else None
        if found is not None and (found.cluster_id, found.node_id) == (
            meta.cluster_id,
            meta.node_id,
        ):
            return log
    return None


def readable_meta_properties(log_dir: LogDir) -> MetaProperties | None:
    """The log dir's meta.properties, None where it does not read (verify says why)."""
    try:
        return log_dir.meta_properties()
    except KdumpError:
        return None


def _image_of(log: UnifiedLog, logs: Sequence[UnifiedLog]) -> MetadataConfigs | None:
    from kdump.kraft.loader import metadata_load

    log_dir = log.log_dir
    metadata = None
    if log_dir is not None:
        metadata = next((m for m in logs if m.is_metadata_log and m.found_in(log_dir)), None)
        metadata = metadata or node_metadata(log_dir, logs)
    try:
        if metadata is not None:
            return node_configs(metadata_load(metadata))
        return find_metadata_configs([log.location])
    except KdumpError:  # an image that does not read: verify's KRaft checks say why
        return None


__all__ = [
    "find_metadata",
    "find_metadata_configs",
    "found_metadata",
    "metadata_configs",
    "metadata_dir_near",
    "node_configs",
    "node_metadata",
    "readable_meta_properties",
    "take_node_image",
]
