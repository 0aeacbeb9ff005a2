"""The registry of finding codes (kdump/checks/registry.py) and the source agree: every code
kdump's source creates is registered, with the severities it is created with, and every
registered code is created; every error and warning the fixtures give carries a fix or an
advice; docs/findings.md is what scripts/make_findings_doc.py makes of the registry."""

from __future__ import annotations

import ast
import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from clirun import run_kdump
from conftest import CORRUPT, GENERATED, ORACLE, REPO, script_module
from repair_support import batch_positions, copy_partition
from test_verify import options_from

from kdump.checks.codes import CODES as CODE_NAMES
from kdump.checks.codes import Code
from kdump.checks.findings import Finding, Severity
from kdump.checks.registry import CODES, REGISTRY
from kdump.checks.verify import VerifyOptions, verify_paths
from kdump.render.verify import finding_line
from kdump.report.html import findings_table
from kdump.txn.analysis import abort_commands

KDUMP = REPO / "kdump"
OFFSET = struct.Struct(">q")
CORRUPT_KRAFT = CORRUPT.parent / "corrupt-kraft"

BUILT = {
    # stop_damage: the model's name for the bytes where a walk stopped (kdump.log_scan.tail_damage)
    ("kdump/checks/log.py", "getattr(Code, damage.name)"): {
        "LOG_UNKNOWN_MAGIC",
        "LOG_CORRUPT_BATCH",
        "LOG_TRUNCATED_TAIL",
    },
    ("kdump/checks/indexes.py", "f'{prefix}_MISALIGNED'"): {
        "INDEX_MISALIGNED",
        "TIMEINDEX_MISALIGNED",
    },
    ("kdump/checks/indexes.py", "f'{prefix}_PREALLOCATED'"): {
        "INDEX_PREALLOCATED",
        "TIMEINDEX_PREALLOCATED",
    },
    ("kdump/checks/indexes.py", "f'{prefix}_SANITY_CHECK_FAILS'"): {
        "INDEX_SANITY_CHECK_FAILS",
        "TIMEINDEX_SANITY_CHECK_FAILS",
    },
    # _oversize's limits: a .log's and each index file's
    ("kdump/checks/partition.py", "code"): {
        "LOG_SEGMENT_OVERSIZE",
        "INDEX_OVERSIZE",
        "TIMEINDEX_OVERSIZE",
    },
    # _UNDER_WAY's codes: COPY, DELETE
    ("kdump/tiered/scrub.py", "f'SCRUB_{code}_STUCK'"): {"SCRUB_COPY_STUCK", "SCRUB_DELETE_STUCK"},
    ("kdump/tiered/scrub.py", "f'SCRUB_{code}_IN_PROGRESS'"): {
        "SCRUB_COPY_IN_PROGRESS",
        "SCRUB_DELETE_IN_PROGRESS",
    },
}
"""Codes the source builds where the scan cannot read them: (module, the code's expression)."""

PASSED_ON = {
    ("kdump/checks/sink.py", "close", "code"),  # the count of a code's findings left out
    ("kdump/checks/log.py", "scan_log", "*damage"),  # stop_damage's (a finding template)
    ("kdump/repair/rebuild.py", "_walk_stop", "code"),  # stop_damage's, unpacked
    ("kdump/checks/replay.py", "_finding", "met.damage"),  # the model's word for the bytes
    ("kdump/checks/findings.py", "read_finding", "code"),  # a finding kdump wrote, read back
}
"""Finding calls (module, function, the code's expression) whose code another place made: an
existing finding, or a finding template (a function returning ``(code, Severity.X, ...)``,
whose returns the scan reads)."""

