"""Shared pieces of the workbook layout: tab names, number formats, the engine's figures the caches read (`Engine`), the row writer."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xlplan import catalog, distributions, fleet
from xlplan.catalog import specs
from xlplan.catalog.specs import GPUSpec, ModelSpec
from xlplan.excel.cells import Book, Cell, Sheet
from xlplan.excel.inputs import gpu_row_key, model_row_key
from xlplan.money import cost
from xlplan.plan import tp_choice
from xlplan.plan.engine_settings import RUNBOOK_UNBOUNDED
from xlplan.plan.scenario import Scenario
from xlplan.schema.plan import Plan
from xlplan.schema.result import PlanResult
from xlplan.serving import engines, memory, queueing
from xlplan.units import GIB, MILLION, SECONDS_PER_HOUR, TERA

if TYPE_CHECKING:
    from xlplan.excel.figures import Figures
    from xlplan.schema.steps import Solution

CATALOG_FIRST_ROW = 5
"""First data row of the GPUs and Models sheets (title, purpose and a header above it)."""


SIX_TABS = ("1 Inputs", "2 Model", "3 Constraints", "4 Fleet", "5 Cost", "6 Sensitivities")


SUPPORT_TABS = ("Checks", "Constants", "GPUs", "Models", "Change log")


SUMMARY_TAB = "Summary"
"""The first sheet: the answer, by formula over the six tabs' names."""


DECISION_TABS = ("Options", "Schedule")
"""After the six tabs: which hardware (every catalog GPU and format) and when to order (month by month)."""

REVIEW_TAB = "Review"
"""A monthly review's tab (`xlplan review --workbook`): after the six tabs, before the decision tabs."""


NONE = "none"  # a path that cannot be met at this TP degree


NA = "n/a"


FMT = {
    # Units are shown once, in the Unit column (or a header's [unit]); formats carry none, bar the dollar sign.
    "usd": '"$"#,##0',
    "usd2": '"$"#,##0.00',
    "usd_mtok": '"$"#,##0.000',
    "gib": "#,##0.000",
    "tokens": "#,##0",
    "tokens_month": "#,##0",
    "pct": "0%",
    "int": "#,##0",
    "num": "#,##0.00",
    "num4": "#,##0.0000",
    "sci": "0.000E+00",
    "s": "0.0000",
    "s2": "0.00",
    "tflops": "#,##0.0",
    "bytes": "#,##0",
    "gpus": "#,##0",
    "gpus2": "#,##0.00",
    "sigma": "0.0000",
    "value": "#,##0.0###",  # an input quoted as typed: 40.0, 0.05, 2,000.0
    "date": "yyyy-mm-dd",  # a date cell (cells.date_serial): the file stores the code once, each locale shows it
}


WEIGHT_DTYPES = tuple(memory.WEIGHT_BYTES_PER_PARAM)


KV_DTYPES = tuple(memory.KV_BYTES_PER_ELEMENT)


MODEL_COLUMNS: tuple[tuple[str, str, str], ...] = (
    # (ModelSpec field, defined name of the 2 Model row, unit)
    ("attention", "AttentionKind", "gqa | mla"),
    ("num_hidden_layers", "Layers", "layers"),
    ("hidden_size", "Hidden", "elements"),
    ("num_attention_heads", "Heads", "heads"),
    ("num_key_value_heads", "KVHeads", "heads"),
    ("head_dim", "HeadDim", "elements"),
    ("intermediate_size", "Intermediate", "elements"),
    ("vocab_size", "Vocab", "tokens"),
    ("tie_word_embeddings", "TieEmbeddings", "TRUE | FALSE"),
    ("attention_bias", "AttentionBias", "TRUE | FALSE"),
    ("attention_out_bias", "AttentionOutBias", "TRUE | FALSE"),
    ("qk_norm", "QKNorm", "TRUE | FALSE"),
    ("norms_per_layer", "NormsPerLayer", "vectors"),
    ("num_experts", "Experts", "experts"),
    ("experts_per_token", "ExpertsPerToken", "experts"),
    ("shared_experts", "SharedExperts", "experts"),
    ("moe_intermediate_size", "MoEIntermediate", "elements"),
    ("first_dense_layers", "FirstDenseLayers", "layers"),
    ("expert_bias", "ExpertBias", "TRUE | FALSE"),
    ("router_bias", "RouterBias", "TRUE | FALSE"),
    ("q_lora_rank", "QLoraRank", "elements"),
    ("kv_lora_rank", "KVLoraRank", "elements"),
    ("qk_nope_head_dim", "QKNopeDim", "elements"),
    ("qk_rope_head_dim", "QKRopeDim", "elements"),
    ("v_head_dim", "VHeadDim", "elements"),
    ("sliding_window", "SlidingWindow", "tokens"),
    ("sliding_window_layers", "SlidingWindowLayers", "layers"),
    ("vision_params", "VisionParams", "parameters"),
    ("max_context_tokens", "MaxContext", "tokens"),
    ("moe_layer_step", "MoELayerStep", "layers"),
)


