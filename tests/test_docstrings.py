"""Every public engine function is documented the way the style guide asks, and stays so.

The rule, checked with numpydoc's own parser (the way python-control's ``docstrings_test.py`` checks its package):

- the engine is ``xlplan/`` outside ``xlplan/io/``, ``xlplan/cli/`` and the workbook's layout in ``xlplan/excel/``
  (those read, write and print; they are thin and documented as commands), as ``scripts/health.py``'s
  ``is_engine_module`` says;
- a public function is a module-level function or a method of a class, defined in that module, whose name does
  not start with ``_``;
- its docstring has a numpydoc **Parameters** section naming every parameter of its signature (``self`` and
  ``cls`` aside) and a **Returns** (or **Yields**) section;
- every parameter or return whose type is a number or an array says its unit in brackets in its description:
  ``[requests/s]``, ``[GiB]``, ``[tokens]``, ``[1]`` for a pure number, ``[fraction]`` for a share;
- a docstring that cites a source (the runbook, a paper, an engine's documentation, a queueing law) has a
  **References** section that names it.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import FunctionDoc

NUMERIC_TYPE = re.compile(r"\b(float|int|array|ndarray|number)s?\b", re.IGNORECASE)
UNIT = re.compile(r"\[[^\[\]]+\]")
CITES_A_SOURCE = re.compile(r"\bRunbook\b|measurements-public|\bet al\.|\bLittle\b|\bErlang\b|Pollaczek|Kingman|Allen.Cunneen", re.IGNORECASE)


def _health():
    """scripts/health.py, which holds the one walk over the engine's public functions (its figures count the same)."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "health.py"
    spec = importlib.util.spec_from_file_location("xlplan_health", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def public_functions() -> list[tuple[str, object]]:
    """(qualified name, function) for every public function and method of the engine; every engine module imports."""
    found, unimportable = _health().public_engine_functions()
    assert unimportable == []
    return found


FUNCTIONS = public_functions()


def test_the_engine_has_public_functions_to_check():
    # the walk found the engine: the pure-function modules the style guide names are among them
    names = {n for n, _ in FUNCTIONS}
    assert "xlplan.serving.concurrency.littles_law" in names
    assert "xlplan.serving.memory.kv_bytes_per_token" in names
    assert not any(n.startswith(("xlplan.io.", "xlplan.cli.", "xlplan.excel.tabs.")) for n in names)
    assert any(n.startswith("xlplan.excel.cellwise.") for n in names)  # the Excel functions' cell side is engine
    assert len(FUNCTIONS) > 200


def problems_of(fn) -> list[str]:
    """What a function's docstring lacks under the rule above (empty when it is complete)."""
    if not inspect.getdoc(fn):
        return ["no docstring"]
    doc = FunctionDoc(fn)
    out = []
    params = [p.name for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
    documented = {}
    for p in doc["Parameters"]:
        for n in p.name.split(","):
            documented[n.strip().lstrip("*")] = p
    missing = [p for p in params if p not in documented]
    if missing:
        out.append(f"Parameters lacks {', '.join(missing)}")
    returns = list(doc["Returns"]) + list(doc["Yields"])
    if not returns:
        out.append("no Returns section")
    for kind, entries in (("parameter", [documented[p] for p in params if p in documented]), ("return", returns)):
        for e in entries:
            if NUMERIC_TYPE.search(e.type or "") and not UNIT.search(" ".join(e.desc)):
                out.append(f"{kind} {e.name or e.type!r} ({e.type}) gives no unit in brackets")
    text = inspect.getdoc(fn)
    if CITES_A_SOURCE.search(text) and not doc["References"]:
        out.append("cites a source but has no References section")
    return out


@pytest.mark.parametrize(("name", "fn"), FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_public_engine_function_is_documented(name, fn):
    assert problems_of(fn) == []


def test_the_rule_catches_what_it_claims():
    # the checker itself: a function with an undocumented parameter, no Returns, a float without a unit and an
    # uncited runbook figure has each named; a complete one has none
    def bad(rate_rps, time_s):
        """In flight, as the runbook says.

        Parameters
        ----------
        rate_rps : float
            Peak arrival rate.
        """

    def good(rate_rps, time_s):
        """In flight.

        Parameters
        ----------
        rate_rps : float
            Peak arrival rate. [requests/s]
        time_s : float
            Time in system. [s]

        Returns
        -------
        float
            Requests in flight. [requests]
        """

    found = problems_of(bad)
    assert "Parameters lacks time_s" in found
    assert "no Returns section" in found
    assert any("rate_rps" in p and "unit" in p for p in found)
    assert "cites a source but has no References section" in found
    assert problems_of(good) == []


# --- cross-references ------------------------------------------------------------------------------------------
# Every Sphinx role in the engine's and the Excel functions' docstrings and comments names something that exists:
# a dotted xlplan name imports and resolves attribute by attribute; a bare name resolves in its own module (a class's
# field or method counts); a name outside xlplan (a builtin, another library's) is not ours to check.

ROLE = re.compile(r":(?:func|class|data|mod|meth|attr|exc|obj|const):`~?([\w.]+)`")
ROOT = Path(__file__).resolve().parents[1]


def _resolves(target: str, here: str) -> bool:
    """Whether a cross-reference's target exists, from the module ``here`` for a bare name."""
    parts = target.split(".")
    if parts[0] in ("xlplan", "udfs"):
        for k in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:k]))
            except ImportError:
                continue
            return _walk(obj, parts[k:])
        return False
    module = importlib.import_module(here)
    if hasattr(module, parts[0]):
        return _walk(module, parts)
    if hasattr(builtins, parts[0]):
        return True
    return parts[0] not in ("xlplan", "udfs") and importlib.util.find_spec(parts[0]) is not None  # another library's


def _walk(obj, attrs: list[str]) -> bool:
    """Whether ``obj.a.b...`` exists; a last name that is a field of a dataclass or pydantic model counts."""
    for i, a in enumerate(attrs):
        if hasattr(obj, a):
            obj = getattr(obj, a)
            continue
        fields = set(getattr(obj, "model_fields", {})) | set(getattr(obj, "__dataclass_fields__", {}))
        return i == len(attrs) - 1 and a in fields
    return True


def _references() -> list[tuple[str, str]]:
    """(module, target) for every role in the engine's and the Excel functions' sources."""
    found = []
    for path in sorted([*(ROOT / "xlplan").rglob("*.py"), *(ROOT / "udfs").rglob("*.py")]):
        rel = path.relative_to(ROOT).with_suffix("")
        here = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        found += [(here, m[1]) for m in ROLE.finditer(path.read_text(encoding="utf-8"))]
    return found


def test_docstring_cross_references_resolve():
    refs = _references()
    assert len(refs) > 500  # the engine cross-references its parts
    assert [f"{here}: {target}" for here, target in refs if not _resolves(target, here)] == []


def test_the_cross_reference_check_refuses_a_stale_name():
    # the pattern it exists to catch: a name left behind by a move, dotted or bare
    assert _resolves("xlplan.serving.step.step_time_s", "xlplan.words")
    assert not _resolves("xlplan.serving.step.no_such_function", "xlplan.words")
    assert not _resolves("xlplan.sim_run.simulate", "xlplan.words")
    assert not _resolves("no_such_helper", "xlplan.words")
    assert _resolves("ValueError", "xlplan.words") and _resolves("count", "xlplan.words")
