"""One repair run: plan each segment, show it, stage it, commit everything, re-check the new
files with verify's checks, and say what is left to fix."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kdump.checks.findings import Finding, Severity
from kdump.errors import ExitCode, KdumpError
from kdump.progress import NO_PROGRESS, Progress
from kdump.repair.apply import Hook, RepairSession, WriteOptions, Written
from kdump.repair.files import Leftover, LocalPartition, local_partitions, remove_leftovers
from kdump.repair.interrupt import signals_held
from kdump.repair.plan import LOG, OFFSET_INDEX, TIME_INDEX, FileChange, SegmentPlan
from kdump.repair.rebuild import IndexConfig, IndexConfigs
from kdump.repair.recheck import recheck_staged
from kdump.repair.startup import plan_startup
from kdump.unified_log import UnifiedLog

Emit = Callable[[str, bool], None]
"""emit(line, to_stderr)"""


class Lines(Protocol):
    """The words a run prints as it goes, from the output layer above it
    (kdump.render.repair.REPAIR_LINES): the run says what happened, they say it in lines."""

    def plan_lines(self, plan: SegmentPlan, /) -> Iterator[str]: ...
    def kept_lines(self, written: list[Written], /) -> Iterator[str]: ...
    def salvage_lines(self, written: list[Written], /) -> Iterator[str]: ...
    def recheck_lines(self, findings: list[Finding], segments: int, /) -> Iterator[str]: ...
    def leftover_lines(self, found: list[Leftover], /) -> Iterator[str]: ...
    def stopped_before_commit_line(self) -> str: ...
    def stopped_in_commit_line(self, signal_name: str, done: int, not_done: int, /) -> str: ...


@dataclass(frozen=True)
class RunOptions:
    dry_run: bool = False
    write: WriteOptions = field(default_factory=WriteOptions)
    force: bool = False
    """Go on when a log dir's .lock is held (a running broker), with a loud warning."""
    broker_startup: bool = False
    """Also do what the broker's next start does to the logs (recover): producer snapshots
    above the log end deleted, recovery points clamped (kdump.repair.startup)."""
    as_broker: bool = False
    """recover --as-broker: the startup's snapshot deletions are the broker's own at its next
    load (kdump.log_loader), as the recovery done is its own."""
    builds_indexes: bool = True
    """Index files are built at an index.interval.bytes, and the run says which (not so for
    trim-index, which only cuts their preallocated tails)."""
    keep_plans: bool = False
    """A dry run keeps its plans (``RunResult.plans``, without the new files' bytes) for one
    JSON document, instead of printing each as it comes."""


@dataclass
class RunResult:
    files: int = 0
    """Files that change (or would, with --dry-run)."""
    unresolved: list[Finding] = field(default_factory=list)
    """Errors the run does not fix (an invalid batch rebuild-index stops at, an overflow...)."""
    recheck: list[Finding] = field(default_factory=list)
    written: list[Written] = field(default_factory=list)
    stopped: bool = False
    """A signal stopped the commit before every file was done."""
    plans: list[SegmentPlan] = field(default_factory=list)
    """A dry run's plans, when asked to keep them (RunOptions.keep_plans)."""
    indexed: set[Path] = field(default_factory=set)
    """Partitions whose offset or time index files change (or would)."""
    changed_segments: set[Path] = field(default_factory=set)
    """The .log paths of the segments whose files change (or would)."""
    changed_partitions: set[Path] = field(default_factory=set)

    def tally(self, targets: list[UnifiedLog]) -> str:
        """``34 file(s) (8 of 15 segments, 2 of 3 partitions)``: what changes among what was
        named (a plan is made for every segment named, most of them with nothing to do)."""
        segments = sum(len(t.named_segments) for t in targets)
        return (
            f"{self.files} file(s) ({len(self.changed_segments)} of {segments} segment(s), "
            f"{len(self.changed_partitions)} of {len(targets)} partition(s))"
        )

    @property
    def exit_code(self) -> int:
        errors = self.unresolved + [f for f in self.recheck if f.severity is Severity.ERROR]
        return ExitCode.ERRORS if errors or self.stopped else ExitCode.OK


