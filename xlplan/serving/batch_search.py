"""The largest batch within a target: a bracketed root search on a step that grows with the batch.

:func:`max_batch_within` searches any increasing step (false position with the Illinois halving, on floats or on a
sweep's columns); :func:`max_batch_on_lines` answers in closed form where the step is two lines
(:func:`xlplan.serving.folded_step.step_lines`, a dense model).

References
----------
Dowell & Jarratt, "A modified regula falsi method for computing the root of an equation", BIT 11, 1971 (the
Illinois method).
"""

from __future__ import annotations

from xlplan import arrays

ROOT_RELATIVE_TOLERANCE = 1e-12
"""How close :func:`max_batch_within` brings its bracket, relative to the batch: far below any whole replica. [1]"""

ROOT_CLOSED = 2.5
"""The bracket counts as closed at this many tolerances wide (every trial keeps one tolerance from each end). [1]"""

ROOT_FIRST_STEP = 0.999
""":func:`max_batch_within`'s second trial, this fraction of the top: with the top, the first secant from above. [1]"""

ROOT_MAX_STEPS = 64
"""A cap on :func:`max_batch_within`'s steps (it takes about four; halving alone would close in 64). [1]"""


def max_batch_within(step_of_batch, limit_s, upper):
    """Largest batch whose step time stays within ``limit_s``, by a bracketed root search on a monotone step. [sequences]

    Parameters
    ----------
    step_of_batch : callable
        Batch (float or array) → step time [s]; increasing in the batch.
    limit_s : float or array
        The inter-token target. [s]
    upper : float or array
        A batch known to be too large, or the most the replica may run (max_num_seqs, the cache). [sequences]

    Returns
    -------
    float or array
        The largest batch (fractional, to :data:`ROOT_RELATIVE_TOLERANCE` of it) with ``step_of_batch(b) <= limit_s``;
        ``upper`` when even that fits; 0 when not even one sequence does. [sequences]

    Notes
    -----
    The step is a sum of rooflines, each the larger of a line and a constant in the batch, so it is piecewise linear:
    false position with the Illinois halving finds the crossing in about four steps, where halving the bracket took
    64. Every trial stays at least the tolerance inside the bracket, so a root hugging one end is closed in one more
    step, and the answer is always the bracket's feasible end (its step is within the target). Written with
    :mod:`xlplan.arrays` so arrays (the sweep) work, each element stopping when its own bracket closes; on plain floats
    the same steps run as a plain loop (the planner's every what-if and breakpoint), with the same result to the bit.

    References
    ----------
    Dowell & Jarratt, "A modified regula falsi method for computing the root of an equation", BIT 11, 1971 (the
    Illinois method).
    """
    at_upper = step_of_batch(upper)
    at_one = step_of_batch(1.0 + 0.0 * upper)
    fits_all, fits_one = at_upper <= limit_s, at_one <= limit_s
    if not arrays.is_array(fits_all, fits_one, upper, limit_s):  # plain floats: the same steps without numpy
        return _max_batch_floats(step_of_batch, limit_s, upper, at_upper, at_one, fits_all, fits_one)
    return _max_batch_arrays(step_of_batch, limit_s, upper, at_upper, at_one, fits_all, fits_one)


def _max_batch_floats(step_of_batch, limit_s, upper, at_upper, at_one, fits_all, fits_one):
    """:func:`max_batch_within` on plain floats: the secant from above, then false position (Illinois). [sequences]"""
    if fits_all:
        return upper * 1.0
    if not fits_one:
        return 0.0 * upper
    lo, hi = 1.0, upper * 1.0
    g_lo, g_hi = at_one - limit_s, at_upper - limit_s
    x = hi * ROOT_FIRST_STEP  # a second point near the top: the secant from above starts from these two
    g = step_of_batch(x) - limit_s
    above = g > 0.0
    prev, g_prev = hi, g_hi
    if above:
        hi, g_hi = x, g
    else:
        lo, g_lo = x, g
    side = 1 if above else -1
    for _ in range(ROOT_MAX_STEPS):
        tol = ROOT_RELATIVE_TOLERANCE * hi
        if hi - lo <= ROOT_CLOSED * tol:
            break
        if above:  # both points over the target: their secant, on a convex step, lands at or over the crossing
            x = hi - g_hi * (hi - prev) / (g_hi - g_prev)
        else:  # a bracket: false position, the end that stays put halved (Illinois)
            x = hi - g_hi * (hi - lo) / (g_hi - g_lo)
        if x != x:  # an infinite step at the top: halve instead
            x = 0.5 * (lo + hi)
        x = min(max(x, lo + tol), hi - tol)
        g = step_of_batch(x) - limit_s
        if g <= 0.0:
            lo, g_lo = x, g
            if side < 0:
                g_hi *= 0.5
            side, above = -1, False
        else:
            if above:
                prev, g_prev = hi, g_hi
            elif side > 0:
                g_lo *= 0.5
            hi, g_hi = x, g
            side = 1
    return lo


