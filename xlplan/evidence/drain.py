"""An offline benchmark's drain: N identical requests submitted at once, served until the last one ends.

Offline throughput benchmarks (``vllm bench`` at an infinite request rate, ``trtllm-bench``) submit ``num_prompts``
requests at t = 0, each with the same prompt and output length, and publish total output tokens ÷ the time until
the last request finishes. The engine runs them under continuous batching with chunked prefill: a replica admits
up to its batch cap; every step carries one token for each running decode and then, in what the step's token
budget leaves, chunks of admitted prompts (a prompt's last chunk samples its first token); a request decodes its
other ``osl − 1`` tokens one per step; when one finishes, a waiting request takes its place. So the first wave's
prefill runs with no other decodes beside it, prefill comes in bursts rather than spread over every step, and the
last wave runs part-empty: what the steady state (:func:`xlplan.evidence.predict.step_s`) leaves out.

:func:`drain_schedule` follows that schedule step by step, in step counts (which step carries which decodes and
chunks depends on the lengths, the cap and the budget, never on the hardware), and is memoised: a calibration that
re-times the same benchmark thousands of times at other efficiencies steps through it once.
:func:`replica_drain_s` times each step with the serving model (:func:`xlplan.serving.step.step_time_s` of
:func:`xlplan.serving.step_inputs.mixed_step`), all steps in one vectorised call; :func:`drain_output_tok_s` is the whole
system's figure.

Notes
-----
Identical requests finish in the order they were admitted, so the drain is a sequence of waves of ``cap``
requests. After the first (the fill) the schedule settles into a period: each wave's steps are the last one's,
shifted. A wave whose start finds the replica in the state the previous wave's start found it, relative to the
step, repeats exactly; the whole waves that follow are counted, not stepped through (the state-to-state match is
checked, so this changes nothing). Where the state never repeats to the token, the waves from
:data:`REPEAT_FROM_WAVE` on, at least :data:`PERIOD_STEPS` steps of them, are taken as the period; against
stepping through every wave that moves a drain's time by at most 0.08% on the public corpus' offline rows and
0.21% on a grid of 600 drains of random lengths, caps and counts.

Each replica is an independent drain of its share (requests spread evenly, the busiest gets
``ceil(N ÷ replicas)``); the system's time is the busiest replica's. The KV cache is taken to hold every admitted
sequence to its end: the cap (:func:`xlplan.evidence.predict.batch_caps`) already counts the cache at the mean context.

References
----------
Sarathi-Serve (Agrawal et al., OSDI 2024): chunked prefill sharing steps with decode. vLLM's scheduler
(vllm/v1/core/sched/scheduler.py): running requests' decodes first, then waiting prompts admitted FIFO and chunked
into the rest of ``max_num_batched_tokens``, at most ``max_num_seqs`` running; the simulator
(:mod:`xlplan.simulate.scheduler`) schedules the same way, and a test holds the two to the same makespan.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xlplan.plan.scenario import chunk_tokens
from xlplan.serving import step, step_inputs

REPEAT_FROM_WAVE = 3
"""Where the state never repeats exactly, the wave from which on the schedule is taken as periodic: waves 1 and 2
(the fill and the first refill) are stepped through, the third and those after it make the period. [waves]"""

PERIOD_STEPS = 1024
"""The fewest steps a period that only settles (the state never repeating exactly) spans: a wave's steps are whole
while their mean over many waves is not (a short wave takes 3 steps, then 4), and a period this long averages that
rounding (see the module's Notes). [steps]"""


@dataclass(frozen=True)
class DrainSchedule:
    """What one replica's steps carry through a drain, as step records (numpy arrays, read-only). Units in the field
    comments. A record is one step; or a run of decode-only steps (``continued`` 0), each with the same decodes; or
    a run of steps each giving the whole room to the next chunk of one long prompt, each step's context ``decodes``
    and its prompt's cached part ``continued`` more than the step before."""

    weight: object  # how many times the record runs: more than 1 inside a repeated wave [1]
    steps: object  # steps in the record [steps]
    decodes: object  # sequences decoding in each of its steps [sequences]
    context: object  # their cached context, summed: at its first step; of a decode-only run, the run's mean [tokens]
    continued: object  # tokens prefilled of the prompt left partly prefilled by the step before [tokens]
    continued_done: object  # that prompt's tokens cached before the (first) step [tokens]
    whole: object  # prompts prefilled whole in the step [prompts]
    started: object  # tokens prefilled of a prompt started in the step and left unfinished [tokens]
    total_steps: int  # engine steps in the drain [steps]
    repeated_waves: int  # whole waves counted as repeats of the period instead of stepped through [waves]


def drain_schedule(n_requests: int, slots: int, budget_tokens: float, prompt_tokens: float, output_tokens: int,
                   cached_tokens: float = 0.0, repeat_waves: bool = True) -> DrainSchedule:
    """The steps of one replica draining ``n_requests`` identical requests, all waiting at t = 0. [DrainSchedule]

    Parameters
    ----------
    n_requests : int
        Requests on the replica, all arrived at once. [requests]
    slots : int
        Sequences the replica runs at once (decoding or prefilling). [sequences]
    budget_tokens : float
        The step's token budget, decodes and prefill chunks together (``max_num_batched_tokens``). [tokens]
    prompt_tokens : float
        Each request's prompt. [tokens]
    output_tokens : int
        Each request's output, the token its prefill samples included. [tokens]
    cached_tokens : float
        Of each prompt, tokens found in the prefix cache: held, not computed. [tokens]
    repeat_waves : bool
        Count whole waves after the period is found instead of stepping through them (see the module's Notes);
        False steps through every wave. [bool]

    Returns
    -------
    DrainSchedule
        The step records, memoised on the arguments: each step's decodes, their context, and its prefill chunks;
        the drain's steps; the waves repeated.

    Notes
    -----
    Each step, as the engine schedules it: every running decode gets one token; the prompt left partly prefilled
    gets its next chunk; then waiting requests are admitted (FIFO, while fewer than ``slots`` run) and chunked
    into what is left of ``budget_tokens``. A prompt whose last chunk lands has sampled its first token and
    decodes from the next step; a request leaves at the end of the step of its last token, and its slot is
    taken at the next.

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): decodes first, then prefill chunks up to
    ``max_num_batched_tokens``, at most ``max_num_seqs`` running. Sarathi-Serve (Agrawal et al., OSDI 2024):
    chunked prefill sharing steps with decode.
    """
    return _schedule(int(n_requests), int(slots), float(budget_tokens), float(prompt_tokens), int(output_tokens),
                     float(cached_tokens), bool(repeat_waves))


@functools.lru_cache(maxsize=256)
def _schedule(n: int, slots: int, budget: float, prompt: float, output: int, cached: float,
              repeat: bool) -> DrainSchedule:
    """:func:`drain_schedule`, memoised (the result depends on the arguments alone; its arrays are read-only)."""
    import numpy as np

    waves = _Waves(max(1, min(slots, n)), repeat)
    rec, total = _step_records(n, waves.slots, budget, prompt, output, cached, waves)
    a = np.array(rec, dtype=float).reshape(-1, 7)
    weight = np.ones(len(rec))
    weight[waves.period[0]:waves.period[1]] += waves.repeated
    cols = [weight] + [a[:, i].copy() for i in range(7)]
    for x in cols:
        x.flags.writeable = False
    return DrainSchedule(*cols, total_steps=total, repeated_waves=waves.waves)


class _Waves:
    """Where each wave starts (the step admitting request j·slots), and the repeat of whole waves once one recurs."""

    __slots__ = ("slots", "on", "next", "snaps", "period", "repeated", "waves")

    def __init__(self, slots: int, on: bool):
        self.slots, self.on, self.next = slots, on, slots
        self.snaps: list[tuple] = []  # (record index, step, waiting, state) at each wave's start
        self.period = (0, 0)  # the records of the repeated period
        self.repeated = 0  # periods counted as repeats of it
        self.waves = 0  # the waves they hold

    def repeat(self, n_rec: int, k: int, waiting: int, state: tuple) -> tuple[int, int] | None:
        """At a wave's start: None to go on; else (steps, requests) skipped, whole periods counted instead of stepped
        through. The period is the last wave where the state recurs exactly; else, from :data:`REPEAT_FROM_WAVE`
        on, the waves since the refill once they span :data:`PERIOD_STEPS`. [steps], [requests]"""
        self.snaps.append((n_rec, k, waiting, state))
        self.next += self.slots
        if len(self.snaps) < 2:
            return None
        if self.snaps[-2][3] == state and self.snaps[-2][2] - waiting == self.slots:
            i0, k0, w0, _ = self.snaps[-2]
        elif len(self.snaps) >= REPEAT_FROM_WAVE and k - self.snaps[REPEAT_FROM_WAVE - 2][1] >= PERIOD_STEPS:
            i0, k0, w0, _ = self.snaps[REPEAT_FROM_WAVE - 2]
        else:
            return None
        self.on = False
        per = w0 - waiting  # requests admitted in the period
        m = max((waiting - 1) // per, 0)  # whole periods to count, leaving this wave's first request to step
        self.period, self.repeated, self.waves = (i0, n_rec), m, m * per // self.slots
        return m * (k - k0), m * per


def _leave(land: list, count: list, head: int, b: int, s1: float, last: int, k: int) -> tuple:
    """The cohorts whose last token is at step ``k`` or before leave: (head, decodes, Σ size × landing step, the
    next cohort's last step or -1). [—]"""
    while head < len(land) and land[head] + last <= k:
        b -= count[head]
        s1 -= count[head] * land[head]
        head += 1
    return head, b, s1, (land[head] + last if head < len(land) else -1)


def _step_records(n: int, slots: int, budget: float, prompt: float, output: int, cached: float,
                  waves: _Waves) -> tuple[list, int]:
    """The loop of :func:`drain_schedule`: (records, steps). Decoders are kept in cohorts by the step their prompts
    landed (``land``, ``count``, oldest at ``head``; ``b`` decode, their context at step k is b·(prompt + k) − s1);
    ``end`` is the oldest cohort's last step. Locals throughout: the loop runs once a step."""
    land: list[int] = []
    count: list[int] = []
    rec: list[tuple] = []  # (steps, decodes, context, continued, continued_done, whole, started)
    head = b = k = 0
    s1, end, last, fresh = 0.0, -1, output - 1, prompt - cached
    waiting, partial = n, -1.0  # requests not yet admitted; cached tokens of the partly prefilled prompt (-1: none)
    while True:
        room = budget - b
        if (partial < 0.0 and (waiting == 0 or b >= slots)) or room < 1.0:
            if end < 0:  # nothing decodes and nothing is left to prefill
                return rec, k
            rec.append((end - k + 1, b, b * (prompt + (k + end) / 2.0) - s1, 0.0, 0.0, 0, 0.0))  # decodes to the leave
            k = end + 1
            head, b, s1, end = _leave(land, count, head, b, s1, last, end)
            continue
        if partial >= 0.0 and prompt - partial > room:  # a long prompt takes the whole room, step after step
            m = math.ceil((prompt - partial) / room) - 1
            m = end - k + 1 if 0 <= end < k + m - 1 else m
            rec.append((m, b, b * (prompt + k) - s1, room, partial, 0, 0.0))
            partial += m * room
            k += m
            if end == k - 1:
                head, b, s1, end = _leave(land, count, head, b, s1, last, end)
            continue
        cont = done = started = 0.0
        whole = landed = 0
        free = slots - b - (partial >= 0.0)
        if partial >= 0.0:  # the partial prompt's last chunk
            cont, done, landed = prompt - partial, partial, 1
            room -= cont
        if waiting and room >= 1.0 and free > 0:
            new = waiting if waiting < free else free
            whole = int(room // fresh)
            whole = new if whole > new else whole
            first = n - waiting
            if waves.on and first <= waves.next < first + whole + (whole < new and room - whole * fresh >= 1.0):
                skip = waves.repeat(len(rec), k, waiting, (partial, tuple((k - land[i], count[i]) for i in range(head, len(land)))))
                if skip is not None:  # whole waves counted: every cohort, and the step counter, later by them
                    k, waiting, s1, end = k + skip[0], waiting - skip[1], s1 + skip[0] * b, end + skip[0] if end >= 0 else end
                    land[head:] = [x + skip[0] for x in land[head:]]
                    continue
            room -= whole * fresh
            waiting -= whole
            landed += whole
            if whole < new and room >= 1.0:
                started, waiting = room, waiting - 1
        partial = cached + started if started else -1.0
        rec.append((1, b, b * (prompt + k) - s1, cont, done, whole, started))
        if end == k:
            head, b, s1, end = _leave(land, count, head, b, s1, last, k)
        if landed and output > 1:
            land.append(k)
            count.append(landed)
            b, s1, end = b + landed, s1 + landed * k, k + last if end < 0 else end
        k += 1


def replica_drain_s(rep, n_requests: int, isl: float, osl: float, batch_cap: float,
                    repeat_waves: bool = True) -> tuple[float, float]:
    """(Time one replica takes to drain ``n_requests`` identical requests, its mean batch). [s], [sequences]

    Parameters
    ----------
    rep : xlplan.evidence.predict.Replica
        The benchmark's replica: its scenario (step budget, prefix reuse, attention convention) and serving replica.
    n_requests : int
        Requests on the replica, all submitted at t = 0. [requests]
    isl : float
        Each request's prompt. [tokens]
    osl : float
        Each request's output (rounded to whole tokens, at least 1). [tokens]
    batch_cap : float
        The most sequences the replica runs at once (:func:`xlplan.evidence.predict.batch_caps`), rounded down to whole
        sequences, at least 1. [sequences]
    repeat_waves : bool
        Count whole waves once the period is found (:func:`drain_schedule`). [bool]

    Returns
    -------
    makespan_s : float
        From the submission to the last request's last token: each step of :func:`drain_schedule` timed by the
        serving model. [s]
    mean_batch : float
        Sequences running (decoding, or prefilling a chunk in the step), averaged over that time. [sequences]

    References
    ----------
    Sarathi-Serve (Agrawal et al., OSDI 2024): chunked prefill sharing steps with decode. vLLM's scheduler
    (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    """
    s, r = rep.s, rep.r
    prompt = max(float(isl), 1.0)
    cached = min(float(math.floor(prompt * s.prefix_reuse)), prompt - 1.0)
    slots = max(1, math.floor(batch_cap + 1e-9))
    sched = drain_schedule(n_requests, slots, chunk_tokens(s), prompt, max(1, round(osl)), cached, repeat_waves)
    runs, running, load = _loads(sched, prompt, cached, s.causal_attention, r.window)
    seconds = runs * step.step_time_s(r, load)
    total = float(seconds.sum())
    if total <= 0.0:
        return 0.0, 0.0
    return total, float((seconds * running).sum() / total)


def _loads(sched: DrainSchedule, prompt: float, cached: float, causal: bool, window: float) -> tuple:
    """(how many steps each load stands for, the sequences it runs, the loads as one
    :class:`~xlplan.serving.step_inputs.StepLoad` of arrays): each record's decodes at their context and its chunks with their
    token-key pairs, the cache they read (the continued prompt's prefix, each new prompt's cached part) as the
    simulator counts them; running is the decodes and the prompts given a chunk. [—]"""
    import numpy as np

    weight, steps, b, context, cont, done, whole, started = _each_step(sched)
    fresh = prompt - cached
    keys_cont = step_inputs.prefill_keys(cont, done, causal)
    keys_fresh = step_inputs.prefill_keys(fresh, cached, causal)
    keys_started = step_inputs.prefill_keys(started, cached, causal)
    keys = keys_cont + whole * keys_fresh + keys_started
    if window == math.inf:
        keys_window = keys
    else:
        keys_window = (np.minimum(keys_cont, window * cont) + whole * min(keys_fresh, window * fresh)
                       + np.minimum(keys_started, window * started))
    prefill = cont + whole * fresh + started
    prefix = np.where(cont > 0, done, 0.0) + cached * (whole + (started > 0))
    per_decode = np.divide(context, b, out=np.zeros_like(b), where=b > 0)
    running = b + (cont > 0) + whole + (started > 0)
    return weight * steps, running, step_inputs.mixed_step(b, per_decode, prefill, keys, keys_window, prefix, window)


def _each_step(sched: DrainSchedule) -> tuple:
    """The schedule's columns with each run of long-prompt chunks spread into its steps (a decode-only run stays one
    record: its step time is linear in the context, so its mean context times it exactly). [—]"""
    import numpy as np

    cols = (sched.weight, sched.steps, sched.decodes, sched.context, sched.continued, sched.continued_done,
            sched.whole, sched.started)
    ramp = (sched.steps > 1) & (sched.continued > 0)
    if not ramp.any():
        return cols
    per = np.where(ramp, sched.steps, 1).astype(np.int64)
    idx = np.repeat(np.arange(len(per)), per)
    offset = np.arange(len(idx)) - np.repeat(np.cumsum(per) - per, per)  # the step's place in its record
    weight, steps, b, context, cont, done, whole, started = (x[idx] for x in cols)
    steps = np.where(ramp[idx], 1.0, steps)
    return weight, steps, b, context + offset * b, cont, done + offset * cont, whole, started


def drain_output_tok_s(rep, n_requests: float, isl: float, osl: float, replicas: int,
                       batch_cap: float) -> tuple[float, float]:
    """(Output tokens/s of the whole system draining ``n_requests`` identical requests, the busiest replica's mean
    batch). [tokens/s], [sequences]

    Parameters
    ----------
    rep : xlplan.evidence.predict.Replica
        The benchmark's replica (:func:`xlplan.evidence.predict.replica_for`).
    n_requests : float
        Requests submitted at once to the whole system (``num_prompts``), rounded to whole requests. [requests]
    isl : float
        Each request's prompt. [tokens]
    osl : float
        Each request's output. [tokens]
    replicas : int
        Replicas sharing the requests evenly. [replicas]
    batch_cap : float
        The most sequences one replica runs at once (:func:`xlplan.evidence.predict.batch_caps`). [sequences]

    Returns
    -------
    output_tok_s : float
        ``n_requests × osl ÷`` the busiest replica's drain time (:func:`replica_drain_s` of ``ceil(n ÷
        replicas)`` requests); 0 when no request or no batch. [tokens/s]
    mean_batch : float
        Sequences running on that replica (decoding, or prefilling a chunk), averaged over its drain's time
        (:func:`replica_drain_s`). [sequences]

    References
    ----------
    Sarathi-Serve (Agrawal et al., OSDI 2024): chunked prefill sharing steps with decode. vLLM's scheduler
    (vllm/v1/core/sched/scheduler.py): decodes first, then prefill up to ``max_num_batched_tokens``.
    """
    n = int(round(n_requests))
    if n <= 0 or batch_cap <= 0 or replicas <= 0:
        return 0.0, 0.0
    busiest = -(-n // int(replicas))
    seconds, batch = replica_drain_s(rep, busiest, isl, osl, batch_cap)
    if seconds <= 0.0:
        return 0.0, 0.0
    return n * osl / seconds, batch
