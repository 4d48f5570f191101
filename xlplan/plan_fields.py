"""What every section of a plan file is built from: a strict, frozen section, and fractions that say how to write one.

The sections themselves, and their public names, are :mod:`xlplan.plan`'s.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict


def _fraction(v: float) -> float:
    """A fraction in (0, 1], or an error that says how to write a percentage. [1]"""
    if not 0 < v <= 1:
        hint = f" (write {v / 100:.2f}, not {v:g})" if 1 < v <= 100 else ""
        raise ValueError(f"expected a fraction between 0 and 1{hint}")
    return v


def _fraction_below_one(v: float) -> float:
    """A fraction in [0, 1), or an error that says how to write a percentage. [1]"""
    if not 0 <= v < 1:
        hint = f" (write {v / 100:.2f}, not {v:g})" if 1 <= v <= 100 else ""
        raise ValueError(f"expected a fraction from 0 up to (not including) 1{hint}")
    return v


Fraction = Annotated[float, AfterValidator(_fraction)]
FractionBelowOne = Annotated[float, AfterValidator(_fraction_below_one)]


class _Section(BaseModel):
    """A section of a plan file: unknown keys refused, frozen once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


PaymentMode = Literal["rent_per_gpu", "rent_per_node", "buy"]
PAYMENT_MODES: tuple[str, ...] = get_args(PaymentMode)
"""How a fleet is paid for (``costs.mode``), in the plan file's order: the one list. [text]"""


def older_plan_notes(data: Any) -> list[str]:
    """What reading an older plan file changes, one line each: the settings a newer one says another way. [text]

    Parameters
    ----------
    data : Any
        The plan file as parsed (a mapping; anything else has nothing to change).

    Returns
    -------
    list of str
        E.g. "hardware.billing: purchased is read as costs.mode: rent_per_node". Empty for a current file.
    """
    if not isinstance(data, dict) or not isinstance(data.get("hardware"), dict) or "billing" not in data["hardware"]:
        return []
    billing = data["hardware"]["billing"]
    costs = data.get("costs") if isinstance(data.get("costs"), dict) else {}
    mode = migrated_mode(billing, costs.get("mode"))
    return [f"hardware.billing: {billing} is read as costs.mode: {mode} (one setting says how the fleet is paid for)"]


def migrated_mode(billing: Any, mode: Any) -> Any:
    """``costs.mode`` for an older file's ``hardware.billing`` beside its ``costs.mode`` ('rent', 'buy' or none). [text]

    Parameters
    ----------
    billing : Any
        ``hardware.billing`` as written: 'rented' (the fleet with redundancy) or 'purchased' (whole purchasing units).
    mode : Any
        ``costs.mode`` as written, None where left out.

    Returns
    -------
    Any
        'buy' where bought; renting, 'rent_per_node' where the bill counted whole units, else 'rent_per_gpu'; any
        other value passed on for the schema to refuse by name.
    """
    if mode == "buy":
        return "buy"
    if mode not in (None, "rent", "rent_per_gpu", "rent_per_node"):
        return mode
    if billing == "purchased":
        return "rent_per_node"
    if billing == "rented":
        return "rent_per_gpu" if mode in (None, "rent") else mode
    return billing


def migrate_older_plan(data: Any) -> Any:
    """An older plan file's mapping in today's schema: ``hardware.billing`` folded into ``costs.mode``. [mapping]

    Parameters
    ----------
    data : Any
        The plan file as parsed.

    Returns
    -------
    Any
        The same mapping with ``hardware.billing`` removed and ``costs.mode`` set from it (:func:`migrated_mode`);
        anything else unchanged.
    """
    if not older_plan_notes(data):
        return data
    hardware = {k: v for k, v in data["hardware"].items() if k != "billing"}
    costs = data.get("costs") or {}
    if isinstance(costs, dict):  # anything else is refused by the schema at its own path
        costs = {**costs, "mode": migrated_mode(data["hardware"]["billing"], costs.get("mode"))}
    return {**data, "hardware": hardware, "costs": costs}
