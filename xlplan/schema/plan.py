"""The plan: a forecast, a promise, a model, hardware, a policy and prices.

This is the public schema of plan files (YAML or JSON). Every field has a
description with its unit; ``xlplan schema`` prints it as JSON Schema. Catalog
names are checked as the plan is validated, so a misspelt GPU is reported against
its field with the closest matches. The model and hardware sections are written in
:mod:`xlplan.schema.hardware`, the policy in :mod:`xlplan.schema.policy`; all are
named here.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from xlplan import catalog
from xlplan.schema.contracts import Contracts, DailyCurve, contracts_priced
from xlplan.schema.costs import OWNERSHIP_FIELDS, Costs
from xlplan.schema.fields import Fraction, FractionBelowOne, _Section, migrate_older_plan
from xlplan.schema.hardware import GPUOverride, Hardware, ModelChoice
from xlplan.schema.installed import Installed, Order, Trigger
from xlplan.schema.policy import Calibration, Policy
from xlplan.schema.versions import PLAN_SCHEMA_VERSION, upgrade_plan

# The plan file's models are one public interface wherever their code lives: each is named xlplan.schema.plan.<Model>, as
# reprs, pickles and the conventions' meta-test (tests/test_conventions.py, which reads this module) see it. The field
# types their annotations name are imported above, so type hints resolve here too.
for _model in (ModelChoice, GPUOverride, Hardware, Calibration, Policy, Contracts, Costs, Installed, Order, Trigger):
    _model.__module__ = __name__
del _model


class Percentiles(_Section):
    """A length distribution given by its percentiles — p50, p95, p99, never the mean."""

    p50: float = Field(gt=0, description="Median length. [tokens]")
    p95: float = Field(gt=0, description="95th-percentile length, at least p50. [tokens]")
    p99: float | None = Field(default=None, gt=0, description="99th-percentile length, at least p95; may be left out. [tokens]")

    @model_validator(mode="after")
    def _ordered(self) -> Percentiles:
        if self.p95 < self.p50:
            raise ValueError(f"p95 ({self.p95:g}) is below p50 ({self.p50:g}); expected p50 <= p95 <= p99")
        if self.p99 is not None and self.p99 < self.p95:
            raise ValueError(f"p99 ({self.p99:g}) is below p95 ({self.p95:g}); expected p50 <= p95 <= p99")
        return self


class Forecast(_Section):
    """Step 1: the traffic at peak, and the average that the bill uses."""

    peak_rps: float = Field(gt=0, description="Peak arrival rate the fleet must carry: the mean rate of the busiest 60-second window of the month, as `xlplan traffic` measures it from a log (its default --window, sliding from each arrival); `xlplan review` allows that window's sampling noise before it calls for an order. [requests/s]")
    prompt_tokens: Percentiles = Field(description="Prompt (input) length distribution. [tokens]")
    output_tokens: Percentiles = Field(description="Output length distribution. [tokens]")
    average_utilisation: Fraction = Field(
        default=0.40, description="Average load over a month as a fraction of peak (0.40, not 40). [fraction]"
    )
    prefix_reuse: FractionBelowOne = Field(
        default=0.0,
        description="Measured fraction of prompt compute served from the prefix cache; 0 unless measured on real traffic. [fraction]",
    )
    arrival_cv2: float = Field(
        default=1.0, gt=0, le=100,
        description="Squared coefficient of variation of the gaps between arrivals at peak: 1 for Poisson arrivals, above 1 "
                    "bursty (4: the gaps vary twice as much as Poisson's). The queueing path and the simulation use it. [1]",
    )
    daily_curve: DailyCurve | None = Field(default=None, description="Each hour's load as a fraction of the peak hour, hour 0 "
                                           "first: 24 values in (0, 1], the largest 1 (0.40, not 40); sizes contracts. [fraction]")


class Promise(_Section):
    """Step 2: the latency promise, at a stated percentile."""

    ttft_s: float = Field(gt=0, le=600, description="Time-to-first-token target, in seconds: 1 s is 1, not 1000 (a promise "
                                                   "past 10 minutes is no interactive promise). [s]")
    itl_s: float | None = Field(default=None, gt=0, le=2, description="Inter-token latency target, in seconds per token: "
                                                                       "50 ms is 0.05 (past 2 s a token, 0.5 tokens/s, no "
                                                                       "reader keeps up with so slow a stream). [s/token]")
    tokens_per_s: float | None = Field(
        default=None, gt=0, description="Streaming speed per request, the alternative to itl_s (20 tokens/s = 0.05 s). [tokens/s]"
    )
    percentile: float = Field(default=95, gt=0, lt=100, description="Percentile at which the targets hold. [percent]")

    @model_validator(mode="after")
    def _one_speed(self) -> Promise:
        if (self.itl_s is None) == (self.tokens_per_s is None):
            raise ValueError("give exactly one of itl_s (seconds per token) or tokens_per_s (streaming speed)")
        return self

    @property
    def itl(self) -> float:
        """The inter-token target, whichever way it was given. [s/token]"""
        from xlplan.serving.concurrency import streaming_speed_to_itl_s

        return self.itl_s if self.itl_s is not None else streaming_speed_to_itl_s(self.tokens_per_s)



class APIPrices(_Section):
    """A managed API's prices for the same model, for the honest comparison."""

    usd_per_mtok_input: float = Field(ge=0, description="Price of input tokens. [USD/Mtok]")
    usd_per_mtok_output: float = Field(ge=0, description="Price of output tokens. [USD/Mtok]")
    provider: str = Field(default="", description="Provider and offer the prices come from. [text]")
    source: str = Field(default="", description="Where and when the prices were read. [text]")


