"""Reading one Excel cell as an argument: a number, a whole number, a word from a list, each checked.

Every reader takes the parameter's name, so a bad cell says in one line which argument, what it held and what was
expected (:class:`UDFError`); an Excel error in a cell (#DIV/0!) is named as such, never read as a blank.
"""

from __future__ import annotations

import datetime as _dt
import math

from xlwings import XlwingsError

from xlplan.io.errors import unit_hint
from xlplan.schema import plausibility
from xlplan.serving.engines import PROFILED

EXCEL_ERRORS = frozenset({"#DIV/0!", "#N/A", "#NAME?", "#NULL!", "#NUM!", "#REF!", "#VALUE!", "#SPILL!", "#CALC!",
                          "#GETTING_DATA", "#FIELD!", "#BLOCKED!", "#CONNECT!", "#BUSY!", "#UNKNOWN!"})
"""Excel's error values as xlwings hands them over with ``err_to_str`` (classic and Office.js alike)."""


class UDFError(XlwingsError, ValueError):
    """A bad argument or an impossible plan, said in one line: the function, the argument, what was found and expected.

    Derived from :class:`xlwings.XlwingsError` so xlwings Server answers HTTP 400 with this message (a plain
    exception is a 500 that the client retries three times and shows as "An error occurred."), and from
    :class:`ValueError` for Python callers.
    """


def bad(param: str, value, expected: str) -> UDFError:
    """The one-line error for a cell that does not hold what ``param`` expects (an empty cell said as such)."""
    if blank(value):
        return UDFError(f"{param}: the cell is empty; expected {expected}")
    shown = f"{value:g}" if isinstance(value, float) else repr(value)
    return UDFError(f"{param}: got {shown}; expected {expected}")


def excel_error(value) -> str | None:
    """The Excel error a cell holds ('#DIV/0!'), whether xlwings passed it as text or as an Office.js error object."""
    if isinstance(value, dict) and value.get("type") == "Error":
        return str(value.get("basicValue") or value.get("errorType") or "#VALUE!")
    if isinstance(value, str) and value.strip().upper() in EXCEL_ERRORS:
        return value.strip().upper()
    return None


def held_error(param: str, value) -> None:
    """An Excel error in the cell is named as the argument's problem."""
    err = excel_error(value)
    if err is not None:
        raise UDFError(f"{param}: the cell holds {err}; expected a value (fix the cell it comes from)")


def blank(value) -> bool:
    """An empty cell: nothing, or only spaces."""
    return value is None or (isinstance(value, str) and not value.strip())


ARG_FIELDS = {
    "arrival_rate_rps": "forecast.peak_rps", "itl_s": "promise.itl_s",
    **{f"{w}_{q}": f"forecast.{w}_tokens.{q}" for w in ("prompt", "output") for q in ("p50", "p95", "p99")},
    "mfu": "policy.mfu", "prefill_mfu": "policy.prefill_mfu", "decode_mfu": "policy.decode_mfu",
    "bandwidth_efficiency": "policy.bandwidth_efficiency", "memory_utilisation": "policy.memory_utilisation",
    "overhead_gib": "policy.overhead_gib", "step_overhead_s": "policy.step_overhead_s",
    "usd_per_gpu_hour": "hardware.usd_per_gpu_hour",
}
"""Arguments that are a plan field by another name: held to that field's plausible range (xlplan.schema.plausibility), so a
cell answers a unit slip with the line the plan file gets ('itl_s: got 50; … 50 ms is 0.05')."""


def _plausible(param: str, value: float) -> None:
    field = ARG_FIELDS.get(param)
    found = plausibility.finding(field, value) if field else None
    if found:
        raise UDFError(param + found[len(field):])


def number(param: str, value, unit: str, *, above=None, at_least=None, at_most=None, optional=False):
    """A number from a cell: floats and ints, numbers stored as text, date serials; bounds and finiteness checked, and
    an argument that is a plan field by another name (:data:`ARG_FIELDS`) held to that field's plausible range."""
    held_error(param, value)
    if blank(value):
        if optional:
            return None
        raise bad(param, value, f"a number [{unit}]")
    if isinstance(value, _dt.datetime | _dt.date):  # classic xlwings passes a date cell as a datetime; Office.js as its serial
        from xlwings.utils import datetime_to_xlserial

        value = datetime_to_xlserial(value if isinstance(value, _dt.datetime) else _dt.datetime(value.year, value.month, value.day))
    if isinstance(value, str):  # a number stored as text: Excel's own arithmetic takes it, so do we
        try:
            value = float(value.strip().replace(",", ""))
        except ValueError:
            raise bad(param, value, f"a number [{unit}]") from None
    if isinstance(value, bool) or not isinstance(value, int | float) and type(value).__name__ not in ("float64", "int64"):
        raise bad(param, value, f"a number [{unit}]")
    value = float(value)
    if not math.isfinite(value):
        raise bad(param, value, f"a finite number [{unit}]")
    if above is not None and not value > above:
        raise bad(param, value, f"a number above {above:g} [{unit}]")
    if at_least is not None and not value >= at_least:
        raise bad(param, value, f"a number of at least {at_least:g} [{unit}]")
    if at_most is not None and not value <= at_most:
        hint = " (0.40, not 40)" if unit == "fraction" else unit_hint(ARG_FIELDS.get(param, ""), value)
        raise bad(param, value, f"a number of at most {at_most:g} [{unit}]{hint}")
    _plausible(param, value)  # after the hard bounds, as the plan file's schema comes before its plausible ranges
    return value


