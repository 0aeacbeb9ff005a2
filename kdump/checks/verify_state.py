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

import errno
import hashlib
import math
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kdump import readback
from kdump.checks.audit import (
    DEFAULT_RECHECK_FRACTION,
    RECHECK_DAYS,
    AuditOptions,
    AuditSummary,
)
from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity, read_finding
from kdump.checks.registry import REGISTRY
from kdump.checks.segment import Resume, SegmentResult, unread_error
from kdump.checks.sink import FindingSink
from kdump.errors import InputError, KdumpError, ReadBackError
from kdump.format.layout import RECORD_BATCH_OVERHEAD
from kdump.format.names import INDEX_SUFFIX, INDEX_SUFFIXES, LOG_SUFFIX, TIME_INDEX_SUFFIX
from kdump.format.walk import Stop, StopReason
from kdump.log_scan import FirstBatch, LogScan
from kdump.parallel import map_ordered
from kdump.segment import LogSegment
from kdump.storage.reading import KEEP, ReadPolicy, read_ranges
from kdump.untrusted import json_text, path_part

FORMAT = "kdump-verify-state"
OWN_PREFIX = b'{"format":"' + FORMAT.encode() + b'"'
"""How every state file kdump writes begins (``save``: the format is the first key)."""
VERSION = 2
"""2 (issue 39, 44): identities hold the ctime, active segments their verified prefix."""
_DAY_MS = 86_400_000
MAX_STATE_BYTES = 64 << 20
"""The largest state file read (about 100,000 segments'): JSON takes ten times its size as
Python objects."""
MAX_SEGMENTS = 1 << 20
WHOLE_FILE_CODES = frozenset(
    {
        Code.INDEX_PREALLOCATED,
        Code.TIMEINDEX_PREALLOCATED,
        Code.INDEX_SANITY_CHECK_FAILS,
        Code.TIMEINDEX_SANITY_CHECK_FAILS,
    }
)
"""Findings a resumed walk gives again from the whole index files (kdump.checks.indexes'
layout checks): an active segment whose walk found nothing else has a prefix worth keeping."""


