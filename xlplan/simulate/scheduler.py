"""What one replica's next step carries, as its engine schedules it: decodes and prefill chunks, the newest preempted.

The schedule runs over the replica's state (:class:`_Replica`) and the KV cache it holds (:func:`xlplan.plan.replica_at_tp.kv_capacity_tokens`):
running sequences decode first, each with room for one more token, preempting the newest while the cache is full;
then partly prefilled prompts and the queue (FIFO) are chunked into the remaining step budget (:func:`xlplan.plan.scenario.chunk_tokens`),
no chunk longer than the long-prefill threshold where the plan sets one (``policy.long_prefill_token_threshold``:
vLLM's ``long_prefill_token_threshold``, which caps each request's new tokens in a step).
That is vLLM's schedule (and TensorRT-LLM's in-flight batching). An engine that runs prefill first
(:func:`xlplan.serving.engines.prefill_first`: SGLang) chunks the prompts into the whole budget instead, and a step
that carries any prefill carries no decode: the decoders wait a step, their step counter (``k``) unchanged, and
decode in the next step that has no prompt to admit.

The event loop (:mod:`xlplan.simulate.loop`) calls :func:`start_step` whenever a replica's step ends or an idle replica
gets a request; the step is timed by the serving model (:func:`xlplan.serving.folded_step.step_time_fn`) and its end goes on the
run's event heap.

References
----------
vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
budget, recompute preemption of the newest request.
"""

from __future__ import annotations

import heapq
import math
from collections import deque


class _Replica:
    __slots__ = ("busy", "waiting", "prefilling", "dec", "heap", "order", "b", "sum_c", "k", "sum_prefill", "pending", "decoding", "pause",
                 "cohorts")

    def __init__(self):
        self.busy = False  # a step is in flight
        self.waiting = deque()  # request ids, FIFO (preempted ones go to the front)
        self.prefilling = []  # [request id, tokens prefilled]
        self.dec = {}  # request id -> (c, finish step counter); its context at step counter k is c + k
        self.heap = []  # (finish step counter, request id)
        self.order = []  # decoders in order of joining (newest last), for preemption
        self.b = 0  # decoding sequences
        self.sum_c = 0.0
        self.k = 0  # step counter
        self.sum_prefill = 0.0  # tokens cached by partly prefilled requests
        self.pending = []  # the prefill chunks of the step in flight
        self.decoding = True  # the step in flight decodes (False: a prefill-first engine's prefill step)
        self.pause = 0.0  # prefill steps the decoders have waited through since their last token (prefill first) [s]
        self.cohorts = []  # [pause when they landed, how many]: prompts that landed during the pause [s], [sequences]


def start_step(run, i: int, now: float) -> None:
    """Start replica ``i``'s next step at ``now``: decodes first, then prefill chunks.

    Parameters
    ----------
    run : xlplan.simulate.loop._Run
        The run: its replicas, requests, cache capacity, step budget and event heap.
    i : int
        The replica. [index]
    now : float
        The time. [s]

    Returns
    -------
    None
        The step's end is on the run's event heap, or the replica is idle. [—]

    Notes
    -----
    A model with sliding-window layers holds, per sequence of ``n`` tokens, ``a·n + (1 − a)·min(n, W)`` tokens'
    worth of cache (``a`` the share of full-attention layers, ``W`` the window), as the planner counts it
    (:func:`xlplan.serving.memory.kv_bytes_per_conversation`) and vLLM's hybrid KV cache manager allocates it; the
    decodes' share is taken as ``a·S + (1 − a)·min(S, b·W)`` over their summed context ``S``, exact where every
    context is past the window (or none is), and never less than the sum over sequences.
    """
    if run.window != math.inf:
        _start_windowed_step(run, i, now)
        return
    rp, cap, window = run.reps[i], run.cap, run.window
    k = rp.k
    # 1. decodes first: room for one token each, preempting the newest sequence while the cache is full
    used = rp.sum_c + rp.b * k + rp.sum_prefill
    while rp.b and used + rp.b > cap:
        _preempt_newest(run, rp, now)
        used = rp.sum_c + rp.b * k + rp.sum_prefill
    b = rp.b
    ctx_sum = rp.sum_c + b * k
    dec_keys_w = min(ctx_sum, b * window) if b else 0.0
    # 2. prefill in the remaining token budget (the whole of it where prefill runs first): partly prefilled requests
    # first, then the queue (FIFO)
    chunks = _prefill_chunks(run, rp, b, run.budget if run.prefill_first else run.budget - b, cap - used - b)
    _launch(run, i, now, b, ctx_sum, dec_keys_w, chunks, used + b, True)


