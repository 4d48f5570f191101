"""The Excel-grammar engine's shortcuts are sound: a workbook evaluated through them gives exactly what compiling its
own file, sharing nothing, gives, on every formula cell.

The shortcuts (tests/excelgrammar.py), which every workbook test goes through:
- a workbook of a shape already compiled in this process (the same formula in every cell, the same names and sheets)
  is evaluated on that compiled model with its own constants set on every constant cell;
- a workbook of a new shape is compiled with the formulas, constants and defined names it shares with earlier
  workbooks taken from a memo, each formula compiled against only the defined names it reads;
- a compiled model is evaluated by replaying the calls schedula made for its first workbook, in the same order;
- each formula cell runs as the straight line of calls its compiled pipe lists, and `formulas`' per-function ufunc
  is built once.
If setting constants missed a cell, a range or a blank, a memoised formula or name carried another workbook's state,
the replay called a function out of order or gave a data node another function's estimate, or a straight line
skipped a filter or an operand, the engines' agreement would be checked against the wrong values; this test would
then differ.
"""

from __future__ import annotations

import math

import pytest
from excelgrammar import _SHAPES, _read_file, evaluate, evaluate_fresh
from planhelp import replan
from workbookhelp import build

from xlplan.excel.writer import workbook_bytes

pytestmark = pytest.mark.slow  # one workbook compiled afresh by the Excel-grammar engine, beside the shortcuts


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def test_workbooks_through_the_shortcuts_equal_their_own_compilation(ref_plan, tmp_path):
    # the reference is compiled first (filling the memo); `new` has a shape of its own (attention FLOPs in decode drop
    # a cross-check, another model changes the Options rows), so it is compiled from memoised formulas; `same` shares
    # new's shape and differs from it in rate, lengths, price and policy, so it is evaluated on new's compiled model
    new = replan(ref_plan, model={"name": "gemma-3-27b"}, policy={"decode_attention_flops": True, "tp": 2},
                 forecast={"peak_rps": 9, "prompt_tokens": {"p50": 3000, "p95": 12000}})
    same = replan(new, hardware={"usd_per_gpu_hour": 4.1},
                  forecast={"peak_rps": 13, "prompt_tokens": {"p50": 900, "p95": 5000}, "average_utilisation": 0.55},
                  policy={"redundancy": 2, "memory_convention": "worst_case"})
    paths = {stem: tmp_path / f"{stem}.xlsx" for stem in ("reference", "new", "same")}
    books = {"reference": build(ref_plan), "new": build(new), "same": build(same)}
    for stem, book in books.items():
        paths[stem].write_bytes(workbook_bytes(book, caches=False))
    shapes = {stem: _read_file(path)[0] for stem, path in paths.items()}
    assert shapes["new"] != shapes["reference"], "`new` should have a shape of its own"
    assert shapes["same"] == shapes["new"], "`same` should share new's shape"
    evaluate(paths["reference"])
    on_new = evaluate(paths["new"])
    shortcut = evaluate(paths["same"])
    # `same` went through the replay, not schedula's own dispatch (which the replay falls back to)
    assert _SHAPES[(shapes["new"], False)].replay.calls, "the replay was not armed for new's shape"
    fresh = evaluate_fresh(paths["same"])
    cells = [(t.upper(), c) for t, c, _ in books["same"].formula_cells()]
    assert [(cell, shortcut.get(cell), fresh.get(cell)) for cell in cells if not _same(shortcut.get(cell), fresh.get(cell))] == []
    # the inputs reach the figures: the shortcut did not hand back the compiled workbook's own values
    assert sum(1 for cell in cells if not _same(on_new.get(cell), shortcut.get(cell))) > 200
