"""kdump on a real Spark standalone cluster (issue 40): the scenarios of tests/cluster/ run in a
pytest run of their own, started as soon as this session has collected them and run beside the
other tests on the second core (the cluster's JVMs mostly wait on each other), as
tests/test_speedups.py runs the suite without the C code. Each scenario is a test of this
session too: it passes, fails or is skipped as it did there, and a run that did not end cleanly
(a JVM of the cluster left running fails its teardown) fails here."""

from __future__ import annotations

import ast
import os
import re
import sys

import pytest
from conftest import REPO
from early import EarlyRun

pytest.importorskip("pyspark")

SCENARIOS_FILE = "tests/cluster/test_spark_cluster.py"
SCENARIOS = [
    node.name
    for node in ast.parse((REPO / SCENARIOS_FILE).read_text()).body
    if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
]

CLUSTER_RUN = EarlyRun(
    [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", SCENARIOS_FILE],
    REPO,
    {**os.environ, "KDUMP_SPARK_CLUSTER": "1"},
)
HANG = 1800
"""Seconds after which the run is a hang, stopped (a scenario's driver has 300: WAIT there)."""


def outcomes(output: str) -> dict[str, list[str]]:
    """Each scenario's outcomes as pytest -v printed them (a test whose teardown failed has two:
    PASSED, then ERROR)."""
    found: dict[str, list[str]] = {}
    for name, outcome in re.findall(
        rf"^{re.escape(SCENARIOS_FILE)}::(\w+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)",
        output,
        re.MULTILINE,
    ):
        found.setdefault(name, []).append(outcome)
    return found


@pytest.mark.parametrize("scenario", SCENARIOS)
@CLUSTER_RUN.starts
def test_on_a_standalone_cluster(scenario: str) -> None:
    """The scenario of tests/cluster/test_spark_cluster.py of this name, on the real cluster."""
    _, output = CLUSTER_RUN.result(HANG)
    outcome = outcomes(output).get(scenario)
    if outcome == ["SKIPPED"]:
        pytest.skip(f"skipped on the cluster: {output[-2000:]}")
    assert outcome == ["PASSED"], output[-8000:]


@CLUSTER_RUN.starts
def test_the_cluster_run_ended_cleanly() -> None:
    """Every scenario reported, the run's exit 0: the cluster stopped, no process of it left."""
    code, output = CLUSTER_RUN.result(HANG)
    assert sorted(outcomes(output)) == sorted(SCENARIOS), output[-8000:]
    assert code == 0, output[-8000:]
