"""`kdump verify`: find the partitions under the given paths, check each, check the log dirs.

Paths may be segment files, partition directories (``topic-0/``), broker log directories or
folders holding any of these. Nothing is ever written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from functools import partial
from typing import TYPE_CHECKING, Any

from kdump.checks import fixes
from kdump.checks.audit import AuditOptions, AuditSummary
from kdump.checks.findings import BROKER_FIXES, Finding, Severity
from kdump.checks.options import VerifyOptions
from kdump.checks.partition import (
    PartitionResult,
    PartitionSummary,
    finish_partition,
    has_cleaner_entry,
    segments_to_check,
    verify_partition,
)
from kdump.checks.segment import Resume, SegmentResult, check_segment
from kdump.config import ConfigLayers, MetadataConfigs
from kdump.discovery import Found, discover
from kdump.errors import BudgetSpent, InputError
from kdump.format.names import (
    CLEANER_OFFSET_CHECKPOINT,
    LOCK_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    METADATA_TOPIC,
    OFFSET_CHECKPOINTS,
    RECOVERY_POINT_CHECKPOINT,
)
from kdump.log_dir import LogDir
from kdump.parallel import map_ordered
from kdump.progress import NO_PROGRESS, Progress
from kdump.segment import LogSegment
from kdump.storage.reading import KEEP, Budget, ReadPolicy
from kdump.unified_log import OpenOptions, UnifiedLog

if TYPE_CHECKING:
    from kdump.checks.compacted import CleanedSection
    from kdump.checks.verify_state import Plan, VerifyState
    from kdump.storage import ObjectStore

__all__ = [
    "VerifyOptions",
    "VerifyResult",
    "collect_result",
    "finish_result",
    "log_dir_findings",
    "verify_partition",
    "verify_paths",
]


class VerifyResult:
    """What a run found: each partition's result, the log dirs' own findings, the paths it
    could not read; equal to another's that found the same (``audit`` says how the run went,
    not its verdict)."""

    def __init__(
        self,
        partitions: list[PartitionResult] | None = None,
        log_dir_findings: list[Finding] | None = None,
        unreadable: list[InputError] | None = None,
    ) -> None:
        self.partitions = partitions or []
        self.log_dir_findings = log_dir_findings or []
        self.unreadable = unreadable or []
        """Paths named that could not be read: the rest is reported all the same."""
        self.audit = AuditSummary()
        """What the run read, skipped as unchanged, and whether it stopped early."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VerifyResult):
            return NotImplemented
        mine = (self.partitions, self.log_dir_findings, self.unreadable)
        return mine == (other.partitions, other.log_dir_findings, other.unreadable)

    __hash__ = None  # type: ignore[assignment]

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
            "segments": sum(r.summary.segments_read for r in self.partitions),
            "bytes": sum(r.summary.bytes_read for r in self.partitions),
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
    if any(log.is_metadata_log for log in logs):  # else no image: its modules not imported
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
            if summary is None or summary.read != "all":
                continue  # not read (verify --budget): its log end is not known
            if summary.segments and not summary.batches:
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
        fix=fixes.recover(log_dir.location) if clamped else None,
    )


def verify_paths(
    paths: list[str],
    options: VerifyOptions,
    progress: Progress = NO_PROGRESS,
    jobs: int = 1,
    store: ObjectStore | None = None,
    reading: ReadPolicy = KEEP,
    audit: AuditOptions | None = None,
    layers: ConfigLayers | None = None,
) -> VerifyResult:
    """Verify everything under ``paths``; ``progress`` hears of the bytes of log read.

    With ``jobs`` above 1 the segments are checked in that many processes (the biggest first);
    the result is the same as with one. ``reading``: how local files are read
    (kdump.storage.reading: ``ReadPolicy.live()`` leaves the page cache as it found it, what
    ``kdump verify`` does unless told --keep-cache); ``audit``: a state file that makes the
    run incremental, a budget (kdump.checks.verify_state); ``layers``: where topic settings
    come from (which partitions are compacted, and checked below their cleaner checkpoint:
    kdump.checks.compacted).
    """
    started = time.monotonic()
    audit = audit or AuditOptions()
    if audit.budget_ms is not None and reading.budget is None:
        # one budget for every segment's reads, whoever opens them (kdump.storage.reading)
        reading = reading._replace(budget=Budget(audit.budget_ms / 1000))
    opened = OpenOptions(
        max_batch_bytes=options.max_batch_bytes, reading=reading, layers=layers or ConfigLayers()
    )
    found = discover(paths, store, opened)
    logs = found.partitions
    run = _Run(logs, options, reading, audit, started)
    progress.total(sum(map(run.bytes_to_read, run.walk_list)))
    try:
        run.walk(jobs, progress)
    finally:
        run.finish()
    result = finish_result(found, logs, options, run.images)
    result.audit = run.summary
    return result


