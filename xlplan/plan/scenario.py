"""A plan reduced to numbers: the planner's working inputs.

:func:`resolve` turns a validated :class:`~xlplan.schema.plan.Plan` into a
:class:`Scenario` of plain numbers (catalog looked up, parameters counted,
dtypes turned into bytes). Every numeric field may also hold a numpy array,
which is how the vectorized sweep runs thousands of scenarios at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xlplan.catalog import parameters
from xlplan.catalog.specs import GPUSpec, ModelSpec
from xlplan.plan.engine_settings import (
    RUNBOOK_UNBOUNDED,
    compute_dtype,
    efficiencies,
    engine_budgets,
    tp_options,
)
from xlplan.schema.plan import Plan
from xlplan.serving import memory


class PlanningError(ValueError):
    """The plan is valid but cannot be met on this hardware (e.g. the weights do not fit)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """Numeric inputs of the seven steps and of the serving model. Units as in the field comments.

    Inputs only: what is derived from them (the MFUs left to default, the activation peak, the KV budget)
    is derived by a function of :mod:`xlplan.plan.steps`, so a sweep column that changes an input changes
    everything downstream of it.
    """

    # forecast
    peak_rps: float  # [requests/s]
    prompt_p50: float  # [tokens]
    prompt_p95: float  # [tokens]
    prompt_p99: float | None  # [tokens]
    output_p50: float  # [tokens]
    output_p95: float  # [tokens]
    output_p99: float | None  # [tokens]
    average_utilisation: float  # [fraction]
    prefix_reuse: float  # [fraction]
    # promise
    ttft_s: float  # [s]
    itl_s: float  # [s/token]
    percentile: float  # the promise's percentile: the TTFT check takes the prompt length at it [percent]
    # model (from the catalog: not sweepable)
    active_params: float  # [parameters]
    weights_bytes: float  # [bytes]
    expert_weights_bytes: float  # routed experts, read only where tokens are routed [bytes]
    expert_active_params: float  # routed-expert parameters one token passes through [parameters]
    experts: int  # routed experts per MoE layer [experts]
    experts_per_token: int  # [experts]
    moe_layers: int  # [layers]
    layers: int  # [layers]
    window_layers: int  # [layers]
    window: int | None  # [tokens]
    hidden: int  # [elements]
    intermediate: int  # dense MLP width (the profiled activations) [elements]
    vocab: int  # [tokens]
    attention_width: int  # [elements]
    kv_bytes_per_token_layer: float  # [bytes/token/layer]
    kv_shard_limit: int  # [GPUs] KV heads (GQA), 1 (MLA)
    # hardware
    memory_gib: float  # [GiB]
    visible_gib: float  # CUDA-visible [GiB]
    peak_tflops: float  # at the weights' compute dtype [TFLOP/s]
    attention_peak_tflops: float  # 16-bit, for attention products [TFLOP/s]
    hbm_tbps: float  # [TB/s]
    link_gbps: float  # GPU-to-GPU per GPU, one direction [GB/s]
    link_latency_s: float  # one collective [s]
    gpus_per_node: int  # [GPUs]
    usd_per_gpu_hour: float  # rent: the price; buy: the owned cost (xlplan.money.ownership) [USD/GPU-hour]
    fixed_usd_per_month: float  # buy: hardware operations; rent: 0 [USD/month]
    hours_per_month: float  # [h/month]
    bill_purchased: bool  # the bill counts whole purchasing units (rented per node, or bought) [bool]
    paid_as: str  # costs.mode: 'rent_per_gpu', 'rent_per_node' or 'buy' [text]
    ops_usd_per_month: float  # [USD/month]
    # policy
    mfu: float  # [fraction]
    prefill_mfu: float | None  # None: mfu [fraction]
    decode_mfu: float | None  # None: mfu [fraction]
    memory_utilisation: float | None  # the engine's memory fraction; None: its default at each TP (replica_at_tp.memory_fraction) [fraction]
    overhead_gib: float  # [GiB] (engine 'runbook')
    bandwidth_efficiency: float  # [fraction]
    redundancy: int  # [replicas]
    worst_case_memory: bool
    include_ttft: bool
    decode_attention: bool
    tp_options: tuple[int, ...]  # [GPUs]
    engine: str  # runbook | vllm | sglang | trtllm
    max_num_batched_tokens: float  # [tokens]
    max_num_seqs: float  # [sequences]
    step_overhead_s: float  # [s]
    expert_efficiency: float  # expert GEMMs' MFU relative to dense [fraction]
    expert_parallel: int  # [GPUs]
    attention_data_parallel: bool  # MLA: each rank holds its own sequences' latent (DP attention)
    causal_attention: bool
    latency_with_prefill: bool
    # api
    api_usd_per_mtok_input: float | None  # [USD/Mtok]
    api_usd_per_mtok_output: float | None  # [USD/Mtok]
    arrival_cv2: float = 1.0  # squared CV of the gaps between arrivals at peak: 1 Poisson [1]
    set_by_plan: tuple[str, ...] = ()  # the settings of SEARCHED_SETTINGS the plan file sets (the search keeps them)
    routing: str = "least_loaded"  # the load balancer's rule: least_loaded | round_robin | random | least_kv (policy.routing)
    long_prefill_token_threshold: float = math.inf  # the most one request prefills in a step (policy.long_prefill_token_threshold; inf: off) [tokens]


