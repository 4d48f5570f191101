"""Cash, dated (issue 24): a bought fleet's capex lands in the month of order or of delivery, as the plan says, beside
the month's running costs; depreciation stays apart; quarters and fiscal years total the months they hold. Worked by
hand from the plan's own stated prices, then read from the engine, the command line and both spreadsheet engines.
"""

from __future__ import annotations

import json

import pytest
from planhelp import replan
from workbookhelp import build, compare_book, engine_json, evaluate_many, name_ref, recalculate, require_libreoffice

from xlplan.dates import fiscal_period
from xlplan.decide import schedule
from xlplan.decide.planner import plan as run_plan
from xlplan.decide.schedule_cash import cash_terms
from xlplan.excel.writer import workbook_bytes
from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import resolve

NODE_USD = 300_000.0
"""The plan's stated price of a node of 8 (costs.capex_usd_per_node). [USD]"""

COSTS = {"mode": "buy", "capex_usd_per_node": NODE_USD, "depreciation_years": 5, "kw_per_gpu": 1.0, "pue": 1.5,
         "usd_per_kwh": 0.1, "hosting_usd_per_kw_month": 200, "hardware_ops_usd_per_month": 1000,
         "network_usd_per_node": 0, "residual_fraction": 0, "cost_of_capital": 0}
"""Every ownership figure stated, so each month's cash works out by hand: no network share beside the node price, no
residual and no cost of capital, so the bill's capital charge is straight-line depreciation; the power drawn is the
stated maximum (no typical draw stated beside it)."""

PEAKS = [40.0] * 3 + [80.0] * 11
"""The reference's 40 req/s for three months, then 80 from the fourth (2026-08) to 2027-06: fourteen months."""

# One node's running costs a month: electricity 8 GPUs x 1.0 kW x 1.5 PUE x $0.10/kWh x 730 h = 876; colocation
# 8 x 1.0 kW x $200/kW-month = 1,600; 2,476 a node, plus $1,000 hardware operations for the fleet.
ONE_NODE_RUNNING = 876.0 + 1600.0 + 1000.0  # 3,476
TWO_NODE_RUNNING = 2 * (876.0 + 1600.0) + 1000.0  # 5,952
DEPRECIATION_PER_NODE = NODE_USD / (12 * 5)  # 5,000 a month, straight line over 5 years


def _bought(paid_at: str):
    """The reference bought at the stated prices, growing as PEAKS from 2026-05, 45 days' lead time, fiscal years from
    July."""
    return replan(reference_plan(), costs=COSTS,
                  growth={"peaks_rps": PEAKS, "lead_time_days": 45, "start": "2026-05", "capex_paid_at": paid_at,
                          "fiscal_year_start_month": 7})


def _schedule(p):
    s = resolve(p)
    g = p.growth
    return schedule.schedule(s, g.peaks_rps, g.start, g.lead_time_days, verify="none", cash=cash_terms(p, s))


@pytest.fixture(scope="module")
def dated():
    """{'order': ScheduleOut, 'delivery': ScheduleOut} of the same plan."""
    return {at: _schedule(_bought(at)) for at in ("order", "delivery")}


def test_the_fleet_steps_from_one_node_to_two(dated):
    # At 40 req/s the reference needs at most a node of 8 (the runbook: 4 + 1); at 80 the load doubles past it: two
    # nodes, as `plan` answers at that peak (each schedule month is plan at its peak)
    at80 = run_plan(replan(_bought("order"), forecast={"peak_rps": 80.0})).answer.purchased
    assert at80 == 16
    held = [m.purchased for m in dated["order"].months]
    assert held == [8] * 3 + [16] * 11


