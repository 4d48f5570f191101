"""Does the planned fleet keep the promise at peak? A discrete-event simulation of continuous batching.

The closed form sizes the fleet from averages; whether p95 TTFT and ITL hold under random arrivals is a
queueing question. This module answers it with the plan's own physics: every engine step is timed by
:func:`xlplan.serving.step_time_fn` (the serving model), each replica's KV cache holds what the engine's
memory rule gives (:func:`xlplan.steps.kv_budget_gib`), and the scheduler is vLLM's: running sequences decode
first, then waiting prompts are prefilled in chunks up to ``max_num_batched_tokens``; a cache that cannot take
the next token preempts the newest sequence, which is recomputed later.

Notes
-----
- **Arrivals**: Poisson at the peak rate, or bursty (gamma inter-arrival times with squared coefficient of
  variation ``cv2`` > 1), or given (a log's timestamps). **Lengths**: the plan's fitted lognormals (clipped at the
  model's context limit), or given (a log's). **Routing**: least loaded (fewest requests queued and running).
- **Measurement**: the first ``warmup`` seconds are discarded — max(60 s, 10% of the run) — and requests that
  arrive before the end are followed until they finish or the drain cap (max(60 s, 20% of the run)) passes; one
  still waiting then counts its time so far, a lower bound. ITL is pooled over token gaps: every decode step of
  the measured window contributes its duration once per sequence it advanced; TPOT is per request,
  ``(finish − first token) ÷ (output − 1)``. The run is stable when p95 TTFT over the two halves of the measured
  window agree within 10% of the larger or of the TTFT target; a run keeps the promise only when it is stable, its
  TTFT is within target and its ITL is within target or undefined (no second token decoded). A run lasts max(10 minutes, 20,000 arrivals) unless
  told, at most 6 hours.
- **Prefix reuse**: the plan's reused share of each prompt is held in the cache from admission but not computed.
- **Sliding-window layers** hold at most the window: a sequence of ``n`` tokens holds ``a·n + (1 − a)·min(n, W)``
  of every layer's cache (``a`` the share of full-attention layers), as the planner counts it and vLLM's hybrid KV
  cache manager allocates it (``_Run.start_step``).

References
----------
vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
budget, recompute preemption of the newest request. Little's Law (Little, Operations Research 9(3), 1961) holds
inside the run and is tested; M/D/1 waiting time by the Pollaczek–Khinchine formula.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from array import array
from collections import deque
from dataclasses import dataclass
from heapq import heappop, heappush, heapreplace

from xlplan import serving, steps
from xlplan.scenario import RUNBOOK_UNBOUNDED, Scenario
from xlplan.units import GIB

RUNBOOK_CHUNK_TOKENS = 512
"""The prefill chunk the simulation schedules when the plan's engine sets no step budget (the runbook's): vLLM's
long-prefill chunk size, small enough that a 2,000-token prompt does not stall every decode for one long step. A plan
that sets ``policy.max_num_batched_tokens`` (or names an engine: vLLM's 8,192 on an H100) is simulated with its own. [tokens]"""

DEFAULT_SEED = 1

VERIFY_SEEDS = 3
"""Seeds a verified fleet must keep the promise on, all of them: the run's seed and the next ones. One seed's
minimum can rest on a lucky draw of arrivals; a fleet to order from must hold on each. A replayed log is one
workload, so there it is the only one. [seeds]"""
"""The seed of a run nobody asked to vary: runs are reproducible, and every fleet size sees the same requests. [—]"""

MIN_MINUTES = 10.0
"""The shortest default run. [minutes]"""

MIN_REQUESTS = 20_000
"""A default run lasts until this many requests have arrived (p95 then rests on about 1,000 requests above it). [requests]"""

MAX_MINUTES = 360.0
"""The longest default run, and the most ``--minutes`` accepts. [minutes]"""

MAX_REQUESTS = 2_000_000
"""The most requests one run simulates: beyond it a run takes minutes, not seconds. [requests]"""

SMALLEST_STEP_BUDGET = 256
"""The smallest step token budget the advice suggests: where the inter-token promise is missed at the load and the
plan's budget is above this, a smaller ``policy.max_num_batched_tokens`` is named as the lever (shorter prefill
chunks stall each decode step less). [tokens]"""

STABLE_SPREAD = 0.10
"""A run is stable when p95 TTFT over the two halves of its measured window differ by at most this fraction of the
larger, or by at most this fraction of the TTFT target. [fraction]"""


def default_minutes(peak_rps: float) -> float:
    """How long a run lasts unless told: max(10 minutes, the time for 20,000 arrivals), at most 6 hours. [minutes]

    Parameters
    ----------
    peak_rps : float
        The plan's peak arrival rate. [requests/s]

    Returns
    -------
    float
        Length of the run's arrivals, between :data:`MIN_MINUTES` and :data:`MAX_MINUTES`. [minutes]

    Examples
    --------
    >>> default_minutes(40.0)   # the reference plan: 24,000 requests in 10 minutes
    10.0
    >>> round(default_minutes(10.0), 2)   # 20,000 requests at 10 req/s
    33.33
    """
    return min(max(MIN_MINUTES, MIN_REQUESTS / peak_rps / 60.0), MAX_MINUTES)


def too_many_requests(expected: float) -> bool:
    """Whether a run expecting ``expected`` arrivals is past :data:`MAX_REQUESTS`, allowing the float's rounding.

    Parameters
    ----------
    expected : float
        Rate × span of the run. [requests]

    Returns
    -------
    bool
        True past ``MAX_REQUESTS × (1 + 1e-9)``: :func:`run_minutes`' span, which holds exactly ``MAX_REQUESTS``
        in real arithmetic, passes. [1]
    """
    return expected > MAX_REQUESTS * (1.0 + 1e-9)


def run_minutes(peak_rps: float) -> float:
    """A verification run's span: :func:`default_minutes`, shortened so it holds at most :data:`MAX_REQUESTS`. [minutes]

    Parameters
    ----------
    peak_rps : float
        The run's arrival rate. [requests/s]

    Returns
    -------
    float
        ``min(default_minutes(peak_rps), MAX_REQUESTS ÷ (peak_rps × 60))``, so ``peak_rps × 60 × minutes`` never
        exceeds :data:`MAX_REQUESTS` (the check in :func:`workload_for` allows for the rounding). [minutes]

    Examples
    --------
    >>> run_minutes(40.0)      # 24,000 requests in 10 minutes
    10.0
    >>> round(run_minutes(5000.0), 4)   # 2,000,000 requests ÷ 5,000/s = 400 s
    6.6667
    """
    return min(default_minutes(peak_rps), MAX_REQUESTS / (peak_rps * 60.0))


def chunk_tokens(s: Scenario) -> int:
    """The step's token budget the simulation schedules with: the plan's, else :data:`RUNBOOK_CHUNK_TOKENS`. [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers; its ``max_num_batched_tokens`` is the engine's step budget (unbounded: none set).

    Returns
    -------
    int
        Tokens one step may carry, decodes and prefill chunks together. [tokens]

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request.
    """
    budget = s.max_num_batched_tokens
    return RUNBOOK_CHUNK_TOKENS if budget >= RUNBOOK_UNBOUNDED else int(budget)


@dataclass(frozen=True)
class Workload:
    """The requests a run serves: arrival times and lengths. [s], [tokens]"""

    arrival_s: tuple[float, ...] | object  # numpy array
    prompt_tokens: tuple[int, ...] | object
    output_tokens: tuple[int, ...] | object


@dataclass(frozen=True)
class Quantiles:
    """p50, p95, p99 of a sample. [unit of the sample]"""

    p50: float
    p95: float
    p99: float


@dataclass(frozen=True)
class KVUse:
    """Share of the KV cache in use, time-weighted over the measured window. [fraction]"""

    mean: float
    p95: float
    max: float


@dataclass(frozen=True)
class SimResult:
    """One run at peak. Units in the field comments."""

    gpus: int  # [GPUs]
    replicas: int  # [replicas]
    tp: int  # [GPUs per replica]
    requests: int  # measured: arrived after the warm-up [requests]
    simulated_s: float  # arrivals span [s]
    ttft_s: Quantiles  # [s]
    itl_s: Quantiles  # token gaps, pooled [s]
    tpot_s: Quantiles  # per request [s/token]
    mean_in_flight: float  # time average over the measured window [requests]
    mean_time_in_system_s: float  # over measured requests [s]
    arrival_rate_rps: float  # measured requests ÷ measured window [requests/s]
    kv_utilisation: KVUse  # [fraction]
    output_tok_s: float  # tokens generated per second over the measured window, every replica [tokens/s]
    preemptions: int  # [requests]
    percentile: float  # the promise's percentile [percent]
    meets_promise: bool  # TTFT and ITL at the percentile within the targets
    ttft_at_percentile_s: float  # [s]
    itl_at_percentile_s: float  # [s]
    stable: bool  # p95 TTFT over the two halves of the window within 10% (of the larger, or of the target)
    unfinished: int  # measured requests still unfinished at the drain cap [requests]
    itl_defined: bool = True  # some measured sequence decoded a second token (one-token outputs have no gaps) [bool]
    lost_replicas: int = 0  # replicas that failed at the start of the measured window [replicas]
    requeued: int = 0  # requests the failed replicas held, sent to the others to prefill again [requests]


def warmup_s(duration_s: float) -> float:
    """Seconds discarded at the start of a run: max(60 s, 10% of it), at most half of it. [s]

    Parameters
    ----------
    duration_s : float
        The span of the run's arrivals. [s]

    Returns
    -------
    float
        The warm-up: requests arriving before it are not measured. [s]
    """
    return min(max(60.0, 0.1 * duration_s), 0.5 * duration_s)


def drain_cap_s(duration_s: float) -> float:
    """How long past the last arrival the run follows measured requests: max(60 s, 20% of it). [s]

    Parameters
    ----------
    duration_s : float
        The span of the run's arrivals. [s]

    Returns
    -------
    float
        Time after the end of the arrivals at which the run stops following unfinished requests. [s]
    """
    return max(60.0, 0.2 * duration_s)


def poisson_workload(s: Scenario, duration_s: float, seed: int, cv2: float = 1.0, rate_rps: float | None = None,
                     max_context: int | None = None) -> Workload:
    """Arrivals at the plan's peak (Poisson, or gamma with squared CV ``cv2``) and lengths from its fitted lognormals.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its peak rate and its prompt and output p50/p95/p99.
    duration_s : float
        Span of the arrivals: requests arriving before it are drawn. [s]
    seed : int
        Seed of the random generator, so a run is reproducible. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty (gamma). [1]
    rate_rps : float, optional
        Arrival rate to draw at instead of the plan's peak. [requests/s]
    max_context : int, optional
        The model's context limit: prompts are clipped below it and outputs to what it leaves. [tokens]

    Returns
    -------
    Workload
        The requests: arrival times from zero [s] and prompt and output lengths of at least 1 token [tokens].
    """
    import numpy as np

    from xlplan import distributions

    rng = np.random.default_rng(seed)
    rate = s.peak_rps if rate_rps is None else rate_rps
    n = int(rate * duration_s * 1.2 + 50)
    if cv2 == 1.0:
        gaps = rng.exponential(1.0 / rate, n)
    else:
        shape = 1.0 / cv2
        gaps = rng.gamma(shape, 1.0 / (rate * shape), n)
    times = np.cumsum(gaps)
    times = times[times < duration_s]
    m = len(times)
    out = []
    for p50, p95, p99 in ((s.prompt_p50, s.prompt_p95, s.prompt_p99), (s.output_p50, s.output_p95, s.output_p99)):
        median, sigma = distributions.fit_lognormal(p50, p95, p99)
        x = median * np.exp(sigma * rng.standard_normal(m))
        out.append(np.maximum(1, np.rint(x)).astype(np.int64))
    prompt, output = out
    if max_context:
        prompt = np.minimum(prompt, max(1, max_context - 1))
        output = np.minimum(output, np.maximum(1, max_context - prompt))
    return Workload(times, prompt, output)


def replayed_workload(t_s, prompt, output, minutes: float) -> Workload:
    """A log's busiest ``minutes`` (by requests), replayed as it happened: its arrival times and its lengths.

    A log shorter than ``minutes`` is replayed whole. Times are shifted to start at zero. [s], [tokens]

    Parameters
    ----------
    t_s : array
        Arrival time of each logged request, Unix time. [s]
    prompt : array
        Prompt length of each request. [tokens]
    output : array
        Output length of each request. [tokens]
    minutes : float
        Length of the busiest span to replay. [minutes]

    Returns
    -------
    Workload
        The span's requests in arrival order: times from zero [s] and lengths rounded, at least 1 token [tokens].
    """
    import numpy as np

    t = np.asarray(t_s, dtype=float)
    order = np.argsort(t, kind="stable")
    t, p, o = t[order], np.asarray(prompt)[order], np.asarray(output)[order]
    span = minutes * 60.0
    ends = np.searchsorted(t, t + span, side="left")
    i = int(np.argmax(ends - np.arange(len(t))))
    j = int(ends[i])
    return Workload(t[i:j] - t[i], np.maximum(np.rint(p[i:j]), 1).astype(np.int64),
                    np.maximum(np.rint(o[i:j]), 1).astype(np.int64))


def resampled_workload(s: Scenario, prompt, output, duration_s: float, seed: int, cv2: float = 1.0) -> Workload:
    """Arrivals at the plan's peak (Poisson, or gamma with squared CV ``cv2``), lengths drawn from a log's requests
    (a prompt and its output kept together). [s], [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its peak rate sets the arrivals.
    prompt : array
        Prompt length of each logged request. [tokens]
    output : array
        Output length of each logged request. [tokens]
    duration_s : float
        Span of the arrivals. [s]
    seed : int
        Seed of the arrivals; the lengths are drawn with ``seed + 1``. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty (gamma). [1]

    Returns
    -------
    Workload
        Arrival times from zero [s] and, for each, a logged request's prompt and output, at least 1 token [tokens].
    """
    import numpy as np

    base = poisson_workload(s, duration_s, seed, cv2)
    rng = np.random.default_rng(seed + 1)
    k = rng.integers(0, len(prompt), len(base.arrival_s))
    p, o = np.asarray(prompt)[k], np.asarray(output)[k]
    return Workload(base.arrival_s, np.maximum(np.rint(p), 1).astype(np.int64), np.maximum(np.rint(o), 1).astype(np.int64))


def kv_capacity_tokens(s: Scenario, tp: int) -> float:
    """Tokens one replica's KV cache holds at plan time, in tokens of every layer (a sliding-window layer's share is
    clipped where the run counts what each sequence holds). [tokens]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: the engine's memory rule, KV bytes per token and layer, layers.
    tp : int
        GPUs in the replica (tensor parallel). [GPUs]

    Returns
    -------
    float
        ``max(KV budget per GPU, 0) × shards ÷ (KV bytes per token and layer × layers)``. [tokens]
    """
    shards = steps.kv_shards(s, tp)
    return max(steps.kv_budget_gib(s, tp), 0.0) * GIB * shards / (s.kv_bytes_per_token_layer * s.layers)


class _Replica:
    __slots__ = ("busy", "waiting", "prefilling", "dec", "heap", "order", "b", "sum_c", "k", "sum_prefill", "pending")

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


COMPILED = True
"""Whether runs use the compiled loop (:mod:`xlplan.sim_kernel`) where numba is installed; the Python loop gives the
same figures (a test runs both). [bool]"""

ROUTING_HEAP_REPLICAS = 16
"""From this many replicas routing finds the least loaded with a heap rather than a scan: the same replica. [replicas]"""


def _load_heap(loads: list) -> list:
    """(load, replica) of every replica, as a heap: its first entry is the least loaded, the first of equals. [—]"""
    h = [(load, j) for j, load in enumerate(loads)]
    heapq.heapify(h)
    return h


class _Run:
    """The event loop of one simulation (state of every request and replica)."""

    def __init__(self, s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, lost: int = 0):
        import numpy as np

        r = steps.replica(s, tp)
        self.replica = r
        self.step_time = serving.step_time_fn(r)
        self.cap = kv_capacity_tokens(s, tp)
        if self.cap < 1.0:
            raise steps.PlanningError(f"at TP {tp} the weights leave no room for the KV cache; expected a positive budget")
        self.budget = float(chunk_tokens(s))
        self.max_seqs = int(min(s.max_num_seqs, 10**9))
        self.window = float(s.window) if s.window_layers else math.inf
        self.full_share = (s.layers - s.window_layers) / s.layers if s.window_layers else 1.0  # layers caching it all
        self.causal = s.causal_attention
        self.reuse = s.prefix_reuse
        self.arrivals = np.asarray(workload.arrival_s, dtype=float)
        self.output0 = np.asarray(workload.output_tokens, dtype=np.int64)
        n = len(self.arrivals)
        self.prompt = np.asarray(workload.prompt_tokens, dtype=float).tolist()  # grows on recompute after preemption
        self.output = self.output0.astype(int).tolist()  # tokens still to generate, the prefill step's one included
        self.first_token = [math.nan] * n
        self.finish = [math.nan] * n
        self.last_token = [math.nan] * n
        self.resumed = [False] * n
        self.gaps_extra: list[float] = []  # token gaps across a preemption
        self.duration = duration_s
        self.warm = warmup_s(duration_s)
        self.stop = duration_s + drain_cap_s(duration_s)
        self.reps = [_Replica() for _ in range(replicas)]
        self.loads = [0] * replicas
        self.events: list[tuple[float, int]] = []
        self.first_in_window = 0  # first tokens sampled inside the measured window
        # measured steps: duration, decodes, cache in use; typed arrays, which numpy reads without a copy
        self.step_t = array("d")  # [s]
        self.step_b = array("q")  # [sequences]
        self.kv_held = array("d")  # tokens the step holds in the cache (its share: measured, ÷ capacity) [tokens]
        self.preemptions = 0
        if not 0 <= lost < replicas:
            raise ValueError(f"lost: got {lost} of {replicas} replicas; expected 0 to {replicas - 1}")
        self.lost = lost
        self.loss_at = self.warm if lost else math.inf  # the failure: at the start of the measured window
        self.dead = [False] * replicas
        self.requeued = 0
        self.decided_miss = False  # stopped early: the TTFT promise is already missed whatever the rest does
        self.watch_ttft_s = math.inf  # the TTFT target to watch for a certain miss (inf: run to the end)
        self.percentile = 95.0  # the promise's percentile, for the watch [percent]
        self.compiled = COMPILED  # run on the compiled loop (xlplan.sim_kernel) where it applies [bool]

    def run(self) -> None:
        """Serve every arrival, in time order, until the last step ends or the drain cap passes.

        One loop, the hot path of every run: a step's end (its finished sequences leave, its prefill chunks land)
        and the next step's start (decodes first, preempting the newest while the cache is full, then prefill chunks
        in the remaining budget) are done inline on local variables, with the same arithmetic in the same order as
        :meth:`start_step` (which the failure path still calls), so every step time, and so every event, is the same
        to the last bit. Events are (end time, replica) pairs, one per busy replica: unique, so the heap pops them in
        one order however it is laid out.
        """
        if self.compiled and self.window == math.inf and self.replicas_serving_from_start:
            from xlplan import sim_kernel  # numpy and numba load with the first run, never at import

            if sim_kernel.AVAILABLE:
                self._run_compiled(sim_kernel)
                return
        events = self.events
        arrivals = self.arrivals.tolist()  # plain floats: the same values as the array's, faster to read
        n, nxt = len(arrivals), 0
        reps, loads, dead = self.reps, self.loads, self.dead  # loads: requests queued or running on each replica
        # Least-loaded routing, the first of equals: min() over the loads on a few replicas; on many, a heap of (load,
        # replica) kept lazily (an entry is current while it matches loads[replica]; each change pushes the new
        # pair), whose first current entry is the same replica min() finds, in O(log replicas).
        many = len(reps) >= ROUTING_HEAP_REPLICAS
        lheap = _load_heap(loads) if many else None
        lheap_cap = 4 * len(reps) + 64
        prompt, output, resumed, last_token = self.prompt, self.output, self.resumed, self.last_token
        first_token, finish, gaps_append = self.first_token, self.finish, self.gaps_extra.append
        step_t_append, step_b_append, kv_append = self.step_t.append, self.step_b.append, self.kv_held.append
        f, cap, window, budget, max_seqs = self.step_time, self.cap, self.window, self.budget, self.max_seqs
        causal, reuse = self.causal, self.reuse
        warm, duration, stop = self.warm, self.duration, self.stop
        inf, floor = math.inf, math.floor
        unwindowed = window == inf
        first_in_window = 0
        t_arr = arrivals[0] if n else inf
        loss_at = self.loss_at
        # Early stop (only when watch_ttft_s is set; see _verdict): the measured requests are m_lo..m_hi-1 (arrivals
        # in order); `ok`/`late` count those whose first token came within/over the target, `w` those arrived before
        # `min(now, duration) − target`, each of which is late already or still waiting past the target.
        target = self.watch_ttft_s
        watch = target < inf and n > 0 and all(x <= y for x, y in zip(arrivals, arrivals[1:]))
        m_lo = m_hi = w = need = ok = late = 0
        margin = 1e-9 * max(1.0, target) if watch else 0.0
        if watch:
            m_lo = int(self.arrivals.searchsorted(warm, side="left"))
            m_hi = int(self.arrivals.searchsorted(duration, side="left"))
            count = m_hi - m_lo
            watch = count > 0
            need = count - math.floor((count - 1) * (self.percentile / 100.0)) + 1
            w = m_lo
        while True:
            if events:
                now, i = events[0]
            else:
                now = inf
            if now <= t_arr:  # a step ends first (a tie goes to the step)
                if now == inf:  # nothing left: no step in flight, no arrival to come
                    break
                if loss_at <= now:
                    self.lose(loss_at)
                    loss_at = self.loss_at
                    lheap = _load_heap(loads) if many else None
                    continue
                if now > stop:
                    break
                if dead[i]:  # a failed replica's step in flight never ends
                    heappop(events)
                    continue
                from_step = True
                rp = reps[i]
                k, b, sum_c, sp = rp.k, rp.b, rp.sum_c, rp.sum_prefill
                # the step's end: sequences whose last token this step was leave
                heap = rp.heap
                if heap and heap[0][0] <= k:
                    dec = rp.dec
                    while heap and heap[0][0] <= k:
                        kf, rid = heappop(heap)
                        got = dec.get(rid)
                        if got is None or got[1] != kf:
                            continue
                        del dec[rid]
                        b -= 1
                        sum_c -= got[0]
                        finish[rid] = now
                        loads[i] -= 1
                        if many:
                            heappush(lheap, (loads[i], i))
                # its prefill chunks land; a prompt that is in has sampled its next token
                pending = rp.pending
                if pending:
                    for entry, chunk in pending:
                        entry[1] += chunk
                        sp += chunk
                        rid, done = entry
                        if done >= prompt[rid] - 1e-9:
                            rp.prefilling.remove(entry)
                            sp -= done
                            if resumed[rid]:
                                gaps_append(now - last_token[rid])
                            else:
                                first_token[rid] = now
                                if warm <= now < duration:
                                    first_in_window += 1
                                if watch and m_lo <= rid < m_hi:
                                    if now - arrivals[rid] <= target:
                                        ok += 1
                                    else:
                                        late += 1
                            if output[rid] <= 1:
                                finish[rid] = now
                                loads[i] -= 1
                                if many:
                                    heappush(lheap, (loads[i], i))
                                continue
                            kf = k + output[rid] - 1
                            c = prompt[rid] - k
                            rp.dec[rid] = (c, kf)
                            heappush(heap, (kf, rid))
                            rp.order.append(rid)
                            b += 1
                            sum_c += c
                    rp.pending = []
                k += 1
                rp.k = k
            else:
                if loss_at <= t_arr:
                    self.lose(loss_at)
                    loss_at = self.loss_at
                    lheap = _load_heap(loads) if many else None
                    continue
                rid, nxt = nxt, nxt + 1
                now = t_arr
                if watch:
                    x = (now if now < duration else duration) - target - margin
                    while w < m_hi and arrivals[w] < x:
                        w += 1
                    if late >= need or (w - m_lo) - ok >= need:
                        self.decided_miss = True
                        break
                t_arr = arrivals[nxt] if nxt < n else inf
                if many:
                    if len(lheap) > lheap_cap:
                        lheap = _load_heap(loads)
                    while True:
                        load, i = lheap[0]
                        if loads[i] == load:
                            break
                        heappop(lheap)
                    loads[i] = load + 1
                    heapreplace(lheap, (load + 1, i))
                else:
                    i = loads.index(min(loads))  # least loaded, the first of equals
                    loads[i] += 1
                rp = reps[i]
                rp.waiting.append(rid)
                if rp.busy:
                    continue
                from_step = False
                k, b, sum_c, sp = rp.k, rp.b, rp.sum_c, rp.sum_prefill
            if not unwindowed:  # window layers hold at most the window: the cache is counted in start_step
                rp.b, rp.sum_c, rp.sum_prefill = b, sum_c, sp
                if from_step:
                    heappop(events)
                self.start_step(i, now)
                continue
            # the next step: decodes first, room for one token each, preempting the newest while the cache is full
            used = sum_c + b * k + sp
            if b and used + b > cap:
                order, dec = rp.order, rp.dec
                while b and used + b > cap:
                    rid = order.pop()
                    if rid not in dec:
                        continue
                    c, kf = dec.pop(rid)
                    b -= 1
                    sum_c -= c
                    generated = output[rid] - (kf - k + 1)
                    prompt[rid] += generated
                    output[rid] -= generated
                    resumed[rid] = True
                    last_token[rid] = now
                    rp.waiting.appendleft(rid)
                    self.preemptions += 1
                    used = sum_c + b * k + sp
            ctx_sum = sum_c + b * k
            dec_keys_w = (ctx_sum if unwindowed else min(ctx_sum, b * window)) if b else 0.0
            # prefill in the remaining token budget: partly prefilled requests first, then the queue (FIFO)
            pre = pre_keys = pre_keys_w = kv_pre = kv_pre_w = 0.0
            prefilling, waiting = rp.prefilling, rp.waiting
            chunks = []
            if prefilling or waiting:
                room = budget - b
                free = cap - used - b
                for entry in prefilling:
                    if room < 1 or free < 1:
                        break
                    done = entry[1]
                    chunk = prompt[entry[0]] - done  # min(left, room, free), the first of equals as min() takes
                    if room < chunk:
                        chunk = room
                    if free < chunk:
                        chunk = free
                    chunks.append((entry, chunk))
                    room -= chunk
                    free -= chunk
                    keys = chunk * done + (chunk * (chunk + 1.0) / 2.0 if causal else chunk * chunk)
                    pre += chunk
                    pre_keys += keys
                    if unwindowed:
                        pre_keys_w += keys
                        kv_pre += done
                        kv_pre_w += done
                    else:
                        pre_keys_w += min(keys, window * chunk)
                        kv_pre += done
                        kv_pre_w += min(done, window)
                running = b + len(prefilling)
                while waiting and room >= 1 and free >= 1 and running < max_seqs:
                    rid = waiting[0]
                    cached = 0.0 if resumed[rid] else floor(prompt[rid] * reuse)  # a prefix-cache hit: held, not computed
                    want = prompt[rid] - cached
                    if room < want:
                        want = room
                    if want + cached > free:  # admitted only when its next chunk fits the cache
                        break
                    waiting.popleft()
                    entry = [rid, cached]
                    sp += cached
                    prefilling.append(entry)
                    running += 1
                    chunks.append((entry, want))
                    room -= want
                    free -= want + cached
                    keys = want * cached + (want * (want + 1.0) / 2.0 if causal else want * want)
                    pre += want
                    pre_keys += keys
                    if unwindowed:
                        pre_keys_w += keys
                        kv_pre += cached
                        kv_pre_w += cached
                    else:
                        pre_keys_w += min(keys, window * want)
                        kv_pre += cached
                        kv_pre_w += min(cached, window)
            rp.b, rp.sum_c, rp.sum_prefill = b, sum_c, sp
            if b == 0 and pre == 0:
                rp.busy = False
                if from_step:
                    heappop(events)
                continue
            t = f(b, ctx_sum, dec_keys_w, pre, pre_keys, pre_keys_w, ctx_sum + kv_pre, dec_keys_w + kv_pre_w)
            rp.busy = True
            rp.pending = chunks
            if warm <= now < duration:
                step_t_append(t)
                step_b_append(b)
                kv_append(used + b + pre)
            if from_step:
                heapreplace(events, (now + t, i))
            else:
                heappush(events, (now + t, i))
        self.first_in_window += first_in_window
    @property
    def replicas_serving_from_start(self) -> bool:
        """Whether the run starts fresh (no step run yet): the compiled loop starts from an empty fleet. [bool]"""
        return not self.events and all(rp.k == 0 and not rp.waiting for rp in self.reps)

    def _watch(self):
        """(watch, m_lo, m_hi, need, margin): the early stop's bounds, as :meth:`run` computes them. [—]"""
        arrivals, target = self.arrivals, self.watch_ttft_s
        n = len(arrivals)
        watch = bool(target < math.inf and n > 0 and (n == 1 or bool((arrivals[1:] >= arrivals[:-1]).all())))
        m_lo = m_hi = need = 0
        margin = 1e-9 * max(1.0, target) if watch else 0.0
        if watch:
            m_lo = int(arrivals.searchsorted(self.warm, side="left"))
            m_hi = int(arrivals.searchsorted(self.duration, side="left"))
            count = m_hi - m_lo
            watch = count > 0
            need = count - math.floor((count - 1) * (self.percentile / 100.0)) + 1
        return watch, m_lo, m_hi, need, margin

    def _run_compiled(self, sim_kernel) -> None:
        """:meth:`run` on the compiled loop (:func:`xlplan.sim_kernel.run`): the same schedule, every figure the same
        to the bit (a test holds them equal); the results land where :meth:`run` leaves them."""
        import numpy as np

        consts = serving.step_constants(self.replica)
        c = np.array([float(consts[x]) for x in serving.STEP_CONSTANTS], dtype=float)
        prompt = np.array(self.prompt, dtype=float)
        output = np.array(self.output, dtype=np.int64)
        watch, m_lo, m_hi, need, margin = self._watch()
        target = float(self.watch_ttft_s) if watch else 0.0
        (first, fin, gaps, step_t, step_b, kv_held, preemptions, in_window, decided, requeued) = sim_kernel.run(
            np.ascontiguousarray(self.arrivals, dtype=float), prompt, output, c, float(self.cap), float(self.budget),
            int(self.max_seqs), bool(self.causal), float(self.reuse), float(self.warm), float(self.duration),
            float(self.stop), len(self.reps), int(self.lost), float(self.loss_at), watch, target, m_lo, m_hi, need,
            float(margin))
        self.first_token, self.finish = first, fin
        self.prompt, self.output = prompt, output
        self.gaps_extra = gaps.tolist()
        self.step_t, self.step_b, self.kv_held = step_t, step_b, kv_held
        self.preemptions += int(preemptions)
        self.first_in_window += int(in_window)
        self.decided_miss = bool(decided)
        self.requeued = int(requeued)

    def lose(self, now: float) -> None:
        """The last ``lost`` replicas fail at ``now``: their caches are gone, the step in flight is lost, and every
        request they held goes to the least loaded survivor to prefill again — a decoding one with the tokens it had
        generated (they are recomputed, as after a preemption; the gap counts in ITL), one still prefilling from the
        start. Routing never picks a failed replica again."""
        reps, loads, output, prompt = self.reps, self.loads, self.output, self.prompt
        held = []
        for i in range(len(reps) - self.lost, len(reps)):
            rp, k = reps[i], reps[i].k
            for rid, (_c, kf) in rp.dec.items():
                generated = output[rid] - (kf - k + 1)
                prompt[rid] += generated
                output[rid] -= generated
                self.resumed[rid] = True
                self.last_token[rid] = now
                held.append(rid)
            held += [entry[0] for entry in rp.prefilling]
            held += list(rp.waiting)
            reps[i] = _Replica()
            self.dead[i] = True
            loads[i] = math.inf
        self.loss_at = math.inf
        self.requeued = len(held)
        for rid in sorted(held):  # in order of arrival
            j = loads.index(min(loads))
            loads[j] += 1
            reps[j].waiting.append(rid)
        for j, rp in enumerate(reps):
            if not self.dead[j] and not rp.busy:
                self.start_step(j, now)

    def start_step(self, i: int, now: float) -> None:
        """Start replica ``i``'s next step at ``now``: decodes first, then prefill chunks, as :meth:`run` does inline.

        Parameters
        ----------
        i : int
            The replica. [index]
        now : float
            The time. [s]

        Notes
        -----
        A model with sliding-window layers holds, per sequence of ``n`` tokens, ``a·n + (1 − a)·min(n, W)`` tokens'
        worth of cache (``a`` the share of full-attention layers, ``W`` the window), as the planner counts it
        (:func:`xlplan.memory.kv_bytes_per_conversation`) and vLLM's hybrid KV cache manager allocates it; the
        decodes' share is taken as ``a·S + (1 − a)·min(S, b·W)`` over their summed context ``S``, exact where every
        context is past the window (or none is), and never less than the sum over sequences.
        """
        if self.window != math.inf:
            self._start_windowed_step(i, now)
            return
        rp, cap, window = self.reps[i], self.cap, self.window
        prompt = self.prompt
        k = rp.k
        # 1. decodes first: room for one token each, preempting the newest sequence while the cache is full
        used = rp.sum_c + rp.b * k + rp.sum_prefill
        while rp.b and used + rp.b > cap:
            self._preempt_newest(rp, now)
            used = rp.sum_c + rp.b * k + rp.sum_prefill
        b = rp.b
        ctx_sum = rp.sum_c + b * k
        dec_keys_w = min(ctx_sum, b * window) if b else 0.0
        # 2. prefill in the remaining token budget: partly prefilled requests first, then the queue (FIFO)
        room = self.budget - b
        free = cap - used - b
        chunks = []
        for entry in rp.prefilling:
            if room < 1 or free < 1:
                break
            chunk = min(prompt[entry[0]] - entry[1], room, free)
            chunks.append((entry, chunk))
            room -= chunk
            free -= chunk
        running = b + len(rp.prefilling)
        reuse = self.reuse
        while rp.waiting and room >= 1 and free >= 1 and running < self.max_seqs:
            rid = rp.waiting[0]
            cached = 0.0 if self.resumed[rid] else math.floor(prompt[rid] * reuse)  # a prefix-cache hit: held, not computed
            want = min(prompt[rid] - cached, room)
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
        self._launch(i, now, b, ctx_sum, dec_keys_w, chunks, used + b, True)

    def _preempt_newest(self, rp: _Replica, now: float) -> None:
        """Preempt the newest decoding sequence of ``rp`` at ``now``: its cache is dropped, the tokens it generated join
        its prompt to be recomputed, and it waits at the head of the queue (vLLM's recompute preemption); an entry
        no longer decoding is skipped."""
        rid = rp.order.pop()
        if rid not in rp.dec:
            return
        output, prompt, k = self.output, self.prompt, rp.k
        c, kf = rp.dec.pop(rid)
        rp.b -= 1
        rp.sum_c -= c
        generated = output[rid] - (kf - k + 1)
        prompt[rid] += generated
        output[rid] -= generated
        self.resumed[rid] = True
        self.last_token[rid] = now
        rp.waiting.appendleft(rid)
        self.preemptions += 1

    def _launch(self, i: int, now: float, b: int, ctx_sum: float, dec_keys_w: float, chunks: list, held: float,
                plus_prefill: bool) -> None:
        """Time replica ``i``'s step of ``b`` decodes and ``chunks`` of prefill and put its end on the event heap; idle
        when it carries nothing. ``held`` is the cache the step holds ([tokens]; the chunks' tokens added where
        ``plus_prefill``), recorded with the step inside the measured window."""
        rp, window = self.reps[i], self.window
        pre = pre_keys = pre_keys_w = kv_pre = kv_pre_w = 0.0
        for entry, chunk in chunks:
            done = entry[1]
            keys = chunk * done + (chunk * (chunk + 1.0) / 2.0 if self.causal else chunk * chunk)
            pre += chunk
            pre_keys += keys
            pre_keys_w += min(keys, window * chunk)
            kv_pre += done
            kv_pre_w += min(done, window)
        if b == 0 and pre == 0:
            rp.busy = False
            return
        t = self.step_time(b, ctx_sum, dec_keys_w, pre, pre_keys, pre_keys_w, ctx_sum + kv_pre, dec_keys_w + kv_pre_w)
        rp.busy = True
        rp.pending = chunks
        if self.warm <= now < self.duration:
            self.step_t.append(t)
            self.step_b.append(b)
            self.kv_held.append(held + pre if plus_prefill else held)
        heapq.heappush(self.events, (now + t, i))


    def _start_windowed_step(self, i: int, now: float) -> None:
        """:meth:`start_step` for a model with sliding-window layers: the same schedule, the cache counted with the
        window layers clipped at the window (see :meth:`start_step`)."""
        rp, cap, w = self.reps[i], self.cap, self.window
        prompt = self.prompt
        a = self.full_share
        k = rp.k

        def held(total, count):  # the cache ``count`` sequences of ``total`` tokens hold [tokens of every layer]
            return a * total + (1.0 - a) * min(total, count * w)

        def cost(done, chunk):  # what ``chunk`` more tokens after ``done`` add [tokens of every layer]
            return a * chunk + (1.0 - a) * (min(done + chunk, w) - min(done, w))

        def fitting(done, free):  # the longest chunk after ``done`` whose cost is within ``free`` [tokens]
            below = max(w - done, 0.0)
            if free <= below:
                return free
            return below + (free - below) / a if a > 0 else math.inf

        prefill_held = sum(held(e[1], 1) for e in rp.prefilling)
        # 1. decodes first: room for one token each, preempting the newest sequence while the cache is full
        ctx = rp.sum_c + rp.b * k
        used = held(ctx, rp.b) + prefill_held
        need = held(ctx + rp.b, rp.b) - held(ctx, rp.b)
        while rp.b and used + need > cap:
            self._preempt_newest(rp, now)
            ctx = rp.sum_c + rp.b * k
            used = held(ctx, rp.b) + prefill_held
            need = held(ctx + rp.b, rp.b) - held(ctx, rp.b)
        b = rp.b
        ctx_sum = rp.sum_c + b * k
        dec_keys_w = min(ctx_sum, b * w) if b else 0.0
        # 2. prefill in the remaining token budget: partly prefilled requests first, then the queue (FIFO)
        room = self.budget - b
        free = cap - used - need
        chunks = []
        for entry in rp.prefilling:
            if room < 1 or free < 1:
                break
            done = entry[1]
            chunk = min(prompt[entry[0]] - done, room, fitting(done, free))
            chunks.append((entry, chunk))
            room -= chunk
            free -= cost(done, chunk)
        running = b + len(rp.prefilling)
        reuse = self.reuse
        while rp.waiting and room >= 1 and free >= 1 and running < self.max_seqs:
            rid = rp.waiting[0]
            cached = 0.0 if self.resumed[rid] else math.floor(prompt[rid] * reuse)  # a prefix-cache hit: held, not computed
            want = min(prompt[rid] - cached, room)
            if held(want + cached, 1) > free:  # admitted only when its next chunk fits the cache
                break
            rp.waiting.popleft()
            entry = [rid, cached]
            rp.sum_prefill += cached
            rp.prefilling.append(entry)
            running += 1
            chunks.append((entry, want))
            room -= want
            free -= held(want + cached, 1)
        self._launch(i, now, b, ctx_sum, dec_keys_w, chunks, cap - free, False)


def simulate(s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, percentile: float = 95.0,
             lost: int = 0) -> SimResult:
    """Serve ``workload`` on ``replicas`` replicas of ``tp`` GPUs at the plan's physics; measure against the promise.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: the serving model's physics, the engine's budgets and the promise.
    replicas : int
        Replicas serving the workload, routed to least loaded. [replicas]
    tp : int
        GPUs per replica (tensor parallel). [GPUs]
    workload : Workload
        The requests to serve: arrival times and lengths.
    duration_s : float
        Span of the arrivals measured; the warm-up and the drain cap follow from it. [s]
    percentile : float
        The promise's percentile at which TTFT and ITL are checked. [percent]
    lost : int
        Replicas that fail at the start of the measured window (the end of the warm-up: the start of the peak); the
        requests they held re-queue on the others and prefill again, and everything is measured after the loss.
        [replicas]

    Returns
    -------
    SimResult
        The run measured over its window: latency quantiles, in flight, KV use, preemptions, the verdict.

    Raises
    ------
    PlanningError
        When the weights leave no room for a KV cache at this TP degree.

    References
    ----------
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request.
    """
    run = _Run(s, replicas, tp, workload, duration_s, lost)
    run.run()
    return _measure(s, replicas, tp, run, percentile)


def _verdict(s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, percentile: float = 95.0,
             lost: int = 0) -> tuple[SimResult | None, bool]:
    """(run, verdict) of :func:`simulate`, where only the verdict is needed: the run stops once it has missed. [—]

    The same run as :func:`simulate`, watched: it stops as soon as the TTFT promise is missed whatever happens next,
    and then returns ``(None, False)``; otherwise it runs to the end and returns ``(result, result.meets_promise)``.
    So the verdict is always the full run's; only the figures of a run that missed are not computed.

    Why the miss is certain. Of the M measured requests (arrived in the window), at time T a request that got its
    first token has its final TTFT; one arrived at ``a`` still without one ends with TTFT at least ``min(T, duration)
    − a`` (its first token comes after T, or never, and then it counts up to the run's end, which is past the last
    arrival). Linear interpolation reads the sorted sample at positions ⌊h⌋ and ⌊h⌋ + 1, h = (M − 1)·p/100, and
    never returns less than the lower of the two. So once at least M − ⌊h⌋ + 1 measured TTFTs are certainly over
    the target (one more than needed, against rounding in h; and a 1e-9 relative margin on each bound), p-th
    percentile TTFT is over it, and :func:`verdict` is False however stable the run or whatever its ITL. Counted:
    the requests whose first token came over the target, and, as a lower bound on the late ones, those arrived
    before ``min(T, duration) − target`` less those whose first token came within it. Checked at each arrival.

    Parameters
    ----------
    s : Scenario
        The plan's numbers, as for :func:`simulate`; its ``ttft_s`` is the target watched.
    replicas : int
        Replicas serving the workload. [replicas]
    tp : int
        GPUs per replica. [GPUs]
    workload : Workload
        The requests to serve.
    duration_s : float
        Span of the arrivals measured. [s]
    percentile : float
        The promise's percentile. [percent]
    lost : int
        Replicas that fail at the start of the measured window. [replicas]

    Returns
    -------
    tuple
        The run (None when stopped early) and whether it keeps the promise. [SimResult or None, bool]
    """
    run = _Run(s, replicas, tp, workload, duration_s, lost)
    run.watch_ttft_s = float(s.ttft_s)
    run.percentile = float(percentile)
    run.run()
    if run.decided_miss:
        return None, False
    r = _measure(s, replicas, tp, run, percentile)
    return r, r.meets_promise


def _quantiles(x) -> Quantiles:
    import numpy as np

    if len(x) == 0:
        return Quantiles(math.nan, math.nan, math.nan)
    q = np.percentile(x, [50, 95, 99])
    return Quantiles(float(q[0]), float(q[1]), float(q[2]))


def _pooled_percentiles(values, counts, qs) -> list[float]:
    """``np.percentile(np.repeat(values, counts), qs)`` to the last bit, without building the repeated array. [unit of values]

    The pooled ITL sample repeats each step's duration once per sequence it advanced: tens of millions of entries on
    a large fleet, most of a run's measuring time. Linear interpolation (numpy's default) reads only the two order
    statistics either side of the virtual index ``(N − 1)·q/100``; each is found among the sorted distinct values by
    the cumulative counts, and interpolated with numpy's own formula (``_lerp``), so the figures are unchanged.

    Parameters
    ----------
    values : array
        The sample's values, each standing for ``counts`` entries. [unit of the sample]
    counts : array
        How many times each value occurs, whole and non-negative. [entries]
    qs : sequence of float
        The percentiles. [percent]

    Returns
    -------
    list of float
        The sample's percentile at each of ``qs``; NaN for an empty sample. [unit of the sample]
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return [math.nan for _ in qs]
    order = np.argsort(values)  # equal values may come in any order: the j-th of the sorted sample is the same
    v, cum = values[order], np.cumsum(counts[order])

    def at(j: int) -> float:  # the j-th entry (from 0) of the sorted repeated sample
        return float(v[int(np.searchsorted(cum, j, side="right"))])

    out = []
    for q in qs:
        h = (total - 1) * (q / 100.0)  # numpy: (n − 1) × true_divide(q, 100)
        if h >= total - 1:
            out.append(at(total - 1))
            continue
        lo = math.floor(h)
        gamma = h - lo
        a, b = np.float64(at(lo)), np.float64(at(lo + 1))
        diff = b - a
        out.append(float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma))
    return out


def _weighted_percentile(values, weights, q: float) -> float:
    import numpy as np

    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    if weights.sum() <= 0:
        return math.nan
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, q / 100.0 * cum[-1])])


def _measure(s: Scenario, replicas: int, tp: int, run: _Run, percentile: float) -> SimResult:
    import numpy as np

    arr = run.arrivals
    first = np.asarray(run.first_token, dtype=float)
    fin = np.asarray(run.finish, dtype=float)
    end = min(run.stop, max(np.nanmax(fin) if np.isfinite(fin).any() else run.duration, run.duration))
    sel = (arr >= run.warm) & (arr < run.duration)
    ttft = np.where(np.isnan(first), end - arr, first - arr)[sel]
    out = run.output0[sel]
    done = sel & ~np.isnan(fin)
    tpot = ((fin - first)[done] / np.maximum(run.output0[done] - 1, 1))[run.output0[done] > 1]
    t_in = np.where(np.isnan(fin), end, fin) - arr
    # ITL pooled over token gaps: each measured step once per sequence it advanced, plus the gaps across preemptions
    # (the pooled sample is never built: its percentiles come from the steps' durations and their counts)
    step_t = np.frombuffer(run.step_t, dtype=float) if len(run.step_t) else np.zeros(0)
    step_b = np.frombuffer(run.step_b, dtype=np.int64) if len(run.step_b) else np.zeros(0, dtype=np.int64)
    gap_values = np.concatenate([step_t, np.asarray(run.gaps_extra, dtype=float)]) if run.gaps_extra else step_t
    gap_counts = np.concatenate([step_b, np.ones(len(run.gaps_extra), dtype=np.int64)]) if run.gaps_extra else step_b
    n_gaps = int(gap_counts.sum())
    itl_50, itl_95, itl_99, itl_q = _pooled_percentiles(gap_values, gap_counts, [50.0, 95.0, 99.0, percentile])
    # Little's Law inside the run: the time average of requests in the system over the measured window
    lo, hi = run.warm, run.duration
    overlap = np.clip(np.minimum(np.where(np.isnan(fin), end, fin), hi) - np.maximum(arr, lo), 0.0, None)
    in_flight = float(overlap.sum() / (hi - lo))
    kv_w = step_t
    kv_held = np.frombuffer(run.kv_held, dtype=float) if len(run.kv_held) else np.zeros(0)
    kv_u = np.minimum(kv_held / run.cap, 1.0)  # as min(held / cap, 1) per step
    ttft_q = float(np.percentile(ttft, percentile)) if len(ttft) else math.nan
    mid = (lo + hi) / 2.0
    a1, a2 = ttft[arr[sel] < mid], ttft[arr[sel] >= mid]
    if len(a1) and len(a2):
        h1, h2 = np.percentile(a1, 95), np.percentile(a2, 95)
        stable = bool(abs(h1 - h2) <= STABLE_SPREAD * max(h1, h2, s.ttft_s))
    else:
        stable = False
    del out
    return SimResult(
        gpus=replicas * tp, replicas=replicas, tp=tp, requests=int(sel.sum()), simulated_s=run.duration,
        ttft_s=_quantiles(ttft), itl_s=Quantiles(itl_50, itl_95, itl_99), tpot_s=_quantiles(tpot), mean_in_flight=in_flight,
        mean_time_in_system_s=float(t_in[sel].mean()) if sel.any() else math.nan,
        arrival_rate_rps=float(sel.sum() / (hi - lo)),
        output_tok_s=float((int(step_b.sum()) + run.first_in_window) / (hi - lo)),
        kv_utilisation=KVUse(float((kv_u * kv_w).sum() / kv_w.sum()) if kv_w.sum() > 0 else math.nan,
                             _weighted_percentile(kv_u, kv_w, 95), float(kv_u.max()) if len(kv_u) else math.nan),
        preemptions=run.preemptions, percentile=percentile,
        meets_promise=verdict(ttft_q, itl_q, n_gaps > 0, stable, s.ttft_s, s.itl_s),
        ttft_at_percentile_s=ttft_q, itl_at_percentile_s=itl_q,
        stable=stable, unfinished=int((sel & np.isnan(fin)).sum()), itl_defined=n_gaps > 0,
        lost_replicas=run.lost, requeued=run.requeued,
    )


def verdict(ttft_q_s: float, itl_q_s: float, itl_defined: bool, stable: bool, ttft_target_s: float, itl_target_s: float) -> bool:
    """Whether one run keeps the promise: TTFT and ITL at the percentile within the targets, in a steady state.

    Parameters
    ----------
    ttft_q_s : float
        TTFT at the promise's percentile; NaN when no request was measured. [s]
    itl_q_s : float
        Inter-token gap at the percentile; NaN when no sequence decoded a second token. [s]
    itl_defined : bool
        Whether any token gap was measured. With one-token outputs there is none: ITL is undefined, not missed. [bool]
    stable : bool
        Whether p95 TTFT agreed over the two halves of the measured window (:data:`STABLE_SPREAD`). [bool]
    ttft_target_s : float
        The promise's TTFT. [s]
    itl_target_s : float
        The promise's inter-token gap. [s]

    Returns
    -------
    bool
        True only when TTFT is within its target, ITL is within its target or undefined, and the run is stable: a
        queue still growing at the end of the window has not shown its percentile, so it never passes. [bool]
    """
    itl_ok = (not itl_defined) or itl_q_s <= itl_target_s
    return bool(ttft_q_s <= ttft_target_s and itl_ok and stable)


def workload_for(s: Scenario, minutes: float, seed: int, cv2: float = 1.0, max_context: int | None = None) -> Workload:
    """The requests of one run: :func:`poisson_workload` over ``minutes``, checked against :data:`MAX_REQUESTS`.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its peak rate and fitted lengths.
    minutes : float
        Span of the run's arrivals. [minutes]
    seed : int
        Seed of the random generator. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty (gamma). [1]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]

    Returns
    -------
    Workload
        The run's requests: arrival times [s] and lengths [tokens].

    Raises
    ------
    PlanningError
        When the run would hold more than :data:`MAX_REQUESTS` requests.
    """
    expected = s.peak_rps * minutes * 60.0
    if too_many_requests(expected):
        raise steps.PlanningError(f"{minutes:g} minutes at {s.peak_rps:,.6g} requests/s is {expected:,.0f} requests; "
                                  f"expected at most {MAX_REQUESTS:,} in one run (fewer minutes)")
    return poisson_workload(s, minutes * 60.0, seed, cv2, max_context=max_context)


@dataclass(frozen=True)
class Search:
    """The fewest replicas that keep the promise, and every run that found it. Units in the field comments."""

    verified_replicas: int | None  # None: no fleet up to the search's cap keeps it [replicas]
    runs: dict  # replicas -> SimResult
    cap_replicas: int  # the largest fleet the search would try [replicas]


def search_cap(start_replicas: int) -> int:
    """The most replicas a search tries: 4 × the start + 4. [replicas]

    Parameters
    ----------
    start_replicas : int
        The replicas the search starts from (at least 1 is counted). [replicas]

    Returns
    -------
    int
        The largest fleet the search simulates. [replicas]
    """
    return 4 * max(start_replicas, 1) + 4


PILOT_MIN_S = 120.0
"""A search first bisects on a pilot: the run's first max(2 minutes, 5,000 arrivals); full runs then confirm. [s]"""

