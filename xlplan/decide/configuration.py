"""The configuration search: the serving settings the Answer deploys, judged by the simulator.

The closed form chooses its TP degree by its own figures (:func:`xlplan.plan.closed_form.closed_form`). Where those are
wrong (a long prompt's prefill on a narrow replica, which Erlang C over the decode slots cannot see), verifying only
the size of the fleet at that degree leaves an expensive fleet at the wrong setting: Qwen3-32B at 1 req/s with 4k-token
p95 prompts and a 1 s TTFT needs 11 H100s at TP 1 in simulation, where 2 at TP 2 keep the promise.

:func:`search` takes a candidate at every TP degree and step budget the plan allows (the plan's own degree or budget
where it fixes one), and beside each, where the plan leaves them out, a sequence cap at the queueing path's slots
(:func:`sequence_cap`) and the parallel layouts (:func:`layouts`: a MoE's experts over the replica, DP attention); it
ranks them by the closed form's bill, and simulates from the cheapest. A candidate is simulated only where its closed form less one replica (the closed form's stated accuracy,
issue 18), or less :data:`CLOSED_FORM_SLACK` of its replicas, could still bill less than the best fleet verified so
far: after the first, each is screened by one first-seed run at the most replicas that would bill less (at most
:data:`MAX_SCREENED` screens) and verified on every seed only where that run keeps the promise (at most
:data:`MAX_SIMULATED` verifications). The
Answer is the cheapest verified fleet; the others are carried with their bills and why they lost.

No I/O.

References
----------
Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable". vLLM's engine arguments
(docs.vllm.ai, "Engine Arguments": ``--tensor-parallel-size``, ``--max-num-batched-tokens``); SGLang's server arguments
(docs.sglang.ai, "Server Arguments": ``--tp-size``, ``--chunked-prefill-size``, ``--ep-size``,
``--enable-dp-attention``, ``--dp-size``); TensorRT-LLM's ``trtllm-serve`` options (``--tp_size``, ``--max_num_tokens``,
``--ep_size``; ``enable_attention_dp`` in ``--extra_llm_api_options``); vLLM's ``--enable-expert-parallel``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xlplan import fleet, words
from xlplan.plan import closed_form, queue_path, scenario
from xlplan.plan.closed_form import ClosedForm
from xlplan.plan.scenario import Scenario
from xlplan.schema import steps as step_results
from xlplan.serving import memory

MAX_SIMULATED = 8
"""Candidates the search verifies on every seed at most: the closed form's cheapest, then the seven next whose
first-seed screen kept the promise. Four left Gemma's long answers at 9 GPUs where 6 at TP 2 keep the promise (the
configuration battery, ``benchmarks/bench_configurations.txt``). [candidates]"""

MAX_SCREENED = 24
"""Candidates the search screens at most (one first-seed run, stopped once it has missed), beside the verifications.
Screens were counted with them until DeepSeek-V3 on SGLang at 6 req/s: its closed form is 3 replicas at 48 settings,
four plain ones passed the screen at 2 and verified at 3, and the budget of 8 ran out before DP attention, which
keeps the promise on 2 (24 GPUs billed against 32; ``bench_configurations_scaled.txt``). A
screen of a fleet that misses stops early; one that keeps the promise costs what one seed of a verification does.
[candidates]"""

CLOSED_FORM_SLACK = 0.2
"""How far below its closed form a candidate's verified fleet may fall, as a share of the closed form's replicas,
beyond the one replica the closed form states: a safety margin, chosen, not fitted. On the configuration battery the
closed form over-estimates no simulated setting by more than one replica (it under-estimates several: 21 replicas
against 38 for the 70B on two H200s at 1,024-token steps, which the simulation then corrects), but a prefill-queue
variant tried for that battery over-estimated the 512-token setting by a fifth (43 against 35) and would have hidden
the cheapest fleet behind the one-replica rule. Each setting the margin admits costs one first-seed run, and only while
a cheaper fleet could come of it. [share]"""


ENGINE_FLAGS = {
    "vllm": ("vLLM", "--tensor-parallel-size", "--max-num-batched-tokens", "--max-num-seqs"),
    "runbook": ("vLLM (for engine 'runbook')", "--tensor-parallel-size", "--max-num-batched-tokens", "--max-num-seqs"),
    "sglang": ("SGLang", "--tp-size", "--chunked-prefill-size", "--max-running-requests"),
    "trtllm": ("TensorRT-LLM", "--tp_size", "--max_num_tokens", "--max_batch_size"),
}
"""Engine → (its name, its flag for the TP degree, for the step's token budget, for the sequences running at once). The
runbook's engine is deployed as vLLM, and its name says so. [text]"""


EXPERT_PARALLEL_FLAGS = {"vllm": "--enable-expert-parallel", "runbook": "--enable-expert-parallel", "sglang": "--ep-size",
                         "trtllm": "--ep_size"}
"""Engine → its flag for spreading a replica's experts. vLLM's takes no degree: its experts go over the whole replica
(TP × DP GPUs), so it is named only where the degree is the TP degree. [text]"""

DP_ATTENTION = {"sglang": "--enable-dp-attention --dp-size {tp}",
                "trtllm": "--extra_llm_api_options <a YAML file with enable_attention_dp: true>"}
"""Engine → how DP attention is switched on, for the engines whose DP attention keeps a replica's FFN in tensor
parallel as the step model does (SGLang's ``--enable-dp-attention``, TensorRT-LLM's ``enable_attention_dp``). vLLM's
data parallel for MoE also replicates the dense layers, a different replica, so the search does not try it there. [text]"""


def settings_of(engine: str, cf: ClosedForm) -> str:
    """:func:`settings` of a closed form's setting: its TP degree, step budget, sequence cap and parallel layout. [text]

    Parameters
    ----------
    engine : str
        The plan's engine (``policy.engine``).
    cf : ClosedForm
        The closed form at the setting.

    Returns
    -------
    str
        The settings in the engine's own flag names. [text]
    """
    return settings(engine, int(cf.tp), int(cf.step_budget_tokens), cf.max_num_seqs, int(cf.expert_parallel),
                    bool(cf.attention_data_parallel), cf.long_prefill_token_threshold)


def layout_fields(cf: ClosedForm) -> dict:
    """The JSON's fields for a closed form's sequence cap and parallel layout (``AnswerOut``, ``AlternativeOut``).

    Parameters
    ----------
    cf : ClosedForm
        The closed form at the setting.

    Returns
    -------
    dict
        ``max_num_seqs`` (at most the step budget, as deployed; None past any engine's range, engine 'runbook''s
        unbounded default) [sequences], ``expert_parallel`` [GPUs], ``attention_data_parallel`` [bool],
        ``long_prefill_token_threshold`` (None: none, or at or over the step budget, where it changes nothing) [tokens].

    References
    ----------
    vLLM's scheduler config: ``max_num_batched_tokens`` at least ``max_num_seqs`` (vllm/config/scheduler.py).
    """
    cap = min(float(cf.max_num_seqs), float(cf.step_budget_tokens))
    threshold = float(cf.long_prefill_token_threshold)  # at or over the step budget it changes nothing: not deployed
    threshold = threshold if threshold < float(cf.step_budget_tokens) else math.inf
    return {"max_num_seqs": int(cap) if math.isfinite(cap) else None, "expert_parallel": int(cf.expert_parallel),
            "attention_data_parallel": bool(cf.attention_data_parallel),
            "long_prefill_token_threshold": int(threshold) if math.isfinite(threshold) else None}


def settings(engine: str, tp: int, step_budget_tokens: int, max_num_seqs: float | None = None,
             expert_parallel: int = 1, attention_data_parallel: bool = False,
             long_prefill_token_threshold: float = math.inf) -> str:
    """The settings to deploy, in the engine's own flag names. [text]

    Parameters
    ----------
    engine : str
        The plan's engine (``policy.engine``).
    tp : int
        GPUs per replica. [GPUs]
    step_budget_tokens : int
        Tokens one step may carry. [tokens]
    max_num_seqs : float, optional
        The sequences a replica runs at once as planned (``policy.max_num_seqs`` or the engine's default); left out,
        no sequence flag. [sequences]
    expert_parallel : int
        GPUs of a replica its experts are spread over; 1: no flag. [GPUs]
    attention_data_parallel : bool
        Each rank holds its own sequences' KV cache (DP attention). [bool]
    long_prefill_token_threshold : float
        The most prompt tokens one request prefills in a step (vLLM's ``--long-prefill-token-threshold``); no flag
        where it is inf or at least the step budget (it then changes nothing). [tokens]

    Returns
    -------
    str
        ``'vLLM: --tensor-parallel-size 2 --max-num-batched-tokens 8192 --max-num-seqs 1024'`` and the like. [text]

    Notes
    -----
    The sequence cap is named at ``min(max_num_seqs, step budget)``: vLLM refuses to start where
    ``max_num_batched_tokens < max_num_seqs`` (its scheduler config's check), and a step of ``b`` decodes spends ``b``
    of its budget, so no more run at once in the engine or in the simulation (which admits a sequence only while the
    step has room). A 512-token budget on an H100, where vLLM's default is 1,024 sequences, is deployed with
    ``--max-num-seqs 512``.

    References
    ----------
    vLLM's engine arguments (docs.vllm.ai, "Engine Arguments": ``--max-num-seqs``) and its scheduler config's check
    that ``max_num_batched_tokens`` is at least ``max_num_seqs`` (vllm/config/scheduler.py); SGLang's server
    arguments (``--max-running-requests``); trtllm-serve's options (``--max_batch_size``).

    Examples
    --------
    >>> settings("sglang", 4, 2048)
    'SGLang: --tp-size 4 --chunked-prefill-size 2048'
    >>> settings("vllm", 1, 512, 1024)
    'vLLM: --tensor-parallel-size 1 --max-num-batched-tokens 512 --max-num-seqs 512'
    >>> settings("sglang", 8, 4096, None, 8, True)
    'SGLang: --tp-size 8 --chunked-prefill-size 4096 --ep-size 8 --enable-dp-attention --dp-size 8'
    >>> settings("vllm", 1, 8192, 1024, long_prefill_token_threshold=2048)
    'vLLM: --tensor-parallel-size 1 --max-num-batched-tokens 8192 --max-num-seqs 1024 --long-prefill-token-threshold 2048'
    >>> settings("vllm", 1, 512, 1024, long_prefill_token_threshold=2048)  # over the budget: no flag
    'vLLM: --tensor-parallel-size 1 --max-num-batched-tokens 512 --max-num-seqs 512'
    >>> settings("vllm", 4, 8192, 1024, 2)
    'vLLM: --tensor-parallel-size 4 --max-num-batched-tokens 8192 --max-num-seqs 1024 (experts over 2 GPUs: vLLM spreads them over the whole replica or not at all)'
    """
    key = engine if engine in ENGINE_FLAGS else "vllm"
    name, tp_flag, budget_flag, seqs_flag = ENGINE_FLAGS[key]
    out = f"{name}: {tp_flag} {tp} {budget_flag} {step_budget_tokens}"
    if max_num_seqs is not None:
        out += f" {seqs_flag} {int(min(max_num_seqs, step_budget_tokens))}"
    if expert_parallel > 1:
        flag = EXPERT_PARALLEL_FLAGS[key]
        if key in ("vllm", "runbook"):
            out += (f" {flag}" if expert_parallel == tp else
                    f" (experts over {expert_parallel} GPUs: vLLM spreads them over the whole replica or not at all)")
        else:
            out += f" {flag} {expert_parallel}"
    if long_prefill_token_threshold < step_budget_tokens:  # vLLM's alone (the plan file refuses it on the others)
        out += f" --long-prefill-token-threshold {int(long_prefill_token_threshold)}"
    if attention_data_parallel:
        out += " " + DP_ATTENTION.get(key, "(DP attention: each rank holds its own sequences' KV cache)").format(tp=tp)
    return out


@dataclass(frozen=True)
class Tried:
    """One candidate configuration and what the search found. Units in the field comments."""

    closed_form: ClosedForm  # the closed form at this degree and step budget
    verified: object | None  # xlplan.schema.result.VerifiedOut, or None where not simulated
    load: int  # GPUs for the load: verified where simulated and found, else the closed form's [GPUs]
    with_redundancy: int  # at least load + redundancy × TP [GPUs]
    purchased: int  # whole purchasing units [GPUs]
    billed: int  # GPUs on the bill [GPUs]
    why_not_simulated: str | None  # None where verified on every seed [text]
    screened: bool = False  # simulated on the first seed alone, which already ruled it out [bool]

    @property
    def found(self) -> bool:
        """Simulated, and a fleet kept the promise. [bool]"""
        return self.verified is not None and self.verified.load is not None

    def key(self) -> tuple:
        """What the search orders fleets by: kept the promise first, then fewest billed, purchased, smallest TP. [GPUs]

        Returns
        -------
        tuple
            ``(not found, billed, purchased, tp)``; the smallest wins. [GPUs]
        """
        return (not self.found, self.billed, self.purchased, self.closed_form.tp)


def candidates(s: Scenario, sol: step_results.Solution, first: ClosedForm, budget_set_by_plan: bool) -> list[ClosedForm]:
    """A closed form at every TP degree and step budget the plan allows, and beside each its sequence cap
    (:func:`sequence_cap`) and parallel layouts (:func:`layouts`), cheapest bill first. [ClosedForm]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    sol : steps.Solution
        The runbook's method solved: traffic and every TP degree's paths.
    first : ClosedForm
        The closed form's own choice (its setting is not solved again).
    budget_set_by_plan : bool
        Whether the plan file sets the step budget (then only that budget is tried). [bool]

    Returns
    -------
    list of ClosedForm
        One per (degree, budget of :data:`xlplan.plan.queue_path.STEP_BUDGETS`, cap, layout) where the weights
        leave cache room, ordered as the closed form orders fleets: feasible first, then fewest billed, fewest
        purchased; among equal bills the fewest settings changed beyond the degree and budget (a cap or a layout
        comes after every plain setting of its bill: on the configuration battery none was cheaper, and ahead they
        crowded TP 2 out of Gemma's eight simulations), then the smallest degree, the closed form's own setting, the
        engine's default budget (the fewest flags changed), then smaller budgets (shorter prefill chunks stall
        decodes less, which the closed form counts least well).

    References
    ----------
    Runbook, document 14, step 6 · "Take the larger, add headroom, round to something buyable".
    """
    own = (int(first.tp), int(first.step_budget_tokens))
    budgets = (None,) if budget_set_by_plan else queue_path.STEP_BUDGETS
    out = [first]
    for tp in s.tp_options:
        for budget in budgets:
            if (int(tp), budget) == own or (budget is None and int(tp) == own[0]):
                continue
            cf = closed_form.at_degree(s, sol, int(tp), budget_set_by_plan, budget)
            if cf is not None:
                out.append(cf)
    plan_budget = (int(s.max_num_batched_tokens),)
    for tp in s.tp_options:
        for layout in layouts(s, int(tp)):
            for budget in (plan_budget if budget_set_by_plan else queue_path.STEP_BUDGETS):
                cf = closed_form.at_setting(s, sol.traffic, int(tp), budget, budget_set_by_plan, **layout)
                if cf is not None:
                    out.append(cf)
    out += [c for c in map(lambda c: _capped(s, sol, c, budget_set_by_plan), out) if c is not None]

    default = scenario.chunk_tokens(s)

    def key(c: ClosedForm) -> tuple:
        changes = _changes(s, c)
        return (not c.feasible, _billed(s, c.with_redundancy, c.purchased), c.purchased, changes, c.tp,
                (int(c.tp), int(c.step_budget_tokens)) != own, c.step_budget_tokens != default, c.step_budget_tokens)

    return sorted(out, key=key)


def _changes(s: Scenario, cf: ClosedForm) -> int:
    """Settings other than the TP degree and step budget that ``cf`` changes from the plan's. [settings]"""
    return sum(getattr(cf, name) != getattr(s, name) for name in scenario.SEARCHED_SETTINGS)


def layouts(s: Scenario, tp: int) -> list[dict]:
    """The parallel layouts the search tries at ``tp`` beside the plan's: the experts over the whole replica (MoE),
    DP attention, and both, each where the plan file leaves it out. [settings]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its experts, KV heads, engine and what the plan file sets.
    tp : int
        GPUs per replica. [GPUs]

    Returns
    -------
    list of dict
        Scenario fields to change, one dict per layout: ``expert_parallel = tp`` where the model has experts that
        divide over the replica; ``attention_data_parallel = True`` on SGLang and TensorRT-LLM where the replica's
        ranks would otherwise copy the cache (MLA, or fewer KV heads than GPUs). [settings]

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> s = NS(set_by_plan=(), experts=256, expert_parallel=1, engine="sglang", attention_data_parallel=False,
    ...        kv_shard_limit=1)
    >>> layouts(s, 8)
    [{'expert_parallel': 8}, {'attention_data_parallel': True}, {'expert_parallel': 8, 'attention_data_parallel': True}]
    >>> layouts(NS(**{**vars(s), "engine": "vllm", "experts": 0}), 8)
    []
    """
    if tp < 2:
        return []
    ep = ([{"expert_parallel": tp}] if ("expert_parallel" not in s.set_by_plan and s.experts and s.experts % tp == 0
                                         and s.expert_parallel != tp) else [])
    dp = ("attention_data_parallel" not in s.set_by_plan and not s.attention_data_parallel and s.engine in DP_ATTENTION
          and memory.kv_shards(tp, s.kv_shard_limit) < tp)
    return ep + ([{"attention_data_parallel": True}] + [{**e, "attention_data_parallel": True} for e in ep] if dp else [])


def sequence_cap(s: Scenario, cf: ClosedForm) -> int | None:
    """The sequence cap the search tries beside the engine's: the decodes one step carries within the inter-token
    target at this setting, where that is below the engine's cap and the step budget. [sequences]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its sequence cap and whether the plan file sets it.
    cf : ClosedForm
        The closed form at one TP degree and step budget, uncapped.

    Returns
    -------
    int or None
        ``⌊slots⌋`` of the queueing path (:attr:`xlplan.plan.queue_path.QueuePath.slots_per_replica`); None where the
        plan file sets the cap, not one decode fits the target, or the engine's cap is already no larger. [sequences]

    Notes
    -----
    The queueing path already sizes the fleet as if no replica ran more than these slots; the engine runs up to its
    own cap (1,024 sequences for vLLM on an H100), so a swing in the batch past the slots slows every token of the
    step. Capped there, a replica's step stays within the target at any batch and the sequences past it wait for a
    slot, which the TTFT target may allow: the simulation judges which is cheaper.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> s = NS(set_by_plan=(), max_num_seqs=1024.0)
    >>> sequence_cap(s, NS(queue=NS(slots_per_replica=87.6), step_budget_tokens=8192, max_num_seqs=1024.0))
    87
    >>> sequence_cap(s, NS(queue=NS(slots_per_replica=300.0), step_budget_tokens=256, max_num_seqs=1024.0)) is None
    True
    """
    cap = math.floor(float(cf.queue.slots_per_replica))
    if "max_num_seqs" in s.set_by_plan or cf.max_num_seqs != s.max_num_seqs or cap < 1 or cap >= min(s.max_num_seqs, cf.step_budget_tokens):
        return None
    return int(cap)


def _capped(s: Scenario, sol: step_results.Solution, cf: ClosedForm, budget_set_by_plan: bool) -> ClosedForm | None:
    """The closed form at ``cf``'s degree and step budget with the sequences capped at :func:`sequence_cap`; None
    where no cap is tried. [ClosedForm]"""
    cap = sequence_cap(s, cf) if cf.feasible else None
    if cap is None:
        return None
    return closed_form.at_setting(s, sol.traffic, int(cf.tp), int(cf.step_budget_tokens), budget_set_by_plan,
                                  max_num_seqs=float(cap), expert_parallel=int(cf.expert_parallel),
                                  attention_data_parallel=bool(cf.attention_data_parallel))


def _billed(s: Scenario, with_redundancy: int, purchased: int) -> int:
    """GPUs on the bill: purchased where the plan bills whole units, else the fleet with redundancy. [GPUs]"""
    return int(purchased if s.bill_purchased else with_redundancy)


def fleet_of(s: Scenario, load: int, tp: int, verified_with_redundancy: int | None = None) -> tuple[int, int, int]:
    """(with redundancy, purchased, billed) of a load: never below load + redundancy × TP, and at least the fleet the
    simulation found keeping the promise with the redundancy lost. [GPUs]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: redundancy, purchasing unit and billing.
    load : int
        GPUs for the load. [GPUs]
    tp : int
        GPUs per replica. [GPUs]
    verified_with_redundancy : int, optional
        The fewest GPUs the simulation found keeping the promise with the redundancy lost. [GPUs]

    Returns
    -------
    tuple of int
        With redundancy, purchased in whole units, billed. [GPUs]

    Examples
    --------
    A warmed fleet that lost a replica can pass as a transient where the steady fleet fails, so the spare replicas are
    always added: 100 GPUs of load at TP 4 with one spare are 104, whatever the loss run says.

    >>> from types import SimpleNamespace as NS
    >>> fleet_of(NS(redundancy=1, gpus_per_node=8, bill_purchased=False), 100, 4, 100)
    (104, 104, 104)
    """
    red = max(int(load) + int(s.redundancy) * int(tp), int(verified_with_redundancy or 0))
    purchased = int(fleet.whole_units(red, s.gpus_per_node))
    return red, purchased, _billed(s, red, purchased)


def _lower_billed(s: Scenario, cf: ClosedForm) -> int:
    """The bill of the fewest replicas the simulation could find at this setting: one replica fewer than the closed
    form, or :data:`CLOSED_FORM_SLACK` of its replicas fewer where that is more. [GPUs]

    Examples
    --------
    43 replicas in the closed form could verify at 34 (43 less 20%, rounded down), 5 at 4 (one fewer):

    >>> from types import SimpleNamespace as NS
    >>> s = NS(redundancy=0, gpus_per_node=1, bill_purchased=False)
    >>> _lower_billed(s, NS(load_replicas=43, tp=1)), _lower_billed(s, NS(load_replicas=5, tp=1))
    (34, 4)
    """
    n = int(cf.load_replicas)
    reps = max(min(n - 1, math.floor(n * (1.0 - CLOSED_FORM_SLACK) + 1e-9)), 1)
    return fleet_of(s, reps * int(cf.tp), int(cf.tp))[2]


def search(s: Scenario, cands: list[ClosedForm], simulate: Callable, affordable: Callable,
           screen: Callable) -> tuple[int, list[Tried]]:
    """Simulate candidates from the cheapest until none left could bill less than the best verified. [Tried]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    cands : list of ClosedForm
        :func:`candidates`, cheapest first.
    simulate : callable
        ``closed form -> VerifiedOut``: the verification at that candidate's degree and step budget.
    affordable : callable
        ``closed form -> (bool, why not)``: whether the default simulation takes it on.
    screen : callable
        ``(closed form, replicas) -> bool``: whether that many replicas keep the promise on the first seed (one run,
        stopped once it has missed). A candidate after the first is run once at the most replicas that still bill
        less than the best; where they miss, no fewer keep it (the wait only grows as replicas are taken away), so it
        is ruled out; where they keep it, it is verified on every seed.

    Returns
    -------
    chosen : int
        Index into ``tried`` of the Answer's configuration: the cheapest that kept the promise in simulation, else the
        first candidate (the closed form's cheapest). [index]
    tried : list of Tried
        Every candidate in ``cands`` order, simulated or with why not.
    """
    tried: list[Tried] = []
    best: tuple | None = None
    simulated = screens = 0
    for cf in cands:
        why = None
        if simulated >= MAX_SIMULATED:
            why = f"not simulated: the search verifies at most {MAX_SIMULATED} settings"
        elif screens >= MAX_SCREENED:
            why = f"not simulated: the search screens at most {MAX_SCREENED} settings on the first seed"
        elif best is not None and _lower_billed(s, cf) >= best[1]:
            why = (f"not simulated: even the fewest its closed form allows ({words.count(_lower_billed(s, cf), 'GPU')} "
                   "billed) bills no less than the Answer")
        elif simulated:
            ok, skipped = affordable(cf)
            why = None if ok else skipped
        screened = False
        if why is None and best is not None:
            n = _most_below(s, int(cf.tp), best[1])
            screens += 1
            if not screen(cf, n):
                screened_gpus = n * int(cf.tp)
                why = (f"simulated on the first seed: {words.count(screened_gpus, 'GPU')} for the load "
                       f"({fleet_of(s, screened_gpus, int(cf.tp))[2]:,} billed with redundancy, the most under the "
                       f"Answer's {best[1]:,}) {words.verb(screened_gpus, 'misses', 'miss')} the promise")
                screened = True
        v = simulate(cf) if why is None else None
        simulated += v is not None
        load = int(v.load) if (v is not None and v.load is not None) else int(cf.load)
        red, bought, billed = fleet_of(s, load, int(cf.tp), v.with_redundancy if (v is not None and v.load is not None) else None)
        t = Tried(cf, v, load, red, bought, billed, why, screened)
        tried.append(t)
        if t.found and (best is None or t.key() < best):
            best = t.key()
    found = [i for i, t in enumerate(tried) if t.found]
    chosen = min(found, key=lambda i: tried[i].key()) if found else 0
    return chosen, tried



def _most_below(s: Scenario, tp: int, best_billed: int) -> int:
    """The most replicas at ``tp`` whose fleet bills less than ``best_billed`` (at least 1). [replicas]"""
    n = 1
    while fleet_of(s, (n + 1) * tp, tp)[2] < best_billed:
        n += 1
    return n
