"""The fewest replicas that keep the promise, by simulation: a bisection on a pilot, confirmed by full runs, on every seed.

Every fleet size serves the same requests (common random numbers); p95 TTFT does not rise with replicas for the same
seed (tested), which is what makes the bisection valid. A fleet to order from must keep the promise on each of
:data:`VERIFY_SEEDS` seeds, and, with the plan's redundancy lost at the start of the peak, still keep it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xlplan.plan.scenario import Scenario
from xlplan.simulate.run import simulate, watched_verdict
from xlplan.simulate.workload import (
    DEFAULT_SEED,
    SampledWorkload,
    Workload,
    prefix,
    verification_minutes,
    verification_workload,
)

VERIFY_SEEDS = 3
"""Seeds a verified fleet must keep the promise on, all of them: the run's seed and the next ones. One seed's
minimum can rest on a lucky draw of arrivals; a fleet to order from must hold on each. A replayed log is one
workload, so there it is the only one. [seeds]"""


@dataclass(frozen=True)
class Search:
    """The fewest replicas that keep the promise, and every run that found it. Units in the field comments."""

    verified_replicas: int | None  # None: no fleet up to the search's cap keeps it [replicas]
    runs: dict  # replicas -> SimResult
    cap_replicas: int  # the largest fleet the search would try [replicas]


def _search_cap(start_replicas: int) -> int:
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
    workload : Workload or SampledWorkload
        The requests every fleet size serves (or a sample's share of them, :class:`xlplan.simulate.workload.SampledWorkload`).
    duration_s : float
        Span of the workload's arrivals measured. [s]
    start_replicas : int
        Where the search starts: the closed form's load in replicas. [replicas]
    percentile : float
        The promise's percentile. [percent]
    runs : dict, optional
        Filled in place with replicas → :class:`xlplan.simulate.run.SimResult` of each full run; runs already in it are reused.

    Returns
    -------
    Search
        The fewest replicas that keep the promise (None when none up to :func:`_search_cap` does), the full runs and
        the cap.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable: 4 for the load, +1 for
    N+1 … buy a node of 8": the load the simulation starts from.
    """
    runs = {} if runs is None else runs
    cap = _search_cap(start_replicas)
    if isinstance(workload, SampledWorkload):  # a sample's share of the peak at the start
        rate = workload.rate_rps(max(start_replicas, 1))
    else:
        rate = len(workload.arrival_s) / duration_s if duration_s > 0 else 0.0
    pilot_s = max(PILOT_MIN_S, PILOT_REQUESTS / rate) if rate > 0 else duration_s
    if pilot_s >= 0.75 * duration_s:
        n = _bisect(s, tp, workload, duration_s, start_replicas, percentile, runs, cap)
        if n is not None and n > 1:
            _meets(s, tp, workload, duration_s, percentile, runs, n - 1)  # shown: the run just below
        return Search(n, runs, cap)
    n = _bisect(s, tp, prefix(workload, pilot_s), pilot_s, start_replicas, percentile, {}, cap, _meets_pilot)
    n = cap if n is None else n
    return Search(_confirmed(s, tp, workload, duration_s, percentile, runs, n, cap), runs, cap)


def _confirmed(s, tp, workload, duration_s, percentile, runs, n: int, cap: int) -> int | None:
    """From the pilot's answer ``n``, full runs one replica at a time until the one at ``n`` meets the promise and
    the one at ``n − 1`` misses (or ``n = 1``); None when none up to ``cap`` meets it. [replicas]"""
    def full(k: int) -> bool:
        return _meets(s, tp, workload, duration_s, percentile, runs, k)

    if isinstance(workload, SampledWorkload):  # a replica is a sliver of the fleet: gallop, not step
        return _gallop(full, n, cap)
    if full(n):
        while n > 1 and full(n - 1):
            n -= 1
    else:
        while not full(n):
            if n >= cap:
                return None
            n += 1
        if n > 1:
            full(n - 1)
    return n


