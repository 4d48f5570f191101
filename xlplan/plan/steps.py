"""The seven steps on a :class:`~xlplan.plan.scenario.Scenario`: pure arithmetic.

:func:`traffic` runs steps 1-3 and the per-request demand, :func:`paths` the
memory, compute and latency paths and the fleet at one tensor-parallel degree,
:func:`bill` step 7. They are written with operators and :mod:`xlplan.arrays`, so
the same code runs on floats (the planner) and on numpy arrays (the sweep).
:func:`solve` chooses the TP degree for one scalar scenario.

The parts live beside it, each imported from its own module: the
result records (:mod:`xlplan.schema.steps`), the replica and its KV room
(:mod:`xlplan.plan.replica_at_tp`), the latency path's step (:mod:`xlplan.plan.latency_step`),
the bill (:mod:`xlplan.plan.monthly_bill`) and the TP objective (:mod:`xlplan.plan.tp_choice`).
"""

from __future__ import annotations

import math

from xlplan import arrays, distributions, fleet, words
from xlplan.plan.latency_step import (
    latency_load,
    max_decode_batch,
    prefill_alone_s,
)
from xlplan.plan.monthly_bill import bill
from xlplan.plan.replica_at_tp import decode_mfu, kv_budget_gib, kv_budget_terms, kv_shards, prefill_mfu, replica
from xlplan.plan.scenario import PlanningError, Scenario
from xlplan.plan.tp_choice import (
    billed_gpus,
    objective,
    tp_objective,
)
from xlplan.schema.steps import Paths, Solution, Traffic
from xlplan.serving import compute, concurrency, memory, step_inputs
from xlplan.serving import step as serving
from xlplan.units import GIB

__all__ = ["PlanningError"]  # defined beside Scenario (which raises it too); callers keep naming steps.PlanningError


def _percentile_tokens(p50, p95, p99, worst_case):
    if not worst_case:
        return p50
    if p99 is not None:
        return p99
    median, sigma = distributions.fit_lognormal(p50, p95)
    return distributions.lognormal_quantile(median, sigma, 0.99)


def traffic(s: Scenario) -> Traffic:
    """Steps 1-3: the fitted lengths, Little's Law, cache per conversation, FLOP demand.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.

    Returns
    -------
    Traffic
        The fitted length moments, time in system, concurrency, KV cache per conversation and in all, and the
        prefill and decode FLOP demand at peak.

    References
    ----------
    Runbook, document 14, step 3 · "in flight = arrival rate × time in system"; step 4 (KV per conversation);
    step 5 (FLOP demand). Little's Law: Little, Operations Research 9(3), 1961.
    """
    prompt_mean, prompt_m2 = distributions.length_moments(s.prompt_p50, s.prompt_p95, s.prompt_p99)
    output_mean, output_m2 = distributions.length_moments(s.output_p50, s.output_p95, s.output_p99)
    conv_tokens = _percentile_tokens(s.prompt_p50, s.prompt_p95, s.prompt_p99, s.worst_case_memory) + _percentile_tokens(
        s.output_p50, s.output_p95, s.output_p99, s.worst_case_memory
    )
    t_sys = concurrency.time_in_system_s(output_mean, s.itl_s, s.ttft_s if s.include_ttft else 0.0)
    in_flight = concurrency.littles_law(s.peak_rps, t_sys)
    kv_conv = memory.kv_bytes_per_conversation(
        conv_tokens, s.kv_bytes_per_token_layer, s.layers - s.window_layers, s.window_layers, s.window
    )
    prefill_req = compute.prefill_flops_per_request(
        s.active_params, prompt_mean, prompt_m2, s.layers, s.attention_width, s.window_layers, s.window, s.causal_attention
    )
    keys = compute.prefill_keys_per_request(prompt_mean, prompt_m2, s.causal_attention)
    keys_window = arrays.minimum(keys, s.window * prompt_mean) if s.window_layers else keys
    if s.decode_attention:
        decode_tok = compute.decode_flops_per_token(s.active_params, s.layers, s.attention_width, prompt_mean + output_mean / 2.0)
    else:
        decode_tok = compute.decode_flops_per_token(s.active_params)
    return Traffic(
        prompt_mean=prompt_mean,
        prompt_second_moment=prompt_m2,
        output_mean=output_mean,
        output_second_moment=output_m2,
        conversation_tokens=conv_tokens,
        time_in_system_s=t_sys,
        concurrency=in_flight,
        kv_bytes_per_conversation=kv_conv,
        kv_gib_per_conversation=kv_conv / GIB,
        kv_gib_total=in_flight * kv_conv / GIB,
        prefill_flops_per_request=prefill_req,
        prefill_keys_per_request=keys,
        prefill_keys_window_per_request=keys_window,
        decode_flops_per_token=decode_tok,
        prefill_tflops=compute.prefill_tflops(s.peak_rps, prefill_req, s.prefix_reuse),
        decode_tflops=compute.decode_tflops(s.peak_rps, output_mean, decode_tok),
    )


