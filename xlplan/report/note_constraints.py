"""Section 3 of the capacity note, the two constraints: every path's arithmetic as printed, and what binds.

Reads a :class:`~xlplan.schema.result.PlanResult`; computes nothing. Each line shows its operands, so it adds up as printed
(tests/test_note_arithmetic.py recomputes it).
"""

from __future__ import annotations

import math

from xlplan import words
from xlplan.schema.result import PlanResult
from xlplan.serving.queueing import POOLED_ROUTINGS

QUEUEING_WORDS = ("requests wait for a slot; more replicas or a shorter step (a smaller step budget, fp8 weights) help; "
                  "more cache room (an fp8 cache's) does nothing")
"""What the queueing path binding means, and what helps. [text]"""


def constraints_section(r: PlanResult) -> tuple[list[tuple[str, str]], list[str]]:
    """Section 3: the time in system, Little's Law, the memory, compute, latency and queueing paths, the closed form.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    rows : list of (str, str)
        Label and arithmetic of each path, in the note's order. [text]
    paragraphs : list of str
        What binds and what would move it, on the runbook's method and on the closed form. [text]

    References
    ----------
    Runbook, document 14, "The capacity note": section 3, the two constraints.
    """
    return _rows(r), _paragraphs(r)


def _rows(r: PlanResult) -> list[tuple[str, str]]:
    """The section's rows: each path's arithmetic. [text]"""
    i, mem, lat = r.inputs, r.memory, r.latency
    exact = f"{lat.gpus_exact:.2f}"  # the latency path's GPUs, printed below as concurrency ÷ this batch × TP
    batch = words.operand(lat.max_decode_batch, lambda b: b > 0 and f"{r.concurrency / b * r.fleet.tp:.2f}" == exact, 0, 3)
    rows = [
        ("Time in system", (f"{words.thousands(i.output_tokens.mean, 1)} tokens mean output × {i.itl_s * 1000:g} ms inter-token target = "
                           f"{r.time_in_system_s:.1f} s")),
        ("Concurrency (Little's Law)", f"{i.peak_rps:g} req/s × {r.time_in_system_s:.1f} s = {words.thousands(r.concurrency, 1)} in flight"),
        ("Memory path", (f"{words.thousands(r.concurrency, 1)} × {mem.kv_gib_per_conversation:.3f} GiB = {mem.kv_gib_total:,.1f} GiB ÷ {mem.kv_budget_gib_per_gpu:.2f} GiB per GPU"
                        f"{words.unsharded(r.fleet.tp, mem.kv_shards)} = {mem.gpus_exact:.2f} → {words.count(mem.gpus, 'GPU')}")),
        ("KV budget per GPU", _kv_budget_line(r.model, mem)),
        ("Compute path", _compute_line(r)),
        ("Latency check", f"decode step {lat.decode_step_s * 1000:.1f} ms at this batch (max batch {batch} per replica) → {words.count(lat.gpus, 'GPU')}; p95 prefill alone {lat.ttft_p95_s:.2f} s {'meets' if lat.ttft_ok else 'MISSES'} the TTFT target"),
    ]
    if r.queueing is not None:
        rows.append(("Queueing path", _queueing_line(r)))
    if r.closed_form is not None:
        rows.append(("Closed form", _closed_form_line(r)))
    return rows


def _compute_line(r: PlanResult) -> str:
    """The compute path: prefill and decode demand over what a GPU delivers at its MFU (one MFU, or each its own). [text]"""
    m, c = r.model, r.compute
    if c.prefill_mfu == c.decode_mfu == c.mfu:
        return (f"(prefill {words.thousands(c.prefill_tflops)} + decode {words.thousands(c.decode_tflops)}) TFLOP/s ÷ {c.tflops_per_gpu:,.1f} per GPU "
                f"at {c.mfu:.0%} MFU = {c.gpus_exact:.2f} → {words.count(c.gpus, 'GPU')}")
    return (f"(prefill {words.thousands(c.prefill_tflops, 1)} TFLOP/s ÷ {c.prefill_mfu:.2%} MFU + decode {words.thousands(c.decode_tflops, 1)} TFLOP/s ÷ "
            f"{c.decode_mfu:.2%} MFU) ÷ {m.peak_tflops:,.0f} TFLOP/s per GPU = {c.gpus_exact:.2f} → {words.count(c.gpus, 'GPU')}")


