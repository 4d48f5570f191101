"""The Review tab (`xlplan review … --workbook`): the month's measured figures as inputs against the plan's, by formula
over 1 Inputs, and each breakpoint of tab 6 the review measures, crossed or with its headroom, by formula.

The measured figures are the review's (:class:`~xlplan.schema.review.ReviewOut`), yellow input cells a reviewer may
type next month's over; the planned figures, the changes, the owner and every breakpoint's state are formulas, each
caching the review's value. The one engine value is the plan's growth to the review month, flagged STALE when the
peak rate on 1 Inputs moves from the one it was computed at.
"""

from __future__ import annotations

from xlplan.excel.cells import Book, Cell, Sheet, Validation
from xlplan.excel.common import FMT, NA, REVIEW_TAB, SIX_TABS, Engine, Rows
from xlplan.excel.formulas import rounded
from xlplan.excel.support import put_banner
from xlplan.excel.tabs.sensitivities import ANSWER, BREAKPOINT_INPUTS, breakpoint_name
from xlplan.schema.review import BreakpointCheck, ReviewOut

NOT_MEASURED = "not measured"
CROSSED = "crossed"
BEYOND = "beyond the search"
STALE_REVIEW = "STALE — rebuild with xlplan review --workbook"

PLANNED = {
    # figure → (1 Inputs or tab 5 name the measured input is named after, planned formula, format)
    "peak_rps": ("PeakRate", "=PeakRate*ReviewGrowthFactor", FMT["num"]),
    "prompt_p50": ("PromptP50", "=PromptP50", FMT["tokens"]),
    "prompt_p95": ("PromptP95", "=PromptP95", FMT["tokens"]),
    "prompt_p99": ("PromptP99", "=IF(ISNUMBER(PromptP99),PromptP99,PromptP95)", FMT["tokens"]),
    "output_p50": ("OutputP50", "=OutputP50", FMT["tokens"]),
    "output_p95": ("OutputP95", "=OutputP95", FMT["tokens"]),
    "output_p99": ("OutputP99", "=IF(ISNUMBER(OutputP99),OutputP99,OutputP95)", FMT["tokens"]),
    "average_utilisation": ("AvgUtilisation", "=AvgUtilisation", "0.0%"),
    "prefix_reuse": ("PrefixReuse", "=PrefixReuse", "0.0%"),
    "tokens_per_month": ("TokensPerMonth", "=TokensPerMonth*ReviewGrowthFactor", FMT["sci"]),
}
"""Every figure of the review's section 1, in its order."""

KINDS = (("Step", "fleet step", "the purchase grows", "G"), ("Flip", "binding change", "the binding constraint changes", "I"))
"""(name suffix, the review's kind, in words, tab 6's column of what follows it)."""


def _measured_name(key: str) -> str:
    """The defined name of a measured figure's input cell: 'ReviewMeasuredPromptP95'. [text]"""
    return f"ReviewMeasured{PLANNED[key][0]}"


def review_tab(book: Book, e: Engine, out: ReviewOut) -> None:
    """Add the Review tab: the growth to the review month, the forecast against the measurement, the breakpoints."""
    sh = book.sheet(REVIEW_TAB, f"The monthly review of {out.month}: the measured figures against the plan's, and tab 6's "
                    "breakpoints against them.", widths={"A": 40, "B": 14, "C": 14, "D": 18, "E": 14, "F": 30, "G": 12},
                    print_title_rows="1:3", freeze="B4", landscape=True, values_depend=())  # the month's measurements: a record
    rows = Rows(book, sh)
    rows.title(f"Review · {out.month} measured against the plan",
               f"Reviewed {out.date}. Yellow cells hold the month's measured figures (blank: not measured); type next "
               "month's over them and the changes and breakpoints follow.")
    put_banner(sh, e)
    _growth(book, sh, rows, e, out)
    _forecast(book, sh, rows, out)
    _breakpoints(book, sh, rows, e, out)
    sh.print_area = f"A1:G{sh.row}"


