"""The second spreadsheet engine: the `formulas` package (PyPI), which parses and evaluates Excel's grammar.

Why `formulas` and not pycel: pycel 1.0b30 cannot resolve workbook-scope defined names used as operands
(``Table Name not found: ModelRow``) and so fails on 1,042 of the template's 1,078 formula cells, while `formulas`
evaluates all of them. Unlike LibreOffice it follows Excel's naming rules: a defined name shaped like a cell address
(the old ``Z95``) is read as that cell, exactly as Excel would refuse it — which is how it caught that bug.

For the ``--formulas udf`` variant the xlplan Excel functions are registered into the engine; each call goes
through xlwings' own Office.js dispatch (``custom_functions_call``) with arguments in the shapes Excel sends, so a
UDF cell is evaluated the way Excel with the add-in evaluates it, and every native cell downstream of it too.

Compiling a workbook's formulas costs about ten times evaluating them, so each workbook shape is compiled once per
test process and every workbook of that shape is evaluated on it (:func:`evaluate`). A new shape is compiled from
what earlier workbooks compiled: every formula (kept per cell, text and the defined names it reads), every constant and
the defined names themselves. Evaluating replays the calls schedula made the first time (:class:`_Replay`); each
cell's formula runs as the straight line of calls its compiled pipe already lists (:class:`_Line`); the ufunc
`formulas` builds for each call of a function is built once (:func:`_cached_vectorize`); and the cyclic garbage
collector pauses while models are compiled and leaves compiled models alone after (:func:`_uncollected`). None of
this changes `formulas`' arithmetic: ``tests/test_excel_grammar_shapes.py`` holds the result to a fresh compilation
that uses none of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
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


_REGISTERED = False  # whether the xlplan functions are known to the engine in this process


def register_udfs(on: bool = True) -> None:
    """Make the xlplan Excel functions known to the engine (as the add-in makes them known to Excel), or, with
    ``on=False``, unknown again (Excel without the add-in). `formulas` binds functions when it compiles."""
    global _REGISTERED
    if not on and not _REGISTERED:
        return  # never made known in this process: nothing to unregister (and xlwings need not be imported)
    import formulas.functions as F

    from udfs import functions as U

    _REGISTERED = on
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


_COMPILED_FORMULAS: dict[tuple, object] = {}  # per test process: (cell, formula, sheet, its names) -> compiled cell
_COMPILED_CONSTANTS: dict[tuple, object] = {}  # per test process: (cell, type, value, sheet) -> compiled constant
_NAMES_BY_WORD: dict[int, tuple] = {}  # id of a model's defined-name table -> (the table, {NAME: its definitions})


@functools.cache
def _udf_call():
    import re

    from xlplan.excel.common import UDF_NAMES

    return re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(UDF_NAMES) + r")\(", re.IGNORECASE)


def _calls_udf(formula: str) -> bool:
    """Whether a formula calls one of the xlplan Excel functions (with or without a namespace)."""
    return _udf_call().search(formula) is not None


@functools.cache
def _word():
    """A defined name's word in a formula (formulas upper-cased first)."""
    import re

    return re.compile(r"[A-Z_\\][A-Z0-9_.\\]*")


def _names_read(formula: str, references) -> tuple:
    """The defined names a formula can read, with their definitions: every name whose word appears in its text.

    `formulas` consults a compiling cell's defined-name table only for the operands of its own formula
    (``Builder.compile`` and ``Cell.update_inputs`` look up the formula's data nodes in it), so two cells with the same
    formula, coordinate and sheet compile alike wherever these definitions agree, whatever other names differ. A word
    that merely looks like a name (in a string, say) only adds to the key, which errs on the side of compiling."""
    held = _NAMES_BY_WORD.get(id(references))
    if held is None or held[0] is not references:
        by_word: dict[str, list] = {}
        for key, ref in references.items():
            by_word.setdefault(key.rpartition("!")[2].upper(), []).append((key, repr(ref)))
        held = _NAMES_BY_WORD[id(references)] = (references, {w: tuple(sorted(v)) for w, v in by_word.items()})
    by_word = held[1]
    return tuple(by_word[w] for w in sorted(set(_word().findall(formula.upper()))) if w in by_word)


def _only(references, read: tuple) -> dict:
    """The defined-name table cut to the names a formula reads (:func:`_names_read`): `formulas` tests every name of
    the table against the formula's operands as it compiles, so a whole table costs a scan per name per formula."""
    return {key: references[key] for group in read for key, _ in group}


