"""The Answer's fleet for one scenario: the runbook's method, the closed form, and the simulation where affordable.

:func:`decide` is what ``plan``, ``compare`` and ``schedule`` share; :func:`_answer` is the Answer line's fleet and
bill; :func:`deployed` the scenario the simulation runs. No I/O.
"""

from __future__ import annotations

import dataclasses

from xlplan import fleet, words
from xlplan.decide import configuration
from xlplan.money import cost
from xlplan.plan import closed_form, monthly_bill, scenario, steps
from xlplan.plan.scenario import PlanningError, Scenario
from xlplan.plan.steps import solve
from xlplan.schema import steps as step_results
from xlplan.schema.plausibility import FLEET_CEILING_GPUS, past_ceiling
from xlplan.schema.result import AlternativeOut, AnswerOut, UtilisationCost
from xlplan.schema.steps import Solution
from xlplan.simulate import run as sim_run
from xlplan.simulate import verify as sim_verify
from xlplan.simulate import workload

UTILISATION_TABLE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""Average utilisations at which $/M tokens is tabulated. [fraction]"""


def usd_per_mtok_by_utilisation(s: Scenario, tr: step_results.Traffic, monthly_usd: float) -> list[UtilisationCost]:
    """$/M tokens of a monthly bill at each average utilisation of :data:`UTILISATION_TABLE`. [USD/Mtok]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its peak rate and hours a month.
    tr : steps.Traffic
        Steps 1-3: the mean prompt and output lengths.
    monthly_usd : float
        The fleet's monthly bill. [USD/month]

    Returns
    -------
    list of UtilisationCost
        One per utilisation, in order: the bill over the tokens served a month at it. [USD/Mtok]

    References
    ----------
    Runbook, document 14, step 7 · "at 40% average load roughly 95 billion tokens a month, ~$0.11 per million tokens".
    """
    return [
        UtilisationCost(utilisation=u, usd_per_mtok=cost.usd_per_mtok(monthly_usd, cost.tokens_per_month(
            s.peak_rps, tr.prompt_mean + tr.output_mean, u, s.hours_per_month)))
        for u in UTILISATION_TABLE
    ]


@dataclasses.dataclass(frozen=True)
class Decision:
    """The fleet a scenario gets: the runbook's method solved, the closed form, the simulation where it ran, and the
    Answer that follows them. Units as in each type."""

    sol: Solution
    closed_form: closed_form.ClosedForm
    verified: object  # VerifiedOut or None
    answer: AnswerOut
    skipped: str | None  # why the simulation did not run under verify='auto' [text]
    configuration: closed_form.ClosedForm | None = None  # the Answer's setting's closed form (None: the closed form's)
    tried: tuple = ()  # configuration.Tried of every candidate setting, where the search ran


def decide(s: Scenario, percentile: float, max_context: int | None, budget_set_by_plan: bool,
           verify: bool | str = False) -> Decision:
    """The Answer's fleet for one scenario, without the note's what-ifs: what `plan`, `compare` and `schedule` share.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    percentile : float
        The promise's percentile. [percent]
    max_context : int, optional
        The model's context limit, for clipping simulated lengths. [tokens]
    budget_set_by_plan : bool
        The plan file sets ``policy.max_num_batched_tokens`` (the closed form then keeps it).
    verify : bool or 'auto'
        Simulate the closed form's fleet at peak (:func:`xlplan.simulate.verify.verify`); 'auto': where affordable.

    Returns
    -------
    Decision
        The solution, the closed form, the verification (or None) and the Answer.

    Raises
    ------
    PlanningError
        When the plan cannot be met on this hardware, or its closed form buys more than
        :data:`xlplan.schema.plausibility.FLEET_CEILING_GPUS` (accepted or not: nothing past it is simulated or priced).
    """
    sol = solve(s)
    cf = closed_form.closed_form(s, sol, budget_set_by_plan)
    if cf.purchased > FLEET_CEILING_GPUS:
        raise PlanningError(past_ceiling(cf.purchased))
    skipped = None
    auto = verify == "auto"
    if auto:
        verify, skipped = _affordable(s, cf)
    if not verify:
        return Decision(sol, cf, None, _answer(s, sol, cf, None), skipped)

    def simulate(c: closed_form.ClosedForm):
        return sim_verify.verify(deployed(s, c), sol, percentile, max_context=max_context, start_replicas=c.load_replicas,
                                 cv2=s.arrival_cv2, tp=c.tp, sample=sample_for(s, c))

    first_seeds: dict = {}  # a setting's start -> (its first seed's requests, as its verification draws them; span)

    def screen(c: closed_form.ClosedForm, replicas: int) -> bool:  # one run on the first seed, as the search runs it
        key = (c.load_replicas, sample_for(s, c))
        if key not in first_seeds:
            minutes = workload.verification_minutes(s, c.load_replicas, key[1])
            first_seeds[key] = (workload.verification_workload(
                s, minutes, workload.DEFAULT_SEED, s.arrival_cv2, max_context, c.load_replicas, key[1]), minutes)
        first_seed, minutes = first_seeds[key]
        return sim_run.watched_verdict(deployed(s, c), replicas, c.tp, first_seed, minutes * 60.0, percentile)[1]

    cands = configuration.candidates(s, sol, cf, budget_set_by_plan)
    # --verify simulates whatever it costs; by default, a setting past what the default simulation takes on is skipped
    gate = (lambda c: _affordable(s, c)) if auto else (lambda c: (True, None))
    chosen, tried = configuration.search(s, cands, simulate, gate, screen)
    at = tried[chosen]
    return Decision(sol, cf, at.verified, _answer(s, sol, at.closed_form, at.verified, tried, chosen), skipped,
                    at.closed_form, tuple(tried))


VERIFY_MAX_GPUS = 10_000
"""The default simulation verifies a closed form of at most this many GPUs purchased (a fleet past
:data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS` replicas on a sample of them); past it, the Answer is the
closed form's. [GPUs]"""

AUTO_VERIFY_MAX_REQUESTS = 400_000
"""...and one run holds at most this many requests (the reference at 16 × its peak: 385,000, about a minute). [requests]"""

AUTO_VERIFY_MAX_STEPS = 5_000_000
"""...and takes at most about this many engine steps, all replicas simulated together (requests × mean output ÷
batch). [steps]"""


def sample_for(s, cf: closed_form.ClosedForm) -> int:
    """Replicas a verification of the closed form's fleet simulates (0: every one): a sample past
    :data:`xlplan.simulate.workload.SAMPLE_ABOVE_REPLICAS`, sized by its share of the requests and, at the closed
    form's batch, of the engine steps (:func:`xlplan.simulate.workload.sample_replicas`). [replicas]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its peak and lengths.
    cf : closed_form.ClosedForm
        The setting's closed form: its load and batch.

    Returns
    -------
    int
        Replicas sampled, or 0. [replicas]
    """
    return workload.sample_replicas(s, max(int(cf.load_replicas), 1), cf.achieved_batch)


def _affordable(s, cf: closed_form.ClosedForm) -> tuple[bool, str | None]:
    """(simulate?, why not): the default verification runs where it takes about a minute at most. [bool], [text]"""
    n = max(int(cf.load_replicas), 1)
    k = sample_for(s, cf)
    minutes = workload.verification_minutes(s, n, k)
    requests = workload.share_rps(s.peak_rps, k, n) * minutes * 60.0  # one run's, the sample's where sampled
    mean_output = steps.traffic(s).output_mean
    step_count = requests * mean_output / max(cf.achieved_batch, 1.0)  # decode steps of one run, all replicas run
    if cf.purchased <= VERIFY_MAX_GPUS and requests <= AUTO_VERIFY_MAX_REQUESTS and step_count <= AUTO_VERIFY_MAX_STEPS:
        return True, None
    if cf.purchased > VERIFY_MAX_GPUS:
        return False, (f"not simulated: the closed form's {words.count(int(cf.purchased), 'GPU')} are past the "
                       f"{VERIFY_MAX_GPUS:,} the default simulation verifies; the Answer is the closed form's — "
                       "`xlplan plan --verify` simulates it anyway (a sample of its replicas, minutes)")
    runs = f"{words.count(k, 'replica')} sampled of the closed form's {n:,}" if k else words.count(n, 'replica')
    return False, (f"not simulated: a run of {runs} holds {requests:,.0f} requests and about {step_count:,.0f} steps, "
                   f"past what the default simulation takes on (at most {AUTO_VERIFY_MAX_REQUESTS:,} requests and "
                   f"{AUTO_VERIFY_MAX_STEPS:,} steps a run); the Answer is the closed form's — `xlplan plan --verify` "
                   "simulates it anyway (minutes), or simulate a share of the peak with `xlplan simulate`")


def deployed(s, cf: closed_form.ClosedForm):
    """The scenario at the step budget the plan deploys: what the simulation runs. [Scenario]

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    cf : closed_form.ClosedForm
        The closed form, with the step budget chosen.

    Returns
    -------
    Scenario
        ``s`` with ``max_num_batched_tokens`` at the deployed budget (unchanged where the plan or engine sets it, or
        where the simulation's default is chosen), and its sequence cap, expert-parallel degree and DP attention as
        the setting was solved.
    """
    changes = {}
    if cf.budget_chosen_by == "queueing path":
        changes["max_num_batched_tokens"] = float(cf.step_budget_tokens)
    for name in scenario.SEARCHED_SETTINGS:  # the cap and layout the setting was solved at
        if getattr(cf, name) != getattr(s, name):
            changes[name] = getattr(cf, name)
    return dataclasses.replace(s, **changes) if changes else s


def _answer(s, sol: Solution, cf: closed_form.ClosedForm, verified, tried: list | None = None, chosen: int = 0) -> AnswerOut:
    """The Answer line: the verified fleet where the simulation found one, else the closed form; and its bill.

    Parameters
    ----------
    s : Scenario
        The plan's numbers.
    sol : Solution
        The runbook's method solved: traffic and the chosen TP degree's paths.
    cf : closed_form.ClosedForm
        The closed-form fleet.
    verified : VerifiedOut or None
        The simulation at peak, where it ran.

    Returns
    -------
    AnswerOut
        Load, with redundancy (the fleet that keeps the promise with the plan's redundancy lost, where verified),
        purchased in whole units, and the bill of that fleet.

    References
    ----------
    Runbook, document 14, step 7 · "5 GPUs at $3/hr × 730 hours ≈ $11,000 / month": the same arithmetic on this fleet.
    """
    tp = cf.tp
    if verified is not None and verified.load is not None:
        source, load = "verified", int(verified.load)
        red, purchased, _ = configuration.fleet_of(s, load, tp, verified.with_redundancy)
    else:
        source, load, red, purchased = "closed form", cf.load, cf.with_redundancy, int(fleet.whole_units(cf.with_redundancy, s.gpus_per_node))
    b = _bill(s, sol, red, purchased)
    by_util = usd_per_mtok_by_utilisation(s, sol.traffic, b.monthly_usd)
    return AnswerOut(source=source, tp=tp, load=load, with_redundancy=int(red), purchased=purchased,
                     binding=_answer_binding(cf, load), closed_form_load=int(cf.load), settings=configuration.settings_of(s.engine, cf), **configuration.layout_fields(cf),
                     alternatives=_alternatives(s, sol, tried or [], chosen),
                     step_budget_tokens=cf.step_budget_tokens, billed_gpus=int(b.billed_gpus), paid_as=s.paid_as,
                     order=fleet.order_words(s.paid_as, int(red), purchased, s.gpus_per_node), monthly_usd=b.monthly_usd,
                     usd_per_mtok=b.usd_per_mtok, api_monthly_usd=b.api_monthly_usd,
                     breakeven_tokens_per_month=b.breakeven_tokens_per_month, usd_per_mtok_by_utilisation=by_util)


def _bill(s, sol: Solution, with_redundancy: int, purchased: int):
    """The monthly bill of a fleet: with redundancy and purchased, as step 7 bills it. [monthly_bill.Bill]"""
    return monthly_bill.bill(s, sol.traffic, dataclasses.replace(sol.paths, with_redundancy=float(with_redundancy),
                                                                 purchased=float(purchased)))


ALTERNATIVES_SHOWN = 2
"""Settings the note and JSON show beside the Answer's, with their bills and why they lost. [settings]"""


def _alternatives(s, sol: Solution, tried: list, chosen: int) -> list[AlternativeOut]:
    """The next cheapest settings the search tried, with their bills and why they lost. [AlternativeOut]"""
    if not tried:
        return []
    answer = tried[chosen]
    out = []
    for t in sorted((t for i, t in enumerate(tried) if i != chosen), key=lambda t: t.key())[:ALTERNATIVES_SHOWN]:
        cf = t.closed_form
        if t.why_not_simulated:
            why = t.why_not_simulated
        elif not t.found:
            why = f"no fleet up to {words.count(t.verified.searched_up_to, 'GPU')} keeps the promise in simulation"
        else:
            spare = t.load + int(s.redundancy) * int(cf.tp)  # the load plus the spare replicas
            lost = (f" (the load plus {words.count(int(s.redundancy), 'spare replica')}, {spare}, missed it with "
                    f"{words.count(int(s.redundancy), 'replica')} lost)" if t.with_redundancy > spare else "")
            why = (f"in simulation {words.count(t.load, 'GPU')} {words.verb(t.load, 'keeps', 'keep')} the promise, "
                   f"{t.with_redundancy} with redundancy{lost}: {t.billed} billed against the Answer's {answer.billed}")
        out.append(AlternativeOut(tp=int(cf.tp), step_budget_tokens=int(cf.step_budget_tokens),
                                  settings=configuration.settings_of(s.engine, cf), **configuration.layout_fields(cf),
                                  closed_form_load=int(cf.load), simulated=t.verified is not None or t.screened,
                                  load=t.load if t.found else None, with_redundancy=t.with_redundancy if t.found else None,
                                  billed_gpus=t.billed if t.found else None,
                                  monthly_usd=_bill(s, sol, t.with_redundancy, t.purchased).monthly_usd if t.found else None,
                                  why=why))
    return out


def _answer_binding(cf: closed_form.ClosedForm, load: int) -> str:
    """The Answer's binding label: the closed form's where its load is the Answer's; where the simulation verified
    fewer GPUs, the paths that need exactly that many (the minimum replica where it is one replica), since the path
    the closed form named was overruled; where none does, the closed form's; where the simulation needed more than
    every path, 'queueing (simulated)'. [text]

    Parameters
    ----------
    cf : closed_form.ClosedForm
        The closed form at the Answer's degree: its load, degree and each path's GPUs.
    load : int
        The Answer's load. [GPUs]

    Returns
    -------
    str
        The label: a path's name, tied paths joined by ' and ', or 'minimum replica'.

    >>> from types import SimpleNamespace as NS
    >>> cf = NS(load=4, tp=2, binding="queueing", memory_gpus=2, compute_gpus=2, latency_gpus=2, queueing_gpus=4)
    >>> _answer_binding(cf, 2)   # mixtral on H100s: 87 GiB of weights need two GPUs; the queue's 4 were not needed
    'minimum replica'
    >>> _answer_binding(NS(**{**vars(cf), "tp": 1}), 2)
    'memory and compute and latency'
    >>> _answer_binding(NS(**{**vars(cf), "load": 1, "tp": 1, "binding": "minimum replica"}), 2)  # the tail needs 2
    'queueing (simulated)'
    """
    if load == cf.load:
        return cf.binding
    if load > cf.load:  # the simulation needs more than any path: requests queue longer than the means say
        return fleet.SIMULATED_QUEUEING
    if load <= cf.tp:
        return fleet.MINIMUM_REPLICA
    counts = {"memory": cf.memory_gpus, "compute": cf.compute_gpus, "latency": cf.latency_gpus, "queueing": cf.queueing_gpus}
    at = [p for p in closed_form.PATHS if counts.get(p) == load]
    return " and ".join(at) if at else cf.binding


def layout_warnings(s: Scenario, a: AnswerOut) -> list[str]:
    """The Answer's layout where the plan's own cannot run as set: an expert-parallel degree that does not divide the
    Answer's TP degree (its experts are then split by TP, and planned so), DP attention on vLLM. [text]

    Parameters
    ----------
    s : Scenario
        The plan's numbers: its experts, engine and the settings the plan file sets.
    a : AnswerOut
        The Answer: its TP degree and layout.

    Returns
    -------
    list of str
        One line for each that holds. [text]
    """
    out = []
    if "expert_parallel" in s.set_by_plan and s.experts and s.expert_parallel > 1 and a.expert_parallel != s.expert_parallel:
        out.append(f"policy.expert_parallel ({s.expert_parallel}) does not divide the Answer's TP degree ({a.tp}): its "
                   f"experts are split by TP (expert-parallel 1), as planned and deployed; set policy.tp to a multiple "
                   f"of {s.expert_parallel}, or leave policy.expert_parallel out and the search tries the experts over "
                   "each replica")
    if a.attention_data_parallel and s.engine not in configuration.DP_ATTENTION:
        out.append("policy.attention_data_parallel is true on vLLM: vLLM's data parallel for MoE also replicates the "
                   "dense layers, a different replica from the one planned (SGLang's --enable-dp-attention, "
                   "TensorRT-LLM's enable_attention_dp); the plan is sized as those engines run it")
    return out


def answer_warnings(cf: closed_form.ClosedForm, verified) -> list[str]:
    """The Answer's warnings: no fleet keeps the wait for a slot within the TTFT, or none was verified. [text]

    Parameters
    ----------
    cf : closed_form.ClosedForm
        The closed-form fleet.
    verified : VerifiedOut or None
        The simulation at peak, where it ran.

    Returns
    -------
    list of str
        A line for each that holds, in that order; empty when neither does. [text]
    """
    out = []
    if not cf.feasible:
        out.append("no fleet keeps the wait for a slot within the TTFT promise: the prompt's prefill alone takes "
                   f"{cf.queue.prefill_at_percentile_s:.2f} s at the promise's percentile, so the closed form stands on "
                   "the other paths")
    if verified is not None and verified.load is None:
        out.append(f"no fleet up to {words.count(verified.searched_up_to, 'GPU')} keeps the promise in simulation: the Answer is the "
                   "closed form's, unverified")
    return out
