"""Tab 5's rent-or-buy block: what owning the purchased fleet costs, as formulas over 1 Inputs and the catalog's dated
defaults, with the engine's figures cached (:mod:`xlplan.money.ownership`, :mod:`xlplan.money.ownership_plan`).

Every figure shows n/a while 1 Inputs says the fleet is rented. The block follows the engine line for line: the capex
in parts, the capital charge as an annuity at the cost of capital less the residual's present value, power at the
counted draw, colocation at the contracted maximum, licences, depreciation apart, the payback against renting the same
units, and the total and present cost over the life of owning, renting and the API.
"""

from __future__ import annotations

from xlplan import catalog
from xlplan.excel.cells import Line
from xlplan.excel.common import FMT, NA, Engine
from xlplan.words import PRICE_MISSING

NEVER_IN_LIFE = "never pays back in its life"
"""What the payback shows where recovering the capex takes longer than the depreciation life."""

OWNING_DEFAULTS = (
    # (1 Inputs name stem, ownership.yaml default, label, unit): each Default<stem> on the Constants sheet, and its source
    ("DepreciationYears", "depreciation_years", "Depreciation life when a buy plan gives none", "years"),
    ("PUE", "pue", "PUE when a buy plan gives none", "1"),
    ("HostingUSDPerKWMonth", "hosting_usd_per_kw_month", "Colocation per kW-month when a buy plan gives none", "USD/kW-month"),
    ("NetworkUSDPerNode", "network_usd_per_node", "A node's share of the network fabric when a buy plan gives none", "USD"),
    ("StorageUSDPerNode", "storage_usd_per_node", "Storage beyond the server when a buy plan gives none", "USD"),
    ("InstallationUSDPerNode", "installation_usd_per_node", "Installation and shipping when a buy plan gives none", "USD"),
    ("ResidualFraction", "residual_decay_per_year", "Resale value kept each year of age (the residual is this ^ life)", "1/year"),
    ("CostOfCapital", "cost_of_capital", "Cost of capital when a buy plan gives none", "1/year"),
    ("LicenceUSDPerGPUYear", "licence_usd_per_gpu_year", "Software licence when a buy plan gives none", "USD/GPU-year"),
)
"""The buy inputs with a default for every GPU (catalog/ownership.yaml)."""


def owning_constants() -> list[tuple[str, str, float, str, str]]:
    """The Constants sheet's rows of the buy defaults: (name, label, value, unit, why). [mixed]

    Returns
    -------
    list of tuple
        ``Default<stem>`` for each of :data:`OWNING_DEFAULTS`, its catalog value, and its source's date.
    """
    d = catalog.ownership_defaults()
    return [(f"Default{stem}", label, float(d[field]["value"]), unit, f"catalog/ownership.yaml ({d[field]['date']})")
            for stem, field, label, unit in OWNING_DEFAULTS]


def payback_shown(o) -> float | str:
    """Months until buying pays back, as the workbook shows it: 'price missing' without a rental price, 'never' when renting
    costs less, 'never pays back in its life' past the depreciation life (the engine's payback_within_life). [months]"""
    if o.rent_monthly_usd is None:
        return PRICE_MISSING
    if o.payback_months is None:
        return "never"
    return NEVER_IN_LIFE if o.payback_within_life is False else o.payback_months


def _used(name: str, default: str) -> str:
    """The figure a buy plan uses: 1 Inputs' where given, else the default; n/a while renting. [formula]"""
    return f'=IF(CostMode<>"buy","{NA}",IF(ISNUMBER({name}Input),{name}Input,{default}))'


