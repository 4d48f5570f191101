"""The typed results of the decisions beside a plan: which GPU (`xlplan compare`), when to order (`xlplan schedule`)
and the highest rate a fleet serves (`xlplan capacity`).

Like the plan's result, they know nothing of how they are shown.
"""

from __future__ import annotations

from pydantic import Field

from xlplan.schema.record import _Out

SCHEDULE_SCHEMA_VERSION = 1
"""The layout of ``xlplan schedule --json`` (:class:`ScheduleOut`): 1, the first with a version (docs/versioning.md). [—]"""

CAPACITY_SCHEMA_VERSION = 1
"""The layout of ``xlplan capacity --json`` (:class:`CapacityOut`): 1, the first with a version (docs/versioning.md). [—]"""


class GPUOption(_Out):
    """The plan on one GPU in one weight and cache format (`xlplan compare`)."""

    gpu: str = Field(description="Catalog key of the GPU. [text]")
    gpu_name: str = Field(description="Its display name. [text]")
    weights_dtype: str = Field(description="Weight format. [text]")
    kv_dtype: str = Field(description="KV-cache format. [text]")
    is_plan: bool = Field(default=False, description="The plan's own GPU, formats and price. [bool]")
    feasible: bool = Field(description="Whether the plan can be met on it. [bool]")
    reason: str = Field(default="", description="Why it is infeasible, or why its cost is missing. [text]")
    tp: int | None = Field(default=None, description="Best tensor-parallel degree. [GPUs]")
    load: int | None = Field(default=None, description="GPUs for the load. [GPUs]")
    with_redundancy: int | None = Field(default=None, description="Plus redundancy. [GPUs]")
    purchased: int | None = Field(default=None, description="Whole purchasing units. [GPUs]")
    gpus_per_node: int | None = Field(default=None, description="The GPU's purchasing unit. [GPUs]")
    order: str = Field(default="", description="What to order there, as the Answer line says it: 'rent 5 GPUs', 'rent 1 node of 8', 'buy 1 node of 8'. [text]")
    binding: str | None = Field(default=None, description="The binding constraint there. [text]")
    source: str = Field(default="runbook's method", description="Where the fleet comes from, as the Answer line says it: 'verified' (simulated at peak on every seed), 'closed form' (not simulated: ranked below the verified ones) or 'closed form, not simulated' (past what the default simulation takes on); results written before it existed: the runbook's method. [text]")
    closed_form_load: int | None = Field(default=None, description="The closed form's load there, beside a verified one. [GPUs]")
    runbook_load: int | None = Field(default=None, description="The runbook's method's load there (memory, compute, latency). [GPUs]")
    usd_per_gpu_hour: float | None = Field(default=None, description="Price used (rent) or cost of ownership (buy); None: missing. [USD/GPU-hour]")
    billed_gpus: int | None = Field(default=None, description="GPUs on the bill: with redundancy (rented per GPU) or purchased (rented by the node, or bought). [GPUs]")
    billed_purchased_always: bool = Field(default=False, description="Owned (buy): every purchased GPU is on the bill whatever the billing input. [bool]")
    fixed_usd_per_month: float | None = Field(default=0.0, description="Hardware operations of an owned fleet; 0 when rented; None: no price, so no bill to add it to. [USD/month]")
    monthly_usd: float | None = Field(default=None, description="Monthly cost; None: no price. [USD/month]")
    usd_per_mtok: float | None = Field(default=None, description="Cost per million tokens; None: no price. [USD/Mtok]")
    price_note: str = Field(default="", description="Where the price comes from, dated. [text]")
    eligible: bool | None = Field(default=None, description="May be deployed in a datacenter (the catalog's datacenter flag): False for GeForce cards, whose driver licence forbids it; None where not stated (the plan's own GPU given inline). [bool]")
    eligibility_source: str = Field(default="", description="What the eligibility rests on: the licence or product class, with its source and date. [text]")
    format_change: str = Field(default="", description="How its weights format differs from the plan's, e.g. 'fp8 weights (a format change)'; empty at the plan's own weights format. [text]")
    ranked: bool = Field(default=True, description="In the default ranking: eligible for a datacenter and at the plan's weights format; False: shown only with --all, marked, or as the format line. [bool]")
    payment_mode: str = Field(default="", description="How its cost is counted, the plan's costs.mode: 'rent_per_gpu', 'rent_per_node' or 'buy'. [text]")
    price_date: str = Field(default="", description="Date of the rental price or node quote used; 'undated' where its source gives none; empty where the price is missing or is the plan's own. [text]")
    caveats: list[str] = Field(default_factory=list, description="What its cost does not settle: the licence, the price's source and date, quantised weights' quality. [text]")


