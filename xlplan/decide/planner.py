"""The orchestrator: a :class:`~xlplan.schema.plan.Plan` in, a :class:`~xlplan.schema.result.PlanResult` out.

Runs the seven steps (:mod:`xlplan.plan.steps`), the Answer's decision (:mod:`xlplan.decide.answer`), the what-ifs and
breakpoints (:mod:`xlplan.plan.whatif`), and gathers every figure of the capacity note, one function per section of the
result. No I/O.
"""

from __future__ import annotations

import dataclasses

from xlplan import arrays, fleet
from xlplan.catalog import parameters
from xlplan.decide.answer import (
    answer_warnings,
    decide,
    layout_warnings,
    usd_per_mtok_by_utilisation,
)
from xlplan.money import ownership_plan
from xlplan.money.contracts import mix_out as contract_mix
from xlplan.plan import breakpoints, closed_form, replica_at_tp, scenario, whatif
from xlplan.plan.engine_settings import compute_dtype
from xlplan.plan.replica_at_tp import decode_mfu, prefill_mfu
from xlplan.plan.scenario import PlanningError, Scenario, resolve
from xlplan.plan.steps import solve
from xlplan.plan.tp_choice import billed_gpus
from xlplan.schema import plausibility
from xlplan.schema import steps as step_results
from xlplan.schema.plan import Plan
from xlplan.schema.result import (
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
    PlanResult,
    QueueingOut,
    TPOption,
)
from xlplan.schema.steps import Solution
from xlplan.serving import efficiency_defaults, memory

__all__ = ["PlanningError", "plan", "resolve", "solve"]


def _tp_reason(sol: Solution, bill_purchased: bool) -> str:
    chosen = sol.paths
    others = [c for c in sol.candidates if c.tp != chosen.tp]
    if not others:
        return f"TP {chosen.tp} as the plan fixes it"

    parts = []
    for c in others:
        if c.load == arrays.INF:
            why = "weights leave no KV room" if c.kv_budget_gib_per_gpu <= 0 else "cannot meet the inter-token target"
            parts.append(f"TP {c.tp}: {why}")
        else:
            parts.append(f"TP {c.tp}: {c.purchased:.0f} bought, {billed_gpus(c, bill_purchased):.0f} billed")
    return (f"TP {chosen.tp} buys the fewest GPUs ({chosen.purchased:.0f}), then bills the fewest ({billed_gpus(chosen, bill_purchased):.0f}), "
            f"then is the smallest degree; " + ", ".join(parts))


def _length(p50, p95, p99, mean, m2) -> LengthOut:
    return LengthOut(p50=p50, p95=p95, p99=p99, mean=mean, second_moment=m2)


CURVE_SLACK = 0.10
"""How far the daily curve's mean may sit from the average utilisation before the note says they disagree (the curve
is of the busiest hour's mean rate, the utilisation of the peak rate, so some gap is expected). [fraction]"""


def _warnings(plan: Plan, s: Scenario, sol: Solution) -> list[str]:
    out = plausibility.accepted_lines(plan)
    ignored = plan.costs.ignored_figures()
    if ignored:
        out.append(f"costs.mode is '{plan.costs.mode}': the buy figures given ({', '.join(ignored)}) are kept and ignored; "
                   "costs.mode: buy uses them")
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
    old = efficiency_defaults.superseded_release(plan.policy.engine, plan.policy.engine_version or "")
    if old and plan.policy.calibration is None:
        out.append(f"engine release {old}: calibrate on your own benchmark (xlplan calibrate) before you order")
    pol = plan.policy
    if (pol.max_num_seqs is not None and pol.max_num_batched_tokens is not None
            and pol.max_num_seqs > pol.max_num_batched_tokens and pol.engine in ("vllm", "runbook")):
        out.append(f"policy.max_num_seqs ({pol.max_num_seqs:,}) is above policy.max_num_batched_tokens "
                   f"({pol.max_num_batched_tokens:,}): vLLM refuses to start so (a step's budget must hold one token "
                   f"for each sequence); planned and deployed with {pol.max_num_batched_tokens:,} sequences at most")
    curve = plan.forecast.daily_curve
    if curve and abs(sum(curve) / len(curve) - s.average_utilisation) > CURVE_SLACK:
        out.append(f"forecast.daily_curve averages {sum(curve) / len(curve):.0%} of the peak hour, forecast.average_utilisation "
                   f"says {s.average_utilisation:.0%}: the bill's tokens and the API comparison follow the second, the "
                   "contract mix the first; make them agree (xlplan traffic measures both from one log)")
    if sol.traffic.concurrency and p.conversations_per_replica < 8:
        out.append(
            f"each replica's cache holds only {p.conversations_per_replica:.1f} conversations: the weights leave almost "
            "no room; a larger TP degree or fp8 weights would change that"
        )
    return out


