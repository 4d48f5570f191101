"""The Summary sheet: the answer on one page, every figure a formula over the six tabs' names.

A finance reader opens the workbook here: GPUs for the load, with redundancy and to buy; the binding constraint in
words; $/month, $/year and $/M tokens; the managed-API comparison and break-even; the simulated (verified) load when
the workbook was built with it; whether every check passes; the plan's name and date. Declarative: each row is
(name, label, formula, the engine's value, unit, format, how), written by one loop.
"""

from __future__ import annotations

from xlplan import fleet
from xlplan.excel import staleness
from xlplan.excel.cells import Book, Cell, Line
from xlplan.excel.common import FMT, NA, SUMMARY_TAB, UNDATED, Engine, Rows
from xlplan.excel.summary_mix import contracts_section, mix_rows
from xlplan.excel.tabs.fleet_cost import api_comparison
from xlplan.excel.tabs.owning import payback_shown
from xlplan.report.note import api_comparison_words
from xlplan.words import count

BINDING_WORDS = (
    ("memory", "memory: the KV cache of the requests in flight fills the GPUs before their compute does"),
    ("compute", "compute: prefill and decode FLOPs at peak need the most GPUs"),
    ("latency", "latency: the inter-token promise caps how many requests a replica may batch"),
    ("both", "two paths at once: they need the same GPUs, so relieving one alone does not shrink the fleet"),
    ("all", "all three paths at once: memory, compute and latency need the same GPUs"),
    (fleet.MINIMUM_REPLICA, "the minimum replica: every path fits in one replica, so the fleet is the smallest unit"),
)
"""The binding constraint in words, keyed by the engine's label (one table for the formula and its cached value)."""


def _binding_words(label: str) -> str:
    """The sentence for a binding label. [text]"""
    return dict(BINDING_WORDS).get(label, label)


def _binding_formula() -> str:
    """Nested IFs over :data:`BINDING_WORDS`, the label itself when none matches. [formula]"""
    out = "Binding"
    for key, words in reversed(BINDING_WORDS):
        out = f'IF(Binding="{key}","{words}",{out})'
    return "=" + out


ANSWER_LIVE = {
    "AnswerBilledGPUs": "=AnswerFleetBilledGPUs", "AnswerMonthlyUSD": "=AnswerFleetMonthlyUSD",
    "AnswerUSDPerMTok": "=AnswerFleetUSDPerMTok", "AnswerAgainstAPI": "=AnswerFleetAgainstAPI",
    "AnswerCapexUSD": "=AnswerFleetCapexUSD", "AnswerPaybackMonths": "=AnswerFleetPaybackMonths",
    "AnswerNPVUSD": "=AnswerFleetNPVUSD",
}
"""The Answer's rows that are formulas: its bill, priced on 5 Cost from its fleet (the engine values above them)."""

ANSWER_CURRENT = "current"
ANSWER_STALE = "STALE: an input changed since the Answer was computed; rebuild with xlplan workbook"


def _built_values(e: Engine) -> dict[str, object]:
    """Each input's value when the workbook was built (defined name → value; None where blank). [mixed]"""
    from xlplan.excel.inputs import all_inputs, input_value

    return {spec.name: input_value(e.plan, spec) for spec in all_inputs()}


def _snapshot_and_flag(book: Book, sh, rows: Rows, e: Engine, flag_row: int | None) -> None:
    """Below the Summary: every input's value when the workbook was built (shaded engine values, each named
    ``Built<Input>`` for the flags of :mod:`xlplan.excel.staleness`), and the flag in ``flag_row`` that says
    'current' while 1 Inputs still holds them all, else STALE."""
    from xlplan.excel.inputs import all_inputs

    rows.section("Inputs the engine values were computed from (the flags compare 1 Inputs with them)")
    conditions = []
    built = _built_values(e)
    for spec in all_inputs():
        value = built[spec.name]
        r = sh.row
        sh.put("A", r, Cell(spec.label, kind="label"))
        sh.put("B", r, Cell("" if value is None else value, kind="static", fmt=spec.fmt, depends=()))
        sh.put("C", r, Cell(spec.unit, kind="unit"))
        book.define(staleness.built_name(spec.name), sh, f"B{r}")
        conditions.append(staleness.same(spec.name, value, f"$B${r}"))
        sh.row += 1
    built = _built_values(e)
    for group in staleness.GROUPS:  # each group of inputs unchanged, once: the flags read these (flags themselves)
        coord = rows.calc(staleness.group_name(group), f"Unchanged since built: {group} inputs",
                          staleness.group_formula(group, built), True, "TRUE | FALSE", None, ", ".join(staleness.group_inputs(group)))
        sh.cells[coord].kind = "flag"
    if flag_row is not None:
        sh.put("B", flag_row, Cell(f'=IF(AND({",".join(conditions)}),"{ANSWER_CURRENT}","{ANSWER_STALE}")', formula=True,
                                   cached=ANSWER_CURRENT, kind="flag"))
        book.define("AnswerCurrent", sh, f"B{flag_row}")


