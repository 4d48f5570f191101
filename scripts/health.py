"""Print the codebase's health figures, so later work can bring them down.

Five figures, each under a heading line with its details indented beneath:

1. modules over 400 lines (every ``.py`` file under ``xlplan/`` and ``udfs/``), largest first;
2. functions over 60 lines (``end_lineno - lineno + 1``, from the ``def`` line, decorators aside), longest
   first; a module or function whose docstring says why it is long ("long because", "over 60 lines because") is
   marked "(stated why)", and a "size rule" line says whether the code keeps the rule: none long without a stated
   reason, and at most three stated exceptions (``tests/test_health.py`` holds the code to it);
3. documented engine parameters: over every public engine function, as ``tests/test_docstrings.py`` defines
   one, the parameters named in the numpydoc Parameters section, and the functions with a Returns (or Yields,
   as that test counts them) and a References section;
4. lint findings: ``ruff check .`` with the rules in ``pyproject.toml``, by rule code;
5. import circles: the strongly connected components of xlplan's import graph, as grimp reports it (imports
   inside functions count as much as those at module level).

It reports and never gates: it exits 0 whatever the figures are. ``--json`` prints the same figures as JSON.

Run it from anywhere: ``.venv/bin/python scripts/health.py [--json]``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import inspect
import json
import pkgutil
import shutil
import subprocess
import sys
from collections import Counter, deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `import xlplan` finds the checkout, not an installed copy elsewhere

SOURCE_DIRS = ("xlplan", "udfs")
MODULE_LINES_LIMIT = 400
FUNCTION_LINES_LIMIT = 60
STATED_WHY = ("long because", "over 60 lines because")
SKIPPED_PACKAGES = ("xlplan.io", "xlplan.cli")  # the same engine as tests/test_docstrings.py


def source_files() -> list[Path]:
    """Every ``.py`` file under the source folders, in path order.

    Returns
    -------
    list of Path
        Absolute paths.
    """
    return sorted(p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# --- 1. modules over 400 lines -------------------------------------------------------------------------------


def _module_states_why(text: str) -> bool:
    """Whether a module's docstring says why it is long (the phrases of :data:`STATED_WHY`)."""
    try:
        doc = ast.get_docstring(ast.parse(text)) or ""
    except SyntaxError:
        return False
    return any(s in " ".join(doc.split()).lower() for s in STATED_WHY)


def long_modules() -> list[dict]:
    """The source files with more than 400 lines, largest first.

    Returns
    -------
    list of dict
        ``{"path", "lines", "stated_why"}`` with ``lines = len(text.splitlines())``; ``stated_why`` when the module's
        docstring says why it is long.
    """
    texts = {_rel(p): p.read_text(encoding="utf-8") for p in source_files()}
    sizes = [{"path": path, "lines": len(text.splitlines()), "stated_why": _module_states_why(text)}
             for path, text in texts.items()]
    return sorted((s for s in sizes if s["lines"] > MODULE_LINES_LIMIT), key=lambda s: (-s["lines"], s["path"]))


SIZE_EXCEPTIONS_ALLOWED = 3
"""Modules over 400 lines and functions over 60 whose docstring says why: at most this many in the whole project."""


def size_rule(modules: list[dict], functions: list[dict]) -> dict:
    """Whether the code keeps the size rule: no module over 400 lines and no function over 60, except where the
    docstring states why, and at most :data:`SIZE_EXCEPTIONS_ALLOWED` such exceptions.

    Parameters
    ----------
    modules : list of dict
        What :func:`long_modules` returns.
    functions : list of dict
        What :func:`long_functions` returns.

    Returns
    -------
    dict
        ``{"within", "exceptions", "unexplained", "allowed"}``: the rule kept; how many long modules and functions
        state why; how many do not; the exceptions allowed.
    """
    found = modules + functions
    exceptions = sum(1 for x in found if x["stated_why"])
    unexplained = len(found) - exceptions
    return {"within": unexplained == 0 and exceptions <= SIZE_EXCEPTIONS_ALLOWED, "exceptions": exceptions,
            "unexplained": unexplained, "allowed": SIZE_EXCEPTIONS_ALLOWED}


# --- 2. functions over 60 lines ------------------------------------------------------------------------------


