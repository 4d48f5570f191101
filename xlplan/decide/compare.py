"""Which hardware: the plan re-solved on every catalog GPU, in each weight and cache format it supports, ranked by $/M tokens.

Notes
-----
Each GPU is tried with bf16 weights and cache, fp8 weights and cache where it has FP8 tensor cores, and fp4 (NVFP4)
weights where it has FP4 ones; each option at its best tensor-parallel degree (the planner's objective: fewest
purchased GPUs, then fewest billed, then the smallest degree). A GPU's purchasing unit is its catalog node size,
its price the catalog's dated rental price (the plan's own price override applies only to the plan's own GPU).
A buy plan is compared at each GPU's cost of ownership where the catalog has its node price and power, and its
cost is shown as missing where it does not. Quantised weights change a model's outputs: a cheaper format is an
option to evaluate, not a free saving.
"""

from __future__ import annotations

from xlplan import catalog, fleet
from xlplan.decide.eligibility import annotated, eligibility
from xlplan.plan import scenario
from xlplan.plan.scenario import resolve
from xlplan.schema import plausibility
from xlplan.schema.decisions import GPUOption
from xlplan.schema.plan import Plan

WEIGHT_FORMATS = ("bf16", "fp8", "nvfp4")
"""Weight formats tried on a GPU with the matching tensor cores (bf16 everywhere). [text]"""


def formats(gpu) -> list[tuple[str, str]]:
    """(weights, cache) formats a GPU supports natively. [text]

    Parameters
    ----------
    gpu : GPUSpec
        The GPU; its FP8 and FP4 peak rates say which tensor cores it has.

    Returns
    -------
    list of tuple of str
        Every (weights, cache) pair: bf16, fp8 where it has FP8 tensor cores, nvfp4 weights where it has FP4 ones.
    """
    weights = ["bf16"] + (["fp8"] if gpu.fp8_tflops else []) + (["nvfp4"] if gpu.fp4_tflops else [])
    kv = ["bf16"] + (["fp8"] if gpu.fp8_tflops else [])
    return [(w, k) for w in weights for k in kv]


def _variant(p: Plan, gpu_key: str, weights: str, kv: str) -> tuple[Plan, str | None]:
    """(the plan on another GPU and formats, why its cost is missing or None). Its own GPU keeps the plan's hardware."""
    data = p.model_dump(exclude_none=True)
    gpu = catalog.get_gpu(gpu_key)
    own_gpu = isinstance(p.hardware.gpu, str) and catalog.gpu_key(p.hardware.gpu) == gpu_key
    data["model"]["weights_dtype"], data["model"]["kv_dtype"] = weights, kv
    data["policy"].pop("tp", None)
    data.pop("contracts", None)  # the contract mix is the plan's own GPU's: another GPU has other reserved prices
    data["policy"].pop("compute_dtype", None)
    missing = None
    if not own_gpu:
        data["hardware"]["gpu"] = gpu_key
        data["hardware"].pop("usd_per_gpu_hour", None)
        data["hardware"]["gpus_per_node"] = gpu.nodes or p.hardware.gpus_per_node
        costs = data.get("costs", {})
        if costs.get("mode") == "buy":
            for field in ("capex_usd_per_node", "kw_per_gpu"):
                costs.pop(field, None)  # the plan's figures are for its own GPU
            own = catalog.ownership_for(gpu_key)
            lacking = [f for f in ("capex_usd_per_node", "kw_per_gpu") if f not in own]
            if lacking:
                missing = f"no catalog {' or '.join(lacking)} for {gpu.name}"
                data["costs"] = {"mode": "rent_per_gpu"}
                data["hardware"]["usd_per_gpu_hour"] = 1.0  # solved for the fleet only; the cost is reported missing
        elif gpu.usd_per_gpu_hour is None:
            missing = f"no catalog price for {gpu.name}"
            data["hardware"]["usd_per_gpu_hour"] = 1.0
    return Plan.model_validate(data), missing


