"""A person edits a generated workbook: nothing it shows differs from a rebuild without a STALE flag beside it.

For each group of inputs (the traffic, the lengths, the promise, the model, the GPU, the prices, how the fleet is paid
for, the policy) one input of a built workbook is typed over, the file is recalculated by LibreOffice and by the
Excel-grammar engine, and every cell is held to a workbook rebuilt by the engine from the same inputs (``xlplan read``,
then ``xlplan workbook``). A cell may differ only where its flag (:attr:`xlplan.excel.cells.Book.flags`, the
workbook's own record of which flag sits beside which value) says STALE in that engine. `xlplan check` then names the
edit as one finding and exits 0: the file is sound, its engine values are for the old inputs.

The rebuild is the truth here because it is the engine run on the edited inputs: a formula that recalculates right
agrees with it, an engine value left behind does not, and only the flag can tell a reader which is which.
"""

from __future__ import annotations

import json

import openpyxl
import pytest
from matrix_plans import matrix_plans
from planhelp import replan
from workbookhelp import agrees, edited_copies, evaluate_many, name_ref, plan_figures, rebuilt, recalculate, require_libreoffice

from xlplan.cli import main
from xlplan.excel import layout
from xlplan.excel.reader import read_workbook

GROWTH = {"monthly": 0.1, "months": 3, "lead_time_days": 30, "start": "2027-01"}  # so Options and Schedule are built

RENTED_EDITS = {
    "traffic": {"PeakRate": 80.0},
    "lengths": {"PromptP95": 12000.0},
    "promise": {"ITLInput": 0.02},  # the issue's: 0.03 -> 0.02 s showed 8 / 9 GPUs where a rebuild gives 10 / 11
    "model": {"ModelKey": "qwen3-30b-a3b"},
    "gpu": {"GPUKey": "h200"},
    "prices": {"GPUUSDPerHourInput": 4.0},
    "paid_as_buy": {"CostMode": "buy", "USDPerKWhInput": 0.09, "HardwareOpsUSDPerMonthInput": 0.0},
    "policy": {"Redundancy": 2},
}
BOUGHT_EDITS = {"paid_as_rent": {"CostMode": "rent_per_gpu"}}  # its Buy rows stay filled: kept and ignored


def _rented():
    return replan(matrix_plans()["heavy_tailed"], growth=GROWTH)


def _bought():
    return replan(matrix_plans()["reference"], costs={"mode": "buy", "capex_usd_per_node": 200000, "kw_per_gpu": 1.0,
                                                      "usd_per_kwh": 0.09, "hardware_ops_usd_per_month": 500})


@pytest.fixture(scope="module")
def edited(tmp_path_factory):
    """{edit: (the workbook as built, the edited file, LibreOffice's values, the Excel-grammar engine's values, the
    LibreOffice-recalculated file, the rebuild from the edited inputs)}."""
    require_libreoffice()
    from excelgrammar import value

    folder = tmp_path_factory.mktemp("edits")
    out = {}
    for plan, edits in ((_rented(), RENTED_EDITS), (_bought(), BOUGHT_EDITS)):
        base = layout.build(plan_figures(plan))
        paths = edited_copies(base, folder, edits)
        lo = recalculate(paths, folder / "lo")
        grammar = evaluate_many(paths)
        for stem, path, recalculated, g in zip(edits, paths, lo, grammar):
            wv = openpyxl.load_workbook(recalculated, data_only=True)
            out[stem] = (base, path, lambda t, c, wv=wv: wv[t][c].value, lambda t, c, g=g: value(g, t, c), recalculated,
                         rebuilt(path))
    return out


def _unflagged(base, rebuilt, read) -> tuple[list[str], int]:
    """Every cell of the edited workbook whose value differs from the rebuild's with no STALE flag beside it, and how
    many differ with one."""
    bad, flagged = [], 0
    now = {s.title: s for s in rebuilt.sheets}
    for sheet in base.sheets:
        for coord, cell in sheet.cells.items():
            if cell.kind in ("input", "flag") or cell.depends == ():  # typed, a flag, or the record of the build
                continue
            fresh = now[sheet.title].cells.get(coord) if sheet.title in now else None
            expected = None if fresh is None else (fresh.cached if fresh.formula else fresh.value)
            got = read(sheet.title, coord)
            if agrees(got, expected, rel=1e-6) or (expected in (None, "") and got in (None, "")):
                continue
            flag = base.flags.get((sheet.title, coord))
            if flag is not None and str(read(*flag) or "").startswith("STALE"):
                flagged += 1
            else:
                bad.append(f"{sheet.title}!{coord} {got!r} where a rebuild shows {expected!r} (flag {flag})")
    return bad, flagged


