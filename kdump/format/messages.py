"""Kafka's message encoding, read generically from schema descriptions.

Kafka describes every coordinator record, metadata record and KRaft control record with a JSON
message schema (``name``, ``type``, ``versions``, ``nullableVersions``, ``taggedVersions``/``tag``,
``flexibleVersions``, ``default``) and generates a Java reader and a JSON converter from it
(MessageDataGenerator, JsonConverterGenerator). This module is the Python counterpart, driven by
the transcriptions in :mod:`kdump.format.schemas`:

- fixed types big-endian: ``bool int8 int16 uint16 int32 uint32 int64 float64 uuid``;
- ``string``/``bytes``/arrays: int16 (string) or int32 (bytes, arrays) length in non-flexible
  versions, unsigned varint length + 1 ("compact") in flexible versions; -1/0 is null;
- flexible versions end every struct with tagged fields: ``count``, then ``tag, size, value``
  (unsigned varints), unknown tags skipped;
- JSON comes out as Jackson prints it: fields in schema order, names with a lowercase first
  letter, fields absent in that version omitted, tagged fields only when not their default,
  bytes as base64, uuids as Kafka's base64url ``Uuid.toString()``.

Version checks follow the generated code exactly: a condition the generator knew to be always
true over a class's supported versions is not checked at all, so a record newer than the schema
still reads as far as it can, as it does in Kafka. Errors carry the Java exception's message.
"""

from __future__ import annotations

import base64
import functools
import math
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from decimal import Decimal
from struct import Struct
from typing import Any

from kdump.errors import DecodeBound, MessageError, Underflow
from kdump.format.layout import ZERO_UUID
from kdump.java import java_string
from kdump.tuples import NamedTuple

Json = Any
SHORT_MAX = 0x7FFF


class Versions(NamedTuple):
    """A version range, as generator.Versions: ``lowest > highest`` is the empty range."""

    lowest: int
    highest: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        text = (text or "").strip()
        if not text:
            if default is None:
                raise ValueError("a version range is required")
            return default
        if text == "none":
            return NONE
        if text.endswith("+"):
            return cls(int(text[:-1]), SHORT_MAX)
        low, dash, high = text.partition("-")
        return cls(int(low), int(high if dash else low))

    @property
    def empty(self) -> bool:
        return self.lowest > self.highest

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lowest <= version <= self.highest

    def intersect(self, other: Versions) -> Versions:
        low, high = max(self.lowest, other.lowest), min(self.highest, other.highest)
        return NONE if low > high else Versions(low, high)

    def subtract(self, other: Versions) -> Versions | None:
        """Versions.subtract: None where the difference would be two ranges."""
        if other.lowest <= self.lowest:
            if other.highest >= self.highest:
                return NONE
            if other.highest < self.lowest:
                return self
            return Versions(other.highest + 1, self.highest)
        if other.highest >= self.highest:
            high = other.lowest - 1
            if high < 0:
                return self
            return Versions(self.lowest, high) if high < self.highest else self
        return None


NONE = Versions(0, -1)


@functools.lru_cache(maxsize=4096)
def version_check(containing: Versions, possible: Versions, version: int) -> tuple[bool, Versions]:
    """VersionConditional: does the generated code take the "member" branch at ``version``?

    ``possible`` is what the generator knew the version could be at that point; a bound it knew
    to hold is not tested at run time. Returns the branch and the narrowed possible versions.
    """
    if possible.lowest < containing.lowest:
        if possible.highest > containing.highest:
            member = containing.lowest <= version <= containing.highest
        elif possible.highest >= containing.lowest:
            member = version >= containing.lowest
        else:
            member = False
    elif possible.highest >= containing.lowest and possible.lowest <= containing.highest:
        member = version <= containing.highest if possible.highest > containing.highest else True
    else:
        member = False
    if member:
        return True, possible.intersect(containing)
    rest = possible.subtract(containing)
    return False, possible if rest is None else rest


FIXED = {
    "bool": Struct(">?"),
    "int8": Struct(">b"),
    "int16": Struct(">h"),
    "uint16": Struct(">H"),
    "int32": Struct(">i"),
    "uint32": Struct(">I"),
    "int64": Struct(">q"),
    "float64": Struct(">d"),
}
UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"
"""Where a struct keeps the tagged fields its schema does not know, as the generated class does:
never printed, but a struct holding some is not its default (the generated equals() compares
them), so a tagged struct field holding only unknown tags still prints."""
UUID_SIZE = 16
VARIABLE = ("string", "bytes")


