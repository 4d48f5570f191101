"""Tabs 4 and 5 · The fleet as three numbers, and the cost with the managed-API comparison."""

from __future__ import annotations

from xlplan import fleet
from xlplan.io.workbook.cells import Book, Cell, Validation
from xlplan.io.workbook.common import (
    FMT,
    NA,
    NONE,
    SIX_TABS,
    Engine,
    Rows,
    num,
)
from xlplan.planner import UTILISATION_TABLE


def fleet_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[3], "Section 4: the fleet as three numbers: the load, the redundancy, the purchasing unit.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, "E": 18}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh, engine=e)
    pa, tr = e.sol.paths, e.sol.traffic
    rows.title("4 · The fleet — load, redundancy, purchasing unit: three numbers, not one",
               "Take the larger path, add redundancy, round to something buyable.")
    rows.section("The three numbers")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("LoadReplicas", "Replicas the peak needs", "=MAX(MemoryGPUs,ComputeGPUs,LatencyGPUs)/TP",
              pa.load_replicas, "replicas", FMT["int"], "the largest path, in replicas of TP GPUs")
    rows.calc("FleetLoad", "Load", "=LoadReplicas*TP", pa.load, "GPUs", FMT["gpus"], "the runbook: 4", udf="MIN(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))")
    rows.calc("FleetWithRedundancy", "With redundancy", "=(LoadReplicas+Redundancy)*TP", pa.with_redundancy, "GPUs",
              FMT["gpus"], "N+k replicas: the runbook's 4 + 1 = 5", udf="MEDIAN(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))")
    rows.calc("FleetPurchased", "Purchased", "=ROUNDUP(FleetWithRedundancy/GPUsPerNode,0)*GPUsPerNode", pa.purchased,
              "GPUs", FMT["gpus"], "whole purchasing units: a node of 8", udf="MAX(FLEET(MemoryGPUs,ComputeGPUs,LatencyGPUs,TP,Redundancy,GPUsPerNode))")
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
              "=MAX(BatchPerReplica*DecodeFLOPsPerToken/TP/(PeakTFLOPS*DecodeMFU*TeraUnit),"
              "(WeightsBytes/TP+BatchPerReplica*KVBytesPerConversation/MIN(TP,KVShardLimit))"
              "/(GPUHBMTBps*BandwidthEfficiency*TeraUnit))",
              pa.decode_step_s, "s", FMT["s"], "roofline: the slower of FLOPs and bytes read")
    rows.calc("DecodeStepMet", "Within the inter-token target", "=DecodeStepAtLoad<=ITLTarget*(1+RoundingTolerance)",
              pa.decode_step_s <= e.s.itl_s * (1 + fleet.ROUNDING_TOLERANCE), "TRUE | FALSE", None, "")
    rows.calc("BindingNote", "Binding constraint", '="binds: "&Binding', f"binds: {e.sol.binding}", "", None, "")