PILOT_REQUESTS = 5_000
"""Arrivals a pilot run holds at least. [requests]"""


def prefix(workload: Workload, duration_s: float) -> Workload:
    """The requests of a workload that arrive before ``duration_s``: the same requests, a shorter run. [Workload]

    Parameters
    ----------
    workload : Workload
        The requests, in arrival order.
    duration_s : float
        Arrivals at or after it are left out. [s]

    Returns
    -------
    Workload
        The leading requests of ``workload``, unchanged.
    """
    import numpy as np

    k = int(np.searchsorted(np.asarray(workload.arrival_s), duration_s, side="left"))
    return Workload(workload.arrival_s[:k], workload.prompt_tokens[:k], workload.output_tokens[:k])


def search(s: Scenario, tp: int, workload: Workload, duration_s: float, start_replicas: int, percentile: float = 95.0,
           runs: dict | None = None) -> Search:
    """The smallest whole number of replicas that keeps the promise at ``percentile``, by simulation.

    From ``start_replicas`` (the runbook's load) it bisects down when that meets the promise, or doubles up then
    bisects when it does not. Long runs bisect on a pilot (their first max(2 minutes, 5,000 arrivals)) and then confirm
    with full runs, stepping one replica at a time until the full run at ``n`` meets the promise and the one at
    ``n − 1`` misses; so the answer is always shown beside a full run just below it that misses (or ``n = 1``).
    Every fleet size serves the same requests (common random numbers); p95 TTFT does not rise with replicas for the
    same seed (tested), which is what makes the bisection valid. ``runs`` receives the full runs only.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: physics, engine budgets and promise.
    tp : int
        GPUs per replica (tensor parallel). [GPUs]
    workload : Workload
        The requests every fleet size serves.
    duration_s : float
        Span of the workload's arrivals measured. [s]
    start_replicas : int
        Where the search starts: the closed form's load in replicas. [replicas]
    percentile : float
        The promise's percentile. [percent]
    runs : dict, optional
        Filled in place with replicas → :class:`SimResult` of each full run; runs already in it are reused.

    Returns
    -------
    Search
        The fewest replicas that keep the promise (None when none up to :func:`search_cap` does), the full runs and
        the cap.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8": the load the simulation starts from.
    """
    runs = {} if runs is None else runs
    cap = search_cap(start_replicas)
    rate = len(workload.arrival_s) / duration_s if duration_s > 0 else 0.0
    pilot_s = max(PILOT_MIN_S, PILOT_REQUESTS / rate) if rate > 0 else duration_s
    if pilot_s >= 0.75 * duration_s:
        n = _bisect(s, tp, workload, duration_s, start_replicas, percentile, runs, cap)
        if n is not None and n > 1:
            _meets(s, tp, workload, duration_s, percentile, runs, n - 1)  # shown: the run just below
        return Search(n, runs, cap)
    n = _bisect(s, tp, prefix(workload, pilot_s), pilot_s, start_replicas, percentile, {}, cap, _meets_pilot)
    n = cap if n is None else n

    def full(k: int) -> bool:
        return _meets(s, tp, workload, duration_s, percentile, runs, k)

    if full(n):
        while n > 1 and full(n - 1):
            n -= 1
    else:
        while not full(n):
            if n >= cap:
                return Search(None, runs, cap)
            n += 1
        if n > 1:
            full(n - 1)
    return Search(n, runs, cap)


