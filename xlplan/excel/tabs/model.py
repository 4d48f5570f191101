"""Tab 2 · Model and precision: config fields from the Models sheet, parameters derived by formula, weights, cache."""

from __future__ import annotations

from xlplan.catalog import parameters
from xlplan.excel import formulas as F
from xlplan.excel.cells import Book, Line, write_lines
from xlplan.excel.common import (
    CATALOG_FIRST_ROW,
    FMT,
    GPU_COLUMNS,
    GPU_DERIVED,
    MODEL_COLUMNS,
    SIX_TABS,
    Engine,
    Rows,
    catalog_gpu_keys,
    catalog_model_keys,
    gpu_derived,
    gpus_col,
    models_col,
)
from xlplan.excel.inputs import gpu_row_key, model_row_key
from xlplan.excel.support import put_banner
from xlplan.serving import memory
from xlplan.units import GIB


def _catalog_formula(sheet: str, col: str, n: int, row_name: str) -> str:
    """INDEX of a column of a catalog sheet (Models, GPUs) at the chosen row. [formula]"""
    return f"=INDEX({sheet}!${col}${CATALOG_FIRST_ROW}:${col}${n + CATALOG_FIRST_ROW - 1},{row_name})"


def _config_lines(e: Engine, n_models: int) -> list[Line]:
    """The model's row on the Models sheet and each config field read from it."""
    m = e.model
    fields = [(field, name, unit, models_col(i), getattr(m, field)) for i, (field, name, unit) in enumerate(MODEL_COLUMNS)]
    return [
        Line("ModelRow", "Row on the Models sheet", "=MATCH(ModelKey,ModelKeys,0)",
             1 + catalog_model_keys(e.plan).index(model_row_key(e.plan)), "row", "0", "#N/A means the model is not on the Models sheet."),
        Line("ModelName", "Model", "=INDEX(ModelNames,ModelRow)", m.name, "", None, ""),
        *(Line(name, field.replace("_", " "), _catalog_formula("Models", col, n_models, "ModelRow"),
               raw if raw is not None else 0, unit, None if isinstance(raw, (bool, str)) else FMT["int"], field)
          for field, name, unit, col, raw in fields),
    ]


