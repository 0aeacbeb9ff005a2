"""Nothing is ever lost or half-written: dry runs, output dirs, backups, kept cut bytes, every
write or rename failing in turn, the process killed at every step, a running broker's lock,
read-only files, a full disk, missing inputs."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_kdump
from conftest import ORACLE, REPO
from repair_support import copy_partition, cut_and_deleted, damage, tree

from kdump import speedups
from kdump.errors import KdumpError
from kdump.render.repair import REPAIR_LINES
from kdump.repair.plan import Scope, plan_recover, resolve_targets
from kdump.repair.rebuild import IndexConfig
from kdump.repair.runner import RunOptions, run_repair
from kdump.unified_log import local_segments

INTERVAL = "1024"  # plain-0 was written at 4096: at 1024 every index changes


def small_damaged_partition(root: Path) -> tuple[Path, dict[str, int]]:
    """Three segments of plain-0: a bad CRC in the second, a torn tail in the third."""
    partition = copy_partition("plain-0", root)
    for p in partition.iterdir():
        if p.name[:20] > "00000000000000000515":
            p.unlink()
    return partition, damage(partition)


def final_state(root: Path) -> dict[str, bytes]:
    """The real files after a complete, undisturbed `recover`."""
    partition, _ = small_damaged_partition(root)
    ran = run_kdump(["recover", "--as-broker", str(partition), "--index-interval-bytes", INTERVAL])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    return real_files(partition)


def real_files(partition: Path) -> dict[str, bytes]:
    """The files Kafka would load: segment files and snapshots, nothing kdump left beside them."""
    kafka = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
    return {k: v for k, v in tree(partition).items() if k.endswith(kafka) and k[0] != "."}


def assert_old_or_new(partition: Path, old: dict[str, bytes], new: dict[str, bytes]) -> None:
    """Each file holds its old or its new bytes; a file the run deletes is there or gone."""
    got = real_files(partition)
    assert set(new) <= set(got) <= set(old) | set(new)
    for name, data in got.items():
        assert data in (old.get(name), new.get(name)), f"{name} holds neither old nor new bytes"
    segments = {s.base_offset for s in local_segments(partition)}
    assert segments <= {int(n[:20]) for n in old if not n.endswith(".snapshot")}


def assert_nothing_lost(partition: Path, old: dict[str, bytes]) -> None:
    """Every original byte is under its real name, in a backup, or in a log's cut file."""
    files = tree(partition)
    for name, data in old.items():
        now = files.get(name)
        if now == data:
            continue
        if now is None:  # deleted (a segment after the cut, a snapshot past the log end)
            backups = [v for k, v in files.items() if k.startswith(f"{name}.kdump-bak")]
            assert data in backups, f"{name}: deleted and not kept"
            continue
        if name.endswith(".log"):
            cuts = [v for k, v in files.items() if k.startswith(f"{name}.kdump-cut-")]
            assert any(now + cut == data for cut in cuts), f"{name}: cut bytes lost"
        else:
            backups = [v for k, v in files.items() if k.startswith(f"{name}.kdump-bak")]
            assert data in backups, f"{name}: original lost"


def temp_files(partition: Path) -> list[str]:
    return [k for k in tree(partition) if ".kdump-tmp-" in k]


# -- dry run, output dir, backups -------------------------------------------------------------


@pytest.mark.parametrize("command", ["rebuild-index", "recover", "trim-index"])
def test_dry_run_writes_nothing(command: str, tmp_path: Path) -> None:
    partition, _ = small_damaged_partition(tmp_path)
    before = tree(tmp_path)
    ran = run_kdump([command, "--dry-run", str(partition)])
    assert tree(tmp_path) == before
    assert "nothing was written" in ran.stdout


def test_dry_run_shows_entries_bytes_and_cut_points(tmp_path: Path) -> None:
    partition, cuts = small_damaged_partition(tmp_path)
    ran = run_kdump(
        ["recover", "--as-broker", "--dry-run", "--index-interval-bytes", INTERVAL, str(partition)]
    )
    assert ran.exit_code == 0  # recover would fix everything it found
    lines = ran.stdout.splitlines()
    index = next(
        line
        for line in lines
        if line.endswith("00000000000000000000.index: " + line.split(": ", 1)[1])
    )
    assert index.startswith("replace ") and "entries 3 -> " in index and "bytes 24 -> " in index
    log, position, later = cut_and_deleted(cuts)
    size = (partition / log).stat().st_size
    cut = next(line for line in lines if line.startswith("truncate") and log in line)
    assert f"cut at position {position}: {size - position} bytes removed" in cut
    for name in later:  # deleted whole, as recovery deletes every segment after a cut
        gone = next(line for line in lines if line.startswith("delete") and name in line)
        assert "recovery deletes every later segment" in gone
    assert any(line.startswith("error   LOG_CRC_MISMATCH") for line in lines)


