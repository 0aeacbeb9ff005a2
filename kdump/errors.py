"""The one family of exceptions kdump raises: each says why, and names the file and the byte
position where a file is at fault."""

from __future__ import annotations

import signal
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes documented in the README."""

    OK = 0
    WARNINGS = 1
    ERRORS = 2
    BAD_INPUT = 3
    PIPE_CLOSED = 141
    """The reader of standard output went away before the command had its answer (``kdump
    dump ... | head``): 128 + SIGPIPE, what a shell reports for ``yes | head -1``. A command
    that already had its answer when the reader left (verify, recover) exits with that."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT): 128 + the signal's number, what a shell reports. SIGTERM (cron,
    systemd, ``timeout``) exits 143 and SIGHUP 129 alike: see Interrupted."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal: SIGINT (Ctrl-C), SIGTERM (cron, systemd, ``timeout``)
    or SIGHUP (the terminal went away). The one contract for stopping, which kdump.cli sets up:

    - The first such signal raises Interrupted in the main thread, wherever it is, once. It is
      a KeyboardInterrupt, so ``except KeyboardInterrupt``, ``finally`` and ``with`` see SIGTERM
      as they see Ctrl-C. Catch it only to undo or to say what was and was not done, then
      re-raise: never to carry on.
    - Later signals are ignored while it unwinds, so an undo is not itself interrupted (SIGKILL
      still ends the process, and its workers with it).
    - Worker processes (kdump.parallel) ignore SIGINT, are stopped by the main process as the
      exception leaves the work, and die with it if it dies.
    - kdump.cli.main prints one line on stderr and exits 128 + ``signum``: 130, 143, 129.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


STOP_SIGNALS = frozenset(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that raise Interrupted (where the system has them)."""


class KdumpError(Exception):
    """Base of every error kdump raises on purpose: why (``reason``), and where when a file is
    at fault (``path``, and ``position``, the byte in it, when there is one). Prints as
    ``path:position: reason``."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, reason: str, path: str | None = None, position: int | None = None) -> None:
        self.reason, self.path, self.position = reason, path, position
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.path is None:
            return self.reason
        where = self.path if self.position is None else f"{self.path}:{self.position}"
        return f"{where}: {self.reason}"

    def __reduce__(self) -> tuple[object, ...]:
        # pickled whole (the fields, not the constructor's arguments): errors cross --jobs
        return (_restore, (type(self), self.__dict__))


def _restore(cls: type[KdumpError], state: dict[str, object]) -> KdumpError:
    error = cls.__new__(cls)
    error.__dict__.update(state)
    Exception.__init__(error, str(error))
    return error


class FormatError(KdumpError):
    """Bytes that do not parse as what the file claims to be."""

    exit_code = ExitCode.ERRORS
    path: str
    position: int

    def __init__(self, path: str, position: int, message: str) -> None:
        super().__init__(message, path, position)


class CorruptBatchError(FormatError):
    """A batch header that cannot be right (size below the minimum, unknown magic)."""


class UnknownMagicError(CorruptBatchError):
    """A batch whose magic byte is none Kafka knows (0, 1, 2)."""


class CorruptRecordError(FormatError):
    """A record inside a batch that does not decode (bad varint, length past the end)."""


class InvalidWrapperError(CorruptRecordError):
    """A v0/v1 compressed wrapper Kafka's deep iterator refuses (InvalidRecordException).

    The message is Kafka's own: AbstractLegacyRecordBatch.DeepRecordsIterator throws it, so
    kafka-dump-log.sh stops on it, consumers fail on it and a broker cannot serve it.
    """


class DecompressionError(FormatError):
    """A compressed payload that does not decompress, or would exceed the size limit."""


class CorruptIndexError(FormatError):
    """An index file Kafka's own sanity check would reject."""


class InputError(KdumpError):
    """A path that cannot be read, or is not a Kafka file or directory."""

    path: str

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message, path)


class StoreError(InputError):
    """An object store that could not be read (no such object, credentials refused, the
    connection failing after its retries): the run cannot go on without it, so it ends with
    this one line, exit 3, rather than becoming one finding among others."""

    def __init__(self, path: str, message: str, position: int | None = None) -> None:
        super().__init__(path, message)
        self.position = position
        Exception.__init__(self, str(self))


class DecryptionKeyError(InputError):
    """An encrypted segment (Aiven's) whose key was not given, or does not fit: one line
    naming the segment, exit 3."""


class OutputLimitError(KdumpError):
    """Output a command would write past a bound the user sets (``salvage --max-output-bytes``):
    the input decodes, but to more than that; one line naming where it stopped, exit 3, and
    nothing half-written."""


class UnreadableInputError(FormatError):
    """A file a command needs that does not parse (a checkpoint for ``kdump explain``): bad
    input, exit code 3, still naming the file and byte position."""

    exit_code = ExitCode.BAD_INPUT


def as_kdump_error(error: KdumpError | OSError, path: str) -> KdumpError:
    """An OSError met reading ``path``, as the InputError it is (kdump's errors as they are)."""
    if isinstance(error, KdumpError):
        return error
    return InputError(error.filename or path, error.strerror or str(error))
