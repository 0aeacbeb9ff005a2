"""__remote_log_metadata records as their Java objects print them (toString()).

RemoteLogMetadataSerde turns each record into an object through a ``*Transform``, whose
constructors check what they are given; kafka-dump-log.sh's --remote-log-metadata-decoder prints
the object's ``toString()`` or, when a check throws, the exception's message:

- RemoteLogSegmentMetadataRecord (0) -> ``RemoteLogSegmentMetadata{remoteLogSegmentId=...,
  startOffset=..., endOffset=..., brokerId=..., maxTimestampMs=..., eventTimestampMs=...,
  segmentLeaderEpochs={epoch=offset, ...}, segmentSizeInBytes=..., customMetadata=...,
  state=..., txnIdxEmpty=...}``;
- RemoteLogSegmentMetadataUpdateRecord (1) -> ``RemoteLogSegmentMetadataUpdate{...}``;
- RemotePartitionDeleteMetadataRecord (2) -> ``RemotePartitionDeleteMetadata{...}``;
- RemoteLogSegmentMetadataSnapshotRecord (3) -> ``RemoteLogSegmentMetadataSnapshot{segmentId=...,
  startOffset=..., endOffset=..., maxTimestampMs=..., segmentLeaderEpochs=...,
  segmentSizeInBytes=..., customMetadata=..., state=..., txnIdxEmpty=...}`` (its brokerId and
  eventTimestampMs are not printed).

``RemoteLogSegmentId{topicIdPartition=<topic id>:<topic>-<partition>, id=<uuid>}``; uuids are
Uuid.toString() (base64url, no padding); the leader epochs a TreeMap (``{0=0, 3=120}``, keys in
order, a repeated epoch keeping its last offset); custom metadata ``Optional.empty`` or
``Optional[CustomMetadata{N bytes}]``; states the enum names of RemoteLogSegmentState and
RemotePartitionDeleteState (an id they do not know is null, which the constructors refuse).
"""

from __future__ import annotations

from typing import Any

from kdump.errors import MessageError
from kdump.format.messages import MessageSpec
from kdump.format.schemas.remote_log_metadata import (
    REMOTE_LOG_SEGMENT_STATES,
    REMOTE_PARTITION_DELETE_STATES,
)

Data = dict[str, Any]


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def topic_id_partition(entry: Data) -> str:
    """TopicIdPartition.toString(): ``topicId:topic-partition``."""
    return f"{entry['id']}:{entry['name']}-{entry['partition']}"


def segment_id(entry: Data) -> str:
    """RemoteLogSegmentId.toString()."""
    tip = topic_id_partition(entry["topicIdPartition"])
    return f"RemoteLogSegmentId{{topicIdPartition={tip}, id={entry['id']}}}"


def leader_epochs(entries: list[Data]) -> str:
    """The transform's HashMap put in entry order, then a TreeMap: AbstractMap.toString()."""
    epochs: dict[int, int] = {}
    for e in entries:
        epochs[e["leaderEpoch"]] = e["offset"]
    if not epochs:
        raise MessageError("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def custom_metadata(value: bytes | None) -> str:
    """Optional<CustomMetadata>.toString()."""
    return "Optional.empty" if value is None else f"Optional[CustomMetadata{{{len(value)} bytes}}]"


def segment_state(state_id: int) -> str:
    """RemoteLogSegmentState.forId, refused when null by Objects.requireNonNull."""
    name = REMOTE_LOG_SEGMENT_STATES.get(state_id)
    if name is None:
        raise MessageError("state can not be null")
    return name


def _check_offsets(start: int, end: int) -> None:
    """RemoteLogSegmentMetadata's constructor."""
    if start < 0:
        raise MessageError(
            f"Unexpected start offset = {start}. "
            "StartOffset for a remote segment cannot be negative"
        )
    if end < start:
        raise MessageError(
            f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
            f"startOffset = {start}"
        )


def _segment_metadata(d: Data) -> str:
    """RemoteLogSegmentMetadataTransform, then RemoteLogSegmentMetadata.createWithUpdates."""
    _check_offsets(d["startOffset"], d["endOffset"])
    epochs = leader_epochs(d["segmentLeaderEpochs"])
    state = segment_state(d["remoteLogSegmentState"])  # the update's constructor
    return (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={segment_id(d['remoteLogSegmentId'])}, "
        f"startOffset={d['startOffset']}, endOffset={d['endOffset']}, brokerId={d['brokerId']}, "
        f"maxTimestampMs={d['maxTimestampMs']}, eventTimestampMs={d['eventTimestampMs']}, "
        f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={d['segmentSizeInBytes']}, "
        f"customMetadata={custom_metadata(d['customMetadata'])}, state={state}, "
        f"txnIdxEmpty={java_bool(d['txnIndexEmpty'])}}}"
    )


def _segment_update(d: Data) -> str:
    state = segment_state(d["remoteLogSegmentState"])
    return (
        "RemoteLogSegmentMetadataUpdate{"
        f"remoteLogSegmentId={segment_id(d['remoteLogSegmentId'])}, "
        f"customMetadata={custom_metadata(d['customMetadata'])}, state={state}, "
        f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
    )


def _partition_delete(d: Data) -> str:
    state = REMOTE_PARTITION_DELETE_STATES.get(d["remotePartitionDeleteState"])
    if state is None:
        raise MessageError(None)  # Objects.requireNonNull(state): a NullPointerException, no text
    return (
        f"RemotePartitionDeleteMetadata{{topicPartition={topic_id_partition(d['topicIdPartition'])}"
        f", state={state}, eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
    )


def _segment_snapshot(d: Data) -> str:
    state = segment_state(d["remoteLogSegmentState"])
    epochs = leader_epochs(d["segmentLeaderEpochs"])
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={d['segmentId']}, "
        f"startOffset={d['startOffset']}, endOffset={d['endOffset']}, "
        f"maxTimestampMs={d['maxTimestampMs']}, segmentLeaderEpochs={epochs}, "
        f"segmentSizeInBytes={d['segmentSizeInBytes']}, "
        f"customMetadata={custom_metadata(d['customMetadata'])}, state={state}, "
        f"txnIdxEmpty={java_bool(d['txnIndexEmpty'])}}}"
    )


_DESCRIBE = {0: _segment_metadata, 1: _segment_update, 2: _partition_delete, 3: _segment_snapshot}


def describe_remote_log_metadata(spec: MessageSpec, data: Data) -> str:
    """RemoteLogMetadataSerde.deserialize(...).toString(); MessageError with Kafka's text."""
    assert spec.api_key is not None
    return _DESCRIBE[spec.api_key](data)
