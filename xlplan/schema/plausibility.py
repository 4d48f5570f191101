"""Plausible ranges for a plan's inputs and its results: a value far outside what any deployment has is a slip.

The plan's schema refuses what cannot be (a negative rate, a fraction over 1); this layer refuses what can be written
but no one means: a GPU-hour at a million dollars, an MFU of 1.0, 10¹⁴ requests a second. Each range is stated in
numbers with its reason (:data:`RANGES`, listed in the README); a value outside it is refused in one line naming the
likely slip and its fix, unless the plan accepts that field (``accept_implausible: [FIELD, …]`` in the plan file, or
``xlplan --accept-implausible FIELD``), in which case the note says so. Results are held to bounds too
(:data:`RESULT_BOUNDS`): a fleet of more than 100,000 GPUs or a bill over $100M a month is refused the same way.
"""

from __future__ import annotations

from dataclasses import dataclass


def _num(v: float) -> str:
    """A value as a person writes it: 1,000,000 not 1e+06; 0.05 not 5e-02."""
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.6g}" if 1e-4 <= abs(v) < 1e15 else f"{v:g}"


def _ms(v: float) -> str:
    return f" — was it milliseconds? {v:g} ms is {v / 1000:g}" if v >= 1 else ""


def _percent(v: float) -> str:
    return f" — was it a percentage? {v:g}% is {v / 100:g}" if 1 < v <= 100 else ""


def _per_month(v: float) -> str:
    return f" — was it a monthly price? ${v:,.0f} a month is ${v / 730:,.2f} an hour" if v >= 730 else ""


def _watts(v: float) -> str:
    return f" — was it watts? {v:g} W is {v / 1000:g} kW" if v >= 10 else ""


def _ms_over(high: float):
    def slip(v: float) -> str:
        return f" — was it milliseconds? {_num(v)} ms is {v / 1000:g}" if v > high else ""
    return slip


def _seconds_per_token(v: float) -> str:
    return (f" — was it seconds per token? {_num(v)} s a token is {1 / v:g} tokens/s (or write promise.itl_s: {_num(v)})"
            if 0 < v < 1 else "")


def _per_thousand(v: float) -> str:
    return f" — was it per thousand tokens? ${_num(v)} per 1k is ${v * 1000:g} per million" if 0 < v < 0.005 else ""


def _months(v: float) -> str:
    return f" — was it months? {_num(v)} months is {v / 12:g} years" if v > 10 else ""


def _cents(v: float) -> str:
    return f" — was it cents? {v:g}¢ is ${v / 100:g}" if v >= 2 else ""


def _per_day(v: float) -> str:
    if v / 86400 <= 1e6:
        return f" — was it requests a day? {_num(v)} a day is {_num(round(v / 86400, 1))} a second"
    return ""


def _node_memory(v: float) -> str:
    return f" — was it the node's memory? {_num(v)} GiB over 8 GPUs is {_num(v / 8)} GiB each" if v > 1024 else ""


def _gflops(v: float) -> str:
    if v > 1e4:
        return f" — was it GFLOP/s? {_num(v)} GFLOP/s is {v / 1000:g} TFLOP/s"
    return f" — was it PFLOP/s? {_num(v)} PFLOP/s is {_num(v * 1000)} TFLOP/s" if 0 < v < 10 else ""


def _gbps(v: float) -> str:
    return f" — was it GB/s? {_num(v)} GB/s is {v / 1000:g} TB/s" if v > 20 else ""


def _hours_a_day(v: float) -> str:
    return f" — was it hours a day? {_num(v)} h a day is {_num(round(v * 730 / 24, 1))} h a month" if v <= 24 else ""


def _spares(v: float) -> str:
    return (" — was it the fleet, or a percentage? redundancy counts spare replicas on top of the load (N+k): "
            "1 is one spare") if v > 32 else ""