def _calibrated_ends(p: Plan, s: Scenario) -> tuple[FleetAt | None, FleetAt | None]:
    """The fleet at the low and at the high ends of the calibrated efficiencies (None without a calibration).

    Parameters
    ----------
    p : Plan
        The validated plan; its ``policy.calibration`` gives the ranges of prefill MFU, decode MFU and bandwidth
        efficiency.
    s : Scenario
        The plan resolved to numbers (:func:`xlplan.plan.scenario.resolve`), re-solved at each end.

    Returns
    -------
    low : FleetAt or None
        The fleet at the lowest calibrated efficiencies (infeasible if the plan cannot be met there); None without a
        calibration.
    high : FleetAt or None
        The fleet at the highest calibrated efficiencies; None without a calibration.
    """
    from dataclasses import replace

    from xlplan.plan.steps import solve as solve_scenario

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


def _with_ownership(p: Plan, a, api_usd_per_month: float | None, as_of: str | None):
    """The Answer with what owning its fleet costs, and its payback against renting the same units, where bought. [AnswerOut]"""
    if a is None or p.costs.rents():
        return a
    return a.model_copy(update={"ownership": ownership_plan.ownership_out(p, float(a.purchased), api_usd_per_month, as_of)})


def plan(p: Plan, verify: bool | str = False, as_of: str | None = None) -> PlanResult:
    """Run the seven steps, the what-ifs and the breakpoints for a validated plan (with ``verify``, also simulate the
    fleet at peak, :func:`xlplan.simulate.verify.verify`'s default run, and carry the result as ``verified``).

    Parameters
    ----------
    p : Plan
        The validated plan.
    verify : bool or 'auto'
        Also simulate the fleet at peak and carry the result as ``verified``; 'auto' (the CLI's default): where the
        simulation is affordable (:data:`xlplan.decide.answer.VERIFY_MAX_GPUS`,
        :data:`xlplan.decide.answer.AUTO_VERIFY_MAX_REQUESTS`), else a warning says it was not run.
    as_of : str or None
        The day prices' ages are judged, ``YYYY-MM-DD``; left out, the plan's date (none: not judged). [date]

    Returns
    -------
    PlanResult
        Every figure of the capacity note, each intermediate with it.

    Raises
    ------
    PlanningError
        When the plan cannot be met, or its answer is past a bound it does not accept (plausibility.RESULT_BOUNDS).

    References
    ----------
    Runbook, document 14, "From a forecast to a purchase order", steps 1-7, and "The capacity note".
    """
    s, set_by_plan = resolve(p), p.policy.max_num_batched_tokens is not None
    d = decide(s, p.promise.percentile, p.model.resolve().max_context_tokens, set_by_plan, verify)
    sol, cf, meant = d.sol, d.closed_form, _within_bounds(p, d.answer)
    a = _with_ownership(p, d.answer, sol.bill.api_monthly_usd, as_of := as_of or p.date)
    return PlanResult(
        name=p.name,
        calibration_source=p.policy.calibration.source if p.policy.calibration else None,
        inputs=_inputs_out(p, s, sol.traffic),
        model=_model_out(p, s),
        time_in_system_s=sol.traffic.time_in_system_s,
        concurrency=sol.traffic.concurrency,
        memory=_memory_out(p, s, sol),
        compute=_compute_out(s, sol),
        latency=_latency_out(s, sol.paths),
        binding=sol.binding,
        binding_paths=list(sol.binding_paths),
        tp_options=_tp_options_out(sol),
        fleet=_fleet_out(p, s, sol),
        cost=_cost_out(p, s, sol, as_of),
        sensitivities=whatif.sensitivities(p, s),
        breakpoints=breakpoints.breakpoints(s, sol),
        warnings=(_warnings(p, s, sol) + meant + answer_warnings(cf, d.verified) + layout_warnings(s, d.answer)
                  + ([d.skipped] if d.skipped else [])),
        verified=d.verified,
        queueing=_queueing(p, s, cf),
        closed_form=_closed_form_out(s, cf),
        answer=a,
        contracts=contract_mix(p, a, sol.traffic.prompt_mean, sol.traffic.output_mean),
        closed_form_sensitivities=whatif.closed_sensitivities(p, s, cf.step_budget_tokens, set_by_plan),
        closed_form_breakpoints=breakpoints.closed_breakpoints(s, cf, set_by_plan),
    )


def _within_bounds(p: Plan, a) -> list[str]:
    """The note's lines for an answer past :data:`xlplan.schema.plausibility.RESULT_BOUNDS` that the plan accepts; raises
    PlanningError, naming the bound, for one it does not. [text]"""
    refused = plausibility.results(a.purchased, a.monthly_usd, p.accept_implausible)
    if refused:
        raise PlanningError("; ".join(b.finding for b in refused) + "; " + plausibility.accept_hint([b.field for b in refused]))
    return [f"accepted as meant: {b.field} = {b.value:,.0f}, past its plausible bound"
            for b in plausibility.results(a.purchased, a.monthly_usd)]


