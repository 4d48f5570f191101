"""The Schedule sheet's cash, dated: each month's capex paid, running costs, cash and depreciation by formula beside
the month table, totals by fiscal quarter and year (SUMIFS over those columns), and the cumulative cash as a chart.

Part of :mod:`xlplan.excel.tabs.schedule`. The engine's figures (:mod:`xlplan.decide.schedule_cash`) are the cached
values: bought, capex in the month of order or of delivery (``growth.capex_paid_at``), running costs the GPUs held at
5 Cost's running cost per GPU plus hardware operations, depreciation apart and never in cash; rented, the month's rent.
"""

from __future__ import annotations

from xlplan.dates import fiscal_period, month_start
from xlplan.excel.cells import Book, Cell
from xlplan.excel.common import FMT

CASH_COLUMNS = ("Capex paid in", "Capex paid", "Running costs", "Cash out", "Depreciation", "Cumulative cash",
                "Fiscal year", "Fiscal quarter", "New GPUs paid in quarter", "New GPUs paid in year")
"""The cash columns' headers, from column V on. [text]"""

CASH_UNITS = ("month index", "USD", "USD/month", "USD", "USD/month", "USD", "", "", "", "")
"""Their units. [text]"""

FIRST_CASH_COL = 22
"""Column V: the first cash column, after the month table's U. [1]"""

BEFORE = "Of which paid before the schedule"
"""The totals block's line for capex paid before the first month. [text]"""

TOTALS_HEADER = ("Period", "", "Months", "Capex paid", "Running costs", "Cash out", "Depreciation")
"""The totals block's headers, columns A to G. [text]"""


def _calc(formula: str, cached, fmt: str | None = None) -> Cell:
    """A formula cell with the engine's value."""
    return Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt)


def _index(start: str, month: str | None, k: int) -> int:
    """The month ``month`` counted from ``start`` (0), or ``k`` where it is None. [month index]"""
    if month is None:
        return k
    a, b = month_start(start), month_start(month)
    return (b.year - a.year) * 12 + b.month - a.month


def cash_facts(book: Book, sh, sc, r: int) -> None:
    """When capex is paid and the fiscal year's first month, as given, in columns H to L of rows ``r`` and ``r + 1``."""
    sh.put("H", r, Cell("Capex paid at", kind="label"))
    book.define("ScheduleCapexPaidAt", sh, sh.put("K", r, Cell(sc.capex_paid_at, kind="static")))
    sh.put("L", r, Cell("order: the month the order goes out; delivery: the month in service", kind="unit"))
    sh.put("H", r + 1, Cell("Fiscal year starts", kind="label"))
    book.define("ScheduleFYStartMonth", sh, sh.put("K", r + 1, Cell(sc.fiscal_year_start_month, kind="static", fmt="0")))
    sh.put("L", r + 1, Cell("month 1-12; a fiscal year is named by the calendar year it ends in", kind="unit"))


def cash_headers(sh, hdr: int) -> None:
    """The cash columns' headers and units on rows ``hdr`` and ``hdr + 1``."""
    for i, (label, unit) in enumerate(zip(CASH_COLUMNS, CASH_UNITS)):
        sh.put(FIRST_CASH_COL + i, hdr, Cell(label, kind="header"))
        sh.put(FIRST_CASH_COL + i, hdr + 1, Cell(unit, kind="unit"))


