"""Tab 3 · The two constraints: lengths and Little's Law, the memory and compute paths, the latency check, the TP table."""

from __future__ import annotations

import math

from xlplan.excel import formulas as F
from xlplan.excel.cells import Book, Cell, Line, write_lines
from xlplan.excel.common import FMT, SIX_TABS, Engine, Rows, num
from xlplan.excel.erlang_tables import erlang_tables, queueing_section
from xlplan.excel.support import put_banner
from xlplan.excel.tp_table import paths_chart, tp_table
from xlplan.units import TERA


def _vec_ceil(x: float) -> float:
    return float(math.ceil(x))


def _little_lines(e: Engine) -> list[Line]:
    """Time in system and Little's Law."""
    s, tr = e.s, e.sol.traffic
    ttft = s.ttft_s if s.include_ttft else 0.0
    return [
        Line("TTFTCounted", "TTFT counted in time in system", "=IF(IncludeTTFT,TTFTTarget,0)", ttft, "s", FMT["s2"],
             "0 unless the policy adds it (the runbook leaves it out)"),
        Line("TimeInSystem", "Time in system", "=" + F.time_in_system("ITLTarget", "TTFTCounted"), tr.time_in_system_s, "s",
             FMT["s2"], F.join("mean output ", F.fixed("OutputMean", tr.output_mean), " tokens x ", F.short("ITLTarget", s.itl_s, 4),
                               " s", F.when("IncludeTTFT", s.include_ttft, F.join(" + TTFT ", F.short("TTFTCounted", ttft, 3), " s")),
                               " = ", F.fixed("TimeInSystem", tr.time_in_system_s, 1), " s"),
             udf="TIME_IN_SYSTEM(OutputP50,OutputP95,ITLTarget,OutputP99,TTFTCounted)"),
        Line("Concurrency", "Requests in flight (Little's Law)", "=PeakRate*TimeInSystem", tr.concurrency, "requests", FMT["num"],
             F.join(F.short("PeakRate", s.peak_rps), " req/s x ", F.fixed("TimeInSystem", tr.time_in_system_s, 1), " s = ",
                    F.short("Concurrency", tr.concurrency, 1), " in flight"),
             udf="LITTLES_LAW(PeakRate,TimeInSystem)"),
    ]