@dataclass(eq=False)
class FieldSpec:
    """One field of a message schema (generator.FieldSpec)."""

    name: str
    type: str
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: str = ""
    flexible: Versions | None = None
    zero_copy: bool = False
    fields: list[FieldSpec] = dataclass_field(default_factory=list)
    struct: StructSpec | None = None
    json_name: str = dataclass_field(init=False)  # camelCaseName(): lowercase first letter
    is_array: bool = dataclass_field(init=False)
    element: str = dataclass_field(init=False)  # the array's element type, or the type
    mandatory: Versions = dataclass_field(init=False)  # versions where it is not tagged

    def __post_init__(self) -> None:
        self.json_name = self.name[:1].lower() + self.name[1:]
        self.is_array = self.type.startswith("[]")
        self.element = self.type[2:] if self.is_array else self.type
        self.mandatory = self.versions.subtract(self.tagged) or self.versions

    @property
    def struct_type(self) -> str | None:
        element = self.element
        if element in FIXED or element in VARIABLE or element == "uuid":
            return None
        return element


@dataclass(eq=False)
class StructSpec:
    """A struct: the message itself, an inline struct or a common struct.

    ``parent_versions`` are the versions its generated class supports (the owner's, narrowed
    by each enclosing field), as MessageDataGenerator and StructRegistry compute them.
    """

    name: str
    versions: Versions
    fields: list[FieldSpec]
    parent_versions: Versions = NONE

    @functools.cached_property
    def current_versions(self) -> Versions:
        return self.parent_versions.intersect(self.versions)

    @functools.cached_property
    def tagged_fields(self) -> dict[int, FieldSpec]:
        return {f.tag: f for f in self.fields if f.tag is not None and not f.tagged.empty}


@dataclass(eq=False)
class MessageSpec:
    name: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    struct: StructSpec


def field(
    name: str,
    type: str,
    versions: str = "",
    *,
    nullable: str = "none",
    tagged: str = "none",
    tag: int | None = None,
    default: str = "",
    flexible: str | None = None,
    zero_copy: bool = False,
    fields: list[FieldSpec] | None = None,
) -> FieldSpec:
    """A field as the schema JSON writes it; ``versions`` defaults to the tagged versions."""
    tagged_versions = Versions.parse(tagged, NONE)
    return FieldSpec(
        name,
        type,
        Versions.parse(versions, None if tagged_versions.empty else tagged_versions),
        Versions.parse(nullable, NONE),
        tagged_versions,
        tag,
        default,
        Versions.parse(flexible) if flexible else None,
        zero_copy,
        list(fields or []),
    )


def struct(name: str, versions: str, fields: list[FieldSpec]) -> StructSpec:
    """A common struct (``commonStructs`` in the schema)."""
    spec = Versions.parse(versions)
    return StructSpec(name, spec, fields, spec)


def message(
    name: str,
    api_key: int | None,
    valid_versions: str,
    flexible_versions: str,
    fields: list[FieldSpec],
    common: list[StructSpec] | None = None,
) -> MessageSpec:
    """Resolve a transcribed schema: link struct fields to their structs and class versions."""
    valid = Versions.parse(valid_versions)
    top = StructSpec(name, valid, fields, valid)
    commons = {s.name: s for s in common or []}

    def link(owner: StructSpec, registry_versions: Versions) -> None:
        for f in owner.fields:
            type_name = f.struct_type
            if type_name is None:
                continue
            if type_name in commons:
                f.struct = commons[type_name]
            else:
                f.struct = StructSpec(type_name, f.versions, f.fields, registry_versions)
                link(f.struct, registry_versions.intersect(f.versions))

    for s in commons.values():
        link(s, s.versions)
    link(top, valid)
    return MessageSpec(name, api_key, valid, Versions.parse(flexible_versions), top)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def uuid_string(raw: bytes) -> str:
    """org.apache.kafka.common.Uuid.toString(): base64url, no padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


MESSAGE_ELEMENTS = 1 << 20
"""The array elements one message may hold to be decoded, a struct counting STRUCT_WEIGHT:
what its decoding costs as Python objects stays within tens of MB, whatever its bytes claim
(issue 39: one PartitionRecord of 30 M replicas, 120 MB decompressed from a 10 KB log, took
``kdump metadata`` to 3.2 GB). Kafka's own records hold a few hundred at most."""
STRUCT_WEIGHT = 8


