"""kdump's layers, lowest first, and every import going down (or across one layer), never up.

The shape of Kafka's own storage code (docs: STYLE.md's layout): a storage model at the bottom
(files and objects; the segment with its recovery and indexes; the log dir; the opened partition
with the loader's and the cleaner's rules), then the layers that use it: verify (checks,
findings, state), repair (plans and writes), the questions answered from the model (explain,
txn, replicas, compact, startup, lookup), output (renderers, report, metrics), the Spark jobs,
and the click commands that wire them together.

Every import counts, as in tests/test_import_graph.py (which reads the graph): at the top of a
module, inside a function, under ``if TYPE_CHECKING:`` and the command table's strings. An
import that climbs is listed in CLIMBS with the reason it is still there; the test fails on a
new one, and on a listed one that is gone (so the list is the truth, and only shrinks).
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from test_import_graph import ROOT, Graph, _imports, _module_of, import_graph, module_names

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "kdump",
            "kdump.__init__",
            "kdump._version",
            "kdump._speedups",
            "kdump.speedups",
            "kdump.crc",
            "kdump.errors",
            "kdump.units",
            "kdump.untrusted",
            "kdump.java",
            "kdump.releases",
            "kdump.readback",
            "kdump.parallel",
            "kdump.progress",
            "kdump.timings",
            "kdump.forked",
            "kdump.shipped",
            "kdump.tuples",
        ),
    ),
    ("format", ("kdump.format", "kdump.config", "kdump.offset_map", "kdump.leader_epoch")),
    ("storage", ("kdump.storage",)),
    (
        "model",
        (
            "kdump.segment",
            "kdump.log_scan",
            "kdump.producer_state",
            "kdump.producer_replay",
            "kdump.local_log",
            "kdump.log_dir",
            "kdump.log_loader",
            "kdump.unified_log",
            "kdump.log_cleaner",
            "kdump.discovery",
            "kdump.loss",
            "kdump.lock",
            "kdump.internal_topics",
            "kdump.kraft",
        ),
    ),
    ("verify", ("kdump.checks", "kdump.tiered.checks", "kdump.kraft.checks")),
    ("repair", ("kdump.repair",)),
    (
        "features",
        (
            "kdump.explain",
            "kdump.txn",
            "kdump.replicas",
            "kdump.replica_content",
            "kdump.compact",
            "kdump.startup",
            "kdump.lookup",
            "kdump.tiered",
        ),
    ),
    (
        "output",
        (
            "kdump.render",
            "kdump.decoders",
            "kdump.report",
            "kdump.metrics",
            "kdump.audit_results",
            "kdump.run",
        ),
    ),
    ("spark", ("kdump.spark",)),
    ("commands", ("kdump.commands", "kdump.cli", "kdump.__main__", "kdump.spark.submit")),
)
"""(layer, the modules and packages in it), lowest first; a module is in the layer of the
longest name that holds it (``kdump.kraft.checks`` is verify's, the rest of ``kdump.kraft`` the
model's: the KRaft metadata log read as the broker loads it); ``kdump`` itself names the
package's ``__init__`` only."""

CLIMBS: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for i, (_, members) in enumerate(LAYERS):
        for name in members:
            holds = module == name or (name != "kdump" and module.startswith(name + "."))
            if holds and (best is None or len(name) > best[1]):
                best = (i, len(name))
    return None if best is None else best[0]


def climbs(graph: Graph) -> dict[tuple[str, str], str]:
    """Every import from a module to one in a higher layer: (importer, imported) -> where."""
    found = {}
    for a, edges in graph.items():
        here = layer_of(a)
        for b, edge in edges.items():
            there = layer_of(b)
            if here is not None and there is not None and there > here:
                where = edge.path.relative_to(ROOT) if edge.path.is_relative_to(ROOT) else edge.path
                found[a, b] = (
                    f"{a} ({LAYERS[here][0]}) -> {b} ({LAYERS[there][0]})  "
                    f"({where}:{edge.line}, {edge.kind})"
                )
    return found


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in module_names(ROOT / "kdump") if layer_of(m) is None)
    assert unplaced == [], "put these in LAYERS"


def test_no_import_climbs_to_a_higher_layer() -> None:
    found = climbs(import_graph(ROOT / "kdump"))
    new = [found[k] for k in sorted(found.keys() - CLIMBS.keys())]
    assert new == [], "imports that climb a layer:\n" + "\n".join(new)


def test_the_listed_climbs_are_still_there() -> None:
    found = climbs(import_graph(ROOT / "kdump"))
    gone = sorted(CLIMBS.keys() - found.keys())
    assert gone == [], "gone: take them out of CLIMBS"


def test_the_layers_of_a_made_up_package(tmp_path: Path) -> None:
    """The check itself: an import down and one across a layer pass, one up is named with its
    line and kind."""
    package = tmp_path / "kdump"
    (package / "checks").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "checks" / "__init__.py").write_text("")
    (package / "segment.py").write_text("def f():\n    from kdump.checks import verify\n")
    (package / "checks" / "verify.py").write_text("from kdump import segment, unified_log\n")
    (package / "unified_log.py").write_text("")
    graph = import_graph(package)
    found = climbs(graph)
    assert list(found) == [("kdump.segment", "kdump.checks.verify")]
    assert found["kdump.segment", "kdump.checks.verify"].endswith("segment.py:2, lazy)")


def test_counts() -> None:
    """What the layers hold (printed with -s: the issue's before and after)."""
    graph = import_graph(ROOT / "kdump")
    by_layer = Counter(LAYERS[layer_of(m) or 0][0] for m in graph)
    lazy = sum(e.kind == "lazy" for edges in graph.values() for e in edges.values())
    print(f"modules by layer {dict(by_layer)}; climbs {len(climbs(graph))}; lazy imports {lazy}")
    assert sum(by_layer.values()) == len(graph)


