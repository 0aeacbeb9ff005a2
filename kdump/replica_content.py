"""Replicas of a compacted partition compared by content (issue 41 point 4): each broker's cleaner
rewrites its own replica on its own schedule, so their bytes differ below where either cleaned;
what must not differ is what a read_committed consumer of either ends with.

From the later of the two log starts up to the lower of the two high watermarks, each replica is
read once (kdump.replicas.held_batches) into:

- the latest value of every key (its MD5 digest, the cleaner's identity of a key, and the value's),
  from records a read_committed consumer takes: those outside transactions, and those of
  transactions whose COMMIT marker it holds. A deleted key (a tombstone) is the same as an absent
  one: a cleaning drops tombstones past their horizon, and the records they deleted before them;
- its transactions: each producer's batches between two of its markers, and the marker that ends
  them (COMMIT or ABORT; none yet: open), and whether the ``.txnindex`` lists an aborted one
  whose records it still holds (else read_committed consumers read them).

Then, the leader's side against the follower's, the four failure kinds of the June 2026
disclosure of a race between compaction and replication in Kafka 3.9-4.2, each naming both sides:

- ``REPLICA_MARKER_MISSING``: one holds a producer's marker, the other holds batches of the
  transaction it ends but no marker there: the transaction stays open on it and its last stable
  offset stops (a replica whose cleaner dropped the transaction's batches, then the marker once
  past its horizon, is right not to hold it);
- ``REPLICA_ABORTED_VISIBLE``: a transaction aborted on one is committed on the other, or its
  records are served by one (no ``.txnindex`` entry lists it) and not by the other;
- ``REPLICA_COMMITTED_MISSING``: a transaction aborted on the follower that the leader committed,
  or a committed transaction's records, the latest of their keys on one, missing on the other;
- ``REPLICA_KEY_DIFFERS``: any other key whose latest value or deletion differs (deleted data
  back on one, a write missing on one).

A key difference a transaction's finding explains (its newer record in that transaction) is
counted with it, not named again.

Memory: each replica's keys at kdump.offset_map.KEY_BYTES plus the value's digest (about 200
bytes a key), both replicas within ``key_memory`` (the ``--compaction-key-memory`` bound verify
has too); past it, keys met for the first time are not compared (an info finding says from which
offset). Besides, 40 bytes per transaction marker, and each producer's open transaction.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.segment import segment_result
from kdump.errors import KdumpError
from kdump.format.batch import Batch
from kdump.format.names import CLEANER_OFFSET_CHECKPOINT
from kdump.format.records import ABORT, COMMIT
from kdump.offset_map import KEY_BYTES, KeyDigests, key_digest
from kdump.segment import LogSegment
from kdump.tuples import NamedTuple
from kdump.unified_log import UnifiedLog

DEFAULT_KEY_MEMORY = 128 << 20
KEY_ENTRY_BYTES = KEY_BYTES + 80
"""A key of a replica's content: the digest and its dict slot (KEY_BYTES) and a tuple of its
offset, the value's digest and its transaction's marker."""
TOMBSTONE = b""
"""The value digest of a deletion."""
NO_MARKER = -1
SHOWN = 20
"""Differences named one by one per kind (all are counted)."""


# -- the batches a replica holds ----------------------------------------------------------------


class HeldBatch(NamedTuple):
    """A batch of a replica's log (up to where recovery would cut it), and where it is."""

    segment: LogSegment
    batch: Batch

    @property
    def where(self) -> str:
        return f"{self.segment.log_path}:{self.batch.position}"


def held_batches(log: UnifiedLog, from_offset: int) -> Iterator[HeldBatch]:
    """The batches of ``log`` whose last offset is at or past ``from_offset`` and its log
    start offset (those below are deleted as far as Kafka is concerned), in offset order, up
    to the first batch recovery refuses (the log end offset's)."""
    from_offset = max(from_offset, log.log_start_offset)
    segments = log.segments_after_recovery
    for i, segment in enumerate(segments):
        if i + 1 < len(segments) and segments[i + 1].base_offset <= from_offset:
            continue
        scan = segment_result(log, segment, VerifyOptions()).scan
        if scan is None:  # unreadable: its findings say so
            continue
        for run in segment.log.walk(0, scan.first_invalid, check_crc=False):
            for j in range(run.n):
                if run.last_offset[j] >= from_offset:
                    yield HeldBatch(segment, run.batch(j))


def below(batches: Iterator[HeldBatch], end: int) -> Iterator[HeldBatch]:
    """The batches that start below ``end``."""
    for held in batches:
        if held.batch.base_offset >= end:
            return
        yield held


# -- one replica's content ------------------------------------------------------------------------


