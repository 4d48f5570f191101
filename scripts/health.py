"""Print the codebase's health figures, so later work can bring them down.

Six figures, each under a heading line with its details indented beneath:

1. packages: xlplan's packages in the order they may import one another (:data:`PACKAGES`: a package imports only
   itself and those above it in the list), then every import that breaks the order, every private name imported
   from another package, and the top level's modules (at most :data:`TOP_LEVEL_MODULES_MAX`, no three sharing a
   name prefix); ``tests/test_architecture.py`` holds the code to all of them;
2. functions over 60 lines (``end_lineno - lineno + 1``, from the ``def`` line, decorators aside), longest
   first; a function whose docstring says why it is long ("long because", "over 60 lines because") is marked
   "(stated why)". Reported, not a rule: a module or function is as long as its one idea needs;
3. documented engine parameters: over every public engine function, as ``tests/test_docstrings.py`` defines
   one, the parameters named in the numpydoc Parameters section, and the functions with a Returns (or Yields,
   as that test counts them) and a References section;
4. lint findings: ``ruff check .`` with the rules in ``pyproject.toml``, by rule code;
5. import circles: the strongly connected components of xlplan's import graph, as grimp reports it (imports
   inside functions count as much as those at module level);
6. dead code: what vulture finds with the settings in ``pyproject.toml`` (``[tool.vulture]``, with the names it must
   not report in ``scripts/dead_code_whitelist.py``).

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
FUNCTION_LINES_LIMIT = 60
STATED_WHY = ("long because", "over 60 lines because")

PACKAGES = (
    ("xlplan", ("the top level: units, counting words, array helpers, frozen copies, length distributions, the fleet's "
               "whole-unit arithmetic")),
    ("xlplan.catalog", "GPU and model specs, the packaged catalog, parameter counts, API prices by size class"),
    ("xlplan.serving", ("the step time and its inputs, engines, kernels, collectives, memory, compute, latency, "
                       "queueing, Little's Law: pure functions")),
    ("xlplan.schema", "the plan's input sections and their plausible ranges, and the typed results every part returns"),
    ("xlplan.money", "the bill and $/M tokens, the API comparison, owning, the contract mix"),
    ("xlplan.plan", ("a plan as a scenario, the seven steps, the closed form and its paths, what-ifs and breakpoints, "
                    "the sweep")),
    ("xlplan.simulate", ("requests, the scheduler, the event loop beside its compiled twin, a run measured, the search, "
                        "verification")),
    ("xlplan.evidence", "traffic logs, benchmarks predicted and calibrated, production's gauges and histograms"),
    ("xlplan.decide", "the Answer, the orchestrator, capacity, compare, schedule and dated cash, diff"),
    ("xlplan.review", "the monthly review"),
    ("xlplan.io", "readers and writers at the edge"),
    ("xlplan.report", "words: the capacity note, the review note, the traffic and validation reports"),
    ("xlplan.excel", "the workbook (figures once, tabs, writer, reader, check) and the Excel functions' cell side"),
    ("xlplan.cli", "the commands"),
)
"""xlplan's packages, lowest first: a module imports only from its own package and those listed before it. [—]"""

ENTRY_POINTS = ("xlplan.__main__",)
"""Modules exempt from the order: ``python -m xlplan`` runs the command line from the top. [—]"""

TOP_LEVEL_MODULES_MAX = 16
"""At most this many modules at xlplan's top level beside its packages (``__init__`` and ``__main__`` counted). [modules]"""

NOT_ENGINE = ("xlplan.io", "xlplan.cli", "xlplan.excel", "xlplan.report.traffic_report", "xlplan.report.validation_report")
"""Where the engine's documentation rule stops (the same engine as tests/test_docstrings.py): readers, writers,
commands, the workbook's layout and the two table reports. [—]"""
ENGINE_AFTER_ALL = ("xlplan.excel.cellwise", "xlplan.excel.book", "xlplan.excel.figures")
"""Within :data:`NOT_ENGINE`, the engine again: the Excel functions' cell side and the workbook's figures. [—]"""


def is_engine_module(name: str) -> bool:
    """Whether a module is engine code that the documentation rule covers.

    Parameters
    ----------
    name : str
        A dotted module name under xlplan.

    Returns
    -------
    bool
        False for :data:`NOT_ENGINE` (unless under :data:`ENGINE_AFTER_ALL`) and for ``__main__`` modules.
    """
    def under(prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)
    return not name.endswith("__main__") and (not under(NOT_ENGINE) or under(ENGINE_AFTER_ALL))


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


