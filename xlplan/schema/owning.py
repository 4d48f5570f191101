"""The result of owning a fleet: its capex in parts, each month's costs, the payback, the cost over the life, and the
age of the prices.

The models are :mod:`xlplan.schema.result`'s (named ``xlplan.schema.owning.OwnershipOut`` and ``xlplan.schema.owning.PriceAge`` there).
"""

from __future__ import annotations

from pydantic import Field

from xlplan.schema.record import _Out


class PriceAge(_Out):
    """One dated price the bill uses, and its age."""

    price: str = Field(description="Which price: rental price, server, network, colocation, licence. [text]")
    month: str = Field(description="The month its source dates it to, YYYY-MM. [month]")
    age_months: int = Field(description="Its age on the plan's date (else the day it was planned). [months]")
    stale: bool = Field(description="Older than costs.price_max_age_months. [bool]")


class OwnershipOut(_Out):
    """Rent or buy: the cost of owning the purchased fleet, against renting it and the API (costs.mode: buy)."""

    capex_usd_per_node: float = Field(description="Price of one purchasing unit: server + network + storage + installation. [USD]")
    server_usd_per_node: float = Field(default=0.0, description="The server: GPUs, host, NICs. [USD]")
    network_usd_per_node: float = Field(default=0.0, description="Its share of the network fabric. [USD]")
    storage_usd_per_node: float = Field(default=0.0, description="Storage beyond the server's drives. [USD]")
    installation_usd_per_node: float = Field(default=0.0, description="Racking, cabling, shipping, commissioning, tax. [USD]")
    capex_usd: float = Field(description="The purchased fleet's price. [USD]")
    nodes: int = Field(default=0, description="Purchasing units bought. [nodes]")
    depreciation_years: float = Field(description="Depreciation life. [years]")
    residual_fraction: float = Field(default=0.0, description="Resale value at the end of the life, of the capex. [fraction]")
    residual_usd: float = Field(default=0.0, description="That resale value. [USD]")
    cost_of_capital: float = Field(default=0.0, description="Cost of capital, nominal a year, compounded monthly. [1/year]")
    capital_usd_per_month: float = Field(default=0.0, description="Capex less the residual's present value, as an annuity over the life at the cost of capital. [USD/month]")
    kw_per_gpu: float = Field(description="Maximum power per GPU, host share included: what colocation contracts. [kW]")
    kw_per_gpu_typical: float = Field(default=0.0, description="Typical power per GPU under load. [kW]")
    power_draw: str = Field(default="typical", description="Which draw the electricity bill counts: typical or maximum. [text]")
    pue: float = Field(description="Facility power ÷ IT power. [—]")
    usd_per_kwh: float = Field(description="Electricity price. [USD/kWh]")
    hosting_usd_per_kw_month: float = Field(description="Colocation per contracted kW. [USD/kW-month]")
    licence_usd_per_gpu_year: float = Field(default=0.0, description="Software licence per GPU-year. [USD/GPU-year]")
    licence_usd_per_month: float = Field(default=0.0, description="The fleet's licences. [USD/month]")
    hardware_ops_usd_per_month: float = Field(description="Running the hardware. [USD/month]")
    depreciation_usd_per_month: float = Field(description="(Capex − residual) ÷ months of life: the accounts' figure, not cash. [USD/month]")
    energy_usd_per_month: float = Field(description="Electricity at the counted draw, every hour, times PUE. [USD/month]")
    hosting_usd_per_month: float = Field(description="Colocation at the contracted (maximum) kW. [USD/month]")
    running_usd_per_month: float = Field(default=0.0, description="Power + colocation + licences + hardware operations: the cash each month. [USD/month]")
    running_usd_per_gpu_month: float = Field(default=0.0, description="Power, colocation and licences of one GPU (hardware operations apart). [USD/GPU-month]")
    monthly_usd: float = Field(default=0.0, description="Capital + running: what owning costs a month, the bill. [USD/month]")
    owned_usd_per_gpu_hour: float = Field(description="Capital, power, colocation and licences per GPU-hour. [USD/GPU-hour]")
    rent_usd_per_gpu_hour: float | None = Field(description="The rental price it is compared with (the plan's, else the catalog's); None: none known. [USD/GPU-hour]")
    rent_monthly_usd: float | None = Field(description="Renting the same units at that price. [USD/month]")
    payback_months: float | None = Field(description="Capex ÷ (rent of the same units − running costs); None when owning costs more to run than renting. [months]")
    payback_within_life: bool | None = Field(default=None, description="Whether that payback comes within the depreciation life; False: buying never pays back within it. [bool]")
    hours_per_month: float = Field(default=730.0, description="Hours the power is drawn in a month. [h/month]")
    life_months: float = Field(default=0.0, description="The life the totals cover. [months]")
    monthly_rate: float = Field(default=0.0, description="The cost of capital a month: the yearly rate ÷ 12. [1/month]")
    annuity_factor: float = Field(default=0.0, description="A dollar each month of the life, today: (1 − (1 + r/12)^−months) ÷ (r/12). [months]")
    discount_factor: float = Field(default=0.0, description="A dollar at the end of the life, today: (1 + r/12)^−months. [1]")
    engineering_ops_usd_per_month: float = Field(default=0.0, description="Engineering and on-call, counted for owning and renting alike, not the API. [USD/month]")
    own_total_usd: float = Field(default=0.0, description="Owning over the life: capex + running and engineering each month − residual. [USD]")
    own_npv_usd: float = Field(default=0.0, description="Its present cost at the cost of capital. [USD]")
    rent_total_usd: float | None = Field(default=None, description="Renting the same units and engineering over the life. [USD]")
    rent_npv_usd: float | None = Field(default=None, description="Its present cost. [USD]")
    api_total_usd: float | None = Field(default=None, description="The same traffic on the API over the life. [USD]")
    api_npv_usd: float | None = Field(default=None, description="Its present cost. [USD]")
    sources: dict[str, str] = Field(description="Where each figure comes from: the plan, or a dated catalog default. [text]")
    dates: dict[str, str] = Field(default_factory=dict, description="The date each figure's source gives. [text]")
