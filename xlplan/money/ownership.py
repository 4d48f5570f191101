"""Rent or buy: what owning a fleet costs a month, when the cash goes, when buying pays back, and its cost over the life.

Notes
-----
The capex of a purchasing unit is its parts: the server (GPUs, host, NICs), its share of the network fabric, storage,
and installation with shipping. Owning costs, per month:

- **capital**: the capex less the present value of its residual value at the end of the life, recovered as an annuity
  over the life at the cost of capital (``r/12`` a month, the rate that also discounts the NPV); at a rate of 0 this
  is straight-line depreciation of capex less residual;
- **power**: the GPUs' draw (typical, or maximum as an option) × PUE × the electricity price, every hour;
- **colocation**: priced per contracted kW, the maximum draw (a colocation contract reserves the peak);
- **software licences** per GPU-year, where the stack needs them;
- **hardware operations**, fixed for the fleet.

Depreciation, (capex − residual) ÷ months, is the accountant's figure: it is reported apart and never added to cash.

References
----------
Straight-line lives of 5-6 years, as hyperscalers book servers (AWS 5 years from 2025, Google and Microsoft 6); PUE
from the Uptime Institute's survey; colocation per kW from CBRE; residual value from secondary-market H100 resale
curves; the annuity (capital recovery factor) ``i / (1 − (1 + i)^−n)`` is the standard level payment of a loan. The
figures and their dates are in ``xlplan/catalog/ownership.yaml``.
"""

from __future__ import annotations

import datetime as dt
import re

from xlplan.fleet import ROUNDING_TOLERANCE
from xlplan.units import HOURS_PER_MONTH  # the one definition: 8,760 hours a year over 12

MONTHS_PER_YEAR = 12.0
"""[months/year]"""


def monthly_rate(annual_rate: float) -> float:
    """The monthly rate of a nominal annual rate compounded monthly: ``r / 12``. [1/month]

    Parameters
    ----------
    annual_rate : float
        Cost of capital, a year (0.08 is 8%). [1/year]

    Returns
    -------
    float
        ``annual_rate / 12``. [1/month]

    Examples
    --------
    >>> round(monthly_rate(0.08), 6)
    0.006667
    """
    return annual_rate / MONTHS_PER_YEAR


def discount_factor(annual_rate: float, months: float) -> float:
    """What a dollar paid ``months`` from now is worth today: ``(1 + r/12)^−months``. [1]

    Parameters
    ----------
    annual_rate : float
        Cost of capital. [1/year]
    months : float
        Months from now. [months]

    Returns
    -------
    float
        The discount factor. [1]

    Examples
    --------
    >>> round(discount_factor(0.08, 60), 4)   # 1.0066667^-60
    0.6712
    """
    return (1.0 + monthly_rate(annual_rate)) ** -months


def annuity_factor(annual_rate: float, months: float) -> float:
    """Present value of 1 a month paid at each month's end for ``months``: ``(1 − (1 + i)^−n) ÷ i``; ``n`` at 0% (and where
    ``i × n`` is below :data:`xlplan.fleet.ROUNDING_TOLERANCE`). [months]

    Parameters
    ----------
    annual_rate : float
        Cost of capital. [1/year]
    months : float
        Payments. [months]

    Returns
    -------
    float
        The annuity factor. [months]

    Examples
    --------
    >>> round(annuity_factor(0.08, 60), 3), annuity_factor(0.0, 60)
    (49.318, 60.0)
    """
    i = monthly_rate(annual_rate)
    if i * months < ROUNDING_TOLERANCE:  # a rate this small is none: 1 − (1 + i)^−n cancels to nothing in floats
        return float(months)
    return (1.0 - (1.0 + i) ** -months) / i


def _capital_usd_per_month(capex_usd: float, residual_usd: float, annual_rate: float, months: float) -> float:
    """The level monthly charge that repays the capex, less the present value of the residual, at the cost of capital. [USD/month]

    Parameters
    ----------
    capex_usd : float
        Price paid at the start. [USD]
    residual_usd : float
        What the hardware sells for at the end of its life. [USD]
    annual_rate : float
        Cost of capital. [1/year]
    months : float
        Life. [months]

    Returns
    -------
    float
        ``(capex − residual × (1 + i)^−n) ÷ annuity factor``; straight-line ``(capex − residual) ÷ n`` at 0%. [USD/month]

    Examples
    --------
    $270,000 over 60 months at 8%: 270,000 ÷ 49.318 = 5,474.63, which is $974.63 more than 4,500 straight-line:

    >>> round(_capital_usd_per_month(270000, 0, 0.08, 60), 2), _capital_usd_per_month(270000, 0, 0.0, 60)
    (5474.63, 4500.0)
    """
    return (capex_usd - residual_usd * discount_factor(annual_rate, months)) / annuity_factor(annual_rate, months)


