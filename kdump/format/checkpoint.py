"""Names and entry types of Kafka's small text files; kdump.format.textfiles reads them."""

from __future__ import annotations

from typing import NamedTuple

OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str
