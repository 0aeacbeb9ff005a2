"""A repair's plan as one JSON document (``--dry-run --format json``): one entry per file it
would change, the findings behind them, and each partition's facts (the ``partition`` object
every JSON output carries)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from kdump.checks.findings import Finding
from kdump.repair.plan import FileChange, SegmentPlan
from kdump.unified_log import UnifiedLog


def action_object(change: FileChange, plan: SegmentPlan) -> dict[str, Any]:
    """One file the plan changes (or leaves, ``unchanged``), and how."""
    old = change.old
    return {
        "path": str(change.path),
        "partition": str(plan.segment.directory),
        "segment": plan.segment.base_offset,
        "action": change.action,
        "kind": change.kind,
        "old_size": None if old is None else old.size,
        "new_size": None if change.delete else change.new_size,
        "truncate_at": change.truncate_at,
        "rename_to": None if change.rename_to is None else str(change.rename_to),
        "old_entries": change.old_entries,
        "old_used_entries": change.old_used_entries,
        "new_entries": change.new_entries,
        "why": change.difference,
        "loss": None if change.loss is None else _loss(change),
    }


def _loss(change: FileChange) -> dict[str, Any]:
    loss = change.loss
    assert loss is not None
    return {
        "position": loss.position,
        "bytes": loss.cut_bytes,
        "lost": asdict(loss.lost),
        "salvageable": asdict(loss.salvageable),
        "unreadable_bytes": loss.unreadable_bytes,
        "summary": loss.describe(),
    }


def plan_object(
    command: str, plans: Iterable[SegmentPlan], logs: list[UnifiedLog]
) -> dict[str, Any]:
    """The whole plan: the file actions in order, then the findings, the partitions' facts."""
    actions: list[dict[str, Any]] = []
    findings: list[Finding] = []
    skipped: list[dict[str, Any]] = []
    segments = set()
    for plan in plans:
        if plan.changes_segment:
            segments.add(plan.segment.log_path)
        actions += [action_object(c, plan) for c in plan.changes]
        findings += plan.findings
        if plan.skipped:
            skipped.append({"segment": str(plan.segment.log_path), "why": plan.skipped})
    return {
        "command": command,
        "dry_run": True,
        "files": sum(1 for a in actions if a["action"] != "unchanged"),
        "segments": len(segments),
        "actions": actions,
        "skipped": skipped,
        "findings": [f.to_dict() for f in findings],
        "partitions": [log.facts() for log in logs],
    }


__all__ = ["action_object", "plan_object"]