def _max_batch_arrays(step_of_batch, limit_s, upper, at_upper, at_one, fits_all, fits_one):
    """:func:`max_batch_within` on arrays: the same steps element by element, each stopping when its bracket closes. [sequences]"""
    np = arrays.numpy_module()
    shape = np.broadcast_shapes(np.shape(at_upper), np.shape(at_one), np.shape(upper), np.shape(limit_s))

    def full(v):
        return np.broadcast_to(np.asarray(v, dtype=float), shape)

    upper = full(upper).copy()
    lo = np.ones(shape)
    # only the elements still searching are carried (the step itself is timed on whole columns, the rest held at 1)
    idx = np.flatnonzero(~full(fits_all).astype(bool) & full(fits_one).astype(bool))
    limit = full(limit_s).ravel()[idx]
    lo_i, hi_i = lo.ravel()[idx], upper.ravel()[idx]
    g_lo = full(at_one).ravel()[idx] - limit
    g_hi = full(at_upper).ravel()[idx] - limit
    trial = np.ones(shape)
    flat = trial.reshape(-1)  # a view: writing a trial into it writes the column the step is timed on
    x = hi_i * ROOT_FIRST_STEP
    flat[idx] = x
    g = full(step_of_batch(trial)).ravel()[idx] - limit
    flat[idx] = 1.0
    above = g > 0.0
    prev, g_prev = hi_i, g_hi
    hi_i, g_hi = np.where(above, x, hi_i), np.where(above, g, g_hi)
    lo_i, g_lo = np.where(above, lo_i, x), np.where(above, g_lo, g)
    side = np.where(above, 1.0, -1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        for _ in range(ROOT_MAX_STEPS):
            tol = ROOT_RELATIVE_TOLERANCE * hi_i
            open_ = ~(hi_i - lo_i <= ROOT_CLOSED * tol)
            if not open_.all():
                lo.reshape(-1)[idx[~open_]] = lo_i[~open_]
                idx, limit, lo_i, hi_i, g_lo, g_hi, side, tol, above, prev, g_prev = (
                    v[open_] for v in (idx, limit, lo_i, hi_i, g_lo, g_hi, side, tol, above, prev, g_prev))
            if not idx.size:
                break
            x = np.where(above, hi_i - g_hi * (hi_i - prev) / (g_hi - g_prev), hi_i - g_hi * (hi_i - lo_i) / (g_hi - g_lo))
            x = np.where(x != x, 0.5 * (lo_i + hi_i), x)
            x = np.minimum(np.maximum(x, lo_i + tol), hi_i - tol)
            flat[idx] = x
            g = full(step_of_batch(trial)).ravel()[idx] - limit
            flat[idx] = 1.0
            low = g <= 0.0
            g_hi = np.where(low & (side < 0), g_hi * 0.5, g_hi)
            g_lo = np.where(~low & ~above & (side > 0), g_lo * 0.5, g_lo)
            prev, g_prev = np.where(~low & above, hi_i, prev), np.where(~low & above, g_hi, g_prev)
            lo_i, g_lo = np.where(low, x, lo_i), np.where(low, g, g_lo)
            hi_i, g_hi = np.where(low, hi_i, x), np.where(low, g_hi, g)
            side = np.where(low, -1.0, 1.0)
            above = above & ~low
        lo.reshape(-1)[idx] = lo_i
    return np.where(fits_all, upper * 1.0, np.where(fits_one, lo, 0.0 * upper))


def max_batch_on_lines(lines, limit_s, upper):
    """:func:`max_batch_within` for a step of two lines (:func:`xlplan.serving.folded_step.step_lines`): where the higher meets the target. [sequences]

    Parameters
    ----------
    lines : tuple
        ``(a₁, s₁, a₂, s₂)`` of :func:`xlplan.serving.folded_step.step_lines`. [s, s/sequence]
    limit_s : float or array
        The inter-token target. [s]
    upper : float or array
        The most the replica may run. [sequences]

    Returns
    -------
    float or array
        ``min((limit − a₁) ÷ s₁, (limit − a₂) ÷ s₂)``, at most ``upper``; 0 when one sequence misses. [sequences]

    Notes
    -----
    The step is the larger of the two lines, so it is within the target exactly where both are; each line with a
    positive slope meets it once, and one that does not rise bounds nothing (its intercept decides alone).
    """
    a1, s1, a2, s2 = lines

    def reach(a, sl):
        over = arrays.where(a <= limit_s, arrays.INF + 0.0 * a, 0.0 * a)  # a flat line: always within, or never
        return arrays.where(sl > 0.0, (limit_s - a) / arrays.where(sl > 0.0, sl, 1.0 + 0.0 * sl), over)

    b = arrays.minimum(arrays.minimum(reach(a1, s1), reach(a2, s2)), upper * 1.0)
    return arrays.where(b < 1.0, 0.0 * b, b)