def _memoised_compile_cell(original, udfs: bool):
    """`formulas`' compilation of one cell, kept per (coordinate, formula text, sheet, the defined names it reads): the
    workbooks of different plans share almost every formula, and parsing and building them is most of a compilation.
    A compiled cell is immutable (``Cell.add`` only reads it), so the next workbook's model takes it as it is."""

    def compile_cell(crd, val, context, check_formula, references):
        if not (check_formula and isinstance(val, str) and val.startswith("=")):  # a constant: its value is the key
            key = (crd, type(val).__name__, repr(val), check_formula, context.get("excel"), context.get("sheet"))
            cell = _COMPILED_CONSTANTS.get(key)
            if cell is None:
                cell = _COMPILED_CONSTANTS[key] = original(crd, val, context, check_formula, references)
            return cell
        # functions bind as they compile: a formula calling an xlplan function is kept apart with the add-in loaded
        read = _names_read(val, references)
        key = (crd, val, context.get("excel"), context.get("sheet"), read, udfs and _calls_udf(val))
        cell = _COMPILED_FORMULAS.get(key)
        if cell is None:
            cell = _COMPILED_FORMULAS[key] = original(crd, val, context, check_formula, _only(references, read))
        return cell

    return compile_cell


_RESOLVED_NAMES: dict[tuple, tuple] = {}  # per test process: (book, every defined name) -> (compiled names, resolved)


def _memoised_add_references(original):
    """`formulas`' reading of a workbook's defined names, kept per (book, every defined name with its definition):
    resolving them is one schedula dispatch over all of them, and every plan's workbook has the same names. The
    compiled names are immutable like compiled cells (``Cell.add`` only reads them), so the next model adds them."""

    def add_references(self, book, context=None):
        names = book.defined_names
        names = names.values() if isinstance(names, dict) else names.definedName
        key = (context.get("excel"), repr(sorted((context.get("external_links") or {}).items())),
               tuple(sorted((n.name, n.value, bool(n.hidden), repr(n.localSheetId)) for n in names)))
        held = _RESOLVED_NAMES.get(key)
        if held is None:
            refs = original(self, book, context=context)
            _RESOLVED_NAMES[key] = ({k: self.cells[k] for k in refs}, dict(refs))
            return refs
        compiled, refs = held
        for output, ref in compiled.items():
            ref.add(self.dsp, context=context)
            self.cells[output] = ref
        return dict(refs)

    return add_references


