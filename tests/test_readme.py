"""The README's two set-up commands stay true: .ci/run runs the test command verbatim, and the
site's development page shows the same two."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import FIXTURES

ROOT = FIXTURES.parent
HEADING = "Set-up: two commands"


def setup_commands(page: Path, heading: str) -> list[str]:
    """The commands of the first sh block under the page's set-up heading."""
    section = page.read_text().split(heading + "\n", 1)[1]
    section = re.split(r"^## ", section, flags=re.M)[0]  # to the next section (not a # comment)
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, f"{page.name}: no sh block under {heading!r}"
    return [line for line in block[1].splitlines() if line and not line.startswith("#")]


def readme_commands() -> list[str]:
    return setup_commands(ROOT / "README.md", "## " + HEADING)


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


def test_the_development_page_shows_the_same_two_commands() -> None:
    assert setup_commands(ROOT / "docs" / "development.md", "## " + HEADING) == readme_commands()