def cleaned_below(log: UnifiedLog) -> int | None:
    """Where the replica's last cleaning stopped rewriting segments: the base offset of the
    first segment at or above its ``cleaner-offset-checkpoint`` entry (every segment below the
    checkpoint is rewritten by a pass: Cleaner.doClean). None: no entry (never cleaned, or not
    since the entry was lost)."""
    try:
        checkpoint = log.checkpointed(CLEANER_OFFSET_CHECKPOINT)
    except KdumpError:
        return None
    if checkpoint is None or checkpoint <= log.log_start_offset:
        return None
    return next((b for b in log.base_offsets if b >= checkpoint), log.log_end_offset)


class LatestValue(NamedTuple):
    offset: int
    value: bytes
    """The value's MD5 digest (TOMBSTONE: a deletion)."""
    marker: int
    """The offset of the COMMIT marker of its transaction (NO_MARKER: none)."""


@dataclass
class _Txn:
    first: int
    last: int
    keys: list[tuple[bytes, LatestValue]] = field(default_factory=list)
    records: int = 0


class Transactions:
    """A replica's transactions in offset order, as columns of int64: the producer, its first
    and last batch's offsets, its marker's offset (NO_MARKER: open) and type (-1: open), and
    whether a read_committed consumer reads its records (1) though it is aborted."""

    def __init__(self) -> None:
        self.producer, self.first, self.last = array("q"), array("q"), array("q")
        self.marker, self.type, self.served = array("q"), array("q"), array("q")
        self.markers: dict[int, int] = {}
        """Marker offset -> row."""
        self._of: dict[int, list[int]] | None = None

    def add(
        self, producer: int, first: int, last: int, marker: int, kind: int, served: bool
    ) -> None:
        if marker != NO_MARKER:
            self.markers[marker] = len(self.producer)
        for column, value in zip(
            (self.producer, self.first, self.last, self.marker, self.type, self.served),
            (producer, first, last, marker, kind, int(served)),
            strict=True,
        ):
            column.append(value)
        self._of = None

    def __len__(self) -> int:
        return len(self.producer)

    def holds_batches_of(self, producer: int, after: int, marker: int) -> int | None:
        """The row of a transaction of ``producer`` with a batch in (after, marker) that no
        marker at ``marker`` ends (None: none). A producer's transactions do not overlap: the
        first whose last batch is past ``after`` is the one to look at."""
        if self._of is None:
            self._of = {}
            for row, p in enumerate(self.producer):
                self._of.setdefault(p, []).append(row)
        rows = self._of.get(producer, [])
        i = self._bisect(rows, after)
        if i == len(rows):
            return None
        row = rows[i]
        if self.first[row] < marker and self.marker[row] != marker:
            return row
        return None

    def _bisect(self, rows: list[int], after: int) -> int:
        lo, hi = 0, len(rows)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.last[rows[mid]] <= after:
                lo = mid + 1
            else:
                hi = mid
        return lo


@dataclass
class ReplicaContent:
    """One replica as a read_committed consumer ends with it, over [start, end)."""

    log: UnifiedLog
    start: int
    end: int
    keys: KeyDigests[LatestValue]
    transactions: Transactions = field(default_factory=Transactions)
    records: int = 0
    full_at: int | None = None
    """The first offset whose key the bound could not hold."""


def read_content(log: UnifiedLog, start: int, end: int, key_memory: int) -> ReplicaContent:
    """``log``'s content over [start, end), read once (see the module)."""
    content = ReplicaContent(log, start, end, KeyDigests(key_memory, KEY_ENTRY_BYTES))
    open_txns: dict[int, _Txn] = {}
    for held in below(held_batches(log, start), end):
        batch = held.batch
        if batch.is_control:
            _marker(content, held, open_txns.pop(batch.producer_id, None))
            continue
        txn = None
        if batch.is_transactional:
            txn = open_txns.get(batch.producer_id)
            if txn is None:
                txn = open_txns[batch.producer_id] = _Txn(batch.base_offset, batch.last_offset)
            txn.last = batch.last_offset
        try:
            records = list(held.segment.log.records(batch))
        except KdumpError:
            continue  # records that do not decode: kdump verify --deep names them
        for record in records:
            if not start <= record.offset < end or record.key is None:
                continue
            content.records += 1
            digest = key_digest(record.key)
            value = TOMBSTONE if record.value is None else key_digest(record.value)
            latest = LatestValue(record.offset, value, NO_MARKER)
            if txn is not None:
                txn.records += 1
                txn.keys.append((digest, latest))
            else:
                _put(content, digest, latest)
    for producer, txn in open_txns.items():
        content.transactions.add(producer, txn.first, txn.last, NO_MARKER, -1, False)
    return content