SEARCHED_SETTINGS = ("max_num_seqs", "expert_parallel", "attention_data_parallel", "long_prefill_token_threshold")
"""Policy fields the configuration search (:mod:`xlplan.decide.configuration`) chooses where the plan file leaves them
out, and keeps where it sets them. [text]"""

_FIELDS = tuple(Scenario.__dataclass_fields__)
_new, _set = object.__new__, object.__setattr__


def changed(s: Scenario, **changes) -> Scenario:
    """``dataclasses.replace(s, **changes)`` for a Scenario, at half the cost: a breakpoint's every trial makes one.

    Parameters
    ----------
    s : Scenario
        The scenario to copy.
    **changes
        Fields to set, by name, each in its field's unit.

    Returns
    -------
    Scenario
        A copy of ``s`` with ``changes`` set (equal to what ``dataclasses.replace`` gives: a test holds them equal).
    """
    unknown = set(changes) - set(_FIELDS)
    if unknown:
        raise TypeError(f"Scenario has no field {sorted(unknown)[0]!r}")
    out = _new(Scenario)
    for name in _FIELDS:
        _set(out, name, changes[name] if name in changes else getattr(s, name))
    return out


SWEEPABLE: tuple[str, ...] = (
    "peak_rps", "prompt_p50", "prompt_p95", "prompt_p99", "output_p50", "output_p95", "output_p99", "average_utilisation",
    "prefix_reuse", "ttft_s", "itl_s", "memory_gib", "visible_gib", "peak_tflops", "attention_peak_tflops", "hbm_tbps", "link_gbps", "link_latency_s",
    "usd_per_gpu_hour", "hours_per_month", "ops_usd_per_month", "mfu", "prefill_mfu", "decode_mfu", "memory_utilisation",
    "overhead_gib", "bandwidth_efficiency", "step_overhead_s", "expert_efficiency", "api_usd_per_mtok_input",
    "api_usd_per_mtok_output",
)
"""Scenario fields a sweep column may set: an allow-list of inputs, each of which the steps read directly."""


