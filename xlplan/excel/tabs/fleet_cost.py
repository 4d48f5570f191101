"""Tabs 4 and 5 · The fleet as three numbers, and the cost with the managed-API comparison."""

from __future__ import annotations

from xlplan import fleet
from xlplan.excel import formulas as F
from xlplan.excel.cells import Book, Cell, Line, Validation, write_lines
from xlplan.excel.common import FMT, NA, NONE, SIX_TABS, Engine, Rows, num
from xlplan.excel.support import put_banner
from xlplan.excel.tabs.owning import NEVER_IN_LIFE, ownership_lines, payback_shown
from xlplan.report.note import PARITY_WORDS
from xlplan.units import MILLION, SECONDS_PER_HOUR
from xlplan.words import PRICE_MISSING, count, verb


def _fleet_lines(e: Engine) -> list[Line]:
    """The three numbers: load, with redundancy, purchased."""
    pa, s = e.sol.paths, e.s
    return [
        Line("LoadReplicas", "Replicas the peak needs", "=MAX(MemoryGPUs,ComputeGPUs,LatencyGPUs)/TP", pa.load_replicas, "replicas",
             FMT["int"], F.join("the largest path in replicas: ", F.fixed("MAX(MemoryGPUs,ComputeGPUs,LatencyGPUs)", pa.load),
                                " ", F.plural("MAX(MemoryGPUs,ComputeGPUs,LatencyGPUs)", pa.load, "GPU"), " ÷ TP ", F.fixed("TP", pa.tp))),
        Line("FleetLoad", "Load", "=LoadReplicas*TP", pa.load, "GPUs", FMT["gpus"],
             F.join("the largest path: memory ", F.fixed("MemoryGPUs", pa.memory_gpus), ", compute ", F.fixed("ComputeGPUs", pa.compute_gpus),
                    ", latency ", F.fixed("LatencyGPUs", pa.latency_gpus), " GPUs"),
             udf="MIN(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))"),
        Line("FleetWithRedundancy", "With redundancy", "=(LoadReplicas+Redundancy)*TP", pa.with_redundancy, "GPUs", FMT["gpus"],
             F.join("N+k: (", F.fixed("LoadReplicas", pa.load_replicas), " + ", F.fixed("Redundancy", s.redundancy),
                    " spare) replicas x TP ", F.fixed("TP", pa.tp), " = ", F.fixed("FleetWithRedundancy", pa.with_redundancy)),
             udf="MEDIAN(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))"),
        Line("FleetPurchased", "Purchased", "=ROUNDUP(FleetWithRedundancy/GPUsPerNode,0)*GPUsPerNode", pa.purchased, "GPUs",
             FMT["gpus"], F.join(F.fixed("FleetWithRedundancy", pa.with_redundancy), " rounded up to whole purchasing units of ",
                                 F.fixed("GPUsPerNode", s.gpus_per_node), " = ", F.fixed("FleetPurchased", pa.purchased)),
             udf="MAX(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))"),
        Line("Nodes", "Purchasing units", "=FleetPurchased/GPUsPerNode", pa.purchased / s.gpus_per_node, "units", FMT["int"], ""),
        Line("HeadroomGPUs", "Bought beyond load and redundancy", "=FleetPurchased-FleetWithRedundancy",
             pa.purchased - pa.with_redundancy, "GPUs", FMT["gpus"], "room to grow before the next unit"),
    ]


