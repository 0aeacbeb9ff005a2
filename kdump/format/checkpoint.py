"""Names and entry types of Kafka's small text files; kdump.format.textfiles reads them."""

from __future__ import annotations

from typing import NamedTuple

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
"""The log dir's clean shutdown marker (CleanShutdownFileHandler)."""
OFFSET_CHECKPOINTS = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_CHECKPOINT,
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