def _meets(s, tp, workload, duration_s, percentile, runs, n: int) -> bool:
    if n not in runs:
        runs[n] = simulate(s, n, tp, workload, duration_s, percentile)
    return runs[n].meets_promise


def _meets_pilot(s, tp, workload, duration_s, percentile, runs, n: int) -> bool:
    """:func:`_meets` for the pilot, whose runs nobody reads: ``runs`` holds verdicts, and a run stops once it missed."""
    if n not in runs:
        runs[n] = _verdict(s, n, tp, workload, duration_s, percentile)[1]
    return runs[n]


def _bisect(s, tp, workload, duration_s, start_replicas, percentile, runs, cap, judge=_meets) -> int | None:
    """The fewest replicas meeting the promise on this workload: the start and its neighbour first (the closed form is
    usually within a replica), then doubling and bisection. [replicas]"""
    def meets(n: int) -> bool:
        return judge(s, tp, workload, duration_s, percentile, runs, n)

    start = max(1, start_replicas)
    if meets(start):
        lo, hi = 0, start  # lo misses (0 replicas serve nothing), hi meets
        if start > 1 and not meets(start - 1):  # the closed form is usually within a replica: look there first
            return start
        hi = start - 1 if start > 1 else hi
    else:
        if start < cap and meets(start + 1):
            return start + 1
        lo, hi = min(start + 1, cap), None
        n = lo
        if n >= cap:
            return None
        while hi is None:
            n = min(2 * n, cap)
            if meets(n):
                hi = n
            elif n >= cap:
                return None
            else:
                lo = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def point(r: SimResult):
    """One run as a point of the simulated curve the result carries. [SimulatedPoint]

    Parameters
    ----------
    r : SimResult
        The run.

    Returns
    -------
    xlplan.result.SimulatedPoint
        Its fleet size, p95 and at-percentile latencies, verdict, mean in flight, KV use, preemptions, stability.
    """
    from xlplan.result import SimulatedPoint

    return SimulatedPoint(gpus=r.gpus, replicas=r.replicas, ttft_p95_s=r.ttft_s.p95, itl_p95_s=r.itl_s.p95,
                          ttft_at_percentile_s=r.ttft_at_percentile_s, itl_at_percentile_s=r.itl_at_percentile_s,
                          meets_promise=r.meets_promise, mean_in_flight=r.mean_in_flight,
                          kv_utilisation_mean=r.kv_utilisation.mean, preemptions=r.preemptions, stable=r.stable)


