"""The second spreadsheet engine: the `formulas` package (PyPI), which parses and evaluates Excel's grammar.

Why `formulas` and not pycel: pycel 1.0b30 cannot resolve workbook-scope defined names used as operands
(``Table Name not found: ModelRow``) and so fails on 1,042 of the template's 1,078 formula cells, while `formulas`
evaluates all of them. Unlike LibreOffice it follows Excel's naming rules: a defined name shaped like a cell address
(the old ``Z95``) is read as that cell, exactly as Excel would refuse it — which is how it caught that bug.

For the ``--formulas udf`` variant the xlplan Excel functions are registered into the engine; each call goes
through xlwings' own Office.js dispatch (``custom_functions_call``) with arguments in the shapes Excel sends, so a
UDF cell is evaluated the way Excel with the add-in evaluates it, and every native cell downstream of it too.

Compiling a workbook's formulas costs about ten times evaluating them, so each workbook shape is compiled once per
test process and every workbook of that shape is evaluated on it (:func:`evaluate`). Evaluating is made about three
times faster by two changes that leave `formulas`' arithmetic as it is: each cell's formula runs as the straight line
of calls its compiled pipe already lists (:class:`_Line`), and the ufunc `formulas` builds for each call of a function
is built once (:func:`_cached_vectorize`). ``tests/test_excel_grammar_shapes.py`` holds the result to a fresh
compilation that uses neither.
"""

from __future__ import annotations

import asyncio
import functools
import math
import os
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


def register_udfs(on: bool = True) -> None:
    """Make the xlplan Excel functions known to the engine (as the add-in makes them known to Excel), or, with
    ``on=False``, unknown again (Excel without the add-in). `formulas` binds functions when it compiles."""
    import formulas.functions as F

    from udfs import functions as U

    table = F.get_functions()  # `formulas` looks functions up in this cached copy of FUNCTIONS
    for py_name in U.public_udfs():
        for functions in (F.FUNCTIONS, table):
            if on:
                functions[py_name.upper()] = _udf(py_name.upper())
            else:
                functions.pop(py_name.upper(), None)


class _Line:
    """A formula cell's compiled pipe (a schedula ``DispatchPipe``) run as the straight line of calls it already lists.

    The pipe's own order (``pipe.pipe``) is kept, and so is every node's function and every data node's filters; what
    goes is schedula's bookkeeping around each call (a workflow graph per cell per evaluation), which is most of an
    evaluation. Anything the line does not cover — a sub-dispatcher, a domain, an exception — runs the pipe itself.
    """

    __slots__ = ("pipe", "steps", "defaults", "names", "out")

    def __init__(self, pipe, steps, defaults, names, out):
        self.pipe, self.steps, self.defaults, self.names, self.out = pipe, steps, defaults, names, out

    def __getattr__(self, name):
        return getattr(self.pipe, name)  # inputs, outputs, dsp: what `formulas` reads off the pipe

    def __call__(self, *args):
        from schedula.utils.cst import NONE

        values = dict(self.defaults)
        values.update(zip(self.names, args))
        try:
            for function, inputs, output, filters in self.steps:
                if function is None:  # a data node's filters, applied as it is reached
                    v = values[output]
                else:
                    v = function(*[x for x in (values[i] for i in inputs) if x is not NONE])
                for f in filters:
                    v = f(v)
                values[output] = v
            return values[self.out]
        except Exception:
            return self.pipe(*args)  # schedula's own handling of whatever went wrong

    @classmethod
    def of(cls, pipe):
        """The line of a pipe, or None where the pipe holds anything but plain data and single-output function nodes."""
        from schedula.utils.cst import START

        nodes, steps = pipe.dsp.nodes, []
        for task, _, sub_dispatchers in pipe.pipe:
            node_id, solution = task[-1]
            if solution is not pipe._sol or sub_dispatchers:
                return None
            if node_id is START:
                continue
            node = nodes[node_id]
            if node["type"] == "data":
                if node.get("wait_inputs") or "function" in node:
                    return None
                if node.get("filters"):
                    steps.append((None, (), node_id, tuple(node["filters"])))
            elif node["type"] == "function" and "input_domain" not in node and len(node["outputs"]) == 1:
                steps.append((node["function"], tuple(node["inputs"]), node["outputs"][0], tuple(node.get("filters") or ())))
            else:
                return None
        defaults = {k: v["value"] for k, v in pipe.dsp.default_values.items()}
        return cls(pipe, steps, defaults, tuple(pipe.inputs or ()), pipe.outputs[0])


