"""Kafka's files in a directory on disk: listed once, read through read-only memory maps."""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Collection, Mapping
from functools import cached_property
from typing import Any

from kdump.crc import Buffer
from kdump.errors import InputError
from kdump.storage.base import SMALL_FILE_LIMIT, Storage
from kdump.storage.reading import KEEP, ReadPolicy, read_ranges
from kdump.storage.records import FileRecords


def path_text(path: str) -> str:
    """``path`` as pathlib writes it (``str(PurePosixPath(path))``: repeated and trailing
    slashes and ``.`` parts dropped, ``..`` kept, ``.`` for nothing): how output names a
    directory, without importing pathlib at start-up."""
    if path.startswith("//") and not path.startswith("///"):
        root = "//"  # POSIX leaves two leading slashes to the system: pathlib keeps them
    else:
        root = "/" if path.startswith("/") else ""
    return root + "/".join(p for p in path.split("/") if p and p != ".") or "."


def map_file(path: str | os.PathLike[str]) -> Buffer:
    """A read-only view of a file on disk: an mmap, or empty bytes for an empty file."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None


def close_map(buf: Buffer) -> None:
    """A memory map closed now (its file descriptor given back), not when whatever holds it is
    collected (a cycle waits for the garbage collector); one still viewed is left to its last
    reference."""
    if isinstance(buf, mmap.mmap) and not buf.closed:
        with contextlib.suppress(BufferError):
            buf.close()


def read_file(path: str | os.PathLike[str], policy: ReadPolicy) -> bytes:
    """A small file's bytes, read as ``policy`` says (kdump.storage.reading)."""
    try:
        size = os.stat(path).st_size
        data = read_ranges(path, [(0, size)], policy)[1][0]
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None
    policy.charge(len(data))
    return data


def open_log_file(path: str | os.PathLike[str], policy: ReadPolicy = KEEP) -> FileRecords:
    """A ``.log`` file on disk, for the walk (its bytes memory-mapped), read as ``policy``
    says (what it leaves in the page cache: noted before the first byte is read)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            guard = policy.guard(f.fileno(), size)
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except IsADirectoryError:
        raise InputError(str(path), "is a directory, not a file") from None
    except OSError as e:
        raise InputError(str(path), e.strerror or str(e)) from None
    return FileRecords(str(path), buf, guard, policy)


class LocalStorage(Storage):
    """A directory on disk."""

    kind = "local"

    def __init__(self, path: str | os.PathLike[str], policy: ReadPolicy = KEEP) -> None:
        self.path = path_text(os.fspath(path))
        self.location = self.path
        self.policy = policy
        """How its ``.log`` files are read (page cache, rate): kdump.storage.reading."""

    def __repr__(self) -> str:
        return f"LocalStorage({self.location!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LocalStorage) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __getstate__(self) -> dict[str, Any]:
        # a listing is taken again where the storage is used (another process, later)
        return {"path": self.path, "location": self.location, "policy": self.policy}

    @property
    def local_path(self) -> str:
        return self.path

    @property
    def name(self) -> str:
        return "" if self.path == "." else os.path.basename(self.path)

    @cached_property
    def _listing(self) -> tuple[dict[str, int], list[str]]:
        files: dict[str, int] = {}
        folders: list[str] = []
        try:
            with os.scandir(self.path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
                    elif entry.is_file():
                        files[entry.name] = entry.stat().st_size
        except FileNotFoundError:
            raise InputError(self.location, "no such directory") from None
        except NotADirectoryError:
            raise InputError(self.location, "not a directory") from None
        except OSError as e:
            raise InputError(self.location, e.strerror or str(e)) from None
        return dict(sorted(files.items())), sorted(folders)

    def files(self) -> Mapping[str, int]:
        return self._listing[0]

    def folders(self) -> list[str]:
        return self._listing[1]

    def folder(self, name: str) -> LocalStorage:
        return LocalStorage(self.location_of(name), self.policy)

    def read(self, name: str, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        if self.policy.keep_cache:
            return map_file(self.location_of(name))
        # copied, not mapped, so the pages it brought in are dropped now (an index is at most
        # segment.index.bytes, 10 MiB by default): a broker's log dirs hold ~0.5% of their
        # bytes in indexes, 100 GB of page cache on a 20 TB broker
        return read_file(self.location_of(name), self.policy)

    def open_log(self, name: str) -> FileRecords:
        return open_log_file(self.location_of(name), self.policy)

    def modified_ms(self, name: str) -> int:
        try:
            return os.stat(self.location_of(name)).st_mtime_ns // 1_000_000
        except OSError as e:
            raise InputError(self.location_of(name), e.strerror or str(e)) from None

    def location_of(self, name: str) -> str:
        # as pathlib joins (Path(".") / name is name), without a Path per file
        return name if self.location == "." else os.path.join(self.location, name)

    def refresh(self) -> None:
        """Forget the listing (files were written since)."""
        self.__dict__.pop("_listing", None)
        self.__dict__.pop("_segment_sets", None)


class RenamedView(LocalStorage):
    """A directory as it will be once some files are renamed and others removed, read from
    where the bytes are now: a dry run's view of what its run does before the rest (the
    renames that complete a swap). Nothing is written."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        renamed: Mapping[str, str],
        removed: Collection[str],
        policy: ReadPolicy = KEEP,
    ) -> None:
        super().__init__(path, policy)
        self.renamed = dict(renamed)
        """new name -> the name the file has now"""
        self.removed = frozenset(removed)

    def __repr__(self) -> str:
        return f"RenamedView({self.location!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RenamedView) and (other.path, other.renamed, other.removed) == (
            self.path,
            self.renamed,
            self.removed,
        )

    def __hash__(self) -> int:
        return hash((self.path, frozenset(self.renamed.items()), self.removed))

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "renamed": self.renamed, "removed": self.removed}

    def now_named(self, name: str) -> str | None:
        """The name the bytes of ``name`` have now (None: there will be no such file)."""
        if name in self.renamed:
            return self.renamed[name]
        if name in self.removed or name in self.renamed.values():
            return None
        return name

    @cached_property
    def _listing(self) -> tuple[dict[str, int], list[str]]:
        files, folders = super()._listing
        gone = self.removed | set(self.renamed.values())
        view = {n: size for n, size in files.items() if n not in gone}
        view |= {new: files[old] for new, old in self.renamed.items() if old in files}
        return dict(sorted(view.items())), folders

    def _now(self, name: str) -> str:
        now = self.now_named(name)
        if now is None:
            raise InputError(self.location_of(name), "no such file")
        return now

    def read(self, name: str, limit: int = SMALL_FILE_LIMIT) -> Buffer:
        return super().read(self._now(name), limit)

    def open_log(self, name: str) -> FileRecords:
        return super().open_log(self._now(name))

    def modified_ms(self, name: str) -> int:
        return super().modified_ms(self._now(name))


__all__ = ["LocalStorage", "RenamedView", "map_file", "open_log_file"]
