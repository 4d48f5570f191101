"""The plan: a forecast, a promise, a model, hardware, a policy and prices.

This is the public schema of plan files (YAML or JSON). Every field has a
description with its unit; ``xlplan schema`` prints it as JSON Schema. Catalog
names are checked here, so a misspelt GPU is reported against its field with the
closest matches.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from xlplan import catalog
from xlplan.engines import Engine
from xlplan.specs import ComputeDtype, GPUSpec, KVDtype, ModelSpec, WeightDtype


def _fraction(v: float) -> float:
    if not 0 < v <= 1:
        hint = f" (write {v / 100:.2f}, not {v:g})" if 1 < v <= 100 else ""
        raise ValueError(f"expected a fraction between 0 and 1{hint}")
    return v


def _fraction_below_one(v: float) -> float:
    if not 0 <= v < 1:
        hint = f" (write {v / 100:.2f}, not {v:g})" if 1 <= v <= 100 else ""
        raise ValueError(f"expected a fraction from 0 up to (not including) 1{hint}")
    return v


Fraction = Annotated[float, AfterValidator(_fraction)]
FractionBelowOne = Annotated[float, AfterValidator(_fraction_below_one)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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

    peak_rps: float = Field(gt=0, description="Peak arrival rate the fleet must carry. [requests/s]")
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
        from xlplan.concurrency import streaming_speed_to_itl_s

        return self.itl_s if self.itl_s is not None else streaming_speed_to_itl_s(self.tokens_per_s)


class ModelChoice(_Section):
    """The model and its precision (a catalog name, or an inline spec read from config.json)."""

    name: str | None = Field(default=None, description="Catalog name, Hugging Face id or alias; see `xlplan catalog models`. [text]")
    config: str | None = Field(default=None, description="Path to a Hugging Face config.json, read when the plan file is loaded. [path]")
    spec: dict[str, Any] | None = Field(
        default=None, description="Model fields given inline, overriding the catalog entry field by field (see ModelSpec). [mapping]"
    )
    weights_dtype: WeightDtype = Field(default="bf16", description="Weight precision: bf16, fp16, fp8, int8, int4, mxfp4, nvfp4/fp4. [text]")
    kv_dtype: KVDtype = Field(default="bf16", description="KV-cache precision: bf16, fp16, fp8, int8. [text]")

    @model_validator(mode="after")
    def _resolvable(self) -> ModelChoice:
        if self.name is None and self.spec is None:
            raise ValueError("give the model's name (see `xlplan catalog models`), its config (a config.json path) or an inline spec")
        if self.name is not None:
            try:
                catalog.model_key(self.name)
            except catalog.UnknownNameError as e:
                if self.spec is None:
                    raise ValueError(str(e)) from None
        self.resolve()
        return self

    def resolve(self) -> ModelSpec:
        """The model's spec: the catalog entry with any inline fields applied.

        Returns
        -------
        ModelSpec
            The catalog entry for ``name`` (or only that name, when the catalog lacks it) with ``spec``'s fields on top.
        """
        base: dict[str, Any] = {}
        if self.name is not None:
            try:
                base = catalog.get_model(self.name).model_dump()
            except catalog.UnknownNameError:
                base = {"name": self.name}
        return ModelSpec(**{**base, **(self.spec or {})})


class GPUOverride(_Section):
    """A GPU given inline: a catalog name with fields replaced, or a new GPU in full."""

    name: str = Field(description="Catalog name, or a new GPU's name. [text]")
    memory_gib: float | None = Field(default=None, gt=0, description="Memory as the driver reports it. [GiB]")
    bf16_tflops: float | None = Field(default=None, gt=0, description="Peak dense BF16 throughput. [TFLOP/s]")
    fp8_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP8 throughput. [TFLOP/s]")
    fp4_tflops: float | None = Field(default=None, gt=0, description="Peak dense FP4 throughput. [TFLOP/s]")
    hbm_tbps: float | None = Field(default=None, gt=0, description="Memory bandwidth. [TB/s]")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, description="Rental price. [USD/GPU-hour]")


class Hardware(_Section):
    """The accelerator, the purchasing unit and the price."""

    gpu: str | GPUOverride = Field(description="Catalog GPU name (see `xlplan catalog gpus`) or an inline GPU. [text]")
    gpus_per_node: int = Field(default=8, ge=1, description="The purchasing unit; tensor-parallel groups stay inside it. [GPUs]")
    usd_per_gpu_hour: float | None = Field(default=None, gt=0, description="Price paid; left out, the catalog's representative price. [USD/GPU-hour]")
    hours_per_month: float = Field(default=730.0, gt=0, le=744, description="Billed hours in a month (8,760 / 12 = 730). [h/month]")
    billing: Literal["rented", "purchased"] = Field(
        default="rented",
        description="What the bill counts: 'rented' (the fleet with redundancy, the runbook's 5 GPUs) or 'purchased' (whole purchasing units). [text]",
    )
    ops_usd_per_month: float = Field(default=0.0, ge=0, description="Engineering and on-call cost of self-hosting, used in the break-even. [USD/month]")

    @field_validator("gpu")
    @classmethod
    def _known(cls, v):
        name = v if isinstance(v, str) else v.name
        try:
            catalog.gpu_key(name)
        except catalog.UnknownNameError as e:
            if isinstance(v, str):
                raise ValueError(str(e)) from None
            missing = [f for f in ("memory_gib", "bf16_tflops", "hbm_tbps") if getattr(v, f) is None]
            if missing:
                raise ValueError(f"{e}; a GPU not in the catalog needs {', '.join(missing)}") from None
        return v

    def resolve(self) -> GPUSpec:
        """The GPU's spec: the catalog entry with any inline fields applied.

        Returns
        -------
        GPUSpec
            The catalog entry for ``gpu``; for an inline GPU, the catalog entry of its name (if any) with its given fields
            on top.
        """
        if isinstance(self.gpu, str):
            return catalog.get_gpu(self.gpu)
        fields = {k: v for k, v in self.gpu.model_dump().items() if v is not None}
        try:
            base = catalog.get_gpu(self.gpu.name).model_dump()
        except catalog.UnknownNameError:
            base = {}
        return GPUSpec(**{**base, **fields})

    def price(self) -> float:
        """The price the plan uses. [USD/GPU-hour]

        Returns
        -------
        float
            ``usd_per_gpu_hour`` where given, else the catalog's representative rental price for the GPU. [USD/GPU-hour]

        Raises
        ------
        ValueError
            When neither the plan nor the catalog has a price.
        """
        price = self.usd_per_gpu_hour or self.resolve().usd_per_gpu_hour
        if price is None:
            raise ValueError("no price: give hardware.usd_per_gpu_hour")
        return price


class Calibration(_Section):
    """Where calibrated efficiencies came from, and their spread over the runs (written by `xlplan calibrate`)."""

    source: str = Field(description="Benchmark files and what they measured. [text]")
    runs: int = Field(ge=1, description="Benchmark runs fitted. [runs]")
    prefill_mfu_range: tuple[Fraction, Fraction] = Field(description="Lowest and highest prefill MFU over the runs. [fraction]")
    decode_mfu_range: tuple[Fraction, Fraction] = Field(description="Lowest and highest decode MFU over the runs. [fraction]")
    bandwidth_efficiency_range: tuple[Fraction, Fraction] = Field(description="Lowest and highest bandwidth efficiency over the runs. [fraction]")


class Policy(_Section):
    """Conventions and efficiencies: the assumptions a reviewer should check first."""

    mfu: Fraction | None = Field(
        default=None,
        description="Achieved fraction of peak dense FLOP/s (model FLOPs utilisation), for prefill and decode alike; left out, "
                    "the engine's defaults for the GPU (engine 'runbook': 0.40, the runbook's planning figure). [fraction]")
    prefill_mfu: Fraction | None = Field(
        default=None, description="MFU in prefill, where calibrated; left out, mfu if the plan states it, else the engine's default for the GPU. [fraction]")
    decode_mfu: Fraction | None = Field(
        default=None, description="MFU in decode, where calibrated; left out, mfu if the plan states it, else the engine's default for the GPU. [fraction]")
    expert_efficiency: Fraction | None = Field(
        default=None, description="Grouped expert GEMMs' MFU as a fraction of dense GEMMs' (MoE); left out, the engine's default. [fraction]")
    calibration: Calibration | None = Field(default=None, description="Where calibrated efficiencies came from and their spread; the fleet is then also given as a range.")
    engine: Engine = Field(
        default="vllm",
        description="Serving engine whose memory rule sizes the KV cache and whose defaults set the step budget: 'vllm', 'sglang', "
                    "'trtllm', or 'runbook' (memory x utilisation - weights - overhead_gib, the runbook's convention). [text]",
    )
    memory_utilisation: Fraction = Field(
        default=0.90,
        description="The engine's memory fraction: vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM "
                    "kv_cache_free_gpu_mem_fraction (the runbook's rule: fraction of driver memory). [fraction]",
    )
    overhead_gib: float = Field(default=3.0, ge=0, description="Activations, CUDA graphs and runtime memory per GPU, for engine 'runbook' (the other engines estimate it). [GiB]")
    max_num_batched_tokens: int | None = Field(
        default=None, ge=1, description="Tokens one engine step may carry (vLLM max_num_batched_tokens; chunked prefill); left out, the engine's default for the GPU. [tokens]")
    max_num_seqs: int | None = Field(
        default=None, ge=1, description="Sequences a replica runs at once (vLLM max_num_seqs); left out, the engine's default for the GPU. [sequences]")
    step_overhead_s: float | None = Field(
        default=None, ge=0, lt=1, description="Fixed time per engine step (scheduling, launches, sampling); left out, the engine's default. [s]")
    expert_parallel: int = Field(default=1, ge=1, description="Expert-parallel degree inside a replica (MoE); must divide the TP degree. [GPUs]")
    attention_data_parallel: bool = Field(
        default=False, description="MLA models: each rank of a replica holds its own sequences' KV latent (SGLang/TRT-LLM 'DP attention') instead of a copy of every one. [bool]")
    attention_flops: Literal["causal", "full"] = Field(
        default="causal",
        description="Prefill attention FLOPs: 'causal' (each token attends to those before it, half the square) or 'full' (the runbook's n²). [text]",
    )
    latency_step: Literal["with_prefill", "decode_only"] = Field(
        default="with_prefill",
        description="What the latency path's step carries: the decodes plus their share of prefill ('with_prefill', chunked prefill), "
                    "or the decodes alone ('decode_only', the runbook's roofline). [text]",
    )
    bandwidth_efficiency: Fraction | None = Field(
        default=None,
        description="Achieved fraction of HBM bandwidth; left out, the engine's default for the GPU (engine 'runbook': 0.60, "
                    "from measured 57-66%: measurements N01, G03). [fraction]",
    )
    redundancy: int = Field(default=1, ge=0, description="Spare replicas on top of the load: N+k. [replicas]")
    memory_convention: Literal["paged", "worst_case"] = Field(
        default="paged",
        description="KV per conversation at p50 prompt + p50 output ('paged', the runbook's convention) or at p99 + p99 ('worst_case'). [text]",
    )
    tp: int | None = Field(default=None, ge=1, description="Tensor-parallel degree; left out, the planner picks the one that needs the fewest GPUs. [GPUs]")
    compute_dtype: ComputeDtype | None = Field(
        default=None, description="Tensor-core dtype for the peak; left out: fp8 for fp8 weights, fp4 for fp4 weights where the GPU has it, else bf16. [text]"
    )
    include_ttft_in_time_in_system: bool = Field(default=False, description="Add the TTFT target to time in system (the runbook leaves it out). [bool]")
    decode_attention_flops: bool = Field(default=False, description="Add attention over the cache to decode FLOPs (the runbook leaves it out). [bool]")


class APIPrices(_Section):
    """A managed API's prices for the same model, for the honest comparison."""

    usd_per_mtok_input: float = Field(ge=0, description="Price of input tokens. [USD/Mtok]")
    usd_per_mtok_output: float = Field(ge=0, description="Price of output tokens. [USD/Mtok]")
    provider: str = Field(default="", description="Provider and offer the prices come from. [text]")
    source: str = Field(default="", description="Where and when the prices were read. [text]")


