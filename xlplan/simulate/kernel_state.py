"""The compiled loop's state as arrays, and the routines it calls: a step's time, the routing heap, a replica's loss.

:func:`xlplan.simulate.kernel.run` is the loop; what it allocates and calls sits here, compiled by numba where numba is
installed (the functions unchanged without it).

How the Python loop's containers map onto arrays (every request is in at most one of each at a time):

- a replica's waiting queue (FIFO, preempted requests to the front): a doubly linked list through ``wnext``/``wprev``;
- its partly prefilled requests, in order, with the tokens each has in: ``pnext``/``pprev`` and ``pdone``; the chunks
  of the step in flight are always the first ``npend`` of them (a step gives every earlier entry a chunk before it
  admits a new one), so they are kept as ``pchunk`` per request;
- its decoders, newest last (for preemption): ``onext``/``oprev``, a finished decoder unlinked at once (the Python
  loop leaves it and skips it when popped: the same newest decoder either way);
- their (finish step, request) heap: one int heap per replica of ``finish step × requests + request``, which orders
  as the pairs do; an entry is current while ``dec_kf[request]`` holds its finish step;
- the event heap of (end time, replica) pairs, as in Python;
- least-loaded routing: a scan on a few replicas, on many a lazy heap of ``load × replicas + replica``: the least
  loaded, the first of equals, either way.

numba's on-disk cache of :func:`xlplan.simulate.kernel.run` holds these routines compiled into it and is keyed on
``xlplan/simulate/kernel.py`` alone: after editing this module, touch ``kernel.py`` (or clear its ``__pycache__``) so the
loop is compiled again (numba's documented limit on caching: changes in functions of other files go unnoticed).

References
----------
Lam, Pitrou & Seibert, "Numba: a LLVM-based Python JIT compiler", LLVM-HPC 2015.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

try:  # numba compiles the loop; without it (Pyodide, or a numba that will not load), the Python loop runs instead
    import numba

    AVAILABLE = True
except Exception:  # pragma: no cover - exercised where numba has no wheel or fails to load
    numba = None
    AVAILABLE = False


def njit(*, cache: bool = True):
    """numba's ``njit``, cached on disk where a cache can be kept (beside the module, or numba's per-user folder),
    uncached where neither is writable; the function unchanged without numba. [decorator]

    Parameters
    ----------
    cache : bool
        Whether to keep the compiled code on disk between processes. [bool]

    Returns
    -------
    callable
        The decorator. [—]
    """
    def wrap(fn):
        if numba is None:
            return fn
        try:
            return numba.njit(cache=cache)(fn)
        except RuntimeError:  # "no locator available": nowhere to keep the cache
            return numba.njit(fn)
    return wrap


ROUTING_HEAP_REPLICAS = 16
"""From this many replicas routing keeps a heap rather than scanning: the same replica, the least loaded. [replicas]"""

DEAD_LOAD = 2**62
"""A failed replica's load: never the least. [requests]"""


@njit(cache=True)
def step_s(c, dec, dec_keys, dec_keys_w, pre, pre_keys, pre_keys_w, kv, kv_w):
    """One step's time, :func:`xlplan.serving.folded_step.step_time_fn`'s ``f`` term by term, on the constants ``c`` of
    :func:`xlplan.serving.folded_step.step_constants`: the step time's compiled twin (of
    :func:`xlplan.serving.step.step_time_s`). [s]

    Parameters
    ----------
    c : array of float
        The replica's constants, in :data:`xlplan.serving.folded_step.STEP_CONSTANTS` order. [mixed: FLOP/s, s, FLOP, layers]
    dec : int
        Decode tokens (one per decoding sequence). [tokens]
    dec_keys, dec_keys_w : float
        Keys the decodes attend to, over full and window layers. [token·keys]
    pre : float
        Prefill tokens. [tokens]
    pre_keys, pre_keys_w : float
        Keys the prefill chunks attend to, over full and window layers. [token·keys]
    kv, kv_w : float
        Cached tokens the step reads, over full and window layers. [tokens]

    Returns
    -------
    float
        The step's time. [s]
    """
    (overhead, n_dense, gpu_d, gpu_p, dense_mem, has_experts, n_exp, exp_d, exp_p, exp_bytes, q, attn, full, windowed,
     att_d, att_p, kv_per, comm, ar_fixed, ar_per_token, ep, a2a_fixed, a2a_per_token) = (
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14], c[15], c[16],
        c[17], c[18], c[19], c[20], c[21], c[22])
    tokens = dec + pre
    t = overhead
    x = n_dense * dec / gpu_d + n_dense * pre / gpu_p
    t += x if x > dense_mem else dense_mem
    if has_experts != 0.0:
        x = n_exp * dec / exp_d + n_exp * pre / exp_p
        m = exp_bytes * (1.0 - q ** tokens)
        t += x if x > m else m
    x = attn * (full * dec_keys + windowed * dec_keys_w) / att_d + attn * (full * pre_keys + windowed * pre_keys_w) / att_p
    m = kv_per * (full * kv + windowed * kv_w)
    t += x if x > m else m
    if comm != 0.0:
        t += ar_fixed + ar_per_token * tokens
    if ep != 0.0:
        t += a2a_fixed + a2a_per_token * tokens
    return t


