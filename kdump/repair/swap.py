"""A cleaned segment swapped in for the segments it replaces, on disk, as Kafka's log does it
(Cleaner.cleanSegments writes the ``.cleaned`` files, LocalLog.replaceSegments swaps them in,
UnifiedLog.replaceSegments deletes the swallowed segments' producer snapshots), through the
repair layer's session (kdump.repair.apply: the files reached as kdump.repair.files says, the
planned inode checked before a file goes, backups, rollback).

For each cleaned segment (one group of a cleaning):

1. stage: each new file goes to a temporary file in the partition directory (the ``.log`` as the
   cleaner writes it, then ``.index``, ``.timeindex`` and, when it has entries, ``.txnindex``),
   owned like the file it replaces, fsynced, with the replaced segments' last mtime
   (LogSegment.setLastModified); the caller re-checks them with verify's checks; every file
   that goes (the replaced segments' files, the producer snapshots of the segments the group
   swallows) gets its backup (a hard link ``NAME.kdump-bak``, or a copy under --backup-dir),
   once it is checked to be the file planned. An error or a signal here removes all of it:
   nothing changed.
2. swap, with Ctrl-C and SIGTERM held back until it is done (a few renames and fsyncs):
   each temporary file renamed ``NAME.cleaned``; then, as replaceSegments: ``.cleaned`` ->
   ``.swap``, the ``.log`` first; the replaced segments' files deleted; ``.swap`` -> ``NAME``,
   the ``.log`` first; the snapshots deleted. The directory is fsynced after each step.

A process killed at any point leaves what the broker's LogLoader settles (kdump.log_loader;
``kdump recover`` does the same): while a ``.cleaned`` file remains it deletes every ``.swap``
file at or above it and the ``.cleaned`` ones, and the replaced segments stay; once every new
file is a ``.swap`` file it deletes what is left in the offsets the ``.log.swap`` covers and
renames the ``.swap`` files. Either way no record is lost. (Kafka's own run renames the replaced
files ``.deleted`` and deletes them a minute later; kdump deletes them at once, their backups
kept: LogLoader treats the two alike.)
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import KdumpError, RepairError
from kdump.format.names import CLEANED_SUFFIX, SWAP_SUFFIX
from kdump.repair.apply import RepairSession, Written
from kdump.repair.files import Ownership, create_temp, regular_lstat
from kdump.repair.interrupt import signals_held
from kdump.repair.plan import FileChange, FileState, SegmentPlan


@dataclass
class NewFile:
    """A file of the cleaned segment: its final path, and the temporary file holding it."""

    final: Path
    temp: Path


@dataclass
class CleanedSegment:
    """One cleaned segment to swap in: its new files in the order Kafka renames them
    (LogSegment.changeFileSuffixes: the log, then the offset, time and transaction indexes), the
    replaced segments' files and the swallowed segments' snapshots (delete changes)."""

    plan: SegmentPlan
    new: list[NewFile] = field(default_factory=list)
    replaced: list[FileChange] = field(default_factory=list)
    snapshots: list[FileChange] = field(default_factory=list)

    @property
    def directory(self) -> Path:
        return self.plan.segment.directory


class SwapSession(RepairSession):
    """A repair session whose units are cleaned segments (and checkpoint files), each staged,
    then swapped in or committed on its own: a failure or a signal undoes only the unit in
    progress, the earlier ones stay done."""

    # -- staging -----------------------------------------------------------------------------

    def new_file(self, segment: CleanedSegment, final: Path, owner: Ownership) -> tuple[int, Path]:
        """An empty temporary file for ``final`` in its directory, owned by ``owner``: its
        descriptor (the caller writes, fsyncs and closes it) and path. Removed on rollback."""
        directory = final.parent
        self.touched.add(directory)
        with self._dir(directory) as d:
            fd, name = create_temp(d, final.name, owner)
        temp = directory / name
        segment.new.append(NewFile(final, temp))
        self.dirs.add(directory)
        self.hook("temp-created", temp)
        return fd, temp

    def keep(self, segment: CleanedSegment) -> None:
        """Each file that goes checked to be the one planned, and backed up."""
        self.stage(segment.plan, [*segment.replaced, *segment.snapshots])

    # -- the swap ----------------------------------------------------------------------------

    def swap_in(self, segment: CleanedSegment) -> list[Written]:
        """Rename the staged files in, delete what they replace (kdump.repair.swap's steps);
        signals wait until it is done. The files that went, with their backups."""
        done = [s.written for s in self.staged]
        step, current = "swap", segment.directory
        with signals_held():
            try:
                for change in (*segment.replaced, *segment.snapshots):
                    step, current = "check", change.path
                    with self._dir(change.path.parent) as d:
                        self._check_same(d, change)
                self._fsync_all(self.dirs)
                self.committed = True
                for f in segment.new:
                    step, current = "cleaned", f.final
                    self._rename(step, f.temp, _with(f.final, CLEANED_SUFFIX))
                self._fsync_all({segment.directory})
                for f in segment.new:
                    step, current = "swap", f.final
                    self._rename(step, _with(f.final, CLEANED_SUFFIX), _with(f.final, SWAP_SUFFIX))
                self._fsync_all({segment.directory})
                for change in segment.replaced:
                    step, current = "deleted", change.path
                    self._delete(change)
                self._fsync_all({segment.directory})
                for f in segment.new:
                    step, current = "renamed", f.final
                    self._rename(step, _with(f.final, SWAP_SUFFIX), f.final)
                for change in segment.snapshots:
                    step, current = "deleted", change.path
                    self._delete(change)
                self._fsync_all({segment.directory})
            except (OSError, KdumpError) as e:
                if not self.committed:
                    raise
                self._remove_temps()  # those not renamed yet: the rest is LogLoader's to settle
                reason = e.strerror or str(e) if isinstance(e, OSError) else e.reason
                raise RepairError(
                    current,
                    f"{reason} (at the swap's {step} step); the broker's start, or kdump "
                    "recover, completes or undoes the swap as Kafka's LogLoader does (the "
                    "backups kept)",
                ) from None
        self.next_unit()
        return done

    def commit_unit(self) -> list[Written]:
        """RepairSession.commit of what is staged (a checkpoint file), then the next unit."""
        with signals_held() as held:
            written = self.commit(held.pending)
        self.next_unit()
        return written

    def next_unit(self) -> None:
        """What is done stays: a rollback from here undoes only what is staged next."""
        self.staged, self.created, self.deleting = [], [], set()
        self.dirs = set()
        self.committed = False

    def _check_same(self, dir_fd: int, change: FileChange) -> None:
        """The file ``change`` deletes is the one planned (the name in ``dir_fd``, its
        directory, not followed if a link)."""
        st = regular_lstat(change.path.name, dir_fd, change.path)
        if st is None or FileState.from_stat(st) != change.old:
            raise RepairError(change.path, "changed since it was read; nothing was changed")

    def _fsync_all(self, directories: set[Path]) -> None:
        for d in sorted(directories):
            self._fsync_dir(d)
        self.hook("dir-synced", Path("."))

    def _rename(self, step: str, source: Path, target: Path) -> None:
        """``source`` -> ``target`` in their directory, never over a file there (each target
        is a name the swap freed first, or one nobody else uses)."""
        with self._dir(source.parent) as d:
            with contextlib.suppress(FileNotFoundError):
                os.lstat(target.name, dir_fd=d)
                raise RepairError(target, "exists: the swap does not write over it")
            os.rename(source.name, target.name, src_dir_fd=d, dst_dir_fd=d)
        self.hook(step, target)

    def _delete(self, change: FileChange) -> None:
        with self._dir(change.path.parent) as d:
            self._check_same(d, change)
            os.unlink(change.path.name, dir_fd=d)
        self.hook("deleted", change.path)


def _with(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


__all__ = ["CleanedSegment", "NewFile", "SwapSession"]
