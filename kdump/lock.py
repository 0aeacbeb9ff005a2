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
import stat
import struct
import sys

from kdump.errors import LockHeldError
from kdump.format.names import LOCK_FILE
from kdump.tuples import NamedTuple

# struct flock on Linux (64-bit off_t): short l_type, short l_whence, off_t l_start,
# off_t l_len, pid_t l_pid, padded to 32 bytes.
_FLOCK = struct.Struct("@hhqqi4x")


FCNTL = "fcntl"
"""A POSIX record lock (or an open file description lock, which conflicts with it): Kafka's."""
FLOCK = "flock"
"""A BSD lock (flock(1), flock(2)): not Kafka's, yet it stops kdump (and kdump takes one too)."""


class LockHolder(NamedTuple):
    """Who holds a log dir's .lock, and how."""

    path: str
    pid: int | None
    """None where the system does not say (an open file description lock)."""
    kind: str
    """FCNTL or FLOCK."""

    def __str__(self) -> str:
        who = f"process {self.pid}" if self.pid else "another process"
        if self.kind == FCNTL:
            return f"{who} (a running Kafka broker?)"
        return f"{who} with flock (a broker locks with fcntl: another program?)"

    def refusal(self) -> LockHeldError:
        """The error of a run that would modify files under the log dir this lock guards."""
        stop = "the broker" if self.kind == FCNTL else "it"
        return LockHeldError(
            f"locked by {self}: refusing to modify files under {os.path.dirname(self.path)}; stop "
            f"{stop} first, or use --force",
            self.path,
            self.pid,
        )


class LogDirLock:
    """A log dir's .lock, held (by the descriptor ``fd``) until released."""

    def __init__(self, path: str, fd: int) -> None:
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops both the fcntl and the flock lock
            self.fd = -1


def who_holds(log_dir: str | os.PathLike[str]) -> LockHolder | None:
    """Who holds ``log_dir``'s .lock so that lock_log_dir (a repair) would refuse, and how;
    None when nobody does, or there is no .lock. The one answer verify and the repairs give.

    No lock is taken to find out: a lock taken even for a moment could make a broker starting
    at that moment refuse the directory. /proc/locks lists both kinds; where it cannot be read,
    F_GETLK still names an fcntl lock's holder (a flock lock is then not seen).
    """
    path = os.path.join(log_dir, LOCK_FILE)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    held = _proc_locks(st)
    if held is None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            pid = _fcntl_holder(fd)
        finally:
            os.close(fd)
        return None if pid is None else LockHolder(path, pid, FCNTL)
    if not held:
        return None
    kind, pid = min(held)  # fcntl's first: the broker's kind
    return LockHolder(path, pid, kind)


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one this user may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _proc_locks(st: os.stat_result) -> list[tuple[str, int | None]] | None:
    """(kind, pid) of each lock held on the file ``st`` describes, but an fcntl lock of this
    process (those never conflict with its own); None where /proc/locks cannot be read.

    Lines read ``1: POSIX  ADVISORY  WRITE 1234 fe:00:2146931 0 EOF`` (the device's major and
    minor in hex); a waiter's line has ``->`` after the number, and holds nothing.
    """
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    inode = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    kinds = {"POSIX": FCNTL, "OFDLCK": FCNTL, "FLOCK": FLOCK}
    held: list[tuple[str, int | None]] = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->" or fields[5] != inode:
            continue
        kind, pid = kinds.get(fields[1]), int(fields[4])  # -1 for an open file description's
        if kind is None or (fields[1] == "POSIX" and pid == os.getpid()):
            continue
        held.append((kind, pid if pid > 0 else None))
    return held


def _fcntl_holder(fd: int) -> int | None:
    """The pid holding a conflicting fcntl lock on ``fd`` (F_GETLK), where the OS says."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        arg = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        l_type, _, _, _, pid = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_GETLK, arg))
    except OSError:
        return None
    return pid if l_type != fcntl.F_UNLCK and pid > 0 else None


def lock_log_dir(log_dir: str | os.PathLike[str]) -> LogDirLock | None:
    """Take ``<log_dir>/.lock`` as the broker would; None when there is no such file.

    Exclusive when the file can be opened for writing, shared (which still conflicts with the
    broker's exclusive lock) when it is read-only. Raises LockHeldError when another process
    holds it.
    """
    path = os.path.join(log_dir, LOCK_FILE)
    if not os.path.isfile(path):
        return None
    try:
        fd, exclusive = os.open(path, os.O_RDWR), True
    except OSError:
        fd, exclusive = os.open(path, os.O_RDONLY), False
    kind = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    for take, how in ((fcntl.lockf, FCNTL), (fcntl.flock, FLOCK)):
        try:
            take(fd, kind | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EACCES, errno.EAGAIN):  # EWOULDBLOCK is EAGAIN
                raise (who_holds(log_dir) or LockHolder(path, None, how)).refusal() from None
            raise
    return LogDirLock(path, fd)
