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


@dataclass(frozen=True, slots=True)
class Scenario:
    """Numeric inputs of the seven steps. Units as in the field comments."""

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
    # model
    active_params: float  # [parameters]
    weights_bytes: float  # [bytes]
    layers: int  # [layers]
    window_layers: int  # [layers]
    window: int | None  # [tokens]
    attention_width: int  # [elements]
    kv_bytes_per_token_layer: float  # [bytes/token/layer]
    kv_shard_limit: int  # [GPUs] KV heads (GQA), 1 (MLA)
    # hardware
    memory_gib: float  # [GiB]
    peak_tflops: float  # [TFLOP/s]
    hbm_tbps: float  # [TB/s]
    gpus_per_node: int  # [GPUs]
    usd_per_gpu_hour: float  # [USD/GPU-hour]
    hours_per_month: float  # [h/month]
    bill_purchased: bool
    ops_usd_per_month: float  # [USD/month]
    # policy
    mfu: float  # [fraction]
    prefill_mfu: float  # [fraction]
    decode_mfu: float  # [fraction]
    memory_utilisation: float  # [fraction]
    overhead_gib: float  # [GiB]
    bandwidth_efficiency: float  # [fraction]
    redundancy: int  # [replicas]
    worst_case_memory: bool
    include_ttft: bool
    decode_attention: bool
    tp_options: tuple[int, ...]  # [GPUs]
    # api
    api_usd_per_mtok_input: float | None  # [USD/Mtok]
    api_usd_per_mtok_output: float | None  # [USD/Mtok]


def compute_dtype(plan: Plan, gpu: GPUSpec) -> str:
    """The tensor-core dtype whose peak the compute path uses."""
    if plan.policy.compute_dtype is not None:
        return plan.policy.compute_dtype
    return weights_compute_dtype(plan.model.weights_dtype, gpu)


def weights_compute_dtype(w: str, gpu: GPUSpec) -> str:
    """The peak a weight format runs at: fp8 for fp8 weights, fp4 for fp4 weights where the GPU has it, else bf16."""
    if w == "fp8" and gpu.fp8_tflops:
        return "fp8"
    if w in ("fp4", "nvfp4", "mxfp4") and gpu.fp4_tflops:
        return "fp4"
    return "bf16"


def tp_options(plan: Plan) -> tuple[int, ...]:
    """Tensor-parallel degrees the planner may choose from. [GPUs]"""
    if plan.policy.tp is not None:
        return (plan.policy.tp,)
    node = plan.hardware.gpus_per_node
    return tuple(t for t in TP_DEGREES if t <= node and node % t == 0)


def resolve(plan: Plan) -> Scenario:
    """Reduce a plan to the numbers the steps need."""
    model: ModelSpec = plan.model.resolve()
    gpu: GPUSpec = plan.hardware.resolve()
    dtype = compute_dtype(plan, gpu)
    peak = gpu.peak_tflops(dtype)
    if peak is None:
        raise ValueError(f"policy.compute_dtype: {gpu.name} has no {dtype} peak in the catalog; expected bf16 or a dtype it supports")
    f, p, o = plan.forecast, plan.forecast.prompt_tokens, plan.forecast.output_tokens
    api = plan.api
    return Scenario(
        peak_rps=f.peak_rps,
        prompt_p50=p.p50, prompt_p95=p.p95, prompt_p99=p.p99,
        output_p50=o.p50, output_p95=o.p95, output_p99=o.p99,
        average_utilisation=f.average_utilisation,
        prefix_reuse=f.prefix_reuse,
        ttft_s=plan.promise.ttft_s,
        itl_s=plan.promise.itl,
        active_params=float(architecture.active_params(model)),
        weights_bytes=memory.weights_bytes(model, plan.model.weights_dtype),
        layers=model.num_hidden_layers,
        window_layers=model.sliding_window_layers,
        window=model.sliding_window,
        attention_width=architecture.attention_width(model),
        kv_bytes_per_token_layer=memory.kv_bytes_per_token_per_layer(model, plan.model.kv_dtype),
        kv_shard_limit=1 if model.attention == "mla" else model.num_key_value_heads,
        memory_gib=gpu.memory_gib,
        peak_tflops=peak,
        hbm_tbps=gpu.hbm_tbps,
        gpus_per_node=plan.hardware.gpus_per_node,
        usd_per_gpu_hour=plan.hardware.price(),
        hours_per_month=plan.hardware.hours_per_month,
        bill_purchased=plan.hardware.billing == "purchased",
        ops_usd_per_month=plan.hardware.ops_usd_per_month,
        mfu=plan.policy.mfu,
        prefill_mfu=plan.policy.prefill_mfu or plan.policy.mfu,
        decode_mfu=plan.policy.decode_mfu or plan.policy.mfu,
        memory_utilisation=plan.policy.memory_utilisation,
        overhead_gib=plan.policy.overhead_gib,
        bandwidth_efficiency=plan.policy.bandwidth_efficiency,
        redundancy=plan.policy.redundancy,
        worst_case_memory=plan.policy.memory_convention == "worst_case",
        include_ttft=plan.policy.include_ttft_in_time_in_system,
        decode_attention=plan.policy.decode_attention_flops,
        tp_options=tp_options(plan),
        api_usd_per_mtok_input=api.usd_per_mtok_input if api else None,
        api_usd_per_mtok_output=api.usd_per_mtok_output if api else None,
    )