def test_capex_lands_in_the_order_month_or_the_delivery_month(dated):
    # The step month 2026-08 needs its second node in service on 2026-08-01; 45 days before is 2026-06-17 (31 days of
    # July, 14 of June), so the order goes out in 2026-06, month 1. The first node, needed 2026-05-01, is ordered
    # 2026-03-17: before the schedule.
    order, delivery = dated["order"], dated["delivery"]
    assert [m.capex_paid_usd for m in order.months] == [0.0, NODE_USD] + [0.0] * 12
    assert order.capex_before_schedule_usd == NODE_USD
    assert order.months[3].capex_paid_month == "2026-06" and order.months[0].capex_paid_month == "2026-03"
    # paid on delivery: each node in the month it goes into service, nothing before the schedule
    assert [m.capex_paid_usd for m in delivery.months] == [NODE_USD, 0.0, 0.0, NODE_USD] + [0.0] * 10
    assert delivery.capex_before_schedule_usd == 0.0
    assert order.capex_paid_at == "order" and delivery.capex_paid_at == "delivery"


def test_depreciation_is_kept_apart_from_cash(dated):
    # cash = capex paid + running costs; depreciation (5,000 a node-month) is beside it, never in it
    months = dated["order"].months
    running = [ONE_NODE_RUNNING] * 3 + [TWO_NODE_RUNNING] * 11
    assert [m.opex_usd_per_month for m in months] == pytest.approx(running, rel=1e-12)
    assert [m.depreciation_usd_per_month for m in months] == pytest.approx(
        [DEPRECIATION_PER_NODE] * 3 + [2 * DEPRECIATION_PER_NODE] * 11, rel=1e-12)
    cash = [r + c for r, c in zip(running, [0.0, NODE_USD] + [0.0] * 12)]
    assert [m.cash_usd for m in months] == pytest.approx(cash, rel=1e-12)
    assert months[2].cash_usd == pytest.approx(3476.0, rel=1e-12)  # 2026-07: one node running, no capex, no 5,000
    # the month's bill books both: running costs + depreciation (8,476 a month with one node)
    assert [m.monthly_usd for m in months] == pytest.approx([r + d.depreciation_usd_per_month for r, d in zip(running, months)],
                                                            rel=1e-12)
    # cumulative cash starts from the capex paid before the schedule
    assert months[-1].cumulative_cash_usd == pytest.approx(NODE_USD + sum(cash), rel=1e-12)


def test_capex_paid_before_the_schedule_counts_in_the_period_it_is_dated_in(dated):
    # Paid at order, the first node's $300,000 goes out 2026-03-17: before the schedule's first month (2026-05), but in
    # FY2026 (July 2025 to June 2026), its Q3 (January-March). FY2026 then holds it and May and June's running costs
    # (2 x 3,476); the second node's order (2026-06-17) is in FY2026 Q4 with them
    by = {t.period: t for t in dated["order"].cash_totals}
    assert [t.period for t in dated["order"].cash_totals][:2] == ["FY2026 Q3", "FY2026 Q4"]
    assert (by["FY2026 Q3"].months, by["FY2026 Q3"].capex_usd, by["FY2026 Q3"].cash_usd) == (0, NODE_USD, NODE_USD)
    assert by["FY2026 Q4"].cash_usd == pytest.approx(NODE_USD + 2 * 3476.0, rel=1e-12)
    assert by["FY2026"].cash_usd == pytest.approx(2 * NODE_USD + 2 * 3476.0, rel=1e-12)
    # every dollar of capex is in some fiscal year: two nodes
    assert sum(t.capex_usd for t in dated["order"].cash_totals if t.kind == "fiscal year") == pytest.approx(2 * NODE_USD)


