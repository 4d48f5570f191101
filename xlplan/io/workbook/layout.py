"""What goes in each cell of the capacity-note workbook.

:func:`build` lays out the six tabs of the note and the supporting sheets as a
:class:`~xlplan.io.workbook.cells.Book`: inputs as constants, every computed cell
as a native Excel formula over defined names, each with the value the engine
computed for it (the cache). Formulas use only functions LibreOffice 7.4 also
computes (INDEX/MATCH, ROUNDUP, LN, EXP, SQRT, MIN, MAX, IF, AND, OR, COUNT,
ISNUMBER, MOD), and no number is written inside a formula: every constant is a
labelled cell on the ``Constants`` sheet.
"""

from __future__ import annotations

from xlplan.io.workbook.cells import Book
from xlplan.io.workbook.common import CATALOG_FIRST_ROW, GPU_COLUMNS, MODEL_COLUMNS, MODEL_EXTRA, SIX_TABS, SUPPORT_TABS, Engine
from xlplan.io.workbook.support import CHECKS, catalog_sheets, changelog_sheet, checks_sheet, constants_sheet
from xlplan.io.workbook.tab_constraints import constraints_tab
from xlplan.io.workbook.tab_fleet_cost import cost_tab, fleet_tab
from xlplan.io.workbook.tab_inputs import inputs_tab
from xlplan.io.workbook.tab_model import model_tab
from xlplan.io.workbook.tab_sensitivities import sensitivities_tab
from xlplan.plan import Plan

__all__ = ["CATALOG_FIRST_ROW", "CHECKS", "GPU_COLUMNS", "MODEL_COLUMNS", "MODEL_EXTRA", "SIX_TABS", "SUPPORT_TABS", "build"]


def build(plan: Plan, formulas: str = "native", traffic=None, namespace: str = "") -> Book:
    """Lay out the workbook for a plan: the six tabs of the note, then the supporting sheets.

    ``formulas='udf'`` writes the variant whose key calculation cells call the xlplan
    Excel functions (``=MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)``)
    instead of native formulas; the default carries native formulas with an add-in
    cross-check beside each. ``namespace`` prefixes every call to the functions
    (xlwings Server registers them as ``XLWINGS.MEMORY_GPUS`` by default).

    Raises
    ------
    PlanningError
        When the plan cannot be met (the engine's own error: there is nothing to lay out).
    """
    e = Engine.run(plan, formulas, namespace)
    book = Book()
    inputs_tab(book, e)
    # Supporting sheets are laid out first where later tabs read their sizes, then moved behind the six.
    n_models, n_gpus = catalog_sheets(book, e)
    model_tab(book, e, n_models, n_gpus)
    constraints_tab(book, e)
    fleet_tab(book, e)
    cost_tab(book, e)
    sensitivities_tab(book, e)
    checks_sheet(book, e)
    constants_sheet(book)
    changelog_sheet(book, e)
    if traffic is not None:  # (summary, t_s, prompt, output, provenance) from `xlplan traffic`
        from xlplan.io.workbook.tab_traffic import traffic_sheets

        traffic_sheets(book, *traffic)
    order = list(SIX_TABS) + list(SUPPORT_TABS) + ["Traffic data"]
    book.sheets.sort(key=lambda s: order.index(s.title))
    return book
