"""The monthly review: production measurements back to the plan, its breakpoints, triggers and order dates.

Notes
-----
The plan's figure for the review month is its forecast grown by its growth section (month 0 is ``growth.start``,
else the month after the plan's date); the change is measured ÷ planned − 1. A breakpoint is crossed when the measured
figure is at or past its value in its direction (up: ≥, down: ≤); its headroom is |value − measured| ÷ measured. The
consequence stated is the breakpoint's own (the purchase past it, the binding past it), beside the re-plan's. The
build-versus-buy trigger fires when the measured tokens a month fall below the break-even of the plan's own way of
paying (the Answer's bill, ops included, against the API). Hooks: production latency (section 3) and a model check
(section 5, with any recalibration) are objects another reader passes in; left out, "not given".

References
----------
Runbook, document 14, "Questions": review "monthly against measurement, and immediately when any input changes"; the
sensitivities section makes most reviews "a two-minute check rather than a re-derivation"; build versus buy: "revisit
quarterly with the measured number".
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from xlplan.evidence.confirm import Evidence
from xlplan.evidence.traffic import TrafficSummary
from xlplan.money import cost
from xlplan.review.history import accuracy, history_line
from xlplan.review.replan import planned_peak, replan
from xlplan.schema.plan import Plan
from xlplan.schema.result import Breakpoint, PlanResult
from xlplan.schema.review import BindingCheck, BreakpointCheck, FigureCheck, PromiseCheck, ReviewOut, TriggerCheck

FIGURES = {"peak_rps": ("peak rate", "requests/s"), "prompt_p50": ("median prompts", "tokens"),
           "prompt_p95": ("p95 prompts", "tokens"), "prompt_p99": ("p99 prompts", "tokens"),
           "output_p50": ("median outputs", "tokens"), "output_p95": ("p95 outputs", "tokens"),
           "output_p99": ("p99 outputs", "tokens"), "average_utilisation": ("average utilisation", "fraction"),
           "prefix_reuse": ("prefix reuse", "fraction"), "tokens_per_month": ("tokens a month", "tokens/month")}
"""Every figure the review compares, trigger metrics included: key → (label, unit). [text]"""

WATCH = 3
"""Breakpoints shown to watch next month. [breakpoints]"""


class ProductionLatency(Protocol):
    """Section 3's hook: what a production latency reader passes in (p95 from histograms, with the bucket error)."""

    ttft_s: float | None  # TTFT at the promise's percentile [s]
    itl_s: float | None  # inter-token latency at the promise's percentile [s/token]
    sentence: str  # how it was read, the bucket error stated [text]


class ModelCheck(Protocol):
    """Section 5's hook: the model against production, and the plan with any recalibration applied by its reader."""

    sentence: str  # step times and KV use against the serving model, and the fit with its uncertainty [text]


def _measured_figures(traffic: TrafficSummary, planned_utilisation: float | None = None) -> dict[str, float | None]:
    """The review's figures from a log's summary.

    Parameters
    ----------
    traffic : TrafficSummary
        What the log says (:func:`xlplan.evidence.traffic.summarise`).
    planned_utilisation : float, optional
        The plan's average utilisation, for the tokens a month where the log is too short to measure its own. [fraction]

    Returns
    -------
    dict
        :data:`FIGURES`' keys → the measured value (requests/s, tokens, fraction, tokens/month); prefix reuse None
        when the log has no cached-token counts; the average utilisation None when the log spans less than
        :data:`xlplan.evidence.traffic.AVERAGE_SPAN_S`, and then the tokens a month at the measured peak and the plan's utilisation (None
        without it). Tokens a month: mean rate × mean tokens × 730 h. [unit of each]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month".
    """
    t = traffic
    whole = t.measures_utilisation  # a slice of the peak measures no month's average
    util = t.average_utilisation if whole else None
    month_util = util if whole else planned_utilisation
    tokens = cost.tokens_per_month(t.peak_rps, t.prompt.mean + t.output.mean, month_util) if month_util is not None else None
    return {"peak_rps": t.peak_rps, "prompt_p50": t.prompt.p50, "prompt_p95": t.prompt.p95, "prompt_p99": t.prompt.p99,
            "output_p50": t.output.p50, "output_p95": t.output.p95, "output_p99": t.output.p99,
            "average_utilisation": util, "prefix_reuse": t.prefix_reuse, "tokens_per_month": tokens}


