"""Arithmetic helpers that work on Python floats and on numpy arrays alike.

The pure functions of xlplan are written once and used both by the scalar
planner (plain floats, no numpy imported: the engine must import in Pyodide
without compiled extras) and by the vectorized sweep (numpy arrays). These
helpers choose ``math`` for floats and ``numpy`` for arrays; numpy is imported
only when an array is actually passed in.
"""

from __future__ import annotations

import math

INF = math.inf


def _is_array(*xs) -> bool:
    return any(type(x).__module__ == "numpy" for x in xs)


def _np():
    import numpy

    return numpy


def ceil(x):
    """Round up to a whole number; infinities pass through. [same unit as x]"""
    if _is_array(x):
        return _np().ceil(x)
    return float(math.ceil(x)) if math.isfinite(x) else x


def floor(x):
    """Round down to a whole number; infinities pass through. [same unit as x]"""
    if _is_array(x):
        return _np().floor(x)
    return float(math.floor(x)) if math.isfinite(x) else x


def maximum(a, b):
    """Element-wise maximum."""
    if _is_array(a, b):
        return _np().maximum(a, b)
    return max(a, b)


def minimum(a, b):
    """Element-wise minimum."""
    if _is_array(a, b):
        return _np().minimum(a, b)
    return min(a, b)


def where(cond, a, b):
    """Element-wise ``a if cond else b``."""
    if _is_array(cond, a, b):
        return _np().where(cond, a, b)
    return a if cond else b


def exp(x):
    """Element-wise exponential."""
    return _np().exp(x) if _is_array(x) else math.exp(x)


def log(x):
    """Element-wise natural logarithm."""
    return _np().log(x) if _is_array(x) else math.log(x)


def div_pos(a, b):
    """``a / b`` where ``b > 0``, else +inf (a resource that has no room).

    Used where a zero or negative denominator means "this configuration cannot
    hold any of it" (e.g. a KV budget that the weights have already used up).
    """
    if _is_array(a, b):
        np = _np()
        b_arr = np.asarray(b, dtype=float)
        safe = np.where(b_arr > 0, b_arr, 1.0)
        return np.where(b_arr > 0, np.asarray(a, dtype=float) / safe, np.inf)
    return a / b if b > 0 else INF
