"""Objects in a store, read in ranges: the one place kdump talks to fsspec.

fsspec, not pyarrow.fs: one URL API for s3:// (s3fs), gs:// (gcsfs), az:// (adlfs) and file://;
it honours AWS_ENDPOINT_URL and the whole botocore credential chain (pyarrow ignores the
endpoint variable); listings come with sizes and no pseudo-directories; it runs in Spark's Python
workers without Hadoop jars; and it is a few small wheels where pyarrow is 170 MB of C++.

Every answer is checked: a ranged read returns exactly the bytes asked for or raises a
``StoreError`` naming the object and byte position; every failure of the store (no such object,
credentials refused, a connection that keeps failing after the retries) is one such line.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from kdump.errors import KdumpError, StoreError
from kdump.storage.remote.options import StoreOptions
from kdump.storage.remote.urls import EXTRA

_FILESYSTEMS: dict[tuple[int, str, StoreOptions], Any] = {}
_BACKENDS = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs"}
_BACKENDS.update(abfs="adlfs", abfss="adlfs")


def _missing(module: str) -> KdumpError:
    extra = {"gcsfs": "gcs", "adlfs": "azure"}.get(module, EXTRA)
    return KdumpError(f"reading URLs needs {module}: pip install 'kafka-kdump[{extra}]'")


def filesystem(url: str, options: StoreOptions) -> tuple[Any, str]:
    """The fsspec file system of ``url`` (one per process and options) and the path in it."""
    try:
        import fsspec
        from fsspec.core import split_protocol
    except ImportError:
        raise _missing("fsspec") from None
    protocol = split_protocol(url)[0] or "file"
    key = (os.getpid(), protocol, options)
    fs = _FILESYSTEMS.get(key)
    if fs is None:
        try:
            cls = fsspec.get_filesystem_class(protocol)
        except ImportError:
            raise _missing(_BACKENDS.get(protocol, protocol)) from None
        except ValueError:
            raise StoreError(url, f"unknown URL scheme {protocol}://") from None
        _quiet(cls)
        fs = cls(**_storage_options(protocol, options), skip_instance_cache=True)
        if protocol in ("s3", "s3a"):
            fs.retries = options.retries  # s3fs's own retries around botocore's
        _FILESYSTEMS[key] = fs
    return fs, fs._strip_protocol(url)


def _quiet(cls: type) -> None:
    """Keep the client library's log records off stderr: what fails reaches the user as the
    one StoreError line it raises. (gcsfs warns on every call where it cannot ask the
    control-plane API whether a bucket is hierarchical, as with no credentials or an
    emulator, then reads as usual.) A handler on its logger stops logging's last resort,
    which prints warnings to stderr when nothing is configured."""
    import logging  # with the store's client library, not at start-up

    logger = logging.getLogger(cls.__module__.split(".")[0])
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())


def _storage_options(protocol: str, options: StoreOptions) -> dict[str, Any]:
    if protocol in ("s3", "s3a"):
        config = {
            "retries": {"mode": "standard", "max_attempts": options.retries},
            "connect_timeout": options.timeout,
            "read_timeout": options.timeout,
        }
        kw: dict[str, Any] = {"config_kwargs": config, "anon": options.anon}
        if options.endpoint_url:
            kw["endpoint_url"] = options.endpoint_url
        return kw
    if protocol in ("gs", "gcs"):
        return {"token": "anon"} if options.anon else {}
    if protocol in _BACKENDS:
        return {"anon": True} if options.anon else {}
    return {}


@contextlib.contextmanager
def store_errors(url: str, position: int | None = None, retries: int = 1) -> Iterator[None]:
    """Whatever the store or its client raises, as one StoreError naming ``url`` (``retries``:
    the attempts made, as the error tells them)."""
    try:
        yield
    except KdumpError:
        raise
    except FileNotFoundError:
        raise StoreError(url, "no such object") from None
    except PermissionError as e:
        raise StoreError(url, _denied(_first_line(e))) from None
    except Exception as e:
        raise StoreError(url, _describe(e, position, retries)) from None


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


_REFUSED = ("access key id", "signature", "security token", "expired")
"""What a store's refusal says when the credentials themselves are wrong (S3's
InvalidAccessKeyId, SignatureDoesNotMatch, InvalidToken, ExpiredToken), not their rights."""


def _denied(text: str) -> str:
    if any(word in text.lower() for word in _REFUSED):
        return f"credentials refused: {text}"
    return f"access denied: {text}"


def _describe(e: BaseException, position: int | None, retries: int) -> str:
    name = type(e).__name__
    text = _first_line(e)
    if name == "NoCredentialsError":
        return (
            "no credentials found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, "
            "~/.aws, instance role), or use --anon for a public bucket"
        )
    if name in ("InvalidAccessKeyId", "SignatureDoesNotMatch") or "AccessDenied" in text:
        return f"credentials refused: {text}"
    where = "" if position is None else f" at byte {position}"
    return f"read failed{where} after {retries} attempt(s): {name}: {text}"


class ObjectStore:
    """One object store reached one way (``options``: endpoint, credentials, retries): every
    read of a URL goes through one of these, handed down from the command that was given the
    options (never a process-wide setting)."""

    def __init__(self, options: StoreOptions | None = None) -> None:
        self.options = options or StoreOptions()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectStore) and other.options == self.options

    def __hash__(self) -> int:
        return hash(self.options)

    def __repr__(self) -> str:
        return f"ObjectStore({self.options!r})"

    def _fs(self, url: str) -> tuple[Any, str]:
        return filesystem(url, self.options)

    def errors(
        self, url: str, position: int | None = None
    ) -> contextlib.AbstractContextManager[None]:
        return store_errors(url, position, self.options.retries)

    def read_range(self, url: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object, exactly: fewer is a truncated object."""
        if end <= start:
            return b""
        fs, path = self._fs(url)
        with self.errors(url, start):
            data = fs.cat_file(path, start=start, end=end)
        if len(data) != end - start:
            got = start + len(data)
            raise StoreError(
                url,
                f"object ended at byte {got}, {end - got} byte(s) short of the {end} read: "
                "truncated object",
                got,
            )
        return bytes(data)

    def read_object(self, url: str, limit: int = 1 << 30) -> bytes:
        """A whole (small) object: index files, manifests, snapshots."""
        fs, path = self._fs(url)
        with self.errors(url):
            size = int(fs.size(path))
            if size > limit:
                raise StoreError(url, f"{size} bytes, more than the {limit} read whole")
            data = fs.cat_file(path)
        if len(data) != size:
            raise StoreError(
                url, f"read {len(data)} bytes of the {size} listed: truncated object", len(data)
            )
        return bytes(data)

    def write_object(self, url: str, data: bytes) -> None:
        """Put ``data`` as the whole object ``url`` (one PUT: a reader sees the old object or
        the new one, never a part)."""
        fs, path = self._fs(url)
        with self.errors(url):
            fs.pipe_file(path, data)

    def size(self, url: str) -> int:
        fs, path = self._fs(url)
        with self.errors(url):
            return int(fs.size(path))

    def modified_ms(self, url: str) -> int:
        """When the object was last written, epoch milliseconds (a file's mtime)."""
        fs, path = self._fs(url)
        with self.errors(url):
            return int(fs.modified(path).timestamp() * 1000)

    def exists(self, url: str) -> bool:
        fs, path = self._fs(url)
        with self.errors(url):
            return bool(fs.exists(path))

    def is_prefix(self, url: str) -> bool:
        """Whether ``url`` names a folder-like prefix (objects below it), not one object."""
        fs, path = self._fs(url)
        with self.errors(url):
            return bool(fs.isdir(path))

    def listing(self, url: str) -> dict[str, int]:
        """Every object below the prefix ``url`` (or the object itself): URL -> size in bytes."""
        fs, path = self._fs(url)
        with self.errors(url):
            found = fs.find(path, detail=True)
        out = {}
        for name, info in sorted(found.items()):
            if info.get("type", "file") == "file":
                out[_unstrip(url, fs, name)] = int(info.get("size") or 0)
        return out

    def files_in(self, url: str) -> dict[str, int]:
        """The objects directly below the prefix ``url`` (not deeper): URL -> size."""
        fs, path = self._fs(url)
        with self.errors(url):
            found = fs.ls(path, detail=True)
        return {
            _unstrip(url, fs, info["name"]): int(info.get("size") or 0)
            for info in sorted(found, key=lambda i: i["name"])
            if info.get("type", "file") == "file"
        }

    def full_url(self, url: str) -> str:
        """``url`` as the file system writes it (``file:///abs/path`` for ``file://rel``)."""
        fs, path = self._fs(url)
        return _unstrip(url, fs, path)


def _unstrip(url: str, fs: Any, path: str) -> str:
    """``path`` as a URL in the scheme ``url`` was given in: adlfs writes every path as
    abfs://, gcsfs as gs://, so an az:// or gcs:// the user typed would come back renamed."""
    from fsspec.core import split_protocol

    scheme = split_protocol(url)[0]
    if scheme and scheme != "file":
        return f"{scheme}://{path}"
    return str(fs.unstrip_protocol(path))


__all__ = ["ObjectStore", "filesystem", "store_errors"]
