"""Tab 6 · What would change it: the engine's breakpoints, each what-if as a row of formulas, and the tornado of
their monthly costs (:mod:`xlplan.excel.tornado`)."""

from __future__ import annotations

import math

from xlplan.excel import formulas as F
from xlplan.excel.cells import Book, Cell, Sheet, Validation
from xlplan.excel.common import FMT, NA, NONE, SIX_TABS, Engine, Rows, num
from xlplan.excel.figures import WhatIfRow
from xlplan.excel.formulas import Prose
from xlplan.excel.support import put_banner
from xlplan.excel.tornado import tornado, tornado_cells
from xlplan.plan.engine_settings import TP_DEGREES
from xlplan.plan.whatif_table import STANDARD_WHAT_IFS, WhatIf

SENS_INPUT_COLS = (
    ("What-if (from the row's changes)", "label", None),
    ("Peak rate x", "ratio", "0.00"),
    ("p95 prompt x", "ratio", "0.00"),
    ("Inter-token target x", "ratio", "0.00"),
    ("KV dtype (blank: plan's)", "dtype", None),
    ("Weights dtype (blank: plan's)", "dtype", None),
    ("Prefix reuse (blank: plan's)", "fraction", "0%"),
    ("Avg utilisation (blank: plan's)", "fraction", "0%"),
)


SENS_RESULT_COLS = ("Load GPUs", "Fleet GPUs", "Purchased GPUs", "Binding", "Monthly USD", "$/M tokens", "TP")

BLANK_WHATIF_ROWS = 5
"""Empty what-if rows after the standard ones, unlocked and inside the print area, for a user's own scenarios."""

WHATIF_INPUTS = "WhatIfInputs"
"""Defined name of the what-if rows' input cells (columns B to H), which `xlplan check` reads back."""

BREAKPOINT_INPUTS = {"peak_rps": "PeakRate", "prompt_p95": "PromptP95", "output_p50": "OutputP50", "itl_s": "ITLTarget"}
"""The input each breakpoint moves, by its defined name on 1 Inputs."""

STALE = "STALE — rebuild with xlplan workbook"
SEP = "; "

WORK = ("blank", "desc", "rate", "p95", "p50", "p99", "itl", "kvd", "wd", "reuse", "util", "sig", "pmean", "pm2", "p99fit",
        "conv", "tis", "conc", "kvtl", "kvconv", "kvgib", "wbytes", "cdtype", "peak", "prefill", "decode", "demand")
WORK_LABELS = {"blank": "Row blank", "desc": "Changes", "rate": "Peak rate", "p95": "Prompt p95", "p50": "Prompt p50",
               "p99": "Prompt p99", "itl": "ITL", "kvd": "KV dtype", "wd": "Weights dtype", "reuse": "Prefix reuse",
               "util": "Utilisation", "sig": "Prompt sigma", "pmean": "Prompt mean", "pm2": "Prompt E[n²]",
               "p99fit": "Prompt p99 fit", "conv": "Conversation tokens", "tis": "Time in system", "conc": "Concurrency",
               "kvtl": "KV B/token/layer", "kvconv": "KV B/conversation", "kvgib": "KV GiB/conversation", "wbytes": "Weights bytes",
               "cdtype": "Compute dtype", "peak": "Peak TFLOP/s", "prefill": "Prefill FLOP/request", "decode": "Decode FLOP/token",
               "demand": "Compute GPUs (exact)", "choice": "Chosen TP row", "memc": "Memory GPUs", "compc": "Compute GPUs",
               "latc": "Latency GPUs", "tokens": "Tokens/month"}


def built_whatifs() -> list[WhatIf | None]:
    """The what-if rows a fresh workbook holds: the standard what-ifs, then the blank rows (None)."""
    return list(STANDARD_WHAT_IFS) + [None] * BLANK_WHATIF_ROWS


def _built_rows(e: Engine) -> list[WhatIfRow]:
    """The engine's figures of those rows: its what-if rows, then the blank rows (each caching the plan as it stands)."""
    return list(e.fig.whatifs) + [e.fig.as_planned] * BLANK_WHATIF_ROWS


def _columns() -> tuple[dict[str, str], dict[str, list[str]], str]:
    """Column letters of the what-if table's working columns (from P, after the results), per-TP columns, last column."""
    from openpyxl.utils import get_column_letter as L

    cols: dict[str, str] = {}
    c = 16  # P
    for w in WORK:
        cols[w] = L(c)
        c += 1
    per_tp = {}
    for kind in ("mem", "comp", "batch", "lat", "load", "obj"):
        per_tp[kind] = [L(c + i) for i in range(len(TP_DEGREES))]
        c += len(TP_DEGREES)
    for w in ("choice", "memc", "compc", "latc", "tokens"):
        cols[w] = L(c)
        c += 1
    return cols, per_tp, L(c - 1)


