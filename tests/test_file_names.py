"""Each of Kafka's file names (and kdump's own) is written once, in kdump/format/names.py: a
string anywhere else in kdump equal to one of them is a second definition that can drift."""

from __future__ import annotations

import ast
from pathlib import Path

from kdump.format import names

ROOT = Path(__file__).resolve().parent.parent
NAMES = {
    value: name for name, value in vars(names).items() if name.isupper() and isinstance(value, str)
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of docstring constants (a module's, a class's, a function's, an attribute's)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                found.add(id(statement.value))
    return found


def written_again(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):  # the literal pieces of an f-string
            skip.update(id(v) for v in node.values)
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value!r} is names.{NAMES[node.value]}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in NAMES
        and id(node) not in skip
    ]


def test_each_file_name_is_written_once() -> None:
    found = [
        line
        for path in sorted((ROOT / "kdump").rglob("*.py"))
        if path != ROOT / "kdump" / "format" / "names.py"
        for line in written_again(path)
    ]
    assert not found, "\n".join(found)


def test_a_name_written_again_is_found(tmp_path: Path) -> None:
    path = tmp_path / "lock.py"
    path.write_text('"""doc"""\nLOCK = ".lock"\nNOTE = f"{x}.lock"\n')
    assert written_again(path, tmp_path) == ["lock.py:2: '.lock' is names.LOCK_FILE"]
