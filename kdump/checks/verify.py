"""`kdump verify`: find the partitions under the given paths, check each, check the log dirs.

Paths may be segment files, partition directories (``topic-0/``), broker log directories or
folders holding any of these. Nothing is ever written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.checks.log import RECOVER
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import (
    PartitionResult,
    PartitionSummary,
    finish_partition,
    segments_to_check,
    verify_partition,
)
from kdump.checks.segment import SegmentResult, check_segment
from kdump.discovery import Found, discover
from kdump.errors import InputError
from kdump.format.names import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    OFFSET_CHECKPOINTS,
    RECOVERY_POINT_CHECKPOINT,
)
from kdump.lock import who_holds
from kdump.log_dir import LogDir
from kdump.parallel import map_ordered
from kdump.progress import NO_PROGRESS, Progress
from kdump.segment import LogSegment
from kdump.storage import ObjectStore
from kdump.unified_log import OpenOptions, UnifiedLog

__all__ = [
    "VerifyOptions",
    "VerifyResult",
    "collect_result",
    "log_dir_findings",
    "verify_partition",
    "verify_paths",
]


@dataclass
class VerifyResult:
    partitions: list[PartitionResult] = field(default_factory=list)
    log_dir_findings: list[Finding] = field(default_factory=list)
    unreadable: list[InputError] = field(default_factory=list)
    """Paths named that could not be read: the rest is reported all the same."""

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.partitions for f in r.findings] + self.log_dir_findings

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "partitions": len(self.partitions),
            "segments": sum(r.summary.segments for r in self.partitions),
            "bytes": sum(r.summary.bytes for r in self.partitions),
            "batches": sum(r.summary.batches for r in self.partitions),
            "findings": self.counts(),
            "by_partition": [r.summary.to_dict() for r in self.partitions],
        }


def log_dir_findings(
    log_dir: LogDir, results: list[PartitionResult], logs: Sequence[UnifiedLog] = ()
) -> Iterator[Finding]:
    """The log dir's offset checkpoints against its partitions' facts (their results): files
    that do not parse, and entries beyond a partition's log end offset (after recovery, as the
    broker has it at startup); its files and partitions against the cluster's metadata image
    (its own, or that of its node's metadata log dir; ``logs``: every partition found in the
    run: kdump.kraft.checks)."""
    ends = {
        (r.summary.topic, r.summary.partition): r.summary
        for r in results
        if r.summary.topic is not None and r.summary.partition is not None
    }
    from kdump.kraft.checks import check_log_dir

    yield from check_log_dir(log_dir, logs)
    for name in OFFSET_CHECKPOINTS:
        checkpoint = log_dir.checkpoint(name)
        if not checkpoint.exists:
            continue
        if checkpoint.error is not None:
            yield Finding(
                "CHECKPOINT_CORRUPT",
                Severity.WARNING,
                checkpoint.path,
                f"{checkpoint.error.reason}; the broker falls back to a full recovery",
                position=checkpoint.error.position,
            )
            continue
        if name == CLEANER_OFFSET_CHECKPOINT:
            continue
        for (topic, partition), offset in sorted(checkpoint.entries.items()):
            summary = ends.get((topic, partition))
            if summary is None or (summary.segments and not summary.batches):
                continue  # segments without a batch: nothing to measure the entry against
            end = summary.log_end_offset if summary.segments else 0
            if offset <= end or (name == LOG_START_OFFSET_CHECKPOINT and not summary.segments):
                continue
            yield _beyond_end(log_dir, checkpoint.path, name, (topic, partition), offset, summary)


def _beyond_end(
    log_dir: LogDir,
    path: str,
    name: str,
    topic_partition: tuple[str, int],
    offset: int,
    summary: PartitionSummary,
) -> Finding:
    topic, partition = topic_partition
    end = summary.log_end_offset if summary.segments else 0
    severe = name == LOG_START_OFFSET_CHECKPOINT
    clamped = name == RECOVERY_POINT_CHECKPOINT
    if severe:
        why = ": data the broker acknowledged is missing"
    elif clamped:
        why = f"; {BROKER_FIXES} (it clamps the recovery point to the log end offset)"
    else:
        why = (
            ": records the cluster committed are missing from this replica's log (once "
            "recovery has cut it); at startup the broker lowers its high watermark to the log "
            "end offset; a follower fetches them again from the leader, and where this was the "
            "only replica they are lost"
        )
        if summary.kept_records:
            why += (
                f" (kdump recover kept {summary.kept_records} whole record(s) of them: kdump "
                f"salvage {summary.path} --output-dir DIR writes them out)"
            )
    return Finding(
        "CHECKPOINT_BEYOND_LOG_END",
        Severity.ERROR if severe else Severity.WARNING,
        path,
        f"{topic}-{partition}: {name} says {offset}, beyond the log end offset {end}" + why,
        offset=offset,
        fix=RECOVER.format(dir=log_dir.location) if clamped else None,
    )


def verify_paths(
    paths: list[str],
    options: VerifyOptions,
    progress: Progress = NO_PROGRESS,
    jobs: int = 1,
    store: ObjectStore | None = None,
) -> VerifyResult:
    """Verify everything under ``paths``; ``progress`` hears of the bytes of log read.

    With ``jobs`` above 1 the segments are checked in that many processes (the biggest first);
    the result is the same as with one.
    """
    found = discover(paths, store, OpenOptions(verify=options))
    logs = found.partitions
    work = [(log, s) for log in logs for s in segments_to_check(log)]
    progress.total(sum(s.log_size for _, s in work))
    # shallow checks of local files are CRCs in C without the GIL: threads; deep ones decode in
    # Python, and object-store clients are kept one per process: processes
    local = all(log.storage.local_path is not None for log in logs)
    outcomes = map_ordered(
        partial(_check, options=options),
        [s for _, s in work],
        jobs,
        weight=_log_bytes,
        threads=local and not options.deep,
    )
    for log, segment in work:
        log.take_result(segment, next(outcomes))
        progress.advance(segment.log_size, segment.log_path)
    results = {}
    for log in logs:
        results[log.location] = finish_partition(log)
        log.close()  # the facts are in the result: nothing stays mapped
    add_boundary_findings(logs, results)
    return collect_result(found, lambda log: results[log.location])


def _check(segment: LogSegment, options: VerifyOptions) -> SegmentResult:
    return check_segment(segment, options)


def add_boundary_findings(logs: list[UnifiedLog], results: dict[str, PartitionResult]) -> None:
    """Where a partition was given both in tiered storage and on local disk: the checks of
    where the two meet, in the tiered partition's result (kdump.tiered.checks)."""
    tiered = [log for log in logs if log.tiered and log.only is None]
    if not tiered:
        return
    from kdump.tiered.checks import boundary_findings

    local = {log.topic_partition: log for log in logs if not log.tiered and log.only is None}
    for log in tiered:
        other = local.get(log.topic_partition)
        if other is None:
            continue
        result, local_result = results[log.location], results[other.location]
        found = boundary_findings(result.spans, local_result.spans, log.location, other.location)
        result.findings.extend(found)
        for f in found:
            result.summary.count(f)


