"""Audit an edited workbook against the template and the engine.

Three kinds of finding: a formula cell that no longer holds the template's
formula (the classic error: a formula overwritten by a typed number), a value
that differs from what the engine computes for the workbook's own inputs (stale:
inputs changed but the file was not recalculated, or a formula was changed), and
a check on the Checks sheet that fails. The what-if rows of ``6 Sensitivities``
are read back too, a user's own rows among them: each is compared with the
engine's re-plan of that row. A sheet the template does not have (the Review tab
of `xlplan review --workbook`) is passed over: its inputs are a month's
measurements, which no plan rebuilds.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlplan.excel.cells import date_serial, quote_sheet
from xlplan.excel.common import ADDIN_AGREES, ADDIN_MISSING, ADDIN_MISSING_BEFORE, CROSSCHECK_COL, SIX_TABS, Engine
from xlplan.excel.layout import build
from xlplan.excel.opening import open_workbook
from xlplan.excel.reader import name_cells, read_whatifs, read_workbook
from xlplan.excel.support import CHECKS
from xlplan.excel.tabs.sensitivities import built_whatifs, relay_whatifs, whatif_rows

if TYPE_CHECKING:
    from xlplan.excel.figures import Figures, WhatIfRow
    from xlplan.plan.scenario import Scenario
    from xlplan.schema.plan import Plan

REBUILD = "rebuild from this file's own inputs: `xlplan read FILE -o plan.yaml`, then `xlplan workbook plan.yaml -o NEW.xlsx`"
"""How a finding's remedy keeps the user's edits: read the inputs back, then build (a plain rebuild would drop them)."""

RELATIVE_TOLERANCE = 1e-9
"""Values within this relative difference agree (LibreOffice stores 15 significant digits). [fraction]"""


@dataclass(frozen=True)
class Finding:
    """One problem found, with where it is."""

    where: str  # 'Sheet'!A1
    kind: str  # formula-overwritten | formula-changed | stale-value | stale-breakpoint | no-cached-value | check-failed
    #            | add-in-disagrees | sheet-missing
    found: str
    expected: str

    def as_dict(self) -> dict[str, str]:
        return {"where": self.where, "kind": self.kind, "found": self.found, "expected": self.expected}


def _norm(formula: str) -> str:
    """A formula without whitespace outside strings, upper-cased outside strings, for comparison."""
    parts = re.split(r'("(?:[^"]|"")*")', formula)
    out = "".join(p if p.startswith('"') else re.sub(r"\s+", "", p).upper() for p in parts).lstrip("=")
    return out.replace("TRUE()", "TRUE").replace("FALSE()", "FALSE")  # LibreOffice writes the constants as functions


_SAME_SHEET_REF = re.compile(r"(?<![A-Za-z_!$.'])\$?([A-Z]{1,3})\$?([0-9]+)(?![0-9A-Za-z_(])")


def _from_searched(sheet) -> set[str]:
    """Formula cells of one sheet that read, directly or through other formulas, a value the engine searched.

    The searched values (an option's GPUs, a schedule month's need) are static cells; a formula beside them that
    reads them goes stale with them when an input changes, and is reported as they are.
    """
    static = {coord for coord, c in sheet.cells.items() if c.kind == "static" and not c.formula}
    refs = {coord: {f"{col}{row}" for col, row in _SAME_SHEET_REF.findall(re.sub(r'"[^"]*"', "", c.value))}
            for coord, c in sheet.cells.items() if c.formula}
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for coord, rs in refs.items():
            if coord not in found and rs & (static | found):
                found.add(coord)
                grew = True
    return found


def _agree(found: Any, expected: Any) -> bool:
    if isinstance(found, dt.date):  # openpyxl reads a date-formatted number as a datetime; the engine caches its serial
        found = date_serial(found)
    if expected == "" and found in (None, ""):
        return True
    if isinstance(expected, bool) or isinstance(found, bool):
        return found == expected
    if isinstance(expected, (int, float)) and isinstance(found, (int, float)):
        if math.isinf(expected):
            return False
        return abs(found - expected) <= RELATIVE_TOLERANCE * max(abs(expected), abs(found), 1e-300)
    return found == expected


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.10g}"
    return repr(v) if isinstance(v, str) else str(v)


_LITTLES_LAW = re.compile(r"(?:^|[^A-Za-z0-9_.])(?:([A-Za-z][A-Za-z0-9_.]*)\.)?LITTLES_LAW\(", re.IGNORECASE)


def _formula_mode(wb) -> tuple[str, str]:
    """('udf' or 'native', namespace): the Concurrency cell calls LITTLES_LAW in the --formulas udf variant, and the
    add-in check beside it does in the native one; either call shows the namespace it was written with."""
    dn = wb.defined_names.get("Concurrency")
    if dn is not None:
        for title, coord in name_cells(wb, dn):
            value = str(wb[title][coord].value or "")
            m = _LITTLES_LAW.search(value)
            if value.startswith("=") and m:
                return "udf", (m.group(1) or "")
            row = coord.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            m = _LITTLES_LAW.search(str(wb[title][f"{CROSSCHECK_COL}{row}"].value or ""))
            if m:
                return "native", (m.group(1) or "")
    return "native", ""


def _schedule_day(wf, plan) -> dict:
    """The day the workbook's schedule was counted from, where the plan does not date its start: the day before the
    Schedule's first month (a workbook built last month, or by a review, starts where it started). [dict]"""
    if plan.growth is None or plan.growth.start is not None or "ScheduleFirstMonth" not in wf.defined_names:
        return {}
    title, coord = next(iter(wf.defined_names["ScheduleFirstMonth"].destinations))
    month = str(wf[title][coord.replace("$", "")].value or "")
    try:
        return {"today": dt.date.fromisoformat(f"{month}-01") - dt.timedelta(days=1)}
    except ValueError:
        return {}


