"""kdump: dump, verify and repair Apache Kafka log segments without a JVM."""

try:
    from kdump._version import __version__
except ImportError:  # a source tree never built or installed: setuptools-scm writes the file
    __version__ = "0+unknown"

if type(__loader__).__name__ == "zipimporter":  # shipped to a Spark executor: its C modules too
    from kdump.shipped import install

    install(__loader__.archive)  # type: ignore[attr-defined]
