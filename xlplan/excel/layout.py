"""What goes in each cell of the capacity-note workbook.

:func:`build` lays out the six tabs of the note and the supporting sheets as a
:class:`~xlplan.excel.cells.Book`: inputs as constants, every computed cell
as a native Excel formula over defined names, each with the value the engine
computed for it (the cache). Formulas use only functions LibreOffice 7.4 also
computes (INDEX/MATCH, ROUNDUP, LN, EXP, SQRT, MIN, MAX, IF, AND, OR, COUNT,
ISNUMBER, MOD), and no number is written inside a formula: every constant is a
labelled cell on the ``Constants`` sheet.
"""

from __future__ import annotations

from xlplan.excel.cells import Book
from xlplan.excel.common import (
    CATALOG_FIRST_ROW,
    DECISION_TABS,
    GPU_COLUMNS,
    MODEL_COLUMNS,
    MODEL_EXTRA,
    REVIEW_TAB,
    SIX_TABS,
    SUMMARY_TAB,
    SUPPORT_TABS,
    Engine,
)
from xlplan.excel.figures import Figures
from xlplan.excel.staleness import flag_engine_values
from xlplan.excel.support import CHECKS, catalog_sheets, changelog_sheet, checks_sheet, constants_sheet
from xlplan.excel.tabs.constraints import constraints_tab
from xlplan.excel.tabs.fleet_cost import cost_tab, fleet_tab
from xlplan.excel.tabs.inputs import inputs_tab
from xlplan.excel.tabs.model import model_tab
from xlplan.excel.tabs.options import options_tab
from xlplan.excel.tabs.schedule import schedule_tab
from xlplan.excel.tabs.sensitivities import sensitivities_tab
from xlplan.excel.tabs.summary import summary_tab

__all__ = ["CATALOG_FIRST_ROW", "CHECKS", "GPU_COLUMNS", "MODEL_COLUMNS", "MODEL_EXTRA", "SIX_TABS", "SUPPORT_TABS", "build"]


def build(fig: Figures, formulas: str = "native", traffic=None, namespace: str = "", review=None) -> Book:
    """Lay out the workbook of a plan's figures (:func:`xlplan.excel.book.figures`): the six tabs of the note, then the
    supporting sheets. Nothing here computes a figure: every cached value is read from ``fig``.

    ``formulas='udf'`` writes the variant whose key calculation cells call the xlplan
    Excel functions (``=MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)``)
    instead of native formulas; the default carries native formulas with an add-in
    cross-check beside each. ``namespace`` prefixes every call to the functions
    (xlwings Server registers them as ``XLWINGS.MEMORY_GPUS`` by default). Where the figures carry the fleet
    simulated at peak (``fig.result.verified``), tab 4 shows it: engine values and a chart, like the breakpoints.
    ``review`` (a :class:`~xlplan.schema.review.ReviewOut` of the plan, from `xlplan review --workbook`) adds the Review
    tab after the six, before Options and Schedule.
    """
    e = Engine(fig, formulas, namespace)
    d = fig.decisions
    book = Book()
    summary_tab(book, e, d)
    inputs_tab(book, e)
    # Supporting sheets are laid out first where later tabs read their sizes, then moved behind the six.
    n_models, n_gpus = catalog_sheets(book, e)
    model_tab(book, e, n_models, n_gpus)
    constraints_tab(book, e)
    fleet_tab(book, e)
    cost_tab(book, e)
    sensitivities_tab(book, e)
    checks_sheet(book, e)
    constants_sheet(book, e)
    changelog_sheet(book, e)
    if traffic is not None:  # (summary, requests per window, prompt, output, provenance) from `xlplan traffic`
        from xlplan.excel.tabs.traffic import traffic_sheets

        traffic_sheets(book, *traffic)
    options_tab(book, e, d)
    schedule_tab(book, e, d)
    if review is not None:
        from xlplan.excel.tabs.review import review_tab

        review_tab(book, e, review)
    order = [SUMMARY_TAB, *SIX_TABS, REVIEW_TAB, *DECISION_TABS, *SUPPORT_TABS, "Traffic data"]
    book.sheets.sort(key=lambda s: order.index(s.title))
    flag_engine_values(book)
    return book
