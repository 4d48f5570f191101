"""Which inputs each engine value of the workbook depends on, and the formula that says when one has moved.

The Summary's Answer, its sentences, the Options table and the Schedule's months are engine values: computed when the
workbook was built, not formulas, so an edit on 1 Inputs leaves them as they were. Each carries a flag by formula that
says STALE once any input it depends on differs from its value at build time. What depends on what is one explicit
map, :data:`VALUE_INPUTS`, from the groups below; the build-time values sit once in the Summary's snapshot
(``Built<Input>`` names), and :func:`flag_formula` compares each value's inputs with them.
"""

from __future__ import annotations

import re
from functools import cache

from xlplan.excel.cells import Book, Cell, Sheet

FLEET = "fleet"
PAYMENT = "payment"
PRICE = "price"
VOLUME = "volume"
API = "api"
OPS = "ops"

GROUP_OF_PATH = (
    # (plan-file path prefix, group): the first prefix that matches a field's path names its group
    (("forecast", "average_utilisation"), VOLUME),
    (("hardware", "usd_per_gpu_hour"), PRICE),
    (("hardware", "hours_per_month"), PRICE),
    (("hardware", "ops_usd_per_month"), OPS),
    (("costs", "mode"), PAYMENT),
    (("costs", "source"), None),
    (("costs",), PRICE),
    (("api", "provider"), None),
    (("api", "source"), None),
    (("api",), API),
    (("policy", "calibration", "source"), None),
    (("forecast",), FLEET),
    (("promise",), FLEET),
    (("model",), FLEET),
    (("hardware",), FLEET),
    (("policy",), FLEET),
)
"""Each input's group by its plan-file path. The fleet's inputs are the traffic at peak, the promise, the model, the
GPU and its unit, and the policy; how it is paid for, its price and hours, the average volume (tokens a month), the API's
prices and the cost of running it yourself each move only money. Text that names a source (None) moves no figure."""

FLEET_VALUE = (FLEET, PAYMENT)  # the TP degree bills the fewest GPUs, and what is billed follows how it is paid for
BILLED = (FLEET, PAYMENT)
PER_TOKEN = (FLEET, PAYMENT, PRICE, VOLUME)
AGAINST_API = (FLEET, PAYMENT, PRICE, VOLUME, API, OPS)

VALUE_INPUTS: dict[str, tuple[str, ...]] = {
    # Summary · the Answer's rows (the fleet verified in simulation, and its bill)
    "AnswerSource": FLEET_VALUE, "AnswerLoad": FLEET_VALUE, "AnswerWithRedundancy": FLEET_VALUE,
    "AnswerPurchased": FLEET_VALUE, "AnswerBinding": FLEET_VALUE, "AnswerStepBudget": FLEET_VALUE,
    "AnswerSettings": FLEET_VALUE,
    "AnswerOrder": BILLED,  # (its bill, GPUs to NPV, is priced by formula on 5 Cost: stale only with the fleet)
    # the contract mix: the fleet's hours priced on demand and reserved, the top of the peak on the API
    "AnswerMix": (FLEET, PRICE, API), "AnswerMixMonthlyUSD": (FLEET, PRICE, API), "AnswerMixSavingsRate": (FLEET, PRICE),
    "AnswerMixCoverage": (FLEET, PRICE), "AnswerMixUtilisation": (FLEET, PRICE), "AnswerMixBreakEven": (PRICE,),  # owning over the life, with the engineering self-hosting needs
    # Summary · its sentences
    "SummaryVerifiedSentence": FLEET_VALUE,
    "SummaryWhichHardware": PER_TOKEN,  # the Options' ranking, by $/M tokens
    "SummaryWhenToOrder": AGAINST_API,  # the Schedule's first order and its API comparison
    # the decision tabs
    "OptionsTable": PER_TOKEN,  # each GPU's fleet, its price and its rank by $/M tokens
    "ScheduleMonths": AGAINST_API,  # each month's fleet and the API's cost beside it
}
"""Engine value (its flag's name less 'Stale') → the input groups it depends on: one explicit map."""


