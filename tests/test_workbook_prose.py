"""A workbook that follows its inputs: no text quotes another plan's figures, failed checks and stale breakpoints are
flagged on every tab, and a user's own what-if rows are evaluated by `xlplan check`.

The reference plan is the runbook's worked example (xlplan/data/reference.yaml); its figures, as `xlplan plan` prints
them, are the ones a workbook built for another plan must not quote: 40 req/s x 15 s = 600 in flight, 600 x 0.281 GiB
= 168.5 GiB over a 53.73 GiB budget (3.14 GPUs), 1,369 + 193 TFLOP/s over 395.6 per GPU (3.95 GPUs), 4 + 1 = 5 GPUs,
5 x $3 x 730 h = $10,950 a month (~$11k), 96.7 billion tokens, $0.113 (~$0.11) per M, the API's $30,485 (~$30k).
"""

from __future__ import annotations

import re

import openpyxl
import pytest
from planhelp import replan
from workbookhelp import build, recalc_and_compare, require_libreoffice

from xlplan.cli import main
from xlplan.decide.planner import plan as run_plan
from xlplan.excel.common import SIX_TABS
from xlplan.excel.tabs.sensitivities import BLANK_WHATIF_ROWS, STALE, whatif_rows
from xlplan.excel.writer import workbook_bytes
from xlplan.plan.scenario import resolve
from xlplan.plan.whatif import sensitivities
from xlplan.plan.whatif_table import STANDARD_WHAT_IFS, WhatIf

NEUTRAL = {  # the plan's own free text (name, sources, API offer) says what its author wrote: kept free of figures here
    "name": "Another plan",
    "sources": {"forecast": "product forecast", "promise": "SLO document", "pricing": "price list", "model": "platform team"},
}


def _neutral(plan):
    api = plan.api.model_dump() | {"provider": "a managed API", "source": "its price page"} if plan.api else None
    return replan(plan, **NEUTRAL, api=api)


def _figures(plan) -> dict[str, list[str]]:
    """The distinctive figures of a plan, each as the note and the old fixed text wrote them (`xlplan plan`)."""
    r = run_plan(plan)
    rate, c = r.inputs.peak_rps, r.concurrency
    return {
        "peak rate": [f"{rate:g} req/s", f"{rate:g} x"],
        "in flight": [f"{c:,.0f} in flight", f"x {r.time_in_system_s:g} = {c:,.0f}", f"{c:,.0f} x"],
        "KV in flight": [f"{r.memory.kv_gib_total:,.1f}"],
        "KV per conversation": [f"{r.memory.kv_gib_per_conversation:.3f}"],
        "KV budget": [f"{r.memory.kv_budget_gib_per_gpu:.2f}"],
        "memory path": [f"= {r.memory.gpus_exact:.2f}"],
        "compute path": [f"= {r.compute.gpus_exact:.2f}"],
        "prefill": [f"{r.compute.prefill_tflops:,.0f}"],
        "decode": [f"{r.compute.decode_tflops:,.0f}"],
        "demand": [f"{r.compute.demand_tflops:,.0f}"],
        "per GPU": [f"{r.compute.tflops_per_gpu:,.1f}"],
        "fleet": [f"{r.fleet.load} + {plan.policy.redundancy} = {r.fleet.with_redundancy}",
                  f"({r.fleet.load} + {plan.policy.redundancy} spare)", f"the runbook: {r.fleet.load}",
                  f"the runbook's {r.fleet.load}"],
        "monthly": [f"{r.cost.monthly_usd:,.0f}", f"${r.cost.monthly_usd / 1000:.0f}k"],
        "tokens": [f"{r.cost.tokens_per_month / 1e9:.1f} billion", f"{r.cost.tokens_per_month / 1e6:,.0f} M"],
        "per M": [f"${r.cost.usd_per_mtok:.3f}", f"${r.cost.usd_per_mtok:.2f}"],
        "API": [f"{r.cost.api_monthly_usd:,.0f}", f"${r.cost.api_monthly_usd / 1000:.0f}k"] if r.cost.api_monthly_usd else [],
        "prompt": [f"{r.inputs.prompt_tokens.p50:,.0f} tokens"],
    }


def _quotes(text: str, figure: str) -> bool:
    """Whether ``text`` quotes ``figure`` as a whole number (600 is not in 1,600 or 600.5)."""
    return re.search(r"(?<![\d.,])" + re.escape(figure) + r"(?![\d]|[.,]\d)", text) is not None


