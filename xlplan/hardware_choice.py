"""Which hardware a buyer can act on: datacenter parts at the plan's weights format, ranked by the plan's way of paying, with a change of weights format on a line of its own and every caveat named.

Notes
-----
The ranking (:func:`xlplan.compare.compare`) keeps the plan's weights format and lets the cache format vary over what
each GPU's tensor cores support: an fp8 KV cache is a serving setting (vLLM's ``kv_cache_dtype``), a weights format is
another checkpoint whose outputs differ. GeForce cards are left out: their driver licence forbids datacenter
deployment (``datacenter`` in ``xlplan/catalog/gpus.yaml``). Costs follow ``costs.mode``: the catalog's rental price
billed per GPU or per node, or the owned cost where the catalog has a node price and power; a missing one is said, and
ranks after every priced option.

References
----------
NVIDIA, License For Customer Use of NVIDIA GeForce Software, section 2.1.3 "No Datacenter Deployment"
(nvidia.com/drivers/geforce-license; in drivers released after 2017-11-30).
"""

from __future__ import annotations

from xlplan import catalog
from xlplan.decision_result import GPUOption, HardwareChoice
from xlplan.note_format import _count
from xlplan.plan import Plan

WEIGHT_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "mxfp4": 4, "nvfp4": 4, "fp4": 4}
"""Bits per weight (or cache value) of each format: fewer than the plan's is a quantisation. [bits]"""

PAYING = {"rent_per_gpu": "rented per GPU", "rent_per_node": "rented by the node", "buy": "bought (owned cost)"}
"""The plan's way of paying, in words. [text]"""


def eligibility(gpu, plan_weights: str, weights: str) -> dict:
    """An option's datacenter eligibility and format change, as GPUOption fields. [text]

    Parameters
    ----------
    gpu : GPUSpec
        The GPU; its ``datacenter`` flag and ``datacenter_source``.
    plan_weights : str
        The plan's weights format, e.g. 'bf16'.
    weights : str
        The option's weights format.

    Returns
    -------
    dict
        ``eligible`` [bool or None], ``eligibility_source`` [text], ``format_change`` [text: '' at the plan's format]
        and ``ranked`` [bool: eligible, or not stated, at the plan's weights format].
    """
    change = "" if weights == plan_weights else f"{weights} weights (a format change)"
    return dict(eligible=gpu.datacenter, eligibility_source=gpu.datacenter_source or "not stated: a GPU given in the plan",
                format_change=change, ranked=gpu.datacenter is not False and not change)