MODEL_EXTRA = ("source", "hf_id", "published_params_b", "published_active_params_b")
"""Models-sheet columns after the config fields: provenance, not used by formulas."""


GPU_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("memory_gib", "GPUMemoryGiB", "GiB"),
    ("bf16_tflops", "GPUBF16TFLOPS", "TFLOP/s"),
    ("fp8_tflops", "GPUFP8TFLOPS", "TFLOP/s"),
    ("fp4_tflops", "GPUFP4TFLOPS", "TFLOP/s"),
    ("hbm_tbps", "GPUHBMTBps", "TB/s"),
    ("usd_per_gpu_hour", "GPUCatalogUSDPerHour", "USD/GPU-hour"),
    ("cuda_visible_gib", "GPUCatalogVisibleGiB", "GiB"),
    ("interconnect_gbps", "GPUCatalogLinkGBps", "GB/s"),
    ("collective_latency_us", "GPUCatalogLatencyUs", "us"),
)

GPU_DERIVED: tuple[tuple[str, str, str], ...] = (
    ("vendor", "GPUVendor", "nvidia | amd | intel"),
    ("vllm_max_num_seqs", "GPUDefaultMaxNumSeqs", "sequences"),
    ("vllm_max_num_batched_tokens", "GPUDefaultMaxNumBatchedTokens", "tokens"),
    ("owned_capex_usd_per_gpu", "GPUOwnedCapexUSDPerGPU", "USD/GPU"),
    ("owned_kw_per_gpu", "GPUOwnedKWPerGPU", "kW"),
    ("owned_kw_per_gpu_typical", "GPUOwnedKWPerGPUTypical", "kW"),
)
"""GPUs-sheet columns after the catalog figures: what the engine derives from the GPU (its vendor, vLLM's default budgets)."""


def gpu_derived(fig, spec: GPUSpec) -> list:
    """The GPU_DERIVED values for one GPU, as the workbook's figures computed them (:func:`xlplan.excel.book.figures`)."""
    return list(fig.gpu_derived[spec.name])


ERLANG_ROWS = 16
"""Rows of each Erlang C table: a coarse one (every ⌈√a ÷ 4⌉-th replica count, spanning about 4√a above the offered
load a) and a fine one (every count across the coarse row found): exact for a up to 4,096. [rows]"""

ERLANG_COARSE_DIVISOR = 4.0
"""The coarse table's step is ⌈√a ÷ this⌉ replicas. [1]"""


