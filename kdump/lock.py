"""The broker's lock on a log dir: ``<log.dir>/.lock``.

Kafka's ``LogManager.lockLogDirs`` takes ``FileLock.tryLock()``, i.e. ``FileChannel.tryLock()``,
which on Linux is a POSIX record lock (``fcntl(F_SETLK)``, exclusive, whole file), held for as
long as the broker runs. kdump takes the same kind of lock before it changes anything under a log
dir: if that fails, a broker (or another kdump) is using the directory. It also tries ``flock``,
which is independent of fcntl locks on Linux, so a lock of either kind is seen. Holding the lock
while repairing also keeps a broker from starting on half-repaired files.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from kdump.errors import KdumpError

LOCK_FILE = ".lock"
# struct flock on Linux (64-bit off_t): short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid, padded to 32 bytes.
_FLOCK = struct.Struct("@hhqqi4x")


class LockHeldError(KdumpError):
    """A log dir whose .lock another process holds: a running broker."""

    def __init__(self, path: Path, holder: int | None) -> None:
        who = f"process {holder}" if holder else "another process"
        super().__init__(
            f"locked by {who} (a running Kafka broker?): refusing to modify files under "
            f"{path.parent}; stop the broker first, or use --force",
            str(path),
        )
        self.lock_path, self.holder = path, holder


@dataclass
class LogDirLock:
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops both the fcntl and the flock lock
            self.fd = -1


def lock_holder(fd: int) -> int | None:
    """The pid holding a conflicting fcntl lock on ``fd`` (F_GETLK), where the OS says."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        arg = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        l_type, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, arg))
    except OSError:
        return None
    return pid if l_type != fcntl.F_UNLCK and pid > 0 else None


def lock_log_dir(log_dir: Path) -> LogDirLock | None:
    """Take ``<log_dir>/.lock`` as the broker would; None when there is no such file.

    Exclusive when the file can be opened for writing, shared (which still conflicts with the
    broker's exclusive lock) when it is read-only. Raises LockHeldError when another process
    holds it.
    """
    path = log_dir / LOCK_FILE
    if not path.is_file():
        return None
    try:
        fd, exclusive = os.open(path, os.O_RDWR), True
    except OSError:
        fd, exclusive = os.open(path, os.O_RDONLY), False
    kind = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        fcntl.lockf(fd, kind | fcntl.LOCK_NB)
    except OSError as e:
        holder = lock_holder(fd)
        os.close(fd)
        if e.errno in (errno.EACCES, errno.EAGAIN):
            raise LockHeldError(path, holder) from None
        raise
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise LockHeldError(path, None) from None
        raise
    return LogDirLock(path, fd)