def _gallop(meets, n: int, cap: int, lo: int | None = None) -> int | None:
    """The fewest replicas from 1 to ``cap`` that ``meets``, with ``n`` the guess: strides doubling away from it (down
    while it meets, up while it misses), then a bisection of the last stride, so the answer ``m`` is shown beside a
    run at ``m − 1`` that misses (or ``m = 1``, or ``m − 1 = lo``, a count known to miss). A fleet sampled
    (:class:`xlplan.simulate.workload.SampledWorkload`) of thousands of replicas is a pilot's answer off by tens of
    them: one at a time would take tens of full runs; this takes twice their logarithm. None when ``cap`` misses.
    [replicas]

    Parameters
    ----------
    meets : callable
        Replicas to whether they keep the promise; assumed not to fall as replicas are added. [bool]
    n : int
        Where to start. [replicas]
    cap : int
        The most replicas tried. [replicas]
    lo : int, optional
        A count known to miss: the search never goes down to it. [replicas]

    Returns
    -------
    int or None
        The fewest replicas that meet. [replicas]
    """
    floor = 0 if lo is None else lo  # a count that misses (0 replicas serve nothing)
    n = min(max(n, floor + 1), cap)
    step = 1
    if meets(n):
        hi = n
        while hi - floor > 1:
            m = max(hi - step, floor + 1)
            if not meets(m):
                floor = m
                break
            hi, step = m, 2 * step
    else:
        floor = n
        while True:
            if floor >= cap:
                return None
            m = min(floor + step, cap)
            if meets(m):
                hi = m
                break
            floor, step = m, 2 * step
    return _narrowed(meets, floor, hi)


def _narrowed(meets, lo: int, hi: int) -> int:
    """The fewest replicas in (``lo``, ``hi``] that ``meets``, where ``lo`` misses and ``hi`` meets: a bisection.
    [replicas]"""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _meets(s, tp, workload, duration_s, percentile, runs, n: int) -> bool:
    """Whether ``n`` replicas keep the promise on the full run, which ``runs`` keeps (or already holds). [bool]"""
    if n not in runs:
        runs[n] = simulate(s, n, tp, workload, duration_s, percentile)
    return runs[n].meets_promise


def _meets_pilot(s, tp, workload, duration_s, percentile, runs, n: int) -> bool:
    """:func:`_meets` for the pilot, whose runs nobody reads: ``runs`` holds verdicts, and a run stops once it missed."""
    if n not in runs:
        runs[n] = watched_verdict(s, n, tp, workload, duration_s, percentile)[1]
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
    return _narrowed(meets, lo, hi)


def minimum_replicas(s: Scenario, tp: int, start_replicas: int, percentile: float = 95.0, minutes: float | None = None,
                     seed: int = DEFAULT_SEED, cv2: float = 1.0, max_context: int | None = None,
                     sample: int | None = None) -> int | None:
    """The fewest replicas that keep the promise by the verification's rule: on each of :data:`VERIFY_SEEDS` seeds,
    every run stable, Poisson (or ``cv2``) arrivals at peak for :func:`xlplan.simulate.workload.default_minutes`. [replicas]

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
        Span of each run's arrivals; left out, :func:`xlplan.simulate.workload.default_minutes`. [minutes]
    seed : int
        The first seed; the others follow it. [1]
    cv2 : float
        Squared coefficient of variation of the gaps between arrivals. [1]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]
    sample : int, optional
        Replicas each run simulates (0: every one); left out, as the verification samples
        (:func:`xlplan.simulate.workload.verification_workload`). [replicas]

    Returns
    -------
    int or None
        The verified load in replicas, as :func:`xlplan.simulate.verify.verify` finds it; None when no fleet up to the search's cap keeps
        the promise. [replicas]
    """
    if minutes is None:
        minutes = verification_minutes(s, start_replicas, sample)
    duration = minutes * 60.0
    wl, *others = [verification_workload(s, minutes, seed + k, cv2, max_context, start_replicas, sample)
                   for k in range(VERIFY_SEEDS)]
    runs: dict = {}
    found = search(s, tp, wl, duration, start_replicas, percentile, runs)
    if found.verified_replicas is None:
        return None
    return on_every_seed(s, tp, wl, others, duration, percentile, found.verified_replicas, found.cap_replicas, runs)