def check_workbook(path: str | Path, figures_of: Callable[..., Figures],
                   rows_of: Callable[[Plan, Scenario, list], list[WhatIfRow]],
                   accept_implausible: tuple[str, ...] = ()) -> list[Finding]:
    """Findings for a workbook (empty when it agrees with the template and the engine).

    The engine comes in as two functions, so this module reads and compares and computes nothing:
    ``figures_of(plan, verify=...)`` gives the figures of the workbook's own inputs (:func:`xlplan.excel.book.figures`),
    ``rows_of(plan, scenario, whatifs)`` the engine's re-plan of each what-if row the workbook holds
    (:func:`xlplan.excel.book.whatif_row` of each). Its inputs are held to their plausible ranges but for the fields in
    ``accept_implausible`` (``xlplan --accept-implausible``); the snapshot of the inputs it was built from is the
    file's record, not judged.

    Raises
    ------
    InputError
        When the workbook cannot be read into a plan (bad inputs, missing names or tabs, an input outside its plausible
        range).
    PlanningError
        When its inputs describe a plan that cannot be met.
    """
    plan = read_workbook(path, accept_implausible=accept_implausible)
    wf = open_workbook(path)
    mode, namespace = _formula_mode(wf)
    verified = wf.defined_names.get("VerifiedLoad") is not None  # built with `plan --verify`: simulate again (seeded)
    fig = figures_of(plan, verify="auto" if verified else False, **_schedule_day(wf, plan))  # as `workbook` builds
    fresh = build(fig, mode, namespace=namespace)
    wv = open_workbook(path, data_only=True)
    changed = _changed_inputs(wv)
    # The formulas a file holds are those of the inputs it was built from (the Summary's snapshot): some follow them
    # (a bought fleet's rows, a comparison of text or numbers). Its formulas are held to a build from those; its values
    # to a build from the inputs it holds now, where an edit left them behind only with a STALE flag beside them.
    template = fresh
    if changed:
        built = read_workbook(path, built=True, accept_implausible=accept_implausible)
        template = build(figures_of(built, verify="auto" if verified else False, **_schedule_day(wf, plan)), mode,
                         namespace=namespace)
    # The what-if rows as the workbook holds them (a user's own rows filled in, a standard row edited): the engine
    # re-plans each, and its figures are what the row must show.
    whatifs = read_whatifs(path)
    user_rows: set[int] = set()
    if whatifs is not None and whatifs != built_whatifs() and len(whatifs) == len(built_whatifs()):
        relay_whatifs(fresh, Engine(fig, mode, namespace), rows_of(plan, fig.s, whatifs))
        first, _ = whatif_rows(fresh)
        user_rows = {first + k for k, (w, b) in enumerate(zip(whatifs, built_whatifs())) if w != b}
    findings: list[Finding] = []
    now = {s.title: s for s in fresh.sheets}
    for sheet in template.sheets:
        if sheet.title not in wf.sheetnames:
            findings.append(Finding(quote_sheet(sheet.title), "sheet-missing", "(no such sheet)", "the template's sheet"))
            continue
        findings += _sheet_findings(sheet, now.get(sheet.title, sheet), wf[sheet.title], wv[sheet.title], user_rows)
    findings = _one_line_when_nothing_is_computed(findings, template, wf, wv)
    findings = _one_line_when_inputs_changed(findings, changed, _flagged_stale(template, changed or []),
                                             _recalculated_since(wv, changed or []))
    findings += _missing_names(template, wf) + _failed_checks(wv)
    return sorted(findings, key=lambda f: (f.kind not in REAL_PROBLEMS, KINDS.index(f.kind) if f.kind in KINDS else 0))


