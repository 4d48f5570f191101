"""Weighted order statistics without sorting the whole sample: the value at a cumulative weight.

A simulated run records one duration per engine step (millions on a large fleet) and the number of sequences each
step advanced; the ITL percentiles are order statistics of the repeated sample, and the KV percentile of a
time-weighted one. Sorting every step to read four ranks was most of a verification's measuring time. Here each rank
is bracketed from a random subsample (a fixed seed: the same run gives the same work), the mass below the bracket is counted in one pass, and only the values inside
the bracket are sorted. The value returned is the same as a full sort's (the first value whose cumulative weight
reaches the target is defined by the values and weights alone, whatever order ties come in); where the bracket
misses, the full sort is used.
"""

from __future__ import annotations

SMALL = 65_536  # below this many values the full sort is as quick [values]
SUBSAMPLE = 64  # the subsample that brackets each rank holds one value in this many [values]
SPREADS = 5.0  # the bracket's half-width in standard errors of the subsample's quantile (Kish's effective size) [—]
WIDENINGS = 3  # a bracket that misses is tripled this many times before the full sort [—]


def value_at_weight(values, weights, targets) -> list[float]:
    """For each target, the smallest value whose cumulative weight (values in ascending order) reaches it.

    Parameters
    ----------
    values : numpy.ndarray
        The sample's values, any order, no NaN. [unit of the sample]
    weights : numpy.ndarray
        Non-negative weight of each value, whole counts or time. [count or s]
    targets : sequence of float
        Cumulative weights to reach, each in (0, total weight]. [count or s]

    Returns
    -------
    list of float
        For each target ``t``, the value ``v`` with weight(values < v) < t ≤ weight(values ≤ v): the entry a full sort
        by value and ``searchsorted(cumsum(weights), t)`` gives. [unit of the sample]
    """
    import numpy as np

    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights)
    if len(values) <= SMALL:
        return _by_full_sort(values, weights, targets)
    pick = np.random.default_rng(0).integers(0, len(values), len(values) // SUBSAMPLE)
    sub_v, sub_w = values[pick], weights[pick].astype(float)
    if sub_w.sum() <= 0:
        return _by_full_sort(values, weights, targets)
    order = np.argsort(sub_v)
    sub_v, sub_cum = sub_v[order], np.cumsum(sub_w[order])
    effective = sub_w.sum() ** 2 / (sub_w**2).sum()  # Kish's effective sample size of a weighted sample [values]
    margin = SPREADS * 0.5 / np.sqrt(effective)  # the quantile's standard error is at most 0.5 / sqrt(n) [fraction]
    total = float(weights.sum(dtype=float))
    out = []
    for t in targets:
        found, m = None, margin
        for _ in range(WIDENINGS + 1):
            found = _in_bracket(values, weights, t, t / total if total > 0 else 0.0, m, sub_v, sub_cum)
            if found is not None:
                break
            m *= 3.0
        out.append(found if found is not None else _by_full_sort(values, weights, [t])[0])
    return out


def _in_bracket(values, weights, t, f, margin, sub_v, sub_cum) -> float | None:
    """The value at cumulative weight ``t`` (fraction ``f`` of the whole) from the values inside a bracket of
    ``margin`` either side of ``f`` in the subsample; None where the bracket does not hold it. [unit of the sample]"""
    import numpy as np

    last = len(sub_v) - 1
    lo_i = int(np.searchsorted(sub_cum, max(f - margin, 0.0) * sub_cum[-1]))
    hi_i = int(np.searchsorted(sub_cum, min(f + margin, 1.0) * sub_cum[-1]))
    lo = sub_v[min(lo_i, last)] if f - margin > 0 else -np.inf
    hi = sub_v[min(hi_i, last)] if f + margin < 1 else np.inf
    inside = (values >= lo) & (values <= hi)
    below = weights[values < lo].sum() if np.isfinite(lo) else 0
    w_in = weights[inside]
    if not (below < t <= below + w_in.sum()):
        return None
    v_in = values[inside]
    order = np.argsort(v_in)
    cum = below + np.cumsum(w_in[order])
    return float(v_in[order][np.searchsorted(cum, t)])


def _by_full_sort(values, weights, targets) -> list[float]:
    """The same values by sorting every value. [unit of the sample]"""
    import numpy as np

    order = np.argsort(values)
    v, cum = values[order], np.cumsum(weights[order])
    last = len(v) - 1
    return [float(v[min(int(np.searchsorted(cum, t)), last)]) for t in targets]
