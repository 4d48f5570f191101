"""The closed-form fleet: the largest of the paths, the queueing path among them, at the step budget the plan deploys.

The runbook's method (:mod:`xlplan.plan.steps`) sizes the fleet from the memory and compute paths and the latency check,
with every request held for ``E[output] × the inter-token target``. Two things it leaves out decide whether the fleet
keeps the promise (issue 18): the wait for a slot, which the TTFT promise is about (:mod:`xlplan.plan.queue_path`), and
the time a request really holds its cache, which is the step the fleet achieves at its own batch, not the target.
This module takes the largest of four paths, each in whole replicas at the solution's TP degree:

- **memory**, at the time in system the fleet achieves: ``T = E[output] × min(τ(b), ITL target)`` with the
  replica's batch ``b = λ·T ÷ n`` solved self-consistently on ``n`` replicas (Little's Law on each replica);
- **compute**, as the runbook's method has it;
- **latency**, at the batch the fleet achieves: the fewest replicas whose step, as a token gap at the promise's
  percentile sees it (a step carrying a prompt chunk where those are common), stays within the target;
- **queueing**: the fewest replicas whose wait for a slot at the promise's percentile fits the TTFT target.

The step budget is a decision: where the plan file sets ``policy.max_num_batched_tokens`` it stands; otherwise the
budget of :data:`xlplan.plan.queue_path.STEP_BUDGETS` that needs the fewest queueing replicas is the one to deploy (the
simulation's default where it ties).

No I/O; plain floats.

References
----------
Little's Law: Little, Operations Research 9(3), 1961. Erlang C with the Allen–Cunneen factor: :mod:`xlplan.serving.queueing`.
Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xlplan import arrays, fleet
from xlplan.plan import achieved_paths, latency_step, queue_path, replica_at_tp, scenario, steps
from xlplan.plan.achieved_paths import (
    achieved_time_in_system_s,
)
from xlplan.plan.scenario import Scenario, changed
from xlplan.plan.tp_choice import billed_gpus
from xlplan.schema import steps as step_results
from xlplan.serving import engines, folded_step, step_inputs

PATHS = ("memory", "compute", "latency", "queueing")
"""The closed form's paths, in the order the note lists them."""


@dataclass(frozen=True)
class ClosedForm:
    """The closed-form fleet at one TP degree. Units in the field comments."""

    tp: int  # GPUs per replica [GPUs]
    step_budget_tokens: int  # the step budget deployed and simulated [tokens]
    budget_chosen_by: str  # 'plan' (the plan file sets it), 'queueing path' (fewest replicas) or 'default' [text]
    queue: queue_path.QueuePath  # the queueing path at that budget
    budget_options: tuple[tuple[int, int | None], ...]  # (budget [tokens], queueing replicas or None) compared
    achieved_step_s: float  # the step at the fleet's own batch, at most the inter-token target [s]
    achieved_batch: float  # decodes per replica at that step (Little's Law) [sequences]
    time_in_system_s: float  # E[output] × achieved step [s]
    concurrency: float  # peak rate × that time [requests]
    kv_gib_total: float  # concurrency × KV per conversation [GiB]
    memory_gpus_exact: float  # the cache the fleet's requests hold at its own achieved time, in GPUs before rounding [GPUs]
    memory_gpus: int  # the memory path: the fewest whole replicas whose caches hold their own achieved load [GPUs]
    compute_gpus: int  # the runbook's compute path [GPUs]
    latency_gpus: int  # the fewest replicas whose own batch keeps the percentile's token gap within the target [GPUs]
    queueing_gpus: int | None  # None: no fleet keeps the wait within the TTFT target [GPUs]
    feasible: bool  # the queueing path has an answer (the prefill alone leaves room for a wait) [bool]
    load_replicas: int  # the largest path [replicas]
    load: int  # [GPUs]
    with_redundancy: int  # load plus the plan's spare replicas [GPUs]
    purchased: int  # rounded up to whole purchasing units [GPUs]
    binding: str  # the path that needs the most ('memory', …, 'queueing'), ties joined by ' and ', or 'minimum replica' [text]
    binding_paths: tuple[str, ...]  # the paths tied for the most
    max_num_seqs: float = math.inf  # the sequences a replica runs at once, as solved (the scenario's cap) [sequences]
    expert_parallel: int = 1  # GPUs of a replica its experts are spread over, as solved (1 where the plan's degree does not divide the TP degree) [GPUs]
    attention_data_parallel: bool = False  # each rank holds its own sequences' KV cache, as solved [bool]
    long_prefill_token_threshold: float = math.inf  # the most one request prefills in a step, as solved (inf: none) [tokens]


