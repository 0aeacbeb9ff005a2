from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
ORACLE = FIXTURES / "oracle"
REALFILES = FIXTURES / "realfiles"
GENERATED = FIXTURES / "generated"


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
