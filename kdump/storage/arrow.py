"""pyarrow's view of where an export goes (kdump spark export): a local path, or a URL through
the fsspec file system kdump reads URLs with (kdump.storage.remote.store: the same endpoint,
credentials chain and retries; PySpark's wheel has no Hadoop connector for s3a://, and
pyarrow's own S3 client ignores AWS_ENDPOINT_URL). Imported by the Spark jobs only (pyarrow
comes with the ``spark`` extra)."""

from __future__ import annotations

import os

import pyarrow.fs as pafs

from kdump.storage.remote.store import ObjectStore, filesystem
from kdump.storage.remote.urls import is_url


def output_filesystem(output: str, store: ObjectStore) -> tuple[pafs.FileSystem, str]:
    """The file system ``output`` is in, and its path there (no trailing ``/``)."""
    if is_url(output):
        fs, path = filesystem(output, store.options)
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path.rstrip("/")
    return pafs.LocalFileSystem(), os.path.abspath(output)


__all__ = ["output_filesystem"]
