"""Kafka's JSON message specs as copied into tests/data/kafka-specs/, read without kdump's code.

The files are Apache Kafka's own spec files (data), copied from trunk commit
d79bd502ec7fa49335afa422f442af80ed0ab8f6 (2026-08-23, 4.5.0-SNAPSHOT); see the README there.
This module reads them (JSON with ``//`` comments, as Kafka's generator reads them with Jackson's
ALLOW_COMMENTS) into plain dicts, and says which spec file kdump's table of each record is
checked against. It shares nothing with kdump.format.messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parent / "data" / "kafka-specs"
SPECS_4_0 = Path(__file__).resolve().parent / "data" / "kafka-4.0-specs"
"""Kafka 4.0.1's share-group value specs: the layouts its early access wrote under version 0."""
TRUNK = "d79bd502ec7fa49335afa422f442af80ed0ab8f6"
SHORT_MAX = 0x7FFF


def strip_comments(text: str) -> str:
    """Drop ``//`` and ``/* */`` comments outside strings."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
        elif ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(strip_comments(path.read_text(encoding="utf-8"))))


def specs_in(module: str) -> dict[str, dict[str, Any]]:
    """The specs copied from one module's directory (``group-coordinator``, ``metadata``...)."""
    return {spec["name"]: spec for spec in map(load, sorted((SPECS / module).glob("*.json")))}


def all_specs() -> dict[str, dict[str, Any]]:
    """Every copied spec by its ``name`` (unique across the modules copied)."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(SPECS.glob("*/*.json")):
        spec = load(path)
        assert spec["name"] not in out, path
        out[spec["name"]] = spec
    return out


def parse_versions(text: str | None) -> tuple[int, int] | None:
    """generator.Versions.parse: ``a``, ``a-b``, ``a+``, ``none``; None when absent."""
    if text is None:
        return None
    text = text.strip()
    if text == "none":
        return (0, -1)
    if text.endswith("+"):
        return (int(text[:-1]), SHORT_MAX)
    low, dash, high = text.partition("-")
    return (int(low), int(high if dash else low))


def field_versions(f: dict[str, Any]) -> tuple[int, int]:
    """A field's versions: ``versions``, else its ``taggedVersions`` (FieldSpec's rule)."""
    versions = parse_versions(f.get("versions"))
    if versions is None:
        versions = parse_versions(f.get("taggedVersions"))
    assert versions is not None, f
    return versions


def default_text(f: dict[str, Any]) -> str:
    """The spec's ``default`` as text (Jackson reads a number or a boolean as its text)."""
    value = f.get("default")
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