def _missed(s: Scenario, r: SimResult) -> str:
    """'the TTFT promise (p95 1.3 s)', 'the inter-token promise (p95 62 ms)' or both. [text]"""
    q = f"p{r.percentile:g}"
    parts = []
    if not r.ttft_at_percentile_s <= s.ttft_s:
        parts.append(("TTFT", f"{q} {_secs(r.ttft_at_percentile_s)}"))
    if r.itl_defined and not r.itl_at_percentile_s <= s.itl_s:
        parts.append(("inter-token", f"{q} {_secs(r.itl_at_percentile_s)}"))
    if not parts:  # within both targets, but the queue had not settled
        return (f"a steady state (p{r.percentile:g} TTFT {_secs(r.ttft_at_percentile_s)} still moving between the "
                "halves of the run)")
    if len(parts) == 1:
        return f"the {parts[0][0]} promise ({parts[0][1]})"
    return f"the TTFT and inter-token promises ({parts[0][1]}, {parts[1][1]})"


def _itl(r: SimResult) -> str:
    """The run's inter-token gap at the percentile, or why there is none. [text]"""
    return _secs(r.itl_at_percentile_s) if r.itl_defined else "undefined (one-token outputs)"


def _secs(x: float) -> str:
    """0.0234 -> '23 ms', 1.31 -> '1.3 s', 75 -> '75 s'. [text]"""
    if not math.isfinite(x):
        return "never"
    if x < 1.0:
        return f"{x * 1000:.0f} ms"
    return f"{x:.2g} s" if x < 10 else f"{x:,.0f} s"


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def verify(s: Scenario, sol: steps.Solution, percentile: float = 95.0, minutes: float | None = None, seed: int = DEFAULT_SEED,
           cv2: float = 1.0, max_context: int | None = None, workload: Workload | None = None, arrivals: str | None = None,
           start_replicas: int | None = None, tp: int | None = None):
    """Simulate the plan's fleet at peak: the verified load, the runbook's load, and one replica down.

    Parameters
    ----------
    s : Scenario
        The plan's numbers: physics, engine budgets, promise, peak rate and redundancy.
    sol : steps.Solution
        The closed form's solution: its TP degree and load are simulated.
    percentile : float
        The promise's percentile. [percent]
    minutes : float, optional
        Span of each run's arrivals; left out, :func:`default_minutes`, held to :data:`MAX_REQUESTS`. [minutes]
    seed : int
        Seed of the random generator: every fleet size sees the same requests. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 Poisson, above 1 bursty (gamma). [1]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]
    workload : Workload, optional
        The requests to serve (a replayed or resampled log); left out, drawn by :func:`workload_for`.
    arrivals : str, optional
        How the arrivals are described in the sentence; left out, 'Poisson arrivals' or 'bursty arrivals (…)'.
    start_replicas : int, optional
        Where the search for the verified load starts: the closed form's load (the queueing path included); left
        out, the runbook's load. [replicas]
    tp : int, optional
        GPUs per replica of the fleet searched (the closed form's degree, which may differ from the runbook's); left
        out, the runbook's. The runbook's own fleet and its failure check are simulated at the runbook's degree. [GPUs]

    Returns
    -------
    xlplan.result.VerifiedOut
        The runbook's figures stay as they are; these sit beside them.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8": the load the simulation starts from.
    vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
    budget, recompute preemption of the newest request.
    """
    from xlplan.result import VerifiedOut

    pa = sol.paths
    rb_tp = int(pa.tp)  # the runbook's fleet is simulated as the runbook builds it
    tp = rb_tp if tp is None else int(tp)
    if minutes is None:
        minutes = run_minutes(s.peak_rps)
        if minutes < 1.0:
            raise steps.PlanningError(f"--verify: at {s.peak_rps:,.6g} requests/s one minute of peak is "
                                      f"{s.peak_rps * 60:,.0f} requests, past the {MAX_REQUESTS:,} one run may hold; "
                                      "expected a peak under 33,000 requests/s (simulate a share of the fleet with "
                                      "`xlplan simulate` on a plan with that share of the peak)")
    duration = minutes * 60.0
    wl = workload_for(s, minutes, seed, cv2, max_context) if workload is None else workload
    load_reps = int(round(pa.load / rb_tp))
    red = int(s.redundancy)
    others = ([workload_for(s, minutes, seed + k, cv2, max_context) for k in range(1, VERIFY_SEEDS)]
              if workload is None else [])
    seeds = [seed + k for k in range(1 + len(others))]
    runs: dict = {}
    found = search(s, tp, wl, duration, start_replicas or load_reps, percentile, runs)
    if found.verified_replicas is not None and others:
        found = dataclasses.replace(found, verified_replicas=_on_every_seed(
            s, tp, wl, others, duration, percentile, found.verified_replicas, found.cap_replicas, runs))
    same_tp = rb_tp == tp
    if same_tp and load_reps not in runs:
        runs[load_reps] = simulate(s, load_reps, tp, wl, duration, percentile)
    at_load = runs[load_reps] if same_tp else simulate(s, load_reps, rb_tp, wl, duration, percentile)
    # the failure check: the runbook's fleet with redundancy, one replica failing at the start of the peak
    fail_fleet = load_reps + red
    failed = simulate(s, fail_fleet, rb_tp, wl, duration, percentile, lost=1 if fail_fleet > 1 else 0)
    fail_reps = fail_fleet - failed.lost_replicas
    v = found.verified_replicas
    ver = runs[v] if v is not None else None
    known = {fail_fleet: failed} if (failed.lost_replicas == red and same_tp) else {}  # one of its runs
    survived = _survives_loss(s, tp, [wl, *others], duration, percentile, v, red, found.cap_replicas, known)
    rb, rb_red = load_reps * rb_tp, (load_reps + red) * rb_tp
    how = arrivals or ("Poisson arrivals" if cv2 == 1.0 else f"bursty arrivals (squared CV {cv2:g})")
    whose = "the runbook's" if s.engine == "runbook" else "the runbook method's"  # its fleet, on the engine's conventions
    head = f"Simulated at peak ({how}, {minutes:g} min, seed {seed}): {whose} {_gpus(rb)}"
    on = (f" (on each of seeds {', '.join(map(str, seeds[:-1]))} and {seeds[-1]})" if len(seeds) > 1 else "")
    if at_load.meets_promise:
        sentence = (f"{head} keep the promise (p{percentile:g} TTFT {_secs(at_load.ttft_at_percentile_s)}, "
                    f"inter-token {_itl(at_load)}); it holds from {_gpus(v * tp)}{on}, so the "
                    f"redundancy stays spare at peak.")
    elif v is None:
        sentence = (f"{head} miss {_missed(s, at_load)}, and no fleet up to {_gpus(found.cap_replicas * tp)} keeps it: "
                    "adding replicas does not shorten one replica's steps; change the promise, the hardware or the model.")
    elif v * tp <= rb_red:
        spare = "the redundancy GPU is" if red * tp == 1 else "the redundancy is"
        sentence = (f"{head} miss {_missed(s, at_load)}; it holds from {v * tp}{on}, so {spare} needed at peak"
                    + (" (no spare is left for a failure)." if v * tp == rb_red else "."))
    else:
        short = v * tp - rb_red
        sentence = (f"{head} miss {_missed(s, at_load)}; it holds from {v * tp}{on}, {_gpus(short)} more than the "
                    f"{rb_red} with redundancy" + (f" (the {int(pa.purchased)} purchased cover it)." if pa.purchased >= (v + red) * tp
                                                    else f"; with redundancy the fleet needs at least {(v + red) * tp}."))
    chunk = chunk_tokens(s)
    if at_load.itl_defined and not at_load.itl_at_percentile_s <= s.itl_s and chunk > SMALLEST_STEP_BUDGET:
        sentence += (f" Long prefill steps stall decoding: a smaller policy.max_num_batched_tokens (now {chunk:,}) spreads "
                     "each prompt over more, shorter steps.")
    down = (f"With one replica lost at the start of the peak ({fail_reps * tp} of {rb_red} GPUs left, "
            f"{failed.requeued:,} requests re-queued to prefill again)" if failed.lost_replicas else
            f"With no replica to spare ({rb_red} GPUs)")
    if failed.meets_promise:
        failure = (f"{down} the promise holds (p{percentile:g} TTFT {_secs(failed.ttft_at_percentile_s)}, "
                   f"inter-token {_itl(failed)}).")
    else:
        failure = f"{down} it misses {_missed(s, failed)}."
    n_red, lossy = survived
    lost_words = "one replica" if red == 1 else f"{red} replicas"
    if v is None:
        redundancy = ""
    elif red == 0:
        redundancy = "The plan keeps no redundancy: a replica lost at peak is capacity lost."
    elif n_red is None:
        redundancy = (f"No fleet up to {_gpus(found.cap_replicas * tp)} keeps the promise with {lost_words} lost at the "
                      "start of the peak.")
    else:
        redundancy = (f"{n_red * tp} keep the promise{on} with {lost_words} lost at the start of the peak (p{percentile:g} TTFT "
                      f"{_secs(lossy.ttft_at_percentile_s)}, inter-token {_itl(lossy)}; {lossy.requeued:,} requests "
                      "re-queued to prefill again), measured over the window after the loss.")
    return VerifiedOut(
        arrivals=how, burst_cv2=cv2, minutes=minutes, seed=seed, chunk_tokens=chunk_tokens(s), percentile=percentile,
        runbook_load=rb, runbook_with_redundancy=rb_red, meets_promise_at_load=at_load.meets_promise,
        load=v * tp if v is not None else None, with_redundancy=n_red * tp if n_red is not None else None,
        ttft_p95_s=ver.ttft_s.p95 if ver else None, itl_p95_s=ver.itl_s.p95 if ver else None,
        searched_up_to=max(runs) * tp, failure_gpus=fail_reps * rb_tp, failure_meets_promise=failed.meets_promise,
        failure_ttft_p95_s=failed.ttft_s.p95, failure_itl_p95_s=failed.itl_s.p95,
        curve=[point(runs[n]) for n in sorted(runs)], sentence=sentence, failure_sentence=failure,
        seeds=seeds, redundancy_lost_replicas=red,
        redundancy_ttft_p95_s=lossy.ttft_s.p95 if lossy is not None else None,
        redundancy_itl_p95_s=lossy.itl_s.p95 if lossy is not None else None,
        redundancy_sentence=redundancy,
    )


