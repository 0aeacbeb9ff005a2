"""How a repair reaches the files it reads and writes: never through a link, always in the
directory it examined, new files with the owner and mode of what they replace.

A broker's log dirs belong to the Kafka user, and operators run kdump as root: any name there
may be a symbolic link (to ``/etc/shadow``), a FIFO, or a file swapped for another between
the moment kdump reads it and the moment it writes. So:

- files are opened with ``O_NOFOLLOW`` and must be regular files (``NotRegularError``, exit 3,
  naming the file), and the inode a log cut truncates is the one that was planned (fstat);
- directories are opened with ``O_NOFOLLOW`` too (but for those the operator named: a log dir
  is often a link to its disk), and every name in them is reached through that descriptor
  (``openat``, ``renameat``, ``linkat``): a directory swapped for a link, or for another
  directory, while kdump runs is refused, never followed;
- temporary files get a name no one can guess (``.NAME.kdump-tmp-PID-RANDOM``), are created
  with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and 0600, then given their owner and mode, and only
  then renamed into place: a broker never meets a root-owned file it cannot read.

``kdump.format.names.is_kdump_leftover`` is the one place that knows the names of kdump's
temporary files (what a run killed with SIGKILL leaves behind).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.crc import Buffer
from kdump.errors import InputError, NotRegularError
from kdump.format.names import TEMP_MARK, leftover_pid, parse_segment_name
from kdump.lock import process_alive
from kdump.tuples import NamedTuple

if TYPE_CHECKING:
    from kdump.unified_log import UnifiedLog

DATA_MODE = 0o666
"""The permission bits a file kdump writes may carry: never set-id, sticky or executable,
whatever the file it copies says (a hostile .log with mode 4755 stays data)."""
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def temp_name(final: str) -> str:
    """A temporary name for ``final`` in its directory: a dot first and no segment suffix last,
    so neither Kafka nor kdump takes it for a segment file; unguessable."""
    return f".{final}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(6)}"


def regular_lstat(
    path: Path | str, dir_fd: int | None = None, shown: Path | None = None
) -> os.stat_result | None:
    """The name's own status (a link is not followed; ``path`` relative to ``dir_fd``,
    ``shown`` in messages); None when there is none. Anything but a regular file is
    refused."""
    try:
        st = os.lstat(path, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(str(shown or path), e.strerror or str(e)) from None
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularError(shown or path, kind_of(st.st_mode))
    return st


def open_regular(
    path: Path | str,
    flags: int = os.O_RDONLY,
    dir_fd: int | None = None,
    shown: Path | None = None,
) -> tuple[int, os.stat_result]:
    """A descriptor of the regular file at ``path`` (relative to ``dir_fd``; ``shown`` in
    messages), and its status; a link is refused (O_NOFOLLOW), and so is a FIFO or a device
    (O_NONBLOCK: opening one does not hang)."""
    shown = shown or Path(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegularError(shown, "a symbolic link") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularError(shown, kind_of(st.st_mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def map_regular(path: Path | str) -> Buffer:
    """segment.open_buffer for a file a repair reads: a regular file only, never through a
    link."""
    try:
        fd, st = open_regular(path)
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None
    try:
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if st.st_size else b""
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None
    finally:
        os.close(fd)


def refuse_irregular(directory: Path, only: frozenset[int] | None = None) -> None:
    """Every segment file of a partition (or of the segments named) is a regular file, or a
    NotRegularError names the first that is not: before a repair reads any."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as e:
        raise InputError(str(directory), e.strerror or str(e)) from None
    for name in names:
        parsed = parse_segment_name(name)
        if parsed is not None and (only is None or parsed.base_offset in only):
            regular_lstat(directory / name)


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@dataclass(frozen=True)
class Ownership:
    """Who owns a file kdump writes, and its permission bits."""

    uid: int
    gid: int
    mode: int

    @classmethod
    def like(cls, st: os.stat_result) -> Ownership:
        """The owner, group and mode of ``st`` (its permission bits within DATA_MODE)."""
        return cls(st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode) & DATA_MODE)

    def mine(self) -> Ownership:
        """The same mode, owned by whoever runs kdump (a file outside the broker's dirs)."""
        return Ownership(os.geteuid(), os.getegid(), self.mode)

    def give(self, fd: int) -> None:
        """Make the open file ``fd`` this owner's, with this mode (mode last: chown may clear
        bits)."""
        st = os.fstat(fd)
        if (st.st_uid, st.st_gid) != (self.uid, self.gid):
            try:
                os.fchown(fd, self.uid, self.gid)
            except PermissionError:
                raise PermissionError(
                    errno.EPERM,
                    f"the new file cannot be given the owner {self.uid}:{self.gid} of the file "
                    "it replaces (run kdump as that user, or as root)",
                ) from None
        os.fchmod(fd, self.mode)