def test_rebuild_index_stops_at_the_invalid_batch_and_says_so(tmp_path: Path) -> None:
    partition, cuts = small_damaged_partition(tmp_path)
    logs = dict(sorted((p.name, p.read_bytes()) for p in partition.glob("*.log")))
    ran = run_kdump(["rebuild-index", "--index-interval-bytes", INTERVAL, str(partition)])
    assert ran.exit_code == 2
    for log, position in cuts.items():
        assert f"{log}:{position}" in ran.stdout
    assert dict(sorted((p.name, p.read_bytes()) for p in partition.glob("*.log"))) == logs
    assert run_kdump(["rebuild-index", "--dry-run", str(partition)]).exit_code == 2


def test_output_dir_leaves_the_originals_alone(tmp_path: Path) -> None:
    partition, cuts = small_damaged_partition(tmp_path)
    before = tree(partition)
    out = tmp_path / "out"
    ran = run_kdump(
        [
            "recover",
            "--as-broker",
            "--index-interval-bytes",
            INTERVAL,
            "--output-dir",
            str(out),
            str(partition),
        ]
    )
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert tree(partition) == before
    written = tree(out / partition.name)
    log, position, later = cut_and_deleted(cuts)
    assert written[log] == before[log][:position]
    assert not [n for n in written if n[:20] in {m[:20] for m in later}]
    expected = final_state(tmp_path / "again")
    for name, data in written.items():
        assert data == expected[name]
    assert {n for n in written if n.endswith("index")} == {
        n for n in expected if n.endswith("index")
    }


def test_output_dir_must_not_be_the_partition_itself(tmp_path: Path) -> None:
    partition, _ = small_damaged_partition(tmp_path)
    before = tree(partition)
    ran = run_kdump(
        ["recover", "--as-broker", "--output-dir", str(partition.parent), str(partition)]
    )
    assert ran.exit_code == 3
    assert "output directory is the log dir" in ran.stderr
    assert tree(partition) == before


def test_in_place_keeps_backups_and_cut_bytes(tmp_path: Path) -> None:
    partition, cuts = small_damaged_partition(tmp_path)
    before = tree(partition)
    ran = run_kdump(["recover", "--as-broker", "--index-interval-bytes", INTERVAL, str(partition)])
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    after = tree(partition)
    for name, data in before.items():
        if name.endswith("index"):
            assert after[f"{name}.kdump-bak"] == data
    log, position, later = cut_and_deleted(cuts)
    assert after[log] + after[f"{log}.kdump-cut-{position}"] == before[log]
    for name in later:
        assert name not in after and after[f"{name}.kdump-bak"] == before[name]
    assert_nothing_lost(partition, before)
    assert temp_files(partition) == []
    assert run_kdump(["verify", str(partition), "--index-interval-bytes", INTERVAL]).exit_code == 0


def test_no_backup_and_backup_dir(tmp_path: Path) -> None:
    partition, cuts = small_damaged_partition(tmp_path)
    before = tree(partition)
    ran = run_kdump(
        [
            "recover",
            "--as-broker",
            "--index-interval-bytes",
            INTERVAL,
            "--no-backup",
            str(partition),
        ]
    )
    assert ran.exit_code == 0
    after = tree(partition)
    log, position, later = cut_and_deleted(cuts)
    # replaced files are not kept; cut bytes and the deleted segments are, even so
    kept = {n[:20] for n in after if ".kdump-bak" in n}
    assert kept == {n[:20] for n in later}
    assert after[log] + after[f"{log}.kdump-cut-{position}"] == before[log]

    partition2, cuts2 = small_damaged_partition(tmp_path / "two")
    before2 = tree(partition2)
    backups = tmp_path / "backups"
    ran = run_kdump(
        [
            "recover",
            "--as-broker",
            "--index-interval-bytes",
            INTERVAL,
            "--backup-dir",
            str(backups),
            str(partition2),
        ]
    )
    assert ran.exit_code == 0
    kept = tree(backups / partition2.name)
    assert kept["00000000000000000000.index.kdump-bak"] == before2["00000000000000000000.index"]
    log, position, later = cut_and_deleted(cuts2)
    assert tree(partition2)[log] + kept[f"{log}.kdump-cut-{position}"] == before2[log]
    for name in later:
        assert kept[f"{name}.kdump-bak"] == before2[name]
    assert not [n for n in tree(partition2) if "kdump" in n]