@njit(cache=True)
def _record(st, sb, kh, ns, t, b, held):
    """One record's three values appended at ``ns`` (the arrays doubled where full): (st, sb, kh, ns + 1). A measured
    step's time, decodes and cache held ([s], [sequences], [tokens]); or a token gap across prefill steps, how many
    sequences had it and its step's index ([s], [sequences], [index]), by :func:`_flush_pause`."""
    if ns == st.shape[0]:
        st = _grow(st)
        sb = _grow(sb)
        kh = _grow(kh)
    st[ns] = t
    sb[ns] = b
    kh[ns] = held
    return st, sb, kh, ns + 1


@njit(cache=True)
def _add_cohort(i, p, n, coh_p, coh_n, ncoh):
    """Replica ``i``'s prompts that landed in a prefill step, ``n`` of them at pause ``p`` (prefill first), as a cohort
    whose next token gap is the pause after it; the arrays widened where full: (coh_p, coh_n). [s], [sequences]"""
    if ncoh[i] == coh_p.shape[1]:
        wp = np.empty((coh_p.shape[0], coh_p.shape[1] * 2))
        wn = np.zeros((coh_n.shape[0], coh_n.shape[1] * 2), np.int64)
        wp[:, :coh_p.shape[1]] = coh_p
        wn[:, :coh_n.shape[1]] = coh_n
        coh_p, coh_n = wp, wn
    coh_p[i, ncoh[i]] = p
    coh_n[i, ncoh[i]] = n
    ncoh[i] += 1
    return coh_p, coh_n


@njit(cache=True)
def _flush_pause(i, t, b, record, ns, pause, coh_p, coh_n, ncoh, gi, gn, gv, ng):
    """Replica ``i``'s decode step of ``t`` after prefill steps (prefill first): its ``b`` decoders' token gaps are the
    step plus the pause each waited through, recorded as (step index ``ns``, count, gap) where ``record``; the pause
    and its cohorts cleared. Mirrors :func:`xlplan.simulate.scheduler._pause_gaps`: (gi, gn, gv, ng). [—], [s]"""
    if record:
        joined = 0
        for j in range(ncoh[i]):
            n = coh_n[i, j]
            joined += n
            wait = pause[i] - coh_p[i, j]
            if wait > 0.0 and n > 0:
                gv, gn, gi, ng = _record(gv, gn, gi, ng, t + wait, n, ns)
        old = b - joined
        if old > 0:
            gv, gn, gi, ng = _record(gv, gn, gi, ng, t + pause[i], old, ns)
    pause[i] = 0.0
    ncoh[i] = 0
    return gi, gn, gv, ng


@njit(cache=True)
def _held(a, w, total, count):
    """:func:`xlplan.simulate.scheduler._window_held`: the cache ``count`` sequences of ``total`` tokens hold, window
    layers clipped at ``w``. [tokens of every layer]"""
    cw = count * w
    return a * total + (1.0 - a) * (cw if cw < total else total)


@njit(cache=True)
def _cost(a, w, done, chunk):
    """:func:`xlplan.simulate.scheduler._window_cost`: what ``chunk`` more tokens after ``done`` add to the cache.
    [tokens of every layer]"""
    end = done + chunk
    return a * chunk + (1.0 - a) * ((w if w < end else end) - (w if w < done else done))


@njit(cache=True)
def _fitting(a, w, done, free):
    """:func:`xlplan.simulate.scheduler._window_fitting`: the longest chunk after ``done`` whose cost is within
    ``free``. [tokens]"""
    below = w - done
    if 0.0 > below:
        below = 0.0
    if free <= below:
        return free
    return below + (free - below) / a if a > 0 else math.inf


@njit(cache=True)
def _grow(a):
    b = np.empty(a.shape[0] * 2, a.dtype)
    b[:a.shape[0]] = a
    return b


@njit(cache=True)
def _request_arrays(n):
    """Per request: first-token, finish and last-token times, resumed, the queue's, prefill list's and decoders'
    links, tokens prefilled and chunked, decoders' context and finish step. [—]"""
    return (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, np.bool_),
            np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.full(n, -1, np.int64),
            np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.zeros(n), np.zeros(n), np.zeros(n),
            np.full(n, -1, np.int64))


