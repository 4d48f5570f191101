"""Section 4 of the capacity note, the fleet, and the Answer line: the runbook's method, the closed form, the simulation.

Reads a :class:`~xlplan.schema.result.PlanResult`; computes nothing.
"""

from __future__ import annotations

from xlplan import words
from xlplan.fleet import MINIMUM_REPLICA, SIMULATED_QUEUEING
from xlplan.schema.result import PlanResult


def fleet_section(r: PlanResult) -> tuple[list[tuple[str, str]], list[str]]:
    """Section 4: the fleet on the runbook's method, its calibrated range, the closed form, the simulation, the purchase.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    rows : list of (str, str)
        Label and figures of each fleet, in the note's order. [text]
    paragraphs : list of str
        Why this TP degree, what the simulation says, and why it differs from the closed form where it does. [text]

    References
    ----------
    Runbook, document 14, "The capacity note": section 4, the fleet.
    """
    return _method_rows(r) + _verified_rows(r) + _answer_rows(r), _paragraphs(r)


def _method_rows(r: PlanResult) -> list[tuple[str, str]]:
    """The runbook's method's fleet, its calibrated range, and the closed form's. [text]"""
    f, cf = r.fleet, r.closed_form
    rows = [
        ("Runbook's method", (f"{words.count(f.load, 'GPU')} for the load (TP {f.tp}) + {words.spares(f.redundancy_replicas, f.tp)} = "
                             f"{f.with_redundancy:,} with redundancy → {f.purchased:,} purchased "
                             f"({words.count(f.purchased // f.gpus_per_node, 'node')} of {f.gpus_per_node})")),
    ]
    if f.calibrated_low is not None and f.calibrated_high is not None:
        def _at(a):
            return f"{a.with_redundancy} ({a.purchased} purchased)" if a.feasible else "cannot be met"

        rows.append(("Calibrated range", (f"fleet {_at(f.calibrated_high)} to {_at(f.calibrated_low)} GPUs over the calibrated "
                                         f"efficiencies (runbook's method; point figure {f.with_redundancy}); calibrated from "
                                         f"{r.calibration_source}")))
    if cf is not None:
        rows.append(("Closed form", (f"{words.count(cf.load, 'GPU')} for the load ({words.who_binds(cf.binding, cf.binding_paths)}) + "
                                    f"{words.spares(f.redundancy_replicas, cf.tp)} = {cf.with_redundancy:,} with redundancy → "
                                    f"{cf.purchased:,} purchased")))
    return rows


def _verified_rows(r: PlanResult) -> list[tuple[str, str]]:
    """The fleet simulated at peak, and with the redundancy lost; none where not simulated. [text]"""
    v = r.verified
    if v is None:
        return []
    at = next((x for x in v.curve if x.gpus == v.load), None)  # the promise's own percentile where it was simulated
    q, ttft, itl = ((f"p{v.percentile:g}", at.ttft_at_percentile_s, at.itl_at_percentile_s) if at is not None
                    else ("p95", v.ttft_p95_s, v.itl_p95_s))
    rows = [("Verified at peak (simulated)",
             (f"{words.count(v.load, 'GPU')} {words.verb(v.load, 'keeps', 'keep')} the promise ({q} TTFT {words.seconds(ttft)}, "
              f"inter-token {words.seconds(itl)})"
              if v.load is not None else f"no fleet up to {words.count(v.searched_up_to, 'GPU')} keeps the promise")
             + f" — {v.minutes:.3g} min, {v.arrivals}, {words.routed(v.routing)}, {words.seeds(v)}, "
               f"{v.chunk_tokens:,}-token steps")]
    if v.load is not None:
        rows.append(("With redundancy (simulated)", _redundancy_row(v)))
    return rows


