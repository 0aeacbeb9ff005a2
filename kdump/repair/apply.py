"""Writing a repair plan without ever leaving a half-written file under a real name.

In place, in two phases:

1. stage (per segment, as plans arrive): each new index file is written to a temporary file in
   its own directory (``.NAME.kdump-tmp-PID-RANDOM``: no segment suffix, so neither Kafka nor
   kdump takes it for a segment file) and fsynced; the original gets a backup (a hard link
   ``NAME.kdump-bak``, or a copy under --backup-dir); the bytes a log loses are copied to
   ``NAME.log.kdump-cut-POSITION`` and fsynced. A failure or an interruption here removes
   everything staged: nothing has changed.
2. commit: the directories are fsynced (backups and cut files are durable first), each
   temporary file is renamed over its original (atomic), the directories are fsynced again, the
   files that go are deleted (the segments after a cut, kept as backups), and only then are the
   logs truncated (``ftruncate`` + fsync). The new indexes already describe the cut log, and
   they are equally right for the uncut one. Ctrl-C and SIGTERM are held back
   meanwhile (kdump.repair.interrupt): the commit stops between two files, and what was not
   done yet is left as it was, with no backup or cut file of its own.

At every instant the real name holds the old file or the complete new one. ``hook(step, path)``
is called after each step (``temp-written``, ``backup``, ``cut-saved``, ``dir-synced``,
``replaced``, ``deleted``, ``truncated``, ``renamed``), for progress and for the tests that
interrupt each step.

Every file is reached as kdump.repair.files says (no link followed, the directory examined,
the inode planned), and a new file takes the owner, group and mode of the file it replaces
(or of its segment's log); backups and cut bytes keep the original's mode.

With an output directory the originals are not touched: new files (and the kept part of a cut
log) go to ``DIR/<partition dir name>/`` by the same temporary-file-and-rename route.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kdump import speedups
from kdump.errors import InputError, KdumpError, LockHeldError, RepairError
from kdump.format.names import (
    BACKUP_SUFFIX,
    CUT_SUFFIX,
    LOCK_FILE,
    is_kdump_leftover,
    leftover_pid,
)
from kdump.lock import LogDirLock, lock_log_dir
from kdump.repair.files import (
    LocalPartition,
    Ownership,
    create_temp,
    open_directory,
    open_regular,
    own_subdir,
    refuse_output_inside,
    regular_lstat,
)
from kdump.repair.interrupt import signals_held
from kdump.repair.plan import LOG, FileChange, FileState, SegmentPlan

Hook = Callable[[str, Path], None]
COPY_CHUNK = 1 << 20
CHANGED = "changed since it was read; nothing was changed, run again"


@dataclass(frozen=True)
class WriteOptions:
    output_dir: Path | None = None
    """Write the new files under DIR/<partition>/ and leave the originals alone."""
    backup_dir: Path | None = None
    """Keep backups and cut bytes under DIR/<partition>/ instead of beside the originals."""
    backup: bool = True
    """Keep each replaced original (--no-backup turns this off; cut log bytes are always kept)."""


def refuse_side_dir(
    directory: Path, option: str, targets: list[LocalPartition], log_dirs: bool = False
) -> None:
    """An --output-dir or --backup-dir (``option``) a run may use: outside the broker's data,
    and with one ``DIR/<name>/`` per directory it holds files of (the partitions, and with
    ``log_dirs`` their log dirs). The same partition name in two log dirs is refused rather
    than laid out by log dir: ``DIR/<partition>/`` stays a partition directory a broker can be
    given back, and nothing from one broker lands beside another's."""
    refuse_output_inside(directory, targets, option.strip("-").replace("-dir", " directory"))
    sources: dict[str, set[str]] = {}
    for target in targets:
        for d in (target.path, target.log_dir) if log_dirs else (target.path,):
            sources.setdefault(d.name, set()).add(os.path.realpath(d))
    for name, dirs in sources.items():
        if len(dirs) > 1:
            first, second = sorted(dirs)[:2]
            raise InputError(
                str(directory / name),
                f"{option} would hold the files of both {first} and {second}: run once per "
                f"log dir, each with its own {option}",
            )


