"""The shape the code keeps: packages by part, each importing only itself and those before it, no private name
taken across a package, a small top level, no dead code, no import circles among xlplan's modules, docstring
cross-references that resolve, and no module-level state that changes.

Module-level state that a call changes makes one figure depend on what ran before it (a leave-one-source-out fold's
table once leaked into every later plan that way); calibrated tables travel as values instead, and memos are the
standard library's ``functools.cache``.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MUTATORS = {"append", "extend", "insert", "update", "clear", "pop", "popitem", "setdefault", "add", "discard", "remove"}


@functools.cache
def _health():
    spec = importlib.util.spec_from_file_location("health", ROOT / "scripts" / "health.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _rules() -> dict:
    """The package rules, walked once for every test that reads them."""
    return _health().package_rules()


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


@pytest.mark.slow
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
SOLVER_SEEDS = ("xlplan.plan.steps", "xlplan.serving.step", "xlplan.simulate.loop", "xlplan.simulate.kernel",
                "xlplan.decide.planner", "xlplan.excel.book", "xlplan.plan.closed_form", "xlplan.decide.compare",
                "xlplan.decide.schedule", "xlplan.decide.capacity", "xlplan.plan.sweep", "xlplan.plan.queue_path",
                "xlplan.evidence.predict", "xlplan.evidence.calibrate", "xlplan.plan.whatif")
# The writers, by package: the words (report/) and the workbook (excel/) lay out what the engine computed, as does
# the verification picture; within them, the workbook's figures (excel.book computes them once), the Excel functions'
# cell side (excel.cellwise) and the validation report (which refits calibrations; the next issue moves that to
# evidence/) are not writers.
WRITER_PACKAGES = ("xlplan.report", "xlplan.excel", "xlplan.io.verify_picture")
NOT_WRITERS = ("xlplan.excel.book", "xlplan.excel.cellwise", "xlplan.report.validation_report")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _runtime_imports(path: Path) -> set[str]:
    """The xlplan modules a file imports when it runs: every import statement, function-level ones included, except
    those under ``if TYPE_CHECKING:`` (annotations only). ``from xlplan import steps`` counts as xlplan.plan.steps."""
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


@pytest.mark.slow
def test_no_writer_imports_the_solver():
    # the result carries every figure a surface shows (xlplan.excel.book.figures computes them once); a writer that imports
    # the solver could compute a second copy of one, which is how the workbook once disagreed with the note
    solver, graph = _solver_and_graph()
    def under(m, prefixes):
        return any(m == w or m.startswith(w + ".") for w in prefixes)
    writers = [m for m in graph if under(m, WRITER_PACKAGES) and not under(m, NOT_WRITERS)]
    assert len(writers) >= 35  # the workbook's modules and tabs, the note's five, the review note, the traffic report, the picture
    found = {w: sorted(graph[w] & solver) for w in writers if graph[w] & solver}
    assert found == {}


def test_the_solver_check_sees_a_function_level_import(tmp_path):
    # the pattern it exists to catch: an import inside a function, beside a types-only one it must leave alone
    f = tmp_path / "m.py"
    f.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from xlplan.plan.steps import Paths\n\n"
                 "def f():\n    from xlplan.plan import steps\n    return steps\n")
    assert _runtime_imports(f) == {"xlplan.plan", "xlplan.plan.steps"}


# --- the packages -----------------------------------------------------------------------------------------------
# scripts/health.py holds the one list of packages in import order (PACKAGES) and the walk that checks it; the health
# report prints the same figures. Function-level and TYPE_CHECKING imports count: a package imports only itself and
# those before it, so the package graph has no circle.


def test_packages_import_only_themselves_and_those_before_them():
    assert _rules()["upward"] == []


def test_the_package_graph_has_no_circle():
    h = _health()
    edges = {k: set(v) for k, v in _rules()["edges"].items()}
    edges["xlplan"] -= {"xlplan.cli"}  # xlplan/__main__.py, the entry point (health.ENTRY_POINTS), runs the commands
    assert [c for c in h.strongly_connected(edges) if len(c) > 1] == []


def test_the_order_check_sees_an_upward_and_a_private_import(tmp_path):
    # the pattern it exists to catch: a serving module importing the command line inside a function, and a private name
    h = _health()
    f = tmp_path / "m.py"
    f.write_text("from xlplan.words import _hidden\n\ndef f():\n    from xlplan.cli import app\n    return app\n")
    found = h._imports(f, {"xlplan.cli", "xlplan.cli.app", "xlplan.words"})
    assert found == [("xlplan.words", "_hidden", 1), ("xlplan.cli.app", "", 4)]
    assert h.package_of("xlplan.serving.step") == "xlplan.serving" and h.package_of("xlplan.words") == "xlplan"
    rank = [name for name, _ in h.PACKAGES]
    assert rank.index(h.package_of("xlplan.cli.app")) > rank.index(h.package_of("xlplan.serving.step"))


def test_no_module_takes_a_private_name_from_another_package():
    assert _rules()["private"] == []


def test_the_top_level_is_a_few_modules_with_no_prefix_family():
    rules = _rules()
    assert len(rules["top_level"]) <= _health().TOP_LEVEL_MODULES_MAX
    assert rules["prefix_families"] == []


def test_every_package_is_in_the_order_and_every_folder_is_a_package():
    # a new folder of modules under xlplan/ is a package the order must place (data and catalog files aside)
    listed = {name for name, _ in _health().PACKAGES}
    folders = {"xlplan." + p.parent.relative_to(ROOT / "xlplan").parts[0] for p in (ROOT / "xlplan").rglob("*.py")
               if p.parent != ROOT / "xlplan"} - {"xlplan.data"}
    assert folders == listed - {"xlplan"}


def test_contributing_draws_the_packages_in_their_order():
    # CONTRIBUTING.md's map lists the packages in import order, each once; the map cannot drift from the rule
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## The packages", 1)[1].split("\n## ", 1)[0]
    drawn = re.findall(r"^\| `(xlplan[\w./]*)` \|", section, re.MULTILINE)
    assert [d.rstrip("/").replace("/", ".") for d in drawn] == [name for name, _ in _health().PACKAGES]


def test_the_package_initialisers_are_light():
    # a package's __init__ names its part in a docstring and hands no names on (no facade); the catalog's loader, the
    # command line's app are the exceptions, each its package's one concept (the data folder holds package data)
    heavy = []
    for init in sorted((ROOT / "xlplan").rglob("__init__.py")):
        name = init.parent.relative_to(ROOT).as_posix()
        if name in ("xlplan/catalog", "xlplan/cli", "xlplan/data"):
            continue
        tree = ast.parse(init.read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if name == "xlplan":
            body = [n for n in body if not (isinstance(n, ast.Assign) and n.targets[0].id == "__version__")]
        if body or not ast.get_docstring(tree):
            heavy.append(name)
    assert heavy == []


def test_no_dead_code():
    # vulture with [tool.vulture] in pyproject.toml; what is alive without a caller is named in scripts/dead_code_whitelist.py
    exe = Path(sys.executable).with_name("vulture")
    run = subprocess.run([str(exe)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout) == (0, "")


def test_the_dead_code_check_sees_an_unused_function(tmp_path):
    exe = Path(sys.executable).with_name("vulture")
    f = tmp_path / "m.py"
    f.write_text("def used():\n    return 1\n\n\ndef unused():\n    return 2\n\n\nprint(used())\n")
    run = subprocess.run([str(exe), str(f), "--min-confidence", "60"], capture_output=True, text=True, timeout=60)
    assert "unused function 'unused'" in run.stdout and "'used'" not in run.stdout.replace("'unused'", "")


# --- the edges read and write --------------------------------------------------------------------------------------
# io/ parses and writes; the workbook's modules lay out figures computed once (excel.book, with the typed values of
# excel.figures) and call no model function. The model is every package that computes: serving, plan, simulate,
# evidence, decide, money, review, and the top level's fleet and distributions. A record type (a class), an exception
# or a constant may cross; a function may not. The catalog's look-ups and the plan schema's validation are data, not
# model. The Excel functions' cell side (excel.cellwise) is the engine for a cell by design.

MODEL_PACKAGES = ("xlplan.serving", "xlplan.plan", "xlplan.simulate", "xlplan.evidence", "xlplan.decide", "xlplan.money",
                  "xlplan.review", "xlplan.fleet", "xlplan.distributions")
EDGES = ("xlplan.io", "xlplan.excel")
NOT_EDGES = ("xlplan.excel.book", "xlplan.excel.cellwise")


def _model_functions_used(module: str, path: Path) -> set[str]:
    """The model functions a module imports or calls through an imported module, at run time."""
    import inspect

    def under(name, prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
               for child in node.body for n in ast.walk(child)}
    modules = {}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped or not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("xlplan"):
            continue
        for a in node.names:
            full = f"{node.module}.{a.name}"
            if importlib.util.find_spec(full.rsplit(".", 1)[0]) and _is_module(full):
                modules[a.asname or a.name] = full
            elif under(node.module, MODEL_PACKAGES):
                obj = getattr(importlib.import_module(node.module), a.name, None)
                if callable(obj) and not inspect.isclass(obj):
                    found.add(full)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            home = modules[node.value.id]
            if under(home, MODEL_PACKAGES):
                obj = getattr(importlib.import_module(home), node.attr, None)
                if callable(obj) and not inspect.isclass(obj):
                    found.add(f"{home}.{node.attr}")
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_the_edges_call_no_model_function():
    files = {_module_name(p): p for p in (ROOT / "xlplan").rglob("*.py")}
    def edge(m):
        return any(m == e or m.startswith(e + ".") for e in EDGES) and not any(m == n or m.startswith(n + ".") for n in NOT_EDGES)
    found = {m: sorted(_model_functions_used(m, p)) for m, p in sorted(files.items()) if edge(m)}
    assert {m: f for m, f in found.items() if f} == {}


def test_the_edge_check_sees_a_model_function(tmp_path):
    # the pattern it exists to catch: a model function imported by name, and one called through its module
    f = tmp_path / "m.py"
    f.write_text("from xlplan.serving.queueing import erlang_c\nfrom xlplan.money import cost\n\n"
                 "def f():\n    return cost.api_cost_ratio(1.0, 2.0), erlang_c\n")
    assert _model_functions_used("x", f) == {"xlplan.serving.queueing.erlang_c", "xlplan.money.cost.api_cost_ratio"}