def _choose_budget(s: Scenario, tr: step_results.Traffic, tp: int, load_replicas: float,
                  set_by_plan: bool) -> tuple[int, str, tuple[tuple[int, int | None], ...]]:
    """The step budget to deploy: the plan's where it sets one, else the one needing the fewest queueing replicas.

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand.
    tp : int
        GPUs per replica. [GPUs]
    load_replicas : float
        The runbook's load, for the queueing path's utilisation. [replicas]
    set_by_plan : bool
        Whether the plan file sets ``policy.max_num_batched_tokens``. [bool]

    Returns
    -------
    budget : int
        Tokens one step may carry. [tokens]
    chosen_by : str
        'plan', 'queueing path' or 'default' (the simulation's own budget ties for the fewest, or none meets the
        wait). [text]
    options : tuple of (int, int or None)
        Every budget compared and its queueing replicas (None: no fleet keeps the wait). [tokens], [replicas]

    References
    ----------
    vLLM's scheduler (vllm/v1/core/sched/scheduler.py): ``max_num_batched_tokens`` is the step's token budget.
    """
    default = scenario.chunk_tokens(s)
    options = tuple(queue_path.budget_options(s, tr, tp, load_replicas))
    if set_by_plan:
        return default, "plan", options
    met = [(n, b) for b, n in options if n is not None]
    if not met:
        return default, "default", options
    fewest = min(n for n, _ in met)
    tied = [b for n, b in met if n == fewest]
    at_default = queue_path.queue_path(s, tr, tp, load_replicas).replicas
    if at_default is not None and at_default <= fewest:
        return default, "default", options
    return max(tied), "queueing path", options


def _binding(counts: dict[str, int], tp: int) -> tuple[str, tuple[str, ...]]:
    """Which path needs the most GPUs: its name, ties joined by ' and ', or 'minimum replica'. [text]

    Parameters
    ----------
    counts : dict of str to int
        GPUs each path needs, in whole replicas (a path with no answer left out). [GPUs]
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    label : str
        The binding path, or the tied ones joined by ' and ', or 'minimum replica' when every path fits one replica.
    paths : tuple of str
        The paths tied for the most, in :data:`PATHS` order.

    Examples
    --------
    >>> _binding({"memory": 4, "compute": 4, "latency": 1, "queueing": 6}, 1)
    ('queueing', ('queueing',))
    >>> _binding({"memory": 1, "compute": 1, "latency": 1, "queueing": 1}, 1)
    ('minimum replica', ())
    """
    top = max(counts.values())
    if top <= tp:
        return fleet.MINIMUM_REPLICA, ()
    paths = tuple(p for p in PATHS if counts.get(p) == top)
    return " and ".join(paths), paths


def closed_form(s: Scenario, sol: step_results.Solution, budget_set_by_plan: bool, budget: int | None = None) -> ClosedForm:
    """The closed-form fleet: the largest of the memory (at the achieved time in system), compute, latency and
    queueing paths, at the TP degree that buys the fewest GPUs this way, then redundancy and the purchasing unit.

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    sol : steps.Solution
        The runbook's method solved (:func:`xlplan.plan.steps.solve`): traffic and every TP degree's paths.
    budget_set_by_plan : bool
        Whether the plan file sets the step budget (it then stands). [bool]
    budget : int, optional
        Take this step budget instead of choosing one (the what-ifs and breakpoints hold the plan's decision). [tokens]

    Returns
    -------
    ClosedForm
        Each path in GPUs, the step budget and why, the fleet in its three numbers and the binding path.

    Notes
    -----
    The TP degree is chosen as the runbook's method chooses it (:func:`xlplan.plan.tp_choice.tp_objective`: fewest purchased,
    then fewest billed, then the smallest degree), on the closed form's own fleet: the runbook's memory path grows with
    the inter-token target (a request is held for ``E[output] × target``), so its choice of degree can flip where the
    closed form's does not.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
    """
    by_tp = {int(pa.tp): pa for pa in sol.candidates}
    return _fewest(s, sol.traffic, int(sol.paths.tp), by_tp.get, budget_set_by_plan, budget)


