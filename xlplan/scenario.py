"""A plan reduced to numbers: the planner's working inputs.

:func:`resolve` turns a validated :class:`~xlplan.plan.Plan` into a
:class:`Scenario` of plain numbers (catalog looked up, parameters counted,
dtypes turned into bytes). Every numeric field may also hold a numpy array,
which is how the vectorized sweep runs thousands of scenarios at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan import architecture, memory
from xlplan.plan import Plan
from xlplan.specs import GPUSpec, ModelSpec

TP_DEGREES = (1, 2, 4, 8, 16, 32, 64)
"""Tensor-parallel degrees considered, limited to divisors of the node. [GPUs]"""



class PlanningError(ValueError):
    """The plan is valid but cannot be met on this hardware (e.g. the weights do not fit)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """Numeric inputs of the seven steps and of the serving model. Units as in the field comments.

    Inputs only: what is derived from them (the MFUs left to default, the activation peak, the KV budget)
    is derived by a function of :mod:`xlplan.steps`, so a sweep column that changes an input changes
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
    usd_per_gpu_hour: float  # rent: the price; buy: the owned cost (xlplan.ownership) [USD/GPU-hour]
    fixed_usd_per_month: float  # buy: hardware operations; rent: 0 [USD/month]
    hours_per_month: float  # [h/month]
    bill_purchased: bool
    ops_usd_per_month: float  # [USD/month]
    # policy
    mfu: float  # [fraction]
    prefill_mfu: float | None  # None: mfu [fraction]
    decode_mfu: float | None  # None: mfu [fraction]
    memory_utilisation: float  # [fraction]
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


WEIGHT_ONLY = ("int4", "int8", "mxfp4")
"""Weight formats served weight-only (W4A16, W8A16; gpt-oss-style MXFP4 with 8- or 16-bit activations):
bytes at the stored size, compute at the activation dtype's peak."""


def compute_dtype(plan: Plan, gpu: GPUSpec) -> str:
    """The tensor-core dtype whose peak the compute path uses.

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's ``compute_dtype``, else its weight format.
    gpu : GPUSpec
        The GPU, for the peaks it has.

    Returns
    -------
    str
        'bf16', 'fp8' or 'fp4': the policy's, else :func:`weights_compute_dtype` of the weights.
    """
    if plan.policy.compute_dtype is not None:
        return plan.policy.compute_dtype
    return weights_compute_dtype(plan.model.weights_dtype, gpu)


def weights_compute_dtype(w: str, gpu: GPUSpec) -> str:
    """The peak a weight format runs at.

    fp8 weights run at the FP8 peak where the GPU has it (W8A8); nvfp4/fp4 at the FP4 peak where it has it
    (W4A4, as TensorRT-LLM's FP4 checkpoints run); MXFP4 (gpt-oss) runs MXFP4 x MXFP8 at the FP8 peak on GPUs
    with FP4 math (Blackwell) and weight-only with 16-bit activations elsewhere (Marlin/Triton kernels on
    Hopper); int4 and int8 are weight-only at bf16; everything else bf16.

    Parameters
    ----------
    w : str
        Weight format ('bf16', 'fp8', 'int4', 'mxfp4', 'nvfp4', ...).
    gpu : GPUSpec
        The GPU, for the FP8 and FP4 peaks it has.

    Returns
    -------
    str
        'fp8', 'fp4' or 'bf16'.
    """
    if w == "fp8" and gpu.fp8_tflops:
        return "fp8"
    if w in ("fp4", "nvfp4") and gpu.fp4_tflops:
        return "fp4"
    if w == "mxfp4" and gpu.fp4_tflops and gpu.fp8_tflops:
        return "fp8"
    return "bf16"


def tp_options(plan: Plan) -> tuple[int, ...]:
    """Tensor-parallel degrees the planner may choose from. [GPUs]

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's ``tp``, else its GPUs per node.

    Returns
    -------
    tuple of int
        The policy's degree alone, else every degree of ``TP_DEGREES`` that divides the node. [GPUs]
    """
    if plan.policy.tp is not None:
        return (plan.policy.tp,)
    node = plan.hardware.gpus_per_node
    return tuple(t for t in TP_DEGREES if t <= node and node % t == 0)