def _percentile(v: float) -> str:
    return f" — was it a fraction? the {v * 100:g}th percentile is written {v * 100:g}, not {v:g}" if 0 < v < 1 else ""


def _weeks(v: float) -> str:
    return f" — was it hours? {_num(v)} hours is {v / 24:g} days" if v > 365 else ""


@dataclass(frozen=True)
class Range:
    """One input's plausible range. Units in ``expected``."""

    field: str  # dotted, as the plan file names it [text]
    low: float  # smallest plausible value, inclusive [field's unit]
    high: float  # largest plausible value, inclusive [field's unit]
    expected: str  # what the value measures, with its unit [text]
    reason: str  # why the range ends where it does [text]
    slip: object = None  # v -> the likely slip for a value outside, as a phrase; None where none is likely [text]


RANGES: tuple[Range, ...] = (
    Range("forecast.peak_rps", 1e-4, 1e6, "requests per second at peak",
          "10⁶ req/s is more than the largest public LLM services report", _per_day),
    *(Range(f"forecast.prompt_tokens.{q}", 1, 1e7, "tokens", "the longest context windows published are 10M tokens")
      for q in ("p50", "p95", "p99")),
    *(Range(f"forecast.output_tokens.{q}", 1, 262_144, "tokens", "the longest output limits published are 128k-256k tokens")
      for q in ("p50", "p95", "p99")),
    Range("forecast.arrival_cv2", 0.0, 100.0, "the squared coefficient of variation of arrival gaps (1 for Poisson)",
          "bursty production traffic measures 1-20"),
    Range("promise.ttft_s", 0.01, 600.0, "seconds to the first token",
          "10 ms is below one prefill step; 10 minutes is batch work", _ms),
    Range("promise.itl_s", 0.001, 1.0, "seconds per token", "1 ms is a thousand tokens a second per user; 1 s is "
          "slower than reading", _ms),
    Range("promise.tokens_per_s", 1.0, 1000.0, "tokens per second per user", "the inverse of an inter-token target "
          "from 1 ms to 1 s", _seconds_per_token),
    Range("hardware.usd_per_gpu_hour", 0.05, 100.0, "US dollars per GPU-hour",
          "published GPU-hour prices run from about $0.10 (old cards) to $15 (new systems)", _per_month),
    Range("hardware.ops_usd_per_month", 0.0, 1e7, "US dollars a month", "a team of operators, not a fleet"),
    Range("hardware.gpus_per_node", 1.0, 72.0, "GPUs per node or instance (the purchasing unit)",
          "a server holds 8, an NVL72 rack 72: a larger unit is a fleet, not a node"),
    *(Range(f"policy.{f}", 0.01, 0.8, "a fraction of peak FLOP/s",
            "no published inference stack sustains more than 80% of peak", _percent)
      for f in ("mfu", "prefill_mfu", "decode_mfu")),
    Range("policy.bandwidth_efficiency", 0.05, 0.95, "a fraction of HBM bandwidth",
          "memory-bound kernels reach at most about 92% of the rated bandwidth", _percent),
    Range("policy.expert_efficiency", 0.01, 1.0, "expert GEMMs' MFU as a fraction of dense GEMMs'",
          "grouped expert GEMMs do not beat dense ones", _percent),
    Range("policy.memory_utilisation", 0.05, 0.98, "a fraction of GPU memory",
          "engines need some memory outside their pool (CUDA context, graphs)", _percent),
    Range("policy.overhead_gib", 0.0, 64.0, "GiB per GPU", "activations and runtime take a few GiB, not tens"),
    Range("policy.step_overhead_s", 0.0, 0.1, "seconds per engine step", "measured per-step overheads are 0.5-10 ms",
          _ms_over(0.1)),
    Range("costs.kw_per_gpu", 0.05, 3.0, "kW per GPU, its share of the server's draw",
          "the largest accelerators draw about 1.2 kW, 2 kW with their server share", _watts),
    Range("costs.pue", 1.0, 3.0, "power usage effectiveness (facility ÷ IT power)", "data centres report 1.05-2.5"),
    Range("costs.usd_per_kwh", 0.01, 1.0, "US dollars per kWh", "industrial electricity costs $0.03-0.40", _cents),
    Range("costs.depreciation_years", 1.0, 10.0, "years", "accelerators are written off over 3-6 years", _months),
    Range("costs.capex_usd_per_node", 1000.0, 1e7, "US dollars per node, as bought",
          "an 8-GPU B200 server lists for about $500,000; no node costs $10M"),
    Range("costs.hosting_usd_per_kw_month", 0.0, 1000.0, "US dollars per kW of IT load a month",
          "colocation prices run $100-300 per kW a month"),
    Range("costs.hardware_ops_usd_per_month", 0.0, 1e7, "US dollars a month", "a team of operators, not a fleet"),
    Range("forecast.average_utilisation", 0.001, 1.0, "the month's average load as a fraction of its peak",
          "services average 20-70% of their peak, a bursty one a few percent; under 0.1% the fleet idles 999 hours "
          "in 1,000"),
    Range("forecast.prefix_reuse", 0.0, 0.95, "the fraction of prompt compute served from the prefix cache",
          "production prefix caches report hit rates up to about 90%; at 100% no prompt is computed"),
    Range("promise.percentile", 50.0, 99.99, "the percentile at which the targets hold",
          "service-level promises are set at p50 to p99.9", _percentile),
    *(Range(f"hardware.gpu.{f}", 8.0, 1024.0, "GiB per GPU", "accelerators hold 16-288 GB; none holds a TiB", _node_memory)
      for f in ("memory_gib",)),
    *(Range(f"hardware.gpu.{f}", 10.0, high, "peak dense TFLOP/s per GPU", why, _gflops) for f, high, why in (
        ("bf16_tflops", 10_000.0, "dense BF16 runs from about 30 (T4) to 2,500 (B300) TFLOP/s"),
        ("fp8_tflops", 20_000.0, "dense FP8 runs up to about 5,000 TFLOP/s (B300)"),
        ("fp4_tflops", 40_000.0, "dense FP4 runs up to about 15,000 TFLOP/s (B300)"))),
    Range("hardware.gpu.hbm_tbps", 0.1, 20.0, "TB/s of memory bandwidth per GPU",
          "accelerators read 0.3 (T4) to 8 TB/s (B200, MI355X)", _gbps),
    Range("hardware.gpu.usd_per_gpu_hour", 0.05, 100.0, "US dollars per GPU-hour",
          "published GPU-hour prices run from about $0.10 (old cards) to $15 (new systems)", _per_month),
    Range("hardware.hours_per_month", 168.0, 744.0, "billed hours in a month",
          "a month is 730 hours on average; fewer than a week's 168 is not a monthly bill", _hours_a_day),
    Range("policy.redundancy", 0.0, 32.0, "spare replicas on top of the load (N+k)",
          "N+1 and N+2 are usual; more than 32 spares is a second fleet", _spares),
    Range("policy.tp", 1.0, 72.0, "GPUs one replica's tensors are split over",
          "one NVLink domain holds at most 72 GPUs (NVL72)"),
    Range("policy.expert_parallel", 1.0, 72.0, "GPUs a replica's experts are split over",
          "one NVLink domain holds at most 72 GPUs (NVL72)"),
    Range("policy.max_num_batched_tokens", 64.0, 1_048_576.0, "tokens one engine step may carry",
          "engines default to 2,048-16,384 a step; a step of a million tokens is past any context"),
    Range("policy.long_prefill_token_threshold", 16.0, 1_048_576.0, "prompt tokens one request may prefill in a step",
          "vLLM's own examples use a few hundred to a few thousand; below 16 a 2,000-token prompt takes over 100 steps"),
    Range("policy.max_num_seqs", 1.0, 4096.0, "sequences a replica runs at once",
          "engines default to 256-1,024; past 4,096 no GPU holds the cache"),
    Range("growth.monthly", -0.3, 0.5, "the peak's growth a month, as a fraction",
          "the fastest-growing public AI services grew 30-40% a month at their steepest"),
    Range("growth.peaks_rps", 1e-4, 1e6, "requests per second at each month's peak",
          "10⁶ req/s is more than the largest public LLM services report", _per_day),
    Range("growth.lead_time_days", 0.0, 365.0, "days from order to GPUs in service",
          "GPU lead times run from a day (cloud) to about 52 weeks (new systems in short supply)", _weeks),
    Range("growth.months", 1.0, 120.0, "months to plan", "ten years outlive three GPU generations"),
    Range("installed.gpus", 0.0, 100_000.0, "GPUs in service", "more than any single published inference fleet"),
    Range("orders.gpus", 1.0, 100_000.0, "GPUs in one order", "more than any single published inference fleet"),
    Range("contracts.reserved_usd_per_gpu_hour", 0.05, 100.0, "US dollars per reserved GPU-hour",
          "reserved prices run 30-70% under on-demand ones, $0.05-15 an hour", _per_month),
    Range("contracts.no_promise_share", 0.0, 0.95, "the share of traffic served without the latency promise",
          "a fleet sized for the promise carries the promised traffic; 95% without it is a batch fleet", _percent),
    Range("costs.kw_per_gpu_typical", 0.05, 3.0, "kW per GPU at typical load, its share of the server's draw",
          "the largest accelerators draw about 1.2 kW, 2 kW with their server share", _watts),
    Range("costs.residual_fraction", 0.0, 0.6, "the resale value at the end of its life, a fraction of capex",
          "accelerators resell for 10-40% of their price after 3-5 years", _percent),
    Range("costs.cost_of_capital", 0.0, 0.3, "a yearly rate (0.08, not 8)", "corporate costs of capital run 5-15% a year",
          _percent),
    Range("costs.licence_usd_per_gpu_year", 0.0, 20_000.0, "US dollars per GPU a year",
          "NVIDIA AI Enterprise lists $4,500 a GPU a year; open-source engines cost nothing"),
    Range("costs.network_usd_per_node", 0.0, 500_000.0, "US dollars per node",
          "a node's share of a 400-800 Gb/s fabric costs $10,000-60,000"),
    Range("costs.storage_usd_per_node", 0.0, 500_000.0, "US dollars per node",
          "storage beyond the server's drives costs thousands of dollars a node, not millions"),
    Range("costs.installation_usd_per_node", 0.0, 250_000.0, "US dollars per node",
          "racking, cabling and burn-in cost a few thousand dollars a node"),
    Range("costs.price_max_age_months", 1.0, 60.0, "months a price may age before it is flagged",
          "GPU prices move within a year; five years spans two generations"),
    Range("api.usd_per_mtok_input", 0.005, 500.0, "US dollars per million input tokens",
          "published API prices run from a few cents to $150 per million", _per_thousand),
    Range("api.usd_per_mtok_output", 0.005, 1000.0, "US dollars per million output tokens",
          "published API prices run from a few cents to $600 per million", _per_thousand),
)
"""Every input range, with its reason; a field left out of a plan is not checked. Not ranged: a trigger's bounds
(their unit is their metric's, and one past any month's figure only never fires), the daily curve (fractions of the
peak hour, which the schema holds to (0, 1]) and what ``xlplan calibrate`` writes (``policy.calibration``)."""


