"""The transaction coordinator's records (__transaction_state).

Transcribed from Apache Kafka's JSON message schemas in
``transaction-coordinator/src/main/resources/common/message/``: the facts only (field names,
types, versions, nullable and tagged versions, tags, defaults). Read by
:mod:`kdump.format.messages`. See kdump/format/schemas/SOURCES.md: as of trunk d79bd502
(2026-08-23).

``TRANSACTION_STATES`` is TransactionState's id -> name: kafka-dump-log.sh of Kafka 4.4 prints
``transactionStatus`` by name.
"""

from __future__ import annotations

from kdump.format.messages import MessageSpec, field, message

# One field a line, as in the schema files: a data table, not code to reflow.
# fmt: off


TRANSACTION_LOG_KEY = message(
    "TransactionLogKey", 0, "0", "none",
    [
        field("TransactionalId", "string", "0"),
    ],
)


TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue", 0, "0-1", "1+",
    [
        field("ProducerId", "int64", "0+"),
        field("PreviousProducerId", "int64", tagged="1+", tag=0, default="-1"),
        field("NextProducerId", "int64", tagged="1+", tag=1, default="-1"),
        field("ProducerEpoch", "int16", "0+"),
        field("NextProducerEpoch", "int16", tagged="1+", tag=3, default="-1"),
        field("TransactionTimeoutMs", "int32", "0+"),
        field("TransactionStatus", "int8", "0+"),
        field("TransactionPartitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
            field("Topic", "string", "0+"),
            field("PartitionIds", "[]int32", "0+"),
        ]),
        field("TransactionLastUpdateTimestampMs", "int64", "0+"),
        field("TransactionStartTimestampMs", "int64", "0+"),
        field("ClientTransactionVersion", "int16", tagged="1+", tag=2, default="0"),
    ],
)


COORDINATOR_RECORD_TYPES: dict[int, tuple[MessageSpec, MessageSpec]] = {
    0: (TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
}

TRANSACTION_STATES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}

# fmt: on
