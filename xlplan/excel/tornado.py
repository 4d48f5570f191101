"""The tornado on 6 Sensitivities: how far each standard what-if moves the monthly cost from the plan's, largest first.

Every figure is a formula over the what-if rows above it: each row's change (its monthly cost minus ``MonthlyCostUSD``),
its size to the cent (so that two changes of one GPU-month tie in every engine, whatever their last bits; an
infeasible row's is -1, so it comes last), its rank by size (ties in the rows' order), and the rows put in rank order,
which the horizontal bar chart reads. The order is worked out by the sheet, so it follows an
edited row; the cached values are read from the what-if rows' own cells and the engine's monthly cost.
"""

from __future__ import annotations

from xlplan.excel.cells import Cell, Sheet
from xlplan.excel.common import FMT, Engine
from xlplan.excel.formulas import rounded

TITLE = "Monthly cost of each what-if minus the plan's (USD/month), largest change first"
"""The chart's title: what its bars show."""

CENTS = 2
"""Decimals of a change's size in the ranking. [digits]"""

HEADERS = ("What-if, largest change first", "Change [USD/month]", "Rank", "Row's change [USD/month]",
           "Row's size [USD/month, to the cent]", "Row's rank")
"""Columns A to F of the tornado's table: the ranked rows the chart reads, then the what-if rows' own figures."""


def _ranks(sizes: list[float]) -> list[int]:
    """Each size's rank, largest first, ties in the given order (what column F's formula gives). [1-based]"""
    return [1 + sum(sizes[j] >= x for j in range(i)) + sum(sizes[j] > x for j in range(i + 1, len(sizes)))
            for i, x in enumerate(sizes)]


def _rank_formula(sizes: list[str], i: int) -> str:
    """Column F of the ``i``-th row: one plus the rows before it at least as large and the rows after it larger."""
    x = sizes[i]
    return "=1" + "".join(f"+({s}>={x})" for s in sizes[:i]) + "".join(f"+({s}>{x})" for s in sizes[i + 1:])


def _header_row(last: int) -> int:
    """The tornado table's header row, below the what-if table's ``last`` row, a blank row and the heading."""
    return last + 3


def tornado_cells(sh: Sheet, e: Engine, first: int, n: int, last: int) -> None:
    """The tornado's table for the ``n`` standard what-if rows from row ``first`` (below the what-if table, which ends
    at row ``last``): each row's change, size and rank (columns D to F, in the rows' order), and the rows in rank
    order (A and B)."""
    top = _header_row(last)
    plan_usd = e.sol.bill.monthly_usd
    rows = [first + i for i in range(n)]
    here = [top + 1 + i for i in range(n)]
    changes, sizes = [], []
    for r, t in zip(rows, here):
        monthly = sh.cells[f"M{r}"].cached
        change = monthly - plan_usd if isinstance(monthly, (int, float)) and not isinstance(monthly, bool) else ""
        changes.append(change)
        sh.put("D", t, Cell(f'=IF(ISNUMBER(M{r}),M{r}-MonthlyCostUSD,"")', formula=True, cached=change, kind="calc",
                            fmt=FMT["usd"]))
        sizes.append(rounded(abs(change), CENTS) if change != "" else -1)
        sh.put("E", t, Cell(f"=IF(ISNUMBER(D{t}),ROUND(ABS(D{t}),{CENTS}),-1)", formula=True, cached=sizes[-1], kind="calc",
                            fmt=FMT["usd"]))
    ranks = _ranks(sizes)
    labels = [sh.cells[f"A{r}"].cached for r in rows]
    for i, t in enumerate(here):
        sh.put("F", t, Cell(_rank_formula([f"E{x}" for x in here], i), formula=True, cached=ranks[i], kind="calc", fmt="0"))
        sh.put("C", t, Cell(i + 1, kind="label", fmt="0"))
        at = ranks.index(i + 1)
        which = f"MATCH(C{t},F{here[0]}:F{here[-1]},0)"
        sh.put("A", t, Cell(f"=INDEX(A{rows[0]}:A{rows[-1]},{which})", formula=True, cached=labels[at], kind="calc"))
        sh.put("B", t, Cell(f"=INDEX(D{here[0]}:D{here[-1]},{which})", formula=True, cached=changes[at], kind="calc",
                            fmt=FMT["usd"]))


def tornado(sh: Sheet, e: Engine, first: int, n: int, last: int) -> int:
    """The tornado below the what-if table (which ends at row ``last``): a heading, the table (:func:`tornado_cells`)
    and its chart beside it; returns the last row the chart reaches."""
    hdr = _header_row(last)
    sh.put("A", hdr - 1, Cell("Tornado — each what-if's monthly cost minus the plan's (MonthlyCostUSD on 5 Cost), ranked by "
                          "size; an infeasible row last, with no bar", kind="section"))
    for i, label in enumerate(HEADERS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    tornado_cells(sh, e, first, n, last)
    end = hdr + n
    sh.charts.append({"kind": "bar", "horizontal": True, "title": TITLE, "x_title": "What-if", "y_title": "USD/month",
                      "x": ("A", hdr + 1, end), "series": [("B", hdr, end)], "y_format": FMT["usd"],
                      "anchor": f"H{hdr}", "width": 18, "height": 8})
    return max(end, hdr + 16)  # the chart's 8 cm is about 16 rows
