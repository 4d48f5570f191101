"""The workbook without a spreadsheet engine: caches, determinism, round trip, the template, the layout rules."""

from __future__ import annotations

import re
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from planhelp import replan
from pytest import approx
from workbookhelp import NAMED_OUTPUTS, build, workbook_for_plan

from xlplan.cli import main
from xlplan.excel.common import SIX_TABS, SUPPORT_TABS
from xlplan.excel.reader import read_workbook
from xlplan.excel.writer import PAGES_TALL_BOUND
from xlplan.io.planfile import reference_plan

README_NAMES = ("PeakRate", "PromptP50", "PromptP95", "PromptP99", "OutputP50", "OutputP95", "OutputP99", "TTFTTarget",
                "ITLTarget", "AvgUtilisation", "GPUUSDPerHour", "MFU", "Concurrency", "TimeInSystem", "KVPerConversationGiB",
                "KVTotalGiB", "KVBudgetGiB", "MemoryGPUs", "ComputeGPUs", "LatencyGPUs", "Binding", "FleetLoad",
                "FleetWithRedundancy", "FleetPurchased", "MonthlyCostUSD", "TokensPerMonth", "CostPerMTokUSD", "APIMonthlyCostUSD")


@pytest.fixture(scope="module")
def ref_xlsx(tmp_path_factory):
    path = tmp_path_factory.mktemp("wb") / "reference.xlsx"
    assert main(["workbook", "-o", str(path)]) == 0
    return path


def _named(wb, name):
    (title, ref), = wb.defined_names[name].destinations
    return wb[title][ref.replace("$", "")].value


@pytest.mark.slow
def test_six_tabs_in_the_notes_order_then_supporting_sheets(ref_xlsx):
    # the Summary opens on the answer; the six tabs follow in the note's order, then Options and Schedule (issue 14)
    wb = openpyxl.load_workbook(ref_xlsx)
    assert wb.sheetnames == ["Summary", *SIX_TABS, "Options", "Schedule", *SUPPORT_TABS]
    for title in SUPPORT_TABS:  # visible, and each says what it is
        assert wb[title].sheet_state == "visible"
        assert "upporting sheet" in " ".join(str(c.value) for c in wb[title]["A"][:2] if c.value)


def test_cached_values_readable_without_recalculation(ref_xlsx):
    # the runbook's worked example: 600 in flight, 53.73 GiB budget, 4 / 5 / 8 GPUs, $10,950/month, $0.113/M
    wb = openpyxl.load_workbook(ref_xlsx, data_only=True)
    assert _named(wb, "Concurrency") == approx(600)
    assert _named(wb, "KVBudgetGiB") == approx(53.73, abs=0.005)
    assert (_named(wb, "FleetLoad"), _named(wb, "FleetWithRedundancy"), _named(wb, "FleetPurchased")) == (4, 5, 8)
    assert _named(wb, "Binding") == "both"
    assert _named(wb, "MonthlyCostUSD") == approx(10950)
    assert _named(wb, "CostPerMTokUSD") == approx(0.1132, abs=5e-4)
    assert _named(wb, "APIMonthlyCostUSD") == approx(30485, abs=1)
    for name in README_NAMES:
        assert _named(wb, name) is not None, name
    # pandas reads the numbers too: the Fleet tab's three numbers in column B
    fleet = pd.read_excel(ref_xlsx, sheet_name="4 Fleet", header=None)
    values = fleet[1].tolist()
    assert 4 in values and 5 in values and 8 in values
    cost = pd.read_excel(ref_xlsx, sheet_name="5 Cost", header=None)
    assert 10950 in cost[1].tolist()


def test_every_headline_name_is_defined_with_workbook_scope(ref_xlsx):
    wb = openpyxl.load_workbook(ref_xlsx)
    for name in set(README_NAMES) | set(NAMED_OUTPUTS):
        assert name in wb.defined_names, name


@pytest.mark.slow
def test_same_plan_same_bytes(ref_plan):
    assert workbook_for_plan(ref_plan) == workbook_for_plan(reference_plan())


@pytest.mark.slow
def test_same_plan_same_bytes_on_another_day(ref_plan, monkeypatch):
    # A workbook records no clock reading: built "tomorrow" it is the same file (the template's drift check and an
    # audit rebuild depend on it). Every module's `datetime.date.today` is moved a year on.
    import datetime as real

    undated = ref_plan.model_copy(update={"date": None})  # the Summary and the print header fall back on no date
    before = {p.date: workbook_for_plan(p) for p in (ref_plan, undated)}

    class Tomorrow(real.date):
        @classmethod
        def today(cls):
            return real.date(2031, 7, 14)

    monkeypatch.setattr(real, "date", Tomorrow)
    assert real.date.today().year == 2031
    assert {p.date: workbook_for_plan(p) for p in (ref_plan, undated)} == before
    assert not any(b"2031-07-14" in data for data in before.values())