def _texts(book):
    """(sheet, cell, text) of every text cell on the six tabs: fixed strings and the cached values of string formulas,
    leaving out the plan's own free text typed into input cells."""
    for sheet in book.sheets:
        if sheet.title not in SIX_TABS:
            continue
        for coord, c in sheet.cells.items():
            text = c.cached if c.formula else (c.value if c.kind != "input" else None)
            if isinstance(text, str) and text:
                yield sheet.title, coord, text


PLANS = {
    # the forecast doubles: every quoted figure downstream of the rate moves
    "peak_80": {"forecast": {"peak_rps": 80}},
    # another GPU at its catalog price (H200, $3.59 in xlplan/catalog): budget, compute and the bill move
    "h200_catalog_price": {"hardware": {"gpu": "h200", "usd_per_gpu_hour": None}},
    # another model: weights, cache, FLOPs and the fleet move
    "llama_70b": {"model": {"name": "llama-3.1-70b", "weights_dtype": "fp8", "kv_dtype": "fp8"}},
    # prompts twice as long
    "prompt_4000": {"forecast": {"prompt_tokens": {"p50": 4000, "p95": 4000, "p99": 4000}}},
}


@pytest.fixture(scope="module")
def plans(ref_plan):
    return {k: _neutral(replan(ref_plan, **v)) for k, v in PLANS.items()}


@pytest.mark.slow
def test_the_reference_workbook_quotes_its_own_figures(ref_plan):
    # the prose is built by formula from the plan's own figures: the runbook's example reads as the runbook does
    texts = {t for _, _, t in _texts(build(ref_plan))}
    assert "40 req/s x 15.0 s = 600 in flight" in texts  # Little's Law: 40 x 15 = 600
    assert "5 GPUs x $3/h x 730 h = $10,950" in texts  # the bill: 5 x $3 x 730 = $10,950
    assert "N+k: (4 + 1 spare) replicas x TP 1 = 5" in texts
    assert "600 in flight x 0.281 GiB = 168.5 GiB" in texts
    assert any(t.startswith("peak rate x1.5 (60 req/s)") for t in texts)  # the what-if label, by formula


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PLANS))
def test_no_text_quotes_the_reference_figures(ref_plan, plans, name):
    plan = plans[name]
    ref, own = _figures(ref_plan), _figures(plan)
    forbidden = {(key, f) for key, figs in ref.items() for f in figs if f not in own.get(key, [])}
    found = [f"{title}!{coord}: {key} {figure!r} in {text!r}" for title, coord, text in _texts(build(plan))
             for key, figure in forbidden if _quotes(text, figure)]
    assert found == []


@pytest.mark.slow
def test_the_prose_follows_a_doubled_peak(plans):
    # 80 req/s x 15 s = 1,200 in flight (Little's Law); x 0.281 GiB = 337 GiB of cache; what-if x1.5 is 120 req/s
    texts = {t for _, _, t in _texts(build(plans["peak_80"]))}
    assert "80 req/s x 15.0 s = 1,200 in flight" in texts
    assert "1,200 in flight x 0.281 GiB = 336.9 GiB" in texts
    assert any(t.startswith("peak rate x1.5 (120 req/s)") for t in texts)


@pytest.mark.slow
def test_prose_plans_recalculate_in_both_engines(plans, tmp_path):
    # every TEXT/FIXED line is cached exactly as LibreOffice and the Excel-grammar engine (`formulas`) render it
    require_libreoffice()
    assert recalc_and_compare(plans, tmp_path) == []


# ---------------------------------------------------------------------------------------------- edited workbooks


def _typed_without_recalculation(data: bytes, sheet_number: int, values: dict[str, float]) -> bytes:
    """The workbook with numbers typed into cells and every other cell and cached value left as it was (as Excel's
    'type, save without recalculating' would leave it; openpyxl would drop every cached value)."""
    import io
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            text = src.read(info.filename)
            if info.filename == f"xl/worksheets/sheet{sheet_number}.xml":
                xml = text.decode()
                for coord, v in values.items():
                    xml, n = re.subn(rf'<c r="{coord}"([^>]*?)\s*/>', rf'<c r="{coord}"\1><v>{v}</v></c>', xml)
                    assert n == 1, coord
                text = xml.encode()
            dst.writestr(info, text)
    return out.getvalue()


def _cell(wb, name: str):
    (title, ref), = wb.defined_names[name].destinations
    return wb[title][ref.replace("$", "")]


