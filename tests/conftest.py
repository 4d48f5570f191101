"""Session fixtures every test shares (the reference plan and its result), the xlwings settings set before xlwings is
imported, and the markers of the slow tests.

A test that launches LibreOffice (it, or a fixture it requests, calls ``require_libreoffice``) is marked
``libreoffice`` here, and every ``libreoffice`` test is also ``slow``, so that ``pytest -q -m "not slow"`` is the fast set. The slow
tests are dealt alternately to the two halves of the collection that ``--dist worksteal`` (pyproject.toml) hands the two
workers, heaviest first, each half then filled with quick tests: both cores start on long tests and end on quick ones,
which a worker that runs out steals from the other's queue (4 min 55 s -> 4 min 38 s for the same 538 s of work).
"""

import inspect
import os

# The Excel functions are registered the way xlwings Server and xlwings Lite register them (Office.js), so the
# tests can read their metadata and call them through xlwings' own dispatch. xlwings reads these when imported.
os.environ["XLWINGS_ON_SERVER"] = "true"
os.environ["XLWINGS_LICENSE_KEY"] = "noncommercial"  # xlwings PRO's free licence for noncommercial use

import pytest

from xlplan.decide.planner import plan
from xlplan.io.planfile import reference_plan


@pytest.fixture(scope="session")
def ref_plan():
    """The built-in reference plan: the runbook's worked example."""
    return reference_plan()


@pytest.fixture(scope="session")
def ref(ref_plan):
    """The reference plan's result."""
    return plan(ref_plan)


@pytest.fixture(scope="session")
def matrix_results():
    """Name -> (plan, result) for the equality matrix's plans (tests/matrix_plans.py), each planned once as
    `xlplan plan` plans it: verified in simulation where the default simulation is affordable."""
    from matrix_plans import matrix_plans

    return {name: (p, plan(p, verify="auto")) for name, p in matrix_plans().items()}


def pytest_configure(config):
    """One folder for the whole run, shared by its workers (they inherit the environment): what LibreOffice and the
    Excel-grammar engine made of each distinct workbook, so that two tests evaluating the same bytes pay once
    (``tests/workbookhelp.py``). Made by the controlling process only, removed when it ends."""
    if hasattr(config, "workerinput") or os.environ.get("XLPLAN_TEST_SHARED"):
        return
    import tempfile

    os.environ["XLPLAN_TEST_SHARED"] = config._xlplan_shared = tempfile.mkdtemp(prefix="xlplan-tests-")


def pytest_unconfigure(config):
    shared = getattr(config, "_xlplan_shared", None)
    if shared:
        import shutil

        shutil.rmtree(shared, ignore_errors=True)
        os.environ.pop("XLPLAN_TEST_SHARED", None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        fn = getattr(item, "function", None)
        if fn is not None and "libreoffice" not in item.keywords:
            # the test itself, or a fixture it requests, launches LibreOffice
            fixtures = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
            funcs = [fn, *(d.func for defs in fixtures.values() for d in defs)]
            if any("require_libreoffice(" in _source(f) for f in funcs):
                item.add_marker(pytest.mark.libreoffice)
        if item.get_closest_marker("libreoffice"):
            item.add_marker(pytest.mark.slow)
    # The slow tests first, the files whose tests take minutes first of all (a stable sort keeps every other order).
    # With `--dist worksteal` a worker that runs out takes tests from the other's queue, so quick tests queued behind a
    # long one do not wait for it.
    # A file in KEEP_TOGETHER moves as one block (its module fixture holds state that may be set up only once).
    together = {item.path.name for item in items if getattr(item, "path", None) and item.path.name in KEEP_TOGETHER
                and item.get_closest_marker("slow")}

    def order(item) -> tuple[bool, int]:
        name = item.path.name if hasattr(item, "path") else ""
        heavy = HEAVIEST_FIRST.index(name) if name in HEAVIEST_FIRST else len(HEAVIEST_FIRST)
        return item.get_closest_marker("slow") is None and name not in together, heavy

    items.sort(key=order)
    _both_halves_start_heavy(config, items)


def _both_halves_start_heavy(config, items) -> None:
    """Under ``--dist worksteal`` on two workers, xdist hands the first half of the collection to one worker and the
    second half to the other, and a worker that runs out steals from the *end* of the other's queue. With every slow
    test at the front, one worker got them all and the other stole them only at the end, thirty seconds at a time.
    Here the slow tests (heaviest first, a KEEP_TOGETHER file as one block) are dealt alternately to the two halves,
    each half then filled with quick ones: both workers start heavy and end on quick tests that steal finely."""
    workers = getattr(config, "workerinput", {}).get("workercount")  # collection runs in each worker, which knows it
    if workers != 2:  # (any other order is as valid; this one only balances two workers)
        return
    slow, fast, blocks = [], [], {}
    for item in items:
        name = item.path.name if hasattr(item, "path") else ""
        if name in KEEP_TOGETHER and item.get_closest_marker("slow"):
            if name not in blocks:
                blocks[name] = []
                slow.append(blocks[name])
            blocks[name].append(item)
        elif item.get_closest_marker("slow"):
            slow.append([item])
        else:
            fast.append(item)
    halves: list[list] = [[], []]
    for unit in slow:  # each unit to the half with fewer slow tests so far: heaviest first, alternately
        min(halves, key=len).extend(unit)
    cut = len(items) // 2 - len(halves[0])  # xdist's first worker takes len // 2 of the collection
    if cut < 0 or cut > len(fast):
        return
    items[:] = halves[0] + fast[:cut] + halves[1] + fast[cut:]


def _source(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


HEAVIEST_FIRST = ["test_workbook_recalc.py", "test_equality_matrix.py", "test_excel_grammar_shapes.py", "test_workbook_prose.py",
                  "test_udf_workbook.py"]
"""Test files whose slow tests run before all others (`pytest --durations` shows which: each takes a minute or more)."""

KEEP_TOGETHER = ["test_silicon_sample.py", "test_udfs_server.py", "test_workbook_stale.py", "test_workbook_money.py", "test_schedule_cash.py", "test_owning.py",
                 "test_review_workbook.py", "test_workbook_edits.py", "test_workbook_locale.py", "test_print.py",
                 "test_workbook_plausibility.py"]
"""Test files whose tests must stay in one block: the xlwings Server fixture configures the server once per process,
before its first import; the others' module fixtures recalculate workbooks in both spreadsheet engines (half a minute),
which split across two workers would each do."""