def at_degree(s: Scenario, sol: step_results.Solution, tp: int, budget_set_by_plan: bool,
              budget: int | None = None) -> ClosedForm | None:
    """The closed form at one TP degree, at the step budget it would deploy there: a candidate of the configuration
    search (:mod:`xlplan.decide.configuration`). [ClosedForm]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    sol : steps.Solution
        The runbook's method solved: traffic and every TP degree's paths.
    tp : int
        GPUs per replica; one of the solution's candidates. [GPUs]
    budget_set_by_plan : bool
        Whether the plan file sets the step budget (it then stands). [bool]
    budget : int, optional
        Take this step budget instead of the one the closed form would choose at ``tp``. [tokens]

    Returns
    -------
    ClosedForm or None
        :func:`closed_form`'s figures with the degree held at ``tp`` (and the budget at ``budget``); None where the weights leave no cache room or the
        runbook's checks fail there.

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
    """
    pa = next((c for c in sol.candidates if int(c.tp) == int(tp)), None)
    if pa is None or pa.load == arrays.INF:
        return None
    return _at_tp(s, sol.traffic, pa, budget_set_by_plan, budget)


def at_setting(s: Scenario, tr: step_results.Traffic, tp: int, budget: int, budget_set_by_plan: bool,
               **setting) -> ClosedForm | None:
    """The closed form at one TP degree and step budget with other serving settings changed (the sequence cap, the
    expert-parallel degree, DP attention): a candidate of the configuration search. [ClosedForm]

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand.
    tp : int
        GPUs per replica. [GPUs]
    budget : int
        Tokens one step may carry. [tokens]
    budget_set_by_plan : bool
        Whether the plan file sets the step budget. [bool]
    **setting
        Scenario fields to change: ``max_num_seqs`` [sequences], ``expert_parallel`` [GPUs],
        ``attention_data_parallel`` [bool].

    Returns
    -------
    ClosedForm or None
        :func:`closed_form`'s figures at that setting (each also moves the cache room: the cap the engine's activation
        memory, the experts' spread nothing, DP attention the copies of the cache, so the runbook's paths are solved
        again); None where the weights leave no cache room there.

    Notes
    -----
    A sequence cap bounds the batch a token gap can see, so no replica's step outgrows the inter-token target however
    the batch swings; the sequences past it wait for a slot, which the queueing path counts (Erlang C over
    ``min(cap, the decodes within the target)`` slots).

    References
    ----------
    Erlang C: :func:`xlplan.serving.queueing.servers_for_wait`. vLLM's engine arguments (docs.vllm.ai, "Engine
    Arguments": ``--max-num-seqs``, ``--enable-expert-parallel``); SGLang's server arguments (``--ep-size``,
    ``--enable-dp-attention``).
    """
    v = changed(s, **setting)
    pa = steps.paths(v, tr, int(tp))
    if pa.load == arrays.INF:
        return None
    return _at_tp(v, tr, pa, budget_set_by_plan, int(budget))


def closed_form_of(s: Scenario, budget_set_by_plan: bool, budget: int | None = None,
                   first_tp: int | None = None, tr: step_results.Traffic | None = None) -> ClosedForm | None:
    """:func:`closed_form` of a changed scenario, the runbook's paths solved only at the TP degrees it needs. [ClosedForm]

    Parameters
    ----------
    s : Scenario
        The changed scenario (plain floats).
    budget_set_by_plan : bool
        Whether the plan file sets the step budget. [bool]
    budget : int, optional
        Take this step budget instead of choosing one. [tokens]
    first_tp : int, optional
        The degree to try first (the plan's own): the others are then skipped where their compute path, or their
        queue's stability, already buys more. Which is tried first changes nothing but the time. [GPUs]
    tr : steps.Traffic, optional
        Steps 1-3 of ``s``, where the caller holds them. [Traffic]

    Returns
    -------
    ClosedForm or None
        The same closed form :func:`closed_form` gives on ``steps.solve(s)``; None where no degree holds the weights
        and meets the runbook's checks (where ``steps.solve`` raises).

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
    """
    tr = tr if tr is not None else steps.traffic(s)
    solved: dict[int, step_results.Paths] = {}

    def paths_of(tp: int) -> step_results.Paths:
        if tp not in solved:
            solved[tp] = steps.paths(s, tr, tp, lean=True)  # the fleet's figures only
        return solved[tp]

    return _fewest(s, tr, first_tp, paths_of, budget_set_by_plan, budget)