class Readable:
    """ByteBufferAccessor over ``data[position:end]``, and what it may still decode of arrays
    (``spend``)."""

    def __init__(
        self,
        data: bytes,
        position: int = 0,
        end: int | None = None,
        elements: int = MESSAGE_ELEMENTS,
    ) -> None:
        self.data = data
        self.position = position
        self.end = len(data) if end is None else end
        self.elements = elements

    def spend(self, n: int, name: str) -> None:
        """An array of ``n`` elements (weighted) is about to be made: refused past the budget
        before any is."""
        if n > self.elements:
            raise DecodeBound(
                f"{name} holds {n} elements, more than the {MESSAGE_ELEMENTS} kdump decodes "
                "of one message"
            )
        self.elements -= n

    @property
    def remaining(self) -> int:
        return self.end - self.position

    def take(self, size: int) -> bytes:
        if size > self.remaining:
            raise Underflow()
        start = self.position
        self.position += size
        return bytes(self.data[start : self.position])

    def fixed(self, kind: str) -> Any:
        layout = FIXED[kind]
        end = self.position + layout.size
        if end > self.end:
            raise Underflow()
        value = layout.unpack_from(self.data, self.position)[0]
        self.position = end
        return value

    def read_short(self) -> int:
        return int(self.fixed("int16"))

    def read_array(self, size: int) -> bytes:
        """Readable.readArray: a byte array of exactly ``size`` bytes."""
        if size > self.remaining:
            raise MessageError(
                f"Error reading byte array of {size} byte(s): only {self.remaining} "
                "byte(s) available"
            )
        return self.take(size)

    def read_byte_buffer(self, size: int) -> bytes:
        """ByteBufferAccessor.readByteBuffer: a slice whose limit is checked by the JDK."""
        if size > self.remaining:
            raise MessageError(f"newLimit > capacity: ({size} > {self.remaining})")
        return self.take(size)

    def read_unsigned_varint(self) -> int:
        """ByteUtils.readUnsignedVarint, returning Java's int (so it can be negative)."""
        result = 0
        for shift in (0, 7, 14, 21):
            byte = self.take(1)[0]
            if byte < 0x80:
                return _int32(result | byte << shift)
            result |= (byte & 0x7F) << shift
        byte = self.take(1)[0]
        signed = byte - 256 if byte & 0x80 else byte
        result = (result | (signed << 28)) & 0xFFFFFFFF
        if byte & 0x80:
            raise MessageError(
                "Varint is too long, the most significant bit in the 5th byte is set, "
                f"converted value: {result:x}"
            )
        return _int32(result)


@dataclass
class _Context:
    flexible_versions: Versions
    version: int


def read_message(spec: MessageSpec, readable: Readable, version: int) -> dict[str, Any]:
    """``new X(readable, version)``: every field of the struct, defaults where absent."""
    return _read_struct(spec.struct, readable, _Context(spec.flexible_versions, version))


def _read_struct(spec: StructSpec, r: Readable, ctx: _Context) -> dict[str, Any]:
    version = ctx.version
    if not version_check(spec.parent_versions, spec.versions, version)[0]:
        raise MessageError(f"Can't read version {version} of {spec.name}")
    current = spec.current_versions
    out: dict[str, Any] = {}
    for f in spec.fields:
        present, possible = version_check(f.mandatory, current, version)
        out[f.json_name] = _read_field(f, r, ctx, possible) if present else default_value(f)
    flexible, flexible_current = version_check(ctx.flexible_versions, current, version)
    if flexible:
        tags = spec.tagged_fields
        for _ in range(r.read_unsigned_varint()):
            tag = r.read_unsigned_varint()
            size = r.read_unsigned_varint()
            tagged_field = tags.get(tag)
            if tagged_field is None:
                if size < 0:
                    raise MessageError(str(size))  # NegativeArraySizeException
                out.setdefault(UNKNOWN_TAGGED_FIELDS, []).append((tag, r.read_array(size)))
                continue
            valid, possible = version_check(
                tagged_field.versions.intersect(tagged_field.tagged), flexible_current, version
            )
            if not valid:
                raise MessageError(f"Tag {tag} is not valid for version {version}")
            out[tagged_field.json_name] = _read_field(tagged_field, r, ctx, possible, tagged=True)
    return out


def _read_field(
    f: FieldSpec, r: Readable, ctx: _Context, possible: Versions, tagged: bool = False
) -> Any:
    if f.is_array or f.type in VARIABLE:
        field_flexible = f.flexible or ctx.flexible_versions
        if not tagged and f.is_array and (f.struct is not None or f.element in VARIABLE):
            # The generator lifts the flexible check outside such arrays.
            possible = version_check(field_flexible, possible, ctx.version)[1]
        return _read_variable(f, f.json_name, f.type, r, ctx, possible, f.nullable)
    if f.struct is not None:
        nullable = version_check(f.nullable, possible, ctx.version)[0]
        if nullable and (r.read_unsigned_varint() <= 0 if tagged else r.fixed("int8") < 0):
            return None
        return _read_struct(f.struct, r, ctx)
    return _read_fixed(f.type, r)