def _one_line_when_nothing_is_computed(findings: list[Finding], fresh, wf, wv) -> list[Finding]:
    """A file saved by a tool that drops computed values (openpyxl, pandas) has none in any formula cell it still holds:
    one finding says so, instead of one per cell; the other findings (an overwritten formula, say) stay."""
    missing = [f for f in findings if f.kind == "no-cached-value"]
    computed = any(wv[sheet.title][coord].value is not None for sheet in fresh.sheets if sheet.title in wv.sheetnames
                   for coord, cell in sheet.cells.items()
                   if cell.formula and str(wf[sheet.title][coord].value or "").startswith("="))
    if not missing or computed:
        return findings
    return [f for f in findings if f.kind != "no-cached-value"] + [Finding(
        "(every formula cell)", "no-cached-value", f"none of {len(missing):,} formula cells holds a computed value",
        "computed values: the file was saved by a tool that drops them (openpyxl, pandas); open and save it in Excel "
        "or LibreOffice, then check again (or rebuild it computed: `xlplan read FILE -o plan.yaml`, then "
        "`xlplan workbook plan.yaml -o NEW.xlsx --recalc`)")]


def _formula_finding(where: str, cell, have, value, searched: bool) -> Finding | None:
    """What is wrong with a formula cell, if anything: overwritten, changed, without a cached value, or stale (a
    cross-check that disagrees, a value beside the engine's searched ones, any other value)."""
    have_text = getattr(have, "text", have)  # ArrayFormula objects carry their text
    if cell.kind == "crosscheck" and isinstance(have_text, str):  # an older workbook's words for the same state
        for before in ADDIN_MISSING_BEFORE:
            have_text = have_text.replace(f'"{before}"', f'"{ADDIN_MISSING}"')
    if not (isinstance(have_text, str) and have_text.startswith("=")):
        return Finding(where, "formula-overwritten", _show(have), cell.value)
    if _norm(have_text) != _norm(cell.value):
        return Finding(where, "formula-changed", have_text, cell.value)
    if "BuildDate" in cell.value:  # older workbooks held their build day here: a rebuild on another day differs by design
        return None
    if cell.kind == "crosscheck":
        if value not in (ADDIN_MISSING, *ADDIN_MISSING_BEFORE, ADDIN_AGREES, None):  # not checked is no finding
            return Finding(where, "add-in-disagrees", _show(value),
                           f"{ADDIN_AGREES!r}: the xlplan Excel function and the native formula beside it differ")
        return None
    if value is None and cell.cached not in ("", None):
        return Finding(where, "no-cached-value", "(none)",
                       f"{_show(cell.cached)}: open and save the file in Excel or LibreOffice, "
                       f"or {REBUILD}")
    if cell.kind == "flag":
        return None  # a flag says whether the values beside it are current: they, when stale, are the finding
    if not _agree(value, cell.cached) and searched:
        return Finding(where, "stale-breakpoint", _show(value),
                       f"{_show(cell.cached)} (computed from values the engine searched for the "
                       f"built inputs; {REBUILD})")
    if not _agree(value, cell.cached):
        return Finding(where, "stale-value", _show(value), f"{_show(cell.cached)} (the engine, for this workbook's inputs)")
    return None