def minimum_replicas(s: Scenario, tp: int, start_replicas: int, percentile: float = 95.0, minutes: float | None = None,
                     seed: int = DEFAULT_SEED, cv2: float = 1.0, max_context: int | None = None) -> int | None:
    """The fewest replicas that keep the promise by the verification's rule: on each of :data:`VERIFY_SEEDS` seeds,
    every run stable, Poisson (or ``cv2``) arrivals at peak for :func:`default_minutes`. [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers at the step budget deployed.
    tp : int
        GPUs per replica. [GPUs]
    start_replicas : int
        Where the search starts (the closed form's load). [replicas]
    percentile : float
        The promise's percentile. [percent]
    minutes : float, optional
        Span of each run's arrivals; left out, :func:`default_minutes`. [minutes]
    seed : int
        The first seed; the others follow it. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals. [1]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]

    Returns
    -------
    int or None
        The verified load in replicas, as :func:`verify` finds it; None when no fleet up to the search's cap keeps
        the promise. [replicas]
    """
    if minutes is None:
        minutes = run_minutes(s.peak_rps)
    duration = minutes * 60.0
    wl = workload_for(s, minutes, seed, cv2, max_context)
    others = [workload_for(s, minutes, seed + k, cv2, max_context) for k in range(1, VERIFY_SEEDS)]
    runs: dict = {}
    found = search(s, tp, wl, duration, start_replicas, percentile, runs)
    if found.verified_replicas is None:
        return None
    return _on_every_seed(s, tp, wl, others, duration, percentile, found.verified_replicas, found.cap_replicas, runs)


