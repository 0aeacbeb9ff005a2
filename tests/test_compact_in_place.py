"""``kdump compact --in-place``: the cleaned segments swapped in as Kafka's cleaner swaps them
(kdump.repair.swap), the broker stopped, the replaced files kept.

The result is Kafka's own: each fixtures/compaction scenario cleaned in place must leave the
partition Kafka's cleaner left (its files, bytes and mtimes, its checkpoint). A run killed at
any step, or stopped by Ctrl-C or SIGTERM, leaves each group's old segments or its new ones
once what is left is settled as the broker's LogLoader settles it (``kdump recover`` here; the
real broker in tests/test_kafka_compact.py), with nothing lost.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from clirun import run_kdump
from test_compact_kafka import NAMES, _prepare, _same_but_snappy

from kdump.cli import cli
from kdump.commands.options import config_layers
from kdump.compact import CompactOptions, compact_in_place
from kdump.discovery import discover
from kdump.unified_log import OpenOptions

REPO = Path(__file__).resolve().parent.parent
BAK = ".kdump-bak"


def _configs(spec: dict) -> list[str]:
    return [a for c in spec["configs"] for a in ("--config", c)]


def _in_place(part: Path, spec: dict, *extra: str) -> tuple[int, str, str]:
    args = ["compact", str(part), "--in-place", "--now", str(spec["now"]), *_configs(spec)]
    ran = run_kdump([*args, "--dedupe-buffer-size", str(spec["dedupe"]), *extra])
    return ran.exit_code, ran.stdout, ran.stderr


def _segment_files(part: Path) -> dict[str, bytes]:
    """The partition's own files (not kdump's backups, not the snapshots the broker writes)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(part.iterdir())
        if p.is_file() and BAK not in p.name and not p.name.endswith(".snapshot")
    }


@pytest.mark.parametrize("name", NAMES)
def test_in_place_leaves_what_kafkas_cleaner_left(name: str, tmp_path: Path) -> None:
    spec, part, kafka = _prepare(name, tmp_path)
    before = {p.name: p.read_bytes() for p in part.iterdir()}
    code, out, err = _in_place(part, spec, "--format", "json")
    assert code == 0, err
    done = json.loads(out)
    ours = _segment_files(part)
    theirs = {n: b for n, b in _segment_files(kafka).items() if not n.endswith(".deleted")}
    active = f"{max(int(n.split('.')[0]) for n in ours):020d}"
    for suffix in (".index", ".timeindex"):  # the active segment's: not kept in the fixture
        theirs.setdefault(active + suffix, ours[active + suffix])
    theirs.pop("leader-epoch-checkpoint", None)
    assert sorted(ours) == sorted(theirs)
    for file, data in ours.items():
        if data != theirs[file]:
            assert name == "codecs" and file.endswith((".log", ".index", ".timeindex")), file
            if file.endswith(".log"):
                assert _same_but_snappy(data, theirs[file]), file
    for written in map(Path, done["written"]):
        if written.suffix in (".log", ".index", ".timeindex"):  # setLastModified's files
            when = spec["kafka_mtimes"][written.name]
            assert written.stat().st_mtime_ns // 1_000_000 == when, written.name
    checkpoint = part.parent / "cleaner-offset-checkpoint"
    assert checkpoint.read_text() == (kafka.parent / "cleaner-offset-checkpoint").read_text()
    # every file replaced is kept, byte for byte
    for backup in done["backups"]:
        original = Path(backup).name.removesuffix(BAK)
        if original != "cleaner-offset-checkpoint":
            assert Path(backup).read_bytes() == before[original], original
    replaced = {Path(b).name.removesuffix(BAK) for b in done["backups"]}
    assert replaced - {"cleaner-offset-checkpoint"} == set(done["replaced"])
    assert not [p for p in part.iterdir() if ".kdump-tmp-" in p.name]