@dataclass(frozen=True)
class SegmentIdentity:
    """What says a closed segment's files are the ones verified before. The ctime is the
    kernel's: no user sets it (an owner sets the mtime, ``touch -d``), so a byte changed in
    place and the mtime put back is still a change."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    digest: str
    """SHA-256 of its first and last batch headers."""
    indexes: tuple[tuple[str, int, int], ...] = ()
    """(suffix, size, mtime_ns) of each index file there is."""
    ctime_ns: int = 0

    def changed_in_place(self, now: SegmentIdentity) -> bool:
        """The same file (device and inode), other bytes: written after it was closed."""
        return (self.device, self.inode) == (now.device, now.inode) and (
            (self.size, self.mtime_ns, self.digest) != (now.size, now.mtime_ns, now.digest)
        )

    @classmethod
    def from_dict(cls, value: Any) -> SegmentIdentity:
        """An identity as ``to_dict`` (or ``dataclasses.asdict``) wrote it, read typed:
        kdump.errors.ReadBackError (a ValueError) on anything else."""
        return _read_identity(value, "identity")

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "inode": self.inode,
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "ctime_ns": self.ctime_ns,
            "digest": self.digest,
            "indexes": [list(x) for x in self.indexes],
        }


def identify(
    segment: LogSegment, last_position: int, policy: ReadPolicy = KEEP
) -> SegmentIdentity | None:
    """The identity of a local segment's files now (None: not on local disk, or unreadable);
    ``last_position``: where its last batch starts, as its last walk found it."""
    directory = segment.storage.local_path
    if directory is None or LOG_SUFFIX not in segment.files:
        return None
    try:
        status, digest = _headers_digest(
            os.path.join(directory, segment.files[LOG_SUFFIX]), last_position, policy
        )
        indexes = tuple(
            (suffix, s.st_size, s.st_mtime_ns)
            for suffix in INDEX_SUFFIXES
            if suffix in segment.files
            for s in [os.stat(os.path.join(directory, segment.files[suffix]))]
        )
    except OSError:
        return None
    return SegmentIdentity(
        status.st_dev,
        status.st_ino,
        status.st_size,
        status.st_mtime_ns,
        digest,
        indexes,
        status.st_ctime_ns,
    )


def _headers_digest(
    path: str, last_position: int, policy: ReadPolicy, more: Iterable[tuple[int, int]] = ()
) -> tuple[os.stat_result, str]:
    headers = [(0, RECORD_BATCH_OVERHEAD)]
    if last_position > 0:
        headers.append((last_position, last_position + RECORD_BATCH_OVERHEAD))
    status, read = read_ranges(path, [*headers, *more], policy)
    return status, hashlib.sha256(b"".join(read)).hexdigest()


@dataclass
class Verified:
    """A closed segment verified clean: its identity then, when (epoch ms), its walk's facts,
    and its info findings (told again while it is not re-read)."""

    identity: SegmentIdentity
    verified_ms: int
    scan: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    deep: bool = False
    """Verified with --deep (a run with --deep reads a segment verified without again)."""

    def to_dict(self) -> dict[str, Any]:
        # not dataclasses.asdict: it deep-copies every value, a tenth of a run that reads
        # nothing new (thousands of segments)
        return {
            "identity": self.identity.to_dict(),
            "verified_ms": self.verified_ms,
            "deep": self.deep,
            "scan": self.scan,
            "findings": self.findings,
        }

    def restore_scan(self, path: str) -> LogScan:
        return restore_scan(self.scan, path)

    def restore_findings(self) -> list[Finding]:
        return [Finding.from_dict(f) for f in self.findings]


@dataclass
class Prefix:
    """An active segment verified clean up to ``scan["valid_bytes"]``: its file (device,
    inode), a digest of its first and last batch headers, and how many entries each index
    had (all pointing into the prefix) with a digest of them. The next run reads only what was
    appended since, unless one of these changed (issue 44 point 4)."""

    device: int
    inode: int
    digest: str
    index_entries: int
    time_index_entries: int
    verified_ms: int
    scan: dict[str, Any]
    deep: bool = False

    @property
    def size(self) -> int:
        return int(self.scan["valid_bytes"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "inode": self.inode,
            "digest": self.digest,
            "index_entries": self.index_entries,
            "time_index_entries": self.time_index_entries,
            "verified_ms": self.verified_ms,
            "deep": self.deep,
            "scan": self.scan,
        }


_SCAN_FIELDS = LogScan.FACTS
_SCAN_FIELD_SET = frozenset(_SCAN_FIELDS)
_STRUCTURED = frozenset({"path", "epoch_starts", "first_batch", "stop"})
_NUMBERS = tuple(name for name in _SCAN_FIELDS if name not in _STRUCTURED)
_NUMBER_TYPES = frozenset({int, type(None)})
"""bool is not one: ``type(v) is int``, as JSON's numbers load."""
_DIGEST = r"[0-9a-f]{64}"
_STOP_REASONS = frozenset(r.value for r in StopReason)


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


# -- reading a state file back: typed and bounded (kdump.readback) -----------------------------


def read_scan(value: Any, where: str) -> dict[str, Any]:
    """A walk's facts as ``scan_facts`` wrote them: every field there, each of its type and
    range, and nothing else."""
    facts = readback.mapping(value, where)
    if facts.keys() != _SCAN_FIELD_SET:
        raise ReadBackError(where, "a segment's facts are not the ones this kdump keeps")
    # the number types as a set, in C: a state of 10,000 segments is checked in 0.02 s
    if not set(map(type, map(facts.__getitem__, _NUMBERS))) <= _NUMBER_TYPES:
        raise ReadBackError(where, "a segment's facts are not numbers")
    for name in _NUMBERS:
        readback.optional_integer(facts[name], f"{where}.{name}")
    readback.text(facts["path"], f"{where}.path")
    epochs = readback.array(facts["epoch_starts"], f"{where}.epoch_starts", MAX_SEGMENTS)
    for i, pair in enumerate(epochs):
        readback.integers(pair, f"{where}.epoch_starts[{i}]", 2, "an (epoch, offset) pair")
    if facts["first_batch"] is not None:
        readback.integers(facts["first_batch"], f"{where}.first_batch", 6, "a batch's numbers")
    stop = facts["stop"]
    if stop is not None:
        at = f"{where}.stop"
        if len(readback.array(stop, at, 3)) != 3 or stop[0] not in _STOP_REASONS:
            raise ReadBackError(at, "not a walk's end")
        readback.integer(stop[1], at, 0)
        readback.integer(stop[2], at, 0)
    return facts