def _memory_lines(e: Engine) -> list[Line]:
    """The memory path: the cache in flight against the KV budget per GPU."""
    s, tr, pa = e.s, e.sol.traffic, e.sol.paths
    mem_exact = num(pa.memory_gpus_exact)
    runbook = s.engine == "runbook"
    fraction = e.fig.memory_fraction
    budget = F.when('Engine="runbook"', runbook,
                    F.join(F.fixed("GPUMemoryGiB", e.gpu.memory_gib, 2), " GiB x ", F.pct("MemoryFraction", fraction),
                           " - ", F.fixed("WeightsGiBPerGPU", pa.weights_gib_per_gpu, 2), " GiB weights - ",
                           F.fixed("OverheadGiB", s.overhead_gib, 2), " GiB overhead"),
                    F.join(F.ref("Engine", s.engine), "'s rule at TP ", F.fixed("TP", pa.tp), ": ", F.pct("MemoryFraction", fraction),
                           " of the memory less weights, activations and runtime (the TP table)"))
    return [
        Line("ConversationTokens", "Conversation length the cache is sized at",
             "=" + F.conversation_tokens("PromptP50", "PromptP99", "PromptP99Fitted"), tr.conversation_tokens, "tokens", FMT["tokens"],
             F.when('MemoryConvention="worst_case"', s.worst_case_memory, "p99 prompt + p99 output (worst case)",
                    "p50 prompt + p50 output (paged)")),
        Line("KVBytesPerConversation", "KV cache per conversation",
             "=" + F.kv_bytes_per_conversation("KVBytesPerTokenLayer", "ConversationTokens"), tr.kv_bytes_per_conversation,
             "bytes", FMT["int"], "cache per token per layer x the length (sliding-window layers hold at most the window)"),
        Line("KVPerConversationGiB", "KV cache per conversation", "=KVBytesPerConversation/GiB", tr.kv_gib_per_conversation,
             "GiB", FMT["gib"], "the bytes above ÷ 2^30", udf="KV_GIB_PER_CONVERSATION(ModelKey,ConversationTokens,KVDtype)",
             needs="model"),
        Line("KVTotalGiB", "KV cache in flight", "=Concurrency*KVBytesPerConversation/GiB", tr.kv_gib_total, "GiB", FMT["gib"],
             F.join(F.short("Concurrency", tr.concurrency, 1), " in flight x ", F.fixed("KVPerConversationGiB", tr.kv_gib_per_conversation, 3),
                    " GiB = ", F.fixed("KVTotalGiB", tr.kv_gib_total, 1), " GiB")),
        Line("WeightsGiBPerGPU", "Weights per GPU at the chosen TP", "=INDEX(TPWeightsGiB,TPChoiceRow)", pa.weights_gib_per_gpu,
             "GiB", FMT["gib"], ""),
        Line("ActivationGiB", "Engine's activation peak per GPU at the chosen TP", "=" + F.activation_gib("TP"),
             e.fig.activation_gib, "GiB", FMT["gib"],
             "vLLM's profiled peak, TensorRT-LLM's workspace; 0 for the runbook's and SGLang's rules"),
        Line("MemoryFraction", "Memory fraction the engine runs at, at the chosen TP", "=" + F.memory_fraction("TP"), fraction,
             "fraction", "0.0%", F.when("ISNUMBER(MemoryUtilisation)", s.memory_utilisation is not None, "as given on 1 Inputs",
                                        "the engine's default (SGLang's by the GPU's memory, TP and step budget)")),
        Line("KVBudgetGiB", "KV budget per GPU", "=INDEX(TPBudgetGiB,TPChoiceRow)", pa.kv_budget_gib_per_gpu, "GiB", FMT["gib"],
             F.join(budget, " = ", F.fixed("KVBudgetGiB", pa.kv_budget_gib_per_gpu, 2), " GiB"),
             udf="KV_BUDGET_GIB(GPUMemoryGiB,WeightsGiBPerGPU,MemoryFraction,OverheadGiB,Engine,ActivationGiB,TP,GPUVisibleGiB)"),
        Line("ConversationsPerReplica", "Conversations one replica holds", "=INDEX(TPConversations,TPChoiceRow)",
             pa.conversations_per_replica, "conversations", FMT["num"], "KV budget x KV shards ÷ cache per conversation"),
        Line("MemoryGPUsExact", "Memory path before rounding", "=INDEX(TPMemoryExact,TPChoiceRow)", mem_exact, "GPUs", FMT["gpus2"],
             F.when("ISNUMBER(MemoryGPUsExact)", isinstance(mem_exact, float),
                    F.join(F.short("Concurrency", tr.concurrency, 1), " in flight ÷ ",
                           F.fixed("ConversationsPerReplica", pa.conversations_per_replica, 1), " per replica x TP ", F.fixed("TP", pa.tp),
                           " = ", F.fixed("MemoryGPUsExact", mem_exact if isinstance(mem_exact, float) else 0.0, 2)),
                    "the weights leave no room for the cache at this degree")),
        Line("KVShards", "Ways each conversation's cache splits", "=INDEX(TPShards,TPChoiceRow)", pa.kv_shards, "GPUs", "0",
             "min(TP, KV heads); 1 for MLA"),
        Line("MemoryGPUs", "Memory path", "=INDEX(TPMemory,TPChoiceRow)", num(pa.memory_gpus), "GPUs", FMT["gpus"],
             "in whole replicas", udf="MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)"),
    ]