def test_an_opened_partition_s_options_are_changed_by_it_alone() -> None:
    """No layer above the model sets ``log.open_options`` on a partition it was handed (the
    report gives its walk its own options; a KRaft image found later goes through
    UnifiedLog.adopt_metadata)."""
    import ast

    found = []
    for path in sorted((ROOT / "kdump").rglob("*.py")):
        if path.name == "unified_log.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "open_options":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


URL_ASKED = {"kdump/discovery.py"}
"""Besides kdump.storage: discovery, which searches a folder on disk and a prefix of an object
store (with tiered storage's layouts) each its own way."""


def test_only_the_storage_layer_tells_a_path_from_a_url() -> None:
    """kdump.storage says it is the only place that tells a path from a URL: every other module
    reads through a Storage, or asks storage's functions (named, local_folder,
    parent_location, absolute_location, kdump.storage.outputs)."""
    asking = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "kdump").rglob("*.py")
        if "is_url" in path.read_text()
        and "storage" not in path.relative_to(ROOT).parts[1:-1]
        and path.parent.name != "storage"
    )
    assert asking == sorted(URL_ASKED)


# -- imports inside functions -------------------------------------------------------------------

LAZY_IMPORTS = 249
"""Import statements inside functions, kdump's and the standard library's (229 before issue 43's
third step, 214 after it; 220 with kdump.commands.output's pipe and thread modules, loaded by
the runs that write to a pipe; 222 with multiprocessing and its queue module, loaded by verify's
--jobs alone since dump --jobs forks its writers itself; 249 with what a plain partition's
verify and an index's dump no longer load: the transaction index, snapshot, leader-epoch,
text-file, legacy-message, lock, object-store, zlib and base64 modules, each imported by the
function that meets its file).

The rule: a module is imported at the top of the module that uses it, except where a command's
pinned start-up (tests/test_startup_imports.py, issue 45) would load it for nothing: there the
function that needs it imports it (a short comment says why where it is not plain). The number
only shrinks: a new lazy import fails here, and one taken away lowers it."""

LAZY_LOADED_ANYWAY: dict[tuple[str, str], str] = {
    ("kdump.speedups", "kdump"): "the package's version, read while kdump's __init__ may load",
    ("kdump.spark.remote", "kdump"): "an executor's probe: whether kdump imports there at all",
    ("kdump.commands.metadata", "kdump.commands.output"): "kdump/commands: issue 45's rework",
    ("kdump.commands.repair", "kdump.untrusted"): "kdump/commands: issue 45's rework",
    ("kdump.commands.spark", "kdump.run"): "kdump/commands: issue 45's rework",
    ("kdump.commands.tiered", "kdump.checks.options"): "kdump/commands: issue 45's rework",
    ("kdump.commands.txn", "kdump.config"): "kdump/commands: issue 45's rework",
    ("kdump.commands.txn", "kdump.txn.coordinator"): "kdump/commands: issue 45's rework",
}
"""Lazy imports of a module the importer's own top-level imports load anyway, and why they stay
(a list that only shrinks)."""


def _lines_inside_functions(node: ast.AST, inside: bool = False) -> list[int]:
    found = []
    for child in ast.iter_child_nodes(node):
        if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
            found.append(child.lineno)
        functions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        found += _lines_inside_functions(child, inside or isinstance(child, functions))
    return found


def function_imports() -> list[tuple[str, int]]:
    """(module path, line) of every import statement inside a function of kdump."""
    return [
        (str(path.relative_to(ROOT)), line)
        for path in sorted((ROOT / "kdump").rglob("*.py"))
        for line in sorted(_lines_inside_functions(ast.parse(path.read_text())))
    ]


def test_imports_inside_functions_only_shrink() -> None:
    found = len(function_imports())
    assert found <= LAZY_IMPORTS, (
        f"{found} imports inside functions, more than {LAZY_IMPORTS}: import at the top of the "
        "module, unless a pinned start-up (tests/test_startup_imports.py) would pay for it"
    )
    assert found == LAZY_IMPORTS, f"fewer imports inside functions: lower LAZY_IMPORTS to {found}"


def loaded_at_top(graph: Graph, module: str) -> set[str]:
    """The kdump modules importing ``module`` loads: its top-level imports, theirs, and so on
    (with the packages that hold each)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [b for b, edge in graph.get(name, {}).items() if edge.kind == "import"]
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
    return seen


def test_no_lazy_import_of_a_module_loaded_anyway() -> None:
    """An import inside a function of a module the importer loads at its top anyway (itself or
    through what it imports) saves no start-up: it goes to the top."""
    graph = import_graph(ROOT / "kdump")
    modules = module_names(ROOT / "kdump")
    found = {}
    for name, path in modules.items():
        if path.suffix != ".py":
            continue
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        anyway = loaded_at_top(graph, name)
        for target, edge in _imports(path, here):
            imported = _module_of(target, modules)
            if edge.kind == "lazy" and imported in anyway and imported != name:
                found[name, imported] = f"{path.relative_to(ROOT)}:{edge.line} {imported}"
    new = sorted(found[k] for k in found.keys() - LAZY_LOADED_ANYWAY.keys())
    assert new == [], "lazy imports of modules loaded anyway: move them to the top\n" + "\n".join(
        new
    )
    gone = sorted(LAZY_LOADED_ANYWAY.keys() - found.keys())
    assert gone == [], "gone: take them out of LAZY_LOADED_ANYWAY"
