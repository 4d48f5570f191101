"""The Schedule sheet: the fleet month by month as the peak grows (`xlplan schedule`), each order dated by formula.

Each month's fleet is a full re-plan at that month's peak: engine values (shaded, with a STALE flag by formula).
Everything else is a formula: the peak from the growth, the GPUs held (bought: the running maximum; rented: the month's
own), new GPUs, the order-by
date (the month's first day minus the lead time), GPUs billed, the month's cost, the running total, and the API's
cost for the same month's traffic.
"""

from __future__ import annotations

import datetime as dt
import json

from xlplan.excel.cells import Book, Cell, date_serial
from xlplan.excel.common import DECISION_TABS, FMT, NA, NONE, Engine, Rows
from xlplan.excel.figures import Decisions
from xlplan.excel.tabs.options import stale_flag
from xlplan.excel.tabs.schedule_cash import cash_cells, cash_chart, cash_facts, cash_headers, cash_totals_block

SCHEDULE_COLUMNS = ("Month", "Year", "Month no.", "Index", "Peak", "TP", "Load", "With redundancy", "Needed", "Held", "New",
                    "Order by", "GPUs billed", "Monthly", "Cumulative", "Binds", "API monthly", "API cumulative",
                    "Self-hosted with ops, cumulative", "Cheaper self-hosted this month", "Cumulative at or below the API")
UNITS = ("YYYY-MM", "", "", "months", "req/s", "GPUs", "GPUs", "GPUs", "GPUs", "GPUs", "GPUs", "date", "GPUs", "USD/month",
         "USD", "", "USD/month", "USD", "USD", "TRUE | FALSE", "TRUE | FALSE")
LAST_COL = "AE"
NO_API = "no API price"
NOT_WITHIN = "not within the schedule"


def _growth_section(book: Book, sh, e: Engine) -> None:
    """The plan file's growth section as given, so `xlplan read` gives the plan back."""
    if e.plan.growth is None:
        return
    r = sh.row
    sh.put("A", r, Cell("Growth section of the plan file (read back by `xlplan read`)", kind="label"))
    coord = sh.put("E", r, Cell(json.dumps(e.plan.growth.model_dump(mode="json", exclude_unset=True), sort_keys=True),
                                kind="static"))
    book.define("GrowthSection", sh, coord)
    sh.row += 1


def _growth_rate(e: Engine) -> float | None:
    """The plan's growth per month, or None where it gives monthly peaks instead. [fraction/month]"""
    return e.plan.growth.monthly if (e.plan.growth and e.plan.growth.monthly is not None) else None


def _schedule_facts(book: Book, sh, e: Engine, sc, r: int) -> None:
    """The growth, the lead time, the growth per month and the API sentence, from row ``r``."""
    sh.put("A", r, Cell("Growth", kind="label"))
    sh.put("C", r, Cell(sc.growth, kind="static"))
    sh.put("A", r + 1, Cell("Lead time", kind="label"))
    coord = sh.put("C", r + 1, Cell(sc.lead_time_days, kind="static", fmt=FMT["int"]))
    sh.put("D", r + 1, Cell("days from order to GPUs in service", kind="unit"))
    book.define("ScheduleLeadTimeDays", sh, coord)
    rate = _growth_rate(e)
    if rate is not None:
        sh.put("A", r + 2, Cell("Growth per month", kind="label"))
        coord = sh.put("C", r + 2, Cell(rate, kind="static", fmt="0.0%"))
        book.define("ScheduleGrowth", sh, coord)
    sh.put("A", r + 3, Cell(f"API: {sc.breakeven_words}. " + (f"The binding constraint changes in {sc.binding_change_month}."
                                                              if sc.binding_change_month else "The binding constraint stays the same.")
                            + (f" Stops: {sc.stopped}" if sc.stopped else ""), kind="static", wrap=True))
    sh.merges.append(f"A{r + 3}:{LAST_COL}{r + 3}")


def _calc(formula: str, cached, fmt: str | None = None) -> Cell:
    """A formula cell with the engine's value."""
    return Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt)


