"""How the fleet is paid for: the ``costs`` section of a plan file (rented per GPU, per node, or bought, and what
owning costs).

Part of the plan file's schema; import the models from :mod:`xlplan.schema.plan`, their public home.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from xlplan.schema.fields import PaymentMode, _Section

OWNERSHIP_FIELDS = ("capex_usd_per_node", "network_usd_per_node", "storage_usd_per_node", "installation_usd_per_node",
                    "depreciation_years", "residual_fraction", "cost_of_capital", "kw_per_gpu", "kw_per_gpu_typical", "pue",
                    "usd_per_kwh", "hosting_usd_per_kw_month", "licence_usd_per_gpu_year", "hardware_ops_usd_per_month")
"""The buy figures of ``costs``, each the plan's or a dated default (:meth:`xlplan.schema.plan.Plan.ownership`). [text]"""


class Costs(_Section):
    """How the fleet is paid for (rented per GPU, rented per node, or bought): what the monthly bill counts. Buying needs the figures below; each left out falls back on a dated,
    sourced default (``xlplan/catalog/ownership.yaml``) where a credible one exists, and is otherwise required."""

    mode: PaymentMode = Field(
        default="rent_per_gpu",
        description="How the fleet is paid for: 'rent_per_gpu' (an hourly price for each GPU of the fleet with redundancy), "
                    "'rent_per_node' (an hourly price for whole nodes or instances, the common cloud unit) or 'buy' (the "
                    "nodes bought: capex, power and hosting). Older files' 'rent' reads as 'rent_per_gpu', and their "
                    "hardware.billing: purchased as 'rent_per_node'. [text]")
    capex_usd_per_node: float | None = Field(default=None, ge=1000, le=1e9,
                                             description="Buy: price of one server node, its GPUs, host and NICs (the network fabric, storage and installation are their own fields); left out, the catalog's dated quote for the GPU where one exists. [USD]")
    depreciation_years: float | None = Field(default=None, gt=0, le=15,
                                             description="Buy: depreciation life, over which the capex less its residual is recovered; left out, 5 (AWS servers since 2025). [years]")
    kw_per_gpu: float | None = Field(default=None, gt=0, le=20,
                                     description="Buy: maximum power per GPU, its share of the host included: what colocation contracts (and the electricity bill counts with power_draw: maximum); left out, the catalog's (the vendor system's maximum ÷ its GPUs) where known. [kW]")
    pue: float | None = Field(default=None, ge=1, le=3, description="Buy: facility power ÷ IT power; left out, 1.54 (Uptime Institute 2025). [—]")
    usd_per_kwh: float | None = Field(default=None, gt=0, le=2, description="Buy: electricity price; required (prices differ 3x between US states). [USD/kWh]")
    hosting_usd_per_kw_month: float | None = Field(default=None, ge=0, le=5000,
                                                   description="Buy: colocation per kW of IT load; left out, 184.06 (CBRE, North America H2 2024). [USD/kW-month]")
    hardware_ops_usd_per_month: float | None = Field(default=None, ge=0, le=1e9,
                                                     description="Buy: running the hardware: hands on site, spares, support contracts; required (no credible public figure). [USD/month]")
    network_usd_per_node: float | None = Field(default=None, ge=0, le=1e8,
                                               description="Buy: each node's share of the network fabric (switches, optics, cables); left out, 15,060 (a one-layer 400 Gb/s InfiniBand fabric, 2024-08); 0 where the server price includes it. [USD]")
    storage_usd_per_node: float | None = Field(default=None, ge=0, le=1e8,
                                               description="Buy: storage beyond the server's own drives, per node; left out, 0 (the server's NVMe holds the weights). [USD]")
    installation_usd_per_node: float | None = Field(default=None, ge=0, le=1e8,
                                                    description="Buy: racking, cabling, shipping, commissioning and any sales tax, per node; left out, 0 and flagged as not stated. [USD]")
    residual_fraction: float | None = Field(default=None, ge=0, lt=1,
                                            description="Buy: resale value at the end of the life as a fraction of the capex (0.25, not 25); left out, 0.78 to the power of the life in years (secondary-market H100 resale, 2026). [fraction]")
    cost_of_capital: float | None = Field(default=None, ge=0, le=0.5,
                                          description="Buy: cost of capital a year, nominal, compounded monthly (0.08 is 8%, not 8); the annuity that recovers the capex and the NPV's discount rate; left out, an assumed 0.08. [1/year]")
    power_draw: Literal["typical", "maximum"] = Field(default="typical",
                                                      description="Buy: the power the electricity bill counts: 'typical' (the stated typical draw under load) or 'maximum' (the vendor system's maximum, every hour); colocation is always priced at the maximum, the contracted kW. [text]")
    kw_per_gpu_typical: float | None = Field(default=None, gt=0, le=20,
                                             description="Buy: typical power per GPU under serving load, host share included; left out, the catalog's where known, else the maximum (kw_per_gpu). [kW]")
    licence_usd_per_gpu_year: float | None = Field(default=None, ge=0, le=1e6,
                                                   description="Buy: software licence per GPU and year (NVIDIA AI Enterprise lists 4,500); left out, 0 (open-source serving engines need none). [USD/GPU-year]")
    price_max_age_months: int = Field(default=12, ge=1, le=120,
                                      description="A price older than this many months, at the plan's date (else today), is flagged with its date. [months]")
    source: str = Field(default="", description="Where and when the buy figures come from. [text]")

    @field_validator("mode", mode="before")
    @classmethod
    def _older_rent(cls, v: Any) -> Any:
        """'rent', the value before renting per node existed, is renting per GPU."""
        return "rent_per_gpu" if v == "rent" else v

    def rents(self) -> bool:
        """Whether the fleet is rented (per GPU or per node), not bought. [bool]

        Returns
        -------
        bool
            True for 'rent_per_gpu' and 'rent_per_node'.
        """
        return self.mode != "buy"

    def ignored_figures(self) -> list[str]:
        """The buy figures a rented fleet holds: kept (a switch back to buy uses them), ignored while it rents. [names]

        Returns
        -------
        list of str
            Each of :data:`OWNERSHIP_FIELDS` given while ``mode`` rents; empty when it buys.
        """
        return [f for f in OWNERSHIP_FIELDS if getattr(self, f) is not None] if self.rents() else []
