"""What a monthly review finds (`xlplan review`): the forecast against the measurement, the breakpoints crossed, the
promise and the binding constraint in production, the re-plan and its orders, the triggers and what to watch.

Typed and frozen like :mod:`xlplan.schema.result`; :mod:`xlplan.review.monthly` builds it, :mod:`xlplan.report.review_note` writes it.
"""

from __future__ import annotations

from pydantic import Field

from xlplan.schema.record import _Out

REVIEW_SCHEMA_VERSION = 1
"""The layout of ``xlplan review --json`` (:class:`ReviewOut`): 1, the first with a version (docs/versioning.md). [—]"""

NEAR = 0.25
"""A breakpoint whose headroom is under this share of the measured figure is near: the note shows it. [fraction]"""


class FigureCheck(_Out):
    """One forecast figure: planned for the review month, measured, and who owns it."""

    key: str = Field(description="The figure: peak_rps, prompt_p50 ... output_p99, average_utilisation, prefix_reuse or tokens_per_month. [text]")
    label: str = Field(description="The figure in words ('p95 prompts'). [text]")
    unit: str = Field(description="Its unit. [text]")
    planned: float = Field(description="The plan's figure for the review month, grown by the plan's growth where it has one. [unit]")
    measured: float | None = Field(description="The measured figure (None: not in the evidence). [unit]")
    change: float | None = Field(description="measured ÷ planned − 1 (None: not measured, or planned 0). [fraction]")
    owner: str = Field(description="Who owns the forecast, as the plan names them. [text]")
    band_top: float | None = Field(default=None, description="Peak rate only: the top of the sampling band, the busiest window's rate a log at the planned peak reaches in 95% of months; a measured peak from the planned one up to it is the plan's peak read with noise, and moves no decision; one under the planned peak is traffic that fell. [unit]")


class BreakpointCheck(_Out):
    """One of the plan's section-6 thresholds against the measured figure."""

    variable: str = Field(description="The input moved: peak_rps, prompt_p95, output_p50 or itl_s. [text]")
    label: str = Field(description="The input in words. [text]")
    unit: str = Field(description="Its unit. [text]")
    direction: str = Field(description="'up' or 'down'. [text]")
    kind: str = Field(description="'fleet step' (the purchase grows a unit) or 'binding change'. [text]")
    at: float = Field(description="The value where it happens. [unit]")
    measured: float | None = Field(description="The measured figure (None: not measured, e.g. the inter-token target). [unit]")
    crossed: bool = Field(description="The measured figure is at or past the value in the breakpoint's direction. [bool]")
    headroom: float | None = Field(description="How far the measured figure may still move before it crosses, as a fraction of it (None: crossed or not measured). [fraction]")
    binding_after: str = Field(description="The binding constraint past the value, as the plan said. [text]")
    purchased_after: int | None = Field(description="Purchased GPUs past the value, as the plan said (None: not stated). [GPUs]")
    sentence: str = Field(description="The pre-agreed consequence, or the headroom left, in words. [text]")


class PromiseCheck(_Out):
    """The promise in production: p95 TTFT and inter-token latency from the scrapes' histograms."""

    given: bool = Field(description="Production latency was read. [bool]")
    ttft_target_s: float = Field(description="The promise's TTFT. [s]")
    itl_target_s: float = Field(description="The promise's inter-token target. [s/token]")
    ttft_s: float | None = Field(default=None, description="TTFT at the promise's percentile in production. [s]")
    itl_s: float | None = Field(default=None, description="Inter-token latency at the promise's percentile in production. [s/token]")
    met: bool | None = Field(default=None, description="Both within the promise (None: not given, or nothing measured). [bool]")
    sentence: str = Field(description="What production shows, with the bucket error, or 'not given'. [text]")


class BindingCheck(_Out):
    """Which constraint binds in production (the two gauges) against the plan's."""

    planned: str = Field(description="The plan's binding constraint, as `xlplan confirm --plan` reads it (the runbook's method). [text]")
    found: str | None = Field(description="'memory', 'compute', 'neither' or 'unclear' (None: no scrapes given). [text]")
    agrees: bool | None = Field(description="Production confirms the plan (None: no scrapes). [bool]")
    sentence: str = Field(description="The verdict and its evidence, in words. [text]")


class FleetSide(_Out):
    """One side of the re-plan: the Answer of a plan."""

    purchased: int = Field(description="Purchased. [GPUs]")
    held: int = Field(description="GPUs on the bill (with redundancy rented per GPU; whole units otherwise). [GPUs]")
    binding: str = Field(description="Binding path. [text]")
    monthly_usd: float = Field(description="Monthly cost. [USD/month]")
    order: str = Field(description="The Answer line's order ('rent 7 GPUs'). [text]")
    breakeven_tokens_per_month: float | None = Field(default=None, description="Volume above which this fleet beats the API, at its way of paying. [tokens/month]")


class MonthPair(_Out):
    """One month of the schedule, as the plan had it and as the re-plan has it."""

    month: str = Field(description="YYYY-MM. [month]")
    old_peak_rps: float = Field(description="The plan's peak that month. [requests/s]")
    new_peak_rps: float = Field(description="The measured peak grown to that month. [requests/s]")
    old_gpus: int | None = Field(description="GPUs the plan holds that month (None: the schedule stopped). [GPUs]")
    new_gpus: int | None = Field(description="GPUs the re-plan holds that month (None: the schedule stopped). [GPUs]")
    old_order_by: str | None = Field(description="Order date of the plan's new GPUs that month (None: none new, or no lead time). [date]")
    new_order_by: str | None = Field(description="Order date of the re-plan's new GPUs that month. [date]")