@pytest.mark.slow
@pytest.mark.parametrize("stem", [*RENTED_EDITS, *BOUGHT_EDITS])
def test_an_edit_never_shows_a_value_a_rebuild_would_not_without_a_stale_flag(edited, stem):
    base, _, lo, grammar, _, rebuilt = edited[stem]
    for engine, read in (("LibreOffice", lo), ("Excel-grammar", grammar)):
        bad, flagged = _unflagged(base, rebuilt, read)
        assert bad == [], (engine, stem, bad[:10])
        # every edit but a price's moves an engine value (the fleet, its TP degree, the Options' ranking): flagged
        assert flagged > 0 or stem == "prices", (engine, stem)


@pytest.mark.slow
def test_a_price_edit_moves_the_answers_bill_live(edited):
    # the Answer's bill is priced by formula over its fleet: $4 an hour x the GPUs on its bill x 730 hours (runbook
    # step 7), in both engines, with its flag current
    base, _, lo, grammar, _, _ = edited["prices"]
    for read in (lo, grammar):
        billed = read(*name_ref(base, "AnswerBilledGPUs"))
        assert read(*name_ref(base, "AnswerMonthlyUSD")) == pytest.approx(billed * 4.0 * 730.0, rel=1e-12)
        assert read(*name_ref(base, "AnswerMonthlyUSDStale")) == "current"


@pytest.mark.slow
def test_check_names_each_edit_as_one_finding(edited, capsys):
    # the file is sound (exit 0) after every group's edit: the one finding names each input edited and counts the
    # flagged cells it left behind (a price edit leaves none of the fleet's; the Options are flagged)
    for stem, changes in {**RENTED_EDITS, **BOUGHT_EDITS}.items():
        recalculated = edited[stem][4]
        assert main(["check", str(recalculated), "--json"]) == 0, stem
        findings = json.loads(capsys.readouterr().out)
        assert [f["kind"] for f in findings] == ["inputs-changed"], (stem, findings[:3])
        assert all(name in findings[0]["found"] for name in changes), (stem, findings[0]["found"])
        assert "each with a flag beside it that reads STALE" in findings[0]["expected"], stem


@pytest.mark.slow
def test_buying_without_an_electricity_price_names_it_on_the_banner(tmp_path):
    # rent -> buy with the Buy rows blank: the banner names what buying needs (the electricity price, hardware
    # operations), not a missing GPU price; the catalog gives this GPU's server price and power, so those are not named
    require_libreoffice()
    base = layout.build(plan_figures(matrix_plans()["reference"]))  # rented per GPU
    path, = edited_copies(base, tmp_path, {"buy": {"CostMode": "buy"}})
    recalculated, = recalculate([path], tmp_path / "lo")
    wv = openpyxl.load_workbook(recalculated, data_only=True)
    banner = wv["1 Inputs"]["A3"].value
    assert banner.startswith("CHECK FAILED on 1 Inputs: Paid as buy needs electricity price, hardware operations on the "
                             "Buy rows of 1 Inputs"), banner
    assert "GPU's price is missing" not in banner
    assert wv["Summary"]["A3"].value == banner  # above the Answer, where a reader starts
    # without running costs no payback is known: n/a, never "never" (rent > a text compared as FALSE before)
    for name in ("PaybackMonths", "AnswerFleetPaybackMonths"):
        (title, ref), = wv.defined_names[name].destinations
        assert wv[title][ref.replace("$", "")].value == "n/a", name


@pytest.mark.slow
def test_a_misspelt_gpu_fails_one_check_in_words(tmp_path):
    # a GPU key not on the GPUs sheet: every check that looks the GPU up errors; the banner names the GPU alone, not
    # the fractions or the promise that merely could not be computed
    require_libreoffice()
    base = layout.build(plan_figures(matrix_plans()["reference"]))
    path, = edited_copies(base, tmp_path, {"typo": {"GPUKey": "h100-sx"}})
    recalculated, = recalculate([path], tmp_path / "lo")
    banner = openpyxl.load_workbook(recalculated, data_only=True)["Summary"]["A3"].value
    assert banner == "CHECK FAILED on 1 Inputs: the GPU is not on the GPUs sheet — these figures are not a plan", banner


@pytest.mark.slow
def test_a_rented_fleet_keeps_the_buy_rows_and_says_so(edited):
    # buy -> rent: the Buy rows still hold the figures (nothing the user wrote is lost), the Paid as rows say they are
    # ignored, and the plan read back keeps them (a switch back to buy finds them)
    base, path, lo, grammar, _, _ = edited["paid_as_rent"]
    for read in (lo, grammar):
        assert read(*name_ref(base, "BuyRowsIgnored")).startswith("kept and ignored")
    plan = read_workbook(path)
    assert plan.costs.mode == "rent_per_gpu" and plan.costs.capex_usd_per_node == 200000
    assert plan.costs.ignored_figures() == ["capex_usd_per_node", "kw_per_gpu", "usd_per_kwh", "hardware_ops_usd_per_month"]
