"""Kafka's internal topics, decoded as kafka-dump-log.sh's decoders print them.

- ``__consumer_offsets`` (``--offsets-decoder``) and ``__transaction_state``
  (``--transaction-log-decoder``): CoordinatorRecordSerde. The key is ``record_type int16`` then
  the key message; the value is ``version int16`` then the value message, or null (a tombstone).
  Kafka prints ``{"type":"<record type>","data":{...}}`` for the key and
  ``{"version":"<version>","data":{...}}`` or ``<DELETE>`` for the value.
- ``__share_group_state`` (``--share-group-state-decoder``): the same serde over the share
  coordinator's records (ShareSnapshot, ShareUpdate), printed the same way.
- ``__cluster_metadata`` and KRaft snapshots (``--cluster-metadata-decoder``): MetadataRecordSerde.
  The value is a frame ``frame_version uvarint (1), type uvarint, version uvarint`` then the
  record; Kafka prints no key and ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``.
- ``__remote_log_metadata`` (``--remote-log-metadata-decoder``): RemoteLogMetadataSerde, the
  same frame around the four remote-log records, printed as their Java ``toString()``.
- KRaft control records (leader change, snapshot header/footer, KRaft version, voters), which
  DumpLogSegments.printControlRecord decodes in the record metadata whatever the decoder.

A record that does not decode gives Kafka's own error text in place of the content, and the dump
goes on. Where Kafka itself would stop the whole run (a coordinator record without a key, a
control record that does not read), kdump prints the error on that record and goes on too.

A record newer than kdump's schemas (an unknown type, a version above the newest) is never
decoded by guessing: the text is Kafka's error, a :class:`KafkaText` whose ``jsonl`` (type,
version and the bytes) JSON Lines shows in its place.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kdump.errors import (
    DecodeBound,
    EarlyAccessLayout,
    MessageError,
    MetadataParseError,
    Underflow,
    UnknownMetadataRecord,
    UnknownRecordType,
    UnknownRecordVersion,
)
from kdump.format import messages
from kdump.format.compiled import NotCompiled, compiled_reader
from kdump.format.messages import MessageSpec, Readable, jackson, read_message, to_json
from kdump.format.records import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    Record,
)
from kdump.format.remote import describe_remote_log_metadata
from kdump.format.schemas import (
    clients,
    group_coordinator,
    metadata,
    remote_log_metadata,
    share_coordinator,
    transaction_coordinator,
)
from kdump.releases import LATEST, Release
from kdump.tuples import NamedTuple

Content = str | dict[str, Any]
"""What goes after ``key:`` or ``payload:``: a JSON object, or text (an error, ``<DELETE>``)."""

Json = Any


class KafkaText(str):
    """What kafka-dump-log.sh prints for a record, and what JSON Lines shows in its place.

    The text goes where Kafka prints it (after ``key:`` for the coordinator decoders, after
    ``payload:`` for the metadata ones); ``jsonl`` is the (key, value) pair of the JSON Lines
    record: for a record kdump does not decode, what it knows (type, version, layout, bytes)
    and the text; for a remote-log-metadata record, its fields beside the toString().
    """

    jsonl: tuple[Json, Json]

    def __new__(cls, text: str, key: Json, value: Json) -> KafkaText:
        obj = super().__new__(cls, text)
        obj.jsonl = (key, value)
        return obj


EARLY_ACCESS_4_0 = "kafka-4.0-early-access"
"""The name JSON Lines gives a version 0 share-group value that reads only under 4.0's layout."""


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
    types: dict[int, tuple[MessageSpec, MessageSpec]],
    key: bytes,
    value: bytes | None,
    early_access: dict[int, MessageSpec] | None = None,
) -> CoordinatorRecord:
    """CoordinatorRecordSerde.deserialize, over the record types of one coordinator.

    A value version outside the value schema's valid versions is refused, as Kafka refuses it
    (UnknownRecordVersionException), instead of being read with the newest layout kdump knows.
    ``early_access`` holds the layouts of version 0 values that changed without a version bump;
    one is tried only when today's layout does not read (EarlyAccessLayout carries the data).
    """
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
    if version not in value_spec.valid_versions:
        raise UnknownRecordVersion(record_type, key_data, version, value)
    try:
        data = _read_record(value_spec, value_reader, version, "value")
    except MessageError as e:
        old = (early_access or {}).get(record_type)
        if old is None or version != 0:
            raise
        try:
            early = read_message(old, Readable(value, 2), 0)
        except MessageError:
            raise e from None
        raise EarlyAccessLayout(e, record_type, key_data, early) from None
    return CoordinatorRecord(record_type, key_data, version, data)


