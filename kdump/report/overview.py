"""What the report's page shows of each partition, worked out once from the collected model:
its status (the worst thing wrong with it), the overview table's cells as words, and whether
(and why) it gets a detailed section. The page (kdump/report/html.py) and the JSON model
embedded in it (kdump/report/embed.py) both read these rows, so what the JSON says is what the
page shows.

Colour on the page follows ``status`` only: a partition that is fine is drawn in greys.
"""

from __future__ import annotations

import math
import os
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kdump.checks.codes import Code
from kdump.format.names import LOG_SUFFIX, segment_file_name
from kdump.report.collect import LogDirView, OpenTxnView, PartitionView, ReportModel
from kdump.units import offset_span, rough_duration, size

STATUSES = ("damaged", "errors", "warnings", "blocked", "ok", "empty")
"""Worst first: ``damaged`` (recovery cuts the log), ``errors``, ``warnings``, ``blocked``
(retention or compaction cannot proceed), ``ok`` (info findings at most), ``empty``."""

BLOCKING = {
    "high_watermark": "held by the high watermark",
    "future_timestamp": "a timestamp in the future",
}
"""Retention blockers that are a problem (kdump.explain.retention's Blocker kinds); the others
(not expired yet, retention off, the policy) are retention working as configured."""

LARGEST = 3
"""The largest partitions get a detailed section whatever their state."""

SIZE_SHADES = 4
"""Shades of grey for a partition's size in the fleet map (0: empty)."""


@dataclass(frozen=True)
class PartitionRow:
    """One partition as the page shows it (its overview row, its cell in the fleet map)."""

    anchor: str
    """The id of its detailed section (``d-…``) or, without one, of its table row (``r-…``)."""
    label: str
    """Its directory name, with its log dir's name where two log dirs hold that name."""
    status: str
    problems: tuple[str, ...]
    """What is wrong, worst first, in words (empty: nothing)."""
    size: str
    segments: int
    offsets: str
    age: str
    """How old its oldest batch is at --now (its first segment's first timestamp)."""
    last_write: str
    """How long before --now its newest batch was written (the largest timestamp)."""
    rolled_by: str
    """Why its closed segments rolled (kdump explain), the most frequent cause first."""
    retention: str
    compaction: str
    transactions: str
    findings: str
    counts: dict[str, int]
    """Its findings by severity."""
    detail: str | None
    """Why it has a detailed section (None: it has none)."""
    shade: int
    """Its size's shade in the fleet map, 0 (empty) .. SIZE_SHADES."""

    @property
    def rank(self) -> int:
        return STATUSES.index(self.status)


def anchor_of(p: PartitionView, detailed: bool) -> str:
    """A stable id (the same report twice is the same file)."""
    return f"{'d' if detailed else 'r'}-{zlib.crc32(os.fsencode(p.path)):08x}"


def log_dir_anchor(d: LogDirView) -> str:
    """The id of a log dir's summary (its own files' findings, the broker's startup)."""
    return f"l-{zlib.crc32(os.fsencode(d.path)):08x}"


def labels(model: ReportModel) -> dict[str, str]:
    """Each partition's name, with as much of its log dir's path as tells it apart where the
    name is not unique on the page."""
    paths = {p.path: Path(p.path) for p in model.partitions}
    names = Counter(path.name for path in paths.values())
    out = {}
    for p, path in paths.items():
        if names[path.name] == 1:
            out[p] = path.name
            continue
        same = [q.parent.parts for q in paths.values() if q.name == path.name and q != path]
        parts = path.parent.parts
        depth = 1
        while depth < len(parts) and any(q[-depth:] == parts[-depth:] for q in same):
            depth += 1
        out[p] = f"{path.name} ({'/'.join(parts[-depth:])})"
    return out


def rows(model: ReportModel) -> dict[str, PartitionRow]:
    """Every partition's row, by path."""
    label = labels(model)
    largest = {
        p.path
        for p in sorted(model.partitions, key=lambda p: -p.summary.bytes)[:LARGEST]
        if p.summary.bytes
    }
    sizes = [p.summary.bytes for p in model.partitions if p.summary.bytes]
    scale = (min(sizes, default=1), max(sizes, default=1))
    return {
        p.path: _row(p, model.now, label[p.path], p.path in largest, scale)
        for p in model.partitions
    }


def shade(n: int, scale: tuple[int, int]) -> int:
    """0 for an empty partition, else 1 (the smallest) .. SIZE_SHADES (the largest), on a log
    scale: partition sizes span orders of magnitude."""
    if not n:
        return 0
    lo, hi = (math.log(v) for v in scale)
    if hi <= lo:
        return SIZE_SHADES
    return 1 + min(SIZE_SHADES - 1, int(SIZE_SHADES * (math.log(n) - lo) / (hi - lo)))


def _row(
    p: PartitionView, now: int, label: str, large: bool, scale: tuple[int, int]
) -> PartitionRow:
    counts = p.counts()
    status, problems = status_of(p, counts)
    detail = _detail(p, status, large)
    s = p.summary
    return PartitionRow(
        anchor=anchor_of(p, detail is not None),
        label=label,
        status=status,
        problems=tuple(problems),
        size=size(s.bytes),
        segments=s.segments,
        offsets=_offsets(p),
        age=_ago(now, oldest(p)),
        last_write=_ago(now, newest(p)),
        rolled_by=rolled_by(p),
        retention=_retention(p),
        compaction=_compaction(p),
        transactions=_transactions(p),
        findings=_findings(counts),
        counts=counts,
        detail=detail,
        shade=shade(s.bytes, scale),
    )


def oldest(p: PartitionView) -> int:
    """The first batch's timestamp of its oldest segment with one (-1: none)."""
    return min((s.first_timestamp for s in p.segments if s.first_timestamp >= 0), default=-1)


