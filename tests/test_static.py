"""Static checks run as tests: ruff (lint and format) over the code, mypy over the package.

Each runs with the configuration in pyproject.toml. A tool that is not installed is skipped
(the ``test`` extra installs all of them); one that is installed and complains fails the test,
with its report as the failure message.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from early import EarlyRun

ROOT = Path(__file__).resolve().parent.parent
PYTHON_PATHS = ["kdump", "tests", "fuzz", "scripts", "bench"]


def tool_command(tool: str) -> list[str] | None:
    """This interpreter's module, else one on PATH; None if the tool is not installed."""
    if importlib.util.find_spec(tool) is not None:
        return [sys.executable, "-m", tool]
    found = shutil.which(tool)
    return None if found is None else [found]


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``tool args`` from the repository root."""
    command = tool_command(tool)
    if command is None:
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


# kdump/spark included: pyspark ships its own types (py.typed); pyarrow and py4j have none.
MYPY = tool_command("mypy")
MYPY_RUN = EarlyRun([*(MYPY or ["mypy"]), "kdump"], ROOT, dict(os.environ))


@MYPY_RUN.starts
@pytest.mark.skipif(MYPY is None, reason="mypy is not installed")
def test_mypy() -> None:
    code, output = MYPY_RUN.result(timeout=300)
    assert code == 0, f"{' '.join(MYPY_RUN.args)}\n{output}"


C_SOURCE = ROOT / "kdump" / "_speedups.c"


def c_compiler() -> str:
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        pytest.skip("no C compiler: kdump runs on its pure-Python code")
    return found


def test_c_code_compiles_without_warnings() -> None:
    include = sysconfig.get_paths()["include"]
    result = subprocess.run(
        [
            c_compiler(),
            "-fsyntax-only",
            "-std=c99",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-unused-parameter",
            f"-I{include}",
            str(C_SOURCE),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert_clean(result)


def test_c_fast_paths_are_built_from_the_current_source() -> None:
    """The build marks the extension optional, so a failed compile would pass unnoticed."""
    c_compiler()
    if os.environ.get("KDUMP_PURE_PYTHON"):
        pytest.skip("KDUMP_PURE_PYTHON turns the C code off")
    from kdump import speedups

    assert speedups.built(), "kdump/_speedups.c did not build: pip install -v -e ."
    built = Path(speedups.native().__file__)
    assert built.stat().st_mtime >= C_SOURCE.stat().st_mtime, f"{built} is older than its source"


def test_the_c_module_stub_matches_the_built_module() -> None:
    """kdump/_speedups.pyi is how mypy sees every call into the C code (kdump.speedups.native
    hands the module out typed by it): mypy's stubtest checks that each name it declares, the
    result types' fields included, is the built module's, and that the module has no name the
    stub leaves out."""
    if importlib.util.find_spec("kdump._speedups") is None:
        pytest.skip("the C fast paths are not built")
    assert_clean(run_tool("mypy.stubtest", "kdump._speedups"))
