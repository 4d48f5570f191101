"""The UDF variant of the workbook (`xlplan workbook --formulas udf`) gives the native workbook's values.

The honest evaluator: LibreOffice recalculates the *native* workbook from its formulas; then every cell of the
UDF variant that calls an xlplan Excel function is evaluated by calling that function (from `udfs.functions`) with
its arguments read from the recalculated workbook — exactly what Excel does with the add-in loaded — and compared
with LibreOffice's value of the same cell to 1e-9.
"""

from __future__ import annotations

import re
import statistics

import openpyxl
import pytest
from planhelp import replan
from workbookhelp import agrees, build, recalculate, require_libreoffice

from udfs import functions as U
from xlplan.cli import main
from xlplan.excel.writer import workbook_bytes

CALL = re.compile(r"^=(?:(MIN|MEDIAN|MAX)\()?([A-Z_]+)\(([^()]*)\)\)?$")
AGGREGATE = {"MIN": min, "MEDIAN": statistics.median, "MAX": max}


GROUPS = ("defaults", "runbook")
"""The equality matrix's plans on the engine's default conventions (vLLM's memory rule, causal attention FLOPs, the
fitted efficiencies), and plans on the runbook's conventions with one changed each: two tests, so two workers share
them."""


def _plans(ref_plan, group="runbook"):
    from matrix_plans import matrix_plans

    if group == "defaults":
        return {k: v for k, v in matrix_plans().items() if k != "reference"}
    return {
        "reference": ref_plan,
        "moe_fp8_tp2": replan(ref_plan, model={"name": "qwen3-30b-a3b", "weights_dtype": "fp8", "kv_dtype": "fp8"},
                              forecast={"peak_rps": 25, "prompt_tokens": {"p50": 1200, "p95": 5000}, "output_tokens": {"p50": 250, "p95": 900}},
                              policy={"tp": 2}),
        "mla_h200": replan(ref_plan, model={"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "bf16"},
                           hardware={"gpu": "h200", "usd_per_gpu_hour": 3.6, "ops_usd_per_month": 8000},
                           costs={"mode": "rent_per_node"},
                           forecast={"peak_rps": 6, "prompt_tokens": {"p50": 3000, "p95": 12000, "p99": 20000},
                                     "output_tokens": {"p50": 500, "p95": 1500}}),
        "conventions_no_api": replan(ref_plan, api=None, policy={"memory_convention": "worst_case", "decode_attention_flops": True,
                                                                  "include_ttft_in_time_in_system": True}),
    }


@pytest.mark.slow
@pytest.mark.parametrize("group", GROUPS)
def test_udf_variant_evaluates_to_the_native_values(ref_plan, tmp_path, group):
    require_libreoffice()
    plans = _plans(ref_plan, group)
    natives = {}
    for stem, plan in plans.items():
        f = tmp_path / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(build(plan), caches=False))
        natives[stem] = f
    recalculated = dict(zip(plans, recalculate(list(natives.values()), tmp_path / "lo")))
    problems, evaluated = [], 0
    for stem, plan in plans.items():
        wb = openpyxl.load_workbook(recalculated[stem], data_only=True)

        def name_value(name: str, wb=wb):
            (title, ref), = wb.defined_names[name].destinations
            return wb[title][ref.replace("$", "")].value

        native, variant = build(plan), build(plan, formulas="udf")
        native_cells = {(s.title, c): cell for s in native.sheets for c, cell in s.cells.items()}
        for title, coord, cell in variant.formula_cells():
            if cell.value == native_cells[(title, coord)].value:
                continue
            m = CALL.match(cell.value)
            assert m, f"{stem}: {title}!{coord}: {cell.value}"
            aggregate, fn, args = m.groups()
            result = getattr(U, fn.lower())(*[name_value(a.strip()) for a in args.split(",")])
            if aggregate:
                result = AGGREGATE[aggregate](r[0] for r in result)
            expected = wb[title][coord].value
            evaluated += 1
            if not agrees(result, expected):
                problems.append(f"{stem}: {title}!{coord} {cell.value}: UDF {result!r} vs LibreOffice native {expected!r}")
    assert problems == []
    # every key result went through a UDF: 21 cells for the reference (catalog model, API prices)
    assert evaluated >= 4 * 15


@pytest.mark.slow
def test_udf_variant_cells_and_caches(ref_plan, tmp_path, capsys):
    out = tmp_path / "udf.xlsx"
    assert main(["workbook", "-o", str(out), "--formulas", "udf"]) == 0
    wb = openpyxl.load_workbook(out)
    (title, ref), = wb.defined_names["MemoryGPUs"].destinations
    assert wb[title][ref.replace("$", "")].value == "=MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)"
    values = openpyxl.load_workbook(out, data_only=True)
    assert values[title][ref.replace("$", "")].value == 4  # the engine's value is cached, as in the native workbook
    capsys.readouterr()
    assert main(["check", str(out)]) == 0  # the checker knows the variant's formulas
    assert main(["workbook", "-o", str(tmp_path / "x.xlsx"), "--formulas", "vba"]) == 2


@pytest.mark.slow
def test_inline_model_keeps_native_formulas_where_the_udfs_need_a_catalog_name(ref_plan):
    plan = replan(ref_plan, model={"name": "llama-3.1-8b", "spec": {"num_hidden_layers": 40}})
    book = build(plan, formulas="udf")
    sheet = book.get("3 Constraints")
    formulas = {c.value for c in sheet.cells.values() if c.formula}
    assert "=LITTLES_LAW(PeakRate,TimeInSystem)" in formulas
    assert not any("PREFILL_TFLOPS" in f or "KV_GIB_PER_CONVERSATION" in f for f in formulas)


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["reference"])
def test_native_template_cross_checks_say_not_checked_without_the_add_in(ref_plan, stem, tmp_path):
    # without the add-in (LibreOffice here) every cross-check reads "not checked (no add-in)", never #NAME?
    require_libreoffice()
    f = tmp_path / "n.xlsx"
    f.write_bytes(workbook_bytes(build(ref_plan), caches=False))
    wb = openpyxl.load_workbook(recalculate([f], tmp_path / "lo")[0], data_only=True)
    book = build(ref_plan)
    checks = [(s.title, c) for s in book.sheets for c, cell in s.cells.items() if cell.kind == "crosscheck"]
    assert len(checks) >= 20
    assert {wb[t][c].value for t, c in checks} == {"not checked (no add-in)"}


@pytest.mark.slow
@pytest.mark.parametrize("group", GROUPS)
def test_udf_variant_in_the_excel_grammar_engine_with_the_functions_loaded(ref_plan, tmp_path, group):
    # The second engine evaluates the whole variant, its UDF cells through xlwings' Office.js dispatch (as Excel with
    # the add-in would) and every native cell downstream of them, and agrees with the engine on every formula cell.
    from excelgrammar import value
    from workbookhelp import compare_book, engine_json, evaluate_many

    plans = _plans(ref_plan, group)
    books, files, jsons = {}, [], {}
    for stem, plan in plans.items():
        books[stem] = build(plan, formulas="udf")
        f = tmp_path / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(books[stem], caches=False))
        files.append(f)
        jsons[stem] = engine_json(plan, tmp_path, stem)
    problems, udf_cells = [], 0
    for (stem, book), values in zip(books.items(), evaluate_many(files, udfs=True)):
        problems += compare_book(stem, book, lambda t, c, v=values: value(v, t, c), jsons[stem])
        udf_cells += sum(1 for _, _, cell in book.formula_cells() if CALL.match(cell.value))
    assert problems == []
    assert udf_cells >= 4 * 15
