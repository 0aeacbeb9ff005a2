"""The transaction coordinator's view: ``__transaction_state`` partitions read as the coordinator
loads them (``TransactionStateManager.loadTransactionMetadata``: the last value per
transactional id wins, a tombstone removes it), and the partition a transactional id maps to
(``TransactionStateManager.partitionFor``: ``Utils.abs(transactionalId.hashCode) %
transaction.state.log.num.partitions``; notes §D.8).

Records are decoded by kdump's transaction-log decoder (kdump.format.internal,
kdump.format.schemas.transaction_coordinator), the one ``kafka-dump-log.sh
--transaction-log-decoder`` uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kdump.checks.findings import Finding, Severity
from kdump.config import option_default
from kdump.errors import MessageError, UnknownRecordType
from kdump.format.internal import deserialize_coordinator_record
from kdump.format.schemas.transaction_coordinator import (
    COORDINATOR_RECORD_TYPES,
    TRANSACTION_STATES,
)
from kdump.internal_topics import partition_records
from kdump.java import java_int, java_string_hash, utils_abs

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog

TRANSACTION_STATE_TOPIC = "__transaction_state"
DEFAULT_TRANSACTION_STATE_PARTITIONS = option_default("transaction.state.log.num.partitions")
"""transaction.state.log.num.partitions; fixed when the topic is created."""
OPEN_STATES = frozenset(("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"))
"""States in which the coordinator still has the transaction's partitions to finish."""
COMPLETE_STATES = frozenset(("CompleteCommit", "CompleteAbort", "Empty", "Dead"))


def partition_for(transactional_id: str, partition_count: int) -> int:
    """TransactionStateManager.partitionFor: the __transaction_state partition of an id."""
    return utils_abs(java_int(java_string_hash(transactional_id))) % partition_count


def state_name(state_id: int) -> str:
    """TransactionState's name for an id, as DescribeTransactions and kafka-dump-log show it."""
    return TRANSACTION_STATES.get(state_id, f"Unknown({state_id})")


@dataclass(frozen=True)
class TransactionMetadata:
    """The coordinator's last record of one transactional id (TransactionLogValue)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: str
    """TransactionState's name: Empty, Ongoing, PrepareCommit, ... CompleteAbort."""
    topic_partitions: tuple[tuple[str, int], ...]
    txn_last_update_timestamp: int
    txn_start_timestamp: int
    previous_producer_id: int
    next_producer_id: int
    partition: int
    """The __transaction_state partition the record was read from."""
    offset: int
    """Its offset there."""

    def includes(self, topic: str | None, partition: int | None) -> bool:
        return (topic, partition) in self.topic_partitions

    @classmethod
    def from_value(
        cls, transactional_id: str, value: dict[str, Any], partition: int, offset: int
    ) -> TransactionMetadata:
        partitions = tuple(
            (p["topic"], pid)
            for p in value["transactionPartitions"] or ()
            for pid in p["partitionIds"]
        )
        return cls(
            transactional_id,
            value["producerId"],
            value["producerEpoch"],
            value["transactionTimeoutMs"],
            state_name(value["transactionStatus"]),
            partitions,
            value["transactionLastUpdateTimestampMs"],
            value["transactionStartTimestampMs"],
            value.get("previousProducerId", -1),
            value.get("nextProducerId", -1),
            partition,
            offset,
        )


@dataclass
class CoordinatorView:
    """What the __transaction_state partitions under the paths say."""

    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)
    partitions_read: list[int] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    partition_count: int = DEFAULT_TRANSACTION_STATE_PARTITIONS
    partition_count_source: str = "default"
    """How the count was chosen (``PARTITION_COUNT_SOURCES``): ``given``, ``metadata``,
    ``default``, ``directory`` or ``guess``."""
    findings: list[Finding] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return not self.partitions_read

    @property
    def is_partial(self) -> bool:
        """Some of the partition_count partitions were not read: an id may live in one."""
        return len(set(self.partitions_read)) < self.partition_count

    @property
    def partition_count_words(self) -> str:
        return PARTITION_COUNT_SOURCES[self.partition_count_source].format(
            n=self.partition_count, last=self.partition_count - 1
        )

    def by_producer_id(self, producer_id: int) -> TransactionMetadata | None:
        """ListTransactions(filterProducerIds): the transactional id with this producer id."""
        for txn in self.transactions.values():
            if txn.producer_id == producer_id:
                return txn
        return None

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partition_count)

    def covers(self, transactional_id: str) -> bool:
        """Whether the partition this id maps to was read."""
        return self.partition_for(transactional_id) in self.partitions_read


def is_transaction_state(log: UnifiedLog) -> bool:
    return log.topic == TRANSACTION_STATE_TOPIC


