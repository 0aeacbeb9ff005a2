"""Every exception kdump defines, in one family: each says why, and names the file and the byte
position where a file is at fault.

The tree (exit codes: kdump.cli prints ``kdump: <the error>`` and exits with the error's
``exit_code``)::

    KeyboardInterrupt
        Interrupted             a stop signal (Ctrl-C, SIGTERM, SIGHUP); exit 128 + signal
    Exception
        KdumpError              why, and where; exit 3 (bad input) unless said
            FormatError         bytes that do not parse as what the file claims; exit 2
                CorruptBatchError
                    UnknownMagicError
                CorruptRecordError
                    InvalidWrapperError
                DecompressionError
                CorruptIndexError
                SnapshotCrcError
                UnreadableInputError    a file a command needs; exit 3
            InputError          a path that cannot be read, or is not Kafka's
                StoreError
                DecryptionKeyError
                ManifestError
                NotRegularError
            ConfigError         a setting Kafka would refuse
            DecoderLoadError    a decoder class that cannot be loaded
            LockHeldError       a log dir a running broker holds
            RepairError         a write that could not be done
            SparkUnavailable
            RemoteError         a Spark executor's KdumpError, on the driver
            -- raised inside a parser, where file and position are not known; its caller
               turns it into one of the above or into a finding:
            CodecError          a payload that does not decompress
            Malformed           a record field that does not decode
            DecodeError         a key or value its decoder cannot decode
            UnknownRecordType   a coordinator record type kdump has no schema for
            ReadBackError       a file kdump wrote and reads back, not as kdump writes it
            BudgetSpent         a read past verify's --budget: the segment is left unread
            MessageError        a Kafka message (schema-described) that does not read
                Underflow
                DecodeBound
                UnknownRecordVersion
                EarlyAccessLayout
                MetadataParseError
                    UnknownMetadataRecord

Interrupted is a KeyboardInterrupt, not a KdumpError, by design: ``except KdumpError`` must not
swallow a stop. Two private signals stay in the one function that raises and catches them
(kdump.cli's and kdump.repair.apply's ``_Stopped``): they are control flow, not errors.
"""

from __future__ import annotations

import signal
from enum import IntEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


class ExitCode(IntEnum):
    """Exit codes, documented in docs/exit-codes.md (the README has the short table)."""

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


def start_masked(workers: Sequence[Any]) -> None:
    """Start threads or processes with STOP_SIGNALS blocked; a signal sent meanwhile waits
    until they are all started, and then interrupts this thread."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        for worker in workers:
            worker.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


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


class SnapshotCrcError(FormatError):
    """A producer snapshot whose stored CRC does not match its bytes."""


class ManifestError(InputError):
    """An Aiven manifest (or what it describes) that kdump cannot read; ``position``: the byte of
    the manifest where the field at fault is named."""

    def __init__(self, path: str, message: str, position: int | None = None) -> None:
        super().__init__(path, message)
        self.position = position
        Exception.__init__(self, str(self))


class NotRegularError(InputError):
    """A name a repair would read or write that is not a regular file (a link, a FIFO...)."""

    def __init__(self, path: Path | str, what: str) -> None:
        super().__init__(
            str(path),
            f"{what}, not a regular file: kdump reads and writes only regular files in a "
            "broker's directories, never through a link",
        )


class ConfigError(KdumpError):
    """A setting Kafka would refuse, or a settings file kdump cannot read (exit code 3)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message, where)
        self.where = where


class DecoderLoadError(KdumpError):
    """A --key/--value-decoder-class that names nothing kdump can load (a usage error)."""


class LockHeldError(KdumpError):
    """A log dir whose .lock another process holds: a running broker, or whatever holds it
    (kdump.lock.LockHolder.refusal words it); ``pid`` is the holder's, where the system says."""

    def __init__(self, reason: str, path: str, pid: int | None) -> None:
        super().__init__(reason, path)
        self.pid = pid


class RepairError(KdumpError):
    """A write that could not be done; the message says what state the files are in."""

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(message, str(path))


class SparkUnavailable(KdumpError):
    """Spark could not start (no Java, a master that does not answer, a bad --conf)."""