def whole(param: str, value, unit: str, *, at_least: int = 1) -> int:
    """A whole number from a cell; 3.0 from Excel is 3."""
    x = number(param, value, unit, at_least=at_least)
    if not x.is_integer():
        raise bad(param, value, f"a whole number [{unit}]")
    return int(x)


def text(param: str, value, expected: str) -> str:
    """Text from a cell, stripped; blank or not text is an error."""
    held_error(param, value)
    if not isinstance(value, str) or not value.strip():
        raise bad(param, value, expected)
    return value.strip()


def choice(param: str, value, allowed: tuple[str, ...]) -> str:
    """One of ``allowed`` words, case and spaces forgiven; blank is an error naming the choices."""
    word = text(param, value, f"one of {', '.join(allowed)} [text]").strip().lower()
    if word not in allowed:
        raise bad(param, value, f"one of {', '.join(allowed)} [text]")
    return word


def dtype(param: str, value, allowed: tuple[str, ...]) -> str:
    """A precision name, checked against the allowed list (a typo lists them)."""
    word = text(param, value, f"one of {', '.join(allowed)} [dtype]").lower()
    if word not in allowed:
        raise bad(param, value, f"one of {', '.join(allowed)} [dtype]")
    return word


def fraction(param: str, value, *, optional=False):
    """A fraction above 0 and at most 1 (0.40, not 40)."""
    return number(param, value, "fraction", above=0.0, at_most=1.0, optional=optional)


def ordered(p50: float, p95: float, p99: float | None, what: str) -> None:
    """Percentiles must rise: p50 <= p95 <= p99."""
    if p95 < p50:
        raise UDFError(f"{what}_p95: got {p95:g}, below {what}_p50 {p50:g}; expected p50 <= p95 <= p99")
    if p99 is not None and p99 < p95:
        raise UDFError(f"{what}_p99: got {p99:g}, below {what}_p95 {p95:g}; expected p50 <= p95 <= p99")


CELL_TEXT_MAX = 255
"""The longest string the classic (COM) add-in returns inside an array; a longer one shows #VALUE!. [characters]"""


def finite(value):
    """An answer fit for a cell, and every element of a spilled array: never inf or NaN (Excel would show #NUM! with no
    reason), a whole number as a double (Excel's numbers are doubles; 32-bit VBA's Long stops at 2³¹), and no string in
    an array longer than :data:`CELL_TEXT_MAX`."""
    if isinstance(value, list):
        out = [finite(v) for v in value]
        too_long = [v for v in out if isinstance(v, str) and len(v) > CELL_TEXT_MAX]
        if too_long:  # a bug in the function, not the user's input: the array must split its text
            raise AssertionError(f"a string of {len(too_long[0])} characters in an array; at most {CELL_TEXT_MAX}")
        return out
    if isinstance(value, float) and not math.isfinite(value):
        raise UDFError(f"the answer is {value} (the inputs overflow a floating-point number); expected smaller inputs")
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def text_rows(text: str, limit: int = CELL_TEXT_MAX) -> list[str]:
    """A long text as lines of at most ``limit`` characters, broken after a space where there is one; joined with
    single spaces they give the text back. [text]"""
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit + 1)
        cut = cut if cut > 0 else limit
        out.append(text[:cut])
        text = text[cut + 1:] if text[cut:cut + 1] == " " else text[cut:]
    return [*out, text]


def name_or_num(param: str, value, unit: str, expected_name: str):
    """A catalog name, or a number standing for the figure it would give (e.g. a GPU or its memory in GiB)."""
    held_error(param, value)
    if isinstance(value, str):
        try:
            float(value.strip().replace(",", ""))
        except ValueError:
            return text(param, value, expected_name)
    return number(param, value, unit, above=0.0)


def lengths(prompt_p50, prompt_p95, prompt_p99, output_p50, output_p95, output_p99):
    """Prompt and output percentiles read and checked in order: ((p50, p95, p99), (p50, p95, p99)). [tokens]"""
    out = []
    for what, p50, p95, p99 in (("prompt", prompt_p50, prompt_p95, prompt_p99), ("output", output_p50, output_p95, output_p99)):
        trio = (number(f"{what}_p50", p50, "tokens", above=0.0), number(f"{what}_p95", p95, "tokens", above=0.0),
                number(f"{what}_p99", p99, "tokens", above=0.0, optional=True))
        ordered(*trio, what)
        out.append(trio)
    return out


def no_room(engine: str, budget_gib: float) -> UDFError:
    """The one line a KV budget that is not positive answers with, naming the arguments the rule deducts: the weights
    do not fit. [UDFError]"""
    deducted = "model" + (" + overhead_gib" if engine == "runbook" else " + activation_gib" if engine in PROFILED else "")
    return UDFError(f"{deducted}: the {engine} rule leaves {budget_gib:.2f} GiB per GPU for the KV cache: the weights do "
                    "not fit; expected a positive budget (a larger GPU, more GPUs per replica, or quantised weights)")