def _compute_path_gpus_exact(s: Scenario, tr: Traffic):
    """Step 5, the compute path before rounding: prefill and decode FLOPs at the peak rate over each phase's MFU. [GPUs]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.

    Returns
    -------
    float or array
        GPUs the FLOPs need, the same at every TP degree. [GPUs]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    return compute.compute_gpus_split(tr.prefill_tflops, tr.decode_tflops, s.peak_tflops, prefill_mfu(s), decode_mfu(s))


def compute_path_gpus(s: Scenario, tr: Traffic, tp: int):
    """Step 5 in whole replicas of ``tp`` GPUs: :func:`_compute_path_gpus_exact` rounded up. [GPUs]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    tp : int
        GPUs in the replica. [GPUs]

    Returns
    -------
    float or array
        The compute path as :func:`paths` gives it. [GPUs]
    """
    return fleet.whole_gpus(_compute_path_gpus_exact(s, tr), tp)


def paths(s: Scenario, tr: Traffic, tp: int, lean: bool = False) -> Paths:
    """Steps 4-6 at tensor-parallel degree ``tp``: each path in whole replicas, then the fleet.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]
    lean : bool
        Leave out the two figures no fleet depends on, the prefill-alone TTFT and the step at the load (NaN then):
        a breakpoint's every trial asks only for the fleet. [bool]

    Returns
    -------
    Paths
        The memory, compute and latency paths (exact and in whole replicas), the prefill-alone TTFT, and the load,
        with redundancy and purchased.

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8".
    """
    r = replica(s, tp)
    shards = r.kv_shards
    budget = kv_budget_gib(s, tp)
    mem_exact = memory.memory_gpus_exact(tr.concurrency, tr.kv_gib_per_conversation, budget, tp, shards)
    mem = fleet.whole_gpus(mem_exact, tp)
    comp_exact = _compute_path_gpus_exact(s, tr)
    comp = fleet.whole_gpus(comp_exact, tp)
    batch_cap = arrays.where(budget > 0, max_decode_batch(s, tr, r), 0.0 * budget)
    lat_exact = tp * arrays.div_pos(tr.concurrency, batch_cap)
    lat = fleet.whole_gpus(lat_exact, tp)
    load_replicas = arrays.maximum(arrays.maximum(mem, comp), lat) / tp
    load, with_red, purchased = fleet.fleet_sizes(load_replicas, tp, s.redundancy, s.gpus_per_node)
    step, ttft = (math.nan, math.nan) if lean else _step_and_ttft_s(s, tr, r, load_replicas)
    return Paths(
        tp=tp, kv_shards=shards, weights_gib_per_gpu=s.weights_bytes / tp / GIB, kv_budget_gib_per_gpu=budget,
        conversations_per_replica=memory.conversations_per_replica(budget, tr.kv_gib_per_conversation, shards),
        memory_gpus_exact=mem_exact, memory_gpus=mem,
        tflops_per_gpu=compute.effective_tflops_per_gpu(s.peak_tflops, s.mfu),
        compute_gpus_exact=comp_exact, compute_gpus=comp,
        max_decode_batch=batch_cap, latency_gpus_exact=lat_exact, latency_gpus=lat,
        ttft_p95_s=ttft, load_replicas=load_replicas, load=load, with_redundancy=with_red, purchased=purchased,
        decode_step_s=step,
    )


def _step_and_ttft_s(s: Scenario, tr: Traffic, r: step_inputs.Replica, load_replicas) -> tuple:
    """(the step at the batch each load replica carries, the prefill alone of the percentile's prompt). [s], [s]"""
    step = serving.step_time_s(r, latency_load(s, tr, r, arrays.div_pos(tr.concurrency, load_replicas)))
    ttft = prefill_alone_s(s, r, distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99,
                                                                     s.percentile))
    return step, ttft