RESULT_BOUNDS: tuple[Range, ...] = (
    Range("result.fleet_gpus", 0, 100_000, "GPUs to buy", "more than any single published inference fleet"),
    Range("result.monthly_usd", 0, 1e8, "US dollars a month", "$100M a month is a hyperscaler's whole budget line"),
)
"""Bounds on the answer: a fleet or a bill past them comes from an input no one meant."""

FLEET_CEILING_GPUS = 1_000_000
"""The largest fleet xlplan sizes, accepted as meant or not: ten times :data:`RESULT_BOUNDS`' fleet. A queue whose
offered load alone needs more is not summed (Erlang's sums take seconds each there, and a plan would take minutes); a
service that large is planned in parts (a plan per region or model), each under it. [GPUs]"""



def past_ceiling(fleet_gpus: float) -> str:
    """The one line for a fleet past :data:`FLEET_CEILING_GPUS`, which no ``accept_implausible`` lifts. [text]

    Parameters
    ----------
    fleet_gpus : float
        The fleet asked for or sized. [GPUs]

    Returns
    -------
    str
        'result.fleet_gpus: got N; xlplan sizes at most 1,000,000 GPUs, accepted as meant or not …'. [text]

    Examples
    --------
    >>> past_ceiling(2e9)[:62]
    'result.fleet_gpus: got 2,000,000,000; xlplan sizes at most 1,0'
    """
    return (f"result.fleet_gpus: got {_num(fleet_gpus)}; xlplan sizes at most {_num(FLEET_CEILING_GPUS)} GPUs, accepted "
            "as meant or not (ten times the largest published inference fleet); check the forecast's rate and lengths "
            "for a slip, or plan the service in parts, a plan per region or model")


