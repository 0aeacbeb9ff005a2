"""Prometheus' text exposition format (0.0.4), for node_exporter's textfile collector.

A family is ``# HELP name text``, ``# TYPE name gauge``, then one line per sample
``name{label="value",...} number``. Label values escape backslash, double quote and line feed
(``\\\\``, ``\\"``, ``\\n``); HELP text escapes backslash and line feed. The collector reads every
``*.prom`` file of its directory at each scrape, so the file is written whole or not at all:
a temporary file in the same directory whose name does not end in ``.prom``, fsynced, then
renamed over the old one (kdump.storage.outputs.write_textfile). ``read_samples`` reads such a
file back with the same rules (a failing run carries its predecessor's last success forward).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.untrusted import metric_label, terminal_lines

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


@dataclass(frozen=True)
class Sample:
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass
class Family:
    """One measure: its name, what it means, and its samples (one per label set)."""

    name: str
    help: str
    type: str = "gauge"
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"not a metric name: {self.name!r}")

    def add(self, value: float, **labels: str | int | None) -> Family:
        for key in labels:
            if not LABEL_NAME.match(key) or key.startswith("__"):
                raise ValueError(f"not a label name: {key!r}")
        pairs = tuple((k, "" if v is None else str(v)) for k, v in labels.items())
        self.samples.append(Sample(pairs, value))
        return self


def escape_label_value(value: str) -> str:
    """A label value read from disk or not: kdump.untrusted.metric_label (a line feed is
    ``\\x0a`` there, never a line of its own)."""
    return metric_label(value)


def escape_help(text: str) -> str:
    """kdump's own text: its line feeds as the format's ``\\n``, other controls escaped."""
    return terminal_lines(text).replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(families: Iterable[Family]) -> str:
    """The text of ``families``; a family without samples is left out (nothing to say)."""
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.type}")
        for sample in family.samples:
            labels = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in sample.labels)
            where = f"{{{labels}}}" if labels else ""
            lines.append(f"{family.name}{where} {format_value(sample.value)}")
    return "\n".join(lines) + "\n" if lines else ""


_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_UNESCAPE = re.compile(r"\\(.)")


def _unescape(value: str) -> str:
    return _UNESCAPE.sub(lambda m: "\n" if m[1] == "n" else m[1], value)


def read_samples(text: str) -> Iterator[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of each sample line; lines that do not parse are skipped (an old
    file is a hint, never a reason to fail)."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        labels: dict[str, str] = {}
        rest = m["labels"] or ""
        position = 0
        while position < len(rest):
            label = _LABEL.match(rest, position)
            if label is None:
                break
            labels[label[1]] = _unescape(label[2])
            position = label.end()
        try:
            value = float(m["value"])
        except ValueError:
            continue
        yield m["name"], labels, value


def previous_value(path: str | os.PathLike[str], name: str, labels: dict[str, str]) -> float | None:
    """The value of sample ``name{labels}`` in the file a previous run wrote, if any."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for found, found_labels, value in read_samples(text):
        if found == name and found_labels == labels:
            return value
    return None