def _inputs_used(o, v) -> list[Line]:
    """The figures used: the capex's parts, the life, residual and cost of capital, power, PUE, colocation, licences."""
    typical = ('IF(AND(NOT(ISNUMBER(KWPerGPUInput)),GPUOwnedKWPerGPUTypical>0),GPUOwnedKWPerGPUTypical,KWPerGPUUsed)')
    return [
        Line("CapexUSDPerNodeUsed", "Server price used", _used("CapexUSDPerNode", f'IF(GPUOwnedCapexUSDPerGPU>0,GPUOwnedCapexUSDPerGPU*GPUsPerNode,"{NA}")'),
             v(o and o.server_usd_per_node), "USD", FMT["usd"], "GPUs, host and NICs of one node: the plan's, else the catalog's dated quote"),
        Line("NetworkUSDPerNodeUsed", "Network share used", _used("NetworkUSDPerNode", "DefaultNetworkUSDPerNode"),
             v(o and o.network_usd_per_node), "USD", FMT["usd"], "the node's share of the fabric"),
        Line("StorageUSDPerNodeUsed", "Storage used", _used("StorageUSDPerNode", "DefaultStorageUSDPerNode"),
             v(o and o.storage_usd_per_node), "USD", FMT["usd"], "beyond the server's own drives"),
        Line("InstallationUSDPerNodeUsed", "Installation and shipping used", _used("InstallationUSDPerNode", "DefaultInstallationUSDPerNode"),
             v(o and o.installation_usd_per_node), "USD", FMT["usd"], "racking, cabling, shipping, commissioning, tax"),
        Line("UnitCapexUSD", "Price of one purchasing unit",
             f'=IF(ISNUMBER(CapexUSDPerNodeUsed),CapexUSDPerNodeUsed+NetworkUSDPerNodeUsed+StorageUSDPerNodeUsed+InstallationUSDPerNodeUsed,"{NA}")',
             v(o and o.capex_usd_per_node), "USD", FMT["usd"], "server + network + storage + installation"),
        Line("DepreciationYearsUsed", "Depreciation life used", _used("DepreciationYears", "DefaultDepreciationYears"),
             v(o and o.depreciation_years), "years", FMT["num"], "the life the capex is recovered over"),
        Line("ResidualFractionUsed", "Residual value used", _used("ResidualFraction", "DefaultResidualFraction^DepreciationYearsUsed"),
             v(o and o.residual_fraction), "fraction", "0.0%", "resale at the end of the life, of the capex"),
        Line("CostOfCapitalUsed", "Cost of capital used", _used("CostOfCapital", "DefaultCostOfCapital"),
             v(o and o.cost_of_capital), "1/year", "0.0%", "nominal a year, compounded monthly; also the NPV's discount rate"),
        Line("KWPerGPUUsed", "Maximum power per GPU used", _used("KWPerGPU", f'IF(GPUOwnedKWPerGPU>0,GPUOwnedKWPerGPU,"{NA}")'),
             v(o and o.kw_per_gpu), "kW", "0.000", "host share included: what colocation contracts"),
        Line("KWPerGPUTypicalUsed", "Typical power per GPU used", _used("KWPerGPUTypical", typical),
             v(o and o.kw_per_gpu_typical), "kW", "0.000", "under serving load; the maximum where none is known"),
        Line("KWDrawnPerGPU", "Power per GPU the electricity bill counts",
             f'=IF(CostMode<>"buy","{NA}",IF(PowerDraw="maximum",KWPerGPUUsed,KWPerGPUTypicalUsed))',
             v(o and (o.kw_per_gpu_typical if o.power_draw == "typical" else o.kw_per_gpu)), "kW", "0.000", "as 1 Inputs' power draw says"),
        Line("PUEUsed", "PUE used", _used("PUE", "DefaultPUE"), v(o and o.pue), "1", FMT["num"], ""),
        Line("HostingUSDPerKWMonthUsed", "Colocation used", _used("HostingUSDPerKWMonth", "DefaultHostingUSDPerKWMonth"),
             v(o and o.hosting_usd_per_kw_month), "USD/kW-month", FMT["usd2"], "per contracted kW"),
        Line("LicenceUSDPerGPUYearUsed", "Software licence used", _used("LicenceUSDPerGPUYear", "DefaultLicenceUSDPerGPUYear"),
             v(o and o.licence_usd_per_gpu_year), "USD/GPU-year", FMT["usd"], "0 for open-source serving engines"),
    ]


