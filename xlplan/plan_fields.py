"""What every section of a plan file is built from: a strict, frozen section, and fractions that say how to write one.

The sections themselves, and their public names, are :mod:`xlplan.plan`'s.
"""

from __future__ import annotations

from typing import Annotated

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
