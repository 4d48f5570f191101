"""The plan's daily load curve and its contracts section: how the fleet that keeps the promise is paid for over a day.

``forecast.daily_curve`` (24 hourly fractions of the peak hour) and ``contracts`` (a reserved or owned base, on-demand
GPUs for the busy hours, the managed API for the top of the peak, spot for traffic without a latency promise). The
sections are named in :mod:`xlplan.schema.plan`; the mix is sized by :mod:`xlplan.money.contracts`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from xlplan.schema.fields import FractionBelowOne, _Section

HOURS_PER_DAY = 24
"""Hours in the daily curve. [h]"""


def _daily_curve(v: list[float]) -> list[float]:
    """24 fractions of the peak hour in (0, 1], the largest 1, or an error naming the likely slip. [fraction]"""
    n = len(v)
    if n != HOURS_PER_DAY:
        slip = (" (an hour missing?)" if n == HOURS_PER_DAY - 1 else " (an hour twice?)" if n == HOURS_PER_DAY + 1
                else "")
        raise ValueError(f"expected {HOURS_PER_DAY} hourly fractions of the peak hour, hour 0 first; got {n} value(s){slip}")
    if any(x > 1 for x in v) and all(0 < x <= 100 for x in v) and max(v) == 100:
        raise ValueError("expected fractions of the peak hour, the largest 1: write 0.40, not 40 (percents divided by 100)")
    bad = [(h, x) for h, x in enumerate(v) if not 0 < x <= 1]
    if bad:
        h, x = bad[0]
        hint = f" (write {x / 100:.2f}, not {x:g})" if 1 < x <= 100 else " (an hour without traffic: write a small fraction)" if x == 0 else ""
        raise ValueError(f"hour {h}: {x:g}; expected each value a fraction of the peak hour in (0, 1]{hint}")
    if max(v) != 1:
        raise ValueError(f"the largest value is {max(v):g}; expected the peak hour to be 1 (divide each value by the "
                         f"largest, {max(v):g})")
    return v


DailyCurve = Annotated[list[float], AfterValidator(_daily_curve)]

ContractTerm = Literal["reserved_1y", "reserved_3y", "reserved", "owned"]


class Contracts(_Section):
    """A mixed bill for the Answer's fleet: a base reserved (or owned) 24 hours a day, on-demand GPUs for the busy hours,
    optionally the managed API for the top of the peak and spot GPUs for traffic with no latency promise. Needs
    forecast.daily_curve."""

    term: ContractTerm = Field(
        default="reserved_1y",
        description="How the base is paid for: 'reserved_1y' or 'reserved_3y' (a 1- or 3-year reserved price), 'reserved' "
                    "(a published reserved rate whose term the provider does not state) or 'owned' (bought: the owned "
                    "cost per GPU-hour of costs.mode: buy). [text]")
    reserved_usd_per_gpu_hour: float | None = Field(
        default=None, gt=0, le=1000,
        description="The base's price per GPU-hour, a quote; left out, the catalog's published rate for the term "
                    "(xlplan/catalog/contracts.yaml) or, owned, the bought fleet's cost per GPU-hour. [USD/GPU-hour]")
    source: str = Field(default="", description="Where and when the quoted base price comes from. [text]")
    api_overflow: bool = Field(default=False, description="Send the top of the daily peak to the managed API where "
                                                          "that costs less than the on-demand GPU-hours it replaces. [bool]")
    no_promise_share: FractionBelowOne = Field(
        default=0.0, description="Share of the traffic with no latency promise (batch, offline), which spot GPUs may "
                                 "serve: 0.10, not 10; 0 offers no spot. [fraction]")

    @model_validator(mode="after")
    def _quote_has_source(self) -> Contracts:
        if self.reserved_usd_per_gpu_hour is not None and not self.source.strip():
            raise ValueError("contracts.source: missing; contracts.reserved_usd_per_gpu_hour is given, so say where and "
                             "when it was quoted (a provider's offer, a date)")
        return self


def contracts_priced(plan: Any) -> Any:
    """A plan with ``contracts`` has its daily curve and every price the mix needs, or an error at the field. [Plan]

    Parameters
    ----------
    plan : Plan
        The validated plan.

    Returns
    -------
    Plan
        The same plan.

    Raises
    ------
    ValueError
        ``forecast.daily_curve`` left out; no base price for the term (no catalog rate, no quote), or a quote at or
        above on-demand; an owned base without costs.mode: buy or a quote.
    """
    c = plan.contracts
    if c is None:
        return plan
    if plan.forecast.daily_curve is None:
        raise ValueError("forecast.daily_curve: missing; contracts is given, and its mix is sized from the day's load "
                         "(24 hourly fractions of the peak hour; `xlplan traffic` measures it from a log)")
    gpu = plan.hardware.resolve()
    quoted = plan.hardware.quoted_price()
    if quoted is None:
        raise ValueError(f"hardware.usd_per_gpu_hour: missing, and {gpu.name} has no catalog price; contracts needs the "
                         "on-demand price the busy hours pay; expected a price in USD/GPU-hour")
    on_demand = quoted[0]
    if c.reserved_usd_per_gpu_hour is not None:
        if c.reserved_usd_per_gpu_hour >= on_demand:
            raise ValueError(f"contracts.reserved_usd_per_gpu_hour: got {c.reserved_usd_per_gpu_hour:g}, at or above the "
                             f"on-demand price {on_demand:g}; expected a committed price below on-demand (a reservation "
                             "that costs as much saves nothing: a GPU would have to be busy more than every hour)")
        return plan
    if c.term == "owned":
        if plan.costs.mode != "buy":
            raise ValueError(f"contracts.reserved_usd_per_gpu_hour: missing; term is 'owned' but costs.mode is "
                             f"'{plan.costs.mode}'; expected costs.mode: buy (the owned cost per GPU-hour) or a quote")
        return plan
    offers = _offers(plan)
    if c.term not in offers:
        found = ", ".join(sorted(k for k in offers if k.startswith("reserved"))) or "none"
        raise ValueError(f"contracts.reserved_usd_per_gpu_hour: missing, and the catalog has no published {c.term} price "
                         f"for {gpu.name} (published: {found}); expected a quoted price in USD/GPU-hour with its source")
    return plan


def _offers(plan: Any) -> dict:
    """The catalog's offers for the plan's GPU ({} for a GPU given by its figures). [dict]"""
    from xlplan import catalog

    return catalog.contract_offers(plan.hardware.gpu) if isinstance(plan.hardware.gpu, str) else {}


def contract_prices(plan: Any, owned_usd_per_gpu_hour: float | None) -> dict:
    """The prices the mix uses, each ``{value, source}``: 'base', 'on_demand' and 'spot' (None where none is published).

    Parameters
    ----------
    plan : Plan
        A validated plan with ``contracts``.
    owned_usd_per_gpu_hour : float or None
        The bought fleet's cost per GPU-hour (costs.mode: buy), for an owned base without a quote. [USD/GPU-hour]

    Returns
    -------
    dict
        'base', 'on_demand', 'spot': ``{"value": float, "source": str}`` or None. [USD/GPU-hour]
    """
    c, gpu = plan.contracts, plan.hardware.resolve()
    offers = _offers(plan)

    def _cited(o: dict) -> dict:
        own = f", on-demand {o['on_demand_usd_per_gpu_hour']:g} there" if o.get("on_demand_usd_per_gpu_hour") else ""
        return {"value": float(o["usd_per_gpu_hour"]), "source": f"{o['provider']}, {o['date']}{own} ({o['url']})"}

    if c.reserved_usd_per_gpu_hour is not None:
        base = {"value": float(c.reserved_usd_per_gpu_hour), "source": c.source}
    elif c.term == "owned":
        base = {"value": float(owned_usd_per_gpu_hour), "source": "the bought fleet's depreciation, energy and hosting per GPU-hour"}
    else:
        base = _cited(offers[c.term])
    quoted = plan.hardware.quoted_price()
    on_demand = None if quoted is None else {
        "value": quoted[0],
        "source": (plan.sources.pricing or "plan (hardware.usd_per_gpu_hour)") if quoted[1] == "plan"
        else f"catalog: {gpu.price_note or gpu.name}"}
    return {"base": base, "on_demand": on_demand, "spot": _cited(offers["spot"]) if "spot" in offers else None}