def _fewest(s: Scenario, tr: step_results.Traffic, first_tp: int | None, paths_of, budget_set_by_plan: bool,
            budget: int | None) -> ClosedForm | None:
    """The degree whose closed form buys the fewest (the TP objective), each degree's runbook paths from
    ``paths_of(tp)``; None where every degree's runbook load is infinite. [ClosedForm]"""
    best = None
    order = sorted(s.tp_options, key=lambda tp: tp != first_tp)
    for tp in order:  # the first degree in full; the others skipped where even their compute path buys more
        if best is not None and _lower_key(s, tp, steps.compute_path_gpus(s, tr, tp) // tp, False) > best[0]:
            continue
        pa = paths_of(tp)
        if pa.load == arrays.INF:
            continue
        cf = _at_tp(s, tr, pa, budget_set_by_plan, budget, bound=best[0] if best is not None else None)
        if cf is None:  # its compute and queueing paths alone already buy more than the best so far
            continue
        billed = billed_gpus(cf, s.bill_purchased)
        key = (not cf.feasible, cf.purchased, billed, cf.tp)
        if best is None or key < best[0]:
            best = (key, cf)
    return best[1] if best is not None else None


def _lower_key(s: Scenario, tp: int, replicas: int, infeasible: bool) -> tuple:
    """The TP objective's key ``(infeasible, purchased, billed, tp)`` of a fleet of at least ``replicas``: no fleet
    at this degree can order before it. [GPUs]"""
    _, with_red, bought = fleet.fleet_sizes(max(replicas, 1), tp, s.redundancy, s.gpus_per_node)
    bought = int(math.ceil(bought))
    return infeasible, bought, bought if s.bill_purchased else int(with_red), tp


def _at_tp(s: Scenario, tr: step_results.Traffic, pa: step_results.Paths, budget_set_by_plan: bool, budget: int | None = None,
          bound: tuple | None = None) -> ClosedForm | None:
    """The closed form at one TP degree: the largest of the four paths, then redundancy and the purchasing unit.

    Parameters
    ----------
    s : Scenario
        The plan's numbers (plain floats).
    tr : steps.Traffic
        Steps 1-3 and the demand.
    pa : steps.Paths
        The runbook's paths at this TP degree (memory budget, compute and latency paths).
    budget_set_by_plan : bool
        Whether the plan file sets the step budget. [bool]
    budget : int, optional
        Take this step budget instead of choosing one. [tokens]
    bound : tuple, optional
        The best degree's ``(infeasible, purchased, billed, tp)`` so far: where this degree's compute and queueing
        paths alone give a worse one, it is not worth the memory and latency searches. [GPUs]

    Returns
    -------
    ClosedForm or None
        The closed form at this degree; None where ``bound`` rules it out.

    Notes
    -----
    The cache ``memory(n)`` a fleet of ``n`` replicas needs shrinks as replicas are added (each carries a smaller
    batch, so its step is shorter and a request holds its cache for less time), so the memory path is the fewest
    replicas with ``memory(n) ≤ n``, found by bisection; the runbook's memory path, at the target's time, bounds it
    above. The fleet is the largest path; the time in system and cache reported are the fleet's own.

    The latency path times the step at the batch a token gap sees at the promise's percentile, not the mean batch:
    a gap is seen by every sequence of its step, so by the batch size-biased (1 + Poisson(b) about the achieved mean
    ``b``). At the mean alone, a 25 ms target on the reference sized 6 where the simulation needs 8 (now 7).

    References
    ----------
    Little's Law: Little, Operations Research 9(3), 1961. Erlang C: :func:`xlplan.serving.queueing.servers_for_wait`.
    Size-biased sampling (the inspection paradox): Feller, *An Introduction to Probability Theory and Its
    Applications* vol. 2, 1971, §I.4. Cornish & Fisher, "Moments and cumulants in the specification of
    distributions", Revue de l'Institut International de Statistique 5(4), 1938.
    """
    tp = int(pa.tp)
    chosen, why, options = _step_budget(s, tr, pa, budget_set_by_plan, budget)
    q_s = changed(s, max_num_batched_tokens=float(chosen), latency_with_prefill=True)
    r = replica_at_tp.replica(q_s, tp)
    step = latency_step.closed_form_step_fn(q_s, tr, r)
    q = _queue_unless_bounded(s, tr, pa, q_s, r, step, bound)
    if q is None:  # the fleet is at least the compute and queueing paths: no better than the best, no search
        return None
    return _sized(s, tr, pa, q_s, r, step, chosen, why, options, q)


def _step_budget(s: Scenario, tr: step_results.Traffic, pa: step_results.Paths, budget_set_by_plan: bool,
                 budget: int | None) -> tuple[int, str, tuple[tuple[int, int | None], ...]]:
    """(budget, why, options): the budget given, or the one :func:`_choose_budget` deploys. [tokens], [text]"""
    if budget is None:
        return _choose_budget(s, tr, int(pa.tp), float(pa.load_replicas), budget_set_by_plan)
    return budget, "plan" if budget_set_by_plan else "queueing path", ()


def _queue_unless_bounded(s: Scenario, tr: step_results.Traffic, pa: step_results.Paths, q_s: Scenario, r: step_inputs.Replica, step,
                          bound: tuple | None) -> queue_path.QueuePath | None:
    """The queueing path at this degree; None where ``bound`` rules the degree out, before Erlang C (a queue is stable
    only on more replicas than its offered load) or after it. [QueuePath]"""
    tp = int(pa.tp)
    compute_reps = int(pa.compute_gpus) // tp
    if bound is not None:  # a queue is stable only on more replicas than its offered load: a bound before Erlang C
        stable = queue_path.stable_replicas(q_s, tr, r, step)
        if stable is None or _lower_key(s, tp, max(compute_reps, stable), False) > bound:
            return None
    q = queue_path.queue_path(q_s, tr, tp, float(pa.load_replicas), r, step)
    if bound is not None and _lower_key(s, tp, max(compute_reps, q.replicas or 0), q.replicas is None) > bound:
        return None
    return q


def _sized(s: Scenario, tr: step_results.Traffic, pa: step_results.Paths, q_s: Scenario, r: step_inputs.Replica, step, chosen: int,
           why: str, options: tuple, q: queue_path.QueuePath) -> ClosedForm:
    """The closed form at one degree once its queueing path is known: the memory and latency paths at the fleet's own
    batch, the largest of the four, then redundancy and the purchasing unit. [ClosedForm]"""
    tp = int(pa.tp)
    # the step as two lines in the batch (None for routed experts, and where prefill runs apart: then iterated)
    lines = (None if engines.prefill_first(s.engine) else
             folded_step.step_lines(r, latency_step.latency_load(q_s, tr, r, 1.0)))
    at_fleet = functools.cache(functools.partial(achieved_time_in_system_s, s, tr, step, lines=lines))
    memory_at = functools.partial(achieved_paths.memory_at, s, tr, at_fleet, float(pa.kv_budget_gib_per_gpu), tp,
                                  int(pa.kv_shards))
    # the runbook's memory path, at the target's time, bounds the memory path above
    mem_gpus = achieved_paths.memory_path_replicas(memory_at, max(int(round(pa.memory_gpus / tp)), 1)) * tp
    lat_reps = achieved_paths.latency_path_replicas(s, q_s, tr, r, int(chosen), step, at_fleet)
    lat_gpus = lat_reps * tp if lat_reps is not None else int(pa.latency_gpus)
    counts = {"memory": mem_gpus, "compute": int(pa.compute_gpus), "latency": lat_gpus}
    if q.gpus is not None:
        counts["queueing"] = int(q.gpus)
    n = max(counts.values()) // tp
    t, tau, b, conc, mem_exact = memory_at(n)[1]  # the fleet's own time in system and cache
    label, which = _binding(counts, tp)
    load, with_red, purchased = fleet.fleet_sizes(n, tp, s.redundancy, s.gpus_per_node)
    return ClosedForm(
        tp=tp, step_budget_tokens=int(chosen), budget_chosen_by=why, queue=q, budget_options=options,
        achieved_step_s=tau, achieved_batch=b, time_in_system_s=t, concurrency=conc,
        kv_gib_total=conc * tr.kv_gib_per_conversation, memory_gpus_exact=mem_exact, memory_gpus=mem_gpus,
        compute_gpus=int(pa.compute_gpus), latency_gpus=lat_gpus,
        queueing_gpus=int(q.gpus) if q.gpus is not None else None, feasible=q.replicas is not None,
        load_replicas=int(n), load=int(load), with_redundancy=int(with_red), purchased=int(math.ceil(purchased)),
        binding=label, binding_paths=which, max_num_seqs=float(s.max_num_seqs),
        expert_parallel=int(r.ep), attention_data_parallel=bool(s.attention_data_parallel),
        long_prefill_token_threshold=float(s.long_prefill_token_threshold),
    )
