"""The latency check (beyond the runbook): can a replica meet the promise?

Notes
-----
A decode step at batch ``b`` on a tensor-parallel group of ``tp`` GPUs takes
``max(b·f_tok/tp ÷ (peak × MFU), (W/tp + b·kv/shards) ÷ (bandwidth × efficiency))``:
the roofline of FLOPs against bytes read (weights plus the resident cache).
The step must not exceed the inter-token target, which caps the batch a
replica can carry; replicas for latency = concurrency ÷ that cap. Prefill of a
p95 prompt, ``f_prefill/tp ÷ (peak × MFU)``, must not exceed the TTFT target.
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.units import TERA


def max_decode_batch(itl_s, flops_per_token, weights_bytes, kv_bytes_per_conversation, tp, shards,
                     peak_tflops, mfu, hbm_tbps, bandwidth_efficiency):
    """Largest batch a replica carries within the inter-token target. [conversations]

    Parameters
    ----------
    itl_s : float or array
        Inter-token latency target. [s/token]
    flops_per_token : float
        Decode FLOPs per token. [FLOP/token]
    weights_bytes : float
        The whole model's weights. [bytes]
    kv_bytes_per_conversation : float or array
        KV cache of one resident conversation. [bytes]
    tp : int
        GPUs in the replica. [GPUs]
    shards : int
        Ways the KV cache splits across them. [GPUs]
    peak_tflops : float
        Peak dense throughput per GPU. [TFLOP/s]
    mfu : float
        Achieved fraction of peak. [fraction]
    hbm_tbps : float
        Memory bandwidth per GPU. [TB/s]
    bandwidth_efficiency : float
        Achieved fraction of bandwidth in decode. [fraction]

    Returns
    -------
    float or array
        The largest batch, fractional; 0 when the weights alone miss the target. [conversations]

    Notes
    -----
    Solves ``decode_step_time_s(b) = itl`` for ``b`` on each side of the roofline and
    takes the smaller; zero when even the weights take longer than the target to read.

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    """
    by_flops = itl_s * peak_tflops * mfu * TERA * tp / flops_per_token
    room_bytes = itl_s * hbm_tbps * bandwidth_efficiency * TERA - weights_bytes / tp
    by_bytes = arrays.maximum(room_bytes, 0.0) * shards / kv_bytes_per_conversation
    return arrays.minimum(by_flops, by_bytes)


def latency_gpus_exact(concurrency, max_batch, tp):
    """GPUs needed so no replica's step exceeds the inter-token target. [GPUs]

    Parameters
    ----------
    concurrency : float or array
        Requests in flight. [requests]
    max_batch : float or array
        Largest batch per replica within the target (:func:`max_decode_batch`). [conversations]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    float or array
        GPUs before rounding to whole replicas; +inf when ``max_batch`` is 0. [GPUs]

    Notes
    -----
    ``tp × concurrency ÷ max batch``; infinite when no batch meets the target.
    """
    return tp * arrays.div_pos(concurrency, max_batch)


