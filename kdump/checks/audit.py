"""How a verify run spends itself (``--state``, ``--recheck-fraction``, ``--budget``) and what it
read and left: the options and the summary every run has, with or without a state file. The
state file itself (kdump.checks.verify_state) is read only by a run given one."""

from __future__ import annotations

from typing import Any

from kdump.tuples import NamedTuple

RECHECK_DAYS = 30
DEFAULT_RECHECK_FRACTION = 1 / RECHECK_DAYS
"""A nightly run re-reads a thirtieth of the unchanged segments, the longest unread first: each
is read again at least every 30 days."""


class AuditOptions(NamedTuple):
    """How a run spends itself: ``state`` (a file: incremental), the share of unchanged segments
    read again, and a budget (milliseconds) after which it stops at a segment boundary."""

    state: str | None = None
    recheck_fraction: float = DEFAULT_RECHECK_FRACTION
    budget_ms: int | None = None


class AuditSummary:
    """What a run read and left: the fleet's metrics (JSON ``run``, ``--prom``). A plain class
    (every verify builds it: a dataclass costs start-up to define, issue 45)."""

    def __init__(self, asked: bool = False, state: str | None = None) -> None:
        self.bytes_verified = 0
        self.bytes_unchanged_skipped = 0
        self.oldest_verified_ms: int | None = None
        """The oldest last-verified time of any segment of the run (None: none verified
        yet)."""
        self.partial = False
        """A budget or an interruption stopped the run before every segment was read."""
        self.stopped_at: str | None = None
        """The first segment left unread."""
        self.state_warning: str | None = None
        self.cache_warning: str | None = None
        """Why pages read were left in the page cache although the run was to drop them."""
        self.asked = asked
        """The run was given --state or --budget (--prom then carries these figures too)."""
        self.state = state
        """The state file of the run (--state), named in its output."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes_verified": self.bytes_verified,
            "bytes_unchanged_skipped": self.bytes_unchanged_skipped,
            "oldest_verified_ms": self.oldest_verified_ms,
            "partial": self.partial,
            "stopped_at": self.stopped_at,
            "state": self.state,
        }

    def saw(self, verified_ms: int | None) -> None:
        if verified_ms is not None:
            old = self.oldest_verified_ms
            self.oldest_verified_ms = verified_ms if old is None else min(old, verified_ms)


__all__ = ["DEFAULT_RECHECK_FRACTION", "RECHECK_DAYS", "AuditOptions", "AuditSummary"]
