"""The wait for a slot: multi-server queueing formulas for the queueing path.

A replica carries at most the decode batch the inter-token target allows; a request that arrives when every slot of
every replica is busy waits, and that wait is part of its time to first token. Treating the fleet's slots as the
servers of one queue, these functions give the probability of waiting (Erlang C), the wait at a percentile, and the
fewest servers that keep the wait within a target.

Notes
-----
- **Erlang C** for ``c`` servers and offered load ``a = λ·S`` erlangs, computed through the Erlang B recursion
  ``B₀ = 1, Bₖ = a·Bₖ₋₁ ÷ (k + a·Bₖ₋₁)``, then ``C = c·B ÷ (c − a·(1 − B))``: stable for thousands of servers, where
  the direct sum of ``aᵏ/k!`` overflows. ``C = 1`` when ``a ≥ c`` (the queue grows without bound).
- **The wait at a percentile** for M/M/c: ``P(W > t) = C·exp(−(c − a)·t ÷ S)``, so ``t_p = S·ln(C ÷ (1 − p)) ÷ (c − a)``
  where ``C > 1 − p``, else 0 (at least share ``p`` of the requests find a free slot).
- **Other arrival and service variability** by the Allen–Cunneen approximation: the M/M/c wait scaled by
  ``(cₐ² + cₛ²) ÷ 2``, the squared coefficients of variation of the gaps between arrivals and of the service time.
  It is exact for M/M/c (both 1) and for the mean wait of M/D/1 (Pollaczek–Khinchine). The same factor is applied to
  the percentile, the usual engineering practice for G/G/c tails.

References
----------
A. K. Erlang, "Solution of some problems in the theory of probabilities of significance in automatic telephone
exchanges", Elektroteknikeren 13, 1917 (the C formula); the Erlang B recursion: D. L. Jagerman, "Some properties of
the Erlang loss function", Bell System Technical Journal 53(3), 1974.
A. O. Allen, Probability, Statistics, and Queueing Theory with Computer Science Applications, 2nd ed., Academic
Press, 1990, §5.2 (the Allen–Cunneen approximation for G/G/c).
W. Whitt, "Approximations for the GI/G/m queue", Production and Operations Management 2(2), 1993.
"""

from __future__ import annotations

import math

POOLED_ROUTINGS: tuple[str, ...] = ("least_loaded", "least_kv")
"""The load balancer's rules (``policy.routing``) that pool the replicas as the servers of one queue: the router picks
the replica with the least work (requests held, or KV tokens) as each request arrives, so no replica's own queue holds
a request while another has room to spare, where round robin and random commit each request to a replica by turn or by
chance. [text]"""

SERVICE_CV2 = 1.0
"""Squared coefficient of variation of a replica's service time the queueing path assumes: exponential, the M/M/c
case. [1]"""

RECURSION_SERVERS = 1000
"""Up to this many servers Erlang B runs its recursion over every server; beyond, the series that stops early. [servers]"""


def erlang_b(servers: int, offered_erlangs: float) -> float:
    """Probability that an arrival finds every server busy in a loss system (Erlang B). [probability]

    Parameters
    ----------
    servers : int
        Servers (slots). [servers]
    offered_erlangs : float
        Offered load: arrival rate times mean service time. [erlangs]

    Returns
    -------
    float
        ``B(c, a)``: by the recursion ``B₀ = 1, Bₖ = a·Bₖ₋₁ ÷ (k + a·Bₖ₋₁)`` up to :data:`RECURSION_SERVERS`
        servers; beyond, by the series ``1 ÷ B = Σⱼ Πᵢ₌₀^{j−1} (c − i) ÷ a`` (the defining sum read from its last
        term down), stopped once its terms fall below 1e-17 of the sum, which takes a few times ``√a`` terms instead
        of ``c`` (past :data:`WINDOW_ERLANGS`, those terms as arrays). [probability]

    References
    ----------
    D. L. Jagerman, "Some properties of the Erlang loss function", Bell System Technical Journal 53(3), 1974.

    Examples
    --------
    >>> round(erlang_b(2, 1.0), 6)  # (1²/2!) ÷ (1 + 1 + 1²/2!) = 0.5 ÷ 2.5
    0.2
    """
    if servers < 0 or offered_erlangs < 0:
        raise ValueError(f"erlang_b: got {servers} servers and {offered_erlangs} erlangs; expected both 0 or more")
    c, a = int(servers), float(offered_erlangs)
    if c <= RECURSION_SERVERS or a == 0.0:
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
        return b
    if a > WINDOW_ERLANGS:
        return _erlang_b_window(c, a)
    total, term = 1.0, 1.0
    for j in range(1, c + 1):
        term *= (c - j + 1) / a
        total += term
        if c - j < a and term < 1e-17 * total:  # past the peak and negligible: the rest only falls further
            break
    return 1.0 / total


