"""The workbook's inputs: which defined name holds which plan field, and how to read it back.

One table serves the writer (what to put in each input cell, with its unit,
validation and note) and the reader (how to turn the cell back into a plan field).
"""

from __future__ import annotations

from dataclasses import dataclass

from xlplan import catalog
from xlplan.schema.plan import Plan
from xlplan.serving.engines import ENGINES

INPUTS_SHEET = "1 Inputs"


@dataclass(frozen=True)
class InputSpec:
    """One input cell of ``1 Inputs``."""

    name: str  # defined name
    path: tuple[str, ...]  # plan field it holds
    label: str
    unit: str
    kind: str  # number | fraction | fraction0 | whole | whole0 | text | choice | bool
    owner: str  # owners.<section> of the input
    note: str
    required: bool = True
    choices: str | None = None  # defined name of the drop-down list
    fmt: str | None = None
    blank_is_null: bool = False  # a blank cell is the field's null (not its default): policy.memory_utilisation's engine default


INPUT_SPECS: tuple[tuple[str, tuple[InputSpec, ...]], ...] = (
    ("Forecast — step 1: the traffic at peak, lengths as percentiles", (
        InputSpec("PeakRate", ("forecast", "peak_rps"), "Peak arrival rate", "requests/s", "number", "forecast",
                  "The busiest sustained rate the fleet must carry (peak for the fleet, average for the bill).", fmt="#,##0.00"),
        InputSpec("PromptP50", ("forecast", "prompt_tokens", "p50"), "Prompt length p50", "tokens", "number", "forecast",
                  "Median prompt (input) length. Give p50, p95, p99 — never the mean.", fmt="#,##0"),
        InputSpec("PromptP95", ("forecast", "prompt_tokens", "p95"), "Prompt length p95", "tokens", "number", "forecast",
                  "95th-percentile prompt length, at least p50: the tail drives prefill compute.", fmt="#,##0"),
        InputSpec("PromptP99", ("forecast", "prompt_tokens", "p99"), "Prompt length p99", "tokens", "number", "forecast",
                  "99th-percentile prompt length, at least p95; may be left blank.", required=False, fmt="#,##0"),
        InputSpec("OutputP50", ("forecast", "output_tokens", "p50"), "Output length p50", "tokens", "number", "forecast",
                  "Median output length. Give p50, p95, p99 — never the mean.", fmt="#,##0"),
        InputSpec("OutputP95", ("forecast", "output_tokens", "p95"), "Output length p95", "tokens", "number", "forecast",
                  "95th-percentile output length, at least p50.", fmt="#,##0"),
        InputSpec("OutputP99", ("forecast", "output_tokens", "p99"), "Output length p99", "tokens", "number", "forecast",
                  "99th-percentile output length, at least p95; may be left blank.", required=False, fmt="#,##0"),
        InputSpec("AvgUtilisation", ("forecast", "average_utilisation"), "Average utilisation", "fraction", "fraction", "forecast",
                  "Average load over a month as a fraction of peak: 0.40, not 40. Sizes the bill, not the fleet.", fmt="0%"),
        InputSpec("ArrivalCV2", ("forecast", "arrival_cv2"), "Burstiness of arrivals (squared CV of the gaps)", "1", "number",
                  "forecast", "1 for Poisson arrivals; above 1 bursty (4: gaps vary twice as much). Sizes the queueing path.",
                  fmt="0.00"),
        InputSpec("PrefixReuse", ("forecast", "prefix_reuse"), "Prefix reuse", "fraction", "fraction0", "forecast",
                  "Fraction of prompt compute served from the prefix cache: 0 unless measured on real traffic (0.30, not 30).", fmt="0%"),
    )),
    ("Promise — step 2: the latency targets, at a stated percentile", (
        InputSpec("TTFTTarget", ("promise", "ttft_s"), "Time-to-first-token target", "s", "number", "promise",
                  "Longest acceptable wait for the first token at the stated percentile.", fmt="0.000"),
        InputSpec("ITLInput", ("promise", "itl_s"), "Inter-token target", "s/token", "number", "promise",
                  "Longest gap between streamed tokens (0.05 s = 20 tokens/s). Give this or the streaming speed below, not both.",
                  required=False, fmt="0.0000"),
        InputSpec("TokensPerSecondInput", ("promise", "tokens_per_s"), "or streaming speed", "tokens/s", "number", "promise",
                  "Streaming speed per request; the alternative to the inter-token target (20 tokens/s = 0.05 s).",
                  required=False, fmt="#,##0.0"),
        InputSpec("PromisePercentile", ("promise", "percentile"), "Percentile of the targets", "percent", "number", "promise",
                  "The percentile at which the targets hold, e.g. 95 for p95 (a percent, 0-100).", fmt="0"),
    )),
    ("Model and precision", (
        InputSpec("ModelKey", ("model", "name"), "Model", "catalog key", "choice", "model",
                  "Pick from the list (the Models sheet, with sources). A model given inline in the plan appears there as '(from plan)'.",
                  choices="ModelKeys"),
        InputSpec("WeightsDtype", ("model", "weights_dtype"), "Weight precision", "dtype", "choice", "model",
                  "bf16 unless the checkpoint is quantised (fp8, int4, mxfp4, nvfp4).", choices="WeightDtypes"),
        InputSpec("KVDtype", ("model", "kv_dtype"), "KV-cache precision", "dtype", "choice", "model",
                  "bf16 unless the server runs an fp8 cache (vLLM --kv-cache-dtype fp8).", choices="KVDtypes"),
    )),
    ("Hardware and price", (
        InputSpec("GPUKey", ("hardware", "gpu"), "GPU", "catalog key", "choice", "model",
                  "Pick from the list (the GPUs sheet, with sources).", choices="GPUKeys"),
        InputSpec("GPUsPerNode", ("hardware", "gpus_per_node"), "Purchasing unit", "GPUs", "whole", "model",
                  "GPUs in the unit you buy or rent by (a node or instance of 8); tensor-parallel groups stay inside it.", fmt="0"),
        InputSpec("GPUUSDPerHourInput", ("hardware", "usd_per_gpu_hour"), "GPU price paid", "USD/GPU-hour", "number", "pricing",
                  "Your negotiated price; leave blank to use the catalog's representative price (see GPUs sheet).",
                  required=False, fmt='"$"#,##0.00'),
        InputSpec("HoursPerMonth", ("hardware", "hours_per_month"), "Billed hours per month", "h/month", "number", "pricing",
                  "8,760 h / 12 = 730 for an always-on fleet.", fmt="#,##0"),
        InputSpec("OpsUSDPerMonth", ("hardware", "ops_usd_per_month"), "Engineering and on-call", "USD/month", "number0", "pricing",
                  "Cost of running it yourself, counted in the break-even against the API; 0 if not counted.", fmt='"$"#,##0'),
    )),
    ("Policy — conventions and efficiencies a reviewer should check first", (
        InputSpec("Engine", ("policy", "engine"), "Serving engine", " | ".join(ENGINES), "choice", "model",
                  "Whose memory rule sizes the KV cache and whose defaults set efficiencies and budgets; 'runbook' is the "
                  "runbook's convention (memory x utilisation - weights - overhead).", choices="EngineNames"),
        InputSpec("MFUInput", ("policy", "mfu"), "Model FLOPs utilisation", "fraction", "fraction", "model",
                  "Achieved fraction of peak dense FLOP/s for prefill and decode (0.40, not 40); blank: the engine's defaults "
                  "for the GPU (the runbook's 0.40 for engine 'runbook').", required=False, fmt="0%"),
        InputSpec("PrefillMFUInput", ("policy", "prefill_mfu"), "MFU in prefill (calibrated)", "fraction", "fraction", "model",
                  "Leave blank to use the MFU above; `xlplan calibrate` fits it from your benchmark (0.45, not 45).",
                  required=False, fmt="0%"),
        InputSpec("DecodeMFUInput", ("policy", "decode_mfu"), "MFU in decode (calibrated)", "fraction", "fraction", "model",
                  "Leave blank to use the MFU above; `xlplan calibrate` fits it from your benchmark (0.35, not 35).",
                  required=False, fmt="0%"),
        InputSpec("MemoryUtilisation", ("policy", "memory_utilisation"), "GPU memory the server may use", "fraction", "fraction", "model",
                  "The engine's memory fraction: vLLM gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM "
                  "kv_cache_free_gpu_mem_fraction (0.90, not 90); blank: the engine's own default (0.90; SGLang's by the "
                  "GPU's memory and the TP degree).", required=False, fmt="0%", blank_is_null=True),
        InputSpec("OverheadGiB", ("policy", "overhead_gib"), "Runtime overhead per GPU", "GiB", "number0", "model",
                  "Activations, CUDA graphs and runtime memory for engine 'runbook' (3 GiB in the runbook's example); the "
                  "other engines estimate it.", fmt="0.00"),
        InputSpec("BandwidthEfficiencyInput", ("policy", "bandwidth_efficiency"), "Bandwidth efficiency", "fraction", "fraction",
                  "model", "Achieved fraction of HBM bandwidth; blank: the engine's default for the GPU (0.60 for 'runbook'; "
                  "public measurements show 57-66%).", required=False, fmt="0%"),
        InputSpec("StepOverheadInput", ("policy", "step_overhead_s"), "Time per engine step", "s", "number0", "model",
                  "Fixed time per step for scheduling, kernel launches and sampling; blank: the engine's default.",
                  required=False, fmt="0.0000"),
        InputSpec("ExpertEfficiencyInput", ("policy", "expert_efficiency"), "Expert GEMM efficiency (MoE)", "fraction", "fraction",
                  "model", "Grouped expert GEMMs' MFU as a fraction of dense GEMMs'; blank: the engine's default.",
                  required=False, fmt="0%"),
        InputSpec("MaxNumBatchedTokensInput", ("policy", "max_num_batched_tokens"), "Tokens per engine step", "tokens", "whole",
                  "model", "vLLM max_num_batched_tokens (chunked prefill); blank: the engine's default for the GPU.",
                  required=False, fmt="#,##0"),
        InputSpec("LongPrefillThresholdInput", ("policy", "long_prefill_token_threshold"), "Prompt tokens per request per step",
                  "tokens", "whole0", "model", "vLLM long_prefill_token_threshold: a long prompt is chunked at it and the "
                  "rest of the step goes to the prompts behind it; blank or 0: off (vLLM's default). vLLM and 'runbook' "
                  "only: SGLang's and TensorRT-LLM's chunk is the step budget.", required=False, fmt="#,##0"),
        InputSpec("MaxNumSeqsInput", ("policy", "max_num_seqs"), "Sequences per replica", "sequences", "whole", "model",
                  "vLLM max_num_seqs; blank: the engine's default for the GPU.", required=False, fmt="#,##0"),
        InputSpec("ExpertParallel", ("policy", "expert_parallel"), "Expert-parallel degree", "GPUs", "whole", "model",
                  "MoE experts spread over this many GPUs of a replica (must divide the TP degree); 1 splits them by TP; "
                  "blank: 1 here, and the configuration search also tries the experts over the whole replica.",
                  required=False, fmt="0"),
        InputSpec("AttentionDataParallel", ("policy", "attention_data_parallel"), "DP attention (MLA)", "TRUE | FALSE", "bool",
                  "model", "Each rank holds its own sequences' KV cache (SGLang/TensorRT-LLM DP attention); blank: off "
                  "here, and the configuration search also tries it on SGLang and TensorRT-LLM.", required=False,
                  choices="Booleans"),
        InputSpec("AttentionFLOPsKind", ("policy", "attention_flops"), "Prefill attention FLOPs", "causal | full", "choice", "model",
                  "'causal': each token attends to those before it; 'full': the runbook's n².", choices="AttentionFLOPsKinds"),
        InputSpec("LatencyStep", ("policy", "latency_step"), "Latency check's step", "with_prefill | decode_only", "choice", "model",
                  "What one step carries in the latency check: decodes and their share of prefill, or decodes alone (the runbook).",
                  choices="LatencySteps"),
        InputSpec("Redundancy", ("policy", "redundancy"), "Spare replicas (N+k)", "replicas", "whole0", "model",
                  "Replicas on top of the load so one can fail or be drained: 1 for N+1.", fmt="0"),
        InputSpec("Routing", ("policy", "routing"), "Load balancer", "least_loaded | round_robin | random | least_kv", "choice", "model",
                  "How requests reach the replicas: 'least_loaded' (to the one holding fewest requests), 'round_robin' "
                  "(each in turn), 'random' or 'least_kv' (to the one whose cache will hold the fewest tokens); the queueing "
                  "path and the simulation route by it.", choices="Routings"),
        InputSpec("MemoryConvention", ("policy", "memory_convention"), "KV sizing convention", "paged | worst_case", "choice", "model",
                  "'paged': p50 prompt + p50 output per conversation (the runbook); 'worst_case': p99 + p99.",
                  choices="MemoryConventions"),
        InputSpec("TPInput", ("policy", "tp"), "Tensor-parallel degree", "GPUs", "whole", "model",
                  "Leave blank to let the planner pick the degree that needs the fewest GPUs; must divide the purchasing unit.",
                  required=False, choices="TPDegrees", fmt="0"),
        InputSpec("ComputeDtypeInput", ("policy", "compute_dtype"), "Compute dtype of the peak", "dtype", "choice", "model",
                  "Leave blank: fp8 peak for fp8 weights, fp4 for fp4 weights where the GPU has it, else bf16.",
                  required=False, choices="ComputeDtypes"),
        InputSpec("CalibrationSource", ("policy", "calibration", "source"), "Calibrated from", "text", "text", "model",
                  "Written by `xlplan calibrate`: the benchmark files the efficiencies were fitted to; blank if not calibrated.",
                  required=False),
        InputSpec("CalibrationRuns", ("policy", "calibration", "runs"), "Benchmark runs fitted", "runs", "whole", "model",
                  "How many runs the calibration used.", required=False, fmt="0"),
        InputSpec("PrefillMFULow", ("policy", "calibration", "prefill_mfu_range", "0"), "Prefill MFU, low end", "fraction",
                  "fraction", "model", "The spread of the calibration: the fleet is also given at the low and high ends.",
                  required=False, fmt="0%"),
        InputSpec("PrefillMFUHigh", ("policy", "calibration", "prefill_mfu_range", "1"), "Prefill MFU, high end", "fraction",
                  "fraction", "model", "The calibration's 95% interval (earlier calibrations: the lowest and highest run).", required=False, fmt="0%"),
        InputSpec("DecodeMFULow", ("policy", "calibration", "decode_mfu_range", "0"), "Decode MFU, low end", "fraction",
                  "fraction", "model", "The calibration's 95% interval (earlier calibrations: the lowest and highest run).", required=False, fmt="0%"),
        InputSpec("DecodeMFUHigh", ("policy", "calibration", "decode_mfu_range", "1"), "Decode MFU, high end", "fraction",
                  "fraction", "model", "The calibration's 95% interval (earlier calibrations: the lowest and highest run).", required=False, fmt="0%"),
        InputSpec("BandwidthEfficiencyLow", ("policy", "calibration", "bandwidth_efficiency_range", "0"),
                  "Bandwidth efficiency, low end", "fraction", "fraction", "model", "The calibration's 95% interval (earlier calibrations: the lowest and highest run).",
                  required=False, fmt="0%"),
        InputSpec("BandwidthEfficiencyHigh", ("policy", "calibration", "bandwidth_efficiency_range", "1"),
                  "Bandwidth efficiency, high end", "fraction", "fraction", "model", "The calibration's 95% interval (earlier calibrations: the lowest and highest run).",
                  required=False, fmt="0%"),
        InputSpec("IncludeTTFT", ("policy", "include_ttft_in_time_in_system"), "Add TTFT to time in system", "TRUE | FALSE", "bool", "model",
                  "The runbook leaves it out (FALSE).", choices="Booleans"),
        InputSpec("DecodeAttention", ("policy", "decode_attention_flops"), "Count attention FLOPs in decode", "TRUE | FALSE", "bool", "model",
                  "The runbook counts 2 x active parameters per token only (FALSE).", choices="Booleans"),
        InputSpec("EngineVersion", ("policy", "engine_version"), "Engine release", "text", "text", "model",
                  "The release you will deploy, e.g. 0.11.0; one older than the fitted defaults describe (vLLM before 0.8, "
                  "SGLang before 0.5) is a warning to calibrate; blank: not stated.", required=False),
    )),
    ("How the fleet is paid for — what the bill counts", (
        InputSpec("CostMode", ("costs", "mode"), "Paid as", "rent_per_gpu | rent_per_node | buy", "choice", "pricing",
                  "rent_per_gpu: GPU-hours of the fleet with redundancy at the price above. rent_per_node: whole nodes "
                  "(instances) at that price. buy: the nodes bought, at their capex, power and hosting below.",
                  choices="CostModes"),
        InputSpec("CapexUSDPerNodeInput", ("costs", "capex_usd_per_node"), "Buy: server price per node", "USD",
                  "number", "pricing", "GPUs, host and NICs of one node; blank: the catalog's dated quote where one exists.",
                  required=False, fmt='"$"#,##0'),
        InputSpec("DepreciationYearsInput", ("costs", "depreciation_years"), "Buy: depreciation life", "years", "number",
                  "pricing", "The capex less its residual is recovered over it; blank: 5 (AWS servers since 2025).", required=False, fmt="0.0"),
        InputSpec("KWPerGPUInput", ("costs", "kw_per_gpu"), "Buy: maximum power per GPU", "kW", "number", "pricing",
                  "Its share of the host included, what colocation contracts; blank: the vendor system's maximum ÷ its GPUs where known.", required=False,
                  fmt="0.000"),
        InputSpec("PUEInput", ("costs", "pue"), "Buy: PUE", "1", "number", "pricing",
                  "Facility power ÷ IT power, at least 1; blank: 1.54 (Uptime Institute 2025).", required=False, fmt="0.00"),
        InputSpec("USDPerKWhInput", ("costs", "usd_per_kwh"), "Buy: electricity price", "USD/kWh", "number", "pricing",
                  "Required to buy: prices differ 3x between US states (EIA 2023: Virginia commercial 0.0895).",
                  required=False, fmt='"$"#,##0.0000'),
        InputSpec("HostingUSDPerKWMonthInput", ("costs", "hosting_usd_per_kw_month"), "Buy: colocation", "USD/kW-month",
                  "number0", "pricing", "Per kW of IT load; blank: 184.06 (CBRE, North America H2 2024).", required=False,
                  fmt='"$"#,##0.00'),
        InputSpec("HardwareOpsUSDPerMonthInput", ("costs", "hardware_ops_usd_per_month"), "Buy: hardware operations",
                  "USD/month", "number0", "pricing", "Required to buy (0 if none): hands on site, spares, support contracts.",
                  required=False, fmt='"$"#,##0'),
        InputSpec("NetworkUSDPerNodeInput", ("costs", "network_usd_per_node"), "Buy: network share per node", "USD", "number0",
                  "pricing", "Switches, optics and cables per node; blank: 15,060 (one-layer 400 Gb/s fabric, 2024-08); 0 where the "
                  "server price includes it.", required=False, fmt='"$"#,##0'),
        InputSpec("StorageUSDPerNodeInput", ("costs", "storage_usd_per_node"), "Buy: storage per node", "USD", "number0",
                  "pricing", "Beyond the server's own drives; blank: 0 (its NVMe holds the weights).", required=False, fmt='"$"#,##0'),
        InputSpec("InstallationUSDPerNodeInput", ("costs", "installation_usd_per_node"), "Buy: installation and shipping per node",
                  "USD", "number0", "pricing", "Racking, cabling, shipping, commissioning, sales tax; blank: 0 (not stated).",
                  required=False, fmt='"$"#,##0'),
        InputSpec("ResidualFractionInput", ("costs", "residual_fraction"), "Buy: residual value", "fraction", "fraction0",
                  "pricing", "Resale at the end of the life, of the capex (0.25, not 25); blank: 0.78 ^ life in years.",
                  required=False, fmt="0.0%"),
        InputSpec("CostOfCapitalInput", ("costs", "cost_of_capital"), "Buy: cost of capital", "1/year", "fraction0", "pricing",
                  "Nominal a year, compounded monthly (0.08, not 8); blank: an assumed 8%.", required=False, fmt="0.0%"),
        InputSpec("PowerDraw", ("costs", "power_draw"), "Buy: power counted", "typical | maximum", "choice", "pricing",
                  "typical: the typical draw under load; maximum: the vendor system's maximum every hour. Colocation is "
                  "priced at the maximum either way.", choices="PowerDraws"),
        InputSpec("KWPerGPUTypicalInput", ("costs", "kw_per_gpu_typical"), "Buy: typical power per GPU", "kW", "number", "pricing",
                  "Under serving load, host share included; blank: the catalog's where known, else the maximum.", required=False,
                  fmt="0.000"),
        InputSpec("LicenceUSDPerGPUYearInput", ("costs", "licence_usd_per_gpu_year"), "Buy: software licence", "USD/GPU-year",
                  "number0", "pricing", "NVIDIA AI Enterprise lists 4,500; blank: 0 (open-source engines need none).",
                  required=False, fmt='"$"#,##0'),
        InputSpec("PriceMaxAgeMonths", ("costs", "price_max_age_months"), "Price older than", "months", "whole", "pricing",
                  "A price dated earlier is flagged on the note with its date.", fmt="0"),
        InputSpec("CostsSource", ("costs", "source"), "Buy figures' source", "text", "text", "pricing",
                  "Where and when the capex, power and hosting figures come from.", required=False),
    )),
    ("Managed API — the honest comparison", (
        InputSpec("APIInputUSDPerMTok", ("api", "usd_per_mtok_input"), "API input price", "USD/Mtok", "number0", "pricing",
                  "The provider's price per million input tokens for a comparable model; blank: the median listed price of models of this size class.",
                  required=False, fmt='"$"#,##0.000'),
        InputSpec("APIOutputUSDPerMTok", ("api", "usd_per_mtok_output"), "API output price", "USD/Mtok", "number0", "pricing",
                  "Price per million output tokens; give both prices or neither.", required=False, fmt='"$"#,##0.000'),
        InputSpec("APIProvider", ("api", "provider"), "API provider and offer", "text", "text", "pricing",
                  "Who sells it, which model and tier.", required=False),
        InputSpec("APISource", ("api", "source"), "API price source", "text", "text", "pricing",
                  "Where and when the prices were read.", required=False),
    )),
)