def _inputs_out(p: Plan, s: Scenario, tr: step_results.Traffic) -> InputsOut:
    """Section 1: the forecast and the promise, with the fitted length moments. [InputsOut]"""
    return InputsOut(
        peak_rps=s.peak_rps,
        prompt_tokens=_length(s.prompt_p50, s.prompt_p95, s.prompt_p99, tr.prompt_mean, tr.prompt_second_moment),
        output_tokens=_length(s.output_p50, s.output_p95, s.output_p99, tr.output_mean, tr.output_second_moment),
        average_utilisation=s.average_utilisation,
        prefix_reuse=s.prefix_reuse,
        ttft_s=s.ttft_s,
        itl_s=s.itl_s,
        percentile=p.promise.percentile,
        owners=p.owners.model_dump(),
    )


def _model_out(p: Plan, s: Scenario) -> ModelOut:
    """Section 2: the model and the GPU, with their sources. [ModelOut]"""
    model = p.model.resolve()
    gpu = p.hardware.resolve()
    return ModelOut(
        name=model.name,
        params_total=parameters.total_params(model),
        params_active=parameters.active_params(model),
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
    )


def _memory_out(p: Plan, s: Scenario, sol: Solution) -> MemoryOut:
    """Step 4, the memory path at the chosen TP degree, with the KV budget's operands. [MemoryOut]"""
    tr, pa = sol.traffic, sol.paths
    return MemoryOut(
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
    )


def _compute_out(s: Scenario, sol: Solution) -> ComputeOut:
    """Step 5, the compute path: the FLOP demand over each phase's MFU. [ComputeOut]"""
    tr, pa = sol.traffic, sol.paths
    return ComputeOut(
        prefill_tflops=tr.prefill_tflops,
        decode_tflops=tr.decode_tflops,
        demand_tflops=tr.prefill_tflops + tr.decode_tflops,
        tflops_per_gpu=pa.tflops_per_gpu,
        mfu=s.mfu,
        prefill_mfu=prefill_mfu(s),
        decode_mfu=decode_mfu(s),
        gpus_exact=pa.compute_gpus_exact,
        gpus=int(pa.compute_gpus),
    )


def _latency_out(s: Scenario, pa: step_results.Paths) -> LatencyOut:
    """The latency path at the chosen TP degree, and the prefill-alone TTFT against the promise. [LatencyOut]"""
    return LatencyOut(
        max_decode_batch=pa.max_decode_batch,
        decode_step_s=pa.decode_step_s,
        ttft_p95_s=pa.ttft_p95_s,
        ttft_ok=pa.ttft_p95_s <= s.ttft_s,
        gpus_exact=pa.latency_gpus_exact,
        gpus=int(pa.latency_gpus),
    )


def _tp_options_out(sol: Solution) -> list[TPOption]:
    """Every TP degree's paths and load, narrowest first. [TPOption]"""
    return [
        TPOption(tp=c.tp, feasible=c.load != arrays.INF, kv_budget_gib_per_gpu=c.kv_budget_gib_per_gpu,
                 kv_shards=int(c.kv_shards), memory_gpus=c.memory_gpus, compute_gpus=c.compute_gpus, latency_gpus=c.latency_gpus, load=c.load)
        for c in sol.candidates
    ]


def _fleet_out(p: Plan, s: Scenario, sol: Solution) -> FleetOut:
    """Step 6, the fleet at the chosen TP degree and why that degree, with the calibrated ends. [FleetOut]"""
    pa = sol.paths
    low, high = _calibrated_ends(p, s)
    return FleetOut(
        tp=pa.tp,
        tp_reason=_tp_reason(sol, s.bill_purchased),
        load=int(pa.load),
        redundancy_replicas=s.redundancy,
        with_redundancy=int(pa.with_redundancy),
        gpus_per_node=s.gpus_per_node,
        purchased=int(pa.purchased),
        calibrated_low=low,
        calibrated_high=high,
    )


def _cost_out(p: Plan, s: Scenario, sol: Solution, as_of: str | None) -> CostOut:
    """Step 7, the bill of the runbook's fleet, the API comparison and $/M tokens by utilisation. [CostOut]"""
    tr, pa, bl = sol.traffic, sol.paths, sol.bill
    return CostOut(
        billing=fleet.BILLING_WORDS[p.costs.mode],
        api_provider=p.api_used().provider,
        ownership=ownership_plan.ownership_out(p, float(pa.purchased), bl.api_monthly_usd, as_of),
        price_ages=ownership_plan.price_ages(p, as_of),
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
        usd_per_mtok_by_utilisation=usd_per_mtok_by_utilisation(s, tr, bl.monthly_usd),
    )


def _kv_terms(s, tp: int) -> dict:
    """The KV budget's operands at ``tp``, as MemoryOut carries them. [GiB]"""
    basis, basis_gib, util, deductions, after = replica_at_tp.kv_budget_terms(s, tp)
    return dict(kv_budget_basis=basis, kv_budget_basis_gib=float(basis_gib), kv_budget_utilisation=float(util),
                kv_budget_deductions=[(label, float(g)) for label, g in deductions], kv_budget_fraction_after=after)


def _closed_form_out(s, cf: closed_form.ClosedForm) -> ClosedFormOut:
    default = scenario.chunk_tokens(s)
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
