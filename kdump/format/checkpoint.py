"""Entry types of Kafka's small text files; kdump.format.textfiles reads them (their names are
kdump.format.names')."""

from __future__ import annotations

from kdump.tuples import NamedTuple


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str