OWNER_SECTIONS = (("forecast", "Forecast"), ("promise", "Promise"), ("model", "Model and hardware"), ("pricing", "Pricing"))


LEGACY_INPUTS = (
    InputSpec("Billing", ("hardware", "billing"), "What the bill counts", "rented | purchased", "choice", "pricing",
              "Workbooks built before costs.mode named renting per node: read, and folded into costs.mode as an older "
              "plan file's is (xlplan.schema.fields.migrate_older_plan).", required=False),
)
"""Inputs of older workbooks, which `xlplan read` reads where their defined name exists."""


def all_inputs() -> list[InputSpec]:
    """Every input spec, in sheet order."""
    return [i for _, block in INPUT_SPECS for i in block]


def model_row_key(plan: Plan) -> str:
    """The Models-sheet key the plan's model is shown under (a catalog key, or '<name> (from plan)')."""
    mc = plan.model
    if mc.spec is None and mc.name is not None:
        return catalog.model_key(mc.name)
    return f"{mc.resolve().name} (from plan)"


def gpu_row_key(plan: Plan) -> str:
    """The GPUs-sheet key the plan's GPU is shown under."""
    g = plan.hardware.gpu
    if isinstance(g, str):
        return catalog.gpu_key(g)
    return f"{g.name} (from plan)"


def input_value(plan: Plan, spec: InputSpec):
    """The value a plan gives an input cell (None for blank)."""
    if spec.name == "ModelKey":
        return model_row_key(plan)
    if spec.name == "GPUKey":
        return gpu_row_key(plan)
    obj = plan
    if spec.path[0] == "api":  # the plan's API prices, or the size-class match it falls back on (named as such)
        obj, spec_path = plan.api_used(), spec.path[1:]
        for part in spec_path:
            obj = getattr(obj, part)
        return obj
    for part in spec.path:
        if obj is None:
            return None
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj
