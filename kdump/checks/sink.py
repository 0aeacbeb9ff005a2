"""Collects findings for one file, capping repeats of one code so a shredded file stays readable."""

from __future__ import annotations

from collections import Counter

from kdump.checks.findings import Finding, Severity


class FindingSink:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.findings: list[Finding] = []
        self._counts: Counter[tuple[str, str]] = Counter()
        self._first: dict[tuple[str, str], Finding] = {}

    def add(self, finding: Finding) -> None:
        key = (finding.code, finding.path)
        self._counts[key] += 1
        if self._counts[key] <= self.cap:
            self.findings.append(finding)
            self._first.setdefault(key, finding)

    def absorb(self, other: FindingSink) -> None:
        """Take in what another sink collected (a segment checked in another process), as if
        its findings had been added here, in order."""
        for finding in other.findings:
            self.add(finding)
        for key, count in other._counts.items():
            self._counts[key] += count - min(count, other.cap)  # the ones it left out

    def left_out(self) -> list[tuple[str, str, int]]:
        """(code, path, how many the cap left out) of each capped code: with ``findings``,
        all a sink holds (an export's marker keeps both: kdump.checks.verify_state.walk_facts)."""
        cap = self.cap
        return [(code, path, n - cap) for (code, path), n in self._counts.items() if n > cap]

    @classmethod
    def restored(
        cls, cap: int, findings: list[Finding], left_out: list[tuple[str, str, int]]
    ) -> FindingSink:
        """The sink ``findings`` and ``left_out`` were taken from."""
        sink = cls(cap)
        for finding in findings:
            sink.add(finding)
        for code, path, n in left_out:
            sink._counts[(code, path)] += n
        return sink

    def close(self) -> list[Finding]:
        """The findings, plus one per capped code saying how many more there were."""
        out = list(self.findings)
        for (code, path), n in self._counts.items():
            if n > self.cap:
                first = self._first[(code, path)]
                out.append(
                    Finding(
                        code,
                        first.severity,
                        path,
                        f"{n - self.cap} more {code} findings in this file not listed",
                        fix=first.fix,
                    )
                )
        return out


def worst(findings: list[Finding]) -> Severity | None:
    return max((f.severity for f in findings), key=lambda s: s.rank, default=None)