def _compute_lines(e: Engine) -> list[Line]:
    """The compute path: prefill and decode FLOP/s at peak against peak x MFU."""
    s, tr, pa = e.s, e.sol.traffic, e.sol.paths
    pre, dec = e.fig.prefill_mfu, e.fig.decode_mfu
    return [
        Line("PrefillKeysPerRequest", "Attention key pairs per prompt", "=" + F.prefill_keys("PromptMean", "PromptSecondMoment"),
             tr.prefill_keys_per_request, "token·keys", FMT["sci"], "causal: (E[n²] + E[n]) ÷ 2; full (the runbook): E[n²]"),
        Line("PrefillKeysWindowPerRequest", "Of those, within the sliding window",
             "=IF(SlidingWindowLayers>0,MIN(PrefillKeysPerRequest,SlidingWindow*PromptMean),PrefillKeysPerRequest)",
             tr.prefill_keys_window_per_request, "token·keys", FMT["sci"], "window layers attend to at most the window"),
        Line("PrefillFLOPsPerRequest", "Prefill per request", "=" + F.prefill_flops("PromptMean", "PromptSecondMoment"),
             tr.prefill_flops_per_request, "FLOP", FMT["sci"], "2·N·E[n] + 4·width·layers·key pairs: the distribution, not the mean"),
        Line("DecodeFLOPsPerToken", "Decode per output token", "=" + F.decode_flops("PromptMean"), tr.decode_flops_per_token,
             "FLOP/token", FMT["sci"], F.when("DecodeAttention", s.decode_attention, "2 x active parameters, plus attention over the cache",
                                              "2 x active parameters")),
        Line("PrefillTFLOPS", "Prefill demand at peak", "=PeakRate*PrefillFLOPsPerRequest*(1-PrefixReuse)/TeraUnit",
             tr.prefill_tflops, "TFLOP/s", FMT["tflops"],
             F.join(F.short("PeakRate", s.peak_rps), " req/s x ", F.fixed("PrefillFLOPsPerRequest/TeraUnit", tr.prefill_flops_per_request / TERA, 1),
                    " TFLOP per prompt x (1 - ", F.pct("PrefixReuse", s.prefix_reuse), " reuse) = ", F.fixed("PrefillTFLOPS", tr.prefill_tflops)),
             udf="PREFILL_TFLOPS(PeakRate,ModelKey,PromptP50,PromptP95,PromptP99,PrefixReuse,AttentionFLOPsKind)", needs="model"),
        Line("DecodeTFLOPS", "Decode demand at peak", "=PeakRate*OutputMean*DecodeFLOPsPerToken/TeraUnit", tr.decode_tflops,
             "TFLOP/s", FMT["tflops"],
             F.join(F.fixed("PeakRate*OutputMean", s.peak_rps * tr.output_mean), " tokens/s x the FLOPs per token above = ",
                    F.fixed("DecodeTFLOPS", tr.decode_tflops)),
             udf="DECODE_TFLOPS(PeakRate,ModelKey,OutputP50,OutputP95,OutputP99)", needs="model runbook_decode"),
        Line("DemandTFLOPS", "Total demand", "=PrefillTFLOPS+DecodeTFLOPS", tr.prefill_tflops + tr.decode_tflops, "TFLOP/s",
             FMT["tflops"], ""),
        Line("TFLOPSPerGPU", "Sustained per GPU", "=PeakTFLOPS*MFU", pa.tflops_per_gpu, "TFLOP/s", FMT["tflops"],
             F.join(F.fixed("PeakTFLOPS", s.peak_tflops), " peak x ", F.pct("MFU", s.mfu), " MFU = ", F.fixed("TFLOPSPerGPU", pa.tflops_per_gpu, 1))),
        Line("ComputeGPUsExact", "Compute path before rounding", "=INDEX(TPComputeExact,TPChoiceRow)", pa.compute_gpus_exact, "GPUs",
             FMT["gpus2"],
             F.join(F.fixed("PrefillTFLOPS", tr.prefill_tflops), " ÷ (", F.fixed("PeakTFLOPS", s.peak_tflops), " x ",
                    F.pct("PrefillMFU", pre), ") + ", F.fixed("DecodeTFLOPS", tr.decode_tflops), " ÷ (", F.fixed("PeakTFLOPS", s.peak_tflops),
                    " x ", F.pct("DecodeMFU", dec), ") = ", F.fixed("ComputeGPUsExact", pa.compute_gpus_exact, 2))),
        Line("ComputeGPUs", "Compute path", "=INDEX(TPCompute,TPChoiceRow)", pa.compute_gpus, "GPUs", FMT["gpus"],
             "in whole replicas", udf="COMPUTE_GPUS(PrefillTFLOPS,PeakTFLOPS,PrefillMFU,TP,ComputeDtype,DecodeTFLOPS,DecodeMFU)"),
    ]


