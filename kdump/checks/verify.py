"""`kdump verify`: find the partitions under the given paths, check each, check the log dirs.

Paths may be segment files, partition directories (``topic-0/``), broker log directories or
folders holding any of these. Nothing is ever written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.checks.log import RECOVER
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import (
    PartitionReport,
    SegmentWork,
    check_segment_work,
    finish_partition,
    plan_partition,
    verify_partition,
    verify_segment,
)
from kdump.discovery import Found, PartitionTarget, discover
from kdump.errors import InputError, KdumpError, as_kdump_error
from kdump.format.checkpoint import OFFSET_CHECKPOINTS
from kdump.format.textfiles import read_offset_checkpoint
from kdump.lock import who_holds
from kdump.parallel import map_ordered
from kdump.progress import NO_PROGRESS, Progress

__all__ = [
    "VerifyOptions",
    "VerifyResult",
    "collect_result",
    "log_dir_findings",
    "verify_partition",
    "verify_paths",
    "verify_segment",
]


@dataclass
class VerifyResult:
    reports: list[PartitionReport] = field(default_factory=list)
    log_dir_findings: list[Finding] = field(default_factory=list)
    unreadable: list[InputError] = field(default_factory=list)
    """Paths named that could not be read: the rest is reported all the same."""

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.reports for f in r.findings] + self.log_dir_findings

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "partitions": len(self.reports),
            "segments": sum(r.summary.segments for r in self.reports),
            "bytes": sum(r.summary.bytes for r in self.reports),
            "batches": sum(r.summary.batches for r in self.reports),
            "findings": self.counts(),
            "by_partition": [r.summary.to_dict() for r in self.reports],
        }


def log_dir_findings(log_dir: Path, reports: list[PartitionReport]) -> Iterator[Finding]:
    ends = {
        (r.summary.topic, r.summary.partition): r.summary
        for r in reports
        if r.summary.topic is not None
    }
    for name in OFFSET_CHECKPOINTS:
        path = log_dir / name
        if not path.exists():
            continue
        try:
            with open(path, "rb") as f:
                entries = read_offset_checkpoint(f.read(1 << 24), str(path))
            offsets = {(e.topic, e.partition): e.offset for e in entries}
        except (KdumpError, OSError) as e:
            error = as_kdump_error(e, str(path))
            yield Finding(
                "CHECKPOINT_CORRUPT",
                Severity.WARNING,
                str(path),
                f"{error.reason}; the broker falls back to a full recovery",
                position=error.position,
            )
            continue
        for (topic, partition), offset in sorted(offsets.items()):
            summary = ends.get((topic, partition))
            if summary is None or name == "cleaner-offset-checkpoint":
                continue
            leo = summary.log_end_offset
            if leo is None and summary.segments:
                continue
            end = leo if leo is not None else 0
            if offset > end and not (name == "log-start-offset-checkpoint" and leo is None):
                severe = name == "log-start-offset-checkpoint"
                clamped = name == "recovery-point-offset-checkpoint"
                if severe:
                    why = ": data the broker acknowledged is missing"
                elif clamped:
                    why = f"; {BROKER_FIXES} (it clamps the recovery point to the log end offset)"
                else:
                    why = ""
                yield Finding(
                    "CHECKPOINT_BEYOND_LOG_END",
                    Severity.ERROR if severe else Severity.WARNING,
                    str(path),
                    f"{topic}-{partition}: {name} says {offset}, beyond the log end offset "
                    f"{end}" + why,
                    offset=offset,
                    fix=RECOVER.format(dir=log_dir) if clamped else None,
                )


def verify_paths(
    paths: list[str],
    options: VerifyOptions,
    progress: Progress = NO_PROGRESS,
    jobs: int = 1,
) -> VerifyResult:
    """Verify everything under ``paths``; ``progress`` hears of the bytes of log read.

    With ``jobs`` above 1 the segments are checked in that many processes (the biggest first);
    the result is the same as with one.
    """
    found = discover(paths, urls=True)
    targets = found.partitions
    plans = [plan_partition(t.path, t.only, t.remote) for t in targets]
    work = [w for plan in plans for w in plan.work]
    progress.total(sum(w.size for w in work))
    # shallow checks of local files are CRCs in C without the GIL: threads; deep ones decode in
    # Python, and object-store clients are kept one per process: processes
    local = all(w.remote is None for w in work)
    outcomes = map_ordered(
        partial(check_segment_work, options=options),
        work,
        jobs,
        weight=_log_bytes,
        threads=local and not options.deep,
    )
    reports: dict[str, PartitionReport] = {}
    for target, plan in zip(targets, plans, strict=True):
        done = []
        for w in plan.work:
            done.append(next(outcomes))
            progress.advance(w.size, w.log_name)
        reports[target.location] = finish_partition(plan, done, options)
    add_boundary_findings(targets, reports)
    return collect_result(found, lambda t: reports[t.location])


def add_boundary_findings(
    targets: list[PartitionTarget], reports: dict[str, PartitionReport]
) -> None:
    """Where a partition was given both in an object store and on local disk: the checks of
    where the two meet, in the remote partition's report (kdump.remote.checks)."""
    remote = [t for t in targets if t.remote is not None and t.only is None]
    if not remote:
        return
    from kdump.remote.checks import boundary_findings

    local = {t.topic_partition: t for t in targets if t.remote is None and t.only is None}
    for t in remote:
        assert t.remote is not None
        other = local.get((t.remote.topic, t.remote.partition))
        if other is None:
            continue
        report, local_report = reports[t.location], reports[other.location]
        found = boundary_findings(report.spans, local_report.spans, t.location, other.location)
        report.findings.extend(found)
        for f in found:
            if f.severity is Severity.ERROR:
                report.summary.errors += 1
            elif f.severity is Severity.WARNING:
                report.summary.warnings += 1
            else:
                report.summary.infos += 1


def _log_bytes(work: SegmentWork) -> int:
    return work.size


def _key(target: PartitionTarget) -> str:
    return target.location if target.remote is not None else os.path.realpath(target.path)


def collect_result(found: Found, run: Callable[[PartitionTarget], PartitionReport]) -> VerifyResult:
    """The reports in discovery order (each partition once), each log dir's own findings after
    its partitions; the paths that could not be read.

    ``run`` verifies one partition here, or hands back a report verified elsewhere (Spark).
    """
    result = VerifyResult(unreadable=list(found.errors))
    targets = {_key(t): t for t in found.partitions}
    for ld in found.log_dirs:
        reports = []
        for t in ld.partitions:
            target = targets.pop(_key(t), None)
            if target is not None:
                reports.append(run(target))
        result.reports.extend(reports)
        result.log_dir_findings.extend(log_dir_findings(ld.path, reports))
    result.reports.extend(run(t) for t in targets.values())
    lock_dirs = dict.fromkeys(t.lock_dir for t in found.partitions)
    result.log_dir_findings.extend(f for d in lock_dirs if (f := broker_live(d)) is not None)
    return result


def broker_live(log_dir: Path) -> Finding | None:
    """An info finding when another process holds ``log_dir``'s ``.lock``, as kdump.lock
    decides for the repairs (which then refuse): most likely a broker running on it."""
    holder = who_holds(log_dir)
    if holder is None:
        return None
    return Finding(
        "LOG_DIR_LOCKED",
        Severity.INFO,
        str(holder.path),
        f"held by {holder}: a repair refuses while it is held. Active segments (and their "
        "indexes) may be mid-write, so findings there are provisional; verify again once it is "
        "released, before repairing",
    )
