"""A plan's ownership: the figures it buys with (its own or dated defaults), what owning its fleet costs, and the age
of every price it quotes.

Notes
-----
The arithmetic is :mod:`xlplan.money.ownership`'s; this module only reads the plan's figures into it, so the scenario's owned
cost per GPU-hour, the note, the JSON and the workbook's cached values come from one computation.
"""

from __future__ import annotations

from xlplan.money import ownership
from xlplan.schema.owning import OwnershipOut, PriceAge
from xlplan.schema.plan import Plan

CAPEX_PARTS = (("server", "capex_usd_per_node"), ("network", "network_usd_per_node"), ("storage", "storage_usd_per_node"),
               ("installation", "installation_usd_per_node"))
"""The parts of a purchasing unit's price, in the order the note adds them: its words and its plan field. [text]"""


def _unit_price_usd(v: dict) -> float:
    """One purchasing unit's capex: server + network + storage + installation. [USD]

    Parameters
    ----------
    v : dict
        The ownership figures' values (:meth:`xlplan.schema.plan.Plan.ownership`, ``value`` of each). [USD]

    Returns
    -------
    float
        The sum of :data:`CAPEX_PARTS`. [USD]
    """
    return sum(v[field] for _, field in CAPEX_PARTS)


def _parts_usd(p: Plan, purchased_gpus: float) -> tuple[dict, dict]:
    """(the figures' values, :func:`xlplan.money.ownership.monthly_parts_usd` for ``purchased_gpus``) of a buy plan. [mixed], [USD]

    Parameters
    ----------
    p : Plan
        A plan with ``costs.mode: buy``.
    purchased_gpus : float
        GPUs owned. [GPUs]

    Returns
    -------
    tuple of dict
        The value of each ownership figure, and the fleet's capex, residual and monthly parts.
    """
    v = {k: d["value"] for k, d in p.ownership().items()}
    drawn = v["kw_per_gpu_typical"] if p.costs.power_draw == "typical" else v["kw_per_gpu"]
    return v, ownership.monthly_parts_usd(
        purchased_gpus, _unit_price_usd(v), p.hardware.gpus_per_node, v["depreciation_years"], v["residual_fraction"],
        v["cost_of_capital"], drawn, v["kw_per_gpu"], v["pue"], v["usd_per_kwh"], v["hosting_usd_per_kw_month"],
        v["licence_usd_per_gpu_year"], p.hardware.hours_per_month)


def owned_usd_per_gpu_hour(p: Plan) -> float:
    """A buy plan's owned cost of one GPU-hour: capital, power, colocation and licences. [USD/GPU-hour]

    Parameters
    ----------
    p : Plan
        A plan with ``costs.mode: buy``.

    Returns
    -------
    float
        :func:`xlplan.money.ownership.owned_usd_per_gpu_hour` of one GPU. [USD/GPU-hour]
    """
    return ownership.owned_usd_per_gpu_hour(_parts_usd(p, 1.0)[1], 1.0, p.hardware.hours_per_month)