WINDOW_ERLANGS = 10_000.0
"""Past this offered load Erlang B sums its series as arrays, only the terms within :data:`WINDOW_WIDTHS` of the
largest: the same sum, a few times faster where it runs to hundreds of thousands of terms. [erlangs]"""

WINDOW_WIDTHS = 12.0
"""The series' terms fall as about ``exp(−x² ÷ 2a)`` either side of the largest: past 12 widths ``√a`` they are below
``e⁻⁷²`` of it, and all of them together below 1e-23 of the sum. [√erlangs]"""


def _erlang_b_window(c: int, a: float) -> float:
    """Erlang B by the series ``1 ÷ B = Σⱼ Tⱼ``, ``Tⱼ = Πᵢ₌₀^{j−1} (c − i) ÷ a``, summed in logs over the terms within
    :data:`WINDOW_WIDTHS` ``√a`` of the largest (``j = c − a``); ``ln T`` at the window's start by ``lgamma``. [probability]"""
    import numpy as np

    peak = max(0, math.ceil(c - a))
    width = math.ceil(WINDOW_WIDTHS * math.sqrt(a)) + 20
    lo, hi = max(0, peak - width), min(c, peak + width)
    start = 0.0 if lo == 0 else math.lgamma(c + 1) - math.lgamma(c - lo + 1) - lo * math.log(a)
    logs = start + np.concatenate(([0.0], np.cumsum(np.log((c - np.arange(lo, hi, dtype=np.float64)) / a))))
    top = float(logs.max())
    return math.exp(-top) / float(np.exp(logs - top).sum())


def erlang_c(servers: int, offered_erlangs: float) -> float:
    """Probability that an arrival waits for a server (Erlang C, M/M/c). [probability]

    Parameters
    ----------
    servers : int
        Servers (slots). [servers]
    offered_erlangs : float
        Offered load: arrival rate times mean service time. [erlangs]

    Returns
    -------
    float
        ``C = c·B ÷ (c − a·(1 − B))`` with ``B`` the Erlang B probability; 1 when ``a ≥ c``. [probability]

    References
    ----------
    A. K. Erlang, Elektroteknikeren 13, 1917; the identity with Erlang B: Allen (1990), §5.2.

    Examples
    --------
    >>> round(erlang_c(2, 1.0), 6)  # M/M/2 at ρ = 0.5: 2ρ² ÷ (1 + ρ) = 1/3
    0.333333
    """
    c, a = int(servers), float(offered_erlangs)
    if c <= 0 or a >= c:
        return 1.0
    if a == 0.0:
        return 0.0
    b = erlang_b(c, a)
    return c * b / (c - a * (1.0 - b))


def allen_cunneen_factor(arrival_cv2: float, service_cv2: float) -> float:
    """The factor that turns an M/M/c wait into a G/G/c one (Allen–Cunneen). [1]

    Parameters
    ----------
    arrival_cv2 : float
        Squared coefficient of variation of the gaps between arrivals: 1 for Poisson. [1]
    service_cv2 : float
        Squared coefficient of variation of the service time: 1 exponential, 0 deterministic. [1]

    Returns
    -------
    float
        ``(cₐ² + cₛ²) ÷ 2``. [1]

    References
    ----------
    A. O. Allen, Probability, Statistics, and Queueing Theory, 2nd ed., 1990, §5.2.
    """
    return (arrival_cv2 + service_cv2) / 2.0