class Growth(_Section):
    """How peak traffic grows month by month, for the order schedule (`xlplan schedule`)."""

    monthly: float | None = Field(default=None, gt=-0.5, le=1,
                                  description="Growth of the peak rate per month: 0.10 is 10% a month, compounding; at most 1 "
                                              "(doubling every month); '10%' is read as 0.10. [fraction/month]")
    peaks_rps: list[Annotated[float, Field(gt=0, le=1e7)]] | None = Field(
        default=None, min_length=1, max_length=240, description="Or the peak rate month by month, from the first month. [requests/s]")
    months: int = Field(default=12, ge=1, le=240, description="Months to plan. [months]")
    lead_time_days: int | None = Field(default=None, ge=0, le=1095,
                                       description="Days from order to GPUs in service; required to date the orders (published lead times vary from weeks to a year). [days]")
    start: str | None = Field(default=None, pattern=r"^\d{4}-(0[1-9]|1[0-2])$",
                              description="First month of the schedule, YYYY-MM; left out, the month after today. [month]")
    source: str = Field(default="", description="Where the growth comes from (a log's measured growth, a product forecast). [text]")
    capex_paid_at: Literal["order", "delivery"] = Field(
        default="delivery", description="Bought GPUs: when their price leaves the bank, in the month the order goes out (its lead "
                                        "time before the month that needs them) or in the month they are delivered and go "
                                        "into service (the usual invoice on delivery). [text]")
    fiscal_year_start_month: int = Field(default=1, ge=1, le=12,
                                         description="First month of the fiscal year, 1-12 (1: the calendar year); a fiscal "
                                                     "year is named by the calendar year it ends in (FY2027 from 2026-07 with "
                                                     "7). [month]")

    @field_validator("monthly", mode="before")
    @classmethod
    def _percent_text(cls, v: Any) -> Any:
        """'10%' as 0.10, as the command line's --growth reads it."""
        if isinstance(v, str) and v.strip().endswith("%"):
            try:
                return float(v.strip()[:-1]) / 100
            except ValueError:
                return v
        return v

    @model_validator(mode="after")
    def _one_way(self) -> Growth:
        if self.monthly is not None and self.peaks_rps is not None:
            raise ValueError("give monthly or peaks_rps, not both")
        if self.peaks_rps is not None and "months" in self.model_fields_set and self.months != len(self.peaks_rps):
            raise ValueError(f"months: got {self.months}; peaks_rps gives {len(self.peaks_rps)} month(s) "
                             "(leave months out, or give a peak for each month)")
        if self.peaks_rps is not None and "months" not in self.model_fields_set:
            # the months a table gives, so the section written out (every field) reads back as it was
            object.__setattr__(self, "months", len(self.peaks_rps))
        return self


