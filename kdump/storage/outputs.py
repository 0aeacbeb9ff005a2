"""Where kdump's own files go and come back from: verify's state file, the metrics textfile, the
HTML report, and the verify results a fleet's crons write (a path, or an object's URL) for
``kdump report`` to read back. Written whole or not at all; read back bounded.

A path or a URL is told apart here (kdump.storage's rule), not by the modules that name the
files (kdump.audit_results, kdump.metrics, kdump.checks.verify_state).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.errors import InputError
from kdump.storage.remote.urls import is_url
from kdump.untrusted import ESCAPE_NAMES

if TYPE_CHECKING:
    from kdump.storage.remote.store import ObjectStore


def output_directory(path: str | os.PathLike[str]) -> Path:
    """The directory ``path`` is written in; a missing one is the user's path in the error
    (not the temporary file's name), and can be checked before any work is done."""
    directory = Path(path).parent
    if not directory.is_dir():
        reason = "not a directory" if directory.exists() else "no such directory"
        raise InputError(str(path), f"cannot write it: {reason}: {directory}")
    return directory


def write_textfile(
    path: str | os.PathLike[str], text: str | Iterable[str], mode: int | None = None
) -> None:
    """Replace ``path`` with ``text`` (or its pieces) atomically: a reader sees the old file or
    the new one, never a part. The temporary name starts with a dot and ends in ``.tmp``, so
    the collector (which reads ``*.prom``) never picks it up; mode 0666 less the umask, so the
    collector's user can read what root's cron wrote, or ``mode`` (a state file: 0600)."""
    target = Path(path)
    directory = output_directory(target)
    try:
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as e:
        raise InputError(str(target), f"cannot write it: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=ESCAPE_NAMES) as f:
            for piece in [text] if isinstance(text, str) else text:
                f.write(piece)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # the rename is done; only its durability across a crash is not ensured
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def check_writable(target: str, directory: str) -> None:
    """An error naming ``target`` where ``directory`` (where it is written) is not one this
    user may write in."""
    if not os.path.isdir(directory):
        reason = "not a directory" if os.path.exists(directory) else "no such directory"
        raise InputError(target, f"cannot write it: {reason}: {directory.rstrip('/') or '/'}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(target, f"cannot write it: permission denied: {directory}")


def write_new_textfile(path: str, text: str) -> str:
    """``text`` as a new file at ``path`` (or ``path-2``, ``-3``... where one is there), made
    whole beside it and linked into place: an existing file is never replaced."""
    directory = os.path.dirname(path) or "."
    staging = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.new")
    write_textfile(staging, text)
    try:
        for n in range(1, 101):
            name = path if n == 1 else _numbered(path, n)
            try:
                os.link(staging, name)
            except FileExistsError:
                continue
            except OSError as e:
                raise InputError(path, f"cannot write it: {e.strerror or e}") from None
            return name
        raise InputError(path, "cannot write it: 100 results of this name are there")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(staging)


def _numbered(name: str, n: int) -> str:
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}-{n}.{suffix}" if dot and "/" not in suffix else f"{name}-{n}"


def local_path(target: str) -> str | None:
    """The path a target names on this host (a path, or a ``file://`` URL); None: an object."""
    if not is_url(target):
        return target
    if target.startswith("file://"):
        return target.removeprefix("file://")
    return None


def may_exist(target: str) -> bool:
    """False only where ``target`` is a path that is not there (an object is asked by reading
    it: one request, not two)."""
    return is_url(target) or os.path.exists(target)


def is_local_directory(target: str) -> bool:
    return not is_url(target) and os.path.isdir(target)


def write_whole(target: str, text: str, store: ObjectStore, own_name: bool = False) -> str:
    """Write ``text`` to ``target`` (a path or an object's URL), whole or not at all; where it
    went. ``own_name``: the name is this run's own (a template's): an object or file there
    already (a run in the same millisecond) is never replaced, the name gets ``-2``, ``-3``...
    before its suffix. The directories of a local target are made."""
    local = local_path(store.full_url(target) if target.startswith("file:") else target)
    if local is None:
        name = target
        for n in range(2, 102) if own_name else ():
            if not store.exists(name):
                break
            name = _numbered(target, n)
        store.write_object(name, text.encode("utf-8"))
        return name
    directory = os.path.dirname(local) or "."
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise InputError(target, f"cannot write it: {e.strerror or e}: {directory}") from None
    if not own_name:
        write_textfile(local, text)
        return local
    return write_new_textfile(local, text)


def names_below(target: str, store: ObjectStore) -> list[str] | None:
    """The names of the files (or objects) anywhere below the directory (or prefix)
    ``target``; None: a path that is no directory."""
    if is_url(target):
        return [url.rsplit("/", 1)[-1] for url in store.listing(target)]
    if os.path.isdir(target):
        return [n for _, _, files in os.walk(target) for n in files]
    return None


def files_below(target: str, suffix: str, store: ObjectStore) -> list[str]:
    """``target`` itself where it is one file or object, else the files (objects) below it
    whose names end in ``suffix``, in name order: none is an error."""
    if is_url(target):
        listed = store.listing(target)
        if not listed:
            raise InputError(target, "no such object or prefix")
        if list(listed) == [store.full_url(target)]:
            return list(listed)
        found = [url for url in listed if url.endswith(suffix)]
    elif os.path.isdir(target):
        found = [str(p) for p in sorted(Path(target).rglob("*" + suffix))]
    elif os.path.exists(target):
        return [target]
    else:
        raise InputError(target, "no such file or directory")
    return found


def read_bounded(source: str, limit: int, store: ObjectStore, found: bool = False) -> bytes:
    """A file's or object's bytes, at most ``limit`` (and one more, to tell a larger file);
    ``found``: a file met in a walk of a directory, never followed through a symlink."""
    if is_url(source):
        if store.size(source) > limit:
            raise InputError(source, f"larger than the {limit} bytes of a result")
        return store.read_object(source, limit=limit)
    try:
        fd = os.open(source, os.O_RDONLY | (os.O_NOFOLLOW if found else 0))
        with os.fdopen(fd, "rb") as f:
            return f.read(limit + 1)
    except OSError as e:
        raise InputError(source, f"cannot read it: {e.strerror or e}") from None


__all__ = [
    "check_writable",
    "files_below",
    "is_local_directory",
    "local_path",
    "may_exist",
    "names_below",
    "output_directory",
    "read_bounded",
    "write_new_textfile",
    "write_textfile",
    "write_whole",
]
