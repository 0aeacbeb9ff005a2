"""KRaft metadata records encoded and decoded straight from Kafka's JSON specs
(tests/data/kafka-specs/metadata/*.json), sharing no code with kdump's schema tables or its
message reader: the writer is test_kafka_specs.Spec (the generated writers' layout, read from the
spec files alone); the reader below reads that layout back by the same spec facts.

Every metadata record is flexible in every version ("flexibleVersions": "0+"): strings, bytes
and arrays have an unsigned varint of length + 1 (0 for null), each struct ends with its tagged
fields. The frame is ``uvarint(1) uvarint(api key) uvarint(version)`` (AbstractApiMessageSerde).

Field names are Kafka's JSON names (the spec name with a lowercase first letter), uuids base64url
and bytes base64, as kafka-dump-log.sh prints them.
"""

from __future__ import annotations

import base64
import struct
from functools import cache
from typing import Any

from kafka_specs import field_versions, specs_in
from test_kafka_specs import PRIMITIVES, Spec, uvarint, within


@cache
def metadata_specs() -> dict[str, dict[str, Any]]:
    return specs_in("metadata")


@cache
def spec_by_key() -> dict[int, dict[str, Any]]:
    return {s["apiKey"]: s for s in metadata_specs().values()}


def json_name(f: dict[str, Any]) -> str:
    name: str = f["name"]
    return name[:1].lower() + name[1:]


# -- encoding: test_kafka_specs.Spec, the generated writers' layout --------------------------


def _to_spec_values(
    spec: Spec, fields: list[dict[str, Any]], data: dict[str, Any]
) -> dict[str, Any]:
    """JSON-named values (uuids base64url, bytes base64) as Spec holds them (spec names, raw
    uuids and bytes); an absent field takes its default."""
    out = {}
    for f in fields:
        name = json_name(f)
        out[f["name"]] = _to_spec_value(spec, f, data[name]) if name in data else spec.default(f)
    return out


def _to_spec_value(spec: Spec, f: dict[str, Any], value: Any) -> Any:
    kind: str = f["type"]
    if value is None:
        return None
    if kind.startswith("[]"):
        element = spec.element_spec(f)
        return [_to_spec_value(spec, element, v) for v in value]
    if spec.is_struct(f):
        return _to_spec_values(spec, spec.fields_of(f), value)
    if kind == "uuid":
        return base64.urlsafe_b64decode(value + "==")
    if kind == "bytes":
        return base64.b64decode(value)
    return value


def encode(name: str, data: dict[str, Any], version: int = 0) -> bytes:
    """The framed value of metadata record ``name`` (``PartitionRecord``...) at ``version``."""
    spec = Spec(metadata_specs()[name])
    body = spec.write(_to_spec_values(spec, spec.spec["fields"], data), version)
    return uvarint(1) + uvarint(spec.spec["apiKey"]) + uvarint(version) + body


# -- decoding: the layout read back, by the same spec facts ------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("past the end")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7


def _read_field(spec: Spec, r: _Reader, f: dict[str, Any], version: int) -> Any:
    """A field as JSON (Kafka's JsonConverter: uuids base64url, bytes base64)."""
    kind: str = f["type"]
    if kind.startswith("[]") or kind in ("string", "bytes"):
        n = r.uvarint() - 1  # every metadata version is flexible: compact lengths
        if n < 0:
            return None
        if kind == "string":
            return r.take(n).decode()
        if kind == "bytes":
            return base64.b64encode(r.take(n)).decode()
        element = spec.element_spec(f)
        return [_read_field(spec, r, element, version) for _ in range(n)]
    if spec.is_struct(f):
        return _read_struct(spec, r, spec.fields_of(f), version)
    if kind == "uuid":
        return base64.urlsafe_b64encode(r.take(16)).rstrip(b"=").decode()
    layout = PRIMITIVES[kind]
    return struct.unpack(layout, r.take(struct.calcsize(layout)))[0]


def _read_struct(
    spec: Spec, r: _Reader, fields: list[dict[str, Any]], version: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_tag = {}
    for f in fields:
        if not within(version, field_versions(f)):
            continue
        if spec.tagged(f, version):
            by_tag[f["tag"]] = f
            out[json_name(f)] = spec.json_field(f, spec.default(f), version)
        else:
            out[json_name(f)] = _read_field(spec, r, f, version)
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        if tag in by_tag:
            out[json_name(by_tag[tag])] = _read_field(spec, r, by_tag[tag], version)
        else:
            r.take(size)
    return out


def decode(value: bytes) -> tuple[str, int, dict[str, Any]]:
    """(record name, version, fields) of a framed metadata record value; every field of the
    version, tagged ones at their default where absent."""
    r = _Reader(value)
    if r.uvarint() != 1:
        raise ValueError("frame version")
    api_key, version = r.uvarint(), r.uvarint()
    spec = Spec(spec_by_key()[api_key])
    if version not in spec.versions():
        raise ValueError(f"{spec.spec['name']} has no version {version}")
    data = _read_struct(spec, r, spec.spec["fields"], version)
    if r.pos != len(value):
        raise ValueError("garbage after the record")
    return spec.spec["name"], version, data