def _factors(o, v) -> list[Line]:
    """The life in months, the monthly rate, the discount factor at the end of the life and the annuity factor."""
    rate = o.monthly_rate if o else 0.0
    months = o.life_months if o else 0.0
    df = o.discount_factor if o else 0.0
    return [
        Line("LifeMonths", "Life", f'=IF(CostMode<>"buy","{NA}",MonthsPerYear*DepreciationYearsUsed)', v(o and months), "months", FMT["num"], ""),
        Line("MonthlyRate", "Cost of capital a month", f'=IF(CostMode<>"buy","{NA}",CostOfCapitalUsed/MonthsPerYear)', v(o and rate),
             "1/month", "0.000%", "the yearly rate ÷ 12"),
        Line("DiscountFactorLife", "A dollar at the end of the life, today", f'=IF(CostMode<>"buy","{NA}",(1+MonthlyRate)^(-LifeMonths))',
             v(o and df), "1", "0.0000", "(1 + monthly rate) ^ −months"),
        Line("AnnuityFactorLife", "A dollar each month of the life, today",
             f'=IF(CostMode<>"buy","{NA}",IF(MonthlyRate*LifeMonths<RoundingTolerance,LifeMonths,(1-DiscountFactorLife)/MonthlyRate))',
             v(o and o.annuity_factor), "months", FMT["num"], "(1 − discount factor) ÷ monthly rate; the months at 0%"),
    ]


