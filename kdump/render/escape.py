"""File names as kdump prints them.

Names are bytes on Linux, and need not be UTF-8 (``printf 'ld\\377'``). Python hands such a
byte over as a lone surrogate (U+DC80..U+DCFF, ``os.fsdecode``'s surrogateescape), which no
UTF-8 writer accepts: a log dir named so made ``--prom`` and ``report`` fail. One rule, used
wherever a name is printed (text, JSON, --prom labels, HTML): each byte that is not UTF-8 is
written ``\\xNN``, two lower-case hex digits. Everything else is written as it is (a literal
``\\x41`` in a name is not told apart from an escaped byte: names with backslashes are rarer
still).

Where a format has escapes of its own (JSON strings, Prometheus label values) the rule is
applied first and the format then escapes the backslash, so a reader of that format gets the
same text a terminal shows. Text streams and files take the rule as their error handler
(``ESCAPE_NAMES``): a name reaches them whatever the code that formatted it.
"""

from __future__ import annotations

import codecs
import re
from typing import IO, Any

_UNDECODABLE = re.compile("[\udc80-\udcff]")
ESCAPE_NAMES = "kdump-escape-names"
"""The codec error handler that writes a byte that is not UTF-8 as ``\\xNN``."""


def _byte(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()) - 0xDC00:02x}"


def shown(text: str) -> str:
    """``text`` with each byte that is not UTF-8 written ``\\xNN``."""
    return text if text.isascii() else _UNDECODABLE.sub(_byte, text)


def shown_json(value: Any) -> Any:
    """Every string of a JSON document (keys too) ``shown``."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown_json(k): shown_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shown_json(v) for v in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps`` of a document whose names are ``shown``."""
    import json

    return json.dumps(shown_json(value), **options)


def escape_json_text(text: str) -> str:
    """JSON text written with ``ensure_ascii=False``, its raw undecodable bytes (which only
    string literals can hold) ``shown`` and JSON-escaped (``\\\\xNN``): for JSON made where a
    walk of the values costs too much (a dump's objects, the C renderer's templates)."""
    return text if text.isascii() else _UNDECODABLE.sub(lambda m: "\\" + _byte(m), text)


def _handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    if not all("\udc80" <= c <= "\udcff" for c in bad):
        raise error  # not a name's byte: a bug, not to be hidden
    return shown(bad), error.end


codecs.register_error(ESCAPE_NAMES, _handler)


def escape_streams(*streams: IO[str]) -> None:
    """Text streams (standard output and error) that write names by the rule, never fail on
    them."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ESCAPE_NAMES)


__all__ = [
    "ESCAPE_NAMES",
    "escape_json_text",
    "escape_streams",
    "json_text",
    "shown",
    "shown_json",
]