def ownership_out(p: Plan, purchased_gpus: float, api_usd_per_month: float | None, as_of: str | None) -> OwnershipOut | None:
    """Owning the purchased fleet: its capex in parts, each month's costs, the payback against renting the same units,
    and the total and present cost over the life against renting and the API; None when the plan rents.

    Parameters
    ----------
    p : Plan
        The plan.
    purchased_gpus : float
        GPUs bought (whole purchasing units). [GPUs]
    api_usd_per_month : float or None
        The same traffic on the managed API. [USD/month]
    as_of : str or None
        The day prices are judged, ``YYYY-MM-DD``. [date]

    Returns
    -------
    OwnershipOut or None
        Every figure the note, the JSON and the workbook show; None in rent mode.
    """
    own = p.ownership()
    if not own:
        return None
    v, pt = _parts_usd(p, purchased_gpus)
    hours, eng = p.hardware.hours_per_month, p.hardware.ops_usd_per_month
    quoted = p.hardware.quoted_price()
    rent_rate = quoted[0] if quoted else None
    rent = purchased_gpus * rent_rate * hours if rent_rate else None  # the same units, rented
    running = pt["energy"] + pt["hosting"] + pt["licence"] + v["hardware_ops_usd_per_month"]
    payback = ownership.payback_months(pt["capex_usd"], rent, running) if rent is not None else None
    months = ownership.MONTHS_PER_YEAR * v["depreciation_years"]
    life = ownership.life_costs_usd(pt["capex_usd"], pt["residual_usd"], running + eng, None if rent is None else rent + eng,
                                    api_usd_per_month, v["cost_of_capital"], months)
    return OwnershipOut(
        capex_usd_per_node=_unit_price_usd(v), server_usd_per_node=v["capex_usd_per_node"],
        network_usd_per_node=v["network_usd_per_node"], storage_usd_per_node=v["storage_usd_per_node"],
        installation_usd_per_node=v["installation_usd_per_node"], capex_usd=pt["capex_usd"],
        depreciation_years=v["depreciation_years"], residual_fraction=v["residual_fraction"], residual_usd=pt["residual_usd"],
        cost_of_capital=v["cost_of_capital"], capital_usd_per_month=pt["capital"],
        kw_per_gpu=v["kw_per_gpu"], kw_per_gpu_typical=v["kw_per_gpu_typical"], power_draw=p.costs.power_draw,
        pue=v["pue"], usd_per_kwh=v["usd_per_kwh"], hosting_usd_per_kw_month=v["hosting_usd_per_kw_month"],
        licence_usd_per_gpu_year=v["licence_usd_per_gpu_year"], licence_usd_per_month=pt["licence"],
        hardware_ops_usd_per_month=v["hardware_ops_usd_per_month"], depreciation_usd_per_month=pt["depreciation"],
        energy_usd_per_month=pt["energy"], hosting_usd_per_month=pt["hosting"], running_usd_per_month=running,
        owned_usd_per_gpu_hour=ownership.owned_usd_per_gpu_hour(pt, purchased_gpus, hours),
        rent_usd_per_gpu_hour=rent_rate, rent_monthly_usd=rent, payback_months=payback,
        payback_within_life=ownership.pays_back_within_life(payback, v["depreciation_years"]),
        hours_per_month=hours, life_months=months, engineering_ops_usd_per_month=eng,
        nodes=round(purchased_gpus / p.hardware.gpus_per_node), monthly_usd=pt["capital"] + running,
        running_usd_per_gpu_month=(pt["energy"] + pt["hosting"] + pt["licence"]) / purchased_gpus,
        monthly_rate=ownership.monthly_rate(v["cost_of_capital"]),
        annuity_factor=ownership.annuity_factor(v["cost_of_capital"], months),
        discount_factor=ownership.discount_factor(v["cost_of_capital"], months),
        own_total_usd=life["own_total"], own_npv_usd=life["own_npv"], rent_total_usd=life["rent_total"],
        rent_npv_usd=life["rent_npv"], api_total_usd=life["api_total"], api_npv_usd=life["api_npv"],
        sources={k: d["source"] for k, d in own.items()},
        dates={k: d["date"] for k, d in own.items()},
    )


PRICES_DATED = (("server", "capex_usd_per_node"), ("network", "network_usd_per_node"),
                ("colocation", "hosting_usd_per_kw_month"), ("licence", "licence_usd_per_gpu_year"))
"""The ownership figures that are prices (a PUE or a life is not): words and field. [text]"""


def price_ages(p: Plan, as_of: str | None) -> list[PriceAge]:
    """Every dated price the plan's bill uses — the rental price, and when buying the server, network, colocation and
    licence prices — with its age at ``as_of`` and whether it is older than ``costs.price_max_age_months``.

    Parameters
    ----------
    p : Plan
        The plan.
    as_of : str or None
        The day they are judged, ``YYYY-MM-DD``; None: not judged (an empty list). [date]

    Returns
    -------
    list of PriceAge
        One per dated price; a price whose source states no date is left out.
    """
    if as_of is None:
        return []
    dated = []
    if p.hardware.usd_per_gpu_hour is None:
        dated.append(("rental price", ownership.price_date(p.hardware.resolve().price_note)))
    else:
        dated.append(("rental price", ownership.price_date(p.sources.pricing) or ownership.price_date(p.date)))
    own = p.ownership()
    for words, field in PRICES_DATED if own else ():
        if own[field]["value"]:
            dated.append((words, ownership.price_date(own[field]["date"]) or ownership.price_date(own[field]["source"])))
    limit = p.costs.price_max_age_months
    out = []
    for words, month in dated:
        if month is not None:
            age = ownership.age_months(month, as_of)
            out.append(PriceAge(price=words, month=month, age_months=age, stale=age > limit))
    return out
