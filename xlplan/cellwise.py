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
    engines,
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
    """Mean of the lognormal fitted through the percentiles: shown, never entered. [tokens]

    Parameters
    ----------
    p50 : float
        Median length. [tokens]
    p95 : float
        95th-percentile length, at least ``p50``. [tokens]
    p99 : float, optional
        99th-percentile length, at least ``p95``; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        ``E[n]`` of the lognormal fitted through the percentiles (:func:`xlplan.distributions.length_moments`). [tokens]
    """
    return distributions.length_moments(p50, p95, p99)[0]


def time_in_system_s(output_p50: float, output_p95: float, itl_s: float, output_p99: float | None = None,
                     ttft_s: float = 0.0) -> float:
    """Mean time a request occupies a slot: E[output] × ITL (+ TTFT). [s]

    Parameters
    ----------
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    itl_s : float
        Inter-token latency target. [s/token]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]
    ttft_s : float
        Time to first token to add; the runbook leaves it out (0). [s]

    Returns
    -------
    float
        Mean time in system: the fitted mean output × ``itl_s`` + ``ttft_s``. [s]

    References
    ----------
    Runbook, document 14, step 3 · "in flight = arrival rate × time in system"; "40 req/s × 15 s = 600 in flight".

    Examples
    --------
    >>> time_in_system_s(300, 300, 0.05, 300)
    15.0
    """
    return concurrency.time_in_system_s(mean_length(output_p50, output_p95, output_p99), itl_s, ttft_s)


def params(model: str | ModelSpec, which: str = "total") -> int:
    """Parameters derived from the config: 'total' (in memory) or 'active' (per token). [parameters]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    which : {'total', 'active'}
        'total' counts every parameter held in memory; 'active' those one token passes through (MoE).

    Returns
    -------
    int
        Parameters counted layer by layer from the config. [parameters]
    """
    m = _model(model)
    if which == "total":
        return architecture.total_params(m)
    if which == "active":
        return architecture.active_params(m)
    raise ValueError(f"which: got {which!r}; expected 'total' or 'active'")


def kv_bytes_per_token(model: str | ModelSpec, kv_dtype: str = "bf16") -> float:
    """KV cache per token with every layer full-length. [bytes/token]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    kv_dtype : str
        KV-cache precision: 'bf16', 'fp16', 'fp8', 'int8' or 'fp32'.

    Returns
    -------
    float
        KV cache per token over all layers, sliding windows ignored. [bytes/token]
    """
    return memory.kv_bytes_per_token(_model(model), kv_dtype)


