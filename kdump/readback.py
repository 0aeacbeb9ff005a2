"""Typed, bounded reading of the JSON files kdump wrote and reads back (issue 39): verify's
``--state`` file and the fleet's verify results. kdump wrote them, but not necessarily the bytes
it reads: another user, a half-written copy, a clock or a hand may have changed them. So every
value is checked for the type and range kdump writes before anything is made of it, and what
does not pass is one ``ReadBackError`` naming the value (``summary.by_partition[3].bytes``), never
an exception of Python's (``unexpected ValueError``) and never a value that steers a run (a
``verified_ms`` in the future, a ``started`` of 1e30, a NaN).

The file itself is bounded before it is parsed (``load``): JSON text takes about ten times its
size as Python objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from kdump.errors import ReadBackError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TEXT_MAX = 1 << 16
"""Characters of one string (a path is at most 4,096 bytes, a message a few hundred)."""

T = TypeVar("T")


def _constant(name: str) -> Any:
    raise ReadBackError("", f"{name} is not a JSON number kdump writes")


def load(data: bytes, limit: int) -> Any:
    """``data`` as JSON: at most ``limit`` bytes, strict (no NaN or Infinity, UTF-8)."""
    if len(data) > limit:
        raise ReadBackError("", f"{len(data)} bytes, more than the {limit} kdump reads back")
    try:
        return json.loads(data, parse_constant=_constant)
    except UnicodeDecodeError as e:
        raise ReadBackError("", f"not UTF-8 at byte {e.start}") from None
    except json.JSONDecodeError as e:
        raise ReadBackError("", f"not JSON at byte {e.pos}: {e.msg}") from None
    except RecursionError:
        raise ReadBackError("", "nested deeper than kdump writes") from None


def mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ReadBackError(where, f"{_kind(value)}, not an object")
    return value


def field(doc: dict[str, Any], key: str, where: str) -> Any:
    if key not in doc:
        raise ReadBackError(where, f"no {key!r}")
    return doc[key]


def integer(value: Any, where: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """A JSON integer (not a float, not a boolean) in [low, high]."""
    if type(value) is not int:
        raise ReadBackError(where, f"{_kind(value)}, not an integer")
    if not low <= value <= high:
        raise ReadBackError(where, f"{value} is outside [{low}, {high}]")
    return value


def optional_integer(
    value: Any, where: str, low: int = INT64_MIN, high: int = INT64_MAX
) -> int | None:
    return None if value is None else integer(value, where, low, high)


def number(value: Any, where: str, low: float, high: float) -> float:
    """A JSON number (integer or finite float) in [low, high]."""
    if type(value) not in (int, float) or not low <= value <= high:
        raise ReadBackError(where, f"{value!r} is no number in [{low}, {high}]")
    return float(value)


def text(value: Any, where: str, limit: int = TEXT_MAX, pattern: str | None = None) -> str:
    if not isinstance(value, str):
        raise ReadBackError(where, f"{_kind(value)}, not a string")
    if len(value) > limit:
        raise ReadBackError(where, f"a string of {len(value)} characters, more than {limit}")
    if pattern is not None and not re.fullmatch(pattern, value):
        raise ReadBackError(where, f"{value[:80]!r} is not of the form kdump writes")
    return value


def optional_text(value: Any, where: str, limit: int = TEXT_MAX) -> str | None:
    return None if value is None else text(value, where, limit)


def flag(value: Any, where: str) -> bool:
    if type(value) is not bool:
        raise ReadBackError(where, f"{_kind(value)}, not true or false")
    return value


def array(value: Any, where: str, limit: int) -> list[Any]:
    if not isinstance(value, list):
        raise ReadBackError(where, f"{_kind(value)}, not an array")
    if len(value) > limit:
        raise ReadBackError(where, f"{len(value)} items, more than {limit}")
    return value


def integers(value: Any, where: str, n: int, what: str) -> list[int]:
    """An array of exactly ``n`` JSON integers (``what`` they are, for the error)."""
    if len(array(value, where, n)) != n:
        raise ReadBackError(where, f"not {what}")
    return [integer(v, where) for v in value]


def each(value: Any, where: str, limit: int, read: Callable[[Any, str], T]) -> list[T]:
    """Every item of the array ``value``, read by ``read(item, where[i])``."""
    return [read(item, f"{where}[{i}]") for i, item in enumerate(array(value, where, limit))]


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"the number {value!r}"
    return names.get(type(value), f"the {type(value).__name__} {value!r}")


__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "array",
    "each",
    "field",
    "flag",
    "integer",
    "integers",
    "load",
    "mapping",
    "number",
    "optional_integer",
    "optional_text",
    "text",
]
