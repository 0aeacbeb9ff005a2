"""The words Kafka prints for values, in one table: timestamp types, codecs, Optionals."""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any

from kdump.errors import DecodeError
from kdump.format.compression import codec_name
from kdump.format.records import BASE64
from kdump.java import java_string


def compression(codec: int) -> str:
    return codec_name(codec)


def optional_long(value: int | None) -> str:
    """java.util.OptionalLong.toString()."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def string_decoder(data: bytes) -> str:
    """kafka.serializer.StringDecoder (``--value-decoder string``): new String(bytes, UTF-8),
    malformed input replaced as the JDK replaces it."""
    return java_string(data)


def default_decoder(data: bytes) -> str:
    """No decoder asked for: the text Kafka's StringDecoder prints, and in JSON the bytes kept
    (``lossless``)."""
    return java_string(data)


def hex_decoder(data: bytes) -> str:
    return data.hex()


def base64_decoder(data: bytes) -> str:
    # base64.b64encode's own call, without loading its module (~0.2 ms of every dump's start)
    return binascii.b2a_base64(data, newline=False).decode("ascii")


Decoder = Callable[[bytes], str]


class Decoded(str):
    """A decoder's text, with the JSON value JSON Lines shows in its place."""

    json: Any

    def __new__(cls, text: str, value: Any) -> Decoded:
        obj = super().__new__(cls, text)
        obj.json = value
        return obj


def apply_decoder(decoder: Decoder, data: bytes, offset: int) -> str:
    """The decoder's text for ``data``, or Kafka's skipping line when it cannot decode it."""
    try:
        return decoder(data)
    except DecodeError as e:
        return f"Error at offset {offset}, skipping. {e}"


def json_of(text: str) -> Any:
    """What JSON Lines shows for a decoded key or value: structured when the decoder says so."""
    return text.json if isinstance(text, Decoded) else str(text)


class NamedDecoder:
    """A decoder loaded by name (schema-registry, ``module:function``, a plugin): JSON's
    ``key_encoding``/``value_encoding`` say that name."""

    __slots__ = ("decode", "name")

    def __init__(self, name: str, decode: Decoder) -> None:
        self.name, self.decode = name, decode

    def __call__(self, data: bytes) -> str:
        return self.decode(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamedDecoder):
            return NotImplemented
        return (self.name, self.decode) == (other.name, other.decode)

    def __hash__(self) -> int:
        return hash((self.name, self.decode))

    def __repr__(self) -> str:
        return f"NamedDecoder({self.name!r})"


NATIVE_DECODERS: dict[Decoder, int] = {
    string_decoder: 1,
    hex_decoder: 2,
    base64_decoder: 3,
    default_decoder: 4,
}
"""The decoders the C renderer runs too, by its numbers (kdump/_speedups.c DECODER_*)."""
DECODERS: dict[str, Decoder] = {
    "string": string_decoder,
    "hex": hex_decoder,
    "base64": base64_decoder,
    "kafka.serializer.StringDecoder": string_decoder,
    "org.apache.kafka.tools.StringDecoder": string_decoder,
    "org.apache.kafka.tools.api.StringDecoder": string_decoder,
}
_ENCODINGS: dict[Decoder, str] = {
    string_decoder: "string",
    hex_decoder: "hex",
    base64_decoder: BASE64,
}


def encoding_of(decoder: Decoder) -> str:
    """What JSON calls a key or value rendered by ``decoder`` (not the default)."""
    if isinstance(decoder, NamedDecoder):
        return decoder.name
    return _ENCODINGS[decoder]