CODE = re.compile(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")


# -- the scan of kdump's source ---------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    module: str
    line: int
    codes: frozenset[str]
    severities: frozenset[str] | None  # None: not written at the call (passed on)


@dataclass(frozen=True)
class Forwarder:
    """A function that hands one of its parameters to Finding as the code."""

    code_at: int
    code_name: str
    severity_at: int | None  # the parameter it hands on as the severity
    severity_name: str | None
    severities: frozenset[str] | None  # the severity it writes itself


def _name(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _arg(call: ast.Call, at: int | None, name: str | None) -> ast.expr | None:
    """The argument at position ``at`` or named ``name``; a starred argument at or before the
    position stands for it (``finding(*damage)``)."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) and at is not None and i <= at:
            return arg
    if at is not None and at < len(call.args):
        return call.args[at]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_code(expr: ast.expr) -> bool:
    """``Code.X``: a code named through kdump.checks.codes."""
    return (
        isinstance(expr, ast.Attribute)
        and isinstance(expr.value, ast.Name)
        and expr.value.id == "Code"
    )


def _params(fn: ast.FunctionDef) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _severities(expr: ast.expr | None) -> frozenset[str] | None:
    named = isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name)
    if named and expr.value.id == "Severity":  # type: ignore[union-attr]
        return frozenset({expr.attr.lower()})  # type: ignore[union-attr]
    if isinstance(expr, ast.IfExp):
        a, b = _severities(expr.body), _severities(expr.orelse)
        return None if a is None or b is None else a | b
    return None


def _assigned(scope: ast.AST, name: str, top: bool = False) -> list[ast.expr]:
    """The values ``name = ...`` gives it in ``scope`` (``top``: the module's own statements)."""
    nodes = scope.body if top else ast.walk(scope)  # type: ignore[attr-defined]
    return [
        node.value
        for node in nodes
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == [name]
    ]


class _Module:
    def __init__(self, path: Path) -> None:
        self.rel = path.relative_to(REPO).as_posix()
        self.tree = ast.parse(path.read_text(), str(path))
        self.functions = [n for n in ast.walk(self.tree) if isinstance(n, ast.FunctionDef)]
        self.parents = {
            child: node for node in ast.walk(self.tree) for child in ast.iter_child_nodes(node)
        }
        self.forwarders: dict[str, Forwarder] = {}
        self.listed: set[tuple[str, ...]] = set()  # the entries of BUILT and PASSED_ON met
        self._find_forwarders()

    def _calls(self, node: ast.AST) -> Iterator[tuple[ast.Call, Forwarder | None]]:
        """Calls of Finding (None) and of this module's forwarders."""
        for call in ast.walk(node):
            if isinstance(call, ast.Call):
                name = _name(call)
                if name == "Finding":
                    yield call, None
                elif name in self.forwarders:
                    yield call, self.forwarders[name]

    def _find_forwarders(self) -> None:
        """To a fixpoint: a forwarder may hand its code to another one."""
        changed = True
        while changed:
            changed = False
            for fn in self.functions:
                if fn.name in self.forwarders:
                    continue
                params = _params(fn)
                for call, target in self._calls(fn):
                    code = self._code_arg(call, target)
                    if isinstance(code, ast.Name) and code.id in params:
                        sev = self._severity_arg(call, target)
                        passed = isinstance(sev, ast.Name) and sev.id in params
                        self.forwarders[fn.name] = Forwarder(
                            params.index(code.id),
                            code.id,
                            params.index(sev.id) if passed else None,  # type: ignore[union-attr]
                            sev.id if passed else None,  # type: ignore[union-attr]
                            None if passed else self._fixed_severities(call, target, sev),
                        )
                        changed = True
                        break

    @staticmethod
    def _code_arg(call: ast.Call, target: Forwarder | None) -> ast.expr | None:
        if target is None:
            return _arg(call, 0, "code")
        return _arg(call, target.code_at, target.code_name)

    @staticmethod
    def _severity_arg(call: ast.Call, target: Forwarder | None) -> ast.expr | None:
        if target is None:
            return _arg(call, 1, "severity")
        if target.severity_at is None:
            return None
        return _arg(call, target.severity_at, target.severity_name)

    def _fixed_severities(
        self, call: ast.Call, target: Forwarder | None, sev: ast.expr | None
    ) -> frozenset[str] | None:
        return target.severities if target is not None and sev is None else _severities(sev)

    def _enclosing(self, node: ast.AST) -> ast.FunctionDef | None:
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.FunctionDef):
            parent = self.parents.get(parent)
        return parent

    def resolve(self, expr: ast.expr, where: ast.FunctionDef | None) -> set[str] | None:
        """The codes ``expr`` can be (None: a forwarder's parameter, resolved at its calls)."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if _is_code(expr):
            return {expr.attr}  # type: ignore[attr-defined]
        if isinstance(expr, ast.IfExp):
            a, b = self.resolve(expr.body, where), self.resolve(expr.orelse, where)
            return (a or set()) | (b or set())
        source = ast.unparse(expr)
        if (self.rel, source) in BUILT:
            self.listed.add((self.rel, source))
            return set(BUILT[self.rel, source])
        passed = (self.rel, where.name if where is not None else "", source)
        if passed in PASSED_ON:
            self.listed.add(passed)
            return set()
        if isinstance(expr, ast.Name) and where is not None:
            if where.name in self.forwarders and expr.id in _params(where):
                return None
            values = _assigned(where, expr.id) or _assigned(self.tree, expr.id, top=True)
            if values:
                return set().union(*(self.resolve(v, where) or set() for v in values))
        raise AssertionError(
            f"{self.rel}:{expr.lineno}: finding code {source!r} is built where the scan cannot "
            "read it: list it in BUILT (or PASSED_ON) with the codes it can be"
        )

    def template_sites(self) -> Iterator[Site]:
        """Returns of ``(code, Severity.X, ...)``: findings made by the function's caller."""
        returns = [n for n in ast.walk(self.tree) if isinstance(n, ast.Return)]
        for node in returns:
            value = node.value
            if not isinstance(value, ast.Tuple) or len(value.elts) < 2:
                continue
            severities = _severities(value.elts[1])
            if severities is not None:
                codes = self.resolve(value.elts[0], self._enclosing(node))
                yield Site(self.rel, node.lineno, frozenset(codes or ()), severities)

    def sites(self) -> Iterator[Site]:
        yield from self.template_sites()
        for call, target in self._calls(self.tree):
            code = self._code_arg(call, target)
            assert code is not None, f"{self.rel}:{call.lineno}: a Finding with no code"
            where = self._enclosing(call)
            for code_expr, sev in _paired(code, self._severity_arg(call, target)):
                codes = self.resolve(code_expr, where)
                if codes is None:
                    continue  # the forwarder's own call of Finding: its callers are the sites
                if isinstance(sev, ast.Name) and where is not None and sev.id in _params(where):
                    severities = None
                else:
                    severities = self._fixed_severities(call, target, sev)
                yield Site(self.rel, call.lineno, frozenset(codes), severities)


def _paired(code: ast.expr, severity: ast.expr | None) -> list[tuple[ast.expr, ast.expr | None]]:
    """Code and severity chosen by the same condition, branch by branch (``"A" if stuck else
    "B"`` with ``WARNING if stuck else INFO``)."""
    if not (isinstance(code, ast.IfExp) and isinstance(severity, ast.IfExp)):
        return [(code, severity)]
    if ast.unparse(code.test) != ast.unparse(severity.test):
        return [(code, severity)]
    return [(code.body, severity.body), (code.orelse, severity.orelse)]


@cache
def source_modules() -> tuple[_Module, ...]:
    """kdump's modules that create findings or finding templates (a forwarder calls Finding
    in its own module)."""
    paths = sorted(KDUMP.rglob("*.py"))
    return tuple(_Module(path) for path in paths if _creates(path.read_text()))


def _creates(text: str) -> bool:
    return "Finding(" in text or "Severity." in text


@cache
def source_sites() -> tuple[Site, ...]:
    return tuple(site for module in source_modules() for site in module.sites())


def registered_severities(code: str) -> set[str]:
    return {case.severity.value for case in REGISTRY[code].cases}


def test_every_code_the_source_creates_is_registered() -> None:
    created = {code: site for site in source_sites() for code in site.codes}
    unknown = sorted(f"{c} ({s.module}:{s.line})" for c, s in created.items() if c not in REGISTRY)
    assert unknown == [], "add these to kdump/checks/registry.py"


def test_every_registered_code_is_created() -> None:
    created = {code for site in source_sites() for code in site.codes}
    assert sorted(set(REGISTRY) - created) == []


def test_each_site_creates_a_registered_severity() -> None:
    wrong = [
        f"{code} {sorted(site.severities)} at {site.module}:{site.line}"
        for site in source_sites()
        if site.severities is not None
        for code in site.codes
        if code in REGISTRY and not site.severities <= registered_severities(code)
    ]
    assert wrong == []


def test_the_scan_reads_the_kinds_of_site_it_is_meant_to() -> None:
    """The scan itself: a forwarder's literal codes (log.py's st.finding), a finding template's
    codes (log.py's stop_damage: a local variable, a module constant), one built by an f-string
    (BUILT) and a severity passed through a forwarder (indexes.py's _add) all reach it."""
    by_module: dict[str, set[str]] = {}
    for site in source_sites():
        by_module.setdefault(site.module, set()).update(site.codes)
    assert {"LOG_OFFSET_GAP", "LOG_UNKNOWN_MAGIC"} <= by_module["kdump/checks/log.py"]
    assert "LOG_ZERO_TAIL" in by_module["kdump/checks/log.py"]  # a template's module constant
    assert "LOG_OFFSET_OVERFLOW" in by_module["kdump/repair/rebuild.py"]
    assert "SCRUB_DELETE_STUCK" in by_module["kdump/tiered/scrub.py"]
    unsafe = [s for s in source_sites() if "INDEX_UNSAFE_ENTRY" in s.codes]
    assert [s.severities for s in unsafe] == [frozenset({"error"})]


def test_the_names_of_codes_are_the_registry() -> None:
    """kdump.checks.codes names each registered code once, and the registry's entries are
    written with those names."""
    assert set(REGISTRY) == CODE_NAMES
    assert all(getattr(Code, code) == code for code in REGISTRY)
    assert len(CODES) == len(REGISTRY)


def _compared_codes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Where a finding's code (``x.code``, or a variable named ``code``) is compared with a
    string written out, in a collection of them, or tested for a prefix."""

    def is_code(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "code") or (
            isinstance(node, ast.Name) and node.id == "code"
        )

    def is_text(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str) and bool(CODE.fullmatch(node.value))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(is_text(e) for e in node.elts)
        if isinstance(node, ast.Call) and node.args:  # frozenset(("A", "B"))
            return is_text(node.args[0])
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_code(x) for x in sides) and any(is_text(x) for x in sides):
                yield node.lineno, ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "endswith")
            and is_code(node.func.value)
        ):
            yield node.lineno, ast.unparse(node)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            # a module's set of codes written as strings (STOP_CODES = frozenset(("LOG_...",)))
            targets = [ast.unparse(t) for t in node.targets]
            if any(t.endswith("CODES") for t in targets) and is_text(node.value):
                yield node.lineno, ast.unparse(node)


def test_codes_are_referred_to_by_name_not_compared_as_strings() -> None:
    """Control flow asks what a finding is through kdump.checks.codes (``f.code ==
    Code.FILE_UNREADABLE``), never by a string written out or a prefix of one: a misspelt code
    fails mypy, and a renamed one is found everywhere it is asked about."""
    found = [
        f"{path.relative_to(REPO)}:{line}: {text}"
        for path in sorted(KDUMP.rglob("*.py"))
        if path.name not in ("codes.py", "registry.py")
        for line, text in _compared_codes(ast.parse(path.read_text()))
    ]
    assert found == []


def test_the_string_compare_scan_finds_what_it_is_meant_to() -> None:
    source = (
        'a = f.code == "LOG_ZERO_TAIL"\n'
        'b = code in ("FILE_UNREADABLE", "X_Y")\n'
        'c = f.code.startswith("TIMEINDEX_")\n'
        'STOP_CODES = frozenset(("LOG_CRC_MISMATCH",))\n'
        "d = f.code == Code.LOG_ZERO_TAIL\n"
        'e = f.path == "LOG_ZERO_TAIL"\n'
    )
    assert sorted(line for line, _ in _compared_codes(ast.parse(source))) == [1, 2, 3, 4]


def test_the_hand_listed_codes_are_still_in_the_source() -> None:
    source_sites()
    met = set().union(*(module.listed for module in source_modules()))
    assert sorted(set(BUILT) - met) == []
    assert sorted(PASSED_ON - met) == []


# -- the registry itself ----------------------------------------------------------------------


def test_codes_are_registered_once_and_spelled_as_codes() -> None:
    codes = [entry.code for entry in CODES]
    assert len(codes) == len(set(codes))
    assert [c for c in codes if not CODE.fullmatch(c)] == []


def test_every_error_and_warning_case_says_what_to_do() -> None:
    missing = [
        f"{entry.code} {case.severity.value} ({case.when})"
        for entry in CODES
        for case in entry.cases
        if case.severity is not Severity.INFO and not case.advice
    ]
    assert missing == []


def test_a_code_whose_cases_differ_by_file_picks_the_files_case() -> None:
    def advice(path: str) -> str | None:
        return Finding("CHECKPOINT_BEYOND_LOG_END", Severity.WARNING, path, "m").advice

    high_watermark = advice("/data/replication-offset-checkpoint")
    recovery_point = advice("/data/recovery-point-offset-checkpoint")
    assert high_watermark is not None and "high watermark" in high_watermark
    assert recovery_point is not None and "recovery point" in recovery_point
    assert advice("/data/cleaner-offset-checkpoint") is None  # no such case


# -- the fixtures: every error and warning carries a fix or an advice -----------------------


def _fixture_runs() -> list[tuple[str, list[str], list[str]]]:
    cases = json.loads((CORRUPT / "cases.json").read_text())
    runs = [
        ("oracle", [str(ORACLE)], []),
        ("oracle --deep", [str(ORACLE)], ["--deep"]),
        ("generated", [str(GENERATED)], []),
        ("generated --deep", [str(GENERATED)], ["--deep"]),
    ]
    runs += [(name, [str(CORRUPT / name)], c["options"]) for name, c in sorted(cases.items())]
    kraft = json.loads((CORRUPT_KRAFT / "cases.json").read_text())
    runs += [
        (name, [str(CORRUPT_KRAFT / name / c["target"])], []) for name, c in sorted(kraft.items())
    ]
    return runs


def _template(fix: str) -> re.Pattern[str]:
    """A registry fix as a pattern: each {placeholder} stands for what a finding fills in."""
    parts = re.split(r"\{[^}]*\}", fix)
    return re.compile(".+".join(map(re.escape, parts)))


@pytest.mark.parametrize(("paths", "options"), [r[1:] for r in _fixture_runs()],
                         ids=[r[0] for r in _fixture_runs()])  # fmt: skip
def test_every_error_and_warning_of_the_fixtures_says_what_to_do(
    paths: list[str], options: list[str]
) -> None:
    result = verify_paths(paths, options_from(options))
    for f in result.findings:
        if f.severity is Severity.INFO:
            continue
        assert f.fix or f.advice, f"{f.code} {f.severity.value} {f.path}: neither fix nor advice"
        template = REGISTRY[f.code].fix
        if f.fix:
            assert template is not None and _template(template).fullmatch(f.fix), (
                f"{f.code}: fix {f.fix!r} is not the registry's {template!r}"
            )


def test_the_abort_command_kdump_txn_offers_is_the_registrys_fix() -> None:
    """kdump txn's fix (no fixture of verify's carries it): the abort by start offset."""
    abort, _ = abort_commands("broker:9092", "orders", 3, 1200, 1007, 2, 5)
    for code in ("TXN_HANGING", "TXN_OPEN"):
        template = REGISTRY[code].fix
        assert template is not None and _template(template).fullmatch(abort), (code, abort)


def test_the_three_that_had_neither_now_carry_advice_or_a_fix() -> None:
    """CHECKPOINT_BEYOND_LOG_END (log start, high watermark), PARTITION_LEFTOVER_FILE and
    SNAPSHOT_CORRUPT carried neither a fix nor an advice (PARTITION_LEFTOVER_FILE has since got
    kdump recover's fix on a local log dir)."""
    names = [
        "checkpoint-beyond-log-end-log-start",
        "partition-leftover-file-swap",
        "snapshot-corrupt",
    ]
    found = [
        f
        for name in names
        for f in verify_paths([str(CORRUPT / name)], VerifyOptions()).findings
        if f.code in ("CHECKPOINT_BEYOND_LOG_END", "PARTITION_LEFTOVER_FILE", "SNAPSHOT_CORRUPT")
    ]
    assert {f.code for f in found} == {
        "CHECKPOINT_BEYOND_LOG_END",
        "PARTITION_LEFTOVER_FILE",
        "SNAPSHOT_CORRUPT",
    }
    for f in found:
        case = REGISTRY[f.code].case_for(f.severity, f.path)
        assert case is not None and case.advice
        assert f.advice == (None if f.fix else case.advice)
        d = f.to_dict()
        assert d["fix"] or d["advice"]


# -- where the advice shows -------------------------------------------------------------------

LEFTOVER = Finding(
    "PARTITION_LEFTOVER_FILE", Severity.WARNING, "t-0/00000000000000000000.log.swap", "left"
)
FIXED = Finding(
    "INDEX_MISSING", Severity.WARNING, "t-0/0.index", "missing", fix="kdump rebuild-index x.log"
)


def test_text_shows_the_advice_where_there_is_no_fix() -> None:
    advice = REGISTRY["PARTITION_LEFTOVER_FILE"].cases[0].advice
    assert finding_line(LEFTOVER) == (
        f"warning PARTITION_LEFTOVER_FILE {LEFTOVER.path}: left [advice: {advice}]"
    )


def test_text_of_a_finding_with_a_fix_is_unchanged() -> None:
    assert FIXED.advice is None
    assert finding_line(FIXED) == (
        "warning INDEX_MISSING t-0/0.index: missing [fix: kdump rebuild-index x.log]"
    )


def test_json_carries_advice_beside_fix_and_reads_back() -> None:
    d = LEFTOVER.to_dict()
    assert list(d)[-2:] == ["fix", "advice"]
    assert d["fix"] is None and d["advice"] == LEFTOVER.advice
    assert FIXED.to_dict()["advice"] is None
    assert Finding.from_dict(d) == LEFTOVER


def test_the_report_shows_the_advice_where_there_is_no_fix() -> None:
    html = findings_table([LEFTOVER, FIXED])
    assert html.count('class="advice"') == 1
    assert "advice: Let the broker start" in html
    assert "<code>kdump rebuild-index x.log</code>" in html


def test_a_repair_shows_advice_only_for_what_it_leaves(tmp_path: Path) -> None:
    """recover's plan: a cut batch says the cut removes it (no advice to run recover), an
    overflowing segment recover leaves alone carries the registry's advice."""
    overflowing = copy_partition("plain-0", tmp_path)
    log = overflowing / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    OFFSET.pack_into(data, batch_positions(log)[4][0], 2**31 + 100)  # outside the CRC: valid
    log.write_bytes(bytes(data))
    cut = copy_partition("lz4-0", tmp_path)
    log = sorted(cut.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    struct.pack_into(">i", data, batch_positions(log)[5][0] + 8, 3)  # below the minimum (14)
    log.write_bytes(bytes(data))
    ran = run_kdump(["recover", "--dry-run", str(overflowing), str(cut)])
    lines = ran.stdout.splitlines()
    cut_lines = [line for line in lines if "LOG_CORRUPT_BATCH" in line]
    overflow = [line for line in lines if "LOG_OFFSET_OVERFLOW" in line]
    assert cut_lines and overflow, ran.stdout
    assert all(line.endswith("[the cut above removes it]") for line in cut_lines)
    assert not any("[advice:" in line for line in cut_lines)
    advice = REGISTRY["LOG_OFFSET_OVERFLOW"].cases[0].advice
    assert all(line.endswith(f"[advice: {advice}]") for line in overflow)


# -- docs/findings.md -------------------------------------------------------------------------


def test_committed_findings_doc_is_the_generators_output() -> None:
    doc = script_module("make_findings_doc").findings_doc()
    assert (REPO / "docs" / "findings.md").read_text() == doc, "run scripts/make_findings_doc.py"


def test_findings_doc_has_every_code_and_its_advice() -> None:
    doc = (REPO / "docs" / "findings.md").read_text()
    for entry in CODES:
        assert f"### `{entry.code}`" in doc
        for case in entry.cases:
            assert case.advice is None or case.advice in doc


def _recover_then_salvage(text: str) -> bool:
    """Where a text names both, recover comes first."""
    if "kdump salvage" not in text or "kdump recover" not in text:
        return True
    return text.index("kdump recover") < text.index("kdump salvage")


def test_one_order_recover_then_salvage(tmp_path: Path) -> None:
    """Issue 44.9: the advice said "run `kdump salvage` first, then `kdump recover`", the
    runbook recover then salvage; followed, the advice lost the records of the segments recover
    deletes (salvage first never reads them; recover keeps them for salvage). One order: the
    registry's advice, rebuild-index's output and the README's runbook."""
    for entry in CODES:
        for case in entry.cases:
            assert _recover_then_salvage(case.advice or ""), (entry.code, case.advice)
    partition = copy_partition("txn-0", tmp_path)
    log = sorted(partition.glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    start, end = batch_positions(log)[3]
    data[(start + end) // 2] ^= 0xFF
    log.write_bytes(bytes(data))
    ran = run_kdump(["rebuild-index", "--dry-run", str(partition)])
    advised = [line for line in ran.stdout.splitlines() if "[advice:" in line]
    assert advised and all("kdump salvage" in line for line in advised), ran.stdout
    assert all(_recover_then_salvage(line) for line in advised)
    readme = (REPO / "README.md").read_text()
    runbook = readme[readme.index("## Runbook") : readme.index("## Exit codes")]
    assert _recover_then_salvage(runbook)