class Costs(_Section):
    """Rent or buy: what the monthly bill counts. Buying needs the figures below; each left out falls back on a dated,
    sourced default (``xlplan/catalog/ownership.yaml``) where a credible one exists, and is otherwise required."""

    mode: Literal["rent", "buy"] = Field(default="rent", description="'rent' (an hourly price) or 'buy' (capex, power and hosting). [text]")
    capex_usd_per_node: float | None = Field(default=None, ge=1000, le=1e9,
                                             description="Buy: price of one purchasing unit, GPUs, host and network; left out, the catalog's dated quote for the GPU where one exists. [USD]")
    depreciation_years: float | None = Field(default=None, gt=0, le=15,
                                             description="Buy: straight-line life, no residual; left out, 5 (AWS servers since 2025). [years]")
    kw_per_gpu: float | None = Field(default=None, gt=0, le=20,
                                     description="Buy: power per GPU at load, its share of the host included; left out, the catalog's (the vendor system's maximum ÷ its GPUs) where known. [kW]")
    pue: float | None = Field(default=None, ge=1, le=3, description="Buy: facility power ÷ IT power; left out, 1.54 (Uptime Institute 2025). [—]")
    usd_per_kwh: float | None = Field(default=None, gt=0, le=2, description="Buy: electricity price; required (prices differ 3x between US states). [USD/kWh]")
    hosting_usd_per_kw_month: float | None = Field(default=None, ge=0, le=5000,
                                                   description="Buy: colocation per kW of IT load; left out, 184.06 (CBRE, North America H2 2024). [USD/kW-month]")
    hardware_ops_usd_per_month: float | None = Field(default=None, ge=0, le=1e9,
                                                     description="Buy: running the hardware: hands on site, spares, support contracts; required (no credible public figure). [USD/month]")
    source: str = Field(default="", description="Where and when the buy figures come from. [text]")

    @model_validator(mode="after")
    def _rent_has_no_buy_figures(self) -> Costs:
        if self.mode == "rent":
            given = [f for f in ("capex_usd_per_node", "depreciation_years", "kw_per_gpu", "pue", "usd_per_kwh",
                                 "hosting_usd_per_kw_month", "hardware_ops_usd_per_month") if getattr(self, f) is not None]
            if given:
                raise ValueError(f"mode is 'rent' but {', '.join(given)} {'is' if len(given) == 1 else 'are'} given; "
                                 "expected mode: buy to use them, or leave them out")
        return self


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
    owners: Owners = Field(default_factory=Owners, description="Who owns each input.")
    sources: Sources = Field(default_factory=Sources, description="Where and when each input was obtained.")

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
        if self.costs.mode == "rent" and self.hardware.usd_per_gpu_hour is None and gpu.usd_per_gpu_hour is None:
            raise ValueError(f"hardware.usd_per_gpu_hour: missing, and {gpu.name} has no catalog price; expected a price in USD/GPU-hour")
        if self.costs.mode == "buy":
            own = catalog.ownership_for(gpu.name) if isinstance(self.hardware.gpu, str) else {}
            missing = []
            if self.costs.capex_usd_per_node is None and "capex_usd_per_node" not in own:
                missing.append(f"capex_usd_per_node (no dated quote for {gpu.name} in the catalog)")
            if self.costs.kw_per_gpu is None and "kw_per_gpu" not in own:
                missing.append(f"kw_per_gpu (no sourced power figure for {gpu.name} in the catalog)")
            if self.costs.usd_per_kwh is None:
                missing.append("usd_per_kwh (e.g. EIA 2023: Virginia commercial 0.0895, Texas industrial 0.066)")
            if self.costs.hardware_ops_usd_per_month is None:
                missing.append("hardware_ops_usd_per_month (0 if none)")
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
        from xlplan import architecture, cost

        model = self.model.resolve()
        size_class = cost.api_size_class(architecture.total_params(model), model.num_experts > 0)
        usd_in, usd_out, n = cost.api_class_price(catalog.api_price_rows(), size_class)
        return APIPrices(usd_per_mtok_input=usd_in, usd_per_mtok_output=usd_out,
                         provider=f"median of {n} listed offers for {size_class} models (size-class match, not this model's own price)",
                         source="xlplan/data/api_prices.csv: provider pages and price datasets, 2025-2026, each row dated")

    def ownership(self) -> dict:
        """Buy mode: the figures used, each ``{value, source}`` (the plan's, else the catalog default). ``{}`` in rent mode.

        Returns
        -------
        dict
            ``capex_usd_per_node`` [USD], ``depreciation_years`` [years], ``kw_per_gpu`` [kW], ``pue`` [1],
            ``usd_per_kwh`` [USD/kWh], ``hosting_usd_per_kw_month`` [USD/kW-month] and ``hardware_ops_usd_per_month``
            [USD/month], each ``{"value": ..., "source": ...}``; a catalog node price is scaled to this plan's GPUs per node.

        References
        ----------
        ``xlplan/catalog/ownership.yaml``: dated, sourced defaults (AWS 5-year server depreciation, Uptime Institute
        PUE, CBRE colocation per kW) and per-GPU node prices and power.
        """
        if self.costs.mode != "buy":
            return {}
        gpu = self.hardware.resolve()
        own = catalog.ownership_for(gpu.name) if isinstance(self.hardware.gpu, str) else {}
        defaults = catalog.ownership_defaults()
        out = {}
        for field in ("capex_usd_per_node", "depreciation_years", "kw_per_gpu", "pue", "usd_per_kwh", "hosting_usd_per_kw_month",
                      "hardware_ops_usd_per_month"):
            v = getattr(self.costs, field)
            if v is not None:
                out[field] = {"value": float(v), "source": self.costs.source or "plan"}
                continue
            d = own.get(field) or defaults.get(field)
            value = float(d["value"])
            if field == "capex_usd_per_node" and d.get("gpus") and d["gpus"] != self.hardware.gpus_per_node:
                value = value / d["gpus"] * self.hardware.gpus_per_node  # the quote's price per GPU, times this unit's GPUs
            out[field] = {"value": value, "source": f"{d['source']} ({d['date']})"}
        return out

    @model_validator(mode="after")
    def _tp_fits_node(self) -> Plan:
        tp = self.policy.tp
        if tp is not None and (tp > self.hardware.gpus_per_node or self.hardware.gpus_per_node % tp):
            raise ValueError(
                f"policy.tp = {tp} must divide hardware.gpus_per_node = {self.hardware.gpus_per_node} "
                "(tensor-parallel groups stay inside a node)"
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
