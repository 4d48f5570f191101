"""The second spreadsheet engine: the `formulas` package (PyPI), which parses and evaluates Excel's grammar.

Why `formulas` and not pycel: pycel 1.0b30 cannot resolve workbook-scope defined names used as operands
(``Table Name not found: ModelRow``) and so fails on 1,042 of the template's 1,078 formula cells, while `formulas`
evaluates all of them. Unlike LibreOffice it follows Excel's naming rules: a defined name shaped like a cell address
(the old ``Z95``) is read as that cell, exactly as Excel would refuse it — which is how it caught that bug.

For the ``--formulas udf`` variant the xlplan Excel functions are registered into the engine; each call goes
through xlwings' own Office.js dispatch (``custom_functions_call``) with arguments in the shapes Excel sends, so a
UDF cell is evaluated the way Excel with the add-in evaluates it, and every native cell downstream of it too.

Loading a workbook costs ~5 s of formula compilation, so several workbooks are evaluated in parallel processes.
"""

from __future__ import annotations

import asyncio
import math
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _plain(v):
    """A `formulas` value as openpyxl would read it: float/int/str/bool, None for empty, '#DIV/0!' for an error."""
    import numpy as np
    from formulas.tokens.operand import XlError

    if isinstance(v, XlError):
        return str(v)
    from schedula.utils.cst import EMPTY  # a blank cell

    if v is None or v is EMPTY:
        return None
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.str_):
        return str(v)
    return v


def _officejs_arg(value) -> list[list]:
    """A formulas argument as Office.js sends it: a 2-D list, blanks as None, errors as Excel error objects."""
    import numpy as np
    from formulas.tokens.operand import XlError

    array = value.value if hasattr(value, "value") else np.asarray(value, dtype=object).reshape(1, -1) if np.ndim(value) else [[value]]
    out = []
    for row in np.atleast_2d(np.asarray(array, dtype=object)):
        cells = []
        for v in row:
            if isinstance(v, XlError):
                cells.append({"type": "Error", "basicValue": str(v), "errorType": str(v)})
            else:
                p = _plain(v)
                cells.append(None if p == "" else p)
        out.append(cells)
    return out


def _udf(name: str):
    def call(*args):
        import numpy as np
        import xlwings
        from formulas.tokens.operand import Error
        from xlwings.pro.udfs_officejs import custom_functions_call

        from udfs import functions as U

        data = {"func_name": name.lower(), "args": [_officejs_arg(a) for a in args], "version": xlwings.__version__,
                "client": "Office.js", "runtime": "1.4", "culture_info_name": "en-US", "date_format": "M/d/yyyy"}
        try:
            result = asyncio.run(custom_functions_call(data, U))
        except U.UDFError:
            return Error.errors["#VALUE!"]
        if isinstance(result, list) and len(result) == 1 and len(result[0]) == 1:
            result = result[0][0]
        if isinstance(result, list):
            return np.asarray(result, dtype=object)
        return result

    return call


def register_udfs() -> None:
    """Make the xlplan Excel functions known to the engine (as the add-in makes them known to Excel)."""
    import formulas.functions as F

    from udfs import functions as U

    for py_name in U.public_udfs():
        F.FUNCTIONS[py_name.upper()] = _udf(py_name.upper())


def evaluate(path: str | Path, udfs: bool = False) -> dict[tuple[str, str], object]:
    """Every cell's value after the engine evaluates the workbook from its formulas: {(sheet, 'B7'): value}."""
    import formulas

    if udfs:
        os.environ.setdefault("XLWINGS_ON_SERVER", "true")
        os.environ.setdefault("XLWINGS_LICENSE_KEY", "noncommercial")
        register_udfs()
    model = formulas.ExcelModel().loads(str(path)).finish()
    solution = model.calculate()
    book = Path(path).name.upper()
    out = {}
    for key, ranges in solution.items():
        # keys look like "'[BOOK.XLSX]3 CONSTRAINTS'!B7" (cells) or ranges "...!A1:B2" (skipped)
        ref = key.split("]", 1)[1] if "]" in key else key
        sheet, _, coord = ref.rpartition("!")
        if ":" in coord or not sheet:
            continue
        value = ranges.value[0, 0] if hasattr(ranges, "value") else ranges
        out[(sheet.strip("'").upper(), coord)] = _plain(value)
    del book
    return out


def evaluate_many(paths: list[Path], udfs: bool = False) -> list[dict]:
    """:func:`evaluate` for several workbooks, in parallel processes (the CI machine has two cores)."""
    workers = max(1, min(len(paths), os.cpu_count() or 1))
    if workers == 1:
        return [evaluate(p, udfs) for p in paths]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(evaluate, paths, [udfs] * len(paths)))


def value(values: dict, sheet: str, coord: str):
    """A cell's value from :func:`evaluate`'s answer; an unevaluated cell (never referenced, a constant) is None."""
    v = values.get((sheet.upper(), coord))
    if isinstance(v, float) and math.isnan(v):
        return "#NUM!"
    return v