@contextlib.contextmanager
def _uncollected():
    """The cyclic garbage collector paused: compiling a workbook allocates hundreds of thousands of long-lived objects
    and frees almost none, so collecting meanwhile only walks them again and again (about a third of a compilation).
    What an evaluation leaves behind is collected after, as usual."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
    original, add_references = ExcelModel.__dict__["_compile_cell"], ExcelModel.__dict__["add_references"]
    try:
        if memo:
            ExcelModel._compile_cell = staticmethod(_memoised_compile_cell(original.__func__, udfs))
            ExcelModel.add_references = _memoised_add_references(add_references)
        with _uncollected():
            return formulas.ExcelModel().loads(str(book)).finish()
    finally:
        ExcelModel._compile_cell, ExcelModel.add_references = original, add_references
        shutil.rmtree(folder, ignore_errors=True)


class _Replay:
    """A compiled model's evaluation as the fixed sequence of calls schedula made for it, replayed on new constants.

    schedula evaluates a model by visiting nodes outward from the inputs, calling each function node whose outputs are
    still wanted and giving each data node the estimate nearest the start. Which functions run, in which order, and
    which function's estimate each data node keeps depend on the graph and on which data nodes are given — never on
    their values — so a workbook of the same shape (the same formulas, the same constant cells given) makes the same
    calls. :meth:`record` notes them during one schedula dispatch; :meth:`run` makes them again, with the same functions
    and the same filters on the same values, without schedula's per-node bookkeeping (most of an evaluation). A call
    that raises, or a run that met anything else, falls back to schedula itself.
    """

    def __init__(self, model):
        self.model = model
        self.calls = None  # [(function, inputs, [(output position, data id, filters)], function filters, kwargs)]
        self.starts = None  # [(data id, filters)]: the data nodes schedula set from inputs and defaults

    def record(self, inputs=None):
        """One schedula dispatch (the solution it returns), noting the calls it made where they can be replayed."""
        from schedula.utils.cst import START
        from schedula.utils.dsp import SubDispatch, parent_func

        dsp = self.model.dsp
        order, failed, originals = [], [], {}
        for fid, node in dsp.function_nodes.items():
            originals[fid] = function = node["function"]

            def noted(*args, _function=function, _fid=fid, **kwargs):
                order.append(_fid)
                try:
                    return _function(*args, **kwargs)
                except BaseException:
                    failed.append(_fid)
                    raise

            node["function"] = noted
        try:
            solution = self.model.calculate(inputs=inputs) if inputs is not None else self.model.calculate()
        finally:
            for fid, function in originals.items():
                dsp.nodes[fid]["function"] = function
        if failed or len(set(order)) != len(order):
            return solution
        pred, nodes = solution.workflow.pred, dsp.nodes
        source, starts = {}, []
        for data_id in solution:
            edges = [k for k in pred.get(data_id, {})]
            if len(edges) != 1:
                return solution
            if edges[0] is START:
                starts.append((data_id, tuple(nodes[data_id].get("filters") or ())))
            else:
                source.setdefault(edges[0], []).append(data_id)
        calls = []
        for fid in order:
            node = nodes[fid]
            function = originals[fid]
            subdispatch = isinstance(parent_func(function), SubDispatch)
            outputs = list(node["outputs"])
            sets = [(outputs.index(d), d, tuple(nodes[d].get("filters") or ())) for d in source.get(fid, ())]
            kwargs = {"_stopper": None, "_executor": False, "_sol_name": (fid,), "_verbose": False} if subdispatch else {}
            calls.append((function, tuple(node["inputs"]), len(outputs) > 1, sets,
                          tuple(node.get("filters") or ()), kwargs))
        self.calls, self.starts = calls, starts
        return solution

    def run(self, inputs):
        """{data id: value} as schedula's dispatch with these inputs gives it, or None where this model cannot be
        replayed (the caller then dispatches)."""
        from schedula.utils.cst import NONE

        if self.calls is None:
            return None
        defaults = self.model.dsp.default_values
        values = {}
        for data_id, filters in self.starts:
            v = inputs[data_id] if data_id in inputs else defaults[data_id]["value"]
            for f in filters:
                v = f(v)
            values[data_id] = v
        try:
            for function, args, many, sets, filters, kwargs in self.calls:
                res = function(*[v for v in (values.get(a, NONE) for a in args) if v is not NONE], **kwargs)
                for f in filters:
                    res = f(res)
                for position, data_id, data_filters in sets:
                    v = res[position] if many else res
                    if v is NONE:
                        return None
                    for f in data_filters:
                        v = f(v)
                    values[data_id] = v
        except Exception:
            return None
        return {k: v for k, v in values.items() if v is not NONE}


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
        self.replay = _Replay(self.model)


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
    with _uncollected():
        shape_key, constants = _read_file(path)
        shape = _SHAPES.get((shape_key, udfs))
        if shape is None:
            shape = _Shape(path, udfs)
            # the constants as read here are the constants `formulas` compiled, or the shortcut would be unsound
            defaults = shape.model.dsp.default_values
            differ = [cell for cell, key in shape.keys.items() if cell in constants and defaults[key]["value"] != constants[cell]]
            assert not differ, f"{path}: constants read otherwise than `formulas` reads them: {differ[:5]}"
            _SHAPES[(shape_key, udfs)] = shape
            # a compiled shape lives as long as the test process: the collector need not walk its object graph again
            # (each full collection otherwise walks every compiled workbook, and pytest makes one at its exit)
            gc.freeze()
            solution = shape.replay.record()
        else:
            inputs = {key: constants.get(cell, shape.empty if shape.empty is not None else EMPTY)
                      for cell, key in shape.keys.items()}
            solution = shape.replay.run(inputs)
            if solution is None:
                solution = shape.model.calculate(inputs=inputs)
        return _values(solution)


def evaluate_fresh(path: str | Path, udfs: bool = False) -> dict[tuple[str, str], object]:
    """:func:`evaluate` by compiling this very file, sharing nothing (the reference the compiled shapes are held to):
    no memo, no straight lines, numpy's own ``vectorize``."""
    _with_udfs(udfs)
    _cached_vectorize(False)
    with _uncollected():
        return _values(_load(Path(path), memo=False).calculate())


def _excel_round(x, digits):
    """Excel's ROUND: half away from zero on the number's 15 significant decimal digits. [—]"""
    from decimal import ROUND_HALF_UP, Decimal

    v = float(Decimal(format(abs(x), ".15g")).quantize(Decimal(1).scaleb(-int(digits)), rounding=ROUND_HALF_UP))
    return -v if x < 0 else v


def _excel_rounding() -> None:
    """Give the engine Excel's ROUND. Excel rounds the number as it holds it, 15 significant digits, half away from
    zero: ``ROUND(149.985, 2)`` is 149.99 in Excel and in LibreOffice. `formulas` rounds the exact binary value
    (149.98499999999999943…) and gave 149.98, a cent under both (a drawn plan at 99.99 req/s, its Sensitivities tab's
    "peak rate × 1.5"). Idempotent; bound before any workbook compiles in the process."""
    import formulas.functions as F
    from formulas.functions import wrap_ufunc

    fn = wrap_ufunc(_excel_round)
    for functions in (F.FUNCTIONS, F.get_functions()):
        functions["ROUND"] = fn


def _with_udfs(udfs: bool) -> None:
    _excel_rounding()
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
