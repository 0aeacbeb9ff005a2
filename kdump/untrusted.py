"""Text read from disk, on its way out (issue 39).

kdump runs as root over files the broker's user writes: directory names, ``meta.properties``,
topic names, record bytes, state and result files. Every such string passes through this module
before it reaches one of these, each with its own rule:

- **a terminal** (``terminal``): a control character (C0, DEL, C1), a line or paragraph
  separator and an invisible formatting character (a bidirectional override that reorders what
  the screen shows) is written ``\\xNN`` (``\\uNNNN`` above U+00FF), as GNU ls does on a
  terminal; a byte that is not UTF-8 is ``\\xNN`` too (``shown``). Standard output and error
  take the rule as a whole (``TerminalText``, installed by kdump.cli), so no line of kdump's
  reaches them otherwise, whichever code formatted it.
- **a command kdump suggests** (``command``): each word quoted for a POSIX shell
  (``shlex.quote``), and a word holding a control character or a byte that is not UTF-8 written
  in bash's ``$'...'`` form, which gives back exactly its bytes: what an operator pastes runs on
  that path and nothing else.
- **HTML** (``html_text``): escaped for text and attribute values alike, after ``terminal``;
  every page kdump writes also carries ``content_security_policy``: only kdump's own script
  runs.
- **a metric label** (``metric_label``): Prometheus' escapes after ``terminal``.
- **JSON** (``shown_json``, ``json_text``): the text itself (JSON escapes control characters),
  a byte that is not UTF-8 as ``\\xNN``.
- **a path** (``path_part``): one file name component of letters, digits, ``.``, ``-`` and
  ``_``, never ``.`` or ``..``: a field of ``verify --output`` cannot climb out of its directory.

Names are bytes on Linux, and need not be UTF-8 (``printf 'ld\\377'``); Python hands such a byte
over as a lone surrogate (U+DC80..U+DCFF, ``os.fsdecode``'s surrogateescape). ``shown`` writes
it ``\\xNN``, two lower-case hex digits (a literal ``\\x41`` in a name is not told apart from an
escaped byte: names with backslashes are rarer still). Where a format has escapes of its own
(JSON strings, Prometheus label values) the rule is applied first and the format then escapes
the backslash, so a reader of that format gets the text a terminal shows. Text streams and
files take the rule as their error handler (``ESCAPE_NAMES``).
"""

from __future__ import annotations

import codecs
import functools
import io
import re
from typing import IO, Any

_UNDECODABLE = "[\udc80-\udcff]"  # compiled by re when first met
ESCAPE_NAMES = "kdump-escape-names"
"""The codec error handler that writes a byte that is not UTF-8 as ``\\xNN``."""

