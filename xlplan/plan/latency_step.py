"""The step the latency path times, and the largest batch whose step keeps the inter-token target.

:func:`latency_load` is ``batch`` decodes with their steady-state share of prefill (chunked prefill) or decodes
alone, as the policy counts; :func:`max_decode_batch` inverts its step time at the target; :func:`prefill_in_chunks_s`
times a prompt's prefill in chunks of the step budget. Written with operators and :mod:`xlplan.arrays`, so the same
code runs on floats and on a sweep's arrays.
"""

from __future__ import annotations

from xlplan import arrays
from xlplan.plan.scenario import Scenario
from xlplan.schema.steps import Traffic
from xlplan.serving import batch_search, compute, folded_step, step, step_inputs

RUNBOOK_BATCH_CAP = 10**7
"""The largest batch searched where no engine budget caps it (the runbook's convention). [sequences]"""


def decode_context_tokens(tr: Traffic):
    """Mean cached context of a decoding sequence: its prompt and half its output. [tokens]

    Parameters
    ----------
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.

    Returns
    -------
    float or array
        ``E[prompt] + E[output]/2``. [tokens]
    """
    return tr.prompt_mean + tr.output_mean / 2.0


def _prefill_share(s: Scenario, tr: Traffic):
    """Prompt tokens prefilled per decoded token in the steady state: E[prompt]·(1 − reuse) ÷ E[output]. [tokens/token]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.

    Returns
    -------
    float or array
        Prompt tokens computed (not served from the prefix cache) per output token. [tokens/token]
    """
    return tr.prompt_mean * (1.0 - s.prefix_reuse) / tr.output_mean


