"""The requests a run serves: arrivals (Poisson, bursty or a log's), lengths (fitted or logged), and a run's span.

A run's requests are drawn once and served by every fleet size (common random numbers), so a search compares fleets
on the same arrivals. A run lasts max(10 minutes, 20,000 arrivals) unless told, at most 6 hours and 2,000,000
requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

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
    z_prompt = rng.standard_normal(m)
    z_output = rng.standard_normal(m)
    prompt, output = _lengths(s, z_prompt, z_output, max_context)
    return Workload(times, prompt, output)


def _lengths(s: Scenario, z_prompt, z_output, max_context: int | None):
    """Prompt and output lengths from standard normal draws: the plan's fitted lognormals, rounded, at least 1 token,
    clipped at the context limit. [tokens]"""
    import numpy as np

    from xlplan import distributions

    out = []
    for z, (p50, p95, p99) in ((z_prompt, (s.prompt_p50, s.prompt_p95, s.prompt_p99)),
                               (z_output, (s.output_p50, s.output_p95, s.output_p99))):
        median, sigma = distributions.fit_lognormal(p50, p95, p99)
        out.append(np.maximum(1, np.rint(median * np.exp(sigma * z))).astype(np.int64))
    prompt, output = out
    if max_context:
        prompt = np.minimum(prompt, max(1, max_context - 1))
        output = np.minimum(output, np.maximum(1, max_context - prompt))
    return prompt, output


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


def prefix(workload, duration_s: float):
    """The requests of a workload that arrive before ``duration_s``: the same requests, a shorter run. [Workload]

    Parameters
    ----------
    workload : Workload or SampledWorkload
        The requests, in arrival order (or a sample's, which then spans ``duration_s``).
    duration_s : float
        Arrivals at or after it are left out. [s]

    Returns
    -------
    Workload or SampledWorkload
        The leading requests of ``workload``, unchanged.
    """
    import dataclasses

    import numpy as np

    if isinstance(workload, SampledWorkload):
        return dataclasses.replace(workload, duration_s=min(duration_s, workload.duration_s))

    k = int(np.searchsorted(np.asarray(workload.arrival_s), duration_s, side="left"))
    return Workload(workload.arrival_s[:k], workload.prompt_tokens[:k], workload.output_tokens[:k])


SAMPLE_ABOVE_REPLICAS = 80
"""A verification whose search starts above this many replicas simulates a sample of them (:class:`SampledWorkload`);
at or below it, every replica. [replicas]"""

SAMPLE_SHARE = 0.4
"""A sample holds this share of the fleet (rounded up). A sample pools fewer replicas than its fleet and so needs a
little more of them: measured on the battery (``benchmarks/bench_sampled.txt``), 2% of the fleet at a fifth of it;
at two fifths within one replica on 8 of 11 plans and two on 2, but 13% more where the TTFT curve is flat near its
target (prompts of 32,000 tokens at p95 in 512-token chunks: 4% more TTFT in the sample moves the fleet by 33 of
254 replicas). [1]"""

SAMPLE_REPLICAS = 128
"""Replicas a sampled run simulates, at most: a fleet of 10,000 GPUs verified in under a minute. [replicas]"""

SAMPLE_MIN_REPLICAS = 16
"""...and at least this many, where :data:`SAMPLE_MAX_REQUESTS` asks for fewer. [replicas]"""

SAMPLE_MAX_REQUESTS = 400_000
"""The most requests a sampled run holds over :data:`MIN_MINUTES` where its sample can shrink to keep under it (the
default verification's limit on a full run). [requests]"""

SAMPLE_MAX_STEPS = 5_000_000
"""...and the most engine steps, all its replicas together, where the replicas' batch is known (the default
verification's limit on a full run). [steps]"""


def sample_replicas(s: Scenario, fleet_replicas: int, batch: float | None = None) -> int:
    """How many replicas a sampled run of a fleet of ``fleet_replicas`` simulates: :data:`SAMPLE_SHARE` of them,
    rounded up, at most :data:`SAMPLE_REPLICAS`, fewer (not under :data:`SAMPLE_MIN_REPLICAS`) where their share of
    the peak over :data:`MIN_MINUTES` would take the sample past :data:`SAMPLE_MAX_REQUESTS`, or, with ``batch``, past
    :data:`SAMPLE_MAX_STEPS` (requests × mean output ÷ batch); 0 where the fleet is at most
    :data:`SAMPLE_ABOVE_REPLICAS` (every replica is simulated). [replicas]

    Parameters
    ----------
    s : Scenario
        The plan: its peak rate and output lengths. [—]
    fleet_replicas : int
        The fleet the search starts from. [replicas]
    batch : float, optional
        Decodes a replica's step carries at the closed form's load (its ``achieved_batch``). [sequences]

    Returns
    -------
    int
        Replicas simulated, or 0 for the whole fleet. [replicas]

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> sample_replicas(SimpleNamespace(peak_rps=560.0), 80)         # 80 replicas: all simulated
    0
    >>> sample_replicas(SimpleNamespace(peak_rps=640.0), 88)         # 0.4 x 88 = 35.2 -> 36
    36
    >>> sample_replicas(SimpleNamespace(peak_rps=72_000.0), 10_000)  # 4,000 -> 128; 128 x 7.2 x 600 s = 552,960 > 400,000
    92
    >>> sample_replicas(SimpleNamespace(peak_rps=60_000.0), 1_000)   # 60 req/s each: 400,000 / 36,000 = 11 -> 16
    16
    """
    if fleet_replicas <= SAMPLE_ABOVE_REPLICAS:
        return 0
    per_replica = s.peak_rps / fleet_replicas
    k = min(SAMPLE_REPLICAS, math.ceil(SAMPLE_SHARE * fleet_replicas))
    requests = per_replica * MIN_MINUTES * 60.0  # one replica's a run [requests]
    fits = int(SAMPLE_MAX_REQUESTS // requests) if per_replica > 0 else k
    if batch is not None and per_replica > 0:
        from xlplan import distributions

        mean_output = distributions.length_moments(s.output_p50, s.output_p95, s.output_p99)[0]
        fits = min(fits, int(SAMPLE_MAX_STEPS // (requests * mean_output / max(batch, 1.0))))
    return max(SAMPLE_MIN_REPLICAS, min(k, fits))


@dataclass(frozen=True)
class SampledWorkload:
    """A large fleet's run on a sample of its replicas: ``replicas`` of them serving their routed share of the peak.

    A fleet of ``n`` replicas at peak λ sends each replica λ/n; a sample of ``k`` serves λ·k/n, drawn as one stream
    whose arrivals are a standard renewal process (mean gap 1, squared CV ``share_cv2``) stretched to that rate, so
    every fleet size sees the same requests, later or sooner (common random numbers: request ``i`` has the same
    lengths and the ``i``-th standard arrival on every run). Where the fleet is no larger than the sample, the whole
    fleet runs at the whole peak on the same stream. A loss of ``r`` replicas at ``loss_at_s`` shows as the survivors'
    share rising to λ·k/(n − r) from then on; the requests the lost replicas held (each survivor would take about
    1/(n − r) of them) are not replayed.

    ``share_cv2`` is the squared CV of the sample's share of arrivals of squared CV ``cv2``, fixed at the fleet the
    search starts from: a random thinning to k/n (least-loaded and random routing: 1 + (cv2 − 1)·k/n, Whitt's
    splitting rule) or every (n/k)-th arrival (round robin: cv2·k/n). Units in the field comments.

    References
    ----------
    W. Whitt, "The Queueing Network Analyzer", Bell System Technical Journal 62(9), 1983, §4.4 (splitting a renewal
    stream).
    """

    s: Scenario  # the plan: its peak and lengths
    seed: int  # the run's seed [1]
    share_cv2: float  # the sample's arrivals' squared CV [1]
    replicas: int  # replicas simulated [replicas]
    fleet_replicas: int  # the fleet the search starts from [replicas]
    duration_s: float  # the run's span [s]
    max_context: int | None = None  # the model's context limit [tokens]
    draws: dict = field(default_factory=dict, compare=False, repr=False)  # the standard draws, grown as needed

    def rate_rps(self, fleet_replicas: int | None = None) -> float:
        """The sample's arrival rate in a fleet of ``fleet_replicas``. [requests/s]

        Parameters
        ----------
        fleet_replicas : int, optional
            The fleet the sample stands for; left out, the search's start. [replicas]

        Returns
        -------
        float
            ``peak × min(k, n) ÷ n``: the sample's share, or the whole peak where the fleet is no larger. [requests/s]
        """
        return share_rps(self.s.peak_rps, self.replicas, self.fleet_replicas if fleet_replicas is None else fleet_replicas)

    def share(self, fleet_replicas: int, lost: int = 0, loss_at_s: float = math.inf) -> Workload:
        """The sample's requests in a fleet of ``fleet_replicas``, ``lost`` of which fail at ``loss_at_s``. [Workload]

        Parameters
        ----------
        fleet_replicas : int
            The fleet the sample stands for. [replicas]
        lost : int
            Replicas of the fleet lost at ``loss_at_s``. [replicas]
        loss_at_s : float
            When they fail. [s]

        Returns
        -------
        Workload
            The arrivals before ``duration_s``: the standard arrivals stretched to the sample's share of the peak
            (:meth:`SampledWorkload.rate_rps`), and from the loss to the survivors' share. [s], [tokens]
        """
        import numpy as np

        before = self.rate_rps(fleet_replicas)
        after = self.s.peak_rps * self.replicas / (fleet_replicas - lost) if lost and fleet_replicas > self.replicas else before
        u = self._standard(int(max(before, after) * self.duration_s * 1.2 + 50))
        bend = before * loss_at_s if math.isfinite(loss_at_s) else math.inf  # the standard time of the loss
        times = np.where(u < bend, u / before, loss_at_s + (u - bend) / after) if after != before else u / before
        m = int(np.searchsorted(times, self.duration_s, side="left"))
        prompt, output = _lengths(self.s, self.draws["z_prompt"][:m], self.draws["z_output"][:m], self.max_context)
        return Workload(times[:m], prompt, output)

    def _standard(self, count: int):
        """The first ``count`` standard arrival times, drawn once and grown as a run needs more. [1]"""
        import numpy as np

        d = self.draws
        if not d:
            d.update(rngs=[np.random.default_rng((self.seed, j)) for j in range(3)], u=np.zeros(0),
                     z_prompt=np.zeros(0), z_output=np.zeros(0))
        have = len(d["u"])
        if have < count:
            g, zp, zo = d["rngs"]
            extra = count - have + max(have, 1024)
            shape = 1.0 / self.share_cv2
            gaps = g.standard_exponential(extra) if self.share_cv2 == 1.0 else g.standard_gamma(shape, extra) / shape
            start = d["u"][-1] if have else 0.0
            d["u"] = np.concatenate([d["u"], start + np.cumsum(gaps)])
            d["z_prompt"] = np.concatenate([d["z_prompt"], zp.standard_normal(extra)])
            d["z_output"] = np.concatenate([d["z_output"], zo.standard_normal(extra)])
        return d["u"][:count]


def share_cv2(cv2: float, sample: int, fleet_replicas: int, routing: str) -> float:
    """The squared CV of a sample's share of a fleet's arrivals (see :class:`SampledWorkload`). [1]

    Parameters
    ----------
    cv2 : float
        The fleet's arrivals' squared CV. [1]
    sample, fleet_replicas : int
        Replicas sampled, of the fleet. [replicas]
    routing : str
        The load balancer's rule (``policy.routing``).

    Returns
    -------
    float
        Round robin: ``cv2 × k/n`` (every (n/k)-th arrival); otherwise ``1 + (cv2 − 1) × k/n`` (a random thinning). [1]

    Examples
    --------
    >>> share_cv2(1.0, 64, 1000, "least_loaded")   # a thinned Poisson stream is Poisson
    1.0
    >>> share_cv2(4.0, 64, 1000, "random")         # 1 + 3 x 0.064
    1.192
    >>> share_cv2(1.0, 64, 1000, "round_robin")    # every 15.6th arrival of a Poisson stream
    0.064
    """
    p = min(sample, fleet_replicas) / fleet_replicas
    return cv2 * p if routing == "round_robin" else 1.0 + (cv2 - 1.0) * p  # least-KV: the router's thinning too


def verification_workload(s: Scenario, minutes: float, seed: int, cv2: float, max_context: int | None,
                          fleet_replicas: int, sample: int | None = None) -> Workload | SampledWorkload:
    """The requests of one verification run of a fleet starting at ``fleet_replicas``: a :class:`SampledWorkload`
    where :func:`sample_replicas` (or ``sample``) samples it, else :func:`workload_for`. [Workload or SampledWorkload]

    Parameters
    ----------
    s : Scenario
        The plan: its peak, lengths and routing.
    minutes : float
        The run's span. [minutes]
    seed : int
        The run's seed. [1]
    cv2 : float
        The fleet's arrivals' squared CV. [1]
    max_context : int, optional
        The model's context limit. [tokens]
    fleet_replicas : int
        The fleet the search starts from. [replicas]
    sample : int, optional
        Replicas to sample (0: every replica); left out, :func:`sample_replicas`. [replicas]

    Returns
    -------
    Workload or SampledWorkload
        The run's requests, or the sample's, drawn as its fleet size is known.
    """
    k = sample_replicas(s, fleet_replicas) if sample is None else sample
    if not k:
        return workload_for(s, minutes, seed, cv2, max_context)
    n = max(int(fleet_replicas), 1)
    return SampledWorkload(s, seed, share_cv2(cv2, k, n, s.routing), k, n, minutes * 60.0, max_context)


def share_rps(peak_rps: float, sample: int, fleet_replicas: int) -> float:
    """The arrival rate a run serves: the whole peak, or a sample of ``sample`` replicas' share of a fleet of
    ``fleet_replicas``. [requests/s]

    Parameters
    ----------
    peak_rps : float
        The fleet's peak. [requests/s]
    sample : int
        Replicas sampled (0: every replica). [replicas]
    fleet_replicas : int
        The fleet the sample stands for. [replicas]

    Returns
    -------
    float
        ``peak × min(k, n) ÷ n``, or the peak where nothing is sampled. [requests/s]

    Examples
    --------
    >>> share_rps(640.0, 36, 88), share_rps(640.0, 0, 88), share_rps(640.0, 36, 20)
    (261.8181818181818, 640.0, 640.0)
    """
    n = max(int(fleet_replicas), 1)
    return peak_rps * min(sample, n) / n if sample else peak_rps


def verification_minutes(s: Scenario, fleet_replicas: int, sample: int | None = None) -> float:
    """A verification run's span: :func:`run_minutes` at the rate the run serves, the sample's share where it is
    sampled. [minutes]

    Parameters
    ----------
    s : Scenario
        The plan: its peak. [—]
    fleet_replicas : int
        The fleet the search starts from. [replicas]
    sample : int, optional
        Replicas to sample (0: every replica); left out, :func:`sample_replicas`. [replicas]

    Returns
    -------
    float
        The run's span. [minutes]
    """
    k = sample_replicas(s, fleet_replicas) if sample is None else sample
    return run_minutes(share_rps(s.peak_rps, k, fleet_replicas))
