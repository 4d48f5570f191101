"""Whether a hardware option is one a buyer can act on: datacenter eligibility, a change of weights format, and the caveats of its cost (licence, the price's source and date, quantised weights' quality).

References
----------
NVIDIA, License For Customer Use of NVIDIA GeForce Software, section 2.1.3 "No Datacenter Deployment"
(nvidia.com/drivers/geforce-license; in drivers released after 2017-11-30).
"""

from __future__ import annotations

from xlplan import catalog
from xlplan.schema.decisions import GPUOption
from xlplan.schema.plan import Plan

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
