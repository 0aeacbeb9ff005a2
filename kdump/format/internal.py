"""Kafka's internal topics, decoded as kafka-dump-log.sh's decoders print them.

- ``__consumer_offsets`` (``--offsets-decoder``) and ``__transaction_state``
  (``--transaction-log-decoder``): CoordinatorRecordSerde. The key is ``record_type int16`` then
  the key message; the value is ``version int16`` then the value message, or null (a tombstone).
  Kafka prints ``{"type":"<record type>","data":{...}}`` for the key and
  ``{"version":"<version>","data":{...}}`` or ``<DELETE>`` for the value.
- ``__cluster_metadata`` and KRaft snapshots (``--cluster-metadata-decoder``): MetadataRecordSerde.
  The value is a frame ``frame_version uvarint (1), type uvarint, version uvarint`` then the
  record; Kafka prints no key and ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``.
- KRaft control records (leader change, snapshot header/footer, KRaft version, voters), which
  DumpLogSegments.printControlRecord decodes in the record metadata whatever the decoder.

A record that does not decode gives Kafka's own error text in place of the content, and the dump
goes on. Where Kafka itself would stop the whole run (a coordinator record without a key, a
control record that does not read), kdump prints the error on that record and goes on too.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, NamedTuple

from kdump.format import messages
from kdump.format.messages import (
    MessageError,
    MessageSpec,
    Readable,
    Underflow,
    jackson,
    read_message,
    to_json,
)
from kdump.format.records import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    Record,
)
from kdump.format.schemas import clients, group_coordinator, metadata, transaction_coordinator

Content = str | dict[str, Any]
"""What goes after ``key:`` or ``payload:``: a JSON object, or text (an error, ``<DELETE>``)."""


class ParsedRecord(NamedTuple):
    """MessageParser.ParseResult: the key and value to print, None where nothing is printed."""

    key: Content | None
    value: Content | None


MessageParser = Callable[[Record], ParsedRecord]

DELETE = "<DELETE>"
CONSUMER_PROTOCOL_TYPE = "consumer"
GROUP_METADATA = 2
METADATA_FRAME_VERSION = 1


def content_text(content: Content) -> str:
    """The text Kafka prints for a key or value: Jackson's compact JSON, or the text itself."""
    return content if isinstance(content, str) else jackson(content)


class UnknownRecordType(Exception):
    """CoordinatorLoader.UnknownRecordTypeException."""

    def __init__(self, record_type: int) -> None:
        super().__init__(record_type)
        self.record_type = record_type


def _read_version(r: Readable, name: str) -> int:
    try:
        return r.read_short()
    except Underflow:
        raise MessageError(f"Could not read version from {name}'s buffer.") from None


def _read_record(spec: MessageSpec, r: Readable, version: int, name: str) -> dict[str, Any]:
    try:
        return read_message(spec, r, version)
    except MessageError as e:
        raise MessageError(
            f"Could not read record with version {version} from {name}'s buffer due to: {e}."
        ) from None


class CoordinatorRecord(NamedTuple):
    record_type: int
    key: dict[str, Any]
    value_version: int | None
    value: dict[str, Any] | None


def deserialize_coordinator_record(
    types: dict[int, tuple[MessageSpec, MessageSpec]], key: bytes, value: bytes | None
) -> CoordinatorRecord:
    """CoordinatorRecordSerde.deserialize, over the record types of one coordinator."""
    key_reader = Readable(key)
    record_type = _read_version(key_reader, "key")
    if record_type not in types:
        raise UnknownRecordType(record_type)
    key_spec, value_spec = types[record_type]
    key_data = _read_record(key_spec, key_reader, record_type, "key")
    if value is None:
        return CoordinatorRecord(record_type, key_data, None, None)
    value_reader = Readable(value)
    version = _read_version(value_reader, "value")
    return CoordinatorRecord(
        record_type, key_data, version, _read_record(value_spec, value_reader, version, "value")
    )


def _coordinator_parser(
    types: dict[int, tuple[MessageSpec, MessageSpec]],
    value_json: Callable[[MessageSpec, dict[str, Any], int], dict[str, Any]] = to_json,
) -> MessageParser:
    """DumpLogSegments.CoordinatorRecordMessageParser."""

    def parse(record: Record) -> ParsedRecord:
        offset = record.offset
        if record.key is None:
            # Kafka throws here and the whole run stops; kdump reports it on the record.
            return ParsedRecord(
                f"Failed to decode message at offset {offset} using the specified decoder "
                "(message had a missing key)",
                None,
            )
        try:
            r = deserialize_coordinator_record(types, record.key, record.value)
        except UnknownRecordType as e:
            return ParsedRecord(
                f"Unknown record type {e.record_type} at offset {offset}, skipping.", None
            )
        except MessageError as e:
            return ParsedRecord(f"Error at offset {offset}, skipping. {e}", None)
        key_spec, value_spec = types[r.record_type]
        key = {"type": str(key_spec.api_key), "data": to_json(key_spec, r.key, 0)}
        if r.value is None or r.value_version is None:
            return ParsedRecord(key, DELETE)
        data = value_json(value_spec, r.value, r.value_version)
        return ParsedRecord(key, {"version": str(r.value_version), "data": data})

    return parse


def _group_value_json(spec: MessageSpec, data: dict[str, Any], version: int) -> dict[str, Any]:
    """OffsetsMessageParser: group metadata members get their consumer protocol decoded."""
    out = to_json(spec, data, version)
    if spec.api_key != GROUP_METADATA or out.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return out
    for member in out.get("members") or []:
        _replace_field(member, "subscription", clients.CONSUMER_PROTOCOL_SUBSCRIPTION)
        _replace_field(member, "assignment", clients.CONSUMER_PROTOCOL_ASSIGNMENT)
    return out


