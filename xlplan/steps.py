"""The seven steps on a :class:`~xlplan.scenario.Scenario`: pure arithmetic.

:func:`traffic` runs steps 1-3 and the per-request demand, :func:`paths` the
memory, compute and latency paths and the fleet at one tensor-parallel degree,
:func:`bill` step 7. They are written with operators and :mod:`xlplan._vec`, so
the same code runs on floats (the planner) and on numpy arrays (the sweep).
:func:`solve` chooses the TP degree for one scalar scenario.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xlplan import (
    _vec,
    compute,
    concurrency,
    cost,
    distributions,
    engines,
    fleet,
    memory,
    serving,
)
from xlplan.scenario import PlanningError, Scenario
from xlplan.units import GIB

__all__ = ["PlanningError"]  # defined beside Scenario (which raises it too); callers keep naming steps.PlanningError


def prefill_mfu(s: Scenario):
    """The MFU prefill runs at: the calibrated one, else the plan's MFU. [fraction]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.

    Returns
    -------
    float or array
        Prefill's achieved fraction of peak FLOP/s. [fraction]
    """
    return s.mfu if s.prefill_mfu is None else s.prefill_mfu


def decode_mfu(s: Scenario):
    """The MFU decode runs at: the calibrated one, else the plan's MFU. [fraction]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.

    Returns
    -------
    float or array
        Decode's achieved fraction of peak FLOP/s. [fraction]
    """
    return s.mfu if s.decode_mfu is None else s.decode_mfu


@dataclass(frozen=True, slots=True)
class Traffic:
    """Steps 1-3 and the demand they imply. Units in the field comments."""

    prompt_mean: float  # E[prompt] [tokens]
    prompt_second_moment: float  # E[prompt²] [tokens²]
    output_mean: float  # E[output] [tokens]
    output_second_moment: float  # E[output²] [tokens²]
    conversation_tokens: float  # length the cache is sized at [tokens]
    time_in_system_s: float  # [s]
    concurrency: float  # [requests]
    kv_bytes_per_conversation: float  # [bytes]
    kv_gib_per_conversation: float  # [GiB]
    kv_gib_total: float  # [GiB]
    prefill_flops_per_request: float  # [FLOP]
    prefill_keys_per_request: float  # token-key pairs of one prompt's prefill (causal or full, as the policy counts) [token·keys]
    prefill_keys_window_per_request: float  # the same, clipped at the sliding window [token·keys]
    decode_flops_per_token: float  # [FLOP/token]
    prefill_tflops: float  # [TFLOP/s]
    decode_tflops: float  # [TFLOP/s]


@dataclass(frozen=True, slots=True)
class Paths:
    """Steps 4-6 at one tensor-parallel degree. Units in the field comments."""

    tp: int  # [GPUs per replica]
    kv_shards: int  # [GPUs]
    weights_gib_per_gpu: float  # [GiB]
    kv_budget_gib_per_gpu: float  # [GiB]
    conversations_per_replica: float  # [conversations]
    memory_gpus_exact: float  # [GPUs]
    memory_gpus: float  # [GPUs], whole replicas
    tflops_per_gpu: float  # peak × MFU [TFLOP/s]
    compute_gpus_exact: float  # [GPUs]
    compute_gpus: float  # [GPUs]
    max_decode_batch: float  # [conversations per replica]
    latency_gpus_exact: float  # [GPUs]
    latency_gpus: float  # [GPUs]
    ttft_p95_s: float  # prefill alone of the prompt at the promise's percentile (p95 by default) [s]
    load_replicas: float  # [replicas]
    load: float  # [GPUs]
    with_redundancy: float  # [GPUs]
    purchased: float  # [GPUs]
    decode_step_s: float  # at the batch each load replica carries [s]


@dataclass(frozen=True, slots=True)
class Bill:
    """Step 7. Units in the field comments."""

    billed_gpus: float  # [GPUs]
    monthly_usd: float  # [USD/month]
    tokens_per_month: float  # [tokens/month]
    usd_per_mtok: float  # [USD/Mtok]
    api_usd_per_mtok_blended: float | None  # [USD/Mtok]
    api_monthly_usd: float | None  # [USD/month]
    breakeven_tokens_per_month: float | None  # [tokens/month]


@dataclass(frozen=True, slots=True)
class Solution:
    """One scenario solved: the chosen TP degree's paths, every candidate's, and the bill."""

    traffic: Traffic
    paths: Paths
    candidates: tuple[Paths, ...]
    bill: Bill
    binding: str
    binding_paths: tuple[str, ...]


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
    keys_window = _vec.minimum(keys, s.window * prompt_mean) if s.window_layers else keys
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


def replica(s: Scenario, tp: int) -> serving.Replica:
    """One replica of ``tp`` GPUs for the serving model. [Replica]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    serving.Replica
        The replica's physics: the model cut across ``tp`` GPUs, the GPU's peaks and the engine's efficiencies.
    """
    ep = s.expert_parallel if s.experts and tp % s.expert_parallel == 0 else 1
    return serving.Replica(
        tp=tp, ep=ep, layers=s.layers, window_layers=s.window_layers,
        window=float(s.window) if s.window_layers else _vec.INF, hidden=s.hidden, attention_width=s.attention_width,
        active_params=s.active_params, expert_active_params=s.expert_active_params,
        dense_weight_bytes=s.weights_bytes - s.expert_weights_bytes,
        expert_weight_bytes=s.expert_weights_bytes, experts=s.experts, experts_per_token=s.experts_per_token,
        moe_layers=s.moe_layers, kv_bytes_per_token_layer=s.kv_bytes_per_token_layer,
        kv_shards=kv_shards(s, tp), peak_tflops=s.peak_tflops, attention_peak_tflops=s.attention_peak_tflops,
        hbm_tbps=s.hbm_tbps,
        link_gbps=s.link_gbps, link_latency_s=s.link_latency_s, activation_bytes=ACTIVATION_BYTES,
        prefill_mfu=prefill_mfu(s), decode_mfu=decode_mfu(s), bandwidth_efficiency=s.bandwidth_efficiency,
        step_overhead_s=s.step_overhead_s, expert_efficiency=s.expert_efficiency,
    )


def kv_shards(s: Scenario, tp: int) -> int:
    """Ways each sequence's KV cache splits across a replica (DP attention gives each rank its own sequences). [GPUs]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    int
        ``tp`` with DP attention, else :func:`xlplan.memory.kv_shards` (capped by the KV heads; 1 for MLA). [GPUs]
    """
    if s.attention_data_parallel:
        return tp
    return memory.kv_shards(tp, s.kv_shard_limit)


RUNBOOK_BATCH_CAP = 10**7
"""The largest batch searched where no engine budget caps it (the runbook's convention). [sequences]"""

ACTIVATION_BYTES = 2.0
"""Bytes per activation element on the wire (bf16 all-reduces, as the engines send them). [bytes]"""


def activation_gib(s: Scenario, tp: int):
    """The engine's activation memory per GPU at start-up (what its KV rule takes out). [GiB]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    float or array
        vLLM's (or TensorRT-LLM's) profiled activation peak per GPU; 0 for the other engines. [GiB]

    References
    ----------
    vLLM's start-up log line "model weights … peak activation … non-torch memory … KV Cache is …"
    (:func:`xlplan.engines.vllm_activation_peak_gib`).
    """
    if s.engine == "vllm":
        return engines.vllm_activation_peak_gib(s.vocab, s.hidden, s.intermediate / tp, s.max_num_seqs, s.max_num_batched_tokens)
    if s.engine == "trtllm":
        return engines.vllm_activation_peak_gib(s.vocab, s.hidden, s.intermediate / tp, 0, s.max_num_batched_tokens, v0=True)
    return 0.0 * s.memory_gib


def kv_budget_gib(s: Scenario, tp: int):
    """KV room per GPU at TP ``tp``, by the engine's memory rule. [GiB]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tp : int
        GPUs in the replica (tensor-parallel degree). [GPUs]

    Returns
    -------
    float or array
        Memory left per GPU for the KV cache; not positive when the weights do not fit. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    vLLM's start-up KV figure (``../shared/reference/measurements-public.csv`` K01):
    0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38 GiB.
    """
    return engines.kv_budget_gib(s.engine, s.memory_gib, s.visible_gib, s.memory_utilisation, s.weights_bytes / tp / GIB,
                                 s.overhead_gib, activation_gib(s, tp), tp)


def kv_budget_terms(s: Scenario, tp: int) -> tuple:
    """:func:`kv_budget_gib`'s operands at ``tp``, as the note prints them (:func:`xlplan.engines.kv_budget_terms`).

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tp : int
        GPUs in the replica. [GPUs]

    Returns
    -------
    tuple
        ``(basis, basis_gib, utilisation, ((label, gib), …), after)``. [GiB]
    """
    return engines.kv_budget_terms(s.engine, s.memory_gib, s.visible_gib, s.memory_utilisation, s.weights_bytes / tp / GIB,
                                   s.overhead_gib, activation_gib(s, tp), tp)


def decode_context_tokens(tr: Traffic):
    """Mean cached context of a decoding sequence: its prompt and half its output. [tokens]

    Parameters
    ----------
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.

    Returns
    -------
    float or array
        ``E[prompt] + E[output]/2``. [tokens]
    """
    return tr.prompt_mean + tr.output_mean / 2.0


def prefill_share(s: Scenario, tr: Traffic):
    """Prompt tokens prefilled per decoded token in the steady state: E[prompt]·(1 − reuse) ÷ E[output]. [tokens/token]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.

    Returns
    -------
    float or array
        Prompt tokens computed (not served from the prefix cache) per output token. [tokens/token]
    """
    return tr.prompt_mean * (1.0 - s.prefix_reuse) / tr.output_mean


def latency_load(s: Scenario, tr: Traffic, r: serving.Replica, batch) -> serving.StepLoad:
    """The step the latency path times: ``batch`` decodes, plus their steady-state share of prefill (chunked prefill)
    unless the policy counts decode alone (the runbook's roofline). [StepLoad]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    r : serving.Replica
        The replica of :func:`replica` at this TP degree.
    batch : float or array
        Decoding sequences the replica carries. [sequences]

    Returns
    -------
    serving.StepLoad
        ``batch`` decodes at the mean context, with ``batch × (1 − reuse) ÷ E[output]`` prompts' prefill when the
        policy's ``latency_step`` is ``with_prefill``.

    References
    ----------
    Runbook, document 14 · the decode step alone (``policy.latency_step: decode_only``).
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    ctx = decode_context_tokens(tr)
    if not s.latency_with_prefill:
        return serving.decode_step(batch, ctx, r.window)
    requests = batch * (1.0 - s.prefix_reuse) / tr.output_mean  # prompts started per step
    return serving.mixed_step(batch, ctx, requests * tr.prompt_mean, requests * tr.prefill_keys_per_request,
                              requests * tr.prefill_keys_window_per_request, 0.0, r.window)


def latency_batch_cap(s: Scenario, tr: Traffic):
    """The most decodes a replica may carry: max_num_seqs, and the step's token budget shared with prefill. [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.

    Returns
    -------
    float or array
        ``min(max_num_seqs, max_num_batched_tokens ÷ (1 + prefill share))``. [sequences]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    """
    share = prefill_share(s, tr) if s.latency_with_prefill else 0.0
    return _vec.minimum(s.max_num_seqs, s.max_num_batched_tokens / (1.0 + share))


def max_decode_batch(s: Scenario, tr: Traffic, r: serving.Replica):
    """Largest batch a replica carries with its step within the inter-token target. [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    r : serving.Replica
        The replica of :func:`replica` at this TP degree.

    Returns
    -------
    float or array
        The largest batch (fractional) of :func:`xlplan.serving.max_batch_within`, at most
        :func:`latency_batch_cap`; 0 when one sequence misses the target. [sequences]
    """
    cap = latency_batch_cap(s, tr)
    lines = serving.step_lines(r, latency_load(s, tr, r, 1.0))
    if lines is not None:  # a dense model: the step is two lines in the batch, met in closed form
        return serving.max_batch_on_lines(lines, s.itl_s, cap)
    return serving.max_batch_within(latency_step_fn(s, tr, r), s.itl_s, cap)


def latency_step_fn(s: Scenario, tr: Traffic, r: serving.Replica, with_prefill: bool | None = None):
    """``batch → step time`` of :func:`latency_load` on plain floats, through :func:`xlplan.serving.step_time_fn`:
    the same step, term by term, without a :class:`~xlplan.serving.StepLoad` per call (the bisection of
    :func:`max_decode_batch` times 66 steps per TP degree, and every what-if and option re-plans). [callable]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    r : serving.Replica
        The replica of :func:`replica` at this TP degree.
    with_prefill : bool, optional
        Time the step with its prefill share (True) or decodes alone (False) whatever the policy says; None: as
        ``s.latency_with_prefill`` has it. [bool]

    Returns
    -------
    callable
        ``f(batch [sequences]) -> step time [s]``, equal to ``serving.step_time_s(r, latency_load(s, tr, r, batch))``
        (a test holds them equal to 1e-12); on a sweep's columns, element by element. Its ``step_time`` is the
        replica's :func:`xlplan.serving.step_time_fn`.
    """
    ctx = decode_context_tokens(tr)
    f = serving.step_time_fn(r, _vec._is_array(ctx, s.itl_s, s.max_num_seqs, s.max_num_batched_tokens, s.prefix_reuse,
                                               tr.output_mean, tr.prompt_mean, tr.prefill_keys_per_request))
    clipped = _vec.minimum(ctx, r.window)
    if not (s.latency_with_prefill if with_prefill is None else with_prefill):
        def decode_only(b):
            return f(b, b * ctx, b * clipped, 0.0, 0.0, 0.0, b * ctx, b * clipped)

        decode_only.step_time = f  # the replica's step of any load, for callers timing other steps of it
        return decode_only
    reuse, out_mean = s.prefix_reuse, tr.output_mean
    p_tokens, p_keys, p_keys_w = tr.prompt_mean, tr.prefill_keys_per_request, tr.prefill_keys_window_per_request

    def with_prefill(b):
        requests = b * (1.0 - reuse) / out_mean  # prompts started per step, as latency_load counts them
        return f(b, b * ctx, b * clipped, requests * p_tokens, requests * p_keys, requests * p_keys_w, b * ctx,
                 b * clipped)

    with_prefill.step_time = f
    return with_prefill


def prefill_alone_s(s: Scenario, r: serving.Replica, prompt_tokens):
    """Time to prefill one prompt on an idle replica, in chunks of the step budget. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    r : serving.Replica
        The replica of :func:`replica` at this TP degree.
    prompt_tokens : float or array
        Length of the prompt. [tokens]

    Returns
    -------
    float or array
        Sum of the chunks' step times: the TTFT with no queue. [s]

    Notes
    -----
    ``n = ceil(prompt ÷ budget)`` steps of ``prompt ÷ n`` tokens each; the chunks' key pairs sum to the whole
    prompt's (causal or full) and each reads the prefix before it (on average ``(n − 1)/2`` chunks).

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    return prefill_in_chunks_s(s, r, prompt_tokens)


def prefill_in_chunks_s(s: Scenario, r: serving.Replica, prompt_tokens, batch=0.0, context_tokens=0.0):
    """A prompt's prefill in chunks of what the step budget leaves beside ``batch`` decoding sequences. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (its step budget, ``max_num_batched_tokens``, and attention convention).
    r : serving.Replica
        The replica at this TP degree.
    prompt_tokens : float or array
        Length of the prompt. [tokens]
    batch : float or array
        Sequences decoding beside it, one token each per step. [sequences]
    context_tokens : float or array
        Their mean cached context (:func:`decode_context_tokens`). [tokens]

    Returns
    -------
    float or array
        ``n`` steps, each with the decodes and one chunk of ``prompt ÷ n`` tokens, ``n = ceil(prompt ÷ max(budget −
        batch, 1))``: the chunks' key pairs sum to the whole prompt's and each reads the prefix before it (on
        average ``(n − 1)/2`` chunks). [s]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    room = _vec.maximum(s.max_num_batched_tokens - batch, 1.0)
    n = _vec.maximum(_vec.ceil(prompt_tokens / room), 1.0)
    chunk = prompt_tokens / n
    keys = compute.prefill_keys_per_request(prompt_tokens, prompt_tokens * prompt_tokens, s.causal_attention) / n
    keys_window = _vec.minimum(keys, r.window * chunk)
    prefix = chunk * (n - 1.0) / 2.0
    load = serving.mixed_step(batch + 0.0 * prompt_tokens, context_tokens, chunk, keys, keys_window, prefix, r.window)
    return n * serving.step_time_s(r, load)


def compute_path_gpus_exact(s: Scenario, tr: Traffic):
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
    """Step 5 in whole replicas of ``tp`` GPUs: :func:`compute_path_gpus_exact` rounded up. [GPUs]

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
    return fleet.whole_gpus(compute_path_gpus_exact(s, tr), tp)


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
    weights_gib_gpu = s.weights_bytes / tp / GIB
    budget = kv_budget_gib(s, tp)
    per_replica = memory.conversations_per_replica(budget, tr.kv_gib_per_conversation, shards)
    mem_exact = memory.memory_gpus_exact(tr.concurrency, tr.kv_gib_per_conversation, budget, tp, shards)
    mem = fleet.whole_gpus(mem_exact, tp)

    comp_exact = compute_path_gpus_exact(s, tr)
    comp = fleet.whole_gpus(comp_exact, tp)

    batch_cap = _vec.where(budget > 0, max_decode_batch(s, tr, r), 0.0 * budget)
    lat_exact = tp * _vec.div_pos(tr.concurrency, batch_cap)
    lat = fleet.whole_gpus(lat_exact, tp)

    load_replicas = _vec.maximum(_vec.maximum(mem, comp), lat) / tp
    load, with_red, purchased = fleet.fleet_sizes(load_replicas, tp, s.redundancy, s.gpus_per_node)
    if lean:
        step = ttft = math.nan
    else:
        step = serving.step_time_s(r, latency_load(s, tr, r, _vec.div_pos(tr.concurrency, load_replicas)))
        ttft = prefill_alone_s(s, r, distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99,
                                                                         s.percentile))
    return Paths(
        tp=tp,
        kv_shards=shards,
        weights_gib_per_gpu=weights_gib_gpu,
        kv_budget_gib_per_gpu=budget,
        conversations_per_replica=per_replica,
        memory_gpus_exact=mem_exact,
        memory_gpus=mem,
        tflops_per_gpu=compute.effective_tflops_per_gpu(s.peak_tflops, s.mfu),
        compute_gpus_exact=comp_exact,
        compute_gpus=comp,
        max_decode_batch=batch_cap,
        latency_gpus_exact=lat_exact,
        latency_gpus=lat,
        ttft_p95_s=ttft,
        load_replicas=load_replicas,
        load=load,
        with_redundancy=with_red,
        purchased=purchased,
        decode_step_s=step,
    )


def tokens_per_month(s: Scenario, tr: Traffic):
    """Tokens served in a month at the average utilisation (prompt and output means fitted). [tokens/month]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.

    Returns
    -------
    float or array
        ``peak rate × (E[prompt] + E[output]) × average utilisation × hours × 3600``. [tokens/month]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month".
    """
    return cost.tokens_per_month(s.peak_rps, tr.prompt_mean + tr.output_mean, s.average_utilisation, s.hours_per_month)


def bill(s: Scenario, tr: Traffic, p: Paths) -> Bill:
    """Step 7: the monthly bill, $/M tokens at the average utilisation, and the API comparison.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`traffic`.
    p : Paths
        The chosen TP degree's paths: its fleet with redundancy and purchased.

    Returns
    -------
    Bill
        GPUs billed, monthly cost, tokens a month, $/M tokens, and the API's price, bill and break-even where the
        plan gives API prices.

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month"; "at 40% average load roughly
    95 billion tokens a month, ~$0.11 per million tokens".
    """
    billed = _vec.where(s.bill_purchased, p.purchased, p.with_redundancy)
    monthly = cost.monthly_cost_usd(billed, s.usd_per_gpu_hour, s.hours_per_month) + s.fixed_usd_per_month
    tokens = tokens_per_month(s, tr)
    blended = api_monthly = breakeven = None
    if s.api_usd_per_mtok_input is not None:
        blended = cost.api_usd_per_mtok_blended(tr.prompt_mean, tr.output_mean, s.api_usd_per_mtok_input, s.api_usd_per_mtok_output)
        api_monthly = cost.api_monthly_cost_usd(tokens, blended)
        breakeven = cost.breakeven_tokens_per_month(monthly + s.ops_usd_per_month, blended)
    return Bill(
        billed_gpus=billed,
        monthly_usd=monthly,
        tokens_per_month=tokens,
        usd_per_mtok=cost.usd_per_mtok(monthly, tokens),
        api_usd_per_mtok_blended=blended,
        api_monthly_usd=api_monthly,
        breakeven_tokens_per_month=breakeven,
    )


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
        return (
            f"the weights do not fit: at TP {widest.tp} (the widest inside a node of {s.gpus_per_node}) each GPU holds "
            f"{widest.weights_gib_per_gpu:.2f} GiB of weights against {s.memory_gib * s.memory_utilisation:.2f} GiB usable "
            f"({s.memory_gib:.2f} GiB x {s.memory_utilisation:.2f}) less {s.overhead_gib:g} GiB overhead, leaving "
            f"{widest.kv_budget_gib_per_gpu:.2f} GiB for the KV cache; expected a positive budget — use a larger GPU or node, "
            "quantised weights, or a smaller model"
        )
    one = serving.step_time_s(replica(s, widest.tp), serving.decode_step(1.0, 0.0))
    return (
        f"the inter-token target {s.itl_s:g} s cannot be met: even at TP {widest.tp} one decode step takes "
        f"{one:.4f} s (reading the weights, the step overhead and communication); expected a looser promise.itl_s, "
        "a faster GPU or quantised weights"
    )


TP_OBJECTIVE_PURCHASED = 1e8
"""Weight of a GPU purchased in :func:`objective`: above every billed count's weight times any fleet under a million
GPUs. [1/GPU]"""

TP_OBJECTIVE_BILLED = 100.0
"""Weight of a GPU billed in :func:`objective`: above every TP degree (at most 64). [1/GPU]"""


def objective(purchased, billed, tp):
    """The number TP degrees are chosen by, smallest first: fewest purchased GPUs, then fewest billed, then the smallest
    degree, as one sum. [1]

    Parameters
    ----------
    purchased : float or array
        GPUs purchased at that degree (infinite where it cannot run). [GPUs]
    billed : float or array
        GPUs billed there: purchased or with redundancy, as the plan bills. [GPUs]
    tp : float or array
        The degree. [GPUs]

    Returns
    -------
    float or array
        ``purchased × 10⁸ + billed × 100 + tp``; its order is the lexicographic order of ``(purchased, billed, tp)``
        for fleets under a million GPUs and degrees under 100, and exact in a float (below 2⁵³). The workbook's TP
        table writes the same sum with these weights (:data:`TP_OBJECTIVE_PURCHASED`, :data:`TP_OBJECTIVE_BILLED`). [1]

    Examples
    --------
    >>> objective(8, 5, 1) < objective(8, 6, 1) < objective(16, 1, 1)
    True
    """
    return purchased * TP_OBJECTIVE_PURCHASED + billed * TP_OBJECTIVE_BILLED + tp


def tp_objective(p: Paths, billed):
    """:func:`objective` of one TP degree's paths. [1]

    Parameters
    ----------
    p : Paths
        One TP degree's paths.
    billed : float or array
        GPUs billed at that degree: purchased or with redundancy, as the plan bills. [GPUs]

    Returns
    -------
    float or array
        ``objective(purchased, billed, tp)``; the smallest wins. [1]
    """
    return objective(p.purchased, billed, p.tp)


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
            if low == _vec.INF:
                continue
            _, with_red, bought = fleet.fleet_sizes(low, tp, s.redundancy, s.gpus_per_node)
            if objective(bought, bought if s.bill_purchased else with_red, tp) > best[0]:
                continue
        p = paths(s, tr, tp, lean=True)
        if p.load == _vec.INF:
            continue
        key = tp_objective(p, p.purchased if s.bill_purchased else p.with_redundancy)
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
    feasible = [c for c in candidates if c.load != _vec.INF]
    if not feasible:
        raise PlanningError(infeasible_reason(s, candidates))
    best = min(feasible, key=lambda c: tp_objective(c, c.purchased if s.bill_purchased else c.with_redundancy))
    label, which = fleet.binding_constraint(best.memory_gpus, best.compute_gpus, best.latency_gpus, best.tp)
    return Solution(tr, best, candidates, bill(s, tr, best), label, which)
