"""Which Kafka release's kafka-dump-log.sh kdump prints like: the newest by default.

The tool's text changed between releases in a few places; each is a property here, named for
what it changes, so the code that prints reads ``if release.x`` and nothing compares numbers.

- 4.3: the tool is the Java port of the Scala one (KAFKA-14579). The time index summary names the
  file ("The following indexed offsets are not found in :<file>", 2401cac2) where older releases
  said "... not found in the log."; the Scala tool's quirks go: a legacy record's crc closed by a
  stray ``}``, `` payload:`` without the ``|`` indent when --skip-record-metadata leaves it first,
  a producer snapshot line without batch metadata ending in a space, index mismatches and
  non-consecutive offsets listed newest first as found (now sorted, one line per offset), and
  the NullPointerException text naming ``org.apache.kafka.common.record.Record`` (now
  ``...record.internal.Record``);
- 4.4: the transaction log decoder prints ``transactionStatus`` by name (``"CompleteCommit"``,
  KAFKA-20712; an id it does not know as ``"9"``); the transaction index is read with the
  generated AbortedTxn (KAFKA-19562): a version field other than int16 0 is refused ("...,
  supported version range is 0 to 0") where 4.3 looked at its first byte only and refused
  values above 0 ("..., current version is 0").

Broker defaults kdump startup reads differ too: ``recovery_threads_default``.
"""

from __future__ import annotations

from kdump.tuples import NamedTuple

RELEASES = ("4.0", "4.1", "4.2", "4.3", "4.4")
"""The releases whose text kdump reproduces (where two print alike, either name works)."""


class Release(NamedTuple):
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Release:
        major, _, minor = text.partition(".")
        return cls(int(major), int(minor))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"

    @property
    def names_file_of_unfound_offsets(self) -> bool:
        return self >= (4, 3)

    @property
    def legacy_crc_has_stray_brace(self) -> bool:
        return self < (4, 3)

    @property
    def indents_first_payload(self) -> bool:
        return self >= (4, 3)

    @property
    def snapshot_line_has_trailing_space(self) -> bool:
        return self < (4, 3)

    @property
    def sorts_summary_offsets(self) -> bool:
        return self >= (4, 3)

    @property
    def record_class(self) -> str:
        """The Record interface's name, as a NullPointerException about it prints it."""
        package = "org.apache.kafka.common.record" + (".internal" if self >= (4, 3) else "")
        return f"{package}.Record"

    @property
    def names_transaction_states(self) -> bool:
        return self >= (4, 4)

    @property
    def reads_generated_aborted_txn(self) -> bool:
        return self >= (4, 4)

    @property
    def recovery_threads_default(self) -> int:
        """num.recovery.threads.per.data.dir's default: 2 since 4.0 (KIP-1030), 1 before."""
        return 2 if self >= (4, 0) else 1


LATEST = Release.parse(RELEASES[-1])
