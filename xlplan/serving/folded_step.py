"""The step's time with a replica's constants folded in: the simulator's inner loop and the sweep's columns.

:func:`step_time_fn` is :func:`xlplan.serving.step.step_time_s` term by term (a test holds them equal), on the eight
:class:`~xlplan.serving.step_inputs.StepLoad` fields as plain arguments, with the replica's figures
(:func:`step_constants`) computed once; :func:`step_lines` writes the step of a dense model as two lines in the batch.

References
----------
Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Ring all-reduce: Patarasuk & Yuan,
JPDC 69(2), 2009.
"""

from __future__ import annotations

from xlplan import arrays as _vec
from xlplan.serving.step_inputs import Replica, StepLoad
from xlplan.units import GB, TERA

STEP_CONSTANTS = ("overhead", "n_dense", "gpu_d", "gpu_p", "dense_mem", "has_experts", "n_exp", "exp_d", "exp_p",
                  "exp_bytes", "q", "attn", "full", "windowed", "att_d", "att_p", "kv_per", "comm", "ar_fixed",
                  "ar_per_token", "ep", "a2a_fixed", "a2a_per_token")
"""The names of :func:`step_constants`, in order: the replica's figures a step's time is folded from. [—]"""


def step_constants(r: Replica) -> dict:
    """The replica's constants a step's time is computed from, as :func:`step_time_fn` folds them in. [mixed]

    Parameters
    ----------
    r : Replica
        The replica.

    Returns
    -------
    dict
        :data:`STEP_CONSTANTS` → value: throughputs ([FLOP/s]), bandwidth-bound times ([s], [s/token]), FLOPs per
        token ([FLOP]), layer counts ([layers]) and flags ([bool]).

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Ring all-reduce: Patarasuk & Yuan,
    JPDC 69(2), 2009.
    """
    tera = TERA
    gpu_d = r.tp * r.peak_tflops * tera * r.decode_mfu
    gpu_p = r.tp * r.peak_tflops * tera * r.prefill_mfu
    exp_d = gpu_d * r.expert_efficiency
    exp_p = gpu_p * r.expert_efficiency
    att_d = r.tp * r.attention_peak_tflops * tera * r.decode_mfu
    att_p = r.tp * r.attention_peak_tflops * tera * r.prefill_mfu
    bw = r.hbm_tbps * r.bandwidth_efficiency * tera
    n_dense = 2.0 * (r.active_params - r.expert_active_params)
    n_exp = 2.0 * r.expert_active_params
    dense_mem = r.dense_weight_bytes / r.tp / bw
    full = r.layers - r.window_layers
    attn = 4.0 * r.attention_width
    kv_per = r.kv_bytes_per_token_layer / r.kv_shards / bw
    q = 1.0 - r.experts_per_token / r.experts if r.experts else 0.0
    exp_bytes = r.expert_weight_bytes / r.tp / bw
    link = r.link_gbps * GB
    ring = 2.0 * (r.tp - 1) / r.tp * r.hidden * r.activation_bytes / link if r.tp > 1 else 0.0
    ar_fixed = 2.0 * r.layers * r.link_latency_s if r.tp > 1 else 0.0
    ar_per_token = 2.0 * r.layers * ring
    ep = r.ep if (r.ep > 1 and r.experts) else 0
    a2a_fixed = 2.0 * r.moe_layers * r.link_latency_s if ep else 0.0
    a2a_per_token = (2.0 * r.moe_layers * r.experts_per_token / ep * r.hidden * r.activation_bytes * (ep - 1) / ep / link
                     if ep else 0.0)
    overhead = r.step_overhead_s
    has_experts = bool(r.experts)
    comm = r.tp > 1
    windowed = r.window_layers
    return {"overhead": overhead, "n_dense": n_dense, "gpu_d": gpu_d, "gpu_p": gpu_p, "dense_mem": dense_mem,
            "has_experts": has_experts, "n_exp": n_exp, "exp_d": exp_d, "exp_p": exp_p, "exp_bytes": exp_bytes, "q": q,
            "attn": attn, "full": full, "windowed": windowed, "att_d": att_d, "att_p": att_p, "kv_per": kv_per,
            "comm": comm, "ar_fixed": ar_fixed, "ar_per_token": ar_per_token, "ep": ep, "a2a_fixed": a2a_fixed,
            "a2a_per_token": a2a_per_token, "bw": bw}


