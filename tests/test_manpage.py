"""The committed man page (docs/kdump.1) is what scripts/make_manpage.py makes of the CLI's
definitions now: an option added or changed without regenerating it fails here."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

from conftest import REPO, script_module


def _generator() -> ModuleType:
    return script_module("make_manpage")


def test_committed_man_page_is_the_generators_output() -> None:
    page = _generator().manpage()
    assert (REPO / "docs" / "kdump.1").read_text() == page, "run scripts/make_manpage.py"


def test_man_page_covers_every_command_and_option() -> None:
    from kdump.cli import cli
    from kdump.commands import COMMANDS

    page = (REPO / "docs" / "kdump.1").read_text()
    for name in COMMANDS:
        assert f".SS kdump {name.replace('-', chr(92) + '-')}" in page
    for param in cli.params:
        for opt in param.opts:
            assert opt.replace("-", "\\-") in page
    assert "_KDUMP_COMPLETE=bash_source kdump" in page


def test_documented_completion_prints_a_bash_script() -> None:
    """`_KDUMP_COMPLETE=bash_source kdump` (docs/install.md, the man page) prints click's bash
    script."""
    ran = subprocess.run(
        [sys.executable, "-m", "kdump"],
        env={"_KDUMP_COMPLETE": "bash_source", "PATH": ""},
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert "complete" in ran.stdout and "_KDUMP_COMPLETE" in ran.stdout
