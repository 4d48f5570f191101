"""Read a filled-in workbook back into a validated plan.

Workbooks come from people: every problem is reported against its sheet and cell
with the value found and what was expected, all at once, as an
:class:`~xlplan.io.errors.InputError`. The file is only read, never written.
openpyxl parses the package with defusedxml when it is installed (it is a
dependency of the ``excel`` extra), so a hostile workbook cannot expand entities.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from xlplan import catalog
from xlplan.excel.cells import quote_sheet
from xlplan.excel.common import CATALOG_FIRST_ROW, GPU_COLUMNS, MODEL_COLUMNS, MODEL_EXTRA, SIX_TABS
from xlplan.excel.inputs import INPUTS_SHEET, LEGACY_INPUTS, OWNER_SECTIONS, InputSpec, all_inputs
from xlplan.excel.opening import open_workbook
from xlplan.io.errors import InputError, describe_validation_error
from xlplan.io.structured import number_problem
from xlplan.schema import plausibility
from xlplan.schema.plan import Plan

_CELL = re.compile(r"^(?:[A-Z]|[A-Z][A-Z]|[A-W][A-Z][A-Z]|X[A-E][A-Z]|XF[A-D])(?:[1-9][0-9]{0,6})$")


def _destinations(dn) -> list[tuple[str, str]]:
    """(sheet title, reference) pairs of a defined name; [] where openpyxl cannot split it (empty, a formula)."""
    from openpyxl.formula.tokenizer import TokenizerError

    try:
        return list(dn.destinations) if isinstance(dn.attr_text, str) and dn.attr_text.strip() else []
    except (TokenizerError, AttributeError, ValueError, TypeError):
        return []


def name_cells(wb, dn) -> list[tuple[str, str]]:
    """(sheet title, coordinate) of each single cell on an existing worksheet that a defined name points at; ranges,
    formulas and deleted sheets give none. [—]"""
    return [(t, r.replace("$", "")) for t, r in _destinations(dn)
            if t in wb.sheetnames and hasattr(wb[t], "iter_rows") and _CELL.match(r.replace("$", ""))]


def _where(wb, name: str, src: str) -> tuple[str, str]:
    """(sheet title, coordinate) of a workbook-scope defined name."""
    dn = wb.defined_names.get(name)
    if dn is None:
        raise InputError(src, [(f"defined name {name!r} is missing; expected it to point at its input on {INPUTS_SHEET!r} "
                               "(was it deleted? rebuild the workbook with `xlplan workbook`)")])
    dests = _destinations(dn)
    if len(dests) != 1:
        raise InputError(src, [f"defined name {name!r} refers to {dn.attr_text!r}; expected a single cell"])
    title, ref = dests[0]
    if title not in wb.sheetnames:
        raise InputError(src, [(f"defined name {name!r} points at sheet {title!r}, which is not in the workbook "
                               f"(sheets: {', '.join(wb.sheetnames)}); expected the template's tabs — was a tab renamed?")])
    coord = ref.replace("$", "")
    if not _CELL.match(coord) or not hasattr(wb[title], "iter_rows"):
        raise InputError(src, [f"defined name {name!r} refers to {dn.attr_text!r}; expected a single cell on a worksheet"])
    return title, coord


def _at(title: str, coord: str) -> str:
    return f"{quote_sheet(title)}!{coord}"


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _parse(spec: InputSpec, v: Any, where: str, problems: list[str]) -> Any:
    label = f"{where} ({spec.name}, {spec.label})"
    if isinstance(v, str) and v.strip() == "":
        v = None
    if v is None:
        if spec.required:
            problems.append(f"{label}: empty; expected {_expected(spec)}")
        return None
    if spec.kind in ("number", "number0", "fraction", "fraction0", "whole", "whole0") and _is_number(v) and number_problem(v):
        problems.append(f"{label}: {number_problem(v)}")
        return None
    if spec.kind in ("number", "number0", "fraction", "fraction0"):
        if not _is_number(v):
            problems.append(f"{label}: found {v!r}; expected {_expected(spec)}")
            return None
        return float(v)
    if spec.kind in ("whole", "whole0"):
        if not _is_number(v) or float(v) != int(v):
            problems.append(f"{label}: found {v!r}; expected {_expected(spec)}")
            return None
        return int(v)
    if spec.kind == "bool":
        if isinstance(v, bool):
            return v
        text = v.strip().upper() if isinstance(v, str) else ""
        if text in ("TRUE", "FALSE", "=TRUE()", "=FALSE()"):  # LibreOffice saves a typed TRUE as =TRUE()
            return "TRUE" in text
        problems.append(f"{label}: found {v!r}; expected TRUE or FALSE")
        return None
    if not isinstance(v, str):
        if spec.kind == "text":
            return str(v)
        problems.append(f"{label}: found {v!r}; expected {_expected(spec)}")
        return None
    return v.strip() if spec.kind == "choice" else v


def _expected(spec: InputSpec) -> str:
    unit = f" [{spec.unit}]"
    return {
        "number": f"a positive number{unit}",
        "number0": f"zero or a positive number{unit}",
        "fraction": "a fraction between 0 and 1 (0.40, not 40)",
        "fraction0": "a fraction from 0 up to 1 (0.30, not 30)",
        "whole": f"a whole number of at least 1{unit}",
        "whole0": f"a whole number of at least 0{unit}",
        "choice": f"one of the drop-down list ({spec.choices})",
        "text": "text",
        "bool": "TRUE or FALSE",
    }[spec.kind]


def _set(d: dict, path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        d = d.setdefault(part, {})
    d[path[-1]] = value


def _catalog_row(wb, title: str, key: str, columns, src: str, extra: tuple[str, ...] = (), where: str = "",
                 at: dict[str, str] | None = None) -> dict:
    """The supporting sheet's row for ``key``, by field; ``at`` gets where each field was read ('GPUs'!C7)."""
    from openpyxl.utils import get_column_letter

    if title not in wb.sheetnames:
        raise InputError(src, [f"sheet {title!r} not found; expected the template's supporting sheet that lists {key!r}"])
    ws = wb[title]
    keys = []
    for r, row in enumerate(ws.iter_rows(min_row=CATALOG_FIRST_ROW, values_only=True), start=CATALOG_FIRST_ROW):
        if row and row[0] not in (None, ""):
            keys.append(str(row[0]))
        if row and row[0] == key:
            out = {"name": row[1]}
            for i, field in enumerate([c[0] for c in columns] + list(extra)):
                v = row[2 + i] if 2 + i < len(row) else None
                if v is not None and v != "":
                    out[field] = v
                    if at is not None:
                        at[field] = _at(title, f"{get_column_letter(3 + i)}{r}")
            return out
    import difflib

    near = difflib.get_close_matches(str(key), keys, n=1)
    hint = f" — did you mean {near[0]!r}?" if near else f" (the {title} sheet's keys: {', '.join(keys[:8])}, …)"
    raise InputError(src, [f"{where + ': ' if where else ''}got {key!r}; expected a key of the {title} sheet (column A){hint}"])


