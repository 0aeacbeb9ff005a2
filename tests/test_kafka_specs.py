"""kdump's schema tables against Kafka trunk's own JSON specs (tests/data/kafka-specs/).

Two checks, both driven by the spec files copied from trunk d79bd502 (2026-08-23):

- the tables: every field of every schema kdump decodes (name, order, type, versions, nullable,
  tagged versions, tag, default, flexible versions, zero-copy, struct names and versions), every
  record type of the coordinators' and the metadata record-type enums;
- the bytes: for every spec and every valid version, random values (nullable fields null,
  tagged fields at and away from their defaults, unknown tags) are written by the encoder
  below, which follows the layout Kafka's generated writers produce (MessageDataGenerator) and
  reads nothing but the spec file, then read by kdump; what kdump prints must be what Kafka's
  generated JsonConverter prints for those values (tagged fields at their default left out).

A newer trunk is brought in by copying its spec files over tests/data/kafka-specs/: this test then
names every field kdump has to change.
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from kafka_specs import (
    SPECS_4_0,
    all_specs,
    default_text,
    field_versions,
    load,
    parse_versions,
    specs_in,
)
from test_internal_topics import record

from kdump.format.internal import (
    cluster_metadata_parser,
    offsets_parser,
    remote_log_metadata_parser,
    share_group_state_parser,
    transaction_log_parser,
)
from kdump.format.messages import MessageSpec, Readable, read_message, to_json
from kdump.format.schemas import (
    clients,
    group_coordinator,
    metadata,
    remote_log_metadata,
    share_coordinator,
    transaction_coordinator,
)

SPECS = all_specs()
ROUNDS = 25  # random values per spec and version

MODULES = (
    group_coordinator,
    transaction_coordinator,
    share_coordinator,
    metadata,
    clients,
    remote_log_metadata,
)


def kdump_tables() -> dict[str, MessageSpec]:
    """Every schema kdump decodes today, by name (the 4.0 early-access layouts aside)."""
    out: dict[str, MessageSpec] = {}
    for module in MODULES:
        for name, obj in vars(module).items():
            if isinstance(obj, MessageSpec) and not name.endswith("_4_0"):
                out[obj.name] = obj
    return out


KDUMP = kdump_tables()

# ---------------------------------------------------------------------------------- the tables

Row = dict[str, Any]


def _spec_rows(path: str, fields: list[Any], commons: dict[str, Any]) -> Iterator[tuple[str, Row]]:
    yield path, {"fields": [f["name"] for f in fields]}
    for f in fields:
        element = f["type"].removeprefix("[]")
        row: Row = {
            "type": f["type"],
            "versions": field_versions(f),
            "nullableVersions": parse_versions(f.get("nullableVersions")) or (0, -1),
            "taggedVersions": parse_versions(f.get("taggedVersions")) or (0, -1),
            "tag": f.get("tag"),
            "default": default_text(f),
            "flexibleVersions": parse_versions(f.get("flexibleVersions")),
            "zeroCopy": bool(f.get("zeroCopy", False)),
        }
        where = f"{path}.{f['name']}"
        if "fields" in f:
            row["struct"] = (element, field_versions(f))
            yield where, row
            yield from _spec_rows(where, f["fields"], commons)
        elif element in commons:
            row["struct"] = (element, parse_versions(commons[element]["versions"]))
            yield where, row
            yield from _spec_rows(where, commons[element]["fields"], commons)
        else:
            yield where, row


def spec_rows(spec: dict[str, Any]) -> dict[str, Row]:
    commons = {c["name"]: c for c in spec.get("commonStructs", [])}
    rows = dict(_spec_rows(spec["name"], spec["fields"], commons))
    rows["(message)"] = {
        "apiKey": spec.get("apiKey"),
        "validVersions": parse_versions(spec["validVersions"]),
        "flexibleVersions": parse_versions(spec["flexibleVersions"]),
    }
    return rows


def _kdump_rows(path: str, fields: list[Any]) -> Iterator[tuple[str, Row]]:
    yield path, {"fields": [f.name for f in fields]}
    for f in fields:
        row: Row = {
            "type": f.type,
            "versions": tuple(f.versions),
            "nullableVersions": tuple(f.nullable),
            "taggedVersions": tuple(f.tagged),
            "tag": f.tag,
            "default": f.default,
            "flexibleVersions": None if f.flexible is None else tuple(f.flexible),
            "zeroCopy": f.zero_copy,
        }
        where = f"{path}.{f.name}"
        if f.struct is not None:
            row["struct"] = (f.struct.name, tuple(f.struct.versions))
            yield where, row
            yield from _kdump_rows(where, f.struct.fields)
        else:
            yield where, row


def kdump_rows(spec: MessageSpec) -> dict[str, Row]:
    rows = dict(_kdump_rows(spec.name, spec.struct.fields))
    rows["(message)"] = {
        "apiKey": spec.api_key,
        "validVersions": tuple(spec.valid_versions),
        "flexibleVersions": tuple(spec.flexible_versions),
    }
    return rows


@pytest.mark.parametrize("name", sorted(SPECS))
def test_kdump_table_is_trunks_spec(name: str) -> None:
    assert name in KDUMP, f"kdump has no table for {name}"
    expected, actual = spec_rows(SPECS[name]), kdump_rows(KDUMP[name])
    differences = [
        f"{path}: trunk {expected.get(path)} kdump {actual.get(path)}"
        for path in sorted(set(expected) | set(actual))
        if expected.get(path) != actual.get(path)
    ]
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize(
    ("name", "table"),
    [
        ("ShareGroupMetadataValue", group_coordinator.SHARE_GROUP_METADATA_VALUE_4_0),
        (
            "ShareGroupStatePartitionMetadataValue",
            group_coordinator.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_4_0,
        ),
    ],
)
def test_early_access_tables_are_kafka_4_0s_specs(name: str, table: MessageSpec) -> None:
    """The layouts Kafka 4.0 wrote under version 0 (its specs had no apiKey yet)."""
    expected = spec_rows(load(SPECS_4_0 / f"{name}.json"))
    actual = kdump_rows(table)
    actual["(message)"]["apiKey"] = None
    assert actual == expected


def test_kdump_has_no_table_trunk_lacks() -> None:
    assert sorted(set(KDUMP) - set(SPECS)) == []


def _coordinator_types(module: str) -> dict[int, tuple[str, str]]:
    """CoordinatorRecordType as the generator builds it: key and value specs by apiKey."""
    specs = specs_in(module).values()
    keys = {s["apiKey"]: s["name"] for s in specs if s["type"] == "coordinator-key"}
    values = {s["apiKey"]: s["name"] for s in specs if s["type"] == "coordinator-value"}
    assert keys.keys() == values.keys()
    return {k: (keys[k], values[k]) for k in keys}


@pytest.mark.parametrize(
    ("module", "table"),
    [
        ("group-coordinator", group_coordinator.COORDINATOR_RECORD_TYPES),
        ("transaction-coordinator", transaction_coordinator.COORDINATOR_RECORD_TYPES),
        ("share-coordinator", share_coordinator.COORDINATOR_RECORD_TYPES),
    ],
)
def test_coordinator_record_types_are_trunks(
    module: str, table: dict[int, tuple[MessageSpec, MessageSpec]]
) -> None:
    kdump = {k: (key.name, value.name) for k, (key, value) in table.items()}
    assert kdump == _coordinator_types(module)


@pytest.mark.parametrize(
    ("module", "table"),
    [
        ("metadata", metadata.METADATA_RECORD_TYPES),
        ("storage", remote_log_metadata.REMOTE_LOG_METADATA_RECORD_TYPES),
    ],
)
def test_metadata_record_types_are_trunks(module: str, table: dict[int, MessageSpec]) -> None:
    """MetadataRecordType (and RemoteLogMetadataSerde's four keys): every apiKey, no other."""
    specs = specs_in(module).values()
    assert {k: s.name for k, s in table.items()} == {
        s["apiKey"]: s["name"] for s in specs if s["type"] == "metadata"
    }


# ---------------------------------------------------------------------- a spec-driven encoder

PRIMITIVES = {
    "bool": ">?",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "uint32": ">I",
    "int64": ">q",
    "float64": ">d",
}
RANGES = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
}
MISSING = object()


