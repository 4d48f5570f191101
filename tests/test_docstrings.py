"""Every public engine function is documented the way the style guide asks, and stays so.

The rule, checked with numpydoc's own parser (the way python-control's ``docstrings_test.py`` checks its package):

- the engine is ``xlplan/`` outside ``xlplan/io/`` and ``xlplan/cli/`` (those read, write and print; they are
  thin and documented as commands);
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

import importlib.util
import inspect
import re
from pathlib import Path

import pytest
from numpydoc.docscrape import FunctionDoc

SKIPPED_PACKAGES = ("xlplan.io", "xlplan.cli")
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
    assert "xlplan.concurrency.littles_law" in names
    assert "xlplan.memory.kv_bytes_per_token" in names
    assert not any(n.startswith(SKIPPED_PACKAGES) for n in names)
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
