"""The compute path as spreadsheet-sized functions: prefill and decode demand, a GPU's peak, GPUs at an MFU.

Part of :mod:`xlplan.excel.cellwise`; each composes :mod:`xlplan.serving.compute` on
catalog look-ups and the fitted length distributions.

References
----------
Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
"""

from __future__ import annotations

from xlplan import distributions, fleet
from xlplan.catalog import parameters
from xlplan.catalog.specs import ModelSpec
from xlplan.excel.cellwise.inputs import gpu_spec, mean_length, model_spec
from xlplan.serving import compute


def prefill_tflops(arrival_rate_rps: float, model: str | ModelSpec, prompt_p50: float, prompt_p95: float,
                   prompt_p99: float | None = None, prefix_reuse: float = 0.0, attention_flops: str = "causal") -> float:
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
    attention_flops : {'causal', 'full'}
        The plan's ``policy.attention_flops``: the causal half of the query-key pairs, ``(E[n²] + E[n])/2`` (the
        default, as a plan that states none), or every pair, ``E[n²]`` (the runbook's, the reference plan's).

    Returns
    -------
    float
        ``rate × (2·N_active·E[n] + 4·width·layers·K) × (1 − reuse)`` with ``K`` the key pairs by that convention,
        sliding windows respected. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    m = model_spec(model)
    mean, second = distributions.length_moments(prompt_p50, prompt_p95, prompt_p99)
    per_request = compute.prefill_flops_per_request(
        float(parameters.active_params(m)), mean, second, m.num_hidden_layers, parameters.attention_width(m),
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
    m = model_spec(model)
    per_token = compute.decode_flops_per_token(float(parameters.active_params(m)))
    return compute.decode_tflops(arrival_rate_rps, mean_length(output_p50, output_p95, output_p99), per_token)


def _peak_tflops(gpu: str | float, compute_dtype: str = "bf16") -> float:
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
    g = gpu_spec(gpu)
    peak = g.peak_tflops(compute_dtype)
    if peak is None:
        raise ValueError(f"compute_dtype: {g.name} has no {compute_dtype} peak; expected bf16 or a dtype it supports")
    return peak


def compute_gpus(demand_tflops: float, gpu: str | float, mfu: float, tp: int = 1, compute_dtype: str = "bf16",
                 decode_tflops: float = 0.0, decode_mfu: float | None = None) -> float:
    """The compute path in whole replicas: demand ÷ (peak × MFU), plus a decode demand at its own MFU. [GPUs]

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
    decode_tflops : float
        Decode demand counted apart at ``decode_mfu`` (``demand_tflops`` then holds the prefill alone), as the
        engine's fitted defaults split them; 0: none apart. [TFLOP/s]
    decode_mfu : float, optional
        The decode's MFU; None: ``mfu``. [fraction]

    Returns
    -------
    float
        ``demand ÷ (peak × MFU) + decode ÷ (peak × decode MFU)``, rounded up to whole replicas. [GPUs]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".

    Examples
    --------
    The runbook: 1,562 TFLOP/s ÷ (989 × 0.40) = 3.95 -> 4.

    >>> compute_gpus(1561.5, "h100-sxm", 0.40)
    4.0
    """
    peak = _peak_tflops(gpu, compute_dtype)
    return fleet.whole_gpus(compute.compute_gpus_split(demand_tflops, decode_tflops, peak, mfu,
                                                       mfu if decode_mfu is None else decode_mfu), tp)