def _param_lines(e: Engine) -> list[Line]:
    """Parameters derived from the config: attention, experts, MLPs, layers, totals."""
    m, a = e.model, parameters
    gqa, mla = a.gqa_attention_params(m), a.mla_attention_params(m)  # the sheet computes both and picks one
    moe_layers = a.moe_layers(m)
    return [
        Line("AttnParamsGQA", "Attention per layer if GQA",
             "=Hidden*Heads*HeadDim+Hidden*KVHeads*HeadDim+Hidden*KVHeads*HeadDim+Heads*HeadDim*Hidden"
             "+IF(AttentionBias,Heads*HeadDim+KVHeads*HeadDim+KVHeads*HeadDim,0)+IF(AttentionOutBias,Hidden,0)"
             "+IF(QKNorm,HeadDim+HeadDim,0)",
             gqa, "parameters", FMT["int"], "q, k, v, o projections; biases and QK-norms where the family has them"),
        Line("AttnParamsMLA", "Attention per layer if MLA",
             "=IF(QLoraRank>0,Hidden*QLoraRank+QLoraRank+QLoraRank*Heads*(QKNopeDim+QKRopeDim),Hidden*Heads*(QKNopeDim+QKRopeDim))"
             "+Hidden*(KVLoraRank+QKRopeDim)+KVLoraRank+KVLoraRank*Heads*(QKNopeDim+VHeadDim)+Heads*VHeadDim*Hidden",
             mla, "parameters", FMT["int"], "low-rank query, the cached KV latent and its up-projections, output"),
        Line("AttnParams", "Attention per layer", '=IF(AttentionKind="mla",AttnParamsMLA,AttnParamsGQA)',
             a.attention_params_per_layer(m), "parameters", FMT["int"], "the one for this model's attention kind"),
        Line("ExpertParams", "One routed expert", "=GatedMLPMatrices*Hidden*MoEIntermediate+IF(ExpertBias,MoEIntermediate+MoEIntermediate+Hidden,0)",
             a.expert_params(m), "parameters", FMT["int"], "gated MLP of the expert width"),
        Line("RouterParams", "Router per MoE layer", "=Hidden*Experts+IF(RouterBias,Experts,0)",
             a.router_params(m), "parameters", FMT["int"], ""),
        Line("DenseMLPParams", "Dense MLP per layer", "=GatedMLPMatrices*Hidden*Intermediate",
             a.mlp_params_per_layer(m, False, False), "parameters", FMT["int"], "gate, up, down"),
        Line("MoEMLPParamsTotal", "MoE MLP per layer, all experts",
             "=Experts*ExpertParams+SharedExperts*GatedMLPMatrices*Hidden*MoEIntermediate+RouterParams",
             a.mlp_params_per_layer(m, True, False), "parameters", FMT["int"], ""),
        Line("MoEMLPParamsActive", "MoE MLP per layer, used per token",
             "=ExpertsPerToken*ExpertParams+SharedExperts*GatedMLPMatrices*Hidden*MoEIntermediate+RouterParams",
             a.mlp_params_per_layer(m, True, True), "parameters", FMT["int"], ""),
        Line("MoELayers", "MoE layers", "=IF(Experts>0,INT((Layers-FirstDenseLayers)/MoELayerStep),0)", moe_layers, "layers",
             FMT["int"], "after the leading dense layers, every n-th (Llama 4 Maverick: 24 of 48)"),
        Line("DenseLayers", "Dense-MLP layers", "=Layers-MoELayers", m.num_hidden_layers - moe_layers, "layers", FMT["int"], ""),
        Line("LayerCommonParams", "Attention and norms per layer", "=AttnParams+NormsPerLayer*Hidden",
             a.attention_params_per_layer(m) + m.norms_per_layer * m.hidden_size, "parameters", FMT["int"], ""),
        Line("DecoderParamsTotal", "Decoder, all parameters",
             "=Layers*LayerCommonParams+DenseLayers*DenseMLPParams+MoELayers*MoEMLPParamsTotal+Hidden",
             a.decoder_params(m, False), "parameters", FMT["int"], "layers plus the final norm"),
        Line("DecoderParamsActive", "Decoder, used per token",
             "=Layers*LayerCommonParams+DenseLayers*DenseMLPParams+MoELayers*MoEMLPParamsActive+Hidden",
             a.decoder_params(m, True), "parameters", FMT["int"], ""),
        Line("EmbeddingParams", "Embedding and output head", "=IF(TieEmbeddings,Vocab*Hidden,Vocab*Hidden+Vocab*Hidden)",
             a.embedding_params(m), "parameters", FMT["int"], "once if tied"),
        Line("ParamsTotal", "Parameters in memory", "=DecoderParamsTotal+EmbeddingParams+VisionParams",
             a.total_params(m), "parameters", FMT["int"], "what the weights occupy", udf="PARAMS_FROM_CONFIG(ModelKey)",
             needs="model"),
        Line("ParamsActive", "Parameters per token", "=DecoderParamsActive+EmbeddingParams",
             a.active_params(m), "parameters", FMT["int"], "what FLOPs count (2 x N per token)"),
        Line("RoutedExpertParams", "Routed experts, all MoE layers", "=MoELayers*Experts*ExpertParams",
             a.routed_expert_params(m), "parameters", FMT["int"], "read only where a step's tokens are routed"),
        Line("ExpertActiveParams", "Routed experts one token uses", "=MoELayers*ExpertsPerToken*ExpertParams",
             a.routed_expert_active_params(m), "parameters", FMT["int"], "k experts in every MoE layer"),

    ]


def _weight_lines(e: Engine) -> list[Line]:
    """The weight footprint at its dtype and the KV cache per token."""
    s = e.s
    bpp = memory.WEIGHT_BYTES_PER_PARAM[e.plan.model.weights_dtype]
    kvb = memory.KV_BYTES_PER_ELEMENT[e.plan.model.kv_dtype]
    return [
        Line("WeightBytesPerParam", "Bytes per weight", "=" + F.dtype_bytes("WeightsDtype", "WeightDtypes", "WeightDtypeBytes"),
             bpp, "bytes/parameter", "0.000000", "block scales included (Constants sheet)"),
        Line("WeightsBytes", "Weight footprint",
             "=" + F.weights_bytes("WeightBytesPerParam"),
             s.weights_bytes, "bytes", FMT["int"], "decoder at the weight dtype; embeddings and vision tower 16-bit"),
        Line("ExpertWeightsBytes", "Of which routed experts", "=RoutedExpertParams*WeightBytesPerParam",
             s.expert_weights_bytes, "bytes", FMT["int"], "a step reads the share its tokens touch"),
        Line("WeightsGiB", "Weight footprint", "=WeightsBytes/GiB", s.weights_bytes / GIB, "GiB", FMT["gib"], "",
             udf="WEIGHTS_GIB(ModelKey,WeightsDtype)", needs="model"),
        Line("KVBytesPerElement", "Bytes per cached element", "=" + F.dtype_bytes("KVDtype", "KVDtypes", "KVDtypeBytes"),
             kvb, "bytes/element", "0.0", ""),
        Line("KVBytesPerTokenLayer", "KV cache per token per layer",
             "=" + F.kv_bytes_per_token_layer("KVBytesPerElement"),
             s.kv_bytes_per_token_layer, "bytes", FMT["int"], "K and V per KV head (GQA), or one latent (MLA)"),
        Line("KVBytesPerToken", "KV cache per token, all layers", "=Layers*KVBytesPerTokenLayer",
             e.fig.kv_bytes_per_token, "bytes/token", FMT["int"], "",
             udf="KV_BYTES_PER_TOKEN(ModelKey,KVDtype)", needs="model"),
        Line("AttentionWidth", "Attention width", '=IF(AttentionKind="mla",INT(AVERAGE(Heads*(QKNopeDim+QKRopeDim),Heads*VHeadDim)),Heads*HeadDim)',
             s.attention_width, "elements", FMT["int"], "heads x head width (MLA: mean of the QK and V widths)"),
        Line("KVShardLimit", "Ways the cache can split across a TP group", '=IF(AttentionKind="mla",1,KVHeads)',
             s.kv_shard_limit, "GPUs", FMT["int"], "by KV head (GQA); an MLA latent is copied to every rank"),

    ]