def _as_lines(model) -> None:
    """Every formula cell of a finished model run as its :class:`_Line`."""
    from formulas.cell import CellWrapper

    for node in model.dsp.function_nodes.values():
        wrapper = node["function"]
        if isinstance(wrapper, CellWrapper) and not isinstance(wrapper.func, _Line):
            line = _Line.of(wrapper.func)
            if line is not None:
                wrapper.func = line


_VECTORIZED: dict[tuple, object] = {}


class _CachedVectorize:
    """numpy with ``vectorize`` of `formulas`' per-function ``safe_eval`` kept per function: numpy then builds the
    function's ufunc once instead of on every call (each ``np.vectorize(...)`` is a new object with no ufunc yet)."""

    def __init__(self, numpy):
        self._np = numpy

    def __getattr__(self, name):
        return getattr(self._np, name)

    def vectorize(self, pyfunc, **kw):
        if getattr(pyfunc, "__name__", "") != "safe_eval":  # a closure made per call: nothing to keep
            return self._np.vectorize(pyfunc, **kw)
        key = (pyfunc, repr(sorted(kw.items())))
        v = _VECTORIZED.get(key)
        if v is None:
            v = _VECTORIZED[key] = self._np.vectorize(pyfunc, **kw)
        return v


def _cached_vectorize(on: bool) -> None:
    """Point `formulas.functions`' numpy at :class:`_CachedVectorize` (``on``) or back at numpy."""
    import formulas.functions as F
    import numpy

    F.np = _CachedVectorize(numpy) if on else numpy


_COMPILED_FORMULAS: dict[tuple, object] = {}  # per test process: (cell, formula, sheet, names) -> compiled cell
_NAMES_KEYS: dict[int, tuple] = {}  # id of a model's defined-name table -> (the table, its content as a key)


@functools.cache
def _udf_call():
    import re

    from xlplan.io.workbook.common import UDF_NAMES

    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(UDF_NAMES) + r")\(", re.IGNORECASE)


def _calls_udf(formula: str) -> bool:
    """Whether a formula calls one of the xlplan Excel functions (with or without a namespace)."""
    return _udf_call().search(formula) is not None


def _memoised_compile_cell(original, udfs: bool):
    """`formulas`' compilation of one cell, kept per (coordinate, formula text, sheet, defined names): the workbooks of
    different plans share almost every formula, and parsing and building them is most of a compilation. A compiled
    cell is immutable (``Cell.add`` only reads it), so the next workbook's model takes it as it is."""

    def compile_cell(crd, val, context, check_formula, references):
        if not (check_formula and isinstance(val, str) and val.startswith("=")):
            return original(crd, val, context, check_formula, references)
        held = _NAMES_KEYS.get(id(references))
        if held is None or held[0] is not references:
            held = _NAMES_KEYS[id(references)] = (references, repr(sorted((k, repr(v)) for k, v in references.items())))
        # functions bind as they compile: a formula calling an xlplan function is kept apart with the add-in loaded
        key = (crd, val, context.get("excel"), context.get("sheet"), held[1], udfs and _calls_udf(val))
        cell = _COMPILED_FORMULAS.get(key)
        if cell is None:
            cell = _COMPILED_FORMULAS[key] = original(crd, val, context, check_formula, references)
        return cell

    return compile_cell


def _load(path: Path, memo: bool = True, udfs: bool = False):
    """The finished `formulas` model of a workbook, loaded under one fixed file name (so formulas compiled for one
    workbook are the same objects for the next), with the per-cell memo or without it."""
    import shutil
    import tempfile

    import formulas
    from formulas.excel import ExcelModel

    folder = Path(tempfile.mkdtemp(prefix="xlplan-eg-"))
    book = folder / "book.xlsx"
    shutil.copyfile(path, book)
    original = ExcelModel.__dict__["_compile_cell"]
    try:
        if memo:
            ExcelModel._compile_cell = staticmethod(_memoised_compile_cell(original.__func__, udfs))
        return formulas.ExcelModel().loads(str(book)).finish()
    finally:
        ExcelModel._compile_cell = original
        shutil.rmtree(folder, ignore_errors=True)


class _Shape:
    """One compiled workbook shape: the `formulas` model of a file, and the data node of each constant cell."""

    def __init__(self, path: Path, udfs: bool):
        self.model = _load(path, udfs=udfs)
        _as_lines(self.model)
        defaults = self.model.dsp.default_values
        self.keys = {}  # (SHEET, 'B7') -> the node's key, for every constant cell some formula reads
        for key in defaults:
            if "]" in key:
                sheet, _, coord = key.split("]", 1)[1].rpartition("!")
                self.keys[(sheet.strip("'").upper(), coord)] = key
        self.empty = next((v["value"] for k, v in defaults.items() if isinstance(v["value"], list)), None)


_SHAPES: dict[tuple, _Shape] = {}  # per test process: one compilation per workbook shape


