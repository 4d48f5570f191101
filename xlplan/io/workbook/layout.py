"""What goes in each cell of the capacity-note workbook.

:func:`build` lays out the six tabs of the note and the supporting sheets as a
:class:`~xlplan.io.workbook.cells.Book`: inputs as constants, every computed cell
as a native Excel formula over defined names, each with the value the engine
computed for it (the cache). Formulas use only functions LibreOffice 7.4 also
computes (INDEX/MATCH, ROUNDUP, LN, EXP, SQRT, MIN, MAX, IF, AND, OR, COUNT,
ISNUMBER, MOD), and no number is written inside a formula: every constant is a
labelled cell on the ``Constants`` sheet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xlplan import __version__, architecture, catalog, distributions, fleet, memory, steps, whatif
from xlplan.io.workbook import formulas as F
from xlplan.io.workbook.cells import Book, Cell, Sheet, Validation
from xlplan.io.workbook.inputs import INPUT_SPECS, OWNER_SECTIONS, InputSpec, gpu_row_key, input_value, model_row_key
from xlplan.plan import Plan
from xlplan.planner import UTILISATION_TABLE
from xlplan.planner import plan as run_plan
from xlplan.result import PlanResult
from xlplan.scenario import TP_DEGREES, Scenario, compute_dtype, resolve
from xlplan.specs import GPUSpec, ModelSpec
from xlplan.units import GIB, MILLION, SECONDS_PER_HOUR, TERA

CATALOG_FIRST_ROW = 5
"""First data row of the GPUs and Models sheets (title, purpose and a header above it)."""

SIX_TABS = ("1 Inputs", "2 Model", "3 Constraints", "4 Fleet", "5 Cost", "6 Sensitivities")
SUPPORT_TABS = ("Checks", "Constants", "GPUs", "Models", "Change log")

NONE = "none"  # a path that cannot be met at this TP degree
NA = "n/a"

FMT = {
    "usd": '"$"#,##0',
    "usd2": '"$"#,##0.00',
    "usd_mtok": '"$"#,##0.000',
    "gib": '#,##0.000 "GiB"',
    "tokens": '#,##0 "tokens"',
    "tokens_month": '#,##0 "tokens"',
    "pct": "0%",
    "int": "#,##0",
    "num": "#,##0.00",
    "num4": "#,##0.0000",
    "sci": "0.000E+00",
    "s": '0.0000 "s"',
    "tflops": '#,##0.0 "TFLOP/s"',
    "bytes": '#,##0 "B"',
    "gpus": '#,##0 "GPUs"',
    "gpus2": '#,##0.00 "GPUs"',
    "sigma": "0.0000",
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
)

CONSTANTS: tuple[tuple[str, str, float, str, str], ...] = (
    ("GiB", "Bytes per GiB", float(GIB), "bytes/GiB", "2^30: CUDA, vLLM and nvidia-smi's MiB figures are binary."),
    ("TeraUnit", "FLOP per TFLOP, bytes/s per TB/s", TERA, "1", "10^12: TFLOP/s and TB/s are decimal."),
    ("TokensPerMillion", "Tokens per million tokens", MILLION, "tokens/Mtok", "API prices are per million tokens."),
    ("SecondsPerHour", "Seconds per hour", SECONDS_PER_HOUR, "s/h", ""),
    ("RoundingTolerance", "Rounding tolerance", fleet.ROUNDING_TOLERANCE, "fraction",
     "Slack before rounding up, so 4.000000000001 GPUs of float noise counts as 4."),
    ("Z95", "Standard normal quantile at 0.95", distributions.Z95, "1", "NORMSINV(0.95); fits the lognormal through p95."),
    ("Z99", "Standard normal quantile at 0.99", distributions.Z99, "1", "NORMSINV(0.99); fits the lognormal through p99."),
    ("FLOPsPerMAC", "FLOPs per multiply-accumulate", 2.0, "FLOP", "The runbook's 2 x N FLOPs per token."),
    ("AttentionFLOPs", "Attention FLOPs per score element per layer", 4.0, "FLOP",
     "QK^T and AV, one multiply-accumulate (2 FLOPs) each."),
    ("KVTensors", "Cached tensors per token per layer", 2.0, "tensors", "K and V."),
    ("GatedMLPMatrices", "Matrices in a gated MLP", 3.0, "matrices", "gate, up and down projections."),
    ("UnquantizedBytesPerParam", "Bytes per unquantised parameter", memory.UNQUANTIZED_BYTES_PER_PARAM, "bytes/parameter",
     "Embeddings, output head and vision tower stay 16-bit in quantised checkpoints."),
    ("MeanDecodePosition", "Mean position in the output while decoding", 0.5, "fraction of output",
     "Used only when attention FLOPs in decode are counted."),
)


@dataclass
class Engine:
    """The engine's figures for one plan: what the cached values come from."""

    plan: Plan
    s: Scenario
    sol: steps.Solution
    result: PlanResult
    model: ModelSpec
    gpu: GPUSpec

    @classmethod
    def run(cls, plan: Plan) -> Engine:
        s = resolve(plan)
        return cls(plan, s, steps.solve(s), run_plan(plan), plan.model.resolve(), plan.hardware.resolve())


def _num(x: float | None, inf: str = NONE):
    """A cached number, or the word a formula shows for an infinity."""
    if x is None:
        return NA
    if isinstance(x, float) and math.isinf(x):
        return inf
    return x


class _Rows:
    """Writes label / value / unit / note rows down a sheet and defines their names."""

    def __init__(self, book: Book, sheet: Sheet, value_col: str = "B"):
        self.book, self.sheet, self.col = book, sheet, value_col

    def title(self, text: str, purpose: str) -> None:
        self.sheet.put("A", 1, Cell(text, kind="title"))
        self.sheet.put("A", 2, Cell(purpose, kind="note"))
        self.sheet.row = 4

    def header(self, *labels: str) -> None:
        for i, label in enumerate(labels):
            self.sheet.put(i + 1, self.sheet.row, Cell(label, kind="header"))
        self.sheet.row += 1

    def section(self, text: str) -> None:
        self.sheet.row += 1
        self.sheet.put("A", self.sheet.row, Cell(text, kind="section"))
        self.sheet.row += 1

    def calc(self, name: str | None, label: str, formula: str, cached: Any, unit: str = "", fmt: str | None = None,
             how: str = "") -> str:
        r = self.sheet.row
        self.sheet.put("A", r, Cell(label, kind="label"))
        coord = self.sheet.put(self.col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt, name=name))
        self.sheet.put("C", r, Cell(unit, kind="unit"))
        if how:
            self.sheet.put("D", r, Cell(how, kind="note"))
        if name:
            self.book.define(name, self.sheet, coord)
        self.sheet.row += 1
        return coord


def _validation(spec: InputSpec) -> Validation:
    blank = not spec.required
    unit = f" [{spec.unit}]"
    if spec.kind == "fraction":
        return Validation("decimal", "between", "0", "1", blank, spec.label[:32],
                          spec.note[:255], "Enter a fraction between 0 and 1: 0.40, not 40.")
    if spec.kind == "fraction0":
        return Validation("decimal", "between", "0", "0.999999", blank, spec.label[:32],
                          spec.note[:255], "Enter a fraction from 0 up to (not including) 1: 0.30, not 30.")
    if spec.kind == "number":
        return Validation("decimal", "greaterThan", "0", None, blank, spec.label[:32], spec.note[:255],
                          f"Enter a positive number{unit}.")
    if spec.kind == "number0":
        return Validation("decimal", "greaterThanOrEqual", "0", None, blank, spec.label[:32], spec.note[:255],
                          f"Enter zero or a positive number{unit}.")
    if spec.kind in ("whole", "whole0") and spec.choices is None:
        low = "1" if spec.kind == "whole" else "0"
        return Validation("whole", "greaterThanOrEqual", low, None, blank, spec.label[:32], spec.note[:255],
                          f"Enter a whole number of at least {low}{unit}.")
    if spec.choices:
        return Validation("list", None, f"={spec.choices}", None, blank, spec.label[:32], spec.note[:255],
                          f"Pick one of the list ({spec.choices}).")
    return Validation("textLength", "lessThanOrEqual", "255", None, True, spec.label[:32], spec.note[:255],
                      "Text up to 255 characters.")


# ---------------------------------------------------------------------------------------------- sheets


