"""Running the ``kdump`` console entry point in-process, as a shell would (no tests here)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import selectors
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple
from unittest import mock

from click.testing import CliRunner

from kdump.cli import main
from kdump.errors import STOP_SIGNALS


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


@contextmanager
def own_handlers() -> Iterator[None]:
    """The signal handlers of this process kept: kdump.cli.main, the entry point of a process,
    leaves its own in place for the process's exit."""
    saved = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


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
            with own_handlers():
                main()
        except SystemExit as e:
            code = e.code
        else:
            code = 0
    exit_code = code if isinstance(code, int) else (0 if code is None else 1)
    return Ran(exit_code, out.getvalue().decode(), err.getvalue().decode())


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(args: Sequence[str], columns: int = 80, styles: bool = False) -> Ran:
    """Run ``kdump args`` as a child on a pseudo-terminal ``columns`` wide (stdout and stderr
    both on it, as at a shell prompt): its exit code and what the screen shows, carriage
    returns taken out, and styles unless ``styles`` (stderr empty)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns)}
    env.pop("LINES", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdump", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    out = bytearray()
    # a selector, not select(): the suite's process may hold descriptors past select()'s 1024
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
    code = proc.wait(timeout=60)
    text = out.decode().replace("\r", "")
    return Ran(code, text if styles else ANSI.sub("", text), "")


NOBODY = 65534


def as_user(uid: int, work: Callable[[], str]) -> str:
    """``work()`` in a forked child run as ``uid`` (its group too): what it returns, or the
    exception it raised, as text. Root reads every file; another user is refused where the
    file's mode says. Whatever ``work`` imports must be imported already (that user may not
    read the Python the tests run on)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            os.close(read)
            os.setgid(uid)
            os.setuid(uid)
            os.write(write, work().encode())
        except BaseException as e:
            os.write(write, str(e).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        answer = f.read().decode()
    os.waitpid(pid, 0)
    return answer