class OrderAction(_Out):
    """An order to place, move or cancel, against what is installed and ordered."""

    kind: str = Field(description="'place', 'move' or 'cancel'. [text]")
    gpus: int = Field(description="GPUs concerned. [GPUs]")
    needed_from: str | None = Field(description="Month they are needed from, YYYY-MM (None: not within the schedule). [month]")
    place_by: str | None = Field(description="Last day to order: the lead time before the month needed (None: no lead time stated, or nothing to place). [date]")
    late: bool = Field(description="The place-by day is before the review: order now, and they arrive late. [bool]")
    due: bool = Field(description="To act on before the next monthly review. [bool]")
    sentence: str = Field(description="The action in words. [text]")


class Replan(_Out):
    """The plan with the measured inputs, beside the plan as written, and the orders that follow."""

    inputs: str = Field(description="What the re-plan changed: the measured forecast, and any recalibrated efficiencies. [text]")
    old: FleetSide = Field(description="The plan as written.")
    new: FleetSide = Field(description="The re-plan.")
    lead_time_days: int | None = Field(description="Days from order to service (None: the plan states none, and orders are undated). [days]")
    months: list[MonthPair] = Field(description="The schedule from the month after the review, old beside new.")
    supply: str = Field(description="What the orders are compared with: what is installed and ordered, or the plan's own fleet. [text]")
    actions: list[OrderAction] = Field(description="Orders to place, move or cancel.")
    stopped: str = Field(default="", description="Why the re-plan's schedule ends early, if it does. [text]")


class TriggerCheck(_Out):
    """One trigger evaluated on the measured figures."""

    metric: str = Field(description="The figure watched. [text]")
    unit: str = Field(description="Its unit. [text]")
    bound: str = Field(description="'above' or 'below'. [text]")
    value: float = Field(description="The value it fires past. [unit]")
    measured: float | None = Field(description="The measured figure (None: not in the evidence). [unit]")
    fired: bool = Field(description="The measured figure is past the value. [bool]")
    action: str = Field(description="What the plan says to do. [text]")
    source: str = Field(description="'plan' (the plan's triggers) or 'break-even' (build versus buy, always checked). [text]")


class FigureTrend(_Out):
    """One figure's forecast error over the reviews in the history."""

    key: str = Field(description="The figure. [text]")
    label: str = Field(description="The figure in words. [text]")
    months: list[str] = Field(description="The review months, oldest first. [month]")
    errors: list[float | None] = Field(description="Each review's measured ÷ planned − 1 (None: not measured). [fraction]")
    trend_per_review: float | None = Field(description="Least-squares slope of the errors per review (None: under two). [fraction/review]")
    sentence: str = Field(description="The errors and the trend, in words. [text]")


class HistoryLine(_Out):
    """One review as the history file keeps it: one JSON line."""

    date: str = Field(description="The review day, YYYY-MM-DD. [date]")
    plan: str = Field(description="The plan's name. [text]")
    planned: dict[str, float] = Field(description="The planned figures for the review month, by key. [unit of each]")
    measured: dict[str, float | None] = Field(description="The measured figures, by key. [unit of each]")
    fleet_planned: int = Field(description="The plan's purchased GPUs. [GPUs]")
    fleet_replanned: int = Field(description="The re-plan's purchased GPUs. [GPUs]")


class ReviewOut(_Out):
    """The monthly review: sections 1-8 and whether anything needs action."""

    schema_version: int = Field(default=REVIEW_SCHEMA_VERSION, description="The layout of this JSON (docs/versioning.md): "
                                "raised when a change breaks a reader. [—]")
    plan: str = Field(description="The plan's name. [text]")
    date: str = Field(description="The review day, YYYY-MM-DD. [date]")
    month: str = Field(description="The month reviewed, YYYY-MM. [month]")
    planned_month_index: int = Field(description="Months of the plan's growth from its first month to the review month (0: none). [months]")
    growth_factor: float = Field(default=1.0, description="The plan's peak in the review month ÷ its forecast's peak (1: no growth). [1]")
    forecast: list[FigureCheck] = Field(description="Section 1: the forecast against what was measured.")
    breakpoints_basis: str = Field(description="Whose breakpoints: the closed form's (the Answer's method), else the runbook's method's. [text]")
    breakpoints: list[BreakpointCheck] = Field(description="Section 2: every breakpoint against the measured figure.")
    runbook_breakpoints: list[BreakpointCheck] = Field(default_factory=list, description="Section 2 on the runbook's method's breakpoints (the plan result's, which the workbook's tab 6 names), the same as breakpoints where those are the runbook's.")
    promise: PromiseCheck = Field(description="Section 3: the promise in production.")
    binding: BindingCheck = Field(description="Section 4: which constraint binds in production.")
    model: str = Field(description="Section 5: the model against production, or 'not given'. [text]")
    replan: Replan = Field(description="Section 6: the re-plan and its orders.")
    triggers: list[TriggerCheck] = Field(description="Section 7: the plan's triggers and the build-versus-buy break-even.")
    watch: list[BreakpointCheck] = Field(description="Section 8: the nearest breakpoints not yet crossed, nearest first.")
    history: list[FigureTrend] = Field(default_factory=list, description="The forecast's accuracy over the reviews in the history (empty without one).")
    history_line: HistoryLine = Field(description="What this review adds to the history.")
    reasons: list[str] = Field(description="What needs action: breakpoints crossed, triggers fired, the promise missed, orders due. [text]")
    needs_action: bool = Field(description="Anything in reasons (the exit status 1). [bool]")