def _on_every_seed(s, tp, workload, others, duration_s, percentile, start, cap, runs):
    """The fewest replicas, from ``start`` (the first seed's minimum) up, that keep the promise on every workload:
    none below ``start`` can, as the first seed's misses there. ``runs`` gains the first seed's runs. [replicas]"""
    n = start
    while n <= max(cap, start):
        if n not in runs:
            runs[n] = simulate(s, n, tp, workload, duration_s, percentile)
        if runs[n].meets_promise and all(_verdict(s, n, tp, w, duration_s, percentile)[1] for w in others):
            return n
        n += 1
    return None


def _survives_loss(s, tp, workloads, duration_s, percentile, verified, lost, cap, known=None):
    """(replicas, run): the fewest replicas keeping the promise on every workload with ``lost`` of them failing at the
    start of the peak, searched from the verified load plus ``lost`` one replica at a time; (None, None) when there is
    no verified load or none up to ``cap`` survives; the verified load itself when the plan keeps no redundancy; the
    run is the first workload's. ``known`` maps replicas to full runs of the first workload with ``lost`` lost
    already done (the failure check), reused. Only verdicts decide, and only a passing run's figures are read, so
    every run here may stop once it has missed (:func:`_verdict`). [replicas]"""
    if verified is None:
        return None, None
    if lost == 0:
        return verified, None
    runs: dict = {}
    known = known or {}

    def meets(n: int) -> bool:
        if n not in runs:
            first, ok = ((known[n], known[n].meets_promise) if n in known
                         else _verdict(s, n, tp, workloads[0], duration_s, percentile, lost=lost))
            ok = ok and all(_verdict(s, n, tp, w, duration_s, percentile, lost=lost)[1] for w in workloads[1:])
            runs[n] = (first, ok)
        return runs[n][1]

    n = verified + lost
    if meets(n):
        while n - 1 > lost and meets(n - 1):
            n -= 1
        return n, runs[n][0]
    while n < max(cap, verified + lost):
        n += 1
        if meets(n):
            return n, runs[n][0]
    return None, None