def mean_wait_s(servers: int, arrival_rps: float, service_s: float, arrival_cv2: float = 1.0,
                service_cv2: float = 1.0) -> float:
    """Mean wait for a server before service starts. [s]

    Parameters
    ----------
    servers : int
        Servers (slots). [servers]
    arrival_rps : float
        Arrival rate. [requests/s]
    service_s : float
        Mean service time of one request on one server. [s]
    arrival_cv2 : float
        Squared coefficient of variation of the gaps between arrivals. [1]
    service_cv2 : float
        Squared coefficient of variation of the service time. [1]

    Returns
    -------
    float
        ``C·S ÷ (c − a) × (cₐ² + cₛ²) ÷ 2``; infinity when the load reaches the servers (``a ≥ c``). [s]

    References
    ----------
    Allen (1990), §5.2; for one server and deterministic service it is the Pollaczek–Khinchine mean wait
    ``ρ·S ÷ (2·(1 − ρ))``.
    """
    c, a = int(servers), arrival_rps * service_s
    if c <= 0 or a >= c:
        return math.inf
    return erlang_c(c, a) * service_s / (c - a) * allen_cunneen_factor(arrival_cv2, service_cv2)


def wait_at_percentile_s(servers: int, arrival_rps: float, service_s: float, percentile: float,
                         arrival_cv2: float = 1.0, service_cv2: float = 1.0) -> float:
    """The wait for a server that ``percentile`` percent of requests stay within. [s]

    Parameters
    ----------
    servers : int
        Servers (slots). [servers]
    arrival_rps : float
        Arrival rate. [requests/s]
    service_s : float
        Mean service time of one request on one server. [s]
    percentile : float
        The promise's percentile, e.g. 95. [percent]
    arrival_cv2 : float
        Squared coefficient of variation of the gaps between arrivals. [1]
    service_cv2 : float
        Squared coefficient of variation of the service time. [1]

    Returns
    -------
    float
        ``S·ln(C ÷ (1 − p)) ÷ (c − a) × (cₐ² + cₛ²) ÷ 2`` where the chance of waiting ``C`` exceeds ``1 − p``, else 0;
        infinity when ``a ≥ c``. [s]

    Notes
    -----
    For M/M/c the waiting time is 0 with probability ``1 − C`` and otherwise exponential with rate ``(c − a) ÷ S``:
    ``P(W > t) = C·exp(−(c − a)·t ÷ S)``.

    References
    ----------
    Allen (1990), §5.2 (M/M/c waiting-time distribution; the Allen–Cunneen factor for G/G/c).

    Examples
    --------
    >>> round(wait_at_percentile_s(1, 0.8, 1.0, 95), 3)  # M/M/1, ρ = 0.8: ln(0.8 ÷ 0.05) ÷ 0.2 = 13.863 s
    13.863
    """
    c, a = int(servers), arrival_rps * service_s
    if c <= 0 or a >= c:
        return math.inf
    tail = 1.0 - percentile / 100.0
    p_wait = erlang_c(c, a)
    if p_wait <= tail:
        return 0.0
    return service_s * math.log(p_wait / tail) / (c - a) * allen_cunneen_factor(arrival_cv2, service_cv2)


def servers_for_wait(arrival_rps: float, service_s: float, wait_target_s: float, percentile: float,
                     arrival_cv2: float = 1.0, service_cv2: float = 1.0, max_servers: int = 10_000_000) -> int | None:
    """The fewest servers that keep the wait at ``percentile`` within ``wait_target_s``. [servers]

    Parameters
    ----------
    arrival_rps : float
        Arrival rate. [requests/s]
    service_s : float
        Mean service time of one request on one server. [s]
    wait_target_s : float
        Longest wait allowed at the percentile (0: most requests must find a free server). [s]
    percentile : float
        The promise's percentile. [percent]
    arrival_cv2 : float
        Squared coefficient of variation of the gaps between arrivals. [1]
    service_cv2 : float
        Squared coefficient of variation of the service time. [1]
    max_servers : int
        Where the search stops: past it, None, and where the offered load alone reaches it, None before any Erlang
        sum. [servers]

    Returns
    -------
    int or None
        The smallest ``c`` with :func:`wait_at_percentile_s` ≤ the target; None when the target is negative or no
        ``c`` up to ``max_servers`` meets it. [servers]

    Notes
    -----
    The wait falls as servers are added, so the answer is found by steps of ``√a`` above the offered load, doubling,
    then bisection: the fewest servers sit a few ``√a`` above the load (Halfin and Whitt's square-root staffing,
    Operations Research 29(3), 1981).

    References
    ----------
    S. Halfin and W. Whitt, "Heavy-traffic limits for queues with many exponential servers", Operations Research
    29(3), 1981; the wait: :func:`wait_at_percentile_s` (Erlang C with the Allen–Cunneen factor).
    """
    return replicas_for_wait("least_loaded", 1.0, arrival_rps, service_s, wait_target_s, percentile, arrival_cv2,
                             service_cv2, max_servers)


