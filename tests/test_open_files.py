"""A command run in-process (a test suite, a library caller, kdump's Spark tasks) gives back every
file descriptor it opened: each memory map of a segment's files keeps one, and a map held by a
cycle of objects is freed only when the garbage collector walks it, which kdump's CLI makes
rare (kdump.cli's thresholds). So the command closes the partitions it opened.

Counted in /proc/self/fd before and after, with the collector off during the run (what a cycle
holds then stays held, as it may for a long while in a real process).
"""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import CORRUPT, ORACLE

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="Linux's /proc")


@contextmanager
def no_collection() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def open_files() -> dict[str, str]:
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed since
            continue
    return found


def _partitions(tmp_path: Path) -> dict[str, str]:
    """A log dir whose checkpoint does not parse (every segment read, no recovery point) and a
    partition whose log ends in a corrupt batch (a walk that stops on damage)."""
    out = {}
    for case in ("checkpoint-corrupt", "log-corrupt-batch"):
        shutil.copytree(CORRUPT / case, tmp_path / case)
        (log,) = (tmp_path / case).rglob("*-0/00000000000000000000.log")
        out[case] = str(log.parent)
    shutil.copytree(ORACLE / "variety-0", tmp_path / "replica" / "variety-0")
    out["variety"] = str(tmp_path / "replica" / "variety-0")
    return out


COMMANDS = {
    "lookup": lambda p: ["lookup", p, "--offset", "3"],
    "lookup --timestamp": lambda p: ["lookup", p, "--timestamp", "0"],
    "recover --dry-run": lambda p: ["recover", "--dry-run", p],
    "rebuild-index --dry-run": lambda p: ["rebuild-index", "--dry-run", p],
    "replicas": lambda p: ["replicas", p, p],
    "verify": lambda p: ["verify", p],
    "explain": lambda p: ["explain", p],
    "txn": lambda p: ["txn", p],
    "salvage": lambda p: ["salvage", p, "--output-dir", f"{Path(p).parents[1]}-salvaged"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_run_in_process_closes_what_it_opened(tmp_path: Path, command: str) -> None:
    partitions = _partitions(tmp_path)
    for case, partition in partitions.items():
        args = COMMANDS[command](partition)
        with no_collection():
            before = open_files()
            ran = run_kdump(args)
            left = {fd: path for fd, path in open_files().items() if fd not in before}
        assert ran.exit_code in (0, 1, 2), (case, ran.stderr)
        assert sorted(left.values()) == [], f"{case}: {' '.join(args)}"


def test_the_count_sees_a_map_left_open(tmp_path: Path) -> None:
    """The check itself: a partition opened and not closed is seen."""
    from kdump.discovery import open_partition

    partition = _partitions(tmp_path)["variety"]
    with no_collection():
        before = open_files()
        log = open_partition(partition)
        log.segments[0].log  # noqa: B018 (mapped as it is read)
        left = [path for fd, path in open_files().items() if fd not in before]
        assert [Path(p).name for p in left] == ["00000000000000000000.log"]
        log.close()
        assert [fd for fd in open_files() if fd not in before] == []