def test_a_second_run_numbers_its_backups(tmp_path: Path) -> None:
    partition = copy_partition("followerlive-0", tmp_path)
    index = partition / "00000000000000000000.index"
    original = index.read_bytes()
    assert run_kdump(["rebuild-index", str(partition)]).exit_code == 0
    rebuilt = index.read_bytes()
    assert (
        run_kdump(["rebuild-index", "--index-interval-bytes", "100", str(partition)]).exit_code == 0
    )
    assert (partition / f"{index.name}.kdump-bak").read_bytes() == original
    assert (partition / f"{index.name}.kdump-bak.1").read_bytes() == rebuilt


# -- failures at every step -------------------------------------------------------------------


FAULTY = ("open", "write", "pread", "fsync", "replace", "link", "ftruncate")


class Faults:
    """Make the n-th call to any of os.open/write/pread/fsync/replace/link/ftruncate fail; a
    failing write first writes half of what it was given (a torn temporary file)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fail_at: int) -> None:
        self.calls, self.fail_at, self.failed = 0, fail_at, False
        for name in FAULTY:
            monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.calls == self.fail_at:
                self.failed = True
                if name == "write" and len(args[1]) > 1:
                    real(args[0], bytes(args[1][: len(args[1]) // 2]))
                raise OSError(errno.EIO, f"injected failure of os.{name}")
            return real(*args, **kwargs)

        return call


def recover_in_process(partition: Path, hook: Any = None) -> None:
    targets = resolve_targets([str(partition)])
    config = IndexConfig(int(INTERVAL))
    run_repair(
        targets,
        plan_recover(targets, config, scope=Scope.BROKER),
        RunOptions(broker_startup=True),  # as `kdump recover` does
        config,
        lambda line, err: None,
        REPAIR_LINES,
        hook,
    )


def test_a_segments_new_files_are_all_written_then_fsynced_each_before_any_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Staging writes a segment's new files and starts their write-back, then fsyncs them (one
    journal commit covers them all); every one is durable, with its whole content, before the
    commit renames the first."""
    partition, _ = small_damaged_partition(tmp_path)
    events: list[tuple[str, str]] = []

    def name_of(fd: int) -> str:
        return os.readlink(f"/proc/self/fd/{fd}")

    real_fsync, real_replace, real_start = os.fsync, os.replace, speedups.start_writeback

    def fsync(fd: int) -> None:
        path = name_of(fd)
        real_fsync(fd)
        events.append(("fsync", path))

    def start_writeback(fd: int) -> None:
        events.append(("start", name_of(fd)))
        real_start(fd)

    def replace(src: str, dst: str, **kwargs: Any) -> None:
        events.append(("rename", src))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(speedups, "start_writeback", start_writeback)
    recover_in_process(partition)
    started = [path for step, path in events if step == "start"]
    temps = [p for p in started if ".kdump-tmp-" in p]
    assert len(temps) >= 4, events  # two segments' indexes at least
    names = {os.path.basename(p) for p in temps}
    first_rename = next(
        i for i, (step, path) in enumerate(events) if step == "rename" and path in names
    )
    for path in temps:
        start = events.index(("start", path))
        synced = events.index(("fsync", path))
        assert start < synced < first_rename, (path, events)
    # a segment's files all written before the first of them is fsynced
    first, second = temps[0], temps[1]
    assert events.index(("start", second)) < events.index(("fsync", first)), events
    assert final_state(tmp_path / "final") == real_files(partition)


def test_start_writeback_leaves_the_file_as_written(tmp_path: Path) -> None:
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.write(b"x" * 100_000)
        f.flush()
        speedups.start_writeback(f.fileno())
        native = speedups.native()
        if native is not None and sys.platform == "linux":
            assert native.start_writeback(f.fileno()) == 0
    assert path.read_bytes() == b"x" * 100_000