def resolve(plan: Plan) -> Scenario:
    """Reduce a plan to the numbers the steps need.

    Parameters
    ----------
    plan : Plan
        The validated plan.

    Returns
    -------
    Scenario
        Its numbers: the catalog looked up, parameters counted, dtypes turned into bytes, the price (rented, or the owned
        cost per GPU-hour in buy mode) and the engine's budgets and efficiencies filled in.

    Raises
    ------
    PlanningError
        When the GPU lacks the compute dtype the policy names (the plan cannot run on it).
    """
    model: ModelSpec = plan.model.resolve()
    gpu: GPUSpec = plan.hardware.resolve()
    dtype = compute_dtype(plan, gpu)
    peak = gpu.peak_tflops(dtype)
    if peak is None:
        raise PlanningError(f"policy.compute_dtype: {gpu.name} has no {dtype} peak in the catalog; expected bf16 or a dtype it supports")
    api = plan.api_used()
    return Scenario(
        **_forecast_and_promise(plan), **_model_numbers(plan, model), **_hardware_numbers(gpu, peak), **_cost_numbers(plan),
        **_policy_numbers(plan, gpu),
        api_usd_per_mtok_input=api.usd_per_mtok_input,
        api_usd_per_mtok_output=api.usd_per_mtok_output,
    )


def _forecast_and_promise(plan: Plan) -> dict:
    """The Scenario's forecast and promise fields, as the plan states them. [requests/s], [tokens], [s]"""
    f, p, o = plan.forecast, plan.forecast.prompt_tokens, plan.forecast.output_tokens
    return dict(
        peak_rps=f.peak_rps,
        prompt_p50=p.p50, prompt_p95=p.p95, prompt_p99=p.p99,
        output_p50=o.p50, output_p95=o.p95, output_p99=o.p99,
        average_utilisation=f.average_utilisation,
        prefix_reuse=f.prefix_reuse,
        arrival_cv2=f.arrival_cv2,
        ttft_s=plan.promise.ttft_s,
        itl_s=plan.promise.itl,
        percentile=plan.promise.percentile,
    )


def _model_numbers(plan: Plan, model: ModelSpec) -> dict:
    """The Scenario's model fields: parameters counted, weights and KV cache in the plan's dtypes. [parameters], [bytes]"""
    return dict(
        active_params=float(parameters.active_params(model)),
        weights_bytes=memory.weights_bytes(model, plan.model.weights_dtype),
        expert_weights_bytes=memory.expert_weights_bytes(model, plan.model.weights_dtype),
        expert_active_params=float(parameters.routed_expert_active_params(model)),
        experts=model.num_experts,
        experts_per_token=model.experts_per_token,
        moe_layers=parameters.moe_layers(model),
        layers=model.num_hidden_layers,
        window_layers=model.sliding_window_layers,
        window=model.sliding_window,
        hidden=model.hidden_size,
        intermediate=model.intermediate_size,
        vocab=model.vocab_size,
        attention_width=parameters.attention_width(model),
        kv_bytes_per_token_layer=memory.kv_bytes_per_token_per_layer(model, plan.model.kv_dtype),
        kv_shard_limit=1 if model.attention == "mla" else model.num_key_value_heads,
    )


def _hardware_numbers(gpu: GPUSpec, peak_tflops: float) -> dict:
    """The Scenario's GPU fields: memory, peaks, bandwidth and the link. [GiB], [TFLOP/s], [TB/s], [GB/s], [s]"""
    from xlplan.serving import engines

    return dict(
        memory_gib=gpu.memory_gib,
        visible_gib=engines.visible_gib(gpu.memory_gib, gpu.cuda_visible_gib),
        peak_tflops=peak_tflops,
        attention_peak_tflops=gpu.bf16_tflops,
        hbm_tbps=gpu.hbm_tbps,
        link_gbps=gpu.link_gbps(),
        link_latency_s=gpu.collective_latency_s(),
    )