def option(p: Plan, gpu_key: str, weights: str, kv: str, is_plan: bool = False, verify: bool = False) -> GPUOption:
    """One GPU in one format, solved as ``xlplan plan`` solves it: the closed form, or the fleet verified in simulation.

    Parameters
    ----------
    p : Plan
        The plan to re-solve.
    gpu_key : str
        Catalog key of the GPU to try ('' for the plan's own inline GPU, with ``is_plan``).
    weights : str
        Weight format, e.g. 'bf16', 'fp8', 'nvfp4'.
    kv : str
        Cache format, e.g. 'bf16', 'fp8'.
    is_plan : bool
        This is the plan's own option: solved exactly as planned (its GPU, formats, price and purchasing unit).
    verify : bool
        Simulate the option's closed-form fleet at peak (:func:`xlplan.decide.answer.decide`, where the default
        simulation is affordable); the Answer then follows the simulation, as ``xlplan plan``'s does.

    Returns
    -------
    GPUOption
        The Answer's fleet and its cost at the closed form's tensor-parallel degree, with its source; the cost left
        out where the catalog has no price; or ``feasible=False`` with the planner's reason.
    """
    from xlplan.decide import answer

    gpu = catalog.get_gpu(gpu_key) if gpu_key else p.hardware.resolve()
    base = dict(gpu=gpu_key or gpu.name, gpu_name=gpu.name, weights_dtype=weights, kv_dtype=kv, is_plan=is_plan,
                payment_mode=p.costs.mode, **eligibility(gpu, p.model.weights_dtype, weights))
    try:
        q, missing = (p, None) if is_plan else _variant(p, gpu_key, weights, kv)
        s = resolve(q)
        d = answer.decide(s, q.promise.percentile, q.model.resolve().max_context_tokens,
                           q.policy.max_num_batched_tokens is not None, "auto" if verify else False)
    except scenario.PlanningError as e:
        return annotated(GPUOption(**base, feasible=False, reason=str(e), price_note=getattr(gpu, "price_note", "") or ""), p, gpu)
    a, cf = d.answer, d.closed_form
    past = plausibility.results(a.purchased, a.monthly_usd if missing is None else 0.0, p.accept_implausible)
    if past:  # as `plan` refuses it: an option past the bounds on a fleet or a bill is no one's purchase
        return annotated(GPUOption(**base, feasible=False, reason="; ".join(b.finding for b in past),
                                   price_note=getattr(gpu, "price_note", "") or ""), p, gpu)
    source = a.source if verify and d.skipped is None else ("closed form, not simulated" if verify else "closed form")
    priced = missing is None
    owned = p.costs.mode == "buy"  # an owned fleet bills every purchased GPU, priced or not
    note = (_price_note(q, gpu) if priced else missing) if gpu_key else "the plan's own GPU and price"
    return annotated(GPUOption(
        **base, feasible=True, tp=a.tp, load=a.load, with_redundancy=a.with_redundancy,
        purchased=a.purchased, gpus_per_node=s.gpus_per_node, binding=cf.binding, source=source,
        order=fleet.order_words("buy", a.with_redundancy, a.purchased, s.gpus_per_node) if owned else a.order,
        closed_form_load=cf.load, runbook_load=int(d.sol.paths.load),
        billed_gpus=a.purchased if owned else a.billed_gpus, billed_purchased_always=owned,
        fixed_usd_per_month=s.fixed_usd_per_month if priced else None,
        usd_per_gpu_hour=s.usd_per_gpu_hour if priced else None, monthly_usd=a.monthly_usd if priced else None,
        usd_per_mtok=a.usd_per_mtok if priced else None, reason=missing or "", price_note=note,
    ), p, gpu)


def _tried_formats(gpu, weights: str) -> list[tuple[str, str]]:
    """(weights, cache) pairs to rank a GPU at: the plan's weights format, each cache format the GPU supports. [text]

    Parameters
    ----------
    gpu : GPUSpec
        The GPU; its FP8 and FP4 peak rates say which tensor cores it has.
    weights : str
        The plan's weights format.

    Returns
    -------
    list of tuple of str
        The pairs of :func:`xlplan.decide.compare.formats` with these weights; a format compare never varies (int4, fp16, ...)
        on every cache format the GPU supports, as the plan itself runs it; none where its tensor cores lack the format.
    """
    pairs = formats(gpu)
    if weights in WEIGHT_FORMATS:
        return [(w, k) for w, k in pairs if w == weights]
    return [(weights, k) for k in dict.fromkeys(k for _, k in pairs)]


def _pairs(gpu, weights: str, include_all: bool) -> list[tuple[str, str]]:
    """The (weights, cache) pairs to solve a GPU at: the ranked ones (:func:`_tried_formats`, whatever the plan's
    format), then with ``include_all`` every other pair its tensor cores support. [text]"""
    pairs = _tried_formats(gpu, weights)
    return list(dict.fromkeys(pairs + formats(gpu))) if include_all else pairs


VERIFY_TOP = 5
"""`compare` verifies at least this many of its cheapest options in simulation (and the plan's own). [options]"""


def _price_note(q: Plan, gpu) -> str:
    """Where an option's price comes from, with its date. [text]"""
    if q.costs.mode == "buy":
        own = q.ownership()
        return (f"owned: ${own['capex_usd_per_node']['value']:,.0f} per node of {q.hardware.gpus_per_node} "
                f"({own['capex_usd_per_node']['source']}), {own['kw_per_gpu']['value']:g} kW per GPU")
    if q.hardware.usd_per_gpu_hour is not None:
        catalog_price = f"${gpu.usd_per_gpu_hour:.2f}/h, {gpu.price_note}" if gpu.usd_per_gpu_hour else "no catalog price"
        return f"the plan's price ${q.hardware.usd_per_gpu_hour:.2f}/h (catalog: {catalog_price})"
    return f"${gpu.usd_per_gpu_hour:.2f}/h: {gpu.price_note}"


