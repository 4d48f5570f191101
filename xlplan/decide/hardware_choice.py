"""Which hardware a buyer can act on: datacenter parts at the plan's weights format, ranked by the plan's way of paying, with a change of weights format on a line of its own and every caveat named.

Notes
-----
The ranking (:func:`xlplan.decide.compare.compare`) keeps the plan's weights format and lets the cache format vary over what
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

from xlplan import catalog, words
from xlplan.decide import compare
from xlplan.decide.compare import _binds, _label
from xlplan.decide.eligibility import PAYING
from xlplan.schema.decisions import GPUOption, HardwareChoice
from xlplan.schema.plan import Plan


def _format_options(p: Plan, verify: bool = True) -> list[GPUOption]:
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
        Each marked with its ``format_change``, ranked by :func:`xlplan.decide.compare.rank`.
    """
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
        GPU names to try (:func:`xlplan.decide.compare.compare`); None: every datacenter GPU of the catalog.
    verify_top : int
        How many of the cheapest options to verify in simulation; 0 ranks the closed form alone. [options]
    include_all : bool
        Also rank ineligible GPUs and other weight formats, each marked, after the ranked ones.

    Returns
    -------
    HardwareChoice
        The options (ranked ones first), the format options and the recommendation's lines.
    """
    options = grouped(compare.compare(p, gpus, verify_top, include_all))
    mine = next(o for o in options if o.is_plan)
    fmt = ([o for o in options if o.format_change and o.gpu == mine.gpu] if include_all
           else _format_options(p, verify_top > 0))
    return HardwareChoice(options=options, format_options=fmt, payment_mode=p.costs.mode, include_all=include_all,
                          recommendation=recommendation_lines(options, fmt, p.model.weights_dtype))


def grouped(options: list[GPUOption]) -> list[GPUOption]:
    """The ranked options (and the plan's own) first, the rest after them, each group in its given order. [GPUOption]

    Parameters
    ----------
    options : list of GPUOption
        Options ranked by :func:`xlplan.decide.compare.rank`.

    Returns
    -------
    list of GPUOption
        Those with ``ranked`` (or ``is_plan``) first, then those outside the default ranking (ineligible, or another
        weights format), so that a rank counts the first group alone.
    """
    return [o for o in options if o.ranked or o.is_plan] + [o for o in options if not (o.ranked or o.is_plan)]


SAME_COST = 0.005
"""Two costs per token within half a percent are the same (as the recommendation prints them). [fraction]"""


def _saving(o: GPUOption, mine: GPUOption) -> str:
    """'N% cheaper per token than the plan's' (or dearer), or '' where either has no price. [text]"""
    if o.usd_per_mtok is None or not mine.usd_per_mtok or o is mine:
        return ""
    d = 1.0 - o.usd_per_mtok / mine.usd_per_mtok
    if abs(d) < SAME_COST:
        return f"the same cost per token as the plan's ${mine.usd_per_mtok:.3f}"
    return f"{abs(d):.0%} {'cheaper' if d >= 0 else 'dearer'} per token than the plan's ${mine.usd_per_mtok:.3f}"


def _gpu_line(options: list[GPUOption], mine: GPUOption, weights: str) -> str:
    """The first line: the cheapest datacenter GPU at the plan's weights format. [text]"""
    ranked = [o for o in options if o.ranked and o.feasible]
    priced = [o for o in ranked if o.usd_per_mtok is not None]
    head = f"Cheapest datacenter GPU at the plan's {weights} weights"
    if not ranked:  # no GPU can carry the plan: say why the first one cannot (each row says its own)
        why = next((o.reason for o in options if o.ranked and o.reason), "")
        return f"{head}: none can carry the plan" + (f" ({why.rstrip('.')}; each row says why)." if why else ".")
    if not priced:
        return (f"{head}: none has a price for a fleet {PAYING.get(mine.payment_mode, mine.payment_mode)} "
                f"({words.count(len(ranked), 'feasible option')}, every one price missing).")
    best = priced[0]
    fleet = f"{best.order or words.count(best.purchased, 'GPU')}, {'verified in simulation' if best.source == 'verified' else best.source}"
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
    priced = [o for o in fmt if o.feasible and o.usd_per_mtok is not None]
    if not fmt:
        return f"Changing the weights format on the plan's {mine.gpu_name}: no other format its tensor cores run natively."
    if not priced:
        why = next((o.reason for o in fmt if o.reason), "no price")
        return f"Changing the weights format on the plan's {mine.gpu_name}: no priced option ({why})."
    o = priced[0]
    saving = _saving(o, mine)
    if mine.usd_per_mtok and o.usd_per_mtok >= mine.usd_per_mtok * (1.0 - SAME_COST):  # no saving to weigh against quality
        return (f"Changing the weights format on the plan's {mine.gpu_name} saves nothing: {_label(o)} at "
                f"${o.usd_per_mtok:.3f}/M tokens, {saving}; keep {mine.weights_dtype} weights.")
    return (f"Changing the weights format to {o.weights_dtype} on the plan's {mine.gpu_name}: {_label(o)} at "
            f"${o.usd_per_mtok:.3f}/M tokens ({o.order or words.count(o.purchased, 'GPU')}"
            f"{', verified in simulation' if o.source == 'verified' else ', ' + o.source}){'; ' + saving if saving else ''}; "
            "a different checkpoint whose outputs differ: evaluate quality first.")


def recommendation_lines(options: list[GPUOption], fmt: list[GPUOption], weights: str) -> list[str]:
    """The recommendation: the GPU line, the format line, the missing prices and the caveats, one line each. [text]

    Parameters
    ----------
    options : list of GPUOption
        The ranking (:func:`choose`), the plan's own among them.
    fmt : list of GPUOption
        The plan's GPU in other weight formats (:func:`_format_options`).
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
                     f"{words.count(len(names), 'GPU')} ({', '.join(names[:4])}{', ...' if len(names) > 4 else ''}): shown as price missing, ranked after every priced option.")
    best = next((o for o in ranked if o.usd_per_mtok is not None), None)
    if best is not None:
        lines.append(f"Caveats of the first line: {'; '.join(best.caveats)}.")
    return lines