def run_repair(
    targets: list[UnifiedLog],
    plans: Iterable[SegmentPlan],
    options: RunOptions,
    config: IndexConfig | IndexConfigs,
    emit: Emit,
    lines: Lines,
    hook: Hook | None = None,
    progress: Progress = NO_PROGRESS,
) -> RunResult:
    """Apply ``plans`` (a lazy iterator: one segment in memory at a time); ``progress`` hears
    of each segment planned, by the bytes of its log. Stopped by Ctrl-C or SIGTERM (whatever
    the process's handler raises), it rolls back, or finishes the file it is at, and says
    what changed and what did not."""
    result = RunResult()
    write = options.write
    if options.dry_run:
        show = _keep if options.keep_plans else _show
        if not options.keep_plans:
            _clear_leftovers(targets, write, emit, lines, dry_run=True)
        cut: set[Path] = set()
        for plan in plans:
            show(plan, result, emit, lines, all_files=False)
            _note_cut(plan, cut)
            _advance(progress, plan)
        if options.broker_startup:
            for plan in plan_startup(targets, cut, options.as_broker):
                show(plan, result, emit, lines, all_files=False)
        if not options.keep_plans:
            for line in interval_lines(result.indexed, IndexConfigs.of_any(config), options):
                emit(line, False)
            emit(f"dry run: {result.tally(targets)} would change; nothing was written", False)
        return result
    session = RepairSession(write, hook)
    try:
        with session:
            configs = IndexConfigs.of_any(config)
            _stage_and_commit(
                session, targets, plans, options, configs, emit, lines, progress, result
            )
    except BaseException as e:
        if not session.committed and not isinstance(e, KdumpError):
            emit(lines.stopped_before_commit_line(), True)
        raise
    return result


def _stage_and_commit(
    session: RepairSession,
    targets: list[UnifiedLog],
    plans: Iterable[SegmentPlan],
    options: RunOptions,
    configs: IndexConfigs,
    emit: Emit,
    lines: Lines,
    progress: Progress,
    result: RunResult,
) -> None:
    write = options.write
    if write.output_dir is None:
        session.lock_log_dirs(
            lock_dirs(targets), options.force, lambda m: emit(f"kdump: {m}", True)
        )
    # the log dirs, and the partitions named on their own, may be links the operator made
    session.trust(lock_dirs(targets))
    session.trust(p.path for p in local_partitions(named_alone(targets)))
    _clear_leftovers(targets, write, emit, lines, dry_run=False)
    checked = 0
    cut: set[Path] = set()
    for plan in plans:
        to_write = _show(plan, result, emit, lines, all_files=write.output_dir is not None)
        staged = session.stage(plan, to_write)
        if staged:
            checked += 1
            config = configs.of(plan.segment.directory)
            result.recheck += recheck_staged(plan, staged, config)
        _note_cut(plan, cut)
        _advance(progress, plan)
    if options.broker_startup and write.output_dir is None:
        for plan in plan_startup(targets, cut, options.as_broker):
            session.stage(plan, _show(plan, result, emit, lines, all_files=False))
    for line in lines.recheck_lines(result.recheck, checked) if checked else ():
        emit(line, False)
    for line in interval_lines(result.indexed, configs, options):
        emit(line, False)
    if any(f.severity is Severity.ERROR for f in result.recheck):
        session.rollback()
        emit("nothing was changed: the new files fail verify's checks (a kdump bug)", True)
        return
    with signals_held() as held:  # a signal now stops the commit between two files
        result.written = session.commit(held.pending)
        for line in lines.kept_lines(result.written):
            emit(line, False)
        if not session.stopped:
            for line in lines.salvage_lines(result.written):
                emit(line, False)
        if session.stopped:
            result.stopped = True
            not_done = len(session.staged) - len(result.written)
            emit(lines.stopped_in_commit_line(held.name, len(result.written), not_done), True)
            return
        where = f" under {write.output_dir}" if write.output_dir is not None else ""
        result.files = len(result.written)
        emit(f"{result.tally(targets)} written{where}", False)