def engine_budgets(plan: Plan, gpu: GPUSpec) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) the replica runs with: the policy's, else the engine's default. [sequences], [tokens]

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's engine and any budgets it states.
    gpu : GPUSpec
        The GPU, whose memory and name set vLLM's defaults.

    Returns
    -------
    max_num_seqs : int
        Sequences a replica runs at once. [sequences]
    max_num_batched_tokens : int
        Tokens one engine step may carry. [tokens]

    Notes
    -----
    vLLM's defaults by GPU (:func:`xlplan.engines.vllm_defaults`) stand for SGLang's and TensorRT-LLM's too (SGLang's
    chunked prefill is 8,192 tokens on large GPUs; trtllm-serve's max_num_tokens 8,192). The runbook's convention has
    no step budget (a very large one).

    References
    ----------
    vLLM's engine arguments ``max_num_seqs`` and ``max_num_batched_tokens`` and their defaults by GPU (arg_utils.py);
    SGLang's ``chunked_prefill_size``; trtllm-serve's ``max_num_tokens``. Runbook, document 14: no batch or step
    budget (``RUNBOOK_UNBOUNDED``).
    """
    from xlplan import engines

    if plan.policy.engine == "runbook":
        seqs, tokens = RUNBOOK_UNBOUNDED, RUNBOOK_UNBOUNDED
    else:
        seqs, tokens = engines.vllm_defaults(gpu.memory_gib, gpu.name)
    return plan.policy.max_num_seqs or seqs, plan.policy.max_num_batched_tokens or tokens


def efficiencies(plan: Plan, gpu: GPUSpec) -> dict[str, float | None]:
    """The efficiencies the plan runs at: those it states, else the engine's defaults for the GPU.

    Notes
    -----
    ``mfu``: the policy's, else the engine's default decode MFU (0.40 for the runbook's engine). Prefill and decode
    MFU: the policy's own; else ``mfu`` where the plan states it (or the engine is the runbook's), returned as None
    so a sweep of ``mfu`` moves them; else the engine's default (:func:`xlplan.engines.default_efficiencies`).

    Parameters
    ----------
    plan : Plan
        The validated plan: its policy's engine and any efficiencies it states.
    gpu : GPUSpec
        The GPU, whose vendor picks the engine's fitted defaults.

    Returns
    -------
    dict of str to float or None
        ``mfu``, ``prefill_mfu`` and ``decode_mfu`` (None: follow ``mfu``), ``bandwidth_efficiency`` and
        ``expert_efficiency`` [fraction]; ``step_overhead_s`` [s].

    References
    ----------
    Runbook, document 14, step 5 · "÷ 396 per GPU at 40% MFU": the runbook's engine plans at 40% MFU.
    Fitted defaults: ``xlplan/data/efficiencies.yaml`` (``scripts/fit_efficiencies.py`` over ``xlplan/data/measurements.csv``).
    """
    from xlplan import engines

    pol = plan.policy
    d = engines.default_efficiencies(pol.engine, gpu.name)
    use_mfu = pol.mfu is not None or pol.engine == "runbook"
    out: dict[str, float | None] = {"mfu": pol.mfu if pol.mfu is not None else d["decode_mfu"]}
    for f in ("prefill_mfu", "decode_mfu"):
        given = getattr(pol, f)
        out[f] = given if given is not None else (None if use_mfu else d[f])
    for f in ("bandwidth_efficiency", "step_overhead_s", "expert_efficiency"):
        given = getattr(pol, f, None)
        out[f] = given if given is not None else d[f]
    return out


RUNBOOK_UNBOUNDED = 10**7
"""The runbook's convention caps neither the batch nor the step: a budget no plan reaches. [sequences], [tokens]"""


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
    from xlplan import engines

    model: ModelSpec = plan.model.resolve()
    gpu: GPUSpec = plan.hardware.resolve()
    dtype = compute_dtype(plan, gpu)
    peak = gpu.peak_tflops(dtype)
    if peak is None:
        raise PlanningError(f"policy.compute_dtype: {gpu.name} has no {dtype} peak in the catalog; expected bf16 or a dtype it supports")
    f, p, o = plan.forecast, plan.forecast.prompt_tokens, plan.forecast.output_tokens
    api = plan.api_used()
    own = plan.ownership()
    if own:  # buy: the bill counts every purchased GPU at its owned hourly cost, plus the hardware's running cost
        from xlplan import ownership

        usd_per_gpu_hour = ownership.owned_usd_per_gpu_hour(
            own["capex_usd_per_node"]["value"], plan.hardware.gpus_per_node, own["depreciation_years"]["value"],
            own["kw_per_gpu"]["value"], own["pue"]["value"], own["usd_per_kwh"]["value"],
            own["hosting_usd_per_kw_month"]["value"], plan.hardware.hours_per_month)
        fixed_usd_per_month = own["hardware_ops_usd_per_month"]["value"]
    else:
        usd_per_gpu_hour, fixed_usd_per_month = plan.hardware.price(), 0.0
    seqs, tokens = engine_budgets(plan, gpu)
    eff = efficiencies(plan, gpu)
    return Scenario(
        peak_rps=f.peak_rps,
        prompt_p50=p.p50, prompt_p95=p.p95, prompt_p99=p.p99,
        output_p50=o.p50, output_p95=o.p95, output_p99=o.p99,
        average_utilisation=f.average_utilisation,
        prefix_reuse=f.prefix_reuse,
        arrival_cv2=f.arrival_cv2,
        ttft_s=plan.promise.ttft_s,
        itl_s=plan.promise.itl,
        percentile=plan.promise.percentile,
        active_params=float(architecture.active_params(model)),
        weights_bytes=memory.weights_bytes(model, plan.model.weights_dtype),
        expert_weights_bytes=memory.expert_weights_bytes(model, plan.model.weights_dtype),
        expert_active_params=float(architecture.routed_expert_active_params(model)),
        experts=model.num_experts,
        experts_per_token=model.experts_per_token,
        moe_layers=architecture.moe_layers(model),
        layers=model.num_hidden_layers,
        window_layers=model.sliding_window_layers,
        window=model.sliding_window,
        hidden=model.hidden_size,
        intermediate=model.intermediate_size,
        vocab=model.vocab_size,
        attention_width=architecture.attention_width(model),
        kv_bytes_per_token_layer=memory.kv_bytes_per_token_per_layer(model, plan.model.kv_dtype),
        kv_shard_limit=1 if model.attention == "mla" else model.num_key_value_heads,
        memory_gib=gpu.memory_gib,
        visible_gib=engines.visible_gib(gpu.memory_gib, gpu.cuda_visible_gib),
        peak_tflops=peak,
        attention_peak_tflops=gpu.bf16_tflops,
        hbm_tbps=gpu.hbm_tbps,
        link_gbps=gpu.link_gbps(),
        link_latency_s=gpu.collective_latency_s(),
        gpus_per_node=plan.hardware.gpus_per_node,
        usd_per_gpu_hour=usd_per_gpu_hour,
        fixed_usd_per_month=fixed_usd_per_month,
        hours_per_month=plan.hardware.hours_per_month,
        bill_purchased=bool(own) or plan.hardware.billing == "purchased",
        ops_usd_per_month=plan.hardware.ops_usd_per_month,
        mfu=eff["mfu"],
        prefill_mfu=eff["prefill_mfu"],
        decode_mfu=eff["decode_mfu"],
        memory_utilisation=plan.policy.memory_utilisation,
        overhead_gib=plan.policy.overhead_gib,
        bandwidth_efficiency=eff["bandwidth_efficiency"],
        redundancy=plan.policy.redundancy,
        worst_case_memory=plan.policy.memory_convention == "worst_case",
        include_ttft=plan.policy.include_ttft_in_time_in_system,
        decode_attention=plan.policy.decode_attention_flops,
        tp_options=tp_options(plan),
        engine=plan.policy.engine,
        max_num_batched_tokens=float(tokens),
        max_num_seqs=float(seqs),
        step_overhead_s=eff["step_overhead_s"],
        expert_efficiency=eff["expert_efficiency"],
        expert_parallel=plan.policy.expert_parallel,
        attention_data_parallel=plan.policy.attention_data_parallel,
        causal_attention=plan.policy.attention_flops == "causal",
        latency_with_prefill=plan.policy.latency_step == "with_prefill",
        api_usd_per_mtok_input=api.usd_per_mtok_input,
        api_usd_per_mtok_output=api.usd_per_mtok_output,
    )
