"""The engine's steps as spreadsheet-sized functions: numbers and catalog names in, one answer out.

The Excel functions in ``udfs/`` are one call each into this module, so a cell's
answer is the engine's. Each function composes the domain modules
(:mod:`~xlplan.concurrency`, :mod:`~xlplan.memory`, :mod:`~xlplan.compute`,
:mod:`~xlplan.latency`, :mod:`~xlplan.fleet`, :mod:`~xlplan.cost`) on catalog
look-ups; none has a formula of its own. Lengths are always given as
percentiles, so a superlinear cost sees the fitted distribution, never the mean.

References
----------
Runbook, document 14, "From a forecast to a purchase order", steps 3-7.
"""

from __future__ import annotations

from xlplan import (
    architecture,
    capacity,
    catalog,
    compute,
    concurrency,
    cost,
    distributions,
    fleet,
    latency,
    memory,
)
from xlplan.plan import Plan
from xlplan.specs import GPUSpec, ModelSpec
from xlplan.units import GIB


def _model(model: str | ModelSpec) -> ModelSpec:
    return model if isinstance(model, ModelSpec) else catalog.get_model(model)


def _gpu(gpu: str | GPUSpec) -> GPUSpec:
    return gpu if isinstance(gpu, GPUSpec) else catalog.get_gpu(gpu)


def mean_length(p50: float, p95: float, p99: float | None = None) -> float:
    """Mean of the lognormal fitted through the percentiles: shown, never entered. [tokens]"""
    return distributions.length_moments(p50, p95, p99)[0]


def time_in_system_s(output_p50: float, output_p95: float, itl_s: float, output_p99: float | None = None,
                     ttft_s: float = 0.0) -> float:
    """Mean time a request occupies a slot: E[output] × ITL (+ TTFT). [s]

    Examples
    --------
    >>> time_in_system_s(300, 300, 0.05, 300)
    15.0
    """
    return concurrency.time_in_system_s(mean_length(output_p50, output_p95, output_p99), itl_s, ttft_s)


def params(model: str | ModelSpec, which: str = "total") -> int:
    """Parameters derived from the config: 'total' (in memory) or 'active' (per token). [parameters]"""
    m = _model(model)
    if which == "total":
        return architecture.total_params(m)
    if which == "active":
        return architecture.active_params(m)
    raise ValueError(f"which: got {which!r}; expected 'total' or 'active'")