def _read_identity(value: Any, where: str) -> SegmentIdentity:
    d = readback.mapping(value, where)
    count = partial(readback.integer, low=0)
    indexes = []
    for i, item in enumerate(readback.array(d.get("indexes"), f"{where}.indexes", 3)):
        at = f"{where}.indexes[{i}]"
        if len(readback.array(item, at, 3)) != 3 or item[0] not in INDEX_SUFFIXES:
            raise ReadBackError(at, "not an index file's (suffix, size, mtime)")
        indexes.append((item[0], count(item[1], at), readback.integer(item[2], at)))
    return SegmentIdentity(
        count(d.get("device"), f"{where}.device"),
        count(d.get("inode"), f"{where}.inode"),
        count(d.get("size"), f"{where}.size"),
        readback.integer(d.get("mtime_ns"), f"{where}.mtime_ns"),
        readback.text(d.get("digest"), f"{where}.digest", 64, _DIGEST),
        tuple(indexes),
        readback.integer(d.get("ctime_ns"), f"{where}.ctime_ns"),
    )


def _read_info(value: Any, where: str) -> dict[str, Any]:
    """A finding kept with a segment verified clean: information, of a code kdump knows, with
    no command to run (what a restored finding prints must be what a walk would print)."""
    finding = read_finding(value, where)
    if finding.severity is not Severity.INFO or finding.code not in REGISTRY or finding.fix:
        raise ReadBackError(where, "not a finding a segment verified clean has")
    return finding.to_dict()


def _read_verified(value: Any, where: str) -> Verified:
    d = readback.mapping(value, where)
    return Verified(
        _read_identity(d.get("identity"), f"{where}.identity"),
        readback.integer(d.get("verified_ms"), f"{where}.verified_ms", 0),
        read_scan(d.get("scan"), f"{where}.scan"),
        readback.each(d.get("findings", []), f"{where}.findings", 1000, _read_info),
        readback.flag(d.get("deep", False), f"{where}.deep"),
    )


def _read_prefix(value: Any, where: str) -> Prefix:
    d = readback.mapping(value, where)
    count = partial(readback.integer, low=0)
    return Prefix(
        count(d.get("device"), f"{where}.device"),
        count(d.get("inode"), f"{where}.inode"),
        readback.text(d.get("digest"), f"{where}.digest", 64, _DIGEST),
        count(d.get("index_entries"), f"{where}.index_entries"),
        count(d.get("time_index_entries"), f"{where}.time_index_entries"),
        readback.integer(d.get("verified_ms"), f"{where}.verified_ms", 0),
        read_scan(d.get("scan"), f"{where}.scan"),
        readback.flag(d.get("deep", False), f"{where}.deep"),
    )


def _keyed(value: Any, where: str, read: Any) -> dict[str, Any]:
    d = readback.mapping(value, where)
    if len(d) > MAX_SEGMENTS:
        raise ReadBackError(where, f"{len(d)} segments, more than {MAX_SEGMENTS}")
    out = {}
    for key, item in d.items():
        if not key.startswith("/") or len(key) > 4096:
            raise ReadBackError(where, f"{key[:80]!r} is not a segment's path")
        out[key] = read(item, f"{where}[{key}]")
    return out


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
    """``segment``'s walk as ``walk_facts`` kept it, every value read typed and bounded
    (kdump.readback). Raises kdump.errors.ReadBackError (a ValueError) on facts this kdump does
    not keep (an older marker)."""
    d = readback.mapping(facts, "walk")
    findings = readback.each(d.get("findings"), "walk.findings", MAX_SEGMENTS, read_finding)
    left_out = []
    for i, item in enumerate(readback.array(d.get("left_out"), "walk.left_out", 1000)):
        at = f"walk.left_out[{i}]"
        if len(readback.array(item, at, 3)) != 3:
            raise ReadBackError(at, "not a (code, path, count)")
        code, path = readback.text(item[0], at, 80), readback.text(item[1], at)
        left_out.append((code, path, readback.integer(item[2], at, 0)))
    sink = FindingSink.restored(cap, findings, left_out)
    scan = d.get("scan")
    restored = (
        None if scan is None else restore_scan(read_scan(scan, "walk.scan"), segment.log_path)
    )
    unread = readback.flag(d.get("unread"), "walk.unread")
    error = unread_error(sink.findings, segment.log_path) if unread else None
    return SegmentResult(segment.base_offset, segment.slot, restored, sink, error)


