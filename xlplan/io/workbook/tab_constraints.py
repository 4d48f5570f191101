"""Tab 3 · The two constraints: lengths and Little's Law, the memory and compute paths, the latency check, the TP table."""

from __future__ import annotations

import math

from xlplan import distributions, steps
from xlplan.io.workbook import formulas as F
from xlplan.io.workbook.cells import Book, Cell, Validation
from xlplan.io.workbook.common import (
    FMT,
    NONE,
    SIX_TABS,
    Engine,
    Rows,
    num,
)
from xlplan.scenario import TP_DEGREES

TP_COLS = ("TP", "Considered", "KV shards", "Weights per GPU", "KV budget per GPU", "Conversations per replica",
           "Memory GPUs (exact)", "Memory GPUs", "Compute GPUs (exact)", "Compute GPUs", "Max decode batch",
           "Latency GPUs (exact)", "Latency GPUs", "Load GPUs")


def constraints_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[2], "Section 3: the memory path and the compute path computed separately, the latency check, which binds.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, **{c: 13 for c in "EFGHIJKLMN"}},
                    print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh, engine=e)
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
    rows.calc("TTFTCounted", "TTFT counted in time in system", "=IF(IncludeTTFT,TTFTTarget,0)",
              s.ttft_s if s.include_ttft else 0.0, "s", '0.00 "s"', "0 unless the policy adds it (the runbook leaves it out)")
    rows.calc("TimeInSystem", "Time in system", "=" + F.time_in_system("ITLTarget", "TTFTCounted"),
              tr.time_in_system_s, "s", '0.00 "s"', "mean output x inter-token target (the runbook: 300 x 0.05 = 15 s)",
              udf="TIME_IN_SYSTEM(OutputP50,OutputP95,ITLTarget,OutputP99,TTFTCounted)")
    rows.calc("Concurrency", "Requests in flight (Little's Law)", "=PeakRate*TimeInSystem",
              tr.concurrency, "requests", FMT["num"], "arrival rate x time in system (40 x 15 = 600)",
              udf="LITTLES_LAW(PeakRate,TimeInSystem)")

    rows.section("Memory path — the cache every conversation in flight holds, against the room per GPU")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("ConversationTokens", "Conversation length the cache is sized at",
              "=" + F.conversation_tokens("PromptP50", "PromptP99", "PromptP99Fitted"),
              tr.conversation_tokens, "tokens", FMT["tokens"], "p50 prompt + p50 output (paged), or p99 + p99 (worst case)")
    rows.calc("KVBytesPerConversation", "KV cache per conversation",
              "=" + F.kv_bytes_per_conversation("KVBytesPerTokenLayer", "ConversationTokens"),
              tr.kv_bytes_per_conversation, "bytes", FMT["int"], "sliding-window layers hold at most the window")
    rows.calc("KVPerConversationGiB", "KV cache per conversation", "=KVBytesPerConversation/GiB",
              tr.kv_gib_per_conversation, "GiB", FMT["gib"], "the runbook: 0.281 GiB",
              udf="KV_GIB_PER_CONVERSATION(ModelKey,ConversationTokens,KVDtype)", needs="model")
    rows.calc("KVTotalGiB", "KV cache in flight", "=Concurrency*KVBytesPerConversation/GiB",
              tr.kv_gib_total, "GiB", FMT["gib"], "600 x 0.281 = 168.5 GiB")
    rows.calc("WeightsGiBPerGPU", "Weights per GPU at the chosen TP", "=INDEX(TPWeightsGiB,TPChoiceRow)",
              pa.weights_gib_per_gpu, "GiB", FMT["gib"], "")
    rows.calc("KVBudgetGiB", "KV budget per GPU", "=INDEX(TPBudgetGiB,TPChoiceRow)",
              pa.kv_budget_gib_per_gpu, "GiB", FMT["gib"], "memory x utilisation - weights - overhead (0.9 x 79.65 - 14.96 - 3.0 = 53.73)",
              udf="KV_BUDGET_GIB(GPUMemoryGiB,WeightsGiBPerGPU,MemoryUtilisation,OverheadGiB)")
    rows.calc("ConversationsPerReplica", "Conversations one replica holds", "=INDEX(TPConversations,TPChoiceRow)",
              pa.conversations_per_replica, "conversations", FMT["num"], "")
    rows.calc("MemoryGPUsExact", "Memory path before rounding", "=INDEX(TPMemoryExact,TPChoiceRow)",
              num(pa.memory_gpus_exact), "GPUs", FMT["gpus2"], "168.5 ÷ 53.73 = 3.14")
    rows.calc("KVShards", "Ways each conversation's cache splits", "=INDEX(TPShards,TPChoiceRow)", pa.kv_shards, "GPUs", "0",
              "min(TP, KV heads); 1 for MLA")
    rows.calc("MemoryGPUs", "Memory path", "=INDEX(TPMemory,TPChoiceRow)", num(pa.memory_gpus), "GPUs", FMT["gpus"],
              "in whole replicas", udf="MEMORY_GPUS(Concurrency,KVPerConversationGiB,KVBudgetGiB,TP,KVShards)")

    rows.section("Compute path — prefill and decode FLOPs at peak, against peak x MFU")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("PrefillFLOPsPerRequest", "Prefill per request",
              "=" + F.prefill_flops("PromptMean", "PromptSecondMoment"),
              tr.prefill_flops_per_request, "FLOP", FMT["sci"], "2·N·E[n] + 4·layers·E[n²]·width: the distribution, not the mean")
    rows.calc("DecodeFLOPsPerToken", "Decode per output token",
              "=" + F.decode_flops("PromptMean"),
              tr.decode_flops_per_token, "FLOP/token", FMT["sci"], "2 x active parameters")
    rows.calc("PrefillTFLOPS", "Prefill demand at peak", "=PeakRate*PrefillFLOPsPerRequest*(1-PrefixReuse)/TeraUnit",
              tr.prefill_tflops, "TFLOP/s", FMT["tflops"], "the runbook: 1,369",
              udf="PREFILL_TFLOPS(PeakRate,ModelKey,PromptP50,PromptP95,PromptP99,PrefixReuse)", needs="model")
    rows.calc("DecodeTFLOPS", "Decode demand at peak", "=PeakRate*OutputMean*DecodeFLOPsPerToken/TeraUnit",
              tr.decode_tflops, "TFLOP/s", FMT["tflops"], "the runbook: 193",
              udf="DECODE_TFLOPS(PeakRate,ModelKey,OutputP50,OutputP95,OutputP99)", needs="model runbook_decode")
    rows.calc("DemandTFLOPS", "Total demand", "=PrefillTFLOPS+DecodeTFLOPS", tr.prefill_tflops + tr.decode_tflops,
              "TFLOP/s", FMT["tflops"], "")
    rows.calc("TFLOPSPerGPU", "Sustained per GPU", "=PeakTFLOPS*MFU", pa.tflops_per_gpu, "TFLOP/s", FMT["tflops"],
              "989 x 0.40 = 395.6")
    rows.calc("ComputeGPUsExact", "Compute path before rounding", "=INDEX(TPComputeExact,TPChoiceRow)",
              pa.compute_gpus_exact, "GPUs", FMT["gpus2"], "1,562 ÷ 395.6 = 3.95")
    rows.calc("ComputeGPUs", "Compute path", "=INDEX(TPCompute,TPChoiceRow)", pa.compute_gpus, "GPUs", FMT["gpus"],
              "in whole replicas", udf="COMPUTE_GPUS(DemandTFLOPS,PeakTFLOPS,MFU,TP)", needs="single_mfu")

    rows.section("Latency check — can a replica meet the promise?")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("MaxDecodeBatch", "Largest batch within the inter-token target", "=INDEX(TPMaxBatch,TPChoiceRow)",
              pa.max_decode_batch, "conversations", FMT["num"], "roofline: FLOPs vs peak x MFU, bytes vs bandwidth x efficiency")
    rows.calc("LatencyGPUsExact", "Latency path before rounding", "=INDEX(TPLatencyExact,TPChoiceRow)",
              num(pa.latency_gpus_exact), "GPUs", FMT["gpus2"], "")
    rows.calc("LatencyGPUs", "Latency path", "=INDEX(TPLatency,TPChoiceRow)", num(pa.latency_gpus), "GPUs", FMT["gpus"], "",
              udf="LATENCY_GPUS(Concurrency,MaxDecodeBatch,TP)")
    rows.calc("PrefillFLOPsP95", "Prefill of a p95 prompt",
              "=" + F.prefill_flops("PromptP95", "PromptP95*PromptP95"),
              tr.prefill_flops_p95_prompt, "FLOP", FMT["sci"], "")
    rows.calc("TTFTP95", "TTFT of a p95 prompt alone", "=PrefillFLOPsP95/(TP*PeakTFLOPS*PrefillMFU*TeraUnit)",
              pa.ttft_p95_s, "s", FMT["s"], "more replicas do not shorten this")
    rows.calc("TTFTMet", "TTFT target met", "=TTFTP95<=TTFTTarget", pa.ttft_p95_s <= s.ttft_s, "TRUE | FALSE", None, "")

    rows.section("Which binds")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("Binding", "Binding constraint",
              "=" + F.binding("MemoryGPUs", "ComputeGPUs", "LatencyGPUs"),
              e.sol.binding, "path", None, "the path that needs the most GPUs; 'both' when two tie, 'all' when three do",
              udf="BINDING_CONSTRAINT(MemoryGPUs,ComputeGPUs,LatencyGPUs)")
    rows.calc("TP", "Tensor-parallel degree chosen", "=INDEX(TPDegreeCol,TPChoiceRow)", pa.tp, "GPUs", "0",
              "the degree that needs the fewest GPUs for the load (smallest on a tie)")

    low, high = e.result.fleet.calibrated_low, e.result.fleet.calibrated_high
    if low is not None and high is not None:
        rows.section("Calibrated range — the fleet at the ends of the fitted efficiencies (values from xlplan calibrate; "
                     "`xlplan check` flags them when inputs change)")
        rows.header("End", "With redundancy", "Purchased", "Efficiencies (prefill MFU, decode MFU, bandwidth)")
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
            "G": (f'=IF(F{r}>0,A{r}*(Concurrency/F{r}),"{NONE}")', num(c.memory_gpus_exact), FMT["num"]),
            "H": (f'=IF(ISNUMBER(G{r}),{F.whole_gpus(f"G{r}/A{r}", f"A{r}")},"{NONE}")', num(c.memory_gpus), "0"),
            "I": ("=PrefillTFLOPS/(PeakTFLOPS*PrefillMFU)+DecodeTFLOPS/(PeakTFLOPS*DecodeMFU)", c.compute_gpus_exact, FMT["num"]),
            "J": ("=" + F.whole_gpus(f"I{r}/A{r}", f"A{r}"), c.compute_gpus, "0"),
            "K": ("=" + F.max_decode_batch("ITLTarget", "PeakTFLOPS", "DecodeFLOPsPerToken", "WeightsBytes",
                                           "KVBytesPerConversation", f"A{r}", f"C{r}"), c.max_decode_batch, FMT["num"]),
            "L": (f'=IF(K{r}>0,A{r}*(Concurrency/K{r}),"{NONE}")', num(c.latency_gpus_exact), FMT["num"]),
            "M": (f'=IF(ISNUMBER(L{r}),{F.whole_gpus(f"L{r}/A{r}", f"A{r}")},"{NONE}")', num(c.latency_gpus), "0"),
            "N": (f'=IF(AND(B{r},ISNUMBER(H{r}),ISNUMBER(M{r})),MAX(H{r},J{r},M{r}),"")',
                  c.load if (considered and not math.isinf(c.load)) else "", "0"),
        }
        for col, (formula, cached, fmt) in f.items():
            sh.put(col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt))
    last = first + len(TP_DEGREES) - 1
    for name, col in (("TPDegreeCol", "A"), ("TPShards", "C"), ("TPWeightsGiB", "D"), ("TPBudgetGiB", "E"), ("TPConversations", "F"),
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