def within(version: int, versions: tuple[int, int] | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Spec:
    """One spec file, read as Kafka's generator reads it, and what its generated code does."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.flexible = parse_versions(spec["flexibleVersions"])
        self.commons = {c["name"]: c for c in spec.get("commonStructs", [])}

    # -- facts of a field

    @staticmethod
    def element(f: dict[str, Any]) -> str:
        return str(f["type"]).removeprefix("[]")

    def element_spec(self, f: dict[str, Any]) -> dict[str, Any]:
        """An array's element as a field of its own: the type, never null, never tagged."""
        keep = ("name", "versions", "fields", "flexibleVersions")
        return {**{k: f[k] for k in keep if k in f}, "type": self.element(f)}

    def is_struct(self, f: dict[str, Any]) -> bool:
        element = self.element(f)
        return element not in PRIMITIVES and element not in ("uuid", "string", "bytes")

    def fields_of(self, f: dict[str, Any]) -> list[dict[str, Any]]:
        return list(f["fields"] if "fields" in f else self.commons[self.element(f)]["fields"])

    def tagged(self, f: dict[str, Any], version: int) -> bool:
        return within(version, parse_versions(f.get("taggedVersions")))

    def nullable(self, f: dict[str, Any], version: int) -> bool:
        return within(version, parse_versions(f.get("nullableVersions")))

    def compact(self, f: dict[str, Any], version: int) -> bool:
        return within(version, parse_versions(f.get("flexibleVersions")) or self.flexible)

    # -- FieldSpec.fieldDefault and generateNonDefaultValueCheck

    def default(self, f: dict[str, Any]) -> Any:
        text, kind = default_text(f), f["type"]
        if kind.startswith("[]"):
            return None if text == "null" else []
        if self.is_struct(f):
            return None if text == "null" else self.default_struct(self.fields_of(f))
        if kind in ("string", "bytes"):
            return None if text == "null" else (text if kind == "string" else b"")
        if kind == "uuid":
            return base64.urlsafe_b64decode(text + "==") if text else bytes(16)
        if kind == "bool":
            return text == "true"
        if kind == "float64":
            return float(text) if text else 0.0
        if not text:
            return 0
        return int(text, 16) if text.lower().startswith("0x") else int(text)

    def default_struct(self, fields: list[dict[str, Any]]) -> dict[str, Any]:
        return {f["name"]: self.default(f) for f in fields}

    def is_default(self, f: dict[str, Any], value: Any) -> bool:
        if default_text(f) == "null":
            return value is None
        if value is None:
            return False
        if f["type"].startswith("[]") or f["type"] == "bytes":
            return len(value) == 0
        return bool(value == self.default(f))

    # -- random values, as a Java object of that version would hold them

    def random_struct(
        self, fields: list[dict[str, Any]], version: int, rng: random.Random, depth: int
    ) -> dict[str, Any]:
        out = {}
        for f in fields:
            present = within(version, field_versions(f))
            out[f["name"]] = (
                self.random_field(f, version, rng, depth) if present else self.default(f)
            )
        if within(version, self.flexible) and rng.random() < 0.15:
            out["_unknown"] = self.unknown_tags(fields, rng)
        return out

    @staticmethod
    def unknown_tags(fields: list[dict[str, Any]], rng: random.Random) -> list[tuple[int, bytes]]:
        """Tagged fields a newer Kafka might write: tags past this struct's own."""
        first = max((f["tag"] for f in fields if "tag" in f), default=-1) + 1
        tags = sorted(rng.sample(range(first, first + 6), rng.randint(1, 2)))
        return [(t, rng.randbytes(rng.randint(0, 5))) for t in tags]

    def random_field(self, f: dict[str, Any], version: int, rng: random.Random, depth: int) -> Any:
        if self.nullable(f, version) and rng.random() < 0.2:
            return None
        if self.tagged(f, version) and rng.random() < 0.3:
            return self.default(f)
        kind = f["type"]
        if kind.startswith("[]"):
            count = rng.randint(0, 3 if depth < 2 else 1)
            element = self.element_spec(f)
            return [self.random_field(element, version, rng, depth + 1) for _ in range(count)]
        if self.is_struct(f):
            if self.tagged(f, version) and rng.random() < 0.3:
                # its defaults and a tag this schema does not know: not the default struct
                fields = self.fields_of(f)
                return {**self.default_struct(fields), "_unknown": self.unknown_tags(fields, rng)}
            return self.random_struct(self.fields_of(f), version, rng, depth + 1)
        return self.random_scalar(kind, rng)

    @staticmethod
    def random_scalar(kind: str, rng: random.Random) -> Any:
        if kind in RANGES:
            bits = RANGES[kind]
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            return rng.choice([low, high, -1, 0, rng.randint(low, high)])
        if kind == "uint16":
            return rng.choice([0, 0xFFFF, rng.randint(0, 0xFFFF)])
        if kind == "uint32":
            return rng.choice([0, 0xFFFFFFFF, rng.randint(0, 0xFFFFFFFF)])
        if kind == "bool":
            return rng.random() < 0.5
        if kind == "float64":
            return rng.choice(
                [0.0, -0.0, math.inf, -math.inf, 5e-324, 1e300, rng.uniform(-1e9, 1e9)]
            )
        if kind == "uuid":
            return rng.randbytes(16)
        if kind == "bytes":
            return rng.randbytes(rng.randint(0, 6))
        if kind == "string":
            alphabet = 'abcXYZ09-_. é€𝄞"\\\n'
            return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        raise AssertionError(kind)

    # -- the generated write(): untagged fields in order, then the tagged ones by tag

    def write_struct(
        self, fields: list[dict[str, Any]], value: dict[str, Any], version: int
    ) -> bytes:
        out = bytearray()
        tagged: list[tuple[int, bytes]] = []
        for f in fields:
            if not within(version, field_versions(f)):
                continue
            item = value[f["name"]]
            if self.tagged(f, version):
                if not self.is_default(f, item):
                    tagged.append((f["tag"], self.write_tagged(f, item, version)))
            else:
                out += self.write_field(f, item, version)
        if within(version, self.flexible):
            tagged += value.get("_unknown", [])
            out += uvarint(len(tagged))
            for tag, payload in sorted(tagged):
                out += uvarint(tag) + uvarint(len(payload)) + payload
        return bytes(out)

    def write_field(self, f: dict[str, Any], item: Any, version: int) -> bytes:
        kind = f["type"]
        compact = self.compact(f, version)
        if kind.startswith("[]"):
            if item is None:
                return uvarint(0) if compact else struct.pack(">i", -1)
            head = uvarint(len(item) + 1) if compact else struct.pack(">i", len(item))
            element = self.element_spec(f)
            return head + b"".join(self.write_field(element, x, version) for x in item)
        if kind in ("string", "bytes"):
            raw = None if item is None else (item.encode() if kind == "string" else item)
            if compact:
                return uvarint(0) if raw is None else uvarint(len(raw) + 1) + raw
            pack = ">h" if kind == "string" else ">i"
            return struct.pack(pack, -1) if raw is None else struct.pack(pack, len(raw)) + raw
        if self.is_struct(f):
            body = b"" if item is None else self.write_struct(self.fields_of(f), item, version)
            if self.nullable(f, version):
                return b"\xff" if item is None else b"\x01" + body
            return body
        if kind == "uuid":
            return bytes(item)
        return struct.pack(PRIMITIVES[kind], item)

    def write_tagged(self, f: dict[str, Any], item: Any, version: int) -> bytes:
        """A tagged field's payload: compact always; a null one (default not null) is ``0``."""
        if item is None:
            return uvarint(0)
        if self.is_struct(f) and not f["type"].startswith("[]"):
            body = self.write_struct(self.fields_of(f), item, version)
            return (uvarint(1) if self.nullable(f, version) else b"") + body
        return self.write_field(f, item, version)

    # -- the generated JsonConverter.write()

    def json_struct(
        self, fields: list[dict[str, Any]], value: dict[str, Any], version: int
    ) -> dict[str, Any]:
        out = {}
        for f in fields:
            if not within(version, field_versions(f)):
                continue
            item = value[f["name"]]
            if self.tagged(f, version) and self.is_default(f, item):
                continue
            out[f["name"][:1].lower() + f["name"][1:]] = self.json_field(f, item, version)
        return out

    def json_field(self, f: dict[str, Any], item: Any, version: int) -> Any:
        if item is None:
            return None
        kind = f["type"]
        if kind.startswith("[]"):
            element = self.element_spec(f)
            return [self.json_field(element, x, version) for x in item]
        if self.is_struct(f):
            return self.json_struct(self.fields_of(f), item, version)
        if kind == "uuid":
            return base64.urlsafe_b64encode(item).rstrip(b"=").decode()
        if kind == "bytes":
            return base64.b64encode(item).decode()
        return item

    # -- a message

    def versions(self) -> range:
        low, high = parse_versions(self.spec["validVersions"]) or (0, -1)
        return range(low, high + 1)

    def random_message(self, version: int, rng: random.Random) -> dict[str, Any]:
        return self.random_struct(self.spec["fields"], version, rng, 0)

    def write(self, value: dict[str, Any], version: int) -> bytes:
        return self.write_struct(self.spec["fields"], value, version)

    def json(self, value: dict[str, Any], version: int) -> dict[str, Any]:
        return self.json_struct(self.spec["fields"], value, version)


def test_the_encoder_writes_what_kafka_writes() -> None:
    """The encoder against bytes spelled out by hand from the layout rules."""
    spec = Spec(SPECS["ConsumerGroupCurrentMemberAssignmentValue"])
    topic = bytes(range(16))
    value = {
        "MemberEpoch": 2,
        "PreviousMemberEpoch": 1,
        "State": 0,
        "AssignedPartitions": [{"TopicId": topic, "Partitions": [3], "AssignmentEpochs": None}],
        "PartitionsPendingRevocation": [
            {"TopicId": topic, "Partitions": [], "AssignmentEpochs": []}
        ],
    }
    assert spec.write(value, 0) == (
        struct.pack(">iib", 2, 1, 0)
        + b"\x02" + topic + b"\x02" + struct.pack(">i", 3) + b"\x01" + b"\x00\x01\x00"
        + b"\x02" + topic + b"\x01" + b"\x00"
        + b"\x00"
    )  # fmt: skip
    assert spec.json(value, 0)["assignedPartitions"][0]["assignmentEpochs"] is None
    txn = Spec(SPECS["TransactionLogValue"])
    assert list(txn.json(txn.default_struct(txn.spec["fields"]), 1)) == [
        "producerId",
        "producerEpoch",
        "transactionTimeoutMs",
        "transactionStatus",
        "transactionPartitions",
        "transactionLastUpdateTimestampMs",
        "transactionStartTimestampMs",
    ]


def ordered(value: Any) -> str:
    """The JSON text, fields in order: Kafka prints them in schema order."""
    return json.dumps(value, ensure_ascii=False)


def _random_cases(name: str) -> Iterator[tuple[int, dict[str, Any], bytes]]:
    spec = Spec(SPECS[name])
    for version in spec.versions():
        rng = random.Random(f"{name}/{version}")
        for _ in range(ROUNDS):
            value = spec.random_message(version, rng)
            yield version, value, spec.write(value, version)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_random_values_of_every_version_read_back(name: str) -> None:
    spec, table = Spec(SPECS[name]), KDUMP[name]
    for version, value, data in _random_cases(name):
        readable = Readable(data)
        decoded = read_message(table, readable, version)
        assert readable.remaining == 0, (version, value)
        assert ordered(to_json(table, decoded, version)) == ordered(spec.json(value, version)), (
            version,
            value,
        )


# ------------------------------------------------- the same through kafka-dump-log.sh's parsers

TRANSACTION_STATES = {  # TransactionState at trunk: id -> stateName()
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


@pytest.mark.parametrize(
    ("module", "parser"),
    [
        ("group-coordinator", offsets_parser),
        ("transaction-coordinator", transaction_log_parser),
        ("share-coordinator", share_group_state_parser),
    ],
)
def test_coordinator_records_through_the_parsers(module: str, parser: Any) -> None:
    """CoordinatorRecordMessageParser: type int16 + key, version int16 + value."""
    for api_key, (key_name, value_name) in _coordinator_types(module).items():
        key_spec, value_spec = Spec(SPECS[key_name]), Spec(SPECS[value_name])
        keys = list(_random_cases(key_name))
        for i, (version, value, data) in enumerate(_random_cases(value_name)):
            key_version, key_value, key_data = keys[i % len(keys)]
            expected = value_spec.json(value, version)
            if value_name == "TransactionLogValue":
                status = expected["transactionStatus"]
                expected["transactionStatus"] = TRANSACTION_STATES.get(status, str(status))
            if value_name == "GroupMetadataValue" and expected.get("protocolType") == "consumer":
                continue  # its members' bytes are read as the consumer protocol
            key, payload = parser(
                record(struct.pack(">h", api_key) + key_data, struct.pack(">h", version) + data)
            )
            assert ordered(key) == ordered(
                {"type": str(api_key), "data": key_spec.json(key_value, key_version)}
            )
            assert ordered(payload) == ordered({"version": str(version), "data": expected}), value


def _enum_name(name: str) -> str:
    """MessageGenerator.toSnakeCase(name).toUpperCase(): '_' before a capital after a lower."""
    return re.sub(r"(?<=[^A-Z])(?=[A-Z])", "_", name).upper()


def test_metadata_records_through_the_parser() -> None:
    """ClusterMetadataLogMessageParser: frame version 1, apiKey and version, then the record."""
    for name, spec in specs_in("metadata").items():
        for version, value, data in _random_cases(name):
            framed = uvarint(1) + uvarint(spec["apiKey"]) + uvarint(version) + data
            key, payload = cluster_metadata_parser(record(None, framed))
            assert key is None
            assert ordered(payload) == ordered(
                {
                    "type": _enum_name(name),
                    "version": version,
                    "data": Spec(spec).json(value, version),
                }
            ), value


def test_remote_log_metadata_records_through_the_parser() -> None:
    """RemoteMetadataLogMessageParser: the same frame; JSON Lines carries the fields."""
    for name, spec in specs_in("storage").items():
        for version, value, data in _random_cases(name):
            framed = uvarint(1) + uvarint(spec["apiKey"]) + uvarint(version) + data
            parsed = remote_log_metadata_parser(record(None, framed))
            jsonl = getattr(parsed.value, "jsonl", (None, None))[1]
            if isinstance(jsonl, dict) and "data" in jsonl:
                assert ordered(jsonl["data"]) == ordered(Spec(spec).json(value, version)), value
            else:  # a state no enum value has: Kafka's error text, checked elsewhere
                assert "skipping" in str(parsed.value)