def cash_cells(k: int, m, x: int, first: int, last: int, start: str, fy_start: int = 1) -> dict[str, Cell]:
    """Column -> cell of month ``m`` (the ``k``-th, on row ``x``; the months on rows ``first`` to ``last``)."""
    day = f"DATE(B{x},C{x},1)-ScheduleLeadTimeDays"  # the order date: the month's first day less the lead time
    paid_in = (f'=IF(AND(CostMode="buy",K{x}>0,ScheduleCapexPaidAt="order"),'
               f"D{x}+(YEAR({day})-B{x})*MonthsPerYear+MONTH({day})-C{x},D{x})")
    node = "/GPUsPerNode*UnitCapexUSD"
    paid = f"DATE(B${first},C${first}+V{x},1)"  # the first day of the month paid in

    def fiscal(month: str | None) -> tuple[str, str]:
        return ("", "") if month is None else fiscal_period(month, fy_start)

    return {
        # the month (index) in which this month's new GPUs are paid for; capex below sums the GPUs paid in each month
        "V": _calc(paid_in, _index(start, m.capex_paid_month, k), "0"),
        "W": _calc(f'=IF(CostMode="buy",SUMIFS(K${first}:K${last},V${first}:V${last},D{x}){node},0)', m.capex_paid_usd, FMT["usd"]),
        # running costs: bought, the GPUs held at 5 Cost's running cost per GPU plus hardware operations; rented, the rent
        "X": _calc(f'=IF(CostMode="buy",J{x}*RunningUSDPerGPUMonth+FixedUSDPerMonth,N{x})', m.opex_usd_per_month, FMT["usd"]),
        "Y": _calc(f"=W{x}+X{x}", m.cash_usd, FMT["usd"]),
        "Z": _calc(f'=IF(CostMode="buy",J{x}{node}*(1-ResidualFractionUsed)/LifeMonths,0)', m.depreciation_usd_per_month,
                   FMT["usd"]),
        "AA": _calc(f"=ScheduleCapexBeforeUSD+Y{x}" if k == 0 else f"=AA{x - 1}+Y{x}", m.cumulative_cash_usd, FMT["usd"]),
        # named by the calendar year the fiscal year ends in: a month at or past the start month belongs to the next
        "AB": _calc(f'="FY"&FIXED(B{x}+IF(AND(ScheduleFYStartMonth>1,C{x}>=ScheduleFYStartMonth),1,0),0,TRUE)', m.fiscal_year),
        "AC": _calc(f'=AB{x}&" Q"&FIXED(INT(MOD(C{x}-ScheduleFYStartMonth,MonthsPerYear)/MonthsPerQuarter)+1,0,TRUE)',
                    m.fiscal_quarter),
        # the fiscal year and quarter in which this month's new GPUs are paid for (before the schedule too), for the totals
        "AE": _calc(f'=IF(AND(CostMode="buy",K{x}>0),"FY"&FIXED(YEAR({paid})+IF(AND(ScheduleFYStartMonth>1,MONTH({paid})>='
                    f'ScheduleFYStartMonth),1,0),0,TRUE),"")', fiscal(m.capex_paid_month)[0]),
        "AD": _calc(f'=IF(AE{x}="","",AE{x}&" Q"&FIXED(INT(MOD(MONTH({paid})-ScheduleFYStartMonth,MonthsPerYear)/MonthsPerQuarter)+1,0,TRUE))',
                    fiscal(m.capex_paid_month)[1]),
    }


def cash_totals_block(book: Book, sh, sc, r: int, first: int, last: int) -> int:
    """The capex paid before the schedule, then each fiscal quarter's and year's totals by SUMIFS over the month
    table's cash columns, from row ``r``; returns the row after it."""
    sh.put("A", r, Cell("Cash by fiscal quarter and year (depreciation beside it, not in cash; capex in the period it is "
                        "paid in, before the first month too)", kind="label", bold=True))
    for i, label in enumerate(TOTALS_HEADER):
        if label:
            sh.put(i + 1, r + 1, Cell(label, kind="header"))
    x = r + 2
    sh.put("A", x, Cell(BEFORE, kind="static"))
    before = (f'=IF(CostMode="buy",SUMIFS(K{first}:K{last},V{first}:V{last},"<0")/GPUsPerNode*UnitCapexUSD,0)')
    book.define("ScheduleCapexBeforeUSD", sh, sh.put("D", x, _calc(before, sc.capex_before_schedule_usd, FMT["usd"])))
    sh.put("F", x, _calc(f"=D{x}", sc.capex_before_schedule_usd, FMT["usd"]))
    for t in sc.cash_totals:
        x += 1
        key = "AC" if t.kind == "quarter" else "AB"
        within = f"{key}${first}:{key}${last},$A{x}"
        sh.put("A", x, Cell(t.period, kind="static", bold=t.kind != "quarter"))
        sh.put("C", x, _calc(f"=COUNTIFS({within})", t.months, "0"))
        paid_key = "AD" if t.kind == "quarter" else "AE"  # capex by the period it is paid in, before the schedule too
        sh.put("D", x, _calc(f'=IF(CostMode="buy",SUMIFS(K${first}:K${last},{paid_key}${first}:{paid_key}${last},$A{x})'
                             f'/GPUsPerNode*UnitCapexUSD,0)', t.capex_usd, FMT["usd"]))
        for col, src, cached in (("E", "X", t.opex_usd), ("G", "Z", t.depreciation_usd)):
            sh.put(col, x, _calc(f"=SUMIFS({src}${first}:{src}${last},{within})", cached, FMT["usd"]))
        sh.put("F", x, _calc(f"=D{x}+E{x}", t.cash_usd, FMT["usd"]))
    return x + 1


def cash_chart(sh, hdr: int, first: int, last: int, anchor: int) -> None:
    """The cumulative cash, month by month, anchored at row ``anchor``."""
    sh.charts.append({"kind": "scatter", "title": "Cumulative cash out, capex dated, month by month", "x_title": "Month index",
                      "y_title": "USD", "x": ("D", first, last), "y_format": "#,##0",
                      "series": [{"col": "AA", "rows": (hdr, last), "values_from": first}],
                      "anchor": f"A{anchor}", "width": 22, "height": 8})