CONSTANTS: tuple[tuple[str, str, float, str, str], ...] = (
    ("GiB", "Bytes per GiB", float(GIB), "bytes/GiB", "2^30: CUDA, vLLM and nvidia-smi's MiB figures are binary."),
    ("TeraUnit", "FLOP per TFLOP, bytes/s per TB/s", TERA, "1", "10^12: TFLOP/s and TB/s are decimal."),
    ("TokensPerMillion", "Tokens per million tokens", MILLION, "tokens/Mtok", "API prices are per million tokens."),
    ("TokensPerBillion", "Tokens per billion tokens", 1e9, "tokens/billion", "Monthly volumes are quoted in billions."),
    ("SecondsPerHour", "Seconds per hour", SECONDS_PER_HOUR, "s/h", ""),
    ("MonthsPerYear", "Months per year", 12.0, "months/year", "The annual view: 12 months of the monthly bill."),
    ("MonthsPerQuarter", "Months per quarter", 3.0, "months/quarter", "A fiscal quarter: three months of the Schedule's cash."),
    ("PercentP50", "The median, as a percentile", 50.0, "percent", "The promise's percentile that reads the stated p50."),
    ("PercentP95", "The 95th percentile", 95.0, "percent", "The promise's percentile that reads the stated p95."),
    ("PercentP99", "The 99th percentile", 99.0, "percent", "The promise's percentile that reads the stated p99."),
    ("PercentPerFraction", "Percent per unit fraction", 100.0, "percent", "A percentile of 95 is the fraction 0.95."),
    ("APIParityFactor", "Self-hosting and the API cost about the same within", cost.API_PARITY_FACTOR, "1", "Else 1.0× would read as none."),
    ("RoundingTolerance", "Rounding tolerance", fleet.ROUNDING_TOLERANCE, "fraction",
     "Slack before rounding up, so 4.000000000001 GPUs of float noise counts as 4."),
    ("ZScore95", "Standard normal quantile at 0.95", distributions.Z95, "1", "NORMSINV(0.95); fits the lognormal through p95."),
    ("ZScore99", "Standard normal quantile at 0.99", distributions.Z99, "1", "NORMSINV(0.99); fits the lognormal through p99."),
    ("FLOPsPerMAC", "FLOPs per multiply-accumulate", 2.0, "FLOP", "The runbook's 2 x N FLOPs per token."),
    ("AttentionFLOPs", "Attention FLOPs per score element per layer", 4.0, "FLOP",
     "QK^T and AV, one multiply-accumulate (2 FLOPs) each."),
    ("KVTensors", "Cached tensors per token per layer", 2.0, "tensors", "K and V."),
    ("GatedMLPMatrices", "Matrices in a gated MLP", 3.0, "matrices", "gate, up and down projections."),
    ("UnquantizedBytesPerParam", "Bytes per unquantised parameter", memory.UNQUANTIZED_BYTES_PER_PARAM, "bytes/parameter",
     "Embeddings, output head and vision tower stay 16-bit in quantised checkpoints."),
    ("MeanDecodePosition", "Mean position in the output while decoding", 0.5, "fraction of output",
     "Used when attention FLOPs in decode are counted, and for the mean cached context of a decoding sequence."),
    ("CausalPairsDivisor", "Causal attention: pairs n(n+1)/2", 2.0, "1", "Each token attends to those before it."),
    ("GBUnit", "Bytes per GB", 1e9, "bytes/GB", "10^9: interconnect GB/s are decimal."),
    ("ActivationBytes", "Bytes per activation on the wire", tp_choice.ACTIVATION_BYTES, "bytes", "bf16 all-reduces."),
    ("BF16Bytes", "Bytes per bf16 element", 2.0, "bytes", ""),
    ("MLPUpProjections", "Gate and up projections", 2.0, "matrices", "The MLP's intermediate is twice its width before SiLU."),
    ("AllReducesPerLayer", "Tensor-parallel all-reduces per layer", 2.0, "1", "After attention and after the MLP."),
    ("AllToAllsPerMoELayer", "Expert-parallel all-to-alls per MoE layer", 2.0, "1", "Dispatch and combine."),
    ("RingAllReduceTraffic", "Ring all-reduce traffic factor", 2.0, "1", "A ring moves 2(n-1)/n of the data per GPU."),
    ("NonTorchGiB", "Non-PyTorch memory, one GPU", engines.NON_TORCH_GIB[1], "GiB", "vLLM start-up logs (llm-d)."),
    ("NonTorchTPGiB", "Non-PyTorch memory, TP > 1", engines.NON_TORCH_GIB["tp"], "GiB", "With NCCL buffers (llm-d logs)."),
    ("SamplerBytesPerSeqVocab", "vLLM profiled sampler bytes", engines.SAMPLER_BYTES_PER_SEQ_VOCAB, "bytes/(sequence x token)",
     "Fitted to six vLLM start-up logs (engines.py)."),
    ("ForwardHiddenTensors", "vLLM profiled forward tensors", engines.FORWARD_HIDDEN_TENSORS, "tensors", "Same fit."),
    ("UnfusedHiddenTensors", "Unfused forward hidden tensors", engines.V0_FORWARD_HIDDEN_TENSORS, "tensors",
     "TensorRT-LLM's activation workspace, as vLLM V0 profiled it."),
    ("SGLangReserveGiB", "SGLang reserve beyond weights and KV", engines.SGLANG_RESERVE_GIB, "GiB", "engines.py"),
    ("DefaultMemoryFraction", "Memory fraction where none is set (vLLM, TensorRT-LLM, the runbook's rule)",
     engines.DEFAULT_MEMORY_FRACTION["vllm"], "fraction", "vLLM gpu_memory_utilization and TensorRT-LLM's free fraction: 0.9."),
    ("MiBPerGiB", "MiB per GiB", 1024.0, "MiB/GiB", "SGLang counts the device's memory in MB (MiB)."),
    ("SGLangReserveBaseMB", "SGLang default fraction: constant reserve", engines.SGLANG_RESERVE_MB["base"], "MB",
     "sglang server_args.py _handle_gpu_memory_settings (from 0.5.3): attention metadata."),
    ("SGLangReservePerChunkTokenMB", "SGLang reserve per prefill-chunk token", engines.SGLANG_RESERVE_MB["per_chunk_token"],
     "MB/token", "Activations of a prefill chunk."),
    ("SGLangMinChunkTokens", "SGLang reserve: smallest chunk counted", engines.SGLANG_RESERVE_MB["min_chunk_tokens"], "tokens", ""),
    ("SGLangReservePerGraphSeqMB", "SGLang reserve per CUDA-graph sequence", engines.SGLANG_RESERVE_MB["per_graph_seq"],
     "MB/sequence", "cuda_graph_max_bs x 2."),
    ("SGLangReservePerTPGPUMB", "SGLang reserve per GPU of TP", engines.SGLANG_RESERVE_MB["per_tp_gpu"], "MB/GPU", "TP ÷ 8 x 1,024."),
    ("SGLangDPReservePerGraphSeqMB", "SGLang DP-attention reserve per graph sequence and rank",
     engines.SGLANG_RESERVE_MB["dp_per_graph_seq"], "MB", ""),
    ("SGLangDPLargeReservePerGraphSeqMB", "SGLang DP-attention reserve above the large graph batch",
     engines.SGLANG_RESERVE_MB["dp_large_per_graph_seq"], "MB", ""),
    ("SGLangDPLargeAboveSeqs", "SGLang: the large graph batch starts above", engines.SGLANG_RESERVE_MB["dp_large_above_seqs"],
     "sequences", ""),
    ("SGLangReserveFloorMB", "SGLang reserve floor on large GPUs", engines.SGLANG_RESERVE_MB["floor"], "MB", "10 GB."),
    ("SGLangReserveFloorAboveGiB", "SGLang reserve floor applies above", engines.SGLANG_RESERVE_MB["floor_above_gib"], "GiB", ""),
    ("SGLangGraphTPLarge", "SGLang: the larger graph batch from this TP", engines.SGLANG_RESERVE_MB["graph_tp_large"], "GPUs", ""),
    ("SGLangFractionDecimals", "SGLang rounds its fraction to", 3.0, "decimals", "round(…, 3)."),
    ("DriverReservedGiB", "Driver memory CUDA cannot allocate", engines.DRIVER_RESERVED_GIB, "GiB", "H100: 79.65 vs 79.18 GiB."),
    ("PCIeGen4GBps", "PCIe Gen4 x16, one direction", specs.PCIE_GEN4_GBPS, "GB/s", "Where the catalog names no GPU link."),
    ("FabricLatencyS", "Collective latency, NVLink / Infinity Fabric", specs.FABRIC_LATENCY_S, "s", "NCCL small-message all-reduce."),
    ("PCIeLatencyS", "Collective latency, PCIe", specs.PCIE_LATENCY_S, "s", ""),
    ("FabricThresholdGBps", "Links faster than this are a GPU fabric", specs.FABRIC_THRESHOLD_GBPS, "GB/s", ""),
    ("MicroUnit", "Seconds per microsecond", 1e-6, "s/us", ""),
    ("MeanChunkPosition", "Mean position of a prefill chunk in its prompt", 0.5, "fraction of chunks",
     "Each chunk reads the prefix before it: on average half the chunks."),
    ("RunbookUnbounded", "No step budget (the runbook's convention)", float(RUNBOOK_UNBOUNDED), "tokens, sequences", ""),
    ("QueueServiceCV2", "Squared CV of a replica's service time", queueing.SERVICE_CV2, "1",
     "Exponential service: the M/M/c case."),
    ("AllenCunneenDivisor", "Allen–Cunneen factor's divisor", 2.0, "1", "(cA² + cS²) ÷ 2 scales the M/M/c wait (Allen 1990)."),
    ("ErlangCoarseDivisor", "Erlang C coarse table: step = √(offered load) ÷ this", ERLANG_COARSE_DIVISOR, "1",
     "16 coarse rows span about 4√a."),
    ("ErlangTableRows", "Rows of each Erlang C table", float(ERLANG_ROWS), "rows",
     "A coarse step wider than this is past the fine table."),
    ("TPObjectivePurchased", "TP choice: weight of GPUs purchased", tp_choice.TP_OBJECTIVE_PURCHASED, "1", "Fewest purchased first..."),
    ("TPObjectiveBilled", "TP choice: weight of GPUs billed", tp_choice.TP_OBJECTIVE_BILLED, "1", "...then fewest billed, then the smallest TP."),
)


