"""Every finding code once: what it means, what the broker does about it at startup, the command
that fixes it (the ``fix`` a finding carries where kdump can repair it) and, for a finding that
carries no fix, what to do (its ``advice``).

``Finding.advice``, the HTML report and docs/findings.md (scripts/make_findings_doc.py) read
it; tests/test_findings_registry.py keeps it and the codes kdump's source creates the same.

The broker's behaviour is Kafka's own (trunk, 2024): LogLoader, LogSegment, ProducerStateManager,
LogManager, Partition.createLog, UnifiedLog; the classes are named where they help an operator
read the broker's log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kdump.checks.codes import Code
from kdump.checks.severity import Severity
from kdump.format.names import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)

ERROR, WARNING, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO


@dataclass(frozen=True)
class Case:
    """One way a code is reported: its severity and when. ``advice``: what to do where a finding
    of this case carries no fix; ``file``: the case of findings on this file name only."""

    severity: Severity
    when: str
    advice: str | None = None
    file: str | None = None


@dataclass(frozen=True)
class FindingCode:
    code: str
    area: str
    meaning: str
    at_startup: str
    """What the broker does about it when it starts (or, for what it does not meet then, what
    Kafka does about it)."""
    cases: tuple[Case, ...]
    fix: str | None = None
    """The command findings of this code carry where kdump can repair it; ``{...}`` stands for
    what each finding fills in."""

    def case_for(self, severity: Severity, path: str) -> Case | None:
        name = os.path.basename(path)
        for case in self.cases:
            if case.severity is severity and case.file in (None, name):
                return case
        return None


AREAS = {
    "log": "Segments (`.log`)",
    "index": "Offset indexes (`.index`)",
    "timeindex": "Time indexes (`.timeindex`)",
    "producer": "Transaction indexes and producer snapshots",
    "partition": "Partition directories",
    "compacted": "Compacted logs below the cleaner checkpoint (`kdump verify` of compacted topics)",
    "log dir": "Log directories",
    "kraft": "The KRaft metadata partition and its log dir (`kdump verify`, `kdump metadata`)",
    "txn": "Transactions (`kdump txn`)",
    "repair": "Repairs (`kdump recover`, `kdump rebuild-index`)",
    "replicas": "Replicas of a partition compared (`kdump replicas`)",
    "tiered": "Segments in tiered storage (`kdump verify` of remote segments)",
    "scrub": "A tiered-storage bucket against its metadata (`kdump tiered scrub`)",
    "export": "Record export (`kdump spark export`)",
}
"""The sections of docs/findings.md, in order."""

RECOVER = "kdump recover {partition dir}"
REBUILD = "kdump rebuild-index {segment .log}"
TRIM = "kdump trim-index {segment .log}"

# -- what recurs: the broker's recovery, and what to do about what it cuts ----------------------

RECOVERED = (
    "after an unclean shutdown, every segment from the recovery point on (LogLoader.recoverLog); "
    "at any start, one whose .index is missing or whose .txnindex fails its check"
)
CUT = (
    "After an unclean shutdown the broker recovers every segment from the recovery point on "
    "(LogLoader.recoverLog): LogSegment.recover truncates this one here and every later segment "
    "is deleted. A segment whose .index is missing is recovered at any start (truncated here, "
    "the later segments kept)."
)
SALVAGE_AFTER = (
    "`kdump salvage` the partition next: it writes out the whole batches of what recover kept"
)
"""Recover, then salvage (never the other way round): recover keeps the bytes it cuts and every
later segment it deletes, and salvage reads them back; salvage first sees only the damaged
segments, not the whole ones after them that recovery then deletes."""
CUT_ADVICE = (
    "Run `kdump recover` on the partition (for a segment in an object store: a local copy of "
    "it, uploaded again): it makes the broker's cut now and keeps the bytes it cuts and the "
    "later segments it deletes. A follower fetches the records cut again from the leader; on a "
    f"single replica, {SALVAGE_AFTER}."
)
REPLAY_STOPS = (
    "kdump txn: its replay of the producer state stops here, where recovery cuts the log "
    "(verify reports the error)"
)
REPLAY_ADVICE = (
    "The producer state kdump txn shows ends here; `kdump verify` reports the damage and its fix."
)
REFETCH = (
    "A follower replica whose partition directory is moved out of the log dir (broker stopped) "
    "starts empty and fetches the partition again from the leader: do it only while other "
    "in-sync replicas hold the data."
)
COMPARE = (
    "A replica that differs from the others in content (`kdump replicas` names keys, "
    "transactions and markers) is rebuilt from the leader: with the broker stopped, move its "
    "partition directory out of the log dir; it fetches the partition again. Do it only while "
    "other in-sync replicas hold the data."
)
KEPT_ADVICE = (
    "Recovery keeps this batch and kdump offers no fix. Consumers fail on it: move consumer "
    "groups past it (kafka-consumer-groups --reset-offsets) or delete the records up to it "
    "(kafka-delete-records); export what still decodes first (`kdump dump --print-data-log`)."
)
INDEX_LOAD = (
    "Kafka 2.3 and later do not check the offset and time indexes of the segments they load "
    f"(KAFKA-7283): the broker rebuilds them only for a segment it recovers ({RECOVERED}) and "
    "uses them as they are otherwise."
)
REBUILD_ADVICE = (
    "`kdump rebuild-index` rebuilds the segment's indexes from the log as LogSegment.recover "
    "does (for a segment in an object store: on a local copy, uploaded again). A segment whose "
    "offsets overflow is not rebuilt: the broker rebuilds its indexes when it splits it (see "
    "`LOG_OFFSET_OVERFLOW`)."
)
TIME_LOOKUPS = (
    "Lookups by time (ListOffsets, a consumer's offsetsForTimes) and time-based retention read "
    "the time index:"
)
TXN_REBUILD_ADVICE = (
    "With the broker stopped, `kdump rebuild-index` rebuilds the .txnindex from the log's ABORT "
    "markers as LogSegment.recover does. Do not just delete the file: the broker then serves "
    "the segment with no aborted transactions, and read_committed consumers receive aborted "
    "records."
)
SNAPSHOT_LOAD = (
    "When the broker loads producer state from this snapshot (the latest at or below the log "
    "end offset), ProducerStateManager.loadFromSnapshot logs 'Failed to load producer "
    "snapshot', deletes it and takes the next older one, or replays the log from its start "
    "(UnifiedLog.rebuildProducerState): a slower start, nothing lost."
)
SNAPSHOT_ADVICE = (
    "Nothing is lost: a snapshot only caches the producer state (idempotent producers' "
    "sequence numbers, open transactions) that the log holds. Leave it for the broker to "
    "delete, or move it aside with the broker stopped."
)
OFFLINE = (
    "Kafka's reader fails (CheckpointFileWithFailureHandler) and marks the log dir offline "
    "(LogDirFailureChannel): once the broker runs it stops serving every replica in that log "
    "dir (ReplicaManager.handleLogDirFailure), and halts if the dir holds the KRaft metadata "
    "log."
)
SANITY_AT_STARTUP = (
    f"{INDEX_LOAD} (Before Kafka 2.3 the broker ran this check on every segment at startup and "
    "rebuilt an index that failed it.)"
)
SANITY_CASES = (
    Case(
        INFO,
        "only the active segment's preallocated space fails it (the broker recovers the active "
        "segment after an unclean stop)",
    ),
    Case(WARNING, "otherwise", REBUILD_ADVICE),
)
PREALLOCATED_CASES = (
    Case(INFO, "the active segment"),
    Case(
        WARNING,
        "a closed segment (an unclean shutdown, or a copy taken while the broker wrote)",
        "`kdump trim-index` cuts the zero tail as the broker does when a segment rolls (for a "
        "segment in an object store: on a local copy, uploaded again).",
    ),
)
OVERSIZE_ADVICE = (
    "The message names where the limit came from. Indexes written before the topic's "
    "segment.index.bytes was lowered are larger, and harmless; a limit that is not the topic's "
    "(Kafka's default where no layer said) is corrected with --config "
    "segment.index.bytes=N, --describe-output or --metadata."
)
SCRUB_INPUT = "Not a broker matter: it is about what kdump was given to compare."
LOST_REMOTE_ADVICE = (
    "Restore the objects from a backup or the bucket's object versions. Otherwise those "
    "offsets are lost: delete the records up to the segment's end (kafka-delete-records) so "
    "consumers skip them, or move consumer groups past them."
)


def _code(
    code: str,
    area: str,
    meaning: str,
    at_startup: str,
    *cases: Case,
    fix: str | None = None,
) -> FindingCode:
    return FindingCode(code, area, meaning, at_startup, cases, fix)


def _cut(code: str, meaning: str, kept: str) -> FindingCode:
    """Damage recovery cuts the log at: verify's error, and kdump txn's warning where its
    replay of the producer state stops."""
    return _code(
        code,
        "log",
        meaning,
        f"{CUT} {kept}",
        Case(ERROR, "the damage is in the log (verify, recover, rebuild-index)", CUT_ADVICE),
        Case(WARNING, REPLAY_STOPS, REPLAY_ADVICE),
        fix=RECOVER,
    )


def _bad_entries(code: str, area: str, meaning: str, at_startup: str) -> FindingCode:
    """Index entries that send lookups to the wrong place: always an error, rebuilt."""
    return _code(
        code, area, meaning, at_startup, Case(ERROR, "always", REBUILD_ADVICE), fix=REBUILD
    )


CODES = (
    # -- segments -------------------------------------------------------------------------
    _cut(
        Code.LOG_TRUNCATED_TAIL,
        "Bytes after the segment's last whole batch that do not make a whole batch: a write "
        "torn by an unclean stop (power loss, kill -9, a full disk).",
        "A segment the broker does not recover keeps the bytes; reads stop before them.",
    ),
    _code(
        Code.LOG_ZERO_TAIL,
        "log",
        "Only zero bytes after the segment's last batch, to the end of the file: space the broker "
        "preallocated (log.preallocate), or a write a power loss did not finish (the file's new "
        "length reached the disk, its data did not). They hold no records.",
        f"{CUT} A clean shutdown trims a preallocated segment; one the broker does not recover "
        "keeps the zeros, and reads stop before them.",
        Case(
            WARNING,
            "always",
            "Nothing is lost: the broker's recovery truncates the zeros, and `kdump recover` does "
            "it now. In a segment before the last one the cut also deletes every later segment, "
            f"as recovery does (recover keeps them): on a single replica, {SALVAGE_AFTER}.",
        ),
        fix=RECOVER,
    ),
    _cut(
        Code.LOG_CORRUPT_BATCH,
        "A batch header no batch can have (a size below the 14-byte minimum, or larger than "
        "what is left of the file): nothing after it in the segment can be read.",
        "A segment the broker does not recover keeps it: fetches that reach it fail.",
    ),
    _cut(
        Code.LOG_UNKNOWN_MAGIC,
        "A batch whose magic byte (its format version) is not 0, 1 or 2: nothing after it in "
        "the segment can be read.",
        "A segment the broker does not recover keeps it: fetches that reach it fail.",
    ),
    _code(
        Code.LOG_CRC_MISMATCH,
        "log",
        "A batch whose stored CRC differs from its bytes (CRC-32C for v2 batches, CRC-32 for "
        "v0/v1 messages; with --deep also the inner messages of a v0/v1 compressed wrapper): "
        "bits changed on disk, or a torn write.",
        f"{CUT} A segment the broker does not recover keeps the batch: consumers that check CRCs "
        "(check.crcs, the default) fail on it and followers cannot append it. Recovery does "
        "not check the inner messages of a v0/v1 wrapper: it keeps them.",
        Case(
            ERROR,
            "a batch recovery refuses (verify, recover, rebuild-index); with --deep, an inner "
            "v0/v1 message recovery keeps, for which kdump offers no fix",
            f"{CUT_ADVICE} An inner v0/v1 message stays: move consumer groups past it "
            "(kafka-consumer-groups --reset-offsets) or delete the records up to it "
            "(kafka-delete-records).",
        ),
        Case(WARNING, REPLAY_STOPS, REPLAY_ADVICE),
        fix=RECOVER,
    ),
    _code(
        Code.LOG_OFFSET_BELOW_BASE,
        "log",
        "A batch whose offsets lie below the segment's base offset (the number in its file name).",
        "The broker loads it when the batch's last offset reaches the base (recovery checks "
        "only the last offset), but reads of the offsets below the file name go to the "
        "previous segment. A batch wholly below the base makes recovery fail "
        "(LogSegmentOffsetOverflowException, then a split that cannot help): the partition "
        "does not load and the broker stops starting. The message says which.",
        Case(
            ERROR,
            "verify (kdump recover renames the segment to its first batch's base offset where "
            "that overlaps no other segment)",
            "Where kdump offers no rename, dump both copies of the offsets (`kdump dump`), then "
            "move this segment's files out of the partition directory before the broker "
            f"starts: the partition loads without them. {REFETCH}",
        ),
        fix=RECOVER,
    ),
    _code(
        Code.LOG_OFFSET_NOT_INCREASING,
        "log",
        "A batch whose offsets do not rise: it starts at or below the previous batch's last "
        "offset, or its last offset is below its own base offset.",
        "Recovery keeps the batch (its CRC is valid) unless the index entry it gets is refused "
        "(OffsetIndex.append throws InvalidOffsetException): LogLoader.recoverLog then empties "
        "the whole segment and deletes every later one. Consumers may see offsets repeat or go "
        "back.",
        Case(
            ERROR,
            "verify; recover and rebuild-index where an index entry is refused",
            "kdump offers no fix (the batch's CRC is valid). Compare the copies of the offsets "
            f"(`kdump dump --offset-range`) before the broker starts. {REFETCH}",
        ),
    ),
    _code(
        Code.LOG_OFFSET_OVERFLOW,
        "log",
        "A batch more than 2^31-1 offsets past the segment's base offset: the indexes store "
        "offsets relative to the base in 32 bits and cannot address it (segments compacted by "
        "brokers before KAFKA-6264's fix).",
        "When the broker recovers this segment (after an unclean shutdown, or with its .index "
        "missing), LogSegment.recover throws LogSegmentOffsetOverflowException and LogLoader "
        "splits the segment into segments whose offsets fit (LocalLog.splitOverflowedSegment). "
        "A segment it does not recover is used as it is.",
        Case(
            ERROR,
            "verify; recover and rebuild-index, which leave the segment alone",
            "kdump does not split segments. To have the broker split it at its next start, "
            "move the segment's .index aside with the broker stopped: a segment with no offset "
            "index is recovered, and split.",
        ),
    ),
    _code(
        Code.LOG_OFFSET_GAP,
        "log",
        "Offsets missing between consecutive batches of a segment, counted per segment.",
        "Nothing: gaps are normal after compaction, and reads skip them.",
        Case(INFO, "always"),
    ),
    _code(
        Code.LOG_SEGMENT_OVERSIZE,
        "log",
        "A .log larger than its topic's segment.bytes (--segment-bytes: one for every partition).",
        "Nothing: segment.bytes decides when the broker rolls its active segment, not what it "
        "loads. Only a segment over 2 GiB does not load (FileRecords refuses it).",
        Case(
            WARNING,
            "always",
            "The message names where the limit came from. Segments written before the topic's "
            "segment.bytes was lowered are larger, and harmless; a limit that is not the topic's "
            "(Kafka's default where no layer said) is corrected with --config segment.bytes=N, "
            "--describe-output or --metadata.",
        ),
    ),
    _code(
        Code.LOG_RECORD_COUNT_MISMATCH,
        "log",
        "--deep: a v2 batch whose record count differs from the records it holds.",
        "Nothing: recovery checks a batch's CRC and size, not its records, so it keeps the "
        "batch; consumers fail when they decode it.",
        Case(ERROR, "always", KEPT_ADVICE),
    ),
    _code(
        Code.LOG_RECORD_OFFSET_OUT_OF_BATCH,
        "log",
        "--deep: a record whose offset lies outside its batch's offsets.",
        "Nothing: recovery does not decode records, so it keeps the batch; consumers fail on it.",
        Case(ERROR, "always", KEPT_ADVICE),
    ),
    _code(
        Code.LOG_MAX_TIMESTAMP_MISMATCH,
        "log",
        "--deep: the batch's max timestamp is not its records' largest timestamp.",
        "Nothing: the broker keeps the batch; time index entries, segment rolls and time-based "
        "retention go by the batch's max timestamp.",
        Case(
            ERROR,
            "a record's timestamp is above the batch's max timestamp",
            "Nothing to repair for reads. Lookups by time may miss that record and retention "
            "may delete its segment earlier than the record's age says.",
        ),
        Case(INFO, "the records' largest timestamp is below it (compaction keeps the batch's)"),
    ),
    _code(
        Code.LOG_CORRUPT_RECORD,
        "log",
        "--deep: a record, or a compressed payload, that does not decode.",
        "Nothing: recovery does not decode records, so it keeps the batch; consumers fail on it.",
        Case(ERROR, "always", KEPT_ADVICE),
    ),
    _code(
        Code.LOG_LEGACY_WRAPPER_INVALID,
        "log",
        "A v0/v1 compressed wrapper Kafka's deep iterator refuses (zstd inside a v0/v1 message, "
        "or a v1 wrapper offset below its last inner offset): no consumer can read it.",
        "Nothing: recovery checks only the wrapper's CRC and keeps it.",
        Case(ERROR, "always", KEPT_ADVICE),
    ),
    # -- offset indexes -------------------------------------------------------------------
    _code(
        Code.INDEX_MISALIGNED,
        "index",
        "An .index whose size is not a multiple of the 8-byte entry: a torn write or a copy "
        "cut short.",
        f"{INDEX_LOAD} It reads the whole entries and ignores the partial one.",
        Case(WARNING, "always", REBUILD_ADVICE),
        fix=REBUILD,
    ),
    _code(
        Code.INDEX_OVERSIZE,
        "index",
        "An .index larger than its topic's segment.index.bytes (--max-index-size: one for every "
        "partition).",
        "Nothing: the broker preallocates an active segment's index to segment.index.bytes and "
        "trims it when the segment rolls, so an index this large was written under a larger "
        "setting.",
        Case(WARNING, "always", OVERSIZE_ADVICE),
    ),
    _code(
        Code.INDEX_PREALLOCATED,
        "index",
        "Zero-filled bytes after the index's entries: space the broker preallocates for an "
        "active segment's index.",
        "An active segment keeps it while it appends; the broker trims it when the segment "
        "rolls and at a clean shutdown. A closed segment keeps it unless the broker recovers "
        "the segment, and its zero entries are read as entries (AbstractIndex counts entries "
        "from the file's size): offset lookups through them go wrong.",
        *PREALLOCATED_CASES,
        fix=TRIM,
    ),
    _code(
        Code.INDEX_SANITY_CHECK_FAILS,
        "index",
        "The index fails Kafka's OffsetIndex.sanityCheck, the check `kafka-dump-log.sh "
        "--index-sanity-check` runs: a size that is not a multiple of 8, or a last entry below "
        "the base offset.",
        SANITY_AT_STARTUP,
        *SANITY_CASES,
        fix=REBUILD,
    ),
    _bad_entries(
        Code.INDEX_NOT_MONOTONIC,
        "index",
        "Entries that do not strictly rise in both offset and position.",
        f"{INDEX_LOAD} Its binary search may land on the wrong batch: fetches start at the "
        "wrong place.",
    ),
    _bad_entries(
        Code.INDEX_OFFSET_OUT_OF_RANGE,
        "index",
        "An entry whose offset lies outside the segment's offsets.",
        f"{INDEX_LOAD} Lookups through the entry start at the wrong place.",
    ),
    _bad_entries(
        Code.INDEX_POSITION_BEYOND_LOG,
        "index",
        "An entry whose position lies past the log's readable bytes.",
        f"{INDEX_LOAD} Lookups through the entry read past the data and find nothing.",
    ),
    _bad_entries(
        Code.INDEX_POSITION_NOT_BATCH_BOUNDARY,
        "index",
        "An entry whose position is not where a batch starts.",
        f"{INDEX_LOAD} Lookups through the entry start reading inside a batch and fail.",
    ),
    _bad_entries(
        Code.INDEX_UNSAFE_ENTRY,
        "index",
        "An entry whose offset the batch before its position already reaches: a lookup of that "
        "offset starts past the batch holding it.",
        f"{INDEX_LOAD} Fetches from such offsets miss records.",
    ),
    _code(
        Code.INDEX_MULTI_BATCH_ENTRY,
        "index",
        "Entries that map an append's last offset to the position of its first batch, as "
        "brokers write them for appends of several batches: safe, though kafka-dump-log.sh "
        "reports them as mismatches.",
        "Nothing: lookups through them are right.",
        Case(INFO, "always"),
    ),
    _code(
        Code.INDEX_DENSER_THAN_INTERVAL,
        "index",
        "With --index-interval-bytes N: entries at most N bytes of .log apart, so a smaller "
        "index.interval.bytes was in force when they were written (sparser entries are "
        "normal).",
        "Nothing: the index is correct; the message says how far a lookup reads past its "
        "entry at most.",
        Case(INFO, "always"),
    ),
    _code(
        Code.INDEX_MISSING,
        "index",
        "A .log holding data with no .index beside it.",
        "LogLoader finds no offset index (NoSuchFileException) and recovers the segment: it "
        "rebuilds both indexes, and cuts the log at its first invalid batch if it has one.",
        Case(
            WARNING,
            "always",
            "Nothing is lost: the broker rebuilds it at startup (recovering the segment, which "
            "takes time for a large one); `kdump rebuild-index` does it now.",
        ),
        fix=REBUILD,
    ),
    _code(
        Code.INDEX_ORPHAN,
        "index",
        "An index file (.index, .timeindex or .txnindex) with no .log of the same base offset.",
        "LogLoader deletes it ('Found an orphaned index file').",
        Case(
            WARNING,
            "verify (which offers `rm`); recover and rebuild-index, which leave it",
            "Nothing to do: the broker deletes it at startup. Check that the .log was deleted "
            "on purpose (retention, or by hand) and not lost.",
        ),
        fix="rm {index file}",
    ),
    # -- time indexes ---------------------------------------------------------------------
    _code(
        Code.TIMEINDEX_MISALIGNED,
        "timeindex",
        "A .timeindex whose size is not a multiple of the 12-byte entry: a torn write or a "
        "copy cut short.",
        f"{INDEX_LOAD} It reads the whole entries and ignores the partial one.",
        Case(WARNING, "always", REBUILD_ADVICE),
        fix=REBUILD,
    ),
    _code(
        Code.TIMEINDEX_OVERSIZE,
        "timeindex",
        "A .timeindex larger than its topic's segment.index.bytes (--max-index-size: one for "
        "every partition).",
        "Nothing: as for the offset index, the size tells only that it was written under a "
        "larger setting.",
        Case(WARNING, "always", OVERSIZE_ADVICE),
    ),
    _code(
        Code.TIMEINDEX_PREALLOCATED,
        "timeindex",
        "Zero-filled bytes after the time index's entries: space the broker preallocates for "
        "an active segment's index.",
        "An active segment keeps it while it appends; the broker trims it when the segment "
        "rolls and at a clean shutdown. A closed segment keeps it unless the broker recovers "
        "the segment, and the last zero entry is then read as the segment's largest timestamp "
        "(0, in 1970): time-based retention may delete the segment at its next check.",
        *PREALLOCATED_CASES,
        fix=TRIM,
    ),
    _code(
        Code.TIMEINDEX_SANITY_CHECK_FAILS,
        "timeindex",
        "The time index fails Kafka's TimeIndex.sanityCheck, the check `kafka-dump-log.sh "
        "--index-sanity-check` runs: a size that is not a multiple of 12, a last entry below "
        "the base offset, or a last timestamp below the first.",
        SANITY_AT_STARTUP,
        *SANITY_CASES,
        fix=REBUILD,
    ),
    _bad_entries(
        Code.TIMEINDEX_NOT_MONOTONIC,
        "timeindex",
        "Entries whose timestamps do not strictly rise, or whose offsets fall.",
        f"{INDEX_LOAD} {TIME_LOOKUPS} they may land on the wrong batch.",
    ),
    _bad_entries(
        Code.TIMEINDEX_OFFSET_NOT_FOUND,
        "timeindex",
        "An entry whose offset no batch of the segment holds.",
        f"{INDEX_LOAD} {TIME_LOOKUPS} they may return the wrong offset.",
    ),
    _bad_entries(
        Code.TIMEINDEX_TIMESTAMP_MISMATCH,
        "timeindex",
        "An entry whose timestamp is not the max timestamp of the batch holding its offset.",
        f"{INDEX_LOAD} {TIME_LOOKUPS} they may return the wrong offset.",
    ),
    _bad_entries(
        Code.TIMEINDEX_BEHIND_MAX,
        "timeindex",
        "An entry whose timestamp an earlier batch already exceeds.",
        f"{INDEX_LOAD} {TIME_LOOKUPS} lookups skip the earlier batch's records.",
    ),
    _code(
        Code.TIMEINDEX_ENTRY_INSIDE_BATCH,
        "timeindex",
        "Entries naming the record with the largest timestamp inside its batch rather than "
        "the batch's last offset, as brokers before Kafka 3.8 wrote them (KAFKA-16310).",
        "Nothing: lookups by time are right either way; `kafka-dump-log.sh "
        "--verify-index-only` reports each as a mismatch.",
        Case(INFO, "always"),
    ),
    _code(
        Code.TIMEINDEX_MISSING_FINAL_ENTRY,
        "timeindex",
        "A closed segment whose last time index entry is not its largest timestamp (a clean "
        "roll appends that entry).",
        f"{INDEX_LOAD} The broker takes the last entry as the segment's largest timestamp: "
        "time-based retention may delete the segment early, and lookups of later timestamps "
        "skip it.",
        Case(WARNING, "always", REBUILD_ADVICE),
        fix=REBUILD,
    ),
    _code(
        Code.TIMEINDEX_MISSING,
        "timeindex",
        "A segment with an offset index and timestamps but no .timeindex.",
        "LogLoader creates an empty time index for it and fills it only if it recovers the "
        "segment: lookups by time skip the segment, and time-based retention goes by the "
        "file's modification time.",
        Case(
            WARNING,
            "always",
            "`kdump rebuild-index` writes it from the log (for a segment in an object store: on "
            "a local copy, uploaded again).",
        ),
        fix=REBUILD,
    ),
    # -- transaction indexes and producer snapshots --------------------------------------------
    _code(
        Code.TXNINDEX_MISALIGNED,
        "producer",
        "A .txnindex whose size is not a multiple of the 34-byte entry.",
        "Kafka reads the whole entries and ignores the partial one (TransactionIndex); it "
        "rebuilds the file only when it recovers the segment. An active segment's next aborted "
        "transactions are appended after the partial bytes, where no reader finds them whole.",
        Case(WARNING, "always", TXN_REBUILD_ADVICE),
    ),
    _code(
        Code.TXNINDEX_CORRUPT,
        "producer",
        "An entry whose version is not 0, the only one Kafka writes.",
        "LogLoader reads every entry when it loads the segment (TransactionIndex.sanityCheck): "
        "an entry version above 0 throws a KafkaException it does not catch, so the log does "
        "not load and the broker stops starting.",
        Case(ERROR, "always", TXN_REBUILD_ADVICE),
    ),
    _code(
        Code.TXNINDEX_NOT_MONOTONIC,
        "producer",
        "Aborted transactions not in the order of their ABORT markers.",
        "Nothing unless the broker recovers the segment (it rebuilds the .txnindex then): "
        "read_committed fetches read it as it is (TransactionIndex.collectAbortedTxns) and may "
        "stop early, returning aborted records.",
        Case(ERROR, "always", TXN_REBUILD_ADVICE),
    ),
    _code(
        Code.TXNINDEX_OUT_OF_RANGE,
        "producer",
        "An aborted transaction that does not end inside its segment.",
        "One ending below the segment's base offset fails TransactionIndex.sanityCheck when the "
        "broker loads the segment: it recovers the segment, rebuilding its indexes. One ending "
        "past the segment's last offset passes: read_committed consumers may skip that "
        "producer's transactional records from its first offset on as aborted.",
        Case(ERROR, "always", TXN_REBUILD_ADVICE),
    ),
    _code(
        Code.SNAPSHOT_CRC_MISMATCH,
        "producer",
        "A producer state snapshot whose CRC-32C does not match its bytes.",
        SNAPSHOT_LOAD,
        Case(WARNING, "always", SNAPSHOT_ADVICE),
    ),
    _code(
        Code.SNAPSHOT_CORRUPT,
        "producer",
        "A producer state snapshot that does not parse (Kafka: 'Snapshot failed schema "
        "validation').",
        SNAPSHOT_LOAD,
        Case(
            WARNING,
            "verify; recover, rebuild-index and txn, which skip it as the broker does",
            SNAPSHOT_ADVICE,
        ),
    ),
    _code(
        Code.SNAPSHOT_BEYOND_LOG_END,
        "producer",
        "A producer state snapshot above the log end offset, left by a log that was cut.",
        "ProducerStateManager.truncateAndReload deletes every snapshot above the log end "
        "offset before it loads one.",
        Case(
            WARNING,
            "always",
            "Nothing is lost: the broker deletes it at startup; `kdump recover` does it now.",
        ),
        fix=RECOVER,
    ),
    # -- partition directories ------------------------------------------------------------
    _code(
        Code.PARTITION_SEGMENT_OVERLAP,
        "partition",
        "A segment starting at or below the previous segment's last offset: two segments hold "
        "the same offsets.",
        "The broker does not compare segments when it loads them: a read of an offset goes to "
        "the segment with the greatest base offset at or below it, so one copy of the "
        "overlapping offsets is never read, and consumers reading across may see offsets "
        "repeat.",
        Case(
            ERROR,
            "a local log",
            "Dump both segments (`kdump dump`) to see which copy of the offsets is right; with "
            f"the broker stopped, move the other one's files out of the partition directory. "
            f"{REFETCH}",
        ),
        Case(
            WARNING,
            "remote storage: two uploads of the same offsets (normal after a leader change "
            "until Kafka deletes the one it does not reference)",
            "`kdump tiered scrub --metadata` tells which upload __remote_log_metadata "
            "references; Kafka deletes the other by retention.",
        ),
    ),
    _code(
        Code.PARTITION_OFFSET_GAP,
        "partition",
        "Offsets that lie in no segment, between two segments.",
        "Nothing: the broker does not look for gaps between segments; a read of those offsets "
        "returns the next segment's records.",
        Case(
            INFO,
            "a compacted topic (an internal one, or segments showing the cleaner's work): the "
            "cleaner leaves out the records it removes",
        ),
        Case(
            WARNING,
            "otherwise: records are missing, cut by an earlier `kdump recover` (the kept file "
            "named) or in a segment removed by hand or lost (retention deletes from the log start "
            "only)",
            "Where kdump recover cut them, `kdump salvage` writes out what the kept file holds. "
            "Otherwise they exist only on other replicas: dump their copies of those offsets "
            f"(`kdump dump --offset-range`). {REFETCH}",
        ),
    ),
    _code(
        Code.PARTITION_LEFTOVER_FILE,
        "partition",
        "A .swap or .cleaned file a compaction or segment split left unfinished, a segment "
        "file a pending swap replaces, or a .deleted file: one the broker took out of the log "
        "and deletes file.delete.delay.ms later. The message says what the broker does with it.",
        "LogLoader settles them before it loads the segments "
        "(removeTempFilesAndCollectSwapFiles): it deletes .deleted and .cleaned files and the "
        ".swap files of an interrupted split, and renames a compaction's .swap files into "
        "place, deleting the segments they replace.",
        Case(
            WARNING,
            "always (the fix on a local log dir)",
            "Let the broker start: it finishes the work (`kdump recover` does the same on a local "
            "log dir, keeping every file it deletes). Do not delete a .swap file by hand: once the "
            "segments it replaces are renamed .deleted it holds the only copy of their records.",
        ),
        Case(
            INFO,
            "a .deleted file: retention, a cleaning or a truncation took it out of the log and "
            "the broker deletes it a minute later (file.delete.delay.ms); a broker stopped "
            "within that minute leaves it (seen on Kafka 4.0 and 4.4: "
            "tests/test_kafka_leftovers.py). A .cleaned file beside the segment it was cleaned "
            "from: a cleaning the broker stopped before its swap (Cleaner.cleanSegments deletes "
            "its output when a cleaning is aborted, not when the broker stops)",
            "Nothing: the broker deletes it at its next start. It is not part of the log.",
        ),
        fix=RECOVER,
    ),
    _code(
        Code.PARTITION_LOAD_FAILS,
        "partition",
        "The broker's next load of this partition throws: after a clean shutdown it does not "
        "recover the active segment, reads its log end from the offset index's last entry on "
        "(LogSegment.readNextOffset) and meets bytes FileLogInputStream refuses (a batch size "
        "below 14: zeros a power loss left after the marker was written).",
        "LogManager.loadLogs rethrows the CorruptRecordException: the broker stops starting. "
        "Checked against Kafka's own LogManager on such a copy (tests/test_kafka_damage.py).",
        Case(
            ERROR,
            "always",
            "`kdump recover` cuts the bytes now, as recovery would (kept beside); removing "
            "`.kafka_cleanshutdown` instead makes the broker recover the segments from the "
            "recovery point on, which cuts them too.",
        ),
        fix=RECOVER,
    ),
    _code(
        Code.PARTITION_KDUMP_LEFTOVER,
        "partition",
        "A temporary file of a kdump run stopped by force (SIGKILL, a power loss): "
        "`.NAME.kdump-tmp-PID-...`, no file of Kafka's.",
        "Nothing: Kafka ignores it (no segment suffix).",
        Case(
            WARNING,
            "always (the fix on a local log dir)",
            "Delete it: it is of no use; kdump's next repair of the partition removes it.",
        ),
        fix=RECOVER,
    ),
    _code(
        Code.PARTITION_KDUMP_KEPT,
        "partition",
        "Files a kdump repair kept: the log bytes a cut removed (`NAME.log.kdump-cut-POSITION`) "
        "or a segment it deleted (`NAME.log.kdump-bak`), the message says what they hold; and "
        "the index files and producer snapshots it replaced or deleted (`NAME.kdump-bak`), "
        "each named.",
        "Nothing: Kafka ignores them (no segment suffix).",
        Case(
            INFO,
            "always (`kdump salvage` writes out the records of their whole batches; remove them "
            "once safe; zeros, bytes with no readable batch, index files and snapshots: nothing "
            "to salvage, remove them)",
        ),
    ),
    _code(
        Code.PARTITION_METADATA_CORRUPT,
        "partition",
        "A partition.metadata (the partition's topic id) that does not parse.",
        "The broker cannot read the topic id (PartitionMetadataFile.read): the partition does "
        "not load, and the log dir is marked offline (LogDirFailureChannel), so the broker stops "
        "serving every replica in it, and halts if the dir holds the KRaft metadata log.",
        Case(
            WARNING,
            "always",
            "With the broker stopped, delete partition.metadata: the broker writes it again from "
            "the topic id of the cluster's metadata (UnifiedLog.assignTopicId). Check first that "
            "the directory belongs to the topic that exists now: one left by an older, deleted "
            "topic of the same name must go instead.",
        ),
    ),
    _code(
        Code.LEADER_EPOCH_INCONSISTENT,
        "partition",
        "The leader-epoch-checkpoint disagrees with the leader epochs the batches carry "
        "(partitionLeaderEpoch), or does not parse.",
        "LogLoader truncates the leader epoch cache to the log start and to the log end after "
        "recovery (LeaderEpochFileCache) and keeps the rest: the cache answers followers' "
        "OffsetsForLeaderEpoch requests, which decide where a follower truncates after a leader "
        "change, so a wrong entry can make it truncate too much or keep divergent records. A "
        "file that does not parse is an I/O error to Kafka: the log dir goes offline.",
        Case(
            WARNING,
            "always",
            "Compare it with the other replicas' leader-epoch-checkpoint of the partition. "
            f"{REFETCH}",
        ),
    ),
    _code(
        Code.SEGMENT_CHANGED,
        "log",
        "A closed segment verified clean by an earlier run (verify --state) whose .log changed "
        "in place since: same file (device and inode), other size, modification time or first "
        "or last batch header. A broker never writes a closed segment: the cleaner writes a new "
        "file and swaps it in (a new inode, not this finding).",
        "Nothing, unless the change left damage: the segment is verified again in the same run "
        "and any damage has its own finding. LogLoader's recovery after an unclean shutdown "
        "truncates segments past the recovery point, and is the one broker path that writes "
        "a closed segment.",
        Case(
            WARNING,
            "verify --state",
            "Find what wrote the file (a restore, a copy tool, an operator, a disk problem): "
            "check the broker's log for an unclean shutdown and recovery at that time.",
        ),
    ),
    _code(
        Code.FILE_UNREADABLE,
        "partition",
        "A file that cannot be read: permissions, an I/O error, an object gone from its store.",
        "LogLoader refuses a file it cannot read ('Could not read file'): the log dir goes "
        "offline (LogManager.loadLogs) and the broker serves none of its replicas.",
        Case(
            ERROR,
            "verify (exit code 3: a path it cannot read), spark verify",
            "Check the file's owner and mode (the broker's user must read it) and the disk (the "
            "kernel log), then verify again.",
        ),
        Case(
            WARNING,
            "kdump txn: its replay of the producer state stops before the segment",
            "Check the file's owner and mode and the disk, then run kdump txn again.",
        ),
    ),
    # -- compacted logs below the cleaner checkpoint ------------------------------------------
    _code(
        Code.COMPACTED_KEY_REPEATED,
        "compacted",
        "A key held twice below the partition's cleaner-offset-checkpoint entry. A cleaning "
        "keeps one record of each key there (Cleaner.shouldRetainRecord keeps a record only at "
        "the offset its key map holds; keys not in the map were held once by the pass before): "
        "this section was not left so by Kafka's cleaner (records fetched back after a "
        "cleaning, segments copied in), or two keys share an MD5, which the cleaner itself "
        "would have taken for one.",
        "Nothing at startup. The cleaner builds its key map from the dirty section only (above "
        "the checkpoint): both records stay until the key is written again, when the next "
        "cleaning drops both.",
        Case(
            WARNING,
            "always",
            "Consumers that rebuild state from the topic apply both records in offset order, "
            "so the later one wins as it would have: nothing reads wrong. The partition is not "
            f"as its cleaner left it, though: compare its replicas (`kdump replicas`). {COMPARE}",
        ),
    ),
    _code(
        Code.COMPACTED_TOMBSTONE_UNSTAMPED,
        "compacted",
        "A tombstone (a record with a null value, v2 batch) below the cleaner checkpoint in a "
        "batch with no delete horizon. A cleaning that keeps a tombstone stamps its batch with "
        "the cleaning's time + delete.retention.ms (MemoryRecords.filterTo, KIP-534, Kafka "
        "3.1), so a section cleaned by Kafka 3.1 or later holds none: this one was last "
        "cleaned by an older Kafka, or was not left so by the cleaner.",
        "Nothing at startup; the next cleaning stamps the batch, and a cleaning after that "
        "horizon drops the tombstone.",
        Case(
            WARNING,
            "always",
            "Nothing reads wrong: consumers see the deletion, which lasts until a cleaning "
            "after its new horizon. On a broker that has run Kafka 3.1 or later since this "
            f"section was cleaned, compare its replicas (`kdump replicas`). {COMPARE}",
        ),
    ),
    _code(
        Code.COMPACTED_TOMBSTONE_EXPIRED,
        "compacted",
        "Tombstones below the cleaner checkpoint whose delete horizon a cleaning has passed. "
        "A cleaning drops a tombstone whose horizon is at or before its time "
        "(shouldRetainRecord); each pass stamps the batches it stamps with its time + "
        "delete.retention.ms, so the latest horizon in the partition less delete.retention.ms "
        "is a time at or before the last cleaning. The message names both and where "
        "delete.retention.ms came from.",
        "Nothing at startup; the next cleaning drops them.",
        Case(
            WARNING,
            "always",
            "If delete.retention.ms was lowered since the latest horizon was stamped, or the "
            "value used is not the topic's (give the KRaft metadata, --config "
            "delete.retention.ms=..., or the broker's --server-properties), this finding is "
            "wrong. Otherwise the section is not as the cleaner left it: nothing reads wrong "
            "(a deletion stays a deletion), but compare its replicas (`kdump replicas`). "
            f"{COMPARE}",
        ),
    ),
    _code(
        Code.COMPACTED_MARKER_EXPIRED,
        "compacted",
        "Transaction markers (COMMIT or ABORT) below the cleaner checkpoint whose transaction "
        "has no batch left and whose delete horizon a cleaning has passed: such a cleaning "
        "drops the marker's record (checkBatchRetention: discardBatchRecords). The last "
        "cleaning's time is worked out as for COMPACTED_TOMBSTONE_EXPIRED.",
        "Nothing at startup; the next cleaning drops them (a producer's last batch stays, empty).",
        Case(
            WARNING,
            "always",
            "Nothing reads wrong: a marker with no records before it ends an empty "
            "transaction. As for COMPACTED_TOMBSTONE_EXPIRED, a lowered delete.retention.ms or "
            "the wrong settings make this finding wrong; otherwise compare the partition's "
            f"replicas (`kdump replicas`). {COMPARE}",
        ),
    ),
    _code(
        Code.COMPACTED_ABORTED_KEPT,
        "compacted",
        "Records of an aborted transaction (its ABORT marker read) below the cleaner "
        "checkpoint. A cleaning drops the records of every transaction it knows aborted "
        "(Cleaner: checkBatchRetention, discardBatchRecords), keeping at most a producer's "
        "last batch, empty; it knows a transaction aborted from the .txnindex.",
        "Nothing at startup. Where the .txnindex lists the transaction, the next cleaning "
        "drops the records; where it does not, the cleaner keeps them and read_committed "
        "consumers, which skip only the transactions the .txnindex lists, read them as "
        "committed (the 2026 disclosure's 'aborted data served as committed').",
        Case(
            ERROR,
            "no .txnindex entry lists the transaction: read_committed consumers read its records",
            "Compare the partition's replicas (`kdump replicas`): a replica whose .txnindex "
            "lists the transaction serves it right. Consumer groups that read these records "
            "took aborted data as committed: move them back before it if that matters "
            f"(kafka-consumer-groups --reset-offsets). {REFETCH}",
        ),
        Case(
            WARNING,
            "the .txnindex lists the transaction: consumers skip the records",
            "Nothing reads wrong and the next cleaning removes the records; the section is not "
            "as the cleaner left it: compare the partition's replicas (`kdump replicas`). "
            f"{COMPARE}",
        ),
    ),
    _code(
        Code.COMPACTED_KEY_CHECK_LIMITED,
        "compacted",
        "The key check of a compacted log below its cleaner checkpoint did not cover all of "
        "it: it holds at most --compaction-key-memory bytes of keys (about 128 bytes a key; "
        "128 MiB by default, the broker's dedupe buffer) and was full; keys met for the first "
        "time from the offset named on are not checked for repeats (those held still are).",
        "Nothing: a fact about the check, not the log.",
        Case(INFO, "always"),
    ),
    # -- log directories ------------------------------------------------------------------
    _code(
        Code.LOG_DIR_LOCKED,
        "log dir",
        "Another process holds the log dir's .lock: a broker runs on it. Findings in active "
        "segments may be the broker at work, and repairs refuse to run.",
        "Nothing: it is the broker's own lock (LogManager.lockLogDirs).",
        Case(INFO, "always"),
    ),
    _code(
        Code.CHECKPOINT_CORRUPT,
        "log dir",
        "An offset checkpoint of the log dir (recovery-point-offset-checkpoint, "
        "log-start-offset-checkpoint, replication-offset-checkpoint, cleaner-offset-checkpoint) "
        "that does not parse.",
        f"{OFFLINE} Loading goes on without the file's entries: without recovery points every "
        "segment of an uncleanly stopped log dir is recovered, without log start offsets each "
        "log starts at its first segment.",
        Case(
            WARNING,
            "verify; kdump txn, which reads the file as absent",
            "With the broker stopped, move the file out of the log dir: Kafka creates it empty "
            "and writes it again at its next checkpoint. Until then the broker recovers every "
            "segment after an unclean stop (recovery points), starts each log at its first "
            "segment (log start offsets: records deleted below it are readable until retention "
            "runs), starts each high watermark at the log start until the replicas' fetches "
            "raise it (replication offsets), or cleans compacted logs from their start "
            "(cleaner offsets).",
        ),
    ),
    _code(
        Code.CHECKPOINT_BEYOND_LOG_END,
        "log dir",
        "An entry of a log dir's checkpoint beyond the partition's log end offset, as the "
        "broker has it after recovery's cut: the records up to that offset are not all on "
        "this replica.",
        "Recovery point: LogLoader.recoverLog clamps it to the log end. High watermark: "
        "Partition.createLog lowers it to the log end (UnifiedLog.updateHighWatermark). Log "
        "start offset: LogLoader deletes every segment of the partition ('Deleting all segments "
        "because logEndOffset is smaller than logStartOffset') and starts it empty at the "
        "checkpointed offset.",
        Case(
            ERROR,
            "log-start-offset-checkpoint: every record consumers could read is gone from this "
            "replica",
            "At startup the broker deletes every segment of this partition and starts it empty "
            "at the checkpointed offset. Copy the partition directory aside first and run `kdump "
            "salvage` on it to keep what lies after a damaged batch. A follower fetches the "
            "partition again from the leader; on a single replica those records are lost.",
            file=LOG_START_OFFSET_CHECKPOINT,
        ),
        Case(
            WARNING,
            "recovery-point-offset-checkpoint (the one case with the fix)",
            "Nothing is lost: the broker clamps the recovery point to the log end offset at "
            "startup; `kdump recover` does it now.",
            file=RECOVERY_POINT_CHECKPOINT,
        ),
        Case(
            WARNING,
            "replication-offset-checkpoint (the high watermark): committed records are gone "
            "from this replica",
            "Committed records, below the high watermark, are gone from this replica: cut by "
            "recovery, or lost with their files. At startup the broker lowers its high "
            "watermark to the log end. A follower fetches them again from the leader; if this "
            "is the only replica, or it becomes leader, they are lost: `kdump salvage` keeps "
            "what lies after a damaged batch.",
            file=REPLICATION_OFFSET_CHECKPOINT,
        ),
        fix="kdump recover {log dir}",
    ),
    # -- the KRaft metadata partition and its log dir ------------------------------------
    _code(
        Code.KRAFT_QUORUM_STATE_CORRUPT,
        "kraft",
        "The metadata partition's quorum-state does not read as QuorumStateData JSON (not JSON, "
        "no data_version, no leaderId, leaderEpoch or votedId integer).",
        "The node cannot read its election state (FileQuorumStateStore.readElectionState) and "
        "does not start.",
        Case(
            ERROR,
            "always",
            "With the node stopped, move quorum-state aside (keep it): the node then starts "
            "unattached at its log's last epoch and learns the leader from the other voters "
            "(QuorumState.initialize). Do it on one voter at a time, while the others form a "
            "majority: a voter that forgets its vote can vote twice in one epoch.",
        ),
    ),
    _code(
        Code.KRAFT_QUORUM_STATE_BEHIND,
        "kraft",
        "quorum-state's leader epoch is below the epoch of the metadata log's last batch.",
        "QuorumState.initialize: the log's epoch wins; the node starts unattached at it, learns "
        "the leader from the quorum and writes quorum-state again.",
        Case(
            WARNING,
            "always",
            "Nothing to repair: the node writes quorum-state again as it joins. A quorum-state "
            "older than its log is usually a file restored from a backup: check that the rest of "
            "the directory is not older too.",
        ),
    ),
    _code(
        Code.KRAFT_QUORUM_STATE_LEADER,
        "kraft",
        "quorum-state's leader is not one of its voters, or not the leader the log's "
        "LeaderChange record names for that epoch, or its voters are not the record's: a file "
        "written by another election than the log's (copied or restored).",
        "The node starts in quorum-state's epoch with its leader and voters as they are "
        "(QuorumState.initialize): as a resigned leader where it names the node itself; the "
        "quorum's higher epoch corrects it once it fetches.",
        Case(
            WARNING,
            "always",
            "Compare it with the other voters' quorum-state. With the node stopped, move a file "
            "copied from another node or restored from a backup aside: the node learns the "
            "leader from the quorum (one voter at a time, while the others form a majority).",
        ),
    ),
    _code(
        Code.KRAFT_SNAPSHOT_UNREADABLE,
        "kraft",
        "A KRaft snapshot (`OFFSET-EPOCH.checkpoint`) newer than the one the image starts from "
        "that does not read: a damaged batch, no SnapshotHeader first, a record that does not "
        "decode.",
        "The node loads its newest snapshot at startup (MetadataLoader, RecordsSnapshotReader): "
        "a controller (or a combined node) stops on one that does not read; a broker logs the "
        "fault and goes on without the snapshot's records, with an image that lacks them.",
        Case(
            ERROR,
            "always",
            "With the node stopped, move the snapshot aside (keep it): the node loads the next "
            "older snapshot and replays the log after it, the image `kdump metadata` shows. "
            "Where no older snapshot and log reach the same offset, let the node fetch the "
            "metadata again from the quorum's leader instead.",
        ),
    ),
    _code(
        Code.KRAFT_SNAPSHOT_LEFTOVER,
        "kraft",
        "A snapshot being written when the node stopped (.checkpoint.part), one the node marked "
        "for deletion (.checkpoint.deleted), or one below the log start offset.",
        "KafkaMetadataLog.recoverSnapshots deletes it.",
        Case(
            WARNING,
            "always",
            "Nothing to do: the node deletes it at its next start; it is not read before.",
        ),
    ),
    _code(
        Code.KRAFT_SNAPSHOT_MISMATCH,
        "kraft",
        "A snapshot's name against its contents and the log: its batches are of another epoch "
        "than its name, or the log's batch at its end offset is of another epoch or another "
        "append time than its SnapshotHeader says.",
        "The node loads a snapshot by its name (the end offset and epoch in it): one of another "
        "history than its log gives it another image than its log would.",
        Case(
            WARNING,
            "always",
            "Compare it with the same snapshot on another voter (`kdump metadata FILE` on each). "
            "With the node stopped, move a copied or renamed one aside: the node loads the next "
            "older snapshot and the log after it.",
        ),
    ),
    _code(
        Code.KRAFT_SNAPSHOT_BEYOND_LOG_END,
        "kraft",
        "A snapshot past the metadata log's end offset, or of an epoch later than its last "
        "batch's.",
        "KafkaMetadataLog.truncateToLatestSnapshot: the node deletes its whole log and starts "
        "from the snapshot.",
        Case(
            WARNING,
            "always",
            "A follower that fetched the snapshot from its leader and stopped leaves this: "
            "nothing to do. A snapshot copied in from elsewhere must be moved aside before the "
            "node starts, or the node drops its log for it.",
        ),
    ),
    _code(
        Code.KRAFT_RECORD_REFUSED,
        "kraft",
        "A metadata record the image refuses (a change to a partition or broker the image does "
        "not hold, an epoch that does not match, a transaction marker out of place): the "
        "record is not in the image.",
        "MetadataLoader hands it to its fault handler: a broker logs it and goes on without "
        "it, a controller stops.",
        Case(
            ERROR,
            "always",
            "Compare the image with another voter's (`kdump metadata DIR` on each; the record "
            "with `kdump dump --cluster-metadata-decoder`). A record refused on one node only is "
            "damaged there: with that node stopped, move its __cluster_metadata-0 aside and it "
            "fetches the metadata again from the leader (never on a majority of the voters).",
        ),
    ),
    _code(
        Code.KRAFT_BOOTSTRAP_MISMATCH,
        "kraft",
        "The log dir's bootstrap.checkpoint and the metadata log's zero checkpoint "
        "(00000000000000000000-0000000000.checkpoint) hold different bootstrap records.",
        "Read only when the metadata log is empty, at a new cluster's first start: Kafka before "
        "4.1 bootstraps from bootstrap.checkpoint, 4.1 and later from the zero checkpoint "
        "(KIP-1170).",
        Case(
            WARNING,
            "always",
            "Nothing to do on a cluster that has run: its log holds the bootstrap records. "
            "Before a first start, format the node again (kafka-storage.sh format) with the "
            "same release and arguments as the other nodes.",
        ),
    ),
    _code(
        Code.KRAFT_META_PROPERTIES_MISMATCH,
        "kraft",
        "meta.properties against the quorum and the image: a node.id neither a registered "
        "broker or controller nor a voter, a directory.id not among its broker's registered "
        "log dirs, a cluster.id not the quorum's.",
        "The node checks its log dirs' meta.properties against its own node.id and each other "
        "(MetaPropertiesEnsemble.verify) and refuses to start on a mismatch; a log dir of "
        "another cluster is refused by the quorum (INCONSISTENT_CLUSTER_ID); replicas in a "
        "directory the image does not know are assigned elsewhere.",
        Case(
            WARNING,
            "always",
            "Check that the log dir is this node's (its server.properties node.id and "
            "log.dirs): a directory copied from another node or cluster must not be started "
            "here.",
        ),
    ),
    _code(
        Code.KRAFT_TOPIC_ID_MISMATCH,
        "kraft",
        "A partition directory's partition.metadata topic id is not the image's id for its "
        "topic: the directory is of a deleted topic of the same name.",
        "Kafka 3.7 and later look the directory's topic id up in the image once they have "
        "loaded it (LogManager.isStrayKraftReplica), find none and take it for a stray: moved "
        "aside, renamed `TOPIC-PARTITION.ID-stray` and kept on disk; the partition is "
        "created afresh and fetched from the leader. Before 3.7 the broker refuses the "
        "partition (InconsistentTopicIdException) and serves none of it.",
        Case(
            ERROR,
            "always",
            "Kafka 3.7 and later move it aside themselves. Before, with the broker stopped, "
            "move the directory out of the log dir (keep it: `kdump salvage` reads it): the "
            f"broker creates the partition again. {REFETCH}",
        ),
    ),
    _code(
        Code.KRAFT_TOPIC_ID_MISSING,
        "kraft",
        "A partition directory holding records, assigned to this node in the image, with no "
        "partition.metadata: no topic id (a directory restored or copied without it).",
        "Kafka 3.7 and later take a directory with no topic id for a stray once they have "
        "loaded the image (LogManager.isStrayKraftReplica): moved aside, renamed "
        "`TOPIC-PARTITION.ID-stray` and kept on disk; the partition is created afresh and "
        "fetched from the leader, and this replica's records are not served. Before 3.7 the "
        "broker writes the image's topic id into it (UnifiedLog.assignTopicId) and serves it.",
        Case(
            WARNING,
            "always",
            "With the broker stopped, write the directory's partition.metadata as Kafka does, "
            "two lines: `version: 0` and `topic_id: ID`, the topic's id in the image (the "
            "finding names it; `kdump metadata DIR /image/topics/byName/TOPIC/id` prints it).",
        ),
    ),
    _code(
        Code.KRAFT_PARTITION_NOT_IN_IMAGE,
        "kraft",
        "A partition directory whose topic or partition the image does not hold, or assigns to "
        "other brokers than this node.",
        "Once it has loaded the image, the broker takes it for a stray replica (Kafka 3.7 on): "
        "moves it aside, renamed `TOPIC-PARTITION.ID-stray`, and serves it no more; it "
        "stays on disk (LogManager.asyncDelete).",
        Case(
            WARNING,
            "always",
            "Nothing to do where the topic was removed or the partition reassigned away: once "
            "the broker has renamed it -stray, remove that directory when its records are no "
            "longer wanted (`kdump dump` or `kdump salvage` read it first).",
        ),
    ),
    # -- transactions ---------------------------------------------------------------------
    _code(
        Code.TXN_HANGING,
        "txn",
        "A transaction open past the transaction timeout that nothing will end: it holds the "
        "partition's last stable offset.",
        "Nothing: a hanging transaction survives restarts (the producer state keeps it). "
        "read_committed consumers stop at its first offset, and the log cleaner does not clean "
        "past it.",
        Case(
            ERROR,
            "always",
            "Abort it with the kafka-transactions.sh command kdump txn prints (brokers before "
            "3.0: the --producer-id form).",
        ),
        fix=(
            "kafka-transactions.sh --bootstrap-server {servers} abort --topic {topic} "
            "--partition {partition} --start-offset {offset}"
        ),
    ),
    _code(
        Code.TXN_OPEN,
        "txn",
        "A transaction open within the transaction timeout.",
        "Nothing: the producer commits or aborts it, or the coordinator aborts it once it "
        "times out; the producer state keeps it across restarts.",
        Case(
            WARNING,
            "always (with a fix where the coordinator's view says nothing will end it)",
            "Normally nothing: read_committed consumers wait at its first offset until it ends. "
            "If it is still open after the transaction timeout it hangs, and kdump txn then "
            "reports it as an error with the command that aborts it.",
        ),
        fix=(
            "kafka-transactions.sh --bootstrap-server {servers} abort --topic {topic} "
            "--partition {partition} --start-offset {offset}"
        ),
    ),
    _code(
        Code.TXN_STATE_INVALID,
        "txn",
        "A batch Kafka's producer state refuses: a control batch that is not a readable "
        "COMMIT/ABORT marker, or non-transactional data from a producer with a transaction "
        "open.",
        "Where the broker replays this batch into its producer state (recovery, or a rebuild "
        "from an older snapshot), ProducerAppendInfo throws (InvalidTxnStateException for data): "
        "the log does not load and the broker stops starting; a marker that does not parse "
        "makes recovery cut the log there instead.",
        Case(
            WARNING,
            "kdump txn, recover, rebuild-index (they go on past it)",
            "Look at the producer's batches around the offset (`kdump dump --producer-id`). "
            f"{REFETCH}",
        ),
    ),
    _code(
        Code.TXN_COORDINATOR_DUPLICATE,
        "txn",
        "A __transaction_state partition given twice (two replicas' copies): the later one is "
        "used.",
        "Not a broker matter: it is about what kdump txn was given.",
        Case(WARNING, "always", "Give each __transaction_state partition once."),
    ),
    _code(
        Code.TXN_COORDINATOR_UNREADABLE,
        "txn",
        "A __transaction_state record that does not read: the coordinator's view may miss a "
        "transaction.",
        "The transaction coordinator reads __transaction_state when it becomes leader of a "
        "partition of it (TransactionStateManager); see the damage kdump verify reports there.",
        Case(
            WARNING,
            "always",
            "`kdump verify` the __transaction_state partition; kdump txn's view of the "
            "transactions it held may be wrong.",
        ),
    ),
    _code(
        Code.TXN_COORDINATOR_PARTITION_COUNT,
        "txn",
        "A transactional id found in another __transaction_state partition than its hash "
        "gives: the partition count kdump used is not the topic's.",
        "Not a broker matter: it is about what kdump txn was given.",
        Case(
            WARNING,
            "always",
            "Pass --transaction-state-partitions with the topic's partition count "
            "(transaction.state.log.num.partitions, 50 by default).",
        ),
    ),
    _code(
        Code.TXN_INDEX_MISSING_ABORT,
        "txn",
        "An ABORT marker whose transaction the segment's .txnindex does not list: "
        "read_committed consumers receive its records as committed.",
        "Nothing unless the broker recovers the segment (LogSegment.recover rebuilds the "
        ".txnindex from the markers): read_committed fetches read the .txnindex as it is.",
        Case(WARNING, "always", TXN_REBUILD_ADVICE),
        fix=REBUILD,
    ),
    _code(
        Code.TXN_INDEX_DISAGREES,
        "txn",
        "An aborted transaction whose first offset differs between the log and the .txnindex.",
        "Nothing unless the broker recovers the segment (LogSegment.recover rebuilds the "
        ".txnindex from the markers): read_committed fetches read the .txnindex as it is.",
        Case(WARNING, "always", TXN_REBUILD_ADVICE),
        fix=REBUILD,
    ),
    _code(
        Code.TXN_INDEX_WITHOUT_MARKER,
        "txn",
        "A .txnindex entry whose ABORT marker is not in the log (the cleaner may have removed "
        "the marker).",
        "Nothing: read_committed fetches still drop the aborted records the entry names.",
        Case(INFO, "always"),
    ),
    # -- repairs --------------------------------------------------------------------------
    _code(
        Code.REPAIR_INDEX_FULL,
        "repair",
        "The offset index kdump rebuilt filled its --max-index-size // 8 entries before the "
        "log ended: later entries are left out, as Kafka's OffsetIndex refuses them.",
        "The broker rolls a segment before its index fills; its own recovery of a segment "
        "whose entries do not fit fails the same way (OffsetIndex.append).",
        Case(
            WARNING,
            "always",
            "The index is right but stops early: lookups past its last entry read the .log "
            "from there. If the topic's segment.index.bytes is larger, rebuild with it as "
            "--max-index-size.",
        ),
    ),
    _code(
        Code.REPAIR_TIMEINDEX_FULL,
        "repair",
        "The time index kdump rebuilt filled before the log ended (its last slot stays for the "
        "closing entry, which is always written): later entries are left out.",
        "The broker rolls a segment before its index fills; its own recovery of a segment "
        "whose entries do not fit fails the same way.",
        Case(
            WARNING,
            "always",
            "The index is right but stops early: lookups by time past its last entry read the "
            ".log from there. If the topic's segment.index.bytes is larger, rebuild with it as "
            "--max-index-size.",
        ),
    ),
    # -- tiered storage -------------------------------------------------------------------
    _code(
        Code.REMOTE_SEGMENT_INCOMPLETE,
        "tiered",
        "A remote segment missing some of the objects its remote storage manager writes: an "
        "upload that did not finish.",
        "Kafka never reads it: a copy that fails is deleted, and only segments whose copy "
        "finished (COPY_SEGMENT_FINISHED) are fetched.",
        Case(
            WARNING,
            "always",
            "`kdump tiered scrub --metadata` tells whether __remote_log_metadata references "
            "it; objects no metadata references are orphans, deleted by hand.",
        ),
    ),
    _code(
        Code.REMOTE_WATERMARK_INVALID,
        "tiered",
        "Pinterest's offset.wm is not a 20-digit base offset.",
        "Kafka does not read it: Pinterest's tiered-storage uploader writes it (the last "
        "segment uploaded) and readers of the bucket go by it.",
        Case(
            WARNING,
            "always",
            "Check the uploader's log; offset.wm should hold the 20-digit base offset of the "
            "last segment uploaded.",
        ),
    ),
    _code(
        Code.REMOTE_WATERMARK_MISSING_SEGMENT,
        "tiered",
        "Pinterest's offset.wm names a segment that is not in the bucket.",
        "Kafka does not read it: readers of the bucket going by the watermark miss the segment.",
        Case(
            ERROR,
            "the watermark is past every segment in the bucket",
            "Upload the segment again from a broker that still has it, or set offset.wm back "
            "to the last segment in the bucket.",
        ),
        Case(
            WARNING,
            "the segment is missing below the last one",
            "Upload the segment again from a broker that still has it.",
        ),
    ),
    _code(
        Code.TIERED_BOUNDARY_GAP,
        "tiered",
        "Offsets in neither remote storage nor the partition's local log: no consumer can "
        "read them.",
        "Nothing at startup: fetches of those offsets fail (OFFSET_OUT_OF_RANGE) and consumers "
        "reset as auto.offset.reset says.",
        Case(
            ERROR,
            "always",
            "Look for them with `kdump tiered scrub --metadata` (a copy that stopped, objects "
            "deleted) and in the other replicas' local logs; if none holds them, they are lost.",
        ),
    ),
    _code(
        Code.TIERED_OVERLAP_MISMATCH,
        "tiered",
        "A segment both remote storage and the local log hold, ending at different offsets in "
        "each: the copies differ.",
        "Nothing: fetches below the local log start offset read the remote copy, the others "
        "the local one.",
        Case(
            WARNING,
            "always",
            "Compare the two copies (`kdump dump` of each) to learn which one is wrong.",
        ),
    ),
    _code(
        Code.TIERED_OVERLAP,
        "tiered",
        "Local segments holding offsets remote storage holds too.",
        "Nothing: normal; local retention deletes them later.",
        Case(INFO, "always"),
    ),
    # -- kdump tiered scrub ---------------------------------------------------------------
    _code(
        Code.SCRUB_METADATA_UNREADABLE,
        "scrub",
        "A __remote_log_metadata record that does not read: the segment states after it may "
        "be missing from the comparison.",
        "The broker's metadata manager cannot apply it either; see the damage kdump verify "
        "reports in that partition.",
        Case(
            WARNING,
            "always",
            "`kdump verify` the __remote_log_metadata partition; segments whose states were in "
            "the record may show as orphans.",
        ),
    ),
    _code(
        Code.SCRUB_METADATA_PARTITION_COUNT,
        "scrub",
        "A remote partition's metadata found in another __remote_log_metadata partition than "
        "its hash gives: the partition count kdump used is not the topic's.",
        SCRUB_INPUT,
        Case(
            WARNING,
            "always",
            "Pass --metadata-partitions with remote.log.metadata.topic.num.partitions (50 by "
            "default).",
        ),
    ),
    _code(
        Code.SCRUB_METADATA_DROPPED,
        "scrub",
        "A __remote_log_metadata record the broker drops: a segment added in a state other "
        "than COPY_SEGMENT_STARTED, a state change that is not allowed, an update of a segment "
        "never added.",
        "The broker logs it and goes on (RemoteLogMetadataCache), as kdump does.",
        Case(
            WARNING,
            "always",
            "Nothing to repair: Kafka ignores the record too. It tells of a broker that wrote "
            "out of order; look at its log around the record's time.",
        ),
    ),
    _code(
        Code.SCRUB_NOT_KIP405,
        "scrub",
        "Segments named by offset only (Pinterest's layout or a copied partition directory), "
        "not by a RemoteLogSegmentId: __remote_log_metadata does not describe them.",
        SCRUB_INPUT,
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_NO_METADATA,
        "scrub",
        "A bucket partition whose __remote_log_metadata partition was not given: its segments "
        "were not compared.",
        SCRUB_INPUT,
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_SEGMENT_MISSING,
        "scrub",
        "A segment the metadata says consumers read (COPY_SEGMENT_FINISHED and referenced) "
        "with none of its objects under the URL, its partition's folder there or not.",
        "Fetches of its offsets from remote storage fail.",
        Case(ERROR, "always", LOST_REMOTE_ADVICE),
    ),
    _code(
        Code.SCRUB_OVERLAP,
        "scrub",
        "Two referenced segments of one leader epoch whose offsets overlap.",
        "Kafka keeps both referenced: fetches of the overlap read the later one, and retention "
        "may delete the earlier one's remaining offsets with it.",
        Case(
            WARNING,
            "always",
            "Compare the two segments (`kdump dump` of their URLs); consumers read the later "
            "upload's copy of the overlap.",
        ),
    ),
    _code(
        Code.SCRUB_SUPERSEDED,
        "scrub",
        "A segment uploaded again by a later leader: the metadata no longer references it.",
        "Kafka deletes it by retention (normal after a leader change).",
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_COPY_IN_PROGRESS,
        "scrub",
        "A segment in COPY_SEGMENT_STARTED for less than --grace: an upload under way.",
        "Nothing: the RemoteLogManager finishes the copy.",
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_COPY_STUCK,
        "scrub",
        "A segment in COPY_SEGMENT_STARTED for longer than --grace: a copy that stopped (the "
        "broker died mid-copy).",
        "Kafka lists it as unreferenced and deletes it only when retention reaches it.",
        Case(
            WARNING,
            "always",
            "Nothing to do in the bucket: retention deletes the partial upload. Check the broker "
            "named for a crash or a failing remote storage manager.",
        ),
    ),
    _code(
        Code.SCRUB_DELETE_IN_PROGRESS,
        "scrub",
        "A segment in DELETE_SEGMENT_STARTED for less than --grace: a deletion under way.",
        "Nothing: the RemoteLogManager finishes the deletion.",
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_DELETE_STUCK,
        "scrub",
        "A segment in DELETE_SEGMENT_STARTED for longer than --grace: a deletion that stopped.",
        "The partition's leader retries the deletion (RemoteLogManager).",
        Case(
            WARNING,
            "always",
            "Check the broker named: a deletion that fails each time is in its log.",
        ),
    ),
    _code(
        Code.SCRUB_UNTRACKED,
        "scrub",
        "A segment no metadata names, in a partition whose __remote_log_metadata history "
        "starts after offset 0 (older records deleted by retention): it may be older than "
        "that history, so it is not called an orphan.",
        SCRUB_INPUT,
        Case(INFO, "always"),
    ),
    # -- replicas compared ----------------------------------------------------------------------
    _code(
        Code.REPLICA_TRUNCATION_LOSS,
        "replicas",
        "A follower replica holds records the leader's log does not: when it fetches from the "
        "leader it truncates them (AbstractFetcherThread, from the leader's answer about its "
        "latest leader epoch: LeaderEpochFileCache.endOffsetFor). After an unclean leader "
        "election these are records the old leader took and the new one never had; the "
        "message says how many were below the follower's high watermark, that is acknowledged "
        "to acks=all producers.",
        "The broker truncates them on its first fetch from the leader (ReplicaFetcherThread."
        "truncate, 'Truncating ... below high watermark' in its log) and they are gone from "
        "every replica.",
        Case(
            WARNING,
            "always",
            "Before the broker starts, export them: `kdump replicas ... --export-lost DIR` "
            "writes them as JSON Lines (salvage's form), with offsets, timestamps and producer "
            'fields, for a producer script to write again where they are "reproducible". Or '
            "keep a copy of the partition directory.",
        ),
    ),
    _code(
        Code.REPLICA_LOST_MARKER,
        "replicas",
        "A follower's truncation drops a COMMIT or ABORT marker whose transaction the leader's "
        "log holds open (its records below the truncation, no marker after them): the "
        "transaction hangs on the new leader (KAFKA-20716), the last stable offset stops there "
        "and read_committed consumers stop with it. (A dropped marker whose transaction began "
        "past the truncation goes with its records: the JSON lists it with hanging false.)",
        "Nothing: the coordinator wrote the marker once and does not write it again; the "
        "transaction stays open until the producer's epoch is bumped or it is aborted by hand.",
        Case(
            WARNING,
            "always",
            "Once the broker has truncated, run `kdump txn` on the leader's partition: it "
            "names the hanging transactions and prints the kafka-transactions.sh --abort "
            "command that ends each.",
        ),
    ),
    _code(
        Code.REPLICA_BATCH_DIFFERS,
        "replicas",
        "Two replicas hold different batches at the same offsets (another CRC, another leader "
        "epoch, other offset bounds), both valid, below where the follower truncates: "
        "divergence Kafka's truncation does not see (it compares epochs, not bytes), or "
        "corruption with a valid CRC on one of them. Below where either replica's cleaner "
        "rewrote segments (its cleaner-offset-checkpoint) batches differ by right and are not "
        "compared: their content is (REPLICA_KEY_DIFFERS and the three transaction codes).",
        "Nothing: Kafka keeps both; consumers read different records at the same offset "
        "depending on which replica leads.",
        Case(
            ERROR,
            "always",
            "Compare the two batches (`kdump dump --print-data-log` at both positions) and "
            "decide which replica is right; rebuild the other from it (move its partition "
            "directory away with the broker stopped: it fetches the partition again). "
            f"{REFETCH}",
        ),
    ),
    _code(
        Code.REPLICA_KEY_DIFFERS,
        "replicas",
        "A compacted partition that either replica's cleaner rewrote: a key whose latest value "
        "or deletion differs between the leader and a follower, up to the lower high watermark, "
        "as read_committed consumers read them (records outside transactions and of committed "
        "ones; a tombstone and no record both mean deleted). The 2026 disclosure's 'deleted "
        "data comes back' (a value on one, deleted on the other) and lost writes.",
        "Nothing: each broker serves its own replica; consumers read one or the other as "
        "leadership moves, and a follower never fetches offsets it already holds.",
        Case(
            ERROR,
            "always",
            "Dump both records (`kdump dump --offset-range` around the offsets named) and decide "
            f"which replica is right; rebuild the other from it. {REFETCH}",
        ),
    ),
    _code(
        Code.REPLICA_ABORTED_VISIBLE,
        "replicas",
        "A compacted partition: a transaction aborted on one replica is committed on the other "
        "(their markers differ), or one serves its records (it holds them and no .txnindex "
        "entry lists the transaction) while the other does not: aborted data is served as "
        "committed where that replica leads (the 2026 disclosure).",
        "Nothing: the cleaner learns of aborted transactions from the .txnindex and keeps "
        "records it does not know aborted.",
        Case(
            ERROR,
            "always",
            "Make the replica that serves the transaction right a leader (kafka-leader-election "
            "--election-type preferred, after reassigning if needed) and rebuild the other from "
            f"it. {REFETCH}",
        ),
    ),
    _code(
        Code.REPLICA_COMMITTED_MISSING,
        "replicas",
        "A compacted partition: a transaction committed on one replica is aborted on the other, "
        "or records of a committed transaction, the latest of their keys on one replica, are "
        "missing on the other: committed data is hidden where that replica leads (the 2026 "
        "disclosure).",
        "Nothing: the records a cleaning removed are not fetched again.",
        Case(
            ERROR,
            "always",
            "Keep the replica that holds the transaction: rebuild the other from it (move the "
            "lacking replica's partition directory away with its broker stopped). Do it only "
            "while the holding replica is in sync, and keep a copy of both directories first.",
        ),
    ),
    _code(
        Code.REPLICA_MARKER_MISSING,
        "replicas",
        "A compacted partition: a producer's COMMIT or ABORT marker is on one replica, and the "
        "other holds batches of the transaction it ends but no marker there. On that replica "
        "the transaction stays open: its last stable offset stops at the transaction's first "
        "offset and read_committed consumers read nothing past it (the 2026 disclosure's "
        "frozen last stable offset). (A replica whose cleaner removed the transaction's "
        "batches, then its marker past its horizon, rightly holds neither.)",
        "The broker rebuilds its producer state from the log and finds the transaction open; "
        "it stays open until the transaction coordinator aborts it after "
        "transaction.timeout.ms, or it is aborted by hand.",
        Case(
            ERROR,
            "always",
            "`kdump txn` on the lacking replica's partition names the open transaction and prints "
            "the kafka-transactions.sh --abort command; or rebuild that replica from the other "
            f"(the marker comes with it). {REFETCH}",
        ),
    ),
    _code(
        Code.REPLICA_CONTENT_LIMITED,
        "replicas",
        "The content comparison of a compacted partition's replicas did not compare every key: "
        "each replica's keys are held within half of --compaction-key-memory (about 200 bytes "
        "a key) and one was full; keys met for the first time from the offset named on are "
        "not compared.",
        "Nothing: a fact about the comparison.",
        Case(INFO, "always"),
    ),
    _code(
        Code.REPLICA_DAMAGED,
        "replicas",
        "A replica's log has damage recovery cuts it at, and its walk named no error there.",
        CUT,
        Case(ERROR, "always", CUT_ADVICE),
        fix=RECOVER,
    ),
    _code(
        Code.SCRUB_ORPHAN,
        "scrub",
        "Objects of a segment no metadata names, or whose segment or partition deletion finished.",
        "Kafka never reads nor deletes them.",
        Case(
            WARNING,
            "always",
            "Delete the objects by hand once no other cluster or prefix uses them; they only "
            "cost storage.",
        ),
    ),
    _code(
        Code.SCRUB_SEGMENT_INCOMPLETE,
        "scrub",
        "A segment consumers read (COPY_SEGMENT_FINISHED and referenced) missing some of its "
        "objects.",
        "Fetches of its offsets from remote storage fail.",
        Case(ERROR, "always", LOST_REMOTE_ADVICE),
    ),
    _code(
        Code.SCRUB_SIZE_MISMATCH,
        "scrub",
        "Kafka's RSM layout: a segment's .log object size is not the size the metadata "
        "recorded (segmentSizeInBytes).",
        "Fetches read the object as it is: those past its end fail.",
        Case(ERROR, "always", LOST_REMOTE_ADVICE),
    ),
    _code(
        Code.SCRUB_DUPLICATE_PARTITION,
        "scrub",
        "A partition found under two prefixes or more (a backup or migration copy beside the "
        "broker's objects, or both layouts): each copy is compared on its own.",
        "The broker reads and deletes under the one prefix its remote storage manager is "
        "configured with; it never reads nor deletes the other copies.",
        Case(
            WARNING,
            "always",
            "Scrub the broker's own prefix alone for its verdict; the other copies are yours to "
            "keep or delete.",
        ),
    ),
    _code(
        Code.SCRUB_PARTITIONS_ELSEWHERE,
        "scrub",
        "Partitions of topics with no object under the URL have remote segments in the "
        "metadata: another prefix or bucket; not compared.",
        SCRUB_INPUT,
        Case(INFO, "always"),
    ),
    _code(
        Code.SCRUB_ICEBERG,
        "scrub",
        "Aiven Iceberg segment manifests (segment.format=iceberg): those segments are rows of "
        "an Iceberg table; counted, not compared.",
        SCRUB_INPUT,
        Case(INFO, "always"),
    ),
    _code(
        Code.EXPORT_GAP,
        "export",
        "Offsets of a segment the export did not write: from the first batch it could not read "
        "(damaged, or its records do not decode: the finding beside this one names it) to the "
        "next segment's base offset, or the log's end for the partition's last segment. The "
        "later segments are exported; the rows of the gap are missing, never silently.",
        "What the broker does is the damage's own finding's: after an unclean shutdown its "
        "recovery cuts the log at that batch (LogSegment.recover) and deletes the later "
        "segments.",
        Case(
            WARNING,
            "spark export",
            "Export the same partition from another replica's log dir to fill the gap; repair "
            "this replica as the damage's finding says.",
        ),
    ),
)

REGISTRY = {entry.code: entry for entry in CODES}


def codes_of(*areas: str) -> frozenset[str]:
    """The codes of the registry's ``areas`` (AREAS' keys)."""
    return frozenset(entry.code for entry in CODES if entry.area in areas)


def advice_for(code: str, severity: Severity, path: str) -> str | None:
    """What to do about a finding that carries no fix (None: an unknown code, or a case with
    nothing to do)."""
    entry = REGISTRY.get(code)
    case = None if entry is None else entry.case_for(severity, path)
    return None if case is None else case.advice


__all__ = ["AREAS", "CODES", "REGISTRY", "Case", "Code", "FindingCode", "advice_for", "codes_of"]