def cost_tab(book: Book, e: Engine) -> None:
    sh = book.sheet(SIX_TABS[4], "Section 5: the bill, tokens, $/M tokens at the average utilisation, and the managed API.",
                    widths={"A": 40, "B": 22, "C": 16, "D": 80, "E": 18}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh, engine=e)
    b, s = e.sol.bill, e.s
    rows.title("5 · The cost — the monthly bill, $/M tokens at the average utilisation, the honest API comparison",
               "Peak sizes the fleet; average utilisation sizes the bill.")
    rows.section("The bill")
    rows.header("Quantity", "Value", "Unit", "How")
    rows.calc("BilledGPUs", "GPUs on the bill", '=IF(Billing="purchased",FleetPurchased,FleetWithRedundancy)',
              b.billed_gpus, "GPUs", FMT["gpus"], "rented: the fleet with redundancy; purchased: whole units")
    rows.calc("MonthlyCostUSD", "Monthly cost", "=BilledGPUs*GPUUSDPerHour*HoursPerMonth", b.monthly_usd, "USD/month",
              FMT["usd"], "5 x $3 x 730 = $10,950", udf="MONTHLY_COST(BilledGPUs,GPUUSDPerHour,HoursPerMonth)")
    rows.calc("TokensPerMonth", "Tokens per month at the average utilisation",
              "=PeakRate*(PromptMean+OutputMean)*AvgUtilisation*HoursPerMonth*SecondsPerHour", b.tokens_per_month,
              "tokens/month", FMT["tokens_month"], "40 x 2,300 x 0.40 x 730 x 3,600 = 96.7 billion",
              udf="TOKENS_PER_MONTH(PeakRate,PromptP50,PromptP95,OutputP50,OutputP95,AvgUtilisation,PromptP99,OutputP99,HoursPerMonth)")
    rows.calc("CostPerMTokUSD", "Cost per million tokens", f'=IF(TokensPerMonth>0,MonthlyCostUSD*TokensPerMillion/TokensPerMonth,"{NA}")',
              b.usd_per_mtok, "USD/Mtok", FMT["usd_mtok"], "all tokens, input and output: ~$0.11",
              udf="COST_PER_MTOK(MonthlyCostUSD,TokensPerMonth)")
    rows.section("The same traffic on a managed API")
    rows.header("Quantity", "Value", "Unit", "How")
    api = b.api_usd_per_mtok_blended is not None
    rows.calc("APIBlendedUSDPerMTok", "API price at this input/output mix",
              f'=IF(AND(ISNUMBER(APIInputUSDPerMTok),ISNUMBER(APIOutputUSDPerMTok)),(PromptMean*APIInputUSDPerMTok+OutputMean*APIOutputUSDPerMTok)/(PromptMean+OutputMean),"{NA}")',
              b.api_usd_per_mtok_blended if api else NA, "USD/Mtok", FMT["usd_mtok"], "weighted by mean prompt and output")
    rows.calc("APIMonthlyCostUSD", "API monthly cost", f'=IF(ISNUMBER(APIBlendedUSDPerMTok),TokensPerMonth*APIBlendedUSDPerMTok/TokensPerMillion,"{NA}")',
              b.api_monthly_usd if api else NA, "USD/month", FMT["usd"], "the runbook: ~$30k",
              udf="API_MONTHLY_COST(TokensPerMonth,APIInputUSDPerMTok,APIOutputUSDPerMTok,PromptP50,PromptP95,OutputP50,OutputP95,PromptP99,OutputP99)",
              needs="api")
    rows.calc("SelfHostedAllInUSD", "Self-hosted with engineering and on-call", "=MonthlyCostUSD+OpsUSDPerMonth",
              b.monthly_usd + s.ops_usd_per_month, "USD/month", FMT["usd"], "")
    rows.calc("APISavingUSD", "API cost less self-hosted", f'=IF(ISNUMBER(APIMonthlyCostUSD),APIMonthlyCostUSD-SelfHostedAllInUSD,"{NA}")',
              (b.api_monthly_usd - b.monthly_usd - s.ops_usd_per_month) if api else NA, "USD/month", FMT["usd"],
              "positive: self-hosting is cheaper at this volume")
    be = b.breakeven_tokens_per_month
    rows.calc("BreakevenTokensPerMonth", "Break-even volume",
              f'=IF(ISNUMBER(APIBlendedUSDPerMTok),IF(APIBlendedUSDPerMTok>0,SelfHostedAllInUSD*TokensPerMillion/APIBlendedUSDPerMTok,"{NONE}"),"{NA}")',
              num(be) if api else NA, "tokens/month", FMT["tokens_month"], "above this, this fleet is cheaper than the API (while it can carry it)",
              udf="BREAKEVEN_TOKENS(MonthlyCostUSD,APIBlendedUSDPerMTok,OpsUSDPerMonth)", needs="api")
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
