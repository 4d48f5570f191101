"""Owning, as finance models it (issue 24): the buy case recomputed by hand from cited inputs, and each figure the same
on the note, in the JSON and in the workbook recalculated by both spreadsheet engines; a mixed plan's Summary rows.

The buy case is the reference plan (the runbook's 8 H100s) bought, each figure from a source:
- server $270,000 a node: DGX H100, SemiAnalysis 2023-05 (the catalog's default);
- network $15,060 a node: one-layer 400 Gb/s InfiniBand fabric, 2024-08 (the catalog's default);
- installation and shipping $5,000 a node: stated by the plan (an integrator's quote);
- residual 0.78^5 of the capex: the secondary-market H100 resale curve, 2026-06 (the catalog's default);
- cost of capital 8% a year, compounded monthly: the stated assumption (the catalog's default);
- power 0.9375 kW typical (DGX H100 6.5-8.5 kW / 8), 1.275 kW maximum (10.2 kW / 8, the DGX H100 user guide);
- PUE 1.54 (Uptime Institute 2025), colocation $184.06/kW-month (CBRE H2 2024), electricity $0.0895/kWh (EIA 2023,
  Virginia commercial, stated by the plan), NVIDIA AI Enterprise $4,500 per GPU-year (stated by the plan), hardware
  operations $1,000 a month (stated by the plan); renting at the plan's $3/GPU-hour.
"""

from __future__ import annotations

import json

import pytest
from notearith import check_note
from planhelp import replan
from workbookhelp import build, compare_book, engine_json, evaluate_many, recalculate, require_libreoffice

from xlplan.cli import main
from xlplan.decide.planner import plan as run_plan
from xlplan.excel.summary_mix import MIX_ROWS
from xlplan.excel.writer import workbook_bytes
from xlplan.io.planfile import reference_plan
from xlplan.report.note import render_text

COSTS = {"mode": "buy", "installation_usd_per_node": 5000, "usd_per_kwh": 0.0895, "licence_usd_per_gpu_year": 4500,
         "hardware_ops_usd_per_month": 1000, "source": "integrator quote 2026-11; EIA 2023; NVIDIA AI Enterprise list price"}

# By hand, for the runbook's fleet: 8 GPUs, one node of 8, 730 hours a month, a 60-month life.
GPUS, HOURS, MONTHS = 8, 730.0, 60
CAPEX = 270_000 + 15_060 + 0 + 5_000  # server + network + storage + installation = 290,060 for the one node
RESIDUAL = CAPEX * 0.78 ** 5  # 83,715.5: what the node sells for after five years
RATE = 0.08 / 12  # the monthly rate
DF = (1 + RATE) ** -MONTHS  # 0.6712: a dollar at the end of the life, today
AF = (1 - DF) / RATE  # 49.318: a dollar each month of the life, today
CAPITAL = (CAPEX - RESIDUAL * DF) / AF  # the annuity that repays the capex less the residual's present value
DEPRECIATION = (CAPEX - RESIDUAL) / MONTHS  # the accounts' straight line to the residual (not cash)
POWER = GPUS * 0.9375 * 1.54 * 0.0895 * HOURS  # typical draw x PUE x price x hours = 754.4
COLOCATION = GPUS * 1.275 * 184.06  # the contracted (maximum) kW x the price = 1,877.4
LICENCES = GPUS * 4500 / 12  # 3,000
RUNNING = POWER + COLOCATION + LICENCES + 1000  # the cash each month
MONTHLY = CAPITAL + RUNNING  # the bill
RENT = GPUS * 3.0 * HOURS  # the same 8 GPUs rented: 17,520
PAYBACK = CAPEX / (RENT - RUNNING)  # months until buying has cost less than renting
OWN_NPV = CAPEX + RUNNING * AF - RESIDUAL * DF  # the reference plan's engineering and on-call is 0
RENT_NPV = RENT * AF


def _bought():
    return replan(reference_plan(), costs=COSTS)


def _mixed():
    # 8 hours at the peak, 8 at half, 8 at a quarter; the base reserved for a year at the catalog's H100 price
    return replan(reference_plan(), forecast={"daily_curve": [0.25] * 8 + [0.5] * 8 + [1.0] * 8},
                  contracts={"term": "reserved_1y", "api_overflow": True})


def test_the_buy_case_is_the_hand_computation():
    o = run_plan(_bought()).cost.ownership
    assert (o.capex_usd, o.residual_usd) == (pytest.approx(CAPEX), pytest.approx(RESIDUAL))
    assert o.capital_usd_per_month == pytest.approx(CAPITAL, rel=1e-12)
    assert o.depreciation_usd_per_month == pytest.approx(DEPRECIATION, rel=1e-12)
    assert (o.energy_usd_per_month, o.hosting_usd_per_month, o.licence_usd_per_month) == (
        pytest.approx(POWER), pytest.approx(COLOCATION), pytest.approx(LICENCES))
    assert o.running_usd_per_month == pytest.approx(RUNNING, rel=1e-12)
    assert run_plan(_bought()).cost.monthly_usd == pytest.approx(MONTHLY, rel=1e-12)
    assert o.payback_months == pytest.approx(PAYBACK, rel=1e-12) and o.payback_within_life
    assert o.own_npv_usd == pytest.approx(OWN_NPV, rel=1e-12) and o.rent_npv_usd == pytest.approx(RENT_NPV, rel=1e-12)
    # at 8% the capital charge is the straight line plus the cost of money: more than (capex - residual) / 60
    assert CAPITAL > DEPRECIATION