PROMPT_FIT_HOWS = ("least squares through p95 and p99 in log space; 0 for a fixed length", "p50 x exp(sigma²/2): shown, never entered",
                   "p50² x exp(2 sigma²): attention is quadratic, so the tail counts", "used by the worst-case convention when p99 is blank")
"""How each fitted figure of the prompt is computed (the output's rows repeat it and say nothing)."""


def _fit_lines(who: str, fit, mean: float, m2: float, how: tuple[str, str, str, str]) -> list[Line]:
    """One length's lognormal through its p50, p95 and p99: sigma, mean, E[n²] and the fitted p99 (the engine's fit,
    :attr:`xlplan.excel.figures.Figures.length_fits`)."""
    sigma = fit.sigma
    n50, sig = f"{who}P50", f"{who}Sigma"
    return [
        Line(sig, f"{who} spread (sigma of ln length)", "=" + F.lognormal_sigma(n50, f"{who}P95", f"{who}P99"),
             sigma, "ln tokens", FMT["sigma"], how[0]),
        Line(f"{who}Mean", f"{who} mean (fitted)", "=" + F.lognormal_mean(n50, sig), mean, "tokens", FMT["num"], how[1]),
        Line(f"{who}SecondMoment", f"{who} E[n²] (fitted)", "=" + F.lognormal_second_moment(n50, sig), m2, "tokens²",
             FMT["sci"], how[2]),
        Line(f"{who}P99Fitted", f"{who} p99 (fitted)", "=" + F.lognormal_p99(n50, sig),
             fit.p99_fitted, "tokens", FMT["num"], how[3]),
    ]


def _traffic_lines(e: Engine) -> list[Line]:
    """The prompt and output lengths fitted as lognormals, then time in system and Little's Law."""
    tr = e.sol.traffic
    return [*_fit_lines("Prompt", e.fig.length_fits["Prompt"], tr.prompt_mean, tr.prompt_second_moment, PROMPT_FIT_HOWS),
            *_fit_lines("Output", e.fig.length_fits["Output"], tr.output_mean, tr.output_second_moment, ("", "", "", "")),
            *_little_lines(e)]


