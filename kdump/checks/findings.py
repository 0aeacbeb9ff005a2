"""Typed findings: what is wrong, how bad, where, and the command that repairs it (or, where
there is none, what to do: the registry's advice)."""

from __future__ import annotations

from typing import Any

from kdump.checks.severity import Severity
from kdump.errors import ReadBackError
from kdump.tuples import NamedTuple

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


CODE = r"[A-Z][A-Z0-9_]{0,79}"
"""A finding's code, as text: compiled (and cached by re) by the first result read back."""
FIX_PROGRAMS = ("kdump ", "kafka-transactions.sh ", "rm ")
"""How every fix kdump suggests begins (kdump.checks.fixes, kdump.txn.analysis)."""


def read_finding(value: Any, where: str) -> Finding:
    """A finding as ``Finding.to_dict`` wrote it, every field of its type and bounds
    (kdump.readback); a fix must be one of kdump's commands."""
    # kdump.readback (json) for a run that reads results back, not for every verify
    from kdump import readback

    d = readback.mapping(value, where)
    severity = readback.text(d.get("severity"), f"{where}.severity", 16)
    if severity not in {s.value for s in Severity}:
        raise ReadBackError(f"{where}.severity", f"{severity!r} is no severity")
    fix = readback.optional_text(d.get("fix"), f"{where}.fix")
    if fix is not None and not fix.startswith(FIX_PROGRAMS):
        raise ReadBackError(f"{where}.fix", f"{fix[:80]!r} is none of kdump's commands")
    code = readback.text(d.get("code"), f"{where}.code", pattern=CODE)
    return Finding(
        code,
        Severity(severity),
        readback.text(d.get("path"), f"{where}.path"),
        readback.text(d.get("message"), f"{where}.message"),
        readback.optional_integer(d.get("offset"), f"{where}.offset"),
        readback.optional_integer(d.get("position"), f"{where}.position"),
        fix,
    )


__all__ = ["BROKER_FIXES", "Finding", "Severity", "read_finding"]
