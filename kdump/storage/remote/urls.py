"""Segments in object stores: ``s3://``, ``gs://``, ``az://``, ``file://`` URLs (fsspec), and the
layouts of Kafka's tiered storage (KIP-405) in them.

This module is imported at start-up (kdump.segment and kdump.discovery ask ``is_url``): it holds
only what needs no object-store library. The rest of the package imports fsspec and friends (the
``remote`` extra) when a URL is read.
"""

from __future__ import annotations

import re

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

EXTRA = "remote"
"""The optional dependencies URLs need: ``pip install 'kafka-kdump[remote]'``."""


def is_url(path: object) -> bool:
    """Whether ``path`` names an object in a store (``scheme://...``) rather than a local file."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def join_url(base: str, name: str) -> str:
    """``name`` inside the folder-like prefix ``base``."""
    return base if not name else f"{base.rstrip('/')}/{name}"


def url_name(url: str) -> str:
    """The last component of a URL's key (its "file name")."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def url_parent(url: str) -> str:
    """The URL of the prefix holding ``url``."""
    return url.rstrip("/").rsplit("/", 1)[0]


__all__ = ["EXTRA", "is_url", "join_url", "url_name", "url_parent"]
