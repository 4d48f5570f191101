"""Rent or buy: the monthly cost of owning a fleet, its hourly equivalent, and when buying pays back.

Notes
-----
Owning a GPU costs, per month: its share of the purchasing unit's price spread straight-line over the
depreciation period (no residual value, no cost of capital), the electricity it and its share of the host draw at
load for every hour of the month times the facility's PUE, the colocation space priced per kW of IT load, and a
fixed hardware-operations cost for the fleet (hands on site, spares, support contracts). Every term but the last
scales with the GPUs purchased, so the cost per GPU-hour is one figure:

    usd_per_gpu_hour = capex_per_node / gpus_per_node / (12 · years) / hours
                       + kw_per_gpu · pue · usd_per_kwh
                       + kw_per_gpu · hosting_usd_per_kw_month / hours

Power is counted at load for every hour, which over-states the bill of a fleet idle at night: a stated,
conservative convention.

References
----------
Straight-line depreciation over 5-6 years is what hyperscalers book for servers (AWS 5 years from 2025, Google and
Microsoft 6); PUE from the Uptime Institute's survey; colocation per kW of IT load from CBRE's market reports. The
figures and their dates are in ``xlplan/catalog/ownership.yaml``.
"""

from __future__ import annotations

from xlplan.units import HOURS_PER_MONTH  # the one definition: 8,760 hours a year over 12


def owned_usd_per_gpu_hour(capex_usd_per_node, gpus_per_node, depreciation_years, kw_per_gpu, pue, usd_per_kwh,
                           hosting_usd_per_kw_month, hours_per_month=HOURS_PER_MONTH):
    """What an owned GPU costs per hour: depreciation, electricity and hosting. [USD/GPU-hour]

    Parameters
    ----------
    capex_usd_per_node : float
        Price of one purchasing unit: its GPUs, host, network. [USD]
    gpus_per_node : int
        GPUs in it. [GPUs]
    depreciation_years : float
        Straight-line life. [years]
    kw_per_gpu : float
        Power per GPU at load, its share of the host included. [kW]
    pue : float
        Facility power ÷ IT power (power usage effectiveness). [1]
    usd_per_kwh : float
        Electricity price. [USD/kWh]
    hosting_usd_per_kw_month : float
        Colocation price per kW of IT load. [USD/kW-month]
    hours_per_month : float
        Hours the GPU is paid for in a month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float
        Depreciation, electricity at load and hosting, per GPU per hour. [USD/GPU-hour]

    Notes
    -----
    ``capex ÷ GPUs ÷ (12 × years) ÷ hours + kW × PUE × USD/kWh + kW × USD/kW-month ÷ hours``: straight-line
    depreciation with no residual value and no cost of capital, power drawn at load every hour.

    References
    ----------
    Straight-line depreciation over 5-6 years, as hyperscalers book servers (AWS 5 years from 2025, Google and
    Microsoft 6); PUE from the Uptime Institute's Global Data Center Survey; colocation per kW of IT load from CBRE's
    North America Data Center Trends. Figures and dates in ``xlplan/catalog/ownership.yaml``.

    Examples
    --------
    An 8-GPU node at $270,000 over 5 years, 1.275 kW per GPU, PUE 1.5, $0.10/kWh, $180/kW-month, 730 h:
    270,000 / 8 / 60 / 730 = 0.77055; 1.275 x 1.5 x 0.10 = 0.19125; 1.275 x 180 / 730 = 0.31438; sum 1.27618:

    >>> round(owned_usd_per_gpu_hour(270000, 8, 5, 1.275, 1.5, 0.10, 180, 730), 4)
    1.2762
    """
    _, depreciation, energy, hosting = monthly_parts_usd(1.0, capex_usd_per_node, gpus_per_node, depreciation_years,
                                                         kw_per_gpu, pue, usd_per_kwh, hosting_usd_per_kw_month, hours_per_month)
    return (depreciation + energy + hosting) / hours_per_month


