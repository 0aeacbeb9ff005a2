"""The README's two set-up commands stay true: .ci/run runs the test command verbatim."""

from __future__ import annotations

import re

from conftest import FIXTURES

ROOT = FIXTURES.parent


def readme_commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block is not None
    return [line for line in block[1].splitlines() if line and not line.startswith("#")]


def test_readme_has_exactly_two_setup_commands() -> None:
    main_job, tests = readme_commands()
    assert "kdump verify fixtures/" in main_job
    assert "pytest" in tests


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = readme_commands()
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


def test_main_job_fixture_exists() -> None:
    main_job, _ = readme_commands()
    path = main_job.split("kdump verify ", 1)[1].split()[0]
    assert (ROOT / path).is_dir()