def _kv_budget_line(m, mem) -> str:
    """'0.90 × 79.18 GiB visible − 14.99 GiB weights − 4.76 GiB activation peak − 0.13 GiB non-torch = 51.38 GiB':
    every operand of the engine's rule, so the line adds up as printed. [text]"""
    if mem.kv_budget_basis_gib is None:  # a result written before the operands were carried
        return (f"{m.gpu_memory_gib:.2f} GiB × utilisation − {mem.weights_gib_per_gpu:.2f} GiB weights − "
                f"{mem.overhead_gib:g} GiB overhead = {mem.kv_budget_gib_per_gpu:.2f} GiB")
    rule = words.kv_rule(mem.kv_budget_basis, mem.kv_budget_basis_gib, mem.kv_budget_utilisation, mem.kv_budget_deductions,
                         mem.kv_budget_fraction_after)
    return f"{rule} = {mem.kv_budget_gib_per_gpu:.2f} GiB"


QUEUE_WORDS = {"least_loaded": "Erlang C with the replicas as one queue under least-loaded routing",
               "round_robin": "Erlang C per replica as a queue of its own over its whole slots under round-robin routing",
               "random": "Erlang C per replica as a queue of its own over its whole slots under random routing",
               "least_kv": "Erlang C with the replicas as one queue under least-KV routing, optimistic where the cache is far "
                           "from full: it weighs a token held in cache as much as one waiting for prefill, so a prompt may "
                           "queue behind another's prefill rather than go to a replica holding long contexts; the "
                           "simulation decides"}
"""How the queueing line names its queue, by ``policy.routing``. [text]"""


def _queueing_line(r: PlanResult) -> str:
    """The queueing path's arithmetic: a replica's service rate, the offered load, and the replicas the wait needs."""
    q, i = r.queueing, r.inputs
    if q.service_rps_per_replica <= 0:
        return f"no batch meets the inter-token target with its prefill share ({q.step_budget_tokens:,}-token steps)"
    rate = (f"{q.slots_per_replica:,.2f} sequences ÷ ({words.thousands(i.output_tokens.mean, 1)} tokens × {q.step_s * 1000:.2f} ms) = "
            f"{q.slot_rps_per_replica:.2f} req/s per replica ({q.step_budget_tokens:,}-token steps)")
    busy = f"{q.offered_erlangs:.2f}"
    per_replica = words.operand(q.service_rps_per_replica, lambda b: b > 0 and f"{i.peak_rps / b:.2f}" == busy)
    load = f"{i.peak_rps:g} req/s ÷ {per_replica} = {busy} replicas busy"
    if q.replicas is None:
        return (f"{rate}; {load}; the p{i.percentile:g} prompt's prefill alone ({q.prefill_at_percentile_s:.2f} s) leaves no "
                f"wait within the {i.ttft_s:g} s TTFT target")
    tail = ""
    if q.prefill_tail_rps_per_replica is not None:
        n = q.tail_replicas
        tail_rate = words.operand(q.prefill_tail_rps_per_replica,
                             lambda b: b > 0 and n is not None and n - 1 < i.peak_rps / b <= n)  # the ceiling, redone
        tail = (f"; a step carrying a prompt chunk takes {q.prefill_step_s * 1000:.0f} ms, over the {i.itl_s * 1000:g} ms "
                f"target, and at most {100 - i.percentile:g}% of steps may: {tail_rate} req/s per "
                f"replica, {i.peak_rps:g} ÷ {tail_rate} → {words.count(n, 'replica')} at least")
    if q.prefill_queue_replicas:
        n, m1, m2, t = q.prefill_queue_replicas, q.prefill_mean_s, q.prefill_second_moment_s2, q.wait_target_s
        rho = i.peak_rps * m1 / n
        k = q.prefill_wait_scale
        chance = rho * math.exp(-2.0 * t * (1.0 - rho) * m1 / (m2 * k))
        if q.routing in POOLED_ROUTINGS:
            why = "a whole prompt fits one step, so each replica's prefills queue of their own (M/G/1, Pollaczek–Khinchine)"
            second = f"{m2:.4f} s²"
        else:
            why = ("routing commits each request to a replica on arrival, so each replica's prefills queue of their own "
                   "(M/G/1, Pollaczek–Khinchine, Kingman's factor for the routed arrivals)")
            second = f"({m2:.4f} s² × {k:.3f})"
        tail += (f"; {why}: ρ = {i.peak_rps:g} req/s × {m1:.3f} s ÷ {n} = {rho:.3f}, P(wait > {t:.2f} s) = "
                 f"{rho:.3f} × exp(−2 × {t:.2f} s × {1 - rho:.3f} × {m1:.3f} s ÷ {second}) = {chance:.3f} ≤ "
                 f"{1 - i.percentile / 100:.2f} → {words.count(n, 'replica')} at least")
    per = q.gpus // q.replicas if q.replicas else 0
    d = 3 if q.wait_target_s < 0.1 else 2  # a prefill within 0.1 s of the target: enough figures to see the room left
    return (f"{rate}; {load}{tail} → {words.count(q.replicas, 'replica')} {words.verb(q.replicas, 'keeps', 'keep')} the "
            f"p{i.percentile:g} wait for a slot at {q.wait_at_percentile_s:.{d}f} s ≤ {i.ttft_s:g} s − "
            f"{q.prefill_at_percentile_s:.{d}f} s prefill (at {q.step_budget_tokens:,}-token steps) "
            f"({QUEUE_WORDS[q.routing]}); "
            f"{q.replicas} × {words.count(per, 'GPU')} per replica = "
            f"{words.count(q.gpus, 'GPU')}")