class HardwareChoice(_Out):
    """Which hardware (`xlplan compare`): the ranked options, the plan's GPU in other weight formats, and the
    recommendation, each change (of GPU, of weights format) on a line of its own with its caveats."""

    options: list[GPUOption] = Field(description="The ranking: datacenter parts at the plan's weights format, priced ones first; with --all the rest after them, marked.")
    format_options: list[GPUOption] = Field(default_factory=list, description="The plan's own GPU in the other weight formats it supports (the format line), cheapest first.")
    recommendation: list[str] = Field(description="The recommendation, one line each: the cheapest datacenter GPU at the plan's weights format; changing the weights format on the plan's GPU; missing prices; caveats. [text]")
    payment_mode: str = Field(description="How the costs are counted, the plan's costs.mode. [text]")
    include_all: bool = Field(default=False, description="Whether ineligible parts and other weight formats were ranked too (--all). [bool]")


class ScheduleMonth(_Out):
    """One month of the order schedule (`xlplan schedule`)."""

    month: str = Field(description="YYYY-MM. [month]")
    peak_rps: float = Field(description="Peak arrival rate that month. [requests/s]")
    tp: int = Field(description="Tensor-parallel degree at that peak: the verified setting's where the month was simulated. [GPUs]")
    step_budget_tokens: int | None = Field(default=None, description="Tokens one engine step may carry at that peak "
                                                                     "(max_num_batched_tokens): the verified setting's where "
                                                                     "the month was simulated; absent from results written "
                                                                     "before it existed. [tokens]")
    load: int = Field(description="GPUs the month's peak needs. [GPUs]")
    with_redundancy: int = Field(description="Plus redundancy. [GPUs]")
    needed_purchased: int = Field(description="Whole purchasing units this month's peak needs on its own. [GPUs]")
    purchased: int = Field(description="GPUs the month holds and pays for: bought, every GPU bought by then (the running maximum of whole purchasing units); rented by the node, that month's whole units; rented per GPU, that month's fleet with redundancy. [GPUs]")
    order: str = Field(default="", description="What the month holds, as the Answer line says it: 'rent 7 GPUs', 'rent 1 node of 8', 'buy 2 nodes of 8 (16 GPUs)'. [text]")
    new_gpus: int = Field(description="GPUs that must be in service from this month's first day: bought, those beyond every GPU bought before; rented, those beyond the month before's. [GPUs]")
    order_by: str | None = Field(description="Last day to order them: the month's first day minus the lead time (None: nothing new). [date]")
    billed_gpus: int = Field(description="GPUs on the month's bill. [GPUs]")
    monthly_usd: float = Field(description="The month's cost. [USD/month]")
    cumulative_usd: float = Field(description="Cost from the first month to this one. [USD]")
    binding: str = Field(description="The binding constraint that month. [text]")
    api_monthly_usd: float | None = Field(description="The same month's traffic on the API. [USD/month]")
    all_in_cumulative_usd: float | None = Field(default=None, description="Self-hosting from the first month to this one, engineering and on-call (the plan's ops) included: what the cumulative break-even compares. [USD]")
    api_cumulative_usd: float | None = Field(default=None, description="The API from the first month to this one; None without API prices. [USD]")
    self_hosted_cheaper: bool | None = Field(default=None, description="This month self-hosting (ops included) costs less than the API; None without API prices. [bool]")
    cumulative_at_or_below_api: bool | None = Field(default=None, description="Self-hosting's total so far is at or below the API's; None without API prices. [bool]")
    source: str = Field(default="runbook's method", description="Where the month's fleet comes from: 'verified' (simulated at its peak), 'closed form' or 'closed form + N replica margin' (the margin measured in simulation); results written before it existed: the runbook's method. [text]")
    closed_form_load: int | None = Field(default=None, description="The closed form's load that month. [GPUs]")
    capex_paid_month: str | None = Field(default=None, description="Bought: the month this month's new GPUs are paid in, YYYY-MM (the order's month, or this one on delivery; before the first month: paid before the schedule); None: nothing new, or rented. [month]")
    capex_paid_usd: float | None = Field(default=None, description="Bought: the price of the whole nodes paid for this month (ordered in it, or delivered in it, as growth.capex_paid_at says); 0 when rented. [USD]")
    opex_usd_per_month: float | None = Field(default=None, description="The month's running costs: bought, power, colocation and hardware operations of every GPU held (no depreciation); rented, the month's rent. [USD/month]")
    cash_usd: float | None = Field(default=None, description="Cash out this month: the capex paid in it plus its running costs; depreciation is not cash. [USD]")
    depreciation_usd_per_month: float | None = Field(default=None, description="Bought: the month's straight-line depreciation of every GPU held, kept apart from cash; 0 when rented. None on every cash figure: not counted (a bought fleet scheduled without its ownership figures, or a result written before them). [USD/month]")
    cumulative_cash_usd: float | None = Field(default=None, description="Cash out from the first order to this month: capex paid before the schedule included. [USD]")
    fiscal_year: str = Field(default="", description="The fiscal year, named by the calendar year it ends in: FY2027 for 2026-07 to 2027-06 with growth.fiscal_year_start_month 7. [text]")
    fiscal_quarter: str = Field(default="", description="The fiscal quarter: 'FY2027 Q1'. [text]")


