"""Kafka's message readers compiled to Python, one function per message and version, as
MessageDataGenerator writes one ``read`` method per class: straight-line code with the version
decisions taken once, when the function is made, instead of at every field.

kdump.format.messages reads any message by walking its schema (the reference, and the one that
words errors as Kafka does); a replay of a metadata log reads millions of records, where that
walk costs ten times the bytes. A compiled reader gives the same dict for every input the
reference reads; on any input it cannot read whole it raises ``NotCompiled``, and the caller asks
the reference, which raises Kafka's own error (or reads it: the compiled code gives up early).

Only flexible versions are compiled (every KRaft metadata record is flexible in all its versions):
strings, bytes and arrays are compact, each struct ends with its tagged fields.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from kdump.errors import NotCompiled
from kdump.format.messages import (
    FIXED,
    MESSAGE_ELEMENTS,
    STRUCT_WEIGHT,
    UNKNOWN_TAGGED_FIELDS,
    UUID_SIZE,
    FieldSpec,
    MessageSpec,
    StructSpec,
    default_value,
    version_check,
)

Reader = Callable[[bytes, int], tuple[dict[str, Any], int]]
"""A compiled reader: the bytes and where the message starts; its fields and where it ends."""


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """ByteUtils.readUnsignedVarint past its first byte (which the compiled code reads inline);
    at most five bytes, and the value as Java's int."""
    result, shift = 0, 0
    for _ in range(5):
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            result &= 0xFFFFFFFF
            return (result - (1 << 32) if result & 0x80000000 else result), pos
        shift += 7
    raise NotCompiled


_UUIDS: dict[bytes, str] = {}
"""Uuid.toString of the ids a log repeats (a topic's id in each of its partitions' records, the
log dirs in each replica's): a few hundred thousand at most, each computed once."""
_UUIDS_KEPT = 1 << 18


def _uuid(raw: bytes) -> str:
    text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
    if len(_UUIDS) >= _UUIDS_KEPT:
        _UUIDS.clear()
    _UUIDS[raw] = text
    return text


_ARRAYS: dict[str, dict[int, struct.Struct]] = {kind: {} for kind in FIXED}
"""The layout of an array of n fixed-size elements, by element type and n."""


def _array(kind: str, n: int) -> struct.Struct:
    layouts = _ARRAYS[kind]
    if len(layouts) >= 1024:
        layouts.clear()
    layout = layouts[n] = struct.Struct(f">{n}{FIXED[kind].format[1:]}")
    return layout