def _prefill_chunks(run, rp: _Replica, b: int, room: float, free: float) -> list:
    """The step's prefill chunks, (entry, tokens), within ``room`` of the step budget and ``free`` of the cache:
    partly prefilled requests first, then the queue (FIFO), admitted while a sequence is allowed and its next chunk
    fits the cache. [tokens]"""
    prompt = run.prompt
    chunks = []
    for entry in rp.prefilling:
        if room < 1 or free < 1:
            break
        chunk = min(prompt[entry[0]] - entry[1], run.long_prefill, room, free)
        chunks.append((entry, chunk))
        room -= chunk
        free -= chunk
    running = b + len(rp.prefilling)
    reuse = run.reuse
    while rp.waiting and room >= 1 and free >= 1 and running < run.max_seqs:
        rid = rp.waiting[0]
        cached = 0.0 if run.resumed[rid] else math.floor(prompt[rid] * reuse)  # a prefix-cache hit: held, not computed
        want = min(prompt[rid] - cached, run.long_prefill, room)
        if want + cached > free:  # admitted only when its next chunk fits the cache
            break
        rp.waiting.popleft()
        entry = [rid, cached]
        rp.sum_prefill += cached
        rp.prefilling.append(entry)
        running += 1
        chunks.append((entry, want))
        room -= want
        free -= want + cached
    return chunks


def _preempt_newest(run, rp: _Replica, now: float) -> None:
    """Preempt the newest decoding sequence of ``rp`` at ``now``: its cache is dropped, the tokens it generated join
    its prompt to be recomputed, and it waits at the head of the queue (vLLM's recompute preemption); an entry
    no longer decoding is skipped."""
    rid = rp.order.pop()
    if rid not in rp.dec:
        return
    if rp.cohorts:  # the newest decoders are the last cohort's
        rp.cohorts[-1][1] -= 1
        if not rp.cohorts[-1][1]:
            rp.cohorts.pop()
    output, prompt, k = run.output, run.prompt, rp.k
    c, kf = rp.dec.pop(rid)
    rp.b -= 1
    rp.sum_c -= c
    generated = output[rid] - (kf - k + 1)
    prompt[rid] += generated
    output[rid] -= generated
    run.resumed[rid] = True
    run.last_token[rid] = now
    rp.waiting.appendleft(rid)
    run.preemptions += 1


def _launch(run, i: int, now: float, b: int, ctx_sum: float, dec_keys_w: float, chunks: list, held: float,
            plus_prefill: bool) -> None:
    """Time replica ``i``'s step of ``b`` decodes and ``chunks`` of prefill and put its end on the event heap; idle
    when it carries nothing. ``held`` is the cache the step holds ([tokens]; the chunks' tokens added where
    ``plus_prefill``), recorded with the step inside the measured window. Where prefill runs first, a step with any
    chunk carries no decode (``b`` and the decodes' context dropped)."""
    rp, window = run.reps[i], run.window
    rp.decoding = not (run.prefill_first and chunks)
    if not rp.decoding:
        b, ctx_sum, dec_keys_w = 0, 0.0, 0.0
    pre = pre_keys = pre_keys_w = kv_pre = kv_pre_w = 0.0
    for entry, chunk in chunks:
        done = entry[1]
        keys = chunk * done + (chunk * (chunk + 1.0) / 2.0 if run.causal else chunk * chunk)
        pre += chunk
        pre_keys += keys
        pre_keys_w += min(keys, window * chunk)
        kv_pre += done
        kv_pre_w += min(done, window)
    if b == 0 and pre == 0:
        rp.busy = False
        return
    t = run.step_time(b, ctx_sum, dec_keys_w, pre, pre_keys, pre_keys_w, ctx_sum + kv_pre, dec_keys_w + kv_pre_w)
    rp.busy = True
    rp.pending = chunks
    record = run.warm <= now < run.duration
    if run.prefill_first:
        if not rp.decoding:
            if not rp.b and not rp.cohorts:  # no one is waiting: the pause starts here
                rp.pause = 0.0
            rp.pause += t
        elif rp.pause > 0.0:
            _pause_gaps(run, rp, t, b, record)
    if record:
        run.step_t.append(t)
        run.step_b.append(b)
        run.kv_held.append(held + pre if plus_prefill else held)
    heapq.heappush(run.events, (now + t, i))