def _gpu_lines(e: Engine, n_gpus: int) -> list[Line]:
    """The GPU's row on the GPUs sheet, its catalog figures, what the engine derives from it, and its peak."""
    g, s = e.gpu, e.s
    listed = [(field, name, unit, gpus_col(i), getattr(g, field)) for i, (field, name, unit) in enumerate(GPU_COLUMNS)]
    derived = [(field, name, unit, gpus_col(len(GPU_COLUMNS) + i), raw)
               for i, ((field, name, unit), raw) in enumerate(zip(GPU_DERIVED, gpu_derived(e.fig, g)))]
    return [
        Line("GPURow", "Row on the GPUs sheet", "=MATCH(GPUKey,GPUKeys,0)",
             1 + catalog_gpu_keys(e.plan).index(gpu_row_key(e.plan)), "row", "0", "#N/A means the GPU is not on the GPUs sheet."),
        Line("GPUName", "GPU", "=INDEX(GPUNames,GPURow)", g.name, "", None, ""),
        *(Line(name, field.replace("_", " "), _catalog_formula("GPUs", col, n_gpus, "GPURow"),
               raw if raw is not None else 0, unit, FMT["num"], field) for field, name, unit, col, raw in listed),
        *(Line(name, field.replace("_", " "), _catalog_formula("GPUs", col, n_gpus, "GPURow"),
               raw, unit, None if isinstance(raw, str) else FMT["int"], "what the engine derives from the GPU")
          for field, name, unit, col, raw in derived),
        Line("GPUVisibleGiB", "Memory CUDA can allocate", "=IF(GPUCatalogVisibleGiB>0,GPUCatalogVisibleGiB,GPUMemoryGiB-DriverReservedGiB)",
             s.visible_gib, "GiB", FMT["gib"], "measured where the catalog has it, else the driver total less the reserve"),
        Line("LinkGBps", "GPU-to-GPU bandwidth, one direction", "=IF(GPUCatalogLinkGBps>0,GPUCatalogLinkGBps,PCIeGen4GBps)",
             s.link_gbps, "GB/s", FMT["num"], "NVLink, Infinity Fabric or PCIe: what tensor-parallel all-reduces move over"),
        Line("LinkLatencyS", "Fixed time of one collective",
             "=IF(GPUCatalogLatencyUs>0,GPUCatalogLatencyUs*MicroUnit,IF(LinkGBps>FabricThresholdGBps,FabricLatencyS,PCIeLatencyS))",
             s.link_latency_s, "s", "0.000000", ""),
        Line("ComputeDtype", "Compute dtype of the peak",
             "=" + F.compute_dtype("WeightsDtype"),
             e.fig.compute_dtype, "dtype", None, "fp8 weights use the fp8 peak where the GPU has one"),
        Line("PeakTFLOPS", "Peak dense throughput", "=" + F.peak_tflops("ComputeDtype"),
             s.peak_tflops, "TFLOP/s", FMT["tflops"], ""),

    ]


def model_tab(book: Book, e: Engine, n_models: int, n_gpus: int) -> None:
    """Lay out 2 Model: the config from the Models sheet, the parameters derived from it, the weights and cache per
    token, and the GPU from the GPUs sheet."""
    sh = book.sheet(SIX_TABS[1], "Section 2: the model and precision: parameters derived from the config, weights, cache per token.",
                    widths={"A": 34, "B": 18, "C": 12, "D": 40, "E": 16}, print_title_rows="1:3", landscape=True, freeze="A4")
    rows = Rows(book, sh, engine=e)
    rows.title("2 · Model and precision — parameters from the config, weights, cache per token",
               "Config fields come from the Models sheet for the model chosen on 1 Inputs; the counts below are the "
               "arithmetic anyone can check.")
    put_banner(sh, e)
    sections = (
        ("The config (from the Models sheet)", ("Field", "Value", "Unit", "config.json field"), _config_lines(e, n_models)),
        ("Parameters, derived from the config", ("Quantity", "Value", "Unit", "How"), _param_lines(e)),
        ("Weights and cache per token", ("Quantity", "Value", "Unit", "How"), _weight_lines(e)),
        ("The GPU (from the GPUs sheet)", ("Field", "Value", "Unit", "How"), _gpu_lines(e, n_gpus)),
    )
    for title, header, lines in sections:
        rows.section(title)
        rows.header(*header)
        write_lines(rows, lines)