ValueJson = Callable[[MessageSpec, dict[str, Any], int], dict[str, Any]]


def _value_bytes(value: bytes | None) -> Json:
    """The facts of a value kdump does not decode: its version field and the bytes after it."""
    if value is None:
        return None
    version = str(int.from_bytes(value[:2], "big", signed=True)) if len(value) >= 2 else None
    return {"version": version, "hex": value[2:].hex() if version is not None else value.hex()}


def _coordinator_parser(
    types: dict[int, tuple[MessageSpec, MessageSpec]],
    value_json: ValueJson = to_json,
    early_access: dict[int, MessageSpec] | None = None,
) -> MessageParser:
    """DumpLogSegments.CoordinatorRecordMessageParser."""

    def key_json(record_type: int, data: dict[str, Any]) -> dict[str, Any]:
        key_spec = types[record_type][0]
        return {"type": str(key_spec.api_key), "data": to_json(key_spec, data, 0)}

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
            r = deserialize_coordinator_record(types, record.key, record.value, early_access)
            key = key_json(r.record_type, r.key)
            if r.value is None or r.value_version is None:
                return ParsedRecord(key, DELETE)
            data = value_json(types[r.record_type][1], r.value, r.value_version)
        except UnknownRecordType as e:
            text = f"Unknown record type {e.record_type} at offset {offset}, skipping."
            key_facts = {"error": text, "type": str(e.record_type), "hex": record.key[2:].hex()}
            return ParsedRecord(KafkaText(text, key_facts, _value_bytes(record.value)), None)
        except UnknownRecordVersion as e:
            text = f"Error at offset {offset}, skipping. {e}"
            key = key_json(e.record_type, e.key)
            value = {
                "error": text,
                "type": key["type"],
                "unknown_version": True,
                **_value_bytes(e.value),
            }
            return ParsedRecord(KafkaText(text, key, value), None)
        except EarlyAccessLayout as e:
            text = f"Error at offset {offset}, skipping. {e}"
            old = (early_access or {})[e.record_type]
            value = {
                "version": "0",
                "layout": EARLY_ACCESS_4_0,
                "data": to_json(old, e.data, 0),
                "error": text,
            }
            return ParsedRecord(KafkaText(text, key_json(e.record_type, e.key), value), None)
        except MessageError as e:
            return ParsedRecord(f"Error at offset {offset}, skipping. {e}", None)
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
    group_coordinator.COORDINATOR_RECORD_TYPES,
    _group_value_json,
    group_coordinator.EARLY_ACCESS_4_0_LAYOUTS,
)
share_group_state_parser: MessageParser = _coordinator_parser(
    share_coordinator.COORDINATOR_RECORD_TYPES
)


def _transaction_value_json(spec: MessageSpec, data: dict[str, Any], version: int) -> Json:
    """Kafka 4.4's TransactionLogMessageParser prints the state by name (TransactionState).

    An id TransactionState does not know prints as its number in a JSON string (``"9"``):
    the tool catches fromId's IllegalStateException and puts String.valueOf(id) in its place.
    """
    out = to_json(spec, data, version)
    status = out["transactionStatus"]
    out["transactionStatus"] = transaction_coordinator.TRANSACTION_STATES.get(status, str(status))
    return out


def transaction_log_parser_for(release: Release = LATEST) -> MessageParser:
    return _coordinator_parser(
        transaction_coordinator.COORDINATOR_RECORD_TYPES,
        _transaction_value_json if release.names_transaction_states else to_json,
    )


transaction_log_parser: MessageParser = transaction_log_parser_for()


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


def read_framed(
    value: bytes | None, types: dict[int, MessageSpec]
) -> tuple[MessageSpec, int, dict[str, Any]]:
    """AbstractApiMessageSerde.read: frame version, type and version, the message, no garbage.

    A version above the schema's newest is not read with the newest layout kdump knows (which
    Kafka's generated reader would do): it is refused as a read that fails.

    The usual frame (one byte each) is read by the compiled reader of its message and version
    (kdump.format.compiled); whatever that cannot read whole is read by the reference
    (``read_framed_reference``), which words the error as Kafka does.
    """
    if value is not None and len(value) > 3 and value[0] == METADATA_FRAME_VERSION:
        api_key, version = value[1], value[2]
        spec = types.get(api_key) if api_key < 0x80 and version < 0x80 else None
        reader = None if spec is None else compiled_reader(spec, version)
        if reader is not None:
            try:
                data, end = reader(value, 3)
            except NotCompiled:
                pass
            else:
                if end == len(value):
                    assert spec is not None
                    return spec, version, data
    return read_framed_reference(value, types)


