"""Section 5's rows for an owned fleet: the capex in parts, each month's costs, the accounts' depreciation, the payback
against renting the same units, the cost over the life against renting and the API, and the prices' ages.

Reads an :class:`~xlplan.schema.owning.OwnershipOut`; computes nothing but the operands it prints (each line adds up from
them: ``tests/test_note_arithmetic.py``).
"""

from __future__ import annotations

from xlplan import words
from xlplan.words import PRICE_MISSING

NEVER_PAYS_BACK = "never pays back"
"""The words for a payback past the depreciation life, or for owning that costs more to run than renting. [text]"""


def ownership_rows(gpus: int, nodes: int, o) -> list[tuple[str, str]]:
    """The rows of an owned fleet of ``gpus`` GPUs in ``nodes`` purchasing units. [text]

    Parameters
    ----------
    gpus : int
        GPUs owned. [GPUs]
    nodes : int
        Purchasing units bought. [nodes]
    o : OwnershipOut
        What owning them costs.

    Returns
    -------
    list of tuple of str
        (label, text) rows: capex, monthly cost of ownership and its capital, power and colocation lines, depreciation,
        against renting, over the life.
    """
    af, df = o.annuity_factor, o.discount_factor
    drawn = o.kw_per_gpu_typical if o.power_draw == "typical" else o.kw_per_gpu
    rows = [
        ("Capex", (f"server {words.usd(o.server_usd_per_node)} + network {words.usd(o.network_usd_per_node)} + storage "
                   f"{words.usd(o.storage_usd_per_node)} + installation {words.usd(o.installation_usd_per_node)} = "
                   f"{words.usd(o.capex_usd_per_node)} per node × {words.count(nodes, 'node')} = {words.usd(o.capex_usd)}")),
        ("Monthly cost of ownership",
         (f"{words.count(gpus, 'GPU')} owned: capital {words.usd(o.capital_usd_per_month)} + power {words.usd(o.energy_usd_per_month)} + "
          f"colocation {words.usd(o.hosting_usd_per_month)} + licences {words.usd(o.licence_usd_per_month)} + hardware ops "
          f"{words.usd(o.hardware_ops_usd_per_month)} = {words.usd(o.monthly_usd)} / month "
          f"({words.usd(o.owned_usd_per_gpu_hour, 2)}/GPU-hour before hardware ops)")),
        ("  Capital", (f"({words.usd(o.capex_usd)} − {words.usd(o.residual_usd)} residual × {df:.4f}) ÷ {af:.3f} = "
                       f"{words.usd(o.capital_usd_per_month)} / month (capex less the residual's present value, an annuity at "
                       f"{o.cost_of_capital:.1%} a year, nominal, compounded monthly, over {o.life_months:g} months; residual {o.residual_fraction:.1%} of capex)")),
        ("  Power", (f"{words.count(gpus, 'GPU')} × {drawn:g} kW ({o.power_draw} draw) × PUE {o.pue:g} × ${o.usd_per_kwh:g}/kWh × "
                     f"{o.hours_per_month:g} h = {words.usd(o.energy_usd_per_month)} / month")),
        ("  Colocation", (f"{words.count(gpus, 'GPU')} × {o.kw_per_gpu:g} kW (the contracted maximum) × ${o.hosting_usd_per_kw_month:g}/kW-month "
                          f"= {words.usd(o.hosting_usd_per_month)} / month")),
        ("Depreciation", (f"({words.usd(o.capex_usd)} − {words.usd(o.residual_usd)}) ÷ {o.life_months:g} months = "
                          f"{words.usd(o.depreciation_usd_per_month)} / month in the accounts (not cash, not in the bill)")),
        _against_renting_row(gpus, o),
        _life_row(gpus, o),
    ]
    return rows


def _against_renting_row(gpus: int, o) -> tuple[str, str]:
    """Owning against renting the same units: the rent, and when buying pays back ('never pays back' past its life). [text]

    Parameters
    ----------
    gpus : int
        GPUs owned. [GPUs]
    o : OwnershipOut
        What owning them costs.

    Returns
    -------
    tuple of str
        ('Against renting', its text).
    """
    if o.rent_monthly_usd is None:
        return ("Against renting", f"rental {PRICE_MISSING} for this GPU: no payback to give")
    if o.payback_months is None:
        pay = f"renting costs less than running owned hardware: buying {NEVER_PAYS_BACK}"
    elif o.payback_within_life is False:
        pay = (f"buying {NEVER_PAYS_BACK} within its {o.depreciation_years:g}-year life (the capex takes "
               f"{o.payback_months:,.1f} months to recover, past {o.life_months:,.0f})")
    else:
        pay = f"buying pays back in {o.payback_months:,.1f} months"
    return ("Against renting", (f"renting the same {words.count(gpus, 'GPU')} at ${o.rent_usd_per_gpu_hour:g}/h: "
                               f"{words.usd(o.rent_monthly_usd)} / month; {pay}"))


def _life_row(gpus: int, o) -> tuple[str, str]:
    """Owning, renting the same units and the API over the life: the total paid and its present cost (NPV). [text]

    Parameters
    ----------
    gpus : int
        GPUs owned. [GPUs]
    o : OwnershipOut
        What owning them costs.

    Returns
    -------
    tuple of str
        ('Over the life', its text).
    """
    ways = [("owning", o.own_total_usd, o.own_npv_usd), (f"renting the same {words.count(gpus, 'GPU')}", o.rent_total_usd, o.rent_npv_usd),
            ("the API", o.api_total_usd, o.api_npv_usd)]
    shown = "; ".join(f"{w} {words.usd(t)} paid, NPV {words.usd(n)}" if t is not None else f"{w} {PRICE_MISSING}" for w, t, n in ways)
    priced = [(n, w) for w, t, n in ways if n is not None]
    least = min(priced)[1]
    eng = f", with engineering {words.usd(o.engineering_ops_usd_per_month)} a month on self-hosting" if o.engineering_ops_usd_per_month else ""
    return ("Over the life", (f"{o.life_months:g} months at {o.cost_of_capital:.1%}{eng}: {shown} — {least} costs least "
                             "in present value"))


def price_age_row(ages) -> tuple[str, str] | None:
    """The prices older than the plan allows, each with its date; None when every dated price is recent. [text]

    Parameters
    ----------
    ages : list of PriceAge
        The bill's dated prices.

    Returns
    -------
    tuple of str or None
        ('Price dates', which are stale and how old).
    """
    stale = [a for a in ages if a.stale]
    if not stale:
        return None
    return ("Price dates", "; ".join(f"{a.price} dated {a.month}, {words.count(a.age_months, 'month')} old" for a in stale)
            + ": older than the plan allows (costs.price_max_age_months), refresh before ordering")