SIZE_CLASS_MATCH = "size-class match"
"""Marks API prices the plan did not give: the median listed offer of the model's size class (Plan.api_used)."""


def _plan_fields(wb, src: str, data: dict[str, Any], problems: list[str]) -> None:
    """The plan's name, its date where given (a date Excel turned into a date value is read as one), and its growth
    section where the Schedule sheet wrote it (as JSON)."""
    title, coord = _where(wb, "PlanName", src)
    name = wb[title][coord].value
    data["name"] = str(name) if name not in (None, "") else "Capacity plan"
    if "PlanDate" in wb.defined_names:
        title, coord = _where(wb, "PlanDate", src)
        day = wb[title][coord].value
        if hasattr(day, "date") and callable(day.date):
            day = day.date()
        if day not in (None, ""):
            data["date"] = day.isoformat() if hasattr(day, "isoformat") else str(day).strip()
    growth = _json_cell(wb, "GrowthSection", src, problems, "the plan's growth section")
    if growth is not None:
        data["growth"] = growth
    given = _json_cell(wb, "ContractsSection", src, problems, "the plan's contracts and daily curve")  # the Summary's
    if given is not None:
        data.update({k: given[k] for k in ("contracts", "installed", "orders", "triggers") if k in given})
        data.setdefault("forecast", {}).update({"daily_curve": given["daily_curve"]} if "daily_curve" in given else {})


