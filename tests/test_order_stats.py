"""Weighted order statistics by bracketing equal those of a full sort, on samples large enough to be bracketed."""

from __future__ import annotations

import numpy as np
import pytest

from xlplan.simulate import order_stats


def _full_sort(values, weights, t):
    # the definition: sort by value, accumulate the weights, take the first value whose cumulative weight reaches t
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(np.asarray(weights)[order])
    return float(values[order][min(int(np.searchsorted(cum, t)), len(cum) - 1)])


@pytest.mark.slow
def test_bracketed_ranks_equal_the_full_sort_with_ties_and_zero_counts():
    rng = np.random.default_rng(7)
    for trial in range(6):
        n = order_stats.SMALL * (trial + 2)  # past SMALL: the bracket path, not the full sort
        values = np.round(rng.lognormal(-3.5, 0.6, n), 4 + trial % 2)  # rounded: many ties across steps
        counts = rng.integers(0, 300, n) * (rng.random(n) < 0.9)  # prefill-only steps advance no sequence
        total = int(counts.sum())
        # the ranks the ITL percentiles read (p50, p95, p99, p99.9) and both ends; j-th entry = cumulative count j + 1
        targets = [1, total // 2, int(0.95 * (total - 1)) + 1, int(0.99 * (total - 1)) + 2, int(0.999 * total), total]
        got = order_stats.value_at_weight(values, counts, targets)
        assert got == [_full_sort(values, counts, t) for t in targets], trial


def test_time_weights_and_a_sample_sorted_the_wrong_way():
    rng = np.random.default_rng(3)
    n = 300_000
    values = np.sort(np.minimum(rng.beta(5, 2, n), 1.0))[::-1].copy()  # KV use, descending: the worst case for a stride
    weights = rng.exponential(0.02, n)  # step durations [s]
    total = float(weights.sum())
    for q in (1.0, 50.0, 95.0, 99.0):
        t = q / 100.0 * total
        assert order_stats.value_at_weight(values, weights, [t]) == [_full_sort(values, weights, t)], q


def test_a_small_sample_takes_the_full_sort():
    values, counts = np.array([0.3, 0.1, 0.2]), np.array([1, 2, 0])
    # sorted repeated sample: 0.1, 0.1, 0.3 (0.2 occurs zero times): entries 0, 1, 2 reach counts 1, 2, 3
    assert order_stats.value_at_weight(values, counts, [1, 2, 3]) == [0.1, 0.1, 0.3]