def compare(p: Plan, gpus: list[str] | None = None, verify_top: int = VERIFY_TOP,
            include_all: bool = False) -> list[GPUOption]:
    """The plan on the catalog's datacenter GPUs (or those named) at the plan's weights format, ranked by $/M tokens.

    Every option is solved as ``xlplan plan`` solves it (:func:`option`): the closed form (the largest of the four
    paths at the deployed step budget); then the ``verify_top`` cheapest ranked options, the plan's own and the
    cheapest other weights format on the plan's GPU are simulated at peak and take the verified fleet, and the list
    is ranked again until its first ``verify_top`` priced ranked options are all verified (or past what the default
    simulation takes on, which each option's ``source`` says). The plan's own option (its GPU, formats, price and
    purchasing unit, exactly as planned) is marked ``is_plan`` and always present. Options without a cost for the
    plan's way of paying (``costs.mode``) rank after those with one, infeasible ones last.

    Parameters
    ----------
    p : Plan
        The plan to re-solve.
    gpus : list of str, optional
        GPU names, ids or aliases to try, each at the plan's weights format, eligible or not (an ineligible one is
        marked, not ranked); None tries every catalog GPU that may be deployed in a datacenter.
    verify_top : int
        How many of the cheapest options to verify in simulation; 0 ranks the closed form alone. [options]
    include_all : bool
        Also every ineligible GPU and every other weights format each GPU supports, each marked (``ranked`` False),
        all ranked by :func:`rank` together.

    Returns
    -------
    list of GPUOption
        Every option, ranked by :func:`rank`: with ``include_all`` False, the datacenter parts at the plan's weights
        format (any cache format the GPU supports) and the plan's own.

    Raises
    ------
    catalog.UnknownNameError
        For a GPU name the catalog does not have.
    """
    keys = [catalog.gpu_key(g) for g in gpus] if gpus else list(catalog.gpu_names())
    keys = list(dict.fromkeys(keys))
    own_key = catalog.gpu_key(p.hardware.gpu) if isinstance(p.hardware.gpu, str) else ""
    calls = {0: (p, own_key, p.model.weights_dtype, p.model.kv_dtype, True)}
    for key in keys:
        gpu = catalog.get_gpu(key)
        if include_all or gpus or gpu.datacenter:
            for w, k in _pairs(gpu, p.model.weights_dtype, include_all):
                if not (key == own_key and (w, k) == (p.model.weights_dtype, p.model.kv_dtype)):
                    calls[len(calls)] = (p, key, w, k, False)
    solved = {i: option(*c) for i, c in calls.items()}
    tried: set[int] = set()
    while verify_top > 0:
        index = {id(o): i for i, o in solved.items()}
        ranked = [index[id(o)] for o in rank(list(solved.values())) if o.feasible and o.usd_per_mtok is not None]
        fmt = [i for i in ranked if solved[i].format_change and solved[i].gpu == solved[0].gpu][:1]
        top = [i for i in ranked if solved[i].ranked][:verify_top] + [0] + fmt
        todo = [i for i in top if i not in tried and solved[i].feasible]
        if not todo:
            break
        for i in todo:
            tried.add(i)
            solved[i] = option(*calls[i], verify=True)
    return rank(list(solved.values()))


def rank(options: list[GPUOption]) -> list[GPUOption]:
    """By $/M tokens, then monthly cost, then GPUs purchased; unpriced after priced, infeasible last.

    Parameters
    ----------
    options : list of GPUOption
        The solved options.

    Returns
    -------
    list of GPUOption
        The same options, sorted (a stable sort: ties keep their order). Unpriced ones rank by GPUs purchased.
    """
    def key(o: GPUOption):
        if not o.feasible:
            return (2, 0.0, 0.0, 0)
        if o.usd_per_mtok is None:
            return (1, float(o.purchased or 0), 0.0, 0)
        return (0, o.usd_per_mtok, o.monthly_usd or 0.0, o.purchased or 0)

    return sorted(options, key=key)


def _label(o: GPUOption) -> str:
    w = o.weights_dtype if o.weights_dtype == o.kv_dtype else f"{o.weights_dtype} weights, {o.kv_dtype} cache"
    return f"{o.gpu_name} in {w}"


def _binds(label: str) -> str:
    """What binds, as a clause: 'memory binds there', 'latency and queueing bind there', or the paths that tie. [text]"""
    verb = "bind" if " and " in label else "binds"
    return {"both": "two paths tie there", "all": "all three paths tie there"}.get(label, f"{label} {verb} there")

