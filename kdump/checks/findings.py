"""Typed findings: what is wrong, how bad, where, and the command that repairs it (or, where
there is none, what to do: the registry's advice)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kdump.checks.registry import advice_for
from kdump.checks.severity import Severity

BROKER_FIXES = "the broker fixes this at startup"
"""The label of residue the broker's own start clears (``kdump recover`` does the same)."""


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    path: str
    message: str
    offset: int | None = None
    position: int | None = None
    fix: str | None = None

    @property
    def advice(self) -> str | None:
        """What to do where the finding carries no fix (kdump.checks.registry)."""
        return None if self.fix else advice_for(self.code, self.severity, self.path)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        d["advice"] = self.advice
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        fields = {k: v for k, v in d.items() if k != "advice"}  # derived, not stored
        return cls(**{**fields, "severity": Severity(fields["severity"])})


__all__ = ["BROKER_FIXES", "Finding", "Severity"]