def _pause_gaps(run, rp: _Replica, t: float, b: int, record: bool) -> None:
    """A decode step of ``t`` after prefill steps (prefill first): each of its ``b`` decoders' token gap is the step
    plus the prefill it waited through since its last token — the whole pause for those decoding before it, the pause
    after its landing for a prompt that landed during it. Recorded (where ``record``) as (this step's index, count,
    gap) beside the step, which the measurement counts in place of that many of the step's own gaps; the pause and
    its cohorts cleared. [s]"""
    if record:
        idx = len(run.step_t)
        joined = 0
        for p, n in rp.cohorts:
            joined += n
            wait = rp.pause - p
            if wait > 0.0 and n > 0:
                run.pause_idx.append(idx)
                run.pause_n.append(n)
                run.pause_gap.append(t + wait)
        old = b - joined
        if old > 0:
            run.pause_idx.append(idx)
            run.pause_n.append(old)
            run.pause_gap.append(t + rp.pause)
    rp.pause = 0.0
    rp.cohorts = []


def _window_held(a: float, w: float, total: float, count: float) -> float:
    """The cache ``count`` sequences of ``total`` tokens hold, window layers clipped at ``w``. [tokens of every layer]"""
    return a * total + (1.0 - a) * min(total, count * w)


def _window_cost(a: float, w: float, done: float, chunk: float) -> float:
    """What ``chunk`` more tokens after ``done`` add to the cache, window layers clipped at ``w``. [tokens of every layer]"""
    return a * chunk + (1.0 - a) * (min(done + chunk, w) - min(done, w))


def _window_fitting(a: float, w: float, done: float, free: float) -> float:
    """The longest chunk after ``done`` whose cost (:func:`_window_cost`) is within ``free``. [tokens]"""
    below = max(w - done, 0.0)
    if free <= below:
        return free
    return below + (free - below) / a if a > 0 else math.inf


def _windowed_decodes(run, rp: _Replica, now: float, prefill_held: float) -> tuple[float, float]:
    """(cache in use, what one more token per decode adds), after preempting the newest decoders while the cache
    cannot take that token, window layers clipped. [tokens of every layer]"""
    cap, w, a, k = run.cap, run.window, run.full_share, rp.k
    ctx = rp.sum_c + rp.b * k
    used = _window_held(a, w, ctx, rp.b) + prefill_held
    need = _window_held(a, w, ctx + rp.b, rp.b) - _window_held(a, w, ctx, rp.b)
    while rp.b and used + need > cap:
        _preempt_newest(run, rp, now)
        ctx = rp.sum_c + rp.b * k
        used = _window_held(a, w, ctx, rp.b) + prefill_held
        need = _window_held(a, w, ctx + rp.b, rp.b) - _window_held(a, w, ctx, rp.b)
    return used, need


def _start_windowed_step(run, i: int, now: float) -> None:
    """:func:`start_step` for a model with sliding-window layers: the same schedule, the cache counted with the
    window layers clipped at the window (see :func:`start_step`)."""
    rp, cap, w = run.reps[i], run.cap, run.window
    prompt = run.prompt
    a = run.full_share
    k = rp.k
    prefill_held = sum(_window_held(a, w, e[1], 1) for e in rp.prefilling)
    # 1. decodes first: room for one token each, preempting the newest sequence while the cache is full
    used, need = _windowed_decodes(run, rp, now, prefill_held)
    b = rp.b
    ctx_sum = rp.sum_c + b * k
    dec_keys_w = min(ctx_sum, b * w) if b else 0.0
    # 2. prefill in the remaining token budget (the whole of it where prefill runs first): partly prefilled requests
    # first, then the queue (FIFO)
    room = run.budget if run.prefill_first else run.budget - b
    free = cap - used - need
    chunks = []
    for entry in rp.prefilling:
        if room < 1 or free < 1:
            break
        done = entry[1]
        chunk = min(prompt[entry[0]] - done, run.long_prefill, room, _window_fitting(a, w, done, free))
        chunks.append((entry, chunk))
        room -= chunk
        free -= _window_cost(a, w, done, chunk)
    running = b + len(rp.prefilling)
    reuse = run.reuse
    while rp.waiting and room >= 1 and free >= 1 and running < run.max_seqs:
        rid = rp.waiting[0]
        cached = 0.0 if run.resumed[rid] else math.floor(prompt[rid] * reuse)  # a prefix-cache hit: held, not computed
        want = min(prompt[rid] - cached, run.long_prefill, room)
        if _window_held(a, w, want + cached, 1) > free:  # admitted only when its next chunk fits the cache
            break
        rp.waiting.popleft()
        entry = [rid, cached]
        rp.sum_prefill += cached
        rp.prefilling.append(entry)
        running += 1
        chunks.append((entry, want))
        room -= want
        free -= _window_held(a, w, want + cached, 1)
    _launch(run, i, now, b, ctx_sum, dec_keys_w, chunks, cap - free, False)
