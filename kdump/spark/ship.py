"""kdump shipped to the executors with each Spark application (issue 40).

The executors need a Python with pyspark's own requirements (pyarrow), not kdump: the driver
zips the kdump it runs (its pure-Python package with its C module, and the packages its
executor side imports: crcmod, crc32c, cramjam) and adds the zip to the session, as
``SparkContext.addPyFile`` (``--py-files``) or, on Spark Connect, as a Python artifact. Spark
puts it on every Python worker's path, ahead of whatever the executor has installed; the
extension modules inside load where the executor's platform matches the driver's
(kdump.shipped) and the executor runs kdump's pure Python where it does not
(kdump.spark.tasks tells the driver). Where a cluster forbids shipping code (``--no-ship``),
each task checks that the executor's own kdump is the driver's version (kdump.spark.remote).

A local master whose workers run this very interpreter needs nothing shipped.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

from kdump import __version__

PACKAGES = ("kdump", "crcmod", "crc32c", "cramjam")
"""kdump and the dependencies its executor side imports (click and rich: the command line's)."""
SKIPPED = (".c", ".pyc", ".pyi", ".partial")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
"""Every member's date: the same files give the same zip, and so the same name."""

_shipped: dict[str, str] = {}
"""Session key -> the zip's name, for each session kdump was added to."""
_directories: list[str] = []


def shipment_files() -> list[tuple[str, Path]]:
    """(name in the zip, file) of each file shipped, in a fixed order."""
    files = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue  # crc32c is optional: crcmod computes the same CRC
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in SKIPPED:
                files.append((f"{package}/{path.relative_to(root).as_posix()}", path))
    return files


def build_shipment(directory: str) -> str:
    """The zip of ``shipment_files`` in ``directory``, named after kdump's version and a digest
    of its content (Spark refuses a second file of one name with other content)."""
    files = [(name, path.read_bytes()) for name, path in shipment_files() if name != VERSION_FILE]
    files.append((VERSION_FILE, VERSION_TEMPLATE.format(__version__).encode()))
    files.sort()
    digest = hashlib.sha256()
    for name, data in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    version = re.sub(r"[^A-Za-z0-9._-]", "_", __version__)
    path = os.path.join(directory, f"kdump-{version}-{digest.hexdigest()[:12]}.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for name, data in files:
            info = zipfile.ZipInfo(name, _ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data, compresslevel=1)
    return path


VERSION_FILE = "kdump/_version.py"
VERSION_TEMPLATE = '''"""Written by a Spark driver running kdump {0} into what it shipped."""

__version__ = {0!r}
'''
"""The shipped version file: the version this driver runs, whatever the file on disk says now (a
build rewrites an editable install's, the tree's version, while the driver runs; a source tree
never built has none)."""


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (``--remote``): no SparkContext, no RDDs on this side."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def session_key(spark: SparkSession) -> str:
    if is_connect(spark):
        return f"connect:{spark.session_id}"  # type: ignore[attr-defined]
    return f"classic:{spark.sparkContext.applicationId}"


def needs_shipping(spark: SparkSession) -> bool:
    """Whether the executors may run another Python than this one: a cluster, Spark Connect, or
    a local master told to run another Python (spark.pyspark.python)."""
    if is_connect(spark):
        return True
    sc = spark.sparkContext
    if not (sc.master or "").startswith("local"):
        return True
    executors = sc.pythonExec or ""
    return os.path.abspath(executors) != os.path.abspath(sys.executable)


def ship(spark: SparkSession) -> str | None:
    """Add kdump to ``spark``'s executors, once per session; the zip's name, or None where
    nothing needs shipping."""
    if not needs_shipping(spark):
        return None
    key = session_key(spark)
    if key in _shipped:
        return _shipped[key]
    directory = tempfile.mkdtemp(prefix="kdump-ship-")
    try:
        path = build_shipment(directory)
        if is_connect(spark):
            spark.addArtifacts(path, pyfile=True)  # uploaded now: the zip is not needed after
        else:
            _directories.append(directory)  # served to the executors until the session ends
            spark.sparkContext.addPyFile(path)
            # addPyFile also puts it on this process's path (for local tests): the driver keeps
            # its own kdump and dependencies, which the zip's C modules are not loaded for here
            while os.path.join(_files_root(), os.path.basename(path)) in sys.path:
                sys.path.remove(os.path.join(_files_root(), os.path.basename(path)))
    finally:
        if directory not in _directories:
            shutil.rmtree(directory, ignore_errors=True)
    _shipped[key] = os.path.basename(path)
    return _shipped[key]


def _files_root() -> str:
    from pyspark import SparkFiles

    return SparkFiles.getRootDirectory()


@atexit.register
def remove_shipments() -> None:
    """The zips served to a session's executors (called when kdump's session stops, and at
    exit for a session of the caller's)."""
    while _directories:
        shutil.rmtree(_directories.pop(), ignore_errors=True)
    _shipped.clear()
