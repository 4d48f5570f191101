"""The engine's formulas written as Excel formula text, each once.

Every builder takes its arguments as Excel expressions (a defined name such as
``PromptP50``, or a cell such as ``R15``) and returns the expression that
computes it, so the vertical tabs and the sensitivity rows share one spelling of
each formula. They mirror the pure functions in :mod:`xlplan` named in each
docstring; the LibreOffice tests hold the two equal to 1e-9.
"""

from __future__ import annotations


def lognormal_sigma(p50: str, p95: str, p99: str) -> str:
    """:func:`xlplan.distributions.fit_lognormal`'s sigma; p99 may be a blank cell."""
    return (f"IF(ISNUMBER({p99}),(ZScore95*LN({p95}/{p50})+ZScore99*LN({p99}/{p50}))/(ZScore95*ZScore95+ZScore99*ZScore99),"
            f"LN({p95}/{p50})/ZScore95)")


def lognormal_mean(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions.lognormal_mean`: p50 × exp(σ²/2), written without a numeral."""
    return f"{p50}*SQRT(EXP({sigma}*{sigma}))"


def lognormal_second_moment(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions.lognormal_second_moment`: p50² × exp(2σ²)."""
    return f"{p50}*{p50}*EXP({sigma}*{sigma})*EXP({sigma}*{sigma})"


def lognormal_p99(p50: str, sigma: str) -> str:
    """:func:`xlplan.distributions.lognormal_quantile` at 0.99."""
    return f"{p50}*EXP({sigma}*ZScore99)"


def conversation_tokens(p50: str, p99: str, p99_fit: str, out_p50: str = "OutputP50") -> str:
    """The length the cache is sized at: p50 + p50 (paged) or p99 + p99 (worst case, fitted where blank)."""
    return (f'IF(MemoryConvention="worst_case",IF(ISNUMBER({p99}),{p99},{p99_fit})'
            f"+IF(ISNUMBER(OutputP99),OutputP99,OutputP99Fitted),{p50}+{out_p50})")


def time_in_system(itl: str, ttft: str = "IF(IncludeTTFT,TTFTTarget,0)") -> str:
    """:func:`xlplan.concurrency.time_in_system_s`: mean output × ITL, plus the TTFT when the policy counts it."""
    return f"OutputMean*{itl}+{ttft}"


def kv_bytes_per_conversation(per_token_layer: str, tokens: str) -> str:
    """:func:`xlplan.memory.kv_bytes_per_conversation`: sliding-window layers hold at most the window."""
    return f"{per_token_layer}*((Layers-SlidingWindowLayers)*{tokens}+SlidingWindowLayers*MIN({tokens},SlidingWindow))"


def kv_bytes_per_token_layer(kv_bytes_per_element: str) -> str:
    """:func:`xlplan.memory.kv_bytes_per_token_per_layer`: K and V per KV head (GQA), or one latent (MLA)."""
    return f'IF(AttentionKind="mla",KVLoraRank+QKRopeDim,KVTensors*KVHeads*HeadDim)*{kv_bytes_per_element}'


def dtype_bytes(dtype: str, keys: str, values: str) -> str:
    """Bytes per element of a dtype, from a two-column table on the Constants sheet."""
    return f"INDEX({values},MATCH({dtype},{keys},0))"


def weights_bytes(bytes_per_param: str) -> str:
    """:func:`xlplan.memory.weights_bytes`: decoder at the weight dtype; embeddings and vision tower 16-bit."""
    return (f"(ParamsTotal-EmbeddingParams-VisionParams)*{bytes_per_param}"
            f"+(EmbeddingParams+VisionParams)*MAX({bytes_per_param},UnquantizedBytesPerParam)")


def compute_dtype(weights_dtype: str) -> str:
    """:func:`xlplan.scenario.compute_dtype`: the peak of the weights' format where the GPU has it."""
    return (f'IF(ComputeDtypeInput<>"",ComputeDtypeInput,IF(AND({weights_dtype}="fp8",GPUFP8TFLOPS>0),"fp8",'
            f'IF(AND(OR({weights_dtype}="fp4",{weights_dtype}="nvfp4",{weights_dtype}="mxfp4"),GPUFP4TFLOPS>0),"fp4","bf16")))')


def peak_tflops(dtype: str) -> str:
    """:meth:`xlplan.specs.GPUSpec.peak_tflops`."""
    return f'IF({dtype}="fp8",GPUFP8TFLOPS,IF({dtype}="fp4",GPUFP4TFLOPS,GPUBF16TFLOPS))'


def prefill_flops(mean: str, second_moment: str) -> str:
    """:func:`xlplan.compute.prefill_flops_per_request`: 2·N·E[n] + 4·width·(full layers·E[n²] + window layers·min(E[n²], w·E[n]))."""
    return (f"FLOPsPerMAC*ParamsActive*{mean}+AttentionFLOPs*AttentionWidth*((Layers-SlidingWindowLayers)*{second_moment}"
            f"+SlidingWindowLayers*MIN({second_moment},SlidingWindow*{mean}))")


def decode_flops(prompt_mean: str) -> str:
    """:func:`xlplan.compute.decode_flops_per_token`, with attention over the cache when counted."""
    return (f"FLOPsPerMAC*ParamsActive+IF(DecodeAttention,AttentionFLOPs*Layers*({prompt_mean}+OutputMean*MeanDecodePosition)"
            "*AttentionWidth,0)")


def tp_considered(tp: str) -> str:
    """:func:`xlplan.scenario.tp_options`: a divisor of the node, or the degree the plan fixes."""
    return f"AND({tp}<=GPUsPerNode,MOD(GPUsPerNode,{tp})=0,OR(NOT(ISNUMBER(TPInput)),TPInput={tp}))"


def kv_budget_gib(weights_bytes_: str, tp: str) -> str:
    """:func:`xlplan.memory.kv_budget_gib` at tensor-parallel degree ``tp``."""
    return f"GPUMemoryGiB*MemoryUtilisation-{weights_bytes_}/{tp}/GiB-OverheadGiB"


def whole_gpus(per_replica_ratio: str, tp: str) -> str:
    """:func:`xlplan.fleet.whole_replicas` × tp: a ratio in replicas rounded up with the float tolerance, in GPUs."""
    return f"ROUNDUP({per_replica_ratio}*(1-RoundingTolerance),0)*{tp}"


def max_decode_batch(itl: str, peak: str, decode_flops_: str, weights_bytes_: str, kv_conv_bytes: str, tp: str,
                     shards: str) -> str:
    """:func:`xlplan.latency.max_decode_batch`: the roofline solved for the batch at the inter-token target."""
    return (f"MIN({itl}*{peak}*DecodeMFU*TeraUnit*{tp}/{decode_flops_},"
            f"MAX({itl}*GPUHBMTBps*BandwidthEfficiency*TeraUnit-{weights_bytes_}/{tp},0)*{shards}/{kv_conv_bytes})")


def binding(memory: str, compute: str, latency: str) -> str:
    """:func:`xlplan.fleet.binding_constraint`'s label: the path needing the most GPUs, 'both'/'all' on ties."""
    top = f"MAX({memory},{compute},{latency})"
    return (f'IF(AND({memory}={top},{compute}={top},{latency}={top}),"all",'
            f'IF(({memory}={top})+({compute}={top})+({latency}={top})>1,"both",'
            f'IF({memory}={top},"memory",IF({compute}={top},"compute","latency"))))')
