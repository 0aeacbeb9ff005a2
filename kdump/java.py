"""Java's semantics where Kafka's answers depend on them: String.hashCode, Utils.abs."""

from __future__ import annotations

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