FIELDS = frozenset(r.field for r in RANGES + RESULT_BOUNDS)
RANGE_OF = {r.field: r for r in RANGES}
"""Each input's range, by its dotted field."""


def excel_number(x: float) -> str:
    """A bound as Excel and LibreOffice read it in a formula or a validation: 0.0001, 1000000 (never 1e-04). [text]

    Parameters
    ----------
    x : float
        A non-negative bound. [field's unit]

    Returns
    -------
    str
        Its digits, no exponent. [text]

    >>> excel_number(1e-4), excel_number(1e6), excel_number(0.8)
    ('0.0001', '1000000', '0.8')
    """
    return f"{x:.15f}".rstrip("0").rstrip(".") if x < 1 else f"{x:.15g}"


def finding(field: str, v: float) -> str | None:
    """The one line for a value outside ``field``'s plausible range (field, value, what was expected, the likely
    slip), or None where it is inside or the field has no range. [text]

    Parameters
    ----------
    field : str
        Dotted plan field, e.g. 'promise.itl_s'. [text]
    v : float
        The value. [field's unit]

    Returns
    -------
    str or None
        The finding, as the plan file's refusal states it (without how to accept it). [text]

    Examples
    --------
    >>> finding("promise.itl_s", 50)[:52]
    'promise.itl_s: got 50; expected seconds per token, 0'
    """
    r = RANGE_OF.get(field)
    bad = _judge(r, v) if r is not None else None
    return bad.finding if bad is not None else None


