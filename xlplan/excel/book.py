"""Every figure a workbook shows, computed once: the plan, each what-if row, the options and the schedule.

:func:`figures` is the one engine function behind ``xlplan plan --workbook``, ``xlplan workbook`` and ``xlplan
check``: it runs the planner, the closed form the formulas reproduce, every what-if row and the decisions, and
returns a :class:`~xlplan.excel.figures.Figures` the writer only lays out.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from xlplan import catalog, distributions
from xlplan.catalog.specs import vendor
from xlplan.decide import compare, hardware_choice, schedule
from xlplan.decide.planner import plan as run_plan
from xlplan.excel.common import ERLANG_COARSE_DIVISOR, ERLANG_ROWS, NONE
from xlplan.excel.figures import Decisions, ErlangRows, Figures, LengthFit, WhatIfRow
from xlplan.money import cost
from xlplan.plan import latency_step, monthly_bill, replica_at_tp, scenario, steps, whatif, whatif_table
from xlplan.plan.engine_settings import TP_DEGREES, compute_dtype
from xlplan.plan.scenario import Scenario, resolve
from xlplan.plan.tp_choice import billed_gpus, tp_objective
from xlplan.schema import steps as step_results
from xlplan.schema.plan import Plan
from xlplan.schema.result import PlanResult
from xlplan.serving import compute, efficiency_defaults, engines, memory, queueing


def _objectives(s: Scenario, candidates: dict[int, step_results.Paths]) -> dict[int, float]:
    """The TP objective of each feasible degree the plan considers (the smallest is chosen). [1]"""
    return {tp: tp_objective(c, billed_gpus(c, s.bill_purchased))
            for tp, c in candidates.items() if tp in s.tp_options and not math.isinf(c.load)}


def whatif_row(p: Plan, s: Scenario, w: whatif_table.WhatIf | None) -> WhatIfRow:
    """One what-if re-planned in full (None: the plan as it stands, which a blank row caches).

    Parameters
    ----------
    p : Plan
        The validated plan.
    s : Scenario
        Its numbers (:func:`xlplan.plan.scenario.resolve`).
    w : WhatIf or None
        The what-if; None for a blank row.

    Returns
    -------
    WhatIfRow
        The changed scenario, its traffic, the paths at every TP degree, the solution (None: no degree meets the
        promise) and the operands its row caches; with ``scenario`` None when the change cannot run on the GPU.
    """
    ww = w or whatif_table.WhatIf()
    try:
        sc = whatif.apply(p, s, ww)
        tr = steps.traffic(sc)
        cands = {tp: steps.paths(sc, tr, tp) for tp in TP_DEGREES}
    except scenario.PlanningError:
        return WhatIfRow(w)
    try:
        solved = steps.solve(sc)
    except scenario.PlanningError:
        solved = None
    sigma = distributions.fit_lognormal(sc.prompt_p50, sc.prompt_p95, sc.prompt_p99)[1]
    gpu = p.hardware.resolve()
    dtype_plan = p if ww.weights_dtype is None else p.model_copy(
        update={"model": p.model.model_copy(update={"weights_dtype": ww.weights_dtype})})
    return WhatIfRow(
        whatif=w, scenario=sc, traffic=tr, candidates=cands, solved=solved, prompt_sigma=sigma,
        prompt_p99_fit=distributions.lognormal_quantile(sc.prompt_p50, sigma, 0.99),
        compute_dtype=compute_dtype(dtype_plan, gpu),
        demand_gpus=compute.compute_gpus_split(tr.prefill_tflops, tr.decode_tflops, sc.peak_tflops, replica_at_tp.prefill_mfu(sc),
                                               replica_at_tp.decode_mfu(sc)),
        objectives=_objectives(sc, cands), tokens_per_month=monthly_bill.tokens_per_month(sc, tr))


def _with_answer(options: list, answer) -> list:
    """The options, the plan's own carrying the Answer's fleet and bill where the Answer was verified in simulation
    (the others stay the closed form, labelled so), ranked again, the ranked ones first. [GPUOption]"""
    if answer is None or answer.source != "verified":
        return options
    out = []
    for o in options:
        if o.is_plan and o.feasible:  # at the Answer's setting, which the configuration search may have moved
            o = o.model_copy(update={
                "tp": answer.tp, "load": answer.load, "with_redundancy": answer.with_redundancy, "purchased": answer.purchased,
                "binding": answer.binding, "source": "verified", "closed_form_load": o.load, "billed_gpus": answer.billed_gpus,
                "monthly_usd": answer.monthly_usd if o.monthly_usd is not None else None,
                "usd_per_mtok": answer.usd_per_mtok if o.usd_per_mtok is not None else None})
        out.append(o)
    return hardware_choice.grouped(compare.rank(out))


def decisions(p: Plan, today: dt.date | None = None, answer=None) -> Decisions:
    """The Options (``xlplan compare --all``) and, when the plan has a growth section with a lead time, the Schedule.

    Parameters
    ----------
    p : Plan
        The validated plan.
    today : date, optional
        The schedule starts the month after it when ``growth.start`` is not given (default: the clock's date).
    answer : AnswerOut, optional
        The plan's Answer: where verified, the plan's own option carries it (its fleet and bill, as the Summary's).

    Returns
    -------
    Decisions
        The options ranked by the closed form (labelled so: ``xlplan compare`` verifies the cheapest) as
        :func:`xlplan.decide.hardware_choice.choose` ranks them: datacenter GPUs at the plan's weights format first, then the
        rest, marked; the plan's own at its Answer where that was verified; the recommendation's lines (``xlplan compare
        --verify-top 0``'s, the plan's own at its Answer); and the closed-form schedule, or a note saying why there is
        none.
    """
    choice = hardware_choice.choose(p, verify_top=0, include_all=True)
    options = _with_answer(choice.options, answer)
    rec = hardware_choice.recommendation_lines(options, choice.format_options, p.model.weights_dtype)
    g = p.growth
    if g is None or (g.monthly is None and g.peaks_rps is None) or g.lead_time_days is None:
        why = ("no growth section in the plan" if g is None else
               "the growth section gives no lead_time_days" if g.lead_time_days is None else "the growth section gives no growth")
        return Decisions(options, rec, None, f"No schedule: {why}. Add growth.monthly (or growth.peaks_rps) and "
                                             "growth.lead_time_days to the plan, or run `xlplan schedule PLAN --growth G "
                                             "--lead-time-days D --workbook OUT.xlsx`.")
    out = schedule.plan_schedule(p, today or dt.date.today())
    return Decisions(options, rec, out)  # the closed form, labelled: `xlplan schedule --verify none` gives the same


def _sglang_tiers() -> tuple[tuple[float, int, int, int], ...]:
    """SGLang's defaults by the GPU's memory, one row per tier from its lower bound: (from GiB, CUDA-graph batch at TP
    below 4, at TP 4 or more, prefill chunk), as :func:`xlplan.serving.engines.sglang_mem_fraction_static` and
    :func:`~xlplan.serving.engines.sglang_chunked_prefill_tokens` read them. [GiB], [sequences], [tokens]"""
    from xlplan.serving import engines

    tiers = engines.SGLANG_GRAPH_BS_TIERS_GIB
    bounds = [0.0] + [below for below, _, _ in tiers]
    batches = [(small, large) for _, small, large in tiers] + [(engines.SGLANG_GRAPH_BS_ABOVE, engines.SGLANG_GRAPH_BS_ABOVE)]
    return tuple((lo, small, large, engines.sglang_chunked_prefill_tokens(lo)) for lo, (small, large) in zip(bounds, batches))


def figures(p: Plan, verify: bool | str = False, result: PlanResult | None = None,
            whatifs: Sequence[whatif_table.WhatIf | None] = whatif_table.STANDARD_WHAT_IFS, today: dt.date | None = None) -> Figures:
    """Every figure the workbook of a plan shows, computed once.

    Parameters
    ----------
    p : Plan
        The validated plan.
    verify : bool or 'auto'
        Simulate the fleet at peak too (:func:`xlplan.decide.planner.plan`), the Summary's Answer; 'auto' where affordable.
    result : PlanResult, optional
        The plan's result already computed (``plan --verify --workbook`` simulates once, not twice).
    whatifs : sequence of WhatIf or None
        The what-if rows, in order (None: a blank row, which caches the plan as it stands).
    today : date, optional
        For a schedule without ``growth.start`` (:func:`decisions`).

    Returns
    -------
    Figures
        The result, the closed form's solution, the paths and objectives at every TP degree, the chosen replica,
        each what-if row, the plan as it stands (a blank row's figures), and the decisions.

    Raises
    ------
    PlanningError
        When the plan cannot be met (there is nothing to lay out).
    """
    s = resolve(p)
    if result is None or (verify and result.verified is None):
        result = run_plan(p, verify=verify)
    sol = steps.solve(s)
    tp = int(sol.paths.tp)
    chosen = {c.tp: c for c in sol.candidates}
    tp_paths = {d: chosen.get(d) or steps.paths(s, sol.traffic, d) for d in TP_DEGREES}
    return Figures(
        plan=p, s=s, sol=sol, result=result, model=p.model.resolve(), gpu=p.hardware.resolve(), tp_paths=tp_paths,
        tp_objectives=_objectives(s, tp_paths), replica=replica_at_tp.replica(s, tp), activation_gib=replica_at_tp.activation_gib(s, tp),
        memory_fraction=replica_at_tp.memory_fraction(s, tp), sglang_tiers=_sglang_tiers(),
        prefill_mfu=replica_at_tp.prefill_mfu(s), decode_mfu=replica_at_tp.decode_mfu(s),
        decode_context_tokens=latency_step.decode_context_tokens(sol.traffic),
        whatifs=tuple(whatif_row(p, s, w) for w in whatifs), as_planned=whatif_row(p, s, None),
        kv_bytes_per_token=memory.kv_bytes_per_token(p.model.resolve(), p.model.kv_dtype),
        compute_dtype=compute_dtype(p, p.hardware.resolve()),
        tp_billed={d: billed_gpus(c, s.bill_purchased) for d, c in tp_paths.items()},
        api_ratio=_api_ratio(sol.bill.api_monthly_usd, sol.bill.monthly_usd),
        cost_api_ratio=_api_ratio(result.cost.api_monthly_usd, result.cost.monthly_usd),
        answer_api_ratio=(_api_ratio(result.answer.api_monthly_usd, result.answer.monthly_usd) if result.answer is not None
                          else (1.0, "parity")),
        gpu_derived=_gpu_derived(p), efficiency_table=_efficiency_table(),
        length_fits={"Prompt": _fit(s.prompt_p50, s.prompt_p95, s.prompt_p99), "Output": _fit(s.output_p50, s.output_p95, s.output_p99)},
        ttft_prompt_tokens=float(distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99, s.percentile)),
        prefill_chunk_tokens=scenario.prefill_chunk_tokens(s),
        allen_cunneen_factor=queueing.allen_cunneen_factor(s.arrival_cv2, queueing.SERVICE_CV2),
        erlang=_erlang_rows(s, result),
        decisions=decisions(p, today, result.answer))


def _api_ratio(api_usd: float | None, bill_usd: float) -> tuple[float, str]:
    """(factor, the cheaper side) of a bill against the API's: :func:`xlplan.money.cost.api_cost_ratio`; parity without
    an API price. [1], [text]"""
    return cost.api_cost_ratio(api_usd, bill_usd) if api_usd is not None else (1.0, "parity")


def _gpu_derived(p: Plan) -> dict[str, tuple]:
    """What the engine derives from every GPU the workbook lists (the catalog's, and the plan's own): its vendor,
    vLLM's default budgets on it, and the dated ownership figures (0 where none is credible)."""
    gpus = [catalog.get_gpu(k) for k in catalog.gpu_names()] + [p.hardware.resolve()]
    out = {}
    for spec in gpus:
        seqs, tokens = engines.vllm_defaults(spec.memory_gib, spec.name)
        try:  # ownership figures with a dated source (catalog/ownership.yaml); 0: none credible, a buy plan must state it
            own = catalog.ownership_for(spec.name)
        except catalog.UnknownNameError:
            own = {}
        capex = own["capex_usd_per_node"]["value"] / own["capex_usd_per_node"]["gpus"] if "capex_usd_per_node" in own else 0.0
        kw, typical = (float(own[f]["value"]) if f in own else 0.0 for f in ("kw_per_gpu", "kw_per_gpu_typical"))
        out[spec.name] = (vendor(spec.name), seqs, tokens, float(capex), kw, typical)
    return out


def _fit(p50: float, p95: float, p99: float | None) -> LengthFit:
    """A length's lognormal through its percentiles, and its fitted p99."""
    median, sigma = distributions.fit_lognormal(p50, p95, p99)
    return LengthFit(median, sigma, distributions.lognormal_quantile(median, sigma, 0.99))


def _wait(s: Scenario, q, service_s: float, n: int) -> tuple:
    """(servers, offered load, P(wait), Allen–Cunneen factor, wait at the percentile, within the target) of one queue
    at n replicas, as the table's formulas give them: least-loaded routing pools the n replicas as one queue's servers;
    round robin and random make each replica a queue of its own over its whole slots
    (:func:`xlplan.serving.queueing.routed_wait_at_percentile_s`)."""
    a = q.offered_erlangs
    pooled = queueing.pooled(s.routing)
    servers = n if pooled else max(1, math.floor(q.slots_per_replica))
    ac = queueing.allen_cunneen_factor(queueing.routed_arrival_cv2(s.routing, s.arrival_cv2, n), queueing.SERVICE_CV2)
    if not (math.isfinite(a) and a > 0):
        return servers, NONE, 1.0, ac, NONE, False
    offered = a if pooled else a * q.slots_per_replica / n
    c = queueing.erlang_c(servers, offered)
    w = queueing.routed_wait_at_percentile_s(s.routing, n, q.slots_per_replica, s.peak_rps, service_s, s.percentile,
                                             s.arrival_cv2, queueing.SERVICE_CV2)
    return servers, offered, c, ac, w, w <= q.wait_target_s


def _erlang_rows(s: Scenario, result: PlanResult) -> ErlangRows:
    """The replica counts of the coarse, middle and fine tables (the coarse from the offered load, each next one
    across the first row of the one before within the target), with the engine's figures at each. [replicas]"""
    q = result.queueing
    a = q.offered_erlangs
    service_s = 1.0 / q.service_rps_per_replica if q.service_rps_per_replica > 0 else math.inf
    ok = math.isfinite(a) and a > 0
    base = max(1, int(a) + 1) if ok else 1
    spread = (math.sqrt(a) if queueing.pooled(s.routing) else a) if ok else 0.0  # routed queues: steps of a ÷ 4
    step = max(1, math.ceil(spread / ERLANG_COARSE_DIVISOR)) if ok else 1
    waits: dict[int, tuple] = {}

    def meets(n: int) -> bool:
        if n not in waits:
            waits[n] = _wait(s, q, service_s, n)
        return waits[n][-1]

    coarse = [base + k * step for k in range(ERLANG_ROWS)]
    hit = next((n for n in coarse if meets(n)), None)
    mid_step = max(1, math.ceil(step / ERLANG_ROWS))
    mid_start = max(base, hit - step + mid_step) if hit is not None else base
    mid = [mid_start + k * mid_step for k in range(ERLANG_ROWS)]
    hit = next((n for n in mid if meets(n)), None)
    fine_start = max(base, hit - mid_step + 1) if hit is not None else base
    fine = [fine_start + k for k in range(ERLANG_ROWS)]
    for n in (*coarse, *mid, *fine):
        meets(n)
    return ErlangRows(service_s, base, step, coarse, mid_step, mid_start, mid, fine_start, fine, waits)


def _efficiency_table() -> tuple[tuple[str, dict], ...]:
    """The default efficiencies of every vendor and engine, fallbacks applied (xlplan/data/efficiencies.yaml)."""
    return tuple((f"{v}|{eng}", efficiency_defaults.default_efficiencies_for(eng, v))
                 for v in efficiency_defaults.VENDORS for eng in engines.ENGINES)
