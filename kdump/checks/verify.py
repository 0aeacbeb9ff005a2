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

from kdump.checks.findings import Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import (
    PartitionReport,
    SegmentWork,
    check_segment_work,
    finish_partition,
    parse_partition_dir,
    plan_partition,
    verify_partition,
    verify_segment,
)
from kdump.errors import InputError, KdumpError, as_kdump_error
from kdump.format.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    OFFSET_CHECKPOINTS,
    PARTITION_METADATA,
)
from kdump.format.textfiles import read_offset_checkpoint
from kdump.parallel import map_ordered
from kdump.progress import NO_PROGRESS, Progress
from kdump.segment import SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX, base_offset_of, segment_file_name

__all__ = [
    "LogDirTarget",
    "PartitionTarget",
    "VerifyOptions",
    "VerifyResult",
    "collect_result",
    "discover",
    "log_dir_findings",
    "verify_partition",
    "verify_paths",
    "verify_segment",
]

MAX_DEPTH = 6
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"


@dataclass
class PartitionTarget:
    path: Path
    only: set[int] | None = None
    """Verify only these segments (when segment files were named)."""


@dataclass
class LogDirTarget:
    path: Path
    partitions: list[PartitionTarget] = field(default_factory=list)


@dataclass
class VerifyResult:
    reports: list[PartitionReport] = field(default_factory=list)
    log_dir_findings: list[Finding] = field(default_factory=list)

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


def _is_segment_name(name: str) -> bool:
    return name.endswith((*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX)) and name[:20].isdigit()


def _is_partition_dir(d: Path) -> bool:
    try:
        names = os.listdir(d)
    except OSError:
        return False
    if any(_is_segment_name(n) for n in names):
        return True
    markers = (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA)
    return parse_partition_dir(d.name) is not None and any(n in markers for n in names)


def _is_log_dir(d: Path) -> bool:
    names = set(os.listdir(d))
    if names & {"meta.properties", *OFFSET_CHECKPOINTS}:
        return True
    return any((d / n).is_dir() and _is_partition_dir(d / n) for n in names)


def _partitions_of(log_dir: Path) -> list[PartitionTarget]:
    subdirs = sorted(p for p in log_dir.iterdir() if p.is_dir() and not p.is_symlink())
    return [PartitionTarget(p) for p in subdirs if _is_partition_dir(p)]


def discover(paths: list[str]) -> tuple[list[LogDirTarget], list[PartitionTarget]]:
    """Classify the paths; raise InputError for one that holds nothing of Kafka's."""
    log_dirs: list[LogDirTarget] = []
    partitions: list[PartitionTarget] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(raw, "no such file or directory")
        if path.is_file():
            if not _is_segment_name(path.name):
                raise InputError(raw, "not a Kafka segment file (NNNNNNNNNNNNNNNNNNNN.log ...)")
            partitions.append(PartitionTarget(path.parent, {base_offset_of(path)}))
            continue
        found = _search(path, 0, set())
        if not found[0] and not found[1]:
            raise InputError(raw, "holds no Kafka partition or log directory")
        log_dirs.extend(found[0])
        partitions.extend(found[1])
    return log_dirs, partitions


def _search(
    d: Path, depth: int, seen: set[str]
) -> tuple[list[LogDirTarget], list[PartitionTarget]]:
    real = os.path.realpath(d)
    if real in seen or depth > MAX_DEPTH:
        return [], []
    seen.add(real)
    if _is_partition_dir(d):
        return [], [PartitionTarget(d)]
    log_dirs: list[LogDirTarget] = []
    partitions: list[PartitionTarget] = []
    try:
        children = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
        if _is_log_dir(d):
            log_dir = LogDirTarget(d, _partitions_of(d))
            log_dirs.append(log_dir)
            # a folder holding partitions may hold further log dirs beside them
            owned = {p.path for p in log_dir.partitions}
            children = [c for c in children if c not in owned]
    except OSError as e:
        raise InputError(str(d), e.strerror or str(e)) from None
    for child in children:
        a, b = _search(child, depth + 1, seen)
        log_dirs += a
        partitions += b
    return log_dirs, partitions


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
                yield Finding(
                    "CHECKPOINT_BEYOND_LOG_END",
                    Severity.ERROR if severe else Severity.WARNING,
                    str(path),
                    f"{topic}-{partition}: {name} says {offset}, the partition ends at "
                    f"{end}" + (": data the broker acknowledged is missing" if severe else ""),
                    offset=offset,
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
    log_dirs, loose = discover(paths)
    targets = targets_of(log_dirs, loose)
    plans = [plan_partition(t.path, t.only) for t in targets]
    work = [w for plan in plans for w in plan.work]
    progress.total(sum(w.size for w in work))
    outcomes = map_ordered(
        partial(check_segment_work, options=options), work, jobs, weight=_log_bytes
    )
    reports: dict[int, PartitionReport] = {}
    for target, plan in zip(targets, plans, strict=True):
        done = []
        for w in plan.work:
            done.append(next(outcomes))
            progress.advance(
                w.size, str(Path(w.directory) / segment_file_name(w.base_offset, ".log"))
            )
        reports[id(target)] = finish_partition(plan, done, options)
    return collect_result(log_dirs, loose, lambda t: reports[id(t)])


def _log_bytes(work: SegmentWork) -> int:
    return work.size


def targets_of(log_dirs: list[LogDirTarget], loose: list[PartitionTarget]) -> list[PartitionTarget]:
    """The partitions of a discovery, log dirs' first, in the order they are verified."""
    return [t for ld in log_dirs for t in ld.partitions] + loose


def collect_result(
    log_dirs: list[LogDirTarget],
    loose: list[PartitionTarget],
    run: Callable[[PartitionTarget], PartitionReport],
) -> VerifyResult:
    """The reports in discovery order, each log dir's own findings after its partitions.

    ``run`` verifies one partition here, or hands back a report verified elsewhere (Spark).
    """
    result = VerifyResult()
    for ld in log_dirs:
        reports = [run(t) for t in ld.partitions]
        result.reports.extend(reports)
        result.log_dir_findings.extend(log_dir_findings(ld.path, reports))
    result.reports.extend(run(t) for t in loose)
    return result