def monthly_parts_usd(purchased_gpus, capex_usd_per_node, gpus_per_node, life_years, residual_fraction, annual_rate,
                      kw_drawn_per_gpu, kw_contracted_per_gpu, pue, usd_per_kwh, hosting_usd_per_kw_month,
                      licence_usd_per_gpu_year, hours_per_month=HOURS_PER_MONTH) -> dict:
    """The parts of owning a fleet: its capex and residual, and each month's capital, depreciation, power, colocation
    and licences. [USD], [USD/month]

    Parameters
    ----------
    purchased_gpus : float
        GPUs owned. [GPUs]
    capex_usd_per_node : float
        Price of one purchasing unit, every part (server, network, storage, installation). [USD]
    gpus_per_node : int
        GPUs in it. [GPUs]
    life_years : float
        Depreciation life. [years]
    residual_fraction : float
        Resale value at the end of the life, a fraction of the capex. [fraction]
    annual_rate : float
        Cost of capital. [1/year]
    kw_drawn_per_gpu, kw_contracted_per_gpu : float
        Power drawn per GPU, host share included (typical, or maximum); contracted for colocation (the maximum). [kW]
    pue, usd_per_kwh : float
        Facility power ÷ IT power [1]; the electricity price [USD/kWh].
    hosting_usd_per_kw_month, licence_usd_per_gpu_year : float
        Colocation per contracted kW [USD/kW-month]; software licence per GPU [USD/GPU-year].
    hours_per_month : float
        Hours in the month. [h/month]

    Returns
    -------
    dict
        ``capex_usd``, ``residual_usd`` [USD]; ``capital``, ``depreciation``, ``energy``, ``hosting``, ``licence``
        [USD/month], each for the whole fleet.

    Examples
    --------
    Eight GPUs, a $270,000 node over 5 years, 30% residual, 8%; 0.9375 kW drawn, 1.275 contracted, PUE 1.5, $0.10/kWh,
    $180/kW-month, $4,500/GPU-year: capital (270,000 − 81,000 × 0.6712) ÷ 49.318 = 4,372.2; depreciation
    189,000 ÷ 60 = 3,150; power 8 × 0.9375 × 1.5 × 0.10 × 730 = 821.25; colocation 8 × 1.275 × 180 = 1,836; licences
    8 × 4,500 ÷ 12 = 3,000:

    >>> {k: round(v, 1) for k, v in monthly_parts_usd(8, 270000, 8, 5, 0.3, 0.08, 0.9375, 1.275, 1.5, 0.10, 180, 4500).items()}
    {'capex_usd': 270000.0, 'residual_usd': 81000.0, 'capital': 4372.2, 'depreciation': 3150.0, 'energy': 821.2, 'hosting': 1836.0, 'licence': 3000.0}
    """
    capex = purchased_gpus / gpus_per_node * capex_usd_per_node
    residual = capex * residual_fraction
    months = MONTHS_PER_YEAR * life_years
    return {
        "capex_usd": capex,
        "residual_usd": residual,
        "capital": _capital_usd_per_month(capex, residual, annual_rate, months),
        "depreciation": (capex - residual) / months,
        "energy": purchased_gpus * kw_drawn_per_gpu * pue * usd_per_kwh * hours_per_month,
        "hosting": purchased_gpus * kw_contracted_per_gpu * hosting_usd_per_kw_month,
        "licence": purchased_gpus * licence_usd_per_gpu_year / MONTHS_PER_YEAR,
    }


def owned_usd_per_gpu_hour(parts: dict, purchased_gpus: float, hours_per_month=HOURS_PER_MONTH) -> float:
    """What an owned GPU costs per hour: capital, power, colocation and licences, hardware operations apart. [USD/GPU-hour]

    Parameters
    ----------
    parts : dict
        :func:`monthly_parts_usd` for ``purchased_gpus``. [USD/month]
    purchased_gpus : float
        GPUs they are for. [GPUs]
    hours_per_month : float
        Hours in a month. [h/month]

    Returns
    -------
    float
        ``(capital + energy + hosting + licence) ÷ GPUs ÷ hours``. [USD/GPU-hour]

    Examples
    --------
    >>> round(owned_usd_per_gpu_hour({"capital": 5474.6, "energy": 821.25, "hosting": 1836.0, "licence": 0.0}, 8, 730), 4)
    1.3924
    """
    return (parts["capital"] + parts["energy"] + parts["hosting"] + parts["licence"]) / purchased_gpus / hours_per_month