def _replace_field(member: dict[str, Any], name: str, spec: MessageSpec) -> None:
    """``version int16`` then the message; the base64 bytes stay when that does not read."""
    encoded = member.get(name)
    if not isinstance(encoded, str):
        return
    r = Readable(base64.b64decode(encoded))
    try:
        version = r.read_short()
        member[name] = to_json(spec, read_message(spec, r, version), version)
    except MessageError:
        pass


offsets_parser: MessageParser = _coordinator_parser(
    group_coordinator.COORDINATOR_RECORD_TYPES, _group_value_json
)
transaction_log_parser: MessageParser = _coordinator_parser(
    transaction_coordinator.COORDINATOR_RECORD_TYPES
)


class MetadataParseError(MessageError):
    """org.apache.kafka.server.common.serialization.MetadataParseException."""


def metadata_record_type_name(spec: MessageSpec) -> str:
    """MetadataRecordType's enum name: the schema name in upper snake case."""
    out: list[str] = []
    previous_upper = True
    for ch in spec.name:
        if ch.isupper():
            if not previous_upper:
                out.append("_")
            out.append(ch)
            previous_upper = True
        else:
            out.append(ch.upper())
            previous_upper = False
    return "".join(out)


def _frame_short(r: Readable, entity: str) -> int:
    """AbstractApiMessageSerde.unsignedIntToShort."""
    try:
        value = r.read_unsigned_varint()
    except MessageError:
        raise MetadataParseError(f"Error while reading {entity}") from None
    if value > messages.SHORT_MAX:
        raise MetadataParseError(f"Value for {entity} was too large.")
    value &= 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def parse_metadata_record(value: bytes | None) -> dict[str, Any]:
    """MetadataRecordSerde.read, then the JSON DumpLogSegments prints.

    A type id kdump has no schema for comes out as ``{"type":"UNKNOWN(id)","version":v,
    "hex":"..."}`` (Kafka says "Unknown metadata id"), so newer records still show.
    """
    r = Readable(value if value is not None else b"", 0, 0 if value is None else None)
    frame_version = _frame_short(r, "frame version")
    if frame_version == 0:
        raise MetadataParseError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades "
            "from the preview release of KRaft in 2.8 to newer versions are not supported."
        )
    if frame_version != METADATA_FRAME_VERSION:
        raise MetadataParseError(
            "Could not deserialize metadata record due to unknown frame version "
            f"{frame_version}(only frame version {METADATA_FRAME_VERSION} is supported)"
        )
    api_key = _frame_short(r, "type")
    version = _frame_short(r, "version")
    spec = metadata.METADATA_RECORD_TYPES.get(api_key)
    if spec is None:
        rest = r.take(r.remaining)
        return {"type": f"UNKNOWN({api_key})", "version": version, "hex": rest.hex()}
    try:
        data = read_message(spec, r, version)
    except MessageError:
        raise MetadataParseError(f"Failed to deserialize record with type {api_key}") from None
    if r.remaining > 0:
        raise MetadataParseError(f"Found {r.remaining} byte(s) of garbage after {api_key}")
    return {
        "type": metadata_record_type_name(spec),
        "version": version,
        "data": to_json(spec, data, version),
    }


def cluster_metadata_parser(record: Record) -> ParsedRecord:
    """DumpLogSegments.ClusterMetadataLogMessageParser: no key, the framed record as payload."""
    try:
        return ParsedRecord(None, parse_metadata_record(record.value))
    except MessageError as e:
        return ParsedRecord(None, f"Error at {record.offset}, skipping. {e}")


MESSAGE_PARSERS: dict[str, MessageParser] = {
    "offsets": offsets_parser,
    "transaction-log": transaction_log_parser,
    "cluster-metadata": cluster_metadata_parser,
}


class ControlRecord(NamedTuple):
    """A decoded KRaft control record: its DumpLogSegments label and JSON, or the error."""

    label: str
    data: dict[str, Any] | None
    error: str | None = None

    def text(self) -> str:
        """What DumpLogSegments.printControlRecord appends to the record's metadata."""
        return f" {self.label} {self.error if self.data is None else jackson(self.data)}"


CONTROL_RECORDS: dict[int, tuple[str, MessageSpec]] = {
    LEADER_CHANGE: ("LeaderChange:", clients.LEADER_CHANGE_MESSAGE),
    SNAPSHOT_HEADER: ("SnapshotHeader", clients.SNAPSHOT_HEADER_RECORD),
    SNAPSHOT_FOOTER: ("SnapshotFooter", clients.SNAPSHOT_FOOTER_RECORD),
    KRAFT_VERSION: ("KRaftVersion", clients.KRAFT_VERSION_RECORD),
    KRAFT_VOTERS: ("KRaftVoters", clients.VOTERS_RECORD),
}
CONTROL_RECORD_READ_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION


def decode_control_record(control_type: int, record: Record) -> ControlRecord | None:
    """ControlRecordUtils.deserialize*, written as JSON at the record's own ``version`` field.

    None for the types this does not cover (ABORT/COMMIT markers, unknown ids).
    """
    if control_type not in CONTROL_RECORDS:
        return None
    label, spec = CONTROL_RECORDS[control_type]
    if record.value is None:
        return ControlRecord(label, None, f"Error at offset {record.offset}: the value is null")
    try:
        data = read_message(spec, Readable(record.value), CONTROL_RECORD_READ_VERSION)
    except MessageError as e:
        return ControlRecord(label, None, f"Error at offset {record.offset}: {e}")
    return ControlRecord(label, to_json(spec, data, int(data["version"])))