# --- 1. packages -----------------------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    """The dotted module name of a file under the checkout.

    Parameters
    ----------
    path : Path
        A ``.py`` file under ``ROOT``.

    Returns
    -------
    str
        ``xlplan.plan.steps`` for ``xlplan/plan/steps.py``; a package's ``__init__.py`` is the package.
    """
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def package_of(module: str) -> str:
    """The package of :data:`PACKAGES` a module belongs to.

    Parameters
    ----------
    module : str
        A dotted module name under xlplan.

    Returns
    -------
    str
        Its package (``xlplan.serving`` for ``xlplan.serving.step``), or ``xlplan`` for a top-level module.
    """
    known = [name for name, _ in PACKAGES[1:] if module == name or module.startswith(name + ".")]
    return known[0] if known else "xlplan"


def _imports(path: Path, modules: set[str]) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every xlplan import in a file, function-level and
    ``TYPE_CHECKING`` ones included: ``from xlplan.plan import steps`` imports the module ``xlplan.plan.steps``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == "xlplan"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "xlplan":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.append((sub, "", node.lineno) if sub in modules else (node.module, a.name, node.lineno))
    return found


def package_rules() -> dict:
    """The package rules and what breaks them: the order of :data:`PACKAGES`, private names, the top level.

    Returns
    -------
    dict
        ``upward``: ``"module:line -> imported"`` for each import of a package later in the order;
        ``private``: ``"module:line -> home.name"`` for each private name (one leading underscore) taken from another
        package, imported or read as a module's attribute; ``top_level``: the top level's module names;
        ``prefix_families``: name prefixes (before the first underscore) that three or more top-level modules share;
        ``edges``: for each package, the other packages it imports.
    """
    files = {module_name(p): p for p in sorted((ROOT / "xlplan").rglob("*.py")) if "__pycache__" not in p.parts}
    modules = set(files)
    rank = {name: i for i, (name, _) in enumerate(PACKAGES)}
    upward, private, edges = [], [], {name: set() for name, _ in PACKAGES}
    for module, path in files.items():
        mine = package_of(module)
        modules_bound = {}
        for target, name, line in _imports(path, modules):
            theirs = package_of(target)
            if theirs != mine:
                edges[mine].add(theirs)
            if rank[theirs] > rank[mine] and module not in ENTRY_POINTS:
                upward.append(f"{module}:{line} -> {target}")
            if name.startswith("_") and not name.startswith("__") and theirs != mine:
                private.append(f"{module}:{line} -> {target}.{name}")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):  # a module bound to a name, then a private attribute read from it
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "xlplan":
                for a in node.names:
                    if f"{node.module}.{a.name}" in modules:
                        modules_bound[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules_bound
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                target = modules_bound[node.value.id]
                if package_of(target) != mine:
                    private.append(f"{module}:{node.lineno} -> {target}.{node.attr}")
    top = sorted(p.stem for p in (ROOT / "xlplan").glob("*.py"))
    prefixes = Counter(name.lstrip("_").split("_")[0] for name in top if "_" in name.lstrip("_"))
    return {"upward": upward, "private": sorted(set(private)), "top_level": top,
            "prefix_families": sorted(k for k, n in prefixes.items() if n >= 3),
            "edges": {k: sorted(v) for k, v in edges.items()}}



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
        if not is_engine_module(info.name):
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


# --- 6. dead code --------------------------------------------------------------------------------------------


def dead_code() -> dict:
    """What vulture reports with the settings of ``[tool.vulture]`` in ``pyproject.toml``.

    Returns
    -------
    dict
        ``findings``: vulture's lines (path, line, what is unused); ``error``: why there is no figure, or None.
    """
    exe = shutil.which("vulture") or str(Path(sys.executable).with_name("vulture"))
    if not Path(exe).exists():
        return {"findings": [], "error": "vulture is not installed (pip install -e '.[test]')"}
    run = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, check=False)
    if run.returncode not in (0, 3):  # 3: dead code found
        return {"findings": [], "error": (run.stderr or run.stdout).strip()}
    return {"findings": run.stdout.splitlines(), "error": None}


# --- report --------------------------------------------------------------------------------------------------


def figures() -> dict:
    """Every figure, keyed by name.

    Returns
    -------
    dict
        ``packages``, ``long_functions``, ``documentation``, ``lint``, ``import_circles``, ``dead_code``.
    """
    return {
        "packages": package_rules(),
        "long_functions": long_functions(),
        "documentation": documented_parameters(),
        "lint": lint_findings(),
        "import_circles": import_circles(),
        "dead_code": dead_code(),
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
    pk = f["packages"]
    broken = len(pk["upward"]) + len(pk["private"]) + len(pk["prefix_families"]) + (len(pk["top_level"]) > TOP_LEVEL_MODULES_MAX)
    lines = [f"packages: {len(PACKAGES)} in import order, {broken} rules broken"]
    lines += [f"  {name.removeprefix('xlplan.')} -> {', '.join(x.removeprefix('xlplan.') for x in pk['edges'][name]) or '(none)'}"
              for name, _ in PACKAGES]
    lines += [f"  imports a later package: {u}" for u in pk["upward"]]
    lines += [f"  private name from another package: {u}" for u in pk["private"]]
    lines.append(f"  top level: {len(pk['top_level'])} modules (at most {TOP_LEVEL_MODULES_MAX}): {', '.join(pk['top_level'])}")
    lines += [f"  three or more top-level modules share the prefix {x}_" for x in pk["prefix_families"]]

    lines.append(f"functions over {FUNCTION_LINES_LIMIT} lines: {len(f['long_functions'])}")
    lines += [
        f"  {g['path']}:{g['line']} {g['name']} {g['lines']} lines" + (" (stated why)" if g["stated_why"] else "")
        for g in f["long_functions"]
    ]

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
    dc = f["dead_code"]
    lines.append("dead code (vulture, [tool.vulture] in pyproject.toml): "
                 + (f"no figure, {dc['error']}" if dc["error"] else str(len(dc["findings"]))))
    lines += [f"  {x}" for x in dc["findings"]]
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
