"""Typed findings: what is wrong, how bad, where, and the command that repairs it (or, where
there is none, what to do: the registry's advice)."""

from __future__ import annotations

from typing import Any, NamedTuple

from kdump.checks.severity import Severity

BROKER_FIXES = "the broker fixes this at startup"
"""The label of residue the broker's own start clears (``kdump recover`` does the same)."""


class Finding(NamedTuple):
    """A record, not a frozen dataclass: every verify builds this module, and a dataclass costs
    ten times a NamedTuple to define (issue 45)."""

    code: str
    severity: Severity
    path: str
    message: str
    offset: int | None = None
    position: int | None = None
    fix: str | None = None

    @property
    def advice(self) -> str | None:
        """What to do where the finding carries no fix (kdump.checks.registry: read where a
        finding is shown, not by a run that finds nothing)."""
        if self.fix:
            return None
        from kdump.checks.registry import advice_for

        return advice_for(self.code, self.severity, self.path)

    def to_dict(self) -> dict[str, Any]:
        d = self._asdict()
        d["severity"] = self.severity.value
        d["advice"] = self.advice
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        fields = {k: v for k, v in d.items() if k != "advice"}  # derived, not stored
        return cls(**{**fields, "severity": Severity(fields["severity"])})


__all__ = ["BROKER_FIXES", "Finding", "Severity"]
