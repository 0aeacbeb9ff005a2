"""Bounded fuzzing as part of the suite: saved crash inputs replay clean, hypothesis mutates
the fixtures, and a short coverage-guided atheris run per target finds nothing.

The long run is `fuzz/run.py TARGET -max_total_time=SECONDS` (docs/internals.md, Hardening).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = FIXTURES.parent
sys.path.insert(0, str(ROOT / "fuzz"))

from targets import TARGETS, seeds  # noqa: E402

PARSERS = [t for t in TARGETS if t != "cli"]


def saved_inputs() -> list[tuple[str, Path]]:
    corpus = ROOT / "fuzz" / "corpus"
    return [
        (target.name, path)
        for target in sorted(corpus.iterdir())
        if target.is_dir()
        for path in sorted(target.iterdir())
    ]


@pytest.mark.parametrize(("target", "path"), saved_inputs(), ids=lambda v: getattr(v, "name", v))
def test_saved_crash_inputs_replay_clean(target: str, path: Path) -> None:
    TARGETS[target](path.read_bytes())


@st.composite
def mutated(draw: st.DrawFn, pool: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(pool)))
    for _ in range(draw(st.integers(0, 8))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        action = draw(st.sampled_from(["flip", "zero", "cut", "insert"]))
        if action == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "zero":
            data[at : at + draw(st.integers(1, 64))] = bytes(len(data[at : at + 64]))
        elif action == "cut":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(max_size=32))
    return bytes(data)


@pytest.mark.parametrize("target", PARSERS)
def test_parsers_survive_mutated_fixtures(target: str) -> None:
    pool = seeds(target, ROOT) or [b""]

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(mutated(pool), st.binary(max_size=512)))
    def run(data: bytes) -> None:
        TARGETS[target](data)

    run()


def test_cli_survives_mutated_fixtures() -> None:
    pool = seeds("cli", ROOT, max_size=16 * 1024)

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(mutated(pool))
    def run(data: bytes) -> None:
        TARGETS["cli"](data)

    run()


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris not installed")
@pytest.mark.parametrize("target", [t for t in PARSERS if t != "speedups"])  # 4 s per 1000 runs
def test_bounded_coverage_guided_run(target: str, tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "run.py"), target, "-runs=4000", "-seed=1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # libFuzzer may count one run more than asked (an input replayed at the end): at least all
    done = re.search(r"^Done (\d+) runs", run.stderr, re.M)
    assert done is not None and int(done.group(1)) >= 4000, run.stderr[-3000:]
