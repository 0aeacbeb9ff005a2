"""Writing a repair plan without ever leaving a half-written file under a real name.

In place, in two phases:

1. stage (per segment, as plans arrive): each new index file is written to a temporary file in
   its own directory (``.NAME.kdump-tmp-PID``: no segment suffix, so neither Kafka nor kdump
   takes it for a segment file) and fsynced; the original gets a backup (a hard link
   ``NAME.kdump-bak``, or a copy under --backup-dir); the bytes a log loses are copied to
   ``NAME.log.kdump-cut-POSITION`` and fsynced. A failure here removes everything staged:
   nothing has changed.
2. commit: the directories are fsynced (backups and cut files are durable first), each
   temporary file is renamed over its original (atomic), the directories are fsynced again, and
   only then are the logs truncated (``ftruncate`` + fsync). The new indexes already describe
   the cut log, and they are equally right for the uncut one.

At every instant the real name holds the old file or the complete new one. ``hook(step, path)``
is called after each step (``temp-written``, ``backup``, ``cut-saved``, ``dir-synced``,
``replaced``, ``truncated``), for progress and for the tests that interrupt each step.

With an output directory the originals are not touched: new files (and the kept part of a cut
log) go to ``DIR/<partition dir name>/`` by the same temporary-file-and-rename route.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kdump.errors import ExitCode, KdumpError
from kdump.lock import LockHeldError, LogDirLock, lock_log_dir
from kdump.repair.plan import LOG, FileChange, FileState, SegmentPlan
from kdump.repair.salvage import CUT_SUFFIX

Hook = Callable[[str, Path], None]
BACKUP_SUFFIX = ".kdump-bak"
TEMP_MARK = ".kdump-tmp-"
COPY_CHUNK = 1 << 20


class RepairError(KdumpError):
    """A write that could not be done; the message says what state the files are in."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(message, str(path))


@dataclass(frozen=True)
class WriteOptions:
    output_dir: Path | None = None
    """Write the new files under DIR/<partition>/ and leave the originals alone."""
    backup_dir: Path | None = None
    """Keep backups and cut bytes under DIR/<partition>/ instead of beside the originals."""
    backup: bool = True
    """Keep each replaced original (--no-backup turns this off; cut log bytes are always kept)."""


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


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _free_name(path: Path) -> Path:
    """``path``, or ``path.1``, ``path.2``... whichever does not exist yet."""
    if not os.path.lexists(path):
        return path
    n = 1
    while os.path.lexists(f"{path}.{n}"):
        n += 1
    return Path(f"{path}.{n}")


def _temp_path(target: Path) -> Path:
    return target.parent / f".{target.name}{TEMP_MARK}{os.getpid()}"


def _is_read_only(path: Path) -> bool:
    """No write permission: by the mode bits (which root ignores) or for this user."""
    st = os.stat(path)
    return not (st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) or not os.access(
        path, os.W_OK
    )


