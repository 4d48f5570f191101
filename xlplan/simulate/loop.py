"""The simulation's event loop: arrivals routed to the least loaded replica, steps ending and starting, a replica lost.

One run (:class:`_Run`) holds the state of every request and replica; :meth:`_Run.run` serves every arrival in time
order until the last step ends or the drain cap passes, on the compiled loop (:mod:`xlplan.simulate.kernel`) where numba
is installed, else on the Python loop here, which is the reference: the same schedule, every figure the same to the
bit (a test holds them equal). What each step carries is :func:`xlplan.simulate.scheduler.start_step`'s.
"""

from __future__ import annotations

import heapq
import math
from array import array
from heapq import heappop, heappush, heapreplace

from xlplan.plan import replica_at_tp, scenario
from xlplan.plan.replica_at_tp import kv_capacity_tokens
from xlplan.plan.scenario import Scenario, chunk_tokens
from xlplan.schema.policy import ROUTINGS
from xlplan.serving import engines, folded_step
from xlplan.simulate.scheduler import _Replica, start_step
from xlplan.simulate.workload import Workload


def _warmup_s(duration_s: float) -> float:
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


def _drain_cap_s(duration_s: float) -> float:
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


COMPILED = True
"""Whether runs use the compiled loop (:mod:`xlplan.simulate.kernel`) where numba is installed; the Python loop gives the
same figures (a test runs both). [bool]"""

ROUTING_HEAP_REPLICAS = 16
"""From this many replicas routing finds the least loaded with a heap rather than a scan: the same replica. [replicas]"""


def _load_heap(loads: list) -> list:
    """(load, replica) of every replica, as a heap: its first entry is the least loaded, the first of equals. [—]"""
    h = [(load, j) for j, load in enumerate(loads)]
    heapq.heapify(h)
    return h


ROUTING_SEED = 20261207
"""Seeds the random router's draws, with the run's request count: one draw per request, the same on either loop. [1]"""


def outstanding_kv_tokens(rp, prompt) -> float:
    """The tokens replica ``rp``'s cache will hold once the prompts it holds are in: its running sequences' context,
    then the whole prompt of each request prefilling or waiting, summed in that order (least-KV routing). [tokens]

    Parameters
    ----------
    rp : xlplan.simulate.scheduler._Replica
        The replica's state.
    prompt : list of float
        Each request's prompt, recomputed tokens included. [tokens]

    Returns
    -------
    float
        ``Σ context of the decoding + Σ prompt of the prefilling + Σ prompt of the waiting``, every layer counted
        alike (a sliding window's clipping is the scheduler's, not the router's). [tokens]

    Examples
    --------
    >>> from xlplan.simulate.scheduler import _Replica
    >>> rp = _Replica()
    >>> rp.sum_c, rp.b, rp.k, rp.prefilling, rp.waiting = 1000.0, 2, 10, [[0, 300.0]], [1]
    >>> outstanding_kv_tokens(rp, [800.0, 50.0])   # 1,000 + 2 × 10 + 800 + 50
    1870.0
    """
    total = rp.sum_c + rp.b * rp.k
    for entry in rp.prefilling:
        total += prompt[entry[0]]
    for rid in rp.waiting:
        total += prompt[rid]
    return total