def group_of(path: tuple[str, ...]) -> str | None:
    """The group of the input at ``path`` (:data:`GROUP_OF_PATH`); None for text that moves no figure. [text]

    Parameters
    ----------
    path : tuple of str
        The input's plan-file path, e.g. ``('hardware', 'usd_per_gpu_hour')``.

    Returns
    -------
    str or None
        One of the groups; None for a source or provider's name.
    """
    for prefix, group in GROUP_OF_PATH:
        if path[:len(prefix)] == prefix:
            return group
    raise ValueError(f"input {'.'.join(path)} has no group in GROUP_OF_PATH; give it one")


@cache
def inputs_of(value: str) -> tuple[str, ...]:
    """The defined names of the inputs on 1 Inputs that ``value`` depends on, in sheet order. [names]

    Parameters
    ----------
    value : str
        A key of :data:`VALUE_INPUTS`.

    Returns
    -------
    tuple of str
        Each input whose group is among the value's.
    """
    return _names_in(set(VALUE_INPUTS[value]))


def _names_in(groups: set[str]) -> tuple[str, ...]:
    """The inputs on 1 Inputs whose group is one of ``groups``, in sheet order. [names]"""
    from xlplan.excel.inputs import all_inputs

    return tuple(s.name for s in all_inputs() if group_of(s.path) in groups)


def built_name(input_name: str) -> str:
    """The defined name of an input's value at build time, in the Summary's snapshot. [name]"""
    return f"Built{input_name}"


def same(name: str, value, ref: str) -> str:
    """A condition true while input ``name`` still holds ``ref``, the cell with its value at build time. [formula]

    Parameters
    ----------
    name : str
        The input's defined name.
    value : object
        Its value at build time: a number compares within the rounding tolerance, anything else as text.
    ref : str
        The cell (or defined name) holding that value.

    Returns
    -------
    str
        A formula fragment, TRUE while the input is unchanged.
    """
    if isinstance(value, bool):  # compared as booleans: as text LibreOffice writes TRUE as "1", Excel as "TRUE"
        return f"{name}={ref}"
    if not isinstance(value, (int, float)):
        return f'{name}&""={ref}&""'
    return f"IFERROR(ABS({name}-{ref})<=RoundingTolerance*ABS({ref}),FALSE)"


CURRENT = "current"
STALE = "STALE: an input it depends on changed; rebuild with xlplan workbook"


GROUPS = (FLEET, PAYMENT, PRICE, VOLUME, API, OPS)
"""The input groups, in the order the Summary lists whether each is unchanged."""


def group_name(group: str) -> str:
    """The defined name of the Summary cell that is TRUE while every input of ``group`` holds its build-time value. [name]"""
    return f"Unchanged{group.capitalize()}Inputs"


def group_inputs(group: str) -> tuple[str, ...]:
    """The defined names of the inputs on 1 Inputs in ``group``, in sheet order. [names]

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.

    Returns
    -------
    tuple of str
        Each input whose plan-file path is in the group (:func:`group_of`).
    """
    return _names_in({group})


def group_formula(group: str, built: dict[str, object]) -> str:
    """TRUE while every input of ``group`` holds its build-time value (the Summary's ``Built<Input>`` names). [formula]

    Parameters
    ----------
    group : str
        One of :data:`GROUPS`.
    built : dict
        Input name → its value at build time, to choose each comparison.

    Returns
    -------
    str
        ``=AND(...)`` of :func:`same` over the group's inputs.
    """
    return f"=AND({','.join(same(n, built.get(n), built_name(n)) for n in group_inputs(group))})"


def flag_formula(value: str) -> str:
    """The flag of ``value``: 'current' while every group of inputs it depends on is unchanged, else STALE. [formula]

    Parameters
    ----------
    value : str
        A key of :data:`VALUE_INPUTS`.

    Returns
    -------
    str
        ``=IF(AND(Unchanged…Inputs, …),"current","STALE: …")``: one cell per group, computed once on the Summary.
    """
    return group_flag(VALUE_INPUTS[value])