@pytest.fixture(scope="module")
def edited(ref_plan, tmp_path_factory):
    """The reference workbook as built, and edited three ways (each saved by openpyxl, as a user's tool would), all
    recalculated by LibreOffice in one run: {stem: (path before, path recalculated)}."""
    require_libreoffice()
    from xlplan.io.libreoffice import recalculate

    folder = tmp_path_factory.mktemp("edited")
    book = build(ref_plan)
    first, _ = whatif_rows(book)
    blank_row = first + len(STANDARD_WHAT_IFS)  # the first of the blank rows
    edits = {
        "as_built": {},
        "p95_8000": {"PromptP95": 8000},  # p99 stays 2,000: prompt lengths out of order
        "peak_55": {"PeakRate": 55},
        "itl_50": {"ITLInput": 50},  # 50 ms typed as 50 s: a unit slip the plausibility check catches
        "whatif_filled": {("6 Sensitivities", f"B{blank_row}"): 3, ("6 Sensitivities", f"H{blank_row}"): 0.6},
    }
    paths = {}
    for stem, changes in edits.items():
        path = folder / f"{stem}.xlsx"
        path.write_bytes(workbook_bytes(book))
        wb = openpyxl.load_workbook(path)
        for where, value in changes.items():
            cell = wb[where[0]][where[1]] if isinstance(where, tuple) else _cell(wb, where)
            cell.value = value
        wb.save(path)
        paths[stem] = path
    outs = recalculate(list(paths.values()), folder / "recalculated")
    files = {stem: (path, out) for (stem, path), out in zip(paths.items(), outs)}
    typed = folder / "whatif_typed.xlsx"
    sheet_number = [sh.title for sh in book.sheets].index("6 Sensitivities") + 1  # the writer numbers them in order
    typed.write_bytes(_typed_without_recalculation(workbook_bytes(book), sheet_number,
                                                   {f"B{blank_row}": 3, f"H{blank_row}": 0.6}))
    files["whatif_typed"] = (typed, None)
    return files, blank_row


def test_banner_on_every_tab_when_a_check_fails(edited):
    # support.CHECKS: PromptOrdered needs p50 <= p95 <= p99; p95 8,000 over p99 2,000 fails it, and the banner
    # (support.FAILURES) names it on each of the six tabs; the reference plan passes every check: no banner
    files, _ = edited
    bad = openpyxl.load_workbook(files["p95_8000"][1], data_only=True)
    good = openpyxl.load_workbook(files["as_built"][1], data_only=True)
    assert _cell(bad, "AllChecksPass").value is False
    for title in SIX_TABS:
        text = bad[title]["A3"].value
        assert text.startswith("CHECK FAILED on 1 Inputs: prompt lengths out of order"), (title, text)
        assert text.endswith(" — these figures are not a plan")
        assert good[title]["A3"].value in (None, "")
        assert bad[title]["A3"].font.color.rgb.endswith("C00000") and bad[title]["A3"].font.bold


def test_an_implausible_input_fails_its_check_in_both_engines(edited):
    # xlplan.schema.plausibility: promise.itl_s is 0.001 to 1 s per token. 50 typed where 0.05 was meant fails the Checks
    # row InputsPlausible and the banner names it, in LibreOffice and in the Excel-grammar engine alike; the
    # workbook as built passes it in both
    from excelgrammar import value
    from workbookhelp import evaluate_many

    files, _ = edited
    lo_bad = openpyxl.load_workbook(files["itl_50"][1], data_only=True)
    lo_good = openpyxl.load_workbook(files["as_built"][1], data_only=True)
    assert _cell(lo_bad, "CheckInputsPlausible").value is False and _cell(lo_good, "CheckInputsPlausible").value is True
    assert "an input outside its plausible range" in lo_bad["1 Inputs"]["A3"].value
    # the Excel-grammar engine on the edited file (the built one's every formula cell, this check's among them, is held
    # to its cached value by test_workbook_recalc's committed-template test)
    where = _cell(lo_bad, "CheckInputsPlausible")
    grammar_bad = evaluate_many([files["itl_50"][0]])[0]
    assert value(grammar_bad, where.parent.title, where.coordinate) is False


def test_every_ranged_input_cell_carries_its_plausible_range(ref_plan):
    # the data validation Excel shows on entry is the range the plan file is held to (xlplan.schema.plausibility.RANGES),
    # e.g. the inter-token target between 0.001 and 1 s per token
    from xlplan.excel.inputs import all_inputs
    from xlplan.schema import plausibility

    book = build(ref_plan)
    sheet = book.get("1 Inputs")
    by_name = {cell.name: cell for cell in sheet.cells.values() if getattr(cell, "name", None)}
    ranged = [spec for spec in all_inputs() if ".".join(spec.path) in plausibility.RANGE_OF]
    assert len(ranged) >= 25
    for spec in ranged:
        r, v = plausibility.RANGE_OF[".".join(spec.path)], by_name[spec.name].validation
        assert (v.type, v.operator, float(v.formula1), float(v.formula2)) == ("decimal", "between", r.low, r.high), spec.name
    assert by_name["ITLInput"].validation.formula2 == "1" and by_name["ITLInput"].validation.formula1 == "0.001"