def _growth(book: Book, sh: Sheet, rows: Rows, e: Engine, out: ReviewOut) -> None:
    """The plan's growth to the review month (searched by the engine from the growth section), and its STALE flag."""
    rows.section("The plan's growth to the review month (computed by xlplan from the growth section)")
    rows.header("Figure", "Value", "Unit", "How")
    r = sh.row
    sh.put("A", r, Cell("Growth factor to the review month", kind="label"))
    book.define("ReviewGrowthFactor", sh, sh.put("B", r, Cell(out.growth_factor, kind="static", fmt=FMT["num4"])))
    sh.put("C", r, Cell("1", kind="unit"))
    sh.put("D", r, Cell(f"month {out.planned_month_index} of the growth: the planned peak ÷ the forecast's", kind="note"))
    sh.put("A", r + 1, Cell("Peak rate it was computed at", kind="label"))
    sh.put("B", r + 1, Cell(e.plan.forecast.peak_rps, kind="static", fmt=FMT["value"]))
    sh.put("C", r + 1, Cell("requests/s", kind="unit"))
    sh.put("D", r + 1, Cell(f'=IF(ABS(PeakRate-B{r + 1})<=RoundingTolerance*ABS(B{r + 1}),"","{STALE_REVIEW}")', formula=True,
                            cached="", kind="flag"))
    sh.row = r + 2


def _forecast(book: Book, sh: Sheet, rows: Rows, out: ReviewOut) -> None:
    """Section 1: each figure planned (formula over 1 Inputs), measured (input), its change and owner (formulas)."""
    rows.section("1 · The forecast against the month's measurement")
    rows.header("Figure", "Planned", "Measured", "Change", "Unit", "Owner", "Noise top")
    for f in out.forecast:
        r = sh.row
        _, formula, fmt = PLANNED[f.key]
        sh.put("A", r, Cell(f.label, kind="label"))
        sh.put("B", r, Cell(formula, formula=True, cached=f.planned, kind="calc", fmt=fmt))
        if f.band_top is not None:  # the peak: the top of its sampling band (an engine value), and the planned peak named
            book.define("ReviewPeakBandTop", sh, sh.put("G", r, Cell(f.band_top, kind="static", fmt=fmt)))
            book.define("ReviewPlannedPeakRate", sh, f"B{r}")
        name = _measured_name(f.key)
        coord = sh.put("C", r, Cell(f.measured, kind="input", fmt=fmt, name=name, validation=Validation(
            "decimal", "greaterThanOrEqual", "0", None, True, f"Measured {f.label}"[:32],
            f"The month's {f.label} [{f.unit}]; blank: not measured.", "Enter a number, 0 or more.")))
        book.define(name, sh, coord)
        m, p = f"C{r}", f"B{r}"
        change = NOT_MEASURED if f.measured is None else NA if f.change is None else f.change
        sh.put("D", r, Cell(f'=IF(AND(ISNUMBER({m}),ISNUMBER({p})),IF({p}<>0,{m}/{p}-1,"{NA}"),"{NOT_MEASURED}")',
                            formula=True, cached=change, kind="calc", fmt="+0.0%;-0.0%;0.0%"))
        sh.put("E", r, Cell(f.unit, kind="unit"))
        sh.put("F", r, Cell('=OwnerForecast&""', formula=True, cached=f.owner, kind="calc"))
        sh.row += 1


def _state(check: BreakpointCheck | None) -> str:
    """A breakpoint's state as the tab's formula shows it: 'crossed', '12% to go', 'not measured' or 'beyond the
    search' (no value within the search, ``check`` None). [text]"""
    if check is None:
        return BEYOND
    if check.crossed:
        return CROSSED
    return NOT_MEASURED if check.headroom is None else f"{rounded(100 * check.headroom, 0):.0f}% to go"


def _state_formula(m: str, bp: str, direction: str) -> str:
    """'crossed' or the headroom by formula; text where the breakpoint lies beyond the search. [formula]

    The headroom in whole percent by FIXED, which rounds as ROUND does, not by a TEXT format code that the spreadsheet
    reads in its locale."""
    if direction == "up":
        judged = f'IF({m}>={bp},"{CROSSED}",FIXED(PercentPerFraction*({bp}/{m}-1),0,TRUE)&"% to go")'
    else:
        judged = f'IF({m}<={bp},"{CROSSED}",FIXED(PercentPerFraction*(1-{bp}/{m}),0,TRUE)&"% to go")'
    return f'=IF(AND(ISNUMBER({m}),{m}>0),IF(ISNUMBER({bp}),{judged},"{BEYOND}"),"{NOT_MEASURED}")'


