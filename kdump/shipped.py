"""kdump imported from a zip: the copy a Spark driver ships to its executors (kdump.spark.ship).

Python's zipimport loads source and bytecode only, never an extension module, so the zip's
extension modules (kdump's C module, cramjam's, crc32c's) would be invisible and kdump would run
its pure Python even where the executor could load them. ``install`` puts a finder in front of
the import system that copies an extension module out of the zip, once, into a directory beside
it (``ARCHIVE.native/``, in the executor's own work directory, which Spark removes with the
application's files) and loads it from there. One built for another Python or machine fails to
load as it would from a wheel, and the callers take their pure-Python path as usual
(kdump.speedups, kdump.crc, kdump.format.compression).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import zipfile
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType


class ZipExtensionFinder:
    """Finds ``fullname`` as an extension module inside ``archive`` (a meta path finder)."""

    def __init__(self, archive: str) -> None:
        self.archive = archive
        with zipfile.ZipFile(archive) as z:
            self.names = set(z.namelist())

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        leaf = fullname.rpartition(".")[2]
        for folder in self._folders(path):
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                inner = f"{folder}{leaf}{suffix}"
                if inner in self.names:
                    extracted = self._extract(inner)
                    loader = importlib.machinery.ExtensionFileLoader(fullname, extracted)
                    return ModuleSpec(fullname, loader, origin=extracted)
        return None

    def _folders(self, path: Sequence[str] | None) -> list[str]:
        """The folders inside the archive a package's ``__path__`` names ("" for its root)."""
        if path is None:
            return [""]
        prefix = self.archive + os.sep
        return [p[len(prefix) :].replace(os.sep, "/") + "/" for p in path if p.startswith(prefix)]

    def _extract(self, inner: str) -> str:
        target = os.path.join(f"{self.archive}.native", *inner.split("/"))
        if os.path.exists(target):
            return target
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # the executor's Python workers import at once: each writes its own copy and renames it
        # into place, so none loads a half-written file
        partial = f"{target}.{os.getpid()}.partial"
        with zipfile.ZipFile(self.archive) as z, z.open(inner) as src, open(partial, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
        os.replace(partial, target)
        return target


def install(archive: str) -> None:
    """Load the extension modules of ``archive`` from now on (once per archive)."""
    if not any(isinstance(f, ZipExtensionFinder) and f.archive == archive for f in sys.meta_path):
        sys.meta_path.insert(0, ZipExtensionFinder(archive))
