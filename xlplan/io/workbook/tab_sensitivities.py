"""Tab 6 · What would change it: the engine's breakpoints, and each what-if as a row of formulas."""

from __future__ import annotations

import math

from xlplan import compute, distributions, steps, whatif
from xlplan.io.workbook import formulas as F
from xlplan.io.workbook.cells import Book, Cell, Sheet, Validation
from xlplan.io.workbook.common import (
    FMT,
    NA,
    NONE,
    SIX_TABS,
    Engine,
    Rows,
    num,
)
from xlplan.plan import Plan
from xlplan.scenario import TP_DEGREES, compute_dtype
from xlplan.specs import GPUSpec

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


def sensitivities_tab(book: Book, e: Engine) -> None:
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(SIX_TABS[5], "Section 6: what would change the answer: breakpoints, and what-ifs re-planned in full.",
                    widths={"A": 44, **{L(i): 12 for i in range(2, 16)}}, print_title_rows="1:2", landscape=True)
    rows = Rows(book, sh)
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
                   "decode": "Decode FLOP/token", "demand": "Compute GPUs (exact)", "choice": "Chosen TP row",
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
        cands = {tp: steps.paths(sc, tr, tp) for tp in TP_DEGREES}  # every degree: the sheet has a column for each
        try:
            solved = steps.solve(sc)
        except steps.PlanningError:
            solved = None
    except ValueError:
        sc = tr = solved = None
        cands = {}
    sol = solved.paths if solved else None
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
            "decode": tr.decode_flops_per_token, "demand": compute.compute_gpus_split(tr.prefill_tflops, tr.decode_tflops, sc.peak_tflops, sc.prefill_mfu, sc.decode_mfu),
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
    put(C["demand"], f"=({q['rate']}*{q['prefill']}*(1-{q['reuse']})/({q['peak']}*PrefillMFU)"
        f"+{q['rate']}*OutputMean*{q['decode']}/({q['peak']}*DecodeMFU))/TeraUnit", cached.get("demand", NA))
    for i, tp in enumerate(TP_DEGREES):
        c = cands.get(tp)
        is_c = sc is not None and tp in sc.tp_options
        t = f"{per_tp['mem'][i]}${tp_row}"
        budget = f"({F.kv_budget_gib(q['wbytes'], t)})"
        shards = f"MIN({t},KVShardLimit)"
        conc, kvgib, demand = q["conc"], q["kvgib"], q["demand"]
        whole = F.whole_gpus(f"{conc}/(MAX({budget},0)*{shards}/{kvgib})", t)
        mem = f'=IF({F.tp_considered(t)},IF({budget}>0,{whole},"{NONE}"),"")'
        put(per_tp["mem"][i], mem, (num(c.memory_gpus) if is_c else "") if c else NA, "0")
        t = f"{per_tp['comp'][i]}${tp_row}"
        whole = F.whole_gpus(f"{demand}/{t}", t)
        put(per_tp["comp"][i], f'=IF({F.tp_considered(t)},{whole},"")',
            (c.compute_gpus if is_c else "") if c else NA, "0")
        t = f"{per_tp['lat'][i]}${tp_row}"
        batch = F.max_decode_batch(q["itl"], q["peak"], q["decode"], q["wbytes"], q["kvconv"], t, f"MIN({t},KVShardLimit)")
        whole = F.whole_gpus(f"{conc}/{batch}", t)
        put(per_tp["lat"][i], f'=IF({F.tp_considered(t)},IF({batch}>0,{whole},"{NONE}"),"")',
            (num(c.latency_gpus) if is_c else "") if c else NA, "0")
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
    b = solved.bill if ok else None
    put(C["tokens"], f"={q['rate']}*({q['pmean']}+OutputMean)*{q['util']}*HoursPerMonth*SecondsPerHour",
        NA if sc is None else steps.tokens_per_month(sc, tr), FMT["sci"])
    binding = solved.binding if ok else inf
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
