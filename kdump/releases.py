"""Which Kafka release's kafka-dump-log.sh kdump prints like: the newest by default.

The tool's text changed between releases in a few places; each is a property here, named for
what it changes, so the code that prints reads ``if release.x`` and nothing compares numbers.

- 4.3: the time index summary names the file ("The following indexed offsets are not found in
  :<file>") where older releases said "... not found in the log.";
- 4.4: the transaction log decoder prints ``transactionStatus`` by name (``"CompleteCommit"``,
  KAFKA-20712; an id it does not know as ``"9"``); the transaction index is read with the
  generated AbortedTxn (KAFKA-19562): a version field other than int16 0 is refused ("...,
  supported version range is 0 to 0") where 4.3 looked at its first byte only and refused
  values above 0 ("..., current version is 0").
"""

from __future__ import annotations

from typing import NamedTuple

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
    def names_transaction_states(self) -> bool:
        return self >= (4, 4)

    @property
    def reads_generated_aborted_txn(self) -> bool:
        return self >= (4, 4)


LATEST = Release.parse(RELEASES[-1])