def _closed_form_line(r: PlanResult) -> str:
    """The closed form's arithmetic: the fleet's own time in system and cache, and the largest path. [text]"""
    cf, i, mem = r.closed_form, r.inputs, r.memory
    budget = next((o.kv_budget_gib_per_gpu for o in r.tp_options if o.tp == cf.tp), mem.kv_budget_gib_per_gpu)
    shards = next((o.kv_shards for o in r.tp_options if o.tp == cf.tp), mem.kv_shards)
    q = "none" if cf.queueing_gpus is None else f"{cf.queueing_gpus}"
    return (f"at the fleet's achieved step, {i.output_tokens.mean:,.1f} tokens × {cf.achieved_step_s * 1000:.2f} ms = "
            f"{cf.time_in_system_s:.2f} s in system; {i.peak_rps:g} req/s × {cf.time_in_system_s:.2f} s = "
            f"{cf.concurrency:,.1f} in flight × {mem.kv_gib_per_conversation:.3f} GiB = {cf.kv_gib_total:,.1f} GiB ÷ "
            f"{budget:.2f} GiB per GPU{f' at TP {cf.tp}' if cf.tp != r.fleet.tp else ''}{words.unsharded(cf.tp, shards)} = "
            f"{cf.memory_gpus_exact:.2f} GPUs; paths: memory "
            f"{cf.memory_gpus} (the fewest replicas holding their own load), compute {cf.compute_gpus}, latency "
            f"{cf.latency_gpus}, queueing {q} → the largest, {words.count(cf.load, 'GPU')} ({words.who_binds(cf.binding, cf.binding_paths)})")


def _paragraphs(r: PlanResult) -> list[str]:
    """The section's paragraphs: what binds on each method, the step budget's part, the queueing path's shortfall. [text]"""
    out = [_binding_words(r)]
    budget_words = _budget_sentence(r)
    if budget_words:
        out.append(budget_words)
    if r.closed_form is not None:
        out.append(_closed_binding_words(r))
    shortfall = _queueing_shortfall(r)
    if shortfall:
        out.append(shortfall)
    return out