def _inputs(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[0], "Section 1 of the capacity note: every input, with its unit, its owner and its dated source.",
                    widths={"A": 34, "B": 22, "C": 16, "D": 20, "E": 34, "F": 70}, print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    rows.title("1 · Inputs — the forecast, the promise and the prices, attributed",
               "Yellow cells are inputs; everything else is computed. A wrong forecast is a forecast problem: each input "
               "names its owner and source.")
    sh.put("A", 4, Cell("Plan name", kind="label"))
    coord = sh.put("B", 4, Cell(e.plan.name, kind="input", name="PlanName",
                                validation=Validation("textLength", "lessThanOrEqual", "255", None, False, "Plan name",
                                                      "Title of the capacity note.", "Text up to 255 characters.")))
    book.define("PlanName", sh, coord)
    sh.put("A", 5, Cell("All checks pass", kind="label", bold=True))
    coord = sh.put("B", 5, Cell("=AllChecksPass", formula=True, cached=all(_check_values(e).values()), kind="check"))
    sh.put("D", 5, Cell("TRUE when every check on the Checks sheet passes.", kind="note"))
    sh.row = 7
    rows.section("Who owns each input, and where it comes from")
    rows.header("Inputs of", "Owner", "Source and date")
    for key, label in OWNER_SECTIONS:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        for col, prefix, value in (("B", "Owner", getattr(e.plan.owners, key)), ("C", "Source", getattr(e.plan.sources, key))):
            name = f"{prefix}{key.capitalize()}"
            c = sh.put(col, r, Cell(value, kind="input", name=name,
                                    validation=Validation("textLength", "lessThanOrEqual", "255", None, True, f"{prefix} of {label}"[:32],
                                                          f"{'Who answers for' if prefix == 'Owner' else 'Where and when you got'} the {label.lower()} inputs.",
                                                          "Text up to 255 characters.")))
            book.define(name, sh, c)
        sh.row += 1
    for title, specs in INPUT_SPECS:
        rows.section(title)
        rows.header("Input", "Value", "Unit", "Owner", "Source", "What it means and how to get it right")
        for spec in specs:
            r = sh.row
            value = input_value(e.plan, spec)
            sh.put("A", r, Cell(spec.label, kind="label"))
            coord = sh.put("B", r, Cell(value, kind="input", fmt=spec.fmt, name=spec.name, validation=_validation(spec),
                                        comment=spec.note))
            book.define(spec.name, sh, coord)
            sh.put("C", r, Cell(spec.unit, kind="unit"))
            owner_name = f"Owner{spec.owner.capitalize()}"
            source_name = f"Source{spec.owner.capitalize()}"
            sh.put("D", r, Cell(f'={owner_name}&""', formula=True, cached=getattr(e.plan.owners, spec.owner), kind="calc"))
            sh.put("E", r, Cell(f'={source_name}&""', formula=True, cached=getattr(e.plan.sources, spec.owner), kind="calc"))
            sh.put("F", r, Cell(spec.note, kind="note"))
            sh.row += 1
            if spec.name == "TokensPerSecondInput":
                rows.calc("ITLTarget", "Inter-token target used", '=IF(ISNUMBER(ITLInput),ITLInput,1/TokensPerSecondInput)',
                          e.s.itl_s, "s/token", '0.0000 "s"', "The target as given, or 1 ÷ the streaming speed.")
            if spec.name == "GPUUSDPerHourInput":
                rows.calc("GPUUSDPerHour", "GPU price used",
                          '=IF(ISNUMBER(GPUUSDPerHourInput),GPUUSDPerHourInput,GPUCatalogUSDPerHour)',
                          e.s.usd_per_gpu_hour, "USD/GPU-hour", FMT["usd2"], "The price paid, or the catalog's price.")


def _model(book: Book, e: Engine, n_models: int, n_gpus: int) -> None:
    sh = book.sheet(SIX_TABS[1], "Section 2: the model and precision: parameters derived from the config, weights, cache per token.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 90}, print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    m, g, s = e.model, e.gpu, e.s
    rows.title("2 · Model and precision — parameters from the config, weights, cache per token",
               "Config fields come from the Models sheet for the model chosen on 1 Inputs; the counts below are the "
               "arithmetic anyone can check.")
    rows.section("The config (from the Models sheet)")
    rows.header("Field", "Value", "Unit", "config.json field")
    rows.calc("ModelRow", "Row on the Models sheet", "=MATCH(ModelKey,ModelKeys,0)",
              1 + catalog_model_keys(e.plan).index(model_row_key(e.plan)), "row", "0", "#N/A means the model is not on the Models sheet.")
    rows.calc("ModelName", "Model", "=INDEX(ModelNames,ModelRow)", m.name, "", None, "")
    for i, (field, name, unit) in enumerate(MODEL_COLUMNS):
        col = models_col(i)
        raw = getattr(m, field)
        cached = raw if raw is not None else 0
        rows.calc(name, field.replace("_", " "), f"=INDEX(Models!${col}${CATALOG_FIRST_ROW}:${col}${n_models + CATALOG_FIRST_ROW - 1},ModelRow)", cached, unit,
                  None if isinstance(raw, (bool, str)) else FMT["int"], field)

    a = architecture
    gqa = a.attention_params_per_layer(m) if m.attention == "gqa" else _gqa_params(m)
    mla = a.attention_params_per_layer(m) if m.attention == "mla" else _mla_params(m)
    rows.section("Parameters, derived from the config")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("AttnParamsGQA", "Attention per layer if GQA",
              "=Hidden*Heads*HeadDim+Hidden*KVHeads*HeadDim+Hidden*KVHeads*HeadDim+Heads*HeadDim*Hidden"
              "+IF(AttentionBias,Heads*HeadDim+KVHeads*HeadDim+KVHeads*HeadDim,0)+IF(AttentionOutBias,Hidden,0)"
              "+IF(QKNorm,HeadDim+HeadDim,0)",
              gqa, "parameters", FMT["int"], "q, k, v, o projections; biases and QK-norms where the family has them")
    rows.calc("AttnParamsMLA", "Attention per layer if MLA",
              "=IF(QLoraRank>0,Hidden*QLoraRank+QLoraRank+QLoraRank*Heads*(QKNopeDim+QKRopeDim),Hidden*Heads*(QKNopeDim+QKRopeDim))"
              "+Hidden*(KVLoraRank+QKRopeDim)+KVLoraRank+KVLoraRank*Heads*(QKNopeDim+VHeadDim)+Heads*VHeadDim*Hidden",
              mla, "parameters", FMT["int"], "low-rank query, the cached KV latent and its up-projections, output")
    rows.calc("AttnParams", "Attention per layer", '=IF(AttentionKind="mla",AttnParamsMLA,AttnParamsGQA)',
              a.attention_params_per_layer(m), "parameters", FMT["int"], "the one for this model's attention kind")
    rows.calc("ExpertParams", "One routed expert", "=GatedMLPMatrices*Hidden*MoEIntermediate+IF(ExpertBias,MoEIntermediate+MoEIntermediate+Hidden,0)",
              a.expert_params(m), "parameters", FMT["int"], "gated MLP of the expert width")
    rows.calc("RouterParams", "Router per MoE layer", "=Hidden*Experts+IF(RouterBias,Experts,0)",
              a.router_params(m), "parameters", FMT["int"], "")
    rows.calc("DenseMLPParams", "Dense MLP per layer", "=GatedMLPMatrices*Hidden*Intermediate",
              a.mlp_params_per_layer(m, False, False), "parameters", FMT["int"], "gate, up, down")
    shared = m.shared_experts * 3 * m.hidden_size * m.moe_intermediate_size
    rows.calc("MoEMLPParamsTotal", "MoE MLP per layer, all experts",
              "=Experts*ExpertParams+SharedExperts*GatedMLPMatrices*Hidden*MoEIntermediate+RouterParams",
              m.num_experts * a.expert_params(m) + shared + a.router_params(m), "parameters", FMT["int"], "")
    rows.calc("MoEMLPParamsActive", "MoE MLP per layer, used per token",
              "=ExpertsPerToken*ExpertParams+SharedExperts*GatedMLPMatrices*Hidden*MoEIntermediate+RouterParams",
              m.experts_per_token * a.expert_params(m) + shared + a.router_params(m), "parameters", FMT["int"], "")
    moe_layers = m.num_hidden_layers - m.first_dense_layers if m.num_experts else 0
    rows.calc("MoELayers", "MoE layers", "=IF(Experts>0,Layers-FirstDenseLayers,0)", moe_layers, "layers", FMT["int"], "")
    rows.calc("DenseLayers", "Dense-MLP layers", "=Layers-MoELayers", m.num_hidden_layers - moe_layers, "layers", FMT["int"], "")
    rows.calc("LayerCommonParams", "Attention and norms per layer", "=AttnParams+NormsPerLayer*Hidden",
              a.attention_params_per_layer(m) + m.norms_per_layer * m.hidden_size, "parameters", FMT["int"], "")
    rows.calc("DecoderParamsTotal", "Decoder, all parameters",
              "=Layers*LayerCommonParams+DenseLayers*DenseMLPParams+MoELayers*MoEMLPParamsTotal+Hidden",
              a.decoder_params(m, False), "parameters", FMT["int"], "layers plus the final norm")
    rows.calc("DecoderParamsActive", "Decoder, used per token",
              "=Layers*LayerCommonParams+DenseLayers*DenseMLPParams+MoELayers*MoEMLPParamsActive+Hidden",
              a.decoder_params(m, True), "parameters", FMT["int"], "")
    rows.calc("EmbeddingParams", "Embedding and output head", "=IF(TieEmbeddings,Vocab*Hidden,Vocab*Hidden+Vocab*Hidden)",
              a.embedding_params(m), "parameters", FMT["int"], "once if tied")
    rows.calc("ParamsTotal", "Parameters in memory", "=DecoderParamsTotal+EmbeddingParams+VisionParams",
              a.total_params(m), "parameters", FMT["int"], "what the weights occupy")
    rows.calc("ParamsActive", "Parameters per token", "=DecoderParamsActive+EmbeddingParams",
              a.active_params(m), "parameters", FMT["int"], "what FLOPs count (2 x N per token)")

    rows.section("Weights and cache per token")
    rows.header("Quantity", "Value", "Unit", "How")
    bpp = memory.WEIGHT_BYTES_PER_PARAM[e.plan.model.weights_dtype]
    rows.calc("WeightBytesPerParam", "Bytes per weight", "=" + F.dtype_bytes("WeightsDtype", "WeightDtypes", "WeightDtypeBytes"),
              bpp, "bytes/parameter", "0.000000", "block scales included (Constants sheet)")
    rows.calc("WeightsBytes", "Weight footprint",
              "=" + F.weights_bytes("WeightBytesPerParam"),
              s.weights_bytes, "bytes", FMT["int"], "decoder at the weight dtype; embeddings and vision tower 16-bit")
    rows.calc("WeightsGiB", "Weight footprint", "=WeightsBytes/GiB", s.weights_bytes / GIB, "GiB", FMT["gib"], "")
    kvb = memory.KV_BYTES_PER_ELEMENT[e.plan.model.kv_dtype]
    rows.calc("KVBytesPerElement", "Bytes per cached element", "=" + F.dtype_bytes("KVDtype", "KVDtypes", "KVDtypeBytes"),
              kvb, "bytes/element", "0.0", "")
    rows.calc("KVBytesPerTokenLayer", "KV cache per token per layer",
              "=" + F.kv_bytes_per_token_layer("KVBytesPerElement"),
              s.kv_bytes_per_token_layer, "bytes", FMT["int"], "K and V per KV head (GQA), or one latent (MLA)")
    rows.calc("KVBytesPerToken", "KV cache per token, all layers", "=Layers*KVBytesPerTokenLayer",
              memory.kv_bytes_per_token(m, e.plan.model.kv_dtype), "bytes/token", FMT["int"], "")
    rows.calc("AttentionWidth", "Attention width", '=IF(AttentionKind="mla",INT(AVERAGE(Heads*(QKNopeDim+QKRopeDim),Heads*VHeadDim)),Heads*HeadDim)',
              s.attention_width, "elements", FMT["int"], "heads x head width (MLA: mean of the QK and V widths)")
    rows.calc("KVShardLimit", "Ways the cache can split across a TP group", '=IF(AttentionKind="mla",1,KVHeads)',
              s.kv_shard_limit, "GPUs", FMT["int"], "by KV head (GQA); an MLA latent is copied to every rank")

    rows.section("The GPU (from the GPUs sheet)")
    rows.header("Field", "Value", "Unit", "How")
    rows.calc("GPURow", "Row on the GPUs sheet", "=MATCH(GPUKey,GPUKeys,0)",
              1 + catalog_gpu_keys(e.plan).index(gpu_row_key(e.plan)), "row", "0", "#N/A means the GPU is not on the GPUs sheet.")
    rows.calc("GPUName", "GPU", "=INDEX(GPUNames,GPURow)", g.name, "", None, "")
    for i, (field, name, unit) in enumerate(GPU_COLUMNS):
        col = gpus_col(i)
        raw = getattr(g, field)
        rows.calc(name, field.replace("_", " "), f"=INDEX(GPUs!${col}${CATALOG_FIRST_ROW}:${col}${n_gpus + CATALOG_FIRST_ROW - 1},GPURow)",
                  raw if raw is not None else 0, unit, FMT["num"], field)
    rows.calc("ComputeDtype", "Compute dtype of the peak",
              "=" + F.compute_dtype("WeightsDtype"),
              compute_dtype(e.plan, g), "dtype", None, "fp8 weights use the fp8 peak where the GPU has one")
    rows.calc("PeakTFLOPS", "Peak dense throughput", "=" + F.peak_tflops("ComputeDtype"),
              s.peak_tflops, "TFLOP/s", FMT["tflops"], "")


def _gqa_params(m: ModelSpec) -> int:
    """The GQA formula on an MLA model's (unused) GQA fields, as the sheet computes it."""
    h, nh, hd, nkv = m.hidden_size, m.num_attention_heads, m.head_dim, m.num_key_value_heads
    n = 2 * h * nh * hd + 2 * h * nkv * hd
    n += (nh * hd + 2 * nkv * hd) if m.attention_bias else 0
    n += h if m.attention_out_bias else 0
    n += 2 * hd if m.qk_norm else 0
    return n


def _mla_params(m: ModelSpec) -> int:
    """The MLA formula on a GQA model, with its absent MLA fields as 0, as the sheet computes it."""
    h, nh = m.hidden_size, m.num_attention_heads
    ql, kl = m.q_lora_rank or 0, m.kv_lora_rank or 0
    nope, rope, v = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
    q = h * ql + ql + ql * nh * (nope + rope) if ql > 0 else h * nh * (nope + rope)
    return q + h * (kl + rope) + kl + kl * nh * (nope + v) + nh * v * h


TP_COLS = ("TP", "Considered", "KV shards", "Weights per GPU", "KV budget per GPU", "Conversations per replica",
           "Memory GPUs (exact)", "Memory GPUs", "Compute GPUs (exact)", "Compute GPUs", "Max decode batch",
           "Latency GPUs (exact)", "Latency GPUs", "Load GPUs")


def _constraints(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[2], "Section 3: the memory path and the compute path computed separately, the latency check, which binds.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, **{c: 13 for c in "EFGHIJKLMN"}},
                    print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    s, tr, pa = e.s, e.sol.traffic, e.sol.paths
    rows.title("3 · The two constraints — memory and compute, computed separately; the latency check; which binds",
               "Compute both, compare, then confirm in production: memory binds when the cache is pinned near 100%; "
               "compute binds when the GPU is saturated while the cache is comfortable.")
    rows.section("Traffic — lengths fitted as a lognormal through p50/p95/p99; Little's Law")
    rows.header("Quantity", "Value", "Unit", "How")
    fits = (
        ("Prompt", (s.prompt_p50, s.prompt_p95, s.prompt_p99), tr.prompt_mean, tr.prompt_second_moment,
         ("least squares through p95 and p99 in log space; 0 for a fixed length", "p50 x exp(sigma²/2): shown, never entered",
          "p50² x exp(2 sigma²): attention is quadratic, so the tail counts", "used by the worst-case convention when p99 is blank")),
        ("Output", (s.output_p50, s.output_p95, s.output_p99), tr.output_mean, tr.output_second_moment, ("", "", "", "")),
    )
    for who, (p50, p95, p99), mean, m2, how in fits:
        median, sigma = distributions.fit_lognormal(p50, p95, p99)
        n50, sig = f"{who}P50", f"{who}Sigma"
        rows.calc(sig, f"{who} spread (sigma of ln length)", "=" + F.lognormal_sigma(n50, f"{who}P95", f"{who}P99"),
                  sigma, "ln tokens", FMT["sigma"], how[0])
        rows.calc(f"{who}Mean", f"{who} mean (fitted)", "=" + F.lognormal_mean(n50, sig), mean, "tokens", FMT["num"], how[1])
        rows.calc(f"{who}SecondMoment", f"{who} E[n²] (fitted)", "=" + F.lognormal_second_moment(n50, sig), m2, "tokens²",
                  FMT["sci"], how[2])
        rows.calc(f"{who}P99Fitted", f"{who} p99 (fitted)", "=" + F.lognormal_p99(n50, sig),
                  distributions.lognormal_quantile(median, sigma, 0.99), "tokens", FMT["num"], how[3])
    rows.calc("TimeInSystem", "Time in system", "=" + F.time_in_system("ITLTarget"),
              tr.time_in_system_s, "s", '0.00 "s"', "mean output x inter-token target (the runbook: 300 x 0.05 = 15 s)")
    rows.calc("Concurrency", "Requests in flight (Little's Law)", "=PeakRate*TimeInSystem",
              tr.concurrency, "requests", FMT["num"], "arrival rate x time in system (40 x 15 = 600)")

    rows.section("Memory path — the cache every conversation in flight holds, against the room per GPU")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("ConversationTokens", "Conversation length the cache is sized at",
              "=" + F.conversation_tokens("PromptP50", "PromptP99", "PromptP99Fitted"),
              tr.conversation_tokens, "tokens", FMT["tokens"], "p50 prompt + p50 output (paged), or p99 + p99 (worst case)")
    rows.calc("KVBytesPerConversation", "KV cache per conversation",
              "=" + F.kv_bytes_per_conversation("KVBytesPerTokenLayer", "ConversationTokens"),
              tr.kv_bytes_per_conversation, "bytes", FMT["int"], "sliding-window layers hold at most the window")
    rows.calc("KVPerConversationGiB", "KV cache per conversation", "=KVBytesPerConversation/GiB",
              tr.kv_gib_per_conversation, "GiB", FMT["gib"], "the runbook: 0.281 GiB")
    rows.calc("KVTotalGiB", "KV cache in flight", "=Concurrency*KVBytesPerConversation/GiB",
              tr.kv_gib_total, "GiB", FMT["gib"], "600 x 0.281 = 168.5 GiB")
    rows.calc("WeightsGiBPerGPU", "Weights per GPU at the chosen TP", "=INDEX(TPWeightsGiB,TPChoiceRow)",
              pa.weights_gib_per_gpu, "GiB", FMT["gib"], "")
    rows.calc("KVBudgetGiB", "KV budget per GPU", "=INDEX(TPBudgetGiB,TPChoiceRow)",
              pa.kv_budget_gib_per_gpu, "GiB", FMT["gib"], "memory x utilisation - weights - overhead (0.9 x 79.65 - 14.96 - 3.0 = 53.73)")
    rows.calc("ConversationsPerReplica", "Conversations one replica holds", "=INDEX(TPConversations,TPChoiceRow)",
              pa.conversations_per_replica, "conversations", FMT["num"], "")
    rows.calc("MemoryGPUsExact", "Memory path before rounding", "=INDEX(TPMemoryExact,TPChoiceRow)",
              _num(pa.memory_gpus_exact), "GPUs", FMT["gpus2"], "168.5 ÷ 53.73 = 3.14")
    rows.calc("MemoryGPUs", "Memory path", "=INDEX(TPMemory,TPChoiceRow)", _num(pa.memory_gpus), "GPUs", FMT["gpus"],
              "in whole replicas")

    rows.section("Compute path — prefill and decode FLOPs at peak, against peak x MFU")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("PrefillFLOPsPerRequest", "Prefill per request",
              "=" + F.prefill_flops("PromptMean", "PromptSecondMoment"),
              tr.prefill_flops_per_request, "FLOP", FMT["sci"], "2·N·E[n] + 4·layers·E[n²]·width: the distribution, not the mean")
    rows.calc("DecodeFLOPsPerToken", "Decode per output token",
              "=" + F.decode_flops("PromptMean"),
              tr.decode_flops_per_token, "FLOP/token", FMT["sci"], "2 x active parameters")
    rows.calc("PrefillTFLOPS", "Prefill demand at peak", "=PeakRate*PrefillFLOPsPerRequest*(1-PrefixReuse)/TeraUnit",
              tr.prefill_tflops, "TFLOP/s", FMT["tflops"], "the runbook: 1,369")
    rows.calc("DecodeTFLOPS", "Decode demand at peak", "=PeakRate*OutputMean*DecodeFLOPsPerToken/TeraUnit",
              tr.decode_tflops, "TFLOP/s", FMT["tflops"], "the runbook: 193")
    rows.calc("DemandTFLOPS", "Total demand", "=PrefillTFLOPS+DecodeTFLOPS", tr.prefill_tflops + tr.decode_tflops,
              "TFLOP/s", FMT["tflops"], "")
    rows.calc("TFLOPSPerGPU", "Sustained per GPU", "=PeakTFLOPS*MFU", pa.tflops_per_gpu, "TFLOP/s", FMT["tflops"],
              "989 x 0.40 = 395.6")
    rows.calc("ComputeGPUsExact", "Compute path before rounding", "=INDEX(TPComputeExact,TPChoiceRow)",
              pa.compute_gpus_exact, "GPUs", FMT["gpus2"], "1,562 ÷ 395.6 = 3.95")
    rows.calc("ComputeGPUs", "Compute path", "=INDEX(TPCompute,TPChoiceRow)", pa.compute_gpus, "GPUs", FMT["gpus"],
              "in whole replicas")

    rows.section("Latency check — can a replica meet the promise?")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("MaxDecodeBatch", "Largest batch within the inter-token target", "=INDEX(TPMaxBatch,TPChoiceRow)",
              pa.max_decode_batch, "conversations", FMT["num"], "roofline: FLOPs vs peak x MFU, bytes vs bandwidth x efficiency")
    rows.calc("LatencyGPUsExact", "Latency path before rounding", "=INDEX(TPLatencyExact,TPChoiceRow)",
              _num(pa.latency_gpus_exact), "GPUs", FMT["gpus2"], "")
    rows.calc("LatencyGPUs", "Latency path", "=INDEX(TPLatency,TPChoiceRow)", _num(pa.latency_gpus), "GPUs", FMT["gpus"], "")
    rows.calc("PrefillFLOPsP95", "Prefill of a p95 prompt",
              "=" + F.prefill_flops("PromptP95", "PromptP95*PromptP95"),
              tr.prefill_flops_p95_prompt, "FLOP", FMT["sci"], "")
    rows.calc("TTFTP95", "TTFT of a p95 prompt alone", "=PrefillFLOPsP95/(TP*PeakTFLOPS*MFU*TeraUnit)",
              pa.ttft_p95_s, "s", FMT["s"], "more replicas do not shorten this")
    rows.calc("TTFTMet", "TTFT target met", "=TTFTP95<=TTFTTarget", pa.ttft_p95_s <= s.ttft_s, "TRUE | FALSE", None, "")

    rows.section("Which binds")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("Binding", "Binding constraint",
              "=" + F.binding("MemoryGPUs", "ComputeGPUs", "LatencyGPUs"),
              e.sol.binding, "path", None, "the path that needs the most GPUs; 'both' when two tie, 'all' when three do")
    rows.calc("TP", "Tensor-parallel degree chosen", "=INDEX(TPDegreeCol,TPChoiceRow)", pa.tp, "GPUs", "0",
              "the degree that needs the fewest GPUs for the load (smallest on a tie)")

    # The TP table: one row per degree, one formula per column.
    rows.section("Every tensor-parallel degree — the planner picks the one with the smallest load")
    hdr = sh.row
    for i, label in enumerate(TP_COLS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    first = hdr + 1
    cands = {c.tp: c for c in e.sol.candidates}
    for k, tp in enumerate(TP_DEGREES):
        r = first + k
        c = cands.get(tp) or steps.paths(s, tr, tp)
        considered = tp in s.tp_options
        f = {
            "A": (f"=INDEX(TPDegrees,{k + 1})", tp, "0"),
            "B": ("=" + F.tp_considered(f"A{r}"), considered, None),
            "C": (f"=MIN(A{r},KVShardLimit)", c.kv_shards, "0"),
            "D": (f"=WeightsBytes/A{r}/GiB", c.weights_gib_per_gpu, FMT["gib"]),
            "E": ("=" + F.kv_budget_gib("WeightsBytes", f"A{r}"), c.kv_budget_gib_per_gpu, FMT["gib"]),
            "F": (f"=MAX(E{r},0)*C{r}/KVPerConversationGiB", c.conversations_per_replica, FMT["num"]),
            "G": (f'=IF(F{r}>0,A{r}*(Concurrency/F{r}),"{NONE}")', _num(c.memory_gpus_exact), FMT["num"]),
            "H": (f'=IF(ISNUMBER(G{r}),{F.whole_gpus(f"G{r}/A{r}", f"A{r}")},"{NONE}")', _num(c.memory_gpus), "0"),
            "I": ("=DemandTFLOPS/TFLOPSPerGPU", c.compute_gpus_exact, FMT["num"]),
            "J": ("=" + F.whole_gpus(f"I{r}/A{r}", f"A{r}"), c.compute_gpus, "0"),
            "K": ("=" + F.max_decode_batch("ITLTarget", "PeakTFLOPS", "DecodeFLOPsPerToken", "WeightsBytes",
                                           "KVBytesPerConversation", f"A{r}", f"C{r}"), c.max_decode_batch, FMT["num"]),
            "L": (f'=IF(K{r}>0,A{r}*(Concurrency/K{r}),"{NONE}")', _num(c.latency_gpus_exact), FMT["num"]),
            "M": (f'=IF(ISNUMBER(L{r}),{F.whole_gpus(f"L{r}/A{r}", f"A{r}")},"{NONE}")', _num(c.latency_gpus), "0"),
            "N": (f'=IF(AND(B{r},ISNUMBER(H{r}),ISNUMBER(M{r})),MAX(H{r},J{r},M{r}),"")',
                  c.load if (considered and not math.isinf(c.load)) else "", "0"),
        }
        for col, (formula, cached, fmt) in f.items():
            sh.put(col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt))
    last = first + len(TP_DEGREES) - 1
    for name, col in (("TPDegreeCol", "A"), ("TPWeightsGiB", "D"), ("TPBudgetGiB", "E"), ("TPConversations", "F"),
                      ("TPMemoryExact", "G"), ("TPMemory", "H"), ("TPComputeExact", "I"), ("TPCompute", "J"),
                      ("TPMaxBatch", "K"), ("TPLatencyExact", "L"), ("TPLatency", "M"), ("TPLoad", "N")):
        book.define_range(name, sh, f"{col}{first}", f"{col}{last}")
    sh.row = last + 1
    rows.calc("TPChoiceRow", "Row of the chosen degree", "=MATCH(MIN(TPLoad),TPLoad,0)",
              TP_DEGREES.index(pa.tp) + 1, "row", "0", "the first (smallest) degree with the smallest load; #N/A if none fits")

    # Chart data: each path against peak rate at the chosen degree (linear in the rate).
    rows.section("Each path against peak rate (at the chosen degree): where the lines cross, the binding constraint flips")
    hdr = sh.row
    for i, label in enumerate(("x current peak", "Peak rate [req/s]", "Memory GPUs (exact)", "Compute GPUs (exact)",
                               "Latency GPUs (exact)")):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    mults = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)
    for k, x in enumerate(mults):
        r = hdr + 1 + k
        lat = pa.latency_gpus_exact
        sh.put("A", r, Cell(x, kind="input", fmt="0.00",
                            validation=Validation("decimal", "greaterThan", "0", None, False, "Multiple of peak",
                                                  "A multiple of the current peak rate to chart.", "Enter a positive number.")))
        sh.put("B", r, Cell(f"=PeakRate*A{r}", formula=True, cached=s.peak_rps * x, kind="calc", fmt=FMT["num"]))
        sh.put("C", r, Cell(f'=IF(ISNUMBER(MemoryGPUsExact),MemoryGPUsExact*A{r},"")', formula=True,
                            cached=pa.memory_gpus_exact * x if not math.isinf(pa.memory_gpus_exact) else "", kind="calc", fmt=FMT["num"]))
        sh.put("D", r, Cell(f"=ComputeGPUsExact*A{r}", formula=True, cached=pa.compute_gpus_exact * x, kind="calc", fmt=FMT["num"]))
        sh.put("E", r, Cell(f'=IF(ISNUMBER(LatencyGPUsExact),LatencyGPUsExact*A{r},"")', formula=True,
                            cached=lat * x if not math.isinf(lat) else "", kind="calc", fmt=FMT["num"]))
    end = hdr + len(mults)
    sh.charts.append({"kind": "scatter", "title": "GPUs needed by each path against peak rate",
                      "x_title": "Peak rate [requests/s]", "y_title": "GPUs (before rounding)",
                      "x": ("B", hdr + 1, end), "series": [("C", hdr, end), ("D", hdr, end), ("E", hdr, end)],
                      "anchor": f"G{hdr}"})
    sh.row = end + 1


def _fleet(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[3], "Section 4: the fleet as three numbers: the load, the redundancy, the purchasing unit.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80}, print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    pa, tr = e.sol.paths, e.sol.traffic
    rows.title("4 · The fleet — load, redundancy, purchasing unit: three numbers, not one",
               "Take the larger path, add redundancy, round to something buyable.")
    rows.section("The three numbers")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("LoadReplicas", "Replicas the peak needs", "=MAX(MemoryGPUs,ComputeGPUs,LatencyGPUs)/TP",
              pa.load_replicas, "replicas", FMT["int"], "the largest path, in replicas of TP GPUs")
    rows.calc("FleetLoad", "Load", "=LoadReplicas*TP", pa.load, "GPUs", FMT["gpus"], "the runbook: 4")
    rows.calc("FleetWithRedundancy", "With redundancy", "=(LoadReplicas+Redundancy)*TP", pa.with_redundancy, "GPUs",
              FMT["gpus"], "N+k replicas: the runbook's 4 + 1 = 5")
    rows.calc("FleetPurchased", "Purchased", "=ROUNDUP(FleetWithRedundancy/GPUsPerNode,0)*GPUsPerNode", pa.purchased,
              "GPUs", FMT["gpus"], "whole purchasing units: a node of 8")
    rows.calc("Nodes", "Purchasing units", "=FleetPurchased/GPUsPerNode", pa.purchased / e.s.gpus_per_node, "units",
              FMT["int"], "")
    rows.calc("HeadroomGPUs", "Bought beyond load and redundancy", "=FleetPurchased-FleetWithRedundancy",
              pa.purchased - pa.with_redundancy, "GPUs", FMT["gpus"], "room to grow before the next unit")
    rows.section("How each replica runs at peak")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("ReplicaTP", "GPUs per replica (TP)", "=TP", pa.tp, "GPUs", "0", "")
    batch = tr.concurrency / pa.load_replicas
    rows.calc("BatchPerReplica", "Conversations per load replica", "=Concurrency/LoadReplicas", batch, "conversations",
              FMT["num"], "")
    rows.calc("DecodeStepAtLoad", "Decode step at that batch",
              "=MAX(BatchPerReplica*DecodeFLOPsPerToken/TP/(PeakTFLOPS*MFU*TeraUnit),"
              "(WeightsBytes/TP+BatchPerReplica*KVBytesPerConversation/MIN(TP,KVShardLimit))"
              "/(GPUHBMTBps*BandwidthEfficiency*TeraUnit))",
              pa.decode_step_s, "s", FMT["s"], "roofline: the slower of FLOPs and bytes read")
    rows.calc("DecodeStepMet", "Within the inter-token target", "=DecodeStepAtLoad<=ITLTarget*(1+RoundingTolerance)",
              pa.decode_step_s <= e.s.itl_s * (1 + fleet.ROUNDING_TOLERANCE), "TRUE | FALSE", None, "")
    rows.calc("BindingNote", "Binding constraint", '="binds: "&Binding', f"binds: {e.sol.binding}", "", None, "")


def _cost(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[4], "Section 5: the bill, tokens, $/M tokens at the average utilisation, and the managed API.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80}, print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    b, s = e.sol.bill, e.s
    rows.title("5 · The cost — the monthly bill, $/M tokens at the average utilisation, the honest API comparison",
               "Peak sizes the fleet; average utilisation sizes the bill.")
    rows.section("The bill")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("BilledGPUs", "GPUs on the bill", '=IF(Billing="purchased",FleetPurchased,FleetWithRedundancy)',
              b.billed_gpus, "GPUs", FMT["gpus"], "rented: the fleet with redundancy; purchased: whole units")
    rows.calc("MonthlyCostUSD", "Monthly cost", "=BilledGPUs*GPUUSDPerHour*HoursPerMonth", b.monthly_usd, "USD/month",
              FMT["usd"], "5 x $3 x 730 = $10,950")
    rows.calc("TokensPerMonth", "Tokens per month at the average utilisation",
              "=PeakRate*(PromptMean+OutputMean)*AvgUtilisation*HoursPerMonth*SecondsPerHour", b.tokens_per_month,
              "tokens/month", FMT["tokens_month"], "40 x 2,300 x 0.40 x 730 x 3,600 = 96.7 billion")
    rows.calc("CostPerMTokUSD", "Cost per million tokens", f'=IF(TokensPerMonth>0,MonthlyCostUSD*TokensPerMillion/TokensPerMonth,"{NA}")',
              b.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"], "all tokens, input and output: ~$0.11")
    rows.section("The same traffic on a managed API")
    rows.header("Quantity", "Value", "Unit", "How")
    api = b.api_usd_per_mtok_blended is not None
    rows.calc("APIBlendedUSDPerMTok", "API price at this input/output mix",
              f'=IF(AND(ISNUMBER(APIInputUSDPerMTok),ISNUMBER(APIOutputUSDPerMTok)),(PromptMean*APIInputUSDPerMTok+OutputMean*APIOutputUSDPerMTok)/(PromptMean+OutputMean),"{NA}")',
              b.api_usd_per_mtok_blended if api else NA, "USD/Mtok", FMT["usd_mtok"], "weighted by mean prompt and output")
    rows.calc("APIMonthlyCostUSD", "API monthly cost", f'=IF(ISNUMBER(APIBlendedUSDPerMTok),TokensPerMonth*APIBlendedUSDPerMTok/TokensPerMillion,"{NA}")',
              b.api_monthly_usd if api else NA, "USD/month", FMT["usd"], "the runbook: ~$30k")
    rows.calc("SelfHostedAllInUSD", "Self-hosted with engineering and on-call", "=MonthlyCostUSD+OpsUSDPerMonth",
              b.monthly_usd + s.ops_usd_per_month, "USD/month", FMT["usd"], "")
    rows.calc("APISavingUSD", "API cost less self-hosted", f'=IF(ISNUMBER(APIMonthlyCostUSD),APIMonthlyCostUSD-SelfHostedAllInUSD,"{NA}")',
              (b.api_monthly_usd - b.monthly_usd - s.ops_usd_per_month) if api else NA, "USD/month", FMT["usd"],
              "positive: self-hosting is cheaper at this volume")
    be = b.breakeven_tokens_per_month
    rows.calc("BreakevenTokensPerMonth", "Break-even volume",
              f'=IF(ISNUMBER(APIBlendedUSDPerMTok),IF(APIBlendedUSDPerMTok>0,SelfHostedAllInUSD*TokensPerMillion/APIBlendedUSDPerMTok,"{NONE}"),"{NA}")',
              _num(be) if api else NA, "tokens/month", FMT["tokens_month"], "above this, this fleet is cheaper than the API (while it can carry it)")
    rows.section("$/M tokens by average utilisation: the fleet is fixed, so the cost per token falls as use rises")
    hdr = sh.row
    sh.put("A", hdr, Cell("Average utilisation", kind="header"))
    sh.put("B", hdr, Cell("$/M tokens", kind="header"))
    for k, u in enumerate(UTILISATION_TABLE):
        r = hdr + 1 + k
        sh.put("A", r, Cell(u, kind="input", fmt="0%", validation=Validation(
            "decimal", "between", "0.000001", "1", False, "Utilisation", "An average utilisation to tabulate.",
            "Enter a fraction between 0 and 1: 0.40, not 40.")))
        v = e.result.cost.usd_per_mtok_by_utilisation[k].usd_per_mtok
        sh.put("B", r, Cell(f"=MonthlyCostUSD*TokensPerMillion/(PeakRate*(PromptMean+OutputMean)*A{r}*HoursPerMonth*SecondsPerHour)",
                            formula=True, cached=v, kind="calc", fmt=FMT["usd_mtok"]))
    end = hdr + len(UTILISATION_TABLE)
    sh.charts.append({"kind": "scatter", "title": "$/M tokens against average utilisation", "x_title": "Average utilisation",
                      "y_title": "$ per million tokens", "x": ("A", hdr + 1, end), "series": [("B", hdr, end)],
                      "anchor": f"D{hdr}"})
    sh.row = end + 1


SENS_INPUT_COLS = (
    ("What-if", "text", None),
    ("Peak rate x", "ratio", "0.00"),
    ("p95 prompt x", "ratio", "0.00"),
    ("Inter-token target x", "ratio", "0.00"),
    ("KV dtype (blank: plan's)", "dtype", None),
    ("Weights dtype (blank: plan's)", "dtype", None),
    ("Prefix reuse (blank: plan's)", "fraction", "0%"),
    ("Avg utilisation (blank: plan's)", "fraction", "0%"),
)
SENS_RESULT_COLS = ("Load GPUs", "Fleet GPUs", "Purchased GPUs", "Binding", "Monthly USD", "$/M tokens", "TP")


def _sensitivities(book: Book, e: Engine) -> None:
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(SIX_TABS[5], "Section 6: what would change the answer: breakpoints, and what-ifs re-planned in full.",
                    widths={"A": 44, **{L(i): 12 for i in range(2, 16)}}, print_title_rows="1:2", landscape=True)
    rows = _Rows(book, sh)
    rows.title("6 · What would change it — breakpoints and what-ifs",
               "Each what-if row is a full re-plan with its changes (one formula per column: copy a row down to add your own).")
    s, plan = e.s, e.plan
    # Breakpoints: searched by the engine (a bisection is not a spreadsheet formula); values, dated by the build.
    rows.section("Breakpoints — where the purchase grows one unit, where the binding constraint flips "
                 "(searched by xlplan when the workbook was built; `xlplan check` says when they are stale)")
    rows.header("Input", "Unit", "Direction", "Now", "Purchase grows at", "Purchased after", "Binding flips at", "Binding after")
    for bp in e.result.breakpoints:
        r = sh.row
        vals = (bp.variable, bp.unit, bp.direction, bp.current, bp.fleet_step_at if bp.fleet_step_at is not None else "beyond x64",
                bp.purchased_after if bp.purchased_after is not None else "", bp.binding_flip_at if bp.binding_flip_at is not None else "beyond x64",
                bp.binding_after or "")
        for i, v in enumerate(vals):
            sh.put(i + 1, r, Cell(v, kind="static", fmt="#,##0.0000" if isinstance(v, float) else None))
        sh.row += 1

    rows.section("What-ifs — each row re-plans in full; blank cells keep the plan's value")
    hdr = sh.row
    # Column plan: inputs A-H, results I-O, working columns from P.
    work = ["rate", "p95", "p50", "p99", "itl", "kvd", "wd", "reuse", "util", "sig", "pmean", "pm2", "p99fit", "conv", "tis",
            "conc", "kvtl", "kvconv", "kvgib", "wbytes", "cdtype", "peak", "prefill", "decode", "demand"]
    cols: dict[str, str] = {}
    c = 16  # P
    for w in work:
        cols[w] = L(c)
        c += 1
    per_tp = {}
    for kind in ("mem", "comp", "lat", "load"):
        per_tp[kind] = [L(c + i) for i in range(len(TP_DEGREES))]
        c += len(TP_DEGREES)
    for w in ("choice", "memc", "compc", "latc", "tokens"):
        cols[w] = L(c)
        c += 1
    last_col = L(c - 1)
    labels = [x[0] for x in SENS_INPUT_COLS] + list(SENS_RESULT_COLS)
    for i, label in enumerate(labels):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    work_labels = {"rate": "Peak rate", "p95": "Prompt p95", "p50": "Prompt p50", "p99": "Prompt p99", "itl": "ITL",
                   "kvd": "KV dtype", "wd": "Weights dtype", "reuse": "Prefix reuse", "util": "Utilisation",
                   "sig": "Prompt sigma", "pmean": "Prompt mean", "pm2": "Prompt E[n²]", "p99fit": "Prompt p99 fit",
                   "conv": "Conversation tokens", "tis": "Time in system", "conc": "Concurrency", "kvtl": "KV B/token/layer",
                   "kvconv": "KV B/conversation", "kvgib": "KV GiB/conversation", "wbytes": "Weights bytes",
                   "cdtype": "Compute dtype", "peak": "Peak TFLOP/s", "prefill": "Prefill FLOP/request",
                   "decode": "Decode FLOP/token", "demand": "Demand TFLOP/s", "choice": "Chosen TP row",
                   "memc": "Memory GPUs", "compc": "Compute GPUs", "latc": "Latency GPUs", "tokens": "Tokens/month"}
    for w, col in cols.items():
        sh.put(col, hdr, Cell(work_labels[w], kind="header"))
    for kind, kcols in per_tp.items():
        for i, col in enumerate(kcols):
            sh.put(col, hdr, Cell(f"{kind} @TP{TP_DEGREES[i]}", kind="header"))
    tp_row = hdr - 1  # the degrees, referenced by every per-TP formula
    sh.put("A", tp_row, Cell("TP degree of each working column →", kind="note"))
    for kind, kcols in per_tp.items():
        for i, col in enumerate(kcols):
            sh.put(col, tp_row, Cell(f"=INDEX(TPDegrees,{i + 1})", formula=True, cached=TP_DEGREES[i], kind="calc", fmt="0"))
    sh.outline_columns = ("P", last_col)
    first = hdr + 1
    for k, w in enumerate(whatif.STANDARD_WHAT_IFS):
        r = first + k
        _sens_row(sh, r, tp_row, e, w, whatif.describe(plan, s, w), cols, per_tp)
    sh.print_area = f"A1:O{first + len(whatif.STANDARD_WHAT_IFS) - 1}"
    sh.row = first + len(whatif.STANDARD_WHAT_IFS)


def _sens_row(sh: Sheet, r: int, tp_row: int, e: Engine, w: whatif.WhatIf, label: str, C: dict, per_tp: dict) -> None:
    plan = e.plan
    try:
        sc = whatif.apply(plan, e.s, w)
        tr = steps.traffic(sc)
        cands = {tp: steps.paths(sc, tr, tp) for tp in TP_DEGREES}
        feasible = [cands[tp] for tp in sc.tp_options if not math.isinf(cands[tp].load)]
        sol = min(feasible, key=lambda c: (c.load, c.tp)) if feasible else None
    except ValueError:
        sc = tr = sol = None
        cands = {}
    p_sig = distributions.fit_lognormal(sc.prompt_p50, sc.prompt_p95, sc.prompt_p99)[1] if sc else NA
    put = lambda col, formula, cached, fmt=None: sh.put(col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt))
    inputs = (label, w.rate_x, w.prompt_p95_x, w.itl_x, w.kv_dtype, w.weights_dtype, w.prefix_reuse, w.average_utilisation)
    for i, (v, (title, kind, fmt)) in enumerate(zip(inputs, SENS_INPUT_COLS)):
        lists = {"KV": "KVDtypes", "Weights": "WeightDtypes"}
        if kind == "dtype":
            lst = lists[title.split()[0]]
            val = Validation("list", None, f"={lst}", None, True, title[:32], "Blank keeps the plan's dtype.", "Pick from the list.")
        elif kind == "ratio":
            val = Validation("decimal", "greaterThan", "0", None, False, title[:32], "A multiple of the plan's value (1 = unchanged).",
                             "Enter a positive multiple, e.g. 1.5.")
        elif kind == "fraction":
            val = Validation("decimal", "between", "0", "1", True, title[:32], "Blank keeps the plan's value: 0.40, not 40.",
                             "Enter a fraction between 0 and 1: 0.40, not 40.")
        else:
            val = Validation("textLength", "lessThanOrEqual", "255", None, True, "What-if", "Describe the change.", "Text up to 255 characters.")
        sh.put(i + 1, r, Cell(v, kind="input", fmt=fmt, validation=val))
    ok = sol is not None
    q = {k: f"{v}{r}" for k, v in C.items()}
    cached = {}
    if sc is not None:
        cached = {
            "rate": sc.peak_rps, "p95": sc.prompt_p95, "p50": sc.prompt_p50, "p99": sc.prompt_p99 if sc.prompt_p99 is not None else "",
            "itl": sc.itl_s, "kvd": w.kv_dtype or plan.model.kv_dtype, "wd": w.weights_dtype or plan.model.weights_dtype,
            "reuse": sc.prefix_reuse, "util": sc.average_utilisation, "sig": p_sig, "pmean": tr.prompt_mean,
            "pm2": tr.prompt_second_moment,
            "p99fit": distributions.lognormal_quantile(sc.prompt_p50, p_sig, 0.99), "conv": tr.conversation_tokens,
            "tis": tr.time_in_system_s, "conc": tr.concurrency, "kvtl": sc.kv_bytes_per_token_layer,
            "kvconv": tr.kv_bytes_per_conversation, "kvgib": tr.kv_gib_per_conversation, "wbytes": sc.weights_bytes,
            "cdtype": _dtype_of_peak(plan, e.gpu, w), "peak": sc.peak_tflops, "prefill": tr.prefill_flops_per_request,
            "decode": tr.decode_flops_per_token, "demand": tr.prefill_tflops + tr.decode_tflops,
        }
    put(C["rate"], f"=PeakRate*B{r}", cached.get("rate", NA))
    put(C["p95"], f"=PromptP95*C{r}", cached.get("p95", NA))
    put(C["p50"], f"=MIN(PromptP50,{q['p95']})", cached.get("p50", NA))
    put(C["p99"], f'=IF(ISNUMBER(PromptP99),MAX(PromptP99,{q["p95"]}),"")', cached.get("p99", NA))
    put(C["itl"], f"=ITLTarget*D{r}", cached.get("itl", NA))
    put(C["kvd"], f'=IF(E{r}="",KVDtype,E{r})', cached.get("kvd", NA))
    put(C["wd"], f'=IF(F{r}="",WeightsDtype,F{r})', cached.get("wd", NA))
    put(C["reuse"], f'=IF(ISNUMBER(G{r}),G{r},PrefixReuse)', cached.get("reuse", NA))
    put(C["util"], f'=IF(ISNUMBER(H{r}),H{r},AvgUtilisation)', cached.get("util", NA))
    p50, p95, p99 = q["p50"], q["p95"], q["p99"]
    put(C["sig"], "=" + F.lognormal_sigma(p50, p95, p99), cached.get("sig", NA))
    put(C["pmean"], "=" + F.lognormal_mean(p50, q["sig"]), cached.get("pmean", NA))
    put(C["pm2"], "=" + F.lognormal_second_moment(p50, q["sig"]), cached.get("pm2", NA))
    put(C["p99fit"], "=" + F.lognormal_p99(p50, q["sig"]), cached.get("p99fit", NA))
    put(C["conv"], "=" + F.conversation_tokens(p50, p99, q["p99fit"]), cached.get("conv", NA))
    put(C["tis"], "=" + F.time_in_system(q["itl"]), cached.get("tis", NA))
    put(C["conc"], f"={q['rate']}*{q['tis']}", cached.get("conc", NA))
    put(C["kvtl"], "=" + F.kv_bytes_per_token_layer(F.dtype_bytes(q["kvd"], "KVDtypes", "KVDtypeBytes")), cached.get("kvtl", NA))
    put(C["kvconv"], "=" + F.kv_bytes_per_conversation(q["kvtl"], q["conv"]), cached.get("kvconv", NA))
    put(C["kvgib"], f"={q['kvconv']}/GiB", cached.get("kvgib", NA))
    put(C["wbytes"], "=" + F.weights_bytes(F.dtype_bytes(q["wd"], "WeightDtypes", "WeightDtypeBytes")), cached.get("wbytes", NA))
    put(C["cdtype"], "=" + F.compute_dtype(q["wd"]), cached.get("cdtype", NA))
    put(C["peak"], "=" + F.peak_tflops(q["cdtype"]), cached.get("peak", NA))
    put(C["prefill"], "=" + F.prefill_flops(q["pmean"], q["pm2"]), cached.get("prefill", NA))
    put(C["decode"], "=" + F.decode_flops(q["pmean"]), cached.get("decode", NA))
    put(C["demand"], f"=({q['rate']}*{q['prefill']}*(1-{q['reuse']})+{q['rate']}*OutputMean*{q['decode']})/TeraUnit",
        cached.get("demand", NA))
    for i, tp in enumerate(TP_DEGREES):
        c = cands.get(tp)
        is_c = sc is not None and tp in sc.tp_options
        t = f"{per_tp['mem'][i]}${tp_row}"
        budget = f"({F.kv_budget_gib(q['wbytes'], t)})"
        shards = f"MIN({t},KVShardLimit)"
        conc, kvgib, demand, peak = q["conc"], q["kvgib"], q["demand"], q["peak"]
        whole = F.whole_gpus(f"{conc}/(MAX({budget},0)*{shards}/{kvgib})", t)
        mem = f'=IF({F.tp_considered(t)},IF({budget}>0,{whole},"{NONE}"),"")'
        put(per_tp["mem"][i], mem, (_num(c.memory_gpus) if is_c else "") if c else NA, "0")
        t = f"{per_tp['comp'][i]}${tp_row}"
        whole = F.whole_gpus(f"{demand}/({peak}*MFU)/{t}", t)
        put(per_tp["comp"][i], f'=IF({F.tp_considered(t)},{whole},"")',
            (c.compute_gpus if is_c else "") if c else NA, "0")
        t = f"{per_tp['lat'][i]}${tp_row}"
        batch = F.max_decode_batch(q["itl"], q["peak"], q["decode"], q["wbytes"], q["kvconv"], t, f"MIN({t},KVShardLimit)")
        whole = F.whole_gpus(f"{conc}/{batch}", t)
        put(per_tp["lat"][i], f'=IF({F.tp_considered(t)},IF({batch}>0,{whole},"{NONE}"),"")',
            (_num(c.latency_gpus) if is_c else "") if c else NA, "0")
        mc, cc, lc = per_tp["mem"][i] + str(r), per_tp["comp"][i] + str(r), per_tp["lat"][i] + str(r)
        load = c.load if (c and is_c and not math.isinf(c.load)) else ""
        put(per_tp["load"][i], f'=IF(AND(ISNUMBER({mc}),ISNUMBER({lc})),MAX({mc},{cc},{lc}),"")', load if c else NA, "0")
    loads = f"{per_tp['load'][0]}{r}:{per_tp['load'][-1]}{r}"
    mems = f"{per_tp['mem'][0]}{r}:{per_tp['mem'][-1]}{r}"
    comps = f"{per_tp['comp'][0]}{r}:{per_tp['comp'][-1]}{r}"
    lats = f"{per_tp['lat'][0]}{r}:{per_tp['lat'][-1]}{r}"
    inf = "infeasible"
    choice = TP_DEGREES.index(sol.tp) + 1 if ok else inf
    put(C["choice"], f'=IF(COUNT({loads})=0,"{inf}",MATCH(MIN({loads}),{loads},0))', choice, "0")
    put(C["memc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({mems},{q["choice"]}),"{inf}")', sol.memory_gpus if ok else inf, "0")
    put(C["compc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({comps},{q["choice"]}),"{inf}")', sol.compute_gpus if ok else inf, "0")
    put(C["latc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({lats},{q["choice"]}),"{inf}")', sol.latency_gpus if ok else inf, "0")
    b = steps.bill(sc, tr, sol) if ok else None
    put(C["tokens"], f"={q['rate']}*({q['pmean']}+OutputMean)*{q['util']}*HoursPerMonth*SecondsPerHour",
        b.tokens_per_month if ok else (NA if sc is None else steps.bill(sc, tr, cands[sc.tp_options[0]]).tokens_per_month), FMT["sci"])
    binding = fleet.binding_constraint(sol.memory_gpus, sol.compute_gpus, sol.latency_gpus)[0] if ok else inf
    m_, c_, l_ = q["memc"], q["compc"], q["latc"]
    mx = f"MAX({m_},{c_},{l_})"
    put("I", f'=IF(ISNUMBER({q["choice"]}),{mx},"{inf}")', sol.load if ok else inf, FMT["int"])
    put("O", f'=IF(ISNUMBER({q["choice"]}),INDEX(TPDegrees,{q["choice"]}),"{inf}")', sol.tp if ok else inf, "0")
    put("J", f'=IF(ISNUMBER({q["choice"]}),(I{r}/O{r}+Redundancy)*O{r},"{inf}")', sol.with_redundancy if ok else inf, FMT["int"])
    put("K", f'=IF(ISNUMBER({q["choice"]}),ROUNDUP(J{r}/GPUsPerNode,0)*GPUsPerNode,"{inf}")', sol.purchased if ok else inf, FMT["int"])
    put("L", f'=IF(ISNUMBER({q["choice"]}),{F.binding(m_, c_, l_)},"{inf}")', binding)
    put("M", f'=IF(ISNUMBER({q["choice"]}),IF(Billing="purchased",K{r},J{r})*GPUUSDPerHour*HoursPerMonth,"{inf}")',
        b.monthly_usd if ok else inf, FMT["usd"])
    put("N", f'=IF(ISNUMBER({q["choice"]}),M{r}*TokensPerMillion/{q["tokens"]},"{inf}")', b.usd_per_mtok if ok else inf, FMT["usd_mtok"])


def _dtype_of_peak(plan: Plan, gpu: GPUSpec, w: whatif.WhatIf) -> str:
    if w.weights_dtype is None:
        return compute_dtype(plan, gpu)
    return compute_dtype(plan.model_copy(update={"model": plan.model.model_copy(update={"weights_dtype": w.weights_dtype})}), gpu)


CHECKS: tuple[tuple[str, str, str], ...] = (
    ("PromptOrdered", "Prompt lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(PromptP50<=PromptP95,OR(NOT(ISNUMBER(PromptP99)),PromptP95<=PromptP99))"),
    ("OutputOrdered", "Output lengths ordered: p50 ≤ p95 ≤ p99",
     "=AND(OutputP50<=OutputP95,OR(NOT(ISNUMBER(OutputP99)),OutputP95<=OutputP99))"),
    ("FractionsInRange", "Fractions between 0 and 1 (0.40, not 40)",
     "=AND(AvgUtilisation>0,AvgUtilisation<=1,MFU>0,MFU<=1,MemoryUtilisation>0,MemoryUtilisation<=1,"
     "BandwidthEfficiency>0,BandwidthEfficiency<=1,PrefixReuse>=0,PrefixReuse<1)"),
    ("OneSpeed", "Exactly one of inter-token target and streaming speed", "=ISNUMBER(ITLInput)<>ISNUMBER(TokensPerSecondInput)"),
    ("ModelFound", "Model found on the Models sheet", "=ISNUMBER(ModelRow)"),
    ("GPUFound", "GPU found on the GPUs sheet", "=ISNUMBER(GPURow)"),
    ("TPDividesNode", "Tensor-parallel degree divides the purchasing unit",
     "=IF(ISNUMBER(TPInput),AND(TPInput<=GPUsPerNode,MOD(GPUsPerNode,TPInput)=0),TRUE)"),
    ("SomeTPFits", "The weights fit and the promise can be met at some degree", "=COUNT(TPLoad)>0"),
    ("FleetOrdered", "Load ≤ with redundancy ≤ purchased", "=AND(FleetLoad<=FleetWithRedundancy,FleetWithRedundancy<=FleetPurchased)"),
    ("TTFTCheck", "TTFT target met by a p95 prompt", "=TTFTMet"),
)


def _check_values(e: Engine) -> dict[str, bool]:
    """What each check evaluates to for a plan the engine accepted: the input checks hold by validation."""
    s, pa = e.s, e.sol.paths
    return {
        "PromptOrdered": True, "OutputOrdered": True, "FractionsInRange": True, "OneSpeed": True, "ModelFound": True,
        "GPUFound": True, "TPDividesNode": True, "SomeTPFits": True,
        "FleetOrdered": pa.load <= pa.with_redundancy <= pa.purchased,
        "TTFTCheck": pa.ttft_p95_s <= s.ttft_s,
    }


def _checks(book: Book, e: Engine) -> None:
    sh = book.sheet("Checks", "Supporting sheet: the checks block. Every row must be TRUE; the master check is shown on 1 Inputs.",
                    widths={"A": 60, "B": 14, "C": 60})
    rows = _Rows(book, sh)
    rows.title("Checks — every row must be TRUE", "Supporting sheet. The master check appears on 1 Inputs.")
    rows.header("Check", "Passes")
    values = _check_values(e)
    first = sh.row
    for name, label, formula in CHECKS:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        coord = sh.put("B", r, Cell(formula, formula=True, cached=values[name], kind="check", name=f"Check{name}"))
        book.define(f"Check{name}", sh, coord)
        sh.row += 1
    book.define_range("CheckResults", sh, f"B{first}", f"B{sh.row - 1}")
    sh.row += 1
    r = sh.row
    sh.put("A", r, Cell("All checks pass", kind="label", bold=True))
    coord = sh.put("B", r, Cell("=AND(CheckResults)", formula=True, cached=all(values.values()), kind="check"))
    book.define("AllChecksPass", sh, coord)


def _constants(book: Book) -> None:
    sh = book.sheet("Constants", "Supporting sheet: every constant the formulas use, labelled, and the drop-down lists.",
                    widths={"A": 28, "B": 46, "C": 22, "D": 16, "E": 70})
    sh.put("A", 1, Cell("Constants — every number the formulas use, with its unit", kind="title"))
    sh.put("A", 2, Cell("Supporting sheet. Formulas refer to these by name; none has a number written inside it.", kind="note"))
    for i, h in enumerate(("Name", "Meaning", "Value", "Unit", "Why")):
        sh.put(i + 1, 4, Cell(h, kind="header"))
    r = 5
    for name, label, value, unit, why in CONSTANTS:
        sh.put("A", r, Cell(name, kind="label"))
        sh.put("B", r, Cell(label, kind="label"))
        coord = sh.put("C", r, Cell(value, kind="const", fmt="General"))
        book.define(name, sh, coord)
        sh.put("D", r, Cell(unit, kind="unit"))
        sh.put("E", r, Cell(why, kind="note"))
        r += 1
    r += 1
    lists = (
        ("WeightDtypes", "WeightDtypeBytes", "Weight dtype", "Bytes per weight", [(d, memory.WEIGHT_BYTES_PER_PARAM[d]) for d in WEIGHT_DTYPES]),
        ("KVDtypes", "KVDtypeBytes", "KV dtype", "Bytes per cached element", [(d, memory.KV_BYTES_PER_ELEMENT[d]) for d in KV_DTYPES]),
    )
    for key_name, val_name, h1, h2, items in lists:
        sh.put("A", r, Cell(h1, kind="header"))
        sh.put("B", r, Cell(h2, kind="header"))
        first = r + 1
        for d, v in items:
            r += 1
            sh.put("A", r, Cell(d, kind="const"))
            sh.put("B", r, Cell(v, kind="const", fmt="General"))
        book.define_range(key_name, sh, f"A{first}", f"A{r}")
        book.define_range(val_name, sh, f"B{first}", f"B{r}")
        r += 2
    simple = (
        ("ComputeDtypes", "Compute dtypes", ["bf16", "fp8", "fp4"]),
        ("BillingModes", "Billing", ["rented", "purchased"]),
        ("MemoryConventions", "KV sizing convention", ["paged", "worst_case"]),
        ("Booleans", "Yes / no", [True, False]),
        ("TPDegrees", "Tensor-parallel degrees considered", list(TP_DEGREES)),
    )
    for name, header, items in simple:
        sh.put("A", r, Cell(header, kind="header"))
        first = r + 1
        for v in items:
            r += 1
            sh.put("A", r, Cell(v, kind="const"))
        book.define_range(name, sh, f"A{first}", f"A{r}")
        r += 2


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


def _catalogs(book: Book, e: Engine) -> tuple[int, int]:
    from openpyxl.utils import get_column_letter

    gs = book.sheet("GPUs", "Supporting sheet: the GPU catalog the drop-down on 1 Inputs picks from, with sources.",
                    widths={"A": 18, "B": 30, **{get_column_letter(3 + i): 13 for i in range(len(GPU_COLUMNS))}, "I": 60, "J": 90})
    heads = ["Key", "Name"] + [f"{f} [{u}]" for f, _, u in GPU_COLUMNS] + ["Price note", "Source"]
    _catalog_rows(book, gs, "GPUs — the catalog, with sources", heads, "GPUKeys", "GPUNames",
                  [(key, e.gpu if key == gpu_row_key(e.plan) and key not in catalog.gpu_names() else catalog.get_gpu(key))
                   for key in catalog_gpu_keys(e.plan)],
                  lambda spec: [getattr(spec, f) for f, _, _ in GPU_COLUMNS] + [spec.price_note, spec.source])
    keys = catalog_gpu_keys(e.plan)

    ms = book.sheet("Models", "Supporting sheet: model configs (Hugging Face config.json fields) the drop-down picks from, with sources.",
                    widths={"A": 26, "B": 30, **{get_column_letter(3 + i): 11 for i in range(len(MODEL_COLUMNS))}})
    heads = ["Key", "Name"] + [f for f, _, _ in MODEL_COLUMNS] + [f for f in MODEL_EXTRA]
    mkeys = catalog_model_keys(e.plan)
    _catalog_rows(book, ms, "Models — config.json fields, with sources", heads, "ModelKeys", "ModelNames",
                  [(key, e.model if key == model_row_key(e.plan) and key not in catalog.model_names() else catalog.get_model(key))
                   for key in mkeys],
                  lambda spec: [getattr(spec, f) for f, _, _ in MODEL_COLUMNS] + [getattr(spec, f) for f in MODEL_EXTRA])
    return len(mkeys), len(keys)


def _catalog_rows(book: Book, sh: Sheet, title: str, heads: list[str], key_name: str, name_name: str, entries, fields) -> None:
    sh.put("A", 1, Cell(title, kind="title"))
    sh.put("A", 2, Cell(sh.purpose + " A plan's own model or GPU is added as '(from plan)'.", kind="note"))
    for i, h in enumerate(heads):
        sh.put(i + 1, CATALOG_FIRST_ROW - 1, Cell(h, kind="header"))
    for k, (key, spec) in enumerate(entries):
        for i, v in enumerate([key, spec.name] + fields(spec)):
            sh.put(i + 1, CATALOG_FIRST_ROW + k, Cell(v, kind="const", fmt="General"))
    last = CATALOG_FIRST_ROW + len(entries) - 1
    book.define_range(key_name, sh, f"A{CATALOG_FIRST_ROW}", f"A{last}")
    book.define_range(name_name, sh, f"B{CATALOG_FIRST_ROW}", f"B{last}")


def _changelog(book: Book, e: Engine) -> None:
    sh = book.sheet("Change log", "Supporting sheet: who changed what and why. Add a row for every change.",
                    widths={"A": 14, "B": 24, "C": 100})
    sh.put("A", 1, Cell("Change log — add a row for every change", kind="title"))
    sh.put("A", 2, Cell("Supporting sheet.", kind="note"))
    for i, h in enumerate(("Date", "Who", "What changed and why")):
        sh.put(i + 1, 4, Cell(h, kind="header"))
    sh.put("A", 5, Cell("", kind="input"))
    sh.put("B", 5, Cell(f"xlplan {__version__}", kind="input"))
    sh.put("C", 5, Cell(f"Generated from the plan '{e.plan.name}' by `xlplan workbook`; formulas are the template's.", kind="input"))
    for r in range(6, 31):
        for col in "ABC":
            sh.put(col, r, Cell(None, kind="input"))


def build(plan: Plan) -> Book:
    """Lay out the workbook for a plan: the six tabs of the note, then the supporting sheets.

    Raises
    ------
    PlanningError
        When the plan cannot be met (the engine's own error: there is nothing to lay out).
    """
    e = Engine.run(plan)
    book = Book()
    _inputs(book, e)
    # Supporting sheets are laid out first where later tabs read their sizes, then moved behind the six.
    n_models, n_gpus = _catalogs(book, e)
    _model(book, e, n_models, n_gpus)
    _constraints(book, e)
    _fleet(book, e)
    _cost(book, e)
    _sensitivities(book, e)
    _checks(book, e)
    _constants(book)
    _changelog(book, e)
    order = list(SIX_TABS) + list(SUPPORT_TABS)
    book.sheets.sort(key=lambda s: order.index(s.title))
    return book