def _answer_rows(r: PlanResult) -> list[tuple[str, str]]:
    """The Answer's purchase, and the step budget to deploy where it differs from the default. [text]"""
    a, f, cf = r.answer, r.fleet, r.closed_form
    if a is None:
        return []
    if not a.order:  # a result written before the order was named
        rows = [("Purchase", (f"{words.count(a.purchased, 'GPU')} ({words.count(a.purchased // f.gpus_per_node, 'node')} of {f.gpus_per_node}) for "
                             f"{a.with_redundancy:,} with redundancy — {_answer_source(r)}"))]
    elif a.paid_as == "rent_per_gpu":
        rows = [("Order", f"{a.order}, the fleet with redundancy — {_answer_source(r)}")]
    else:
        rows = [("Order", f"{a.order} for {a.with_redundancy:,} with redundancy — {_answer_source(r)}")]
    if a.alternatives:
        rows.append(("Deploy", f"{a.settings} — the cheapest setting that keeps the promise in simulation"))
    elif a.settings:
        rows.append(("Deploy", f"{a.settings} — the closed form's setting, "
                               + ("verified in simulation" if a.source == "verified" else "not simulated")))
    if a.alternatives:
        rows += [("Also tried", f"{x.settings} — {x.why}" + (f"; ~{words.usd(x.monthly_usd)}/month" if x.load is not None else ""))
                 for x in a.alternatives]
    # where the search ran, the Deploy row names the setting (its TP degree may not be the closed form's, whose default
    # budget's queueing path this row quotes)
    if not a.alternatives and a.step_budget_tokens != (cf.default_step_budget_tokens if cf is not None else a.step_budget_tokens):
        rows.append(("Serving setting", f"policy.max_num_batched_tokens: {a.step_budget_tokens} (deploy it; "
                                        f"{cf.default_step_budget_tokens:,}-token steps need "
                                        + (words.count(cf.default_budget_queueing_gpus, "GPU") if cf.default_budget_queueing_gpus is not None
                                           else "more than any fleet") + " on the queueing path)"))
    return rows


def _paragraphs(r: PlanResult) -> list[str]:
    """Why this TP degree; the simulation's sentences; why it and the closed form differ, where they do. [text]"""
    out = [f"The runbook's method: {r.fleet.tp_reason}."]
    a, v, cf = r.answer, r.verified, r.closed_form
    moved = a is not None and cf is not None and (a.tp, a.step_budget_tokens) != (cf.tp, cf.step_budget_tokens)
    if moved:
        out[0] += (f" The closed form's cheapest setting is TP {cf.tp} at {cf.step_budget_tokens:,}-token steps "
                   f"({words.count(cf.load, 'GPU')} for the load); the configuration search simulated the settings that "
                   f"could bill less, and the Answer runs TP {a.tp} at {a.step_budget_tokens:,}-token steps, the cheapest "
                   "that keeps the promise in simulation.")
    elif a is not None and a.tp != r.fleet.tp:
        out[0] += (f" The Answer runs TP {a.tp}, the degree at which the closed form (all four paths, queueing "
                   "included) buys the fewest GPUs.")
    if v is not None:
        out += [v.sentence] + ([v.redundancy_sentence] if v.redundancy_sentence else []) + [v.failure_sentence]
        at_answer = moved and a.closed_form_load is not None  # then compared at the Answer's own setting
        closed = a.closed_form_load if at_answer else (cf.load if cf is not None else None)
        if closed is not None and v.load is not None and v.load != closed:
            lengths = (r.inputs.prompt_tokens, r.inputs.output_tokens)
            out.append(_disagreement(cf, v, tail=any((x.p99 or x.p95) > x.p50 for x in lengths),
                                     prefill_first=_prefill_first(r), load=closed, at_tp=a.tp if at_answer else None))
    return out


def _redundancy_row(v) -> str:
    """'7 GPUs keep the promise with one replica lost (p95 TTFT 337 ms)'. [text]"""
    if v.with_redundancy is None:
        return f"no fleet up to {words.count(v.searched_up_to, 'GPU')} keeps the promise with the redundancy lost"
    if v.redundancy_lost_replicas == 0:
        return f"{words.count(v.with_redundancy, 'GPU')}: the plan keeps no redundancy"
    lost = "one replica" if v.redundancy_lost_replicas == 1 else words.count(v.redundancy_lost_replicas, "replica")
    return (f"{words.count(v.with_redundancy, 'GPU')} {words.verb(v.with_redundancy, 'keeps', 'keep')} the promise with {lost} lost at the start of the peak (p95 TTFT "
            f"{words.seconds(v.redundancy_ttft_p95_s)}, inter-token {words.seconds(v.redundancy_itl_p95_s)})")


def _answer_source(r: PlanResult) -> str:
    """Where the Answer's fleet comes from, in words. [text]"""
    if r.answer.source == "verified":
        return f"verified in simulation on {words.seeds(r.verified)}"
    if r.verified is not None:
        return "the closed form: the simulation found no fleet that keeps the promise"
    return "the closed form, not simulated (xlplan plan --verify simulates it)"


PREFILL_FIRST_WORDS = "SGLang runs each prefill in a step of its own while the running requests wait (prefill first)"
"""Why a prefill-first engine's simulated fleet outgrows the closed form's, whose steps mix prefill into the decodes. [text]"""


