"""Lines a repair prints: one per file (what changes, entries and bytes before and after, where a
log is cut), the findings behind it, what was kept, and the re-check of the new files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kdump.checks.findings import Finding, Severity
from kdump.format.names import kept_logs_among
from kdump.render.shell import program, shell_word
from kdump.render.verify import finding_line
from kdump.repair.apply import Written
from kdump.repair.files import Leftover
from kdump.repair.plan import CHECKPOINT, LOG, SNAPSHOT, FileChange, SegmentPlan


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _entries(change: FileChange) -> str:
    before = change.old_entries
    if before is None:
        return "none"
    used = change.old_used_entries
    return f"{before} ({used} used)" if used is not None and used != before else str(before)


def change_line(change: FileChange) -> str:
    """``ACTION PATH: details`` for one planned file."""
    action = change.action
    if change.rename_to is not None:
        why = change.difference or "its first batch's base offset"
        detail = f"to {change.rename_to.name} ({why})"
    elif change.delete or change.kind in (SNAPSHOT, CHECKPOINT):
        detail = change.difference or ""
        if change.loss is not None:
            detail += f": {change.loss.describe()}"
    elif change.kind == LOG:
        assert change.truncate_at is not None and change.old is not None
        cut = change.old.size - change.truncate_at
        detail = (
            f"cut at position {change.truncate_at}: {_plural(cut, 'byte')} removed "
            f"({change.old.size} -> {change.truncate_at} bytes)"
        )
        if change.loss is not None:
            detail += f": {change.loss.describe()}"
    elif action == "unchanged":
        detail = f"{_plural(change.new_entries or 0, 'entry')}, {change.new_size} bytes"
        detail = detail.replace("entrys", "entries")
    else:
        old_size = "none" if change.old is None else str(change.old.size)
        detail = (
            f"{change.kind}: entries {_entries(change)} -> {change.new_entries}, "
            f"bytes {old_size} -> {change.new_size}"
        )
        if change.difference is not None:
            detail += f"; {change.difference}"
    return f"{action:<9} {change.path}: {detail}"


def plan_lines(plan: SegmentPlan) -> Iterator[str]:
    if plan.skipped is not None:
        yield f"{'skip':<9} {plan.segment.log_path}: {plan.skipped}"
    for change in plan.changed:
        yield change_line(change)
    unresolved = plan.unresolved
    for f in plan.findings:
        fixed = f.severity is Severity.ERROR and f not in unresolved
        yield finding_line(f, advice=not fixed) + (" [the cut above removes it]" if fixed else "")


def kept_lines(written: list[Written]) -> Iterator[str]:
    for w in written:
        if w.backup is not None:
            what = "deleted" if w.change.delete else "original"
            yield f"{'kept':<9} {w.backup}: the {what} {w.path.name}"
        if w.cut is not None and w.change.truncate_at is not None and w.change.old is not None:
            cut = w.change.old.size - w.change.truncate_at
            yield (
                f"{'kept':<9} {w.cut}: the {_plural(cut, 'byte')} cut from {w.path.name} at "
                f"{w.change.truncate_at} (cat both to restore it)"
            )


def salvage_lines(written: list[Written]) -> Iterator[str]:
    """Where recover kept log bytes (cut off a log, or a segment it deleted): the salvage that
    writes out their records, which step 6 of the runbook runs; under ``--backup-dir`` the
    partition holds none of them any more, so the directory that does is named."""
    kept: dict[Path, list[str]] = {}
    for w in written:
        for side in (w.cut, w.backup):
            if side is not None:
                kept.setdefault(side.parent, []).append(side.name)
    # the same rule as verify's and salvage's (a segment a swap replaced holds no lost record)
    for directory in sorted(d for d, names in kept.items() if kept_logs_among(names)):
        yield (
            f"{'salvage':<9} {directory}: holds the records recover cut or deleted; where this "
            "was the only replica, write them out (JSON Lines, to produce them again):"
        )
        yield f"  {program()} salvage {shell_word(str(directory))} --output-dir DIR"


def recheck_lines(findings: list[Finding], segments: int) -> Iterator[str]:
    shown = [f for f in findings if f.severity.rank >= 1]
    for f in shown:
        yield finding_line(f)
    errors = sum(1 for f in findings if f.severity.rank == 2)
    warnings = sum(1 for f in findings if f.severity.rank == 1)
    infos = len(findings) - errors - warnings
    yield (
        f"verify: new files of {_plural(segments, 'segment')} re-checked: "
        f"{_plural(errors, 'error')}, {_plural(warnings, 'warning')}, {infos} info"
    )


def leftover_lines(found: list[Leftover]) -> Iterator[str]:
    for leftover in found:
        if leftover.running:
            yield (
                f"{'skip':<9} {leftover.path}: being written by process {leftover.pid}, "
                "which is still running"
            )
        else:
            yield (
                f"{'remove':<9} {leftover.path}: a temporary file left by kdump process "
                f"{leftover.pid}, which was stopped before it finished"
            )


def stopped_before_commit_line() -> str:
    return (
        "kdump: stopped before the commit: nothing was changed, and nothing kdump made is left "
        "behind (the lines above are the plan); run the command again to do it"
    )


def stopped_in_commit_line(signal_name: str, done: int, not_done: int) -> str:
    return (
        f"kdump: stopped by {signal_name} during the commit: {_plural(done, 'file')} written "
        f"(each whole, its backup and cut bytes kept), {not_done} not (each as it was, with no "
        "backup or cut file of its own); run the command again to finish the job"
    )


class RepairLines:
    """These lines, as a repair run asks for them (kdump.repair.runner.Lines): the run is
    handed them by its command, so that repair does not import its output."""

    plan_lines = staticmethod(plan_lines)
    kept_lines = staticmethod(kept_lines)
    salvage_lines = staticmethod(salvage_lines)
    recheck_lines = staticmethod(recheck_lines)
    leftover_lines = staticmethod(leftover_lines)
    stopped_before_commit_line = staticmethod(stopped_before_commit_line)
    stopped_in_commit_line = staticmethod(stopped_in_commit_line)


REPAIR_LINES = RepairLines()