class _Writer:
    """Python source of one message's reader, struct by struct: each field read into a local,
    the dict built at the end."""

    def __init__(self, spec: MessageSpec, version: int) -> None:
        self.spec, self.version = spec, version
        self.lines: list[str] = []
        self.functions: list[str] = []
        """Finished functions' source (a nested struct's before the struct holding it)."""
        self.names: dict[str, Any] = {
            "_uvarint": _uvarint,
            "_uuid": _uuid,
            "_UUIDS": _UUIDS,
            "_array": _array,
            "NotCompiled": NotCompiled,
            "UNKNOWN": UNKNOWN_TAGGED_FIELDS,
            "default_value": default_value,
        }
        for kind, layouts in _ARRAYS.items():
            self.names[f"_A_{kind}"] = layouts
        self.count = 0

    def name(self, prefix: str, value: Any) -> str:
        self.count += 1
        key = f"_{prefix}{self.count}"
        self.names[key] = value
        return key

    def emit(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def uvarint(self, indent: int, target: str) -> None:
        self.emit(indent, "b = d[p]")
        self.emit(indent, "if b < 0x80:")
        self.emit(indent + 1, f"{target} = b")
        self.emit(indent + 1, "p += 1")
        self.emit(indent, "else:")
        self.emit(indent + 1, f"{target}, p = _uvarint(d, p)")

    def struct(self, spec: StructSpec) -> str:
        """A function reading ``spec`` at this version: (fields, next position)."""
        version = self.version
        if not version_check(spec.parent_versions, spec.versions, version)[0]:
            raise NotCompiled  # the reference words "Can't read version"
        current = spec.current_versions
        if not version_check(self.spec.flexible_versions, current, version)[0]:
            raise NotCompiled  # only flexible versions are compiled
        function = f"read_{self.count}_{spec.name}"
        self.count += 1
        body: list[str] = []
        saved, self.lines = self.lines, body
        local = {f.json_name: f"v{i}" for i, f in enumerate(spec.fields)}
        for f in spec.fields:
            present, possible = version_check(f.mandatory, current, version)
            if present:
                self.field(1, f, local[f.json_name], possible)
            else:
                self.default(1, f, local[f.json_name])
        flexible_current = version_check(self.spec.flexible_versions, current, version)[1]
        self.tagged(spec.tagged_fields, flexible_current, local)
        items = ", ".join(f"{name!r}: {variable}" for name, variable in local.items())
        self.emit(1, f"out = {{{items}}}")
        self.emit(1, "if unknown is not None:")
        self.emit(2, "out[UNKNOWN] = unknown")
        self.emit(1, "return out, p")
        self.lines = saved
        self.functions.append("\n".join([f"def {function}(d, p):", *body, ""]))
        return function

    def default(self, indent: int, f: FieldSpec, target: str) -> None:
        value = default_value(f)
        if isinstance(value, list | dict):
            self.emit(indent, f"{target} = default_value({self.name('f', f)})")
        else:
            self.emit(indent, f"{target} = {value!r}")

    def tagged(
        self, tags: dict[int, FieldSpec], flexible_current: Any, local: dict[str, str]
    ) -> None:
        version = self.version
        self.emit(1, "unknown = None")
        self.uvarint(1, "count")
        self.emit(1, "for _ in range(count):")
        self.uvarint(2, "tag")
        self.uvarint(2, "size")
        keyword = "if"
        for tag, f in sorted(tags.items()):
            valid, possible = version_check(
                f.versions.intersect(f.tagged), flexible_current, version
            )
            self.emit(2, f"{keyword} tag == {tag}:")
            keyword = "elif"
            if not valid:
                self.emit(3, "raise NotCompiled")  # the reference: "Tag T is not valid"
                continue
            self.field(3, f, local[f.json_name], possible)
        self.emit(2, f"{keyword} size < 0 or p + size > len(d):")
        self.emit(3, "raise NotCompiled")
        self.emit(2, "else:")
        self.emit(3, "if unknown is None:")
        self.emit(4, "unknown = []")
        self.emit(3, "unknown.append((tag, bytes(d[p : p + size])))")
        self.emit(3, "p += size")

    def field(self, indent: int, f: FieldSpec, target: str, possible: Any) -> None:
        version = self.version
        if f.is_array or f.type in ("string", "bytes"):
            if f.flexible is not None or f.zero_copy:
                raise NotCompiled
            nullable = version_check(f.nullable, possible, version)[0]
            self.uvarint(indent, "n")
            self.emit(indent, "n -= 1")
            self.emit(indent, "if n < 0:")
            if nullable:
                self.emit(indent + 1, f"{target} = None")
            else:
                self.emit(indent + 1, "raise NotCompiled")
            self.emit(indent, "else:")
            self.variable(indent + 1, f, target)
            return
        if f.struct is not None:
            raise NotCompiled  # no metadata record has a struct field that is not an array
        self.scalar(indent, f.type, target)

    def uuid(self, indent: int, target: str) -> None:
        self.emit(indent, f"u = d[p : p + {UUID_SIZE}]")
        self.emit(indent, f"if len(u) < {UUID_SIZE}:")
        self.emit(indent + 1, "raise NotCompiled")
        self.emit(indent, f"{target} = _UUIDS.get(u) or _uuid(u)")
        self.emit(indent, f"p += {UUID_SIZE}")

    def scalar(self, indent: int, kind: str, target: str) -> None:
        if kind == "uuid":
            self.uuid(indent, target)
            return
        if kind not in FIXED:
            raise NotCompiled
        layout = self.name("s", FIXED[kind])
        self.emit(indent, f"{target} = {layout}.unpack_from(d, p)[0]")
        self.emit(indent, f"p += {FIXED[kind].size}")

    def variable(self, indent: int, f: FieldSpec, target: str) -> None:
        """Past a compact length ``n`` >= 0: a string, bytes, or an array of n elements."""
        if f.type == "string":
            self.emit(indent, "if n > 0x7FFF or p + n > len(d):")
            self.emit(indent + 1, "raise NotCompiled")
            self.emit(indent, f"{target} = d[p : p + n].decode('utf-8', 'replace')")
            self.emit(indent, "p += n")
            return
        if f.type == "bytes":
            self.emit(indent, "if p + n > len(d):")
            self.emit(indent + 1, "raise NotCompiled")
            self.emit(indent, f"{target} = bytes(d[p : p + n])")
            self.emit(indent, "p += n")
            return
        # past what one message may hold (kdump.format.messages.MESSAGE_ELEMENTS): the
        # reference reader refuses it, in Kafka's words, before making any
        weight = STRUCT_WEIGHT if f.struct is not None else 1
        self.emit(indent, f"if n > len(d) - p or n * {weight} > {MESSAGE_ELEMENTS}:")
        self.emit(indent + 1, "raise NotCompiled")
        element = f.element
        if f.struct is not None:
            read = self.struct(f.struct)
            self.emit(indent, f"{target} = []")
            self.emit(indent, "for _ in range(n):")
            self.emit(indent + 1, f"item, p = {read}(d, p)")
            self.emit(indent + 1, f"{target}.append(item)")
        elif element in FIXED:
            size = FIXED[element].size
            self.emit(indent, f"layout = _A_{element}.get(n) or _array({element!r}, n)")
            self.emit(indent, f"{target} = list(layout.unpack_from(d, p))")
            self.emit(indent, f"p += {size} * n")
        elif element == "uuid":
            self.emit(indent, f"{target} = []")
            self.emit(indent, "for _ in range(n):")
            self.uuid(indent + 1, "item")
            self.emit(indent + 1, f"{target}.append(item)")
        elif element == "string":
            self.emit(indent, f"{target} = []")
            self.emit(indent, "for _ in range(n):")
            self.uvarint(indent + 1, "m")
            self.emit(indent + 1, "m -= 1")
            self.emit(indent + 1, "if m < 0 or m > 0x7FFF or p + m > len(d):")
            self.emit(indent + 2, "raise NotCompiled")
            self.emit(indent + 1, f"{target}.append(d[p : p + m].decode('utf-8', 'replace'))")
            self.emit(indent + 1, "p += m")
        else:
            raise NotCompiled


@cache
def compiled_reader(spec: MessageSpec, version: int) -> Reader | None:
    """The compiled reader of ``spec`` at ``version``; None where only the reference reads it
    (a version outside the schema's, a non-flexible version, a layout not compiled)."""
    if version not in spec.valid_versions:
        return None
    writer = _Writer(spec, version)
    try:
        function = writer.struct(spec.struct)
    except NotCompiled:
        return None
    source = "\n".join(writer.functions)
    namespace = dict(writer.names)
    exec(compile(source, f"<compiled {spec.name} v{version}>", "exec"), namespace)
    read = namespace[function]

    def reader(data: bytes, position: int) -> tuple[dict[str, Any], int]:
        try:
            out: tuple[dict[str, Any], int] = read(data, position)
        except (IndexError, struct.error, NotCompiled):
            raise NotCompiled from None
        return out

    return reader


__all__ = ["NotCompiled", "Reader", "compiled_reader"]