def on_every_seed(s, tp, workload, others, duration_s, percentile, start, cap, runs):
    """The fewest replicas, from ``start`` (the first seed's minimum) up, that keep the promise on every workload:
    none below ``start`` can, as the first seed's misses there. ``runs`` gains the first seed's runs.

    Parameters
    ----------
    s : Scenario
        The plan's numbers at the peak.
    tp : int
        GPUs per replica. [GPUs]
    workload : Workload
        The first seed's requests.
    others : list of Workload
        The other seeds' requests, each of which must keep the promise too.
    duration_s : float
        Each run's span. [s]
    percentile : float
        The promise's percentile. [%]
    start : int
        The first seed's minimum: where the search starts. [replicas]
    cap : int
        The most replicas tried. [replicas]
    runs : dict
        Replicas to the first seed's full run; gains the runs made here.

    Returns
    -------
    int or None
        The fewest replicas keeping the promise on every seed, or None when none up to ``cap`` does. [replicas]
    """
    def every(n: int) -> bool:
        if n not in runs:
            runs[n] = simulate(s, n, tp, workload, duration_s, percentile)
        return runs[n].meets_promise and all(watched_verdict(s, n, tp, w, duration_s, percentile)[1] for w in others)

    if isinstance(workload, SampledWorkload):  # from the first seed's minimum, the one below it known to miss
        return _gallop(every, start, max(cap, start), start - 1)
    n = start
    while n <= max(cap, start):
        if every(n):
            return n
        n += 1
    return None


def _survives_loss(s, tp, workloads, duration_s, percentile, verified, lost, cap, known=None):
    """(replicas, run): the fewest replicas keeping the promise on every workload with ``lost`` of them failing at the
    start of the peak, searched up from the verified load plus ``lost`` one replica at a time; (None, None) when there
    is no verified load or none up to ``cap`` survives; the verified load itself when the plan keeps no redundancy; the
    run is the first workload's. ``known`` maps replicas to full runs of the first workload with ``lost`` lost
    already done (the failure check), reused. Only verdicts decide, and only a passing run's figures are read, so
    every run here may stop once it has missed (:func:`watched_verdict`).

    Never fewer than the verified load plus ``lost``: the survivors are a fleet of ``n − lost`` replicas serving the
    peak, and the verified load is the fewest that keep the promise on every seed, so a loss run passing with fewer
    would contradict it (a run's stability verdict near the edge, not capacity) and order fewer GPUs than the load.
    [replicas]"""
    if verified is None:
        return None, None
    if lost == 0:
        return verified, None
    runs: dict = {}
    known = known or {}

    def meets(n: int) -> bool:
        if n not in runs:
            first, ok = ((known[n], known[n].meets_promise) if n in known
                         else watched_verdict(s, n, tp, workloads[0], duration_s, percentile, lost=lost))
            ok = ok and all(watched_verdict(s, n, tp, w, duration_s, percentile, lost=lost)[1] for w in workloads[1:])
            runs[n] = (first, ok)
        return runs[n][1]

    n = verified + lost
    if isinstance(workloads[0], SampledWorkload):  # never below the verified load plus the loss
        m = _gallop(meets, n, max(cap, n), n - 1)
        return (m, runs[m][0]) if m is not None else (None, None)
    if meets(n):
        return n, runs[n][0]
    while n < max(cap, verified + lost):
        n += 1
        if meets(n):
            return n, runs[n][0]
    return None, None


CAPACITY_TOLERANCE = 0.01
"""The highest rate kept is bracketed to within this fraction of itself. [1]"""

CAPACITY_GROWTH = 16.0
"""The bracket grows or shrinks from its first guess by at most this factor each way. [1]"""