def test_every_os_call_failing_in_turn_leaves_old_or_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new = final_state(tmp_path / "final")
    n, failures_in_staging, failures_in_commit = 0, 0, 0
    while True:
        n += 1
        partition, _ = small_damaged_partition(tmp_path / f"run{n}")
        old = real_files(partition)
        with monkeypatch.context() as m:
            faults = Faults(m, n)
            try:
                recover_in_process(partition)
                error = None
            except KdumpError as e:
                error = str(e)
        if not faults.failed:
            assert real_files(partition) == new
            break
        assert error is not None, f"failure {n} went unnoticed"
        assert_old_or_new(partition, old, new)
        assert_nothing_lost(partition, old)
        assert temp_files(partition) == [], f"failure {n} left a temporary file"
        if "nothing was changed" in error:
            failures_in_staging += 1
            assert real_files(partition) == old
            assert not [k for k in tree(partition) if "kdump" in k]
        else:
            failures_in_commit += 1
        recover_in_process(partition)  # a later run finishes the job
        assert real_files(partition) == new
        assert_nothing_lost(partition, old)
        shutil.rmtree(tmp_path / f"run{n}")
    print(f"{n - 1} injected failures: {failures_in_staging} staging, {failures_in_commit} commit")
    assert failures_in_staging > 10 and failures_in_commit > 5


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_repair_safety import recover_in_process
    from pathlib import Path
    kill_at, calls = int(sys.argv[2]), [0]
    def hook(step, path):
        calls[0] += 1
        if calls[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    recover_in_process(Path(sys.argv[1]), hook)
    print("steps", calls[0])
    """
)


def steps_of_a_clean_run(root: Path) -> list[str]:
    partition, _ = small_damaged_partition(root)
    steps: list[str] = []
    recover_in_process(partition, lambda step, path: steps.append(step))
    return steps


def test_killed_at_every_step_leaves_old_or_new(tmp_path: Path) -> None:
    new = final_state(tmp_path / "final")
    steps = steps_of_a_clean_run(tmp_path / "count")
    assert {"temp-written", "backup", "cut-saved", "dir-synced", "replaced", "truncated"} <= set(
        steps
    )
    script = KILLER.format(tests=str(Path(__file__).parent))
    print(f"{len(steps)} steps: {sorted(set(steps))}")
    for k in range(1, len(steps) + 1):
        partition, _ = small_damaged_partition(tmp_path / f"kill{k}")
        old = real_files(partition)
        child = subprocess.run(
            [sys.executable, "-c", script, str(partition), str(k)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=REPO,
        )
        assert child.returncode == -signal.SIGKILL, child.stderr
        assert_old_or_new(partition, old, new)
        assert_nothing_lost(partition, old)
        leftovers = temp_files(partition)
        assert all(Path(t).name.startswith(".") for t in leftovers)
        recover_in_process(partition)
        assert real_files(partition) == new, f"killed at step {k} ({steps[k - 1]})"
        assert_nothing_lost(partition, old)
        shutil.rmtree(tmp_path / f"kill{k}")


# -- the broker's lock ------------------------------------------------------------------------

LOCKER = textwrap.dedent(
    """
    import fcntl, sys, time
    f = open(sys.argv[1], "r+")
    if sys.argv[2] == "lockf":
        fcntl.lockf(f, fcntl.LOCK_EX)   # what FileChannel.tryLock does on Linux (fcntl F_SETLK)
    else:
        fcntl.flock(f, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(120)
    """
)


@pytest.fixture(params=["lockf", "flock"])
def held_lock(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, int, str]]:
    partition = copy_partition("followerlive-0", tmp_path)
    lock = partition.parent / ".lock"
    lock.write_bytes(b"")
    child = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(lock), request.param], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        yield partition, child.pid, request.param
    finally:
        child.kill()
        child.wait()


def test_a_held_log_dir_lock_refuses(held_lock: tuple[Path, int, str]) -> None:
    partition, pid, kind = held_lock
    before = tree(partition)
    for command in ("rebuild-index", "recover", "trim-index"):
        ran = run_kdump(
            [command, str(partition), "--include-active"][: 3 if command == "trim-index" else 2]
        )
        assert ran.exit_code == 3, ran.stdout
        assert "locked by" in ran.stderr and "--force" in ran.stderr
        assert tree(partition) == before
    ran = run_kdump(["rebuild-index", str(partition)])
    holder, stop = (
        ("(a running Kafka broker?)", "the broker")
        if kind == "lockf"
        else ("with flock (a broker locks with fcntl: another program?)", "it")
    )
    refusal = (
        f"kdump: {partition.parent / '.lock'}: locked by process {pid} {holder}: refusing to "
        f"modify files under {partition.parent}; stop {stop} first, or use --force\n"
    )
    assert ran.stderr == refusal
    # a dry run says what the run would (it exited 0 and said nothing: issue 28 point 10)
    dry = run_kdump(["recover", "--dry-run", str(partition)])
    assert (dry.exit_code, dry.stdout, dry.stderr) == (3, "", refusal)
    out = partition.parent.parent / "out"
    assert run_kdump(["rebuild-index", "--output-dir", str(out), str(partition)]).exit_code == 0
    assert tree(partition) == before


def test_what_makes_a_repair_refuse_verify_reports(held_lock: tuple[Path, int, str]) -> None:
    """Issue 28 point 10: a lock held with flock made recover refuse while verify said nothing;
    both now ask kdump.lock.who_holds."""
    partition, pid, kind = held_lock
    ran = run_kdump(["verify", "--format", "json", str(partition)])
    (locked,) = [f for f in json.loads(ran.stdout)["findings"] if f["code"] == "LOG_DIR_LOCKED"]
    assert locked["path"] == str(partition.parent / ".lock")
    assert locked["message"].startswith(f"held by process {pid} ")
    assert ("flock" in locked["message"]) == (kind == "flock")


def test_force_goes_on_and_warns_loudly(held_lock: tuple[Path, int, str]) -> None:
    partition, pid, _ = held_lock
    before = tree(partition)
    ran = run_kdump(["rebuild-index", "--force", str(partition)])
    assert ran.exit_code == 0
    holder = f"process {pid}"  # /proc/locks names flock's holder too
    assert ran.stderr == (
        f"kdump: WARNING: --force: {partition.parent / '.lock'} is held by {holder} (a running "
        f"Kafka broker?); modifying files under {partition.parent} anyway. A running broker "
        "does not see these changes: it may overwrite them, serve stale data or fail\n"
    )
    assert tree(partition) != before
    assert_nothing_lost(partition, before)


def test_a_free_lock_is_taken_and_released(tmp_path: Path) -> None:
    partition = copy_partition("followerlive-0", tmp_path)
    (partition.parent / ".lock").write_bytes(b"")
    assert run_kdump(["rebuild-index", str(partition)]).exit_code == 0
    import fcntl

    with open(partition.parent / ".lock", "r+") as f:  # released: a broker could start now
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


# -- bad inputs and I/O errors ----------------------------------------------------------------


def test_read_only_index_file(tmp_path: Path) -> None:
    partition = copy_partition("followerlive-0", tmp_path)
    target = partition / "00000000000000001583.timeindex"
    target.chmod(0o444)
    before = tree(partition)
    ran = run_kdump(["rebuild-index", str(partition)])
    assert ran.exit_code == 3
    assert ran.stderr.strip() == f"kdump: {target}: read-only: nothing was changed"
    assert tree(partition) == before


def test_read_only_directory(tmp_path: Path) -> None:
    partition = copy_partition("followerlive-0", tmp_path)
    before = tree(partition)
    partition.chmod(0o555)
    try:
        ran = run_kdump(["rebuild-index", str(partition)])
    finally:
        partition.chmod(0o755)
    assert ran.exit_code == 3
    assert ran.stderr.strip() == f"kdump: {partition}: read-only: nothing was changed"
    assert tree(partition) == before


def test_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partition, _ = small_damaged_partition(tmp_path)
    before = tree(partition)
    real_write = os.write

    def no_space(fd: int, data: Any) -> int:
        if len(data) > 4:
            real_write(fd, bytes(data[:4]))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", no_space)
    ran = run_kdump(["recover", "--as-broker", str(partition)])
    monkeypatch.undo()
    assert ran.exit_code == 3
    assert len(ran.stderr.strip().splitlines()) == 1
    assert "No space left on device (while staging; nothing was changed)" in ran.stderr
    assert tree(partition) == before


def test_missing_log(tmp_path: Path) -> None:
    partition = copy_partition("plain-0", tmp_path)
    (partition / "00000000000000000258.log").unlink()
    before = tree(partition)
    for command in ("rebuild-index", "recover", "trim-index"):
        ran = run_kdump([command, str(partition / "00000000000000000258.index")])
        assert ran.exit_code == 3
        assert ran.stderr.strip() == (
            f"kdump: {partition / '00000000000000000258.log'}: no such file: the segment's .log "
            "is missing"
        )
        ran = run_kdump([command, str(partition / "00000000000000000258.log")])
        assert ran.exit_code == 3 and "no such file" in ran.stderr
    assert tree(partition) == before
    ran = run_kdump(["rebuild-index", "--dry-run", str(partition)])  # whole dir: reported, skipped
    assert "INDEX_ORPHAN" in ran.stdout


def test_not_a_kafka_path(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    ran = run_kdump(["recover", "--as-broker", str(tmp_path / "notes.txt")])
    assert ran.exit_code == 3 and ran.stderr.startswith("kdump: ")


def test_the_oracle_fixtures_are_never_modified() -> None:
    """Every test above works on copies."""
    assert not [p for p in ORACLE.rglob("*") if "kdump" in p.name]
