"""kdump: dump, verify and repair Apache Kafka log segments without a JVM."""

__version__ = "0.1.0"
