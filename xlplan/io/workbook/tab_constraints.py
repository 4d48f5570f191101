"""Tab 3 · The two constraints: lengths and Little's Law, the memory and compute paths, the latency check, the TP table."""

from __future__ import annotations

import math

from xlplan import distributions, steps
from xlplan.io.workbook import formulas as F
from xlplan.io.workbook.cells import Book, Cell, Line, Validation, write_lines
from xlplan.io.workbook.common import (
    FMT,
    NONE,
    SIX_TABS,
    Engine,
    Rows,
    num,
)
from xlplan.io.workbook.support import put_banner
from xlplan.scenario import TP_DEGREES
from xlplan.units import TERA


def _vec_div(a: float, b: float) -> float:
    return a / b if b else float("inf")


def _vec_ceil(x: float) -> float:
    return float(math.ceil(x))

TP_COLS = ("TP", "Considered", "KV shards", "Weights per GPU [GiB]", "KV budget per GPU [GiB]", "Conversations per replica",
           "Memory GPUs (exact)", "Memory GPUs", "Compute GPUs (exact)", "Compute GPUs", "Max decode batch (engine) [sequences]",
           "Latency GPUs (exact)", "Latency GPUs", "Load GPUs", "With redundancy", "Purchased", "Billed", "Objective")


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
    budget = F.when('Engine="runbook"', runbook,
                    F.join(F.fixed("GPUMemoryGiB", e.gpu.memory_gib, 2), " GiB x ", F.pct("MemoryUtilisation", s.memory_utilisation),
                           " - ", F.fixed("WeightsGiBPerGPU", pa.weights_gib_per_gpu, 2), " GiB weights - ",
                           F.fixed("OverheadGiB", s.overhead_gib, 2), " GiB overhead"),
                    F.join(F.ref("Engine", s.engine), "'s rule at TP ", F.fixed("TP", pa.tp), ": ", F.pct("MemoryUtilisation", s.memory_utilisation),
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
             steps.activation_gib(s, int(pa.tp)), "GiB", FMT["gib"],
             "vLLM's profiled peak, TensorRT-LLM's workspace; 0 for the runbook's and SGLang's rules"),
        Line("KVBudgetGiB", "KV budget per GPU", "=INDEX(TPBudgetGiB,TPChoiceRow)", pa.kv_budget_gib_per_gpu, "GiB", FMT["gib"],
             F.join(budget, " = ", F.fixed("KVBudgetGiB", pa.kv_budget_gib_per_gpu, 2), " GiB"),
             udf="KV_BUDGET_GIB(GPUMemoryGiB,WeightsGiBPerGPU,MemoryUtilisation,OverheadGiB,Engine,ActivationGiB,TP,GPUVisibleGiB)"),
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
    pre, dec = steps.prefill_mfu(s), steps.decode_mfu(s)
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
             "in whole replicas", udf="COMPUTE_GPUS(DemandTFLOPS,PeakTFLOPS,MFU,TP)", needs="single_mfu"),
    ]


