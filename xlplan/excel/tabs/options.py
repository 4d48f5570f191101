"""The Options sheet, `xlplan compare --all` as a table: datacenter GPUs at the plan's weights format ranked by $/M tokens as the plan pays, then the rest, marked and not ranked.

Each option's fleet is a full re-plan on another GPU: engine values, shaded like the breakpoints, computed when the
workbook was built (a STALE flag by formula says when the inputs have moved since). Its cost follows by formula:
price x GPUs on the bill x hours, and $/M tokens over the plan's own tokens per month. The order, the ranks and the
recommendation's lines are the engine's (:func:`xlplan.decide.hardware_choice.choose`); the writer derives none of them.
"""

from __future__ import annotations

from xlplan.excel import staleness
from xlplan.excel.cells import Book, Cell, Sheet
from xlplan.excel.common import DECISION_TABS, FMT, Engine, Rows
from xlplan.excel.figures import Decisions
from xlplan.schema.decisions import GPUOption
from xlplan.words import PRICE_MISSING

STALE = staleness.STALE
FRESH = staleness.CURRENT


def stale_flag(book: Book, sh: Sheet, e: Engine, name: str, value: str) -> None:
    """A row with the flag of an engine-searched sheet's values: STALE when any input they depend on (the explicit map,
    :data:`xlplan.excel.staleness.VALUE_INPUTS`) differs from its value at build time (the Summary's snapshot)."""
    r = sh.row
    coord = sh.put("A", r, Cell(staleness.flag_formula(value), formula=True, cached=FRESH, kind="flag"))
    book.define(name, sh, coord)
    sh.stale_flag = name
    sh.row += 1


OPTION_COLUMNS = ("Rank", "GPU", "Weights", "Cache", "TP", "Load", "With redundancy", "Purchased", "Binds", "Price",
                  "GPUs billed", "Fixed", "Monthly", "$/M tokens", "Datacenter", "Format change", "Caveats")
"""Columns A-Q of the options table; K, M and N are formulas, the rest engine values."""

UNITS = ("", "", "", "", "GPUs", "GPUs", "GPUs", "GPUs", "", "USD/GPU-hour", "GPUs", "USD/month", "USD/month", "USD/Mtok",
         "licence", "", "licence, price source and date, quality")
"""The unit row under :data:`OPTION_COLUMNS`."""

ELIGIBLE = {True: "yes", False: "no: GeForce licence", None: "not stated"}
"""The Datacenter column: whether the option's GPU may be deployed in a datacenter (the catalog's flag). [text]"""


def _fleet_and_cost(sh: Sheet, r: int, o: GPUOption) -> None:
    """Columns E-N of a feasible option: its fleet (engine values) and its bill and $/M tokens (formulas)."""
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


def _option_row(sh: Sheet, r: int, o: GPUOption, rank: int | None) -> None:
    """One option's row: its rank (None: outside the ranking), what it is, its fleet and cost, and its marks."""
    label = o.gpu_name + (" (the plan)" if o.is_plan else "")
    for col, v in (("A", rank), ("B", label), ("C", o.weights_dtype), ("D", o.kv_dtype)):
        if v is not None:
            sh.put(col, r, Cell(v, kind="static", bold=o.is_plan))
    if o.feasible:
        _fleet_and_cost(sh, r, o)
    else:
        sh.put("E", r, Cell(f"cannot be met: {o.reason}", kind="static"))
    sh.put("O", r, Cell(ELIGIBLE[o.eligible], kind="static"))
    if o.format_change:
        sh.put("P", r, Cell(o.format_change, kind="static"))
    sh.put("Q", r, Cell("; ".join(o.caveats) or o.price_note or o.reason, kind="static"))


def _table(sh: Sheet, options: list[GPUOption]) -> None:
    """The header, then the ranked options (numbered in the engine's order), then the rest under a line of their own."""
    hdr = sh.row
    for i, (label, unit) in enumerate(zip(OPTION_COLUMNS, UNITS)):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
        sh.put(i + 1, hdr + 1, Cell(unit, kind="unit"))
    r, rank, apart = hdr + 2, 0, False
    for o in options:  # the engine's order: ranked ones (and the plan's own) first
        if not (o.ranked or o.is_plan or apart):  # the first option outside the ranking: a line says why
            sh.put("A", r, Cell(NOT_RANKED, kind="section"))
            r, apart = r + 1, True
        rank += o.ranked
        _option_row(sh, r, o, rank if o.ranked else None)
        r += 1
    sh.freeze = f"C{hdr + 2}"
    sh.row = r


NOT_RANKED = ("Not ranked — GeForce cards (their driver licence forbids datacenter deployment) and other weights formats "
              "(another checkpoint, whose outputs differ), each marked, as `xlplan compare --all` shows them")
"""The line between the ranked options and the rest. [text]"""


def options_tab(book: Book, e: Engine, d: Decisions) -> None:
    """Lay out the Options sheet: the flag, the recommendation's lines, the ranked options, then the rest."""
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(DECISION_TABS[0], "Which hardware: datacenter GPUs at the plan's weights format, ranked by $/M tokens as "
                    "the plan pays; the rest below, marked, not ranked.",
                    widths={"A": 8, "B": 34, **{L(i): 11 for i in range(3, 15)}, "O": 20, "P": 26, "Q": 100},
                    print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
    rows.title("Options — which hardware gives the lowest cost per token for this traffic and promise",
               "Ranked: the GPUs that may be deployed in a datacenter, at the plan's own weights format (any cache format "
               "the GPU runs), priced the way the plan pays (Paid as); a missing price reads 'price missing' and ranks after "
               "every priced option. Each row is the closed form (the largest of the memory, compute, latency and queueing "
               "paths, as the Answer's is before simulation), not simulated: `xlplan compare` verifies the cheapest five in "
               "simulation. The plan's own row is marked.")
    stale_flag(book, sh, e, "OptionsStale", "OptionsTable")
    for line in d.recommendation:  # `xlplan compare`'s lines, one each
        sh.put("A", sh.row, Cell(line, kind="static", wrap=True))
        sh.merges.append(f"A{sh.row}:Q{sh.row}")
        sh.row += 1
    sh.row += 1
    _table(sh, d.options)
    sh.print_area = f"A1:Q{sh.row - 1}"
