"""Times and sizes as people give them to kdump and read them from it.

In: a time is epoch milliseconds or ISO-8601 with a zone (``parse_timestamp``). Out, in text
meant for people: epoch milliseconds beside their UTC ISO-8601 (``at``), sizes in binary units
beside the byte count (``size``); machine formats (JSON, metrics) keep the plain numbers.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
YEAR_9999_MS = 253402300799999
"""The last millisecond ISO-8601 can write; later times are "never" to an operator."""


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or ISO-8601 with a zone (``2023-11-14T22:13:20.005Z``, ``+02:00``).

    Raises ValueError with the reason. Negative numbers are refused: ListOffsets reads them as
    special queries (-1 latest, -2 earliest, -3 max timestamp), not as times.
    """
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        value = int(stripped)
        if value < 0:
            raise ValueError(
                f"{text}: negative timestamps are ListOffsets' special queries "
                "(-1 latest, -2 earliest), not times"
            )
        return value
    if stripped[-1:] in ("Z", "z"):  # Python 3.10's fromisoformat knows only +00:00
        stripped = stripped[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(
            f"{text}: not epoch milliseconds nor an ISO-8601 date-time with a zone"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(f"{text}: an ISO-8601 time needs a zone (Z or +HH:MM)")
    millis = (moment - EPOCH) // timedelta(milliseconds=1)
    if millis < 0:
        raise ValueError(f"{text}: before 1970, a negative timestamp")
    return millis


_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration(text: str) -> int:
    """Milliseconds from ``3600000``, ``500ms``, ``90s``, ``30m``, ``1h``, ``7d``. Raises
    ValueError with the reason."""
    stripped = text.strip().lower()
    for unit in sorted(_DURATION_UNITS, key=len, reverse=True):
        if stripped.endswith(unit) and stripped[: -len(unit)].strip().isdigit():
            return int(stripped[: -len(unit)]) * _DURATION_UNITS[unit]
    if stripped.isdigit():
        return int(stripped)
    raise ValueError(f"{text}: not a duration (milliseconds, or a number with ms, s, m, h or d)")


def iso(ms: int) -> str:
    """``2023-11-14T22:13:20.000Z``; out-of-range values as the plain number."""
    if not 0 <= ms <= YEAR_9999_MS:
        return str(ms)
    moment = EPOCH + timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def at(ms: int | None) -> str:
    """A timestamp for people: ``1700000000000 (2023-11-14T22:13:20.000Z)``; ``-`` for none
    (None, or a negative one: Kafka's -1 is "no timestamp")."""
    if ms is None or ms < 0:
        return "-"
    if not 0 <= ms <= YEAR_9999_MS:
        return str(ms)
    return f"{ms} ({iso(ms)})"


def duration(ms: int) -> str:
    """``90061000 ms (1d 1h 1m 1s)``: milliseconds with a rough human reading."""
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms} ms ({rough_duration(ms)})"


def rough_duration(ms: int) -> str:
    """``1d 1h``: the two largest units of a duration, for people (``850 ms`` below a second)."""
    if abs(ms) < 1000:
        return f"{ms} ms"
    rest, parts = abs(ms) // 1000, []
    for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= seconds:
            parts.append(f"{rest // seconds}{unit}")
            rest %= seconds
    sign = "-" if ms < 0 else ""
    return f"{sign}{' '.join(parts[:2])}"


def seconds(value: float) -> str:
    """``40 ms``, ``2.4 s``, ``12 s``, ``3 min 20 s``, ``2 h 5 min``: an estimated time, for
    people."""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 10:
        return f"{value:.1f} s"
    if value < 120:
        return f"{value:.0f} s"
    whole = round(value)
    if whole < 7200:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def seconds_range(low: float, typical: float, high: float) -> str:
    """``1.2 s (0.4 s to 5.1 s)``: an estimate, typical first, then its range."""
    return f"{seconds(typical)} ({seconds(low)} to {seconds(high)})"


def offset_span(first: int, end: int) -> str:
    """``offsets 0..1499``: the offsets from ``first`` up to ``end``, which is exclusive as
    Kafka's log end offset and a segment's next offset are; ``no offsets`` when none lie
    between (an empty partition is not "offsets 0..0")."""
    return f"offsets {first}..{end - 1}" if end > first else "no offsets"


def byte_count(n: int) -> str:
    """``1073741824 bytes (1.0 GiB)``: the exact count a person may need, and its size at a
    glance (the exact count alone below 1 KiB)."""
    return f"{n} bytes" if n < 1024 else f"{n} bytes ({size(n)})"


def size(n: int) -> str:
    """``1.0 GiB``: a byte count in binary units (bytes below 1 KiB)."""
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_bytes(text: str) -> int:
    """``16MiB``, ``8M``, ``512k``, ``1048576``: a positive number of bytes."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    number = t[: len(t) - len(unit)]
    if not number.isdigit() or int(number) <= 0:
        raise ValueError(f"{text!r} is not a size in bytes (16MiB, 8M, 1048576)")
    return int(number) * _UNITS[unit]


def parse_rate(text: str) -> int:
    """Bytes per second from ``200MiB/s``, ``50M``, ``1048576``."""
    try:
        return parse_bytes(text.strip().lower().removesuffix("/s"))
    except ValueError:
        raise ValueError(f"{text!r} is not a rate (200MiB/s, 50M, bytes per second)") from None
