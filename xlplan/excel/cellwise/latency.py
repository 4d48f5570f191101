"""The latency and queueing paths as spreadsheet-sized functions: time in system, the largest batch, replicas.

Part of :mod:`xlplan.excel.cellwise`; the largest decode batch is the serving
model's (:func:`xlplan.serving.step.step_time_s`, :func:`xlplan.serving.batch_search.max_batch_within`), the queue Erlang C's.

References
----------
Runbook, document 14, step 3 · "in flight = arrival rate × time in system". Erlang C and the Allen–Cunneen factor:
:func:`xlplan.serving.queueing.replicas_for_wait`.
"""

from __future__ import annotations

import functools

from xlplan import fleet
from xlplan.catalog.specs import GPUSpec, ModelSpec
from xlplan.excel.cellwise.inputs import gpu_spec, mean_length, model_spec
from xlplan.plan import latency_step, replica_at_tp, steps
from xlplan.plan.scenario import resolve
from xlplan.schema.plan import Plan
from xlplan.serving import batch_search, concurrency, latency, step_inputs
from xlplan.serving import step as serving


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
    of prompts, ``prefill_tokens_per_output`` prompt tokens per decoded token; :func:`xlplan.serving.step.step_time_s`
    times it and :func:`xlplan.serving.batch_search.max_batch_within` finds the largest batch within ``itl_s``.

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Chunked prefill sharing steps with decode:
    Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    s = resolve(_decode_batch_plan(model_spec(model), gpu_spec(gpu), itl_s, tp, weights_dtype, kv_dtype, mfu,
                                   bandwidth_efficiency, compute_dtype, prefill_tokens_per_output, step_overhead_s))
    tr = steps.traffic(s)
    r = replica_at_tp.replica(s, tp)
    keys = tr.prefill_keys_per_request / max(prefill_tokens_per_output, 1.0) * prefill_tokens_per_output
    step = functools.partial(_step_s, r, context_tokens, prefill_tokens_per_output, keys)
    return batch_search.max_batch_within(step, itl_s, float(latency_step.RUNBOOK_BATCH_CAP))


def _step_s(r, context_tokens: float, prefill_tokens_per_output: float, keys: float, b):
    """The step of ``b`` decodes over ``context_tokens`` each, with their share of prefill beside them. [s]"""
    load = step_inputs.mixed_step(b, context_tokens, b * prefill_tokens_per_output, b * keys, b * keys, 0.0, r.window)
    return serving.step_time_s(r, load)


def _decode_batch_plan(m: ModelSpec, g: GPUSpec, itl_s: float, tp: int, weights_dtype: str, kv_dtype: str, mfu: float,
                       bandwidth_efficiency: float, compute_dtype: str, prefill_tokens_per_output: float,
                       step_overhead_s: float) -> Plan:
    """The plan whose one replica :func:`max_decode_batch` times: the runbook's engine at the given efficiencies. [Plan]"""
    return Plan.model_validate({
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
                      percentile: float = 95.0, tail_replicas: int = 0, arrival_cv2: float = 1.0,
                      prefill_replicas: int = 0, routing: str = "least_loaded", slots: float = 1.0) -> float:
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
    prefill_replicas : int
        Replicas each replica's own prefill queue needs, where a whole prompt fits one step (0 where prompts are
        chunked; :func:`xlplan.plan.queue_path.prefill_queue`). [replicas]
    routing : str
        The load balancer's rule (``policy.routing``): 'least_loaded' and 'least_kv' pool the replicas as one queue's servers;
        'round_robin' and 'random' make each replica an M/M/c queue of its own over its ``slots``. [text]
    slots : float
        Decodes one replica's step carries within the inter-token target (routed queues only). [sequences]

    Returns
    -------
    float
        The largest of Erlang C's answer (exponential service, the Allen–Cunneen factor ``(cₐ² + 1) ÷ 2``),
        ``tail_replicas`` and ``prefill_replicas``; +inf when no fleet keeps the wait (a negative target). [replicas]

    References
    ----------
    Erlang C and the Allen–Cunneen factor: :func:`xlplan.serving.queueing.replicas_for_wait`.
    """
    from xlplan.serving import queueing

    n = queueing.replicas_for_wait(routing, slots, arrival_rate_rps, 1.0 / service_rps_per_replica, wait_target_s,
                                   percentile, arrival_cv2, queueing.SERVICE_CV2)
    return float("inf") if n is None else float(max(n, int(tail_replicas), int(prefill_replicas)))