def keeps_promise_at(s: Scenario, rate: float, replicas: int, tp: int, seeds: list[int], percentile: float,
                     max_context: int | None = None) -> bool:
    """Whether ``replicas`` of ``tp`` GPUs keep the promise at peak ``rate`` on every seed, by the verification's rule.

    Parameters
    ----------
    s : Scenario
        The plan: its promise, lengths, burstiness and step physics; its own peak rate is replaced by ``rate``.
    rate : float
        The peak arrival rate tried. [requests/s]
    replicas, tp : int
        The fleet: replicas of ``tp`` GPUs. [replicas], [GPUs]
    seeds : list of int
        The workloads' seeds; every one must keep the promise. [1]
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]

    Returns
    -------
    bool
        True where every seed's run at ``rate`` (:func:`xlplan.simulate.workload.verification_minutes` long, a
        sample's share past :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` replicas, as ``plan`` verifies)
        keeps the promise and is stable. [bool]
    """
    sr = replace(s, peak_rps=rate)
    minutes = verification_minutes(sr, replicas)
    for seed in seeds:
        wl = verification_workload(sr, minutes, seed, s.arrival_cv2, max_context, replicas)
        if not watched_verdict(sr, replicas, tp, wl, minutes * 60.0, percentile)[1]:
            return False
    return True


def rate_bracket(keeps, guess: float, peak: float) -> tuple[float | None, float | None]:
    """(lo, hi): a rate kept and one missed, ``peak`` tried first, then outward from ``guess`` by doubling or halving
    within :data:`CAPACITY_GROWTH`; None where none was found. [requests/s]

    Parameters
    ----------
    keeps : callable
        Rate to whether the fleet keeps the promise there. [bool]
    guess : float
        Where to start: a closed form's figure. [requests/s]
    peak : float
        The rate tried first (a plan's own peak, so the answer agrees with ``plan`` there). [requests/s]

    Returns
    -------
    tuple of float or None
        The bracket's passing and failing ends. [requests/s]
    """
    lo, hi = (peak, None) if keeps(peak) else (None, peak)
    if lo is not None:
        rate = guess if guess > lo else 2.0 * lo
        while hi is None and rate <= max(guess, peak) * CAPACITY_GROWTH:
            if keeps(rate):
                lo, rate = rate, 2.0 * rate
            else:
                hi = rate
    else:
        rate = guess if guess < hi else hi / 2.0
        while lo is None and rate >= min(guess, peak) / CAPACITY_GROWTH:
            if keeps(rate):
                lo = rate
            else:
                hi, rate = rate, rate / 2.0
    return lo, hi


def highest_rate(s: Scenario, replicas: int, tp: int, guess: float, peak: float, percentile: float = 95.0,
                 max_context: int | None = None, tolerance: float = CAPACITY_TOLERANCE
                 ) -> tuple[float | None, float | None, list[int]]:
    """The highest Poisson (or the plan's bursty) rate ``replicas`` of ``tp`` GPUs serve keeping the promise in
    simulation: bracketed from ``peak`` and ``guess`` (:func:`rate_bracket`), then bisected to ``tolerance``.

    Parameters
    ----------
    s : Scenario
        The plan: promise, lengths, burstiness, step physics. [—]
    replicas, tp : int
        The fleet. [replicas], [GPUs]
    guess, peak : float
        The bracket's start (:func:`rate_bracket`). [requests/s]
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping lengths. [tokens]
    tolerance : float
        Relative width of the final bracket. [1]

    Returns
    -------
    lo, hi : float or None
        The highest rate kept on every seed and the lowest missed, within ``tolerance``; either None where the bracket
        found no such end. [requests/s]
    seeds : list of int
        The seeds every rate was judged on (:data:`VERIFY_SEEDS` of them). [1]

    References
    ----------
    MLPerf Inference's Server scenario asks the same question of a system: the highest Poisson rate at which the p99
    TTFT and TPOT stay within their limits (``mlperf.conf``: ``*.Server.target_latency_percentile = 99``).
    """
    seeds = [DEFAULT_SEED + k for k in range(VERIFY_SEEDS)]

    def keeps(rate: float) -> bool:
        return keeps_promise_at(s, rate, replicas, tp, seeds, percentile, max_context)

    lo, hi = rate_bracket(keeps, guess, peak)
    if lo is None or hi is None:
        return lo, hi, seeds
    while (hi - lo) > tolerance * lo:
        mid = math.sqrt(lo * hi) if hi > 2.0 * lo else (lo + hi) / 2.0  # a wide bracket halves in ratio
        if keeps(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi, seeds
