"""The one family of exceptions kdump raises; every one names a file and a byte position."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes documented in the README."""

    OK = 0
    WARNINGS = 1
    ERRORS = 2
    BAD_INPUT = 3


class KdumpError(Exception):
    """Base of every error kdump raises on purpose."""

    exit_code = ExitCode.BAD_INPUT


class FormatError(KdumpError):
    """Bytes that do not parse as what the file claims to be."""

    exit_code = ExitCode.ERRORS

    def __init__(self, path: str, position: int, message: str) -> None:
        super().__init__(f"{path}:{position}: {message}")
        self.path, self.position, self.reason = path, position, message


class CorruptBatchError(FormatError):
    """A batch header that cannot be right (size below the minimum, unknown magic)."""


class UnknownMagicError(CorruptBatchError):
    """A batch whose magic byte is none Kafka knows (0, 1, 2)."""


class CorruptRecordError(FormatError):
    """A record inside a batch that does not decode (bad varint, length past the end)."""


class DecompressionError(FormatError):
    """A compressed payload that does not decompress, or would exceed the size limit."""


class CorruptIndexError(FormatError):
    """An index file Kafka's own sanity check would reject."""


class InputError(KdumpError):
    """A path that cannot be read, or is not a Kafka file or directory."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path, self.reason = path, message


class UnreadableInputError(FormatError):
    """A file a command needs that does not parse (a checkpoint for ``kdump explain``): bad
    input, exit code 3, still naming the file and byte position."""

    exit_code = ExitCode.BAD_INPUT