@dataclass(frozen=True)
class Engine:
    """The engine's figures for one plan (:func:`xlplan.excel.book.figures`) and how the workbook writes them: the writer
    reads every cached value from here and computes none."""

    fig: Figures
    formulas: str = "native"  # 'native' formulas, or 'udf': key cells call the xlplan Excel functions
    namespace: str = ""  # the add-in's function namespace (xlwings Server's XLWINGS), '' for none

    def __post_init__(self) -> None:
        if self.formulas not in FORMULA_MODES:
            raise ValueError(f"formulas: got {self.formulas!r}; expected one of {', '.join(FORMULA_MODES)}")
        check_namespace(self.namespace)

    @property
    def plan(self) -> Plan:
        """The plan the figures are for."""
        return self.fig.plan

    @property
    def s(self) -> Scenario:
        """Its numbers."""
        return self.fig.s

    @property
    def sol(self) -> Solution:
        """The closed form's solution, which the formulas reproduce."""
        return self.fig.sol

    @property
    def result(self) -> PlanResult:
        """The plan's result: the Answer and the note's figures."""
        return self.fig.result

    @property
    def model(self) -> ModelSpec:
        """The model."""
        return self.fig.model

    @property
    def gpu(self) -> GPUSpec:
        """The GPU."""
        return self.fig.gpu

    def udf_call(self, text: str) -> str:
        """An expression calling xlplan Excel functions, each name prefixed with the namespace (``XLWINGS.MEMORY_GPUS(``)."""
        return _with_namespace(text, self.namespace)

    def udf_ok(self, needs: str = "") -> bool:
        """Whether a UDF call can stand for a cell: catalog models only ('model'), API prices given ('api')."""
        if "model" in needs and model_row_key(self.plan) not in catalog.model_names():
            return False
        if "api" in needs and self.plan.api is None:
            return False
        return not ("runbook_decode" in needs and self.plan.policy.decode_attention_flops)