def constraints_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[2], "Section 3: the memory path and the compute path computed separately, the latency check, which binds.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, **{c: 13 for c in "EFGHIJKLMNOPQR"}},
                    print_title_rows="1:3", landscape=True, freeze="A4")
    rows = Rows(book, sh, engine=e)
    s, tr, pa = e.s, e.sol.traffic, e.sol.paths
    rows.title("3 · The two constraints — memory and compute, computed separately; the latency check; which binds",
               "Compute both, compare, then confirm in production: memory binds when the cache is pinned near 100%; "
               "compute binds when the GPU is saturated while the cache is comfortable.")
    put_banner(sh, e)
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
    write_lines(rows, _little_lines(e))
    rows.section("Memory path — the cache every conversation in flight holds, against the room per GPU")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, _memory_lines(e))
    rows.section("Compute path — prefill and decode FLOPs at peak, against peak x MFU")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, _compute_lines(e))

    rows.section("Latency check — can a replica meet the promise? (the serving model: each step's dense, expert and "
                 "attention parts on their rooflines, plus communication and the per-step overhead)")
    rows.header("Quantity", "Value", "Unit", "How")
    r = steps.replica(s, pa.tp)
    rows.calc("EPUsed", "Expert-parallel degree used", "=IF(AND(Experts>0,MOD(TP,ExpertParallel)=0),ExpertParallel,1)",
              r.ep, "GPUs", "0", "the policy's, where it divides the TP degree")
    rows.calc("MaxDecodeBatch", "Largest batch within the inter-token target", "=INDEX(TPMaxBatch,TPChoiceRow)",
              pa.max_decode_batch, "sequences", FMT["num"], "searched by the engine (a bisection is not a formula); the TP table")
    rows.calc("LatencyGPUsExact", "Latency path before rounding", "=INDEX(TPLatencyExact,TPChoiceRow)",
              num(pa.latency_gpus_exact), "GPUs", FMT["gpus2"], "")
    rows.calc("LatencyGPUs", "Latency path", "=INDEX(TPLatency,TPChoiceRow)", num(pa.latency_gpus), "GPUs", FMT["gpus"], "",
              udf="LATENCY_GPUS(Concurrency,MaxDecodeBatch,TP)")
    rows.calc("DecodeContext", "Cached context of a decoding sequence", "=PromptMean+OutputMean*MeanDecodePosition",
              steps.decode_context_tokens(tr), "tokens", FMT["num"], "its prompt and half its output")
    rows.calc("PrefillPerDecode", "Prompts started per decoded token",
              '=IF(LatencyStep="with_prefill",(1-PrefixReuse)/OutputMean,0)',
              (1 - s.prefix_reuse) / tr.output_mean if s.latency_with_prefill else 0.0, "prompts/token", "0.000000",
              "chunked prefill shares the decode steps (0: decode alone, the runbook)")
    q = float(distributions.length_at_percentile(s.prompt_p50, s.prompt_p95, s.prompt_p99, s.percentile))
    rows.calc("TTFTPrompt", "Prompt at the promise's percentile",
              "=IF(PromisePercentile=PercentP95,PromptP95,IF(PromisePercentile=PercentP50,PromptP50,"
              "IF(AND(PromisePercentile=PercentP99,ISNUMBER(PromptP99)),PromptP99,"
              "PromptP50*EXP(PromptSigma*NORMSINV(PromisePercentile/PercentPerFraction)))))",
              q, "tokens", FMT["num"], "the stated p50, p95 or p99; another percentile from the fitted lognormal")
    n = _vec_ceil(q / s.max_num_batched_tokens)
    rows.calc("TTFTChunks", "Prefill steps of that prompt", "=ROUNDUP(TTFTPrompt/MaxNumBatchedTokens,0)", n, "steps", "0",
              "chunks of the step budget")
    rows.calc("TTFTChunkTokens", "Tokens per chunk", "=TTFTPrompt/TTFTChunks", q / n, "tokens", FMT["num"], "")
    keys = (q * q + q) / 2.0 if s.causal_attention else q * q
    rows.calc("TTFTChunkKeys", "Key pairs per chunk",
              '=IF(AttentionFLOPsKind="causal",(TTFTPrompt*TTFTPrompt+TTFTPrompt)/CausalPairsDivisor,TTFTPrompt*TTFTPrompt)/TTFTChunks',
              keys / n, "token·keys", FMT["sci"], "")
    rows.calc("TTFTChunkPrefix", "Cached prefix each chunk reads", "=TTFTChunkTokens*(TTFTChunks-1)*MeanChunkPosition",
              q / n * (n - 1) / 2.0, "tokens", FMT["num"], "")
    rows.calc("TTFTP95", "TTFT of that prompt alone",
              "=TTFTChunks*(" + F.step_time("TP", "EPUsed", "KVShards", "0", "0", "0", "TTFTChunkTokens", "TTFTChunkKeys",
                                            "IF(SlidingWindowLayers>0,MIN(TTFTChunkKeys,SlidingWindow*TTFTChunkTokens),TTFTChunkKeys)",
                                            "TTFTChunkPrefix", "MIN(TTFTChunkPrefix,SlidingWindow)") + ")",
              pa.ttft_p95_s, "s", FMT["s"], "more replicas do not shorten this")
    rows.calc("TTFTMet", "TTFT target met", "=TTFTP95<=TTFTTarget", pa.ttft_p95_s <= s.ttft_s, "TRUE | FALSE", None, "")

    rows.section("Which binds")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("Binding", "Binding constraint",
              "=" + F.binding("MemoryGPUs", "ComputeGPUs", "LatencyGPUs", "TP"),
              e.sol.binding, "path", None,
              "the path that needs the most GPUs; 'both' when two tie, 'all' when three do; 'minimum replica' when all fit in one")
    rows.calc("TP", "Tensor-parallel degree chosen", "=INDEX(TPDegreeCol,TPChoiceRow)", pa.tp, "GPUs", "0",
              "fewest GPUs purchased, then fewest billed, then the smallest degree")

    erlang = _queueing_section(book, sh, rows, e) if e.result.closed_form is not None else None

    low, high = e.result.fleet.calibrated_low, e.result.fleet.calibrated_high
    if low is not None and high is not None:
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

    # The TP table: one row per degree, one formula per column.
    rows.section("Every tensor-parallel degree — the planner buys the fewest GPUs, then bills the fewest, then takes the smallest degree")
    hdr = sh.row
    for i, label in enumerate(TP_COLS):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    first = hdr + 1
    cands = {c.tp: c for c in e.sol.candidates}
    for k, tp in enumerate(TP_DEGREES):
        r = first + k
        c = cands.get(tp) or steps.paths(s, tr, tp)
        considered = tp in s.tp_options
        feasible = considered and not math.isinf(c.load)
        f = {
            "A": (f"=INDEX(TPDegrees,{k + 1})", tp, "0"),
            "B": ("=" + F.tp_considered(f"A{r}"), considered, None),
            "C": (f"=IF(AttentionDataParallel,A{r},MIN(A{r},KVShardLimit))", c.kv_shards, "0"),
            "D": (f"=WeightsBytes/A{r}/GiB", c.weights_gib_per_gpu, FMT["gib"]),
            "E": ("=" + F.kv_budget_engine("WeightsBytes", f"A{r}", F.activation_gib(f"A{r}")), c.kv_budget_gib_per_gpu, FMT["gib"]),
            "F": (f"=MAX(E{r},0)*C{r}/KVPerConversationGiB", c.conversations_per_replica, FMT["num"]),
            "G": (f'=IF(F{r}>0,A{r}*(Concurrency/F{r}),"{NONE}")', num(c.memory_gpus_exact), FMT["num"]),
            "H": (f'=IF(ISNUMBER(G{r}),{F.whole_gpus(f"G{r}/A{r}", f"A{r}")},"{NONE}")', num(c.memory_gpus), "0"),
            "I": ("=PrefillTFLOPS/(PeakTFLOPS*PrefillMFU)+DecodeTFLOPS/(PeakTFLOPS*DecodeMFU)", c.compute_gpus_exact, FMT["num"]),
            "J": ("=" + F.whole_gpus(f"I{r}/A{r}", f"A{r}"), c.compute_gpus, "0"),
            "K": None,
            "L": (f'=IF(K{r}>0,A{r}*(Concurrency/K{r}),"{NONE}")', num(c.latency_gpus_exact), FMT["num"]),
            "M": (f'=IF(ISNUMBER(L{r}),{F.whole_gpus(f"L{r}/A{r}", f"A{r}")},"{NONE}")', num(c.latency_gpus), "0"),
            "N": (f'=IF(AND(B{r},ISNUMBER(H{r}),ISNUMBER(M{r})),MAX(H{r},J{r},M{r}),"")',
                  c.load if (considered and not math.isinf(c.load)) else "", "0"),
            "O": (f'=IF(ISNUMBER(N{r}),(N{r}/A{r}+Redundancy)*A{r},"")', c.with_redundancy if feasible else "", "0"),
            "P": (f'=IF(ISNUMBER(O{r}),ROUNDUP(O{r}/GPUsPerNode,0)*GPUsPerNode,"")', c.purchased if feasible else "", "0"),
            "Q": (f'=IF(ISNUMBER(P{r}),IF(BillPurchased,P{r},O{r}),"")',
                  (c.purchased if s.bill_purchased else c.with_redundancy) if feasible else "", "0"),
            "R": (f'=IF(ISNUMBER(Q{r}),{F.tp_objective(f"P{r}", f"Q{r}", f"A{r}")},"")',
                  steps.tp_objective(c, c.purchased if s.bill_purchased else c.with_redundancy) if feasible else "", "0"),
        }
        for col, spec in f.items():
            if spec is None:  # searched by the engine: a value, shaded like the breakpoints
                sh.put(col, r, Cell(num(c.max_decode_batch) if not math.isinf(c.max_decode_batch) else 0.0, kind="static",
                                    fmt=FMT["num"]))
                continue
            formula, cached, fmt = spec
            sh.put(col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt))
    last = first + len(TP_DEGREES) - 1
    for name, col in (("TPDegreeCol", "A"), ("TPShards", "C"), ("TPWeightsGiB", "D"), ("TPBudgetGiB", "E"), ("TPConversations", "F"),
                      ("TPMemoryExact", "G"), ("TPMemory", "H"), ("TPComputeExact", "I"), ("TPCompute", "J"),
                      ("TPMaxBatch", "K"), ("TPLatencyExact", "L"), ("TPLatency", "M"), ("TPLoad", "N"),
                      ("TPWithRedundancy", "O"), ("TPPurchased", "P"), ("TPBilled", "Q"), ("TPObjective", "R")):
        book.define_range(name, sh, f"{col}{first}", f"{col}{last}")
    sh.row = last + 1
    rows.calc("TPChoiceRow", "Row of the chosen degree", "=MATCH(MIN(TPObjective),TPObjective,0)",
              TP_DEGREES.index(pa.tp) + 1, "row", "0",
              "fewest purchased, then fewest billed, then the smallest degree (Objective column); #N/A if none fits")

    # Chart data: each path against peak rate at the chosen degree (linear in the rate).
    rows.section("Each path against peak rate (at the chosen degree): where the lines cross, the binding constraint flips")
    hdr = sh.row
    for i, label in enumerate(("x current peak", "Peak rate [req/s]", "Memory path", "Compute path", "Latency path",
                               "GPUs purchased")):
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
        sh.put("F", r, Cell("=FleetPurchased", formula=True, cached=pa.purchased, kind="calc", fmt=FMT["gpus"]))
    end = hdr + len(mults)
    # The current peak, drawn as a vertical line from 0 to the top of the chart.
    mark = end + 2
    for col, label in (("A", "Marker"), ("B", "Peak rate [req/s]"), ("C", "Current peak")):
        sh.put(col, mark, Cell(label, kind="header"))
    exact = [v for v in (pa.memory_gpus_exact, pa.compute_gpus_exact, lat) if not math.isinf(v)]
    for k, (label, formula, cached) in enumerate((("bottom", "=0", 0.0),
                                                  ("top", f"=MAX(C{hdr + 1}:F{end})", max(max(exact) * mults[-1], pa.purchased)))):
        r = mark + 1 + k
        sh.put("A", r, Cell(label, kind="label"))
        sh.put("B", r, Cell("=PeakRate", formula=True, cached=s.peak_rps, kind="calc", fmt=FMT["num"]))
        sh.put("C", r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=FMT["num"]))
    paths = [{"col": c, "rows": (hdr, end), "colour": colour} for c, colour in (("C", "1F77B4"), ("D", "FF7F0E"), ("E", "2CA02C"))]
    sh.charts.append({"kind": "scatter", "title": "GPUs by path against peak rate",
                      "x_title": "Peak rate [requests/s]", "y_title": "GPUs (before rounding)",
                      "x": ("B", hdr + 1, end), "x_format": "#,##0", "y_format": "#,##0", "x_min": 0, "y_min": 0,
                      "series": paths + [{"col": "F", "rows": (hdr, end), "colour": "9467BD", "dash": "dash", "marker": "none"},
                                         {"col": "C", "rows": (mark, mark + 2), "x": ("B", mark + 1, mark + 2), "colour": "D62728",
                                          "dash": "sysDash", "marker": "none"}],
                      "anchor": f"H{hdr}", "width": 18, "height": 11})
    sh.row = mark + 3
    if erlang is not None:  # the working table last, outside the printed page
        sh.print_area = f"A1:Z{sh.row}"
        erlang()