class _FunctionLengths(ast.NodeVisitor):
    """Collects (qualified name, def line, length, stated why) for every function in one module's tree."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, int, int, bool]] = []

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        name = ".".join([*self.scope, node.name])
        doc = " ".join((ast.get_docstring(node) or "").split()).lower()
        self.found.append((name, node.lineno, node.end_lineno - node.lineno + 1, any(s in doc for s in STATED_WHY)))
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef


def long_functions() -> list[dict]:
    """The functions and methods with more than 60 lines, longest first.

    Returns
    -------
    list of dict
        ``{"path", "line", "name", "lines", "stated_why"}``; ``name`` is qualified by its class or enclosing
        function.
    """
    out = []
    for path in source_files():
        visitor = _FunctionLengths()
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        out += [
            {"path": _rel(path), "line": line, "name": name, "lines": n, "stated_why": why}
            for name, line, n, why in visitor.found
            if n > FUNCTION_LINES_LIMIT
        ]
    return sorted(out, key=lambda f: (-f["lines"], f["path"], f["line"]))


# --- 3. documented engine parameters -------------------------------------------------------------------------


def _engine_modules() -> list[str]:
    import xlplan

    names = []
    for info in pkgutil.walk_packages(xlplan.__path__, "xlplan."):
        if info.name.startswith(SKIPPED_PACKAGES) or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return sorted(names)


def public_engine_functions() -> tuple[list[tuple[str, object]], list[str]]:
    """Every public function and method of the engine, walked as ``tests/test_docstrings.py`` walks it.

    Returns
    -------
    functions : list of (str, function)
        Qualified name and the (unwrapped) function.
    unimportable : list of str
        Engine modules that raised ImportError, each with its message; their functions are not counted.
    """
    found, unimportable = [], []
    for name in _engine_modules():
        try:
            module = importlib.import_module(name)
        except ImportError as exc:  # a missing optional dependency: report it, count the rest
            unimportable.append(f"{name}: {exc}")
            continue
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(inspect.unwrap(obj)) if callable(obj) else False:
                found.append((f"{name}.{attr}", inspect.unwrap(obj)))  # a functools.cache wrapper counts too
            elif inspect.isclass(obj):
                for meth, fn in vars(obj).items():
                    if meth.startswith("_"):
                        continue
                    fn = fn.__func__ if isinstance(fn, (staticmethod, classmethod)) else fn
                    if inspect.isfunction(fn):
                        found.append((f"{name}.{attr}.{meth}", fn))
    return found, unimportable


def documented_parameters() -> dict:
    """The share of engine parameters named in their function's numpydoc Parameters section.

    Returns
    -------
    dict
        ``parameters`` and ``documented`` counts and their ``percent``; ``functions``, ``with_returns`` and
        ``with_references`` counts; ``undocumented`` (``"qualified.name: p, q"`` per function lacking some) and
        ``unimportable`` modules.
    """
    from numpydoc.docscrape import FunctionDoc

    functions, unimportable = public_engine_functions()
    params_total = params_documented = with_returns = with_references = 0
    undocumented = []
    for qualname, fn in functions:
        params = [p.name for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
        try:
            doc = FunctionDoc(fn)
        except ValueError as exc:  # numpydoc's word for a docstring it cannot parse (a section given twice)
            undocumented.append(f"{qualname}: docstring does not parse ({exc})")
            params_total += len(params)
            continue
        named = {n.strip().lstrip("*") for p in doc["Parameters"] for n in p.name.split(",")}
        missing = [p for p in params if p not in named]
        params_total += len(params)
        params_documented += len(params) - len(missing)
        with_returns += bool(list(doc["Returns"]) or list(doc["Yields"]))
        with_references += bool(doc["References"])
        if missing:
            undocumented.append(f"{qualname}: {', '.join(missing)}")
    return {
        "parameters": params_total,
        "documented": params_documented,
        "percent": round(100 * params_documented / params_total, 1) if params_total else 100.0,
        "functions": len(functions),
        "with_returns": with_returns,
        "with_references": with_references,
        "undocumented": undocumented,
        "unimportable": unimportable,
    }


# --- 4. lint findings ----------------------------------------------------------------------------------------


def _ruff_command() -> list[str] | None:
    beside = Path(sys.executable).parent / ("ruff.exe" if sys.platform == "win32" else "ruff")
    if beside.is_file():  # the virtual environment's own ruff first: the version its lock pins
        return [str(beside)]
    if found := shutil.which("ruff"):
        return [found]
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    return None


def lint_findings() -> dict:
    """Ruff's findings over the repository, with the rules in ``pyproject.toml``.

    Returns
    -------
    dict
        ``total`` and ``by_code`` (rule code to count, most frequent first), or ``total`` None and ``error``
        saying why ruff gave no figures.
    """
    command = _ruff_command()
    if command is None:
        return {"total": None, "by_code": {}, "error": "ruff is not installed"}
    run = subprocess.run(
        [*command, "check", ".", "--output-format", "json", "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    try:
        findings = json.loads(run.stdout)
    except json.JSONDecodeError:
        message = (run.stderr.strip() or run.stdout.strip() or f"exit status {run.returncode}").splitlines()[-1]
        return {"total": None, "by_code": {}, "error": f"ruff failed: {message}"}
    codes = Counter(f.get("code") or "syntax-error" for f in findings)
    return {"total": len(findings), "by_code": dict(sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])))}


# --- 5. import circles ---------------------------------------------------------------------------------------


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit on a large graph).

    Parameters
    ----------
    edges : dict of str to set of str
        Each node's successors; every successor is itself a key.

    Returns
    -------
    list of list of str
        Every component, each as its nodes in sorted order.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(edges):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(edges[root])))]
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _shortest_cycle(start: str, edges: dict[str, set[str]], within: set[str]) -> list[str]:
    """A shortest import chain from ``start`` back to itself, staying inside one component (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges[node] & within):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return [start]