def _cost_numbers(plan: Plan) -> dict:
    """The Scenario's price fields: rented, or in buy mode the owned cost per GPU-hour and the hardware's running
    cost. [USD/GPU-hour], [USD/month], [h/month]"""
    own = plan.ownership()
    if own:  # buy: the bill counts every purchased GPU at its owned hourly cost, plus the hardware's running cost
        from xlplan.money import ownership_plan

        usd_per_gpu_hour = ownership_plan.owned_usd_per_gpu_hour(plan)
        fixed_usd_per_month = own["hardware_ops_usd_per_month"]["value"]
    else:
        usd_per_gpu_hour, fixed_usd_per_month = plan.hardware.price(), 0.0
    return dict(
        gpus_per_node=plan.hardware.gpus_per_node,
        usd_per_gpu_hour=usd_per_gpu_hour,
        fixed_usd_per_month=fixed_usd_per_month,
        hours_per_month=plan.hardware.hours_per_month,
        bill_purchased=bool(own) or plan.costs.mode == "rent_per_node",
        paid_as=plan.costs.mode,
        ops_usd_per_month=plan.hardware.ops_usd_per_month,
    )


def _policy_numbers(plan: Plan, gpu: GPUSpec) -> dict:
    """The Scenario's policy fields: efficiencies, memory rule, conventions, TP degrees and the engine's budgets.
    [fraction], [GiB], [tokens], [sequences], [s]"""
    pol = plan.policy
    seqs, tokens = engine_budgets(plan, gpu)
    eff = efficiencies(plan, gpu)
    return dict(
        mfu=eff["mfu"],
        prefill_mfu=eff["prefill_mfu"],
        decode_mfu=eff["decode_mfu"],
        memory_utilisation=pol.memory_utilisation,
        overhead_gib=pol.overhead_gib,
        bandwidth_efficiency=eff["bandwidth_efficiency"],
        redundancy=pol.redundancy,
        worst_case_memory=pol.memory_convention == "worst_case",
        include_ttft=pol.include_ttft_in_time_in_system,
        decode_attention=pol.decode_attention_flops,
        tp_options=tp_options(plan),
        engine=pol.engine,
        max_num_batched_tokens=float(tokens),
        max_num_seqs=float(seqs),
        set_by_plan=tuple(f for f in SEARCHED_SETTINGS if getattr(pol, f) is not None),
        step_overhead_s=eff["step_overhead_s"],
        expert_efficiency=eff["expert_efficiency"],
        expert_parallel=pol.expert_parallel or 1,
        attention_data_parallel=bool(pol.attention_data_parallel),
        causal_attention=pol.attention_flops == "causal",
        latency_with_prefill=pol.latency_step == "with_prefill",
        routing=pol.routing,
        long_prefill_token_threshold=float(pol.long_prefill_token_threshold or math.inf),
    )


RUNBOOK_CHUNK_TOKENS = 512
"""The prefill chunk the simulation schedules when the plan's engine sets no step budget (the runbook's): vLLM's
long-prefill chunk size, small enough that a 2,000-token prompt does not stall every decode for one long step. A plan
that sets ``policy.max_num_batched_tokens`` (or names an engine: vLLM's 8,192 on an H100) is simulated with its own. [tokens]"""


def prefill_chunk_tokens(s: Scenario) -> float:
    """The most tokens of one prompt a step carries: the step budget, or the long-prefill threshold where smaller. [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its step budget (``max_num_batched_tokens``) and long-prefill threshold (inf: none).

    Returns
    -------
    float
        ``min(max_num_batched_tokens, long_prefill_token_threshold)``: a prompt on an idle replica is prefilled in
        chunks of this. [tokens]

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): each request's new tokens capped at
    ``long_prefill_token_threshold`` where it is set, then at the step's remaining budget.
    """
    return min(s.max_num_batched_tokens, s.long_prefill_token_threshold)


def chunk_tokens(s: Scenario) -> int:
    """The step's token budget the simulation schedules with: the plan's, else :data:`RUNBOOK_CHUNK_TOKENS`. [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers; its ``max_num_batched_tokens`` is the engine's step budget (unbounded: none set).

    Returns
    -------
    int
        Tokens one step may carry, decodes and prefill chunks together. [tokens]

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request.
    """
    budget = s.max_num_batched_tokens
    return RUNBOOK_CHUNK_TOKENS if budget >= RUNBOOK_UNBOUNDED else int(budget)
