"""The one-page capacity note, six sections in the runbook's order, as text or Markdown.

Reads a :class:`~xlplan.schema.result.PlanResult`; computes nothing. Sections 3 and 4 and the Answer line are written by
:mod:`xlplan.report.note_constraints` and :mod:`xlplan.report.note_fleet`; the figures' formats are :mod:`xlplan.words`'s.
"""

from __future__ import annotations

import math

from xlplan import words
from xlplan.money.cost import API_PARITY_FACTOR, api_cost_ratio
from xlplan.report.note_constraints import constraints_section
from xlplan.report.note_contracts import contract_rows
from xlplan.report.note_fleet import answer_sentence, fleet_section
from xlplan.report.note_owning import ownership_rows, price_age_row
from xlplan.schema.result import PlanResult, Sensitivity

SECTIONS = (
    "1 · The inputs, attributed",
    "2 · The model and precision",
    "3 · The two constraints",
    "4 · The fleet",
    "5 · The cost",
    "6 · What would change it",
)


PARITY_WORDS = f"self-hosting costs about what the API does (within {API_PARITY_FACTOR - 1:.0%})"
"""Self-hosting against the API within :data:`xlplan.money.cost.API_PARITY_FACTOR`: no factor, which would print as 1.0×. [text]"""


def api_comparison_words(api_usd: float, bill_usd: float) -> str:
    """Self-hosting against the API in the direction of the words, the factor never below 1. [text]

    Parameters
    ----------
    api_usd : float
        The same traffic on the API. [USD/month]
    bill_usd : float
        The self-hosted bill. [USD/month]

    Returns
    -------
    str
        'self-hosting is 2.0× cheaper than the API', 'the API is 31.7× cheaper than self-hosting', :data:`PARITY_WORDS`
        within :data:`xlplan.money.cost.API_PARITY_FACTOR`, or which side costs nothing. [text]

    Examples
    --------
    >>> api_comparison_words(483.552, 15330.0)
    'the API is 31.7× cheaper than self-hosting'
    """
    factor, cheaper = api_cost_ratio(api_usd, bill_usd)
    if cheaper == "parity":
        return PARITY_WORDS
    if math.isinf(factor):  # one side costs nothing: no factor to give
        return "the API costs nothing" if cheaper == "api" else "self-hosting costs nothing"
    return (f"self-hosting is {factor:,.1f}× cheaper than the API" if cheaper == "self-hosting"
            else f"the API is {factor:,.1f}× cheaper than self-hosting")


def _sensitivity_sentence(s: Sensitivity, base_fleet: int) -> str:
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
        move = f"the fleet stays at {s.fleet:,}"
    else:
        move = f"the fleet goes to {s.fleet:,}"
    return (f"If {s.change}, {words.who_binds(s.binding, s.binding_paths)} and {move} ({s.purchased:,} in whole nodes; "
            f"{words.usd(s.monthly_usd)}/month, {words.usd(s.usd_per_mtok, 3)}/M tokens).")


def _breakpoint_sentence(b, unit_fmt) -> list[str]:
    """Where one input, moved one way, grows the purchase and where it changes what binds. [text]"""
    out = []
    name = {"peak_rps": "peak rate", "prompt_p95": "p95 prompt", "output_p50": "p50 output", "itl_s": "inter-token target"}[b.variable]
    way = "rises" if b.direction == "up" else "falls"
    if b.fleet_step_at is not None:
        after = words.count(b.purchased_after, "GPU") if b.purchased_after is not None else "infeasible"
        out.append(f"{name} {way} past {unit_fmt(b.fleet_step_at)} {b.unit}: the purchase grows to {after}")
    if b.binding_flip_at is not None:
        out.append(f"{name} {way} past {unit_fmt(b.binding_flip_at)} {b.unit}: {words.who_binds(b.binding_after, b.binding_paths_after)}")
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
    s3, p3 = constraints_section(r)
    s4, p4 = fleet_section(r)
    return [
        (SECTIONS[0], _inputs_rows(r), []),
        (SECTIONS[1], _model_rows(r), []),
        (SECTIONS[2], s3, p3),
        (SECTIONS[3], s4, p4),
        (SECTIONS[4], _cost_rows(r), _api_paragraphs(r)),
        (SECTIONS[5], [], _whatif_paragraphs(r)),
    ]


