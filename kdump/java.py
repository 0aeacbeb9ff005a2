"""Java's semantics where Kafka's answers depend on them: String.hashCode, Utils.abs,
``new String(bytes, UTF_8)``."""

from __future__ import annotations

import re
from collections.abc import Iterator

INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_int(value: int) -> int:
    """An unsigned 32-bit value read as Java's signed int."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def utils_abs(n: int) -> int:
    """org.apache.kafka.common.utils.Utils.abs: Integer.MIN_VALUE gives 0, not itself."""
    return 0 if n == INT32_MIN else abs(n)


_MURMUR2_SEED = 0x9747B28C
_MURMUR2_M = 0x5BD1E995
_U32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """org.apache.kafka.common.utils.Utils.murmur2: MurmurHash2 of the bytes (seed 0x9747b28c,
    little-endian 4-byte blocks), as Java's signed int."""
    length = len(data)
    h = (_MURMUR2_SEED ^ length) & _U32
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _MURMUR2_M) & _U32
        k ^= k >> 24
        k = (k * _MURMUR2_M) & _U32
        h = ((h * _MURMUR2_M) & _U32) ^ k
    tail = data[length - length % 4 :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * _MURMUR2_M) & _U32
    h ^= h >> 13
    h = (h * _MURMUR2_M) & _U32
    h ^= h >> 15
    return java_int(h)


def long_hash(value: int) -> int:
    """java.lang.Long.hashCode: ``(int) (value ^ (value >>> 32))``."""
    value &= 0xFFFFFFFFFFFFFFFF
    return java_int(value ^ (value >> 32))


def objects_hash(*hashes: int) -> int:
    """java.util.Objects.hash (Arrays.hashCode) over the elements' own hash codes."""
    h = 1
    for element in hashes:
        h = (31 * h + element) & _U32
    return java_int(h)


# Java's decoder differs from Python's "replace" (both replace each maximal ill-formed
# subsequence with one U+FFFD, the Unicode recommended practice) in one place: a lead byte ED
# followed by A0..BF, the UTF-8 form of a UTF-16 surrogate. Python replaces ED, then each byte
# after it; String.decodeUTF8_UTF16 decodes the three bytes as one character and replaces that
# (``Character.isSurrogate(c)``): one U+FFFD, or one for ``ED A0..BF`` when no continuation
# byte follows (isMalformed3 with malformed3's length 2; at the end of the bytes,
# isMalformed3_2 is false and the loop ends on one U+FFFD). Such a lead is never part of the
# sequence before it (neither decoder takes a byte >= C0 as a continuation), so the bytes
# between those stretches decode alike, and the text is Python's pieces joined by U+FFFD.
_ENCODED_SURROGATE = rb"\xed[\xa0-\xbf][\x80-\xbf]?"  # compiled by re when first met
REPLACEMENT_CHARACTER = "\ufffd"
"""java.lang.String.REPL."""


def java_string(data: bytes | bytearray | memoryview) -> str:
    """``new String(data, StandardCharsets.UTF_8)``: Kafka's StringDecoder, header keys
    (Utils.utf8), the strings of its message schemas. Malformed input is replaced as the JDK
    17+ decoder replaces it (String.decodeUTF8_UTF16), one U+FFFD per stretch it rejects."""
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError:
        pass
    pieces = re.split(_ENCODED_SURROGATE, bytes(data))
    return REPLACEMENT_CHARACTER.join(p.decode("utf-8", "replace") for p in pieces)


def java_string_slices(data: bytes | bytearray | memoryview, step: int) -> Iterator[str]:
    """``java_string(data)`` a slice of about ``step`` bytes at a time (a value of many MB): each
    cut where both decoders start afresh, before a byte that is no continuation byte (80..BF)
    or one that no lead byte in the three before it claims (a sequence is four bytes at most),
    so the slices' texts joined are the whole's."""
    view = memoryview(data)
    start, size = 0, len(view)
    while start < size:
        end = min(start + step, size)
        while end < size and 0x80 <= view[end] <= 0xBF and max(view[max(0, end - 3) : end]) >= 0xC0:
            end += 1
        yield java_string(view[start:end])
        start = end