def ownership_lines(e: Engine) -> list[Line]:
    """Buy: the figures used (the plan's, else a dated default), the owned cost per GPU-hour, each month's costs, the
    payback against renting the same units, and the life's totals and NPVs. Each shows n/a while 1 Inputs says rent."""
    o = e.result.cost.ownership

    def v(x):
        return x if o is not None else NA

    ok = 'AND(ISNUMBER(UnitCapexUSD),ISNUMBER(KWPerGPUUsed),ISNUMBER(USDPerKWhInput))'
    per_gpu_month = ("UnitCapexUSD/GPUsPerNode*(1-ResidualFractionUsed*DiscountFactorLife)/AnnuityFactorLife"
                     "+KWDrawnPerGPU*PUEUsed*USDPerKWhInput*HoursPerMonth+KWPerGPUUsed*HostingUSDPerKWMonthUsed"
                     "+LicenceUSDPerGPUYearUsed/MonthsPerYear")
    running = "RunningUSDPerMonth"
    life = [
        ("OwnTotalUSD", "Owning over the life, paid", "CapexUSD+(RunningUSDPerMonth+OpsUSDPerMonth)*LifeMonths-ResidualUSD", "ISNUMBER(CapexUSD)", o and o.own_total_usd),
        ("OwnNPVUSD", "Owning over the life, present cost", "CapexUSD+(RunningUSDPerMonth+OpsUSDPerMonth)*AnnuityFactorLife-ResidualUSD*DiscountFactorLife",
         "ISNUMBER(CapexUSD)", o and o.own_npv_usd),
        ("RentTotalUSD", "Renting the same units over the life, paid", "(RentMonthlyUSD+OpsUSDPerMonth)*LifeMonths", "ISNUMBER(RentMonthlyUSD)", o and o.rent_total_usd),
        ("RentNPVUSD", "Renting the same units, present cost", "(RentMonthlyUSD+OpsUSDPerMonth)*AnnuityFactorLife", "ISNUMBER(RentMonthlyUSD)", o and o.rent_npv_usd),
        ("APITotalUSD", "The API over the life, paid", "APIMonthlyCostUSD*LifeMonths", "ISNUMBER(APIMonthlyCostUSD)", o and o.api_total_usd),
        ("APINPVUSD", "The API over the life, present cost", "APIMonthlyCostUSD*AnnuityFactorLife", "ISNUMBER(APIMonthlyCostUSD)", o and o.api_npv_usd),
    ]
    return _inputs_used(o, v) + _factors(o, v) + [
        Line("OwnedUSDPerGPUHour", "Owned cost per GPU-hour", f'=IF({ok},({per_gpu_month})/HoursPerMonth,"{NA}")',
             v(o and o.owned_usd_per_gpu_hour), "USD/GPU-hour", FMT["usd2"], "capital + electricity x PUE + colocation + licences, every hour"),
        Line("CapexUSD", "Price of the purchased fleet", f'=IF(ISNUMBER(UnitCapexUSD),FleetPurchased/GPUsPerNode*UnitCapexUSD,"{NA}")',
             v(o and o.capex_usd), "USD", FMT["usd"], "whole purchasing units, paid once"),
        Line("ResidualUSD", "Its resale at the end of the life", f'=IF(ISNUMBER(CapexUSD),CapexUSD*ResidualFractionUsed,"{NA}")',
             v(o and o.residual_usd), "USD", FMT["usd"], ""),
        Line("CapitalUSDPerMonth", "Capital", f'=IF(ISNUMBER(CapexUSD),(CapexUSD-ResidualUSD*DiscountFactorLife)/AnnuityFactorLife,"{NA}")',
             v(o and o.capital_usd_per_month), "USD/month", FMT["usd"], "capex less the residual's present value, as an annuity over the life"),
        Line("DepreciationUSDPerMonth", "Depreciation (accounts, not cash)", f'=IF(ISNUMBER(CapexUSD),(CapexUSD-ResidualUSD)/LifeMonths,"{NA}")',
             v(o and o.depreciation_usd_per_month), "USD/month", FMT["usd"], "straight line to the residual; not in the bill"),
        Line("EnergyUSDPerMonth", "Electricity",
             f'=IF(AND(ISNUMBER(KWDrawnPerGPU),ISNUMBER(USDPerKWhInput)),FleetPurchased*KWDrawnPerGPU*PUEUsed*USDPerKWhInput*HoursPerMonth,"{NA}")',
             v(o and o.energy_usd_per_month), "USD/month", FMT["usd"], "every purchased GPU at the counted draw, every hour, times PUE"),
        Line("HostingUSDPerMonth", "Colocation", f'=IF(ISNUMBER(KWPerGPUUsed),FleetPurchased*KWPerGPUUsed*HostingUSDPerKWMonthUsed,"{NA}")',
             v(o and o.hosting_usd_per_month), "USD/month", FMT["usd"], "at the contracted (maximum) kW"),
        Line("LicenceUSDPerMonth", "Software licences", f'=IF(CostMode<>"buy","{NA}",FleetPurchased*LicenceUSDPerGPUYearUsed/MonthsPerYear)',
             v(o and o.licence_usd_per_month), "USD/month", FMT["usd"], ""),
        Line("RunningUSDPerGPUMonth", "Running cost per GPU", f'=IF({ok},KWDrawnPerGPU*PUEUsed*USDPerKWhInput*HoursPerMonth'
             f'+KWPerGPUUsed*HostingUSDPerKWMonthUsed+LicenceUSDPerGPUYearUsed/MonthsPerYear,"{NA}")',
             v(o and o.running_usd_per_gpu_month),
             "USD/GPU-month", FMT["usd2"], "electricity + colocation + licences of one GPU: the Schedule's running costs"),
        Line("RunningUSDPerMonth", "Running costs (cash each month)",
             f'=IF(AND(ISNUMBER(EnergyUSDPerMonth),ISNUMBER(HostingUSDPerMonth)),EnergyUSDPerMonth+HostingUSDPerMonth+LicenceUSDPerMonth+FixedUSDPerMonth,"{NA}")',
             v(o and o.running_usd_per_month), "USD/month", FMT["usd"], "electricity + colocation + licences + hardware operations"),
        Line("RentMonthlyUSD", "Renting the same units instead",
             f'=IF(CostMode<>"buy","{NA}",IF(ISNUMBER(RentUSDPerGPUHour),FleetPurchased*RentUSDPerGPUHour*HoursPerMonth,"{PRICE_MISSING}"))',
             v(o and (PRICE_MISSING if o.rent_monthly_usd is None else o.rent_monthly_usd)), "USD/month", FMT["usd"], "at the rental price on 1 Inputs"),
        Line("PaybackMonths", "Buying pays back after",
             f'=IF(OR(NOT(ISNUMBER(CapexUSD)),NOT(ISNUMBER({running}))),"{NA}",IF(NOT(ISNUMBER(RentMonthlyUSD)),"{PRICE_MISSING}",'
             f'IF(RentMonthlyUSD>{running},IF(CapexUSD/(RentMonthlyUSD-{running})>LifeMonths,'
             f'"{NEVER_IN_LIFE}",CapexUSD/(RentMonthlyUSD-{running})),"never")))',
             v(o and payback_shown(o)), "months", FMT["num"], "capex ÷ (rent − running costs); never past the depreciation life"),
    ] + [Line(name, label, f'=IF(CostMode<>"buy","{NA}",IF({cond},{expr},"{PRICE_MISSING}"))',
              v(o and (PRICE_MISSING if x is None else x)), "USD", FMT["usd"],
              "the same traffic" if name.startswith("API") else "with engineering and on-call on self-hosting")
         for name, label, expr, cond, x in life]