def step_time_fn(r: Replica, arrays: bool = False):
    """:func:`xlplan.serving.step.step_time_s` with the replica's constants folded in, for the simulator's inner loop:
    the step time's fast twin. [callable]

    Returns ``f(decode_tokens, decode_keys, decode_keys_window, prefill_tokens, prefill_keys, prefill_keys_window,
    kv_tokens, kv_tokens_window) -> seconds`` on plain floats: the same arithmetic as :func:`xlplan.serving.step.step_time_s` term by
    term (a test holds them equal), without building a :class:`StepLoad` per step.

    Parameters
    ----------
    r : Replica
        The replica whose constants are folded in.
    arrays : bool
        Whether ``f`` will be given arrays (a sweep's columns): then its larger-ofs are numpy's, element by
        element; the replica's own arrays choose that too. [bool]

    Returns
    -------
    callable
        ``f`` of the eight :class:`StepLoad` fields as plain floats ([tokens], [token·keys]) → the step's time. [s]

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009. Ring all-reduce: Patarasuk & Yuan,
    JPDC 69(2), 2009.
    """
    k = step_constants(r)
    array_form = arrays or _vec.is_array(*(k[x] for x in _ARRAY_CHECKED))
    larger = _vec.numpy_module().maximum if array_form else max
    lines = _lines_fn(k, larger)
    if array_form:
        f = _array_step_fn(k)  # a sweep's columns: the same terms, element by element
    elif not (k["has_experts"] or k["comm"] or k["ep"]):
        f = _dense_step_fn(k)  # one GPU, a dense model: the same terms, without the branches for the rest
    else:
        f = _step_fn(k)
    f.lines = None if k["has_experts"] else lines  # the step as two lines in the batch (step_lines), a dense model only
    return f


_ARRAY_CHECKED = ("gpu_d", "gpu_p", "exp_d", "exp_p", "att_d", "att_p", "bw", "dense_mem", "kv_per", "exp_bytes", "q",
                  "ar_per_token", "ar_fixed", "overhead", "a2a_fixed", "a2a_per_token")
"""The constants of :func:`step_constants` whose being arrays (a sweep's replica) makes :func:`step_time_fn` numpy's. [—]"""


