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