class RemoteError(KdumpError):
    """A KdumpError an executor met, raised again on the driver with its text and exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = ExitCode(exit_code)


# -- raised inside parsers: their callers add the file and position --------------------------


class CodecError(KdumpError):
    """A payload that does not decompress; the caller adds file and position."""


class Malformed(KdumpError):
    """A field that does not decode, raised inside the record decoders (v2 in
    kdump.format.records, v0/v1 in kdump.format.legacy); they turn it into CorruptRecordError
    with a position."""


class DecodeError(KdumpError):
    """One key or value its decoder cannot decode; the message says why (kdump.decoders prints
    Kafka's "skipping" line with it)."""


class UnknownRecordType(KdumpError):
    """Deserializer.UnknownRecordTypeException: a coordinator record type without a schema."""

    def __init__(self, record_type: int) -> None:
        super().__init__(str(record_type))
        self.record_type = record_type


class MessageError(KdumpError):
    """A read of a schema-described message that fails; ``str()`` is what Kafka's exception
    getMessage() says."""

    def __init__(self, message: str | None) -> None:
        super().__init__("null" if message is None else message)


class ReadBackError(KdumpError, ValueError):
    """A value of a file kdump wrote and reads back (its state file, a verify result) that is
    not of the type or range kdump writes there (kdump.readback); ``where`` names the value
    (``summary.by_partition[3].bytes``). A ValueError too: a reader of kdump's own files that
    catches those (an older marker) goes on as before."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}" if where else what)
        self.where = where


class BudgetSpent(KdumpError):
    """A read went past the run's --budget (kdump.storage.reading.Budget): the segment it was
    for is left unread; nothing is wrong with it (kdump.checks.segment lets it through)."""

    def __init__(self) -> None:
        super().__init__("the run's --budget is spent")


class DecodeBound(MessageError):
    """A message holding more than kdump decodes of one (kdump.format.messages'
    MESSAGE_ELEMENTS): kdump's refusal, not Kafka's, so its words say why."""


class Underflow(MessageError):
    """java.nio.BufferUnderflowException, whose message is null."""

    def __init__(self) -> None:
        super().__init__(None)


class UnknownRecordVersion(MessageError):
    """Deserializer.UnknownRecordVersionException: a value version outside the schema's.

    ``key`` is the record's decoded key, which JSON Lines still shows.
    """

    def __init__(self, record_type: int, key: dict[str, Any], version: int, value: bytes) -> None:
        super().__init__(f"Found an unknown record version {version} for {record_type} type")
        self.record_type, self.key, self.version, self.value = record_type, key, version, value


class EarlyAccessLayout(MessageError):
    """A version 0 value that reads only under the layout Kafka 4.0's early access wrote.

    The message is the error today's layout gave (Kafka's text); ``data`` the old layout's.
    """

    def __init__(
        self, error: MessageError, record_type: int, key: dict[str, Any], data: dict[str, Any]
    ) -> None:
        super().__init__(str(error))
        self.record_type, self.key, self.data = record_type, key, data


class MetadataParseError(MessageError):
    """org.apache.kafka.server.common.serialization.MetadataParseException."""


class UnknownMetadataRecord(MetadataParseError):
    """A framed record kdump has no schema for (type) or no layout for (version).

    Kafka's texts: MetadataRecordType.fromId's UnsupportedVersionException, wrapped as
    MetadataParseException(cause) (whose message is the cause's toString()); a read that
    fails, "Failed to deserialize record with type T". ``facts`` is what JSON Lines shows.
    """

    def __init__(self, message: str, facts: dict[str, Any]) -> None:
        super().__init__(message)
        self.facts = facts


class NotCompiled(KdumpError):
    """kdump.format.compiled: the compiled reader cannot read these bytes whole; the caller asks
    the reference reader (kdump.format.messages), which gives Kafka's error. Never shown."""

    def __init__(self, reason: str = "not read whole by the compiled reader") -> None:
        super().__init__(reason)


class ReplayError(KdumpError):
    """kdump.kraft: a metadata record Kafka's image refuses (the IllegalStateException or
    RuntimeException its delta throws), in Kafka's words: MetadataBatchLoader hands it to the
    fault handler and goes on with the next record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)


def as_kdump_error(error: KdumpError | OSError, path: str) -> KdumpError:
    """An OSError met reading ``path``, as the InputError it is (kdump's errors as they are)."""
    if isinstance(error, KdumpError):
        return error
    return InputError(error.filename or path, error.strerror or str(error))


class CleaningFailed(KdumpError):
    """Where Kafka's Cleaner would throw (bytes that do not parse, an empty legacy batch to
    keep): the broker marks the partition uncleanable. The message names file and position."""
