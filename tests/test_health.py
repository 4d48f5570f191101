"""scripts/health.py runs, reports its six figures and exits 0, and its figures agree with independent counts."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "health.py"
HEADINGS = (
    "packages: ",
    "functions over 60 lines: ",
    "documented engine parameters: ",
    "lint findings (ruff, the rules in pyproject.toml): ",
    "import circles: ",
    "dead code (vulture, [tool.vulture] in pyproject.toml): ",
)


def _run(*args: str) -> subprocess.CompletedProcess:
    # from another directory: the script finds the repository from its own path
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=SCRIPT.parent, capture_output=True, text=True, timeout=60)


def _script():
    spec = importlib.util.spec_from_file_location("health", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_it_reports_the_six_figures_and_exits_0():
    run = _run()
    assert run.returncode == 0, run.stderr
    headings = [line for line in run.stdout.splitlines() if not line.startswith(" ")]
    assert [h for h in HEADINGS if not any(line.startswith(h) for line in headings)] == []
    assert "function-level imports count" in run.stdout


@pytest.mark.slow
def test_its_top_level_count_matches_an_independent_count():
    run = _run()
    listed = re.search(r"^  top level: (\d+) modules \(at most 16\): (.*)$", run.stdout, re.MULTILINE)
    # counted independently: the .py files directly under xlplan/
    top = sorted(p.stem for p in (ROOT / "xlplan").glob("*.py"))
    assert int(listed[1]) == len(top) and listed[2].split(", ") == top


@pytest.mark.slow
def test_json_holds_the_same_figures():
    figures = json.loads(_run("--json").stdout)
    assert set(figures) == {"packages", "long_functions", "documentation", "lint", "import_circles", "dead_code"}
    assert figures["packages"]["upward"] == [] and figures["packages"]["private"] == []
    assert all(f["lines"] > 60 for f in figures["long_functions"])


def test_function_lengths_and_stated_why():
    # a 61-line function whose docstring says why it is long is counted and marked; a 60-line one is not counted
    body = "\n".join(f"    x{i} = {i}" for i in range(57))
    source = (
        f'def long_one():\n    """Long because it is a table\n    of rows."""\n{body}\n    return x0\n\n'
        f'def short_one():\n    """Short."""\n{body}\n    return x0\n'
    )
    visitor = _script()._FunctionLengths()
    visitor.visit(ast.parse(source))
    assert visitor.found == [("long_one", 1, 61, True), ("short_one", 63, 60, False)]


def test_tarjan_finds_the_circles():
    scc = _script().strongly_connected
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert sorted(scc(edges)) == [["a", "b", "c"], ["d"], ["e"]]