def _fewest(ok, offered_erlangs: float, max_servers: int) -> int | None:
    """The fewest servers ``c`` with ``ok(c)``, ``ok`` true from some ``c`` above the offered load on. [servers]

    Steps of ``√a`` above the load, doubling, then bisection: the fewest servers sit a few ``√a`` above the load
    (square-root staffing). None where none up to ``max_servers`` is."""
    a = offered_erlangs
    lo = max(int(math.floor(a)), 0)  # at or below the load: the queue grows, never meets
    if lo >= max_servers:  # no stable queue within the limit: not one Erlang sum (each takes √a terms)
        return None
    step = max(1, math.ceil(math.sqrt(a)))  # the answer sits a few √a above the load (square-root staffing)
    hi = min(lo + step, max_servers)
    while not ok(hi):
        if hi >= max_servers:
            return None
        lo, step = hi, 2 * step
        hi = min(lo + step, max_servers)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def pooled(routing: str) -> bool:
    """Whether ``routing`` pools the replicas as one queue's servers
    (:data:`POOLED_ROUTINGS`). [bool]

    Parameters
    ----------
    routing : str
        ``policy.routing``. [text]

    Returns
    -------
    bool
        True for least-loaded and least-KV routing; False for round robin and random. [bool]

    Examples
    --------
    >>> pooled("least_kv"), pooled("round_robin")
    (True, False)
    """
    return routing in POOLED_ROUTINGS  # the workbook and the note read the same tuple


def routed_arrival_cv2(routing: str, arrival_cv2: float, replicas: int) -> float:
    """Squared coefficient of variation of the gaps between arrivals at one of ``replicas`` replicas. [1]

    Parameters
    ----------
    routing : str
        ``'round_robin'``: each replica takes every ``n``-th arrival, so its gap is the sum of ``n`` of the stream's
        gaps: mean ``n·m``, variance ``n·σ²``, squared CV ``cₐ² ÷ n`` (exact for a renewal stream: Erlang-``n`` gaps,
        ``1 ÷ n``, where the stream is Poisson). ``'random'``: each arrival to a replica with probability ``1 ÷ n``,
        a thinning, ``cₐ² ÷ n + 1 − 1 ÷ n`` (Whitt's splitting rule; exact, 1, for Poisson). ``'least_loaded'``
        and ``'least_kv'``: the stream's own (one queue for the fleet).
    arrival_cv2 : float
        The stream's squared CV. [1]
    replicas : int
        Replicas sharing it. [replicas]

    Returns
    -------
    float
        One replica's arrivals' squared CV. [1]

    References
    ----------
    W. Whitt, "The Queueing Network Analyzer", Bell System Technical Journal 62(9), 1983, §4.3 (splitting).

    Examples
    --------
    >>> routed_arrival_cv2("round_robin", 1.0, 4), routed_arrival_cv2("random", 4.0, 4)  # 1/4; 4/4 + 1 - 1/4
    (0.25, 1.75)
    """
    n = max(int(replicas), 1)
    if routing == "round_robin":
        return arrival_cv2 / n
    if routing == "random":
        return arrival_cv2 / n + 1.0 - 1.0 / n
    return arrival_cv2


