"""kdump: dump, verify and repair Apache Kafka log segments without a JVM."""

from typing import Any

try:
    from kdump._version import __version__
except ImportError:  # a source tree never built or installed: setuptools-scm writes the file
    __version__ = "0+unknown"

_loader: Any = getattr(__spec__, "loader", None)
if type(_loader).__name__ == "zipimporter":  # shipped to a Spark executor: its C modules too
    from kdump.shipped import install

    install(_loader.archive)