@pytest.mark.slow
def test_committed_template_is_current():
    # CI's drift check: the committed template is exactly what the code builds today
    assert main(["template", "--check"]) == 0


@pytest.mark.slow
def test_round_trip_plan_workbook_plan(ref_plan, tmp_path):
    path = tmp_path / "p.xlsx"
    path.write_bytes(workbook_for_plan(ref_plan))
    assert read_workbook(path).model_dump() == ref_plan.model_dump()


@pytest.mark.slow
@pytest.mark.parametrize("sections", [
    {"promise": {"ttft_s": 2.0, "itl_s": None, "tokens_per_s": 25}, "api": None},
    {"forecast": {"peak_rps": 12.5, "prompt_tokens": {"p50": 900, "p95": 4000}, "output_tokens": {"p50": 120, "p95": 400, "p99": 900},
                  "average_utilisation": 0.3, "prefix_reuse": 0.2},
     "policy": {"tp": 2, "compute_dtype": "fp8", "memory_convention": "worst_case", "redundancy": 2},
     "hardware": {"gpu": "h200", "gpus_per_node": 8, "usd_per_gpu_hour": None, "ops_usd_per_month": 4000},
     "costs": {"mode": "rent_per_node"}},
    {"model": {"name": "deepseek-v3", "weights_dtype": "fp8", "kv_dtype": "fp8"}, "hardware": {"gpu": "h200", "usd_per_gpu_hour": 3.6}},
    {"policy": {"prefill_mfu": 0.5, "decode_mfu": 0.3, "calibration": {"source": "vllm-bench.json (3 runs)", "runs": 3,
                "prefill_mfu_range": [0.45, 0.55], "decode_mfu_range": [0.25, 0.35], "bandwidth_efficiency_range": [0.55, 0.65]}}},
    {"policy": {"engine": "sglang", "engine_version": "0.4.3.post2", "redundancy": 1}},  # a stated release survives the sheet
])
def test_round_trip_variants(ref_plan, tmp_path, sections):
    plan = replan(ref_plan, **sections)
    path = tmp_path / "p.xlsx"
    path.write_bytes(workbook_for_plan(plan))
    assert read_workbook(path).model_dump() == plan.model_dump()


@pytest.mark.slow
def test_inline_model_and_gpu_round_trip_to_the_same_specs(ref_plan, tmp_path):
    plan = replan(ref_plan, model={"name": "llama-3.1-8b", "spec": {"num_hidden_layers": 40}},
                  hardware={"gpu": {"name": "h100-sxm", "memory_gib": 70.0}, "usd_per_gpu_hour": 2.0})
    path = tmp_path / "p.xlsx"
    path.write_bytes(workbook_for_plan(plan))
    back = read_workbook(path)
    # an inline model comes back as its full spec (the workbook's Models row), so the specs are equal
    assert back.model.resolve() == plan.model.resolve()
    assert back.hardware.resolve() == plan.hardware.resolve()
    from xlplan.decide.planner import plan as run
    assert run(back).model_dump() == run(plan).model_dump()


@pytest.mark.slow
def test_plan_text_starting_with_formula_characters_stays_text(ref_plan, tmp_path):
    plan = replan(ref_plan, name="=HYPERLINK(\"http://evil\",\"x\")", owners={"forecast": "+Finance", "promise": "-ops", "model": "@team"},
                  sources={"forecast": "=1+1"})
    path = tmp_path / "p.xlsx"
    path.write_bytes(workbook_for_plan(plan))
    wb = openpyxl.load_workbook(path)
    cell = wb["1 Inputs"]["B4"]
    assert cell.data_type == "s" and cell.value == plan.name  # text, not a formula
    assert _named(wb, "SourceForecast") == "=1+1"
    assert wb.defined_names["OwnerForecast"] is not None and _named(wb, "OwnerForecast") == "+Finance"
    assert read_workbook(path).model_dump() == plan.model_dump()


