"""How explanations write numbers for people: a timestamp is epoch ms with its UTC ISO-8601."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
YEAR_9999_MS = 253402300799999
"""The last millisecond ISO-8601 can write; later times are "never" to an operator."""


def iso(ms: int) -> str:
    """``2023-11-14T22:13:20.000Z``; out-of-range values as the plain number."""
    if not 0 <= ms <= YEAR_9999_MS:
        return str(ms)
    moment = EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def at(ms: int) -> str:
    """A timestamp for people: ``1700000000000 (2023-11-14T22:13:20.000Z)``."""
    if not 0 <= ms <= YEAR_9999_MS:
        return str(ms)
    return f"{ms} ({iso(ms)})"


def duration(ms: int) -> str:
    """``90061000 ms (1d 1h 1m 1s)``: milliseconds with a rough human reading."""
    if ms < 1000:
        return f"{ms} ms"
    rest, parts = abs(ms) // 1000, []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    sign = "-" if ms < 0 else ""
    return f"{ms} ms ({sign}{' '.join(parts[:2])})"