def _latency_lines(e: Engine) -> list[Line]:
    """The latency path (the engine's largest batch within the inter-token target) and the TTFT of a prompt at the
    promise's percentile on an idle replica, chunk by chunk."""
    s, tr, pa = e.s, e.sol.traffic, e.sol.paths
    r = e.fig.replica
    q = e.fig.ttft_prompt_tokens
    n = _vec_ceil(q / e.fig.prefill_chunk_tokens)
    keys = (q * q + q) / 2.0 if s.causal_attention else q * q
    return [
        Line("EPUsed", "Expert-parallel degree used", "=IF(AND(Experts>0,MOD(TP,MAX(ExpertParallel,1))=0),MAX(ExpertParallel,1),1)",
             r.ep, "GPUs", "0", "the policy's, where it divides the TP degree; blank: 1 (the search tries more)"),
        Line("MaxDecodeBatch", "Largest batch within the inter-token target", "=INDEX(TPMaxBatch,TPChoiceRow)",
             pa.max_decode_batch, "sequences", FMT["num"], "searched by the engine (a bisection is not a formula); the TP table"),
        Line("LatencyGPUsExact", "Latency path before rounding", "=INDEX(TPLatencyExact,TPChoiceRow)",
             num(pa.latency_gpus_exact), "GPUs", FMT["gpus2"], ""),
        Line("LatencyGPUs", "Latency path", "=INDEX(TPLatency,TPChoiceRow)", num(pa.latency_gpus), "GPUs", FMT["gpus"], "",
             udf="LATENCY_GPUS(Concurrency,MaxDecodeBatch,TP)"),
        Line("DecodeContext", "Cached context of a decoding sequence", "=PromptMean+OutputMean*MeanDecodePosition",
             e.fig.decode_context_tokens, "tokens", FMT["num"], "its prompt and half its output"),
        Line("PrefillPerDecode", "Prompts started per decoded token",
             '=IF(LatencyStep="with_prefill",(1-PrefixReuse)/OutputMean,0)',
             (1 - s.prefix_reuse) / tr.output_mean if s.latency_with_prefill else 0.0, "prompts/token", "0.000000",
             "chunked prefill shares the decode steps (0: decode alone, the runbook)"),
        Line("TTFTPrompt", "Prompt at the promise's percentile",
             "=IF(PromisePercentile=PercentP95,PromptP95,IF(PromisePercentile=PercentP50,PromptP50,"
             "IF(AND(PromisePercentile=PercentP99,ISNUMBER(PromptP99)),PromptP99,"
             "PromptP50*EXP(PromptSigma*NORMSINV(PromisePercentile/PercentPerFraction)))))",
             q, "tokens", FMT["num"], "the stated p50, p95 or p99; another percentile from the fitted lognormal"),
        Line("TTFTChunks", "Prefill steps of that prompt", "=ROUNDUP(TTFTPrompt/PrefillChunkTokens,0)", n, "steps", "0",
             "chunks of the step budget (or of the long-prefill threshold)"),
        Line("TTFTChunkTokens", "Tokens per chunk", "=TTFTPrompt/TTFTChunks", q / n, "tokens", FMT["num"], ""),
        Line("TTFTChunkKeys", "Key pairs per chunk",
             '=IF(AttentionFLOPsKind="causal",(TTFTPrompt*TTFTPrompt+TTFTPrompt)/CausalPairsDivisor,TTFTPrompt*TTFTPrompt)/TTFTChunks',
             keys / n, "token·keys", FMT["sci"], ""),
        Line("TTFTChunkPrefix", "Cached prefix each chunk reads", "=TTFTChunkTokens*(TTFTChunks-1)*MeanChunkPosition",
             q / n * (n - 1) / 2.0, "tokens", FMT["num"], ""),
        Line("TTFTP95", "TTFT of that prompt alone",
             "=TTFTChunks*(" + F.step_time("TP", "EPUsed", "KVShards", "0", "0", "0", "TTFTChunkTokens", "TTFTChunkKeys",
                                           "IF(SlidingWindowLayers>0,MIN(TTFTChunkKeys,SlidingWindow*TTFTChunkTokens),TTFTChunkKeys)",
                                           "TTFTChunkPrefix", "MIN(TTFTChunkPrefix,SlidingWindow)") + ")",
             pa.ttft_p95_s, "s", FMT["s"], "more replicas do not shorten this"),
        Line("TTFTMet", "TTFT target met", "=TTFTP95<=TTFTTarget", pa.ttft_p95_s <= s.ttft_s, "TRUE | FALSE", None, ""),
    ]