def group_flag(groups) -> str:
    """A flag over ``groups``: 'current' while each group's inputs are unchanged, else STALE. [formula]"""
    return f'=IF({_unchanged(groups)},"{CURRENT}","{STALE}")'


ROW_CURRENT = ""
ROW_STALE = "STALE"
"""What a row's flag shows: nothing while every engine value the row reads is current, else STALE (the sheet's note says
what to do)."""

SHEET_VALUES: dict[str, tuple[str, ...]] = {
    # the engine values of each tab that carry no groups of their own: what they were searched or simulated for
    "3 Constraints": FLEET_VALUE,  # the TP table's largest batches, the queueing path's inputs, the closed-form paths
    "4 Fleet": FLEET_VALUE,  # the fleet simulated at peak
    "6 Sensitivities": FLEET_VALUE,  # the breakpoints and the what-if rows' searched batches
    "Options": PER_TOKEN,
    "Schedule": AGAINST_API,
}
"""Sheet → the input groups of its engine values (a cell's own ``depends`` comes first)."""

_STRING = re.compile(r'"(?:[^"]|"")*"')
_CELL = r"\$?[A-Z]{1,3}\$?[0-9]+"
_SHEET_REF = re.compile(rf"('(?:[^']|'')+'|[A-Za-z_][A-Za-z0-9_.]*)!({_CELL})(?::({_CELL}))?")
_LOCAL_REF = re.compile(rf"(?<![A-Za-z0-9_.$!'])({_CELL})(?::({_CELL}))?(?![A-Za-z0-9_(!])")
_NAME = re.compile(r"(?<![A-Za-z0-9_.$'])([A-Za-z_][A-Za-z0-9_.]*)(?![A-Za-z0-9_.(!])")


@cache
def _rc(coord: str) -> tuple[int, int]:
    """(row, column index) of 'B7' or '$B$7'. [—]"""
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    col, row = coordinate_from_string(coord.replace("$", ""))
    return row, column_index_from_string(col)


class _Index:
    """Each sheet's cells by row, to expand a range into the cells it covers."""

    def __init__(self, book: Book):
        self.rows: dict[str, dict[int, list[tuple[int, str]]]] = {}
        for sh in book.sheets:
            by_row: dict[int, list[tuple[int, str]]] = {}
            for coord in sh.cells:
                r, c = _rc(coord)
                by_row.setdefault(r, []).append((c, coord))
            self.rows[sh.title] = by_row

    def cover(self, title: str, first: str, last: str | None) -> list[tuple[str, str]]:
        (r0, c0), (r1, c1) = _rc(first), _rc(last or first)
        if (r0, c0) == (r1, c1):
            return [(title, first.replace("$", ""))]
        by_row = self.rows.get(title, {})
        lo, hi = min(c0, c1), max(c0, c1)
        return [(title, coord) for r in range(min(r0, r1), max(r0, r1) + 1) for c, coord in by_row.get(r, ()) if lo <= c <= hi]


@cache
def _tokens(title: str, formula: str) -> tuple[frozenset, frozenset]:
    """A formula's references (sheet, first, last or None) and the words that may be defined names: parsed once per
    text, the same in every workbook built. [ranges], [names]"""
    text = _STRING.sub('""', formula)
    refs = {(sheet.strip("'").replace("''", "'"), first, last or None) for sheet, first, last in _SHEET_REF.findall(text)}
    text = _SHEET_REF.sub(" ", text)
    refs |= {(title, first, last or None) for first, last in _LOCAL_REF.findall(text)}
    return frozenset(refs), frozenset(_NAME.findall(_LOCAL_REF.sub(" ", text)))


def _refs(book: Book, title: str, formula: str) -> set[tuple[str, str, str | None]]:
    """Every range a formula reads, as (sheet, first cell, last cell or None): through a defined name, another sheet's
    reference or one on its own sheet. [ranges]"""
    refs, names = _tokens(title, formula)
    out = set(refs)
    for name in names:
        ref = book.names.get(name)
        if ref is not None:
            sheet, _, cells = ref.rpartition("!")
            first, _, last = cells.partition(":")
            out.add((sheet.strip("'").replace("''", "'"), first, last or None))
    return out


