"""What every section of a plan file is built from: a strict, frozen section, and fractions that say how to write one.

The sections themselves, and their public names, are :mod:`xlplan.schema.plan`'s.
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
    if not isinstance(data, dict):
        return []
    costs = data.get("costs") if isinstance(data.get("costs"), dict) else {}
    hardware = data.get("hardware") if isinstance(data.get("hardware"), dict) else {}
    billing = hardware.get("billing")
    if billing not in ("rented", "purchased"):  # none, or a value the schema refuses at its own path
        return ["costs.mode: rent is read as rent_per_gpu (renting per GPU, as before)"] if costs.get("mode") == "rent" else []
    mode = _migrated_mode(billing, costs.get("mode"))
    if mode == "buy":
        return [f"hardware.billing: {billing} is left out: costs.mode: buy bills every GPU bought, as it did"]
    return [f"hardware.billing: {billing} is read as costs.mode: {mode} (one setting says how the fleet is paid for)"]


def _migrated_mode(billing: Any, mode: Any) -> Any:
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
        'buy' where bought; renting, 'rent_per_node' where the bill counted whole units, else 'rent_per_gpu'.

    Raises
    ------
    ValueError
        Where the file states today's setting too and the two disagree (``billing: purchased`` beside ``mode:
        rent_per_gpu``): which one is meant is the user's to say.
    """
    if mode == "buy":
        return "buy"
    old = "rent_per_node" if billing == "purchased" else "rent_per_gpu"
    if mode in ("rent_per_gpu", "rent_per_node") and mode != old:
        raise ValueError(f"hardware.billing: got {billing!r} beside costs.mode: {mode}, which says otherwise; expected "
                         "costs.mode alone (hardware.billing is the older way to say it): remove hardware.billing")
    return old


def migrate_older_plan(data: Any) -> Any:
    """An older plan file's mapping in today's schema: ``hardware.billing`` folded into ``costs.mode``. [mapping]

    Parameters
    ----------
    data : Any
        The plan file as parsed.

    Returns
    -------
    Any
        The same mapping with ``hardware.billing`` removed and ``costs.mode`` set from it (:func:`_migrated_mode`);
        anything else unchanged.
    """
    hardware = data.get("hardware") if isinstance(data, dict) else None
    if not isinstance(hardware, dict) or hardware.get("billing") not in ("rented", "purchased"):
        return data  # a value other than the two is refused by the schema at hardware.billing
    hardware = {k: v for k, v in hardware.items() if k != "billing"}
    costs = data.get("costs") or {}
    if isinstance(costs, dict):  # anything else is refused by the schema at its own path
        costs = {**costs, "mode": _migrated_mode(data["hardware"]["billing"], costs.get("mode"))}
    return {**data, "hardware": hardware, "costs": costs}