def test_quarters_and_fiscal_years_from_july(dated):
    # Fiscal years from July, named by the calendar year they end in: 2026-05 and 2026-06 close FY2026 (its Q4,
    # April-June); FY2027 runs 2026-07 to 2027-06, all twelve of the schedule's remaining months.
    out = dated["delivery"]
    by = {t.period: t for t in out.cash_totals}
    assert [t.period for t in out.cash_totals] == ["FY2026 Q4", "FY2027 Q1", "FY2027 Q2", "FY2027 Q3", "FY2027 Q4",
                                                   "FY2026", "FY2027"]
    assert [m.month for m in out.months if m.fiscal_year == "FY2027"] == [f"2026-{k:02d}" for k in range(7, 13)] + [
        f"2027-{k:02d}" for k in range(1, 7)]
    # FY2027 Q1 = July (one node, 3,476) + August (two nodes, 5,952, and the second node's 300,000 on delivery) +
    # September (5,952)
    assert by["FY2027 Q1"].cash_usd == pytest.approx(3476.0 + 5952.0 + NODE_USD + 5952.0, rel=1e-12)
    assert by["FY2027 Q1"].months == 3 and by["FY2026 Q4"].months == 2
    for t in out.cash_totals:  # each total is the sum of its months, capex and running apart, depreciation apart
        inside = [m for m in out.months if t.period in (m.fiscal_quarter, m.fiscal_year)]
        assert t.cash_usd == pytest.approx(sum(m.cash_usd for m in inside), rel=1e-12)
        assert t.capex_usd + t.opex_usd == pytest.approx(t.cash_usd, rel=1e-12)
        assert t.depreciation_usd == pytest.approx(sum(m.depreciation_usd_per_month for m in inside), rel=1e-12)
    # FY2027 = 3,476 + 11 x 5,952 running, 300,000 capex (August); FY2026 = 300,000 (May) + 2 x 3,476
    assert by["FY2027"].cash_usd == pytest.approx(3476.0 + 11 * 5952.0 + NODE_USD, rel=1e-12)
    assert by["FY2026"].cash_usd == pytest.approx(NODE_USD + 2 * 3476.0, rel=1e-12)


@pytest.mark.parametrize("month, start, expected", [
    ("2026-12", 1, ("FY2026", "FY2026 Q4")),  # the calendar year
    ("2026-01", 1, ("FY2026", "FY2026 Q1")),
    ("2026-07", 7, ("FY2027", "FY2027 Q1")),  # July to June, named by the June
    ("2027-06", 7, ("FY2027", "FY2027 Q4")),
    ("2027-03", 4, ("FY2027", "FY2027 Q4")),  # April to March (the UK's): March closes the year
    ("2027-04", 4, ("FY2028", "FY2028 Q1")),
    ("2026-10", 10, ("FY2027", "FY2027 Q1")),  # October to September (the US government's)
])
def test_fiscal_periods_are_named_by_the_year_they_end_in(month, start, expected):
    assert fiscal_period(month, start) == expected


def test_a_rented_month_pays_its_rent_without_capex_or_depreciation():
    # rented per GPU at the reference's $3/GPU-hour: cash is the bill (GPUs x 3 x 730), nothing else
    p = replan(reference_plan(), growth={"peaks_rps": [40.0, 80.0], "lead_time_days": 30, "start": "2027-01"})
    out = _schedule(p)
    for m in out.months:
        assert m.cash_usd == pytest.approx(m.purchased * 3.0 * 730, rel=1e-12)
        assert (m.capex_paid_usd, m.depreciation_usd_per_month) == (0.0, 0.0)
    assert out.capex_before_schedule_usd == 0.0 and [t.period for t in out.cash_totals] == ["FY2027 Q1", "FY2027"]