def kv_gib_per_conversation(model: str | ModelSpec, conversation_tokens: float, kv_dtype: str = "bf16") -> float:
    """KV cache one conversation of prompt + output tokens holds (sliding windows respected). [GiB]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    conversation_tokens : float
        Prompt plus output tokens the cache is sized at (p50 + p50 in the runbook). [tokens]
    kv_dtype : str
        KV-cache precision: 'bf16', 'fp16', 'fp8', 'int8' or 'fp32'.

    Returns
    -------
    float
        KV cache of one conversation; sliding-window layers hold at most their window. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".

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
    """Weight footprint of the whole model. [GiB]

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    weights_dtype : str
        Weight precision: 'bf16', 'fp16', 'fp8', 'int8', 'int4', 'mxfp4', 'nvfp4', 'fp4' or 'fp32'.

    Returns
    -------
    float
        Weights of the whole model, block-scale overhead included. [GiB]
    """
    return memory.weights_gib(_model(model), weights_dtype)


def gpu_memory_gib(gpu: str | float) -> float:
    """A GPU's memory as the driver reports it, or a number passed through. [GiB]

    Parameters
    ----------
    gpu : str or float
        Catalog GPU name (e.g. 'h100-sxm'), or its memory as the driver reports it. [GiB]

    Returns
    -------
    float
        The GPU's memory as the driver reports it, or ``gpu`` itself. [GiB]
    """
    return float(gpu) if isinstance(gpu, (int, float)) else _gpu(gpu).memory_gib


def kv_budget_gib(gpu: str | float, weights_gib_per_gpu: float, memory_utilisation: float, overhead_gib: float,
                  engine: str = "runbook", activation_gib: float = 0.0, tp: int = 1,
                  visible_gib: float | None = None) -> float:
    """KV room per GPU by the engine's memory rule (the runbook's: memory × utilisation − weights − overhead). [GiB]

    Parameters
    ----------
    gpu : str or float
        Catalog GPU name, or its memory as the driver reports it. [GiB]
    weights_gib_per_gpu : float
        This GPU's share of the weights. [GiB]
    memory_utilisation : float
        Fraction of memory the server may use (vLLM ``gpu_memory_utilization``; 0.90, not 90). [fraction]
    overhead_gib : float
        The runbook's stated overhead per GPU (its rule only). [GiB]
    engine : {'runbook', 'vllm', 'sglang', 'trtllm'}
        Whose rule (:func:`xlplan.engines.kv_budget_gib`).
    activation_gib : float
        The engine's activation peak or workspace (vLLM, TensorRT-LLM; :func:`xlplan.steps.activation_gib`). [GiB]
    tp : int
        GPUs per replica: the non-torch memory grows past one. [GPUs]
    visible_gib : float, optional
        Memory CUDA can allocate; left out, the catalog's measured figure for a named GPU, else the driver's total
        less the driver's reserve (:func:`xlplan.engines.visible_gib`). [GiB]

    Returns
    -------
    float
        KV room per GPU by that rule; negative when the weights do not fit. [GiB]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".
    The budget: 0.9 × 79.65 − 14.96 − 3.0 = 53.73 GiB on the H100; vLLM's start-up log (K01): 0.9 × 79.18 − 14.99 −
    4.76 − 0.13 = 51.38 GiB.
    """
    if isinstance(gpu, (int, float)):
        memory_gib, visible = float(gpu), engines.visible_gib(float(gpu))
    else:
        spec = _gpu(gpu)
        memory_gib, visible = spec.memory_gib, engines.visible_gib(spec.memory_gib, spec.cuda_visible_gib)
    if visible_gib is not None:
        visible = float(visible_gib)
    return engines.kv_budget_gib(engine, memory_gib, visible, memory_utilisation, weights_gib_per_gpu, overhead_gib,
                                 activation_gib, tp)


def memory_gpus(concurrency_: float, kv_gib_per_conversation_: float, kv_budget_gib_: float, tp: int = 1, kv_shards: int = 1) -> float:
    """The memory path in whole replicas of ``tp`` GPUs. [GPUs]

    Parameters
    ----------
    concurrency_ : float
        Requests in flight. [requests]
    kv_gib_per_conversation_ : float
        KV cache per conversation. [GiB]
    kv_budget_gib_ : float
        KV room per GPU. [GiB]
    tp : int
        GPUs per replica (tensor-parallel degree). [GPUs]
    kv_shards : int
        Ways the cache splits across the replica: min(TP, KV heads); 1 for MLA. [GPUs]

    Returns
    -------
    float
        ``tp × concurrency ÷ (kv_shards × budget ÷ KV per conversation)``, rounded up to whole replicas. [GPUs]

    References
    ----------
    Runbook, document 14, step 4 · "The memory path: 600 × 0.281 GiB = 168.5 GiB ÷ 53.73 GiB per GPU".

    Examples
    --------
    The runbook: 600 × 0.281 GiB ÷ 53.73 GiB = 3.14 -> 4.

    >>> memory_gpus(600, 0.28076171875, 53.73)
    4.0
    """
    exact = memory.memory_gpus_exact(concurrency_, kv_gib_per_conversation_, kv_budget_gib_, tp, kv_shards)
    return fleet.whole_gpus(exact, tp)


def prefill_tflops(arrival_rate_rps: float, model: str | ModelSpec, prompt_p50: float, prompt_p95: float,
                   prompt_p99: float | None = None, prefix_reuse: float = 0.0, attention_flops: str = "full") -> float:
    """Prefill demand at the peak rate over the fitted prompt distribution. [TFLOP/s]

    Parameters
    ----------
    arrival_rate_rps : float
        Peak arrival rate. [requests/s]
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    prefix_reuse : float
        Measured fraction of prompt compute served from the prefix cache; 0 unless measured. [fraction]
    attention_flops : {'full', 'causal'}
        The attention convention: every query-key pair, ``E[n²]`` (the runbook's), or the causal half,
        ``(E[n²] + E[n])/2`` (the engine's default, ``policy.attention_flops``).

    Returns
    -------
    float
        ``rate × (2·N_active·E[n] + 4·width·layers·K) × (1 − reuse)`` with ``K`` the key pairs by that convention,
        sliding windows respected. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    m = _model(model)
    mean, second = distributions.length_moments(prompt_p50, prompt_p95, prompt_p99)
    per_request = compute.prefill_flops_per_request(
        float(architecture.active_params(m)), mean, second, m.num_hidden_layers, architecture.attention_width(m),
        m.sliding_window_layers, m.sliding_window, attention_flops == "causal",
    )
    return compute.prefill_tflops(arrival_rate_rps, per_request, prefix_reuse)


def decode_tflops(arrival_rate_rps: float, model: str | ModelSpec, output_p50: float, output_p95: float,
                  output_p99: float | None = None) -> float:
    """Decode demand at the peak rate: rate × E[output] × 2·N_active (the runbook's convention). [TFLOP/s]

    Parameters
    ----------
    arrival_rate_rps : float
        Peak arrival rate. [requests/s]
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        ``rate × E[output] × 2·N_active``, attention left out as the runbook does. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    m = _model(model)
    per_token = compute.decode_flops_per_token(float(architecture.active_params(m)))
    return compute.decode_tflops(arrival_rate_rps, mean_length(output_p50, output_p95, output_p99), per_token)


def peak_tflops(gpu: str | float, compute_dtype: str = "bf16") -> float:
    """A GPU's dense peak for a dtype, or a number passed through. [TFLOP/s]

    Parameters
    ----------
    gpu : str or float
        Catalog GPU name, or its dense peak. [TFLOP/s]
    compute_dtype : str
        Tensor-core dtype of the peak for a named GPU: 'bf16', 'fp8' or 'fp4'.

    Returns
    -------
    float
        Dense peak per GPU (sparse figures halved), or ``gpu`` itself. [TFLOP/s]
    """
    if isinstance(gpu, (int, float)):
        return float(gpu)
    g = _gpu(gpu)
    peak = g.peak_tflops(compute_dtype)
    if peak is None:
        raise ValueError(f"compute_dtype: {g.name} has no {compute_dtype} peak; expected bf16 or a dtype it supports")
    return peak


def compute_gpus(demand_tflops: float, gpu: str | float, mfu: float, tp: int = 1, compute_dtype: str = "bf16") -> float:
    """The compute path in whole replicas: demand ÷ (peak × MFU). [GPUs]

    Parameters
    ----------
    demand_tflops : float
        Prefill plus decode demand at peak. [TFLOP/s]
    gpu : str or float
        Catalog GPU name, or its dense peak. [TFLOP/s]
    mfu : float
        Achieved fraction of peak (0.40, not 40). [fraction]
    tp : int
        GPUs per replica. [GPUs]
    compute_dtype : str
        Tensor-core dtype of the peak for a named GPU: 'bf16', 'fp8' or 'fp4'.

    Returns
    -------
    float
        ``demand ÷ (peak × MFU)``, rounded up to whole replicas. [GPUs]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".

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

    Parameters
    ----------
    model : str or ModelSpec
        Catalog model name, Hugging Face id or alias (e.g. 'llama-3.1-8b'), or a model spec.
    gpu : str or GPUSpec
        Catalog GPU name, or a GPU spec.
    itl_s : float
        Inter-token latency target. [s/token]
    context_tokens : float
        Mean cached context of each decoding sequence: its prompt plus half its output. [tokens]
    tp : int
        GPUs per replica. [GPUs]
    weights_dtype : str
        Weight precision, e.g. 'bf16', 'fp8', 'int4'.
    kv_dtype : str
        KV-cache precision, e.g. 'bf16', 'fp8'.
    mfu : float
        Achieved fraction of peak FLOP/s (0.40, not 40). [fraction]
    bandwidth_efficiency : float
        Achieved fraction of HBM bandwidth (0.60, not 60). [fraction]
    compute_dtype : str
        Tensor-core dtype of the peak: 'bf16', 'fp8' or 'fp4'.
    prefill_tokens_per_output : float
        Prompt tokens prefilled per decoded token in the same steps, E[prompt] ÷ E[output]; 0 for decode alone. [tokens/token]
    step_overhead_s : float
        Fixed time per engine step (scheduling, launches, sampling). [s]

    Returns
    -------
    float
        The largest batch, fractional; 0 when not even one sequence meets ``itl_s``. [sequences]

    Notes
    -----
    The step carries the batch's decodes, each over ``context_tokens`` of cache, and (chunked prefill) their share
    of prompts, ``prefill_tokens_per_output`` prompt tokens per decoded token; :func:`xlplan.serving.step_time_s`
    times it and :func:`xlplan.serving.max_batch_within` finds the largest batch within ``itl_s``.

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Chunked prefill sharing steps with decode:
    Agrawal et al., "Sarathi-Serve", OSDI 2024.
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
    """The latency path in whole replicas: concurrency ÷ the batch each replica can carry. [GPUs]

    Parameters
    ----------
    concurrency_ : float
        Requests in flight. [requests]
    max_decode_batch_ : float
        Largest batch per replica within the inter-token target. [sequences]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    float
        ``tp × concurrency ÷ max batch``, rounded up to whole replicas; +inf when the batch is 0. [GPUs]
    """
    return fleet.whole_gpus(latency.latency_gpus_exact(concurrency_, max_decode_batch_, tp), tp)


def queueing_replicas(arrival_rate_rps: float, service_rps_per_replica: float, wait_target_s: float,
                      percentile: float = 95.0, tail_replicas: int = 0, arrival_cv2: float = 1.0) -> float:
    """The queueing path: the fewest replicas whose wait for a slot at the percentile fits the target. [replicas]

    Parameters
    ----------
    arrival_rate_rps : float
        Peak arrival rate. [requests/s]
    service_rps_per_replica : float
        Requests one replica serves per second at the promise. [requests/s]
    wait_target_s : float
        Longest wait allowed: the TTFT target less the prompt's prefill. [s]
    percentile : float
        The promise's percentile. [percent]
    tail_replicas : int
        Replicas the long-prefill-step limit needs (0 where it never binds). [replicas]
    arrival_cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson. [1]

    Returns
    -------
    float
        The larger of Erlang C's answer (exponential service, the Allen–Cunneen factor ``(cₐ² + 1) ÷ 2``) and
        ``tail_replicas``; +inf when no fleet keeps the wait (a negative target). [replicas]

    References
    ----------
    Erlang C and the Allen–Cunneen factor: :func:`xlplan.queueing.servers_for_wait`.
    """
    from xlplan import queue_path, queueing

    n = queueing.servers_for_wait(arrival_rate_rps, 1.0 / service_rps_per_replica, wait_target_s, percentile,
                                  arrival_cv2, queue_path.SERVICE_CV2)
    return float("inf") if n is None else float(max(n, int(tail_replicas)))


def binding(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0) -> str:
    """Which path binds: 'memory', 'compute', 'latency', 'both' or 'all'. [text]

    Parameters
    ----------
    memory_gpus_ : float
        The memory path. [GPUs]
    compute_gpus_ : float
        The compute path. [GPUs]
    latency_gpus_ : float
        The latency path; 0 to compare memory and compute only. [GPUs]

    Returns
    -------
    str
        The path that needs the most GPUs; 'both' when two tie for the most, 'all' when three do.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8".
    """
    return fleet.binding_constraint(memory_gpus_, compute_gpus_, latency_gpus_)[0]


def fleet_sizes(memory_gpus_: float, compute_gpus_: float, latency_gpus_: float = 0.0, tp: int = 1, redundancy: int = 1,
                gpus_per_node: int = 8) -> tuple[float, float, float]:
    """The three numbers: load, with redundancy, purchased. [GPUs]

    Parameters
    ----------
    memory_gpus_ : float
        The memory path. [GPUs]
    compute_gpus_ : float
        The compute path. [GPUs]
    latency_gpus_ : float
        The latency path. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    redundancy : int
        Spare replicas (N+k). [replicas]
    gpus_per_node : int
        The purchasing unit. [GPUs]

    Returns
    -------
    load : float
        GPUs the largest path needs. [GPUs]
    with_redundancy : float
        The load plus the spare replicas. [GPUs]
    purchased : float
        ``with_redundancy`` rounded up to whole nodes. [GPUs]

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8".

    Examples
    --------
    >>> fleet_sizes(4, 4, 3)
    (4.0, 5.0, 8.0)
    """
    load_replicas = max(memory_gpus_, compute_gpus_, latency_gpus_) / tp
    return fleet.fleet_sizes(load_replicas, tp, redundancy, gpus_per_node)


def monthly_cost_usd(gpus: float, usd_per_gpu_hour: float, hours_per_month: float) -> float:
    """GPUs × price × hours. [USD/month]

    Parameters
    ----------
    gpus : float
        GPUs on the bill. [GPUs]
    usd_per_gpu_hour : float
        Price paid per GPU. [USD/GPU-hour]
    hours_per_month : float
        Billed hours per month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float
        Fixed monthly infrastructure cost. [USD/month]

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month".
    """
    return cost.monthly_cost_usd(gpus, usd_per_gpu_hour, hours_per_month)


def tokens_per_month(arrival_rate_rps: float, prompt_p50: float, prompt_p95: float, output_p50: float, output_p95: float,
                     average_utilisation: float, prompt_p99: float | None = None, output_p99: float | None = None,
                     hours_per_month: float = 730.0) -> float:
    """Tokens served in a month at the average utilisation, prompt and output means fitted. [tokens/month]

    Parameters
    ----------
    arrival_rate_rps : float
        Peak arrival rate. [requests/s]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    average_utilisation : float
        Average load over the month as a fraction of peak (0.40, not 40). [fraction]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]
    hours_per_month : float
        Hours in the month. [h/month]

    Returns
    -------
    float
        ``rate × (E[prompt] + E[output]) × utilisation × hours × 3600``. [tokens/month]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month, ~$0.11 per million
    tokens".

    Examples
    --------
    The runbook: 40 × 2,300 × 0.40 × 730 × 3,600 = 96.7 billion.

    >>> f"{tokens_per_month(40, 2000, 2000, 300, 300, 0.40):.4g}"
    '9.671e+10'
    """
    tokens = mean_length(prompt_p50, prompt_p95, prompt_p99) + mean_length(output_p50, output_p95, output_p99)
    return cost.tokens_per_month(arrival_rate_rps, tokens, average_utilisation, hours_per_month)


def usd_per_mtok(monthly_usd: float, tokens_per_month_: float) -> float:
    """Cost per million tokens of all kinds. [USD/Mtok]

    Parameters
    ----------
    monthly_usd : float
        Monthly cost. [USD/month]
    tokens_per_month_ : float
        Tokens of all kinds served in the same month. [tokens/month]

    Returns
    -------
    float
        ``monthly_usd × 10**6 ÷ tokens``; +inf when no tokens are served. [USD/Mtok]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month, ~$0.11 per million
    tokens".
    """
    return cost.usd_per_mtok(monthly_usd, tokens_per_month_)


def api_blended_usd_per_mtok(usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float, prompt_p95: float,
                             output_p50: float, output_p95: float, prompt_p99: float | None = None,
                             output_p99: float | None = None) -> float:
    """An API's price at this traffic's input/output mix. [USD/Mtok]

    Parameters
    ----------
    usd_per_mtok_input : float
        API price of input tokens. [USD/Mtok]
    usd_per_mtok_output : float
        API price of output tokens. [USD/Mtok]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        The two prices weighted by the fitted mean prompt and output lengths. [USD/Mtok]
    """
    return cost.api_usd_per_mtok_blended(mean_length(prompt_p50, prompt_p95, prompt_p99),
                                         mean_length(output_p50, output_p95, output_p99), usd_per_mtok_input, usd_per_mtok_output)


def api_monthly_cost_usd(tokens_per_month_: float, usd_per_mtok_input: float, usd_per_mtok_output: float, prompt_p50: float,
                         prompt_p95: float, output_p50: float, output_p95: float, prompt_p99: float | None = None,
                         output_p99: float | None = None) -> float:
    """The same traffic on a managed API at separate input and output prices. [USD/month]

    Parameters
    ----------
    tokens_per_month_ : float
        Tokens served in the month. [tokens/month]
    usd_per_mtok_input : float
        API price of input tokens. [USD/Mtok]
    usd_per_mtok_output : float
        API price of output tokens. [USD/Mtok]
    prompt_p50 : float
        Median prompt length. [tokens]
    prompt_p95 : float
        95th-percentile prompt length, at least the median. [tokens]
    output_p50 : float
        Median output length. [tokens]
    output_p95 : float
        95th-percentile output length, at least the median. [tokens]
    prompt_p99 : float, optional
        99th-percentile prompt length; left out, the fit uses p95 alone. [tokens]
    output_p99 : float, optional
        99th-percentile output length; left out, the fit uses p95 alone. [tokens]

    Returns
    -------
    float
        ``tokens × blended price ÷ 10**6``. [USD/month]
    """
    blended = api_blended_usd_per_mtok(usd_per_mtok_input, usd_per_mtok_output, prompt_p50, prompt_p95, output_p50,
                                       output_p95, prompt_p99, output_p99)
    return cost.api_monthly_cost_usd(tokens_per_month_, blended)


def breakeven_tokens_per_month(monthly_usd: float, api_usd_per_mtok_blended: float, ops_usd_per_month: float = 0.0) -> float:
    """Monthly volume above which self-hosting beats the API: (fleet + ops) ÷ API price. [tokens/month]

    Parameters
    ----------
    monthly_usd : float
        Monthly cost of the fleet. [USD/month]
    api_usd_per_mtok_blended : float
        The API's price at this traffic's input/output mix. [USD/Mtok]
    ops_usd_per_month : float
        Engineering and on-call cost of self-hosting. [USD/month]

    Returns
    -------
    float
        The break-even volume; +inf when the API price is not positive. [tokens/month]
    """
    return cost.breakeven_tokens_per_month(monthly_usd + ops_usd_per_month, api_usd_per_mtok_blended)


def max_rate_rps(plan: Plan, gpus: int) -> float:
    """The highest peak rate ``gpus`` GPUs sustain under the plan's promise (the inverse question). [requests/s]

    Parameters
    ----------
    plan : Plan
        The plan; its peak rate is ignored.
    gpus : int
        GPUs serving the load, spares excluded. [GPUs]

    Returns
    -------
    float
        The closed form's capacity of the fleet, all four paths (memory, compute, latency and queueing;
        :func:`xlplan.capacity.closed_form_capacity`): what ``xlplan capacity --no-verify`` prints. [requests/s]
    """
    from xlplan.scenario import resolve

    return capacity.closed_form_capacity(resolve(plan), gpus, plan.policy.max_num_batched_tokens is not None).max_peak_rps


def gpu_field(name: str, field: str):
    """One field of a catalog GPU, e.g. 'memory_gib' or 'bf16_tflops'. [field's unit]

    Parameters
    ----------
    name : str
        Catalog GPU name or alias, e.g. 'h100-sxm'.
    field : str
        A :class:`~xlplan.specs.GPUSpec` field, e.g. 'memory_gib', 'bf16_tflops', 'hbm_tbps'.

    Returns
    -------
    float, int, str or None
        The field's value as the catalog holds it; None where the GPU has no such figure. [the field's unit]
    """
    g = catalog.get_gpu(name)
    if field not in type(g).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join(type(g).model_fields)}")
    return getattr(g, field)


MODEL_DERIVED_FIELDS = ("total_params", "active_params")


def model_field(name: str, field: str):
    """One field of a catalog model (config.json names), or a derived 'total_params' / 'active_params'. [field's unit]

    Parameters
    ----------
    name : str
        Catalog model name, Hugging Face id or alias.
    field : str
        A :class:`~xlplan.specs.ModelSpec` field (config.json names, e.g. 'num_hidden_layers'), or one of
        :data:`MODEL_DERIVED_FIELDS`.

    Returns
    -------
    float, int, str or None
        The field's value as the catalog holds it, or the derived count; None where the model has no such figure.
        [the field's unit]
    """
    m = catalog.get_model(name)
    if field in MODEL_DERIVED_FIELDS:
        return params(m, field.split("_", 1)[0])
    if field not in type(m).model_fields:
        raise ValueError(f"field: got {field!r}; expected one of {', '.join([*type(m).model_fields, *MODEL_DERIVED_FIELDS])}")
    return getattr(m, field)