def _inputs_rows(r: PlanResult) -> list[tuple[str, str]]:
    """Section 1: each input with its owner. [text]"""
    i, k = r.inputs, r.cost
    return [
        ("Peak arrival rate", f"{i.peak_rps:g} requests/s  [owner: {i.owners['forecast']}]"),
        ("Prompt tokens", f"{words.lengths(i.prompt_tokens)}  [owner: {i.owners['forecast']}]"),
        ("Output tokens", f"{words.lengths(i.output_tokens)}  [owner: {i.owners['forecast']}]"),
        ("Average utilisation", f"{i.average_utilisation:.0%} of peak  [owner: {i.owners['forecast']}]"),
        ("Prefix reuse (measured)", f"{i.prefix_reuse:.0%}"),
        ("Promise", f"TTFT < {i.ttft_s:g} s, inter-token < {i.itl_s * 1000:.4g} ms ({1 / i.itl_s:.4g} tokens/s) at p{i.percentile:g}  [owner: {i.owners['promise']}]"),
        ("Prices", f"${k.usd_per_gpu_hour:.4g}/GPU-hour{' (owned)' if k.ownership else ''}; "
                   + (f"API {words.usd(k.api_usd_per_mtok_blended, 3)}/M blended" if k.api_usd_per_mtok_blended is not None
                      else "API price missing") + f"  [owner: {i.owners['pricing']}]"),
    ]


def _model_rows(r: PlanResult) -> list[tuple[str, str]]:
    """Section 2: the model, its weights and cache, the GPU. [text]"""
    m, mem = r.model, r.memory
    return [
        ("Model", f"{m.name}: {m.params_total / 1e9:,.2f} B parameters from the config ({m.params_active / 1e9:,.2f} B active per token)"),
        ("Weights", f"{m.weights_dtype}: {m.weights_gib:,.2f} GiB"),
        ("KV cache per token", f"{m.kv_dtype}: {words.thousands(m.kv_bytes_per_token)} bytes ({m.kv_bytes_per_token / 2**20:.3f} MiB)"),
        ("KV per conversation", f"{mem.kv_gib_per_conversation:.3f} GiB at {words.thousands(mem.conversation_tokens)} tokens ({mem.convention} convention)"),
        ("GPU", f"{m.gpu}: {m.gpu_memory_gib:.2f} GiB as the driver reports it, {m.peak_tflops:g} TFLOP/s dense {m.compute_dtype}, {m.hbm_tbps:g} TB/s"),
    ]


def _bill(r: PlanResult) -> tuple[int, float]:
    """The GPUs on the bill and the monthly bill: the Answer's fleet, else the runbook's. [GPUs], [USD/month]"""
    a, k = r.answer, r.cost
    return (a.billed_gpus, a.monthly_usd) if a is not None else (k.billed_gpus, k.monthly_usd)


def _hourly(price: float, gpus: int, hours: float, fixed: float, total: float) -> str:
    """The price a bill line prints: as short as it is, with more decimals where the line redone from its printed
    operands would not come to its printed total (27,096 GPUs × $1.26874 × 730 h is $47 off). [text]"""
    def holds(p: float) -> bool:
        return abs(gpus * p * hours + fixed - total) < 0.5

    short = f"{price:g}"
    return short if holds(float(short)) else words.operand(price, holds, digits=2, most=10)