def _without_digit_arguments(formula: str, functions=("ROUND", "FIXED")) -> str:
    """The formula with the last argument of each ROUND(x, digits) / FIXED(x, digits) call taken out when it is a
    digit count: how many decimals a quoted figure shows is structural, like ROUNDUP's 0."""
    spans = []
    for m in re.finditer(r"(?<![A-Z0-9_.])(" + "|".join(functions) + r")\(", formula):
        depth, j, last_comma = 1, m.end(), None
        while depth:
            ch = formula[j]
            if ch == '"':
                j = formula.index('"', j + 1)
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch == "," and depth == 1:
                last_comma = j
            j += 1
        if last_comma is not None and re.fullmatch(r"[0-9]", formula[last_comma + 1:j - 1]):
            spans.append((last_comma, j - 1))
    for a, b in sorted(spans, reverse=True):
        formula = formula[:a] + formula[b:]
    return formula


@pytest.mark.slow
def test_no_number_written_inside_a_formula(ref_plan):
    # every constant is a labelled cell: outside of strings, cell references and function arguments that are
    # structural (ROUNDUP's digits, ROUND's and FIXED's decimals in quoted figures, MATCH's type, INDEX positions into
    # the degree list), formulas hold no numerals
    book = build(ref_plan)
    allowed = {"0", "1"}
    for title, coord, cell in book.formula_cells():
        text = re.sub(r'"[^"]*"', "", _without_digit_arguments(cell.value))  # strings
        text = re.sub(r"\$?[A-Z]{1,3}\$?[0-9]+", "", text)  # cell references
        text = re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", "", text)  # names and functions (TP1, ZScore95...)
        for number in re.findall(r"\d+(?:\.\d+)?", text):
            assert number in allowed or "INDEX(TPDegrees," in cell.value, f"{title}!{coord}: {cell.value}"


@pytest.mark.slow
def test_only_functions_libreoffice_74_computes(ref_plan):
    # the xlplan Excel functions appear only inside the add-in cross-checks, wrapped in IFERROR, so a spreadsheet
    # without the add-in shows "not checked (no add-in)" rather than #NAME?
    from udfs.functions import public_udfs

    book = build(ref_plan)
    allowed = {"IF", "AND", "OR", "NOT", "MIN", "MAX", "INDEX", "MATCH", "ROUNDUP", "LN", "EXP", "SQRT", "COUNT",
               "ISNUMBER", "MOD", "INT", "AVERAGE", "MEDIAN", "ABS", "IFERROR",
               "N",  # a blank optional input as 0 (hardware operations)
               "NORMSINV",  # the TTFT prompt at the promise's percentile; in LibreOffice since 1.0 and Excel since 2.0
               "POISSON",  # Erlang C's terms on 3 Constraints (the queueing path); in LibreOffice and every Excel
               "ROUND", "FIXED", "MID", "LEN"}  # the last four quote figures in prose (formulas.Prose); no TEXT, whose
    # format code a spreadsheet reads in its own locale (test_workbook_locale.py)
    udf_names = {n.upper() for n in public_udfs()}
    crosschecks = 0
    for title, coord, cell in book.formula_cells():
        functions = set(re.findall(r"([A-Z][A-Z0-9_.]*)\(", re.sub(r'"[^"]*"', "", cell.value)))
        if cell.kind == "crosscheck":
            crosschecks += 1
            assert cell.value.startswith("=IFERROR(") and cell.value.endswith(',"not checked (no add-in)")')
            assert functions & udf_names and functions - udf_names <= allowed, f"{title}!{coord}"
        else:
            assert functions <= allowed, f"{title}!{coord} uses {functions - allowed}"
    assert crosschecks >= 20


@pytest.mark.slow
def test_inputs_styled_unlocked_validated_and_noted(ref_xlsx):
    wb = openpyxl.load_workbook(ref_xlsx)
    ws = wb["1 Inputs"]
    validated = {str(c) for dv in ws.data_validations.dataValidation for c in dv.sqref.ranges}
    (title, ref), = wb.defined_names["AvgUtilisation"].destinations
    util = ws[ref.replace("$", "")]
    assert util.font.color.rgb.endswith("0000FF") and util.fill.fgColor.rgb.endswith("FFFFCC")
    assert util.protection.locked is False
    assert util.comment is not None and "0.40, not 40" in util.comment.text
    dv = next(d for d in ws.data_validations.dataValidation if util.coordinate in {str(c) for c in d.sqref.ranges})
    assert "0.40, not 40" in dv.error and dv.type == "decimal"
    from xlplan.excel.inputs import all_inputs

    for spec in all_inputs():
        (_, ref), = wb.defined_names[spec.name].destinations
        assert ref.replace("$", "") in validated, spec.name
    model_dv = next(d for d in ws.data_validations.dataValidation if d.type == "list" and d.formula1 == "=ModelKeys")
    assert model_dv is not None
    for title in SIX_TABS:  # protected without a password; formulas locked
        assert wb[title].protection.sheet is True and not wb[title].protection.password
    conc = wb["3 Constraints"]
    (_, ref), = wb.defined_names["Concurrency"].destinations
    assert conc[ref.replace("$", "")].protection.locked is True


