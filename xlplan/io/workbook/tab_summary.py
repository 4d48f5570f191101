"""The Summary sheet: the answer on one page, every figure a formula over the six tabs' names.

A finance reader opens the workbook here: GPUs for the load, with redundancy and to buy; the binding constraint in
words; $/month, $/year and $/M tokens; the managed-API comparison and break-even; the simulated (verified) load when
the workbook was built with it; whether every check passes; the plan's name and date. Declarative: each row is
(name, label, formula, the engine's value, unit, format, how), written by one loop.
"""

from __future__ import annotations

from xlplan import fleet
from xlplan.io.workbook.cells import Book, Cell, Line
from xlplan.io.workbook.common import FMT, SUMMARY_TAB, UNDATED, Engine, Rows

BINDING_WORDS = (
    ("memory", "memory: the KV cache of the requests in flight fills the GPUs before their compute does"),
    ("compute", "compute: prefill and decode FLOPs at peak need the most GPUs"),
    ("latency", "latency: the inter-token promise caps how many requests a replica may batch"),
    ("both", "two paths at once: memory, compute and latency paths tie, so relieving one alone does not shrink the fleet"),
    ("all", "all three paths at once: memory, compute and latency need the same GPUs"),
    (fleet.MINIMUM_REPLICA, "the minimum replica: every path fits in one replica, so the fleet is the smallest unit"),
)
"""The binding constraint in words, keyed by the engine's label (one table for the formula and its cached value)."""


def binding_words(label: str) -> str:
    """The sentence for a binding label. [text]"""
    return dict(BINDING_WORDS).get(label, label)


def binding_formula() -> str:
    """Nested IFs over :data:`BINDING_WORDS`, the label itself when none matches. [formula]"""
    out = "Binding"
    for key, words in reversed(BINDING_WORDS):
        out = f'IF(Binding="{key}","{words}",{out})'
    return "=" + out


CHECK_OK = "All checks pass"
CHECK_FAILED = "CHECK FAILED: see 1 Inputs and the Checks sheet; these figures are not a plan"


def summary_rows(e: Engine) -> list[Line]:
    """The rows of the Summary, from the plan's result (no step of the engine runs again)."""
    from xlplan.io.workbook.support import banner_text

    r = e.result
    status = CHECK_OK if not banner_text(e) else CHECK_FAILED
    f, c = r.fleet, r.cost
    api = c.api_monthly_usd is not None
    rows = [
        Line("SummaryCheck", "Checks", f'=IF(AllChecksPass,"{CHECK_OK}","{CHECK_FAILED}")', status, "", None,
            "every check on the Checks sheet; a failing one also puts a banner on each tab"),
        Line(None, "GPU and model", '=GPUName&" · "&ModelName', f"{r.model.gpu} · {r.model.name}", "", None, ""),
        Line("SummaryLoad", "GPUs for the load", "=FleetLoad", f.load, "GPUs", FMT["gpus"], "the largest of the memory, compute and latency paths"),
        Line("SummaryWithRedundancy", "GPUs with redundancy", "=FleetWithRedundancy", f.with_redundancy, "GPUs", FMT["gpus"],
            "plus the spare replicas that keep the promise through a failure"),
        Line("SummaryPurchased", "GPUs to buy", "=FleetPurchased", f.purchased, "GPUs", FMT["gpus"], "whole purchasing units"),
        Line("SummaryBinding", "What binds", binding_formula(), binding_words(r.binding), "", None,
            "3 Constraints shows each path; 6 Sensitivities what would move it"),
        Line("SummaryMonthlyUSD", "Cost per month", "=MonthlyCostUSD", c.monthly_usd, "USD/month", FMT["usd"], "fixed: the fleet is paid for whether busy or idle"),
        Line("SummaryYearlyUSD", "Cost per year", "=MonthlyCostUSD*MonthsPerYear", c.monthly_usd * 12.0, "USD/year", FMT["usd"], ""),
        Line("SummaryUSDPerMTok", "Cost per million tokens", "=CostPerMTokUSD", c.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"],
            "at the average utilisation on 1 Inputs"),
    ]
    if api:
        rows += [
            Line("SummaryAPIMonthlyUSD", "The same traffic on the API", "=APIMonthlyCostUSD", c.api_monthly_usd, "USD/month", FMT["usd"],
                "at the API prices on 1 Inputs"),
            Line("SummaryBreakeven", "Break-even volume", "=BreakevenTokensPerMonth", c.breakeven_tokens_per_month, "tokens/month",
                FMT["tokens_month"], "above it this fleet is cheaper than the API, while it can carry the volume"),
        ]
    return rows