def _read_file(path: Path):
    """(shape key, {(SHEET, coord): constant}) of an .xlsx as `formulas` reads it: the shape is every formula's text,
    every defined name and the sheets in order; constants as openpyxl gives them, floats at 15 digits as `formulas`
    rounds them."""
    import hashlib

    import openpyxl

    wb = openpyxl.load_workbook(path)
    h = hashlib.sha256()
    constants = {}
    for ws in wb.worksheets:
        h.update(f"sheet {ws.title}\n".encode())
        for row in ws.iter_rows():
            for c in row:
                if c.value is None:
                    continue
                if c.data_type == "f":
                    text = c.value if isinstance(c.value, str) else c.value.text
                    h.update(f"{c.coordinate}={text}\n".encode())
                elif c.data_type == "e":
                    h.update(f"{c.coordinate} error {c.value}\n".encode())  # an error constant: compiled, not set
                else:
                    v = c.value
                    constants[(ws.title.upper(), c.coordinate)] = round(v, 15) if c.data_type == "n" and isinstance(v, float) else v
    for name, dn in sorted(wb.defined_names.items()):
        h.update(f"name {name}={dn.attr_text}\n".encode())
    return h.hexdigest(), constants


def evaluate(path: str | Path, udfs: bool = False) -> dict[tuple[str, str], object]:
    """Every cell's value after the engine evaluates the workbook from its formulas: {(sheet, 'B7'): value}.

    Compiling a workbook's formulas costs about ten times evaluating them, and every plan's workbook has the same
    formulas (only inputs and engine values differ). So the first workbook of each shape (same formula text in every
    cell, same names, same sheets) is compiled, and every later one of that shape is evaluated on that compiled model
    with *its own* constants set on every constant cell — exactly the values `formulas` would read from its file.
    ``tests/test_excel_grammar_shapes.py`` holds this to a fresh compilation of the file itself.
    """
    from schedula.utils.cst import EMPTY

    path = Path(path)
    _with_udfs(udfs)
    _cached_vectorize(True)
    shape_key, constants = _read_file(path)
    shape = _SHAPES.get((shape_key, udfs))
    if shape is None:
        shape = _Shape(path, udfs)
        # the constants as read here are the constants `formulas` compiled, or the shortcut would be unsound
        defaults = shape.model.dsp.default_values
        differ = [cell for cell, key in shape.keys.items() if cell in constants and defaults[key]["value"] != constants[cell]]
        assert not differ, f"{path}: constants read otherwise than `formulas` reads them: {differ[:5]}"
        _SHAPES[(shape_key, udfs)] = shape
        solution = shape.model.calculate()
    else:
        inputs = {key: constants.get(cell, shape.empty if shape.empty is not None else EMPTY)
                  for cell, key in shape.keys.items()}
        solution = shape.model.calculate(inputs=inputs)
    return _values(solution)


def evaluate_fresh(path: str | Path, udfs: bool = False) -> dict[tuple[str, str], object]:
    """:func:`evaluate` by compiling this very file, sharing nothing (the reference the compiled shapes are held to):
    no memo, no straight lines, numpy's own ``vectorize``."""
    _with_udfs(udfs)
    _cached_vectorize(False)
    return _values(_load(Path(path), memo=False).calculate())


def _with_udfs(udfs: bool) -> None:
    if udfs:
        os.environ.setdefault("XLWINGS_ON_SERVER", "true")
        os.environ.setdefault("XLWINGS_LICENSE_KEY", "noncommercial")
    register_udfs(on=udfs)


def _values(solution) -> dict[tuple[str, str], object]:
    out = {}
    for key, ranges in solution.items():
        # keys look like "'[BOOK.XLSX]3 CONSTRAINTS'!B7" (cells) or ranges "...!A1:B2" (skipped)
        ref = key.split("]", 1)[1] if "]" in key else key
        sheet, _, coord = ref.rpartition("!")
        if ":" in coord or not sheet:
            continue
        value = ranges.value[0, 0] if hasattr(ranges, "value") else ranges
        out[(sheet.strip("'").upper(), coord)] = _plain(value)
    return out


def evaluate_many(paths: list[Path], udfs: bool = False) -> list[dict]:
    """:func:`evaluate` for several workbooks, in this process, so each shape is compiled once per test process
    (pytest-xdist gives the parallelism)."""
    return [evaluate(p, udfs) for p in paths]


def value(values: dict, sheet: str, coord: str):
    """A cell's value from :func:`evaluate`'s answer; an unevaluated cell (never referenced, a constant) is None."""
    v = values.get((sheet.upper(), coord))
    if isinstance(v, float) and math.isnan(v):
        return "#NUM!"
    return v