def test_master_check_on_the_first_tab_and_charts_and_print_setup(ref_xlsx):
    wb = openpyxl.load_workbook(ref_xlsx, data_only=True)
    assert wb["1 Inputs"]["A5"].value == "All checks pass" and wb["1 Inputs"]["B5"].value is True
    assert len(wb["3 Constraints"]._charts) == 1 and len(wb["5 Cost"]._charts) == 1
    for title in SIX_TABS:
        ws = wb[title]
        # as many pages long as it takes, as few across as print at 8 pt or more (tests/test_print.py reads the PDF)
        assert ws.sheet_properties.pageSetUpPr.fitToPage and ws.page_setup.fitToHeight == PAGES_TALL_BOUND
        assert ws.print_title_rows
    for title in ("2 Model", "4 Fleet", "5 Cost"):  # label, value, unit and how: narrow enough for one page across
        assert wb[title].page_setup.fitToWidth == 1


@pytest.mark.slow
def test_sensitivity_rows_have_one_formula_per_column(ref_plan):
    # every what-if row's formulas are the same once row numbers are taken out: the 10 standard what-ifs
    # (whatif.STANDARD_WHAT_IFS) and the 5 blank rows a finance user fills in (tab_sensitivities.BLANK_WHATIF_ROWS)
    sheet = build(ref_plan).get("6 Sensitivities")
    rows: dict[int, dict[str, str]] = {}
    for coord, cell in sheet.cells.items():
        if cell.formula:
            col, row = re.match(r"([A-Z]+)(\d+)", coord).groups()
            rows.setdefault(int(row), {})[col] = re.sub(r"(?<=[A-Z])" + row + r"\b", "#", cell.value)
    whatif_rows = [r for r, cols in rows.items() if "I" in cols]
    assert len(whatif_rows) == 10 + 5
    first = rows[whatif_rows[0]]
    for r in whatif_rows[1:]:
        assert rows[r] == first


@pytest.mark.slow
def test_plan_command_builds_the_workbook_too(tmp_path, capsys):
    out = tmp_path / "ref.xlsx"
    assert main(["plan", "--no-verify", "--workbook", str(out)]) == 0
    assert "CAPACITY NOTE" in capsys.readouterr().out
    assert out.read_bytes() == workbook_for_plan(reference_plan())
    # by default the plan is simulated, and the Summary's Answer is the verified fleet (the reference: 6, 7 with one
    # replica lost, a node of 8 — the simulation's figures, tests/test_simulate.py)
    import openpyxl

    verified = tmp_path / "verified.xlsx"
    assert main(["plan", "--workbook", str(verified)]) == 0
    wb = openpyxl.load_workbook(verified)
    def named(n):
        sheet, ref = wb.defined_names[n].attr_text.split("!")
        return wb[sheet.strip("'")][ref.replace("$", "")].value
    assert named("AnswerSource").startswith("verified")
    assert verified.read_bytes() == (Path(__file__).resolve().parents[1] / "workbook" / "capacity-plan.xlsx").read_bytes()
    assert (named("AnswerLoad"), named("AnswerWithRedundancy"), named("AnswerPurchased")) == (6, 7, 8)


def test_every_name_the_readme_documents_exists(ref_xlsx):
    from pathlib import Path

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("### The defined names", 1)[1].split("###", 1)[0]
    names = set(re.findall(r"`([A-Z][A-Za-z0-9]+)`", section)) - set(SIX_TABS) - set(SUPPORT_TABS)  # tab names in `where`
    assert len(names) > 50
    wb = openpyxl.load_workbook(ref_xlsx)
    missing = sorted(n for n in names if n not in wb.defined_names)
    assert missing == []


@pytest.mark.slow
def test_every_input_cell_on_every_sheet_is_validated(ref_plan):
    # FAST/ICAEW: an input is styled as one, unlocked, and validated — on the six tabs and the supporting sheets alike
    book = build(ref_plan)
    unvalidated = [f"{s.title}!{c}" for s in book.sheets for c, cell in s.cells.items() if cell.kind == "input" and cell.validation is None]
    assert unvalidated == []