def _cost_rows(r: PlanResult) -> list[tuple[str, str]]:
    """Section 5: the bill, the tokens it buys, the API beside it; for an owned fleet, what owning costs. [text]"""
    i, k, a = r.inputs, r.cost, r.answer
    bill_gpus, bill_usd = _bill(r)
    paid = a if a is not None else k  # the Answer's bill where there is one: its $/M tokens, break-even and utilisation curve
    fixed = bill_usd - bill_gpus * k.usd_per_gpu_hour * k.hours_per_month
    extra = f" + {words.usd(fixed)} fixed" if abs(fixed) >= 0.5 else ""
    rows = [
        ("Monthly bill", f"{words.count(bill_gpus, 'GPU')} ({k.billing}) × ${_hourly(k.usd_per_gpu_hour, bill_gpus, k.hours_per_month, fixed, bill_usd)}/h × {k.hours_per_month:g} h{extra} = "
                         f"{words.usd(bill_usd)} / month, fixed" + (" (the Answer's fleet)" if a is not None else "")),
        ("Tokens per month", f"{words.token_volume(k.tokens_per_month)} at {i.average_utilisation:.0%} average utilisation"),
        ("Cost per million tokens", f"{words.usd(paid.usd_per_mtok, 3)} (all kinds)"),
        ("Same traffic on the API", f"{words.usd(k.api_monthly_usd)} / month at {k.api_provider or 'the plan’s API prices'}"
         if k.api_monthly_usd is not None else "no API price given"),
        ("Break-even volume", f"{words.token_volume(paid.breakeven_tokens_per_month)} tokens / month"
         if paid.breakeven_tokens_per_month is not None else "—"),
        ("By utilisation", ", ".join(f"{u.utilisation:.0%} {words.usd(u.usd_per_mtok, 3)}" for u in paid.usd_per_mtok_by_utilisation)),
    ]
    if a is not None:
        runbook_fixed = k.monthly_usd - k.billed_gpus * k.usd_per_gpu_hour * k.hours_per_month
        price = _hourly(k.usd_per_gpu_hour, k.billed_gpus, k.hours_per_month, runbook_fixed, k.monthly_usd)
        rows.insert(1, ("Runbook's method", (f"{words.count(k.billed_gpus, 'GPU')} ({k.billing}) × ${price}/h × "
                                            f"{k.hours_per_month:g} h" + (f" + {words.usd(runbook_fixed)} fixed" if abs(runbook_fixed) >= 0.5 else "")
                                            + f" = {words.usd(k.monthly_usd)} / month "
                                            f"(~${k.monthly_usd / 1000:,.0f}k; {words.usd(k.usd_per_mtok, 3)}/M tokens)")))
    owned = a if a is not None and a.ownership is not None else (k if k.ownership is not None else None)
    if owned is not None:  # what owning the fleet costs and its payback, after the bill of the fleet ordered
        rows[1:1] = ownership_rows(owned.billed_gpus, owned.ownership.nodes, owned.ownership)
    aged = price_age_row(k.price_ages)
    return rows + ([aged] if aged else []) + contract_rows(r)


def _api_paragraphs(r: PlanResult) -> list[str]:
    """Section 5's paragraph: self-hosting against the API, and what the comparison leaves out; none without a price. [text]"""
    k = r.cost
    if k.api_monthly_usd is None:
        return []
    return [
        _api_ratio_sentence(k.api_monthly_usd, _bill(r)[1])
        + "Left out: engineering time, on-call, upgrades and re-benchmarking, idle overnight capacity, cold-start risk"
        + (f" (ops counted in the break-even: {words.usd(k.ops_usd_per_month)}/month)." if k.ops_usd_per_month else ".")
        + " Utilisation is the biggest lever: a half-idle GPU costs what a busy one does."
    ]


def _api_ratio_sentence(api_usd: float, bill_usd: float) -> str:
    """Self-hosting against the API as a factor in the direction of the words, never below 1: 'self-hosting is 2.0×
    cheaper than the API' or 'the API is 3.4× cheaper than self-hosting'; within 5% either way, about the same. [text]"""
    return f"On infrastructure alone {api_comparison_words(api_usd, bill_usd)} at this volume. "


def _whatif_paragraphs(r: PlanResult) -> list[str]:
    """Section 6: the what-ifs and breakpoints, on the closed form where it was planned, else the runbook's method. [text]"""
    cf, f = r.closed_form, r.fleet
    # a breakpoint is searched to 1 part in 10^4 (whatif.RELATIVE_TOLERANCE): lengths shown to four figures
    fmt = {"requests/s": lambda x: f"{x:,.1f}", "tokens": lambda x: f"{float(f'{x:.4g}'):,.0f}", "s/token": lambda x: f"{x:.4f}"}
    if cf is not None and r.closed_form_sensitivities:
        out = [f"On the closed form (the largest of the four paths, {cf.step_budget_tokens:,}-token steps; not simulated):"]
        out += [_sensitivity_sentence(s, cf.with_redundancy) for s in r.closed_form_sensitivities]
        out += [f"Breakpoint (closed form): {line}." for b in r.closed_form_breakpoints for line in _breakpoint_sentence(b, fmt[b.unit])]
        return out
    out = [_sensitivity_sentence(s, f.with_redundancy) for s in r.sensitivities]
    for b in r.breakpoints:
        out += [f"Breakpoint: {line}." for line in _breakpoint_sentence(b, fmt[b.unit])]
    return out


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
