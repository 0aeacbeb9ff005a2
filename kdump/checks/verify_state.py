"""``kdump verify --state FILE``: what earlier runs verified, so a nightly audit reads only what
is new (issue 30; as ZFS's ``zpool scrub -C`` continues, and Ceph scrubs in chunks).

A closed segment verified with no warning or error is remembered by its identity (device,
inode, size, mtime, the index files' sizes and mtimes, a digest of its first and last batch
headers), when, and what its walk learned (its ``LogScan``: the partition's checks across
segments still see every segment). The next run walks only what is new or changed, the active
segments, and a rotating share of the rest (``recheck_fraction``, oldest first; anything older
than ``RECHECK_DAYS`` always). A closed segment whose file changed in place (same inode) is a
finding: a broker never writes a closed segment (the cleaner writes a new file and swaps it in).

The file is JSON, written atomically; a file that is missing starts a full run, one that cannot
be read or is not kdump's is a one-line warning and a full run, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from kdump.checks.audit import (
    DEFAULT_RECHECK_FRACTION,
    RECHECK_DAYS,
    AuditOptions,
    AuditSummary,
)
from kdump.checks.findings import Finding, Severity
from kdump.checks.log import FirstBatch, LogScan
from kdump.checks.segment import SegmentResult
from kdump.checks.sink import FindingSink
from kdump.format.layout import RECORD_BATCH_OVERHEAD
from kdump.format.names import INDEX_SUFFIXES, LOG_SUFFIX
from kdump.format.walk import Stop, StopReason
from kdump.parallel import map_ordered
from kdump.segment import LogSegment
from kdump.storage.reading import KEEP, ReadPolicy, read_ranges

FORMAT = "kdump-verify-state"
OWN_PREFIX = b'{"format":"' + FORMAT.encode() + b'"'
"""How every state file kdump writes begins (``save``: the format is the first key)."""
VERSION = 1
_DAY_MS = 86_400_000


@dataclass(frozen=True)
class SegmentIdentity:
    """What says a closed segment's files are the ones verified before."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    digest: str
    """SHA-256 of its first and last batch headers."""
    indexes: tuple[tuple[str, int, int], ...] = ()
    """(suffix, size, mtime_ns) of each index file there is."""

    def changed_in_place(self, now: SegmentIdentity) -> bool:
        """The same file (device and inode), other bytes: written after it was closed."""
        return (self.device, self.inode) == (now.device, now.inode) and (
            (self.size, self.mtime_ns, self.digest) != (now.size, now.mtime_ns, now.digest)
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SegmentIdentity:
        return cls(**{**d, "indexes": tuple(tuple(i) for i in d["indexes"])})


def identify(
    segment: LogSegment, last_position: int, policy: ReadPolicy = KEEP
) -> SegmentIdentity | None:
    """The identity of a local segment's files now (None: not on local disk, or unreadable);
    ``last_position``: where its last batch starts, as its last walk found it."""
    directory = segment.storage.local_path
    if directory is None or LOG_SUFFIX not in segment.files:
        return None
    headers = [(0, RECORD_BATCH_OVERHEAD)]
    if last_position > 0:
        headers.append((last_position, last_position + RECORD_BATCH_OVERHEAD))
    try:
        status, read = read_ranges(
            os.path.join(directory, segment.files[LOG_SUFFIX]), headers, policy
        )
        indexes = tuple(
            (suffix, s.st_size, s.st_mtime_ns)
            for suffix in INDEX_SUFFIXES
            if suffix in segment.files
            for s in [os.stat(os.path.join(directory, segment.files[suffix]))]
        )
    except OSError:
        return None
    digest = hashlib.sha256(b"".join(read)).hexdigest()
    return SegmentIdentity(
        status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, digest, indexes
    )


@dataclass
class Verified:
    """A closed segment verified clean: its identity then, when (epoch ms), its walk's facts,
    and its info findings (told again while it is not re-read)."""

    identity: SegmentIdentity
    verified_ms: int
    scan: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: it deep-copies every value, a tenth of a run that reads
        # nothing new (thousands of segments)
        i = self.identity
        identity = {
            "device": i.device,
            "inode": i.inode,
            "size": i.size,
            "mtime_ns": i.mtime_ns,
            "digest": i.digest,
            "indexes": [list(x) for x in i.indexes],
        }
        return {
            "identity": identity,
            "verified_ms": self.verified_ms,
            "scan": self.scan,
            "findings": self.findings,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verified:
        """Raises ValueError, KeyError or TypeError on anything a run could not use."""
        verified = cls(
            SegmentIdentity.from_dict(d["identity"]),
            int(d["verified_ms"]),
            dict(d["scan"]),
            list(d.get("findings", [])),
        )
        if verified.scan.keys() != _SCAN_FIELD_SET:
            raise ValueError("a segment's facts are not the ones this kdump keeps")
        # the types as a set, in C: a state of 10,000 segments is checked in 0.02 s, not 0.2
        if not set(map(type, map(verified.scan.__getitem__, _NUMBERS))) <= _NUMBER_TYPES:
            raise ValueError("a segment's facts are not numbers")
        verified.restore_scan("")
        verified.restore_findings()
        return verified

    def restore_scan(self, path: str) -> LogScan:
        return restore_scan(self.scan, path)

    def restore_findings(self) -> list[Finding]:
        return [Finding.from_dict(f) for f in self.findings]


_SCAN_FIELDS = LogScan.FACTS
_SCAN_FIELD_SET = frozenset(_SCAN_FIELDS)
_STRUCTURED = frozenset({"path", "epoch_starts", "first_batch", "stop"})
_NUMBERS = tuple(name for name in _SCAN_FIELDS if name not in _STRUCTURED)
_NUMBER_TYPES = frozenset({int, type(None)})
"""bool is not one: ``type(v) is int``, as JSON's numbers load."""


def scan_facts(scan: LogScan) -> dict[str, Any]:
    """A clean walk's ``LogScan`` as JSON values (its index gather is not kept)."""
    d: dict[str, Any] = {name: getattr(scan, name) for name in _SCAN_FIELDS}
    d["epoch_starts"] = [list(e) for e in scan.epoch_starts]
    d["first_batch"] = None if scan.first_batch is None else list(scan.first_batch)
    stop = scan.stop
    d["stop"] = None if stop is None else [stop.reason.value, stop.position, stop.remaining]
    return d


def restore_scan(facts: dict[str, Any], path: str) -> LogScan:
    """The walk's facts (``scan_facts``) as they were (the segment is the same), named
    ``path`` now."""
    d = dict(facts)
    first, stop = d.pop("first_batch"), d.pop("stop")
    scan = LogScan(path, d["base_offset"], d["size"])
    for name in _NUMBERS:
        setattr(scan, name, d[name])
    scan.epoch_starts = [(e, o) for e, o in d["epoch_starts"]]
    scan.first_batch = None if first is None else FirstBatch(*first)
    scan.stop = None if stop is None else Stop(StopReason(stop[0]), stop[1], stop[2])
    return scan


def walk_facts(result: SegmentResult) -> dict[str, Any]:
    """A segment's walk, clean or not, as JSON values: its facts, its findings and what the
    cap left out. What ``restore_walk`` needs to hand the walk to the segment's partition, whose
    checks across segments (kdump.checks.partition.finish_partition) then run without reading
    the segment again: an export's marker keeps it (kdump.spark.job)."""
    return {
        "scan": None if result.scan is None else scan_facts(result.scan),
        "unread": result.unread,
        "findings": [f.to_dict() for f in result.sink.findings],
        "left_out": [list(x) for x in result.sink.left_out()],
    }


def restore_walk(segment: LogSegment, facts: dict[str, Any], cap: int) -> SegmentResult:
    """``segment``'s walk as ``walk_facts`` kept it. Raises KeyError, TypeError or ValueError
    on facts this kdump does not keep (an older marker)."""
    findings = [Finding.from_dict(f) for f in facts["findings"]]
    sink = FindingSink.restored(cap, findings, [(c, p, int(n)) for c, p, n in facts["left_out"]])
    scan = facts["scan"]
    if scan is not None and scan.keys() != _SCAN_FIELD_SET:
        raise ValueError("a segment's facts are not the ones this kdump keeps")
    restored = None if scan is None else restore_scan(scan, segment.log_path)
    return SegmentResult(segment.base_offset, segment.slot, restored, sink, bool(facts["unread"]))


def key_of(segment: LogSegment) -> str | None:
    """How the state names a local segment: its ``.log``'s real path (None: not local)."""
    directory = segment.storage.local_path
    if directory is None or LOG_SUFFIX not in segment.files:
        return None
    return os.path.realpath(os.path.join(directory, segment.files[LOG_SUFFIX]))


class Plan(NamedTuple):
    """Which segments a run walks, and what it reuses."""

    walk: list[LogSegment]
    reuse: list[tuple[LogSegment, Verified]]
    changed: dict[int, Finding]
    """Findings on segments changed in place, by ``id`` of the segment."""
    rechecks: frozenset[int] = frozenset()
    """The segments of ``walk`` read again though unchanged (by ``id``)."""


class VerifyState:
    """The state file of ``--state``: each clean closed segment verified, by real path."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.segments: dict[str, Verified] = {}
        self.stopped_at: str | None = None
        """The first segment a budget or an interruption left unread (the next run reads the
        segments never verified first)."""
        self.warning: str | None = None
        """Why the file was not used (the run is then a full one)."""
        self.credit = 0.0
        """Re-reads owed: the fractions of ``recheck_fraction`` earlier runs did not make."""
        self.foreign = False
        """The path holds a file kdump did not write (a mistyped path): it is never replaced."""

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> VerifyState:
        state = cls(path)
        try:
            raw = state.path.read_bytes()
        except FileNotFoundError:
            return state
        except OSError as e:
            state.warning = f"{path}: cannot read it ({e.strerror or e}); verifying everything"
            return state
        try:
            doc: Any = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            doc = None
        ours = isinstance(doc, dict) and doc.get("format") == FORMAT
        if not ours and not (doc is None and raw.startswith(OWN_PREFIX)):
            # an operator's file at a mistyped path: never overwritten (save() writes the
            # format first, so a kdump file cut short still starts with it)
            state.foreign = True
            state.warning = (
                f"{path}: not a kdump verify state file; verifying everything and leaving "
                "it as it is (remove it or give --state another path)"
            )
            return state
        try:
            if doc is None:
                raise ValueError("its contents are damaged (not whole JSON)")
            if doc.get("version") != VERSION:
                raise ValueError(f"version {doc.get('version')!r}, not {VERSION}")
            state.segments = {k: Verified.from_dict(v) for k, v in doc["segments"].items()}
            stopped = doc.get("stopped_at")
            state.stopped_at = stopped if isinstance(stopped, str) else None
            credit = doc.get("recheck_credit", 0.0)
            state.credit = float(credit) if isinstance(credit, (int, float)) else 0.0
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            reason = str(e) if isinstance(e, ValueError) and str(e) else "its contents are damaged"
            state.segments, state.stopped_at = {}, None
            state.warning = f"{path}: {reason}; verifying everything"
        return state

    def save(self) -> None:
        """Replace the file atomically (a reader, or a crash, sees the old one or the new);
        never a file kdump did not write."""
        from kdump.render.prom import write_textfile

        if self.foreign:
            return

        # segments retention or the cleaner removed since are forgotten
        self.segments = {k: v for k, v in self.segments.items() if os.path.exists(k)}
        doc = {
            "format": FORMAT,
            "version": VERSION,
            "stopped_at": self.stopped_at,
            "recheck_credit": self.credit,
            "segments": {k: v.to_dict() for k, v in sorted(self.segments.items())},
        }
        write_textfile(self.path, json.dumps(doc, separators=(",", ":")) + "\n")

    # -- a run ------------------------------------------------------------------------------

    def plan(
        self,
        segments: Iterable[LogSegment],
        recheck_fraction: float = DEFAULT_RECHECK_FRACTION,
        now_ms: int | None = None,
        policy: ReadPolicy = KEEP,
    ) -> Plan:
        """What to walk: segments never verified clean, changed, active, or due a re-read
        (first), then the rest are reused. The walk list holds new and changed first, then
        rechecks, so a budget spends itself on what was never read."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        fresh: list[LogSegment] = []
        unchanged: list[tuple[LogSegment, Verified]] = []
        changed: dict[int, Finding] = {}
        pairs = [(s, self._known(s)) for s in segments]
        asked = [(s, k) for s, k in pairs if k is not None]
        # two small reads a segment, from a cold cache as often as not: waited for together
        found = iter(map_ordered(partial(_identify_known, policy=policy), asked, 8, threads=True))
        for segment, known in pairs:
            if known is None:
                fresh.append(segment)
                continue
            now = next(found)
            if now is not None and now == known.identity:
                unchanged.append((segment, known))
                continue
            if now is not None and known.identity.changed_in_place(now):
                changed[id(segment)] = _changed_finding(segment, known.identity, now)
            fresh.append(segment)
        unchanged.sort(key=lambda pair: pair[1].verified_ms)
        due = sum(1 for _, v in unchanged if now_ms - v.verified_ms >= RECHECK_DAYS * _DAY_MS)
        # the share's fractions carry over from run to run: 10 segments at 1/30 are one re-read
        # every third run, not one every run (nor none until all are due on the same day)
        self.credit += len(unchanged) * max(0.0, min(1.0, recheck_fraction))
        count = min(len(unchanged), math.floor(self.credit))
        self.credit -= count
        count = max(due, count)
        recheck = [s for s, _ in unchanged[:count]]
        return Plan(fresh + recheck, unchanged[count:], changed, frozenset(map(id, recheck)))

    def unread(self, plan: Plan, segments: list[LogSegment]) -> None:
        """A run stopped before ``segments`` (a budget, an interruption): the re-reads it owed
        among them are owed still; the first is where it stopped."""
        self.credit += sum(1 for s in segments if id(s) in plan.rechecks)
        self.stopped_at = segments[0].log_path if segments else None

    def _known(self, segment: LogSegment) -> Verified | None:
        key = key_of(segment)
        return None if key is None or segment.is_active else self.segments.get(key)

    def record(
        self,
        segment: LogSegment,
        scan: LogScan | None,
        findings: list[Finding],
        now_ms: int,
        policy: ReadPolicy = KEEP,
    ) -> None:
        """A segment walked this run: remembered when closed and clean, else forgotten."""
        key = key_of(segment)
        if key is not None:
            self.keep(key, verified_record(segment, scan, findings, now_ms, policy))

    def keep(self, key: str, verified: Verified | None) -> None:
        """What a walk of the segment ``key`` (wherever it ran) left: remembered, or not."""
        if verified is None:
            self.segments.pop(key, None)
        else:
            self.segments[key] = verified

    def last_verified(self, segment: LogSegment) -> int | None:
        key = key_of(segment)
        known = None if key is None else self.segments.get(key)
        return None if known is None else known.verified_ms


def verified_record(
    segment: LogSegment,
    scan: LogScan | None,
    findings: list[Finding],
    now_ms: int,
    policy: ReadPolicy = KEEP,
) -> Verified | None:
    """What the state keeps of a segment just walked: a record when it is closed, local and
    clean (info findings at most), else None."""
    clean = scan is not None and all(f.severity is Severity.INFO for f in findings)
    if not clean or segment.is_active or scan is None:
        return None
    identity = identify(segment, scan.last_position, policy)
    if identity is None:
        return None
    return Verified(identity, now_ms, scan_facts(scan), [f.to_dict() for f in findings])


def reused_result(
    segment: LogSegment, known: Verified, max_findings_per_code: int
) -> SegmentResult:
    """An unchanged segment's result as its last walk left it."""
    sink = FindingSink(max_findings_per_code)
    for finding in known.restore_findings():
        sink.add(finding)
    scan = known.restore_scan(segment.log_path)
    return SegmentResult(segment.base_offset, segment.slot, scan, sink)


def state_file(directory: str | os.PathLike[str], log_dir: str) -> Path:
    """The state file of ``log_dir`` among those in ``directory`` (kdump spark verify keeps one
    per log dir): its absolute path, its slashes as ``%2F`` (no two log dirs share a name)."""
    name = os.path.abspath(log_dir).replace("%", "%25").replace("/", "%2F")
    return Path(directory) / f"{name}.json"


def _identify_known(
    pair: tuple[LogSegment, Verified], policy: ReadPolicy
) -> SegmentIdentity | None:
    segment, known = pair
    return identify(segment, int(known.scan.get("last_position", -1)), policy)


def _changed_finding(segment: LogSegment, was: SegmentIdentity, now: SegmentIdentity) -> Finding:
    what = []
    if was.size != now.size:
        what.append(f"size {was.size} -> {now.size}")
    if was.mtime_ns != now.mtime_ns:
        what.append("modification time")
    if was.digest != now.digest:
        what.append("first or last batch header")
    return Finding(
        "SEGMENT_CHANGED",
        Severity.WARNING,
        segment.log_path,
        f"a closed segment verified before changed in place ({', '.join(what)}): a broker "
        "never writes a closed segment (its recovery after an unclean shutdown may truncate "
        "one past the recovery point); something else wrote it; verified again",
    )


__all__ = [
    "DEFAULT_RECHECK_FRACTION",
    "RECHECK_DAYS",
    "AuditOptions",
    "AuditSummary",
    "Plan",
    "SegmentIdentity",
    "Verified",
    "VerifyState",
    "identify",
    "key_of",
    "restore_scan",
    "restore_walk",
    "reused_result",
    "scan_facts",
    "state_file",
    "verified_record",
    "walk_facts",
]
