"""The shape the code keeps: no import circles among xlplan's modules, and no module-level state that changes.

Module-level state that a call changes makes one figure depend on what ran before it (a leave-one-source-out fold's
table once leaked into every later plan that way); calibrated tables travel as values instead, and memos are the
standard library's ``functools.cache``.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTATORS = {"append", "extend", "insert", "update", "clear", "pop", "popitem", "setdefault", "add", "discard", "remove"}


def _health():
    spec = importlib.util.spec_from_file_location("health", ROOT / "scripts" / "health.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_import_circles():
    # function-level imports count: grimp sees them as edges like any other
    assert _health().import_circles()["circles"] == []


def _mutable_globals(tree: ast.Module) -> set[str]:
    """Names bound at module level to a dict, list or set display or constructor call."""
    out = set()
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        mutable = isinstance(value, (ast.Dict, ast.List, ast.Set)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("dict", "list", "set", "defaultdict", "OrderedDict"))
        if mutable:
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


def _mutations(tree: ast.Module, names: set[str]) -> list[str]:
    """Where a name in ``names`` is changed: a mutating method, an item or attribute assignment, ``global``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [f"line {node.lineno}: global {n}" for n in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS
              and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
            found.append(f"line {node.lineno}: {node.func.value.id}.{node.func.attr}()")
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in names:
                    found.append(f"line {node.lineno}: {t.value.id}[...] =")
    return found


def test_no_module_level_mutable_state():
    problems = []
    files = sorted((ROOT / "xlplan").rglob("*.py")) + sorted((ROOT / "udfs").rglob("*.py"))
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        problems += [f"{path.relative_to(ROOT)} {m}" for m in _mutations(tree, _mutable_globals(tree))]
    assert problems == []


def test_the_checker_finds_a_module_level_cache():
    # the pattern it exists to catch: a module dict filled by a function
    tree = ast.parse("_CACHE: dict = {}\n\ndef f(k):\n    _CACHE[k] = 1\n    _CACHE.clear()\n")
    assert _mutations(tree, _mutable_globals(tree)) == ["line 4: _CACHE[...] =", "line 5: _CACHE.clear()"]


# The solver: the modules that compute a fleet (the seven steps, the physics of a step, the simulation, the searches
# and the orchestrators). A module that imports any of them at run time computes too, so it joins the solver.
SOLVER_SEEDS = ("xlplan.steps", "xlplan.serving", "xlplan.simulate", "xlplan.sim_kernel", "xlplan.planner", "xlplan.book",
                "xlplan.closed_form", "xlplan.compare", "xlplan.schedule", "xlplan.capacity", "xlplan.sweep",
                "xlplan.queue_path", "xlplan.predict", "xlplan.calibrate", "xlplan.whatif")
# The writers: they lay out what the engine computed (the workbook, the note, the traffic report, the picture).
WRITER_PACKAGES = ("xlplan.io.workbook", "xlplan.note", "xlplan.note_constraints", "xlplan.note_fleet", "xlplan.note_format",
                   "xlplan.io.traffic_report", "xlplan.io.verify_picture")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _runtime_imports(path: Path) -> set[str]:
    """The xlplan modules a file imports when it runs: every import statement, function-level ones included, except
    those under ``if TYPE_CHECKING:`` (annotations only). ``from xlplan import steps`` counts as xlplan.steps."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
               for child in node.body for n in ast.walk(child)}
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("xlplan")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("xlplan") and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _solver_and_graph() -> tuple[set[str], dict[str, set[str]]]:
    files = {_module_name(p): p for p in (ROOT / "xlplan").rglob("*.py")}
    graph = {m: {i for i in _runtime_imports(p) if i in files} for m, p in files.items()}
    solver = set(SOLVER_SEEDS)
    while True:  # whatever imports the solver at run time computes too
        grown = solver | {m for m, deps in graph.items() if deps & solver}
        if grown == solver:
            return solver, graph
        solver = grown


def test_no_writer_imports_the_solver():
    # the result carries every figure a surface shows (xlplan.book.figures computes them once); a writer that imports
    # the solver could compute a second copy of one, which is how the workbook once disagreed with the note
    solver, graph = _solver_and_graph()
    writers = [m for m in graph if any(m == w or m.startswith(w + ".") for w in WRITER_PACKAGES)]
    assert len(writers) >= 20  # the workbook package's modules, the note's four, the traffic report, the picture
    found = {w: sorted(graph[w] & solver) for w in writers if graph[w] & solver}
    assert found == {}


def test_the_solver_check_sees_a_function_level_import(tmp_path):
    # the pattern it exists to catch: an import inside a function, beside a types-only one it must leave alone
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from xlplan.steps import Paths\n\n"
                 "def f():\n    from xlplan import steps\n    return steps\n")
    assert _runtime_imports(f) == {"xlplan", "xlplan.steps"}