def read_framed_reference(
    value: bytes | None, types: dict[int, MessageSpec]
) -> tuple[MessageSpec, int, dict[str, Any]]:
    """``read_framed`` by walking the schema (kdump.format.messages): the reference."""
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
    spec = types.get(api_key)
    if spec is None:
        raise UnknownMetadataRecord(
            "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
            f"{api_key}",
            {"type": api_key, "unknown_type": True, "version": version, "hex": _rest(r)},
        )
    failed = f"Failed to deserialize record with type {api_key}"
    if version not in spec.valid_versions:
        raise UnknownMetadataRecord(
            failed,
            {
                "type": metadata_record_type_name(spec),
                "version": version,
                "unknown_version": True,
                "hex": _rest(r),
            },
        )
    try:
        data = read_message(spec, r, version)
    except DecodeBound as e:  # kdump's bound, not Kafka's failure: said so
        raise MetadataParseError(f"{failed}: {e}") from None
    except MessageError:
        raise MetadataParseError(failed) from None
    if r.remaining > 0:
        raise MetadataParseError(f"Found {r.remaining} byte(s) of garbage after {api_key}")
    return spec, version, data


def _rest(r: Readable) -> str:
    return r.take(r.remaining).hex()


def parse_metadata_record(value: bytes | None) -> dict[str, Any]:
    """MetadataRecordSerde.read, then the JSON DumpLogSegments prints."""
    spec, version, data = read_framed(value, metadata.METADATA_RECORD_TYPES)
    return {
        "type": metadata_record_type_name(spec),
        "version": version,
        "data": to_json(spec, data, version),
    }


def cluster_metadata_parser(record: Record) -> ParsedRecord:
    """DumpLogSegments.ClusterMetadataLogMessageParser: no key, the framed record as payload."""
    try:
        return ParsedRecord(None, parse_metadata_record(record.value))
    except UnknownMetadataRecord as e:
        text = f"Error at {record.offset}, skipping. {e}"
        return ParsedRecord(None, KafkaText(text, None, {"error": text, **e.facts}))
    except MessageError as e:
        return ParsedRecord(None, f"Error at {record.offset}, skipping. {e}")


def remote_log_metadata_parser(record: Record, release: Release = LATEST) -> ParsedRecord:
    """DumpLogSegments.RemoteMetadataLogMessageParser: no key, the metadata's toString()."""
    if record.value is None:
        # record.value().remaining() on a null value: the JDK's helpful NullPointerException.
        return ParsedRecord(
            None,
            f"Error at offset {record.offset}, skipping. Cannot invoke "
            '"java.nio.ByteBuffer.remaining()" because the return value of '
            f'"{release.record_class}.value()" is null',
        )
    try:
        spec, version, data = read_framed(
            record.value, remote_log_metadata.REMOTE_LOG_METADATA_RECORD_TYPES
        )
        text = describe_remote_log_metadata(spec, data)
    except UnknownMetadataRecord as e:
        text = f"Error at offset {record.offset}, skipping. {e}"
        return ParsedRecord(None, KafkaText(text, None, {"error": text, **e.facts}))
    except MessageError as e:
        return ParsedRecord(None, f"Error at offset {record.offset}, skipping. {e}")
    facts = {"type": spec.name, "version": version, "data": to_json(spec, data, version)}
    return ParsedRecord(None, KafkaText(text, None, {**facts, "text": text}))


@dataclass(frozen=True)
class NamedParser:
    """The parser of a --<name>-decoder option: JSON's ``key_encoding``/``value_encoding`` of
    the records it decodes are that name."""

    name: str
    parse: MessageParser

    def __call__(self, record: Record) -> ParsedRecord:
        return self.parse(record)

    def texts(self, record: Record) -> tuple[str | None, str | None]:
        """The key and value as Kafka prints them (None: none printed)."""
        key, value = self.parse(record)
        return (
            None if key is None else content_text(key),
            None if value is None else content_text(value),
        )


def message_parser(name: str, release: Release = LATEST) -> NamedParser:
    """The parser of a --<name>-decoder option, printing as ``release``'s tool prints."""
    if name == "transaction-log":
        return NamedParser(name, transaction_log_parser_for(release))
    if name == "remote-log-metadata":
        return NamedParser(name, functools.partial(remote_log_metadata_parser, release=release))
    return NamedParser(name, MESSAGE_PARSERS[name])


MESSAGE_PARSERS: dict[str, MessageParser] = {
    "offsets": offsets_parser,
    "transaction-log": transaction_log_parser,
    "cluster-metadata": cluster_metadata_parser,
    "remote-log-metadata": remote_log_metadata_parser,
    "share-group-state": share_group_state_parser,
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