def read_coordinator_view(
    logs: list[UnifiedLog],
    partition_count: int | None = None,
    image_partition_count: int | None = None,
) -> CoordinatorView:
    """Load every __transaction_state partition given, in partition order. The partition
    count: ``partition_count`` (given), else the topic's in the cluster's metadata image
    (``image_partition_count``), else what the partitions read show."""
    view = CoordinatorView()
    numbered = sorted(
        ((log.partition, log) for log in logs if log.partition is not None),
        key=lambda pair: pair[0],
    )
    for number, log in numbered:
        if number in view.partitions_read:
            view.findings.append(
                Finding(
                    "TXN_COORDINATOR_DUPLICATE",
                    Severity.WARNING,
                    log.location,
                    f"__transaction_state-{number} given twice; the later copy wins",
                )
            )
        else:
            view.partitions_read.append(number)
        view.paths.append(log.location)
        _load_partition(log, number, view)
    if partition_count is not None:
        view.partition_count, view.partition_count_source = partition_count, "given"
    elif image_partition_count is not None:
        view.partition_count, view.partition_count_source = image_partition_count, "metadata"
    elif view.partitions_read:
        view.partition_count, view.partition_count_source = _partition_count(view)
    _check_placement(view)
    return view


PARTITION_COUNT_SOURCES = {
    "given": "given",
    "metadata": "__transaction_state's partitions in the cluster's metadata image",
    "default": "Kafka's default transaction.state.log.num.partitions, which the ids read "
    "agree with; pass --transaction-state-partitions if the cluster's differs",
    "directory": "from the directory: partitions 0..{last} all read and every id sits where {n} "
    "partitions put it",
    "guess": "a guess: Kafka's default transaction.state.log.num.partitions or the highest "
    "partition read + 1 if more, which the ids read do not confirm; pass "
    "--transaction-state-partitions",
}
"""How a partition count was chosen, in words for the text output."""


def _placed_by(view: CoordinatorView, count: int) -> bool:
    return all(
        partition_for(t.transactional_id, count) == t.partition for t in view.transactions.values()
    )


def _partition_count(view: CoordinatorView) -> tuple[int, str]:
    """The count Kafka most likely uses: its default 50 unless the directory shows otherwise,
    that is unless partitions 0..N-1 are all there and every id read sits where N puts it
    and not where 50 does. A broker usually holds only some partitions, so the highest read
    + 1 alone proves nothing but a lower bound."""
    default = DEFAULT_TRANSACTION_STATE_PARTITIONS
    highest = max(view.partitions_read) + 1
    if highest <= default and _placed_by(view, default):
        return default, "default"
    if sorted(set(view.partitions_read)) == list(range(highest)) and _placed_by(view, highest):
        return highest, "directory"
    return max(default, highest), "guess"


def _load_partition(log: UnifiedLog, number: int, view: CoordinatorView) -> None:
    def unreadable(path: str, position: int, reason: str) -> None:
        view.findings.append(_unreadable(path, position, reason))

    for path, batch, record in partition_records(log, unreadable):
        if record.key is None:
            unreadable(path, batch.position, f"record {record.offset} has no key")
            continue
        try:
            read = deserialize_coordinator_record(
                COORDINATOR_RECORD_TYPES, record.key, record.value
            )
        except (MessageError, UnknownRecordType) as e:
            unreadable(path, batch.position, f"record {record.offset}: {e}")
            continue
        transactional_id = read.key["transactionalId"]
        if read.value is None:
            view.transactions.pop(transactional_id, None)
        else:
            view.transactions[transactional_id] = TransactionMetadata.from_value(
                transactional_id, read.value, number, record.offset
            )


def _unreadable(path: str, position: int, message: str) -> Finding:
    return Finding(
        "TXN_COORDINATOR_UNREADABLE",
        Severity.WARNING,
        path,
        f"{message}; the coordinator's view may miss this transaction",
        position=position,
    )


def _check_placement(view: CoordinatorView) -> None:
    """An id found in another partition than its hash gives: the partition count is wrong."""
    for txn in view.transactions.values():
        expected = view.partition_for(txn.transactional_id)
        if expected != txn.partition:
            view.findings.append(
                Finding(
                    "TXN_COORDINATOR_PARTITION_COUNT",
                    Severity.WARNING,
                    view.paths[view.partitions_read.index(txn.partition)]
                    if txn.partition in view.partitions_read
                    else TRANSACTION_STATE_TOPIC,
                    f"transactional id {txn.transactional_id!r} is in __transaction_state-"
                    f"{txn.partition}, but with {view.partition_count} partitions "
                    f"({view.partition_count_source}) it maps to {expected}: pass "
                    "--transaction-state-partitions with the topic's partition count",
                    offset=txn.offset,
                )
            )
            return


__all__ = [
    "COMPLETE_STATES",
    "DEFAULT_TRANSACTION_STATE_PARTITIONS",
    "OPEN_STATES",
    "PARTITION_COUNT_SOURCES",
    "TRANSACTION_STATE_TOPIC",
    "CoordinatorView",
    "TransactionMetadata",
    "is_transaction_state",
    "partition_for",
    "read_coordinator_view",
    "state_name",
]
