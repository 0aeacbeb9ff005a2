"""Lines folded for a terminal: at spaces, and between the names of a path (kdump.render.console
prints findings through it on a terminal only)."""

from __future__ import annotations

import re
import textwrap

_CHUNK = re.compile(r"(\s+|[^\s/]*/)")
"""Where a line may break: at whitespace, and after each ``/`` of a path."""


class _PathWrapper(textwrap.TextWrapper):
    def _split(self, text: str) -> list[str]:
        return [chunk for chunk in _CHUNK.split(text) if chunk]


def wrap_paths(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces and after a ``/``:
    a path folds between two of its names, never inside one that fits on a line (rich breaks
    only at spaces, and folds a long path wherever the line ends)."""
    wrapper = _PathWrapper(width=max(1, width), break_on_hyphens=False, replace_whitespace=False)
    return [out for line in text.split("\n") for out in (wrapper.wrap(line) or [""])]


__all__ = ["wrap_paths"]
