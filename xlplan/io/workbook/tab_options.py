"""The Options sheet: the plan re-solved on every catalog GPU and format (`xlplan compare`), ranked by $/M tokens.

Each option's fleet is a full re-plan on another GPU: engine values, shaded like the breakpoints, computed when the
workbook was built (a STALE flag by formula says when the inputs have moved since). Its cost follows by formula:
price x GPUs on the bill x hours, and $/M tokens over the plan's own tokens per month.
"""

from __future__ import annotations

from xlplan.figures import Decisions
from xlplan.io.workbook import staleness
from xlplan.io.workbook.cells import Book, Cell, Sheet
from xlplan.io.workbook.common import DECISION_TABS, FMT, Engine, Rows
from xlplan.note_format import PRICE_MISSING

STALE = staleness.STALE
FRESH = staleness.CURRENT


def stale_flag(book: Book, sh: Sheet, e: Engine, name: str, value: str) -> None:
    """A row with the flag of an engine-searched sheet's values: STALE when any input they depend on (the explicit map,
    :data:`xlplan.io.workbook.staleness.VALUE_INPUTS`) differs from its value at build time (the Summary's snapshot)."""
    r = sh.row
    coord = sh.put("A", r, Cell(staleness.flag_formula(value), formula=True, cached=FRESH, kind="flag"))
    book.define(name, sh, coord)
    sh.row += 1


OPTION_COLUMNS = ("Rank", "GPU", "Weights", "Cache", "TP", "Load", "With redundancy", "Purchased", "Binds", "Price",
                  "GPUs billed", "Fixed", "Monthly", "$/M tokens", "Price source")
"""Columns A-O of the options table; K, M and N are formulas, the rest engine values."""


def options_tab(book: Book, e: Engine, d: Decisions) -> None:
    """Lay out the Options sheet."""
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(DECISION_TABS[0], "Which hardware: the plan on every catalog GPU and format, ranked by $/M tokens.",
                    widths={"A": 8, "B": 34, **{L(i): 11 for i in range(3, 15)}, "O": 90}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
    rows.title("Options — which hardware gives the lowest cost per token for this traffic and promise",
               "Each row is the closed form on another GPU and format (the largest of the memory, compute, latency and queueing "
               "paths, as the Answer's is before simulation), not simulated: `xlplan compare` verifies the cheapest five in "
               "simulation. The plan's own row is marked. Quantised weights change the model's outputs: evaluate before you buy.")
    stale_flag(book, sh, e, "OptionsStale", "OptionsTable")
    sh.put("A", sh.row, Cell(d.recommendation, kind="static", wrap=True))
    sh.merges.append(f"A{sh.row}:O{sh.row}")
    sh.row += 2
    hdr = sh.row
    for i, label in enumerate(OPTION_COLUMNS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    units = ("", "", "", "", "GPUs", "GPUs", "GPUs", "GPUs", "", "USD/GPU-hour", "GPUs", "USD/month", "USD/month", "USD/Mtok", "dated")
    for i, u in enumerate(units):
        sh.put(i + 1, hdr + 1, Cell(u, kind="unit"))
    for k, o in enumerate(d.options):
        r = hdr + 2 + k
        label = o.gpu_name + (" (the plan)" if o.is_plan else "")
        for i, v in enumerate((k + 1, label, o.weights_dtype, o.kv_dtype)):
            sh.put(i + 1, r, Cell(v, kind="static", bold=o.is_plan))
        if not o.feasible:
            sh.put("E", r, Cell(f"cannot be met: {o.reason}", kind="static"))
            continue
        for col, v in (("E", o.tp), ("F", o.load), ("G", o.with_redundancy), ("H", o.purchased), ("I", o.binding)):
            sh.put(col, r, Cell(v, kind="static", fmt=FMT["gpus"] if col in "EFGH" else None, bold=o.is_plan))
        sh.put("J", r, Cell(o.usd_per_gpu_hour if o.usd_per_gpu_hour is not None else PRICE_MISSING, kind="static", fmt=FMT["usd2"]))
        sh.put("K", r, Cell(f'=IF(BillPurchased,H{r},G{r})' if not o.billed_purchased_always else f"=H{r}",
                            formula=True, cached=o.billed_gpus, kind="calc", fmt=FMT["gpus"]))
        sh.put("L", r, Cell(o.fixed_usd_per_month if o.fixed_usd_per_month is not None else PRICE_MISSING, kind="static",
                            fmt=FMT["usd"]))
        sh.put("M", r, Cell(f'=IF(ISNUMBER(J{r}),J{r}*K{r}*HoursPerMonth+L{r},"{PRICE_MISSING}")', formula=True,
                            cached=o.monthly_usd if o.monthly_usd is not None else PRICE_MISSING, kind="calc", fmt=FMT["usd"]))
        sh.put("N", r, Cell(f'=IF(ISNUMBER(M{r}),M{r}*TokensPerMillion/TokensPerMonth,"{PRICE_MISSING}")', formula=True,
                            cached=o.usd_per_mtok if o.usd_per_mtok is not None else PRICE_MISSING, kind="calc", fmt=FMT["usd_mtok"]))
        sh.put("O", r, Cell(o.price_note or o.reason, kind="static"))
    end = hdr + 1 + len(d.options)
    sh.freeze = f"C{hdr + 2}"
    sh.print_area = f"A1:O{end}"
    sh.row = end + 1