def kv_bytes_per_token(model: str | ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV cache per token with every layer full-length. [bytes/token]"""
    return memory.kv_bytes_per_token(_model(model), kv_dtype)


def kv_gib_per_conversation(model: str | ModelSpec, conversation_tokens: float, kv_dtype: str = "bf16") -> float:
    """KV cache one conversation of prompt + output tokens holds (sliding windows respected). [GiB]

    Examples
    --------
    The runbook: Llama-3.1-8B, 2,300 tokens in bf16 = 0.281 GiB.

    >>> round(kv_gib_per_conversation("llama-3.1-8b", 2300), 3)
    0.281
    """
    return _kv_bytes_per_conversation(_model(model), conversation_tokens, kv_dtype) / GIB


def _kv_bytes_per_conversation(m: ModelSpec, tokens: float, kv_dtype: str) -> float:
    per_layer = memory.kv_bytes_per_token_per_layer(m, kv_dtype)
    full = m.num_hidden_layers - m.sliding_window_layers
    return memory.kv_bytes_per_conversation(tokens, per_layer, full, m.sliding_window_layers, m.sliding_window)


def weights_gib(model: str | ModelSpec, weights_dtype: str = "bf16") -> float:
    """Weight footprint of the whole model. [GiB]"""
    return memory.weights_gib(_model(model), weights_dtype)


def gpu_memory_gib(gpu: str | float) -> float:
    """A GPU's memory as the driver reports it, or a number passed through. [GiB]"""
    return float(gpu) if isinstance(gpu, (int, float)) else _gpu(gpu).memory_gib


def kv_budget_gib(gpu: str | float, weights_gib_per_gpu: float, memory_utilisation: float, overhead_gib: float) -> float:
    """KV room per GPU: memory × utilisation − weights − overhead. [GiB]"""
    return memory.kv_budget_gib(gpu_memory_gib(gpu), memory_utilisation, weights_gib_per_gpu, overhead_gib)


def memory_gpus(concurrency_: float, kv_gib_per_conversation_: float, kv_budget_gib_: float, tp: int = 1, kv_shards: int = 1) -> float:
    """The memory path in whole replicas of ``tp`` GPUs. [GPUs]

    Examples
    --------
    The runbook: 600 × 0.281 GiB ÷ 53.73 GiB = 3.14 -> 4.

    >>> memory_gpus(600, 0.28076171875, 53.73)
    4.0
    """
    exact = memory.memory_gpus_exact(concurrency_, kv_gib_per_conversation_, kv_budget_gib_, tp, kv_shards)
    return fleet.whole_gpus(exact, tp)


def prefill_tflops(arrival_rate_rps: float, model: str | ModelSpec, prompt_p50: float, prompt_p95: float,
                   prompt_p99: float | None = None, prefix_reuse: float = 0.0) -> float:
    """Prefill demand at the peak rate over the fitted prompt distribution. [TFLOP/s]"""
    m = _model(model)
    mean, second = distributions.length_moments(prompt_p50, prompt_p95, prompt_p99)
    per_request = compute.prefill_flops_per_request(
        float(architecture.active_params(m)), mean, second, m.num_hidden_layers, architecture.attention_width(m),
        m.sliding_window_layers, m.sliding_window,
    )
    return compute.prefill_tflops(arrival_rate_rps, per_request, prefix_reuse)


def decode_tflops(arrival_rate_rps: float, model: str | ModelSpec, output_p50: float, output_p95: float,
                  output_p99: float | None = None) -> float:
    """Decode demand at the peak rate: rate × E[output] × 2·N_active (the runbook's convention). [TFLOP/s]"""
    m = _model(model)
    per_token = compute.decode_flops_per_token(float(architecture.active_params(m)))
    return compute.decode_tflops(arrival_rate_rps, mean_length(output_p50, output_p95, output_p99), per_token)


def peak_tflops(gpu: str | float, compute_dtype: str = "bf16") -> float:
    """A GPU's dense peak for a dtype, or a number passed through. [TFLOP/s]"""
    if isinstance(gpu, (int, float)):
        return float(gpu)
    g = _gpu(gpu)
    peak = g.peak_tflops(compute_dtype)
    if peak is None:
        raise ValueError(f"compute_dtype: {g.name} has no {compute_dtype} peak; expected bf16 or a dtype it supports")
    return peak


def compute_gpus(demand_tflops: float, gpu: str | float, mfu: float, tp: int = 1, compute_dtype: str = "bf16") -> float:
    """The compute path in whole replicas: demand ÷ (peak × MFU). [GPUs]

    Examples
    --------
    The runbook: 1,562 TFLOP/s ÷ (989 × 0.40) = 3.95 -> 4.

    >>> compute_gpus(1561.5, "h100-sxm", 0.40)
    4.0
    """
    return fleet.whole_gpus(compute.compute_gpus_exact(demand_tflops, peak_tflops(gpu, compute_dtype), mfu), tp)


def max_decode_batch(model: str | ModelSpec, gpu: str | GPUSpec, itl_s: float, context_tokens: float, tp: int,
                     weights_dtype: str, kv_dtype: str, mfu: float, bandwidth_efficiency: float,
                     compute_dtype: str = "bf16", prefill_tokens_per_output: float = 0.0, step_overhead_s: float = 0.0) -> float:
    """Largest batch one replica carries within the inter-token target, by the serving model. [sequences]

    Notes
    -----
    The step carries the batch's decodes, each over ``context_tokens`` of cache, and (chunked prefill) their share
    of prompts, ``prefill_tokens_per_output`` prompt tokens per decoded token; :func:`xlplan.serving.step_time_s`
    times it and :func:`xlplan.serving.max_batch_within` finds the largest batch within ``itl_s``.
    """
    from xlplan import serving, steps
    from xlplan.plan import Plan
    from xlplan.scenario import resolve

    m, g = _model(model), _gpu(gpu)
    plan = Plan.model_validate({
        "forecast": {"peak_rps": 1.0, "prompt_tokens": {"p50": max(prefill_tokens_per_output, 1.0), "p95": max(prefill_tokens_per_output, 1.0)},
                     "output_tokens": {"p50": 1.0, "p95": 1.0}},
        "promise": {"ttft_s": 1.0, "itl_s": itl_s},
        "model": {"name": m.name, "spec": m.model_dump(exclude_none=True), "weights_dtype": weights_dtype, "kv_dtype": kv_dtype},
        "hardware": {"gpu": {"name": g.name, **{k: v for k, v in g.model_dump(exclude_none=True).items()
                                                 if k in ("memory_gib", "bf16_tflops", "fp8_tflops", "fp4_tflops", "hbm_tbps")},
                             "usd_per_gpu_hour": 1.0}, "gpus_per_node": tp},
        "policy": {"engine": "runbook", "tp": tp, "mfu": mfu, "bandwidth_efficiency": bandwidth_efficiency,
                   "compute_dtype": compute_dtype, "step_overhead_s": step_overhead_s, "attention_flops": "causal"},
    })
    s = resolve(plan)
    tr = steps.traffic(s)
    r = steps.replica(s, tp)
    keys = tr.prefill_keys_per_request / max(prefill_tokens_per_output, 1.0) * prefill_tokens_per_output

    def step(b):
        load = serving.mixed_step(b, context_tokens, b * prefill_tokens_per_output, b * keys, b * keys, 0.0, r.window)
        return serving.step_time_s(r, load)

    return serving.max_batch_within(step, itl_s, float(steps.RUNBOOK_BATCH_CAP))


def latency_gpus(concurrency_: float, max_decode_batch_: float, tp: int = 1) -> float:
    """The latency path in whole replicas: concurrency ÷ the batch each replica can carry. [GPUs]"""
    return fleet.whole_gpus(latency.latency_gpus_exact(concurrency_, max_decode_batch_, tp), tp)


def binding(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0) -> str:
    """Which path binds: 'memory', 'compute', 'latency', 'both' or 'all'. [text]"""
    return fleet.binding_constraint(memory_gpus_, compute_gpus_, latency_gpus_)[0]


def fleet_sizes(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0, tp: int = 1, redundancy: int = 1,
                gpus_per_node: int = 8) -> tuple[float, float, float]:
    """The three numbers: load, with redundancy, purchased. [GPUs]

    Examples
    --------
    >>> fleet_sizes(4, 4, 3)
    (4.0, 5.0, 8.0)
    """
    load_replicas = max(memory_gpus_, compute_gpus_, latency_gpus_) / tp
    return fleet.fleet_sizes(load_replicas, tp, redundancy, gpus_per_node)


def monthly_cost_usd(gpus: float, usd_per_gpu_hour: float, hours_per_month: float) -> float:
    """GPUs × price × hours. [USD/month]"""
    return cost.monthly_cost_usd(gpus, usd_per_gpu_hour, hours_per_month)


def tokens_per_month(arrival_rate_rps: float, prompt_p50: float, prompt_p95: float, output_p50: float, output_p95: float,
                     average_utilisation: float, prompt_p99: float | None = None, output_p99: float | None = None,
                     hours_per_month: float = 730.0) -> float:
    """Tokens served in a month at the average utilisation, prompt and output means fitted. [tokens/month]

    Examples
    --------
    The runbook: 40 × 2,300 × 0.40 × 730 × 3,600 = 96.7 billion.

    >>> f"{tokens_per_month(40, 2000, 2000, 300, 300, 0.40):.4g}"
    '9.671e+10'
    """
    tokens = mean_length(prompt_p50, prompt_p95, prompt_p99) + mean_length(output_p50, output_p95, output_p99)
    return cost.tokens_per_month(arrival_rate_rps, tokens, average_utilisation, hours_per_month)


def usd_per_mtok(monthly_usd: float, tokens_per_month_: float) -> float:
    """Cost per million tokens of all kinds. [USD/Mtok]"""
    return cost.usd_per_mtok(monthly_usd, tokens_per_month_)


def api_blended_usd_per_mtok(usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float, prompt_p95: float,
                             output_p50: float, output_p95: float, prompt_p99: float | None = None,
                             output_p99: float | None = None) -> float:
    """An API's price at this traffic's input/output mix. [USD/Mtok]"""
    return cost.api_usd_per_mtok_blended(mean_length(prompt_p50, prompt_p95, prompt_p99),
                                         mean_length(output_p50, output_p95, output_p99), usd_per_mtok_input, usd_per_mtok_output)


def api_monthly_cost_usd(tokens_per_month_: float, usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float,
                         prompt_p95: float, output_p50: float, output_p95: float, prompt_p99: float | None = None,
                         output_p99: float | None = None) -> float:
    """The same traffic on a managed API at separate input and output prices. [USD/month]"""
    blended = api_blended_usd_per_mtok(usd_per_mtok_input, usd_per_mtok_output, prompt_p50, prompt_p95, output_p50,
                                       output_p95, prompt_p99, output_p99)
    return cost.api_monthly_cost_usd(tokens_per_month_, blended)


def breakeven_tokens_per_month(monthly_usd: float, api_usd_per_mtok_blended: float, ops_usd_per_month: float = 0.0) -> float:
    """Monthly volume above which self-hosting beats the API: (fleet + ops) ÷ API price. [tokens/month]"""
    return cost.breakeven_tokens_per_month(monthly_usd + ops_usd_per_month, api_usd_per_mtok_blended)


def max_rate_rps(plan: Plan, gpus: int) -> float:
    """The highest peak rate ``gpus`` GPUs sustain under the plan's promise (the inverse question). [requests/s]"""
    from xlplan.scenario import resolve

    return capacity.capacity(resolve(plan), gpus).max_peak_rps


def gpu_field(name: str, field: str):
    """One field of a catalog GPU, e.g. 'memory_gib' or 'bf16_tflops'. [field's unit]"""
    g = catalog.get_gpu(name)
    if field not in type(g).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join(type(g).model_fields)}")
    return getattr(g, field)


MODEL_DERIVED_FIELDS = ("total_params", "active_params")


def model_field(name: str, field: str):
    """One field of a catalog model (config.json names), or a derived 'total_params' / 'active_params'. [field's unit]"""
    m = catalog.get_model(name)
    if field in MODEL_DERIVED_FIELDS:
        return params(m, field.split("_", 1)[0])
    if field not in type(m).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join([*type(m).model_fields, *MODEL_DERIVED_FIELDS])}")
    return getattr(m, field)