class Owners(_Section):
    """Who owns each input, so a wrong forecast is a forecast problem rather than an engineering one."""

    forecast: str = Field(default="unassigned", description="Owner of the traffic forecast. [text]")
    promise: str = Field(default="unassigned", description="Owner of the latency promise. [text]")
    pricing: str = Field(default="unassigned", description="Owner of the prices. [text]")
    model: str = Field(default="unassigned", description="Owner of the model and precision choice. [text]")


class Sources(_Section):
    """Where and when each input was obtained: a dated source, so a reviewer can check it."""

    forecast: str = Field(default="", description="Source and date of the traffic forecast (a log, a product estimate). [text]")
    promise: str = Field(default="", description="Source and date of the latency promise (an SLO document, a contract). [text]")
    pricing: str = Field(default="", description="Source and date of the GPU price (a quote, a price list). [text]")
    model: str = Field(default="", description="Source and date of the model and precision choice. [text]")


class Plan(_Section):
    """A capacity plan's inputs: everything the seven steps need."""

    schema_version: int = Field(
        default=PLAN_SCHEMA_VERSION, ge=1, json_schema_extra={"maximum": PLAN_SCHEMA_VERSION},
        description="The plan file's layout version (docs/versioning.md): left out, 1; a file written by a newer xlplan "
                    "says a higher one and is refused; an older one is read in today's layout. [—]")
    name: str = Field(default="Capacity plan", description="Title of the capacity note. [text]")
    date: str | None = Field(default=None, pattern=r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$",
                             description="When the plan was prepared, YYYY-MM-DD; left out, a workbook shows the day it was built. [date]")

    @field_validator("date", mode="after")
    @classmethod
    def _a_real_day(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                dt.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"expected a day of the calendar, YYYY-MM-DD ({v} does not exist)") from None
        return v
    forecast: Forecast = Field(description="Step 1: peak rate and length distributions.")
    promise: Promise = Field(description="Step 2: TTFT and inter-token targets at a percentile.")
    model: ModelChoice = Field(description="The model and its precision.")
    hardware: Hardware = Field(description="The GPU, the purchasing unit and the price.")
    policy: Policy = Field(default_factory=Policy, description="Conventions and efficiencies.")
    api: APIPrices | None = Field(default=None, description="Managed-API prices for the comparison; left out, the median listed price of models of this size class (api_prices.csv).")
    costs: Costs = Field(default_factory=Costs, description="Rent or buy, and what owning costs.")
    growth: Growth | None = Field(default=None, description="How the peak grows month by month (`xlplan schedule`); left out, no schedule.")
    contracts: Contracts | None = Field(default=None, description="A reserved or owned base with on-demand, API and spot for the day's peaks; left out, none.")
    owners: Owners = Field(default_factory=Owners, description="Who owns each input.")
    installed: Installed | None = Field(default=None, description="The GPUs in service, for `xlplan review`'s orders; left out, the plan's own fleet.")
    orders: list[Order] = Field(default_factory=list, description="Orders placed and not yet delivered, for `xlplan review`.")
    triggers: list[Trigger] = Field(default_factory=list, description="Pre-agreed consequences `xlplan review` checks on the measured figures.")
    sources: Sources = Field(default_factory=Sources, description="Where and when each input was obtained.")
    accept_implausible: list[str] = Field(
        default_factory=list, description="Fields whose value is outside its plausible range (xlplan.schema.plausibility) "
        "and meant: planned as given, and the note says so, e.g. [forecast.peak_rps]. [text]")

    @model_validator(mode="before")
    @classmethod
    def _older_files(cls, data: Any) -> Any:
        """An older file read in today's schema: its version's migrations (:func:`xlplan.schema.versions.upgrade_plan`),
        then today's older spellings (:func:`xlplan.schema.fields.migrate_older_plan`)."""
        return migrate_older_plan(upgrade_plan(data))

    @field_validator("accept_implausible", mode="before")
    @classmethod
    def _one_field_as_a_list(cls, v):
        # `accept_implausible: forecast.peak_rps` (one field, no brackets) is read as the list it means; blank as none
        return [v] if isinstance(v, str) else [] if v is None else v

    @field_validator("accept_implausible", mode="after")
    @classmethod
    def _known_fields(cls, v: list[str]) -> list[str]:
        from xlplan.schema.plausibility import FIELDS

        unknown = [f for f in v if f not in FIELDS]
        if unknown:
            import difflib

            near = difflib.get_close_matches(unknown[0], sorted(FIELDS), n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            raise ValueError(f"{', '.join(map(repr, unknown))} has no plausible range; {hint}expected fields such as "
                             "promise.itl_s, forecast.peak_rps or result.fleet_gpus (the README lists them)")
        return v

    @model_validator(mode="after")
    def _prompts_fit_the_model(self) -> Plan:
        # A prompt longer than the context window is refused by every server: planning for it would buy GPUs for
        # requests that never run (1,000,000 tokens on a 131,072-token model asked for 54,638 GPUs).
        limit = self.model.resolve().max_context_tokens
        if not limit:
            return self
        lines = []
        for role in ("prompt_tokens", "output_tokens"):
            pct = getattr(self.forecast, role)
            for q in ("p50", "p95", "p99"):
                v = getattr(pct, q)
                if v is not None and v >= limit:
                    lines.append(f"forecast.{role}.{q}: got {v:,.0f} tokens; expected fewer than {self.model.name or 'the model'}'s "
                                 f"context limit of {limit:,} tokens, as no request can be longer (a model with a longer "
                                 "context, or lengths from the traffic this model serves)")
        if lines:
            raise ValueError("\n".join(lines))
        return self

    @model_validator(mode="after")
    def _hardware_can_run_it(self) -> Plan:
        gpu = self.hardware.resolve()
        dtype = self.policy.compute_dtype
        if dtype is not None and gpu.peak_tflops(dtype) is None:
            raise ValueError(f"policy.compute_dtype: {gpu.name} has no {dtype} peak in the catalog; expected bf16 or a dtype it supports")
        if self.costs.rents() and self.hardware.quoted_price() is None:
            raise ValueError(f"hardware.usd_per_gpu_hour: missing, and {gpu.name} has no catalog price; expected a price in USD/GPU-hour")
        if self.costs.mode == "buy":
            inline = not isinstance(self.hardware.gpu, str)  # a GPU given inline is not the catalog's card: no quote
            own = {} if inline else catalog.ownership_for(gpu.name)
            why = (f"hardware.gpu is given inline, and the catalog's figures for {gpu.name} are not taken for it" if inline
                   else None)
            missing = []
            if self.costs.capex_usd_per_node is None and "capex_usd_per_node" not in own:
                missing.append(f"capex_usd_per_node ({why or f'no dated quote for {gpu.name} in the catalog'})")
            if self.costs.kw_per_gpu is None and "kw_per_gpu" not in own:
                missing.append(f"kw_per_gpu ({why or f'no sourced power figure for {gpu.name} in the catalog'})")
            if self.costs.usd_per_kwh is None:
                missing.append("usd_per_kwh (e.g. EIA 2023: Virginia commercial 0.0895, Texas industrial 0.066)")
            if self.costs.hardware_ops_usd_per_month is None:
                missing.append("hardware_ops_usd_per_month (0 if none)")
            typical, most = self.costs.kw_per_gpu_typical, self.costs.kw_per_gpu or (own.get("kw_per_gpu") or {}).get("value")
            if typical is not None and most is not None and typical > most:
                raise ValueError(f"costs.kw_per_gpu_typical: got {typical:g} kW, above the maximum {most:g} kW per GPU; expected a "
                                 "typical draw at or below the maximum (the two swapped?)")
            if missing:  # one line each, at its own path (errors.describe_validation_error keeps "path: ..." lines)
                raise ValueError("\n".join(f"costs.{m.split(' ', 1)[0]}: missing; costs.mode is 'buy', so it is required"
                                           + (f" {m.split(' ', 1)[1]}" if " " in m else "") for m in missing))
        return self

    def api_used(self) -> APIPrices:
        """The API prices the comparison uses: the plan's, or the median listed offer of the model's size class. [APIPrices]

        Returns
        -------
        APIPrices
            ``api`` where the plan gives it; else the median input and output prices of the listed offers for models of
            this size class (total parameters, dense or MoE), with the provider and source saying so.

        References
        ----------
        ``xlplan/data/api_prices.csv``: managed-API prices per million input and output tokens from provider pages and
        price datasets, 2025-2026, each row dated.
        """
        if self.api is not None:
            return self.api
        from xlplan.catalog import api_prices, parameters

        model = self.model.resolve()
        size_class = api_prices.api_size_class(parameters.total_params(model), model.num_experts > 0)
        usd_in, usd_out, n = api_prices.api_class_price(catalog.api_price_rows(), size_class)
        return APIPrices(usd_per_mtok_input=usd_in, usd_per_mtok_output=usd_out,
                         provider=f"median of {n} listed offers for {size_class} models (size-class match, not this model's own price)",
                         source="xlplan/data/api_prices.csv: provider pages and price datasets, 2025-2026, each row dated")

    def ownership(self) -> dict:
        """Buy mode: the figures used, each ``{value, source, date}`` (the plan's, else the catalog default). ``{}`` in rent mode.

        Returns
        -------
        dict
            Each of :data:`OWNERSHIP_FIELDS` as ``{"value": ..., "source": ..., "date": ...}`` in its unit (USD, years,
            fraction, 1/year, kW, 1, USD/kWh, USD/kW-month, USD/GPU-year, USD/month); a catalog node price is scaled to
            this plan's GPUs per node; the residual left out is 0.78 to the power of the life; the typical draw left out
            is the catalog's, else the maximum.

        References
        ----------
        ``xlplan/catalog/ownership.yaml``: dated, sourced defaults (AWS 5-year server depreciation, Uptime Institute
        PUE, CBRE colocation per kW, a network fabric's share, secondary-market resale) and per-GPU node prices and power.
        """
        if self.costs.mode != "buy":
            return {}
        own = catalog.ownership_for(self.hardware.resolve().name) if isinstance(self.hardware.gpu, str) else {}
        defaults = catalog.ownership_defaults()
        out = {}
        for field in OWNERSHIP_FIELDS:
            v = getattr(self.costs, field)
            if v is not None:
                out[field] = {"value": float(v), "source": self.costs.source or "plan", "date": self.date or "stated by the plan"}
            elif field == "residual_fraction":
                decay = defaults["residual_decay_per_year"]
                life = out["depreciation_years"]["value"]
                out[field] = {"value": float(decay["value"]) ** life, "source": f"{decay['value']}^{life:g} years: {decay['source']}",
                              "date": str(decay["date"])}
            elif field == "kw_per_gpu_typical" and (field not in own or self.costs.kw_per_gpu is not None):
                out[field] = {**out["kw_per_gpu"], "source": "no typical draw known: the maximum, " + out["kw_per_gpu"]["source"]}
            else:
                d = own.get(field) or defaults.get(field)
                value = float(d["value"])
                if field == "capex_usd_per_node" and d.get("gpus") and d["gpus"] != self.hardware.gpus_per_node:
                    value = value / d["gpus"] * self.hardware.gpus_per_node  # the quote's price per GPU, times this unit's GPUs
                out[field] = {"value": value, "source": f"{d['source']} ({d['date']})", "date": str(d["date"])}
        return out

    _contracts_priced = model_validator(mode="after")(contracts_priced)  # xlplan.schema.contracts: the curve and every price

    @model_validator(mode="after")
    def _tp_fits_node(self) -> Plan:
        tp = self.policy.tp
        if tp is not None and (tp > self.hardware.gpus_per_node or self.hardware.gpus_per_node % tp):
            n = self.hardware.gpus_per_node
            divisors = [d for d in range(1, n + 1) if n % d == 0]
            raise ValueError(
                f"policy.tp: got {tp}; expected a divisor of hardware.gpus_per_node = {n} "
                f"({', '.join(map(str, divisors[:-1]))} or {divisors[-1]}: tensor-parallel groups stay inside a node)"
                if len(divisors) > 1 else f"policy.tp: got {tp}; expected 1, as a node holds one GPU"
            )
        return self


def plan_json_schema() -> dict:
    """The JSON Schema of plan files.

    Returns
    -------
    dict
        :class:`Plan`'s JSON Schema, every field with its description and unit (what ``xlplan schema`` prints).
    """
    return Plan.model_json_schema()
