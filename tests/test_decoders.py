"""--key-decoder-class / --value-decoder-class beyond string, hex and base64: a user's
``module:function``, a ``kdump.decoders`` entry point, and Schema Registry framed Avro, Protobuf
and JSON Schema values from local schema files or a registry.

The framed values are built with each format's own library (fastavro's writer, protobuf's
serializer over a descriptor built by hand, json), the log around them by kafka-python; the
registry is a real HTTP server on localhost.
"""

from __future__ import annotations

import io
import json
import struct
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar
from unittest import mock

import fastavro
import pytest
from clirun import run_kdump
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from kafka.record.default_records import DefaultRecordBatchBuilder
from localhttp import Quiet, serving

AVRO_SCHEMA = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
    ],
}
PROTO = """syntax = "proto3";
package shop;
message Header { string source = 1; }
message Order {
  int64 id = 1;
  string customer_name = 2;
  repeated int32 items = 3;
}
"""
JSON_SCHEMA = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["sku"],
}


def framed(schema_id: int, payload: bytes, indexes: bytes = b"") -> bytes:
    """Schema Registry wire format: magic 0, schema id, (Protobuf) message indexes, value."""
    return b"\x00" + struct.pack(">i", schema_id) + indexes + payload


def avro_value(record: dict[str, object]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(AVRO_SCHEMA), record)
    return out.getvalue()


def order_class() -> type:
    """shop.Order from a FileDescriptorProto written by hand (no protoc on this side)."""
    proto = descriptor_pb2.FileDescriptorProto(
        name="test_shop.proto", package="shop", syntax="proto3"
    )
    header = proto.message_type.add(name="Header")
    header.field.add(name="source", number=1, type=9, label=1, json_name="source")
    order = proto.message_type.add(name="Order")
    order.field.add(name="id", number=1, type=3, label=1, json_name="id")
    order.field.add(name="customer_name", number=2, type=9, label=1, json_name="customerName")
    order.field.add(name="items", number=3, type=5, label=3, json_name="items")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))


def protobuf_value() -> bytes:
    message = order_class()(id=12, customer_name="Ada", items=[1, 2])
    return message.SerializeToString()


def write_log(path: Path, values: list[bytes | None], key: bytes | None = None) -> Path:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, key, value, [])
    path.mkdir(parents=True, exist_ok=True)
    log = path / "00000000000000000000.log"
    log.write_bytes(bytes(builder.build()))
    return log


def payloads(stdout: str) -> list[str]:
    return [line.split(" payload: ", 1)[1] for line in stdout.splitlines() if " payload: " in line]


@pytest.fixture
def schema_dir(tmp_path: Path) -> Path:
    d = tmp_path / "schemas"
    d.mkdir()
    (d / "7.avsc").write_text(json.dumps(AVRO_SCHEMA))
    (d / "8.proto").write_text(PROTO)
    (d / "9.json").write_text(json.dumps(JSON_SCHEMA))
    return d


def test_avro_protobuf_and_json_schema_values_from_schema_files(
    tmp_path: Path, schema_dir: Path
) -> None:
    log = write_log(
        tmp_path / "t-0",
        [
            framed(7, avro_value({"id": 5, "note": "rush"})),
            framed(7, avro_value({"id": 6, "note": None})),
            framed(8, protobuf_value(), indexes=b"\x02\x02"),  # [1]: the second message
            framed(9, b'{"sku":"A-1","qty":3}'),
            framed(9, b'{"qty":3}'),
            b'{"not":"framed"}',
            framed(7, b"\x02"),
            framed(10, b""),
        ],
    )
    ran = run_kdump(
        [
            "--files",
            str(log),
            "--value-decoder-class",
            "schema-registry",
            "--schema-dir",
            str(schema_dir),
        ]
    )
    assert (ran.exit_code, ran.stderr) == (0, "")
    shown = payloads(ran.stdout)
    assert shown[:6] == [
        'schema 7 {"id":5,"note":{"string":"rush"}}',  # Avro's JSON encoding of a union
        'schema 7 {"id":6,"note":null}',
        'schema 8 message [1] {"id":"12","customerName":"Ada","items":[1,2]}',
        'schema 9 {"sku":"A-1","qty":3}',
        "Error at offset 4, skipping. does not match JSON schema 9: 'sku' is a required property",
        "Error at offset 5, skipping. not Schema Registry framing (magic byte 0x7b, 16 byte(s))",
    ]
    # a long with no union branch after it: fastavro's own words follow
    assert shown[6].startswith(
        "Error at offset 6, skipping. Avro value does not read with schema 7"
    )
    assert shown[7] == (
        f"Error at offset 7, skipping. schema 10 not found in {schema_dir} "
        "(no 10.avsc, 10.proto, 10.json)"
    )


