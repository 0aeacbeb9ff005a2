"""Kafka's internal topics (``__transaction_state``, ``__remote_log_metadata``) read as their
owners load them: every data record of a partition directory in offset order, control batches
and pre-v2 messages skipped, what cannot be read reported and passed over."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.records import Record

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog

Unreadable = Callable[[str, int, str], None]
"""Told (path, byte position, reason) of a batch or a stretch of log that could not be read."""


def partition_records(
    partition: UnifiedLog, unreadable: Unreadable, check_crc: bool = False
) -> Iterator[tuple[str, Batch, Record]]:
    """(log path, batch, record) of every data record of the partition."""
    for segment in partition.segments:
        log = segment.log
        walk = log.walk(check_crc=check_crc)
        for run in walk:
            for i in range(run.n):
                batch = run.batch(i)
                if batch.is_control or batch.magic < 2:
                    continue
                try:
                    for record in log.records(batch):
                        yield log.path, batch, record
                except KdumpError as e:
                    unreadable(log.path, batch.position, str(e))
        stop = walk.stop
        if stop is not None and stop.error is not None:
            unreadable(log.path, stop.position, stop.error.reason)


__all__ = ["Unreadable", "partition_records"]
