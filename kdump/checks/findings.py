"""Typed findings: what is wrong, how bad, where, and the command that repairs it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any

BROKER_FIXES = "the broker fixes this at startup"
"""The label of residue the broker's own start clears (``kdump recover`` does the same)."""


class Severity(str, Enum):
    """error: data is damaged or reads go wrong; warning: needs attention, loses nothing;
    info: a normal fact worth knowing."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    path: str
    message: str
    offset: int | None = None
    position: int | None = None
    fix: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["severity"] = self.severity.value
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(**{**d, "severity": Severity(d["severity"])})