def finish_result(
    found: Found,
    logs: list[UnifiedLog],
    options: VerifyOptions,
    images: dict[str, MetadataConfigs | None] | None = None,
) -> VerifyResult:
    """The result of ``logs`` (all or some of ``found``'s partitions), their segments' walks
    done or handed in (``UnifiedLog.take_result``): each partition's checks across segments,
    then those of the log dirs that hold them. The end of every verify, local or on Spark's
    driver (an export's: kdump.spark.job)."""
    results = {}
    images = {} if images is None else images  # (the walk's, where it replayed one)
    metadata_log = any(m.is_metadata_log for m in found.partitions)
    for log in logs:
        if images or metadata_log or _metadata_dir_near(log.location):
            # each topic's settings (segment.bytes...) from its node's image too, replayed
            # once; a run stopped by its budget reads nothing more (an image replayed already
            # serves). The image's modules only where there may be one (issue 45)
            from kdump.kraft.configs import take_node_image

            take_node_image(log, found.partitions, images, replay=not log.cut_short)
        results[log.location] = finish_partition(log, options)
        log.close()  # the facts are in the result: nothing stays mapped
    add_boundary_findings(logs, results)
    return collect_result(found, lambda log: results[log.location], logs)


def _metadata_dir_near(location: str) -> bool:
    """Whether a ``__cluster_metadata-0`` lies where kdump.kraft.configs.metadata_dir_near
    looks for one beside ``location`` (in it, its parent, its grandparent), asked without
    loading its modules (pathlib and the replay's: a plain partition's verify has none)."""
    here = location.rstrip("/") or "/"
    for _ in range(3):
        if os.path.isdir(os.path.join(here, f"{METADATA_TOPIC}-0")):
            return True
        here = os.path.dirname(here) or "."
    return False