def _value_flag(book: Book, sh, e: Engine, value: str, coord: str) -> None:
    """The flag of one engine value at ``coord``: 'current' while every input it depends on is unchanged, else STALE
    (:func:`xlplan.excel.staleness.flag_formula`), named ``<value>Stale``; a formula's (the Answer's bill) is narrowed
    to what it reads by :func:`xlplan.excel.staleness.flag_engine_values`."""
    formula = staleness.flag_formula(value) if value in staleness.VALUE_INPUTS else staleness.group_flag(staleness.GROUPS)
    sh.put(coord[0], int(coord[1:]), Cell(formula, formula=True, cached=staleness.CURRENT, kind="flag"))
    book.define(f"{value}Stale", sh, coord)


def _answer_rows(e: Engine) -> list[tuple[str, str, object, str, str | None, str]]:
    """(name, label, the engine's value, unit, format, how) of the Answer: engine values, shaded, not formulas."""
    r = e.result
    a = r.answer
    if a is None:
        return []
    v = r.verified
    lost = (f"with {count(v.redundancy_lost_replicas, 'replica')} lost at the start of the peak, simulated"
            if a.source == "verified" and v is not None and v.redundancy_lost_replicas else "the load plus the spare replicas")
    source = ("verified: simulated at peak, the promise held on seeds " + ", ".join(map(str, v.seeds))
              if a.source == "verified" else
              "the closed form, not simulated (`xlplan plan PLAN --verify --workbook OUT.xlsx` simulates it)")
    return [
        ("AnswerSource", "Answer from", source, "", None, "engine value, computed when the workbook was built"),
        ("AnswerLoad", "GPUs for the load", a.load, "GPUs", FMT["gpus"], "the fewest that keep the promise at peak"),
        ("AnswerWithRedundancy", "GPUs with redundancy", a.with_redundancy, "GPUs", FMT["gpus"], lost),
        ("AnswerOrder", "What to order", a.order or f"{a.purchased} GPUs", "", None,
         ("how the fleet is paid for (Paid as, 1 Inputs): rented per GPU, the fleet with redundancy; rented by the "
          "node or bought, whole purchasing units")),
        ("AnswerPurchased", "In whole purchasing units", a.purchased, "GPUs", FMT["gpus"],
         "the fleet with redundancy rounded up to whole nodes: what renting by the node or buying pays for"),
        ("AnswerBilledGPUs", "GPUs on the bill", a.billed_gpus, "GPUs", FMT["gpus"], "the GPUs the order pays for"),
        ("AnswerBinding", "Binding constraint", a.binding, "path", None,
         ("what sets the load: the closed form's path, 'minimum replica', or 'queueing (simulated)' where the "
         "simulation needs more than every path")),
        ("AnswerStepBudget", "Step budget to deploy", a.step_budget_tokens, "tokens", FMT["gpus"],
         "policy.max_num_batched_tokens: the serving setting the fleet is sized at"),
        ("AnswerSettings", "Deploy", a.settings or NA, "", None,
         ("the TP degree and step budget in the engine's own flags: the cheapest setting the configuration search "
          "found keeping the promise")),
        ("AnswerMonthlyUSD", "Cost per month", a.monthly_usd, "USD/month", FMT["usd"],
         "the GPUs on the bill × the hourly cost on 1 Inputs × the hours (+ an owned fleet's fixed costs)"),
        ("AnswerUSDPerMTok", "Cost per million tokens", a.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"], "at the average utilisation"),
    ] + _owned_rows(a) + mix_rows(r) + [
        ("AnswerAgainstAPI", "Against the API", api_comparison_words(r.cost.api_monthly_usd, a.monthly_usd)
         if r.cost.api_monthly_usd is not None else NA, "", None,
         "on infrastructure alone, this bill against the same traffic on the API, as the note says it")]


def _owned_rows(a) -> list[tuple[str, str, object, str, str | None, str]]:
    """Bought: the capex of the nodes ordered, and when buying them pays back against renting the same units. [—]"""
    o = a.ownership
    payback = payback_shown(o) if o is not None else NA
    return [
        ("AnswerCapexUSD", "Capex of the nodes ordered", o.capex_usd if o is not None else NA, "USD", FMT["usd"],
         "bought: the nodes ordered × the price of one (5 Cost), paid once; n/a while rented"),
        ("AnswerPaybackMonths", "Buying pays back after", payback, "months", FMT["num"],
         "bought: against renting the same units at the rental price, never past the depreciation life (5 Cost)"),
        ("AnswerNPVUSD", "Owning over the life, present cost", o.own_npv_usd if o is not None else NA, "USD", FMT["usd"],
         "bought: capex + running costs and engineering over the life − the residual, discounted (5 Cost)"),
    ]


CHECK_OK = "All checks pass"
CHECK_FAILED = "CHECK FAILED: see 1 Inputs and the Checks sheet; these figures are not a plan"


def _summary_rows(e: Engine) -> list[Line]:
    """The rows of the Summary, from the plan's result (no step of the engine runs again)."""
    from xlplan.excel.support import banner_text

    r = e.result
    status = CHECK_OK if not banner_text(e) else CHECK_FAILED
    f, c = r.fleet, r.cost
    api = c.api_monthly_usd is not None
    rows = [
        Line("SummaryCheck", "Checks", f'=IF(AllChecksPass,"{CHECK_OK}","{CHECK_FAILED}")', status, "", None,
            "every check on the Checks sheet; a failing one also puts a banner on each tab"),
        Line(None, "GPU and model", '=GPUName&" · "&ModelName', f"{r.model.gpu} · {r.model.name}", "", None, ""),
        Line("SummaryLoad", "GPUs for the load", "=FleetLoad", f.load, "GPUs", FMT["gpus"], "the largest of the memory and compute paths and the latency check"),
        Line("SummaryWithRedundancy", "GPUs with redundancy", "=FleetWithRedundancy", f.with_redundancy, "GPUs", FMT["gpus"],
            "plus the spare replicas that keep the promise through a failure"),
        Line("SummaryPurchased", "In whole purchasing units", "=FleetPurchased", f.purchased, "GPUs", FMT["gpus"],
             "the runbook's node: what renting by the node or buying pays for"),
        Line("SummaryBilledGPUs", "GPUs on the bill", "=BilledGPUs", c.billed_gpus, "GPUs", FMT["gpus"],
             "what the cost below pays for: the fleet with redundancy rented per GPU, else whole purchasing units"),
        Line("SummaryBinding", "What binds", _binding_formula(), _binding_words(r.binding), "", None,
            "3 Constraints shows each path; 6 Sensitivities what would move it"),
        Line("SummaryMonthlyUSD", "Cost per month", "=MonthlyCostUSD", c.monthly_usd, "USD/month", FMT["usd"],
             "the GPUs on the bill, fixed: paid for whether busy or idle"),
        Line("SummaryYearlyUSD", "Cost per year", "=MonthlyCostUSD*MonthsPerYear", c.monthly_usd * 12.0, "USD/year", FMT["usd"], ""),
        Line("SummaryUSDPerMTok", "Cost per million tokens", "=CostPerMTokUSD", c.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"],
            "at the average utilisation on 1 Inputs"),
    ]
    if api:
        rows += [
            Line("SummaryAPIMonthlyUSD", "The same traffic on the API", "=APIMonthlyCostUSD", c.api_monthly_usd, "USD/month", FMT["usd"],
                "at the API prices on 1 Inputs"),
            Line("SummaryAgainstAPI", "Against the API", "=APIComparison", api_comparison(c.api_monthly_usd, c.monthly_usd, e.fig.cost_api_ratio).text,
                "", None, "on infrastructure alone, this bill against the API's (5 Cost)"),
            Line("SummaryBreakeven", "Break-even volume", "=BreakevenTokensPerMonth", c.breakeven_tokens_per_month, "tokens/month",
                FMT["tokens_month"], "above it this fleet is cheaper than the API, while it can carry the volume"),
        ]
    return rows


def _plan_rows(book: Book, sh, e: Engine) -> None:
    """The plan's name and the day it was prepared, by formula over 1 Inputs."""
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


def _answer_section(book: Book, sh, rows: Rows, e: Engine, answer: list) -> int:
    """The Answer as engine values (shaded), then the label of its still-current flag; returns the flag's row."""
    rows.section("The answer — the fleet to order (engine values, shaded: rebuild after changing an input)")
    rows.header("Quantity", "Value", "Unit", "How", "Still current?")
    for name, label, value, unit, fmt, how in answer:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        if name in ANSWER_LIVE:  # the bill of the Answer's fleet, by formula over 5 Cost
            coord = sh.put("B", r, Cell(ANSWER_LIVE[name], formula=True, cached=value, kind="calc", fmt=fmt,
                                        wrap=isinstance(value, str)))
        else:
            coord = sh.put("B", r, Cell(value, kind="static", fmt=fmt, wrap=isinstance(value, str)))
        book.define(name, sh, coord)
        sh.put("C", r, Cell(unit, kind="unit"))
        sh.put("D", r, Cell(how, kind="note"))
        _value_flag(book, sh, e, name, f"E{r}")
        sh.row += 1
    flag_row = sh.row
    sh.put("A", flag_row, Cell("Still current?", kind="label"))
    sh.put("D", flag_row, Cell("compares every input on 1 Inputs with its value when the Answer was computed (below)",
                               kind="note"))
    sh.row += 1
    return flag_row


def _verified_section(book: Book, sh, rows: Rows, e: Engine) -> None:
    """The fleet simulated at peak, where the workbook was built with it; else how to build it so."""
    v = e.result.verified
    rows.section("Verified at peak (simulated)")
    if v is None:
        sh.put("A", sh.row, Cell("not simulated: build with `xlplan plan PLAN --verify --workbook OUT.xlsx` to check the fleet under random arrivals",
                                 kind="note"))
        sh.row += 1
        return
    rows.calc(None, "Verified load", "=VerifiedLoad", v.load if v.load is not None else f"none up to {v.searched_up_to}",
              "GPUs", FMT["gpus"], "the fewest GPUs whose simulated p95 TTFT and inter-token gap keep the promise (4 Fleet)")
    rows.calc(None, "Verified, with redundancy", "=VerifiedWithRedundancy",
              v.with_redundancy if v.with_redundancy is not None else f"none up to {v.searched_up_to}", "GPUs", FMT["gpus"], "")
    _sentence(book, sh, e, v.sentence, "SummaryVerifiedSentence")


def _decision_sections(book: Book, sh, rows: Rows, e: Engine, decisions) -> None:
    """Which hardware (the Options' recommendation, ``xlplan compare``'s lines) and when to order (the Schedule's first
    order), where built."""
    if decisions is not None and decisions.recommendation:
        rows.section("Which hardware (Options)")
        first, *rest = decisions.recommendation  # the GPU line; then the format line, missing prices, caveats
        _sentence(book, sh, e, first, "SummaryWhichHardware")
        for line in rest:  # each its own row, under the same flag (one value: the Options' ranking)
            sh.put("A", sh.row, Cell(line, kind="static", wrap=True, depends=staleness.VALUE_INPUTS["SummaryWhichHardware"]))
            sh.merges.append(f"A{sh.row}:D{sh.row}")
            sh.put("E", sh.row, Cell("=SummaryWhichHardwareStale", formula=True, cached=staleness.CURRENT, kind="flag"))
            sh.row += 1
    if decisions is not None and decisions.schedule is not None:
        sched = decisions.schedule
        nxt = next((m for m in sched.months if m.new_gpus), None)
        rows.section("When to order (Schedule)")
        if nxt is not None:
            _sentence(book, sh, e, f"First order: {nxt.new_gpus} GPUs by {nxt.order_by}, in service from {nxt.month}; "
                                   f"{sched.breakeven_words}.", "SummaryWhenToOrder")


def summary_tab(book: Book, e: Engine, decisions=None) -> None:
    """Lay out the Summary sheet (first in the workbook). The date is the plan's, else the day of the build."""
    sh = book.sheet(SUMMARY_TAB, "The answer: GPUs, what binds, the cost, the API comparison, and whether every check passes.",
                    widths={"A": 30, "B": 34, "C": 12, "D": 40, "E": 14}, print_title_rows="1:2", landscape=True,
                    flag_col="E")
    rows = Rows(book, sh)
    rows.title("Summary — the answer", "Every figure is a formula over the tabs that follow; change an input on 1 Inputs and it follows.")
    from xlplan.excel.support import put_banner

    put_banner(sh, e)  # above the Answer: a failed check (a negative price, a missing buy figure) is read first
    _plan_rows(book, sh, e)
    answer = _answer_rows(e)
    flag_row = _answer_section(book, sh, rows, e, answer) if answer else None
    rows.section("The runbook's method — every figure a formula over the tabs" if answer else "The answer")
    rows.header("Quantity", "Value", "Unit", "How")
    for row in _summary_rows(e):
        coord = rows.calc(row.name, row.label, row.formula, row.cached, row.unit, row.fmt, row.how)
        if isinstance(row.cached, str):
            sh.cells[coord].wrap = True
    _verified_section(book, sh, rows, e)
    _decision_sections(book, sh, rows, e, decisions)
    contracts_section(book, sh, e)
    sh.print_area = f"A1:E{sh.row}"  # the page a reader prints; the inputs' snapshot below is for the flags
    _snapshot_and_flag(book, sh, rows, e, flag_row)


def _sentence(book: Book, sh, e: Engine, text: str, value: str) -> None:
    """An engine sentence across the sheet's width, wrapped (shaded: a value computed when the workbook was built),
    with its stale flag beside it in E."""
    r = sh.row
    sh.put("A", r, Cell(text, kind="static", wrap=True, depends=staleness.VALUE_INPUTS[value]))
    sh.merges.append(f"A{r}:D{r}")
    _value_flag(book, sh, e, value, f"E{r}")
    sh.row += 1