@dataclass
class Written:
    change: FileChange
    path: Path
    """Where the new content is (the original's path in place)."""
    backup: Path | None = None
    cut: Path | None = None
    """Logs: the file holding the bytes cut off."""


@dataclass(frozen=True)
class StagedFile:
    """A new file written under a temporary name, waiting for the commit."""

    change: FileChange
    written_to: Path
    final: Path


@dataclass
class _Staged:
    written: Written
    temp: Path | None = None
    """The temporary file renamed over ``written.path`` at commit (None for a truncation)."""
    started: bool = False
    """The commit began this file's step: its backup and cut bytes are kept whatever comes."""


class _Stopped(Exception):
    """A signal came during the commit: it stops before the next file."""


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def _where(e: OSError | KdumpError, path: Path) -> tuple[str | Path, str]:
    """The file an error is about (its own, else ``path``) and why."""
    if isinstance(e, OSError):
        return path, _reason(e)
    return e.path or path, e.reason


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _copy(source: int, target: int, start: int, end: int, name: Path) -> None:
    pos = start
    while pos < end:
        chunk = os.pread(source, min(COPY_CHUNK, end - pos), pos)
        if not chunk:
            raise OSError(errno.EIO, f"{name} ended at {pos}, expected {end}")
        _write_all(target, chunk)
        pos += len(chunk)


def _free_name(dir_fd: int, name: str) -> str:
    """``name``, or ``name.1``, ``name.2``... whichever does not exist yet in ``dir_fd``."""

    def exists(candidate: str) -> bool:
        try:
            os.lstat(candidate, dir_fd=dir_fd)
        except FileNotFoundError:
            return False
        return True

    n, candidate = 0, name
    while exists(candidate):
        n += 1
        candidate = f"{name}.{n}"
    return candidate


def _is_read_only(path: Path) -> bool:
    """No write permission: by the mode bits (which root ignores) or for this user."""
    st = os.stat(path)
    return not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(
        path, os.W_OK
    )


def _state_in(dir_fd: int, path: Path) -> FileState | None:
    """The state of the file ``path`` names in ``dir_fd``, its directory."""
    st = regular_lstat(path.name, dir_fd, path)
    return None if st is None else FileState.from_stat(st)


