"""Running kdump against an object store and comparing what it says with what it says of the
same files on local disk: shared by the tests of each store (test_remote_s3.py,
test_remote_gcs_azure.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

from clirun import Ran, run_kdump

KDUMP = str(Path(sys.executable).parent / "kdump")
"""The console script installed beside this Python (the venv's)."""
_SEGMENT_ID = re.compile(r"(\d{20})-[A-Za-z0-9_-]{22}\.")


def kdump(args: list[str], env: dict[str, str] | None = None) -> Ran:
    """``kdump ARGS`` in a child process (no progress display: stderr is not a terminal)."""
    done = subprocess.run(
        [KDUMP, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def kdump_in(args: list[str], env: dict[str, str]) -> Ran:
    """``kdump ARGS`` in this process (run_kdump) with ``env`` as its environment: the
    comparisons run many commands, and a child process each costs a second of start-up."""
    with mock.patch.dict(os.environ, env, clear=True):
        return run_kdump(args)


def same_names(text: str, url: str, local: Path) -> str:
    """``text`` with the store's names turned into the local files' names."""
    text = text.replace(url, str(local))
    return _SEGMENT_ID.sub(r"\1.", text)


def sorted_lines(text: str) -> list[str]:
    # DumpLogSegments prints its summaries in hash order of the file names
    return sorted(text.splitlines())


def assert_one_error_line(ran: Ran, *wanted: str, scheme: str = "s3") -> str:
    assert ran.exit_code == 3, ran
    assert "Traceback" not in ran.stderr, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    line = lines[0]
    assert line.startswith(f"kdump: {scheme}://"), line
    for w in wanted:
        assert re.search(w, line), (w, line)
    return line


def verify_json(ran: Ran) -> dict[str, Any]:
    out = json.loads(ran.stdout)
    del out["run"]
    return out
