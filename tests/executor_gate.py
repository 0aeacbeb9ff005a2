"""sitecustomize of the test cluster's executor Python (tests/sparkcluster.py): a gate that holds
one Spark task mid-segment, so a test can act on a job that is surely running (kill its
executor, press Ctrl-C on its driver) without depending on the machine's speed.

With ``KDUMP_TEST_GATE=DIR`` in the executor's environment (``spark.executorEnv``), the first
Python worker that opens a ``.log`` file claims ``DIR/claimed``, writes its pid and its executor
JVM's to ``DIR/reached`` and waits until ``DIR/open`` exists; every later opener goes through.
Nothing happens without the variable. Not part of kdump: the test's stand-in for a slow disk.
"""

from __future__ import annotations

import os
import sys
import time


def _executor_of(pid: int) -> int:
    """The executor JVM above this Python worker (worker -> pyspark daemon -> executor)."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"CoarseGrainedExecutorBackend" in f.read():
                    return pid
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except OSError:
            break
    return 0


def _gate(directory: str) -> None:
    held = [False]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if held[0] or event != "open" or not str(args[0]).endswith(".log"):
            return
        held[0] = True  # this worker decides once; the gate's own files are not segments
        try:
            fd = os.open(os.path.join(directory, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.close(fd)
        with open(os.path.join(directory, "reached.partial"), "w") as f:
            f.write(f"{os.getpid()} {_executor_of(os.getpid())}\n")
        os.replace(os.path.join(directory, "reached.partial"), os.path.join(directory, "reached"))
        while not os.path.exists(os.path.join(directory, "open")):
            time.sleep(0.05)

    sys.addaudithook(hook)


if os.environ.get("KDUMP_TEST_GATE"):
    _gate(os.environ["KDUMP_TEST_GATE"])