@pytest.mark.slow
def test_breakpoints_flag_themselves_stale_when_their_input_changes(ref_plan, edited):
    # the breakpoints are searched at 40 req/s when the workbook is built ("Searched at"); "Now" follows the input
    # (55 after the edit), so the two peak-rate rows say STALE; so do the others, each searched at 40 req/s too (the
    # prompt at which the fleet grows moves with the rate: each is a re-plan of the whole plan), and none as built
    files, _ = edited
    sheet = build(ref_plan).get("6 Sensitivities")
    rows = {int(c[1:]): cell.value for c, cell in sheet.cells.items() if c.startswith("A") and cell.kind == "static"}
    # two tables, the runbook's method's breakpoints and the Answer's closed form's, each of the same five inputs moved
    assert sorted(rows.values()) == sorted(2 * ["peak_rps", "prompt_p95", "output_p50", "itl_s", "itl_s"])
    ws = openpyxl.load_workbook(files["peak_55"][1], data_only=True)["6 Sensitivities"]
    fresh = openpyxl.load_workbook(files["as_built"][1], data_only=True)["6 Sensitivities"]
    for r, variable in rows.items():
        assert ws[f"D{r}"].value == (55 if variable == "peak_rps" else ws[f"E{r}"].value)
        assert ws[f"J{r}"].value == STALE, variable
        assert fresh[f"J{r}"].value is None


@pytest.mark.slow
def test_five_blank_what_if_rows_unlocked_and_printed(ref_plan, tmp_path):
    # tab_sensitivities.BLANK_WHATIF_ROWS rows after the ten standard what-ifs: inputs empty and unlocked, every
    # result column a formula that shows nothing, all inside the print area
    assert BLANK_WHATIF_ROWS == 5
    book = build(ref_plan)
    first, last = whatif_rows(book)
    blank = range(first + len(STANDARD_WHAT_IFS), last + 1)
    assert len(blank) == 5
    sheet = book.get("6 Sensitivities")
    path = tmp_path / "t.xlsx"
    path.write_bytes(workbook_bytes(book))
    ws = openpyxl.load_workbook(path)["6 Sensitivities"]
    area = re.search(r"\$A\$1:\$O\$(\d+)", str(ws.print_area))
    assert area and int(area.group(1)) >= last
    for r in blank:
        for col in "BCDEFGH":
            assert sheet.cells[f"{col}{r}"].kind == "input" and sheet.cells[f"{col}{r}"].value is None
            assert ws[f"{col}{r}"].protection.locked is False
        for col in "AIJKLMNO":
            cell = sheet.cells[f"{col}{r}"]
            assert cell.formula and cell.cached == "", (col, r)
            assert ws[f"{col}{r}"].protection.locked is True


@pytest.mark.slow
def test_check_evaluates_a_filled_in_what_if_row(ref_plan, edited, capsys):
    # a user fills the first blank row: peak x3, 60% average utilisation; LibreOffice recalculates it. The engine's
    # re-plan of that what-if (xlplan.plan.whatif.sensitivities) is what the row must show, and `xlplan check` holds it to it.
    import json

    files, r = edited
    expected = sensitivities(ref_plan, resolve(ref_plan), (WhatIf(rate_x=3.0, average_utilisation=0.6),))[0]
    ws = openpyxl.load_workbook(files["whatif_filled"][1], data_only=True)["6 Sensitivities"]
    assert ws[f"A{r}"].value == "peak rate x3 (120 req/s); average utilisation 60%"
    assert (ws[f"I{r}"].value, ws[f"J{r}"].value, ws[f"K{r}"].value, ws[f"L{r}"].value) == (
        expected.load, expected.fleet, expected.purchased, expected.binding)
    assert ws[f"M{r}"].value == pytest.approx(expected.monthly_usd) and ws[f"N{r}"].value == pytest.approx(expected.usd_per_mtok)
    # recalculated: the row agrees with the engine's re-plan, so check has nothing to say
    assert main(["check", str(files["whatif_filled"][1]), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    # filled in but not recalculated: the row still shows nothing, and check gives the engine's figures for it
    assert main(["check", str(files["whatif_typed"][0]), "--json"]) == 1
    findings = {f["where"]: f for f in json.loads(capsys.readouterr().out)}
    assert findings[f"'6 Sensitivities'!K{r}"]["expected"].startswith(str(expected.purchased))
    assert findings[f"'6 Sensitivities'!A{r}"]["expected"].startswith("'peak rate x3 (120 req/s)")
    assert all(w.startswith("'6 Sensitivities'!") and w.endswith(str(r)) for w in findings)
