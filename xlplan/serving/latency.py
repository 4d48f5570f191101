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


def latency_gpus_exact(concurrency, max_batch, tp):
    """GPUs needed so no replica's step exceeds the inter-token target. [GPUs]

    Parameters
    ----------
    concurrency : float or array
        Requests in flight. [requests]
    max_batch : float or array
        Largest batch per replica within the target (:func:`xlplan.plan.latency_step.max_decode_batch`). [conversations]
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