def _json_cell(wb, name: str, src: str, problems: list[str], what: str) -> dict | None:
    """A plan section the workbook keeps as JSON in the cell ``name``, as `xlplan workbook` wrote it; None where the
    workbook has no such cell, or (with a problem) where the cell holds no JSON object. [dict]"""
    if name not in wb.defined_names:
        return None
    title, coord = _where(wb, name, src)
    text = wb[title][coord].value
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        problems.append(f"{_at(title, coord)}: got {text!r}; expected {what} as JSON, as `xlplan workbook` writes it")
        return None
    return value


def _input_fields(wb, src: str, data: dict[str, Any], cells: dict[tuple[str, ...], str], problems: list[str],
                  snapshot: str = "") -> None:
    """Each section's owner and source, then every input cell parsed (``cells``: where each field was read);
    ``snapshot`` 'Built' reads the Summary's snapshot of the inputs instead."""
    for key, _ in OWNER_SECTIONS:
        for prefix, section in (("Owner", "owners"), ("Source", "sources")):
            t, c = _where(wb, f"{prefix}{key.capitalize()}", src)
            v = wb[t][c].value
            _set(data, (section, key), "" if v is None else str(v))
    for spec in [*all_inputs(), *LEGACY_INPUTS]:
        if spec in LEGACY_INPUTS and spec.name not in wb.defined_names:
            continue  # a workbook of today: the setting is another input's
        t, c = _where(wb, snapshot + spec.name, src)
        where = _at(t, c)
        cells[spec.path] = where
        raw = wb[t][c].value
        value = _parse(spec, raw, where, problems)
        if value is not None or (spec.blank_is_null and (raw is None or isinstance(raw, str) and not raw.strip())):
            _set(data, spec.path, value)  # a blank cell (or one holding spaces) is the field's null


def _catalog_specs(wb, data: dict[str, Any], src: str, cells: dict[tuple[str, ...], str]) -> None:
    """The model and GPU: a catalog key, or a row of the supporting sheet given in full (``cells`` gets where each of
    the GPU row's fields was read)."""
    model = data["model"]
    key = model.get("name", "")
    try:
        catalog.model_key(key)
    except catalog.UnknownNameError:
        spec = _catalog_row(wb, "Models", key, MODEL_COLUMNS, src, MODEL_EXTRA, _at(*_where(wb, "ModelKey", src)))
        model.pop("name")
        model["spec"] = spec
    hw = data["hardware"]
    gkey = hw.get("gpu", "")
    try:
        catalog.gpu_key(gkey)
    except catalog.UnknownNameError:
        at: dict[str, str] = {}
        row = _catalog_row(wb, "GPUs", gkey, GPU_COLUMNS, src, where=_at(*_where(wb, "GPUKey", src)), at=at)
        cells.update({("hardware", "gpu", field): place for field, place in at.items()})
        hw["gpu"] = {k: v for k, v in row.items() if k in ("name", "memory_gib", "bf16_tflops", "fp8_tflops", "fp4_tflops",
                                                             "hbm_tbps", "usd_per_gpu_hour")}