@dataclass(frozen=True)
class Implausible:
    """One value outside its plausible range."""

    field: str  # dotted [text]
    value: float  # as given [field's unit]
    message: str  # the one line: field, value, what was expected, the likely slip, how to accept it [text]
    finding: str = ""  # the same without how to accept it [text]


def _values(obj, parts: list[str]) -> list[float]:
    """Every number at the dotted path below ``obj``, through lists ('orders.gpus': each order's). [field's unit]"""
    if isinstance(obj, (list, tuple)):
        return [v for item in obj for v in _values(item, parts)]
    if not parts:
        return [float(obj)] if isinstance(obj, (int, float)) and not isinstance(obj, bool) else []
    nxt = getattr(obj, parts[0], None)
    return [] if nxt is None else _values(nxt, parts[1:])


def _judge(r: Range, v: float) -> Implausible | None:
    if r.low <= v <= r.high:
        return None
    finding = (f"{r.field}: got {_num(v)}; expected {r.expected}, {_num(r.low)} to {_num(r.high)} ({r.reason})"
               f"{r.slip(v) if r.slip else ''}")
    return Implausible(r.field, v, finding + "; " + accept_hint([r.field]), finding)


def accept_hint(fields, workbook: bool = False) -> str:
    """How to say that values outside their ranges are meant, for these fields. [text]

    Parameters
    ----------
    fields : sequence of str
        Dotted field names. [text]
    workbook : bool
        The values are a workbook's inputs (`xlplan read`, `check`, `diff`): accepted by the command line's option,
        which a plan read from the workbook then carries. [—]

    Returns
    -------
    str
        'if it is meant, add accept_implausible: [F] to the plan, or run xlplan --accept-implausible F …'; for a
        workbook, 'if it is meant, run xlplan --accept-implausible F … on the workbook (…)'. [text]
    """
    flags = " ".join(f"--accept-implausible {f}" for f in fields)
    it = "it is" if len(fields) == 1 else "they are"
    if workbook:
        return (f"if {it} meant, run xlplan {flags} … on the workbook (a plan `xlplan read` writes from it then accepts "
                f"{'it' if len(fields) == 1 else 'them'})")
    return f"if {it} meant, add accept_implausible: [{', '.join(fields)}] to the plan, or run xlplan {flags} …"