class CashTotal(_Out):
    """Cash, capex, running costs and depreciation over one fiscal quarter or year of a schedule."""

    period: str = Field(description="'FY2027 Q1' or 'FY2027'. [text]")
    kind: str = Field(description="'quarter' or 'fiscal year'. [text]")
    months: int = Field(description="Schedule months in it (fewer than 3 or 12 where the schedule starts or ends inside it). [months]")
    capex_usd: float = Field(description="Capex paid in it, a payment before the schedule's first month included. [USD]")
    opex_usd: float = Field(description="Running costs of its months. [USD]")
    cash_usd: float = Field(description="Cash out in its months: capex plus running costs. [USD]")
    depreciation_usd: float = Field(description="Depreciation booked in its months, not cash. [USD]")


class ScheduleOut(_Out):
    """The fleet month by month as traffic grows, with order dates."""

    schema_version: int = Field(default=SCHEDULE_SCHEMA_VERSION, description="The layout of this JSON (docs/versioning.md): "
                                "raised when a change breaks a reader. [—]")
    months: list[ScheduleMonth] = Field(description="Every month planned.")
    start: str = Field(description="First month, YYYY-MM. [month]")
    lead_time_days: int = Field(description="Days from order to service. [days]")
    growth: str = Field(description="How the peaks were made. [text]")
    monthly_crossover_month: str | None = Field(description="Monthly crossover: the first month whose monthly comparison with the API (self-hosting's month, ops included, below the API's) differs from the first month's; None if none. Not a break-even: costs before it are not counted. [month]")
    cumulative_breakeven_month: str | None = Field(default=None, description="Cumulative break-even: the first month at which self-hosting's cost since the first month (ops included) is at or below the API's; None when not within the schedule or without API prices. [month]")
    breakeven_words: str = Field(description="The API comparison over the schedule in words: the monthly crossover and the cumulative break-even, each named as such. [text]")
    binding_change_month: str | None = Field(description="First month the binding constraint differs from the first month's. [month]")
    stopped: str = Field(default="", description="Why the schedule ends early, if it does. [text]")
    method: str = Field(default="", description="How each month's fleet was found: verified every month, or the closed form plus a margin measured in simulation, and where. [text]")
    margin_replicas: int = Field(default=0, description="Replicas added to each closed-form month: the most the closed form fell short of the simulation where measured. [replicas]")
    spare_margin_replicas: int = Field(default=0, description="Spare replicas added to each closed-form month's fleet with redundancy beyond margin_replicas: the most the simulation added for the redundancy lost mid-run where measured. [replicas]")
    capex_paid_at: str = Field(default="delivery", description="When bought GPUs are paid for: 'order' (the month the order goes out) or 'delivery' (the month they go into service). [text]")
    fiscal_year_start_month: int = Field(default=1, description="First month of the fiscal year (1: the calendar year). [month]")
    capex_before_schedule_usd: float = Field(default=0.0, description="Capex paid before the first month: orders that go out before it, paid at order. In no month's cash nor any period's total. [USD]")
    cash_totals: list[CashTotal] = Field(default_factory=list, description="Totals by fiscal quarter, then by fiscal year, over the schedule's months.")
    late_orders: list[str] = Field(default_factory=list, description="Months whose order date had passed on the day the schedule was made: order now, they arrive late. [month]")