class _Run:
    """The segments of a verify run: those its state lets it reuse (handed to their partitions
    at once), those it walks, and what it leaves in the state."""

    def __init__(
        self,
        logs: list[UnifiedLog],
        options: VerifyOptions,
        reading: ReadPolicy,
        audit: AuditOptions,
        started: float,
    ) -> None:
        self.options, self.reading = options, reading
        self.owner = {id(s): log for log in logs for s in segments_to_check(log)}
        segments = [s for log in logs for s in segments_to_check(log)]
        self.cleaned: dict[int, CleanedSection] = {}
        """The cleaned sections of compacted partitions, by ``id`` of the log: their audits
        ride on the walks."""
        self.images: dict[str, MetadataConfigs | None] = {}
        """Each log dir's node's KRaft image, replayed once a run."""
        if any(has_cleaner_entry(log) for log in logs):
            # the compacted audit's module where a cleaner checkpoint says a section was cleaned
            from kdump.checks.compacted import cleaned_sections

            self.cleaned = cleaned_sections(logs, options.compaction_key_memory, images=self.images)
        self.state: VerifyState | None = None
        self.summary = AuditSummary(
            asked=audit.state is not None or audit.budget_ms is not None, state=audit.state
        )
        self.walk_list = segments
        """The segments to walk, in order: all of them, or the state's plan's."""
        self.changed: dict[int, Finding] = {}
        """Findings on segments changed in place since the state saw them, by ``id``."""
        self.resume: dict[int, Resume] = {}
        """Segments of the walk read from their verified prefix on (by ``id``)."""
        self.plan: Plan | None = None
        self.done: set[int] = set()
        if audit.state is not None:
            self._plan_from_state(audit, segments)
        self.summary.cache_warning = _cache_blindness(self.walk_list, reading)
        self.units = self._units()
        for segment in self.walk_list:  # an active segment's verified prefix: not read again
            self.summary.bytes_unchanged_skipped += segment.log_size - self.bytes_to_read(segment)

    def _plan_from_state(self, audit: AuditOptions, segments: list[LogSegment]) -> None:
        """The state file's plan: what it lets the run reuse is handed to its partitions now."""
        # the state's module (JSON, digests) only for a run given --state
        from kdump.checks.verify_state import VerifyState, reused_result

        assert audit.state is not None
        self.state = VerifyState.load(audit.state)
        self.summary.state_warning = self.state.warning
        plan = self.plan = self.state.plan(
            segments, audit.recheck_fraction, policy=self.reading, deep=self.options.deep
        )
        self.walk_list, self.changed, self.resume = plan.walk, plan.changed, plan.resume
        for segment, known in plan.reuse:
            reused = reused_result(segment, known, self.options.max_findings_per_code)
            self.owner[id(segment)].take_result(segment, reused)
            self.done.add(id(segment))
            self.summary.bytes_unchanged_skipped += segment.log_size
            self.summary.saw(known.verified_ms)

    def bytes_to_read(self, segment: LogSegment) -> int:
        return segment.log_size if self.plan is None else self.plan.bytes_to_read(segment)

    def walk(self, jobs: int, progress: Progress) -> None:
        """The segments the plan walks, in its order, until they are done or the budget is
        spent: then no segment is begun and those being read are left at their next read
        (kdump.storage.reading.Budget), whatever --max-io-rate makes them wait; the first of
        the plan is read whole, so that runs under any budget get through a log dir in the
        end. What was left is unread (``finish``)."""
        # shallow checks of local files are CRCs in C without the GIL: threads; deep ones
        # decode in Python, and object-store clients are kept one per process: processes
        local = all(log.storage.local_path is not None for log in self.owner.values())
        threads = local and not self.options.deep
        units = self.units
        budget, first = self.reading.budget, units[0] if units else None
        # a compacted partition's walk decodes its records in Python (the checks of its
        # cleaned section): no thread would run it faster than this one, and here Ctrl-C stops
        # it at once (a stopping run waits for its threads' work in hand)
        here = {id(u) for u in units if threads and u.cleaned is not None}
        outcomes = map_ordered(
            partial(_check, options=self.options, budget=budget),
            [(u, u is first) for u in units if id(u) not in here],
            jobs,
            weight=_unit_bytes,
            threads=threads,
        )
        now_ms = int(time.time() * 1000)
        try:
            for unit in units:
                if id(unit) in here:
                    walked = _check((unit, unit is first), self.options, budget)
                else:
                    walked = next(outcomes)
                if walked is None:  # left: the budget spent
                    continue
                for segment, outcome in zip(unit.segments, walked, strict=True):
                    self._take(segment, outcome, now_ms)
                    progress.advance(self.bytes_to_read(segment), segment.log_path)
        finally:
            close = getattr(outcomes, "close", None)
            if close is not None:
                close()  # workers stop: nothing more is taken

    def _units(self) -> list[_Unit]:
        """The plan's segments as pieces of work: one segment each, but the segments of a
        partition checked below its cleaner checkpoint together, in offset order (those checks
        ride on their walks: kdump.checks.compacted), where its first one comes."""
        units: list[_Unit] = []
        together: dict[int, _Unit] = {}
        for segment in self.walk_list:
            log = self.owner[id(segment)]
            cleaned = self.cleaned.get(id(log))
            if cleaned is None:
                units.append(_Unit(log, [segment], None, self.resume.get(id(segment))))
                continue
            # the cleaned section's checks read every record: the whole segment is walked
            self.resume.pop(id(segment), None)
            if id(log) in together:
                together[id(log)].segments.append(segment)
            else:
                together[id(log)] = _Unit(log, [segment], cleaned)
                units.append(together[id(log)])
        for unit in together.values():
            unit.segments.sort(key=lambda s: (s.base_offset, s.slot))
        return units

    def _take(self, segment: LogSegment, outcome: SegmentResult, now_ms: int) -> None:
        changed = self.changed.get(id(segment))
        if changed is not None:
            outcome.sink.add(changed)
        self.owner[id(segment)].take_result(segment, outcome)
        self.done.add(id(segment))
        self.summary.bytes_verified += self.bytes_to_read(segment)
        self.summary.saw(now_ms)
        if self.state is not None:
            self.state.record(
                segment, outcome.scan, outcome.findings, now_ms, self.reading, self.options.deep
            )

    def finish(self) -> None:
        """What a run stopped early (a budget, an interruption) left unread: each partition
        is reported as the segments read (as when segment files are named), and the state,
        saved, says where it stopped."""
        unread = [s for s in self.walk_list if id(s) not in self.done]
        if unread:
            self.summary.partial = True
            self.summary.stopped_at = unread[0].log_path
        for log in {id(self.owner[id(s)]): self.owner[id(s)] for s in unread}.values():
            log.only = frozenset(
                s.base_offset for s in segments_to_check(log) if id(s) in self.done
            )
            log.cut_short = True  # its facts are not known: said null, not read
        for segment in unread:
            self.owner[id(segment)].leave(segment)  # nothing reads it for the facts
        if self.state is None or self.plan is None:
            return
        for segment in unread:
            self.summary.saw(self.state.last_verified(segment))
        self.state.unread(self.plan, unread)
        self.state.save()
        if self.state.warning and not self.summary.state_warning:  # not saved: said, not fatal
            self.summary.state_warning = self.state.warning


