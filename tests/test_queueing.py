"""The queueing formulas (xlplan.serving.queueing) against their textbook forms.

Each expected figure comes from a closed form derived independently of the code: the Erlang B and C direct sums
(Erlang 1917), the M/M/1 and M/M/2 special cases, the M/M/c waiting-time tail, and the Pollaczek–Khinchine mean wait.
"""

from __future__ import annotations

import math

import pytest

from xlplan.serving import queueing


def _erlang_c_direct(c: int, a: float) -> float:
    """Erlang C by its defining sum: (aᶜ/c!)·c/(c − a) ÷ (Σₖ₌₀^{c−1} aᵏ/k! + (aᶜ/c!)·c/(c − a))."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize("c", [1, 2, 3, 5, 8, 13, 30])
@pytest.mark.parametrize("rho", [0.1, 0.5, 0.8, 0.95])
def test_erlang_c_equals_its_defining_sum(c, rho):
    a = rho * c
    assert queueing.erlang_c(c, a) == pytest.approx(_erlang_c_direct(c, a), rel=1e-12)
    # Erlang B by its own sum: (aᶜ/c!) ÷ Σₖ₌₀^c aᵏ/k!
    b = a**c / math.factorial(c) / sum(a**k / math.factorial(k) for k in range(c + 1))
    assert queueing.erlang_b(c, a) == pytest.approx(b, rel=1e-12)


def test_special_cases():
    # M/M/1: the chance of waiting is the utilisation ρ; M/M/2: 2ρ² ÷ (1 + ρ)
    for rho in (0.2, 0.5, 0.9):
        assert queueing.erlang_c(1, rho) == pytest.approx(rho)
        assert queueing.erlang_c(2, 2 * rho) == pytest.approx(2 * rho**2 / (1 + rho))
    # at or past the servers the queue grows without bound: everyone waits, forever on average
    assert queueing.erlang_c(4, 4.0) == 1.0 and queueing.erlang_c(4, 5.0) == 1.0
    assert queueing.mean_wait_s(4, 4.0, 1.0) == math.inf
    assert queueing.wait_at_percentile_s(4, 5.0, 1.0, 95) == math.inf
    # no load: nobody waits
    assert queueing.erlang_c(3, 0.0) == 0.0 and queueing.wait_at_percentile_s(3, 0.0, 1.0, 95) == 0.0


def test_stable_for_thousands_of_servers():
    # the direct sum overflows a float past c ≈ 170 (170! ≈ 7e306); the recursion must not
    p = queueing.erlang_c(5000, 4900.0)
    assert 0.0 < p < 1.0
    # and it matches the direct sum where both work, at 120 servers (110¹²⁰ ≈ 1e245 still fits a float)
    assert queueing.erlang_c(120, 110.0) == pytest.approx(_erlang_c_direct(120, 110.0), rel=1e-9)


def test_wait_at_a_percentile_is_the_mmc_tail():
    # M/M/1, λ = 0.8/s, S = 1 s: P(W > t) = ρ·exp(−(μ − λ)t), so t₉₅ = ln(0.8 ÷ 0.05) ÷ 0.2 = 13.863 s
    assert queueing.wait_at_percentile_s(1, 0.8, 1.0, 95) == pytest.approx(math.log(16) / 0.2)
    # M/M/c in general: P(W > t₉₅) = 0.05 at the returned t
    c, lam, s = 10, 8.5, 1.0
    t = queueing.wait_at_percentile_s(c, lam, s, 95)
    assert _erlang_c_direct(c, lam * s) * math.exp(-(c - lam * s) * t / s) == pytest.approx(0.05)
    # where fewer than 5% wait at all, the 95th percentile wait is zero
    assert _erlang_c_direct(20, 8.0) < 0.05 and queueing.wait_at_percentile_s(20, 8.0, 1.0, 95) == 0.0


def test_mean_wait_is_pollaczek_khinchine_for_md1():
    # M/D/1 (service variability 0): Wq = ρ·S ÷ (2(1 − ρ)) exactly, which Allen–Cunneen's (1 + 0)/2 gives
    for rho in (0.3, 0.5, 0.8):
        assert queueing.mean_wait_s(1, rho / 2.0, 2.0, 1.0, 0.0) == pytest.approx(rho * 2.0 / (2 * (1 - rho)))
    # M/M/1: Wq = ρ·S ÷ (1 − ρ)
    assert queueing.mean_wait_s(1, 0.5, 1.0) == pytest.approx(1.0)


def test_fewest_servers_meet_the_wait_and_one_fewer_does_not():
    for lam, s, target, pct in ((40.0, 7.5, 0.0, 95), (40.0, 7.5, 0.2, 95), (3.0, 20.0, 1.0, 99), (0.5, 2.0, 0.0, 95)):
        c = queueing.servers_for_wait(lam, s, target, pct)
        assert c is not None and c > lam * s  # more servers than the offered load, or the queue grows
        assert queueing.wait_at_percentile_s(c, lam, s, pct) <= target
        assert queueing.wait_at_percentile_s(c - 1, lam, s, pct) > target
    # a wait of zero at p95 means at most 5% may wait: Erlang C ≤ 0.05, checked on the direct sum
    c = queueing.servers_for_wait(4.0, 1.0, 0.0, 95)
    assert _erlang_c_direct(c, 4.0) <= 0.05 < _erlang_c_direct(c - 1, 4.0)
    assert queueing.servers_for_wait(1.0, 1.0, -1.0, 95) is None
    assert queueing.servers_for_wait(0.0, 1.0, 0.0, 95) == 0


def test_large_fleets_by_the_series_agree_with_the_recursion():
    # past RECURSION_SERVERS Erlang B is read from the top of its defining sum and stopped early; the recursion over
    # every server is the reference, and the two agree to float precision either side of the load
    def recursion(c, a):
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
        return b

    # past WINDOW_ERLANGS (10,000) only the terms within 12√a of the largest are summed, as arrays: 20,000 and
    # 60,000 erlangs at the load, a few √a above it, far above it (the window then starts at j = c − a − 12√a) and below
    for c, a in ((1500, 1400.0), (5000, 4900.0), (3000, 3100.0), (2000, 1000.0), (20_000, 20_000.0),
                 (20_500, 20_000.0), (40_000, 20_000.0), (19_000, 20_000.0), (61_000, 60_000.3)):
        assert c > queueing.RECURSION_SERVERS
        assert queueing.erlang_b(c, a) == pytest.approx(recursion(c, a), rel=1e-12)
    # and a plan-sized extreme still gives the fewest servers: 33,000 req/s of 100 s requests is 3.3 million erlangs
    c = queueing.servers_for_wait(33_000.0, 100.0, 0.5, 95)
    assert queueing.wait_at_percentile_s(c, 33_000.0, 100.0, 95) <= 0.5 < queueing.wait_at_percentile_s(c - 1, 33_000.0, 100.0, 95)


def test_the_search_stops_at_its_limit_before_any_sum(monkeypatch):
    # 2,000,000 req/s × 1 s = 2,000,000 erlangs: a queue is stable only on more servers than that, so with at most
    # 1,000,000 servers there is no answer, and it is known without one Erlang sum (each would take √a terms)
    def no_sum(*_):
        raise AssertionError("an Erlang sum")

    monkeypatch.setattr(queueing, "erlang_b", no_sum)
    assert queueing.servers_for_wait(2e6, 1.0, 10.0, 95, max_servers=1_000_000) is None


def test_the_search_answers_at_its_limit_and_none_past_it():
    # M/M/c at a = 100 erlangs and a 95th-percentile wait of 0.1 s (service 1 s): the fewest servers n, found without a
    # limit; the same search limited to n finds n, and limited to n − 1 finds none
    n = queueing.servers_for_wait(100.0, 1.0, 0.1, 95)
    assert queueing.servers_for_wait(100.0, 1.0, 0.1, 95, max_servers=n) == n
    assert queueing.servers_for_wait(100.0, 1.0, 0.1, 95, max_servers=n - 1) is None