def _planned_figures(plan: Plan, result: PlanResult, growth_factor: float) -> dict[str, float]:
    """The plan's figures for the review month.

    Parameters
    ----------
    plan : Plan
        The plan as written.
    result : PlanResult
        Its result (for the tokens a month).
    growth_factor : float
        The plan's peak in the review month ÷ its forecast's peak. [1]

    Returns
    -------
    dict
        :data:`FIGURES`' keys → the planned value; the peak and the tokens a month grown, the lengths and shares as
        written (p99 left out: p95). [unit of each]
    """
    f = plan.forecast
    return {"peak_rps": f.peak_rps * growth_factor, "prompt_p50": f.prompt_tokens.p50, "prompt_p95": f.prompt_tokens.p95,
            "prompt_p99": f.prompt_tokens.p99 or f.prompt_tokens.p95, "output_p50": f.output_tokens.p50,
            "output_p95": f.output_tokens.p95, "output_p99": f.output_tokens.p99 or f.output_tokens.p95,
            "average_utilisation": f.average_utilisation, "prefix_reuse": f.prefix_reuse,
            "tokens_per_month": result.cost.tokens_per_month * growth_factor}


def _change(planned: float, measured: float | None) -> float | None:
    return None if measured is None or planned == 0 else measured / planned - 1.0


def _forecast_checks(planned: dict[str, float], measured: dict[str, float | None], owner: str) -> list[FigureCheck]:
    """Section 1: each figure planned, measured and changed, with its owner.

    Parameters
    ----------
    planned : dict
        :func:`_planned_figures`. [unit of each]
    measured : dict
        :func:`_measured_figures`. [unit of each]
    owner : str
        The forecast's owner (``owners.forecast``). [text]

    Returns
    -------
    list of FigureCheck
        One per figure of :data:`FIGURES`, in its order.
    """
    return [FigureCheck(key=k, label=label, unit=unit, planned=planned[k], measured=measured.get(k),
                        change=_change(planned[k], measured.get(k)), owner=owner) for k, (label, unit) in FIGURES.items()]


def _number(v: float, unit: str) -> str:
    if unit == "fraction":
        return f"{v:.1%}"
    if unit == "tokens/month":
        return f"{v / 1e9:,.1f} billion tokens a month"
    if unit == "s/token":
        return f"{v * 1e3:,.1f} ms"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.3g}"


def _threshold(b: Breakpoint, kind: str, measured: float | None, binding: str, new_purchased: int) -> BreakpointCheck | None:
    """One threshold of a breakpoint (its fleet step or its binding change) against the measured figure."""
    at = b.fleet_step_at if kind == "fleet step" else b.binding_flip_at
    if at is None:
        return None
    label = FIGURES.get(b.variable, ("the inter-token target" if b.variable == "itl_s" else b.variable, b.unit))[0]
    crossed = measured is not None and (measured >= at if b.direction == "up" else measured <= at)
    headroom = None if measured is None or crossed or measured == 0 else abs(at - measured) / measured
    after = (b.binding_after or binding) if kind == "binding change" else binding
    n = b.purchased_after if kind == "fleet step" else None
    if crossed:
        goes = (f"the purchase goes to {n:,} GPUs" if n is not None else "the purchase stays") + (
            " — as the plan said" if n is None or n == new_purchased
            else f" (the re-plan's, with every measured figure: {new_purchased:,})")
        binds = "the plan cannot be met" if after == "infeasible" else f"{after} binds"
        sentence = f"{label} reached {_number(measured, b.unit)} (breakpoint {_number(at, b.unit)}): {binds}; {goes}"
    elif measured is None:
        sentence = f"{label}: not measured (breakpoint {_number(at, b.unit)}, {kind})"
    else:
        sentence = (f"{label} {_number(measured, b.unit)}: {headroom:.0%} to go before the {kind} at {_number(at, b.unit)} "
                    f"({'the plan cannot be met' if after == 'infeasible' else after + ' binds'}"
                    f"{f', the purchase goes to {n:,} GPUs' if n is not None else ''})")
    return BreakpointCheck(variable=b.variable, label=label, unit=b.unit, direction=b.direction, kind=kind, at=at,
                           measured=measured, crossed=crossed, headroom=headroom, binding_after=after, purchased_after=n,
                           sentence=sentence)


def _breakpoint_checks(breakpoints: list[Breakpoint], measured: dict[str, float | None], binding: str,
                      new_purchased: int) -> list[BreakpointCheck]:
    """Section 2: each breakpoint's fleet step and binding change against the measured figures.

    Parameters
    ----------
    breakpoints : list of Breakpoint
        The plan's section-6 breakpoints.
    measured : dict
        :func:`_measured_figures`. [unit of each]
    binding : str
        The plan's binding path, which a fleet step keeps. [text]
    new_purchased : int
        The re-plan's purchase, set beside the breakpoint's. [GPUs]

    Returns
    -------
    list of BreakpointCheck
        Two thresholds per breakpoint at most, each crossed or with its headroom.
    """
    out = []
    for b in breakpoints:
        for kind in ("fleet step", "binding change"):
            c = _threshold(b, kind, measured.get(b.variable), binding, new_purchased)
            if c is not None:
                out.append(c)
    return out


