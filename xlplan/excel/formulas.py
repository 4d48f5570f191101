"""The engine's formulas written as Excel formula text, each once.

Every builder takes its arguments as Excel expressions (a defined name such as
``PromptP50``, or a cell such as ``R15``) and returns the expression that
computes it, so the vertical tabs and the sensitivity rows share one spelling of
each formula. They mirror the pure functions in :mod:`xlplan` named in each
docstring; the LibreOffice tests hold the two equal to 1e-9.

The prose builders at the end (:class:`Prose`) write explanatory text that quotes
figures ("40 req/s x 15.0 s = 600") as formulas too, with the text they show for
the engine's figures, so a line never goes stale when an input changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal


def lognormal_sigma(p50: str, p95: str, p99: str) -> str:
    """:func:`xlplan.distributions.fit_lognormal`'s sigma; p99 may be a blank cell."""
    return (f"IF(ISNUMBER({p99}),(ZScore95*LN({p95}/{p50})+ZScore99*LN({p99}/{p50}))/(ZScore95*ZScore95+ZScore99*ZScore99),"
            f"LN({p95}/{p50})/ZScore95)")


def lognormal_mean(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions._lognormal_mean`: p50 × exp(σ²/2), written without a numeral."""
    return f"{p50}*SQRT(EXP({sigma}*{sigma}))"


def lognormal_second_moment(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions._lognormal_second_moment`: p50² × exp(2σ²)."""
    return f"{p50}*{p50}*EXP({sigma}*{sigma})*EXP({sigma}*{sigma})"


def lognormal_p99(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions.lognormal_quantile` at 0.99."""
    return f"{p50}*EXP({sigma}*ZScore99)"


def conversation_tokens(p50: str, p99: str, p99_fit: str, out_p50: str = "OutputP50") -> str:
    """The length the cache is sized at: p50 + p50 (paged) or p99 + p99 (worst case, fitted where blank)."""
    return (f'IF(MemoryConvention="worst_case",IF(ISNUMBER({p99}),{p99},{p99_fit})'
            f"+IF(ISNUMBER(OutputP99),OutputP99,OutputP99Fitted),{p50}+{out_p50})")


def time_in_system(itl: str, ttft: str = "IF(IncludeTTFT,TTFTTarget,0)") -> str:
    """:func:`xlplan.serving.concurrency.time_in_system_s`: mean output × ITL, plus the TTFT when the policy counts it."""
    return f"OutputMean*{itl}+{ttft}"


def kv_bytes_per_conversation(per_token_layer: str, tokens: str) -> str:
    """:func:`xlplan.serving.memory.kv_bytes_per_conversation`: sliding-window layers hold at most the window."""
    return f"{per_token_layer}*((Layers-SlidingWindowLayers)*{tokens}+SlidingWindowLayers*MIN({tokens},SlidingWindow))"


def kv_bytes_per_token_layer(kv_bytes_per_element: str) -> str:
    """:func:`xlplan.serving.memory.kv_bytes_per_token_per_layer`: K and V per KV head (GQA), or one latent (MLA)."""
    return f'IF(AttentionKind="mla",KVLoraRank+QKRopeDim,KVTensors*KVHeads*HeadDim)*{kv_bytes_per_element}'


def dtype_bytes(dtype: str, keys: str, values: str) -> str:
    """Bytes per element of a dtype, from a two-column table on the Constants sheet."""
    return f"INDEX({values},MATCH({dtype},{keys},0))"


def weights_bytes(bytes_per_param: str, dtype: str = "WeightsDtype") -> str:
    """:func:`xlplan.serving.memory.weights_bytes`: decoder at the weight dtype; embeddings and vision tower 16-bit (an MXFP4 MoE
    checkpoint quantises only the routed experts)."""
    high = f"MAX({bytes_per_param},UnquantizedBytesPerParam)"
    return (f'IF(AND({dtype}="mxfp4",Experts>0),RoutedExpertParams*{bytes_per_param}+(ParamsTotal-RoutedExpertParams)*{high},'
            f"(ParamsTotal-EmbeddingParams-VisionParams)*{bytes_per_param}+(EmbeddingParams+VisionParams)*{high})")


def compute_dtype(weights_dtype: str) -> str:
    """:func:`xlplan.plan.engine_settings._weights_compute_dtype`: fp8 for fp8, fp4 for nvfp4/fp4 where the GPU has each; MXFP4 at the
    fp8 peak on GPUs with FP4 math (MXFP4 x MXFP8), bf16 elsewhere; int4/int8 weight-only at bf16."""
    return (f'IF(ComputeDtypeInput<>"",ComputeDtypeInput,IF(AND({weights_dtype}="fp8",GPUFP8TFLOPS>0),"fp8",'
            f'IF(AND(OR({weights_dtype}="fp4",{weights_dtype}="nvfp4"),GPUFP4TFLOPS>0),"fp4",'
            f'IF(AND({weights_dtype}="mxfp4",GPUFP4TFLOPS>0,GPUFP8TFLOPS>0),"fp8","bf16"))))')


def peak_tflops(dtype: str) -> str:
    """:meth:`xlplan.catalog.specs.GPUSpec.peak_tflops`."""
    return f'IF({dtype}="fp8",GPUFP8TFLOPS,IF({dtype}="fp4",GPUFP4TFLOPS,GPUBF16TFLOPS))'


def prefill_flops(mean: str, second_moment: str) -> str:
    """:func:`xlplan.serving.compute.prefill_flops_per_request`: 2·N·E[n] + 4·width·(full layers·K + window layers·min(K, w·E[n])),
    K the key pairs per request (causal or full)."""
    keys = prefill_keys(mean, second_moment)
    return (f"FLOPsPerMAC*ParamsActive*{mean}+AttentionFLOPs*AttentionWidth*((Layers-SlidingWindowLayers)*{keys}"
            f"+SlidingWindowLayers*MIN({keys},SlidingWindow*{mean}))")


def decode_flops(prompt_mean: str) -> str:
    """:func:`xlplan.serving.compute.decode_flops_per_token`, with attention over the cache when counted."""
    return (f"FLOPsPerMAC*ParamsActive+IF(DecodeAttention,AttentionFLOPs*Layers*({prompt_mean}+OutputMean*MeanDecodePosition)"
            "*AttentionWidth,0)")


def tp_considered(tp: str) -> str:
    """:func:`xlplan.plan.engine_settings.tp_options`: a divisor of the node, or the degree the plan fixes."""
    return f"AND({tp}<=GPUsPerNode,MOD(GPUsPerNode,{tp})=0,OR(NOT(ISNUMBER(TPInput)),TPInput={tp}))"


def tp_objective(purchased: str, billed: str, tp: str) -> str:
    """:func:`xlplan.plan.tp_choice.objective`: purchased × its weight + billed × its weight + the degree."""
    return f"{purchased}*TPObjectivePurchased+{billed}*TPObjectiveBilled+{tp}"


def whole_gpus(per_replica_ratio: str, tp: str) -> str:
    """:func:`xlplan.fleet.whole_replicas` × tp: a ratio in replicas rounded up with the float tolerance, in GPUs."""
    return f"ROUNDUP({per_replica_ratio}*(1-RoundingTolerance),0)*{tp}"


def binding(memory: str, compute: str, latency: str, tp: str | None = None) -> str:
    """:func:`xlplan.fleet.binding_constraint`'s label: the path needing the most GPUs, 'both'/'all' on ties, and
    'minimum replica' when every path needs just one replica."""
    top = f"MAX({memory},{compute},{latency})"
    label = (f'IF(AND({memory}={top},{compute}={top},{latency}={top}),"all",'
             f'IF(({memory}={top})+({compute}={top})+({latency}={top})>1,"both",'
             f'IF({memory}={top},"memory",IF({compute}={top},"compute","latency"))))')
    if tp is None:
        return label
    return f'IF(AND({memory}={tp},{compute}={tp},{latency}={tp}),"minimum replica",{label})'


def prefill_keys(mean: str, second_moment: str) -> str:
    """:func:`xlplan.serving.compute.prefill_keys_per_request`: E[n²] (full) or (E[n²] + E[n])/2 (causal)."""
    return f'IF(AttentionFLOPsKind="causal",({second_moment}+{mean})/CausalPairsDivisor,{second_moment})'


def _experts_touched(tokens: str) -> str:
    """:func:`xlplan.serving.step._experts_touched_fraction`: 1 − (1 − k/E)^T, 0 for a dense model.

    Written 1 − EXP(T·LN(1 − k/E)): LibreOffice's ``^`` gives #NUM! where the power underflows (0.875^7083, a long
    prompt chunk on gpt-oss-20b), while EXP goes to 0 as Excel's power does; every expert is touched when k = E."""
    return f"IF(Experts>0,IF(ExpertsPerToken<Experts,1-EXP(({tokens})*LN(1-ExpertsPerToken/Experts)),1),0)"


def _flops_time(decode_flops: str, prefill_flops: str, tp: str, peak: str, scale: str = "") -> str:
    s = f"*{scale}" if scale else ""
    return (f"({decode_flops})/({tp}*{peak}*TeraUnit{s}*DecodeMFU)"
            f"+({prefill_flops})/({tp}*{peak}*TeraUnit{s}*PrefillMFU)")


def step_time(tp: str, ep: str, shards: str, dec: str, dec_keys: str, dec_keys_w: str, pre: str, pre_keys: str,
              pre_keys_w: str, kv: str, kv_w: str) -> str:
    """:func:`xlplan.serving.step.step_time_s` as an Excel formula, the step time's workbook twin: overhead + the dense,
    expert and attention parts' rooflines + communication.

    Each argument is an Excel expression: the replica's TP and EP degrees and KV shards, then the step's decode tokens
    and their key pairs (unclipped, clipped at the window), prefill tokens and theirs, and the cached tokens it reads.
    """
    tokens = f"(({dec})+({pre}))"
    bw = "(GPUHBMTBps*TeraUnit*BandwidthEfficiency)"
    dense_flops = "FLOPsPerMAC*(ParamsActive-ExpertActiveParams)"
    dense = (f"MAX({_flops_time(f'{dense_flops}*({dec})', f'{dense_flops}*({pre})', tp, 'PeakTFLOPS')},"
             f"(WeightsBytes-ExpertWeightsBytes)/{tp}/{bw})")
    expert_flops = "FLOPsPerMAC*ExpertActiveParams"
    experts = (f"IF(Experts>0,MAX({_flops_time(f'{expert_flops}*({dec})', f'{expert_flops}*({pre})', tp, 'PeakTFLOPS', 'ExpertEfficiency')},"
               f"ExpertWeightsBytes*{_experts_touched(tokens)}/{tp}/{bw}),0)")
    full = "(Layers-SlidingWindowLayers)"
    attn_dec = f"AttentionFLOPs*AttentionWidth*({full}*({dec_keys})+SlidingWindowLayers*({dec_keys_w}))"
    attn_pre = f"AttentionFLOPs*AttentionWidth*({full}*({pre_keys})+SlidingWindowLayers*({pre_keys_w}))"
    attention = (f"MAX({_flops_time(attn_dec, attn_pre, tp, 'GPUBF16TFLOPS')},"
                 f"KVBytesPerTokenLayer*({full}*({kv})+SlidingWindowLayers*({kv_w}))/{shards}/{bw})")
    link = "(LinkGBps*GBUnit)"
    allreduce = f"IF({tp}>1,LinkLatencyS+RingAllReduceTraffic*({tp}-1)/{tp}*{tokens}*Hidden*ActivationBytes/{link},0)"
    comm = (f"AllReducesPerLayer*Layers*{allreduce}"
            f"+IF(AND({ep}>1,Experts>0),AllToAllsPerMoELayer*MoELayers*(LinkLatencyS+{tokens}*ExpertsPerToken/{ep}*Hidden*ActivationBytes"
            f"*({ep}-1)/{ep}/{link}),0)")
    return f"StepOverhead+{dense}+{experts}+{attention}+{comm}"


def memory_fraction(tp: str) -> str:
    """:func:`xlplan.plan.replica_at_tp.memory_fraction` at TP ``tp``: the fraction given, else the engine's default
    (0.9; SGLang's by the GPU's memory, the TP degree and the step budget, :func:`xlplan.serving.engines.sglang_mem_fraction_static`,
    its terms the Constants sheet's SGLang* names)."""
    tier = "MATCH(GPUMemoryGiB,SGLangTierFromGiB,1)"
    bs = f"IF({tp}<SGLangGraphTPLarge,INDEX(SGLangGraphBatchSmallTP,{tier}),INDEX(SGLangGraphBatchLargeTP,{tier}))"
    reserved = (f"SGLangReserveBaseMB+SGLangReservePerChunkTokenMB*MAX(MaxNumBatchedTokens,SGLangMinChunkTokens)"
                f"+{tp}*SGLangReservePerTPGPUMB+({bs})*(SGLangReservePerGraphSeqMB+IF(AttentionDataParallel,{tp}"
                f"*(SGLangDPReservePerGraphSeqMB+IF(({bs})>SGLangDPLargeAboveSeqs,SGLangDPLargeReservePerGraphSeqMB,0)),0))")
    floor = "IF(GPUMemoryGiB>SGLangReserveFloorAboveGiB,SGLangReserveFloorMB,0)"
    sglang = f"ROUND(1-MAX({reserved},{floor})/(GPUMemoryGiB*MiBPerGiB),SGLangFractionDecimals)"
    return f'IF(ISNUMBER(MemoryUtilisation),MemoryUtilisation,IF(Engine="sglang",{sglang},DefaultMemoryFraction))'


def kv_budget_engine(weights_bytes_: str, tp: str, activation: str) -> str:
    """:func:`xlplan.serving.engines.kv_budget_gib` by the plan's engine (the runbook's rule, vLLM's, SGLang's, TensorRT-LLM's),
    at the memory fraction :func:`memory_fraction` gives at ``tp``."""
    w = f"{weights_bytes_}/{tp}/GiB"
    non_torch = f"IF({tp}>1,NonTorchTPGiB,NonTorchGiB)"
    f = f"({memory_fraction(tp)})"
    return (f'IF(Engine="trtllm",{f}*(GPUVisibleGiB-{w}-({activation})-{non_torch}),'
            f'{f}*IF(Engine="runbook",GPUMemoryGiB,GPUVisibleGiB)-{w}'
            f'-IF(Engine="runbook",OverheadGiB,IF(Engine="vllm",({activation})+{non_torch},SGLangReserveGiB)))')


def activation_gib(tp: str) -> str:
    """:func:`xlplan.plan.replica_at_tp.activation_gib`: vLLM's profiled peak, TensorRT-LLM's workspace, 0 for the others."""
    return (f'IF(Engine="vllm",(SamplerBytesPerSeqVocab*MaxNumSeqs*Vocab+ForwardHiddenTensors*MaxNumBatchedTokens*Hidden*BF16Bytes)/GiB,'
            f'IF(Engine="trtllm",MaxNumBatchedTokens*(MLPUpProjections*Intermediate/{tp}+UnfusedHiddenTensors*Hidden)*BF16Bytes/GiB,0))')


# ---------------------------------------------------------------------------------------------- prose
# Explanatory text that quotes a figure is a formula too, so it follows the inputs. Each builder returns a Prose: the
# Excel text expression and what it evaluates to for the engine's figures (the cached value). Numbers are rounded by
# ROUND before they are formatted: LibreOffice and Excel round half away from zero on 15 significant digits, which
# ``_round`` mirrors; FIXED (not TEXT) gives thousands separators, because the `formulas` package's TEXT writes
# "0," for "#,##0" below 1, and FIXED uses the reader's own separators where TEXT's format codes are locale-bound.


@dataclass(frozen=True)
class Prose:
    """A line of text built by formula, and the text it shows for the engine's figures."""

    formula: str  # an Excel expression whose value is text (no leading '=')
    text: str  # what it evaluates to: the cached value


def _round(x: float, decimals: int) -> Decimal:
    """ROUND(x, decimals) as LibreOffice and Excel compute it: half away from zero, on 15 significant digits."""
    return Decimal(f"{x:.15g}").quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def rounded(x: float, decimals: int) -> float:
    """The value of ROUND(x, decimals) in LibreOffice and Excel (:func:`_round`). [x's unit]"""
    return float(_round(x, decimals))


def _lit(text: str) -> Prose:
    """Literal text."""
    return Prose('"' + text.replace('"', '""') + '"', text)


def fixed(expr: str, value: float, decimals: int = 0) -> Prose:
    """A number with thousands separators and a fixed number of decimals: FIXED(ROUND(x, d), d). [text]"""
    return Prose(f"FIXED(ROUND({expr},{decimals}),{decimals})", f"{_round(value, decimals):,.{decimals}f}")


def usd(expr: str, value: float, decimals: int = 0) -> Prose:
    """A dollar amount: "$" and :func:`fixed`. [text]"""
    return join("$", fixed(expr, value, decimals))


def short(expr: str, value: float, decimals: int = 2) -> Prose:
    """A number as few digits as it needs: whole numbers with thousands separators, else up to ``decimals`` decimals
    without trailing zeros and without thousands separators (12.5, 0.025, 40). [text]

    FIXED, never TEXT: a TEXT format code is read in the spreadsheet's locale (in German, "0.0#" groups thousands by
    its "." and shows 1.5 as "002"), where FIXED's only locale-dependent part is its decimal mark. The decimals shown
    are one plus the places short of ``decimals`` at which rounding still changes the number (0.025 with 4 decimals:
    ROUND to 1 and to 2 differ from ROUND to 4, ROUND to 3 does not, so 3 decimals)."""
    whole = _round(value, 0)
    if _round(value, decimals) == whole:
        text = f"{whole:,.0f}"
    else:
        text = f"{_round(value, decimals):.{decimals}f}".rstrip("0")
        text += "0" if text.endswith(".") else ""
    r = f"ROUND({expr},{decimals})"
    places = "1" + "".join(f"+(ROUND({expr},{k})<>{r})" for k in range(1, decimals))
    return Prose(f"IF({r}=ROUND({expr},0),FIXED(ROUND({expr},0),0),FIXED({r},{places},TRUE))", text)


def plural(expr: str, value: float, noun: str) -> Prose:
    """The noun for a count: 'GPU' where the count rounds to 1, else 'GPUs' (the note's rule). [text]"""
    return Prose(f'IF(ROUND({expr},0)=1,"{noun}","{noun}s")', noun if _round(value, 0) == 1 else f"{noun}s")


def pct(expr: str, value: float) -> Prose:
    """A fraction as a whole percentage (0.4 -> 40%), by FIXED rather than a locale-read TEXT format. [text]"""
    return Prose(f'FIXED(PercentPerFraction*ROUND({expr},2),0,TRUE)&"%"', f"{_round(value, 2) * 100:.0f}%")


def ref(expr: str, value: str) -> Prose:
    """A cell or name holding text (a GPU's name, the binding path)."""
    return Prose(f'{expr}&""', value)


def join(*parts: Prose | str) -> Prose:
    """Parts one after another; a str is literal text."""
    ps = [_lit(p) if isinstance(p, str) else p for p in parts]
    if not ps:
        return _lit("")
    return Prose("&".join(p.formula for p in ps), "".join(p.text for p in ps))


def when(condition: str, holds: bool, then: Prose | str, otherwise: Prose | str = "") -> Prose:
    """IF(condition, then, otherwise); ``holds`` is the condition's value for the engine's figures."""
    a = _lit(then) if isinstance(then, str) else then
    b = _lit(otherwise) if isinstance(otherwise, str) else otherwise
    return Prose(f"IF({condition},{a.formula},{b.formula})", a.text if holds else b.text)


def cell_formula(p: Prose) -> str:
    """The formula of a cell showing ``p``: an error in a figure it quotes (an edited input) shows as no text."""
    return f'=IFERROR({p.formula},"")'