def summary_tab(book: Book, e: Engine, decisions=None) -> None:
    """Lay out the Summary sheet (first in the workbook). The date is the plan's, else the day of the build."""
    sh = book.sheet(SUMMARY_TAB, "The answer: GPUs, what binds, the cost, the API comparison, and whether every check passes.",
                    widths={"A": 30, "B": 44, "C": 14, "D": 60}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
    rows.title("Summary — the answer", "Every figure is a formula over the tabs that follow; change an input on 1 Inputs and it follows.")
    r0 = sh.row
    sh.put("A", r0, Cell("Plan", kind="label"))
    sh.put("B", r0, Cell("=PlanName", formula=True, cached=e.plan.name, kind="calc"))
    sh.put("A", r0 + 1, Cell("Prepared", kind="label"))
    sh.put("B", r0 + 1, Cell('=IF(PlanDate="",BuildDate,PlanDate)', formula=True, cached=e.plan.date or UNDATED, kind="calc",
                             fmt="yyyy-mm-dd"))
    sh.put("C", r0 + 1, Cell("if no PlanDate", kind="unit"))
    coord = sh.put("D", r0 + 1, Cell(UNDATED, kind="note"))
    book.define("BuildDate", sh, coord)
    sh.row = r0 + 2
    rows.section("The answer")
    rows.header("Quantity", "Value", "Unit", "How")
    for row in summary_rows(e):
        coord = rows.calc(row.name, row.label, row.formula, row.cached, row.unit, row.fmt, row.how)
        if isinstance(row.cached, str):
            sh.cells[coord].wrap = True
    v = e.result.verified
    rows.section("Verified at peak (simulated)")
    if v is None:
        sh.put("A", sh.row, Cell("not simulated: build with `xlplan plan --verify --workbook` to check the fleet under random arrivals",
                                 kind="note"))
        sh.row += 1
    else:
        rows.calc(None, "Verified load", "=VerifiedLoad", v.load if v.load is not None else f"none up to {v.searched_up_to}",
                  "GPUs", FMT["gpus"], "the fewest GPUs whose simulated p95 TTFT and inter-token gap keep the promise (4 Fleet)")
        rows.calc(None, "Verified, with redundancy", "=VerifiedWithRedundancy",
                  v.with_redundancy if v.with_redundancy is not None else f"none up to {v.searched_up_to}", "GPUs", FMT["gpus"], "")
        _sentence(sh, v.sentence)
    if decisions is not None and decisions.recommendation:
        rows.section("Which hardware (Options)")
        _sentence(sh, decisions.recommendation)
    if decisions is not None and decisions.schedule is not None:
        sched = decisions.schedule
        nxt = next((m for m in sched.months if m.new_gpus), None)
        rows.section("When to order (Schedule)")
        if nxt is not None:
            _sentence(sh, f"First order: {nxt.new_gpus} GPUs by {nxt.order_by}, in service from {nxt.month}; "
                          f"{sched.breakeven_words}.")
    sh.print_area = f"A1:D{sh.row}"


def _sentence(sh, text: str) -> None:
    """An engine sentence across the sheet's width, wrapped (shaded: a value computed when the workbook was built)."""
    r = sh.row
    sh.put("A", r, Cell(text, kind="static", wrap=True))
    sh.merges.append(f"A{r}:D{r}")
    sh.row += 1
