"""Static checks run as tests: ruff (lint and format) over the code, mypy over the package.

Each runs with the configuration in pyproject.toml. A tool that is not installed is skipped
(the ``test`` extra installs all of them); one that is installed and complains fails the test,
with its report as the failure message.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PATHS = ["kdump", "tests", "fuzz", "scripts", "bench"]


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``tool args`` from the repository root: this interpreter's module, else one on PATH."""
    if importlib.util.find_spec(tool) is not None:
        command = [sys.executable, "-m", tool]
    elif (found := shutil.which(tool)) is not None:
        command = [found]
    else:
        pytest.skip(f"{tool} is not installed")
    return subprocess.run(
        [*command, *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300
    )


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"{' '.join(result.args)}\n{result.stdout}{result.stderr}"


def test_ruff_check() -> None:
    assert_clean(run_tool("ruff", "check", *PYTHON_PATHS))


def test_ruff_format() -> None:
    assert_clean(run_tool("ruff", "format", "--check", *PYTHON_PATHS))


def test_mypy() -> None:
    # [tool.mypy] in pyproject.toml excludes kdump/spark and kdump/commands/spark.py for now.
    assert_clean(run_tool("mypy", "kdump"))