def _own_groups(named: dict[str, str], sheet: Sheet, coord: str, cell: Cell) -> tuple[str, ...]:
    """The input groups of one engine value: its own, its defined name's in :data:`VALUE_INPUTS` (``named``: each such
    name's reference → the name), else its sheet's."""
    if cell.depends is not None:
        return cell.depends
    name = named.get(sheet.ref(coord))
    if name is not None:
        return VALUE_INPUTS[name]
    if sheet.values_depend is not None:
        return sheet.values_depend
    if sheet.title in SHEET_VALUES:
        return SHEET_VALUES[sheet.title]
    raise ValueError(f"engine value {sheet.title}!{coord} has no input groups: give it depends=, or its sheet values_depend=")


def engine_groups(book: Book) -> dict[tuple[str, str], frozenset[str]]:
    """Every cell whose value was computed by the engine when the workbook was built, or is read from such a value by its
    formula, with the input groups that make it stale. [groups]

    An engine value (``kind='static'``) carries the groups it was computed from; a formula carries the union of the
    groups of every engine value it reads, through any chain of formulas. A formula that reads none recalculates whole
    from the inputs and is never stale; nor is the snapshot of the inputs (``depends=()``).

    Parameters
    ----------
    book : Book
        The laid-out workbook.

    Returns
    -------
    dict
        (sheet title, coordinate) → the groups of :data:`GROUPS` whose edit leaves its value behind; only cells with at
        least one group.
    """
    import sys

    index = _Index(book)
    sheets = {sh.title: sh for sh in book.sheets}
    named = {ref: name for name, ref in book.names.items() if name in VALUE_INPUTS}
    memo: dict[tuple[str, str], frozenset[str]] = {}
    ranges: dict[tuple[str, str, str | None], frozenset[str]] = {}  # each range read, once (a catalog table, many times)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))

    def of_range(key: tuple[str, str, str | None]) -> frozenset[str]:
        if key not in ranges:
            ranges[key] = frozenset()  # a circle (none is written) ends here
            ranges[key] = frozenset().union(*(groups(k) for k in index.cover(*key)))
        return ranges[key]

    def groups(key: tuple[str, str]) -> frozenset[str]:
        if key in memo:
            return memo[key]
        memo[key] = frozenset()  # a circle (none is written) ends here
        sh = sheets.get(key[0])
        cell = sh.cells.get(key[1]) if sh is not None else None
        if cell is None:
            found: frozenset[str] = frozenset()
        elif cell.formula:
            found = frozenset().union(*(of_range(r) for r in _refs(book, key[0], str(cell.value))))
        elif cell.kind == "static" or cell.depends is not None:  # an engine value, or words about one
            found = frozenset(_own_groups(named, sh, key[1], cell))
        else:
            found = frozenset()
        memo[key] = found
        return found

    try:
        out = {}
        for sh in book.sheets:
            for coord, cell in sh.cells.items():
                if cell.kind in ("flag", "banner"):  # a banner points at the Checks sheet, whose rows are flagged
                    continue
                g = groups((sh.title, coord))
                if g:
                    out[(sh.title, coord)] = g
        return out
    finally:
        sys.setrecursionlimit(limit)


def _unchanged(groups) -> str:
    """AND of the Summary's unchanged-group cells, in :data:`GROUPS` order. [formula]"""
    return f"AND({','.join(group_name(g) for g in GROUPS if g in groups)})"