def _put(content: ReplicaContent, digest: bytes, latest: LatestValue) -> None:
    if not content.keys.add(digest, latest) and content.full_at is None:
        content.full_at = latest.offset


def _marker(content: ReplicaContent, held: HeldBatch, txn: _Txn | None) -> None:
    batch = held.batch
    kind = held.segment.log.marker_type(batch)
    if kind not in (ABORT, COMMIT):
        return  # an empty control batch (its record cleaned away) ends nothing
    assert kind is not None
    marker = batch.base_offset
    first = marker if txn is None else txn.first
    last = marker if txn is None else txn.last
    served = False
    if txn is not None and kind == COMMIT:
        for digest, latest in txn.keys:
            _put(content, digest, latest._replace(marker=marker))
    elif txn is not None and txn.records:
        index = held.segment.txn_index
        listed = index is not None and any(
            t.producer_id == batch.producer_id and t.last_offset == marker for t in index
        )
        served = not listed
    content.transactions.add(batch.producer_id, first, last, marker, kind, served)


# -- the two sides compared -----------------------------------------------------------------------


@dataclass
class ContentComparison:
    """The leader's content against a follower's (see the module)."""

    start: int
    end: int
    leader_keys: int
    follower_keys: int
    differing_keys: int = 0
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from_offset": self.start,
            "to_offset": self.end,
            "leader_keys": self.leader_keys,
            "follower_keys": self.follower_keys,
            "differing_keys": self.differing_keys,
        }


