"""Registering an Excel function with xlwings: documented parameters, ranges answered cell by cell, one-line errors.

:func:`udf` wraps xlwings' ``func`` and ``arg`` decorators, so one definition serves classic Windows UDFs (COM),
xlwings Server (Office.js) and xlwings Lite (Pyodide).
"""

from __future__ import annotations

import functools
import inspect
import sys

from xlwings import arg, func

from udfs.cells import UDFError, finite
from udfs.tables import scalar_or_grid
from xlplan.io.errors import InputError

ERROR_IN_A_CELL = "#VALUE!"
"""What one failing cell of a range call holds (Office.js, runtime 1.4+, turns it into Excel's #VALUE! error)."""


def _com_error(message: str) -> Exception:
    """Classic xlwings on Windows writes a COM exception's description into the cell; any other exception arrives
    as "Unexpected Python Error: Traceback ...". So there, raise pywin32's COMException carrying our one line."""
    try:
        from win32com.server.exception import COMException
    except ImportError:
        return UDFError(message)
    return COMException(description=message)


def _classic() -> bool:
    """Classic xlwings on Windows (COM), not xlwings Server or Lite."""
    import os

    return sys.platform.startswith("win") and os.environ.get("XLWINGS_ON_SERVER", "").lower() not in ("true", "1", "yes")


def udf(tables: tuple[str, ...] = (), rows3: bool = False, **docs: str):
    """Register an Excel function: every parameter documented (with its unit), errors made one clear line.

    ``tables`` names parameters that take a whole range (a plan table, a config); any other parameter given a
    range — a row, a column or a block — makes the function answer cell by cell in the same shape (a bad cell
    gets #VALUE! alone). ``rows3`` marks a function whose one answer is three numbers (FLEET): they spill down for
    a single input, and across, a row per input, for a range.

    Every argument reaches Python as a 2-D list (``ndim=2``) with Excel errors as text (``err_to_str``), so a row
    stays a row and #DIV/0! is named rather than read as a blank.
    """

    def wrap(f):
        sig = inspect.signature(f)
        params = list(sig.parameters)
        if set(params) != set(docs):
            raise TypeError(f"{f.__name__}: document exactly its parameters {params}, got {sorted(docs)}")
        defaults = [p.default for p in sig.parameters.values()]
        table_idx = {params.index(t) for t in tables}
        name = f.__name__.upper()

        def checked(*args):
            try:
                return finite(f(*args))
            except UDFError as e:
                message = str(e)
                raise UDFError(message if message.startswith(name) else f"{name}: {message}") from None
            except InputError as e:
                raise UDFError(f"{name}: {'; '.join(e.problems)}") from None
            except (ValueError, LookupError, ArithmeticError) as e:
                raise UDFError(f"{name}: {e}") from None
            except Exception as e:  # never a traceback in a cell
                raise UDFError(f"{name}: internal error ({type(e).__name__}: {e})") from None

        @functools.wraps(f)
        def guarded(*args):
            args = list(args) + [inspect.Parameter.empty] * (len(params) - len(args))
            call = []
            for i, a in enumerate(args):
                if a is inspect.Parameter.empty:
                    call.append(defaults[i])
                elif i in table_idx:
                    call.append(a)
                else:
                    v = scalar_or_grid(a)
                    call.append(defaults[i] if v is None and defaults[i] is not inspect.Parameter.empty else v)
            try:
                return _spread(checked, call, table_idx, rows3)
            except UDFError as e:
                if _classic():
                    raise _com_error(str(e)) from None
                raise

        g = guarded
        for p in params:
            g = arg(p, ndim=2, err_to_str=True, doc=docs[p])(g)
        return func(g)

    return wrap


def _spread(f, args: list, table_idx: set[int], rows3: bool):
    """Call ``f`` once, or once per cell when some argument is a range (all ranges the same shape)."""
    ranged = [i for i, a in enumerate(args) if isinstance(a, list) and i not in table_idx]
    if not ranged:
        return f(*args)
    shape = (len(args[ranged[0]]), len(args[ranged[0]][0]))
    for i in ranged:
        if (len(args[i]), max(len(r) for r in args[i])) != shape or any(len(r) != shape[1] for r in args[i]):
            raise UDFError(f"ranges of different shapes ({shape[0]}x{shape[1]} and {len(args[i])}x{len(args[i][0])}); "
                           "expected every range argument to have the same rows and columns")
    out = []
    for r in range(shape[0]):
        cells = []
        for c in range(shape[1]):
            call = [args[i][r][c] if i in ranged else a for i, a in enumerate(args)]
            try:
                cells.append(f(*call))
            except UDFError:
                cells.append([ERROR_IN_A_CELL] * 3 if rows3 else ERROR_IN_A_CELL)
        out.append(cells)
    if rows3:  # a row per input, the three numbers across (FLEET's one answer spills down as [[a], [b], [c]])
        return [[v[0] if isinstance(v, list) else v for v in cell] for row in out for cell in row]
    return out