def _lines_fn(k: dict, larger):
    """The step of one sequence's load as two lines, split where the step bends: (a₁, s₁) reads the weights, (a₂, s₂)
    computes. [s, s/sequence]"""
    overhead, comm, ar_fixed, ar_per_token, dense_mem = k["overhead"], k["comm"], k["ar_fixed"], k["ar_per_token"], k["dense_mem"]
    n_dense, gpu_d, gpu_p = k["n_dense"], k["gpu_d"], k["gpu_p"]
    attn, full, windowed, att_d, att_p, kv_per = k["attn"], k["full"], k["windowed"], k["att_d"], k["att_p"], k["kv_per"]

    def lines(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        fixed = overhead + (ar_fixed if comm else 0.0)
        per = larger(attn * (full * dec_keys + windowed * dec_keys_w) / att_d
                     + attn * (full * pre_keys + windowed * pre_keys_w) / att_p, kv_per * (full * kv + windowed * kv_w))
        if comm:
            per = per + ar_per_token * (dec + pre)
        return fixed + dense_mem, per, fixed, n_dense * dec / gpu_d + n_dense * pre / gpu_p + per

    return lines


def _array_step_fn(k: dict):
    """The step's time on arrays (a sweep's columns), numpy's larger-of element by element. [s]"""
    (overhead, n_dense, gpu_d, gpu_p, dense_mem, has_experts, n_exp, exp_d, exp_p, exp_bytes, q, attn, full, windowed,
     att_d, att_p, kv_per, comm, ar_fixed, ar_per_token, ep, a2a_fixed, a2a_per_token) = (k[x] for x in STEP_CONSTANTS)
    mx = _vec.numpy_module().maximum

    def f_array(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        tokens = dec + pre
        t = overhead + mx(n_dense * dec / gpu_d + n_dense * pre / gpu_p, dense_mem)
        if has_experts:
            t = t + mx(n_exp * dec / exp_d + n_exp * pre / exp_p, exp_bytes * (1.0 - q ** tokens))
        t = t + mx(attn * (full * dec_keys + windowed * dec_keys_w) / att_d
                   + attn * (full * pre_keys + windowed * pre_keys_w) / att_p,
                   kv_per * (full * kv + windowed * kv_w))
        if comm:
            t = t + (ar_fixed + ar_per_token * tokens)
        if ep:
            t = t + (a2a_fixed + a2a_per_token * tokens)
        return t

    return f_array


def _dense_step_fn(k: dict):
    """The step's time on plain floats for one GPU and a dense model: no expert, communication or all-to-all terms. [s]"""
    overhead, n_dense, gpu_d, gpu_p, dense_mem = k["overhead"], k["n_dense"], k["gpu_d"], k["gpu_p"], k["dense_mem"]
    attn, full, windowed, att_d, att_p, kv_per = k["attn"], k["full"], k["windowed"], k["att_d"], k["att_p"], k["kv_per"]

    def f_dense(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        t = overhead
        c = n_dense * dec / gpu_d + n_dense * pre / gpu_p
        t += c if c > dense_mem else dense_mem
        c = attn * (full * dec_keys + windowed * dec_keys_w) / att_d + attn * (full * pre_keys + windowed * pre_keys_w) / att_p
        m = kv_per * (full * kv + windowed * kv_w)
        t += c if c > m else m
        return t

    return f_dense


def _step_fn(k: dict):
    """The step's time on plain floats, every term: dense weights, routed experts, attention, all-reduce, all-to-all. [s]"""
    (overhead, n_dense, gpu_d, gpu_p, dense_mem, has_experts, n_exp, exp_d, exp_p, exp_bytes, q, attn, full, windowed,
     att_d, att_p, kv_per, comm, ar_fixed, ar_per_token, ep, a2a_fixed, a2a_per_token) = (k[x] for x in STEP_CONSTANTS)

    def f(dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
        tokens = dec + pre
        t = overhead
        c = n_dense * dec / gpu_d + n_dense * pre / gpu_p
        t += c if c > dense_mem else dense_mem
        if has_experts:
            c = n_exp * dec / exp_d + n_exp * pre / exp_p
            m = exp_bytes * (1.0 - q ** tokens)
            t += c if c > m else m
        c = attn * (full * dec_keys + windowed * dec_keys_w) / att_d + attn * (full * pre_keys + windowed * pre_keys_w) / att_p
        m = kv_per * (full * kv + windowed * kv_w)
        t += c if c > m else m
        if comm:
            t += ar_fixed + ar_per_token * tokens
        if ep:
            t += a2a_fixed + a2a_per_token * tokens
        return t

    return f


def step_lines(r: Replica, per_sequence: StepLoad):
    """The step of ``b`` sequences as two lines, ``max(a₁ + s₁·b, a₂ + s₂·b)``, where every figure of the load grows
    in proportion to ``b`` and the model is dense; None for routed experts (their touched bytes are not a line).

    Parameters
    ----------
    r : Replica
        The replica.
    per_sequence : StepLoad
        The load of one sequence: the step of ``b`` carries ``b`` times each field.

    Returns
    -------
    tuple or None
        ``(a₁ [s], s₁ [s/sequence], a₂ [s], s₂ [s/sequence])``: the weights-read line and the compute line; the
        step is the larger. None when the replica has routed experts. [s]

    Notes
    -----
    Of :func:`xlplan.serving.step.step_time_s`'s terms, only the dense part bends: ``max(c·b, W)``. Attention is ``max(f·b, k·b)``,
    which is ``max(f, k)·b`` for ``b ≥ 0``, and communication is a fixed latency plus a line. So the step is
    ``base + max(c·b, W) + m·b = max(base + W + m·b, base + (c + m)·b)``, and the largest batch within a target is
    where the higher line meets it (:func:`xlplan.serving.batch_search.max_batch_on_lines`).

    References
    ----------
    Roofline: Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009.
    """
    if r.experts:
        return None
    ps = per_sequence
    f = step_time_fn(r, _vec.is_array(ps.decode_tokens, ps.decode_keys, ps.prefill_tokens, ps.prefill_keys, ps.kv_tokens))
    return f.lines(ps.decode_tokens, ps.decode_keys, ps.decode_keys_window, ps.prefill_tokens, ps.prefill_keys,
                   ps.prefill_keys_window, ps.kv_tokens, ps.kv_tokens_window)

