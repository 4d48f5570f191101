"""The contract mix: the Answer's fleet paid for as a reserved (or owned) base, on-demand GPUs, the API and spot.

Pure functions on the daily load curve and the prices; :func:`mix_out` unpacks a plan and its Answer into them and
returns the result's :class:`~xlplan.schema.contract_mix.ContractMixOut`. The fleet is the Answer's (the one that keeps
the promise); nothing here re-plans it.

Notes
-----
Scaling. By Little's Law the requests in flight, and so the load GPUs, are linear in the arrival rate: hour h carries
``curve[h]`` of the peak, so it needs ``x_h = curve[h] × load ÷ tp`` replicas of load, rounded up to whole replicas,
plus the Answer's redundancy (which the promise needs every hour): ``n_h = tp × ceil(x_h) + redundancy`` GPUs.

The base. A reserved GPU costs ``24 × r`` a day whether busy or not; the same GPU on demand costs ``H × d`` for the
``H`` hours it is needed. The b-th GPU of the fleet is needed in ``H_b = #{h : n_h ≥ b}`` hours, which falls as b rises,
so the day's cost ``24 r B + d Σ_h max(0, n_h − B)`` is least when every GPU with ``H_b ÷ 24 ≥ r ÷ d`` is reserved
and none other (each GPU's choice is separate; ties reserve): reserve a unit if it is busy at least the reserved ÷
on-demand price ratio of the hours, the break-even. The base is at least the quietest hour's GPUs (its redundancy and
the replicas the quietest hour needs), reserved whatever the prices, so the promise never hangs on on-demand supply
at the quietest hour. Whole replicas are reserved (tp GPUs at a time).

The API overflow. With the base's load replicas ``b0 = (B − redundancy) ÷ tp`` and a ceiling of ``m`` replicas kept on
GPUs (``b0 ≤ m ≤ load ÷ tp``), hour h runs ``min(ceil(x_h), m)`` replicas and sends ``max(0, x_h − m)`` replicas'
traffic to the API, each replica's share being ``peak_rps × tp ÷ load`` requests/s; ``m`` is the ceiling that costs
least (ties keep more on GPUs). A GPU replica is paid whole while the API is paid by the request, so the top of the
peak, a fraction of a replica or an hour or two a day, goes first.

Spot. Traffic with no latency promise (``no_promise_share``) runs on spot GPUs, whole replicas each hour with no
redundancy; the promise fleet is sized for the rest.

References
----------
FinOps Foundation, "Rate optimization" KPIs: effective savings rate = 1 − actual cost ÷ the same usage at on-demand
prices; commitment coverage = usage covered by commitments ÷ eligible usage; commitment utilisation = commitment used
÷ commitment bought. Break-even utilisation of a reservation = reserved price ÷ on-demand price.
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan import fleet
from xlplan.units import MILLION, SECONDS_PER_HOUR

HOURS_PER_DAY = 24
"""[h/day]"""

def _replicas_needed(load_gpus: int, tp: int, fraction: float) -> int:
    """Whole replicas of load an hour at ``fraction`` of the peak needs. [replicas]

    Parameters
    ----------
    load_gpus : int
        GPUs the peak needs, whole replicas. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    fraction : float
        The hour's load as a fraction of the peak hour. [fraction]

    Returns
    -------
    int
        ``ceil(fraction × load ÷ tp)``. [replicas]

    Examples
    --------
    >>> _replicas_needed(8, 1, 0.5), _replicas_needed(8, 2, 0.3)
    (4, 2)
    """
    return max(0, int(fleet.whole_units(fraction * load_gpus / tp, 1)))


def _hourly_gpus(load_gpus: int, redundancy_gpus: int, tp: int, curve) -> list[int]:
    """GPUs the promise needs each hour of the day: the hour's load replicas plus the redundancy. [GPUs]

    Parameters
    ----------
    load_gpus : int
        GPUs the peak needs. [GPUs]
    redundancy_gpus : int
        The Answer's redundancy, kept every hour. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    curve : sequence of float
        24 hourly fractions of the peak hour. [fraction]

    Returns
    -------
    list of int
        ``tp × ceil(curve[h] × load ÷ tp) + redundancy`` for each hour. [GPUs]
    """
    return [tp * _replicas_needed(load_gpus, tp, c) + redundancy_gpus for c in curve]


def _base_gpus(needed, tp: int, base_usd_per_gpu_hour: float, on_demand_usd_per_gpu_hour: float) -> int:
    """The reserved base that makes the day cheapest, at least the quietest hour's GPUs. [GPUs]

    Parameters
    ----------
    needed : sequence of int
        GPUs each hour needs (:func:`_hourly_gpus`), whole replicas. [GPUs]
    tp : int
        GPUs per replica: the base grows a replica at a time. [GPUs]
    base_usd_per_gpu_hour : float
        Reserved (or owned) price, paid 24 hours a day. [USD/GPU-hour]
    on_demand_usd_per_gpu_hour : float
        On-demand price, paid for the hours used. [USD/GPU-hour]

    Returns
    -------
    int
        The quietest hour's GPUs, plus every further replica busy at least ``base ÷ on-demand`` of the day's hours. [GPUs]

    Examples
    --------
    >>> _base_gpus([9] * 8 + [5] * 8 + [3] * 8, 1, 2.0, 4.0)  # GPUs 4-5 busy 16 h ≥ 0.5 × 24; 6-9 busy 8 h < 12
    5
    """
    ratio = base_usd_per_gpu_hour / on_demand_usd_per_gpu_hour
    base = min(needed)
    while base < max(needed):
        hours = sum(1 for n in needed if n >= base + tp)  # the hours the next replica is busy
        if hours < ratio * HOURS_PER_DAY:
            break
        base += tp
    return base


def _api_ceiling(load_gpus: int, tp: int, curve, base_load_replicas: int, replica_usd_per_hour_on_demand: float,
                replica_usd_per_hour_api: float | None) -> int:
    """Most load replicas kept on GPUs in any hour, the rest of the peak sent to the API: the cheapest ceiling. [replicas]

    Parameters
    ----------
    load_gpus : int
        GPUs the peak needs. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    curve : sequence of float
        24 hourly fractions of the peak hour (of the promised traffic). [fraction]
    base_load_replicas : int
        Load replicas the base holds: the ceiling never goes below them. [replicas]
    replica_usd_per_hour_on_demand : float
        A replica on demand: tp × the on-demand price. [USD/replica-hour]
    replica_usd_per_hour_api : float or None
        One replica's share of the peak on the API for an hour; None: no overflow. [USD/replica-hour]

    Returns
    -------
    int
        The ceiling ``m`` of least on-demand plus API cost (ties: the larger); ``load ÷ tp`` without an API. [replicas]
    """
    top = load_gpus // tp
    if replica_usd_per_hour_api is None:
        return top
    x = [c * top for c in curve]

    def day_usd(m: int) -> float:
        on_demand = sum(max(0, min(_replicas_needed(load_gpus, tp, c), m) - base_load_replicas) for c in curve)
        api = sum(max(0.0, xh - m) for xh in x)
        return on_demand * replica_usd_per_hour_on_demand + api * replica_usd_per_hour_api

    return min(range(min(base_load_replicas, top), top + 1), key=lambda m: (day_usd(m), -m))


@dataclass(frozen=True)
class Mix:
    """One day of the mix, in GPU-hours and requests a day. Units in the field comments."""

    needed: tuple[int, ...]  # GPUs the promise needs each hour, before the API takes the top [GPUs]
    on_gpus: tuple[int, ...]  # GPUs the promise runs each hour, after it [GPUs]
    base_gpus: int  # reserved or owned, 24 h a day [GPUs]
    base_floor_gpus: int  # the quietest hour's GPUs [GPUs]
    ceiling_replicas: int  # most load replicas on GPUs in any hour [replicas]
    on_demand_gpu_hours: float  # [GPU-hours/day]
    api_requests: float  # [requests/day]
    spot_gpu_hours: float  # [GPU-hours/day]
    base_gpu_hours_in_use: float  # [GPU-hours/day]


def size_mix(load_gpus: int, redundancy_gpus: int, tp: int, curve, base_usd_per_gpu_hour: float,
             on_demand_usd_per_gpu_hour: float, peak_rps: float, api_usd_per_request: float | None = None,
             no_promise_share: float = 0.0) -> Mix:
    """Size a day of the mix: the base, the on-demand GPU-hours, the API's requests and the spot GPU-hours.

    Parameters
    ----------
    load_gpus : int
        The Answer's load, whole replicas. [GPUs]
    redundancy_gpus : int
        The Answer's redundancy (with redundancy − load). [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    curve : sequence of float
        24 hourly fractions of the peak hour. [fraction]
    base_usd_per_gpu_hour : float
        Reserved (or owned) price. [USD/GPU-hour]
    on_demand_usd_per_gpu_hour : float
        On-demand price. [USD/GPU-hour]
    peak_rps : float
        Peak arrival rate the load carries. [requests/s]
    api_usd_per_request : float or None
        The API's price of a mean request; None: no overflow. [USD/request]
    no_promise_share : float
        Share of the traffic on spot GPUs (0: no spot). [fraction]

    Returns
    -------
    Mix
        One day: GPUs each hour, the base, the API ceiling, on-demand and spot GPU-hours, API requests.
    """
    kept = [(1.0 - no_promise_share) * c for c in curve]  # the promised traffic
    needed = _hourly_gpus(load_gpus, redundancy_gpus, tp, kept)
    base = _base_gpus(needed, tp, base_usd_per_gpu_hour, on_demand_usd_per_gpu_hour)
    replica_rps = peak_rps * tp / load_gpus
    api_replica_hour = None if api_usd_per_request is None else api_usd_per_request * replica_rps * SECONDS_PER_HOUR
    base_load = (base - redundancy_gpus) // tp
    m = _api_ceiling(load_gpus, tp, kept, base_load, tp * on_demand_usd_per_gpu_hour, api_replica_hour)
    on_gpus = [tp * min(_replicas_needed(load_gpus, tp, c), m) + redundancy_gpus for c in kept]
    api_replicas = sum(max(0.0, c * (load_gpus // tp) - m) for c in kept)
    spot = sum(tp * _replicas_needed(load_gpus, tp, no_promise_share * c) for c in curve) if no_promise_share > 0 else 0
    return Mix(needed=tuple(needed), on_gpus=tuple(on_gpus), base_gpus=base, base_floor_gpus=min(needed),
               ceiling_replicas=m, on_demand_gpu_hours=float(sum(max(0, n - base) for n in on_gpus)),
               api_requests=api_replicas * replica_rps * SECONDS_PER_HOUR, spot_gpu_hours=float(spot),
               base_gpu_hours_in_use=float(sum(min(n, base) for n in on_gpus)))


def savings_figures(mix: Mix, base_usd_per_gpu_hour: float, on_demand_usd_per_gpu_hour: float,
                    spot_usd_per_gpu_hour: float = 0.0) -> tuple[float, float, float]:
    """The FinOps rate figures of a day of the mix on GPUs (the API is no GPU usage and is left out of all three). [1]

    Parameters
    ----------
    mix : Mix
        A day of the mix (:func:`size_mix`).
    base_usd_per_gpu_hour : float
        Reserved (or owned) price. [USD/GPU-hour]
    on_demand_usd_per_gpu_hour : float
        On-demand price. [USD/GPU-hour]
    spot_usd_per_gpu_hour : float
        Spot price (0 when no spot is used). [USD/GPU-hour]

    Returns
    -------
    effective_savings_rate : float
        1 − (base + on-demand + spot cost) ÷ (GPU-hours used × on-demand price). [fraction]
    coverage : float
        Base GPU-hours in use ÷ GPU-hours used. [fraction]
    utilisation : float
        Base GPU-hours in use ÷ base GPU-hours committed (base × 24). [fraction]

    References
    ----------
    FinOps Foundation, rate-optimization KPIs (effective savings rate, commitment coverage, commitment utilisation).
    """
    used = mix.base_gpu_hours_in_use + mix.on_demand_gpu_hours + mix.spot_gpu_hours
    actual = (mix.base_gpus * HOURS_PER_DAY * base_usd_per_gpu_hour + mix.on_demand_gpu_hours * on_demand_usd_per_gpu_hour
              + mix.spot_gpu_hours * spot_usd_per_gpu_hour)
    committed = mix.base_gpus * HOURS_PER_DAY
    return (1.0 - actual / (used * on_demand_usd_per_gpu_hour) if used else 0.0,
            mix.base_gpu_hours_in_use / used if used else 0.0,
            mix.base_gpu_hours_in_use / committed if committed else 0.0)


def _api_usd_per_request(mean_prompt_tokens: float, mean_output_tokens: float, usd_per_mtok_input: float,
                        usd_per_mtok_output: float) -> float:
    """The API's price of a mean request. [USD/request]

    Parameters
    ----------
    mean_prompt_tokens : float
        Mean prompt length. [tokens]
    mean_output_tokens : float
        Mean output length. [tokens]
    usd_per_mtok_input : float
        Input price. [USD/Mtok]
    usd_per_mtok_output : float
        Output price. [USD/Mtok]

    Returns
    -------
    float
        ``(prompt × input price + output × output price) ÷ 10⁶``. [USD/request]

    Examples
    --------
    >>> _api_usd_per_request(1000, 200, 0.5, 1.0)
    0.0007
    """
    return (mean_prompt_tokens * usd_per_mtok_input + mean_output_tokens * usd_per_mtok_output) / MILLION


def mix_out(plan, answer, mean_prompt_tokens: float, mean_output_tokens: float):
    """The plan's contract mix for its Answer's fleet, a month of it; None without a contracts section. [ContractMixOut]

    Parameters
    ----------
    plan : Plan
        The validated plan (its contracts, daily curve, prices and hours a month).
    answer : AnswerOut
        The Answer: the fleet that keeps the promise, and (bought) what owning it costs.
    mean_prompt_tokens : float
        Mean prompt length, for the API's price of a request. [tokens]
    mean_output_tokens : float
        Mean output length. [tokens]

    Returns
    -------
    ContractMixOut or None
        Every figure of the mix; None when the plan has no ``contracts`` or no Answer.
    """
    from xlplan.schema.contract_mix import ContractMixOut
    from xlplan.schema.contracts import contract_prices

    c = plan.contracts
    if c is None or answer is None:
        return None
    owned = answer.ownership.owned_usd_per_gpu_hour if answer.ownership is not None else None
    prices = contract_prices(plan, owned)
    base_p, od_p = prices["base"]["value"], prices["on_demand"]["value"]
    spot = prices["spot"] if c.no_promise_share > 0 else None
    share = c.no_promise_share if spot is not None else 0.0
    api = plan.api_used()
    per_request = (_api_usd_per_request(mean_prompt_tokens, mean_output_tokens, api.usd_per_mtok_input, api.usd_per_mtok_output)
                   if c.api_overflow else None)
    redundancy = answer.with_redundancy - answer.load
    mix = size_mix(answer.load, redundancy, answer.tp, plan.forecast.daily_curve, base_p, od_p, plan.forecast.peak_rps,
                   per_request, share)
    spot_p = spot["value"] if spot is not None else None
    esr, coverage, utilisation = savings_figures(mix, base_p, od_p, spot_p or 0.0)
    hours = plan.hardware.hours_per_month
    days = hours / HOURS_PER_DAY
    od_month, api_month, spot_month = mix.on_demand_gpu_hours * days, mix.api_requests * days, mix.spot_gpu_hours * days
    parts = (mix.base_gpus * hours * base_p, od_month * od_p, api_month * (per_request or 0.0), spot_month * (spot_p or 0.0))
    return ContractMixOut(
        term=c.term, daily_curve=list(plan.forecast.daily_curve), tp=answer.tp, load_gpus=answer.load, redundancy_gpus=redundancy,
        hourly_gpus=list(mix.needed), base_floor_gpus=mix.base_floor_gpus, base_gpus=mix.base_gpus, base_usd_per_gpu_hour=base_p,
        base_source=prices["base"]["source"], on_demand_usd_per_gpu_hour=od_p, on_demand_source=prices["on_demand"]["source"],
        break_even=base_p / od_p, hours_per_month=hours, base_monthly_usd=parts[0], on_demand_gpu_hours_per_month=od_month,
        on_demand_monthly_usd=parts[1], api_overflow=c.api_overflow, api_ceiling_replicas=mix.ceiling_replicas,
        api_usd_per_request=per_request, api_requests_per_month=api_month, api_monthly_usd=parts[2],
        no_promise_share=c.no_promise_share, spot_usd_per_gpu_hour=spot_p,
        spot_source=(spot["source"] if spot is not None else _no_spot(c.no_promise_share)),
        spot_gpu_hours_per_month=spot_month, spot_monthly_usd=parts[3], monthly_usd=sum(parts),
        always_on_demand_monthly_usd=answer.with_redundancy * hours * od_p,
        gpu_hours_used_per_month=(mix.base_gpu_hours_in_use + mix.on_demand_gpu_hours + mix.spot_gpu_hours) * days,
        base_gpu_hours_in_use_per_month=mix.base_gpu_hours_in_use * days, committed_gpu_hours_per_month=mix.base_gpus * hours,
        effective_savings_rate=esr, commitment_coverage=coverage, commitment_utilisation=utilisation,
    )


def _no_spot(share: float) -> str:
    """Why spot is not offered. [text]"""
    if share <= 0:
        return "not offered — every request carries the latency promise"
    return "not offered — no published spot price for this GPU; the no-promise share stays on the promise fleet"