def tried_formats(gpu, weights: str) -> list[tuple[str, str]]:
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
        The pairs of :func:`xlplan.compare.formats` with these weights; a format compare never varies (int4, fp16, ...)
        on every cache format the GPU supports, as the plan itself runs it; none where its tensor cores lack the format.
    """
    from xlplan.compare import WEIGHT_FORMATS, formats

    pairs = formats(gpu)
    if weights in WEIGHT_FORMATS:
        return [(w, k) for w, k in pairs if w == weights]
    return [(weights, k) for k in dict.fromkeys(k for _, k in pairs)]


def _price_date(o: GPUOption, p: Plan, gpu) -> str:
    """The date of the price an option's cost uses: the catalog's note or node quote, 'undated', or '' (missing, or the plan's own)."""
    own_figure = p.costs.capex_usd_per_node if p.costs.mode == "buy" else p.hardware.usd_per_gpu_hour
    if o.usd_per_mtok is None or (o.is_plan and own_figure is not None):
        return ""
    if p.costs.mode == "buy":
        quote = catalog.ownership_for(o.gpu).get("capex_usd_per_node", {}) if o.gpu in catalog.gpu_names() else {}
        return str(quote.get("date", "undated"))
    return catalog.price_date(gpu.price_note) or "undated"


def _caveats(o: GPUOption, p: Plan) -> list[str]:
    """What an option's cost does not settle: its licence, its price's source and date, its formats' quality. [text]"""
    out = [{True: f"licence: may be deployed in a datacenter ({o.eligibility_source.split(';')[0]})",
            False: "licence: not for datacenter use (GeForce licence, 'No Datacenter Deployment')",
            None: "licence: not stated for a GPU given in the plan"}[o.eligible]]
    if o.feasible and o.usd_per_mtok is None:
        out.append(f"price missing for a fleet {PAYING[p.costs.mode]}: {o.reason}; ranked after every priced option")
    elif o.feasible:
        out.append(f"price ({PAYING[p.costs.mode]}): {o.price_note}" + (f"; dated {o.price_date}" if o.price_date else ""))
    if WEIGHT_BITS.get(o.weights_dtype, 16) < WEIGHT_BITS.get(p.model.weights_dtype, 16):
        out.append(f"quality: {o.weights_dtype} weights are quantised from the plan's {p.model.weights_dtype}; they change the "
                   "model's outputs, so evaluate quality before counting the saving")
    if WEIGHT_BITS.get(o.kv_dtype, 16) < WEIGHT_BITS.get(p.model.kv_dtype, 16):
        out.append(f"cache: an {o.kv_dtype} KV cache where the plan has {p.model.kv_dtype} (a serving setting) can shift outputs "
                   "slightly; check quality")
    return out


def annotated(o: GPUOption, p: Plan, gpu) -> GPUOption:
    """The option with its price date and caveats filled in. [GPUOption]

    Parameters
    ----------
    o : GPUOption
        A solved option.
    p : Plan
        The plan it was solved from: its way of paying and its own formats.
    gpu : GPUSpec
        The option's GPU (its price note).

    Returns
    -------
    GPUOption
        The same option with ``price_date`` and ``caveats``.
    """
    o = o.model_copy(update={"price_date": _price_date(o, p, gpu)})
    return o.model_copy(update={"caveats": _caveats(o, p)})


def format_options(p: Plan, verify: bool = True) -> list[GPUOption]:
    """The plan's own GPU in every other weights format its tensor cores support, cheapest first. [GPUOption]

    Parameters
    ----------
    p : Plan
        The plan; its GPU must be a catalog one (a GPU given inline has no formats to try: empty list).
    verify : bool
        Simulate the cheapest priced one at peak, as ``xlplan plan`` verifies its Answer.

    Returns
    -------
    list of GPUOption
        Each marked with its ``format_change``, ranked by :func:`xlplan.compare.rank`.
    """
    from xlplan import compare

    if not isinstance(p.hardware.gpu, str):
        return []
    key = catalog.gpu_key(p.hardware.gpu)
    pairs = [(w, k) for w, k in compare.formats(catalog.get_gpu(key)) if w != p.model.weights_dtype]
    out = compare.rank([compare.option(p, key, w, k) for w, k in pairs])
    best = next((o for o in out if o.feasible and o.usd_per_mtok is not None), None)
    if verify and best is not None:
        out = compare.rank([compare.option(p, key, o.weights_dtype, o.kv_dtype, verify=True) if o is best else o for o in out])
    return out


def choose(p: Plan, gpus: list[str] | None = None, verify_top: int = 5, include_all: bool = False) -> HardwareChoice:
    """Which hardware: the ranking, the plan's GPU in other weight formats, and the recommendation (``xlplan compare``).

    Parameters
    ----------
    p : Plan
        The plan to re-solve.
    gpus : list of str, optional
        GPU names to try (:func:`xlplan.compare.compare`); None: every datacenter GPU of the catalog.
    verify_top : int
        How many of the cheapest options to verify in simulation; 0 ranks the closed form alone. [options]
    include_all : bool
        Also rank ineligible GPUs and other weight formats, each marked, after the ranked ones.

    Returns
    -------
    HardwareChoice
        The options (ranked ones first), the format options and the recommendation's lines.
    """
    from xlplan import compare

    options = compare.compare(p, gpus, verify_top, include_all)
    options = [o for o in options if o.ranked or o.is_plan] + [o for o in options if not (o.ranked or o.is_plan)]
    mine = next(o for o in options if o.is_plan)
    fmt = ([o for o in options if o.format_change and o.gpu == mine.gpu] if include_all
           else format_options(p, verify_top > 0))
    return HardwareChoice(options=options, format_options=fmt, payment_mode=p.costs.mode, include_all=include_all,
                          recommendation=recommendation_lines(options, fmt, p.model.weights_dtype))


def _saving(o: GPUOption, mine: GPUOption) -> str:
    """'N% cheaper per token than the plan's' (or dearer), or '' where either has no price. [text]"""
    if o.usd_per_mtok is None or not mine.usd_per_mtok or o is mine:
        return ""
    d = 1.0 - o.usd_per_mtok / mine.usd_per_mtok
    if abs(d) < 0.005:
        return f"the same cost per token as the plan's ${mine.usd_per_mtok:.3f}"
    return f"{abs(d):.0%} {'cheaper' if d >= 0 else 'dearer'} per token than the plan's ${mine.usd_per_mtok:.3f}"


def _gpu_line(options: list[GPUOption], mine: GPUOption, weights: str) -> str:
    """The first line: the cheapest datacenter GPU at the plan's weights format. [text]"""
    from xlplan.compare import _binds, _label

    ranked = [o for o in options if o.ranked and o.feasible]
    priced = [o for o in ranked if o.usd_per_mtok is not None]
    head = f"Cheapest datacenter GPU at the plan's {weights} weights"
    if not priced:
        return (f"{head}: none has a price for a fleet {PAYING.get(mine.payment_mode, mine.payment_mode)} "
                f"({_count(len(ranked), 'feasible option')}, every one price missing).")
    best = priced[0]
    fleet = f"{best.order or _count(best.purchased, 'GPU')}, {'verified in simulation' if best.source == 'verified' else best.source}"
    own = " (the plan's own)" if best.is_plan else ""
    saving = _saving(best, mine)
    tail = f"; {saving}" if saving else ""
    if not mine.feasible:
        tail = f"; the plan's {_label(mine)} cannot be met ({mine.reason})"
    elif mine.eligible is False:
        tail += f"; the plan's {mine.gpu_name} is not for datacenter use (GeForce licence)"
    return f"{head}: {_label(best)}{own} at ${best.usd_per_mtok:.3f}/M tokens ({fleet}; {_binds(best.binding)}){tail}."


def _format_line(fmt: list[GPUOption], mine: GPUOption) -> str:
    """The format line: changing the weights format on the plan's GPU, apart from any change of GPU. [text]"""
    from xlplan.compare import _label

    priced = [o for o in fmt if o.feasible and o.usd_per_mtok is not None]
    if not fmt:
        return f"Changing the weights format on the plan's {mine.gpu_name}: no other format its tensor cores run natively."
    if not priced:
        why = next((o.reason for o in fmt if o.reason), "no price")
        return f"Changing the weights format on the plan's {mine.gpu_name}: no priced option ({why})."
    o = priced[0]
    saving = _saving(o, mine)
    return (f"Changing the weights format to {o.weights_dtype} on the plan's {mine.gpu_name}: {_label(o)} at "
            f"${o.usd_per_mtok:.3f}/M tokens ({o.order or _count(o.purchased, 'GPU')}"
            f"{', verified in simulation' if o.source == 'verified' else ', ' + o.source}){'; ' + saving if saving else ''}; "
            "a different checkpoint whose outputs differ: evaluate quality first.")


def recommendation_lines(options: list[GPUOption], fmt: list[GPUOption], weights: str) -> list[str]:
    """The recommendation: the GPU line, the format line, the missing prices and the caveats, one line each. [text]

    Parameters
    ----------
    options : list of GPUOption
        The ranking (:func:`choose`), the plan's own among them.
    fmt : list of GPUOption
        The plan's GPU in other weight formats (:func:`format_options`).
    weights : str
        The plan's weights format.

    Returns
    -------
    list of str
        The cheapest datacenter GPU at the plan's weights format; changing the weights format on the plan's GPU; how
        many ranked options have no price for the plan's way of paying (where any); the caveats of the first line's
        option.
    """
    mine = next(o for o in options if o.is_plan)
    lines = [_gpu_line(options, mine, weights), _format_line(fmt, mine)]
    ranked = [o for o in options if o.ranked and o.feasible]
    missing = [o for o in ranked if o.usd_per_mtok is None]
    if missing:
        names = list(dict.fromkeys(o.gpu_name for o in missing))
        lines.append(f"Price missing for a fleet {PAYING.get(mine.payment_mode, mine.payment_mode)} on "
                     f"{_count(len(names), 'GPU')} ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}): shown as price missing, ranked after every priced option.")
    best = next((o for o in ranked if o.usd_per_mtok is not None), None)
    if best is not None:
        lines.append(f"Caveats of the first line: {'; '.join(best.caveats)}.")
    return lines
