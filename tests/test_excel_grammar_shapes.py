"""The Excel-grammar engine's shortcut is sound: a workbook evaluated on another workbook's compiled formulas, with its
own constants set, gives exactly what compiling its own file gives, on every formula cell.

Why it matters: every workbook test evaluates through the shortcut (tests/excelgrammar.py), compiling each workbook
shape once per test process instead of once per plan. If setting constants on a compiled model missed a cell, a
range or a blank, the engines' agreement would be checked against the wrong inputs; this test would then differ.
"""

from __future__ import annotations

import math

import pytest
from excelgrammar import _SHAPES, _read_file, evaluate, evaluate_fresh
from planhelp import replan

from xlplan.io.workbook.layout import build
from xlplan.io.workbook.writer import workbook_bytes

pytestmark = pytest.mark.slow  # two workbook compilations by the Excel-grammar engine


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def test_a_workbook_on_another_plans_compiled_formulas_equals_its_own_compilation(ref_plan, tmp_path):
    # two plans that differ in every kind of input: model family (MoE), GPU, dtypes, rate, lengths, promise, policy
    other = replan(ref_plan, model={"name": "qwen3-30b-a3b", "weights_dtype": "fp8", "kv_dtype": "fp8"},
                   hardware={"gpu": "h200", "usd_per_gpu_hour": 4.1}, promise={"ttft_s": 2.0, "itl_s": 0.03},
                   forecast={"peak_rps": 13, "prompt_tokens": {"p50": 900, "p95": 5000}, "average_utilisation": 0.55},
                   policy={"redundancy": 2, "memory_convention": "worst_case"})
    first, second = tmp_path / "reference.xlsx", tmp_path / "other.xlsx"
    books = {first: build(ref_plan), second: build(other)}
    for path, book in books.items():
        path.write_bytes(workbook_bytes(book, caches=False))
    assert _read_file(first)[0] == _read_file(second)[0], "the two plans' workbooks should share one shape"
    evaluate(first)  # compiles the shape
    shortcut = evaluate(second)  # the second plan on the first plan's compiled formulas
    assert sum(1 for k in _SHAPES if k[0] == _read_file(first)[0]) == 1
    fresh = evaluate_fresh(second)
    cells = [(t.upper(), c) for t, c, _ in books[second].formula_cells()]
    differ = [(cell, shortcut.get(cell), fresh.get(cell)) for cell in cells if not _same(shortcut.get(cell), fresh.get(cell))]
    assert differ == []
    # and the plans do differ where the inputs reach: the shortcut did not just return the first plan's values
    base = evaluate(first)
    assert sum(1 for cell in cells if not _same(base.get(cell), shortcut.get(cell))) > 200


def test_a_workbook_of_a_new_shape_compiled_from_memoised_formulas_equals_its_own_compilation(ref_plan, tmp_path):
    # a plan whose workbook has other formulas (attention FLOPs in decode drop a cross-check; another model changes the
    # Options rows): compiled with the formulas it shares with the reference's taken from the memo, it must evaluate
    # exactly as a compilation of its own file that shares nothing
    other = replan(ref_plan, model={"name": "gemma-3-27b"}, policy={"decode_attention_flops": True, "tp": 2},
                   forecast={"peak_rps": 9, "prompt_tokens": {"p50": 3000, "p95": 12000}})
    first, second = tmp_path / "reference.xlsx", tmp_path / "other.xlsx"
    books = {first: build(ref_plan), second: build(other)}
    for path, book in books.items():
        path.write_bytes(workbook_bytes(book, caches=False))
    assert _read_file(first)[0] != _read_file(second)[0], "the second plan's workbook should have a shape of its own"
    evaluate(first)
    memoised = evaluate(second)
    fresh = evaluate_fresh(second)
    cells = [(t.upper(), c) for t, c, _ in books[second].formula_cells()]
    assert [(cell, memoised.get(cell), fresh.get(cell)) for cell in cells if not _same(memoised.get(cell), fresh.get(cell))] == []