def _tidy_calibration(data: dict[str, Any]) -> None:
    """A calibration without a source is none; its ranges, read as {"0": low, "1": high}, become [low, high]."""
    pol = data.get("policy", {})
    cal = pol.get("calibration")
    if isinstance(cal, dict):
        if not cal.get("source"):
            pol.pop("calibration")
        else:
            for key, value in list(cal.items()):
                if isinstance(value, dict):
                    cal[key] = [value.get("0"), value.get("1")]


def _tidy_api(data: dict[str, Any]) -> None:
    """No API section without prices; none either where the prices are the size-class match the plan fell back on."""
    api = data.get("api", {})
    if "usd_per_mtok_input" not in api and "usd_per_mtok_output" not in api:
        if api.get("provider") or api.get("source"):
            pass  # text without prices: no comparison
        data.pop("api", None)
    elif SIZE_CLASS_MATCH in str(api.get("provider", "")):
        # the prices the plan fell back on (the size-class median), written out: the plan still gives none, unless
        # someone typed over them
        try:
            fallback = Plan.model_validate({k: v for k, v in data.items() if k != "api"}).api_used()
        except ValidationError:
            fallback = None
        if fallback is not None and (api.get("usd_per_mtok_input"), api.get("usd_per_mtok_output")) == (
                fallback.usd_per_mtok_input, fallback.usd_per_mtok_output):
            data.pop("api")


def read_workbook(path: str | Path, built: bool = False, accept_implausible: tuple[str, ...] = ()) -> Plan:
    """The plan a workbook's inputs describe, each input inside its plausible range unless accepted.

    Parameters
    ----------
    path : str or Path
        The workbook (.xlsx). [—]
    built : bool
        Read the inputs it was built from (the Summary's snapshot) instead, unjudged: what the engine ran on is the
        file's record, not a value typed now. [—]
    accept_implausible : tuple of str
        Fields to accept outside their plausible ranges (``xlplan --accept-implausible``): the workbook does not carry
        what the plan it was built from accepted. The plan read carries them. [text]

    Returns
    -------
    Plan
        The validated plan. [—]

    Raises
    ------
    InputError
        Naming the sheet and cell of every problem, the value found and what was expected; for a value outside its
        plausible range, the range, its reason, the likely slip and how to accept it.
    """
    src = str(path)
    wb = open_workbook(path)
    missing = [t for t in SIX_TABS if t not in wb.sheetnames]
    if missing:
        raise InputError(src, [f"sheet {t!r} not found (sheets: {', '.join(wb.sheetnames)}); expected the template's six tabs "
                               "— was it renamed or deleted?" for t in missing])
    problems: list[str] = []
    data: dict[str, Any] = {}
    cells: dict[tuple[str, ...], str] = {}
    _plan_fields(wb, src, data, problems)
    _input_fields(wb, src, data, cells, problems, "Built" if built else "")
    if problems:
        raise InputError(src, problems)
    places = dict(cells)  # and, for a value outside its plausible range, the GPU row's cells
    _catalog_specs(wb, data, src, places)
    _tidy_calibration(data)
    _tidy_api(data)
    if accept_implausible:
        data["accept_implausible"] = list(dict.fromkeys(accept_implausible))
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        raise InputError(src, _locate(e, cells)) from None
    implausible = [] if built else plausibility.inputs(plan)
    if implausible:
        raise InputError(src, [_implausible_line(wb, src, bad, places) for bad in implausible])
    return plan


def _implausible_line(wb, src: str, bad, places: dict[tuple[str, ...], str]) -> str:
    """A value outside its plausible range, at the cell it was read from: an input's on 1 Inputs, a row's on the GPUs
    sheet, or the cell that keeps its section as written (growth on the Schedule sheet; contracts, installed and orders
    on the Summary)."""
    path = tuple(bad.field.split("."))
    where = places.get(path)
    section = {"growth": "GrowthSection", "contracts": "ContractsSection", "installed": "ContractsSection",
               "orders": "ContractsSection"}.get(path[0])
    if where is None and section in wb.defined_names:
        where = _at(*_where(wb, section, src))
    line = f"{bad.finding}; {plausibility.accept_hint([bad.field], workbook=True)}"
    return f"{where}: {line}" if where else line