def infeasible_reason(s: Scenario, candidates: tuple[Paths, ...]) -> str:
    """Why no TP degree works: the weights do not fit, or no batch meets the inter-token target. [text]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    candidates : tuple of Paths
        Every TP degree's paths, narrowest first (the last is the widest).

    Returns
    -------
    str
        The reason, with the widest degree's figures and what would help.
    """
    widest = candidates[-1]
    if widest.kv_budget_gib_per_gpu <= 0:
        rule = words.kv_rule(*kv_budget_terms(s, widest.tp))
        return (
            f"the weights do not fit: at TP {widest.tp} (the widest inside a node of {s.gpus_per_node}) each GPU holds "
            f"{widest.weights_gib_per_gpu:.2f} GiB of weights, and the {s.engine} rule leaves {rule} = "
            f"{widest.kv_budget_gib_per_gpu:.2f} GiB for the KV cache; expected a positive budget — use a larger GPU or node, "
            "quantised weights, or a smaller model"
        )
    if widest.conversations_per_replica < 1.0:  # memory for even one conversation, before any step time
        per_conv = widest.kv_budget_gib_per_gpu * widest.kv_shards / widest.conversations_per_replica
        return (
            f"memory for even one conversation: at TP {widest.tp} (the widest inside a node of {s.gpus_per_node}) a "
            f"replica's GPUs hold {widest.kv_budget_gib_per_gpu * widest.kv_shards:.2f} GiB of KV cache between them and "
            f"one conversation of the forecast's lengths needs {per_conv:.2f} GiB; expected room for at least one — use a "
            "GPU with more memory or a larger node, an fp8 KV cache, or shorter prompts"
        )
    one = serving.step_time_s(replica(s, widest.tp), step_inputs.decode_step(1.0, 0.0))
    return (
        f"the inter-token target {s.itl_s:g} s cannot be met: even at TP {widest.tp} one decode step takes "
        f"{one:.4f} s (reading the weights, the step overhead and communication); expected a looser promise.itl_s, "
        "a faster GPU or quantised weights"
    )


def solve_fleet(s: Scenario, first_tp: int | None = None) -> tuple | None:
    """``(purchased, binding, binding paths)`` of :func:`solve`, each degree's latency path solved only where its
    memory and compute paths leave it a chance of ordering first. [GPUs], [text], [paths]

    Parameters
    ----------
    s : Scenario
        The plan's numbers, every field a scalar.
    first_tp : int, optional
        The degree to solve first (the plan's own): only the time depends on it. [GPUs]

    Returns
    -------
    tuple or None
        What :func:`solve` would choose, as its purchase, binding constraint and binding paths; None where
        :func:`solve` raises (no degree holds the weights and meets the promise). A breakpoint's every trial asks
        only this.

    Notes
    -----
    The load at a degree is at least its memory and compute paths, so a degree whose fleet of those alone orders
    after the best so far (:func:`tp_objective`) cannot be chosen, and its latency path is never needed.
    """
    tr = traffic(s)
    best = None
    for tp in sorted(s.tp_options, key=lambda t: t != first_tp):
        if best is not None:
            mem = fleet.whole_gpus(memory.memory_gpus_exact(tr.concurrency, tr.kv_gib_per_conversation,
                                                            kv_budget_gib(s, tp), tp, kv_shards(s, tp)), tp)
            low = max(mem, compute_path_gpus(s, tr, tp)) / tp
            if low == arrays.INF:
                continue
            _, with_red, bought = fleet.fleet_sizes(low, tp, s.redundancy, s.gpus_per_node)
            if objective(bought, bought if s.bill_purchased else with_red, tp) > best[0]:
                continue
        p = paths(s, tr, tp, lean=True)
        if p.load == arrays.INF:
            continue
        key = tp_objective(p, billed_gpus(p, s.bill_purchased))
        if best is None or key < best[0]:
            best = (key, p)
    if best is None:
        return None
    p = best[1]
    label, which = fleet.binding_constraint(p.memory_gpus, p.compute_gpus, p.latency_gpus, p.tp)
    return p.purchased, label, which


def solve(s: Scenario) -> Solution:
    """Solve one scalar scenario, choosing the TP degree by :func:`tp_objective`.

    Parameters
    ----------
    s : Scenario
        The plan's numbers, every field a scalar.

    Returns
    -------
    Solution
        The traffic, the chosen degree's paths, every candidate's, the bill, and the binding constraint.

    Raises
    ------
    PlanningError
        When no tensor-parallel degree inside a node can hold the weights and meet the promise.

    References
    ----------
    Runbook, document 14, "From a forecast to a purchase order", steps 1-7.
    """
    tr = traffic(s)
    candidates = tuple(paths(s, tr, tp) for tp in s.tp_options)
    feasible = [c for c in candidates if c.load != arrays.INF]
    if not feasible:
        raise PlanningError(infeasible_reason(s, candidates))
    best = min(feasible, key=lambda c: tp_objective(c, billed_gpus(c, s.bill_purchased)))
    label, which = fleet.binding_constraint(best.memory_gpus, best.compute_gpus, best.latency_gpus, best.tp)
    return Solution(tr, best, candidates, bill(s, tr, best), label, which)