def open_directory(path: Path | str, dir_fd: int | None = None, shown: Path | None = None) -> int:
    """A descriptor of the directory ``path`` (relative to ``dir_fd``; ``shown`` in messages),
    which must not be a link (its parents may be: they are the operator's to name)."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                what = kind_of(os.lstat(path, dir_fd=dir_fd).st_mode)
            except OSError:
                what = "not a directory"
            raise InputError(
                str(shown or path),
                f"{what}, not a directory: kdump does not write through it",
            ) from None
        raise


def own_directory(parent_fd: int, name: str, path: Path, mode: int) -> tuple[int, bool]:
    """The subdirectory ``name`` of ``parent_fd`` (``path``, for messages), made when missing:
    a descriptor of it, and whether it was made. One that is a link, or belongs to another
    user, is refused: kdump writes its output and backups only where no one else can put a
    link or a file first."""
    made = True
    try:
        os.mkdir(name, mode, dir_fd=parent_fd)
    except FileExistsError:
        made = False
    fd = open_directory(name, parent_fd, path)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise InputError(
                str(path),
                f"belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()}): "
                "kdump writes only into directories of its own; choose another directory",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, made


def own_subdir(root: Path, source: Path) -> os.stat_result:
    """``root/<source's name>`` (an --output-dir's or --backup-dir's subdirectory for the
    files of ``source``), made with ``source``'s mode when missing, else checked as
    own_directory does and not ``source`` itself: its status (for its identity)."""
    path = root / source.name
    root.mkdir(parents=True, exist_ok=True)  # the operator's own path: its links are theirs
    src = os.stat(source)
    parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd, _ = own_directory(parent, path.name, path, stat.S_IMODE(src.st_mode) & 0o777)
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if same_file(st, src):
        raise InputError(str(path), f"is {source} itself; choose another directory")
    return st


def create_temp(dir_fd: int, final: str, owner: Ownership) -> tuple[int, str]:
    """A new, empty temporary file for ``final`` in ``dir_fd``, with ``owner``'s owner, group
    and mode: its descriptor and name."""
    while True:
        name = temp_name(final)
        try:
            fd = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dir_fd
            )
        except FileExistsError:
            continue  # another name: never a file someone put there
        break
    try:
        owner.give(fd)
    except BaseException:
        os.close(fd)
        os.unlink(name, dir_fd=dir_fd)
        raise
    return fd, name


@dataclass(frozen=True)
class Leftover:
    """A temporary file of kdump's that is still there."""

    path: Path
    pid: int
    running: bool
    """The process that wrote it still runs (another kdump at work): left alone."""


def find_leftovers(directory: Path, follow: bool = True) -> list[Leftover]:
    """kdump's own temporary files in ``directory`` (none when it does not exist, or when it
    is a link and not ``follow``: an output subdirectory that is a link is refused later)."""
    if not follow and directory.is_symlink():
        return []
    try:
        names = sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for name in names:
        pid = leftover_pid(name)
        if pid is not None:
            running = pid != os.getpid() and process_alive(pid)
            found.append(Leftover(directory / name, pid, running))
    return found


def remove_leftovers(
    directories: Iterable[Path], dry_run: bool = False, follow: bool = True
) -> list[Leftover]:
    """Remove (unless ``dry_run``) kdump's leftovers in ``directories`` whose process is gone;
    every leftover found, in directory order."""
    found = []
    for directory in sorted(set(directories)):
        for leftover in find_leftovers(directory, follow):
            if not leftover.running and not dry_run:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(leftover.path)
            found.append(leftover)
    return found


class LocalPartition(NamedTuple):
    """A partition directory on disk and the log dir holding it: where repairs read."""

    path: Path
    log_dir: Path


def local_partitions_of(logs: Iterable[UnifiedLog]) -> list[tuple[UnifiedLog, LocalPartition]]:
    """The partitions of ``logs`` on disk, each with where it is and its log dir: the log dir
    it was found in, or its parent when it was named on its own (the one place that says so)."""
    out = []
    for log in logs:
        path = log.storage.local_path
        if path is None:
            continue
        parent = None if log.log_dir is None else log.log_dir.storage.local_path
        out.append((log, LocalPartition(Path(path), Path(parent) if parent else Path(path).parent)))
    return out


def local_partitions(logs: Iterable[UnifiedLog]) -> list[LocalPartition]:
    """The partitions of ``logs`` on disk, with their log dirs (``local_partitions_of``)."""
    return [where for _, where in local_partitions_of(logs)]


def refuse_output_inside(
    output_dir: Path, partitions: Iterable[LocalPartition], what: str = "output directory"
) -> None:
    """An output (or backup: ``what``) directory inside (or equal to) a partition or log dir
    being read is refused (an InputError): what kdump writes there would sit among the
    broker's own files, where the broker takes a new directory for a partition and refuses to
    start on its name."""
    out = Path(os.path.realpath(output_dir))
    for partition in partitions:
        for kind, d in (("partition", partition.path), ("log dir", partition.log_dir)):
            inside = Path(os.path.realpath(d))
            if out == inside or inside in out.parents:
                where = "is" if out == inside else "lies inside"
                raise InputError(
                    str(output_dir),
                    f"{what} {where} the {kind} {d} it reads; choose one outside the broker's data",
                )


__all__ = [
    "DATA_MODE",
    "Leftover",
    "LocalPartition",
    "NotRegularError",
    "Ownership",
    "create_temp",
    "find_leftovers",
    "kind_of",
    "local_partitions",
    "local_partitions_of",
    "map_regular",
    "open_directory",
    "open_regular",
    "own_directory",
    "own_subdir",
    "refuse_irregular",
    "refuse_output_inside",
    "regular_lstat",
    "remove_leftovers",
    "same_file",
    "temp_name",
]
