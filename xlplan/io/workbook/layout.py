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
from xlplan.io.workbook.common import (
    CATALOG_FIRST_ROW,
    DECISION_TABS,
    GPU_COLUMNS,
    MODEL_COLUMNS,
    MODEL_EXTRA,
    SIX_TABS,
    SUMMARY_TAB,
    SUPPORT_TABS,
    Engine,
)
from xlplan.io.workbook.support import (
    CHECKS,
    catalog_sheets,
    changelog_sheet,
    checks_sheet,
    constants_sheet,
)
from xlplan.io.workbook.tab_constraints import constraints_tab
from xlplan.io.workbook.tab_fleet_cost import cost_tab, fleet_tab
from xlplan.io.workbook.tab_inputs import inputs_tab
from xlplan.io.workbook.tab_model import model_tab
from xlplan.io.workbook.tab_options import Decisions, options_tab
from xlplan.io.workbook.tab_schedule import schedule_tab
from xlplan.io.workbook.tab_sensitivities import sensitivities_tab
from xlplan.io.workbook.tab_summary import summary_tab
from xlplan.plan import Plan

__all__ = ["CATALOG_FIRST_ROW", "CHECKS", "GPU_COLUMNS", "MODEL_COLUMNS", "MODEL_EXTRA", "SIX_TABS", "SUPPORT_TABS", "build"]


def decisions_for(plan: Plan) -> Decisions:
    """The Options (every catalog GPU and format) and, when the plan has a growth section with a lead time, the
    Schedule; the schedule starts at ``growth.start``, else the month after today."""
    import datetime as dt

    from xlplan import compare, schedule
    from xlplan.scenario import resolve

    options = compare.compare(plan, verify_top=0)  # the closed form, labelled so: `xlplan compare` verifies the cheapest
    rec = compare.recommendation(options)
    g = plan.growth
    if g is None or (g.monthly is None and g.peaks_rps is None) or g.lead_time_days is None:
        why = ("no growth section in the plan" if g is None else
               "the growth section gives no lead_time_days" if g.lead_time_days is None else "the growth section gives no growth")
        return Decisions(options, rec, None, f"No schedule: {why}. Add growth.monthly (or growth.peaks_rps) and "
                                             "growth.lead_time_days to the plan, or run `xlplan schedule PLAN --growth G "
                                             "--lead-time-days D --workbook OUT.xlsx`.")
    if g.start:
        start = g.start
    else:
        today = dt.date.today()
        start = f"{today.year + (today.month == 12):04d}-{today.month % 12 + 1:02d}"
    if g.peaks_rps is not None:
        peaks, words = list(g.peaks_rps), "monthly peaks from the plan's growth section"
    else:
        peaks = schedule.monthly_peaks(plan.forecast.peak_rps, g.monthly, g.months)
        words = f"{g.monthly:.1%} a month from {plan.forecast.peak_rps:g} req/s" + (f" ({g.source})" if g.source else "")
    return Decisions(options, rec, schedule.schedule(resolve(plan), peaks, start, g.lead_time_days, words))  # the closed form, labelled


def build(plan: Plan, formulas: str = "native", traffic=None, namespace: str = "", verify: bool = False,
          result=None) -> Book:
    """Lay out the workbook for a plan: the six tabs of the note, then the supporting sheets.

    ``formulas='udf'`` writes the variant whose key calculation cells call the xlplan
    Excel functions (``=MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)``)
    instead of native formulas; the default carries native formulas with an add-in
    cross-check beside each. ``namespace`` prefixes every call to the functions
    (xlwings Server registers them as ``XLWINGS.MEMORY_GPUS`` by default). ``verify`` adds the fleet simulated at
    peak to tab 4 (:func:`xlplan.simulate.verify`): engine values and a chart, like the breakpoints.

    Raises
    ------
    PlanningError
        When the plan cannot be met (the engine's own error: there is nothing to lay out).
    """
    e = Engine.run(plan, formulas, namespace, verify, result)
    d = decisions_for(plan)
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
    constants_sheet(book)
    changelog_sheet(book, e)
    if traffic is not None:  # (summary, t_s, prompt, output, provenance) from `xlplan traffic`
        from xlplan.io.workbook.tab_traffic import traffic_sheets

        traffic_sheets(book, *traffic)
    options_tab(book, e, d)
    schedule_tab(book, e, d)
    order = [SUMMARY_TAB, *SIX_TABS, *DECISION_TABS, *SUPPORT_TABS, "Traffic data"]
    book.sheets.sort(key=lambda s: order.index(s.title))
    return book