_INVISIBLE = (
    "\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\udc80-\udcff"
)
_UNSAFE_CLASS = f"[\x00-\x08\x0a-\x1f{_INVISIBLE}]"
"""What a terminal must not be given raw: C0 controls but the tab, DEL, C1 controls, the soft
hyphen and the invisible formatting characters (zero widths, direction marks, embeddings and
overrides, isolates: Unicode's Cf of the BMP a terminal draws nothing for or reorders with), the
line and paragraph separators, and bytes that are not UTF-8."""
_UNSAFE_LINES_CLASS = f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]"
"""The same, line feeds allowed: for whole texts of lines (a stream)."""
_ASCII_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
_ASCII_UNSAFE_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""The two classes' ASCII characters: all that ASCII text (most of what kdump prints) can hold
of them. Their compilation is a few microseconds; the whole classes' ~1 ms is paid by the first
text that is not ASCII (``_unsafe``), not by every start-up."""


@functools.cache
def _unsafe(lines: bool = False) -> re.Pattern[str]:
    return re.compile(_UNSAFE_LINES_CLASS if lines else _UNSAFE_CLASS)


def _unsafe_for(text: str, lines: bool = False) -> re.Pattern[str]:
    if text.isascii():
        return _ASCII_UNSAFE_LINES if lines else _ASCII_UNSAFE
    return _unsafe(lines)


_SAFE_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
"""``_UNSAFE_LINES_CLASS`` of UTF-8 bytes, the C0 and C1 controls (the rest is rare enough in a dump
to go through ``terminal`` whole, see ``terminal_bytes``)."""


def _byte(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()) - 0xDC00:02x}"


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}"


def shown(text: str) -> str:
    """``text`` with each byte that is not UTF-8 written ``\\xNN``."""
    return text if text.isascii() else re.sub(_UNDECODABLE, _byte, text)


def undecodable(text: str) -> bool:
    """Whether ``text`` holds a byte that is not UTF-8 (a name's, surrogate-escaped): text that
    UTF-8 files, JSON and Kafka's own strings cannot carry as it is."""
    return not text.isascii() and re.search(_UNDECODABLE, text) is not None


def terminal(text: str) -> str:
    """``text`` as a terminal may be given it: every character of ``_UNSAFE_CLASS`` (line feeds too:
    one name, one line) written ``\\xNN`` or ``\\uNNNN``."""
    return _unsafe_for(text).sub(_escape, text)


def terminal_lines(text: str) -> str:
    """``terminal`` of a text of lines: its line feeds kept."""
    return _unsafe_for(text, lines=True).sub(_escape, text)


def _json_escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # a name's byte: the rule's ``\xNN``, its backslash escaped
        return f"\\\\x{c - 0xDC00:02x}"
    return f"\\u{c:04x}"


def terminal_bytes(data: bytes, json: bool = False) -> bytes:
    """UTF-8 ``data`` (lines of a dump) with what ``terminal_lines`` escapes escaped, for a
    terminal; ``json``: JSON text, whose strings take JSON's ``\\uNNNN`` instead (a line stays
    JSON)."""
    if data.isascii() and not json:
        return _SAFE_BYTES.sub(lambda m: f"\\x{m.group()[-1]:02x}".encode(), data)
    text = data.decode("utf-8", "surrogateescape")
    return (_unsafe(lines=True).sub(_json_escape, text) if json else terminal_lines(text)).encode()


# -- commands kdump suggests -------------------------------------------------------------------

_PLAIN_WORD = re.compile(r"[A-Za-z0-9@%+=:,./_-]+")
"""A word every POSIX shell reads as itself (shlex.quote leaves it as it is)."""


def shell_word(text: str) -> str:
    """``text`` as one word of a POSIX shell command line, giving back exactly its bytes: as it
    is when plain, else in single quotes (``shlex.quote``), else, holding a control character or
    a byte that is not UTF-8, in bash's ``$'...'`` form (ksh, zsh and POSIX.1-2024 sh read it
    too) with each such byte ``\\xNN``."""
    if text and _PLAIN_WORD.fullmatch(text):
        return text
    if not _unsafe_for(text).search(text):
        return "'" + text.replace("'", "'\"'\"'") + "'"
    out = []
    for c in text:
        if c in "\\'":
            out.append("\\" + c)
        elif _unsafe_for(c).fullmatch(c):
            raw = bytes([ord(c) - 0xDC00]) if "\udc80" <= c <= "\udcff" else c.encode()
            out.append("".join(f"\\x{b:02x}" for b in raw))
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


def command(*words: str) -> str:
    """A command line kdump suggests (a finding's ``fix``, the runbook's steps): its words
    quoted one by one (``shell_word``). The first words are kdump's own (``kdump recover``)."""
    return " ".join(shell_word(w) for w in words)


# -- HTML, metrics, JSON, paths ----------------------------------------------------------------


def content_security_policy(*scripts: str) -> str:
    """The Content-Security-Policy of every HTML page kdump writes: nothing is fetched, no form
    goes anywhere, and the only scripts that run are ``scripts`` (kdump's own, by their SHA-256):
    a name that escaped its escaping (``html_text``) still runs nothing. Inline styles are
    allowed (the page's stylesheet and its bars' widths); they run no code."""
    import base64
    import hashlib

    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in scripts
    )
    return (
        f"default-src 'none'; script-src {hashes or chr(39) + 'none' + chr(39)}; "
        "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    )


def csp_meta(*scripts: str) -> str:
    """The ``<meta>`` element that sets ``content_security_policy(*scripts)``: first in the
    page's ``<head>``."""
    policy = content_security_policy(*scripts)
    return f'<meta http-equiv="Content-Security-Policy" content="{policy}">'


def html_text(value: object) -> str:
    """``value`` (a name, or anything read from a file: ``str()`` of it) as HTML text or an
    attribute value in double quotes."""
    import html

    return html.escape(terminal(str(value)), quote=True)


def metric_label(value: str) -> str:
    """A Prometheus label value: ``terminal``, then the exposition format's escapes."""
    return terminal(value).replace("\\", "\\\\").replace('"', '\\"')


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
    """``json.dumps`` of a document whose names are ``shown`` (ASCII: JSON's own escapes for
    everything else)."""
    import json

    return json.dumps(shown_json(value), **options)


def escape_json_text(text: str) -> str:
    """JSON text written with ``ensure_ascii=False`` made safe for any reader: its raw
    undecodable bytes (which only string literals can hold) ``shown`` and JSON-escaped
    (``\\\\xNN``), and every other character a terminal must not be given raw (DEL, C1
    controls, invisible formatting: ``_UNSAFE_CLASS``) JSON's ``\\uNNNN``, which gives back the same
    text. For JSON made where a walk of the values costs too much (a dump's objects, the C
    renderer's templates)."""
    if text.isascii() and "\x7f" not in text:
        return text
    return _unsafe_for(text, lines=True).sub(_json_escape, text)


_NOT_PATH = r"[^A-Za-z0-9._-]+"  # compiled by re when first used
PATH_PART_MAX = 100
"""Characters of one field in a file name (a name may hold several, and 255 bytes at most)."""


def path_part(value: str, empty: str = "unknown") -> str:
    """``value`` as (part of) one file or object name: each run of characters other than
    letters, digits, ``.``, ``-`` and ``_`` as one ``_``, at most PATH_PART_MAX characters,
    never ``.`` or ``..`` (nor a name of dots); ``empty`` where nothing is left."""
    part = re.sub(_NOT_PATH, "_", value)[:PATH_PART_MAX]
    if not part.strip("."):
        part = part.replace(".", "_") if part else empty
    return part


# -- standard output and error -----------------------------------------------------------------


def _handler(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    bad = error.object[error.start : error.end]
    if not all("\udc80" <= c <= "\udcff" for c in bad):
        raise error  # not a name's byte: a bug, not to be hidden
    return shown(bad), error.end


codecs.register_error(ESCAPE_NAMES, _handler)


class TerminalText(io.TextIOBase):
    """A text stream (standard output or error) whose every write goes through
    ``terminal_lines``: no control character reaches the stream underneath but a line feed and a
    tab. ``buffer`` is the stream's bytes, unfiltered (kdump.commands.output writes dumps there,
    with their own rule), ``unfiltered`` the stream itself, for rich, which writes its own
    escapes (colours) around text it was given through ``terminal``."""

    def __init__(self, stream: IO[str]) -> None:
        self.unfiltered = stream

    def write(self, text: str) -> int:
        self.unfiltered.write(terminal_lines(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.unfiltered, name)

    def flush(self) -> None:
        self.unfiltered.flush()

    def isatty(self) -> bool:
        return self.unfiltered.isatty()

    def fileno(self) -> int:
        return self.unfiltered.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.unfiltered, "encoding", "utf-8"))

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.unfiltered, "errors", None)


def unfiltered(stream: IO[str]) -> IO[str]:
    """The stream under a ``TerminalText`` (for rich), or ``stream`` itself."""
    return stream.unfiltered if isinstance(stream, TerminalText) else stream


def escape_streams(*streams: IO[str]) -> None:
    """Text streams (standard output and error) that write names by the rule, never fail on
    them."""
    for stream in streams:
        reconfigure = getattr(unfiltered(stream), "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ESCAPE_NAMES)


__all__ = [
    "ESCAPE_NAMES",
    "TerminalText",
    "command",
    "content_security_policy",
    "csp_meta",
    "escape_json_text",
    "escape_streams",
    "html_text",
    "json_text",
    "metric_label",
    "path_part",
    "shell_word",
    "shown",
    "shown_json",
    "terminal",
    "terminal_bytes",
    "terminal_lines",
    "undecodable",
    "unfiltered",
]