def test_the_json_adds_the_cash_and_keeps_every_field(tmp_path, capsys):
    from xlplan.cli import main
    from xlplan.io.planfile import plan_to_yaml

    f = tmp_path / "bought.yaml"
    f.write_text(plan_to_yaml(_bought("order")))
    assert main(["schedule", str(f), "--verify", "none", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["capex_before_schedule_usd"] == NODE_USD and out["fiscal_year_start_month"] == 7
    assert {"order_by", "monthly_usd", "cumulative_usd", "capex_paid_usd", "cash_usd", "depreciation_usd_per_month",
            "fiscal_quarter"} <= set(out["months"][0])
    assert main(["schedule", str(f), "--verify", "none"]) == 0
    text = capsys.readouterr().out
    assert "before the schedule" in text and "FY2027 Q1" in text and "depreciation is not cash" in text


# ------------------------------------------------------------------------------------------------ both spreadsheets

BOOKS = {"order": lambda: _bought("order"), "delivery": lambda: _bought("delivery"),
         "rented": lambda: replan(reference_plan(), growth={"monthly": 0.10, "months": 8, "lead_time_days": 90,
                                                            "start": "2027-01", "fiscal_year_start_month": 4})}


@pytest.fixture(scope="module")
def sheets(tmp_path_factory):
    """(books, {engine: {stem: read(title, coord)}}, problems): each workbook evaluated by LibreOffice and by the
    Excel-grammar engine, and every formula cell that disagrees with the engine's value."""
    require_libreoffice()
    import openpyxl
    from excelgrammar import value

    folder = tmp_path_factory.mktemp("cash")
    books, files = {}, []
    for stem, make in BOOKS.items():
        books[stem] = build(make())
        f = folder / f"{stem}.xlsx"
        f.write_bytes(workbook_bytes(books[stem], caches=False))
        files.append(f)
    readers, problems = {"LibreOffice": {}, "Excel-grammar": {}}, []
    for stem, out, values in zip(books, recalculate(files, folder / "lo"), evaluate_many(files)):
        wb = openpyxl.load_workbook(out, data_only=True)
        readers["LibreOffice"][stem] = lambda t, c, wb=wb: wb[t][c].value
        readers["Excel-grammar"][stem] = lambda t, c, v=values: value(v, t, c)
        js = engine_json(BOOKS[stem](), folder, stem)
        for engine, per in readers.items():
            problems += [f"{engine}: {p}" for p in compare_book(stem, books[stem], per[stem], js)]
    return books, readers, problems


@pytest.mark.slow
def test_both_spreadsheets_agree_with_the_engine_on_every_cash_cell(sheets):
    books, _, problems = sheets
    assert problems == []
    cash = [c for c, cell in books["order"].get("Schedule").cells.items() if cell.formula and c[0] in "WXYZ" and c[1].isdigit()]
    assert len(cash) >= 4 * len(PEAKS)  # capex, running costs, cash and depreciation by formula, each compared above


@pytest.mark.slow
def test_the_totals_block_reads_the_hand_worked_figures(sheets):
    books, readers, _ = sheets
    for engine, per in readers.items():
        for stem, before in (("order", NODE_USD), ("delivery", 0.0)):
            assert per[stem](*name_ref(books[stem], "ScheduleCapexBeforeUSD")) == pytest.approx(before), engine
        sheet = books["delivery"].get("Schedule")
        row = next(int(c[1:]) for c, cell in sheet.cells.items() if c[0] == "A" and c[1:].isdigit() and cell.value == "FY2027 Q1")
        # July 3,476 + August 5,952 + 300,000 + September 5,952 (tests above)
        assert per["delivery"]("Schedule", f"F{row}") == pytest.approx(3476.0 + 5952.0 + NODE_USD + 5952.0, rel=1e-9), engine
        assert per["delivery"]("Schedule", f"C{row}") == 3, engine
        # fiscal years from April on the rented book: 2027-03 closes FY2027, 2027-04 opens FY2028
        sheet = books["rented"].get("Schedule")
        labels = {cell.value for c, cell in sheet.cells.items() if c[0] == "A" and isinstance(cell.value, str)}
        assert {"FY2027 Q4", "FY2028 Q1", "FY2027", "FY2028"} <= labels


def test_cash_formulas_hold_no_number_but_0_and_1():
    # every constant is a named cell (MonthsPerYear, MonthsPerQuarter, the plan's prices), as the rest of the workbook
    import re

    book = build(_bought("order"))
    for title, coord, cell in book.formula_cells():
        if title != "Schedule":
            continue
        text = re.sub(r'"[^"]*"', "", cell.value)
        text = re.sub(r"\$?[A-Z]{1,3}\$?[0-9]+", "", text)
        text = re.sub(r"[A-Za-z_][A-Za-z0-9_.]*", "", text)
        assert set(re.findall(r"\d+(?:\.\d+)?", text)) <= {"0", "1"}, f"{coord}: {cell.value}"


def test_a_bought_fleet_without_its_ownership_is_left_uncounted_never_counted_as_rent():
    # bought, the bill holds depreciation: taking it as cash is the mistake this issue mends, so with no unit price to
    # date the capex the cash stays None rather than the bill
    p = _bought("order")
    out = schedule.schedule(resolve(p), PEAKS[:4], "2026-05", 45, verify="none")
    assert [m.cash_usd for m in out.months] == [None] * 4 and out.cash_totals == []
