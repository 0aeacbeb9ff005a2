"""No import circle in kdump: every module of the package parsed, every import it makes put in
one graph, and the graph must have no cycle.

Every import counts, wherever it is written: at the top of a module, inside a function (a lazy
import still ties the two modules together, it only hides the tie from a reader of the top),
under ``if TYPE_CHECKING:`` (a type needed both ways is a design circle too, whatever the
interpreter does with it), and the ``"module:attribute"`` strings the command table hands to
importlib. A failure names each circle, edge by edge, with the line of each import and what kind
it is, so the code can be moved to the layer it belongs to (kdump's layers, lowest first: errors,
crc, speedups, units, format; storage; segment; checks; txn; log_dir, unified_log; discovery; the
features; render; commands; cli).

``from package import name`` depends on the module ``package.name`` when there is one, else on
the package. A module is not counted as depending on the packages above it (their
``__init__`` runs first, but re-exporting a package's own modules there is no circle).
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT = re.compile(r"^(kdump(?:\.\w+)+):\w+$")
"""A "module:attribute" string (kdump/commands/__init__.py's table, loaded by cli.py)."""


@dataclass(frozen=True)
class Edge:
    path: Path
    line: int
    kind: str
    """``import``, ``lazy`` (inside a function), ``TYPE_CHECKING`` or ``importlib``."""


Graph = dict[str, dict[str, Edge]]


def module_names(package: Path) -> dict[str, Path]:
    """Every module under ``package`` by dotted name (a package by its ``__init__``); a C
    module by its stub (kdump/_speedups.pyi: what its typed callers import)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")) + sorted(package.rglob("*.pyi")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.setdefault(".".join(parts), path)
    return found


@cache
def import_graph(package: Path) -> Graph:
    modules = module_names(package)
    graph: Graph = {name: {} for name in modules}
    for name, path in modules.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target, edge in _imports(path, here):
            found = _module_of(target, modules)
            if found is not None and found != name:
                graph[name].setdefault(found, edge)
    return graph


def _imports(path: Path, here: str) -> list[tuple[str, Edge]]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[str, Edge]] = []

    def visit(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inner = "lazy" if kind == "import" else kind
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for statement in child.body:
                    visit_one(statement, "TYPE_CHECKING")
                for statement in child.orelse:
                    visit_one(statement, kind)
                continue
            visit_one(child, inner)

    def visit_one(node: ast.AST, kind: str) -> None:
        edge = Edge(path, getattr(node, "lineno", 0), kind)
        if isinstance(node, ast.Import):
            out.extend((alias.name, edge) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # each name: its module, else the module holding it (_module_of); a package's
            # own module imported from it is no tie to the package's __init__
            base = _absolute(node, here)
            out.extend((f"{base}.{alias.name}", edge) for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            entry = ENTRY_POINT.match(node.value)
            if entry:
                out.append((entry.group(1), Edge(path, node.lineno, "importlib")))
        visit(node, kind)

    visit(tree, "import")
    return out


def _absolute(node: ast.ImportFrom, here: str) -> str:
    if not node.level:
        return node.module or ""
    parts = here.split(".")
    base = ".".join(parts[: len(parts) - node.level + 1])
    return f"{base}.{node.module}" if node.module else base


def _module_of(target: str, modules: dict[str, Path]) -> str | None:
    """The module ``target`` names, or the one holding the name it names (None: not ours)."""
    while target and target not in modules:
        target = target.rpartition(".")[0]
    return target or None


def strongly_connected(graph: Graph) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            following = next(successors, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(sorted(graph[following]))))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def shortest_cycle(graph: Graph, component: list[str]) -> list[str]:
    """A shortest way round the component from its first module back to it."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for following in sorted(graph[node]):
            if following == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if following in members and following not in came_from:
                came_from[following] = node
                queue.append(following)
    raise AssertionError(f"no cycle through {start}")


def describe(graph: Graph, component: list[str]) -> str:
    cycle = shortest_cycle(graph, component)
    steps = []
    for a, b in pairwise(cycle):
        edge = graph[a][b]
        where = edge.path.relative_to(ROOT) if edge.path.is_relative_to(ROOT) else edge.path
        steps.append(f"  {a} -> {b}  ({where}:{edge.line}, {edge.kind})")
    return f"circle of {len(component)} module(s) {', '.join(component)}:\n" + "\n".join(steps)


def circles(package: Path) -> list[str]:
    graph = import_graph(package)
    return [describe(graph, c) for c in strongly_connected(graph)]


def test_kdump_has_no_import_circle() -> None:
    found = circles(ROOT / "kdump")
    assert not found, "\n".join(found)


def test_the_graph_sees_every_kind_of_import() -> None:
    # kdump itself imports lazily, under TYPE_CHECKING and through its command table: the graph
    # would miss a circle made of any of these if it did not see them.
    graph = import_graph(ROOT / "kdump")
    kinds = {edge.kind for edges in graph.values() for edge in edges.values()}
    assert kinds == {"import", "lazy", "TYPE_CHECKING", "importlib"}


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "kdump" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "kdump"


@pytest.mark.parametrize(
    ("low", "kind"),
    [
        ("def f():\n    from kdump.high import g\n", "lazy"),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kdump.high\n", None),
        ("from . import high\n", "import"),
        ("TABLE = {'x': 'kdump.high:g'}\n", "importlib"),
    ],
)
def test_a_circle_is_named_edge_by_edge(tmp_path: Path, low: str, kind: str | None) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": low,
            "high.py": "from kdump.low import f\n",
            "apart/__init__.py": "from kdump.apart.leaf import x\nfrom kdump.apart.user import y\n",
            "apart/leaf.py": "x = 1\n",
            "apart/user.py": "from kdump.apart import leaf\n\ny = leaf.x\n",
        },
    )
    (found,) = circles(package)
    assert found.startswith("circle of 2 module(s) kdump.high, kdump.low:\n")
    assert "kdump.high -> kdump.low  (" in found
    assert f", {kind or 'TYPE_CHECKING'})" in found
