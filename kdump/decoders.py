"""Key and value decoders beyond string/hex/base64: a user's callable, a plugin, Schema Registry.

kafka-dump-log.sh's ``--key-decoder-class``/``--value-decoder-class`` name a class implementing
org.apache.kafka.tools.api.Decoder; kdump's take, in this order:

- a built-in name (``string``, ``hex``, ``base64``, Kafka's StringDecoder class names);
- ``schema-registry``: Confluent's Schema Registry wire format, decoded from the schemas in
  ``--schema-dir`` (``<id>.avsc``, ``<id>.proto`` or ``<id>.json``: the file says the format)
  or fetched from ``--schema-registry-url`` (``GET /schemas/ids/<id>``, ``schemaType`` says the
  format), once per schema id and run;
- ``module:function``: any callable taking the bytes (its result printed as ``str()``);
- the name of an entry point in the ``kdump.decoders`` group of an installed package.

Schema Registry framing: magic byte 0, schema id int32 big-endian; for Protobuf a message-index
list (a zig-zag varint count, then that many zig-zag varint indexes; a count of 0 is ``[0]``,
the first message of the file); then the encoded value. The text shown is ``schema <id>`` (with
``message [i, ...]`` for Protobuf) and the value as JSON: Avro's JSON encoding (fastavro),
protobuf's JSON mapping (google.protobuf.json_format over a descriptor compiled at run time by
grpcio-tools' bundled protoc), or the JSON document itself, validated by jsonschema.

Avro, Protobuf and JSON Schema support is the optional ``schemas`` extra, imported only when the
schema-registry decoder is asked for. A record a decoder cannot decode prints
``Error at offset O, skipping. <reason>`` in place of its content, as Kafka's own decoders do.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import DecodeError, DecoderLoadError, Malformed
from kdump.format.records import zigzag_varint
from kdump.java import java_string
from kdump.render.describe import (
    DECODERS,
    Decoded,
    Decoder,
    NamedDecoder,
)

ENTRY_POINT_GROUP = "kdump.decoders"
SCHEMA_REGISTRY = "schema-registry"
SCHEMAS_EXTRA = "schemas"
MAGIC_BYTE = 0
_SCHEMA_ID = struct.Struct(">i")
FORMATS = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
HTTP_TIMEOUT_SECONDS = 10


# --------------------------------------------------------------------------- loading


def load_decoder(name: str, schemas: SchemaSource | None = None) -> Decoder:
    """The decoder ``name`` stands for (see the module's docstring for the order tried)."""
    if name in DECODERS:
        return DECODERS[name]
    if name == SCHEMA_REGISTRY:
        if schemas is None:
            raise DecoderLoadError(
                "the schema-registry decoder needs --schema-dir or --schema-registry-url"
            )
        schemas.require_libraries()
        return NamedDecoder(SCHEMA_REGISTRY, schemas.decode)
    if ":" in name:
        module_name, _, attribute = name.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as e:
            raise DecoderLoadError(f"cannot load decoder {name!r}: {e}") from None
        return _user_decoder(name, target)
    from importlib import metadata

    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name == name:
            try:
                return _user_decoder(name, entry.load())
            except (ImportError, AttributeError) as e:
                raise DecoderLoadError(f"cannot load decoder plugin {name!r}: {e}") from None
    raise DecoderLoadError(
        f"unknown decoder {name!r}; use one of string, hex, base64, {SCHEMA_REGISTRY}, "
        f"module:function or a '{ENTRY_POINT_GROUP}' entry point"
    )


def _user_decoder(name: str, target: Any) -> Decoder:
    if not callable(target):
        raise DecoderLoadError(f"decoder {name!r} is not callable")
    function: Callable[[bytes], Any] = target

    def decode(data: bytes) -> str:
        try:
            result = function(data)
        except Exception as e:  # a plugin's failure is that record's, not the run's
            raise DecodeError(f"{name} raised {type(e).__name__}: {e}") from None
        if isinstance(result, bytes):
            return java_string(result)
        return result if isinstance(result, str) else str(result)

    return NamedDecoder(name, decode)


# --------------------------------------------------------------------------- Schema Registry


@dataclass(frozen=True)
class Schema:
    schema_id: int
    format: str  # AVRO, PROTOBUF, JSON
    text: str
    origin: str  # the file or URL it came from


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """A message index: a zig-zag varint of at most 6 bytes (format.records reads it)."""
    try:
        return zigzag_varint(data, pos, 6)
    except IndexError:
        raise DecodeError("the Protobuf message-index list runs past the value") from None
    except Malformed:
        raise DecodeError("a Protobuf message index is not a varint") from None


def message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """Confluent's Protobuf message-index list; a count of 0 means ``[0]``."""
    count, pos = _zigzag_varint(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data):
        raise DecodeError(f"invalid Protobuf message-index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = _zigzag_varint(data, pos)
        indexes.append(index)
    return indexes, pos


@dataclass
class SchemaSource:
    """Where schemas come from: a directory of ``<id>.<ext>`` files, a registry URL, or both
    (the directory first). Each schema is read or fetched once per run."""

    directory: str | None = None
    url: str | None = None
    _schemas: dict[int, Schema | DecodeError] = field(default_factory=dict)
    _compiled: dict[tuple[int, tuple[int, ...]], Any] = field(default_factory=dict)

    def require_libraries(self) -> None:
        """One clear line when the optional libraries are absent."""
        missing = []
        for module in ("fastavro", "google.protobuf", "grpc_tools", "jsonschema"):
            try:
                importlib.import_module(module)
            except ImportError:
                missing.append(module.split(".")[0] if module != "google.protobuf" else "protobuf")
        if missing:
            raise DecoderLoadError(
                f"the schema-registry decoder needs the '{SCHEMAS_EXTRA}' extra "
                f"(missing: {', '.join(missing)}): pip install 'kafka-kdump[{SCHEMAS_EXTRA}]'"
            )

    def schema(self, schema_id: int) -> Schema:
        found = self._schemas.get(schema_id)
        if found is None:
            try:
                found = self._find(schema_id)
            except DecodeError as e:
                found = e
            self._schemas[schema_id] = found
        if isinstance(found, DecodeError):
            raise found
        return found

    def _find(self, schema_id: int) -> Schema:
        if self.directory is not None:
            paths = [
                (os.path.join(self.directory, f"{schema_id}{ext}"), fmt)
                for ext, fmt in FORMATS.items()
            ]
            present = [(p, fmt) for p, fmt in paths if os.path.isfile(p)]
            if len(present) > 1:
                names = ", ".join(os.path.basename(p) for p, _ in present)
                raise DecodeError(f"schema {schema_id} is ambiguous in {self.directory}: {names}")
            if present:
                path, fmt = present[0]
                with open(path, encoding="utf-8") as f:
                    return Schema(schema_id, fmt, f.read(), path)
        if self.url is not None:
            return self._fetch(schema_id)
        names = ", ".join(f"{schema_id}{ext}" for ext in FORMATS)
        raise DecodeError(f"schema {schema_id} not found in {self.directory} (no {names})")

    def _fetch(self, schema_id: int) -> Schema:
        import urllib.error
        import urllib.request

        assert self.url is not None
        url = f"{self.url.rstrip('/')}/schemas/ids/{schema_id}"
        try:
            with urllib.request.urlopen(url, timeout=HTTP_TIMEOUT_SECONDS) as response:
                body = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raise DecodeError(f"schema {schema_id}: {url} answered {e.code} {e.reason}") from None
        except (OSError, ValueError) as e:
            raise DecodeError(f"schema {schema_id}: {url}: {e}") from None
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise DecodeError(f"schema {schema_id}: {url} answered no schema")
        fmt = body.get("schemaType") or "AVRO"
        if fmt not in FORMATS.values():
            raise DecodeError(f"schema {schema_id}: unknown schemaType {fmt!r} from {url}")
        return Schema(schema_id, fmt, body["schema"], url)

    def decode(self, data: bytes) -> str:
        """A Schema Registry framed key or value, as ``schema <id> <JSON>``."""
        if len(data) < 1 + _SCHEMA_ID.size or data[0] != MAGIC_BYTE:
            first = f"0x{data[0]:02x}" if data else "nothing"
            raise DecodeError(
                f"not Schema Registry framing (magic byte {first}, {len(data)} byte(s))"
            )
        (schema_id,) = _SCHEMA_ID.unpack_from(data, 1)
        schema = self.schema(schema_id)
        pos = 1 + _SCHEMA_ID.size
        if schema.format == "AVRO":
            value = self._avro(schema, data[pos:])
            return Decoded(
                f"schema {schema_id} {_compact(value)}",
                {"schema_id": schema_id, "format": schema.format, "value": value},
            )
        if schema.format == "PROTOBUF":
            indexes, pos = message_indexes(data, pos)
            value = self._protobuf(schema, indexes, data[pos:])
            shown = ", ".join(map(str, indexes))
            return Decoded(
                f"schema {schema_id} message [{shown}] {_compact(value)}",
                {
                    "schema_id": schema_id,
                    "format": schema.format,
                    "message_indexes": indexes,
                    "value": value,
                },
            )
        value = self._json(schema, data[pos:])
        return Decoded(
            f"schema {schema_id} {_compact(value)}",
            {"schema_id": schema_id, "format": schema.format, "value": value},
        )

    def _avro(self, schema: Schema, payload: bytes) -> Any:
        import fastavro

        parsed = self._compiled.get((schema.schema_id, ()))
        if parsed is None:
            try:
                parsed = fastavro.parse_schema(json.loads(schema.text))
            except Exception as e:  # fastavro's SchemaParseException, ValueError, KeyError...
                raise DecodeError(f"schema {schema.schema_id} ({schema.origin}): {e}") from None
            self._compiled[(schema.schema_id, ())] = parsed
        reader = io.BytesIO(payload)
        try:
            record = fastavro.schemaless_reader(reader, parsed, None)
        except Exception as e:  # fastavro raises what the bytes make it raise
            raise DecodeError(
                f"Avro value does not read with schema {schema.schema_id}: {e}"
            ) from None
        if reader.tell() != len(payload):
            raise DecodeError(
                f"{len(payload) - reader.tell()} byte(s) left after the Avro value of schema "
                f"{schema.schema_id}"
            )
        out = io.StringIO()
        fastavro.json_writer(out, parsed, [record])  # Avro's JSON encoding
        return json.loads(out.getvalue())

    def _protobuf(self, schema: Schema, indexes: list[int], payload: bytes) -> Any:
        from google.protobuf import json_format, message_factory
        from google.protobuf.message import DecodeError as ProtobufDecodeError

        key = (schema.schema_id, tuple(indexes))
        cls = self._compiled.get(key)
        if cls is None:
            descriptor = _message_descriptor(self._protobuf_file(schema), indexes, schema)
            cls = message_factory.GetMessageClass(descriptor)
            self._compiled[key] = cls
        message = cls()
        try:
            message.ParseFromString(payload)
        except ProtobufDecodeError as e:
            raise DecodeError(
                f"Protobuf value does not parse with schema {schema.schema_id}: {e}"
            ) from None
        return json_format.MessageToDict(message)

    def _protobuf_file(self, schema: Schema) -> Any:
        key = (schema.schema_id, (-1,))
        found = self._compiled.get(key)
        if found is None:
            found = compile_proto(schema, self.directory)
            self._compiled[key] = found
        return found

    def _json(self, schema: Schema, payload: bytes) -> Any:
        import jsonschema

        try:
            value = json.loads(payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise DecodeError(f"not a JSON document: {e}") from None
        try:
            jsonschema.validate(value, json.loads(schema.text))
        except jsonschema.ValidationError as e:
            raise DecodeError(
                f"does not match JSON schema {schema.schema_id}: {e.message}"
            ) from None
        except (ValueError, jsonschema.SchemaError) as e:
            raise DecodeError(f"schema {schema.schema_id} ({schema.origin}): {e}") from None
        return value


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def compile_proto(schema: Schema, directory: str | None) -> Any:
    """The FileDescriptor of a .proto text, compiled by grpcio-tools' protoc in a subprocess
    (protoc writes its errors to its own stderr; kdump keeps its own streams)."""
    import subprocess
    import tempfile

    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="kdump-proto-") as tmp:
        name = f"schema_{schema.schema_id}.proto"
        with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
            f.write(schema.text)
        out = os.path.join(tmp, "descriptors.pb")
        command = [
            sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"-I{include}",
            *([f"-I{directory}"] if directory else []),
            "--include_imports", f"--descriptor_set_out={out}", name,
        ]  # fmt: skip
        ran = subprocess.run(command, cwd=tmp, capture_output=True, text=True, check=False)
        if ran.returncode != 0:
            reason = (ran.stderr or ran.stdout).strip().splitlines()
            raise DecodeError(
                f"schema {schema.schema_id} ({schema.origin}) does not compile: "
                + (reason[-1] if reason else f"protoc exited {ran.returncode}")
            )
        with open(out, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for proto in files.file:
        pool.Add(proto)
    return pool.FindFileByName(name)


def _message_descriptor(file: Any, indexes: list[int], schema: Schema) -> Any:
    """The message the index path names: top-level message i, then nested message j, ..."""
    candidates = list(file.message_types_by_name.values())
    descriptor = None
    for index in indexes:
        if not 0 <= index < len(candidates):
            raise DecodeError(f"schema {schema.schema_id} has no message at index path {indexes}")
        descriptor = candidates[index]
        candidates = list(descriptor.nested_types)
    return descriptor
