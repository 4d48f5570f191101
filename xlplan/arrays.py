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


def is_array(*xs) -> bool:
    """Whether any argument is a numpy array (or numpy scalar), without importing numpy.

    Parameters
    ----------
    *xs : float, int, bool or array
        The arguments of a helper. [any unit]

    Returns
    -------
    bool
        True when one of them comes from numpy: the helper then takes numpy's path.
    """
    for x in xs:  # a plain loop, the floats skipped first: this runs on every helper call of the scalar planner
        t = type(x)
        if t is not float and t is not int and t is not bool and t.__module__ == "numpy":
            return True
    return False


def numpy_module():
    """numpy, imported on the first call: the scalar planner never imports it.

    Returns
    -------
    module
        The numpy module.
    """
    import numpy

    return numpy


def ceil(x):
    """Round up to a whole number; infinities pass through. [same unit as x]

    Parameters
    ----------
    x : float or array
        The value to round up, in whatever unit the caller counts (GPUs, replicas, …). [any unit]

    Returns
    -------
    float or array
        The smallest whole number not below ``x`` (a float, or a numpy array for an array). [same unit as x]
    """
    if type(x) is float:  # the scalar planner's case first: no dispatch
        return float(math.ceil(x)) if math.isfinite(x) else x
    if is_array(x):
        return numpy_module().ceil(x)
    return float(math.ceil(x)) if math.isfinite(x) else x


def floor(x):
    """Round down to a whole number; infinities pass through. [same unit as x]

    Parameters
    ----------
    x : float or array
        The value to round down, in whatever unit the caller counts. [any unit]

    Returns
    -------
    float or array
        The largest whole number not above ``x`` (a float, or a numpy array for an array). [same unit as x]
    """
    if is_array(x):
        return numpy_module().floor(x)
    return float(math.floor(x)) if math.isfinite(x) else x


def maximum(a, b):
    """Element-wise maximum.

    Parameters
    ----------
    a : float or array
        First operand. [any unit]
    b : float or array
        Second operand, in the unit of ``a``. [same unit as a]

    Returns
    -------
    float or array
        The larger of ``a`` and ``b`` (element by element for arrays). [same unit as a]
    """
    if type(a) is float and type(b) is float:
        return max(a, b)
    if is_array(a, b):
        return numpy_module().maximum(a, b)
    return max(a, b)


def minimum(a, b):
    """Element-wise minimum.

    Parameters
    ----------
    a : float or array
        First operand. [any unit]
    b : float or array
        Second operand, in the unit of ``a``. [same unit as a]

    Returns
    -------
    float or array
        The smaller of ``a`` and ``b`` (element by element for arrays). [same unit as a]
    """
    if type(a) is float and type(b) is float:
        return min(a, b)
    if is_array(a, b):
        return numpy_module().minimum(a, b)
    return min(a, b)


def where(cond, a, b):
    """Element-wise ``a if cond else b``.

    Parameters
    ----------
    cond : bool or array of bool
        Where to take ``a``; a truth value, no unit. [1]
    a : float or array
        Value where ``cond`` holds. [any unit]
    b : float or array
        Value where it does not, in the unit of ``a``. [same unit as a]

    Returns
    -------
    float or array
        ``a`` where ``cond`` holds, else ``b`` (element by element for arrays). [same unit as a]
    """
    if is_array(cond, a, b):
        return numpy_module().where(cond, a, b)
    return a if cond else b


def exp(x):
    """Element-wise exponential.

    Parameters
    ----------
    x : float or array
        Exponent, a pure number (e.g. a log ratio or ``σ²/2``). [1]

    Returns
    -------
    float or array
        ``e**x``. [1]
    """
    return numpy_module().exp(x) if is_array(x) else math.exp(x)


def log(x):
    """Element-wise natural logarithm.

    Parameters
    ----------
    x : float or array
        A positive pure number (e.g. a ratio of two lengths or two latencies). [1]

    Returns
    -------
    float or array
        ``ln x``. [1]
    """
    return numpy_module().log(x) if is_array(x) else math.log(x)


def div_pos(a, b):
    """``a / b`` where ``b > 0``, else +inf (a resource that has no room).

    Used where a zero or negative denominator means "this configuration cannot
    hold any of it" (e.g. a KV budget that the weights have already used up).

    Parameters
    ----------
    a : float or array
        Numerator (e.g. the requests in flight, or a monthly cost). [any unit]
    b : float or array
        Denominator (e.g. the batch one replica carries, or the tokens served); zero or negative means no room. [any unit]

    Returns
    -------
    float or array
        ``a / b``, or +inf where ``b <= 0``. [unit of a / unit of b]
    """
    if is_array(a, b):
        np = numpy_module()
        b_arr = np.asarray(b, dtype=float)
        safe = np.where(b_arr > 0, b_arr, 1.0)
        return np.where(b_arr > 0, np.asarray(a, dtype=float) / safe, np.inf)
    return a / b if b > 0 else INF