def fleet_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[3], "Section 4: the fleet as three numbers: the load, the redundancy, the purchasing unit.",
                    widths={"A": 34, "B": 18, "C": 12, "D": 36, "E": 12, "F": 6, "G": 6}, print_title_rows="1:3", landscape=True, freeze="A4",
                    flag_col="F")
    rows = Rows(book, sh, engine=e)
    pa, tr = e.sol.paths, e.sol.traffic
    rows.title("4 · The fleet — load, redundancy, purchasing unit: three numbers, not one",
               "Take the larger path, add redundancy, round to something buyable.")
    put_banner(sh, e)
    rows.section("The three numbers — the runbook's method, as formulas (the Answer, verified in simulation, is on the Summary and below)")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, _fleet_lines(e))
    rows.section("How each replica runs at peak")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("ReplicaTP", "GPUs per replica (TP)", "=TP", pa.tp, "GPUs", "0", "")
    batch = tr.concurrency / pa.load_replicas
    write_lines(rows, [Line("BatchPerReplica", "Sequences per load replica", "=Concurrency/LoadReplicas", batch, "sequences",
                            FMT["num"], F.join(F.short("Concurrency", tr.concurrency, 1), " in flight ÷ ",
                                               F.fixed("LoadReplicas", pa.load_replicas), " ",
                                               F.plural("LoadReplicas", pa.load_replicas, "replica")))])
    b = "BatchPerReplica"
    rows.calc("DecodeStepAtLoad", "Engine step at that batch",
              "=" + F.step_time("TP", "EPUsed", "KVShards", b, f"{b}*DecodeContext",
                                f"{b}*MIN(DecodeContext,SlidingWindow)", f"{b}*PrefillPerDecode*PromptMean",
                                f"{b}*PrefillPerDecode*PrefillKeysPerRequest", f"{b}*PrefillPerDecode*PrefillKeysWindowPerRequest",
                                f"{b}*DecodeContext", f"{b}*MIN(DecodeContext,SlidingWindow)"),
              pa.decode_step_s, "s", FMT["s"], "the serving model: the mean inter-token gap when each replica carries its share")
    rows.calc("DecodeStepMet", "Within the inter-token target", "=DecodeStepAtLoad<=ITLTarget*(1+RoundingTolerance)",
              pa.decode_step_s <= e.s.itl_s * (1 + fleet.ROUNDING_TOLERANCE), "TRUE | FALSE", None, "")
    rows.calc("BindingNote", "Binding constraint", '="binds: "&Binding', f"binds: {e.sol.binding}", "", None, "")
    if e.result.verified is not None:
        _verified_block(book, sh, rows, e)