def _read_fixed(kind: str, r: Readable) -> Any:
    if kind == "uuid":
        return uuid_string(r.take(UUID_SIZE))
    if kind not in FIXED:
        raise MessageError(f"Unsupported field type {kind}")
    return r.fixed(kind)


def _read_variable(
    f: FieldSpec,
    name: str,
    kind: str,
    r: Readable,
    ctx: _Context,
    possible: Versions,
    nullable_versions: Versions,
) -> Any:
    version = ctx.version
    compact = version_check(f.flexible or ctx.flexible_versions, possible, version)[0]
    if compact:
        length = _int32(r.read_unsigned_varint() - 1)
    elif kind == "string":
        length = r.read_short()
    else:
        length = int(r.fixed("int32"))
    if length < 0:
        if version_check(nullable_versions, possible, version)[0]:
            return None
        raise MessageError(f"non-nullable field {name} was serialized as null")
    if kind == "string":
        if length > SHORT_MAX:
            raise MessageError(f"string field {name} had invalid length {length}")
        return java_string(r.read_array(length))  # Readable.readString: new String(.., UTF_8)
    if kind == "bytes":
        return r.read_byte_buffer(length) if f.zero_copy else r.read_array(length)
    if length > r.remaining:
        raise MessageError(
            f"Tried to allocate a collection of size {length}, but there are only "
            f"{r.remaining} bytes remaining."
        )
    element = kind[2:]
    r.spend(length * (STRUCT_WEIGHT if f.struct is not None else 1), name)
    if f.struct is not None:
        return [_read_struct(f.struct, r, ctx) for _ in range(length)]
    if element in VARIABLE:
        return [
            _read_variable(f, f"{name} element", element, r, ctx, possible, NONE)
            for _ in range(length)
        ]
    return [_read_fixed(element, r) for _ in range(length)]


def default_value(f: FieldSpec) -> Any:
    """FieldSpec.fieldDefault: the value a field has when it is absent."""
    text = f.default
    if f.struct is not None and not f.is_array:
        return None if text == "null" else default_struct(f.struct)
    if f.is_array or f.type in VARIABLE:
        if text == "null":
            return None
        if f.is_array:
            return []
        return b"" if f.type == "bytes" else text
    if f.type == "uuid":
        return text or ZERO_UUID
    if f.type == "bool":
        return text == "true"
    if f.type == "float64":
        return float(text) if text else 0.0
    if not text:
        return 0
    return int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)


def default_struct(spec: StructSpec) -> dict[str, Any]:
    return {f.json_name: default_value(f) for f in spec.fields}


def to_json(spec: MessageSpec, data: dict[str, Any], version: int) -> dict[str, Json]:
    """XJsonConverter.write(data, version): the Jackson tree Kafka prints."""
    return _struct_json(spec.struct, data, version)


def _struct_json(spec: StructSpec, data: dict[str, Any], version: int) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for f in spec.fields:
        present, possible = version_check(f.versions, spec.current_versions, version)
        if not present:
            continue
        value = data[f.json_name]
        if version_check(f.tagged, possible, version)[0] and value == default_value(f):
            continue
        out[f.json_name] = _value_json(f, value, version)
    return out


def _value_json(f: FieldSpec, value: Any, version: int) -> Json:
    if value is None:
        return None
    if f.is_array:
        if f.struct is not None:
            return [_struct_json(f.struct, v, version) for v in value]
        return [_scalar_json(v) for v in value]
    if f.struct is not None:
        return _struct_json(f.struct, value, version)
    return _scalar_json(value)


def _scalar_json(value: Any) -> Json:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_ESCAPES["\r"] = "\\r"


def _jackson_string(text: str) -> str:
    out = ['"']
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def java_double(value: float) -> str:
    """Double.toString: plain between 10^-3 and 10^7, else ``d.dddE±n``; shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)
    if 1e-3 <= abs(value) < 1e7:
        point = len(digits) + exponent
        if exponent >= 0:
            return f"{sign}{digits}{'0' * exponent}.0"
        if point > 0:
            return f"{sign}{digits[:point]}.{digits[point:]}"
        return f"{sign}0.{'0' * -point}{digits}"
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{len(digits) + exponent - 1}"


def jackson(value: Json) -> str:
    """JsonNode.toString(): compact JSON, non-ASCII raw, control characters escaped."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = java_double(value)
        return f'"{text}"' if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(value, str):
        return _jackson_string(value)
    if isinstance(value, dict):
        items = (f"{_jackson_string(k)}:{jackson(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(jackson(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {value!r}")