def _static_finding(where: str, title: str, coord: str, cell, value, user_rows: set[int]) -> Finding | None:
    """A searched engine value that no longer agrees with the engine's, if so."""
    if _agree(value, cell.value if cell.value is not None else ""):
        return None
    row = int(coord.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    why = ("the engine's largest decode batch for this what-if row, which the sheet cannot search"
           if title == SIX_TABS[5] and row in user_rows else
           f"searched by the engine for the inputs it was built with; {REBUILD}")
    return Finding(where, "stale-breakpoint", _show(value), f"{_show(cell.value)} ({why})")


def _sheet_findings(sheet, now, f_ws, v_ws, user_rows: set[int]) -> list[Finding]:
    """Every formula and searched value of one sheet against the workbook's (``f_ws`` its formulas, ``v_ws`` its cached
    values): each formula as ``sheet`` (the build the file was made from) writes it, each value as ``now`` (a build from
    the inputs it holds) computes it."""
    from_searched = _from_searched(now)
    out: list[Finding] = []
    for coord, cell in sheet.cells.items():
        where = f"{quote_sheet(sheet.title)}!{coord}"
        rebuilt = now.cells.get(coord)
        if rebuilt is not None and rebuilt.formula == cell.formula and rebuilt.kind == cell.kind:
            cell = dataclasses.replace(cell, cached=rebuilt.cached) if cell.formula else dataclasses.replace(cell, value=rebuilt.value)
        if cell.depends == ():
            found = None  # the record of the inputs the file was built from
        elif cell.formula:
            found = _formula_finding(where, cell, f_ws[coord].value, v_ws[coord].value, coord in from_searched)
        elif cell.kind == "static":
            found = _static_finding(where, sheet.title, coord, cell, v_ws[coord].value, user_rows)
        else:
            found = None
        if found is not None:
            out.append(found)
    return out


REAL_PROBLEMS = ("formula-overwritten", "formula-changed", "sheet-missing", "name-missing", "check-failed", "add-in-disagrees",
                 "stale-value", "stale-breakpoint")
"""Findings that are problems with the file itself: listed first, and `check` exits 1 on any. The others
(``inputs-changed``, ``no-cached-value``) are states an ordinary edit leaves: `check --strict` exits 1 on them too."""

KINDS = (*REAL_PROBLEMS, "inputs-changed", "no-cached-value")
"""Every kind of finding, in the order `check` lists them."""


def _changed_inputs(wv) -> list[tuple[str, Any, Any]] | None:
    """(input, value at build time, value now) of each input on 1 Inputs that differs from the Summary's snapshot
    (``Built<Input>``); None for a workbook built before the snapshot was named."""
    from xlplan.excel.inputs import all_inputs
    from xlplan.excel.staleness import built_name

    out = []
    for spec in all_inputs():
        was_dn, now_dn = wv.defined_names.get(built_name(spec.name)), wv.defined_names.get(spec.name)
        if was_dn is None or now_dn is None:
            return None
        (t0, c0), (t1, c1) = name_cells(wv, was_dn)[0], name_cells(wv, now_dn)[0]
        was, now = wv[t0][c0].value, wv[t1][c1].value
        if not _same_input(was, now):
            out.append((spec.name, was, now))
    return out


def _same_input(was: Any, now: Any) -> bool:
    """An input unchanged, as the stale flags compare it: numbers within the rounding tolerance, else as text."""
    if isinstance(was, (int, float)) and isinstance(now, (int, float)) and not isinstance(was, bool) and not isinstance(now, bool):
        return abs(now - was) <= RELATIVE_TOLERANCE * abs(was)
    return ("" if was is None else str(was)) == ("" if now is None else str(now))


def _flagged_stale(template, changed) -> set[str]:
    """Each cell (``'Sheet'!A1``) whose flag reads STALE for these edits (once the file is recalculated): a cell with a
    flag beside it (:attr:`~xlplan.excel.cells.Book.flags`) that reads an engine value of an edited input's group."""
    from xlplan.excel.inputs import all_inputs
    from xlplan.excel.staleness import group_of

    path = {spec.name: spec.path for spec in all_inputs()}
    edited = {group_of(path[name]) for name, _, _ in changed if name in path} - {None}
    return {f"{quote_sheet(title)}!{coord}" for (title, coord), groups in template.flag_groups.items()
            if (title, coord) in template.flags and groups & edited}


def _recalculated_since(wv, changed) -> bool:
    """Whether the file was recalculated after its inputs were edited: the Summary's unchanged-inputs cell of each edited
    group holds FALSE (an edit saved without recalculating leaves every value as it was, TRUE among them)."""
    from xlplan.excel.inputs import all_inputs
    from xlplan.excel.staleness import group_name, group_of

    path = {spec.name: spec.path for spec in all_inputs()}
    for group in {group_of(path[name]) for name, _, _ in changed if name in path} - {None}:
        dn = wv.defined_names.get(group_name(group))
        if dn is not None:
            title, coord = name_cells(wv, dn)[0]
            if wv[title][coord].value is True:
                return False
    return True


def _one_line_when_inputs_changed(findings: list[Finding], changed, flagged: set[str], recalculated: bool = True) -> list[Finding]:
    """Where inputs differ from the values the engine last ran on, the engine values computed for the old ones (and
    the formulas that read them) are one finding naming the inputs, not one per cell: each value whose flag beside it
    reads STALE for these edits. A value that differs with no such flag beside it stays a finding of its own, unless the
    file was saved without recalculating (``recalculated`` False): then every value is as it was built, and says so."""
    if not changed:
        return findings
    stale = [f for f in findings if f.kind in ("stale-value", "stale-breakpoint") and (f.where in flagged or not recalculated)]
    edits = "; ".join(f"{name} {_show(was)} -> {_show(now)}" for name, was, now in changed)
    if not recalculated:
        return [f for f in findings if f not in stale] + [Finding(
            "1 Inputs", "inputs-changed", edits,
            (f"inputs changed and the file was saved without recalculating ({len(stale):,} cells still show the values "
             f"for the old inputs): open and save it in Excel or LibreOffice, or regenerate: {REBUILD}"))]
    return [f for f in findings if f not in stale] + [Finding(
        "1 Inputs", "inputs-changed", edits,
        (f"inputs changed since the engine last ran ({len(stale):,} cells differ from a rebuild, each with a flag beside "
         f"it that reads STALE once the file is recalculated); regenerate: {REBUILD}"))]


def _missing_names(fresh, wf) -> list[Finding]:
    """Each defined name of the template the file no longer has (deleted: formulas that use it show #NAME?)."""
    return [Finding(name, "name-missing", "(no such name)", f"defined name {name!r} as the template defines it")
            for name in sorted(fresh.names) if wf.defined_names.get(name) is None]


def _failed_checks(wv) -> list[Finding]:
    """Every check on the Checks sheet whose cached value is not TRUE."""
    out: list[Finding] = []
    labels = {f"Check{name}": label for name, label, _ in CHECKS}
    for name, label in labels.items():
        dn = wv.defined_names.get(name)
        if dn is None:
            continue
        for title, coord in name_cells(wv, dn):
            v = wv[title][coord].value
            if v is not True and v is not None:  # None: not computed, which a no-cached-value finding says
                out.append(Finding(f"{quote_sheet(title)}!{coord}", "check-failed", _show(v), f"TRUE: {label}"))
    return out
