"""The orchestrator: a :class:`~xlplan.plan.Plan` in, a :class:`~xlplan.result.PlanResult` out.

Runs the seven steps (:mod:`xlplan.steps`), the what-ifs and breakpoints
(:mod:`xlplan.whatif`), and gathers every figure of the capacity note. No I/O.
"""

from __future__ import annotations

import dataclasses
import math

from xlplan import _vec, architecture, closed_form, cost, memory, ownership, simulate, steps, whatif
from xlplan.plan import Plan
from xlplan.result import (
    AnswerOut,
    ClosedFormOut,
    ComputeOut,
    CostOut,
    FleetAt,
    FleetOut,
    InputsOut,
    LatencyOut,
    LengthOut,
    MemoryOut,
    ModelOut,
    OwnershipOut,
    PlanResult,
    QueueingOut,
    TPOption,
    UtilisationCost,
)
from xlplan.scenario import Scenario, compute_dtype, resolve
from xlplan.steps import PlanningError, Solution, decode_mfu, prefill_mfu, solve

UTILISATION_TABLE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Average utilisations at which $/M tokens is tabulated. [fraction]"""

__all__ = ["PlanningError", "plan", "resolve", "solve"]


def _tp_reason(sol: Solution, bill_purchased: bool) -> str:
    chosen = sol.paths
    others = [c for c in sol.candidates if c.tp != chosen.tp]
    if not others:
        return f"TP {chosen.tp} as the plan fixes it"

    def billed(c):
        return c.purchased if bill_purchased else c.with_redundancy

    parts = []
    for c in others:
        if c.load == _vec.INF:
            why = "weights leave no KV room" if c.kv_budget_gib_per_gpu <= 0 else "cannot meet the inter-token target"
            parts.append(f"TP {c.tp}: {why}")
        else:
            parts.append(f"TP {c.tp}: {c.purchased:.0f} bought, {billed(c):.0f} billed")
    return (f"TP {chosen.tp} buys the fewest GPUs ({chosen.purchased:.0f}), then bills the fewest ({billed(chosen):.0f}), "
            f"then is the smallest degree; " + ", ".join(parts))


def _length(p50, p95, p99, mean, m2) -> LengthOut:
    return LengthOut(p50=p50, p95=p95, p99=p99, mean=mean, second_moment=m2)


def _warnings(plan: Plan, s: Scenario, sol: Solution) -> list[str]:
    out = []
    p = sol.paths
    if p.ttft_p95_s > s.ttft_s:
        out.append(
            f"TTFT not met: a p95 prompt ({s.prompt_p95:,.0f} tokens) alone takes {p.ttft_p95_s:.2f} s to prefill on one "
            f"TP-{p.tp} replica against a {s.ttft_s:g} s target; more replicas do not help — a larger TP degree, a faster "
            "GPU, shorter prompts or prefix caching do"
        )
    model = plan.model.resolve()
    if model.max_context_tokens and (s.prompt_p99 or s.prompt_p95) + (s.output_p99 or s.output_p95) > model.max_context_tokens:
        out.append(f"p99 prompt + output exceeds the model's context limit of {model.max_context_tokens:,} tokens")
    if sol.traffic.concurrency and p.conversations_per_replica < 8:
        out.append(
            f"each replica's cache holds only {p.conversations_per_replica:.1f} conversations: the weights leave almost "
            "no room; a larger TP degree or fp8 weights would change that"
        )
    return out


def calibrated_ends(p: Plan, s: Scenario) -> tuple[FleetAt | None, FleetAt | None]:
    """The fleet at the low and at the high ends of the calibrated efficiencies (None without a calibration).

    Parameters
    ----------
    p : Plan
        The validated plan; its ``policy.calibration`` gives the ranges of prefill MFU, decode MFU and bandwidth
        efficiency.
    s : Scenario
        The plan resolved to numbers (:func:`xlplan.scenario.resolve`), re-solved at each end.

    Returns
    -------
    low : FleetAt or None
        The fleet at the lowest calibrated efficiencies (infeasible if the plan cannot be met there); None without a
        calibration.
    high : FleetAt or None
        The fleet at the highest calibrated efficiencies; None without a calibration.
    """
    from dataclasses import replace

    from xlplan.steps import solve as solve_scenario

    cal = p.policy.calibration
    if cal is None:
        return None, None
    out = []
    for k in (0, 1):
        eff = {"prefill_mfu": cal.prefill_mfu_range[k], "decode_mfu": cal.decode_mfu_range[k],
               "bandwidth_efficiency": cal.bandwidth_efficiency_range[k]}
        try:
            sol = solve_scenario(replace(s, **eff))
        except PlanningError:
            out.append(FleetAt(efficiencies=eff, feasible=False, load=None, with_redundancy=None, purchased=None, binding=None))
            continue
        out.append(FleetAt(efficiencies=eff, feasible=True, load=int(sol.paths.load), with_redundancy=int(sol.paths.with_redundancy),
                           purchased=int(sol.paths.purchased), binding=sol.binding))
    return out[0], out[1]


def _ownership(p: Plan, s, pa) -> OwnershipOut | None:
    """Buy: the parts of owning the purchased fleet, and its payback against renting the fleet with redundancy."""
    own = p.ownership()
    if not own:
        return None
    v = {k: d["value"] for k, d in own.items()}
    purchased, node = float(pa.purchased), p.hardware.gpus_per_node
    hours = p.hardware.hours_per_month
    capex, depreciation, energy, hosting = ownership.monthly_parts_usd(
        purchased, v["capex_usd_per_node"], node, v["depreciation_years"], v["kw_per_gpu"], v["pue"], v["usd_per_kwh"],
        v["hosting_usd_per_kw_month"], hours)
    rent_rate = p.hardware.usd_per_gpu_hour or p.hardware.resolve().usd_per_gpu_hour
    rent = cost.monthly_cost_usd(float(pa.with_redundancy), rent_rate, hours) if rent_rate else None
    running = energy + hosting + v["hardware_ops_usd_per_month"]
    return OwnershipOut(
        capex_usd_per_node=v["capex_usd_per_node"], capex_usd=capex, depreciation_years=v["depreciation_years"],
        kw_per_gpu=v["kw_per_gpu"], pue=v["pue"], usd_per_kwh=v["usd_per_kwh"], hosting_usd_per_kw_month=v["hosting_usd_per_kw_month"],
        hardware_ops_usd_per_month=v["hardware_ops_usd_per_month"], depreciation_usd_per_month=depreciation,
        energy_usd_per_month=energy, hosting_usd_per_month=hosting, owned_usd_per_gpu_hour=s.usd_per_gpu_hour,
        rent_usd_per_gpu_hour=rent_rate, rent_monthly_usd=rent,
        payback_months=ownership.payback_months(capex, rent, running) if rent is not None else None,
        sources={k: d["source"] for k, d in own.items()},
    )


@dataclasses.dataclass(frozen=True)
class Decision:
    """The fleet a scenario gets: the runbook's method solved, the closed form, the simulation where it ran, and the
    Answer that follows them. Units as in each type."""

    sol: Solution
    closed_form: closed_form.ClosedForm
    verified: object  # VerifiedOut or None
    answer: AnswerOut
    skipped: str | None  # why the simulation did not run under verify='auto' [text]


def decide(s: Scenario, percentile: float, max_context: int | None, budget_set_by_plan: bool,
           verify: bool | str = False) -> Decision:
    """The Answer's fleet for one scenario, without the note's what-ifs: what `plan`, `compare` and `schedule` share.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping simulated lengths. [tokens]
    budget_set_by_plan : bool
        The plan file sets ``policy.max_num_batched_tokens`` (the closed form then keeps it).
    verify : bool or 'auto'
        Simulate the closed form's fleet at peak (:func:`xlplan.simulate.verify`); 'auto': where affordable.

    Returns
    -------
    Decision
        The solution, the closed form, the verification (or None) and the Answer.

    Raises
    ------
    PlanningError
        When the plan cannot be met on this hardware.
    """
    sol = solve(s)
    cf = closed_form.closed_form(s, sol, budget_set_by_plan)
    skipped = None
    if verify == "auto":
        verify, skipped = _affordable(s, cf)
    verified = (simulate.verify(deployed(s, cf), sol, percentile, max_context=max_context,
                                start_replicas=cf.load_replicas, cv2=s.arrival_cv2, tp=cf.tp) if verify else None)
    return Decision(sol, cf, verified, answer(s, sol, cf, verified), skipped)


def plan(p: Plan, verify: bool | str = False) -> PlanResult:
    """Run the seven steps, the what-ifs and the breakpoints for a validated plan.

    With ``verify``, also simulate the fleet at peak (:func:`xlplan.simulate.verify`, the default run: Poisson
    arrivals, seed 1, max(10 minutes, 20,000 requests)) and carry the result as ``verified``.

    Parameters
    ----------
    p : Plan
        The validated plan.
    verify : bool or 'auto'
        Also simulate the fleet at peak and carry the result as ``verified``; 'auto' (the CLI's default): where the
        simulation is affordable (:data:`AUTO_VERIFY_MAX_REPLICAS`, :data:`AUTO_VERIFY_MAX_REQUESTS`), else a warning
        says it was not run.

    Returns
    -------
    PlanResult
        Every figure of the capacity note: inputs, model, the three paths, the fleet, the cost, the what-ifs,
        breakpoints and warnings (and ``verified`` when asked).

    Raises
    ------
    PlanningError
        When the plan cannot be met on this hardware (the weights fit no TP degree
        inside a node, or no batch meets the inter-token target).

    References
    ----------
    Runbook, document 14, "From a forecast to a purchase order", steps 1-7, and "The capacity note".
    """
    s = resolve(p)
    set_by_plan = p.policy.max_num_batched_tokens is not None
    d = decide(s, p.promise.percentile, p.model.resolve().max_context_tokens, set_by_plan, verify)
    sol, cf, verified, skipped = d.sol, d.closed_form, d.verified, d.skipped
    tr, pa, bl = sol.traffic, sol.paths, sol.bill
    model = p.model.resolve()
    gpu = p.hardware.resolve()
    low, high = calibrated_ends(p, s)
    by_util = [
        UtilisationCost(
            utilisation=u,
            usd_per_mtok=cost.usd_per_mtok(bl.monthly_usd, cost.tokens_per_month(s.peak_rps, tr.prompt_mean + tr.output_mean, u, s.hours_per_month)),
        )
        for u in UTILISATION_TABLE
    ]
    return PlanResult(
        name=p.name,
        calibration_source=p.policy.calibration.source if p.policy.calibration else None,
        inputs=InputsOut(
            peak_rps=s.peak_rps,
            prompt_tokens=_length(s.prompt_p50, s.prompt_p95, s.prompt_p99, tr.prompt_mean, tr.prompt_second_moment),
            output_tokens=_length(s.output_p50, s.output_p95, s.output_p99, tr.output_mean, tr.output_second_moment),
            average_utilisation=s.average_utilisation,
            prefix_reuse=s.prefix_reuse,
            ttft_s=s.ttft_s,
            itl_s=s.itl_s,
            percentile=p.promise.percentile,
            owners=p.owners.model_dump(),
        ),
        model=ModelOut(
            name=model.name,
            params_total=architecture.total_params(model),
            params_active=architecture.active_params(model),
            weights_dtype=p.model.weights_dtype,
            kv_dtype=p.model.kv_dtype,
            weights_gib=memory.weights_gib(model, p.model.weights_dtype),
            kv_bytes_per_token=memory.kv_bytes_per_token(model, p.model.kv_dtype),
            gpu=gpu.name,
            gpu_memory_gib=gpu.memory_gib,
            compute_dtype=compute_dtype(p, gpu),
            peak_tflops=s.peak_tflops,
            hbm_tbps=gpu.hbm_tbps,
            sources={"model": model.source, "gpu": gpu.source, "price": gpu.price_note if p.hardware.usd_per_gpu_hour is None else "plan"},
        ),
        time_in_system_s=tr.time_in_system_s,
        concurrency=tr.concurrency,
        memory=MemoryOut(
            convention=p.policy.memory_convention,
            conversation_tokens=tr.conversation_tokens,
            kv_gib_per_conversation=tr.kv_gib_per_conversation,
            kv_gib_total=tr.kv_gib_total,
            weights_gib_per_gpu=pa.weights_gib_per_gpu,
            kv_budget_gib_per_gpu=pa.kv_budget_gib_per_gpu,
            overhead_gib=s.overhead_gib,
            **_kv_terms(s, int(pa.tp)),
            conversations_per_replica=pa.conversations_per_replica,
            kv_shards=int(pa.kv_shards),
            gpus_exact=pa.memory_gpus_exact,
            gpus=int(pa.memory_gpus),
        ),
        compute=ComputeOut(
            prefill_tflops=tr.prefill_tflops,
            decode_tflops=tr.decode_tflops,
            demand_tflops=tr.prefill_tflops + tr.decode_tflops,
            tflops_per_gpu=pa.tflops_per_gpu,
            mfu=s.mfu,
            prefill_mfu=prefill_mfu(s),
            decode_mfu=decode_mfu(s),
            gpus_exact=pa.compute_gpus_exact,
            gpus=int(pa.compute_gpus),
        ),
        latency=LatencyOut(
            max_decode_batch=pa.max_decode_batch,
            decode_step_s=pa.decode_step_s,
            ttft_p95_s=pa.ttft_p95_s,
            ttft_ok=pa.ttft_p95_s <= s.ttft_s,
            gpus_exact=pa.latency_gpus_exact,
            gpus=int(pa.latency_gpus),
        ),
        binding=sol.binding,
        binding_paths=list(sol.binding_paths),
        tp_options=[
            TPOption(tp=c.tp, feasible=c.load != _vec.INF, kv_budget_gib_per_gpu=c.kv_budget_gib_per_gpu,
                     kv_shards=int(c.kv_shards), memory_gpus=c.memory_gpus, compute_gpus=c.compute_gpus, latency_gpus=c.latency_gpus, load=c.load)
            for c in sol.candidates
        ],
        fleet=FleetOut(
            tp=pa.tp,
            tp_reason=_tp_reason(sol, s.bill_purchased),
            load=int(pa.load),
            redundancy_replicas=s.redundancy,
            with_redundancy=int(pa.with_redundancy),
            gpus_per_node=s.gpus_per_node,
            purchased=int(pa.purchased),
            calibrated_low=low,
            calibrated_high=high,
        ),
        cost=CostOut(
            billing="purchased" if p.costs.mode == "buy" else p.hardware.billing,
            api_provider=p.api_used().provider,
            ownership=_ownership(p, s, pa),
            billed_gpus=int(bl.billed_gpus),
            usd_per_gpu_hour=s.usd_per_gpu_hour,
            hours_per_month=s.hours_per_month,
            monthly_usd=bl.monthly_usd,
            tokens_per_month=bl.tokens_per_month,
            usd_per_mtok=bl.usd_per_mtok,
            api_usd_per_mtok_blended=bl.api_usd_per_mtok_blended,
            api_monthly_usd=bl.api_monthly_usd,
            ops_usd_per_month=s.ops_usd_per_month,
            breakeven_tokens_per_month=bl.breakeven_tokens_per_month,
            usd_per_mtok_by_utilisation=by_util,
        ),
        sensitivities=whatif.sensitivities(p, s),
        breakpoints=whatif.breakpoints(s, sol),
        warnings=_warnings(p, s, sol) + _answer_warnings(cf, verified) + ([skipped] if skipped else []),
        verified=verified,
        queueing=_queueing(p, s, cf),
        closed_form=_closed_form_out(s, cf),
        answer=d.answer,
        closed_form_sensitivities=whatif.closed_sensitivities(p, s, cf.step_budget_tokens, set_by_plan),
        closed_form_breakpoints=whatif.closed_breakpoints(s, cf, set_by_plan),
    )


AUTO_VERIFY_MAX_REPLICAS = 128
"""The default simulation runs where the closed form's fleet is at most this many replicas. [replicas]"""

AUTO_VERIFY_MAX_REQUESTS = 400_000
"""...and one run holds at most this many requests (the reference at 16 × its peak: 385,000, about a minute). [requests]"""

AUTO_VERIFY_MAX_STEPS = 5_000_000
"""...and takes at most about this many engine steps, all replicas together (requests × mean output ÷ batch). [steps]"""


def _affordable(s, cf: closed_form.ClosedForm) -> tuple[bool, str | None]:
    """(simulate?, why not): the default verification runs where it takes about a minute at most. [bool], [text]"""
    minutes = simulate.run_minutes(s.peak_rps)
    requests = s.peak_rps * minutes * 60.0
    mean_output = steps.traffic(s).output_mean
    step_count = requests * mean_output / max(cf.achieved_batch, 1.0)  # decode steps of one run, all replicas
    if (cf.load_replicas <= AUTO_VERIFY_MAX_REPLICAS and requests <= AUTO_VERIFY_MAX_REQUESTS
            and step_count <= AUTO_VERIFY_MAX_STEPS):
        return True, None
    return False, (f"not simulated: the closed form's {cf.load_replicas:,} replicas, {requests:,.0f} requests and about "
                   f"{step_count:,.0f} steps a run are past what the default simulation takes on (at most "
                   f"{AUTO_VERIFY_MAX_REPLICAS} replicas, {AUTO_VERIFY_MAX_REQUESTS:,} requests, "
                   f"{AUTO_VERIFY_MAX_STEPS:,} steps); the Answer is the closed form's — `xlplan plan --verify` simulates "
                   "it anyway (minutes), or simulate a share of the peak with `xlplan simulate`")


def _kv_terms(s, tp: int) -> dict:
    """The KV budget's operands at ``tp``, as MemoryOut carries them. [GiB]"""
    basis, basis_gib, util, deductions, after = steps.kv_budget_terms(s, tp)
    return dict(kv_budget_basis=basis, kv_budget_basis_gib=float(basis_gib), kv_budget_utilisation=float(util),
                kv_budget_deductions=[(label, float(g)) for label, g in deductions], kv_budget_fraction_after=after)


def deployed(s, cf: closed_form.ClosedForm):
    """The scenario at the step budget the plan deploys: what the simulation runs. [Scenario]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    cf : closed_form.ClosedForm
        The closed form, with the step budget chosen.

    Returns
    -------
    Scenario
        ``s`` with ``max_num_batched_tokens`` at the deployed budget (unchanged where the plan or engine sets it, or
        where the simulation's default is chosen).
    """
    if cf.budget_chosen_by != "queueing path":
        return s
    return dataclasses.replace(s, max_num_batched_tokens=float(cf.step_budget_tokens))


def answer(s, sol: Solution, cf: closed_form.ClosedForm, verified) -> AnswerOut:
    """The Answer line: the verified fleet where the simulation found one, else the closed form; and its bill.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    sol : Solution
        The runbook's method solved: traffic and the chosen TP degree's paths.
    cf : closed_form.ClosedForm
        The closed-form fleet.
    verified : VerifiedOut or None
        The simulation at peak, where it ran.

    Returns
    -------
    AnswerOut
        Load, with redundancy (the fleet that keeps the promise with the plan's redundancy lost, where verified),
        purchased in whole units, and the bill of that fleet.

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month": the same arithmetic on this fleet.
    """
    tp = cf.tp
    if verified is not None and verified.load is not None:
        source, load = "verified", int(verified.load)
        red = verified.with_redundancy if verified.with_redundancy is not None else load + int(s.redundancy) * tp
    else:
        source, load, red = "closed form", cf.load, cf.with_redundancy
    purchased = int(math.ceil(red / s.gpus_per_node) * s.gpus_per_node)
    tr = sol.traffic
    b = steps.bill(s, tr, dataclasses.replace(sol.paths, with_redundancy=float(red), purchased=float(purchased)))
    by_util = [
        UtilisationCost(utilisation=u, usd_per_mtok=cost.usd_per_mtok(b.monthly_usd, cost.tokens_per_month(
            s.peak_rps, tr.prompt_mean + tr.output_mean, u, s.hours_per_month)))
        for u in UTILISATION_TABLE
    ]
    return AnswerOut(source=source, tp=tp, load=load, with_redundancy=int(red), purchased=purchased, binding=cf.binding,
                     step_budget_tokens=cf.step_budget_tokens, billed_gpus=int(b.billed_gpus), monthly_usd=b.monthly_usd,
                     usd_per_mtok=b.usd_per_mtok, api_monthly_usd=b.api_monthly_usd,
                     breakeven_tokens_per_month=b.breakeven_tokens_per_month, usd_per_mtok_by_utilisation=by_util)


def _answer_warnings(cf: closed_form.ClosedForm, verified) -> list[str]:
    out = []
    if not cf.feasible:
        out.append("no fleet keeps the wait for a slot within the TTFT promise: the prompt's prefill alone takes "
                   f"{cf.queue.prefill_at_percentile_s:.2f} s at the promise's percentile, so the closed form stands on "
                   "the other paths")
    if verified is not None and verified.load is None:
        out.append(f"no fleet up to {verified.searched_up_to} GPUs keeps the promise in simulation: the Answer is the "
                   "closed form's, unverified")
    return out


def _closed_form_out(s, cf: closed_form.ClosedForm) -> ClosedFormOut:
    default = simulate.chunk_tokens(s)
    at_default = dict(cf.budget_options).get(default)
    return ClosedFormOut(
        step_budget_tokens=cf.step_budget_tokens, budget_chosen_by=cf.budget_chosen_by, default_step_budget_tokens=default,
        default_budget_queueing_gpus=at_default * cf.tp if at_default is not None else None,
        achieved_step_s=cf.achieved_step_s, achieved_batch=cf.achieved_batch, time_in_system_s=cf.time_in_system_s,
        concurrency=cf.concurrency, kv_gib_total=cf.kv_gib_total, memory_gpus_exact=cf.memory_gpus_exact,
        memory_gpus=cf.memory_gpus, compute_gpus=cf.compute_gpus, latency_gpus=cf.latency_gpus,
        queueing_gpus=cf.queueing_gpus, feasible=cf.feasible, tp=cf.tp, load=cf.load, with_redundancy=cf.with_redundancy,
        purchased=cf.purchased, binding=cf.binding, binding_paths=list(cf.binding_paths),
    )


def _queueing(p: Plan, s, cf: closed_form.ClosedForm) -> QueueingOut:
    """The queueing path at the deployed step budget, and at every budget compared, as the result carries it.
    [QueueingOut]"""
    q = cf.queue
    met = [n for _, n in cf.budget_options if n is not None]
    return QueueingOut(**{k: v for k, v in dataclasses.asdict(q).items() if k != "tp"}, budget_options=list(cf.budget_options),
                       best_step_budget_tokens=cf.step_budget_tokens if met else None,
                       budget_set_by_plan=p.policy.max_num_batched_tokens is not None)
