from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kdump.format.index import OffsetIndex
from kdump.format.names import offset_in_name
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.storage.local import map_file

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
ORACLE = FIXTURES / "oracle"
REALFILES = FIXTURES / "realfiles"
GENERATED = FIXTURES / "generated"


def offset_index_at(path: str | os.PathLike[str]) -> OffsetIndex:
    """The offset index file at ``path`` (its base offset from its name)."""
    return OffsetIndex(map_file(path), _base(path), str(path))


def time_index_at(path: str | os.PathLike[str]) -> TimeIndex:
    return TimeIndex(map_file(path), _base(path), str(path))


def txn_index_at(path: str | os.PathLike[str]) -> TransactionIndex:
    return TransactionIndex(map_file(path), _base(path), str(path))


def _base(path: str | os.PathLike[str]) -> int:
    offset = offset_in_name(os.path.basename(path))
    assert offset is not None, path
    return offset


@cache
def oracle_manifest() -> dict[str, Any]:
    return json.loads((ORACLE / "manifest.json").read_text())


def oracle_files(suffix: str) -> list[tuple[str, str]]:
    """(directory, file name) of every oracle file with this suffix, for parametrize."""
    return [
        (d, name)
        for d, files in sorted(oracle_manifest()["files"].items())
        for name in sorted(files)
        if name.endswith(suffix)
    ]


@pytest.fixture
def manifest() -> dict[str, Any]:
    return oracle_manifest()