def _prefill_first(r: PlanResult) -> bool:
    """Whether the plan's simulation scheduled prefill first (SGLang). [bool]"""
    return r.verified is not None and r.verified.schedule == "prefill_first"


def _disagreement(cf, v, tail: bool = True, prefill_first: bool = False, load: int | None = None,
                  at_tp: int | None = None) -> str:
    """Why the closed form and the simulation differ, where they do; ``tail``: the lengths have one (p99 above p50);
    ``prefill_first``: the simulation ran prefill in steps of its own (SGLang); ``load`` and ``at_tp``: the closed
    form's load at the Answer's setting and its degree, where the configuration search moved it (else ``cf``'s). [text]"""
    closed = cf.load if load is None else load
    if v.load > closed and prefill_first:
        why = (f"{PREFILL_FIRST_WORDS}, where the closed form times steps that carry the prefill beside the decodes: "
               "each prompt's prefill stalls every running request and no longer shares a step's weight reads")
    elif v.load < closed:
        why = ("the closed form's queue assumes exponential service times (Erlang C with the Allen–Cunneen factor); "
               "a request's decode of a known number of tokens varies less, so the simulated wait is shorter"
               if cf.binding == "queueing" else
               f"the closed form's {cf.binding} path counts averages the simulated steps beat")
    else:
        why = ("the simulation schedules every step with its prefill chunks and each request's own lengths, where the "
               "closed form takes means: " + ("the long prompts and answers of the tail hold slots longer than the mean does"
                                              if tail else "a replica's batch, and so its step, varies about the mean"))
    at = f" at the Answer's setting (TP {at_tp})" if at_tp is not None else ""
    return (f"The closed form{at} gives {words.count(closed, 'GPU')} for the load and the simulation {v.load}: {why}. The Answer follows "
            "the simulation.")


def answer_sentence(r: PlanResult) -> str:
    """The Answer line: the verified fleet (else the closed form), what binds, its bill, and where it comes from.

    Parameters
    ----------
    r : PlanResult
        The planner's result; read, not recomputed.

    Returns
    -------
    str
        E.g. '6 GPUs for the load, 7 with redundancy (one replica lost): rent 7 GPUs; binding: queueing; ~$15,330/month,
        $0.159/M tokens — verified in simulation on seeds 1, 2, 3 (all must hold).' [text]
    """
    a = r.answer
    if a is None:  # a result written before the closed form existed: the runbook's figures
        return (f"{words.count(r.fleet.load, 'GPU')} for the load, {r.fleet.with_redundancy} with redundancy, buy {r.fleet.purchased}; "
                f"binding: {r.binding}; ~{words.usd(r.cost.monthly_usd)}/month, {words.usd(r.cost.usd_per_mtok, 3)}/M tokens.")
    lost = ""
    if a.source == "verified" and r.verified.redundancy_lost_replicas:
        n = r.verified.redundancy_lost_replicas
        lost = " (one replica lost)" if n == 1 else f" ({words.count(n, 'replica')} lost)"
    cannot = ("; the TTFT promise cannot be kept by any fleet (the prompt's prefill alone takes longer), so this is the "
              "fleet for the other paths only" if r.closed_form is not None and not r.closed_form.feasible else "")
    binding = a.binding
    if binding == MINIMUM_REPLICA:
        binding += (f" (one replica of {words.count(a.tp, 'GPU')} carries the peak with room to spare: no path "
                    "needs more, so the fleet is the smallest the model runs on)")
    elif binding == SIMULATED_QUEUEING and r.closed_form is not None:
        why = (f"in simulation {PREFILL_FIRST_WORDS}, which the closed form's mixed steps do not count, so requests queue"
               if _prefill_first(r) else "in simulation requests, with their own lengths, queue")
        fits = a.closed_form_load if a.closed_form_load is not None else r.closed_form.load
        binding += (f" (every closed-form path fits {words.count(fits, 'GPU')}; {why} for a slot past the "
                    "TTFT target until the fleet grows)")
    order = a.order or f"buy {a.purchased:,}"  # a result written before the order was named
    return (f"{words.count(a.load, 'GPU')} for the load, {a.with_redundancy:,} with redundancy{lost}: {order}; binding: "
            f"{binding}; ~{words.usd(a.monthly_usd)}/month, {words.usd(a.usd_per_mtok, 3)}/M tokens{cannot} — {_answer_source(r)}.")