def _after(book: Book, name: str, col: str, kind: str, b) -> Cell:
    """What follows a breakpoint, by formula over the tab 6 cell beside its value (the purchase, or the binding)."""
    ref = book.names[name].rsplit("!", 1)
    x = f"{ref[0]}!${col}${ref[1].split('$')[-1]}"
    if kind == "Step":
        n = b.purchased_after
        return Cell(f'=IF(ISNUMBER({x}),"the purchase goes to "&{x}&" GPUs","")', formula=True, kind="calc",
                    cached="" if n is None else f"the purchase goes to {n} GPUs")
    after = b.binding_after or ""
    shown = "" if not after else "the plan cannot be met" if after == "infeasible" else f"{after} binds"
    return Cell(f'=IF({x}="","",IF({x}="infeasible","the plan cannot be met",{x}&" binds"))', formula=True, kind="calc",
                cached=shown)


def _breakpoints(book: Book, sh: Sheet, rows: Rows, e: Engine, out: ReviewOut) -> None:
    """Section 2: each tab 6 breakpoint of a figure the review measures, against the measured input, by formula: the
    Answer's (closed form, as the note's section 2 judges them), then the runbook's method's."""
    rows.section(f"2 · Breakpoints crossed — {SIX_TABS[5]}'s, against the measured figures")
    rows.header("Breakpoint", "Measured", "At", "Now", "Unit", "Past it")
    for found, basis, checked, words in ((e.result.closed_form_breakpoints, ANSWER, out.breakpoints, "the Answer's"),
                                          (e.result.breakpoints, "", out.runbook_breakpoints, "the runbook's")):
        checks = {(c.variable, c.direction, c.kind): c for c in checked}
        for b in found:
            _breakpoint_rows(book, sh, out, b, basis, checks, words)


def _breakpoint_rows(book: Book, sh: Sheet, out: ReviewOut, b, basis: str, checks: dict, words: str) -> None:
    """The fleet step and the binding change of one breakpoint, where the review measures its figure."""
    keys = {f.key for f in out.forecast}
    if b.variable not in keys or b.variable not in BREAKPOINT_INPUTS:
        return
    label = next(f.label for f in out.forecast if f.key == b.variable)
    measured = next(f.measured for f in out.forecast if f.key == b.variable)
    for suffix, kind, what, col in KINDS:
        r = sh.row
        name = breakpoint_name(b.variable, b.direction, suffix, basis)
        sh.put("A", r, Cell(f"{label} {b.direction}: {what} ({words})", kind="label"))
        m = _measured_name(b.variable)
        if b.variable == "peak_rps" and "ReviewPeakBandTop" in book.names:  # within its noise, judged at the plan's peak
            planned = next(f.planned for f in out.forecast if f.key == b.variable)
            judged = planned if measured is not None and planned <= measured <= next(
                f.band_top for f in out.forecast if f.key == b.variable) else measured
            sh.put("B", r, Cell(f"=IF(AND(ISNUMBER({m}),{m}>=ReviewPlannedPeakRate,{m}<=ReviewPeakBandTop),"
                                f"ReviewPlannedPeakRate,{m})", formula=True,
                                cached=judged if judged is not None else "", kind="calc", fmt=FMT["value"]))
        else:
            sh.put("B", r, Cell(f"={m}", formula=True, cached=measured if measured is not None else "", kind="calc",
                                fmt=FMT["value"]))
        at = b.fleet_step_at if suffix == "Step" else b.binding_flip_at
        sh.put("C", r, Cell(f"={name}", formula=True, cached=at if at is not None else "beyond x64", kind="calc",
                            fmt=FMT["value"]))
        sh.put("D", r, Cell(_state_formula(f"B{r}", f"C{r}", b.direction), formula=True,
                            cached=_state(checks.get((b.variable, b.direction, kind))), kind="flag"))
        sh.put("E", r, Cell(b.unit, kind="unit"))
        sh.put("F", r, _after(book, name, col, suffix, b))
        sh.row += 1