def latency_load(s: Scenario, tr: Traffic, r: step_inputs.Replica, batch) -> step_inputs.StepLoad:
    """The step the latency path times: ``batch`` decodes, plus their steady-state share of prefill (chunked prefill)
    unless the policy counts decode alone (the runbook's roofline). [StepLoad]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica of :func:`xlplan.plan.replica_at_tp.replica` at this TP degree.
    batch : float or array
        Decoding sequences the replica carries. [sequences]

    Returns
    -------
    serving.StepLoad
        ``batch`` decodes at the mean context, with ``batch × (1 − reuse) ÷ E[output]`` prompts' prefill when the
        policy's ``latency_step`` is ``with_prefill``.

    References
    ----------
    Runbook, document 14 · the decode step alone (``policy.latency_step: decode_only``).
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    ctx = decode_context_tokens(tr)
    if not s.latency_with_prefill:
        return step_inputs.decode_step(batch, ctx, r.window)
    requests = batch * (1.0 - s.prefix_reuse) / tr.output_mean  # prompts started per step
    return step_inputs.mixed_step(batch, ctx, requests * tr.prompt_mean, requests * tr.prefill_keys_per_request,
                              requests * tr.prefill_keys_window_per_request, 0.0, r.window)


def prefill_first_step_s(s: Scenario, tr: Traffic, r: step_inputs.Replica, batch):
    """The latency path's step where prefill runs first (SGLang): ``batch`` decodes alone, plus their steady-state
    share of prefill run in steps of its own, during which the decodes wait. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica at this TP degree.
    batch : float or array
        Decoding sequences the replica carries. [sequences]

    Returns
    -------
    float or array
        ``t(batch decodes) + batch × (1 − reuse) ÷ E[output] × t(one prompt's prefill alone)``: the same prompts per
        step as :func:`latency_load` mixes into the step, each prefilled in chunks of the whole budget with no decode
        beside it (:func:`prefill_in_chunks_s` at no batch); the decode step alone where the policy counts decode
        alone. [s]

    References
    ----------
    SGLang's scheduler (sgl-project/sglang python/sglang/srt/managers/scheduler.py, ``get_next_batch_to_run``: a new
    prefill batch runs first; ``--enable-mixed-chunk`` off by default); :data:`xlplan.serving.engines.PREFILL_FIRST`.
    """
    decode = step.step_time_s(r, step_inputs.decode_step(batch, decode_context_tokens(tr), r.window))
    if not s.latency_with_prefill:
        return decode
    requests = batch * (1.0 - s.prefix_reuse) / tr.output_mean  # prompts started per decode step
    return decode + requests * prefill_in_chunks_s(s, r, tr.prompt_mean)


def latency_batch_cap(s: Scenario, tr: Traffic):
    """The most decodes a replica may carry: max_num_seqs, and the step's token budget shared with prefill. [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.

    Returns
    -------
    float or array
        ``min(max_num_seqs, max_num_batched_tokens ÷ (1 + prefill share))``. [sequences]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    """
    share = _prefill_share(s, tr) if s.latency_with_prefill else 0.0
    return arrays.minimum(s.max_num_seqs, s.max_num_batched_tokens / (1.0 + share))


def max_decode_batch(s: Scenario, tr: Traffic, r: step_inputs.Replica):
    """Largest batch a replica carries with its step within the inter-token target. [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica of :func:`xlplan.plan.replica_at_tp.replica` at this TP degree.

    Returns
    -------
    float or array
        The largest batch (fractional) of :func:`xlplan.serving.batch_search.max_batch_within`, at most
        :func:`latency_batch_cap`; 0 when one sequence misses the target. [sequences]
    """
    cap = latency_batch_cap(s, tr)
    lines = folded_step.step_lines(r, latency_load(s, tr, r, 1.0))
    if lines is not None:  # a dense model: the step is two lines in the batch, met in closed form
        return batch_search.max_batch_on_lines(lines, s.itl_s, cap)
    return batch_search.max_batch_within(latency_step_fn(s, tr, r), s.itl_s, cap)


def latency_step_fn(s: Scenario, tr: Traffic, r: step_inputs.Replica, with_prefill: bool | None = None):
    """``batch → step time`` of :func:`latency_load` on plain floats, through :func:`xlplan.serving.folded_step.step_time_fn`:
    the same step, term by term, without a :class:`~xlplan.serving.step_inputs.StepLoad` per call (the bisection of
    :func:`max_decode_batch` times 66 steps per TP degree, and every what-if and option re-plans). [callable]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica of :func:`xlplan.plan.replica_at_tp.replica` at this TP degree.
    with_prefill : bool, optional
        Time the step with its prefill share (True) or decodes alone (False) whatever the policy says; None: as
        ``s.latency_with_prefill`` has it. [bool]

    Returns
    -------
    callable
        ``f(batch [sequences]) -> step time [s]``, equal to ``serving.step_time_s(r, latency_load(s, tr, r, batch))``
        (a test holds them equal to 1e-12); on a sweep's columns, element by element. Its ``step_time`` is the
        replica's :func:`xlplan.serving.folded_step.step_time_fn`.
    """
    ctx = decode_context_tokens(tr)
    f = folded_step.step_time_fn(r, arrays.is_array(ctx, s.itl_s, s.max_num_seqs, s.max_num_batched_tokens, s.prefix_reuse,
                                               tr.output_mean, tr.prompt_mean, tr.prefill_keys_per_request))
    clipped = arrays.minimum(ctx, r.window)
    if not (s.latency_with_prefill if with_prefill is None else with_prefill):
        def decode_only(b):
            return f(b, b * ctx, b * clipped, 0.0, 0.0, 0.0, b * ctx, b * clipped)

        decode_only.step_time = f  # the replica's step of any load, for callers timing other steps of it
        return decode_only
    reuse, out_mean = s.prefix_reuse, tr.output_mean
    p_tokens, p_keys, p_keys_w = tr.prompt_mean, tr.prefill_keys_per_request, tr.prefill_keys_window_per_request

    def with_prefill(b):
        requests = b * (1.0 - reuse) / out_mean  # prompts started per step, as latency_load counts them
        return f(b, b * ctx, b * clipped, requests * p_tokens, requests * p_keys, requests * p_keys_w, b * ctx,
                 b * clipped)

    with_prefill.step_time = f
    return with_prefill


def closed_form_step_fn(s: Scenario, tr: Traffic, r: step_inputs.Replica):
    """``batch → mean token gap`` the closed form's queueing and latency paths time: :func:`latency_step_fn`'s
    with prefill, except where the engine runs prefill first (SGLang), where each prompt's prefill is a step of its
    own beside no decode and the decodes wait through it. [callable]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats), at the step budget deployed.
    tr : Traffic
        Steps 1-3 and the demand, from :func:`xlplan.plan.steps.traffic`.
    r : serving.Replica
        The replica at this TP degree.

    Returns
    -------
    callable
        ``f(batch) -> gap [s]``: where prefill runs first, ``t(batch decodes) + batch × (1 − reuse) ÷ E[output] ×
        t(a mean prompt's prefill alone, in chunks of the budget)`` (:func:`prefill_first_step_s`); else
        :func:`latency_step_fn`'s step with its prefill share. Its ``step_time`` times a step of decodes and a prefill
        chunk: where prefill runs first, the decodes' step plus the chunk's own step, the gap a decode waits through.

    Notes
    -----
    Mixing the prefill into the decodes' steps, as vLLM does, the closed form on SGLang gave 29 replicas for 500
    req/s of chat where the simulation, which schedules SGLang's prefill first, needed 65.

    References
    ----------
    SGLang's scheduler (sgl-project/sglang python/sglang/srt/managers/scheduler.py, ``get_next_batch_to_run``: a new
    prefill batch runs first; ``--enable-mixed-chunk`` off by default); :data:`xlplan.serving.engines.PREFILL_FIRST`.
    """
    from xlplan.serving import engines

    if not engines.prefill_first(s.engine):
        return latency_step_fn(s, tr, r, with_prefill=True)
    f = latency_step_fn(s, tr, r, with_prefill=False).step_time
    ctx, clipped = decode_context_tokens(tr), min(decode_context_tokens(tr), r.window)
    per_prompt = float(prefill_in_chunks_s(s, r, tr.prompt_mean))  # a mean prompt's prefill, decodes paused
    per_decode_step = (1.0 - s.prefix_reuse) / tr.output_mean  # prompts started per decode step, per sequence

    def apart(b, ctx_b, clipped_b, chunk, keys, keys_w, ctx_c, clipped_c):
        decode = f(b, ctx_b, clipped_b, 0.0, 0.0, 0.0, ctx_c, clipped_c)
        return decode + f(0.0, 0.0, 0.0, chunk, keys, keys_w, 0.0, 0.0) if chunk > 0 else decode

    def decode_s(b):
        return f(b, b * ctx, b * clipped, 0.0, 0.0, 0.0, b * ctx, b * clipped)

    def gap(b):
        return decode_s(b) + b * per_decode_step * per_prompt

    gap.step_time = apart
    gap.decode_s = decode_s
    gap.prompts_per_decode_step = per_decode_step  # per running sequence [prompts]
    gap.prefill_moments_s = _prefill_moments_s(s, r)
    return gap


PREFILL_QUADRATURE = 40
"""Prompt lengths at which a prompt's prefill is timed for its moments: the midpoints of as many equal slices of the
prompt distribution (the fitted lognormal's quantiles). [points]"""


def _prefill_moments_s(s: Scenario, r: step_inputs.Replica) -> tuple[float, float]:
    """(E[S], E[S²]) of a prompt's prefill alone, in chunks of the budget, over the plan's prompt lengths. [s], [s²]"""
    from xlplan import distributions

    times = [float(prefill_in_chunks_s(s, r, distributions.length_at_percentile(
        s.prompt_p50, s.prompt_p95, s.prompt_p99, 100.0 * (i + 0.5) / PREFILL_QUADRATURE)))
        for i in range(PREFILL_QUADRATURE)]
    return sum(times) / len(times), sum(x * x for x in times) / len(times)


def prefill_alone_s(s: Scenario, r: step_inputs.Replica, prompt_tokens):
    """Time to prefill one prompt on an idle replica, in chunks of the step budget. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    r : serving.Replica
        The replica of :func:`xlplan.plan.replica_at_tp.replica` at this TP degree.
    prompt_tokens : float or array
        Length of the prompt. [tokens]

    Returns
    -------
    float or array
        Sum of the chunks' step times: the TTFT with no queue. [s]

    Notes
    -----
    ``n = ceil(prompt ÷ min(budget, threshold))`` steps of ``prompt ÷ n`` tokens each (the threshold:
    ``policy.long_prefill_token_threshold``); the chunks' key pairs sum to the whole
    prompt's (causal or full) and each reads the prefix before it (on average ``(n − 1)/2`` chunks).

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    return prefill_in_chunks_s(s, r, prompt_tokens)


def prefill_in_chunks_s(s: Scenario, r: step_inputs.Replica, prompt_tokens, batch=0.0, context_tokens=0.0):
    """A prompt's prefill in chunks of what the step budget leaves beside ``batch`` decoding sequences. [s]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (its step budget, ``max_num_batched_tokens``, and attention convention).
    r : serving.Replica
        The replica at this TP degree.
    prompt_tokens : float or array
        Length of the prompt. [tokens]
    batch : float or array
        Sequences decoding beside it, one token each per step. [sequences]
    context_tokens : float or array
        Their mean cached context (:func:`decode_context_tokens`). [tokens]

    Returns
    -------
    float or array
        ``n`` steps, each with the decodes and one chunk of ``prompt ÷ n`` tokens, ``n = ceil(prompt ÷ min(max(budget −
        batch, 1), threshold))`` (the threshold: ``policy.long_prefill_token_threshold``, the most one request
        prefills in a step): the chunks' key pairs sum to the whole prompt's and each reads the prefix before it (on
        average ``(n − 1)/2`` chunks). [s]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    Chunked prefill sharing steps with decode: Agrawal et al., "Sarathi-Serve", OSDI 2024.
    """
    room = arrays.minimum(arrays.maximum(s.max_num_batched_tokens - batch, 1.0), s.long_prefill_token_threshold)
    n = arrays.maximum(arrays.ceil(prompt_tokens / room), 1.0)
    chunk = prompt_tokens / n
    keys = compute.prefill_keys_per_request(prompt_tokens, prompt_tokens * prompt_tokens, s.causal_attention) / n
    keys_window = arrays.minimum(keys, r.window * chunk)
    prefix = chunk * (n - 1.0) / 2.0
    load = step_inputs.mixed_step(batch + 0.0 * prompt_tokens, context_tokens, chunk, keys, keys_window, prefix, r.window)
    return n * step.step_time_s(r, load)