def test_a_running_broker_refuses_it(tmp_path: Path) -> None:
    spec, part, _ = _prepare("groups", tmp_path)
    lock = part.parent / ".lock"
    lock.write_bytes(b"")
    before = _segment_files(part)
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(lock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code, _, err = _in_place(part, spec)
    finally:
        holder.kill()
        holder.wait()
    assert code == 3, err
    assert f"process {holder.pid}" in err and "refusing to modify files" in err
    assert _segment_files(part) == before
    assert not [p for p in part.iterdir() if p.name.endswith(BAK)]


LOCKER = textwrap.dedent(
    """
    import fcntl, sys, time
    f = open(sys.argv[1], "r+")
    fcntl.lockf(f, fcntl.LOCK_EX)   # what the broker's FileChannel.tryLock does on Linux
    print("locked", flush=True)
    time.sleep(120)
    """
)


def test_leftovers_of_an_interrupted_swap_refuse_it(tmp_path: Path) -> None:
    spec, part, _ = _prepare("groups", tmp_path)
    (part / "00000000000000000004.log.cleaned").write_bytes(b"")
    code, _, err = _in_place(part, spec)
    assert code == 3
    assert "00000000000000000004.log.cleaned" in err and "kdump recover" in err


def test_a_topic_not_known_to_be_compacted_is_refused(tmp_path: Path) -> None:
    spec, part, _ = _prepare("groups", tmp_path)
    spec = dict(spec, configs=[c for c in spec["configs"] if "cleanup.policy" not in c])
    code, _, err = _in_place(part, spec)
    assert code == 3
    assert "cleanup.policy is delete" in err and "--config cleanup.policy=compact" in err


def test_backups_under_a_backup_dir(tmp_path: Path) -> None:
    spec, part, _ = _prepare("transactions", tmp_path)
    before = _segment_files(part)
    backups = tmp_path / "backups"
    code, out, err = _in_place(part, spec, "--backup-dir", str(backups), "--format", "json")
    assert code == 0, err
    kept = json.loads(out)["backups"]
    assert kept and all(Path(k).parent == backups / part.name for k in kept)
    assert not [p for p in part.iterdir() if p.name.endswith(BAK)]
    for k in kept:
        original = Path(k).name.removesuffix(BAK)
        if original in before:
            assert Path(k).read_bytes() == before[original]


def test_owner_and_mode_of_the_replaced_files_are_kept(tmp_path: Path) -> None:
    """The broker's user keeps its files: the cleaned segment's take the owner, group and mode
    of those they replace (root runs kdump; the broker runs as another user)."""
    spec, part, _ = _prepare("transactions", tmp_path)
    owner = (4321, 4321) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
    for f in part.iterdir():
        f.chmod(0o640)
        os.chown(f, *owner)
    code, _, err = _in_place(part, spec)
    assert code == 0, err
    for name in ("00000000000000000000.log", "00000000000000000000.index"):
        st = (part / name).stat()
        assert (st.st_mode & 0o777, st.st_uid, st.st_gid) == (0o640, *owner)


# -- killed and stopped mid-run ------------------------------------------------------------------

KILL_CONFIGS = ["cleanup.policy=compact", "internal.segment.bytes=400"]
"""The groups scenario cleaned one segment at a time: each group its own swap."""


def _small_partition(root: Path) -> tuple[dict, Path]:
    """The groups scenario's first four segments, the fourth the active one: three groups, the
    first two of which the cleaning changes."""
    root.mkdir(parents=True)
    spec, part, _ = _prepare("groups", root)
    for f in part.iterdir():
        if int(f.name.split(".")[0]) > 12:
            f.unlink()
    return dict(spec, configs=KILL_CONFIGS), part


def _run_in_place(part: Path, spec: dict, hook: Callable[[str, Path], None] | None) -> None:
    """compact_in_place on ``part`` as the command runs it, ``hook`` told of every step."""
    layers = config_layers(tuple(spec["configs"]), None, None, paths=(str(part),))
    options = OpenOptions(now_ms=spec["now"], layers=layers)
    found = discover([str(part)], options=options, urls=False)
    for _ in compact_in_place(found.partitions, CompactOptions(now=spec["now"]), hook=hook):
        pass


def _groups(part: Path) -> dict[int, dict[str, bytes]]:
    """The partition's files by segment (kdump's backups and temporary files left out)."""
    out: dict[int, dict[str, bytes]] = {}
    for name, data in _segment_files(part).items():
        if name[0].isdigit():
            out.setdefault(int(name.split(".")[0]), {})[name] = data
    return out


def _settle(part: Path) -> None:
    result = CliRunner().invoke(cli, ["recover", str(part)])
    assert result.exit_code == 0, result.output


def test_killed_at_every_step_leaves_old_or_new_segments(tmp_path: Path) -> None:
    spec, part = _small_partition(tmp_path / "old")
    old = _groups(part)
    new_spec, new_part = _small_partition(tmp_path / "new")
    steps: list[str] = []
    logs: list[int] = []  # the steps where a group begins: its .log's temporary file

    def note(step: str, path: Path) -> None:
        steps.append(step)
        if step == "temp-created" and ".log.kdump-tmp-" in path.name:
            logs.append(len(steps))

    _run_in_place(new_part, new_spec, note)
    new = _groups(new_part)
    assert old.keys() == new.keys() and old != new
    assert {"temp-created", "backup", "cleaned", "swap", "deleted", "renamed"} <= set(steps)
    checkpoints = {None, (new_part.parent / "cleaner-offset-checkpoint").read_text()}
    # every step of the first group's swap and of the checkpoint's commit (the other groups
    # take the same steps), and the start of the second group
    kill_at = [*range(1, logs[1] + 1), *range(steps.index("temp-written") + 1, len(steps) + 1)]
    for k in kill_at:
        _, part = _small_partition(tmp_path / f"kill{k}")
        child = os.fork()
        if child == 0:  # a crash at step k: nothing after it runs, no clean-up either

            def crash(step: str, path: Path, calls: list[int] = [0], at: int = k) -> None:  # noqa: B006
                calls[0] += 1
                if calls[0] == at:
                    os._exit(9)

            try:
                _run_in_place(part, spec, crash)
            finally:
                os._exit(0)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 9, f"step {k} ({steps[k - 1]})"
        _settle(part)
        settled = _groups(part)
        for base, files in settled.items():
            assert files in (old[base], new[base]), f"killed at step {k} ({steps[k - 1]})"
        assert settled.keys() == old.keys()
        checkpoint = part.parent / "cleaner-offset-checkpoint"
        assert (checkpoint.read_text() if checkpoint.exists() else None) in checkpoints
        assert not [p for p in part.iterdir() if ".kdump-tmp-" in p.name]
        shutil.rmtree(tmp_path / f"kill{k}")


STOPPER = textwrap.dedent(
    """
    import os, signal, sys
    import kdump.compact
    from kdump.cli import main
    step, nth, signum = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    seen = [0]
    class Stopping(kdump.compact.SwapSession):
        def __init__(self, options, hook=None):
            def stop(name, path):
                if name == step:
                    seen[0] += 1
                    if seen[0] == nth:
                        os.kill(os.getpid(), signum)
            super().__init__(options, stop)
    kdump.compact.SwapSession = Stopping
    sys.argv = ["kdump", *sys.argv[4:]]
    main()
    """
)


@pytest.mark.parametrize(
    ("signum", "step", "nth", "swapped"),
    [
        (signal.SIGINT, "temp-created", 4, 1),  # while the second group is written
        (signal.SIGTERM, "temp-created", 4, 1),
        (signal.SIGINT, "swap", 1, 1),  # inside the first swap: it finishes first
        (signal.SIGTERM, "cleaned", 2, 1),
    ],
)
def test_ctrl_c_and_sigterm_stop_between_groups(
    tmp_path: Path, signum: int, step: str, nth: int, swapped: int
) -> None:
    spec, part = _small_partition(tmp_path / "old")
    old = _groups(part)
    new_spec, new_part = _small_partition(tmp_path / "new")
    _run_in_place(new_part, new_spec, None)
    new = _groups(new_part)
    args = ["compact", str(part), "--in-place", "--now", str(spec["now"]), *_configs(spec)]
    child = subprocess.run(
        [sys.executable, "-c", STOPPER, step, str(nth), str(signum), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert child.returncode == 128 + signum, child.stderr
    stopped = f"kdump: stopped by {signal.Signals(signum).name}"
    assert child.stderr.strip().splitlines()[-1] == stopped
    assert "Traceback" not in child.stderr
    now = _groups(part)
    bases = sorted(old)
    assert [now[b] == new[b] for b in bases[:2]] == [True] * swapped + [False] * (2 - swapped)
    assert [now[b] == old[b] for b in bases[swapped:]] == [True] * (len(bases) - swapped)
    assert not [p for p in part.iterdir() if ".kdump-tmp-" in p.name]
    assert not (part.parent / "cleaner-offset-checkpoint").exists()  # the run did not finish
    # a run again finishes the job
    code, _, err = _in_place(part, spec)
    assert code == 0, err
    assert _groups(part) == new