def _verified_block(book: Book, sh, rows: Rows, e: Engine) -> None:
    """The fleet simulated at peak, beside the runbook's three numbers: engine values (shaded like the breakpoints)
    and p95 TTFT and inter-token gap against GPUs, charted with the promise."""
    v = e.result.verified
    seeds = f"seeds {', '.join(map(str, v.seeds))}, all must hold" if len(v.seeds) > 1 else f"seed {v.seed}"
    rows.section(f"Verified at peak — simulated ({v.minutes:.3g} min, {v.arrivals}, {seeds}, {v.chunk_tokens:,}-token "
                 "steps; values from `xlplan plan --verify`, re-simulated by `xlplan check`)")
    rows.header("Quantity", "Value", "Unit", "How")
    none = f"none up to {v.searched_up_to}"
    items = (
        ("VerifiedLoad", "Verified load", v.load if v.load is not None else none, "GPUs", FMT["gpus"],
         "the fewest whole replicas whose simulated p95 TTFT and inter-token gap keep the promise"),
        ("VerifiedWithRedundancy", "Verified, with redundancy", v.with_redundancy if v.with_redundancy is not None else none,
         "GPUs", FMT["gpus"], (f"the fewest that keep the promise with {count(v.redundancy_lost_replicas, 'replica')} lost at "
                               "the start of the peak" if v.redundancy_lost_replicas else "the plan keeps no redundancy: the load")),
        ("VerifiedRunbookLoadMeets", "The runbook's load keeps the promise", v.meets_promise_at_load, "TRUE | FALSE", None,
         f"the runbook's {count(v.runbook_load, 'GPU')}, simulated"),
        ("VerifiedTTFTP95", "p95 TTFT at the verified load", num(v.ttft_p95_s) if v.ttft_p95_s is not None else NA, "s",
         FMT["s"], "against the TTFT target"),
        ("VerifiedITLP95", "p95 inter-token gap at the verified load", num(v.itl_p95_s) if v.itl_p95_s is not None else NA,
         "s", FMT["s"], "pooled over every token gap, against the inter-token target"),
        ("VerifiedFailureMeets", "One replica lost at peak keeps the promise", v.failure_meets_promise, "TRUE | FALSE", None,
         f"{v.failure_gpus} of the runbook's {count(v.runbook_with_redundancy, 'GPU')} with redundancy left, its requests re-queued"
         if v.failure_gpus < v.runbook_with_redundancy else
         f"not simulated: the runbook's {count(v.runbook_with_redundancy, 'GPU')} "
         f"{verb(v.runbook_with_redundancy, 'keeps', 'keep')} no spare replica to lose"),
    )
    for name, label, value, unit, fmt, how in items:
        r = sh.row
        sh.put("A", r, Cell(label, kind="label"))
        coord = sh.put("B", r, Cell(value, kind="static", fmt=fmt if not isinstance(value, (str, bool)) else None))
        sh.put("C", r, Cell(unit, kind="unit"))
        sh.put("D", r, Cell(how, kind="note"))
        book.define(name, sh, coord)
        sh.row += 1
    for text in (v.sentence, *([v.redundancy_sentence] if v.redundancy_sentence else []), v.failure_sentence):
        sh.put("A", sh.row, Cell(text, kind="static"))
        sh.row += 1
    sh.row += 1
    hdr = sh.row
    labels = ("GPUs", "p95 TTFT", "p95 inter-token gap", "Keeps the promise", "TTFT target", "Inter-token target")
    for i, label in enumerate(labels):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    for k, pt in enumerate(v.curve):
        r = hdr + 1 + k
        sh.put("A", r, Cell(pt.gpus, kind="static", fmt=FMT["gpus"]))
        sh.put("B", r, Cell(num(pt.ttft_at_percentile_s), kind="static", fmt=FMT["s"]))
        sh.put("C", r, Cell(num(pt.itl_at_percentile_s), kind="static", fmt=FMT["s"]))
        sh.put("D", r, Cell(pt.meets_promise, kind="static"))
        sh.put("E", r, Cell("=TTFTTarget", formula=True, cached=e.s.ttft_s, kind="calc", fmt=FMT["s"]))
        sh.put("F", r, Cell("=ITLTarget", formula=True, cached=e.s.itl_s, kind="calc", fmt=FMT["s"]))
    end = hdr + len(v.curve)
    sh.row = end + 1
    for title, series, y in (("Simulated p95 TTFT against GPUs, with the target", [("B", hdr, end), ("E", hdr, end)], "seconds (log scale)"),
                             ("Simulated p95 inter-token gap against GPUs, with the target", [("C", hdr, end), ("F", hdr, end)],
                              "seconds")):
        sh.charts.append({"kind": "scatter", "title": title, "x_title": "GPUs serving the peak", "y_title": y,
                          "x": ("A", hdr + 1, end), "series": series, "anchor": f"{'A' if 'TTFT' in title else 'D'}{end + 2}",
                          "width": 13, "height": 7, "y_log": "TTFT" in title})  # cm: side by side within A:E
    sh.row = end + 18  # below the charts