@njit(cache=True)
def _replica_arrays(R):
    """Per replica: busy, step counter, decodes, their context, tokens prefilled, the queue's and prefill list's ends,
    prefilling count, chunks in flight, newest decoder, failed, load, the survivors to start. [—]"""
    return (np.zeros(R, np.bool_), np.zeros(R, np.int64), np.zeros(R, np.int64), np.zeros(R), np.zeros(R),
            np.full(R, -1, np.int64), np.full(R, -1, np.int64), np.full(R, -1, np.int64), np.full(R, -1, np.int64),
            np.zeros(R, np.int64), np.zeros(R, np.int64), np.full(R, -1, np.int64), np.zeros(R, np.bool_),
            np.zeros(R, np.int64), np.zeros(R, np.int64))


@njit(cache=True)
def _load_heap(loads, dead, R):
    """The routing heap rebuilt from the loads: ``load × R + replica`` of every live replica. [—]"""
    h = [np.int64(0)]
    h.pop()
    for j in range(R):
        if not dead[j]:
            h.append(loads[j] * R + j)
    heapq.heapify(h)
    return h


@njit(cache=True)
def _lose(now, R, lost, kk, bb, sc, spf, busy, dead, loads, heaps, output, prompt, resumed, last_token, dec_kf, oprev,
          otail, phead, ptail, pnext, pcnt, npend, whead, wnext, wprev, wtail, todo):
    """The last ``lost`` replicas fail at ``now``, as :meth:`xlplan.simulate.loop._Run.lose`: every request they held
    goes, in order of arrival, to the least loaded survivor's queue; returns (requests re-queued, idle survivors
    listed in ``todo`` to start a step). [requests, replicas]"""
    held = [np.int64(0)]
    held.pop()
    for i in range(R - lost, R):
        _recompute_decoders(now, kk[i], otail[i], output, prompt, resumed, last_token, dec_kf, oprev, held)
        _append_chain(phead[i], pnext, held)
        _append_chain(whead[i], wnext, held)
        _clear_replica(i, kk, bb, sc, spf, busy, otail, phead, ptail, pcnt, npend, whead, wtail, heaps, dead, loads)
    held.sort()
    for rid in held:
        _to_least_loaded(rid, R, loads, whead, wnext, wprev, wtail)
    n_todo = 0
    for j in range(R):
        if not dead[j] and not busy[j]:
            todo[n_todo] = j
            n_todo += 1
    return len(held), n_todo


@njit(cache=True)
def _recompute_decoders(now, k, rid, output, prompt, resumed, last_token, dec_kf, oprev, held):
    """A failed replica's decoders, newest first from ``rid``, into ``held``: the tokens they generated join their
    prompts to be recomputed, as after a preemption. [—]"""
    while rid != -1:
        kf = dec_kf[rid]
        generated = output[rid] - (kf - k + 1)
        prompt[rid] += generated
        output[rid] -= generated
        resumed[rid] = True
        last_token[rid] = now
        dec_kf[rid] = -1
        held.append(rid)
        rid = oprev[rid]


@njit(cache=True)
def _append_chain(rid, nxt, held):
    """The requests of a linked list from ``rid`` along ``nxt``, in order, appended to ``held``. [—]"""
    while rid != -1:
        held.append(rid)
        rid = nxt[rid]


@njit(cache=True)
def _clear_replica(i, kk, bb, sc, spf, busy, otail, phead, ptail, pcnt, npend, whead, wtail, heaps, dead, loads):
    """Replica ``i`` failed: its state emptied, its load :data:`DEAD_LOAD`, so routing never picks it. [—]"""
    kk[i] = 0
    bb[i] = 0
    sc[i] = 0.0
    spf[i] = 0.0
    busy[i] = False
    otail[i] = -1
    phead[i] = -1
    ptail[i] = -1
    pcnt[i] = 0
    npend[i] = 0
    whead[i] = -1
    wtail[i] = -1
    heaps[i].clear()
    dead[i] = True
    loads[i] = DEAD_LOAD


@njit(cache=True)
def _to_least_loaded(rid, R, loads, whead, wnext, wprev, wtail):
    """Request ``rid`` to the back of the least loaded replica's queue, the first of equals. [—]"""
    j = 0
    for x in range(1, R):
        if loads[x] < loads[j]:
            j = x
    loads[j] += 1
    tl = wtail[j]
    wprev[rid] = tl
    wnext[rid] = -1
    if tl != -1:
        wnext[tl] = rid
    else:
        whead[j] = rid
    wtail[j] = rid