def _outside(plan) -> list[tuple[Range, Implausible]]:
    """Every stated input outside its range, accepted or not, in :data:`RANGES` order. [—]"""
    found = []
    for r in RANGES:
        for v in _values(plan, r.field.split(".")):
            if (bad := _judge(r, v)) is not None:
                found.append((r, bad))
                break  # one line a field: the first of a list's values outside
    return found


def outside_fields(plan) -> set[str]:
    """The dotted fields whose stated values lie outside their ranges, accepted in the plan or not. [text]

    Parameters
    ----------
    plan : Plan
        The validated plan.

    Returns
    -------
    set of str
        Dotted field names. [text]
    """
    return {r.field for r, _ in _outside(plan)}


def _accepted(plan) -> set[str]:
    return set(getattr(plan, "accept_implausible", ()) or ())


def inputs(plan) -> list[Implausible]:
    """The plan's inputs outside their plausible ranges, those its ``accept_implausible`` names left out.

    Parameters
    ----------
    plan : Plan
        A plan that passed its schema. [—]

    Returns
    -------
    list of Implausible
        In :data:`RANGES` order; empty when every value is plausible or accepted. [—]
    """
    return [bad for r, bad in _outside(plan) if r.field not in _accepted(plan)]


def results(fleet_gpus: float, monthly_usd: float, accepted=()) -> list[Implausible]:
    """The answer's fleet and bill past :data:`RESULT_BOUNDS`, fields in ``accepted`` left out.

    Parameters
    ----------
    fleet_gpus : float
        GPUs to buy. [GPUs]
    monthly_usd : float
        The monthly bill. [USD/month]
    accepted : iterable of str
        Fields to leave unchecked ('result.fleet_gpus', 'result.monthly_usd'). [text]

    Returns
    -------
    list of Implausible
        Empty when both are within bounds. [—]
    """
    values = {"result.fleet_gpus": fleet_gpus, "result.monthly_usd": monthly_usd}
    return [bad for r in RESULT_BOUNDS if r.field not in set(accepted)
            and (bad := _judge(r, float(values[r.field]))) is not None]


def accepted_lines(plan) -> list[str]:
    """The note's record of what the plan accepted: one line per accepted field that is outside its range. [text]

    Parameters
    ----------
    plan : Plan
        The plan. [—]

    Returns
    -------
    list of str
        'accepted as meant: FIELD = VALUE (expected …)' for each accepted input outside its range. [text]
    """
    return [f"accepted as meant: {r.field} = {_num(bad.value)}, outside the plausible {_num(r.low)} to {_num(r.high)} "
            f"({r.expected}; {r.reason})" for r, bad in _outside(plan) if r.field in _accepted(plan)]