def _bill_lines(e: Engine) -> list[Line]:
    """The bill: GPUs billed, monthly cost, tokens, $/M tokens."""
    b, s, tr = e.sol.bill, e.s, e.sol.traffic
    mtok = b.tokens_per_month / MILLION
    return [
        Line("BilledGPUs", "GPUs on the bill", '=IF(BillPurchased,FleetPurchased,FleetWithRedundancy)', b.billed_gpus, "GPUs",
             FMT["gpus"], F.when('BillPurchased', s.bill_purchased, "rented by the node or bought: whole purchasing units",
                                 "rented per GPU: the fleet with redundancy"),
             udf="BILLED_GPUS(FleetWithRedundancy,GPUsPerNode,CostMode)"),
        Line("FixedUSDPerMonth", "Hardware operations (owned fleet)", '=(CostMode="buy")*N(HardwareOpsUSDPerMonthInput)',
             s.fixed_usd_per_month, "USD/month", FMT["usd"], "buy: hands on site, spares, support; rent: none"),
        Line("MonthlyCostUSD", "Monthly cost", "=BilledGPUs*GPUUSDPerHour*HoursPerMonth+FixedUSDPerMonth", b.monthly_usd,
             "USD/month", FMT["usd"],
             F.join(F.fixed("BilledGPUs", b.billed_gpus), " ", F.plural("BilledGPUs", b.billed_gpus, "GPU"), " x ",
                    "$", F.short("GPUUSDPerHour", s.usd_per_gpu_hour, 5), "/h x ",  # the price as the note prints it: $3, $1.26874
                    F.short("HoursPerMonth", s.hours_per_month), " h",
                    F.when("FixedUSDPerMonth>0", s.fixed_usd_per_month > 0,
                           F.join(" + ", F.usd("FixedUSDPerMonth", s.fixed_usd_per_month)), ""), " = ",
                    F.usd("MonthlyCostUSD", b.monthly_usd)),
             udf="MONTHLY_COST(BilledGPUs,GPUUSDPerHour,HoursPerMonth)" if not s.fixed_usd_per_month else None),
        Line("TokensPerMonth", "Tokens per month at the average utilisation",
             "=PeakRate*(PromptMean+OutputMean)*AvgUtilisation*HoursPerMonth*SecondsPerHour", b.tokens_per_month, "tokens/month",
             FMT["tokens_month"],
             F.join(F.short("PeakRate", s.peak_rps), " req/s x ", F.fixed("PromptMean+OutputMean", tr.prompt_mean + tr.output_mean),
                    " tokens x ", F.pct("AvgUtilisation", s.average_utilisation), " x ", F.short("HoursPerMonth", s.hours_per_month),
                    " h x ", F.fixed("SecondsPerHour", SECONDS_PER_HOUR), " s = ",
                    F.fixed("TokensPerMonth/TokensPerBillion", b.tokens_per_month / 1e9, 1), " billion"),
             udf="TOKENS_PER_MONTH(PeakRate,PromptP50,PromptP95,OutputP50,OutputP95,AvgUtilisation,PromptP99,OutputP99,HoursPerMonth)"),
        Line("CostPerMTokUSD", "Cost per million tokens", f'=IF(TokensPerMonth>0,MonthlyCostUSD*TokensPerMillion/TokensPerMonth,"{NA}")',
             b.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"],
             F.join(F.usd("MonthlyCostUSD", b.monthly_usd), " ÷ ", F.fixed("TokensPerMonth/TokensPerMillion", mtok),
                    " M tokens = ", F.usd("CostPerMTokUSD", b.usd_per_mtok, 3), " per M, input and output alike"),
             udf="COST_PER_MTOK(MonthlyCostUSD,TokensPerMonth)"),
    ]


def api_comparison(api_usd: float | None, bill_usd: float, ratio: tuple[float, str], api: str = "APIMonthlyCostUSD",
                   bill: str = "MonthlyCostUSD") -> F.Prose:
    """:func:`xlplan.report.note.api_comparison_words` as a formula over two cells: the factor (the dearer bill ÷ the
    cheaper, never below 1) in the direction of its words, about the same within APIParityFactor; ``ratio`` is the
    engine's (factor, cheaper side) for the cached words (:attr:`xlplan.excel.figures.Figures.api_ratio`). [text]"""
    a, m = api_usd if api_usd is not None else 1.0, bill_usd
    factor, cheaper = ratio
    ratio = F.when(f"{api}>{bill}", cheaper == "self-hosting",
                   F.join("self-hosting is ", F.fixed(f"{api}/{bill}", factor, 1), "× cheaper than the API"),
                   F.join("the API is ", F.fixed(f"{bill}/{api}", factor, 1), "× cheaper than self-hosting"))
    words = F.when(f"{api}<=0", a <= 0, "the API costs nothing",
                   F.when(f"{bill}<=0", m <= 0, "self-hosting costs nothing",
                          F.when(f"MAX({api}/{bill},{bill}/{api})<APIParityFactor", cheaper == "parity", PARITY_WORDS, ratio)))
    return F.when(f"ISNUMBER({api})", api_usd is not None, words, NA)