class RepairSession:
    """Stages plans as they come, then commits them all; a context manager that rolls back
    whatever was staged but not committed, and releases the log dir locks."""

    def __init__(self, options: WriteOptions, hook: Hook | None = None) -> None:
        self.options = options
        self.hook = hook or (lambda step, path: None)
        self.staged: list[_Staged] = []
        self._unsynced: list[tuple[int, _Staged]] = []
        """Files stage() has written but not fsynced yet (their descriptors)."""
        self.created: list[Path] = []
        """Backups and cut files made while staging: removed on rollback."""
        self.dirs: set[Path] = set()
        """Directories with new entries: fsynced at commit."""
        self.touched: set[Path] = set()
        """Directories this run may have made a temporary file in."""
        self.trusted: set[Path] = set()
        """Directories the operator named, which may be links (see ``trust``)."""
        self.identity: dict[Path, tuple[int, int]] = {}
        """(device, inode) of each directory when first opened: one swapped since is refused."""
        self.locks: list[LogDirLock] = []
        self.deleting: set[Path] = set()
        """Files this run deletes: their names are free for a rename (deletions go first)."""
        self.committed = False
        self.stopped = False
        """The commit stopped at a signal, before every file was done."""

    def __enter__(self) -> RepairSession:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if not self.committed:
                self.rollback()
        finally:
            for lock in self.locks:
                lock.release()
            self.locks = []

    # -- locks -------------------------------------------------------------------------------

    def lock_log_dirs(
        self, log_dirs: Iterable[Path], force: bool, warn: Callable[[str], None]
    ) -> None:
        """Take each log dir's .lock; a held one refuses the run unless ``force``."""
        for log_dir in sorted(set(log_dirs)):
            try:
                lock = lock_log_dir(log_dir)
            except LockHeldError as e:
                if not force:
                    raise
                who = f"process {e.pid}" if e.pid else "another process"
                warn(
                    f"WARNING: --force: {e.path} is held by {who} (a running Kafka broker?); "
                    f"modifying files under {log_dir} anyway. A running broker does not see "
                    "these changes: it may overwrite them, serve stale data or fail"
                )
                continue
            except OSError as e:
                raise RepairError(log_dir / LOCK_FILE, _reason(e)) from None
            if lock is not None:
                self.locks.append(lock)

    # -- directories -------------------------------------------------------------------------

    def trust(self, directories: Iterable[Path]) -> None:
        """Directories the operator named (log dirs, partitions named on their own): reached
        through links, as /kafka-logs often is. Those found inside them never are."""
        self.trusted.update(directories)

    @contextmanager
    def _dir(self, path: Path) -> Iterator[int]:
        """A descriptor of the directory ``path``: the one this run first met under that name
        (not a link unless trusted, not swapped since)."""
        if path in self.trusted:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            fd = open_directory(path)
        try:
            st = os.fstat(fd)
            seen = self.identity.setdefault(path, (st.st_dev, st.st_ino))
            if seen != (st.st_dev, st.st_ino):
                raise RepairError(path, "replaced by another directory while kdump ran: " + CHANGED)
            yield fd
        finally:
            os.close(fd)

    def _subdir(self, root: Path, source: Path) -> Path:
        """``root/<source's name>``, kdump's own (files.own_subdir), its identity noted."""
        path = root / source.name
        if path not in self.identity:
            st = own_subdir(root, source)
            self.identity[path] = (st.st_dev, st.st_ino)
        return path

    def _side_dir(self, plan: SegmentPlan) -> Path:
        """Where backups and cut files go."""
        if self.options.backup_dir is None:
            return plan.segment.directory
        return self._subdir(self.options.backup_dir, plan.segment.directory)

    def _fsync_dir(self, path: Path) -> None:
        with self._dir(path) as fd:
            os.fsync(fd)

    # -- owners ------------------------------------------------------------------------------

    def _owner(self, plan: SegmentPlan, change: FileChange, where: Path) -> Ownership:
        """Who owns a new file in ``where``: the file it replaces (else its segment's log) in
        the broker's own directory; elsewhere (output, backup dirs) whoever runs kdump, with
        that file's mode."""
        model = None
        for path in (change.path, plan.segment.log_path):
            model = regular_lstat(path)
            if model is not None:
                break
        owner = Ownership.like(model if model is not None else os.stat(change.path.parent))
        return owner if where == plan.segment.directory else owner.mine()

    # -- staging -----------------------------------------------------------------------------

    def stage(
        self, plan: SegmentPlan, changes: Iterable[FileChange] | None = None
    ) -> list[StagedFile]:
        """Write the plan's new files (``changes``, default: those that differ) to temporary
        names, with backups and cut bytes; the files written, for checking."""
        first = len(self.staged)
        try:
            for change in plan.changed if changes is None else changes:
                try:
                    self._stage_change(plan, change)
                except (OSError, InputError) as e:
                    where, reason = _where(e, change.path)
                    raise RepairError(
                        where, f"{reason} (while staging; nothing was changed)"
                    ) from None
            self._sync_written()
        finally:
            self._close_unsynced()
        return [
            StagedFile(s.written.change, s.temp, s.written.path)
            for s in self.staged[first:]
            if s.temp is not None
        ]

    def _stage_change(self, plan: SegmentPlan, change: FileChange) -> None:
        if self.options.output_dir is not None:
            self._stage_output(plan, change)
            return
        self._check_unchanged(change)
        self._check_writable(change.path)
        if change.kind == LOG:
            self._stage_cut(plan, change)
            return
        if change.rename_to is not None:
            # deletions commit before renames: a name this run deletes is free by then
            if os.path.lexists(change.rename_to) and change.rename_to not in self.deleting:
                raise RepairError(change.rename_to, "exists: nothing was changed")
            self.staged.append(_Staged(Written(change, change.path)))
            return
        if change.delete:
            self.deleting.add(change.path)
            # a deleted file is always kept, as cut bytes are
            backup = self._backup(plan, change)
            self.staged.append(_Staged(Written(change, change.path, backup=backup)))
            return
        owner = self._owner(plan, change, plan.segment.directory)
        staged = self._stage_content(change, change.path, owner)
        if change.old is not None and self.options.backup:
            staged.written.backup = self._backup(plan, change)

    def _stage_output(self, plan: SegmentPlan, change: FileChange) -> None:
        assert self.options.output_dir is not None
        out = self._subdir(self.options.output_dir, plan.segment.directory)
        if change.delete:
            return
        owner = self._owner(plan, change, out)
        if change.rename_to is not None:
            size = change.old.size if change.old is not None else 0
            self._stage_copy(change, out / change.rename_to.name, 0, size, owner)
        elif change.kind == LOG:
            self._stage_copy(change, out / change.path.name, 0, change.truncate_at or 0, owner)
        else:
            self._stage_content(change, out / change.path.name, owner)

    def _check_unchanged(self, change: FileChange) -> None:
        if FileState.of(change.path) != change.old:
            raise RepairError(change.path, CHANGED)

    def _check_writable(self, path: Path) -> None:
        directory = path.parent
        if _is_read_only(directory) or (path.exists() and _is_read_only(path)):
            where = path if path.exists() and _is_read_only(path) else directory
            raise RepairError(where, "read-only: nothing was changed")

    def _stage_content(self, change: FileChange, target: Path, owner: Ownership) -> _Staged:
        content = change.content
        assert content is not None
        # Only the file's description is kept once it is staged: memory stays flat.
        staged = _Staged(Written(dataclasses.replace(change, content=None), target))
        self.staged.append(staged)
        self._write_temp(staged, owner, lambda fd: _write_all(fd, content))
        return staged

    def _stage_copy(
        self, change: FileChange, target: Path, start: int, end: int, owner: Ownership
    ) -> None:
        staged = _Staged(Written(change, target))
        self.staged.append(staged)
        self._write_temp(staged, owner, self._copy_from(change, start, end))

    def _write_temp(self, staged: _Staged, owner: Ownership, fill: Callable[[int], None]) -> None:
        """The new content of ``staged`` in a temporary file beside its final name."""
        target = staged.written.path
        self.touched.add(target.parent)
        with self._dir(target.parent) as d:
            fd, name = create_temp(d, target.name, owner)
            staged.temp = target.parent / name
            try:
                fill(fd)
            except BaseException:
                os.close(fd)
                raise
        # its write-back starts now, its fsync waits for the plan's other files (stage): the
        # disk writes them meanwhile, and one journal commit covers them all
        speedups.start_writeback(fd)
        self._unsynced.append((fd, staged))
        self.dirs.add(target.parent)

    def _sync_written(self) -> None:
        """fsync the files this stage() wrote, in order: each is durable before a rename."""
        while self._unsynced:
            fd, staged = self._unsynced[0]
            try:
                os.fsync(fd)
            except OSError as e:
                where, reason = _where(e, staged.written.change.path)
                raise RepairError(where, f"{reason} (while staging; nothing was changed)") from None
            finally:
                self._unsynced.pop(0)
                os.close(fd)
            assert staged.temp is not None
            self.hook("temp-written", staged.temp)

    def _close_unsynced(self) -> None:
        """The files a failed stage() wrote: closed, removed with the rollback."""
        while self._unsynced:
            os.close(self._unsynced.pop()[0])

    def _copy_from(self, change: FileChange, start: int, end: int) -> Callable[[int], None]:
        """Fill a file with bytes ``start..end`` of ``change.path``, the very file planned."""

        def fill(fd: int) -> None:
            with self._dir(change.path.parent) as d:
                source, st = open_regular(change.path.name, os.O_RDONLY, d, change.path)
            try:
                if FileState.from_stat(st) != change.old:
                    raise RepairError(change.path, CHANGED)
                _copy(source, fd, start, end, change.path)
            finally:
                os.close(source)

        return fill

    def _keep_file(
        self, side: Path, name: str, owner: Ownership, fill: Callable[[int], None]
    ) -> Path:
        """Write a new side file (backup copy, cut bytes) by temp file and rename."""
        self.touched.add(side)
        with self._dir(side) as d:
            fd, temp = create_temp(d, name, owner)
            final = None
            try:
                try:
                    fill(fd)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                final = _free_name(d, name)
                os.replace(temp, final, src_dir_fd=d, dst_dir_fd=d)
                self.created.append(side / final)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=d)
                raise
        self.dirs.add(side)
        return side / final

    def _backup(self, plan: SegmentPlan, change: FileChange) -> Path:
        path, side = change.path, self._side_dir(plan)
        name = f"{path.name}{BACKUP_SUFFIX}"
        with self._dir(path.parent) as s, self._dir(side) as d:
            backup = side / _free_name(d, name)
            try:
                os.link(path.name, backup.name, src_dir_fd=s, dst_dir_fd=d, follow_symlinks=False)
                self.created.append(backup)
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                    raise
                linked = False
            else:
                linked = True
                if _state_in(d, backup) != change.old:
                    raise RepairError(path, CHANGED)  # the link is removed with the rollback
            self.dirs.add(side)
        if not linked:
            assert change.old is not None
            owner = self._owner(plan, change, side)
            backup = self._keep_file(side, name, owner, self._copy_from(change, 0, change.old.size))
        self.hook("backup", backup)
        return backup

    def _stage_cut(self, plan: SegmentPlan, change: FileChange) -> None:
        assert change.truncate_at is not None and change.old is not None
        at = change.truncate_at
        side = self._side_dir(plan)
        cut = self._keep_file(
            side,
            f"{change.path.name}{CUT_SUFFIX}{at}",
            self._owner(plan, change, side),
            self._copy_from(change, at, change.old.size),
        )
        self.staged.append(_Staged(Written(change, change.path, cut=cut)))
        self.hook("cut-saved", cut)

    # -- commit ------------------------------------------------------------------------------

    def commit(self, stop: Callable[[], bool] = lambda: False) -> list[Written]:
        """Rename every staged file over its original, delete what goes, then cut the logs;
        ``stop()`` true
        before a file (a signal held back, kdump.repair.interrupt) ends the commit there."""
        self.committed = True
        done: list[Written] = []
        current: Path | None = None
        in_place = self.options.output_dir is None

        def begin(s: _Staged, path: Path) -> None:
            nonlocal current
            if stop():
                raise _Stopped
            current, s.started = path, True

        try:
            for d in sorted(self.dirs):
                current = d
                self._fsync_dir(d)
            self.hook("dir-synced", Path("."))
            renamed_dirs: set[Path] = set()
            for s in self.staged:
                if s.temp is None:
                    continue
                begin(s, s.written.path)
                self._replace(s, check=in_place)
                done.append(s.written)
                renamed_dirs.add(s.written.path.parent)
                self.hook("replaced", s.written.path)
            for d in sorted(renamed_dirs):
                current = d
                self._fsync_dir(d)
            self.hook("dir-synced", Path("."))
            changed_dirs: set[Path] = set()
            # deletions first: the segments after a cut go before the cut is made, so a run
            # stopped between the two leaves a log its rerun cuts the same way (the damaged
            # batch still there), never a cut log whose later segments then look healthy
            for step, applies in (
                ("deleted", lambda c: c.delete),
                ("truncated", lambda c: c.kind == LOG),
                ("renamed", lambda c: c.rename_to is not None),
            ):
                for s in self.staged:
                    change = s.written.change
                    if not in_place or not applies(change):
                        continue
                    begin(s, change.path)
                    self._finish(step, s)
                    done.append(s.written)
                    changed_dirs.add(change.path.parent)
                    self.hook(step, s.written.path)
            for d in sorted(changed_dirs):
                current = d
                self._fsync_dir(d)
        except _Stopped:
            self.stopped = True
            self._discard_unstarted()
        except (OSError, KdumpError) as e:
            self._discard_unstarted()
            where, reason = _where(e, current or Path("."))
            raise RepairError(
                where,
                f"{reason}; {len(done)} file(s) were already replaced or cut (their backups and "
                "cut bytes kept), every other one is untouched (each holds its old or its "
                "complete new content)",
            ) from None
        return done

    def _replace(self, s: _Staged, check: bool) -> None:
        assert s.temp is not None
        target = s.written.path
        with self._dir(target.parent) as d:
            if check and _state_in(d, target) != s.written.change.old:
                raise RepairError(target, CHANGED)
            os.replace(s.temp.name, target.name, src_dir_fd=d, dst_dir_fd=d)
        s.temp = None

    def _finish(self, step: str, s: _Staged) -> None:
        """Truncate, delete or rename the original of ``s``, the very file planned."""
        change = s.written.change
        path = change.path
        with self._dir(path.parent) as d:
            if step == "truncated":
                assert change.truncate_at is not None
                fd, st = open_regular(path.name, os.O_WRONLY, d, path)
                try:
                    if FileState.from_stat(st) != change.old:
                        raise RepairError(path, CHANGED)
                    os.ftruncate(fd, change.truncate_at)
                    os.fsync(fd)
                finally:
                    os.close(fd)
            elif step == "deleted":
                if _state_in(d, path) != change.old:
                    raise RepairError(path, CHANGED)
                os.unlink(path.name, dir_fd=d)
            else:
                assert change.rename_to is not None and change.old is not None
                now = _state_in(d, path)  # a cut may have shortened it since it was staged
                if now is None or (now.device, now.inode) != (change.old.device, change.old.inode):
                    raise RepairError(path, CHANGED)
                # link, then unlink: never over an existing file
                os.link(
                    path.name,
                    change.rename_to.name,
                    src_dir_fd=d,
                    dst_dir_fd=d,
                    follow_symlinks=False,
                )
                os.unlink(path.name, dir_fd=d)
                s.written.path = change.rename_to

    # -- rollback ----------------------------------------------------------------------------

    def _remove_temps(self) -> None:
        for s in self.staged:
            if s.temp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(s.temp)
            s.temp = None
        # a temporary file made but not yet noted (an interruption in between) has our pid
        for directory in self.touched:
            with contextlib.suppress(OSError, KdumpError), self._dir(directory) as d:
                for name in os.listdir(d):
                    if is_kdump_leftover(name) and leftover_pid(name) == os.getpid():
                        os.unlink(name, dir_fd=d)

    def _remove_created(self, paths: Iterable[Path]) -> None:
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self.created.remove(path)

    def _discard_unstarted(self) -> None:
        """What the commit did not reach stays as it was: its temporary file, backup and cut
        bytes go."""
        unstarted = [s.written for s in self.staged if not s.started]
        side = {p for w in unstarted for p in (w.backup, w.cut) if p is not None}
        self._remove_created([p for p in self.created if p in side])
        self._remove_temps()

    def rollback(self) -> None:
        """Remove what staging made (temporary files, backups, cut files): nothing changed.
        Ctrl-C and SIGTERM wait until it is done."""
        with signals_held():
            self._remove_temps()
            self._remove_created(list(reversed(self.created)))
            self.staged = []


__all__ = [
    "RepairError",
    "RepairSession",
    "StagedFile",
    "WriteOptions",
    "Written",
    "refuse_side_dir",
]
