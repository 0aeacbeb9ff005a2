"""kdump on a real Spark standalone cluster (issue 40): tests/cluster/ in a pytest run of its own,
started when the session begins and run beside the other tests on the second core (the cluster's
JVMs mostly wait on each other), as tests/test_speedups.py runs the suite without the C code."""

from __future__ import annotations

import os
import sys

import pytest
from conftest import REPO
from early import EarlyRun

pytest.importorskip("pyspark")

CLUSTER_RUN = EarlyRun(
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/cluster"],
    REPO,
    {**os.environ, "KDUMP_SPARK_CLUSTER": "1"},
)


@CLUSTER_RUN.starts
def test_kdump_on_a_standalone_cluster() -> None:
    """Every scenario of tests/cluster/test_spark_cluster.py passes on the real cluster."""
    code, output = CLUSTER_RUN.result()
    assert code == 0, output[-8000:]