def _api_lines(e: Engine) -> list[Line]:
    """The same traffic on a managed API, and the break-even volume."""
    b, s, tr = e.sol.bill, e.s, e.sol.traffic
    api = b.api_usd_per_mtok_blended is not None
    blended = b.api_usd_per_mtok_blended if api else 0.0
    ins, outs = (s.api_usd_per_mtok_input or 0.0), (s.api_usd_per_mtok_output or 0.0)
    no_api = "no API prices given on 1 Inputs"
    be = b.breakeven_tokens_per_month
    comparison = api_comparison(b.api_monthly_usd, b.monthly_usd, e.fig.api_ratio)
    return [
        Line("APIBlendedUSDPerMTok", "API price at this input/output mix",
             f'=IF(AND(ISNUMBER(APIInputUSDPerMTok),ISNUMBER(APIOutputUSDPerMTok)),(PromptMean*APIInputUSDPerMTok+OutputMean*APIOutputUSDPerMTok)/(PromptMean+OutputMean),"{NA}")',
             blended if api else NA, "USD/Mtok", FMT["usd_mtok"],
             F.when("ISNUMBER(APIBlendedUSDPerMTok)", api,
                    F.join("(", F.fixed("PromptMean", tr.prompt_mean), " x ", F.usd("APIInputUSDPerMTok", ins, 3), " + ",
                           F.fixed("OutputMean", tr.output_mean), " x ", F.usd("APIOutputUSDPerMTok", outs, 3), ") ÷ ",
                           F.fixed("PromptMean+OutputMean", tr.prompt_mean + tr.output_mean), " tokens: weighted by mean prompt and output"),
                    no_api)),
        Line("APIMonthlyCostUSD", "API monthly cost",
             f'=IF(ISNUMBER(APIBlendedUSDPerMTok),TokensPerMonth*APIBlendedUSDPerMTok/TokensPerMillion,"{NA}")',
             b.api_monthly_usd if api else NA, "USD/month", FMT["usd"],
             F.when("ISNUMBER(APIMonthlyCostUSD)", api,
                    F.join(F.fixed("TokensPerMonth/TokensPerMillion", b.tokens_per_month / MILLION), " M tokens x ",
                           F.usd("APIBlendedUSDPerMTok", blended, 3), " = ", F.usd("APIMonthlyCostUSD", b.api_monthly_usd or 0.0)),
                    no_api),
             udf="API_MONTHLY_COST(TokensPerMonth,APIInputUSDPerMTok,APIOutputUSDPerMTok,PromptP50,PromptP95,OutputP50,OutputP95,PromptP99,OutputP99)",
             needs="api"),
        Line("SelfHostedAllInUSD", "Self-hosted with engineering and on-call", "=MonthlyCostUSD+OpsUSDPerMonth",
             b.monthly_usd + s.ops_usd_per_month, "USD/month", FMT["usd"],
             F.join(F.usd("MonthlyCostUSD", b.monthly_usd), " GPUs + ", F.usd("OpsUSDPerMonth", s.ops_usd_per_month),
                    " engineering and on-call")),
        Line("APISavingUSD", "API cost less self-hosted", f'=IF(ISNUMBER(APIMonthlyCostUSD),APIMonthlyCostUSD-SelfHostedAllInUSD,"{NA}")',
             (b.api_monthly_usd - b.monthly_usd - s.ops_usd_per_month) if api else NA, "USD/month", FMT["usd"],
             "positive: self-hosting is cheaper at this volume"),
        Line("APIComparison", "Self-hosting against the API", F.cell_formula(comparison), comparison.text, "", None,
             "on infrastructure alone: the bill above against the API's, the dearer ÷ the cheaper, never below 1"),
        Line("BreakevenTokensPerMonth", "Break-even volume",
             f'=IF(ISNUMBER(APIBlendedUSDPerMTok),IF(APIBlendedUSDPerMTok>0,SelfHostedAllInUSD*TokensPerMillion/APIBlendedUSDPerMTok,"{NONE}"),"{NA}")',
             num(be) if api else NA, "tokens/month", FMT["tokens_month"],
             "above this, this fleet is cheaper than the API (while it can carry it)",
             udf="BREAKEVEN_TOKENS(MonthlyCostUSD,APIBlendedUSDPerMTok,OpsUSDPerMonth)", needs="api"),
    ]


