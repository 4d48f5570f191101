"""The compute path: prefill and decode demand against peak × MFU.

Notes
-----
Prefill per request: ``2·N_active·E[n] + 4·layers·E[n²]·attention width`` (the
second term is the attention score and value products, quadratic in prompt
length: so the second moment of the fitted distribution, never the mean
squared). Sliding-window layers attend to at most ``w`` keys, so their term uses
``min(E[n²], w·E[n])``. A measured prefix-reuse fraction removes its share.
Decode per output token: ``2·N_active`` (the runbook's convention); optionally plus
``4·layers·context·attention width`` for attention over the cache.
GPUs: ``demand ÷ (peak dense TFLOP/s × MFU)``.

References
----------
Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.units import TERA


def prefill_keys_per_request(mean_prompt_tokens, prompt_second_moment, causal=False):
    """Token-key pairs of one prompt's prefill, averaged over the prompt distribution. [token·keys]

    Parameters
    ----------
    mean_prompt_tokens : float or array
        ``E[n]``, the fitted mean prompt length. [tokens]
    prompt_second_moment : float or array
        ``E[n²]``, the fitted second moment of the prompt length. [tokens²]
    causal : bool
        Count causal attention (token ``i`` attends to ``i`` keys); the runbook counts every pair, ``n²``.

    Returns
    -------
    float or array
        Query-key pairs per prompt, ``E[n²]`` (full) or ``(E[n²] + E[n])/2`` (causal). [token·keys]

    Notes
    -----
    Full (the runbook's convention): ``E[n²]``. Causal: token ``i`` attends to ``i`` keys, ``E[n(n + 1)/2] = (E[n²] + E[n])/2``.

    References
    ----------
    Runbook, document 14, step 5 · "prefill 1,369" TFLOP/s counts every pair:
    40 × (2 × 8.03e9 × 2,000 + 4 × 32 × 2,000² × 4,096).

    Examples
    --------
    >>> prefill_keys_per_request(2000, 2000**2), prefill_keys_per_request(2000, 2000**2, causal=True)
    (4000000, 2001000.0)
    """
    if causal:
        return (prompt_second_moment + mean_prompt_tokens) / 2.0
    return prompt_second_moment


def prefill_flops_per_request(active_params, mean_prompt_tokens, prompt_second_moment, layers,
                              attention_width, window_layers=0, window=None, causal=False):
    """FLOPs to prefill one prompt, averaged over the prompt distribution. [FLOP/request]

    Parameters
    ----------
    active_params : float
        Parameters one token passes through. [parameters]
    mean_prompt_tokens : float or array
        ``E[n]``. [tokens]
    prompt_second_moment : float or array
        ``E[n²]``. [tokens²]
    layers : int
        All layers. [layers]
    attention_width : int
        Heads × head width. [elements]
    window_layers : int
        Of ``layers``, those with a sliding window. [layers]
    window : int, optional
        The sliding window. [tokens]
    causal : bool
        Count causal attention (half the square, :func:`prefill_keys_per_request`); the runbook counts ``n²``.

    Returns
    -------
    float or array
        Mean prefill FLOPs per request: the linear term plus the attention term. [FLOP/request]

    Notes
    -----
    ``2·N·E[n] + 4·w·(L_full·K + L_window·min(K, W·E[n]))`` with ``K`` the key pairs per request.

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".

    Examples
    --------
    Llama-3.1-8B, 2,000 tokens: 2 × 8.03e9 × 2000 + 4 × 32 × 2000² × 4096 = 3.422e13.

    >>> f"{prefill_flops_per_request(8030261248, 2000, 2000**2, 32, 4096):.4g}"
    '3.422e+13'
    """
    linear = 2.0 * active_params * mean_prompt_tokens
    keys = prefill_keys_per_request(mean_prompt_tokens, prompt_second_moment, causal)
    pairs = (layers - window_layers) * keys
    if window_layers:
        pairs = pairs + window_layers * arrays.minimum(keys, window * mean_prompt_tokens)
    return linear + 4.0 * attention_width * pairs


def decode_flops_per_token(active_params, layers=0, attention_width=0, mean_context_tokens=0.0):
    """FLOPs to generate one token. [FLOP/token]

    Parameters
    ----------
    active_params : float
        Parameters one token passes through. [parameters]
    layers : int
        Layers, for the optional attention term (0 leaves it out, as the runbook does). [layers]
    attention_width : int
        Heads × head width. [elements]
    mean_context_tokens : float or array
        Mean cached context a decoded token attends to. [tokens]

    Returns
    -------
    float or array
        FLOPs per output token: ``2·N_active``, plus attention over the cache when ``layers`` is given. [FLOP/token]

    Notes
    -----
    ``2·N_active (+ 4·layers·context·width)``.

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    return 2.0 * active_params + 4.0 * layers * mean_context_tokens * attention_width


def prefill_tflops(arrival_rate_rps, flops_per_request, prefix_reuse=0.0):
    """Prefill demand at the peak rate. [TFLOP/s]

    Parameters
    ----------
    arrival_rate_rps : float or array
        Peak arrival rate. [requests/s]
    flops_per_request : float or array
        Prefill FLOPs per request. [FLOP/request]
    prefix_reuse : float or array
        Measured fraction of prompt compute served from the prefix cache. [fraction]

    Returns
    -------
    float or array
        ``rate × FLOPs per request × (1 − prefix reuse)``, in TFLOP/s. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    return arrival_rate_rps * flops_per_request * (1.0 - prefix_reuse) / TERA


def decode_tflops(arrival_rate_rps, mean_output_tokens, flops_per_token):
    """Decode demand at the peak rate. [TFLOP/s]

    Parameters
    ----------
    arrival_rate_rps : float or array
        Peak arrival rate. [requests/s]
    mean_output_tokens : float or array
        Mean output length ``E[output]``. [tokens]
    flops_per_token : float or array
        Decode FLOPs per output token (:func:`decode_flops_per_token`). [FLOP/token]

    Returns
    -------
    float or array
        ``rate × E[output] × FLOPs per token``, in TFLOP/s. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".

    Examples
    --------
    The runbook: 40 × 300 × 2 × 8.03e9 = 192.7 TFLOP/s.

    >>> round(decode_tflops(40, 300, 2 * 8030261248), 1)
    192.7
    """
    return arrival_rate_rps * mean_output_tokens * flops_per_token / TERA


def effective_tflops_per_gpu(peak_tflops, mfu):
    """What one GPU sustains. [TFLOP/s]

    Parameters
    ----------
    peak_tflops : float or array
        Peak dense TFLOP/s of one GPU in the compute format (BF16, or FP8/FP4 for weights in that format). [TFLOP/s]
    mfu : float or array
        Model FLOPs utilisation: the fraction of peak achieved. [fraction]

    Returns
    -------
    float or array
        ``peak × MFU``. [TFLOP/s]

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".

    Examples
    --------
    >>> effective_tflops_per_gpu(989, 0.40)
    395.6
    """
    return peak_tflops * mfu


def compute_gpus_split(prefill_tflops_, decode_tflops_, peak_tflops, prefill_mfu, decode_mfu):
    """GPUs the FLOPs need before rounding, prefill and decode at their own MFU. [GPUs]

    Parameters
    ----------
    prefill_tflops_ : float or array
        Prefill demand at the peak rate (:func:`prefill_tflops`). [TFLOP/s]
    decode_tflops_ : float or array
        Decode demand at the peak rate (:func:`decode_tflops`). [TFLOP/s]
    peak_tflops : float or array
        Peak dense TFLOP/s of one GPU. [TFLOP/s]
    prefill_mfu : float or array
        Fraction of peak achieved in prefill. [fraction]
    decode_mfu : float or array
        Fraction of peak achieved in decode. [fraction]

    Returns
    -------
    float or array
        GPUs the compute path needs, fractional (rounding to whole replicas comes later). [GPUs]

    Notes
    -----
    ``prefill ÷ (peak × MFU_prefill) + decode ÷ (peak × MFU_decode)``; with one MFU this is
    :func:`_compute_gpus_exact` of their sum.

    Examples
    --------
    >>> round(compute_gpus_split(1368.7, 192.7, 989, 0.40, 0.40), 2)
    3.95
    """
    return _compute_gpus_exact(prefill_tflops_, peak_tflops, prefill_mfu) + _compute_gpus_exact(decode_tflops_, peak_tflops, decode_mfu)


def _compute_gpus_exact(demand_tflops, peak_tflops, mfu):
    """GPUs the FLOPs need before rounding. [GPUs]

    Parameters
    ----------
    demand_tflops : float or array
        FLOP/s demand at the peak rate. [TFLOP/s]
    peak_tflops : float or array
        Peak dense TFLOP/s of one GPU. [TFLOP/s]
    mfu : float or array
        Fraction of peak achieved. [fraction]

    Returns
    -------
    float or array
        ``demand ÷ (peak × MFU)``, fractional. [GPUs]

    Notes
    -----
    ``demand ÷ (peak × MFU)``: the runbook's 1,562 ÷ 395.6 = 3.95.

    References
    ----------
    Runbook, document 14, step 5 · "(prefill 1,369 + decode 193) TFLOP/s ÷ 396 per GPU at 40% MFU".
    """
    return demand_tflops / effective_tflops_per_gpu(peak_tflops, mfu)
