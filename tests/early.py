"""Subprocesses a test only waits for, started as soon as the session knows it will run that test
(``pytest_collection_finish`` in conftest.py), so they run on the second core while the other
tests run on the first. No tests here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, ClassVar, TypeVar

F = TypeVar("F", bound=Callable[..., object])


_GRACE_SECONDS = 10
"""How long a stopped run's process group may take to end on SIGTERM before it is killed."""

# Run first in the child, then replaced by the command (exec keeps the request): a session that
# dies without ending its runs (SIGKILL, SIGTERM, a CI timeout: no pytest_sessionfinish) sends the
# run SIGINT, which pytest ends as on Ctrl-C, tearing down the servers it started, and mypy ends
# on. SIGINT set to its default first: Python leaves it ignored if it was ignored at start (a
# command started with & by a shell without job control). Linux only (prctl), as in
# kdump/parallel.py's workers; elsewhere the run is ended by pytest_sessionfinish alone.
_DIE_WITH_PARENT = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
if sys.platform.startswith("linux"):
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != int(sys.argv[1]):  # the session died before the request was made
        sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


class EarlyRun:
    """One command, run once: started early or, at the latest, when a test asks for it."""

    started: ClassVar[list[EarlyRun]] = []

    def __init__(self, args: Sequence[str], cwd: Path, env: dict[str, str]) -> None:
        self.args, self.cwd, self.env = list(args), cwd, env
        self.process: subprocess.Popen[bytes] | None = None
        self.output: IO[bytes] | None = None

    def start(self) -> None:
        if self.process is not None:
            return
        # a file, not a pipe: nobody reads the output before the test does
        self.output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self.process = subprocess.Popen(
            [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *self.args],
            cwd=self.cwd,
            env=self.env,
            stdout=self.output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stop() ends its own subprocesses with it
        )
        EarlyRun.started.append(self)

    def result(self, timeout: float | None = None) -> tuple[int, str]:
        """The exit code and the output (standard output and error, interleaved)."""
        self.start()
        assert self.process is not None and self.output is not None
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        self.output.seek(0)
        return code, self.output.read().decode(errors="replace")

    def stop(self) -> None:
        """Ended with its process group if the session ends before its test waited for it."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.output is not None:
            self.output.close()

    def starts(self, test: F) -> F:
        """Decorates the test that waits for this run: conftest.py starts it early."""
        test.start_early = self.start  # type: ignore[attr-defined]
        return test
