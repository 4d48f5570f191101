"""The simulator's event loop compiled: the same schedule as :meth:`xlplan.simulate.loop._Run.run`, to the last bit.

:class:`xlplan.simulate.loop._Run` is the reference: a Python loop over lists, deques, dicts and heaps, about 2.5 µs a
step. A plan of about 100 GPUs serves some 385,000 requests in 1.7 million steps per run, ten runs per plan, so the
default verified plan of such a fleet takes most of a minute there. Here the same loop runs on arrays, compiled by
numba, where numba is installed (it is a dependency on every platform with wheels; where it is not, Pyodide for
xlwings Lite, the Python loop runs and gives the same figures). How the containers map onto arrays, and the routines
the loop calls, are in :mod:`xlplan.simulate.kernel_state`. The arithmetic is the Python loop's, term by term and in the
same order, and the step time is :func:`xlplan.serving.folded_step.step_time_fn`'s on the constants of
:func:`xlplan.serving.folded_step.step_constants`; a test runs both loops on plans of every kind of step (dense, experts, tensor
and expert parallel, prefix reuse, preemption, a lost replica, an early stop) and holds every figure equal to the
bit. Models with sliding-window layers run here too: their cache is counted with those layers clipped at the window,
as :func:`xlplan.simulate.scheduler.start_step` counts it. A closed loop (``clients``) sets each later arrival when a
request finishes.

References
----------
vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py): decodes first, chunked prefill in the remaining token
budget, recompute preemption of the newest request. Lam, Pitrou & Seibert, "Numba: a LLVM-based Python JIT
compiler", LLVM-HPC 2015.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from xlplan.simulate.kernel_state import (
    ROUTING_HEAP_REPLICAS,
    _add_cohort,
    _cost,
    _fitting,
    _flush_pause,
    _grow,
    _held,
    _load_heap,
    _lose,
    _record,
    _replica_arrays,
    _request_arrays,
    njit,
    step_s,
)


@njit(cache=True)
def run(arrivals, prompt, output, c, cap, budget, max_seqs, causal, reuse, warm, duration, stop, replicas, lost, loss_at,
        watch, target, m_lo, m_hi, need_late, margin, clients, win, wa, pf, rmode, route_u, lp):
    """Serve every arrival, as :meth:`xlplan.simulate.loop._Run.run` does; ``prompt`` and ``output`` change in place
    (and ``arrivals`` in a closed loop).

    Over 60 lines because it is one compiled loop: a step's end, an arrival, a loss and a step's start share the
    loop's locals, which numba keeps in registers; split into calls, each would pass some thirty arrays.

    Parameters
    ----------
    arrivals : array of float
        Arrival times, in order of request. [s]
    prompt : array of float
        Prompt tokens per request (grows on recompute after a preemption). [tokens]
    output : array of int
        Output tokens still to generate per request, the prefill step's one included. [tokens]
    c : array of float
        The step's constants (:func:`step_s`). [mixed: FLOP/s, s, FLOP, layers]
    cap : float
        The cache a replica holds. [tokens]
    budget : float
        Tokens one step may batch. [tokens]
    max_seqs : int
        Sequences one replica may run at once. [sequences]
    causal : bool
        Whether prefill attention is causal (each token sees those before it). [bool]
    reuse : float
        Share of each prompt found in the prefix cache. [1]
    warm, duration, stop : float
        The measured window's start and end, and the drain cap. [s]
    replicas, lost : int
        Replicas serving, and how many of the last of them fail at ``loss_at``. [replicas]
    loss_at : float
        When they fail (inf: never). [s]
    watch : bool
        Whether to stop once the TTFT target is certainly missed (see :func:`xlplan.simulate.run.watched_verdict`). [bool]
    target : float
        The TTFT target watched. [s]
    m_lo, m_hi, need_late : int
        The measured requests' first and one-past-last index, and how many late ones decide a miss. [requests]
    margin : float
        The watch's margin on each bound. [s]
    clients : int
        A closed loop of this many clients (0: the arrivals as given): the first ``clients`` requests arrive as given,
        and each later one the moment a request finishes, in order of request. [requests]
    win, wa : float
        The sliding window (inf: none) and the share of layers that cache every token. [tokens], [1]
    pf : bool
        Prefill first (SGLang, :func:`xlplan.serving.engines.prefill_first`): prompts are chunked into the whole
        budget and a step with any chunk decodes nothing; its decoders keep their step counter. [bool]
    rmode : int
        The load balancer's rule, as :class:`xlplan.simulate.loop._Router` codes it: 0 least-loaded, 1 round robin, 2
        random, 3 least KV (:func:`xlplan.simulate.loop.outstanding_kv_tokens`, summed in the same order). [—]
    route_u : array of float
        Random routing's draw per request (empty otherwise): request ``rid`` goes to live replica
        ``⌊route_u[rid] × live⌋``. [1]
    lp : float
        The most prompt tokens one request prefills in a step (vLLM's long-prefill threshold; inf: none). [tokens]

    Returns
    -------
    tuple
        first-token and finish times per request ([s], NaN where none), the gaps across preemptions ([s]), each
        measured step's time ([s]), decodes ([sequences]) and cache held ([tokens]), then preemptions, first tokens
        in the window, whether the run stopped on a certain miss, and the requests re-queued by the loss; then, prefill
        first, the token gaps across prefill steps: each measured step's index, count and gap ([s]).
    """
    n = arrivals.shape[0]
    R = replicas
    inf = math.inf
    (first_token, finish, last_token, resumed, wnext, wprev, pnext, pprev, onext, oprev, pdone, pchunk, dec_c,
     dec_kf) = _request_arrays(n)
    (busy, kk, bb, sc, spf, whead, wtail, phead, ptail, pcnt, npend, otail, dead, loads, todo) = _replica_arrays(R)
    n_todo = 0
    at_todo = 0
    heaps = [[np.int64(0)] for _ in range(R)]
    for h in heaps:
        h.pop()
    events = [(0.0, np.int64(0))]
    events.pop()
    many = rmode == 0 and R >= ROUTING_HEAP_REPLICAS
    live = R  # replicas serving: the first ``live`` (a loss takes the last ones)
    turn = 0  # round robin: arrivals routed so far
    lheap = [np.int64(0)]
    lheap.pop()
    if many:
        for j in range(R):
            lheap.append(np.int64(j))  # load 0 × R + j, already in heap order
    lheap_cap = 4 * R + 64
    st = np.empty(1024)
    sb = np.empty(1024, np.int64)
    kh = np.empty(1024)
    ns = 0
    gaps = np.empty(64)
    ng = 0
    preemptions = 0
    first_in_window = 0
    requeued = 0
    decided_miss = False
    nxt = 0
    t_arr = arrivals[0] if n else inf
    w = m_lo
    ok = 0
    late = 0
    lost_now = 0.0
    windowed = win != inf
    dstep = np.ones(R, np.bool_)  # whether each replica's step in flight decodes (False: a prefill-first prefill step)
    pause = np.zeros(R)  # prefill first: prefill steps its decoders have waited through since their last token [s]
    coh_p = np.empty((R, 4))  # ... and the prompts that landed during the pause: the pause then, how many
    coh_n = np.zeros((R, 4), np.int64)
    ncoh = np.zeros(R, np.int64)
    gi = np.empty(64, np.int64)  # token gaps across prefill steps: measured step index, count, gap
    gn = np.empty(64, np.int64)
    gv = np.empty(64)
    npg = 0
    issued = n if clients == 0 or clients >= n else clients  # requests whose arrival time is known
    while True:
        if at_todo < n_todo:  # after a loss: every idle survivor starts a step, in order
            i = todo[at_todo]
            at_todo += 1
            now = lost_now
            from_step = False
            k, b, sum_c, sp = kk[i], bb[i], sc[i], spf[i]
        else:
            if len(events):
                now, i = events[0]
            else:
                now, i = inf, 0
            if now == inf and t_arr == inf:  # no step in flight, no arrival to come
                break
            if loss_at <= (now if now <= t_arr else t_arr):  # the loss comes before the next event
                lost_now = loss_at
                requeued, n_todo = _lose(loss_at, R, lost, kk, bb, sc, spf, busy, dead, loads, heaps, output, prompt,
                                         resumed, last_token, dec_kf, oprev, otail, phead, ptail, pnext, pcnt, npend,
                                         whead, wnext, wprev, wtail, todo)
                at_todo = 0
                loss_at = inf
                live = R - lost
                if many:
                    lheap = _load_heap(loads, dead, R)
                continue
            if now <= t_arr:  # a step ends first (a tie goes to the step)
                if now > stop:
                    break
                if dead[i]:  # a failed replica's step in flight never ends
                    heapq.heappop(events)
                    continue
                from_step = True
                k, b, sum_c, sp = kk[i], bb[i], sc[i], spf[i]
                heap = heaps[i]
                decoded = dstep[i]
                kb = k if decoded else k - 1  # a prefill step's prompts land as in the last decode step
                b0 = b
                # the step's end: sequences whose last token this step was leave (none after a prefill step)
                while decoded and len(heap) and heap[0] // n <= k:
                    key = heapq.heappop(heap)
                    kf = key // n
                    rid = key - kf * n
                    if dec_kf[rid] != kf:
                        continue
                    dec_kf[rid] = -1
                    # unlink from the decoders' order
                    pv, nx = oprev[rid], onext[rid]
                    if pv != -1:
                        onext[pv] = nx
                    if nx != -1:
                        oprev[nx] = pv
                    else:
                        otail[i] = pv
                    b -= 1
                    sum_c -= dec_c[rid]
                    finish[rid] = now
                    if issued < n:  # a closed loop's client sends its next request
                        arrivals[issued] = now
                        issued += 1
                    loads[i] -= 1
                    if many:
                        heapq.heappush(lheap, loads[i] * R + i)
                # its prefill chunks land; a prompt that is in has sampled its next token
                m = npend[i]
                rid = phead[i]
                for _ in range(m):
                    nx = pnext[rid]
                    chunk = pchunk[rid]
                    pdone[rid] += chunk
                    sp += chunk
                    done = pdone[rid]
                    if done >= prompt[rid] - 1e-9:
                        pv = pprev[rid]
                        if pv != -1:
                            pnext[pv] = nx
                        else:
                            phead[i] = nx
                        if nx != -1:
                            pprev[nx] = pv
                        else:
                            ptail[i] = pv
                        pcnt[i] -= 1
                        sp -= done
                        if resumed[rid]:
                            if ng == gaps.shape[0]:
                                gaps = _grow(gaps)
                            gaps[ng] = now - last_token[rid]
                            ng += 1
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
                            if issued < n:
                                arrivals[issued] = now
                                issued += 1
                            loads[i] -= 1
                            if many:
                                heapq.heappush(lheap, loads[i] * R + i)
                        else:
                            kf = kb + output[rid] - 1
                            cc = prompt[rid] - kb
                            dec_c[rid] = cc
                            dec_kf[rid] = kf
                            heapq.heappush(heap, kf * n + rid)
                            tl = otail[i]
                            oprev[rid] = tl
                            onext[rid] = -1
                            if tl != -1:
                                onext[tl] = rid
                            otail[i] = rid
                            b += 1
                            sum_c += cc
                    rid = nx
                npend[i] = 0
                if decoded:
                    k += 1
                elif b > b0:  # prompts in during a pause: they wait through the rest of it
                    coh_p, coh_n = _add_cohort(i, pause[i], b - b0, coh_p, coh_n, ncoh)
                kk[i] = k
                if t_arr == inf and nxt < issued:  # a closed loop's next request has arrived
                    t_arr = arrivals[nxt]
            else:
                rid = nxt
                nxt += 1
                now = t_arr
                if watch:
                    x = (now if now < duration else duration) - target - margin
                    while w < m_hi and arrivals[w] < x:
                        w += 1
                    if late >= need_late or (w - m_lo) - ok >= need_late:
                        decided_miss = True
                        break
                t_arr = arrivals[nxt] if nxt < issued else inf
                if rmode == 1:
                    i = turn % live
                    turn += 1
                    loads[i] += 1
                elif rmode == 2:
                    i = int(route_u[rid] * live)
                    loads[i] += 1
                elif rmode == 3:  # least KV: outstanding_kv_tokens of each live replica, the first of equals
                    i = 0
                    best = inf
                    for j in range(live):
                        kv = sc[j] + bb[j] * kk[j]
                        q = phead[j]
                        while q != -1:
                            kv += prompt[q]
                            q = pnext[q]
                        q = whead[j]
                        while q != -1:
                            kv += prompt[q]
                            q = wnext[q]
                        if kv < best:
                            best = kv
                            i = j
                    loads[i] += 1
                elif many:
                    if len(lheap) > lheap_cap:
                        lheap = _load_heap(loads, dead, R)
                    while True:
                        key = lheap[0]
                        load = key // R
                        i = key - load * R
                        if loads[i] == load:
                            break
                        heapq.heappop(lheap)
                    loads[i] = load + 1
                    heapq.heapreplace(lheap, (load + 1) * R + i)
                else:
                    i = 0
                    for j in range(1, R):
                        if loads[j] < loads[i]:
                            i = j
                    loads[i] += 1
                # the request joins the back of the replica's queue
                tl = wtail[i]
                wprev[rid] = tl
                wnext[rid] = -1
                if tl != -1:
                    wnext[tl] = rid
                else:
                    whead[i] = rid
                wtail[i] = rid
                if busy[i]:
                    continue
                from_step = False
                k, b, sum_c, sp = kk[i], bb[i], sc[i], spf[i]
        # Decode-only steps run back to back with no event between them where one replica serves, no arrival is due,
        # nothing prefills or waits and no sequence finishes before step kf: the same steps, timed and recorded as the
        # loop would one event at a time (the same arithmetic in the same order), without the event heap's round trips.
        # (after prefill steps the first decode step goes the usual way, which records the gaps across them)
        if (R == 1 and t_arr == inf and loss_at == inf and b and pcnt[i] == 0 and whead[i] == -1 and len(heaps[i])
                and pause[i] == 0.0):
            kf_next = heaps[i][0] // n
            while k < kf_next:
                ctx = sum_c + b * k
                if windowed:
                    used = _held(wa, win, ctx, b) + 0.0
                    need = _held(wa, win, ctx + b, b) - _held(wa, win, ctx, b)
                    if used + need > cap:
                        break
                    dec_keys_w = ctx if not b * win < ctx else b * win
                    t = step_s(c, b, ctx, dec_keys_w, 0.0, 0.0, 0.0, ctx + 0.0, dec_keys_w + 0.0)
                    held_now = cap - (cap - used - need)
                else:
                    used = sum_c + b * k + sp
                    if used + b > cap:
                        break
                    t = step_s(c, b, ctx, ctx, 0.0, 0.0, 0.0, ctx + 0.0, ctx + 0.0)
                    held_now = used + b + 0.0
                end = now + t
                if end > stop:  # the loop stops at this step's end: it is started below, as the loop starts it
                    break
                if warm <= now < duration:
                    st, sb, kh, ns = _record(st, sb, kh, ns, t, b, held_now)
                now = end
                k += 1
            kk[i] = k
        # the next step: decodes first, room for one token each, preempting the newest while the cache is full; with
        # sliding-window layers the cache is counted with them clipped at the window (scheduler._start_windowed_step)
        if windowed:
            ph = 0.0  # the partly prefilled prompts' cache
            rid = phead[i]
            while rid != -1:
                ph += _held(wa, win, pdone[rid], 1)
                rid = pnext[rid]
            ctx = sum_c + b * k
            used = _held(wa, win, ctx, b) + ph
            need = _held(wa, win, ctx + b, b) - _held(wa, win, ctx, b)
        else:
            ph = 0.0
            used = sum_c + b * k + sp
            need = b
        while b and used + need > cap:
            rid = otail[i]
            pv = oprev[rid]
            otail[i] = pv
            if pv != -1:
                onext[pv] = -1
            kf = dec_kf[rid]
            dec_kf[rid] = -1
            b -= 1
            sum_c -= dec_c[rid]
            generated = output[rid] - (kf - k + 1)
            prompt[rid] += generated
            output[rid] -= generated
            resumed[rid] = True
            last_token[rid] = now
            if ncoh[i] > 0:  # the newest decoders are the last cohort's
                coh_n[i, ncoh[i] - 1] -= 1
                if coh_n[i, ncoh[i] - 1] == 0:
                    ncoh[i] -= 1
            hd = whead[i]  # to the front of the queue
            wnext[rid] = hd
            wprev[rid] = -1
            if hd != -1:
                wprev[hd] = rid
            else:
                wtail[i] = rid
            whead[i] = rid
            preemptions += 1
            if windowed:
                ctx = sum_c + b * k
                used = _held(wa, win, ctx, b) + ph
                need = _held(wa, win, ctx + b, b) - _held(wa, win, ctx, b)
            else:
                used = sum_c + b * k + sp
                need = b
        ctx_sum = sum_c + b * k
        if not b:
            dec_keys_w = 0.0
        elif windowed:
            dec_keys_w = ctx_sum if not b * win < ctx_sum else b * win
        else:
            dec_keys_w = ctx_sum
        # prefill in the remaining token budget: partly prefilled requests first, then the queue (FIFO)
        pre = 0.0
        pre_keys = 0.0
        pre_keys_w = 0.0
        kv_pre = 0.0
        kv_pre_w = 0.0
        m = 0
        free = cap - used - need
        if pcnt[i] or whead[i] != -1:
            room = budget if pf else budget - b
            rid = phead[i]
            while rid != -1:
                if room < 1 or free < 1:
                    break
                done = pdone[rid]
                chunk = prompt[rid] - done
                if lp < chunk:
                    chunk = lp
                if room < chunk:
                    chunk = room
                lim = _fitting(wa, win, done, free) if windowed else free
                if lim < chunk:
                    chunk = lim
                pchunk[rid] = chunk
                m += 1
                room -= chunk
                free -= _cost(wa, win, done, chunk) if windowed else chunk
                keys = chunk * done + (chunk * (chunk + 1.0) / 2.0 if causal else chunk * chunk)
                pre += chunk
                pre_keys += keys
                kv_pre += done
                if windowed:
                    pre_keys_w += keys if not win * chunk < keys else win * chunk
                    kv_pre_w += done if not win < done else win
                rid = pnext[rid]
            running = b + pcnt[i]
            while whead[i] != -1 and room >= 1 and free >= 1 and running < max_seqs:
                rid = whead[i]
                cached = 0.0 if resumed[rid] else math.floor(prompt[rid] * reuse)
                want = prompt[rid] - cached
                if lp < want:
                    want = lp
                if room < want:
                    want = room
                held = _held(wa, win, want + cached, 1) if windowed else want + cached
                if held > free:  # admitted only when its next chunk fits the cache
                    break
                nx = wnext[rid]  # off the front of the queue
                whead[i] = nx
                if nx != -1:
                    wprev[nx] = -1
                else:
                    wtail[i] = -1
                pdone[rid] = cached  # onto the end of the prefilling list
                sp += cached
                tl = ptail[i]
                pprev[rid] = tl
                pnext[rid] = -1
                if tl != -1:
                    pnext[tl] = rid
                else:
                    phead[i] = rid
                ptail[i] = rid
                pcnt[i] += 1
                running += 1
                pchunk[rid] = want
                m += 1
                room -= want
                free -= held
                keys = want * cached + (want * (want + 1.0) / 2.0 if causal else want * want)
                pre += want
                pre_keys += keys
                kv_pre += cached
                if windowed:
                    pre_keys_w += keys if not win * want < keys else win * want
                    kv_pre_w += cached if not win < cached else win
        bb[i], sc[i], spf[i] = b, sum_c, sp
        held_now = cap - free if windowed else used + b + pre
        dstep[i] = not (pf and m)
        if not dstep[i]:  # prefill first: this step's decoders wait, its decodes and their context dropped
            b, ctx_sum, dec_keys_w = 0, 0.0, 0.0
        if b == 0 and pre == 0:
            busy[i] = False
            if from_step:
                heapq.heappop(events)
            continue
        if windowed:
            t = step_s(c, b, ctx_sum, dec_keys_w, pre, pre_keys, pre_keys_w, ctx_sum + kv_pre, dec_keys_w + kv_pre_w)
        else:
            t = step_s(c, b, ctx_sum, dec_keys_w, pre, pre_keys, pre_keys, ctx_sum + kv_pre, dec_keys_w + kv_pre)
        busy[i] = True
        npend[i] = m
        if pf:
            if not dstep[i]:
                if bb[i] == 0 and ncoh[i] == 0:  # no one is waiting: the pause starts here
                    pause[i] = 0.0
                pause[i] += t
            elif pause[i] > 0.0:
                gi, gn, gv, npg = _flush_pause(i, t, b, warm <= now < duration, ns, pause, coh_p, coh_n, ncoh,
                                               gi, gn, gv, npg)
        if warm <= now < duration:
            st, sb, kh, ns = _record(st, sb, kh, ns, t, b, held_now)
        if from_step:
            heapq.heapreplace(events, (now + t, i))
        else:
            heapq.heappush(events, (now + t, i))
    return (first_token, finish, gaps[:ng].copy(), st[:ns].copy(), sb[:ns].copy(), kh[:ns].copy(), preemptions,
            first_in_window, decided_miss, requeued, gi[:npg].copy(), gn[:npg].copy(), gv[:npg].copy())
