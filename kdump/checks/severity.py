"""How bad a finding is (its own module so the registry of codes and ``Finding`` both use it)."""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    """error: data is damaged or reads go wrong; warning: needs attention, loses nothing;
    info: a normal fact worth knowing."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


__all__ = ["Severity"]
