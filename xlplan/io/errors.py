"""Turning validation failures into one clear line per problem."""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import ValidationError


class InputError(ValueError):
    """Bad input from a user's file: one message per problem, each naming where it is; ``details`` are what backs a
    problem up (the rows counted, a few of them by line), printed under it and not counted as problems."""

    def __init__(self, source: str, problems: list[str], details: list[str] | tuple[str, ...] = ()):
        self.source, self.problems, self.details = source, problems, list(details)
        super().__init__(f"{source}: " + "; ".join([*problems, *self.details]))


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


_PATTERNS = {
    r"^\d{4}-(0[1-9]|1[0-2])$": "expected a month written YYYY-MM, e.g. 2027-01",
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$": "expected a day written YYYY-MM-DD, e.g. 2026-11-30",
}
"""Words for the text patterns plan fields use, instead of the regular expression."""

_OWN_PATH = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")


def unit_hint(path: str, value: Any) -> str:
    """A hint where a figure reads as written in another unit: watts for kW, a percentage for a fraction, ms for s
    ('(seconds, not milliseconds: 50 ms is 0.05)'); the plan file's refusals carry it, and the Excel functions whose
    arguments are that field by another name. '' where none applies. [text]"""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return ""
    if path == "costs.kw_per_gpu" and 20 < value <= 20_000:
        return f" (kilowatts, not watts: write {value / 1000:g}, not {value:g})"
    if path == "costs.pue" and 100 <= value <= 300:
        return f" (write {value / 100:g}, not {value:g})"
    if path == "costs.capex_usd_per_node" and 10 <= value < 1000:
        return f" (whole dollars: {value * 1000:,.0f} for {value:g} thousand)"
    if path == "costs.usd_per_kwh" and 2 < value <= 200:
        return f" (dollars, not cents: write {value / 100:g}, not {value:g})"
    if path == "growth.monthly":
        return percent_hint(value)
    if path == "promise.itl_s" and 2 < value <= 2000:
        return f" (seconds, not milliseconds: {value:g} ms is {value / 1000:g})"
    if path == "policy.step_overhead_s" and 1 <= value <= 1000:
        return f" (seconds, not milliseconds: {value:g} ms is {value / 1000:g})"
    if path == "costs.depreciation_years" and 15 < value <= 180:
        return f" (years, not months: {value:g} months is {value / 12:.3g} years)"
    if path in ("costs.cost_of_capital", "costs.residual_fraction", "contracts.no_promise_share") and 1 <= value <= 100:
        return percent_hint(value)
    if path == "costs.kw_per_gpu_typical" and 20 < value <= 20_000:
        return f" (kilowatts, not watts: write {value / 1000:g}, not {value:g})"
    if path == "promise.ttft_s" and 600 < value <= 600_000:
        return f" (seconds, not milliseconds: {value:g} ms is {value / 1000:g})"
    return ""


def _field_paths() -> dict[str, list[str]]:
    """Every field name of a plan file, at any depth, with the dotted paths it sits at. [names]"""
    from pydantic import BaseModel

    from xlplan.schema.plan import Plan

    paths: dict[str, list[str]] = {}
    seen: set[type] = set()

    def walk(model: type, prefix: str) -> None:
        if model in seen:
            return
        seen.add(model)
        for name, f in model.model_fields.items():
            paths.setdefault(name, []).append(prefix + name)
            for t in _types(f.annotation):
                if isinstance(t, type) and issubclass(t, BaseModel):
                    walk(t, f"{prefix}{name}.")

    walk(Plan, "")
    return paths


def _types(annotation: Any) -> list[Any]:
    import typing

    out = [annotation]
    for a in typing.get_args(annotation):
        out += _types(a)
    return out


def _did_you_mean(key: Any) -> str:
    """'; did you mean 'depreciation_years'?' for a misspelt field, else ''. [text]"""
    import difflib

    if not isinstance(key, str):
        return ""
    close = difflib.get_close_matches(key, sorted(_field_paths()), n=1, cutoff=0.8)
    return f"; did you mean {close[0]!r}?" if close else ""


def _misplaced(key: Any, section: tuple) -> str:
    """'policy.routing' where ``key`` is a field of another section than ``section``, else ''. [text]"""
    paths = _field_paths().get(key, []) if isinstance(key, str) else []
    prefix = "".join(f"{x}." for x in section)
    if not paths or any(p == prefix + key for p in paths):
        return ""
    return " or ".join(paths)


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
        lines = msg.split("\n")
        if kind == "value_error" and all(_OWN_PATH.match(line) for line in lines):
            # a check across fields names each problem at its own path: the line as it is, not the whole section
            out.extend(f"{path}.{line}" if path != "(top level)" and not line.startswith(path) else line for line in lines)
            continue
        if kind == "value_error" and path == "(top level)":
            out.append(f"{path}: {msg}")  # a check across sections: its message, not the whole plan pasted
            continue
        if kind == "string_pattern_mismatch" and (err.get("ctx") or {}).get("pattern") in _PATTERNS:
            out.append(f"{path}: got {_value(err.get('input'))}; {_PATTERNS[err['ctx']['pattern']]}")
            continue
        if kind in ("model_type", "model_attributes_type", "dict_type"):
            msg = "expected a section of fields (key: value lines under it)"
        elif msg.startswith("Input should be "):
            rest = msg[len("Input should be "):]
            msg = "expected " + (rest if rest.startswith(("a ", "an ", "'", "True", "False")) else "a value " + rest)
        elif kind == "extra_forbidden":
            elsewhere = _misplaced(err["loc"][-1] if err["loc"] else "", err["loc"][:-1])
            msg = (f"not a field of this section; it belongs at {elsewhere}" if elsewhere else
                   _EXPECTED["extra_forbidden"] + _did_you_mean(err["loc"][-1] if err["loc"] else ""))

        msg = _rehint(msg, err.get("input")) + unit_hint(path, err.get("input"))
        out.append(f"{path}: got {_value(err.get('input'))}; {msg}")
    return out