WHATIF_FIELDS = ("rate_x", "prompt_p95_x", "itl_x", "kv_dtype", "weights_dtype", "prefix_reuse", "average_utilisation")
"""The WhatIf field each input column of a what-if row (B to H on ``6 Sensitivities``) holds."""


def read_whatifs(path: str | Path) -> list | None:
    """The what-if rows of a workbook's ``6 Sensitivities``, in order: a :class:`~xlplan.plan.whatif_table.WhatIf` for a row with
    inputs, None for a blank row; None where the workbook has no what-if table (``WhatIfInputs``).

    Raises
    ------
    InputError
        Naming the cell of every value that is not a positive multiple, a listed dtype or a fraction from 0 to 1.
    """
    from xlplan.plan.whatif_table import WhatIf
    from xlplan.serving import memory

    src = str(path)
    wb = open_workbook(path)
    dn = wb.defined_names.get("WhatIfInputs")
    dests = _destinations(dn) if dn is not None else []
    if len(dests) != 1 or dests[0][0] not in wb.sheetnames:
        return None
    title, ref = dests[0]
    ws = wb[title]
    problems: list[str] = []
    out = []
    for row in ws[ref.replace("$", "")]:
        values = [None if isinstance(c.value, str) and not c.value.strip() else c.value for c in row]
        if all(v is None for v in values):
            out.append(None)
            continue
        fields: dict[str, Any] = {}
        for c, v, field in zip(row, values, WHATIF_FIELDS):
            where = f"{_at(title, c.coordinate)} (what-if {field})"
            if v is None:
                continue
            if field.endswith("_x"):
                if not _is_number(v) or number_problem(v) or v <= 0:
                    problems.append(f"{where}: found {v!r}; expected a positive multiple of the plan's value, e.g. 1.5, or blank")
                    continue
            elif field.endswith("dtype"):
                allowed = memory.KV_BYTES_PER_ELEMENT if field == "kv_dtype" else memory.WEIGHT_BYTES_PER_PARAM
                if not isinstance(v, str) or v.strip() not in allowed:
                    problems.append(f"{where}: found {v!r}; expected one of {', '.join(allowed)}, or blank")
                    continue
                v = v.strip()
            elif not _is_number(v) or number_problem(v) or not 0 <= v <= 1:
                problems.append(f"{where}: found {v!r}; expected a fraction between 0 and 1 (0.40, not 40), or blank")
                continue
            fields[field] = float(v) if _is_number(v) else v
        out.append(WhatIf(**fields))
    if problems:
        raise InputError(src, problems)
    return out


def _locate(e: ValidationError, cells: dict[tuple[str, ...], str]) -> list[str]:
    """Validation errors with the sheet and cell of the field each is about."""
    lines = describe_validation_error(e)
    out = []
    for err, line in zip(e.errors(include_url=False), lines):
        loc = tuple(str(p) for p in err["loc"] if isinstance(p, str) and not p.startswith(("function-", "literal[", "union[")))
        where = None
        for n in range(len(loc), 0, -1):
            if loc[:n] in cells:
                where = cells[loc[:n]]
                break
            if loc[:n] + ("p95",) in cells:  # an ordering error on a whole distribution: point at p95
                where = cells[loc[:n] + ("p95",)]
                break
        if where is None and loc[:1] == ("promise",):
            where = cells.get(("promise", "itl_s"))
        if where is None:  # a rule over the whole plan names its field first: "costs.usd_per_kwh: missing; …"
            named = re.match(r"([a-z_]+(?:\.[a-z0-9_]+)+):", line)
            where = cells.get(tuple(named.group(1).split("."))) if named else None
        out.append(f"{where}: {line}" if where else line)
    return out
