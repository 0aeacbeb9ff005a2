"""The words Kafka prints for values, in one table: timestamp types, codecs, Optionals."""

from __future__ import annotations

import base64
from collections.abc import Callable

from kdump.format.compression import codec_name
from kdump.format.layout import TIMESTAMP_TYPE_NAMES


def timestamp_type(value: int) -> str:
    return TIMESTAMP_TYPE_NAMES.get(value, f"UnknownTimestampType({value})")


def compression(codec: int) -> str:
    return codec_name(codec)


def optional_long(value: int | None) -> str:
    """java.util.OptionalLong.toString()."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def string_decoder(data: bytes) -> str:
    """kafka.serializer.StringDecoder: new String(bytes, UTF-8), malformed input replaced."""
    return data.decode("utf-8", "replace")


def hex_decoder(data: bytes) -> str:
    return data.hex()


def base64_decoder(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


Decoder = Callable[[bytes], str]
NATIVE_DECODERS: dict[Decoder, int] = {string_decoder: 1, hex_decoder: 2, base64_decoder: 3}
"""The decoders the C renderer runs too, by its numbers (kdump/_speedups.c DECODER_*)."""
DECODERS: dict[str, Decoder] = {
    "string": string_decoder,
    "hex": hex_decoder,
    "base64": base64_decoder,
    "kafka.serializer.StringDecoder": string_decoder,
    "org.apache.kafka.tools.StringDecoder": string_decoder,
    "org.apache.kafka.tools.api.StringDecoder": string_decoder,
}
