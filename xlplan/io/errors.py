"""Turning validation failures into one clear line per problem."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError


class InputError(ValueError):
    """Bad input from a user's file: one message per problem, each naming where it is."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        super().__init__(f"{source}: " + "; ".join(problems))


_EXPECTED = {
    "missing": "expected this field",
    "extra_forbidden": "unknown field; check the spelling against `xlplan schema`",
}


def _path(loc: tuple[Any, ...]) -> str:
    parts = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
            continue
        s = str(part)
        if s in ("str", "GPUOverride") or s.startswith(("function-", "literal[", "union[", "is-instance[")):
            continue
        parts.append(("." if parts else "") + s)
    return "".join(parts) or "(top level)"


def _value(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in list(v.items())[:6]) + (", …" if len(v) > 6 else "") + "}"
    return repr(v)


_HINT = re.compile(r" \(write [^()]*, not [^()]*\)")
PERCENT_MIN = 2.0
"""A fraction written at or above this, up to 100, reads as a percentage (40 for 0.40); below it (1.2) as a figure
over 1, which gets no "write 0.01" hint. [—]"""


def percent_hint(value: Any) -> str:
    """' (write 0.40, not 40)' where a fraction was written as a percentage; '' otherwise. [text]

    Examples
    --------
    >>> percent_hint(40)
    ' (write 0.40, not 40)'
    >>> percent_hint(1.2)
    ''
    >>> percent_hint(12.5)
    ' (write 0.125, not 12.5)'
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    if not PERCENT_MIN <= value <= 100:
        return ""
    fraction = value / 100
    shown = f"{fraction:.2f}" if round(fraction, 2) == fraction else f"{fraction:g}"
    return f" (write {shown}, not {value:g})"


def _rehint(msg: str, value: Any) -> str:
    """The message with its percentage hint given only where the value reads as a percentage."""
    return _HINT.sub(lambda m: percent_hint(value), msg, count=1)


def describe_validation_error(e: ValidationError) -> list[str]:
    """One line per problem: ``field.path: got VALUE; expected WHAT``."""
    out = []
    for err in e.errors(include_url=False):
        path = _path(err["loc"])
        kind = err["type"]
        if kind == "missing":
            out.append(f"{path}: missing; {_EXPECTED['missing']}")
            continue
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        if msg.startswith("Input should be "):
            rest = msg[len("Input should be "):]
            msg = "expected " + (rest if rest.startswith(("a ", "an ", "'", "True", "False")) else "a value " + rest)
        elif kind == "extra_forbidden":
            msg = _EXPECTED["extra_forbidden"]
        msg = _rehint(msg, err.get("input"))
        out.append(f"{path}: got {_value(err.get('input'))}; {msg}")
    return out