class RepairSession:
    """Stages plans as they come, then commits them all; a context manager that rolls back
    whatever was staged but not committed, and releases the log dir locks."""

    def __init__(self, options: WriteOptions, hook: Hook | None = None) -> None:
        self.options = options
        self.hook = hook or (lambda step, path: None)
        self.staged: list[_Staged] = []
        self.created: list[Path] = []
        """Backups and cut files made while staging: removed on rollback."""
        self.dirs: set[Path] = set()
        self.locks: list[LogDirLock] = []
        self.committed = False

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
                who = f"process {e.holder}" if e.holder else "another process"
                warn(
                    f"WARNING: --force: {e.path} is held by {who} (a running Kafka broker?); "
                    f"modifying files under {log_dir} anyway. A running broker does not see "
                    "these changes: it may overwrite them, serve stale data or fail"
                )
                continue
            except OSError as e:
                raise RepairError(log_dir / ".lock", _reason(e)) from None
            if lock is not None:
                self.locks.append(lock)

    # -- staging -----------------------------------------------------------------------------

    def stage(
        self, plan: SegmentPlan, changes: Iterable[FileChange] | None = None
    ) -> list[StagedFile]:
        """Write the plan's new files (``changes``, default: those that differ) to temporary
        names, with backups and cut bytes; the files written, for checking."""
        first = len(self.staged)
        for change in plan.changed if changes is None else changes:
            try:
                self._stage_change(plan, change)
            except OSError as e:
                raise RepairError(
                    change.path, f"{_reason(e)} (while staging; nothing was changed)"
                ) from None
        return [
            StagedFile(s.written.change, s.temp, s.written.path)
            for s in self.staged[first:]
            if s.temp is not None
        ]

    def _out_dir(self, plan: SegmentPlan) -> Path:
        assert self.options.output_dir is not None
        out = self.options.output_dir / plan.segment.directory.name
        if out.exists() and os.path.samefile(out, plan.segment.directory):
            raise RepairError(
                out, "the output directory is the partition itself; drop --output-dir"
            )
        return out

    def _side_dir(self, plan: SegmentPlan) -> Path:
        """Where backups and cut files go."""
        if self.options.backup_dir is None:
            return plan.segment.directory
        return self.options.backup_dir / plan.segment.directory.name

    def _stage_change(self, plan: SegmentPlan, change: FileChange) -> None:
        if self.options.output_dir is not None:
            out = self._out_dir(plan)
            os.makedirs(out, exist_ok=True)
            target = out / change.path.name
            if change.delete:
                return
            if change.rename_to is not None:
                size = change.old.size if change.old is not None else 0
                self._stage_copy(change, out / change.rename_to.name, 0, size)
                return
            if change.kind == LOG:
                self._stage_copy(change, target, 0, change.truncate_at or 0)
            else:
                self._stage_content(change, target, 0o644)
            return
        self._check_unchanged(change)
        self._check_writable(change.path)
        if change.kind == LOG:
            self._stage_cut(plan, change)
            return
        if change.rename_to is not None:
            if os.path.lexists(change.rename_to):
                raise RepairError(change.rename_to, "exists: nothing was changed")
            self.staged.append(_Staged(Written(change, change.path)))
            return
        if change.delete:
            # a deleted file is always kept, as cut bytes are
            backup = self._backup(plan, change.path)
            self.staged.append(_Staged(Written(change, change.path, backup=backup)))
            return
        mode = 0o644 if change.old is None else stat.S_IMODE(os.stat(change.path).st_mode)
        staged = self._stage_content(change, change.path, mode)
        if change.old is not None and self.options.backup:
            staged.written.backup = self._backup(plan, change.path)

    def _check_unchanged(self, change: FileChange) -> None:
        if FileState.of(change.path) != change.old:
            raise RepairError(
                change.path, "changed since it was read; nothing was changed, run again"
            )

    def _check_writable(self, path: Path) -> None:
        directory = path.parent
        if _is_read_only(directory) or (path.exists() and _is_read_only(path)):
            where = path if path.exists() and _is_read_only(path) else directory
            raise RepairError(where, "read-only: nothing was changed")

    def _stage_content(self, change: FileChange, target: Path, mode: int) -> _Staged:
        content = change.content
        assert content is not None
        temp = _temp_path(target)
        # Only the file's description is kept once it is staged: memory stays flat.
        staged = _Staged(Written(dataclasses.replace(change, content=None), target), temp)
        self.staged.append(staged)
        self._write_file(temp, mode, lambda fd: _write_all(fd, content))
        self.dirs.add(target.parent)
        self.hook("temp-written", temp)
        return staged

    def _write_file(self, path: Path, mode: int, fill: Callable[[int], None]) -> None:
        if os.path.lexists(path):
            os.unlink(path)  # left by an earlier run that was killed and had our pid
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            fill(fd)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _copy_range(self, source: Path, start: int, end: int) -> Callable[[int], None]:
        def fill(fd: int) -> None:
            src = os.open(source, os.O_RDONLY)
            try:
                pos = start
                while pos < end:
                    chunk = os.pread(src, min(COPY_CHUNK, end - pos), pos)
                    if not chunk:
                        raise OSError(errno.EIO, f"{source} ended at {pos}, expected {end}")
                    _write_all(fd, chunk)
                    pos += len(chunk)
            finally:
                os.close(src)

        return fill

    def _stage_copy(self, change: FileChange, target: Path, start: int, end: int) -> None:
        temp = _temp_path(target)
        self.staged.append(_Staged(Written(change, target), temp))
        self._write_file(temp, 0o644, self._copy_range(change.path, start, end))
        self.dirs.add(target.parent)
        self.hook("temp-written", temp)

    def _keep_file(self, final: Path, fill: Callable[[int], None]) -> Path:
        """Write a new side file (backup copy, cut bytes) by temp file and rename."""
        final.parent.mkdir(parents=True, exist_ok=True)
        temp = _temp_path(final)
        try:
            self._write_file(temp, 0o644, fill)
            os.replace(temp, final)
        except BaseException:
            if os.path.lexists(temp):
                os.unlink(temp)
            raise
        self.created.append(final)
        self.dirs.add(final.parent)
        return final

    def _backup(self, plan: SegmentPlan, path: Path) -> Path:
        side = self._side_dir(plan)
        side.mkdir(parents=True, exist_ok=True)
        backup = _free_name(side / f"{path.name}{BACKUP_SUFFIX}")
        try:
            os.link(path, backup)
            self.created.append(backup)
            self.dirs.add(side)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                raise
            size = os.stat(path).st_size
            self._keep_file(backup, self._copy_range(path, 0, size))
        self.hook("backup", backup)
        return backup

    def _stage_cut(self, plan: SegmentPlan, change: FileChange) -> None:
        assert change.truncate_at is not None and change.old is not None
        at = change.truncate_at
        name = f"{change.path.name}{CUT_SUFFIX}{at}"
        cut = self._keep_file(
            _free_name(self._side_dir(plan) / name),
            self._copy_range(change.path, at, change.old.size),
        )
        self.staged.append(_Staged(Written(change, change.path, cut=cut)))
        self.hook("cut-saved", cut)

    # -- commit ------------------------------------------------------------------------------

    def commit(self) -> list[Written]:
        """Rename every staged file over its original, then cut the logs."""
        self.committed = True
        done: list[Written] = []
        current: Path | None = None
        try:
            for d in sorted(self.dirs):
                current = d
                _fsync_dir(d)
            self.hook("dir-synced", Path("."))
            renamed_dirs: set[Path] = set()
            for s in self.staged:
                if s.temp is None:
                    continue
                current = s.written.path
                if self.options.output_dir is None:
                    self._check_unchanged(s.written.change)
                os.replace(s.temp, s.written.path)
                s.temp = None
                done.append(s.written)
                renamed_dirs.add(s.written.path.parent)
                self.hook("replaced", s.written.path)
            for d in sorted(renamed_dirs):
                current = d
                _fsync_dir(d)
            self.hook("dir-synced", Path("."))
            for s in self.staged:
                change = s.written.change
                if change.kind != LOG or self.options.output_dir is not None:
                    continue
                current = change.path
                self._truncate(change)
                done.append(s.written)
                self.hook("truncated", change.path)
            deleted_dirs: set[Path] = set()
            for s in self.staged:
                change = s.written.change
                if not change.delete or self.options.output_dir is not None:
                    continue
                current = change.path
                self._check_unchanged(change)
                os.unlink(change.path)
                done.append(s.written)
                deleted_dirs.add(change.path.parent)
                self.hook("deleted", change.path)
            for s in self.staged:
                change = s.written.change
                if change.rename_to is None or self.options.output_dir is not None:
                    continue
                current = change.path  # checked when staged; a cut may have shortened it since
                os.link(change.path, change.rename_to)  # never over an existing file
                os.unlink(change.path)
                s.written.path = change.rename_to
                done.append(s.written)
                deleted_dirs.add(change.path.parent)
                self.hook("renamed", change.rename_to)
            for d in sorted(deleted_dirs):
                current = d
                _fsync_dir(d)
        except (OSError, KdumpError) as e:
            self._remove_temps()
            reason = _reason(e) if isinstance(e, OSError) else e.reason
            raise RepairError(
                current or ".",
                f"{reason}; {len(done)} file(s) were already replaced or cut, every other one is "
                "untouched (each holds its old or its complete new content; backups and cut "
                "bytes are kept)",
            ) from None
        return done

    def _truncate(self, change: FileChange) -> None:
        assert change.truncate_at is not None
        self._check_unchanged(change)
        fd = os.open(change.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, change.truncate_at)
            os.fsync(fd)
        finally:
            os.close(fd)

    # -- rollback ----------------------------------------------------------------------------

    def _remove_temps(self) -> None:
        for s in self.staged:
            if s.temp is not None and os.path.lexists(s.temp):
                os.unlink(s.temp)
            s.temp = None

    def rollback(self) -> None:
        """Remove what staging made (temporary files, backups, cut files): nothing changed."""
        self._remove_temps()
        for p in reversed(self.created):
            if os.path.lexists(p):
                os.unlink(p)
        self.created = []
        self.staged = []