def newest(p: PartitionView) -> int:
    """The largest timestamp among its segments that hold batches (an empty segment's is its
    file's modification time, which says nothing of the data): -1 for none."""
    return max((s.largest_timestamp for s in p.segments if s.batches), default=-1)


def zero_tail(p: PartitionView) -> bool:
    """Where recovery cuts ``p`` there are only zeros (LOG_ZERO_TAIL: a power loss's unwritten
    tail, or preallocated space): a cut that loses no record, a warning as verify grades it."""
    damaged = p.facts.get("damaged_from")
    if damaged is None:
        return False
    log = segment_file_name(damaged["segment"], LOG_SUFFIX)
    return any(
        f.code == Code.LOG_ZERO_TAIL
        and f.position == damaged["position"]
        and Path(f.path).name == log
        for f in p.findings
    )


def status_of(p: PartitionView, c: dict[str, int]) -> tuple[str, list[str]]:
    """The worst state of ``p`` (``c``: its findings by severity) and every problem, in
    words."""
    problems = []
    damaged = p.facts.get("damaged_from")
    if damaged is not None and zero_tail(p):
        problems.append(
            f"zeros after the last batch of segment {damaged['segment']} from position "
            f"{damaged['position']}: recovery truncates them, no record is lost"
        )
        damaged = None
    elif damaged is not None:
        problems.append(
            f"damaged at segment {damaged['segment']} position {damaged['position']}: "
            f"recovery cuts the log at offset {damaged['offset']}"
        )
    if c["error"]:
        problems.append(f"errors: {_codes(p, 'error')}")
    if c["warning"]:
        problems.append(f"warnings: {_codes(p, 'warning')}")
    blocker = p.retention_blocker
    if blocker is not None and blocker.kind in BLOCKING:
        problems.append(
            f"retention blocked at segment {blocker.base_offset}: {BLOCKING[blocker.kind]}"
        )
    held = compaction_held(p)
    if p.compaction_blocked is not None:
        problems.append("compaction blocked: " + p.compaction_blocked)
    elif held is not None:
        problems.append(
            f"compaction blocked at offset {held.first_offset}: a hanging transaction holds "
            "the last stable offset, where the cleaner stops, below the active segment"
        )
    problems += p.problems
    if damaged is not None:
        status = "damaged"
    elif c["error"]:
        status = "errors"
    elif c["warning"] or p.problems:
        status = "warnings"
    elif problems:
        status = "blocked"
    else:
        status = "ok" if p.summary.bytes else "empty"
    if p.tiny_segments is not None:  # a setting to look at, not a fault
        problems.append("tiny segments: " + p.tiny_segments)
    return status, problems


def _codes(p: PartitionView, severity: str) -> str:
    found = Counter(f.code for f in p.findings if f.severity.value == severity)
    return ", ".join(f"{code}" + (f" ×{n}" if n > 1 else "") for code, n in found.most_common())


def compaction_held(p: PartitionView) -> OpenTxnView | None:
    """The hanging transaction that holds the cleaner of a compacted log below its active
    segment: the cleaner stops at the last stable offset (LogCleanerManager.cleanableOffsets),
    and a hanging transaction keeps it there until it is aborted."""
    if p.dirty is None or not p.segments:
        return None
    active = p.segments[-1].base_offset
    return next(
        (
            t
            for t in p.open_transactions
            if t.hanging and t.first_offset == p.last_stable_offset and t.first_offset < active
        ),
        None,
    )


def _detail(p: PartitionView, status: str, large: bool) -> str | None:
    if status not in ("ok", "empty"):
        return status
    if p.open_transactions:
        return "open transactions"
    return "largest" if large else None


def _offsets(p: PartitionView) -> str:
    if p.log_start_offset is None or p.log_end_offset is None:
        return "no segments"
    return offset_span(p.log_start_offset, p.log_end_offset).removeprefix("offsets ")


def _ago(now: int, ms: int) -> str:
    if ms < 0:
        return ""
    if ms > now:
        return f"{rough_duration(ms - now)} in the future"
    return rough_duration(now - ms)


def rolled_by(p: PartitionView) -> str:
    causes = Counter(c for s in p.segments if not s.active for c in s.roll_causes)
    words = ", ".join(
        cause.replace("_", " ") + (f" ×{n}" if n > 1 else "") for cause, n in causes.most_common()
    )
    return ("rolls on every append; " + words) if p.tiny_segments else words


def _retention(p: PartitionView) -> str:
    if not p.segments:
        return ""
    blocker = p.retention_blocker
    if blocker is not None and blocker.kind in BLOCKING:
        return f"blocked ({blocker.kind.replace('_', ' ')})"
    if p.retention_ms is None:
        return "compact only"
    due = sum(1 for s in p.segments if s.deletable)
    if due:
        return f"deletes {due} of {len(p.segments)} now"
    if blocker is not None and blocker.kind == "retention_off":
        return "off"
    return "nothing due"


def _compaction(p: PartitionView) -> str:
    if p.dirty is None:
        return ""
    if p.compaction_blocked is not None or compaction_held(p) is not None:
        return "blocked"
    first, end = p.dirty
    return f"dirty {offset_span(first, end).removeprefix('offsets ')}" if end > first else "clean"


def _transactions(p: PartitionView) -> str:
    if not p.open_transactions:
        return ""
    hanging = sum(t.hanging for t in p.open_transactions)
    return f"{len(p.open_transactions)}" + (f" ({hanging} hanging)" if hanging else "")


def _findings(c: dict[str, int]) -> str:
    words = {"error": "error(s)", "warning": "warning(s)", "info": "info"}
    return ", ".join(f"{c[s]} {words[s]}" for s in words if c[s])