def flag_engine_values(book: Book) -> None:
    """Give every engine value, and every formula that reads one, a stale flag beside it (:attr:`Book.flags`).

    A sheet that is all engine values (``stale_flag``: Options, Schedule) has its one flag at the top, over the union of
    its cells' groups. Elsewhere each row with such a cell has one flag: the row's own flag cell where it has one (the
    Summary's, a breakpoint's), widened to the row's groups; else a new cell in the sheet's ``flag_col`` (or just past
    the row's last cell) that shows nothing while the row is current and STALE once an input of its groups changes.

    Parameters
    ----------
    book : Book
        The laid-out workbook; changed in place.
    """
    from openpyxl.utils import get_column_letter

    stale = engine_groups(book)
    book.flag_groups = stale
    by_row: dict[tuple[str, int], set[str]] = {}
    for (title, coord), g in stale.items():
        by_row.setdefault((title, _rc(coord)[0]), set()).update(g)
    sheets = {sh.title: sh for sh in book.sheets}
    for sh in book.sheets:
        if sh.stale_flag is None:
            continue
        title, coord = _name_cell(book, sh.stale_flag)
        groups = set().union(*(g for (t, _), g in by_row.items() if t == sh.title))
        if groups:  # else the sheet holds no engine value (no month to schedule): its flag keeps its own groups
            sheets[title].cells[coord].value = group_flag(groups)
        for (t, c) in [k for k in stale if k[0] == sh.title]:
            book.flags[(t, c)] = (title, coord)
    tables: dict[tuple[str, str], set[str]] = {}  # a table's flag -> the groups of its rows
    for (title, row), groups in by_row.items():
        if row in sheets[title].row_flags:
            tables.setdefault((title, sheets[title].row_flags[row]), set()).update(groups)
    for (title, coord), groups in tables.items():
        sheets[title].put(coord[0] if coord[1].isdigit() else coord.rstrip("0123456789"), _rc(coord)[0],
                          Cell(f'=IF({_unchanged(groups)},"{ROW_CURRENT}","{ROW_STALE}")', formula=True, cached=ROW_CURRENT,
                               kind="flag"))
    for (title, row), groups in sorted(by_row.items()):
        sh = sheets[title]
        if sh.stale_flag is not None:
            continue
        if row in sh.row_flags:
            for (t, c) in [k for k in stale if k[0] == title and _rc(k[1])[0] == row]:
                book.flags[(t, c)] = (title, sh.row_flags[row])
            continue
        in_row = sorted((_rc(c)[1], c) for c in sh.cells if _rc(c)[0] == row)
        own = next((c for _, c in in_row if sh.cells[c].kind == "flag"), None)
        if own is not None:
            cell = sh.cells[own]
            ref = _FLAG_REF.fullmatch(str(cell.value))
            if ref and all(group_name(g) in str(_named_cell(book, sheets, ref.group(1)).value) for g in groups):
                pass  # the flag of the value this row continues (a sentence's next line), which covers the row
            elif _GROUP_FLAG.fullmatch(str(cell.value)):  # a flag over groups alone: exactly what the row reads
                cell.value = group_flag(groups)
            else:  # a flag of its own (a breakpoint's searched input), and the row's groups, in its own words
                inner = str(cell.value)[1:]
                words = re.search(r'"(STALE[^"]*)"', inner)
                cell.value = f'=IF({_unchanged(groups)},{inner},"{words.group(1) if words else ROW_STALE}")'
        else:
            last = in_row[-1][0] if in_row else 0
            col = sh.flag_col if sh.flag_col is not None and f"{sh.flag_col}{row}" not in sh.cells else get_column_letter(last + 1)
            own = sh.put(col, row, Cell(f'=IF({_unchanged(groups)},"{ROW_CURRENT}","{ROW_STALE}")', formula=True,
                                        cached=ROW_CURRENT, kind="flag"))
        for _, c in in_row:
            if (title, c) in stale:
                book.flags[(title, c)] = (title, own)


_GROUP_FLAG = re.compile(rf'=IF\(AND\((?:Unchanged[A-Za-z]+Inputs,?)+\),"{CURRENT}","{re.escape(STALE)}"\)')


_FLAG_REF = re.compile(r"=([A-Za-z][A-Za-z0-9_]*Stale)")


def _named_cell(book: Book, sheets: dict[str, Sheet], name: str) -> Cell:
    """The cell a single-cell defined name points at. [cell]"""
    title, coord = _name_cell(book, name)
    return sheets[title].cells[coord]


def _name_cell(book: Book, name: str) -> tuple[str, str]:
    """(sheet title, coordinate) of a single-cell defined name. [—]"""
    sheet, _, coord = book.names[name].rpartition("!")
    return sheet.strip("'").replace("''", "'"), coord.replace("$", "")