def compare_content(
    leader: UnifiedLog, follower: UnifiedLog, key_memory: int = DEFAULT_KEY_MEMORY
) -> ContentComparison:
    """The two replicas' contents from the later log start to the lower high watermark."""
    start = max(leader.log_start_offset, follower.log_start_offset)
    end = max(start, min(leader.high_watermark.value, follower.high_watermark.value))
    a = read_content(leader, start, end, key_memory // 2)
    b = read_content(follower, start, end, key_memory // 2)
    out = ContentComparison(start, end, len(a.keys), len(b.keys))
    explained = _transactions(a, b, True, out) | _transactions(b, a, False, out)
    _keys(a, b, explained, out)
    for side in (a, b):
        if side.full_at is not None:
            out.findings.append(
                Finding(
                    "REPLICA_CONTENT_LIMITED",
                    Severity.INFO,
                    side.log.location,
                    f"the comparison held {len(side.keys)} keys of this replica "
                    f"({key_memory // 2} bytes, half of --compaction-key-memory) and was full at "
                    f"offset {side.full_at}: keys met for the first time from there on are not "
                    "compared",
                    side.full_at,
                )
            )
    return out


_TYPE = {ABORT: "ABORT", COMMIT: "COMMIT"}


def _transactions(
    one: ReplicaContent, other: ReplicaContent, leader_side: bool, out: ContentComparison
) -> set[int]:
    """The markers of ``one`` against ``other``: the offsets of the markers of the transactions
    the findings name (key differences in those transactions are theirs). Where both hold a
    marker, they are compared once, from the leader's side."""
    named: set[int] = set()
    txns, theirs = one.transactions, other.transactions
    previous: dict[int, int] = {}
    here, there = _who(one, leader_side), _who(other, not leader_side)
    for row in range(len(txns)):
        producer, marker, kind = txns.producer[row], txns.marker[row], txns.type[row]
        if marker == NO_MARKER:
            continue
        after = previous.get(producer, one.start - 1)
        previous[producer] = marker
        match = theirs.markers.get(marker)
        if match is None or theirs.producer[match] != producer:
            held = theirs.holds_batches_of(producer, after, marker)
            if held is not None:
                named.add(marker)
                first = theirs.first[held]
                out.findings.append(
                    Finding(
                        "REPLICA_MARKER_MISSING",
                        Severity.ERROR,
                        other.log.location,
                        f"the {_TYPE[kind]} marker of producer {producer} at offset {marker} "
                        f"on {here} is not on {there}, which holds batches of that transaction "
                        f"(offsets {first}..{theirs.last[held]}) and no marker ending them "
                        f"there: the transaction stays open and the last stable offset stops "
                        f"at {first} (read_committed consumers read nothing past it)",
                        marker,
                    )
                )
            continue
        if not leader_side:
            continue
        their_kind = theirs.type[match]
        if their_kind != kind:
            named.add(marker)
            aborted_here = kind == ABORT
            out.findings.append(
                Finding(
                    "REPLICA_ABORTED_VISIBLE" if aborted_here else "REPLICA_COMMITTED_MISSING",
                    Severity.ERROR,
                    other.log.location,
                    f"producer {producer}'s transaction ending at offset {marker} is "
                    f"{_TYPE[kind]} on {here}, {_TYPE[their_kind]} on {there}: its records are "
                    + ("served as committed there" if aborted_here else "hidden there"),
                    marker,
                )
            )
            continue
        served = {True: txns.served[row], False: theirs.served[match]}
        if served[True] != served[False]:
            named.add(marker)
            reads, skips = (one, other) if served[True] else (other, one)
            out.findings.append(
                Finding(
                    "REPLICA_ABORTED_VISIBLE",
                    Severity.ERROR,
                    reads.log.location,
                    f"producer {producer}'s transaction aborted at offset {marker}: "
                    f"{_who(reads, reads is one)} holds its records and no .txnindex entry "
                    "lists the transaction, so read_committed consumers read them as committed "
                    f"there, not on {_who(skips, skips is one)}",
                    marker,
                )
            )
    return named


def _who(side: ReplicaContent, leader: bool) -> str:
    return f"the {'leader' if leader else 'follower'} {side.log.location}"


def _keys(
    a: ReplicaContent, b: ReplicaContent, explained: set[int], out: ContentComparison
) -> None:
    """Every key's latest value on the leader (``a``) against the follower (``b``)."""
    missing: dict[tuple[bool, int], list[int]] = {}
    shown = 0
    for _digest, x, y in _pairs(a.keys, b.keys):
        if _same(x, y):
            continue
        leader_newer = (x.offset if x else -1) > (y.offset if y else -1)
        newer = x if leader_newer else y
        assert newer is not None
        out.differing_keys += 1
        if newer.marker in explained:
            continue
        if newer.marker != NO_MARKER:
            missing.setdefault((leader_newer, newer.marker), []).append(newer.offset)
            continue
        shown += 1
        if shown > SHOWN:
            continue
        lacking = b if leader_newer else a
        out.findings.append(
            Finding(
                "REPLICA_KEY_DIFFERS",
                Severity.ERROR,
                lacking.log.location,
                f"the key of offset {newer.offset}: {_value(x)} on the leader "
                f"{a.log.location}, {_value(y)} on the follower {b.log.location}"
                + _deleted_back(x, y),
                newer.offset,
            )
        )
    if shown > SHOWN:
        out.findings.append(
            Finding(
                "REPLICA_KEY_DIFFERS",
                Severity.ERROR,
                b.log.location,
                f"{shown - SHOWN} more keys differ outside transactions",
            )
        )
    for (leader_newer, marker), offsets in sorted(missing.items()):
        holder, lacking = (a, b) if leader_newer else (b, a)
        out.findings.append(
            Finding(
                "REPLICA_COMMITTED_MISSING",
                Severity.ERROR,
                lacking.log.location,
                f"{len(offsets)} record(s) of the transaction committed at offset {marker} on "
                f"{_who(holder, leader_newer)}, the latest of their keys there (first at offset "
                f"{offsets[0]}), are not on {_who(lacking, not leader_newer)}: its consumers "
                "read older values of those keys, or none",
                offsets[0],
            )
        )


def _pairs(
    a: KeyDigests[LatestValue], b: KeyDigests[LatestValue]
) -> Iterator[tuple[bytes, LatestValue | None, LatestValue | None]]:
    for digest, x in a.items():
        yield digest, x, b.get(digest)
    for digest, y in b.items():
        if digest not in a:
            yield digest, None, y


def _same(x: LatestValue | None, y: LatestValue | None) -> bool:
    deleted_x = x is None or x.value == TOMBSTONE
    deleted_y = y is None or y.value == TOMBSTONE
    if deleted_x or deleted_y:
        return deleted_x and deleted_y
    assert x is not None and y is not None
    return x.value == y.value


def _value(v: LatestValue | None) -> str:
    if v is None:
        return "no record"
    if v.value == TOMBSTONE:
        return f"deleted at offset {v.offset}"
    return f"value {v.value.hex()[:12]}... at offset {v.offset}"


def _deleted_back(x: LatestValue | None, y: LatestValue | None) -> str:
    def deleted(v: LatestValue | None) -> bool:
        return v is None or v.value == TOMBSTONE

    if deleted(x) and not deleted(y):
        return ": deleted data is back on the follower"
    if deleted(y) and not deleted(x):
        return ": deleted data is back on the leader"
    return ""


__all__ = [
    "ContentComparison",
    "HeldBatch",
    "LatestValue",
    "ReplicaContent",
    "Transactions",
    "below",
    "cleaned_below",
    "compare_content",
    "held_batches",
    "read_content",
]
