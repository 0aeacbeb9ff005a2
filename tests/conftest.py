from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Hashable, Iterable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest
from early import EarlyRun
from hypothesis import settings
from sparkcluster import SparkCluster

from kdump.format.index import OffsetIndex
from kdump.format.names import offset_in_name
from kdump.format.timeindex import TimeIndex
from kdump.format.txnindex import TransactionIndex
from kdump.storage.local import map_file

if TYPE_CHECKING:
    from _pytest.mark.structures import ParameterSet

# the real-broker harness's fixtures (kafka_release, kafka_broker, kafka_three, ...)
pytest_plugins = ["realkafka.fixtures"]

# Hypothesis's default deadline (200 ms an example) is a bound on the machine's speed: a busy
# machine fails a correct test, and the suite itself keeps the second core busy (tests/early.py).
settings.register_profile("kdump", deadline=None)
settings.load_profile("kdump")

collect_ignore = [] if os.environ.get("KDUMP_SPARK_CLUSTER") else ["cluster"]
"""tests/cluster/ runs in a pytest session of its own, which tests/test_spark_cluster.py starts
and reports scenario by scenario."""

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
ORACLE = FIXTURES / "oracle"
REALFILES = FIXTURES / "realfiles"
GENERATED = FIXTURES / "generated"
CORRUPT = FIXTURES / "corrupt"


def by_content(
    paths: Iterable[Path], root: Path, kind: Callable[[Path], Hashable] = lambda _: None
) -> list[ParameterSet]:
    """One parameter per distinct file among ``paths``: the first path, in the order given,
    holding those bytes, named by its path under ``root``. A test whose answer also depends on
    something of the path beside its bytes (the reader its name picks) says so in ``kind``;
    files equal in both are the same case. Most of the fixtures' .log files are copies (empty
    segments, and partitions copied into the corrupt fixtures with another file damaged): a
    test over the contents runs each case once, not once per copy."""
    first: dict[tuple[Hashable, bytes], Path] = {}
    for path in paths:
        first.setdefault((kind(path), hashlib.sha256(path.read_bytes()).digest()), path)
    return [pytest.param(p, id=str(p.relative_to(root))) for p in first.values()]


@cache
def fixture_logs() -> list[ParameterSet]:
    """Every distinct .log under fixtures/, for parametrize. A log copied unchanged into a
    corrupt fixture is named after its original (oracle/txn-0/..., not the copy whose
    checkpoint is damaged)."""
    return by_content(
        sorted(FIXTURES.rglob("*.log"), key=lambda p: (CORRUPT in p.parents, p)), FIXTURES
    )


def script_module(name: str) -> ModuleType:
    """scripts/<name>.py loaded as a module (the generators whose output tests compare), its
    directory on the path as when it runs (the generators share scripts/generated.py)."""
    if str(REPO / "scripts") not in sys.path:
        sys.path.append(str(REPO / "scripts"))
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


WHOLE_SUITE: dict[str, int] = {}
"""``tests``: the tests a run of the whole suite collected (empty for a run of some of them)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the subprocess runs the chosen tests will wait for (tests/early.py)."""
    option = session.config.option
    whole = session.config.args in (["tests"], [])
    if whole and not option.keyword and not option.markexpr:
        WHOLE_SUITE["tests"] = len(session.items)
    if option.collectonly:
        return
    for item in session.items:
        start = getattr(getattr(item, "obj", None), "start_early", None)
        if start is not None and not _skipped(item):
            start()


def _skipped(item: pytest.Item) -> bool:
    """Skipped by a mark whose condition is known already (kdump's C code not built)."""
    return any(
        m.name == "skip" or (m.name == "skipif" and bool(m.args) and m.args[0] is True)
        for m in item.iter_markers()
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    for run in EarlyRun.started:
        run.stop()
    for cluster in SparkCluster.started:  # one a failed fixture did not stop
        cluster.stop()
