"""Running the ``kdump`` console entry point in-process, as a shell would (no tests here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple
from unittest import mock

from click.testing import CliRunner

from kdump.cli import main


class Ran(NamedTuple):
    exit_code: int
    stdout: str
    stderr: str


@contextmanager
def _in_directory(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def run_kdump(args: Sequence[str], cwd: Path | None = None) -> Ran:
    """Run the ``kdump`` console entry point (kdump.cli.main) on ``args``, as a shell would.

    CliRunner captures the streams; main() itself picks the exit code, so what is asserted is
    what a user's shell sees.
    """
    runner = CliRunner()
    with (
        _in_directory(cwd or Path.cwd()),
        runner.isolation() as (out, err, _),
        mock.patch.object(sys, "argv", ["kdump", *args]),
    ):
        try:
            main()
        except SystemExit as e:
            code = e.code
        else:
            code = 0
    exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    return Ran(exit_code, out.getvalue().decode(), err.getvalue().decode())


def on_a_terminal(args: Sequence[str], env: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A command's exit code and standard output when that is a pseudo-terminal (its
    standard error discarded). Read with a selector, not select(): the suite's process may
    hold descriptors numbered past select()'s 1024."""
    import pty
    import selectors
    import subprocess

    leader, follower = pty.openpty()
    child = subprocess.Popen(args, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    out = bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(leader, selectors.EVENT_READ)
        while selector.select(60):
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    os.close(leader)
    return child.wait(timeout=60), bytes(out)