def monthly_parts_usd(purchased_gpus, capex_usd_per_node, gpus_per_node, depreciation_years, kw_per_gpu, pue,
                      usd_per_kwh, hosting_usd_per_kw_month, hours_per_month=HOURS_PER_MONTH):
    """The parts of owning a fleet: its capex, and each month's depreciation, electricity and hosting. [USD]

    Parameters
    ----------
    purchased_gpus : float
        GPUs owned. [GPUs]
    capex_usd_per_node : float
        Price of one purchasing unit. [USD]
    gpus_per_node : int
        GPUs in it. [GPUs]
    depreciation_years : float
        Straight-line life. [years]
    kw_per_gpu : float
        Power per GPU at load. [kW]
    pue : float
        Facility power ÷ IT power. [1]
    usd_per_kwh : float
        Electricity price. [USD/kWh]
    hosting_usd_per_kw_month : float
        Colocation price per kW of IT load. [USD/kW-month]
    hours_per_month : float
        Hours in the month. [h/month]

    Returns
    -------
    capex_usd : float
        GPUs ÷ GPUs per node × the node's price. [USD]
    depreciation_usd_per_month : float
        Capex over ``12 × years`` months. [USD/month]
    energy_usd_per_month : float
        GPUs × kW × PUE × USD/kWh × hours. [USD/month]
    hosting_usd_per_month : float
        GPUs × kW × USD/kW-month. [USD/month]

    Examples
    --------
    Eight GPUs of the example above: 270,000 capex, 4,500 a month depreciation (270,000 / 60), 8 x 1.275 x 1.5 x 0.10 x
    730 = 1,116.90 power, 8 x 1.275 x 180 = 1,836 hosting.

    >>> [round(x, 2) for x in monthly_parts_usd(8, 270000, 8, 5, 1.275, 1.5, 0.10, 180, 730)]
    [270000.0, 4500.0, 1116.9, 1836.0]
    """
    capex = purchased_gpus / gpus_per_node * capex_usd_per_node
    energy = purchased_gpus * kw_per_gpu * pue * usd_per_kwh * hours_per_month
    hosting = purchased_gpus * kw_per_gpu * hosting_usd_per_kw_month
    return capex, capex / (12.0 * depreciation_years), energy, hosting


def monthly_ownership_usd(purchased_gpus, usd_per_gpu_hour, hardware_ops_usd_per_month, hours_per_month=HOURS_PER_MONTH):
    """The monthly cost of owning the purchased fleet: every purchased GPU, every hour, plus hardware operations. [USD/month]

    Parameters
    ----------
    purchased_gpus : int or float
        GPUs bought: whole purchasing units. [GPUs]
    usd_per_gpu_hour : float
        Owned cost of one GPU-hour (:func:`owned_usd_per_gpu_hour`). [USD/GPU-hour]
    hardware_ops_usd_per_month : float
        Running the hardware: hands on site, spares, support contracts, for the whole fleet. [USD/month]
    hours_per_month : float
        Hours counted in a month (8,760 / 12 = 730). [h/month]

    Returns
    -------
    float
        ``purchased × USD/GPU-hour × hours + hardware operations``. [USD/month]

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month": GPUs × hourly price × 730 hours.

    Examples
    --------
    >>> round(monthly_ownership_usd(8, 1.2761, 2000.0, 730), 2)   # 8 x 1.2761 x 730 + 2,000
    9452.42
    """
    return purchased_gpus * usd_per_gpu_hour * hours_per_month + hardware_ops_usd_per_month


def payback_months(capex_usd, rent_usd_per_month, running_usd_per_month):
    """Months until buying has cost less than renting: capex ÷ (rent − running costs); None when renting is cheaper
    to run than owning (buying never pays back). [months]

    Parameters
    ----------
    capex_usd : float
        Purchase price of the fleet bought. [USD]
    rent_usd_per_month : float
        What renting the fleet would cost a month. [USD/month]
    running_usd_per_month : float
        What running the owned fleet costs a month: power, hosting and hardware operations, no depreciation. [USD/month]

    Returns
    -------
    float or None
        ``capex ÷ (rent − running)``; None when the monthly saving is zero or negative. [months]

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
        The straight-line life. [years]

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
    return payback_months_ <= 12.0 * depreciation_years