def payback_months(capex_usd, rent_usd_per_month, running_usd_per_month):
    """Months until buying has cost less than renting: capex ÷ (rent − running costs); None when renting is cheaper
    to run than owning (buying never pays back). [months]

    Parameters
    ----------
    capex_usd : float
        Purchase price of the fleet bought. [USD]
    rent_usd_per_month : float
        What renting the same units would cost a month. [USD/month]
    running_usd_per_month : float
        What running the owned fleet costs a month: power, colocation, licences and hardware operations; no capital. [USD/month]

    Returns
    -------
    float or None
        ``capex ÷ (rent − running)``, a simple (undiscounted) payback; None when the monthly saving is zero or negative. [months]

    Examples
    --------
    >>> payback_months(270000, 10950.0, 3000.0)
    33.9622641509434
    >>> payback_months(270000, 2000.0, 3000.0) is None
    True
    """
    saving = rent_usd_per_month - running_usd_per_month
    if saving <= 0:
        return None
    return capex_usd / saving


def pays_back_within_life(payback_months_, depreciation_years) -> bool | None:
    """Whether buying pays back before the hardware's depreciation life ends; None where it never does. [bool]

    Parameters
    ----------
    payback_months_ : float or None
        :func:`payback_months`. [months]
    depreciation_years : float
        The life. [years]

    Returns
    -------
    bool or None
        ``payback ≤ 12 × life``; None when renting is cheaper to run than owning.

    Examples
    --------
    >>> pays_back_within_life(19.8, 5), pays_back_within_life(73.5, 5), pays_back_within_life(None, 5)
    (True, False, None)
    """
    if payback_months_ is None:
        return None
    return payback_months_ <= MONTHS_PER_YEAR * depreciation_years


def life_costs_usd(capex_usd, residual_usd, running_usd_per_month, rent_usd_per_month, api_usd_per_month, annual_rate,
                   months) -> dict:
    """Total cost and present cost (NPV of the outgoings) over the life, for owning, renting and the API. [USD]

    Parameters
    ----------
    capex_usd : float
        Paid at the start (month 0). [USD]
    residual_usd : float
        Received at the end of the life. [USD]
    running_usd_per_month : float
        Owning's running costs, paid at each month's end. [USD/month]
    rent_usd_per_month : float or None
        Renting the same units, with the same operations cost; None: no rental price. [USD/month]
    api_usd_per_month : float or None
        The same traffic on the managed API; None: no API price. [USD/month]
    annual_rate : float
        Cost of capital, the discount rate. [1/year]
    months : float
        The life. [months]

    Returns
    -------
    dict
        ``own_total``, ``rent_total``, ``api_total`` (undiscounted sums) and ``own_npv``, ``rent_npv``, ``api_npv``
        (present costs at the cost of capital); None where a price is missing. [USD]

    Examples
    --------
    Capex 270,000, residual 0, running 3,000 a month, rent 10,000, API 20,000, 8%, 60 months (annuity factor 49.318):

    >>> {k: round(v) for k, v in life_costs_usd(270000, 0, 3000, 10000, 20000, 0.08, 60).items()}
    {'own_total': 450000, 'own_npv': 417955, 'rent_total': 600000, 'rent_npv': 493184, 'api_total': 1200000, 'api_npv': 986369}
    """
    af, df = annuity_factor(annual_rate, months), discount_factor(annual_rate, months)
    out = {"own_total": capex_usd + running_usd_per_month * months - residual_usd,
           "own_npv": capex_usd + running_usd_per_month * af - residual_usd * df}
    for key, monthly in (("rent", rent_usd_per_month), ("api", api_usd_per_month)):
        out[f"{key}_total"] = None if monthly is None else monthly * months
        out[f"{key}_npv"] = None if monthly is None else monthly * af
    return out


_DATE = re.compile(r"(?<!\d)(\d{4})-(0[1-9]|1[0-2])(?:-(0[1-9]|[12]\d|3[01]))?(?!\d)")


def price_date(text: str | None) -> str | None:
    """The latest YYYY-MM or YYYY-MM-DD date a price's source states, as ``YYYY-MM``; None where it states none. [month]

    Parameters
    ----------
    text : str or None
        A date field, or a source note with dates in it.

    Returns
    -------
    str or None
        The latest month named. [month]

    Examples
    --------
    >>> price_date("RunPod on-demand, 2026-07-23 (Vast.ai 2025-11)"), price_date("undated")
    ('2026-07', None)
    """
    found = [f"{m.group(1)}-{m.group(2)}" for m in _DATE.finditer(text or "")]
    return max(found) if found else None


def age_months(month: str, as_of: str) -> int:
    """Whole calendar months from a price's month to the day it is judged. [months]

    Parameters
    ----------
    month : str
        ``YYYY-MM``. [month]
    as_of : str
        ``YYYY-MM-DD`` or ``YYYY-MM``. [date]

    Returns
    -------
    int
        ``(year × 12 + month)`` of ``as_of`` less that of ``month``. [months]

    Examples
    --------
    >>> age_months("2023-05", "2026-12-04")
    43
    """
    y0, m0 = (int(x) for x in month.split("-")[:2])
    d = dt.date.fromisoformat(as_of if len(as_of) > 7 else f"{as_of}-01")
    return (d.year * 12 + d.month) - (y0 * 12 + m0)