def _binding_words(r: PlanResult) -> str:
    """The runbook's method: which path binds, what would move it, and the GPUs of each path. [text]"""
    counts = {"memory": r.memory.gpus, "compute": r.compute.gpus, "latency": r.latency.gpus}
    exact = {"memory": r.memory.gpus_exact, "compute": r.compute.gpus_exact, "latency": r.latency.gpus_exact}
    detail = ", ".join(f"{k} {counts[k]} ({exact[k]:.2f} exact)" for k in counts)
    if r.binding == "minimum replica":
        head = f"No path binds: every path fits in one replica of {words.count(r.fleet.tp, 'GPU')}, so the minimum replica sets the fleet"
        top = max(exact.values())
        tail = (f" — the largest path is {top:.3g} of its {words.count(r.fleet.tp, 'GPU')}: traffic could grow about "
                f"{r.fleet.tp / top:,.1f}× before it needs a second replica (every path grows with the rate; see the "
                "breakpoints)." if top > 0 else " (see the breakpoints).")
    elif r.binding in ("both", "all"):
        which = " and ".join(r.binding_paths)
        head = f"{which.capitalize()} bind about equally ({words.count(counts[r.binding_paths[0]], 'GPU')} each)"
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
        return f"The closed form: every path fits in one replica of {words.count(cf.tp, 'GPU')}, so the minimum replica sets the fleet."
    parts = "; ".join(f"{p}: {tails[p]}" for p in cf.binding_paths)
    return f"The closed form is {words.count(cf.load, 'GPU')}, the largest of the four paths — {parts}."


def _budget_sentence(r: PlanResult) -> str:
    """Where the step budget decides the queueing path: the budget deployed, the alternatives, and whether the plan's
    own setting stands. '' where no budget needs fewer replicas than the default. [text]"""
    q, cf = r.queueing, r.closed_form
    if q is None or cf is None or not q.budget_options:
        return ""
    met = [(n, b) for b, n in q.budget_options if n is not None]
    if not met:
        return ""
    others = ", ".join(f"{n if n is not None else 'no fleet'} at {b:,}" for b, n in q.budget_options)
    fewest, best = min(met, key=lambda nb: (nb[0], -nb[1]))
    if cf.budget_chosen_by == "plan":
        if q.replicas is None or fewest < q.replicas:
            return (f"The step budget decides the queueing path: {best:,}-token steps would need {words.count(fewest, 'replica')} where the "
                    f"plan's {q.step_budget_tokens:,}-token steps need {q.replicas if q.replicas is not None else 'more than any fleet'} "
                    f"(replicas of TP {cf.tp} at each budget in tokens: {others}); the plan sets its budget, so it stands.")
        return ""
    if cf.budget_chosen_by == "queueing path":
        default = (f"{cf.default_budget_queueing_gpus // cf.tp}" if cf.default_budget_queueing_gpus is not None
                   else "more than any fleet")
        a = r.answer
        moved = a is not None and (a.tp, a.step_budget_tokens) != (cf.tp, q.step_budget_tokens)
        end = (f"the closed form deploys {q.step_budget_tokens:,}; the configuration search's Answer deploys "
               f"{a.step_budget_tokens:,} at TP {a.tp} (section 4's Deploy line)" if moved else
               f"deploy policy.max_num_batched_tokens: {q.step_budget_tokens} — the simulation runs it")
        return (f"The step budget decides the queueing path: {q.step_budget_tokens:,}-token steps need {words.count(q.replicas, 'replica')} "
                f"where the default {cf.default_step_budget_tokens:,}-token steps need {default} (replicas of TP {cf.tp} at "
                f"each budget in tokens: {others}); {end}.")
    return ""


def _queueing_shortfall(r: PlanResult) -> str:
    """Where the queueing path needs more than the runbook's load (at the closed form's TP degree), why; else ''. [text]"""
    q, f = r.queueing, r.fleet
    # the queueing path is at the closed form's TP degree: it is set against the runbook's load at that degree
    cf_tp = r.closed_form.tp if r.closed_form is not None else f.tp
    rb_load = next((int(o.load) for o in r.tp_options if o.tp == cf_tp), f.load) if cf_tp != f.tp else f.load
    at_tp = f" at TP {cf_tp}" if cf_tp != f.tp else ""
    if q is None or (q.gpus is not None and q.gpus <= rb_load):
        return ""
    return ((f"The queueing path needs {words.count(q.gpus, 'GPU')}, more than the runbook's load{at_tp} of {rb_load}" if q.gpus is not None
             else "No fleet keeps the wait for a slot within the TTFT promise")
            + (f": at {rb_load} the replicas would run at ρ = {q.utilisation_at_load:.2f}"
               + (", so requests would queue for a slot without bound" if q.utilisation_at_load >= 1 else
                  ", and the wait for a slot would pass the TTFT promise")
               if q.gpus is not None else f" (the p{r.inputs.percentile:g} prompt's prefill alone takes {q.prefill_at_percentile_s:.2f} s)")
            + ".")