def _trigger_checks(plan: Plan, result: PlanResult, measured: dict[str, float | None],
                   replanned_breakeven: float | None = None) -> list[TriggerCheck]:
    """Section 7: the plan's triggers on the measured figures, then the build-versus-buy break-even.

    Parameters
    ----------
    plan : Plan
        The plan, with its ``triggers``.
    result : PlanResult
        Its result: the Answer's break-even.
    measured : dict
        :func:`_measured_figures`. [unit of each]
    replanned_breakeven : float, optional
        The re-plan's break-even (the measured month's fleet and bill at the plan's way of paying), which the
        trigger judges where given; else the plan's Answer's. [tokens/month]

    Returns
    -------
    list of TriggerCheck
        Each trigger fired or not; the break-even fires when the measured tokens a month are below it.

    References
    ----------
    Runbook, document 14 · build versus buy: "stay on the API until we cross that volume … revisit quarterly with the
    measured number".
    """
    out = []
    for t in plan.triggers:
        m = measured.get(t.metric)
        fired = m is not None and (m > t.value if t.above is not None else m < t.value)
        out.append(TriggerCheck(metric=t.metric, unit=FIGURES[t.metric][1], bound="above" if t.above is not None else "below",
                                value=t.value, measured=m, fired=fired, action=t.action, source="plan"))
    a = result.answer
    even = replanned_breakeven or (a.breakeven_tokens_per_month if a is not None else result.cost.breakeven_tokens_per_month)
    if even is not None:
        m = measured["tokens_per_month"]
        paid = (a.paid_as if a is not None else plan.costs.mode).replace("_", " ")
        out.append(TriggerCheck(metric="tokens_per_month", unit="tokens/month", bound="below", value=even, measured=m,
                                fired=m is not None and m < even, source="break-even",
                                action=f"where fired, the API is cheaper than the plan's way of paying ({paid}) at the month's volume: revisit build versus buy"))
    return out


def _promise(plan: Plan, latency: ProductionLatency | None) -> PromiseCheck:
    ttft, itl = plan.promise.ttft_s, plan.promise.itl
    if latency is None:
        return PromiseCheck(given=False, ttft_target_s=ttft, itl_target_s=itl, sentence="not given (no production latency read)")
    if latency.ttft_s is None and latency.itl_s is None:  # scrapes without the histograms, or without an observation
        return PromiseCheck(given=True, ttft_target_s=ttft, itl_target_s=itl, met=None,
                            sentence="not measured: " + latency.sentence)
    met = all(v is None or v <= target for v, target in ((latency.ttft_s, ttft), (latency.itl_s, itl)))
    return PromiseCheck(given=True, ttft_target_s=ttft, itl_target_s=itl, ttft_s=latency.ttft_s, itl_s=latency.itl_s, met=met,
                        sentence=("kept: " if met else "missed: ") + latency.sentence)


def _binding(planned: str, evidence: Evidence | None) -> BindingCheck:
    from xlplan.evidence.confirm import agrees_with_plan, verdict

    if evidence is None:
        return BindingCheck(planned=planned, found=None, agrees=None, sentence=f"not given (no scrapes); the Answer says {planned} binds")
    found, why = verdict(evidence)
    agrees = agrees_with_plan(found, planned)
    return BindingCheck(planned=planned, found=found, agrees=agrees,
                        sentence=f"{found} binds in production — {why}; {'agrees with' if agrees else 'does not confirm'} the Answer's binding ({planned}{' memory and compute' if planned == 'both' else ''})")


def _watch_list(checks: list[BreakpointCheck], n: int = WATCH) -> list[BreakpointCheck]:
    """Section 8: the nearest thresholds not yet crossed, by headroom.

    Parameters
    ----------
    checks : list of BreakpointCheck
        :func:`_breakpoint_checks`.
    n : int
        How many. [breakpoints]

    Returns
    -------
    list of BreakpointCheck
        Up to ``n`` measured, uncrossed thresholds, the smallest headroom first.
    """
    return sorted((c for c in checks if c.headroom is not None), key=lambda c: c.headroom)[:n]