def _answer_bill_lines(e: Engine) -> list[Line]:
    """The Answer's bill, live: its fleet (engine values on the Summary) priced by the formulas above, so an edit of a
    price, the hours, the volume, the API's prices or how it is paid for moves it as it moves the runbook's bill."""
    a, o = e.result.answer, e.result.answer.ownership
    api = a.api_monthly_usd is not None

    def v(x):
        return x if o is not None else NA

    payback = payback_shown(o) if o is not None else NA
    running = "AnswerFleetRunningUSDPerMonth"
    comparison = api_comparison(a.api_monthly_usd, a.monthly_usd, e.fig.answer_api_ratio, bill="AnswerFleetMonthlyUSD")
    return [
        Line("AnswerFleetBilledGPUs", "GPUs on the bill", "=IF(BillPurchased,AnswerPurchased,AnswerWithRedundancy)",
             a.billed_gpus, "GPUs", FMT["gpus"], F.when("BillPurchased", e.s.bill_purchased,
                                                       "rented by the node or bought: the Answer's whole purchasing units",
                                                       "rented per GPU: the Answer's fleet with redundancy")),
        Line("AnswerFleetMonthlyUSD", "Monthly cost", "=AnswerFleetBilledGPUs*GPUUSDPerHour*HoursPerMonth+FixedUSDPerMonth",
             a.monthly_usd, "USD/month", FMT["usd"],
             F.join(F.fixed("AnswerFleetBilledGPUs", a.billed_gpus), " ", F.plural("AnswerFleetBilledGPUs", a.billed_gpus, "GPU"),
                    " x $", F.short("GPUUSDPerHour", e.s.usd_per_gpu_hour, 5), "/h x ", F.short("HoursPerMonth", e.s.hours_per_month),
                    " h", F.when("FixedUSDPerMonth>0", e.s.fixed_usd_per_month > 0,
                                 F.join(" + ", F.usd("FixedUSDPerMonth", e.s.fixed_usd_per_month)), ""),
                    " = ", F.usd("AnswerFleetMonthlyUSD", a.monthly_usd))),
        Line("AnswerFleetUSDPerMTok", "Cost per million tokens",
             f'=IF(TokensPerMonth>0,AnswerFleetMonthlyUSD*TokensPerMillion/TokensPerMonth,"{NA}")', a.usd_per_mtok,
             "USD/Mtok", FMT["usd_mtok"], "at the average utilisation: the tokens a month above"),
        Line("AnswerFleetAgainstAPI", "Against the API", F.cell_formula(comparison), comparison.text if api else NA, "", None,
             "on infrastructure alone, this bill against the same traffic on the API"),
        Line("AnswerFleetCapexUSD", "Capex of the nodes ordered (bought)",
             f'=IF(AND(CostMode="buy",ISNUMBER(UnitCapexUSD)),AnswerPurchased/GPUsPerNode*UnitCapexUSD,"{NA}")',
             v(o and o.capex_usd), "USD", FMT["usd"], "the Answer's purchasing units × the price of one (above), paid once"),
        Line(running, "Running costs (bought)",
             f'=IF(AND(CostMode="buy",ISNUMBER(RunningUSDPerGPUMonth)),AnswerPurchased*RunningUSDPerGPUMonth+FixedUSDPerMonth,"{NA}")',
             v(o and o.running_usd_per_month), "USD/month", FMT["usd"],
             "the Answer's GPUs × the running cost of one (above) + hardware operations"),
        Line("AnswerFleetRentMonthlyUSD", "Renting the same units instead",
             f'=IF(CostMode<>"buy","{NA}",IF(ISNUMBER(RentUSDPerGPUHour),AnswerPurchased*RentUSDPerGPUHour*HoursPerMonth,"{PRICE_MISSING}"))',
             v(o and (PRICE_MISSING if o.rent_monthly_usd is None else o.rent_monthly_usd)), "USD/month", FMT["usd"],
             "at the rental price on 1 Inputs"),
        Line("AnswerFleetPaybackMonths", "Buying pays back after",
             f'=IF(OR(NOT(ISNUMBER(AnswerFleetCapexUSD)),NOT(ISNUMBER({running}))),"{NA}",'
             f'IF(NOT(ISNUMBER(AnswerFleetRentMonthlyUSD)),"{PRICE_MISSING}",'
             f'IF(AnswerFleetRentMonthlyUSD>{running},IF(AnswerFleetCapexUSD/(AnswerFleetRentMonthlyUSD-{running})>LifeMonths,'
             f'"{NEVER_IN_LIFE}",AnswerFleetCapexUSD/(AnswerFleetRentMonthlyUSD-{running})),"never")))',
             payback, "months", FMT["num"], "capex ÷ (rent − running costs); never past the depreciation life"),
        Line("AnswerFleetNPVUSD", "Owning over the life, present cost",
             f'=IF(ISNUMBER(AnswerFleetCapexUSD),AnswerFleetCapexUSD+({running}+OpsUSDPerMonth)*AnnuityFactorLife'
             f'-AnswerFleetCapexUSD*ResidualFractionUsed*DiscountFactorLife,"{NA}")',
             v(o and o.own_npv_usd), "USD", FMT["usd"],
             "capex + running costs and engineering over the life − the residual, discounted at the cost of capital"),
    ]