def whatif_rows(book: Book) -> tuple[int, int]:
    """First and last what-if row of a built workbook."""
    ref = book.names[WHATIF_INPUTS].split("!", 1)[1].replace("$", "")
    a, b = ref.split(":")
    return int(a.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")), int(b.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))


def relay_whatifs(book: Book, e: Engine, rows: list[WhatIfRow]) -> None:
    """Lay the what-if rows out again for the what-ifs a workbook holds, with the engine's re-plan of each
    (:func:`xlplan.excel.book.whatif_row`) as the values, the tornado's too (`xlplan check` compares a user's own rows this
    way)."""
    first, last = whatif_rows(book)
    if len(rows) != last - first + 1:
        raise ValueError(f"{len(rows)} what-ifs for {last - first + 1} rows")
    cols, per_tp, _ = _columns()
    sh = book.get(SIX_TABS[5])
    for k, row in enumerate(rows):
        _sens_row(sh, first + k, first - 2, e, row, cols, per_tp)
    tornado_cells(sh, e, first, len(rows) - BLANK_WHATIF_ROWS, last)


ANSWER = "Answer"
"""The name stem of the Answer's (closed-form) breakpoints: BreakpointAnswer<Input><Direction>Step. [text]"""


def breakpoint_name(variable: str, direction: str, kind: str, basis: str = "") -> str:
    """The defined name of a breakpoint's value: 'BreakpointPromptP95UpStep' (the purchase grows) or '…Flip' (the
    binding constraint changes), the runbook's method's; with ``basis`` 'Answer', the Answer's closed form's
    ('BreakpointAnswerPromptP95UpStep'). [text]"""
    return f"Breakpoint{basis}{BREAKPOINT_INPUTS[variable]}{direction.capitalize()}{kind}"


def _breakpoints(book: Book, sh: Sheet, rows: Rows, e: Engine, found: list, basis: str, title: str) -> None:
    """The engine's breakpoints (values searched at build time), each with its input now and a STALE flag by formula."""
    rows.section(title)
    rows.header("Input", "Unit", "Direction", "Now", "Searched at", "Purchase grows at", "Purchased after", "Binding flips at",
                "Binding after", "Still current?")
    for bp in found:
        r = sh.row
        name = BREAKPOINT_INPUTS[bp.variable]
        sh.put("D", r, Cell(f"={name}", formula=True, cached=bp.current, kind="calc", fmt=FMT["value"]))
        vals = {"A": bp.variable, "B": bp.unit, "C": bp.direction, "E": bp.current,
                "F": bp.fleet_step_at if bp.fleet_step_at is not None else "beyond x64",
                "G": bp.purchased_after if bp.purchased_after is not None else "",
                "H": bp.binding_flip_at if bp.binding_flip_at is not None else "beyond x64", "I": bp.binding_after or ""}
        for col, v in vals.items():
            coord = sh.put(col, r, Cell(v, kind="static", fmt=FMT["value"] if isinstance(v, float) else None))
            if col in ("F", "H"):  # named, so that a review's measured figure is judged against them by formula
                book.define(breakpoint_name(bp.variable, bp.direction, "Step" if col == "F" else "Flip", basis), sh, coord)
        sh.put("J", r, Cell(f'=IF(ABS(D{r}-E{r})<=RoundingTolerance*ABS(E{r}),"","{STALE}")', formula=True, cached="", kind="flag"))
        sh.row += 1


def sensitivities_tab(book: Book, e: Engine) -> None:
    from openpyxl.utils import get_column_letter as L

    sh = book.sheet(SIX_TABS[5], "Section 6: what would change the answer: breakpoints, and what-ifs re-planned in full.",
                    widths={"A": 44, **{L(i): 12 for i in range(2, 16)}}, print_title_rows="1:3", landscape=True, freeze="B4")
    rows = Rows(book, sh)
    rows.title("6 · What would change it — breakpoints and what-ifs",
               f"Each what-if row is a full re-plan with its changes. To add your own, fill one of the {BLANK_WHATIF_ROWS} blank "
               "rows at the bottom (yellow cells; no need to unprotect); `xlplan check` compares it with the engine's re-plan.")
    put_banner(sh, e)
    # Breakpoints: searched by the engine (a bisection is not a spreadsheet formula); values, dated by the build.
    _breakpoints(book, sh, rows, e, e.result.breakpoints, "",
                 "Breakpoints — where the purchase grows one unit, where the binding constraint flips "
                 "(the runbook's method; searched by xlplan at the input's value when the workbook was built)")
    _breakpoints(book, sh, rows, e, e.result.closed_form_breakpoints, ANSWER,
                 "Breakpoints of the Answer — the same, on the closed form the Answer is sized by (what the note's "
                 "section 6 and a monthly review judge)")

    rows.section("What-ifs — each row re-plans in full; a blank cell keeps the plan's value")
    sh.put("A", sh.row, Cell("A row that changes the inter-token target, the prompts, a dtype or prefix reuse also changes the "
                             "largest decode batch, which only the engine can search: `xlplan check` gives its figures.", kind="note"))
    sh.row += 1  # that note's row also holds the TP degrees the working columns read
    hdr = sh.row
    cols, per_tp, last_col = _columns()
    labels = [x[0] for x in SENS_INPUT_COLS] + list(SENS_RESULT_COLS)
    for i, label in enumerate(labels):
        sh.put(i + 1, hdr, Cell(label, kind="header"))
    for w, col in cols.items():
        sh.put(col, hdr, Cell(WORK_LABELS[w], kind="header"))
    for kind, kcols in per_tp.items():
        for i, col in enumerate(kcols):
            sh.put(col, hdr, Cell(f"{kind} @TP{TP_DEGREES[i]}", kind="header"))
    tp_row = hdr - 1  # the degrees, referenced by every per-TP formula
    sh.put(cols["demand"], tp_row, Cell("TP degree of each working column →", kind="note"))
    for kcols in per_tp.values():
        for i, col in enumerate(kcols):
            sh.put(col, tp_row, Cell(f"=INDEX(TPDegrees,{i + 1})", formula=True, cached=TP_DEGREES[i], kind="calc", fmt="0"))
    sh.outline_columns = ("P", last_col)
    first = hdr + 1
    built = _built_rows(e)
    for k, row in enumerate(built):
        _sens_row(sh, first + k, tp_row, e, row, cols, per_tp)
    last = first + len(built) - 1
    sh.row_flags.update({r: f"O{hdr - 2}" for r in range(first, last + 1)})  # one flag, on the table's section row
    book.define_range(WHATIF_INPUTS, sh, f"B{first}", f"H{last}")
    end = tornado(sh, e, first, len(built) - BLANK_WHATIF_ROWS, last)
    sh.print_area = f"A1:O{end}"
    sh.row = end + 1


def _label(r: int, e: Engine, w: WhatIf | None) -> Prose:
    """The what-if's description by formula from the row's own inputs (leading separator kept), and its text."""
    s, plan = e.s, e.plan
    ww = w or WhatIf()
    rate, p95, itl = ww.rate_x, ww.prompt_p95_x, ww.itl_x
    return F.join(
        F.when(f"AND(ISNUMBER(B{r}),B{r}<>1)", rate != 1.0,
               F.join(f"{SEP}peak rate x", F.short(f"B{r}", rate), " (", F.short(f"PeakRate*B{r}", s.peak_rps * rate), " req/s)")),
        F.when(f"AND(ISNUMBER(C{r}),C{r}<>1)", p95 != 1.0,
               F.join(f"{SEP}p95 prompts reach ", F.fixed(f"PromptP95*C{r}", s.prompt_p95 * p95), " tokens (x", F.short(f"C{r}", p95), ")")),
        F.when(f"AND(ISNUMBER(D{r}),D{r}<>1)", itl != 1.0,
               F.join(f"{SEP}inter-token target x", F.short(f"D{r}", itl), " (", F.short(f"ITLTarget*D{r}", s.itl_s * itl, 4), " s, ",
                      F.short(f"1/(ITLTarget*D{r})", 1 / (s.itl_s * itl), 1), " tokens/s)")),
        F.when(f'E{r}<>""', ww.kv_dtype is not None,
               F.join(SEP, F.ref(f"E{r}", ww.kv_dtype or ""), " KV cache",
                      F.when(f"E{r}=KVDtype", ww.kv_dtype == plan.model.kv_dtype, " (already)"))),
        F.when(f'F{r}<>""', ww.weights_dtype is not None,
               F.join(SEP, F.ref(f"F{r}", ww.weights_dtype or ""), " weights",
                      F.when(f"F{r}=WeightsDtype", ww.weights_dtype == plan.model.weights_dtype, " (already)"))),
        F.when(f"ISNUMBER(G{r})", ww.prefix_reuse is not None,
               F.join(f"{SEP}prefix reuse ", F.pct(f"G{r}", ww.prefix_reuse or 0.0))),
        F.when(f"ISNUMBER(H{r})", ww.average_utilisation is not None,
               F.join(f"{SEP}average utilisation ", F.pct(f"H{r}", ww.average_utilisation or 0.0))),
    )


def _input_validation(title: str, kind: str) -> Validation:
    if kind == "dtype":
        lst = {"KV": "KVDtypes", "Weights": "WeightDtypes"}[title.split()[0]]
        return Validation("list", None, f"={lst}", None, True, title[:32], "Blank keeps the plan's dtype.", "Pick from the list.")
    if kind == "ratio":
        return Validation("decimal", "greaterThan", "0", None, True, title[:32],
                          "A multiple of the plan's value; blank keeps it (1 = unchanged).", "Enter a positive multiple, e.g. 1.5.")
    return Validation("decimal", "between", "0", "1", True, title[:32], "Blank keeps the plan's value: 0.40, not 40.",
                      "Enter a fraction between 0 and 1: 0.40, not 40.")


def _sens_row(sh: Sheet, r: int, tp_row: int, e: Engine, row: WhatIfRow, C: dict, per_tp: dict) -> None:
    """One what-if row: its inputs (blank for a blank row: an empty row for the user), a formula in every other column,
    and the engine's re-plan of it (``row``, from :func:`xlplan.excel.book.whatif_row`) as the values."""
    w = row.whatif
    blank = w is None
    _row_inputs(sh, r, w)
    q = {k: f"{v}{r}" for k, v in C.items()}
    label = _label(r, e, w)
    put = _putter(sh, r)
    put(C["blank"], f'=AND(COUNT(B{r}:D{r},G{r}:H{r})=0,E{r}="",F{r}="")', blank)
    put(C["desc"], "=" + label.formula, label.text)
    desc = q["desc"]
    put("A", f'=IF({q["blank"]},"",IF({desc}="","as planned",MID({desc},LEN("{SEP}")+1,LEN({desc}))))',
        "" if blank else (label.text[len(SEP):] or "as planned"))
    _working_columns(put, r, e, row, C, q)
    for i, tp in enumerate(TP_DEGREES):
        _per_tp_columns(sh, put, r, i, tp, tp_row, row, q, per_tp)
    _choice_columns(put, r, row, C, q, per_tp)
    _result_columns(put, r, row, q)


def _putter(sh: Sheet, r: int):
    """A function putting one calculated cell of row ``r``: (column, formula, cached value, format)."""
    def put(col, formula, cached, fmt=None):
        sh.put(col, r, Cell(formula, formula=True, cached=cached, kind="calc", fmt=fmt))
    return put


def _row_inputs(sh: Sheet, r: int, w: WhatIf | None) -> None:
    """The row's input cells B to H (yellow, validated): the what-if's changes, blank where it keeps the plan's value."""
    ww = w or WhatIf()

    def ratio(x):
        return None if x == 1.0 else x

    inputs = (None, ratio(ww.rate_x), ratio(ww.prompt_p95_x), ratio(ww.itl_x), ww.kv_dtype, ww.weights_dtype, ww.prefix_reuse,
              ww.average_utilisation)
    for i, (v, (title, kind, fmt)) in enumerate(zip(inputs, SENS_INPUT_COLS)):
        if kind != "label":
            sh.put(i + 1, r, Cell(None if w is None else v, kind="input", fmt=fmt, validation=_input_validation(title, kind)))


def _working_cached(e: Engine, row: WhatIfRow) -> dict:
    """The engine's value of each working column of a what-if row (empty when the row's inputs cannot run)."""
    sc, tr, ww = row.scenario, row.traffic, row.whatif or WhatIf()
    if sc is None:
        return {}
    return {
        "rate": sc.peak_rps, "p95": sc.prompt_p95, "p50": sc.prompt_p50, "p99": sc.prompt_p99 if sc.prompt_p99 is not None else "",
        "itl": sc.itl_s, "kvd": ww.kv_dtype or e.plan.model.kv_dtype, "wd": ww.weights_dtype or e.plan.model.weights_dtype,
        "reuse": sc.prefix_reuse, "util": sc.average_utilisation, "sig": row.prompt_sigma, "pmean": tr.prompt_mean,
        "pm2": tr.prompt_second_moment, "p99fit": row.prompt_p99_fit, "conv": tr.conversation_tokens,
        "tis": tr.time_in_system_s, "conc": tr.concurrency, "kvtl": sc.kv_bytes_per_token_layer,
        "kvconv": tr.kv_bytes_per_conversation, "kvgib": tr.kv_gib_per_conversation, "wbytes": sc.weights_bytes,
        "cdtype": row.compute_dtype, "peak": sc.peak_tflops, "prefill": tr.prefill_flops_per_request,
        "decode": tr.decode_flops_per_token, "demand": row.demand_gpus,
    }


def _working_columns(put, r: int, e: Engine, row: WhatIfRow, C: dict, q: dict) -> None:
    """The row's inputs resolved against the plan's, and the traffic and demand they imply, each by formula."""
    cached = _working_cached(e, row)
    put(C["rate"], f"=PeakRate*IF(ISNUMBER(B{r}),B{r},1)", cached.get("rate", NA))
    put(C["p95"], f"=PromptP95*IF(ISNUMBER(C{r}),C{r},1)", cached.get("p95", NA))
    put(C["p50"], f"=MIN(PromptP50,{q['p95']})", cached.get("p50", NA))
    put(C["p99"], f'=IF(ISNUMBER(PromptP99),MAX(PromptP99,{q["p95"]}),"")', cached.get("p99", NA))
    put(C["itl"], f"=ITLTarget*IF(ISNUMBER(D{r}),D{r},1)", cached.get("itl", NA))
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
    put(C["wbytes"], "=" + F.weights_bytes(F.dtype_bytes(q["wd"], "WeightDtypes", "WeightDtypeBytes"), q["wd"]), cached.get("wbytes", NA))
    put(C["cdtype"], "=" + F.compute_dtype(q["wd"]), cached.get("cdtype", NA))
    put(C["peak"], "=" + F.peak_tflops(q["cdtype"]), cached.get("peak", NA))
    put(C["prefill"], "=" + F.prefill_flops(q["pmean"], q["pm2"]), cached.get("prefill", NA))
    put(C["decode"], "=" + F.decode_flops(q["pmean"]), cached.get("decode", NA))
    put(C["demand"], f"=({q['rate']}*{q['prefill']}*(1-{q['reuse']})/({q['peak']}*PrefillMFU)"
        f"+{q['rate']}*OutputMean*{q['decode']}/({q['peak']}*DecodeMFU))/TeraUnit", cached.get("demand", NA))


def _per_tp_columns(sh: Sheet, put, r: int, i: int, tp: int, tp_row: int, row: WhatIfRow, q: dict, per_tp: dict) -> None:
    """The memory, compute and latency paths, the load and the TP objective of the row at the ``i``-th degree."""
    c = row.candidates.get(tp)
    is_c = row.scenario is not None and tp in row.scenario.tp_options
    t = f"{per_tp['mem'][i]}${tp_row}"
    budget = f"({F.kv_budget_engine(q['wbytes'], t, F.activation_gib(t))})"
    shards = f"IF(AttentionDataParallel,{t},MIN({t},KVShardLimit))"
    conc, kvgib, demand = q["conc"], q["kvgib"], q["demand"]
    whole = F.whole_gpus(f"{conc}/(MAX({budget},0)*{shards}/{kvgib})", t)
    mem = f'=IF({F.tp_considered(t)},IF({budget}>0,{whole},"{NONE}"),"")'
    put(per_tp["mem"][i], mem, (num(c.memory_gpus) if is_c else "") if c else NA, "0")
    t = f"{per_tp['comp'][i]}${tp_row}"
    whole = F.whole_gpus(f"{demand}/{t}", t)
    put(per_tp["comp"][i], f'=IF({F.tp_considered(t)},{whole},"")', (c.compute_gpus if is_c else "") if c else NA, "0")
    # the largest batch within the target: searched by the engine for this row (a bisection is not a formula)
    sh.put(per_tp["batch"][i], r, Cell(num(c.max_decode_batch) if c and not math.isinf(c.max_decode_batch) else 0.0,
                                       kind="static", fmt=FMT["num"]))
    t = f"{per_tp['lat'][i]}${tp_row}"
    batch = per_tp["batch"][i] + str(r)
    whole = F.whole_gpus(f"{conc}/{batch}", t)
    put(per_tp["lat"][i], f'=IF({F.tp_considered(t)},IF({batch}>0,{whole},"{NONE}"),"")',
        (num(c.latency_gpus) if is_c else "") if c else NA, "0")
    mc, cc, lc = per_tp["mem"][i] + str(r), per_tp["comp"][i] + str(r), per_tp["lat"][i] + str(r)
    load = c.load if (c and is_c and not math.isinf(c.load)) else ""
    put(per_tp["load"][i], f'=IF(AND(ISNUMBER({mc}),ISNUMBER({lc})),MAX({mc},{cc},{lc}),"")', load if c else NA, "0")
    t = f"{per_tp['obj'][i]}${tp_row}"
    ld = per_tp["load"][i] + str(r)
    with_red = f"({ld}/{t}+Redundancy)*{t}"
    bought = f"ROUNDUP({with_red}/GPUsPerNode,0)*GPUsPerNode"
    obj = f'=IF(ISNUMBER({ld}),{F.tp_objective(bought, f"IF(BillPurchased,{bought},{with_red})", t)},"")'
    put(per_tp["obj"][i], obj, row.objectives.get(tp, "") if c else NA, "0")


def _choice_columns(put, r: int, row: WhatIfRow, C: dict, q: dict, per_tp: dict) -> None:
    """The degree the row's objectives choose, the three paths there, and the row's tokens per month."""
    sol = row.solved.paths if row.solved else None
    mems = f"{per_tp['mem'][0]}{r}:{per_tp['mem'][-1]}{r}"
    comps = f"{per_tp['comp'][0]}{r}:{per_tp['comp'][-1]}{r}"
    lats = f"{per_tp['lat'][0]}{r}:{per_tp['lat'][-1]}{r}"
    inf = "infeasible"
    planned = sol is not None
    choice = TP_DEGREES.index(sol.tp) + 1 if planned else inf
    objs = f"{per_tp['obj'][0]}{r}:{per_tp['obj'][-1]}{r}"
    put(C["choice"], f'=IF(COUNT({objs})=0,"{inf}",MATCH(MIN({objs}),{objs},0))', choice, "0")
    put(C["memc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({mems},{q["choice"]}),"{inf}")', sol.memory_gpus if planned else inf, "0")
    put(C["compc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({comps},{q["choice"]}),"{inf}")', sol.compute_gpus if planned else inf, "0")
    put(C["latc"], f'=IF(ISNUMBER({q["choice"]}),INDEX({lats},{q["choice"]}),"{inf}")', sol.latency_gpus if planned else inf, "0")
    put(C["tokens"], f"={q['rate']}*({q['pmean']}+OutputMean)*{q['util']}*HoursPerMonth*SecondsPerHour",
        NA if row.scenario is None else row.tokens_per_month, FMT["sci"])


def _result_columns(put, r: int, row: WhatIfRow, q: dict) -> None:
    """The row's results I to O: empty for a blank row, "infeasible" where no degree can carry it."""
    blank = row.whatif is None
    sol = row.solved.paths if row.solved else None
    ok = sol is not None and not blank
    inf = "infeasible"
    b = row.solved.bill if sol is not None else None

    def res(col, formula, value, fmt=None):
        put(col, f'=IF({q["blank"]},"",{formula})', "" if blank else value if ok else inf, fmt)

    m_, c_, l_ = q["memc"], q["compc"], q["latc"]
    has = f'ISNUMBER({q["choice"]})'
    res("I", f'IF({has},MAX({m_},{c_},{l_}),"{inf}")', sol.load if ok else None, FMT["int"])
    res("O", f'IF({has},INDEX(TPDegrees,{q["choice"]}),"{inf}")', sol.tp if ok else None, "0")
    res("J", f'IF({has},(I{r}/O{r}+Redundancy)*O{r},"{inf}")', sol.with_redundancy if ok else None, FMT["int"])
    res("K", f'IF({has},ROUNDUP(J{r}/GPUsPerNode,0)*GPUsPerNode,"{inf}")', sol.purchased if ok else None, FMT["int"])
    res("L", f'IF({has},{F.binding(m_, c_, l_, f"O{r}")},"{inf}")', row.solved.binding if ok else None)
    res("M", f'IF({has},IF(BillPurchased,K{r},J{r})*GPUUSDPerHour*HoursPerMonth+FixedUSDPerMonth,"{inf}")', b.monthly_usd if ok else None,
        FMT["usd"])
    res("N", f'IF({has},M{r}*TokensPerMillion/{q["tokens"]},"{inf}")', b.usd_per_mtok if ok else None, FMT["usd_mtok"])