class _Router:
    """The load balancer: where each arrival goes, by the plan's rule (``policy.routing``).

    - least-loaded, the first of equals: min() over the loads on a few replicas; on many, a heap of (load, replica)
      kept lazily (an entry is current while it matches the load; each change pushes the new pair), whose first
      current entry is the same replica min() finds, in O(log replicas);
    - round robin: each live replica in turn;
    - random: request ``rid`` to live replica ``⌊u_rid × live⌋``, ``u`` drawn once per request (:data:`ROUTING_SEED`);
    - least KV: to the live replica whose cache will hold the fewest tokens once its prompts are in
      (:func:`outstanding_kv_tokens`), the first of equals, by a scan.

    A loss takes the last replicas, so the live ones are always the first ``live``."""

    __slots__ = ("loads", "heap", "heap_cap", "mode", "u", "live", "turn", "kv")

    def __init__(self, loads: list, mode: int = 0, u=None, kv=None):
        self.loads = loads  # requests queued or running on each replica, shared with the run
        self.mode = mode  # index into ROUTINGS
        self.u = u  # random routing: one uniform draw per request [1]
        self.live = len(loads)  # replicas still serving [replicas]
        self.turn = 0  # round robin: arrivals routed so far [requests]
        self.kv = kv  # least KV: replica -> the tokens its cache will hold (outstanding_kv_tokens) [tokens]
        self.heap = _load_heap(loads) if mode == 0 and len(loads) >= ROUTING_HEAP_REPLICAS else None
        self.heap_cap = 4 * len(loads) + 64

    def rebuild(self) -> None:
        """After a loss: the live replicas counted, the heap made again from the loads. [—]"""
        self.live = sum(1 for x in self.loads if x != math.inf)
        if self.heap is not None:
            self.heap = _load_heap(self.loads)

    def leave(self, i: int) -> None:
        """A request left replica ``i``. [—]"""
        self.loads[i] -= 1
        if self.heap is not None:
            heappush(self.heap, (self.loads[i], i))

    def route(self, rid: int) -> int:
        """The replica request ``rid`` goes to, its load counting one more request. [index]"""
        loads, h = self.loads, self.heap
        if self.mode == 1:
            i = self.turn % self.live
            self.turn += 1
            loads[i] += 1
            return i
        if self.mode == 2:
            i = int(self.u[rid] * self.live)
            loads[i] += 1
            return i
        if self.mode == 3:
            i = min(range(self.live), key=self.kv)  # the first of equals
            loads[i] += 1
            return i
        if h is None:
            i = loads.index(min(loads))
            loads[i] += 1
            return i
        if len(h) > self.heap_cap:
            h = self.heap = _load_heap(loads)
        while True:
            load, i = h[0]
            if loads[i] == load:
                break
            heappop(h)
        loads[i] = load + 1
        heapreplace(h, (load + 1, i))
        return i


class _TTFTWatch:
    """The early stop (only when the run's ``watch_ttft_s`` is set; see :func:`xlplan.simulate.run.watched_verdict`): the measured
    requests are m_lo..m_hi-1 (arrivals in order); ``ok``/``late`` count those whose first token came within/over the
    target, ``w`` those arrived before ``min(now, duration) − target``, each of which is late already or still
    waiting past the target."""

    __slots__ = ("on", "arrivals", "target", "duration", "m_lo", "m_hi", "need", "margin", "w", "ok", "late")

    def __init__(self, run: _Run, arrivals: list):
        self.on, self.m_lo, self.m_hi, self.need, self.margin = run._watch()
        self.arrivals, self.target, self.duration = arrivals, run.watch_ttft_s, run.duration
        self.w, self.ok, self.late = self.m_lo, 0, 0

    def first_token(self, rid: int, now: float) -> None:
        """Request ``rid`` got its first token at ``now``. [—]"""
        if self.on and self.m_lo <= rid < self.m_hi:
            if now - self.arrivals[rid] <= self.target:
                self.ok += 1
            else:
                self.late += 1

    def missed(self, now: float) -> bool:
        """Whether, at an arrival at ``now``, the TTFT promise is missed whatever the rest of the run does. [bool]"""
        if not self.on:
            return False
        x = (now if now < self.duration else self.duration) - self.target - self.margin
        arrivals, m_hi = self.arrivals, self.m_hi
        while self.w < m_hi and arrivals[self.w] < x:
            self.w += 1
        return self.late >= self.need or (self.w - self.m_lo) - self.ok >= self.need


