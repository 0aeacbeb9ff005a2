"""Every hostile case of cases.py, small: kdump as a child under an address-space cap well below
what decoding the bomb whole takes, so an unbounded decoder fails here (MemoryError, a refused
mapping) instead of taking the machine down. Its peak RSS must stay within the bound (2 x the
batch's decompressed bytes + 100 MB, or 100 MB for a manifest), its exit code be one kdump
documents and its stderr one clear line where the input is refused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hostile.cases import CASES, Case
from hostile.runner import run_capped


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_input_stays_bounded(case: Case, tmp_path: Path) -> None:
    limit = case.limit(suite=True)
    ran = run_capped(
        case.args(tmp_path, suite=True), limit + case.address_space, environment=case.environment
    )
    assert ran.code in case.codes, f"{case.what}: exit {ran.code}\n{ran.stderr[-3000:]}"
    assert "Traceback" not in ran.stderr and "unexpected" not in ran.stderr, ran.stderr[-3000:]
    assert ran.peak_rss <= limit, f"{case.what}: peak RSS {ran.peak_rss_mib:.0f} MiB"
    if case.stderr:
        lines = ran.stderr.strip().splitlines()
        assert len(lines) == 1 and re.search(case.stderr, lines[0]), ran.stderr
