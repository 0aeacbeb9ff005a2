"""The release set-up (issue 34): wheels built by cibuildwheel on a tag, published with the sdist
and kdump.pyz. It runs on GitHub, not here, so its configuration is read: [tool.cibuildwheel]
by cibuildwheel itself and against its own schema, the workflow as YAML."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# cibuildwheel runs on Python 3.11 and later (the test extra installs it there)
needs_cibuildwheel = pytest.mark.skipif(
    importlib.util.find_spec("cibuildwheel") is None, reason="cibuildwheel is not installed"
)
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"


def workflow() -> dict[str, Any]:
    document = yaml.safe_load(WORKFLOW.read_text())
    document["on"] = document.pop(True)  # YAML 1.1 reads the key `on` as true
    return document


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job["steps"])


def uses(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in steps(job) if str(s.get("uses", "")).startswith(action + "@")]


@needs_cibuildwheel
def test_cibuildwheel_settings_are_valid() -> None:
    schema = json.loads(
        (files("cibuildwheel") / "resources" / "cibuildwheel.schema.json").read_text()
    )
    jsonschema.validate(PYPROJECT["tool"]["cibuildwheel"], schema)


@needs_cibuildwheel
def test_the_workflow_runs_the_cibuildwheel_these_tests_ask() -> None:
    """The settings are checked by the installed cibuildwheel: the one the workflow runs."""
    (action,) = uses(workflow()["jobs"]["wheels"], "pypa/cibuildwheel")
    major_minor = ".".join(version("cibuildwheel").split(".")[:2])
    assert action["uses"] == f"pypa/cibuildwheel@v{major_minor}"


@needs_cibuildwheel
def test_wheels_for_every_supported_python_on_x86_64_and_aarch64_glibc_and_musl() -> None:
    ran = subprocess.run(
        [Path(sys.executable).parent / "cibuildwheel", "--platform", "linux",
         "--archs", "x86_64,aarch64", "--print-build-identifiers"],
        cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert PYPROJECT["project"]["requires-python"] == ">=3.10"
    assert set(ran.stdout.split()) == {
        f"cp3{minor}-{libc}_{arch}"
        for minor in range(10, 15)
        for libc in ("manylinux", "musllinux")
        for arch in ("x86_64", "aarch64")
    }


def test_wheels_need_no_newer_glibc_than_2_17_and_are_tested_with_the_c_paths_on() -> None:
    settings = PYPROJECT["tool"]["cibuildwheel"]
    linux = settings["linux"]
    assert linux["manylinux-x86_64-image"] == linux["manylinux-aarch64-image"] == "manylinux2014"
    command = " ".join(settings["test-command"])
    assert "s.built()" in command and "s.c_crc().endswith(' instructions')" in command


def test_the_version_is_the_tag() -> None:
    assert "version" not in PYPROJECT["project"]
    assert PYPROJECT["project"]["dynamic"] == ["version"]
    assert "setuptools-scm>=8" in PYPROJECT["build-system"]["requires"]
    assert workflow()["on"] == {"push": {"tags": ["v*"]}}
    for name, job in workflow()["jobs"].items():
        for checkout in uses(job, "actions/checkout"):
            assert checkout["with"]["fetch-depth"] == 0, f"{name}: setuptools-scm needs the tags"


def test_workflow_builds_on_both_architectures_then_publishes_everything() -> None:
    jobs = workflow()["jobs"]
    wheels = jobs["wheels"]
    assert wheels["strategy"]["matrix"]["runner"] == ["ubuntu-24.04", "ubuntu-24.04-arm"]
    assert uses(wheels, "pypa/cibuildwheel")
    build = " ".join(str(s.get("run", "")) for s in steps(jobs["sdist-and-pyz"]))
    assert "sh scripts/build-dist.sh dist" in build and "kdump.pyz" in build
    publish = jobs["publish"]
    assert set(publish["needs"]) == {"wheels", "sdist-and-pyz"}
    assert publish["permissions"]["id-token"] == "write"
    assert uses(publish, "pypa/gh-action-pypi-publish")
    # published as kafka-kdump: the name pyproject.toml gives, not the unrelated "kdump" there
    assert PYPROJECT["project"]["name"] == "kafka-kdump"
    assert publish["environment"] == {"name": "release", "url": "https://pypi.org/p/kafka-kdump"}
    downloaded = {
        str(s["with"].get("pattern", s["with"].get("name")))
        for s in uses(publish, "actions/download-artifact")
    }
    uploaded = {
        str(s["with"]["name"])
        for job in jobs.values()
        for s in uses(job, "actions/upload-artifact")
    }
    assert downloaded == {"wheels-*", "sdist", "pyz"}
    assert uploaded == {"wheels-${{ matrix.runner }}", "sdist", "pyz"}


def test_changelog_opens_with_the_coming_release() -> None:
    lines = (REPO / "CHANGELOG.md").read_text().splitlines()
    assert lines[0] == "# Changelog"
    assert next(line for line in lines if line.startswith("## ")) == "## Unreleased"