def num(x: float | None, inf: str = NONE):
    """A cached number, or the word a formula shows for an infinity."""
    if x is None:
        return NA
    if isinstance(x, float) and math.isinf(x):
        return inf
    return x


FORMULA_MODES = ("native", "udf")

UNDATED = "undated (give the plan a date: PlanDate on 1 Inputs)"
"""What the Summary's Prepared line and the print header show for a plan without a date. A workbook records no
clock reading, so the same plan gives the same bytes on any day (the template's drift check, audit rebuilds)."""

UDF_NAMES = frozenset({
    "LITTLES_LAW", "TIME_IN_SYSTEM", "KV_BYTES_PER_TOKEN", "KV_GIB_PER_CONVERSATION", "WEIGHTS_GIB", "PARAMS_FROM_CONFIG",
    "KV_BUDGET_GIB", "MEMORY_GPUS", "PREFILL_TFLOPS", "DECODE_TFLOPS", "COMPUTE_GPUS", "MAX_DECODE_BATCH", "LATENCY_GPUS", "QUEUEING_REPLICAS",
    "BINDING_CONSTRAINT", "FLEET", "BILLED_GPUS", "MONTHLY_COST", "TOKENS_PER_MONTH", "COST_PER_MTOK", "API_MONTHLY_COST",
    "BREAKEVEN_TOKENS", "MAX_RATE", "CAPACITY_NOTE", "SENSITIVITIES", "GPU_SPEC", "MODEL_SPEC",
})
"""The xlplan Excel functions by their Excel names (a test holds this to ``udfs.functions``)."""

_NAMESPACE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$")
_CALL = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(sorted(UDF_NAMES, key=len, reverse=True)) + r")\(")


