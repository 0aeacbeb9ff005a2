"""What kdump writes, run as root over a broker's directories (issue 27 points 1-4, issue 28
points 1, 2 and 9): no link followed, the inode planned is the one cut, owners and modes kept,
output and backup dirs kdump's own and one per partition, leftovers of a killed run removed,
a repair stopped by a signal clean. Every situation is built for real: links, FIFOs, chown to
another uid, modes, signals sent to a running child. Tests that need root skip without it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clirun import NOBODY, as_user, run_kdump
from conftest import REPO
from repair_support import copy_partition, tree
from test_repair_safety import (
    INTERVAL,
    KILLER,
    assert_nothing_lost,
    assert_old_or_new,
    final_state,
    real_files,
    recover_in_process,
    small_damaged_partition,
    steps_of_a_clean_run,
    temp_files,
)

from kdump.errors import KdumpError
from kdump.format.names import RECOVERY_POINT_CHECKPOINT, is_kdump_leftover

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
KAFKA = (4242, 4343)
"""The uid and gid of a broker's user: not whoever runs the tests."""
NOT_REGULAR = (
    "not a regular file: kdump reads and writes only regular files in a broker's directories, "
    "never through a link"
)


def victim_file(root: Path, size: int | None = None) -> Path:
    """A file only its owner may write: what a link in the broker's directory points at."""
    victim = root / "victim"
    victim.write_bytes(b"root's own bytes\n" if size is None else bytes(range(256)) * size)
    victim.chmod(0o600)
    return victim


def chown_tree(top: Path, owner: tuple[int, int], file_mode: int, dir_mode: int) -> None:
    for p in [top, *top.rglob("*")]:
        os.chown(p, *owner)
        p.chmod(dir_mode if p.is_dir() else file_mode)