def _binding_lines(e: Engine) -> list[Line]:
    """Which path binds, and the degree chosen."""
    return [
        Line("Binding", "Binding constraint", "=" + F.binding("MemoryGPUs", "ComputeGPUs", "LatencyGPUs", "TP"),
             e.sol.binding, "path", None,
             "the path that needs the most GPUs; 'both' when two tie, 'all' when three do; 'minimum replica' when all fit in one",
             udf="BINDING_CONSTRAINT(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP)"),
        Line("TP", "Tensor-parallel degree chosen", "=INDEX(TPDegreeCol,TPChoiceRow)", e.sol.paths.tp, "GPUs", "0",
             "fewest GPUs purchased, then fewest billed, then the smallest degree"),
    ]


LATENCY_TITLE = ("Latency check — can a replica meet the promise? (the serving model: each step's dense, expert and "
                 "attention parts on their rooflines, plus communication and the per-step overhead)")


def _sections(e: Engine) -> list[tuple[str, list[Line]]]:
    """The tab's sections of quantities, in order: (title, lines)."""
    return [
        ("Traffic — lengths fitted as a lognormal through p50/p95/p99; Little's Law", _traffic_lines(e)),
        ("Memory path — the cache every conversation in flight holds, against the room per GPU", _memory_lines(e)),
        ("Compute path — prefill and decode FLOPs at peak, against peak x MFU", _compute_lines(e)),
        (LATENCY_TITLE, _latency_lines(e)),
        ("Which binds", _binding_lines(e)),
    ]


def _calibrated_range(rows: Rows, e: Engine) -> None:
    """The fleet at the ends of the fitted efficiencies, where the plan was calibrated (engine values)."""
    low, high = e.result.fleet.calibrated_low, e.result.fleet.calibrated_high
    if low is None or high is None:
        return
    sh = rows.sheet
    rows.section("Calibrated range — the fleet at the ends of the fitted efficiencies (values from xlplan calibrate; "
                 "`xlplan check` flags them when inputs change)")
    rows.header("End", "With redundancy [GPUs]", "Purchased [GPUs]", "Efficiencies (prefill MFU, decode MFU, bandwidth)")
    for label, at in (("High efficiencies (fewer GPUs)", high), ("Low efficiencies (more GPUs)", low)):
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        sh.put("B", r, Cell(at.with_redundancy if at.feasible else "cannot be met", kind="static", fmt=FMT["gpus"]))
        sh.put("C", r, Cell(at.purchased if at.feasible else "", kind="static", fmt=FMT["gpus"]))
        eff = at.efficiencies
        sh.put("D", r, Cell(f"{eff['prefill_mfu']:.0%}, {eff['decode_mfu']:.0%}, {eff['bandwidth_efficiency']:.0%} "
                            f"(calibrated from {e.result.calibration_source})", kind="static"))
        sh.row += 1


def constraints_tab(book: Book, e: Engine) -> None:
    """Lay out 3 Constraints: the quantities section by section, the queueing path and closed form where the plan
    has them, the calibrated range, the TP table, the chart, and the Erlang C tables last (outside the print area)."""
    sh = book.sheet(SIX_TABS[2], "Section 3: the memory path and the compute path computed separately, the latency check, which binds.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, **{c: 13 for c in "EFGHIJKLMNOPQR"}},
                    print_title_rows="1:3", landscape=True, freeze="A4", flag_col="F")
    rows = Rows(book, sh, engine=e)
    rows.title("3 · The two constraints — memory and compute, computed separately; the latency check; which binds",
               "Compute both, compare, then confirm in production: memory binds when the cache is pinned near 100%; "
               "compute binds when the GPU is saturated while the cache is comfortable.")
    put_banner(sh, e)
    for title, lines in _sections(e):
        rows.section(title)
        rows.header("Quantity", "Value", "Unit", "How")
        write_lines(rows, lines)
    erlang = queueing_section(rows, e) if e.result.closed_form is not None else None
    _calibrated_range(rows, e)
    tp_table(rows, e)
    paths_chart(rows, e)
    if erlang is not None:  # the working table last, outside the printed page
        sh.print_area = f"A1:Z{sh.row}"
        erlang_tables(rows, e, erlang)
