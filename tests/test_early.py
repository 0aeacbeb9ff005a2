"""The suite's own machinery: a run started early (tests/early.py) ends with the session however
the session ends; no test is bound to the machine's speed by hypothesis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from hypothesis import settings
from test_interrupts import group_alive, wait_for

TESTS = Path(__file__).resolve().parent

# A session that starts a run and then waits: a test that has not come yet. SIGINT ignored as a
# shell without job control leaves it for a command started with &.
SESSION = """\
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from early import EarlyRun
signal.signal(signal.SIGINT, signal.SIG_IGN)
sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
run = EarlyRun(sleep, os.getcwd(), dict(os.environ))
run.start()
print(run.process.pid, flush=True)
time.sleep(600)
"""


def test_a_run_ends_when_its_session_is_killed(tmp_path: Path) -> None:
    """SIGKILL leaves pytest no pytest_sessionfinish to end its runs with."""
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION, str(TESTS)], cwd=tmp_path, stdout=subprocess.PIPE
    )
    assert session.stdout is not None
    group = int(session.stdout.readline())  # the run leads a process group of its own
    try:
        assert group_alive(group)
        session.kill()
        session.wait()
        wait_for(lambda: not group_alive(group), "the run to end with its session")
    finally:
        for pid in group_alive(group):
            os.kill(pid, signal.SIGKILL)
        session.kill()
        session.wait()


def test_hypothesis_gives_examples_all_the_time_they_take() -> None:
    assert settings.default.deadline is None
