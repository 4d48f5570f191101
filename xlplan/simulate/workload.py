"""The requests a run serves: arrivals (Poisson, bursty or a log's), lengths (fitted or logged), and a run's span.

A run's requests are drawn once and served by every fleet size (common random numbers), so a search compares fleets
on the same arrivals. A run lasts max(10 minutes, 20,000 arrivals) unless told, at most 6 hours and 2,000,000
requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan.plan import scenario
from xlplan.plan.scenario import Scenario

DEFAULT_SEED = 1
"""The seed of a run nobody asked to vary: runs are reproducible, and every fleet size sees the same requests. [—]"""

MIN_MINUTES = 10.0
"""The shortest default run. [minutes]"""

MIN_REQUESTS = 20_000
"""A default run lasts until this many requests have arrived (p95 then rests on about 1,000 requests above it). [requests]"""

MAX_MINUTES = 360.0
"""The longest default run, and the most ``--minutes`` accepts. [minutes]"""

MAX_REQUESTS = 2_000_000
"""The most requests one run simulates: beyond it a run takes minutes, not seconds. [requests]"""


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


@dataclass(frozen=True)
class Workload:
    """The requests a run serves: arrival times and lengths. [s], [tokens]"""

    arrival_s: tuple[float, ...] | object  # numpy array
    prompt_tokens: tuple[int, ...] | object
    output_tokens: tuple[int, ...] | object


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
        raise scenario.PlanningError(f"{minutes:g} minutes at {s.peak_rps:,.6g} requests/s is {expected:,.0f} requests; "
                                  f"expected at most {MAX_REQUESTS:,} in one run (fewer minutes)")
    return poisson_workload(s, minutes * 60.0, seed, cv2, max_context=max_context)


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