def test_the_json_and_the_note_give_the_same_figures(tmp_path, capsys):
    f = tmp_path / "bought.yaml"
    f.write_text(json.dumps(_bought().model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    assert main(["plan", str(f), "--no-verify", "--json"]) == 0
    o = json.loads(capsys.readouterr().out)["runbook_method"]["cost"]["ownership"]  # the figures worked by hand: the method's fleet
    for key, hand in (("capex_usd", CAPEX), ("capital_usd_per_month", CAPITAL), ("energy_usd_per_month", POWER),
                      ("hosting_usd_per_month", COLOCATION), ("licence_usd_per_month", LICENCES),
                      ("payback_months", PAYBACK), ("own_npv_usd", OWN_NPV)):
        assert o[key] == pytest.approx(hand, rel=1e-9), key
    text = render_text(run_plan(_bought()))
    assert f"= ${CAPEX:,.0f} per node × 1 node = ${CAPEX:,.0f}" in text
    assert f"capital ${CAPITAL:,.0f} + power ${POWER:,.0f} + colocation ${COLOCATION:,.0f} + licences ${LICENCES:,.0f}" in text
    assert f"buying pays back in {PAYBACK:,.1f} months" in text
    assert f"owning ${CAPEX + RUNNING * MONTHS - RESIDUAL:,.0f} paid, NPV ${OWN_NPV:,.0f}" in text
    assert check_note(text)[1] == []  # every line adds up from its printed operands


def test_prices_older_than_the_plan_allows_are_flagged_with_their_date():
    # judged on 2026-12-04: the server quote (2023-05) is 43 months old, the network share (2024-08) 28, colocation
    # (2025-02) 22, past the default 12 months; the licence (2023-11-21) is 37. A limit of 48 months flags none of them
    r = run_plan(_bought(), as_of="2026-12-04")
    stale = {a.price: (a.month, a.age_months) for a in r.cost.price_ages if a.stale}
    assert stale["server"] == ("2023-05", 43) and stale["network"] == ("2024-08", 28) and stale["colocation"] == ("2025-02", 22)
    assert "server dated 2023-05, 43 months old" in render_text(r)
    lenient = run_plan(replan(_bought(), costs={"price_max_age_months": 48}), as_of="2026-12-04")
    assert not any(a.stale for a in lenient.cost.price_ages)


@pytest.fixture(scope="module")
def books(tmp_path_factory):
    """Each plan's workbook recalculated by LibreOffice and the Excel-grammar engine: (books, readers, problems)."""
    require_libreoffice()
    import openpyxl
    from excelgrammar import value

    folder = tmp_path_factory.mktemp("owning")
    plans = {"bought": _bought, "mixed": _mixed}
    built, files, problems = {}, [], []
    for stem, make in plans.items():
        built[stem] = build(make())
        f = folder / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(built[stem], caches=False))
        files.append(f)
    readers = {"LibreOffice": {}, "Excel-grammar": {}}
    for stem, out, values in zip(built, recalculate(files, folder / "lo"), evaluate_many(files)):
        wb = openpyxl.load_workbook(out, data_only=True)
        readers["LibreOffice"][stem] = lambda t, c, wb=wb: wb[t][c].value
        readers["Excel-grammar"][stem] = lambda t, c, v=values: value(v, t, c)
        js = engine_json(plans[stem](), folder, stem)
        for engine, per in readers.items():
            problems += [f"{engine}: {p}" for p in compare_book(stem, built[stem], per[stem], js)]
    return built, readers, problems


def _read(books_, engine: str, stem: str, name: str):
    built, readers, _ = books_
    title, coord = built[stem].names[name].split("!")
    return readers[engine][stem](title.strip("'"), coord.replace("$", ""))


@pytest.mark.slow
def test_both_engines_agree_with_the_engine_on_every_cell(books):
    assert books[2] == []


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["LibreOffice", "Excel-grammar"])
def test_the_workbook_recomputes_the_buy_case_by_formula(books, engine):
    for name, hand in (("CapexUSD", CAPEX), ("ResidualUSD", RESIDUAL), ("CapitalUSDPerMonth", CAPITAL),
                       ("DepreciationUSDPerMonth", DEPRECIATION), ("EnergyUSDPerMonth", POWER),
                       ("HostingUSDPerMonth", COLOCATION), ("LicenceUSDPerMonth", LICENCES),
                       ("RunningUSDPerMonth", RUNNING), ("MonthlyCostUSD", MONTHLY), ("PaybackMonths", PAYBACK),
                       ("OwnNPVUSD", OWN_NPV), ("RentNPVUSD", RENT_NPV)):
        assert _read(books, engine, "bought", name) == pytest.approx(hand, rel=1e-9), name


@pytest.mark.slow
def test_the_summary_gives_the_npv_bought_and_the_mix_mixed(books):
    built = books[0]
    assert "AnswerNPVUSD" in built["bought"].names and not any(n in built["bought"].names for n in MIX_ROWS)
    assert all(n in built["mixed"].names and f"{n}Stale" in built["mixed"].names for n in MIX_ROWS)
    m = run_plan(_mixed()).contracts
    assert _read(books, "LibreOffice", "mixed", "AnswerMixMonthlyUSD") == pytest.approx(m.monthly_usd)