def review(plan: Plan, result: PlanResult, traffic: TrafficSummary, measured_plan: Plan, date: str,
           evidence: Evidence | None = None, latency: ProductionLatency | None = None, model: ModelCheck | None = None,
           recalibrated: str = "", history: tuple = (), peak_band_rps: float | None = None,
           verify: bool | str = False) -> ReviewOut:
    """The monthly review of a plan against a month's measurements.

    Parameters
    ----------
    plan : Plan
        The plan as written, with any ``installed``, ``orders`` and ``triggers``.
    result : PlanResult
        Its result (:func:`xlplan.decide.planner.plan`).
    traffic : TrafficSummary
        The month's requests (:func:`xlplan.evidence.traffic.summarise`).
    measured_plan : Plan
        The plan with the measured forecast, and the recalibrated efficiencies where there are any.
    date : str
        The review day, ``YYYY-MM-DD``. [date]
    evidence : Evidence, optional
        The scrapes (:func:`xlplan.io.metrics.read_scrapes`), for the binding constraint in production.
    latency : ProductionLatency, optional
        Section 3's hook: p95 TTFT and inter-token latency in production.
    model : ModelCheck, optional
        Section 5's hook: the model against production.
    recalibrated : str
        Where the measured plan's efficiencies come from, '' when they are the plan's. [text]
    history : tuple of HistoryLine
        Earlier reviews, oldest first. [text]
    peak_band_rps : float, optional
        The top of the planned peak's sampling band (:func:`xlplan.evidence.traffic_windows.busiest_window_band_rps`):
        a measured peak from the planned peak up to it is the plan's peak read with noise, so the breakpoints and
        triggers are judged at the planned peak (the measured one is still shown); one under the planned peak is
        traffic that fell (a log at the plan's rate reads its busiest window under it in about 0.01% of months). [requests/s]
    verify : bool or 'auto'
        As :func:`xlplan.decide.planner.plan`'s: the re-plan is the Answer ``xlplan plan`` gives the measured plan with
        the same setting (``result`` should be the plan's with it too), and its schedule verifies as ``xlplan schedule``
        does ('margin') unless it is False (the closed form alone).

    Returns
    -------
    ReviewOut
        Sections 1-8, the history's trends, the line this review adds, and what needs action.

    References
    ----------
    Runbook, document 14, "Questions" · review "monthly against measurement, and immediately when any input changes".
    """
    day = dt.date.fromisoformat(date)
    index, peak = planned_peak(plan, day)
    measured = _measured_figures(traffic, plan.forecast.average_utilisation)
    growth = peak / plan.forecast.peak_rps
    planned = _planned_figures(plan, result, growth)
    within = peak_band_rps is not None and planned["peak_rps"] <= measured["peak_rps"] <= peak_band_rps
    judged = {**measured, "peak_rps": planned["peak_rps"]} if within else measured  # noise moves no decision
    rp = replan(plan, result, measured_plan, day, index, recalibrated, verify)
    basis = "the closed form's, the Answer's method" if result.closed_form_breakpoints else "the runbook's method's"
    checks = _breakpoint_checks(result.closed_form_breakpoints or result.breakpoints, judged,
                               result.answer.binding if result.answer else result.binding, rp.new.purchased)
    runbook = _breakpoint_checks(result.breakpoints, judged, result.binding, rp.new.purchased)
    triggers = _trigger_checks(plan, result, judged, rp.new.breakeven_tokens_per_month)
    promise = _promise(plan, latency)
    line = history_line(date, plan.name, planned, measured, rp.old.held, rp.new.held)
    reasons = ([c.sentence for c in checks if c.crossed] + [f"trigger: {t.metric} {t.bound} {_number(t.value, t.unit)}: {t.action}"
                                                            for t in triggers if t.fired]
               + (["the promise was missed in production"] if promise.met is False else [])
               + [a.sentence for a in rp.actions if a.due])
    return ReviewOut(plan=plan.name, date=date, month=f"{day:%Y-%m}", planned_month_index=index, growth_factor=growth,
                     forecast=[c.model_copy(update={"band_top": peak_band_rps}) if c.key == "peak_rps" else c
                               for c in _forecast_checks(planned, measured, plan.owners.forecast)], breakpoints_basis=basis,
                     breakpoints=checks, runbook_breakpoints=runbook, promise=promise, binding=_binding(result.answer.binding if result.answer is not None else result.binding, evidence),
                     model=model.sentence if model is not None else "not given (no production model check)", replan=rp,
                     triggers=triggers, watch=_watch_list(checks), history=accuracy([*history, line]), history_line=line,
                     reasons=reasons, needs_action=bool(reasons))
