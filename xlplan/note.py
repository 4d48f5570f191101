"""The one-page capacity note, six sections in the runbook's order, as text or Markdown.

Reads a :class:`~xlplan.result.PlanResult`; computes nothing.
"""

from __future__ import annotations

from xlplan.result import PlanResult, Sensitivity

SECTIONS = (
    "1 · The inputs, attributed",
    "2 · The model and precision",
    "3 · The two constraints",
    "4 · The fleet",
    "5 · The cost",
    "6 · What would change it",
)


def _n(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def _usd(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"${x:,.{digits}f}"


def _tokens(x: float) -> str:
    return f"{x / 1e9:,.1f} billion" if x >= 1e9 else f"{x / 1e6:,.1f} million"


def _binding_words(r: PlanResult) -> str:
    counts = {"memory": r.memory.gpus, "compute": r.compute.gpus, "latency": r.latency.gpus}
    exact = {"memory": r.memory.gpus_exact, "compute": r.compute.gpus_exact, "latency": r.latency.gpus_exact}
    detail = ", ".join(f"{k} {counts[k]} ({exact[k]:.2f} exact)" for k in counts)
    if r.binding == "minimum replica":
        head = f"No path binds: every path fits in one replica of {r.fleet.tp} GPU(s), so the minimum replica sets the fleet"
        top = max(exact.values())
        tail = (f" — the largest path is {top:.3g} of its {r.fleet.tp} GPU(s): traffic could grow about "
                f"{r.fleet.tp / top:,.1f}× before it needs a second replica (every path grows with the rate; see the "
                "breakpoints)." if top > 0 else " (see the breakpoints).")
    elif r.binding in ("both", "all"):
        which = " and ".join(r.binding_paths)
        head = f"{which.capitalize()} bind about equally ({counts[r.binding_paths[0]]} GPUs each)"
        tail = " — either could move first if the traffic shape shifts, so watch both gauges."
    else:
        head = f"{r.binding.capitalize()} binds"
        tail = {
            "memory": " — fp8 cache, a lower context limit, quantised weights help; more compute does nothing.",
            "compute": " — prefix reuse, shorter prompts, a smaller model help; an fp8 cache does nothing.",
            "latency": " — the decode step at this batch is too slow for the inter-token target; more replicas, "
            "fewer bytes per step (fp8 weights) or a faster GPU help.",
        }[r.binding]
    return f"The runbook's method: {head[0].lower()}{head[1:]}{tail} GPUs by path: {detail}."


QUEUEING_WORDS = ("requests wait for a slot; more replicas or a shorter step (a smaller step budget, fp8 weights) help; "
                  "more cache room (an fp8 cache's) does nothing")
"""What the queueing path binding means, and what helps. [text]"""


def _closed_binding_words(r: PlanResult) -> str:
    """The closed form's binding path and what would move it. [text]"""
    cf = r.closed_form
    tails = {
        "memory": "the cache holds the conversations in flight; an fp8 cache, a lower context limit or quantised weights help",
        "compute": "prefill and decode FLOPs; prefix reuse, shorter prompts or a smaller model help",
        "latency": "the decode step at this batch is too slow for the inter-token target; more replicas or fewer bytes per step help",
        "queueing": QUEUEING_WORDS,
    }
    if cf.binding == "minimum replica":
        return f"The closed form: every path fits in one replica of {cf.tp} GPU(s), so the minimum replica sets the fleet."
    parts = "; ".join(f"{p}: {tails[p]}" for p in cf.binding_paths)
    return f"The closed form is {cf.load} GPUs, the largest of the four paths — {parts}."


def _who_binds(binding: str, paths: list[str] | None) -> str:
    if binding == "all":
        return "all three paths bind"
    if binding == "both" and paths:
        return f"{paths[0]} and {paths[1]} bind together"
    if binding == "infeasible":
        return "the plan becomes infeasible"
    if binding == "minimum replica":
        return "the minimum replica sets the fleet"
    return f"{binding} bind" + ("" if " and " in binding else "s")


def sensitivity_sentence(s: Sensitivity, base_fleet: int) -> str:
    """'If p95 prompts reach 8,000 tokens (x4), compute binds and the fleet goes to 7.'

    Parameters
    ----------
    s : Sensitivity
        One what-if: the re-planned fleet with one input changed.
    base_fleet : int
        The plan's own fleet with redundancy, against which the what-if's fleet is compared. [GPUs]

    Returns
    -------
    str
        One sentence: the change, what binds and the fleet it gives; or why the changed plan cannot be met.
    """
    if not s.feasible:
        return f"If {s.change}: the plan cannot be met — {s.note}"
    if s.fleet == base_fleet:
        move = f"the fleet stays at {s.fleet}"
    else:
        move = f"the fleet goes to {s.fleet}"
    return f"If {s.change}, {_who_binds(s.binding, s.binding_paths)} and {move} ({s.purchased} purchased; {_usd(s.usd_per_mtok, 3)}/M tokens)."


def _breakpoint_sentence(b, unit_fmt) -> list[str]:
    out = []
    name = {"peak_rps": "peak rate", "prompt_p95": "p95 prompt", "output_p50": "p50 output", "itl_s": "inter-token target"}[b.variable]
    way = "rises" if b.direction == "up" else "falls"
    if b.fleet_step_at is not None:
        after = f"{b.purchased_after} GPUs" if b.purchased_after is not None else "infeasible"
        out.append(f"{name} {way} past {unit_fmt(b.fleet_step_at)} {b.unit}: the purchase grows to {after}")
    if b.binding_flip_at is not None:
        out.append(f"{name} {way} past {unit_fmt(b.binding_flip_at)} {b.unit}: {_who_binds(b.binding_after, b.binding_paths_after)}")
    return out


def note_sections(r: PlanResult) -> list[tuple[str, list[tuple[str, str]], list[str]]]:
    """The note as (title, rows of (label, value), paragraphs) per section.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    list of (str, list of (str, str), list of str)
        Six sections in order: the title, its rows of label and value, and its paragraphs.

    References
    ----------
    Runbook, document 14, "The capacity note": its six sections, in this order.
    """
    i, m, mem, c, lat, f, k = r.inputs, r.model, r.memory, r.compute, r.latency, r.fleet, r.cost

    def pct(d):
        p99 = "—" if d.p99 is None else _n(d.p99)
        return f"p50 {_n(d.p50)} · p95 {_n(d.p95)} · p99 {p99} (fitted mean {_n(d.mean)})"

    s1 = [
        ("Peak arrival rate", f"{i.peak_rps:g} requests/s  [owner: {i.owners['forecast']}]"),
        ("Prompt tokens", f"{pct(i.prompt_tokens)}  [owner: {i.owners['forecast']}]"),
        ("Output tokens", f"{pct(i.output_tokens)}  [owner: {i.owners['forecast']}]"),
        ("Average utilisation", f"{i.average_utilisation:.0%} of peak  [owner: {i.owners['forecast']}]"),
        ("Prefix reuse (measured)", f"{i.prefix_reuse:.0%}"),
        ("Promise", f"TTFT < {i.ttft_s:g} s, inter-token < {i.itl_s * 1000:g} ms ({1 / i.itl_s:g} tokens/s) at p{i.percentile:g}  [owner: {i.owners['promise']}]"),
        ("Prices", f"${k.usd_per_gpu_hour:.4g}/GPU-hour{' (owned)' if k.ownership else ''}; API {_usd(k.api_usd_per_mtok_blended, 3)}/M blended  [owner: {i.owners['pricing']}]"),
    ]
    s2 = [
        ("Model", f"{m.name}: {m.params_total / 1e9:,.2f} B parameters from the config ({m.params_active / 1e9:,.2f} B active per token)"),
        ("Weights", f"{m.weights_dtype}: {m.weights_gib:,.2f} GiB"),
        ("KV cache per token", f"{m.kv_dtype}: {_n(m.kv_bytes_per_token)} bytes ({m.kv_bytes_per_token / 2**20:.3f} MiB)"),
        ("KV per conversation", f"{mem.kv_gib_per_conversation:.3f} GiB at {_n(mem.conversation_tokens)} tokens ({mem.convention} convention)"),
        ("GPU", f"{m.gpu}: {m.gpu_memory_gib:.2f} GiB as the driver reports it, {m.peak_tflops:g} TFLOP/s dense {m.compute_dtype}, {m.hbm_tbps:g} TB/s"),
    ]
    s3 = [
        ("Time in system", (f"{_n(i.output_tokens.mean, 1)} tokens mean output × {i.itl_s * 1000:g} ms inter-token target = "
                           f"{r.time_in_system_s:.1f} s")),
        ("Concurrency (Little's Law)", f"{i.peak_rps:g} req/s × {r.time_in_system_s:.1f} s = {_n(r.concurrency, 1)} in flight"),
        ("Memory path", (f"{_n(r.concurrency, 1)} × {mem.kv_gib_per_conversation:.3f} GiB = {mem.kv_gib_total:,.1f} GiB ÷ {mem.kv_budget_gib_per_gpu:.2f} GiB per GPU"
                        f"{_unsharded(f.tp, mem.kv_shards)} = {mem.gpus_exact:.2f} → {mem.gpus} GPUs")),
        ("KV budget per GPU", _kv_budget_line(m, mem)),
        ("Compute path", f"(prefill {_n(c.prefill_tflops)} + decode {_n(c.decode_tflops)}) TFLOP/s ÷ {c.tflops_per_gpu:,.1f} per GPU at {c.mfu:.0%} MFU = {c.gpus_exact:.2f} → {c.gpus} GPUs"
                         if c.prefill_mfu == c.decode_mfu == c.mfu else
                         f"(prefill {_n(c.prefill_tflops, 1)} TFLOP/s ÷ {c.prefill_mfu:.2%} MFU + decode {_n(c.decode_tflops, 1)} TFLOP/s ÷ "
                         f"{c.decode_mfu:.2%} MFU) ÷ {m.peak_tflops:,.0f} TFLOP/s per GPU = {c.gpus_exact:.2f} → {c.gpus} GPUs"),
        ("Latency check", f"decode step {lat.decode_step_s * 1000:.1f} ms at this batch (max batch {lat.max_decode_batch:,.0f} per replica) → {lat.gpus} GPUs; p95 prefill {lat.ttft_p95_s:.2f} s {'meets' if lat.ttft_ok else 'MISSES'} the TTFT target"),
    ]
    if r.queueing is not None:
        s3.append(("Queueing path", _queueing_line(r)))
    cf = r.closed_form
    if cf is not None:
        s3.append(("Closed form", _closed_form_line(r)))
    s4 = [
        ("Runbook's method", (f"{f.load} GPUs for the load (TP {f.tp}) + {_spares(f.redundancy_replicas, f.tp)} = "
                             f"{f.with_redundancy} with redundancy → {f.purchased} purchased "
                             f"({_count(f.purchased // f.gpus_per_node, 'node')} of {f.gpus_per_node})")),
    ]
    if f.calibrated_low is not None and f.calibrated_high is not None:
        def _at(a):
            return f"{a.with_redundancy} ({a.purchased} purchased)" if a.feasible else "cannot be met"

        s4.append(("Calibrated range", (f"fleet {_at(f.calibrated_high)} to {_at(f.calibrated_low)} GPUs over the calibrated "
                                       f"efficiencies (runbook's method; point figure {f.with_redundancy}); calibrated from "
                                       f"{r.calibration_source}")))
    if cf is not None:
        s4.append(("Closed form", (f"{cf.load} GPUs for the load ({_who_binds(cf.binding, cf.binding_paths)}) + "
                                  f"{_spares(f.redundancy_replicas, cf.tp)} = {cf.with_redundancy} with redundancy → "
                                  f"{cf.purchased} purchased")))
    a = r.answer
    bill_gpus, bill_usd = (a.billed_gpus, a.monthly_usd) if a is not None else (k.billed_gpus, k.monthly_usd)
    mtok = a.usd_per_mtok if a is not None else k.usd_per_mtok
    breakeven = a.breakeven_tokens_per_month if a is not None else k.breakeven_tokens_per_month
    by_util = a.usd_per_mtok_by_utilisation if a is not None else k.usd_per_mtok_by_utilisation
    fixed = bill_usd - bill_gpus * k.usd_per_gpu_hour * k.hours_per_month
    extra = f" + {_usd(fixed)} fixed" if abs(fixed) >= 0.5 else ""
    s5 = [
        ("Monthly bill", f"{bill_gpus} GPUs ({k.billing}) × ${k.usd_per_gpu_hour:g}/h × {k.hours_per_month:g} h{extra} = "
                         f"{_usd(bill_usd)} / month, fixed" + (" (the Answer's fleet)" if a is not None else "")),
        ("Tokens per month", f"{_tokens(k.tokens_per_month)} at {i.average_utilisation:.0%} average utilisation"),
        ("Cost per million tokens", f"{_usd(mtok, 3)} (all kinds)"),
        ("Same traffic on the API", f"{_usd(k.api_monthly_usd)} / month at {k.api_provider or 'the plan’s API prices'}"
         if k.api_monthly_usd is not None else "no API price given"),
        ("Break-even volume", f"{_tokens(breakeven)} tokens / month" if breakeven is not None else "—"),
        ("By utilisation", ", ".join(f"{u.utilisation:.0%} {_usd(u.usd_per_mtok, 3)}" for u in by_util)),
    ]
    if a is not None:
        s5.insert(1, ("Runbook's method", (f"{k.billed_gpus} GPUs ({k.billing}) × ${k.usd_per_gpu_hour:g}/h × "
                                          f"{k.hours_per_month:g} h = {_usd(k.monthly_usd)} / month "
                                          f"(~${k.monthly_usd / 1000:,.0f}k; {_usd(k.usd_per_mtok, 3)}/M tokens)")))
    o = k.ownership
    if o is not None:
        own_at = 0 if a is None else 2
        s5[own_at:own_at + (1 if a is None else 0)] = [("Monthly cost of ownership" + ("" if a is None else " (the runbook's fleet)"),
                 (f"{k.billed_gpus} GPUs owned: depreciation {_usd(o.depreciation_usd_per_month)} ({_usd(o.capex_usd)} over "
                 f"{o.depreciation_years:g} years) + power {_usd(o.energy_usd_per_month)} ({o.kw_per_gpu:g} kW x PUE {o.pue:g} x "
                 f"${o.usd_per_kwh:g}/kWh) + hosting {_usd(o.hosting_usd_per_month)} + hardware ops "
                 f"{_usd(o.hardware_ops_usd_per_month)} = {_usd(k.monthly_usd)} / month ({_usd(o.owned_usd_per_gpu_hour, 2)}/GPU-hour before hardware ops)"))]
        if o.rent_monthly_usd is None:
            s5.insert(1, ("Against renting", "no rental price known for this GPU"))
        else:
            pay = (f"buying pays back in {o.payback_months:,.1f} months" if o.payback_months is not None
                   else "renting costs less than running owned hardware: buying never pays back")
            s5.insert(1, ("Against renting", (f"renting the {f.with_redundancy} GPUs with redundancy at ${o.rent_usd_per_gpu_hour:g}/h: "
                                             f"{_usd(o.rent_monthly_usd)} / month; {pay}")))
    p3 = [_binding_words(r)]
    q = r.queueing
    budget_words = _budget_sentence(r)
    if budget_words:
        p3.append(budget_words)
    if r.closed_form is not None:
        p3.append(_closed_binding_words(r))
    # the queueing path is at the closed form's TP degree: it is set against the runbook's load at that degree
    cf_tp = r.closed_form.tp if r.closed_form is not None else f.tp
    rb_load = next((int(o.load) for o in r.tp_options if o.tp == cf_tp), f.load) if cf_tp != f.tp else f.load
    at_tp = f" at TP {cf_tp}" if cf_tp != f.tp else ""
    if q is not None and (q.gpus is None or q.gpus > rb_load):
        p3.append((f"The queueing path needs {q.gpus} GPUs, more than the runbook's load{at_tp} of {rb_load}" if q.gpus is not None
                   else "No fleet keeps the wait for a slot within the TTFT promise")
                  + (f": at {rb_load} the replicas would run at ρ = {q.utilisation_at_load:.2f}"
                     + (", so requests would queue for a slot without bound" if q.utilisation_at_load >= 1 else
                        ", and the wait for a slot would pass the TTFT promise")
                     if q.gpus is not None else f" (the p{i.percentile:g} prompt's prefill alone takes {q.prefill_at_percentile_s:.2f} s)")
                  + ".")
    p4 = [f.tp_reason + "."]
    v = r.verified
    if v is not None:
        s4.append(("Verified at peak (simulated)",
                   (f"{v.load} GPUs keep the promise (p95 TTFT {_secs(v.ttft_p95_s)}, inter-token {_secs(v.itl_p95_s)})"
                    if v.load is not None else f"no fleet up to {v.searched_up_to} GPUs keeps the promise")
                   + f" — {v.minutes:g} min, {v.arrivals}, {_seeds(v)}, {v.chunk_tokens:,}-token steps"))
        if v.load is not None:
            s4.append(("With redundancy (simulated)", _redundancy_row(v)))
        p4 += [v.sentence] + ([v.redundancy_sentence] if v.redundancy_sentence else []) + [v.failure_sentence]
        if cf is not None and v.load is not None and v.load != cf.load:
            lengths = (r.inputs.prompt_tokens, r.inputs.output_tokens)
            p4.append(_disagreement(cf, v, tail=any((x.p99 or x.p95) > x.p50 for x in lengths)))
    a = r.answer
    if a is not None:
        s4.append(("Purchase", (f"{a.purchased} GPUs ({_count(a.purchased // f.gpus_per_node, 'node')} of {f.gpus_per_node}) for "
                               f"{a.with_redundancy} with redundancy — {_answer_source(r)}")))
        if a.step_budget_tokens != (cf.default_step_budget_tokens if cf is not None else a.step_budget_tokens):
            s4.append(("Serving setting", f"policy.max_num_batched_tokens: {a.step_budget_tokens} (deploy it; "
                                          f"{cf.default_step_budget_tokens:,}-token steps need "
                                          + (f"{cf.default_budget_queueing_gpus} GPUs" if cf.default_budget_queueing_gpus is not None
                                             else "more than any fleet") + " on the queueing path)"))
    api_words = []
    if k.api_monthly_usd is not None:
        ratio = k.api_monthly_usd / bill_usd
        api_words.append(
            (f"On infrastructure alone self-hosting is {ratio:,.1f}× cheaper than the API at this volume. " if ratio >= 1 else
             f"On infrastructure alone self-hosting is {1 / ratio:,.1f}× dearer than the API at this volume. " if ratio > 0 else
             "On infrastructure alone self-hosting is dearer than the API, which costs nothing at this volume. ")
            + "Left out: engineering time, on-call, upgrades and re-benchmarking, idle overnight capacity, cold-start risk"
            + (f" (ops counted in the break-even: {_usd(k.ops_usd_per_month)}/month)." if k.ops_usd_per_month else ".")
            + " Utilisation is the biggest lever: a half-idle GPU costs what a busy one does."
        )
    # a breakpoint is searched to 1 part in 10^4 (whatif.RELATIVE_TOLERANCE): lengths shown to four figures
    fmt = {"requests/s": lambda x: f"{x:,.1f}", "tokens": lambda x: f"{float(f'{x:.4g}'):,.0f}", "s/token": lambda x: f"{x:.4f}"}
    if cf is not None and r.closed_form_sensitivities:
        p6 = [f"On the closed form (the largest of the four paths, {cf.step_budget_tokens:,}-token steps; not simulated):"]
        p6 += [sensitivity_sentence(s, cf.with_redundancy) for s in r.closed_form_sensitivities]
        p6 += [f"Breakpoint (closed form): {line}." for b in r.closed_form_breakpoints for line in _breakpoint_sentence(b, fmt[b.unit])]
    else:
        p6 = [sensitivity_sentence(s, f.with_redundancy) for s in r.sensitivities]
        for b in r.breakpoints:
            p6 += [f"Breakpoint: {line}." for line in _breakpoint_sentence(b, fmt[b.unit])]
    return [
        (SECTIONS[0], s1, []),
        (SECTIONS[1], s2, []),
        (SECTIONS[2], s3, p3),
        (SECTIONS[3], s4, p4),
        (SECTIONS[4], s5, api_words),
        (SECTIONS[5], [], p6),
    ]


def _budget_sentence(r: PlanResult) -> str:
    """Where the step budget decides the queueing path: the budget deployed, the alternatives, and whether the plan's
    own setting stands. '' where no budget needs fewer replicas than the default. [text]"""
    q, cf = r.queueing, r.closed_form
    if q is None or cf is None or not q.budget_options:
        return ""
    met = [(n, b) for b, n in q.budget_options if n is not None]
    if not met:
        return ""
    others = ", ".join(f"{n if n is not None else 'none'} at {b:,}" for b, n in q.budget_options)
    fewest, best = min(met, key=lambda nb: (nb[0], -nb[1]))
    if cf.budget_chosen_by == "plan":
        if q.replicas is None or fewest < q.replicas:
            return (f"The step budget decides the queueing path: {best:,}-token steps would need {fewest} replicas where the "
                    f"plan's {q.step_budget_tokens:,}-token steps need {q.replicas if q.replicas is not None else 'more than any fleet'} "
                    f"(replicas at each budget in tokens: {others}); the plan sets its budget, so it stands.")
        return ""
    if cf.budget_chosen_by == "queueing path":
        default = (f"{cf.default_budget_queueing_gpus // cf.tp}" if cf.default_budget_queueing_gpus is not None
                   else "more than any fleet")
        return (f"The step budget decides the queueing path: {q.step_budget_tokens:,}-token steps need {q.replicas} replicas "
                f"where the default {cf.default_step_budget_tokens:,}-token steps need {default} (replicas at each budget "
                f"in tokens: {others}); deploy policy.max_num_batched_tokens: {q.step_budget_tokens} — the simulation runs it.")
    return ""


def _count(n: int, noun: str) -> str:
    """'1 node', '3 nodes'. [text]"""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _spares(replicas: int, tp: int) -> str:
    """The spare GPUs as an operand: '1 spare replica' at TP 1, '8 (1 spare replica of TP 8)' above. [text]"""
    words = _count(replicas, "spare replica")
    return words if tp == 1 else f"{replicas * tp} ({words} of TP {tp})"


def _unsharded(tp: int, shards: int | None) -> str:
    """' × 8 ÷ 1 shard' where a replica's GPUs each hold more than their share of every cache (MLA, few KV heads). [text]"""
    if shards is None or shards == tp:
        return ""
    return f" × {tp} GPUs per replica ÷ {_count(shards, 'cache shard')}"


def _kv_budget_line(m, mem) -> str:
    """'0.90 × 79.18 GiB visible − 14.99 GiB weights − 4.76 GiB activation peak − 0.13 GiB non-torch = 51.38 GiB':
    every operand of the engine's rule, so the line adds up as printed. [text]"""
    if mem.kv_budget_basis_gib is None:  # a result written before the operands were carried
        return (f"{m.gpu_memory_gib:.2f} GiB × utilisation − {mem.weights_gib_per_gpu:.2f} GiB weights − "
                f"{mem.overhead_gib:g} GiB overhead = {mem.kv_budget_gib_per_gpu:.2f} GiB")
    minus = " − ".join(f"{g:.2f} GiB {label}" for label, g in mem.kv_budget_deductions)
    basis = f"{mem.kv_budget_basis_gib:.2f} GiB{' visible' if mem.kv_budget_basis == 'visible' else ''}"
    if mem.kv_budget_fraction_after:
        return f"{mem.kv_budget_utilisation:.2f} × ({basis} − {minus}) = {mem.kv_budget_gib_per_gpu:.2f} GiB"
    return f"{basis} × {mem.kv_budget_utilisation:.2f} − {minus} = {mem.kv_budget_gib_per_gpu:.2f} GiB"


def _closed_form_line(r: PlanResult) -> str:
    """The closed form's arithmetic: the fleet's own time in system and cache, and the largest path. [text]"""
    cf, i, mem = r.closed_form, r.inputs, r.memory
    budget = next((o.kv_budget_gib_per_gpu for o in r.tp_options if o.tp == cf.tp), mem.kv_budget_gib_per_gpu)
    shards = next((o.kv_shards for o in r.tp_options if o.tp == cf.tp), mem.kv_shards)
    q = "none" if cf.queueing_gpus is None else f"{cf.queueing_gpus}"
    return (f"at the fleet's achieved step, {i.output_tokens.mean:,.1f} tokens × {cf.achieved_step_s * 1000:.2f} ms = "
            f"{cf.time_in_system_s:.2f} s in system; {i.peak_rps:g} req/s × {cf.time_in_system_s:.2f} s = "
            f"{cf.concurrency:,.1f} in flight × {mem.kv_gib_per_conversation:.3f} GiB = {cf.kv_gib_total:,.1f} GiB ÷ "
            f"{budget:.2f} GiB per GPU{f' at TP {cf.tp}' if cf.tp != r.fleet.tp else ''}{_unsharded(cf.tp, shards)} = "
            f"{cf.memory_gpus_exact:.2f} GPUs; paths: memory "
            f"{cf.memory_gpus} (the fewest replicas holding their own load), compute {cf.compute_gpus}, latency "
            f"{cf.latency_gpus}, queueing {q} → the largest, {cf.load} GPUs ({_who_binds(cf.binding, cf.binding_paths)})")


def _redundancy_row(v) -> str:
    """'7 GPUs keep the promise with one replica lost (p95 TTFT 337 ms)'. [text]"""
    if v.with_redundancy is None:
        return f"no fleet up to {v.searched_up_to} GPUs keeps the promise with the redundancy lost"
    if v.redundancy_lost_replicas == 0:
        return f"{v.with_redundancy} GPUs: the plan keeps no redundancy"
    lost = "one replica" if v.redundancy_lost_replicas == 1 else f"{v.redundancy_lost_replicas} replicas"
    return (f"{v.with_redundancy} GPUs keep the promise with {lost} lost at the start of the peak (p95 TTFT "
            f"{_secs(v.redundancy_ttft_p95_s)}, inter-token {_secs(v.redundancy_itl_p95_s)})")


def _answer_source(r: PlanResult) -> str:
    """Where the Answer's fleet comes from, in words. [text]"""
    if r.answer.source == "verified":
        return f"verified in simulation on {_seeds(r.verified)}"
    if r.verified is not None:
        return "the closed form: the simulation found no fleet that keeps the promise"
    return "the closed form, not simulated (xlplan plan --verify simulates it)"


def _disagreement(cf, v, tail: bool = True) -> str:
    """Why the closed form and the simulation differ, where they do; ``tail``: the lengths have one (p99 above p50).
    [text]"""
    if v.load < cf.load:
        why = ("the closed form's queue assumes exponential service times (Erlang C with the Allen–Cunneen factor); "
               "a request's decode of a known number of tokens varies less, so the simulated wait is shorter"
               if cf.binding == "queueing" else
               f"the closed form's {cf.binding} path counts averages the simulated steps beat")
    else:
        why = ("the simulation schedules every step with its prefill chunks and each request's own lengths, where the "
               "closed form takes means: " + ("the long prompts and answers of the tail hold slots longer than the mean does"
                                              if tail else "a replica's batch, and so its step, varies about the mean"))
    return (f"The closed form gives {cf.load} GPUs for the load and the simulation {v.load}: {why}. The Answer follows "
            "the simulation.")


def _seeds(v) -> str:
    """'seeds 1, 2, 3 (all must hold)', or 'seed 1' where one workload is all there is. [text]"""
    if len(v.seeds) > 1:
        return f"seeds {', '.join(map(str, v.seeds))} (all must hold)"
    return f"seed {v.seed}"


def _queueing_line(r: PlanResult) -> str:
    """The queueing path's arithmetic: a replica's service rate, the offered load, and the replicas the wait needs."""
    q, i = r.queueing, r.inputs
    if q.service_rps_per_replica <= 0:
        return f"no batch meets the inter-token target with its prefill share ({q.step_budget_tokens:,}-token steps)"
    rate = (f"{q.slots_per_replica:,.2f} sequences ÷ ({_n(i.output_tokens.mean, 1)} tokens × {q.step_s * 1000:.2f} ms) = "
            f"{q.slot_rps_per_replica:.2f} req/s per replica ({q.step_budget_tokens:,}-token steps)")
    load = f"{i.peak_rps:g} req/s ÷ {q.service_rps_per_replica:.2f} = {q.offered_erlangs:.2f} replicas busy"
    if q.replicas is None:
        return (f"{rate}; {load}; the p{i.percentile:g} prompt's prefill alone ({q.prefill_at_percentile_s:.2f} s) leaves no "
                f"wait within the {i.ttft_s:g} s TTFT target")
    tail = ""
    if q.prefill_tail_rps_per_replica is not None:
        tail = (f"; a step carrying a prompt chunk takes {q.prefill_step_s * 1000:.0f} ms, over the {i.itl_s * 1000:g} ms "
                f"target, and at most {100 - i.percentile:g}% of steps may: {q.prefill_tail_rps_per_replica:.2f} req/s per "
                f"replica, {i.peak_rps:g} ÷ {q.prefill_tail_rps_per_replica:.2f} → {q.tail_replicas} replicas at least")
    return (f"{rate}; {load}{tail} → {q.replicas} replicas keep the p{i.percentile:g} wait for a slot at "
            f"{q.wait_at_percentile_s:.2f} s ≤ {i.ttft_s:g} s − {q.prefill_at_percentile_s:.2f} s prefill "
            f"(Erlang C); {q.replicas} × {q.gpus // q.replicas if q.replicas else 0} GPUs per replica = {q.gpus} GPUs")


def _secs(x: float | None) -> str:
    """0.0234 -> '23 ms', 1.31 -> '1.31 s'. [text]"""
    if x is None:
        return "—"
    if x != x:  # NaN: no gap to time (a one-token output decodes no second token)
        return "undefined (one-token outputs)"
    return f"{x * 1000:,.0f} ms" if x < 1 else f"{x:,.2f} s"


def answer_sentence(r: PlanResult) -> str:
    """The Answer line: the verified fleet (else the closed form), what binds, its bill, and where it comes from.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    str
        E.g. '6 GPUs for the load, 7 with redundancy (one replica lost), buy 8; binding: queueing; ~$15,330/month,
        $0.159/M tokens — verified in simulation on seeds 1, 2, 3 (all must hold).' [text]
    """
    a = r.answer
    if a is None:  # a result written before the closed form existed: the runbook's figures
        return (f"{r.fleet.load} GPUs for the load, {r.fleet.with_redundancy} with redundancy, buy {r.fleet.purchased}; "
                f"binding: {r.binding}; ~{_usd(r.cost.monthly_usd)}/month, {_usd(r.cost.usd_per_mtok, 3)}/M tokens.")
    lost = ""
    if a.source == "verified" and r.verified.redundancy_lost_replicas:
        n = r.verified.redundancy_lost_replicas
        lost = " (one replica lost)" if n == 1 else f" ({n} replicas lost)"
    cannot = ("; the TTFT promise cannot be kept by any fleet (the prompt's prefill alone takes longer), so this is the "
              "fleet for the other paths only" if r.closed_form is not None and not r.closed_form.feasible else "")
    return (f"{a.load} GPU{'' if a.load == 1 else 's'} for the load, {a.with_redundancy} with redundancy{lost}, buy {a.purchased}; binding: "
            f"{a.binding}; ~{_usd(a.monthly_usd)}/month, {_usd(a.usd_per_mtok, 3)}/M tokens{cannot} — {_answer_source(r)}.")


def render_text(r: PlanResult) -> str:
    """The capacity note as plain text.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    str
        The title, the answer line, any warnings and the six sections of :func:`note_sections`, newline-terminated.

    References
    ----------
    Runbook, document 14, "The capacity note": its six sections, in this order.
    """
    lines = [f"CAPACITY NOTE — {r.name}", "=" * (16 + len(r.name)), ""]
    lines.append("Answer: " + answer_sentence(r))
    for w in r.warnings:
        lines.append(f"WARNING: {w}")
    for title, rows, paras in note_sections(r):
        lines += ["", title, "-" * len(title)]
        width = max((len(a) for a, _ in rows), default=0)
        lines += [f"  {a.ljust(width)}  {b}" for a, b in rows]
        lines += [f"  {p}" for p in paras]
    return "\n".join(lines) + "\n"


def render_markdown(r: PlanResult) -> str:
    """The capacity note as Markdown.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    str
        A heading, the answer in bold, warnings as quotes and each section of :func:`note_sections` as a table
        and paragraphs (section 6 as a list).

    References
    ----------
    Runbook, document 14, "The capacity note": its six sections, in this order.
    """
    lines = [f"# Capacity note — {r.name}", ""]
    lines.append("**Answer:** " + answer_sentence(r))
    for w in r.warnings:
        lines += ["", f"> **Warning:** {w}"]
    for title, rows, paras in note_sections(r):
        lines += ["", f"## {title}", ""]
        if rows:
            lines += ["| | |", "|---|---|"] + [f"| {a} | {b.replace('|', '/')} |" for a, b in rows] + [""]
        lines += [f"- {p}" if title == SECTIONS[5] else p for p in paras]
    return "\n".join(lines).rstrip() + "\n"