ERLANG_ROWS = 16
"""Rows of each Erlang C table: a coarse one (every ⌈√a ÷ 4⌉-th replica count, spanning about 4√a above the offered
load a) and a fine one (every count across the coarse row found): exact for a up to 4,096. [rows]"""

ERLANG_COARSE_DIVISOR = 4.0
"""The coarse table's step is ⌈√a ÷ this⌉ replicas. [1]"""

ERLANG_ROWS_NAME = "ErlangTableRows"
"""Defined name of :data:`ERLANG_ROWS` on the Constants sheet: a coarse step wider than the fine table is past it."""

BEYOND_TABLE = "beyond the table"


def _static(rows: Rows, name: str, label: str, value, unit: str, fmt: str | None, how: str) -> None:
    """An engine value on its own row, shaded, named. [cell]"""
    sh = rows.sheet
    r = sh.row
    sh.put("A", r, Cell(label, kind="label"))
    coord = sh.put("B", r, Cell(num(value), kind="static", fmt=fmt))
    rows.book.define(name, sh, coord)
    sh.put("C", r, Cell(unit, kind="unit"))
    sh.put("D", r, Cell(how, kind="note"))
    sh.row += 1


def _queueing_section(book: Book, sh, rows: Rows, e: Engine):
    """The queueing path (Erlang C by POISSON, the Allen–Cunneen factor) and the closed form: the largest of four paths.

    Engine values (shaded): the step budget deployed, a replica's slots and step at the promise, the prefill at the
    percentile, the long-prefill-step limit, and the memory, compute and latency paths at the closed form's degree.
    Formulas: the service rate, the offered load, the wait target, a table of the wait at the percentile for each
    replica count, the fewest replicas within the target, and the closed-form fleet. Returns the function that lays
    the table out, called last on the tab.
    """
    cf, q = e.result.closed_form, e.result.queueing
    rows.section("Queueing path — the wait for a slot at the promise's percentile (Erlang C by POISSON, Allen–Cunneen); "
                 "and the closed form, the largest of the four paths")
    rows.header("Quantity", "Value", "Unit", "How")
    _static(rows, "QueueTP", "GPUs per replica (the closed form's degree)", cf.tp, "GPUs", "0",
            "engine value: the degree that buys the fewest GPUs on the closed form")
    _static(rows, "QueueStepBudget", "Step budget deployed", cf.step_budget_tokens, "tokens", FMT["gpus"],
            f"engine value ({cf.budget_chosen_by}): policy.max_num_batched_tokens")
    _static(rows, "QueueSlots", "Decodes per step within the inter-token target", q.slots_per_replica, "sequences", FMT["num"],
            "engine value: the serving model's step, prefill share included, within the step budget")
    _static(rows, "QueueStep", "The step at that batch", q.step_s, "s", FMT["s"], "engine value")
    _static(rows, "QueuePrefill", "Prefill of a prompt at the percentile, idle replica", q.prefill_at_percentile_s, "s", FMT["s"],
            "engine value")
    _static(rows, "QueueTailReplicas", "Replicas the long-prefill-step limit needs", q.tail_replicas, "replicas", FMT["gpus"],
            "engine value: 0 where a step with a prompt chunk stays within the inter-token target")
    rows.calc("QueueServiceRPS", "Requests one replica serves per second", "=IF(ISNUMBER(QueueStep),QueueSlots/(OutputMean*QueueStep),0)",
              q.service_rps_per_replica, "requests/s", FMT["num"], "slots ÷ (mean output × step)")
    rows.calc("QueueOffered", "Replicas busy on average (offered load)",
              f'=IF(QueueServiceRPS>0,PeakRate/QueueServiceRPS,"{NONE}")', num(q.offered_erlangs), "erlangs", FMT["num"],
              "peak rate ÷ service rate")
    rows.calc("QueueWaitTarget", "Longest wait for a slot allowed", "=TTFTTarget-QueuePrefill", q.wait_target_s, "s", FMT["s"],
              "the TTFT promise less the prefill")
    tail = 1.0 - e.s.percentile / 100.0
    rows.calc("QueueTailFraction", "Requests allowed past the target", "=1-PromisePercentile/PercentPerFraction", tail,
              "fraction", FMT["num"], "")
    from xlplan import queue_path, queueing

    rows.calc("QueueACFactor", "Allen–Cunneen factor", "=(ArrivalCV2+QueueServiceCV2)/AllenCunneenDivisor",
              queueing.allen_cunneen_factor(e.s.arrival_cv2, queue_path.SERVICE_CV2), "1", FMT["num"],
              "1 for Poisson arrivals and exponential service")
    # the table goes at the end of the tab (erlang(), below); the answer reads its first row within the target
    answer_row = sh.row
    sh.row += 1
    gpus_row = sh.row
    sh.row += 1
    cf_rows_start = sh.row
    sh.row += 5
    end = sh.row
    a = q.offered_erlangs
    service_s = 1.0 / q.service_rps_per_replica if q.service_rps_per_replica > 0 else math.inf

    def wait(n: int):
        """(P(wait), wait at the percentile, within the target) at n replicas, as the table's formulas give them."""
        if not (math.isfinite(a) and a > 0):
            return 1.0, NONE, False
        c = queueing.erlang_c(n, a)
        w = queueing.wait_at_percentile_s(n, e.s.peak_rps, service_s, e.s.percentile, e.s.arrival_cv2, queue_path.SERVICE_CV2)
        return c, w, w <= q.wait_target_s

    def table(title: str, first_n: str, next_n: str, ns: list[int], prefix: str) -> None:
        rows.section(title)
        rows.header("Replicas", "P(wait) (Erlang C)", "Wait at percentile [s]", "Within target")
        first = sh.row
        for k, n in enumerate(ns):
            row = sh.row
            sh.put("A", row, Cell(first_n if k == 0 else next_n.format(prev=row - 1), formula=True, cached=n, kind="calc",
                                  fmt=FMT["gpus"]))
            c, w, meets = wait(n)
            p_n, p_below = f"POISSON(A{row},QueueOffered,FALSE)", f"POISSON(A{row}-1,QueueOffered,TRUE)"
            sh.put("B", row, Cell(f"=IFERROR({p_n}/({p_n}+(1-QueueOffered/A{row})*{p_below}),1)", formula=True, cached=c,
                                  kind="calc", fmt=FMT["num"]))
            sh.put("C", row, Cell(f"=IFERROR(IF(B{row}<=QueueTailFraction,0,LN(B{row}/QueueTailFraction)/(A{row}-QueueOffered)"
                                  f"/QueueServiceRPS*QueueACFactor),\"{NONE}\")", formula=True, cached=w, kind="calc",
                                  fmt=FMT["s"]))
            sh.put("D", row, Cell(f"=IF(ISNUMBER(C{row}),C{row}<=QueueWaitTarget,FALSE)", formula=True, cached=meets, kind="calc"))
            sh.row += 1
        book.define_range(f"{prefix}N", sh, f"A{first}", f"A{sh.row - 1}")
        book.define_range(f"{prefix}Meets", sh, f"D{first}", f"D{sh.row - 1}")

    ok = math.isfinite(a) and a > 0
    base = max(1, int(a) + 1) if ok else 1
    step = max(1, math.ceil(math.sqrt(a) / ERLANG_COARSE_DIVISOR)) if ok else 1
    coarse = [base + k * step for k in range(ERLANG_ROWS)]
    hit = next((n for n in coarse if wait(n)[2]), None)
    fine_start = max(base, hit - step + 1) if hit is not None else base
    fine = [fine_start + k for k in range(ERLANG_ROWS)]

    def erlang() -> None:

        rows.section("Erlang C — where the queueing path comes from: the wait at the percentile by replica count")
        rows.header("Quantity", "Value", "Unit", "How")
        rows.calc("QueueBase", "Fewest replicas above the offered load", "=IFERROR(MAX(1,INT(QueueOffered)+1),1)", base,
                  "replicas", FMT["gpus"], "")
        rows.calc("QueueCoarseStep", "Coarse table's step", "=IFERROR(MAX(1,ROUNDUP(SQRT(QueueOffered)/ErlangCoarseDivisor,0)),1)",
                  step, "replicas", FMT["gpus"], "a quarter of the offered load's square root: the coarse rows span ~4√a")
        coarse_at = sh.row
        sh.row += 1
        table("Coarse: every step-th replica count from the base", "=QueueBase", "=A{prev}+QueueCoarseStep", coarse,
              "QueueCoarse")
        sh.row, after = coarse_at, sh.row
        rows.calc("QueueFineStart", "Fine table starts at",
                  "=IFERROR(MAX(QueueBase,INDEX(QueueCoarseN,MATCH(TRUE,QueueCoarseMeets,0))-QueueCoarseStep+1),QueueBase)",
                  fine_start, "replicas", FMT["gpus"], "one coarse step below the first coarse row within the target")
        sh.row = after
        table("Fine: every replica count from there (the queueing path is its first row within the target)",
              "=QueueFineStart", "=A{prev}+1", fine, "QueueFine")

    sh.row = answer_row
    replicas = q.replicas if q.replicas is not None else NONE
    rows.calc("QueueingReplicas", "Fewest replicas keeping the wait within the target",
              f'=IF(OR(NOT(ISNUMBER(QueueOffered)),QueueWaitTarget<0),"{NONE}",IFERROR(MAX(QueueTailReplicas,'
              f'IF(QueueCoarseStep>{ERLANG_ROWS_NAME},"{BEYOND_TABLE}",INDEX(QueueFineN,MATCH(TRUE,QueueFineMeets,0)))),"{BEYOND_TABLE}"))', replicas, "replicas", FMT["gpus"],
              "the first row of the table below within the target, at least the long-prefill-step limit",
              udf="QUEUEING_REPLICAS(PeakRate,QueueServiceRPS,QueueWaitTarget,PromisePercentile,QueueTailReplicas,ArrivalCV2)")
    sh.row = gpus_row
    rows.calc("QueueingGPUs", "Queueing path", "=IF(ISNUMBER(QueueingReplicas),QueueingReplicas*QueueTP,QueueingReplicas)",
              cf.queueing_gpus if cf.queueing_gpus is not None else NONE, "GPUs", FMT["gpus"], "replicas × TP")
    sh.row = cf_rows_start
    _static(rows, "ClosedMemoryGPUs", "Memory path at the achieved time in system", cf.memory_gpus, "GPUs", FMT["gpus"],
            "engine value: the fewest replicas whose caches hold their own load (3 Constraints shows the runbook's)")
    _static(rows, "ClosedComputeGPUs", "Compute path at that degree", cf.compute_gpus, "GPUs", FMT["gpus"], "engine value")
    _static(rows, "ClosedLatencyGPUs", "Latency check at that degree", cf.latency_gpus, "GPUs", FMT["gpus"], "engine value")
    rows.calc("ClosedFormLoad", "Closed form: GPUs for the load",
              "=IF(ISNUMBER(QueueingGPUs),MAX(ClosedMemoryGPUs,ClosedComputeGPUs,ClosedLatencyGPUs,QueueingGPUs),"
              "MAX(ClosedMemoryGPUs,ClosedComputeGPUs,ClosedLatencyGPUs))", cf.load, "GPUs", FMT["gpus"],
              "the largest of the four paths")
    rows.calc("ClosedFormPurchased", "Closed form: with redundancy, in whole units",
              "=ROUNDUP((ClosedFormLoad+Redundancy*QueueTP)/GPUsPerNode,0)*GPUsPerNode", cf.purchased, "GPUs", FMT["gpus"],
              f"(load + redundancy × TP = {cf.with_redundancy}) rounded up to the purchasing unit")
    sh.row = end
    return erlang