def check_namespace(namespace: str) -> str:
    """A namespace as Office.js custom functions take it: letters, digits and underscores, dot-separated, or ''."""
    if namespace and not _NAMESPACE.match(namespace):
        raise ValueError(f"--namespace: got {namespace!r}; expected letters, digits and underscores such as XLWINGS "
                         "(xlwings Server's default), or nothing for functions registered without one")
    return namespace


def _with_namespace(text: str, namespace: str) -> str:
    """Prefix each xlplan function call in a formula with ``namespace.`` (unchanged for '')."""
    if not namespace:
        return text
    return _CALL.sub(lambda m: f"{namespace.upper()}.{m.group(1)}(", text)
ADDIN_MISSING = "not checked (no add-in)"
"""What an add-in cross-check shows where the xlplan Excel functions are not loaded (LibreOffice, plain Excel): a state,
not an error, shown in grey (the writer's ``crosscheck`` style)."""
ADDIN_MISSING_BEFORE = ("add-in not loaded",)
"""What workbooks built before :data:`ADDIN_MISSING` showed there instead; `xlplan check` reads them as it."""
ADDIN_AGREES = "agrees"
CROSSCHECK_COL = "E"


class Rows:
    """Writes label / value / unit / note rows down a sheet and defines their names.

    A row given ``udf`` (the same figure as a call to an xlplan Excel function) gets an
    add-in cross-check beside it, or, in the ``udf`` variant, calls the function itself.
    """

    def __init__(self, book: Book, sheet: Sheet, value_col: str = "B", engine: Engine | None = None):
        self.book, self.sheet, self.col, self.engine = book, sheet, value_col, engine

    def title(self, text: str, purpose: str) -> None:
        self.sheet.put("A", 1, Cell(text, kind="title"))
        self.sheet.put("A", 2, Cell(purpose, kind="note"))
        self.sheet.row = 4

    def header(self, *labels: str) -> None:
        if labels and labels[-1] == "How" and self.engine is not None and self.engine.formulas == "native":
            labels = (*labels, "Add-in check")
        for i, label in enumerate(labels):
            self.sheet.put(i + 1, self.sheet.row, Cell(label, kind="header"))
        self.sheet.row += 1

    def section(self, text: str) -> None:
        self.sheet.row += 1
        self.sheet.put("A", self.sheet.row, Cell(text, kind="section"))
        self.sheet.row += 1

    def calc(self, name: str | None, label: str, formula: str, cached: Any, unit: str = "", fmt: str | None = None,
             how: str = "", udf: str | None = None, needs: str = "") -> str:
        r = self.sheet.row
        self.sheet.put("A", r, Cell(label, kind="label"))
        use_udf = udf is not None and self.engine is not None and self.engine.udf_ok(needs)
        if use_udf:
            udf = self.engine.udf_call(udf)
        if use_udf and self.engine.formulas == "udf":
            formula = "=" + udf
        elif use_udf:
            check = (f'IF({udf}={name},"{ADDIN_AGREES}","differs: "&{udf})' if isinstance(cached, str) else
                     f'IF(ABS({udf}-{name})<=RoundingTolerance*ABS({name}),"{ADDIN_AGREES}",{udf}-{name})')
            self.sheet.put(CROSSCHECK_COL, r, Cell(f'=IFERROR({check},"{ADDIN_MISSING}")', formula=True, cached=ADDIN_MISSING,
                                                   kind="crosscheck"))
        coord = self.sheet.put(self.col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt, name=name))
        self.sheet.put("C", r, Cell(unit, kind="unit"))
        if how:
            self.sheet.put("D", r, Cell(how, kind="note"))
        if name:
            self.book.define(name, self.sheet, coord)
        self.sheet.row += 1
        return coord


def catalog_model_keys(plan: Plan) -> list[str]:
    """Rows of the Models sheet: the catalog, then the plan's own model if it is not a catalog entry."""
    keys = list(catalog.model_names())
    k = model_row_key(plan)
    return keys if k in keys else keys + [k]


def catalog_gpu_keys(plan: Plan) -> list[str]:
    keys = list(catalog.gpu_names())
    k = gpu_row_key(plan)
    return keys if k in keys else keys + [k]


def models_col(i: int) -> str:
    """Models-sheet column of the i-th MODEL_COLUMNS field (A key, B name, fields from C)."""
    from openpyxl.utils import get_column_letter

    return get_column_letter(3 + i)


def gpus_col(i: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(3 + i)