def _month_cells(k: int, m, x: int, rate: float | None, has_api: bool) -> dict[str, Cell]:
    """Column -> cell of month ``m`` (the ``k``-th) on row ``x``: its re-plan as engine values, the rest by formula."""
    prev = x - 1
    year, month = (int(v) for v in m.month.split("-"))
    api = (f'=IF(ISNUMBER(APIBlendedUSDPerMTok),E{x}*(PromptMean+OutputMean)*AvgUtilisation*HoursPerMonth*SecondsPerHour'
           f'*APIBlendedUSDPerMTok/TokensPerMillion,"{NA}")')
    return {
        "A": Cell(m.month, kind="static"),
        "B": Cell(year, kind="static", fmt="0"),
        "C": Cell(month, kind="static", fmt="0"),
        "D": Cell(k, kind="static", fmt="0"),
        "E": (_calc(f"=PeakRate*(1+ScheduleGrowth)^D{x}", m.peak_rps, FMT["num"]) if rate is not None else
              Cell(m.peak_rps, kind="static", fmt=FMT["num"])),
        "F": Cell(m.tp, kind="static", fmt=FMT["gpus"]),
        "G": Cell(m.load, kind="static", fmt=FMT["gpus"]),
        "H": Cell(m.with_redundancy, kind="static", fmt=FMT["gpus"]),
        # "Needed": whole purchasing units at this month's peak alone (before the running maximum of what is bought)
        "I": Cell(m.needed_purchased, kind="static", fmt=FMT["gpus"]),
        # "Held": bought, every GPU bought so far (the running maximum); rented by the node, this month's units;
        # rented per GPU, this month's fleet with redundancy (xlplan.decide.schedule.held_gpus)
        "J": _calc(f'=IF(CostMode="rent_per_gpu",H{x},I{x})' if k == 0 else
                   f'=IF(CostMode="buy",MAX(J{prev},I{x}),IF(CostMode="rent_per_node",I{x},H{x}))', m.purchased, FMT["gpus"]),
        # "New": beyond what the month before held (a rented fleet given back in a dip is rented again)
        "K": _calc(f"=J{x}" if k == 0 else f"=MAX(J{x}-J{prev},0)", m.new_gpus, FMT["gpus"]),
        # a date cell, not TEXT(…, "yyyy-mm-dd"): a TEXT format code is read in the spreadsheet's locale (German Excel
        # wants "JJJJ"), a cell's number format is stored once and shown in each
        "L": _calc(f'=IF(K{x}>0,DATE(B{x},C{x},1)-ScheduleLeadTimeDays,"")',
                   date_serial(dt.date.fromisoformat(m.order_by)) if m.order_by else "", FMT["date"]),
        "M": _calc(f'=IF(BillPurchased,J{x},H{x})', m.billed_gpus, FMT["gpus"]),
        "N": _calc(f"=M{x}*GPUUSDPerHour*HoursPerMonth+FixedUSDPerMonth", m.monthly_usd, FMT["usd"]),
        "O": _calc(f"=N{x}" if k == 0 else f"=O{prev}+N{x}", m.cumulative_usd, FMT["usd"]),
        "P": Cell(m.binding, kind="static"),
        "Q": _calc(api, m.api_monthly_usd if has_api else NA, FMT["usd"]),
        "R": _calc(f"=Q{x}" if k == 0 else f'=IF(ISNUMBER(Q{x}),R{prev}+Q{x},"{NA}")', _or_na(m.api_cumulative_usd), FMT["usd"]),
        # (N + ops) added as one month's figure, as the engine adds it: the same float in both
        "S": _calc(f"=N{x}+OpsUSDPerMonth" if k == 0 else f"=S{prev}+(N{x}+OpsUSDPerMonth)", m.all_in_cumulative_usd, FMT["usd"]),
        "T": _calc(f'=IF(ISNUMBER(Q{x}),N{x}+OpsUSDPerMonth<Q{x},"{NA}")', _or_na(m.self_hosted_cheaper)),
        "U": _calc(f'=IF(ISNUMBER(R{x}),S{x}<=R{x},"{NA}")', _or_na(m.cumulative_at_or_below_api)),
    }


def _or_na(v):
    """An engine figure, or 'n/a' where the schedule has no API price to give it. [mixed]"""
    return NA if v is None else v


def _api_months(book: Book, sh, sc, r: int, first: int, last: int) -> None:
    """The monthly crossover and the cumulative break-even from row ``r``, each a formula over the month table's
    flags (rows ``first`` to ``last``) and named for what it is."""
    months = f"A{first}:A{last}"
    priced = sc.months and sc.months[0].api_monthly_usd is not None
    items = (
        ("ScheduleMonthlyCrossover", "Monthly crossover",
         f'=IF(ISNUMBER(Q{first}),IFERROR(INDEX({months},MATCH(NOT(T{first}),T{first}:T{last},0)),"{NONE}"),"{NO_API}")',
         (sc.monthly_crossover_month or NONE) if priced else NO_API,
         ("the first month whose monthly comparison with the API differs from the first month's; not a break-even: "
         "the months before it are not counted")),
        ("ScheduleCumulativeBreakeven", "Cumulative break-even",
         f'=IF(ISNUMBER(Q{first}),IFERROR(INDEX({months},MATCH(TRUE,U{first}:U{last},0)),"{NOT_WITHIN}"),"{NO_API}")',
         (sc.cumulative_breakeven_month or NOT_WITHIN) if priced else NO_API,
         ("the first month at which self-hosting's total since the first month, engineering and on-call included, is at "
         "or below the API's")),
    )
    for i, (name, label, formula, cached, how) in enumerate(items):
        sh.put("A", r + i, Cell(label, kind="label"))
        book.define(name, sh, sh.put("C", r + i, _calc(formula, cached)))
        sh.put("E", r + i, Cell(how, kind="note"))


def _month_table(book: Book, sh, e: Engine, sc, hdr: int) -> int:
    """The header, the units and a row per month from row ``hdr``; returns the last row."""
    for i, label in enumerate(SCHEDULE_COLUMNS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
        sh.put(i + 1, hdr + 1, Cell(UNITS[i], kind="unit"))
    rate = _growth_rate(e)
    has_api = any(m.api_monthly_usd is not None for m in sc.months)
    first, last = hdr + 2, hdr + 1 + len(sc.months)
    cash = sc.months[0].cash_usd is not None
    if cash:
        cash_headers(sh, hdr)
    for k, m in enumerate(sc.months):
        x = hdr + 2 + k
        for col, cell in _month_cells(k, m, x, rate, has_api).items():
            sh.put(col, x, cell)
        for col, cell in (cash_cells(k, m, x, first, last, sc.start, sc.fiscal_year_start_month) if cash else {}).items():
            sh.put(col, x, cell)
    book.define("ScheduleFirstMonth", sh, f"A{first}")  # the month the schedule starts: `check` rebuilds it from there
    return last


def schedule_tab(book: Book, e: Engine, d: Decisions) -> None:
    """Lay out the Schedule sheet (only when the plan has a growth section with a lead time)."""
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(DECISION_TABS[1], "When to order: the fleet month by month as the peak grows, with order dates.",
                    widths={"A": 10, **{L(i): 11 for i in range(2, 30)}, "L": 12}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
    rows.title("Schedule — when each order must go out as traffic grows",
               "Each month is the closed form at its peak (the largest of the memory, compute, latency and queueing paths), "
               "not simulated: `xlplan schedule` adds the shortfall it simulates; GPUs bought stay bought, rented ones follow the "
               "month (Paid as, 1 Inputs); an order goes out "
               "its lead time before the month it is needed.")
    stale_flag(book, sh, e, "ScheduleStale", "ScheduleMonths")
    _growth_section(book, sh, e)
    sc = d.schedule
    if sc is None:
        sh.put("A", sh.row, Cell(d.schedule_note, kind="note"))
        sh.row += 1
        return
    r = sh.row
    _schedule_facts(book, sh, e, sc, r)
    cash_facts(book, sh, sc, r)
    hdr = r + 7
    end = _month_table(book, sh, e, sc, hdr)
    _api_months(book, sh, sc, r + 4, hdr + 2, end)
    sh.freeze = f"B{hdr + 2}"
    sh.row = end + 1
    first, last = hdr + 2, end
    sh.charts.append({"kind": "scatter", "title": "GPUs held and GPUs the load needs, month by month", "x_title": "Month index",
                      "y_title": "GPUs", "x": ("D", first, last),
                      # titles from the header row, values from the first month (below the units row)
                      "series": [{"col": c, "rows": (hdr, last), "values_from": first} for c in "GHJ"],
                      "anchor": f"A{end + 2}", "width": 22, "height": 8})
    sh.row = end + 20
    if sc.months and sc.months[0].cash_usd is not None:
        sh.row = cash_totals_block(book, sh, sc, sh.row, first, last) + 1
        cash_chart(sh, hdr, first, last, sh.row)
        sh.row += 18
    sh.print_area = f"A1:{LAST_COL}{sh.row}"  # the charts and the totals below the table too