def key_of(segment: LogSegment) -> str | None:
    """How the state names a local segment: its ``.log``'s real path (None: not local)."""
    directory = segment.storage.local_path
    if directory is None or LOG_SUFFIX not in segment.files:
        return None
    return os.path.realpath(os.path.join(directory, segment.files[LOG_SUFFIX]))


@dataclass
class Plan:
    """Which segments a run walks, and what it reuses."""

    walk: list[LogSegment]
    reuse: list[tuple[LogSegment, Verified]]
    changed: dict[int, Finding]
    """Findings on segments changed in place, by ``id`` of the segment."""
    rechecks: frozenset[int] = frozenset()
    """The segments of ``walk`` read again though unchanged (by ``id``)."""
    resume: dict[int, Resume] = field(default_factory=dict)
    """Segments of ``walk`` read from their verified prefix on (by ``id``)."""

    def bytes_to_read(self, segment: LogSegment) -> int:
        resume = self.resume.get(id(segment))
        return segment.log_size - (0 if resume is None else resume.scan.valid_bytes)


FUTURE_SLACK_MS = 60_000
"""How far ahead of the clock a segment's verification time may be (a clock set back a
little); beyond, the segment counts as never verified (a forged time, or a clock that was
wrong): it is read again, and its time is not the run's oldest."""