class PathsCapacityOut(_Out):
    """The closed form's inverse on the memory, compute and latency paths alone (`xlplan capacity`)."""

    tp: int = Field(description="Tensor-parallel degree at that rate. [GPUs]")
    max_peak_rps: float = Field(description="The highest peak rate the paths fit in the fleet. [requests/s]")
    limited_by: str = Field(description="The path that stops it. [text]")
    per_path_rps: dict[str, float] = Field(description="Each path's own limit. [requests/s]")


class ClosedFormCapacityOut(_Out):
    """The highest peak rate at which the closed form (all four paths) fits a fleet, and the path that stops it."""

    tp: int = Field(description="The closed form's degree at that rate. [GPUs]")
    max_peak_rps: float = Field(description="The highest peak rate the closed form fits. [requests/s]")
    limited_by: str = Field(description="The paths that need more than the GPUs just past that rate. [text]")
    without_queueing: PathsCapacityOut = Field(description="Memory, compute and latency alone: linear in the rate.")


class CapacityOut(_Out):
    """The inverse question (`xlplan capacity`): the highest peak rate a fleet serves keeping the promise.

    Verified in simulation where affordable (``method`` 'verified', with the simulated degree, replicas, the rate it
    first misses at, the seeds and each run's span); else the closed form's figure with ``not_simulated`` saying why.
    """

    schema_version: int = Field(default=CAPACITY_SCHEMA_VERSION, description="The layout of this JSON (docs/versioning.md): "
                                "raised when a change breaks a reader. [—]")
    gpus: int = Field(description="GPUs serving the load, spares excluded. [GPUs]")
    method: str = Field(description="'verified' (simulated) or 'closed form'. [text]")
    max_peak_rps: float = Field(description="The highest peak rate found keeping the promise. [requests/s]")
    closed_form: ClosedFormCapacityOut = Field(description="The closed form's inverse beside it.")
    not_simulated: str | None = Field(default=None, description="Why the figure was not simulated. [text]")
    tp: int | None = Field(default=None, description="The simulated tensor-parallel degree. [GPUs]")
    replicas: int | None = Field(default=None, description="Replicas simulated. [replicas]")
    fails_at_rps: float | None = Field(default=None, description="The lowest rate found missing the promise. [requests/s]")
    seeds: list[int] | None = Field(default=None, description="The seeds every run kept the promise on. [1]")
    minutes: float | None = Field(default=None, description="Each run's span at the highest rate. [minutes]")
