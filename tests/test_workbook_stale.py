"""Nothing stale without a flag: every engine value on the Summary, Options and Schedule says STALE once an input it
depends on is edited, in LibreOffice and in the Excel-grammar engine; and `xlplan check` reads an ordinary edit as
one finding.

What depends on what is what each figure is computed from: a fleet from the traffic at peak, the promise, the model,
the GPU and the policy (and how it is paid for, which chooses the TP degree that bills the fewest); a bill from that
and the price and hours; a cost per token from that and the average volume; an API comparison from that and the
API's prices and the cost of running it yourself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import openpyxl
import pytest
from planhelp import replan
from workbookhelp import build, edited_copies, evaluate_many, name_ref, recalculate, require_libreoffice

from xlplan.cli import main
from xlplan.excel.inputs import all_inputs
from xlplan.excel.staleness import CURRENT, GROUPS, VALUE_INPUTS, group_name, group_of, inputs_of
from xlplan.excel.summary_mix import MIX_ROWS
from xlplan.excel.writer import workbook_bytes
from xlplan.io.planfile import reference_plan

FLAG_NAME = {"OptionsTable": "OptionsStale", "ScheduleMonths": "ScheduleStale"}
"""The flag of each value, where it is not the value's name + 'Stale' (the decision tabs' one flag each)."""


def _plan():
    """The reference plan with a growth section, so the workbook has its Options and Schedule."""
    return replan(reference_plan(), growth={"monthly": 0.1, "months": 3, "lead_time_days": 30, "start": "2027-01"})


def _flag(value: str) -> str:
    return FLAG_NAME.get(value, f"{value}Stale")


# what some engine values are computed from, written out by hand (the law each map entry must keep)
DEPENDS = {
    ("PeakRate", "AnswerLoad"): True, ("GPUKey", "AnswerLoad"): True, ("GPUUSDPerHourInput", "AnswerLoad"): False,
    ("CostMode", "AnswerOrder"): True, ("AvgUtilisation", "AnswerOrder"): False,
    ("APIInputUSDPerMTok", "OptionsTable"): False, ("APIInputUSDPerMTok", "ScheduleMonths"): True,
    ("GPUUSDPerHourInput", "OptionsTable"): True, ("GPUUSDPerHourInput", "SummaryWhichHardware"): True,
    ("OpsUSDPerMonth", "ScheduleMonths"): True, ("OpsUSDPerMonth", "OptionsTable"): False,
    ("APISource", "ScheduleMonths"): False,  # the name of a source moves no figure
}


def test_the_map_keeps_what_each_figure_is_computed_from():
    for (name, value), depends in DEPENDS.items():
        assert (name in inputs_of(value)) is depends, (name, value)
    for spec in all_inputs():  # every input has a group (a new input must be given one)
        group_of(spec.path)


def _tiny_book():
    """A hand-made book: an engine value on one sheet, formulas reading it through a name, a range, another sheet's
    reference and a chain; and a formula that reads only an input."""
    from xlplan.excel.cells import Book, Cell

    book = Book()
    a = book.sheet("Calc", "")
    a.put("A", 1, Cell(7, kind="input"))
    a.put("B", 1, Cell(12, kind="static", depends=("fleet",)))  # searched for the inputs at build time
    a.put("B", 2, Cell(3, kind="static", depends=("price",)))
    a.put("C", 1, Cell("=A1*2", formula=True, cached=14, kind="calc"))  # the input alone: live
    a.put("C", 2, Cell("=SUM(B1:B2)", formula=True, cached=15, kind="calc"))  # a range over both engine values
    a.put("C", 3, Cell('=IF(C1>0,"x","B1")', formula=True, cached="x", kind="calc"))  # "B1" is text, not a reference
    book.define("Searched", a, "B1")
    b = book.sheet("Other", "")
    b.put("A", 1, Cell("=Searched+1", formula=True, cached=13, kind="calc"))  # through a defined name
    b.put("A", 2, Cell("=A1*'Calc'!$C$1", formula=True, cached=182, kind="calc"))  # a chain, and another sheet's cell
    b.put("A", 3, Cell("=Calc!B2", formula=True, cached=3, kind="calc"))
    return book


def test_a_formula_is_stale_with_exactly_the_engine_values_it_reads():
    from xlplan.excel.staleness import engine_groups

    got = engine_groups(_tiny_book())
    assert got == {("Calc", "B1"): {"fleet"}, ("Calc", "B2"): {"price"}, ("Calc", "C2"): {"fleet", "price"},
                   ("Other", "A1"): {"fleet"}, ("Other", "A2"): {"fleet"}, ("Other", "A3"): {"price"}}


def test_each_row_that_reads_an_engine_value_gets_one_flag_beside_it():
    from xlplan.excel.staleness import ROW_CURRENT, flag_engine_values

    book = _tiny_book()
    flag_engine_values(book)
    calc, other = book.get("Calc"), book.get("Other")
    # row 1 of Calc ends at C1, so its flag is D1; it reads the fleet (B1) only: C1 is live but shares the row
    assert book.flags[("Calc", "B1")] == ("Calc", "D1") and ("Calc", "C1") not in book.flags
    assert calc.cells["D1"].value == '=IF(AND(UnchangedFleetInputs),"","STALE")' and calc.cells["D1"].cached == ROW_CURRENT
    assert calc.cells["D2"].value == '=IF(AND(UnchangedFleetInputs,UnchangedPriceInputs),"","STALE")'
    assert "D3" not in calc.cells  # row 3 reads no engine value
    assert other.cells["B3"].value == '=IF(AND(UnchangedPriceInputs),"","STALE")'


@pytest.fixture(scope="module")
def book():
    return build(_plan())  # the verified workbook's simulation sentence flag: tests/test_equality_matrix.py


def test_every_engine_value_carries_a_flag_over_exactly_its_inputs(book):
    # inputs x values: each flag reads the Summary's unchanged-group cells of its value's groups, and those cells
    # compare exactly their inputs with their values at build time (the snapshot); so a value's flag reads an input
    # iff the map says the value depends on it
    def cell_of(name):
        title, coord = book.names[name].split("!")
        return book.get(title.strip("'")).cells[coord.replace("$", "")]

    def mentions(formula, name):
        return re.search(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", formula) is not None

    names = {spec.name for spec in all_inputs()}
    reads = {g: {n for n in names if mentions(cell_of(group_name(g)).value, n)} for g in GROUPS}
    for g in GROUPS:
        assert all(mentions(cell_of(group_name(g)).value, f"Built{n}") for n in reads[g])
    # not simulated here, and without a contracts section (the mix's rows are tests/test_owning.py's)
    assert {v for v in VALUE_INPUTS if _flag(v) not in book.names} == {"SummaryVerifiedSentence", *MIX_ROWS}
    for value in [v for v in VALUE_INPUTS if _flag(v) in book.names]:
        cell = cell_of(_flag(value))
        assert cell.formula and cell.cached == CURRENT
        groups = [g for g in GROUPS if mentions(cell.value, group_name(g))]
        read = set().union(*(reads[g] for g in groups))
        for name in names:
            assert (name in read) is (name in inputs_of(value)), (value, name)
    # every engine value of the Answer block sits beside its flag
    for name in [n for n in VALUE_INPUTS if n.startswith("Answer") and n in book.names]:
        row = book.names[name].split("!")[1].replace("$", "")[1:]
        assert book.names[_flag(name)].endswith(f"$E${row}") or book.names[_flag(name)].endswith(f"E{row}"), name


def test_the_answers_bill_is_a_formula_stale_only_with_its_fleet(book):
    # the bill, capex, payback and NPV price the Answer's fleet on 5 Cost by formula: a price, the hours, the volume or
    # the API's prices move them live; only the fleet's own inputs (and how it is paid for, which picks the billed
    # GPUs and the TP degree) leave them behind
    for name in ("AnswerBilledGPUs", "AnswerMonthlyUSD", "AnswerUSDPerMTok", "AnswerAgainstAPI", "AnswerCapexUSD",
                 "AnswerPaybackMonths", "AnswerNPVUSD"):
        title, coord = name_ref(book, name)
        assert book.get(title).cells[coord].formula, name
        flag = book.get("Summary").cells[name_ref(book, f"{name}Stale")[1]].value
        assert "UnchangedFleetInputs" in flag and "UnchangedPriceInputs" not in flag, (name, flag)


EDITS = {
    "price": {"GPUUSDPerHourInput": 4.0},
    "api": {"APIInputUSDPerMTok": 0.5},
    "volume": {"AvgUtilisation": 0.5},
    "ops": {"OpsUSDPerMonth": 1000.0},
    "paid_as": {"CostMode": "rent_per_node"},
    "a_yes_no": {"IncludeTTFT": True},
    "lease": {"CostMode": "lease"},  # not one of Paid as' choices: stale, and a check fails
}


@pytest.fixture(scope="module")
def edited(book, tmp_path_factory):
    """The workbook edited each way (saved by openpyxl), recalculated by LibreOffice and by the Excel-grammar engine:
    {edit: (LibreOffice's values, the Excel-grammar engine's)}."""
    require_libreoffice()
    folder = tmp_path_factory.mktemp("stale")
    paths = edited_copies(book, folder, EDITS)
    lo = recalculate(paths, folder / "recalculated")
    grammar = evaluate_many(paths)
    return {stem: (openpyxl.load_workbook(out, data_only=True), g, path, out)
            for stem, out, g, path in zip(EDITS, lo, grammar, paths)}


def _value(wb, name):
    (title, ref), = wb.defined_names[name].destinations
    return title, ref.replace("$", ""), wb[title][ref.replace("$", "")].value


@pytest.mark.slow
def test_an_edit_flips_the_flag_of_every_value_that_depends_on_it_in_both_engines(edited):
    from excelgrammar import value as grammar_value

    for stem, changes in EDITS.items():
        lo, grammar, _, _ = edited[stem]
        for value in [v for v in VALUE_INPUTS if _flag(v) in lo.defined_names]:
            stale = any(name in inputs_of(value) for name in changes)
            title, coord, got = _value(lo, _flag(value))
            assert (got != CURRENT and str(got).startswith("STALE")) is stale, (stem, value, got)
            assert grammar_value(grammar, title, coord) == got, (stem, value)
    # a price edit leaves the fleet current, and the Answer's bill too (a formula over its fleet, which moves with the
    # price); the Options and the Which-hardware sentence (the engine's ranking by $/M tokens) stale
    lo = edited["price"][0]
    assert _value(lo, "AnswerLoadStale")[2] == CURRENT and _value(lo, "AnswerMonthlyUSDStale")[2] == CURRENT
    assert all(_value(lo, n)[2] != CURRENT for n in ("OptionsStale", "SummaryWhichHardwareStale"))
    _a_value_not_among_a_drop_downs_choices_fails_a_check_in_both_engines(edited)


@pytest.mark.slow
def test_check_reads_a_price_edit_as_one_finding(edited, capsys):
    # the price edit, recalculated: nothing is wrong with the file, the engine values are for the old price; one
    # finding names the edit, exit 0, and 1 with --strict (what CI runs)
    out = edited["price"][3]
    assert main(["check", str(out), "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert [f["kind"] for f in findings] == ["inputs-changed"]
    assert "GPUUSDPerHourInput 3 -> 4" in findings[0]["found"]
    assert main(["check", str(out), "--strict", "--json"]) == 1  # (as built, no finding: test_workbook_check.py)


@pytest.mark.slow
def test_an_overwritten_formula_is_listed_first_and_uncomputed_values_are_one_line(edited, tmp_path, capsys):
    # the file saved by openpyxl after the price edit holds no computed value; a formula typed over is the one real
    # problem: it comes first, and the missing values are one finding, not one per cell
    path = tmp_path / "typed.xlsx"
    wb = openpyxl.load_workbook(edited["price"][2])
    (title, ref), = wb.defined_names["MonthlyCostUSD"].destinations
    wb[title][ref.replace("$", "")].value = 12345
    wb.save(path)
    assert main(["check", str(path), "--json"]) == 1
    kinds = [f["kind"] for f in json.loads(capsys.readouterr().out)]
    assert kinds[0] == "formula-overwritten" and kinds.count("no-cached-value") == 1 and len(kinds) <= 4, kinds


@pytest.mark.slow
def test_a_deleted_name_is_a_problem(tmp_path, capsys, book):
    path = tmp_path / "noname.xlsx"
    path.write_bytes(workbook_bytes(book))
    wb = openpyxl.load_workbook(path)
    del wb.defined_names["BreakevenTokensPerMonth"]
    wb.save(path)
    assert main(["check", str(path), "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found[0]["kind"] in ("name-missing", "formula-changed") and any(
        f["kind"] == "name-missing" and f["where"] == "BreakevenTokensPerMonth" for f in found)
    assert Path(path).exists()


def _a_value_not_among_a_drop_downs_choices_fails_a_check_in_both_engines(edited):
    # Paid as typed 'lease' (Excel's drop-down refuses it; a paste or another tool does not): the Checks row fails,
    # with the banner, in LibreOffice and the Excel-grammar engine; an edit among the choices passes it. Run by the test
    # above, over the same recalculated edits (a second test may be stolen by the other worker, which would
    # recalculate them all again)
    from excelgrammar import value as grammar_value

    for stem, passes in (("lease", False), ("paid_as", True), ("price", True)):
        lo, grammar, _, _ = edited[stem]
        title, coord, got = _value(lo, "CheckChoicesKnown")
        assert got is passes and grammar_value(grammar, title, coord) is passes, stem