def _log_bytes(segment: LogSegment) -> int:
    return segment.log_size


def collect_result(found: Found, run: Callable[[UnifiedLog], PartitionResult]) -> VerifyResult:
    """The results in discovery order (each partition once), each log dir's own findings after
    its partitions; the paths that could not be read.

    ``run`` verifies one partition here, or hands back a result verified elsewhere (Spark).
    """
    result = VerifyResult(unreadable=list(found.errors))
    logs = {id(log): log for log in found.partitions}
    for ld in found.log_dirs:
        mine = [p for p in logs.values() if p.found_in(ld)]
        for p in mine:
            del logs[id(p)]
        results = [run(p) for p in mine]
        result.partitions.extend(results)
        result.log_dir_findings.extend(log_dir_findings(ld, results, found.partitions))
    result.partitions.extend(run(log) for log in logs.values())
    lock_dirs = {log.log_dir.location: log.log_dir for log in found.partitions if log.log_dir}
    result.log_dir_findings.extend(
        f for d in lock_dirs.values() if (f := broker_live(d)) is not None
    )
    return result


def broker_live(log_dir: LogDir) -> Finding | None:
    """An info finding when another process holds ``log_dir``'s ``.lock``, as kdump.lock
    decides for the repairs (which then refuse): most likely a broker running on it."""
    local = log_dir.storage.local_path
    if local is None:
        return None
    holder = who_holds(local)
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