def modes(top: Path) -> dict[str, tuple[int, int, int]]:
    """(uid, gid, permission bits) of every file under ``top``."""
    return {
        str(p.relative_to(top)): (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
        for p in sorted(top.rglob("*"))
        if p.is_file() and (st := p.stat())
    }


# -- 27.1: links and other files that are not regular -----------------------------------------


@pytest.mark.parametrize(
    "command",
    [["recover"], ["recover", "--dry-run"], ["rebuild-index"], ["salvage", "--output-dir", "OUT"]],
)
def test_a_linked_log_is_refused_not_followed(tmp_path: Path, command: list[str]) -> None:
    """`ln -s /srv/victim .../00000000000000001201.log` plus empty index files: recover emptied
    the victim and copied it, 0644, into a cut file."""
    partition = copy_partition("plain-0", tmp_path)
    victim = victim_file(tmp_path)
    log = partition / "00000000000000001201.log"
    log.symlink_to(victim)
    for suffix in (".index", ".timeindex"):
        (partition / f"00000000000000001201{suffix}").write_bytes(b"")
    before = tree(tmp_path)
    args = [str(tmp_path / "out") if a == "OUT" else a for a in command]
    ran = run_kdump([*args, str(partition.parent)])
    assert (ran.exit_code, ran.stderr) == (3, f"kdump: {log}: a symbolic link, {NOT_REGULAR}\n")
    assert tree(tmp_path) == before
    assert victim.read_bytes() == b"root's own bytes\n"


def test_a_fifo_among_the_segment_files_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: the repair hung."""
    partition = copy_partition("plain-0", tmp_path)
    index = partition / "00000000000000000258.timeindex"
    index.unlink()
    os.mkfifo(index)
    ran = subprocess.run(
        [sys.executable, "-m", "kdump", "rebuild-index", str(partition)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert (ran.returncode, ran.stderr) == (3, f"kdump: {index}: a FIFO, {NOT_REGULAR}\n")


def _swap_for_link(log: Path, victim: Path) -> None:
    log.unlink()
    log.symlink_to(victim)


def _swap_for_hard_link(log: Path, victim: Path) -> None:
    spare = log.with_name("spare")
    os.link(victim, spare)
    os.replace(spare, log)


@pytest.mark.parametrize("swap", [_swap_for_link, _swap_for_hard_link])
def test_the_log_cut_is_the_inode_planned(
    tmp_path: Path, swap: Callable[[Path, Path], None]
) -> None:
    """Between the plan and the cut the log is swapped for another file of the same size and
    modification time (through a link, or a hard link in its place): nothing of it is cut."""
    partition, cuts = small_damaged_partition(tmp_path)
    log = partition / sorted(cuts)[-1]
    victim = tmp_path / "victim"
    victim.write_bytes(b"v" * log.stat().st_size)
    st = log.stat()
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    swapped: list[str] = []

    def hook(step: str, path: Path) -> None:
        if step == "dir-synced" and not swapped:
            swap(log, victim)
            swapped.append(step)

    with pytest.raises(KdumpError) as raised:
        recover_in_process(partition, hook)
    assert str(raised.value).startswith(f"{log}: ")
    assert victim.read_bytes() == b"v" * st.st_size
    assert not list(partition.glob(f"{log.name}.kdump-cut-*.1"))


def test_a_log_dir_named_through_a_link_is_repaired(tmp_path: Path) -> None:
    """/kafka-logs is often a link to the disk's mount: the operator's own path is followed,
    while a partition found inside it never is (the next test)."""
    partition = _recover_setup(tmp_path / "disk")
    link = tmp_path / "kafka-logs"
    link.symlink_to(partition.parent)
    ran = run_kdump(["recover", "--as-broker", str(link)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert (partition.parent / f"{RECOVERY_POINT_CHECKPOINT}.kdump-bak").exists()
    assert run_kdump(["verify", str(link)]).exit_code == 0


@pytest.mark.parametrize(
    ("named", "reason"),
    [
        ("log dir", "a symbolic link, not a directory"),  # found inside: never a link
        ("partition", "replaced by another directory while kdump ran"),  # the operator's path
    ],
)
def test_a_partition_swapped_for_a_link_while_kdump_runs_is_refused(
    tmp_path: Path, named: str, reason: str
) -> None:
    """Once kdump has been in a partition directory, every name in it is reached through that
    directory: one swapped for a link to another partition meanwhile is refused."""
    partition, _ = small_damaged_partition(tmp_path / "a")
    other = copy_partition("plain-0", tmp_path / "b")
    before = tree(other)
    swapped: list[Path] = []

    def hook(step: str, path: Path) -> None:
        if step == "dir-synced" and not swapped:
            partition.rename(partition.with_name("moved"))
            partition.symlink_to(other)
            swapped.append(path)

    with pytest.raises(KdumpError) as raised:
        recover_in_process(partition.parent if named == "log dir" else partition, hook)
    assert f"{partition}: {reason}" in str(raised.value)
    assert tree(other) == before


# -- 27.2: owners and modes -------------------------------------------------------------------


def _recover_setup(root: Path) -> Path:
    """A damaged partition (cuts, rebuilt and lost indexes) and a recovery point to clamp."""
    partition, _ = small_damaged_partition(root)
    (partition / "00000000000000000258.index").unlink()  # rebuilt where none is replaced
    (partition.parent / RECOVERY_POINT_CHECKPOINT).write_text(f"0\n1\nplain 0 {10**6}\n")
    return partition


def _rebuild_setup(root: Path) -> Path:
    return copy_partition("plain-0", root)


def _trim_setup(root: Path) -> Path:
    return copy_partition("activeprealloc-0", root)


@AS_ROOT
@pytest.mark.parametrize(
    ("args", "setup"),
    [
        (["recover", "--as-broker", "--index-interval-bytes", INTERVAL], _recover_setup),
        (["rebuild-index", "--index-interval-bytes", INTERVAL], _rebuild_setup),
        (["trim-index", "--include-active"], _trim_setup),
    ],
)
def test_files_written_in_a_log_dir_take_the_brokers_owner_and_mode(
    tmp_path: Path, args: list[str], setup: Callable[[Path], Path]
) -> None:
    """Run as root, the repairs replaced kafka:kafka 0640 files with root:root ones the broker
    could not read (and cut files and backups were 0644)."""
    partition = setup(tmp_path)
    log_dir = partition.parent
    chown_tree(log_dir, KAFKA, 0o640, 0o750)
    before = {p: p.stat().st_ino for p in log_dir.rglob("*")}
    ran = run_kdump([*args, str(log_dir)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    written = [p for p in log_dir.rglob("*") if before.get(p) != p.stat().st_ino]
    assert written, "nothing was written: the test shows nothing"
    if setup is _recover_setup:  # the checkpoint, an index that replaced none, a cut file
        assert log_dir / RECOVERY_POINT_CHECKPOINT in written
        assert partition / "00000000000000000258.index" in written
        assert any(".kdump-cut-" in p.name for p in written)
    assert modes(log_dir) == dict.fromkeys(modes(log_dir), (*KAFKA, 0o640))


@AS_ROOT
def test_a_user_who_cannot_give_the_new_file_its_owner_changes_nothing() -> None:
    """A user who may write the partition but not chown (not root): replacing another user's
    index would leave the broker a file of the wrong owner. Refused, named, nothing changed."""
    with tempfile.TemporaryDirectory() as top:  # pytest's own is root's alone
        os.chmod(top, 0o755)
        _refused_to_nobody(Path(top))


def _refused_to_nobody(top: Path) -> None:
    partition = copy_partition("plain-0", top)
    chown_tree(partition.parent, (NOBODY, NOBODY), 0o666, 0o777)
    index = partition / "00000000000000000000.index"
    os.chown(index, *KAFKA)
    before = tree(partition)

    def recover() -> str:
        recover_in_process(partition)
        return "no error"

    error = as_user(NOBODY, recover)
    assert error == (
        f"{index}: the new file cannot be given the owner {KAFKA[0]}:{KAFKA[1]} of the file it "
        "replaces (run kdump as that user, or as root) (while staging; nothing was changed)"
    )
    assert tree(partition) == before


@pytest.mark.parametrize("option", ["--backup-dir", "--output-dir"])
def test_files_written_elsewhere_keep_the_originals_mode(tmp_path: Path, option: str) -> None:
    """Backups, cut bytes and the output were 0644 whatever the original's mode."""
    partition = _recover_setup(tmp_path)
    for p in [*partition.iterdir(), partition.parent / RECOVERY_POINT_CHECKPOINT]:
        p.chmod(0o640)
    elsewhere = tmp_path / "elsewhere"
    args = ["recover", "--as-broker", "--index-interval-bytes", INTERVAL, option, str(elsewhere)]
    ran = run_kdump([*args, str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    kept = modes(elsewhere)
    assert len(kept) >= 3  # the cut segment's log and indexes at least
    assert {m for _, _, m in kept.values()} == {0o640}
    copies = {k: v for k, v in kept.items() if "kdump-bak" not in k}  # hard links are the files
    assert {(u, g) for u, g, _ in copies.values()} == {(os.geteuid(), os.getegid())}


# -- 27.3: temporary names, output and backup subdirectories ----------------------------------


def test_salvage_never_writes_through_a_file_planted_at_its_temporary_name(
    tmp_path: Path,
) -> None:
    """salvage wrote through `.NAME.kdump-tmp-PID` with open(): a link planted there made it
    overwrite any file."""
    partition = copy_partition("txn-0", tmp_path / "data")
    log = partition / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[400] ^= 0xFF  # inside the first batches: everything after is salvaged
    log.write_bytes(bytes(data))
    out = tmp_path / "out"
    (out / partition.name).mkdir(parents=True)
    victims = []
    for first in range(0, 64):  # wherever the salvaged batches start
        for suffix in (".log", ".jsonl"):
            victim = tmp_path / f"victim-{first}{suffix}"
            victim.write_bytes(b"keep me")
            planted = out / partition.name / f".{first:020d}{suffix}.kdump-tmp-{os.getpid()}"
            planted.symlink_to(victim)
            victims.append(victim)
    ran = run_kdump(["salvage", "--output-dir", str(out), str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert "wrote " in ran.stdout
    assert all(v.read_bytes() == b"keep me" for v in victims)


def _a_link(sub: Path, other: Path) -> str:
    sub.symlink_to(other)
    return "a symbolic link, not a directory: kdump does not write through it"


def _of_another_user(sub: Path, other: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    sub.mkdir()
    os.chown(sub, *KAFKA)
    return (
        f"belongs to uid {KAFKA[0]}, not to this user (uid 0): kdump writes only into "
        "directories of its own; choose another directory"
    )


@pytest.mark.parametrize("option", ["--output-dir", "--backup-dir"])
@pytest.mark.parametrize("situation", [_a_link, _of_another_user])
def test_an_output_or_backup_subdirectory_not_kdumps_own_is_refused(
    tmp_path: Path, option: str, situation: Callable[[Path, Path], str]
) -> None:
    """`OUT/txn-0` a link to another partition: recover overwrote that partition's files. One
    of another user's: that user could put the link there while kdump runs."""
    partition, _ = small_damaged_partition(tmp_path / "a")
    other = copy_partition("plain-0", tmp_path / "b")
    out = tmp_path / "out"
    out.mkdir()
    reason = situation(out / partition.name, other)
    before = tree(tmp_path)
    args = ["recover", "--index-interval-bytes", INTERVAL, option, str(out), str(partition)]
    ran = run_kdump(args)
    staging = " (while staging; nothing was changed)"
    assert (ran.exit_code, ran.stderr) == (3, f"kdump: {out / partition.name}: {reason}{staging}\n")
    assert tree(tmp_path) == before


# -- 27.4: one partition per output subdirectory (28.9: in test_repair_operator) -----------


@pytest.mark.parametrize(
    "args", [["recover", "--output-dir"], ["recover", "--backup-dir"], ["salvage", "--output-dir"]]
)
def test_the_same_partition_name_in_two_log_dirs_is_refused(
    tmp_path: Path, args: list[str]
) -> None:
    """`recover b1/txn-0 b2/txn-0 --output-dir out` kept only b2's output."""
    first = copy_partition("txn-0", tmp_path / "b1")
    second = copy_partition("txn-0", tmp_path / "b2")
    out = tmp_path / "out"
    before = tree(tmp_path)
    ran = run_kdump([*args, str(out), str(first), str(second)])
    assert ran.exit_code == 3, ran.stdout + ran.stderr
    assert ran.stderr == (
        f"kdump: {out / 'txn-0'}: {args[1]} would hold the files of both {first} and {second}: "
        f"run once per log dir, each with its own {args[1]}\n"
    )
    assert tree(tmp_path) == before and not out.exists()


# -- 28.2: what a killed run leaves -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "left"),
    [
        (".00000000000000000000.index.kdump-tmp-4242-9f2c01ab77e3", True),
        (".00000000000000000000.index.kdump-tmp-4242", True),  # before random suffixes
        (".recovery-point-offset-checkpoint.kdump-tmp-17-00aa11bb22cc", True),
        (".00000000000000000032.jsonl.kdump-tmp-99", True),
        ("00000000000000000000.index", False),
        ("00000000000000000000.index.kdump-bak", False),
        ("00000000000000000000.log.kdump-cut-4096", False),
        ("00000000000000000000.index.kdump-tmp-4242", False),  # no leading dot: not ours
        (".00000000000000000000.index.kdump-tmp-", False),
        (".00000000000000000000.index.kdump-tmp-x1", False),
    ],
)
def test_is_kdump_leftover(name: str, left: bool) -> None:
    assert is_kdump_leftover(name) is left


def test_a_killed_runs_leftovers_are_removed_by_the_next_and_named(tmp_path: Path) -> None:
    """A run killed with SIGKILL left `.NAME.kdump-tmp-PID` files, and nothing removed them."""
    new = final_state(tmp_path / "final")
    partition, _ = small_damaged_partition(tmp_path / "killed")
    old = real_files(partition)
    script = KILLER.format(tests=str(Path(__file__).parent))
    child = subprocess.run(
        [sys.executable, "-c", script, str(partition), "3"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    left = sorted(partition / t for t in temp_files(partition))
    assert left and all(is_kdump_leftover(p.name) for p in left)
    lines = [
        f"remove    {p}: a temporary file left by kdump process {child_pid(p)}, which was "
        "stopped before it finished"
        for p in left
    ]
    dry = run_kdump(["recover", "--dry-run", "--as-broker", str(partition)])
    assert dry.stdout.splitlines()[: len(left)] == lines
    assert sorted(partition / t for t in temp_files(partition)) == left
    ran = run_kdump(["recover", "--as-broker", "--index-interval-bytes", INTERVAL, str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines()[: len(left)] == lines
    assert temp_files(partition) == []
    assert real_files(partition) == new
    assert_nothing_lost(partition, old)


def child_pid(path: Path) -> int:
    return int(path.name.rsplit(".kdump-tmp-", 1)[1].split("-")[0])


# -- 28.1: a repair stopped by Ctrl-C or SIGTERM ------------------------------------------------


def recover_in_a_child(partition: Path, signum: int, at_step: int, handler: Any) -> tuple[int, str]:
    """`kdump recover` in a forked child that sends itself ``signum`` at the ``at_step``-th
    step of the repair (its hook): the child's wait status and standard error."""
    err = partition.parent.parent / f"stderr-{signum}-{at_step}"
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            fd = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 (the child exits)
            sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, handler)
            _signal_at_step(signum, at_step)
            sys.argv = ["kdump", "recover", "--as-broker", "--index-interval-bytes", INTERVAL]
            sys.argv.append(str(partition))
            from kdump.cli import main

            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 98
        except BaseException:
            code = 97
        finally:
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status, err.read_text()


def _signal_at_step(signum: int, at_step: int) -> None:
    from kdump.repair import apply

    calls = [0]

    def hook(step: str, path: Path) -> None:
        calls[0] += 1
        if calls[0] == at_step:
            os.kill(os.getpid(), signum)

    real_init = apply.RepairSession.__init__

    def init(self: apply.RepairSession, options: apply.WriteOptions, _: Any = None) -> None:
        real_init(self, options, hook)

    apply.RepairSession.__init__ = init  # type: ignore[method-assign]


def changed_names(partition: Path, old: dict[str, bytes]) -> set[str]:
    now = real_files(partition)
    return {n for n in set(old) | set(now) if now.get(n) != old.get(n)}


SIGNALS = [
    (signal.SIGINT, signal.default_int_handler),
    # kdump's own handler (kdump.cli.main) takes over a default SIGTERM: it raises as well
    (signal.SIGTERM, signal.SIG_DFL),
]


@pytest.mark.parametrize(("signum", "handler"), SIGNALS, ids=["int", "term"])
def test_a_repair_stopped_by_a_signal_says_what_changed_and_a_rerun_finishes(
    tmp_path: Path, signum: int, handler: Any
) -> None:
    """A repair stopped midway printed its ~700 plan lines, then "Aborted.", when nothing had
    changed. Now: before the commit, it rolls back and says nothing changed; during the
    commit, it stops between two files and says how many were done; never a temporary file,
    nor a backup or cut file of a file it did not change."""
    new = final_state(tmp_path / "final")
    steps = steps_of_a_clean_run(tmp_path / "count")
    commit_from = steps.index("dir-synced") + 1
    last_commit_step = max(i for i, s in enumerate(steps, 1) if s != "dir-synced")
    name = signal.Signals(signum).name
    for k in range(1, len(steps) + 1):
        partition, _ = small_damaged_partition(tmp_path / f"stop{k}")
        old = real_files(partition)
        status, err = recover_in_a_child(partition, signum, k, handler)
        lines = err.splitlines()
        stops = [ln for ln in lines if ln.startswith("kdump: stopped") and ln != f"kdump: {name}"]
        stops = [ln for ln in stops if ln != f"kdump: stopped by {name}"]
        if k < last_commit_step:  # the run ends with kdump's one line and 128 + the signal
            assert lines[-1] == f"kdump: stopped by {name}", (k, err)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 128 + signum, err
        assert temp_files(partition) == [], f"step {k} ({steps[k - 1]}) left a temporary file"
        if k < commit_from:
            assert stops == [
                "kdump: stopped before the commit: nothing was changed, and nothing kdump "
                "made is left behind (the lines above are the plan); run the command again to "
                "do it"
            ], (k, err)
            assert real_files(partition) == old
            assert not [n for n in tree(partition) if "kdump" in n]
        elif k < last_commit_step:
            changed = changed_names(partition, old)
            assert len(stops) == 1 and stops[0].startswith(
                f"kdump: stopped by {name} during the commit: {len(changed)} file"
            ), (k, err)
            assert_old_or_new(partition, old, new)
            assert_nothing_lost(partition, old)
            for kept in (n for n in tree(partition) if ".kdump-bak" in n or ".kdump-cut-" in n):
                original = kept.split(".kdump-")[0]
                assert original in changed, f"step {k}: {kept} kept for an unchanged file"
        else:  # the signal came after the last file: the commit was whole
            assert stops == [] and real_files(partition) == new, (k, err)
        recover_in_process(partition)
        assert real_files(partition) == new, f"stopped at step {k} ({steps[k - 1]})"
        assert_nothing_lost(partition, old)