def _cache_blindness(segments: list[LogSegment], reading: ReadPolicy) -> str | None:
    """Why the run cannot leave the page cache as it found it, said once (the first local
    ``.log`` the kernel will not tell this user about: the others are as a rule the same)."""
    local = next((s for s in segments if s.storage.local_path is not None and s.log_size), None)
    if local is None or not reading.blind_to(local.log_path):
        return None
    return (
        f"{local.log_path}: the kernel tells only its owner (or a user who may write it) which "
        "of its pages are cached: what verify reads stays cached; run it as the broker's user"
    )


class _Unit:
    """Segments of one partition walked in one piece of work, in order (``cleaned``: the
    cleaned section whose checks ride on their walks; ``resume``: a lone segment's verified
    prefix, what its walk goes on from)."""

    __slots__ = ("cleaned", "log", "resume", "segments")

    def __init__(
        self,
        log: UnifiedLog,
        segments: list[LogSegment],
        cleaned: CleanedSection | None,
        resume: Resume | None = None,
    ) -> None:
        self.log, self.segments, self.cleaned, self.resume = log, segments, cleaned, resume


def _check(
    item: tuple[_Unit, bool], options: VerifyOptions, budget: Budget | None
) -> list[SegmentResult] | None:
    """The walks of a unit's segments (from a verified prefix on, where it has one); None
    where the budget was spent before it began or while it was read (the first unit of the
    plan is read whole: kdump.storage.reading.Budget)."""
    unit, first = item
    if budget is not None and budget.spent() and not first:
        return None
    try:
        with budget.reading(must_finish=first) if budget is not None else nullcontext():
            if unit.cleaned is None:
                return [check_segment(s, options, resume=unit.resume) for s in unit.segments]
            # a compacted partition's cleaned section: its audit's module only here
            from kdump.checks.compacted import check_in_order

            return check_in_order(unit.log, unit.segments, options, unit.cleaned)
    except BudgetSpent:
        return None


def _unit_bytes(item: tuple[_Unit, bool]) -> int:
    unit = item[0]
    skipped = 0 if unit.resume is None else unit.resume.scan.valid_bytes
    return sum(s.log_size for s in unit.segments) - skipped


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


def collect_result(
    found: Found,
    run: Callable[[UnifiedLog], PartitionResult],
    chosen: Sequence[UnifiedLog] | None = None,
) -> VerifyResult:
    """The results in discovery order (each partition once), each log dir's own findings after
    its partitions; the paths that could not be read.

    ``run`` verifies one partition here, or hands back a result verified elsewhere (Spark).
    ``chosen``: the partitions to report (an export's: one replica each, the topics asked),
    with the log dirs holding one of them; the cluster's metadata image is still that of every
    partition found.
    """
    result = VerifyResult(unreadable=list(found.errors))
    every = found.partitions
    asked = None if chosen is None else {id(log) for log in chosen}
    logs = {id(log): log for log in every if asked is None or id(log) in asked}
    for ld in found.log_dirs:
        mine = [p for p in logs.values() if p.found_in(ld)]
        if not mine and chosen is not None:
            continue
        for p in mine:
            del logs[id(p)]
        results = [run(p) for p in mine]
        result.partitions.extend(results)
        result.log_dir_findings.extend(log_dir_findings(ld, results, every))
    result.partitions.extend(run(log) for log in logs.values())
    reported = [log for log in every if asked is None or id(log) in asked]
    lock_dirs = {log.log_dir.location: log.log_dir for log in reported if log.log_dir}
    result.log_dir_findings.extend(
        f for d in lock_dirs.values() if (f := broker_live(d)) is not None
    )
    return result


def broker_live(log_dir: LogDir) -> Finding | None:
    """An info finding when another process holds ``log_dir``'s ``.lock``, as kdump.lock
    decides for the repairs (which then refuse): most likely a broker running on it."""
    local = log_dir.storage.local_path
    if local is None or not log_dir.storage.exists(LOCK_FILE):
        return None  # no broker ever locked it: the lock's module stays unloaded
    from kdump.lock import who_holds

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