class _Run:
    """The event loop of one simulation (state of every request and replica)."""

    def __init__(self, s: Scenario, replicas: int, tp: int, workload: Workload, duration_s: float, lost: int = 0,
                 clients: int = 0, kv_gib: float | None = None):
        import numpy as np

        r = replica_at_tp.replica(s, tp)
        self.replica = r
        self.step_time = folded_step.step_time_fn(r)
        self.cap = kv_capacity_tokens(s, tp, kv_gib)  # kv_gib: a benchmark's KV room per GPU where its engine's differs
        if self.cap < 1.0:
            raise scenario.PlanningError(f"at TP {tp} the weights leave no room for the KV cache; expected a positive budget")
        self.budget = float(chunk_tokens(s))
        self.max_seqs = int(min(s.max_num_seqs, 10**9))
        self.window = float(s.window) if s.window_layers else math.inf
        self.full_share = (s.layers - s.window_layers) / s.layers if s.window_layers else 1.0  # layers caching it all
        self.causal = s.causal_attention
        self.prefill_first = engines.prefill_first(s.engine)  # SGLang: a step with prefill carries no decode
        self.reuse = s.prefix_reuse
        self.long_prefill = s.long_prefill_token_threshold  # the most one request prefills in a step (inf: no threshold) [tokens]
        self.arrivals = np.asarray(workload.arrival_s, dtype=float)
        self.routing = ROUTINGS.index(s.routing)  # the load balancer's rule, as a code [—]
        n_req = len(self.arrivals)
        self.route_u = (np.random.default_rng((ROUTING_SEED, n_req)).random(n_req) if self.routing == 2
                        else np.zeros(0))  # random routing's draws, one per request [1]
        self.output0 = np.asarray(workload.output_tokens, dtype=np.int64)
        n = len(self.arrivals)
        # per request, as arrays (the compiled loop's; the Python loop makes lists of them as it starts, _serve)
        self.prompt = np.array(workload.prompt_tokens, dtype=float)  # a copy: grows on recompute after preemption
        self.output = self.output0.astype(np.int64)  # tokens still to generate, the prefill step's one included
        self.first_token = np.full(n, math.nan)
        self.finish = np.full(n, math.nan)
        self.last_token = np.full(n, math.nan)
        self.resumed = np.zeros(n, dtype=bool)
        self.gaps_extra: list[float] = []  # token gaps across a preemption
        self.duration = duration_s
        self.warm = _warmup_s(duration_s)
        self.stop = duration_s + _drain_cap_s(duration_s)
        self.reps = [_Replica() for _ in range(replicas)]
        self.loads = [0] * replicas
        self.events: list[tuple[float, int]] = []
        self.first_in_window = 0  # first tokens sampled inside the measured window
        # measured steps: duration, decodes, cache in use; typed arrays, which numpy reads without a copy
        self.step_t = array("d")  # [s]
        self.step_b = array("q")  # [sequences]
        self.kv_held = array("d")  # tokens the step holds in the cache (its share: measured, ÷ capacity) [tokens]
        # prefill first: token gaps across prefill steps, each (measured step index, count, gap), in place of that
        # many of the step's own gaps (xlplan.simulate.scheduler._pause_gaps)
        self.pause_idx = array("q")  # [index]
        self.pause_n = array("q")  # [sequences]
        self.pause_gap = array("d")  # [s]
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
        self.compiled = COMPILED  # run on the compiled loop (xlplan.simulate.kernel) where it applies [bool]
        if clients < 0:
            raise ValueError(f"clients: got {clients}; expected 0 (the arrivals as given) or a closed loop's clients")
        self.clients = clients  # a closed loop of this many clients; 0: the arrivals as given [requests]
        self.issued = n if clients == 0 or clients >= n else clients  # requests whose arrival is known [requests]
        self._arrival_list: list[float] = []  # the Python loop's copy of the arrivals, which a closed loop extends
        if self.issued < n:  # a closed loop: the later arrivals are set as requests finish
            self.arrivals = self.arrivals.copy()
            self.arrivals[self.issued:] = math.inf

    def run(self) -> None:
        """Serve every arrival, in time order, until the last step ends or the drain cap passes.

        On the compiled loop (:func:`xlplan.simulate.kernel.run`) where numba is installed, else on the Python loop
        (:meth:`_Run._serve`): the same schedule, every figure the same to the bit. Events are (end time, replica) pairs, one per busy replica: unique, so the heap pops them in one
        order however it is laid out.
        """
        if self.compiled and self.replicas_serving_from_start:
            from xlplan.simulate import kernel as sim_kernel  # numpy and numba load with the first run, never at import
            from xlplan.simulate import kernel_state

            if kernel_state.AVAILABLE:
                self._run_compiled(sim_kernel)
                return
        self._serve()

    def _serve(self) -> None:
        """The Python loop: the next event is a loss, a step's end (a tie with an arrival goes to the step) or an
        arrival; a step's end or an arrival at an idle replica starts that replica's next step."""
        events, reps, inf = self.events, self.reps, math.inf
        for name in ("prompt", "output", "first_token", "finish", "last_token", "resumed"):
            setattr(self, name, getattr(self, name).tolist())  # plain floats, ints and bools: faster to read and write
        arrivals = self.arrivals.tolist()  # plain floats: the same values as the array's, faster to read
        n, nxt = len(arrivals), 0
        router = _Router(self.loads, self.routing, self.route_u,
                         lambda i: outstanding_kv_tokens(self.reps[i], self.prompt))
        watch = _TTFTWatch(self, arrivals)
        self._arrival_list = arrivals
        t_arr = arrivals[0] if n else inf
        while True:
            now, i = events[0] if events else (inf, 0)
            if now == inf and t_arr == inf:  # nothing left: no step in flight, no arrival to come
                break
            if self.loss_at <= (now if now <= t_arr else t_arr):  # the loss comes before the next event
                self.lose(self.loss_at)
                router.rebuild()
                continue
            if now <= t_arr:  # a step ends first
                if now > self.stop:
                    break
                heappop(events)
                if self.dead[i]:  # a failed replica's step in flight never ends
                    continue
                self._end_step(i, now, router, watch)
                if t_arr == inf and nxt < self.issued:  # a closed loop's next request has arrived
                    t_arr = arrivals[nxt]
                start_step(self, i, now)
                continue
            rid, nxt, now = nxt, nxt + 1, t_arr
            if watch.missed(now):
                self.decided_miss = True
                break
            t_arr = arrivals[nxt] if nxt < self.issued else inf
            i = router.route(rid)
            rp = reps[i]
            rp.waiting.append(rid)
            if not rp.busy:
                start_step(self, i, now)

    def _end_step(self, i: int, now: float, router: _Router, watch: _TTFTWatch) -> None:
        """Replica ``i``'s step ends at ``now``: sequences whose last token it was leave, its prefill chunks land,
        and its step counter moves on. A prefill-first engine's prefill step decoded nothing: no sequence leaves, the
        counter stays, and the prompts land as if in the last decode step (``k − 1``), to decode from step ``k``."""
        rp = self.reps[i]
        k = rp.k
        if not rp.decoding:
            if rp.pending:
                b0 = rp.b
                self._land_chunks(rp, i, k - 1, now, router, watch)
                if rp.b > b0:  # prompts in: they wait through the rest of the pause
                    rp.cohorts.append([rp.pause, rp.b - b0])
            return
        heap = rp.heap
        while heap and heap[0][0] <= k:
            kf, rid = heappop(heap)
            got = rp.dec.get(rid)
            if got is None or got[1] != kf:
                continue
            del rp.dec[rid]
            rp.b -= 1
            rp.sum_c -= got[0]
            self.finish[rid] = now
            self._next_client(now)
            router.leave(i)
        if rp.pending:
            self._land_chunks(rp, i, k, now, router, watch)
        rp.k = k + 1

    def _land_chunks(self, rp: _Replica, i: int, k: int, now: float, router: _Router, watch: _TTFTWatch) -> None:
        """The step's prefill chunks land; a prompt that is in has sampled its next token, and decodes from the next
        step or, with nothing more to generate, leaves."""
        prompt, output = self.prompt, self.output
        for entry, chunk in rp.pending:
            entry[1] += chunk
            rp.sum_prefill += chunk
            rid, done = entry
            if done < prompt[rid] - 1e-9:
                continue
            rp.prefilling.remove(entry)
            rp.sum_prefill -= done
            if self.resumed[rid]:
                self.gaps_extra.append(now - self.last_token[rid])
            else:
                self.first_token[rid] = now
                if self.warm <= now < self.duration:
                    self.first_in_window += 1
                watch.first_token(rid, now)
            if output[rid] <= 1:
                self.finish[rid] = now
                self._next_client(now)
                router.leave(i)
                continue
            kf = k + output[rid] - 1
            c = prompt[rid] - k
            rp.dec[rid] = (c, kf)
            heappush(rp.heap, (kf, rid))
            rp.order.append(rid)
            rp.b += 1
            rp.sum_c += c
        rp.pending = []

    def _next_client(self, now: float) -> None:
        """A request finished at ``now``: in a closed loop its client sends the next request at once."""
        if self.issued < len(self.arrivals):
            self.arrivals[self.issued] = now
            self._arrival_list[self.issued] = now
            self.issued += 1

    @property
    def replicas_serving_from_start(self) -> bool:
        """Whether the run starts fresh (no step run yet): the compiled loop starts from an empty fleet. [bool]"""
        return not self.events and all(rp.k == 0 and not rp.waiting for rp in self.reps)

    def _watch(self):
        """(watch, m_lo, m_hi, need, margin): the early stop's bounds, as :meth:`_Run.run` computes them. [—]"""
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
        """:meth:`_Run.run` on the compiled loop (:func:`xlplan.simulate.kernel.run`): the same schedule, every figure the same
        to the bit (a test holds them equal); the results land where :meth:`_Run.run` leaves them."""
        import numpy as np

        consts = folded_step.step_constants(self.replica)
        c = np.array([float(consts[x]) for x in folded_step.STEP_CONSTANTS], dtype=float)
        prompt, output = self.prompt, self.output  # this run's own copies: the loop changes them in place
        watch, m_lo, m_hi, need, margin = self._watch()
        target = float(self.watch_ttft_s) if watch else 0.0
        arrivals = np.ascontiguousarray(self.arrivals, dtype=float)  # a closed loop's arrivals are set in place
        (first, fin, gaps, step_t, step_b, kv_held, preemptions, in_window, decided, requeued, p_idx, p_n,
         p_gap) = sim_kernel.run(
            arrivals, prompt, output, c, float(self.cap), float(self.budget),
            int(self.max_seqs), bool(self.causal), float(self.reuse), float(self.warm), float(self.duration),
            float(self.stop), len(self.reps), int(self.lost), float(self.loss_at), watch, target, m_lo, m_hi, need,
            float(margin), int(self.clients), float(self.window), float(self.full_share), bool(self.prefill_first),
            int(self.routing), self.route_u, float(self.long_prefill))
        self.first_token, self.finish, self.arrivals = first, fin, arrivals
        self.prompt, self.output = prompt, output
        self.gaps_extra = gaps.tolist()
        self.step_t, self.step_b, self.kv_held = step_t, step_b, kv_held
        self.pause_idx, self.pause_n, self.pause_gap = p_idx, p_n, p_gap
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
        """Start replica ``i``'s next step at ``now``, as :func:`xlplan.simulate.scheduler.start_step` schedules it."""
        start_step(self, i, now)
