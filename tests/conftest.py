from __future__ import annotations

import importlib.util
import json
import os
from functools import cache
from pathlib import Path
from types import ModuleType
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


def script_module(name: str) -> ModuleType:
    """scripts/<name>.py loaded as a module (the generators whose output tests compare)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