def import_circles() -> dict:
    """The import cycles among xlplan's modules, as grimp reports its imports.

    Returns
    -------
    dict
        ``circles``: per strongly connected component of more than one module, its ``modules`` and one
        shortest ``cycle`` through the first of them; ``breakers``: the imports grimp nominates to break the
        cycles among xlplan's direct children (empty where the installed grimp lacks
        ``nominate_cycle_breakers``).
    """
    import grimp

    graph = grimp.build_graph("xlplan", cache_dir=None)  # no .grimp_cache left in the working directory
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    circles = []
    for component in strongly_connected(edges):
        if len(component) > 1:
            circles.append({"modules": component, "cycle": _shortest_cycle(component[0], edges, set(component))})
    circles.sort(key=lambda c: (-len(c["modules"]), c["modules"]))
    breakers = []
    if circles and hasattr(graph, "nominate_cycle_breakers"):
        breakers = sorted(f"{a} -> {b}" for a, b in graph.nominate_cycle_breakers("xlplan"))
    return {"circles": circles, "breakers": breakers}


# --- report --------------------------------------------------------------------------------------------------


def figures() -> dict:
    """Every figure, keyed by name.

    Returns
    -------
    dict
        ``long_modules``, ``long_functions``, ``size_rule``, ``documentation``, ``lint``, ``import_circles``.
    """
    modules, functions = long_modules(), long_functions()
    return {
        "long_modules": modules,
        "long_functions": functions,
        "size_rule": size_rule(modules, functions),
        "documentation": documented_parameters(),
        "lint": lint_findings(),
        "import_circles": import_circles(),
    }


def render(f: dict) -> str:
    """The figures as plain text: a heading line per figure, details indented beneath.

    Parameters
    ----------
    f : dict
        What :func:`figures` returns.

    Returns
    -------
    str
        The report, one line per entry.
    """
    lines = [f"modules over {MODULE_LINES_LIMIT} lines: {len(f['long_modules'])}"]
    lines += [f"  {m['lines']:>5}  {m['path']}" + (" (stated why)" if m["stated_why"] else "") for m in f["long_modules"]]

    lines.append(f"functions over {FUNCTION_LINES_LIMIT} lines: {len(f['long_functions'])}")
    lines += [
        f"  {g['path']}:{g['line']} {g['name']} {g['lines']} lines" + (" (stated why)" if g["stated_why"] else "")
        for g in f["long_functions"]
    ]
    rule = f["size_rule"]
    lines.append(f"size rule: {'within' if rule['within'] else 'broken'} ({rule['exceptions']} stated exceptions of at most "
                 f"{rule['allowed']}; {rule['unexplained']} long without a stated reason)")

    d = f["documentation"]
    lines.append(
        f"documented engine parameters: {d['documented']} of {d['parameters']} ({d['percent']}%); "
        f"Returns {d['with_returns']} of {d['functions']}; References {d['with_references']} of {d['functions']}"
    )
    lines += [f"  undocumented: {u}" for u in d["undocumented"]]
    lines += [f"  not imported: {u}" for u in d["unimportable"]]

    lint = f["lint"]
    heading = "lint findings (ruff, the rules in pyproject.toml)"
    if lint["total"] is None:
        lines.append(f"{heading}: no figure, {lint['error']}")
    else:
        lines.append(f"{heading}: {lint['total']}")
        lines += [f"  {n:>5}  {code}" for code, n in lint["by_code"].items()]

    c = f["import_circles"]
    lines.append(f"import circles: {len(c['circles'])} (function-level imports count, as grimp reports them)")
    for circle in c["circles"]:
        lines.append(f"  {' -> '.join(circle['cycle'])}")
        lines.append(f"    {len(circle['modules'])} modules: {', '.join(circle['modules'])}")
    if c["breakers"]:
        lines.append(f"  grimp nominates breaking (among xlplan's direct children): {'; '.join(c['breakers'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the figures, as text or with ``--json`` as JSON; always exit 0.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (``sys.argv[1:]`` when None).

    Returns
    -------
    int
        The exit status, 0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    f = figures()
    print(json.dumps(f, indent=2) if args.json else render(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
