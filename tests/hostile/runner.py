"""kdump as a child process under a memory cap: a decoder that allocates what the bytes claim
fails its test (MemoryError, or the kernel refusing the mapping) instead of taking the machine
down. The cap is ``RLIMIT_AS`` (address space), set in the child before kdump is imported."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass

MIB = 1 << 20

# A child forked from a large process (a test run, the bench that built the bombs) reports that
# process's RSS as its own peak: Linux carries the pre-exec high-water mark over exec. So kdump
# is started by a small launcher, which reports the child's ru_maxrss on its last stderr line.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print(f"\\n@@ {os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}", file=sys.stderr)
"""

_CHILD = """
import resource, sys
cap = int(sys.argv[1])
if cap:
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
if sys.argv[2] == "--python":  # a library entry point: the code, then its arguments
    code = sys.argv[3]
    sys.argv = ["kdump-library", *sys.argv[4:]]
    exec(code)
    sys.exit(0)
sys.argv = ["kdump", *sys.argv[2:]]
from kdump.cli import main
main()
"""
PYTHON = "--python"
"""``run_capped([PYTHON, CODE, ARG...])`` runs CODE (``sys.argv[1:]``: the ARGs) instead of the
CLI: for decoders reached through the library only (the Spark export's extraction)."""


@dataclass(frozen=True)
class Ran:
    code: int
    """The exit code; negative: killed by that signal (a crash)."""
    stderr: str
    stdout_bytes: int
    peak_rss: int
    """The child's ru_maxrss, in bytes."""
    seconds: float

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss / MIB


def run_capped(
    args: list[str],
    cap_bytes: int,
    stderr_keep: int = 1 << 16,
    kdump_tree: str | None = None,
    environment: dict[str, str] | None = None,
) -> Ran:
    """``kdump ARGS`` under ``cap_bytes`` of address space (0: none). stdout (a dump can be
    gigabytes) is counted, not kept; of stderr the first ``stderr_keep`` bytes are kept.
    ``kdump_tree``: another checkout whose kdump is imported instead (a baseline);
    ``environment``: variables set for kdump besides (``KDUMP_PURE_PYTHON``)."""
    start = time.perf_counter()
    env, cwd = None, None
    if environment:
        env = {**os.environ, **environment}
    if kdump_tree is not None:
        env, cwd = {**(env or os.environ), "PYTHONPATH": kdump_tree}, "/"
    child = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, sys.executable, "-c", _CHILD, str(cap_bytes), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert child.stdout is not None and child.stderr is not None
    out, head, tail = 0, bytearray(), b""
    with selectors.DefaultSelector() as streams:
        streams.register(child.stdout, selectors.EVENT_READ)
        streams.register(child.stderr, selectors.EVENT_READ)
        while streams.get_map():
            for key, _ in streams.select():
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    streams.unregister(key.fileobj)
                elif key.fileobj is child.stdout:
                    out += len(chunk)
                else:
                    head += chunk[: max(0, stderr_keep - len(head))]
                    tail = (tail + chunk)[-4096:]
    child.wait()
    last = tail.decode(errors="replace").rpartition("\n@@ ")[2]
    code, max_rss_kib = (int(v) for v in last.split())
    text = head.decode(errors="replace").split("\n@@ ")[0]
    return Ran(code, text, out, max_rss_kib * 1024, time.perf_counter() - start)