def test_protobuf_message_index_zero_and_the_first_message(
    tmp_path: Path, schema_dir: Path
) -> None:
    header = framed(8, b"\x0a\x03web", indexes=b"\x00")  # a count of 0 means [0]
    log = write_log(tmp_path / "t-0", [header])
    ran = run_kdump(
        ["--files", str(log), "--value-decoder", "schema-registry", "--schema-dir", str(schema_dir)]
    )
    assert payloads(ran.stdout) == ['schema 8 message [0] {"source":"web"}']


def test_jsonl_shows_schema_id_format_and_value(tmp_path: Path, schema_dir: Path) -> None:
    log = write_log(tmp_path / "t-0", [framed(7, avro_value({"id": 1, "note": None}))])
    ran = run_kdump(
        ["dump", str(log), "--format", "jsonl", "--value-decoder-class", "schema-registry",
         "--schema-dir", str(schema_dir)]
    )  # fmt: skip
    record = [json.loads(line) for line in ran.stdout.splitlines()][1]
    assert record["value"] == {
        "schema_id": 7,
        "format": "AVRO",
        "value": {"id": 1, "note": None},
    }
    assert record["value_encoding"] == "schema-registry"  # the rendering, named (issue 29.1)


class Registry(Quiet, BaseHTTPRequestHandler):
    schemas: ClassVar[dict[int, dict[str, object]]] = {}
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Registry.requests.append(self.path)
        schema_id = (
            int(self.path.rsplit("/", 1)[1]) if self.path.startswith("/schemas/ids/") else -1
        )
        body = Registry.schemas.get(schema_id)
        if body is None:
            self.send_response(404, "Not Found")
            self.end_headers()
            self.wfile.write(b'{"error_code":40403,"message":"Schema not found"}')
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def registry() -> Iterator[str]:
    Registry.schemas = {
        21: {"schema": json.dumps(AVRO_SCHEMA)},  # no schemaType: Avro
        22: {"schemaType": "PROTOBUF", "schema": PROTO},
        23: {"schemaType": "JSON", "schema": json.dumps(JSON_SCHEMA)},
    }
    Registry.requests = []
    with serving(Registry) as url:
        yield url


def test_schemas_fetched_from_a_registry_once_per_id(tmp_path: Path, registry: str) -> None:
    values = [framed(21, avro_value({"id": i, "note": None})) for i in range(3)]
    values += [framed(22, protobuf_value(), indexes=b"\x02\x02"), framed(23, b'{"sku":"x"}')]
    values += [framed(24, b""), framed(24, b"")]
    log = write_log(tmp_path / "t-0", values, key=b"k")
    ran = run_kdump(
        ["--files", str(log), "--value-decoder-class", "schema-registry",
         "--schema-registry-url", registry + "/"]
    )  # fmt: skip
    assert (ran.exit_code, ran.stderr) == (0, "")
    assert payloads(ran.stdout) == [
        'schema 21 {"id":0,"note":null}',
        'schema 21 {"id":1,"note":null}',
        'schema 21 {"id":2,"note":null}',
        'schema 22 message [1] {"id":"12","customerName":"Ada","items":[1,2]}',
        'schema 23 {"sku":"x"}',
        f"Error at offset 5, skipping. schema 24: {registry}/schemas/ids/24 answered 404 Not Found",
        f"Error at offset 6, skipping. schema 24: {registry}/schemas/ids/24 answered 404 Not Found",
    ]
    assert Registry.requests == [f"/schemas/ids/{i}" for i in (21, 22, 23, 24)]