def named_alone(logs: list[UnifiedLog]) -> list[UnifiedLog]:
    """The partitions named on their own, not found in a log dir."""
    return [
        log for log in logs if log.log_dir is None or log.location not in log.log_dir.partition_dirs
    ]


def lock_dirs(logs: list[UnifiedLog]) -> set[Path]:
    """The log dirs whose ``.lock`` a running broker would hold over ``logs``."""
    return {p.log_dir for p in local_partitions(logs)}


def _clear_leftovers(
    targets: list[UnifiedLog], write: WriteOptions, emit: Emit, lines: Lines, dry_run: bool
) -> None:
    """kdump's own temporary files that a killed run left where this one writes: removed
    first (a dry run says it would)."""
    where: list[LocalPartition] = local_partitions(targets)
    in_place = {p.path for p in where} | {p.log_dir for p in where}
    root = write.output_dir or write.backup_dir
    found = [] if write.output_dir is not None else remove_leftovers(in_place, dry_run)
    if root is not None:
        sides = {root / d.name for d in in_place}
        found += remove_leftovers(sides, dry_run, follow=False)
    for line in lines.leftover_lines(found):
        emit(line, False)


def interval_lines(
    indexed: set[Path], configs: IndexConfigs, options: RunOptions = RunOptions()
) -> Iterator[str]:
    """For each partition whose indexes change: the index.interval.bytes they are built at, and
    where it came from; where nothing said the topic's own, that it was assumed, and that an
    index built at another interval than its topic's holds more or fewer entries over the
    same data."""
    if not options.builds_indexes:
        return
    for directory in sorted(indexed):
        config = configs.of(directory)
        interval = f"index.interval.bytes {config.index_interval_bytes}"
        if config.interval_from is not None:
            yield f"note      {directory}: indexes built at {interval} ({config.interval_from})"
            continue
        yield (
            f"note      {directory}: indexes built at {interval}, Kafka's default: nothing "
            "given sets this topic's (--config index.interval.bytes=N, --server-properties, "
            "--describe-output); at another interval than the one an index was written at, "
            "it holds more or fewer entries over the same data (nothing is lost)"
        )


def _note_cut(plan: SegmentPlan, cut: set[Path]) -> None:
    if any(c.kind == LOG for c in plan.changed):
        cut.add(plan.segment.directory)


def _advance(progress: Progress, plan: SegmentPlan) -> None:
    log = plan.segment.log_path
    try:
        size = log.stat().st_size
    except OSError:
        size = 0  # deleted by this run, or never there: its plan says which
    progress.advance(size, str(log))


def _keep(
    plan: SegmentPlan, result: RunResult, emit: Emit, lines: Lines, all_files: bool
) -> list[FileChange]:
    """A dry run's plan kept for its JSON (the new files' bytes let go: a log dir's indexes)."""
    _count(plan, result)
    plan.changes = [dataclasses.replace(c, content=None) for c in plan.changes]
    result.plans.append(plan)
    return plan.changed


def _show(
    plan: SegmentPlan, result: RunResult, emit: Emit, lines: Lines, all_files: bool
) -> list[FileChange]:
    _count(plan, result)
    for line in lines.plan_lines(plan):
        emit(line, False)
    return list(plan.changes if all_files else plan.changed)


def _count(plan: SegmentPlan, result: RunResult) -> None:
    # the startup plans (snapshots, recovery points) change no segment
    result.files += len(plan.changed)
    result.unresolved += plan.unresolved
    if plan.changes_partition:
        result.changed_partitions.add(plan.segment.directory)
    if plan.changes_segment:
        result.changed_segments.add(plan.segment.log_path)
    if any(c.kind in (OFFSET_INDEX, TIME_INDEX) and not c.delete for c in plan.changed):
        result.indexed.add(plan.segment.directory)