def cost_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[4], "Section 5: the bill, tokens, $/M tokens at the average utilisation, and the managed API.",
                    widths={"A": 34, "B": 18, "C": 12, "D": 40, "E": 14, "F": 6}, print_title_rows="1:3", landscape=True, freeze="A4",
                    flag_col="F")
    rows = Rows(book, sh, engine=e)
    rows.title("5 · The cost — the monthly bill, $/M tokens at the average utilisation, the honest API comparison",
               "Peak sizes the fleet; average utilisation sizes the bill.")
    put_banner(sh, e)
    rows.section("The bill — the runbook's method: its fleet's (the Answer's bill is on the Summary)")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, _bill_lines(e))
    rows.section("Rent or buy — what owning the purchased fleet costs, against renting it (figures used when 1 Inputs says buy)")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, ownership_lines(e))
    rows.section("The same traffic on a managed API — against the runbook's bill above")
    rows.header("Quantity", "Value", "Unit", "How")
    write_lines(rows, _api_lines(e))
    if e.result.answer is not None:
        rows.section("The Answer's bill — the fleet on the Summary (engine values there), priced by the formulas above")
        rows.header("Quantity", "Value", "Unit", "How")
        write_lines(rows, _answer_bill_lines(e))
    _utilisation_table(sh, e)


def _utilisation_table(sh, e: Engine) -> None:
    """$/M tokens at average utilisations up to 100% (a fleet cannot run above its peak), with the API's blended price
    as a flat line where API prices are given, and their chart."""
    api = e.sol.bill.api_usd_per_mtok_blended
    sh.row += 1
    sh.put("A", sh.row, Cell("$/M tokens by average utilisation (the runbook's fleet): the fleet is fixed, so the cost per token falls as use rises",
                             kind="section"))
    sh.row += 1
    hdr = sh.row
    heads = ["Average utilisation", "Self-hosted [$/M tokens]"] + (["API [$/M tokens]"] if api is not None else [])
    for i, label in enumerate(heads):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    table = [(at.utilisation, at) for at in e.result.cost.usd_per_mtok_by_utilisation if at.utilisation <= 1.0]
    for k, (u, at) in enumerate(table):
        r = hdr + 1 + k
        sh.put("A", r, Cell(u, kind="input", fmt="0%", validation=Validation(
            "decimal", "between", "0.000001", "1", False, "Utilisation", "An average utilisation to tabulate.",
            "Enter a fraction between 0 and 1: 0.40, not 40.")))
        sh.put("B", r, Cell(f"=MonthlyCostUSD*TokensPerMillion/(PeakRate*(PromptMean+OutputMean)*A{r}*HoursPerMonth*SecondsPerHour)",
                            formula=True, cached=at.usd_per_mtok, kind="calc", fmt=FMT["usd_mtok"]))
        if api is not None:
            sh.put("C", r, Cell("=APIBlendedUSDPerMTok", formula=True, cached=api, kind="calc", fmt=FMT["usd_mtok"]))
    end = hdr + len(table)
    series = [{"col": "B", "rows": (hdr, end), "colour": "1F77B4"}]
    if api is not None:
        series.append({"col": "C", "rows": (hdr, end), "colour": "FF7F0E", "dash": "dash", "marker": "none"})
    sh.charts.append({"kind": "scatter", "title": "$/M tokens against average utilisation" + (", with the API" if api is not None else ""),
                      "x_title": "Average utilisation", "y_title": "$ per million tokens", "x": ("A", hdr + 1, end),
                      "series": series, "x_format": "0%", "y_format": '"$"#,##0.00', "x_min": 0, "x_max": 1, "x_major": 0.1,
                      "y_min": 0, "anchor": f"D{hdr}",
                      "width": 11.5})  # cm: within D:E, so the tab prints one page wide
    sh.row = end + 1