class VerifyState:
    """The state file of ``--state``: each clean closed segment verified, and each clean active
    segment's verified prefix, by real path.

    kdump trusts it across runs, so only a file the running user owns and no one else may
    write is read (kdump writes it 0600), never through a symbolic link, at most
    MAX_STATE_BYTES, every value typed and bounded (issue 39 point 5): anything else is a
    one-line warning and a full run. A file of another user, or a link, is never replaced."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.segments: dict[str, Verified] = {}
        self.active: dict[str, Prefix] = {}
        self.stopped_at: str | None = None
        """The first segment a budget or an interruption left unread (the next run reads the
        segments never verified first)."""
        self.warning: str | None = None
        """Why the file was not used (the run is then a full one), or not saved."""
        self.credit = 0.0
        """Re-reads owed: the fractions of ``recheck_fraction`` earlier runs did not make."""
        self.foreign = False
        """The path holds a file kdump did not write (a mistyped path), another user's, or a
        link: it is never replaced."""

    @classmethod
    def load(cls, path: str | os.PathLike[str], now_ms: int | None = None) -> VerifyState:
        state = cls(path)
        raw = state._read_own()
        if raw is None:
            return state
        problem: ReadBackError | None = None
        try:
            doc: Any = readback.load(raw, MAX_STATE_BYTES)
        except ReadBackError as e:
            doc, problem = None, e
        ours = isinstance(doc, dict) and doc.get("format") == FORMAT
        if not ours and not (doc is None and raw.startswith(OWN_PREFIX)):
            # an operator's file at a mistyped path: never overwritten (save() writes the
            # format first, so a kdump file cut short still starts with it)
            return state._refuse(
                "not a kdump verify state file; verifying everything and leaving it as it is "
                "(remove it or give --state another path)"
            )
        try:
            if doc is None:  # kdump's, but too large, cut short or with NaN in it
                reason = (
                    "not whole JSON" if problem is None or "JSON at" in str(problem) else problem
                )
                raise ReadBackError("", f"its contents are damaged ({reason})")
            if doc.get("version") != VERSION:
                raise ReadBackError("", f"version {doc.get('version')!r}, not {VERSION}")
            state.segments = _keyed(doc.get("segments"), "segments", _read_verified)
            state.active = _keyed(doc.get("active", {}), "active", _read_prefix)
            stopped = doc.get("stopped_at")
            state.stopped_at = stopped if isinstance(stopped, str) else None
            credit = readback.number(doc.get("recheck_credit", 0), "recheck_credit", 0, 1e9)
            state.credit = credit
        except ReadBackError as e:
            state.segments, state.active, state.stopped_at = {}, {}, None
            state.warning = f"{path}: {e}; verifying everything"
        return state

    def _read_own(self) -> bytes | None:
        """The file's bytes where this user may trust them (None: none there, or not trusted:
        ``warning`` and ``foreign`` say so)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                self._refuse("a symbolic link, not followed; verifying everything, and it is "
                             "not replaced (give --state the file itself)")  # fmt: skip
            else:
                self.warning = (
                    f"{self.path}: cannot read it ({e.strerror or e}); verifying everything"
                )
            return None
        with os.fdopen(fd, "rb") as f:
            status = os.fstat(f.fileno())
            if not stat.S_ISREG(status.st_mode):
                self._refuse("not a file; verifying everything and leaving it as it is")
                return None
            if status.st_uid != os.geteuid() or status.st_mode & 0o022:
                whose = (
                    f"owned by uid {status.st_uid}"
                    if status.st_uid != os.geteuid()
                    else f"writable by {'group' if status.st_mode & 0o020 else 'others'}"
                )
                self._refuse(
                    f"{whose} (mode {stat.S_IMODE(status.st_mode):04o}): another user could "
                    "make it hide damage, so it is not trusted; verifying everything and "
                    "leaving it as it is (remove it, or make it this user's with mode 0600)"
                )
                return None
            return f.read(MAX_STATE_BYTES + 1)

    def _refuse(self, why: str) -> VerifyState:
        self.foreign = True
        self.warning = f"{self.path}: {why}"
        return self

    def save(self) -> None:
        """Replace the file atomically (a reader, or a crash, sees the old one or the new),
        mode 0600; never a file kdump did not write or does not trust. A failure is the
        ``warning`` (the run keeps its findings and its exit code), never an error."""
        from kdump.storage.outputs import write_textfile

        if self.foreign:
            return

        # segments retention or the cleaner removed since are forgotten
        self.segments = {k: v for k, v in self.segments.items() if os.path.exists(k)}
        self.active = {k: v for k, v in self.active.items() if os.path.exists(k)}
        doc = {
            "format": FORMAT,
            "version": VERSION,
            "stopped_at": self.stopped_at,
            "recheck_credit": self.credit,
            "segments": {k: v.to_dict() for k, v in sorted(self.segments.items())},
            "active": {k: v.to_dict() for k, v in sorted(self.active.items())},
        }
        try:
            write_textfile(self.path, json_text(doc, separators=(",", ":")) + "\n", mode=0o600)
        except (KdumpError, OSError) as e:
            reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e)
            self.warning = f"{self.path}: not saved ({reason}); the next run reads everything"

    # -- a run ------------------------------------------------------------------------------

    def plan(
        self,
        segments: Iterable[LogSegment],
        recheck_fraction: float = DEFAULT_RECHECK_FRACTION,
        now_ms: int | None = None,
        policy: ReadPolicy = KEEP,
        deep: bool = False,
    ) -> Plan:
        """What to walk: segments never verified clean, changed, active, or due a re-read
        (first), then the rest are reused. The walk list holds new and changed first, then
        rechecks, so a budget spends itself on what was never read. A segment verified
        without --deep is read again by a run with it; one verified in the future (a forged
        time, a wrong clock) counts as never verified. An active segment whose verified
        prefix is unchanged is read from its end (``Plan.resume``)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        fresh: list[LogSegment] = []
        unchanged: list[tuple[LogSegment, Verified]] = []
        changed: dict[int, Finding] = {}
        resume: dict[int, Resume] = {}
        latest = now_ms + FUTURE_SLACK_MS
        pairs = [(s, self._known(s, deep, latest)) for s in segments]
        asked = [(s, k) for s, k in pairs if k is not None]
        # two small reads a segment, from a cold cache as often as not: waited for together
        found = iter(map_ordered(partial(_identify_known, policy=policy), asked, 8, threads=True))
        for segment, known in pairs:
            if known is None:
                prefix = self._prefix(segment, deep, latest, policy)
                if prefix is not None:
                    resume[id(segment)] = prefix
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
        return Plan(
            fresh + recheck, unchanged[count:], changed, frozenset(map(id, recheck)), resume
        )

    def unread(self, plan: Plan, segments: list[LogSegment]) -> None:
        """A run stopped before ``segments`` (a budget, an interruption): the re-reads it owed
        among them are owed still; the first is where it stopped."""
        self.credit += sum(1 for s in segments if id(s) in plan.rechecks)
        self.stopped_at = segments[0].log_path if segments else None

    def _known(
        self, segment: LogSegment, deep: bool = False, latest: int | None = None
    ) -> Verified | None:
        key = key_of(segment)
        known = None if key is None or segment.is_active else self.segments.get(key)
        if known is None or (deep and not known.deep):
            return None
        return None if latest is not None and known.verified_ms > latest else known

    def _prefix(
        self, segment: LogSegment, deep: bool, latest: int, policy: ReadPolicy
    ) -> Resume | None:
        """Where a segment's walk can go on from: its verified prefix, where its file, its
        first and last batch headers then, and the index entries then are unchanged."""
        key = key_of(segment)
        prefix = None if key is None else self.active.get(key)
        if prefix is None or (deep and not prefix.deep) or prefix.verified_ms > latest:
            return None
        directory = segment.storage.local_path
        assert directory is not None  # a key: local
        try:
            status, digest = _prefix_digest(segment, prefix.scan, prefix.index_entries,
                                            prefix.time_index_entries, policy)  # fmt: skip
        except OSError:
            return None
        same = (status.st_dev, status.st_ino, digest) == (
            prefix.device,
            prefix.inode,
            prefix.digest,
        )
        if not same or status.st_size < prefix.size:
            return None
        scan = restore_scan(prefix.scan, segment.log_path)
        return Resume(scan, prefix.index_entries, prefix.time_index_entries)

    def record(
        self,
        segment: LogSegment,
        scan: LogScan | None,
        findings: list[Finding],
        now_ms: int,
        policy: ReadPolicy = KEEP,
        deep: bool = False,
    ) -> None:
        """A segment walked this run: remembered when closed and clean (an active one: its
        prefix, when it holds nothing but what the whole index files give again), else
        forgotten."""
        key = key_of(segment)
        if key is None:
            return
        self.keep(key, verified_record(segment, scan, findings, now_ms, policy, deep))
        prefix = prefix_record(segment, scan, findings, now_ms, policy, deep)
        if prefix is None:
            self.active.pop(key, None)
        else:
            self.active[key] = prefix

    def keep(self, key: str, verified: Verified | None) -> None:
        """What a walk of the segment ``key`` (wherever it ran) left: remembered, or not."""
        if verified is None:
            self.segments.pop(key, None)
        else:
            self.segments[key] = verified
            self.active.pop(key, None)

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
    deep: bool = False,
) -> Verified | None:
    """What the state keeps of a segment just walked: a record when it is closed, local and
    clean (info findings at most, none with a command), else None."""
    clean = scan is not None and all(f.severity is Severity.INFO and not f.fix for f in findings)
    if not clean or segment.is_active or scan is None:
        return None
    identity = identify(segment, scan.last_position, policy)
    if identity is None:
        return None
    findings_kept = [f.to_dict() for f in findings]
    return Verified(identity, now_ms, scan_facts(scan), findings_kept, deep)


def prefix_record(
    segment: LogSegment,
    scan: LogScan | None,
    findings: list[Finding],
    now_ms: int,
    policy: ReadPolicy = KEEP,
    deep: bool = False,
) -> Prefix | None:
    """What the state keeps of an active segment just walked whole to its end with nothing
    found but what its whole index files give again (WHOLE_FILE_CODES): its verified prefix."""
    if not segment.is_active or scan is None or scan.stop is None:
        return None
    if scan.stop.reason is not StopReason.END or scan.valid_bytes != scan.size:
        return None
    if any(f.code not in WHOLE_FILE_CODES or f.severity is not Severity.INFO for f in findings):
        return None
    directory = segment.storage.local_path
    if directory is None:
        return None
    index, time_index = segment.offset_index, segment.time_index
    k = 0 if index is None else index.used_entries
    k_time = 0 if time_index is None else time_index.used_entries
    facts = scan_facts(scan)
    try:
        status, digest = _prefix_digest(segment, facts, k, k_time, policy)
    except OSError:
        return None
    if status.st_size < scan.valid_bytes:
        return None
    return Prefix(status.st_dev, status.st_ino, digest, k, k_time, now_ms, facts, deep)


def _prefix_digest(
    segment: LogSegment, facts: dict[str, Any], k: int, k_time: int, policy: ReadPolicy
) -> tuple[os.stat_result, str]:
    """The ``.log``'s status, and a digest of its first and last batch headers (as ``facts``
    found them) and of the first ``k`` and ``k_time`` entries of its offset and time index."""
    directory = segment.storage.local_path
    assert directory is not None
    status, digest = _headers_digest(
        os.path.join(directory, segment.files[LOG_SUFFIX]), int(facts["last_position"]), policy
    )
    parts = [digest.encode()]
    for suffix, entries, size in ((INDEX_SUFFIX, k, 8), (TIME_INDEX_SUFFIX, k_time, 12)):
        if suffix not in segment.files:
            parts.append(b"-" if entries == 0 else b"missing")
            continue
        _, read = read_ranges(
            os.path.join(directory, segment.files[suffix]), [(0, entries * size)], policy
        )
        parts.append(hashlib.sha256(read[0]).digest() if len(read[0]) == entries * size else b"?")
    return status, hashlib.sha256(b"\0".join(parts)).hexdigest()


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


ROOT_STATE_DIR = "/var/lib/kdump"


def default_state_dir() -> Path:
    """Where ``--state`` without a path keeps its files: root's in /var/lib/kdump (whatever
    its environment says: ``sudo -E`` keeps a user's), a user's in ``$XDG_STATE_HOME/kdump``
    (``~/.local/state/kdump``)."""
    if os.geteuid() == 0:
        return Path(ROOT_STATE_DIR)
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(os.path.abspath(base)) / "kdump"


def default_state_path(paths: Iterable[str]) -> Path:
    """The state file of a run of ``paths`` in ``default_state_dir``: one per set of paths
    verified (two crons of two log dirs never share one), named after them."""
    joined = "+".join(sorted(os.path.abspath(p) for p in paths))
    digest = hashlib.sha256(joined.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return default_state_dir() / f"verify-{path_part(joined.strip('/'), 'none')[:80]}-{digest}.json"


def check_state_path(path: Path, made: bool = False) -> None:
    """An error now, before any work, where the state file cannot be written: its directory
    missing (``made``: the default one, made here, mode 0700), not a directory, or not this
    user's to write in (issue 44 point 9: found after the run, the findings were lost)."""

    directory = path.parent
    if made and not directory.exists():
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as e:
            raise InputError(str(path), f"cannot make its directory: {e.strerror or e}") from None
    if not directory.is_dir():
        reason = "not a directory" if directory.exists() else "no such directory"
        raise InputError(str(path), f"cannot write it: {reason}: {directory}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(str(path), f"cannot write it: permission denied: {directory}")


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
    "Prefix",
    "SegmentIdentity",
    "Verified",
    "VerifyState",
    "check_state_path",
    "default_state_path",
    "identify",
    "key_of",
    "prefix_record",
    "restore_scan",
    "restore_walk",
    "reused_result",
    "scan_facts",
    "state_file",
    "verified_record",
    "walk_facts",
]