def routed_wait_at_percentile_s(routing: str, replicas: int, slots: float, arrival_rps: float, service_s: float,
                                percentile: float, arrival_cv2: float = 1.0, service_cv2: float = 1.0) -> float:
    """The wait for a slot at ``percentile`` under the load balancer's rule. [s]

    Parameters
    ----------
    routing : str
        ``'least_loaded'`` and ``'least_kv'`` pool the fleet: one queue whose servers are the replicas, each serving at ``1 ÷
        service_s`` (:func:`wait_at_percentile_s` over ``replicas``; a request goes where work frees first).
        ``'round_robin'`` and ``'random'`` send a request before any slot frees, so each replica is a queue of its
        own: M/M/c over its ``⌊slots⌋`` whole slots at ``λ ÷ n``, each serving a request in ``slots × service_s``
        (a slot's time per request: the output's steps), the routed arrivals' variability by
        :func:`routed_arrival_cv2` in the Allen–Cunneen factor.
    replicas : int
        Replicas. [replicas]
    slots : float
        Decodes one replica's step carries within the inter-token target (routed queues only). [sequences]
    arrival_rps : float
        The fleet's arrival rate. [requests/s]
    service_s : float
        One replica's time per request, ``1 ÷ μ`` (all its slots together). [s]
    percentile : float
        The promise's percentile. [percent]
    arrival_cv2, service_cv2 : float
        Squared CVs of the fleet's gaps between arrivals and of the service time. [1]

    Returns
    -------
    float
        The wait at the percentile; infinity where the queue is unstable. [s]

    References
    ----------
    Allen (1990), §5.2 (M/M/c and the Allen–Cunneen factor); Whitt (1983), §4.3 (the routed arrivals).

    Examples
    --------
    >>> # random routing over 4 replicas of one slot, 3.2 req/s, 1 s each: M/M/1 at ρ = 0.8, ln(0.8 ÷ 0.05) ÷ 0.2
    >>> round(routed_wait_at_percentile_s("random", 4, 1, 3.2, 1.0, 95), 3)
    13.863
    """
    if pooled(routing):
        return wait_at_percentile_s(replicas, arrival_rps, service_s, percentile, arrival_cv2, service_cv2)
    n, c = int(replicas), max(math.floor(slots), 1)
    if n <= 0:
        return math.inf
    return wait_at_percentile_s(c, arrival_rps / n, slots * service_s, percentile,
                                routed_arrival_cv2(routing, arrival_cv2, n), service_cv2)


def replicas_for_wait(routing: str, slots: float, arrival_rps: float, service_s: float, wait_target_s: float,
                      percentile: float, arrival_cv2: float = 1.0, service_cv2: float = 1.0,
                      max_servers: int = 10_000_000) -> int | None:
    """The fewest replicas that keep the wait at ``percentile`` within ``wait_target_s`` under the load balancer's
    rule (:func:`routed_wait_at_percentile_s`; ``'least_loaded'``: Erlang C over the replicas, :func:`servers_for_wait`). [replicas]

    Parameters
    ----------
    routing : str
        ``policy.routing``: 'least_loaded' or 'least_kv' (one queue), 'round_robin' or 'random'. [text]
    slots : float
        Decodes one replica's step carries within the inter-token target (routed queues only). [sequences]
    arrival_rps : float
        The fleet's arrival rate. [requests/s]
    service_s : float
        One replica's time per request, ``1 ÷ μ``. [s]
    wait_target_s : float
        Longest wait allowed at the percentile. [s]
    percentile : float
        The promise's percentile. [percent]
    arrival_cv2, service_cv2 : float
        Squared CVs of the fleet's gaps between arrivals and of the service time. [1]
    max_servers : int
        Where the search stops. [replicas]

    Returns
    -------
    int or None
        The fewest replicas; None where the target is negative or none up to ``max_servers`` meets it. [replicas]

    References
    ----------
    A. K. Erlang, Elektroteknikeren 13, 1917 (the C formula); Allen (1990), §5.2 (M/M/c waiting-time distribution;
    the Allen–Cunneen factor for G/G/c); W. Whitt, "The Queueing Network Analyzer", Bell System Technical Journal
    62(9), 1983, §4.4 (a routed replica's arrivals).

    Examples
    --------
    >>> # 1 req/s of 1 s each, p95 wait within 1 s. Pooled: C(3, 1) = 0.0909, ln(0.0909 ÷ 0.05) ÷ 2 = 0.30 s (2 servers:
    >>> # 1.90 s), so 3. Random routing to one-slot replicas, each M/M/1 at ρ = 1/n: P(W > 1 s) = ρ·e^(−(1 − ρ)) ≤ 0.05
    >>> # first at n = 9 (0.111 × 0.411 = 0.046; n = 8: 0.125 × 0.417 = 0.052)
    >>> replicas_for_wait("least_loaded", 1, 1.0, 1.0, 1.0, 95), replicas_for_wait("random", 1, 1.0, 1.0, 1.0, 95)
    (3, 9)
    """
    if wait_target_s < 0 or arrival_rps < 0 or service_s < 0:
        return None
    a = arrival_rps * service_s
    if a == 0.0:
        return 0

    def ok(n: int) -> bool:
        return routed_wait_at_percentile_s(routing, n, slots, arrival_rps, service_s, percentile, arrival_cv2,
                                           service_cv2) <= wait_target_s

    return _fewest(ok, a, max_servers)