def test_schema_registry_without_a_schema_source_is_a_usage_error(tmp_path: Path) -> None:
    log = write_log(tmp_path / "t-0", [b"x"])
    ran = run_kdump(["--files", str(log), "--value-decoder-class", "schema-registry"])
    assert ran.exit_code == 3 and "needs --schema-dir or --schema-registry-url" in ran.stderr


def test_a_missing_extra_is_named_in_one_line(tmp_path: Path, schema_dir: Path) -> None:
    log = write_log(tmp_path / "t-0", [b"x"])
    with mock.patch.dict(sys.modules, {"fastavro": None}):
        ran = run_kdump(
            ["--files", str(log), "--value-decoder-class", "schema-registry",
             "--schema-dir", str(schema_dir)]
        )  # fmt: skip
    assert ran.exit_code == 3 and ran.stdout == ""
    assert (
        "the schema-registry decoder needs the 'schemas' extra (missing: fastavro): " in ran.stderr
    )
    assert "pip install 'kafka-kdump[schemas]'" in ran.stderr
    assert "Traceback" not in ran.stderr


# --- a user's decoders --------------------------------------------------------------------------


@pytest.fixture
def plugin_path(tmp_path: Path) -> Iterator[Path]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "kdump_test_plugin.py").write_text(
        "def shout(data: bytes) -> str:\n"
        "    return data.decode().upper()\n"
        "def length(data: bytes) -> int:\n"
        "    return len(data)\n"
        "def fail(data: bytes) -> str:\n"
        "    raise ValueError('no ' + data.decode())\n"
        "NOT_CALLABLE = 3\n"
    )
    info = site / "kdump_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kdump-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[kdump.decoders]\nshout = kdump_test_plugin:shout\n")
    sys.path.insert(0, str(site))
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("kdump_test_plugin", None)


def test_module_function_and_entry_point_decoders(tmp_path: Path, plugin_path: Path) -> None:
    log = write_log(tmp_path / "t-0", [b"abc", b"de"], key=b"k")
    for name in ("kdump_test_plugin:shout", "shout"):
        ran = run_kdump(["--files", str(log), "--value-decoder-class", name])
        assert (ran.exit_code, payloads(ran.stdout)) == (0, ["ABC", "DE"])
    ran = run_kdump(
        ["--files", str(log), "--key-decoder-class", "kdump_test_plugin:length",
         "--value-decoder-class", "kdump_test_plugin:fail"]
    )  # fmt: skip
    lines = [line for line in ran.stdout.splitlines() if line.startswith("| offset")]
    assert lines[0].endswith(
        "key: 1 payload: Error at offset 0, skipping. kdump_test_plugin:fail raised ValueError: "
        "no abc"
    )


def test_jsonl_names_a_users_decoder(tmp_path: Path, plugin_path: Path) -> None:
    """Issue 29.1: a decoder's rendering is named by the decoder; what it does not see (the
    header values) keeps its bytes."""
    log = write_log(tmp_path / "t-0", [b"abc"], key=b"k")
    ran = run_kdump(["dump", str(log), "--format", "jsonl", "--value-decoder", "shout"])
    record = [json.loads(line) for line in ran.stdout.splitlines()][1]
    assert (record["value"], record["value_encoding"]) == ("ABC", "shout")
    assert (record["key"], record["key_encoding"]) == ("k", "utf8")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("kdump_test_plugin:missing", "cannot load decoder 'kdump_test_plugin:missing'"),
        ("no_such_module_anywhere:f", "cannot load decoder 'no_such_module_anywhere:f'"),
        ("kdump_test_plugin:NOT_CALLABLE", "is not callable"),
        ("nothing-by-that-name", "unknown decoder 'nothing-by-that-name'"),
    ],
)
def test_decoders_that_do_not_load_are_usage_errors(
    tmp_path: Path, plugin_path: Path, name: str, message: str
) -> None:
    log = write_log(tmp_path / "t-0", [b"x"])
    ran = run_kdump(["--files", str(log), "--value-decoder-class", name])
    assert ran.exit_code == 3 and message in ran.stderr and "Traceback" not in ran.stderr
