"""Communication inside a replica: tensor parallelism's all-reduces and expert parallelism's all-to-alls in one step.

A term of :func:`xlplan.serving.step.step_time_s`. Tensor parallelism runs two ring all-reduces per layer of the step's
``T × hidden`` activations; expert parallelism two all-to-alls per MoE layer (dispatch and combine).

References
----------
Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk & Yuan, JPDC 69(2), 2009.
"""

from __future__ import annotations

from xlplan.serving.step_inputs import Replica, StepLoad
from xlplan.units import GB


def allreduce_time_s(message_bytes, gpus, link_gbps, latency_s):
    """One ring all-reduce of ``message_bytes`` across ``gpus``. [s]

    Parameters
    ----------
    message_bytes : float or array
        Bytes each GPU contributes. [bytes]
    gpus : int
        GPUs in the group; one GPU needs none (returns 0). [GPUs]
    link_gbps : float
        Bandwidth per GPU, one direction. [GB/s]
    latency_s : float
        Fixed cost of one collective. [s]

    Returns
    -------
    float or array
        Time of the all-reduce; 0 for a single GPU. [s]

    Notes
    -----
    ``latency + 2·(n − 1)/n · bytes ÷ bandwidth`` for ``n > 1`` (Patarasuk & Yuan 2009).

    References
    ----------
    Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk & Yuan, JPDC 69(2), 2009.

    Examples
    --------
    8 GPUs, 1 MB each, 450 GB/s, 10 µs: 10 µs + 1.75 × 1e6 / 450e9 = 13.9 µs.

    >>> round(allreduce_time_s(1e6, 8, 450, 10e-6) * 1e6, 1)
    13.9
    """
    if gpus <= 1:
        return 0.0 * message_bytes
    return latency_s + 2.0 * (gpus - 1) / gpus * message_bytes / (link_gbps * GB)


def comm_time_s(r: Replica, load: StepLoad):
    """Tensor- and expert-parallel communication of the step. [s]

    Parameters
    ----------
    r : Replica
        The replica's physics: TP and EP degrees, layers, width, link bandwidth and latency.
    load : StepLoad
        What the step carries: its decode and prefill tokens.

    Returns
    -------
    float or array
        Time of the step's all-reduces and all-to-alls; 0 on one GPU without expert parallelism. [s]

    Notes
    -----
    TP: two all-reduces per layer (after attention and after the MLP) of ``T × hidden`` activations.
    EP: two all-to-alls per MoE layer (dispatch and combine), each moving ``T·k/ep × hidden`` activations
    per GPU with ``(ep − 1)/ep`` of them crossing GPUs.

    References
    ----------
    Ring all-reduce moves 2(n−1)/n of the data per GPU: Patarasuk & Yuan, JPDC 69(2), 2009.
    """
    tokens = load.decode_tokens + load.prefill_tokens
    message = tokens * r.hidden * r.activation_bytes
    t = 2.0 * r.layers * allreduce_time_s(message, r.tp, r.link_gbps, r.link_latency_s)
    if r.ep > 1 and r.experts:
        a2a = tokens * r.experts_per_token / r.ep * r.hidden * r.activation_bytes * (r.ep - 1) / r.ep
        t = t + 2.0 * r.moe_layers * (r.link_latency_s + a2a / (r.link_gbps * GB))
    return t

