"""Sampled runs: a large fleet verified on a sample of its replicas serving their share of the peak (issue 49)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import resolve
from xlplan.simulate import run, search, workload
from xlplan.simulate.workload import SampledWorkload


@pytest.fixture(scope="module")
def s():
    return resolve(reference_plan())  # 40 req/s; the reference's lengths


def _sampled(s, k=8, fleet=100, minutes=10.0, cv2=1.0, seed=1):
    return SampledWorkload(s, seed, workload.share_cv2(cv2, k, fleet, s.routing), k, fleet, minutes * 60.0)


def test_a_sample_serves_its_share_of_the_peak(s):
    # A fleet of n = 100 at λ = 40 req/s sends each replica 0.4 req/s; a sample of k = 8 serves λ·k/n = 3.2 req/s.
    # Over 600 s a Poisson count has mean 1,920 and standard deviation √1,920 ≈ 43.8: within 4 of them (175).
    wl = _sampled(s).share(100)
    assert abs(len(wl.arrival_s) - 1920) <= 4 * math.sqrt(1920)
    # a fleet of 50 doubles the share: 3,840 ± 4·62
    assert abs(len(_sampled(s).share(50).arrival_s) - 3840) <= 4 * math.sqrt(3840)
    # a fleet no larger than the sample runs whole, at the whole peak: 40 × 600 = 24,000 ± 4·155
    assert abs(len(_sampled(s).share(8).arrival_s) - 24000) <= 4 * math.sqrt(24000)


def test_every_fleet_size_sees_the_same_requests_stretched(s):
    # Common random numbers: request i keeps its lengths, and its arrival is the i-th standard arrival at the
    # sample's rate, so going from 100 to 125 replicas stretches every arrival time by 125/100 exactly.
    sw = _sampled(s)
    a, b = sw.share(100), sw.share(125)
    m = len(b.arrival_s)
    assert m < len(a.arrival_s)
    assert np.allclose(b.arrival_s, a.arrival_s[:m] * 1.25, rtol=1e-12)
    assert (b.prompt_tokens == a.prompt_tokens[:m]).all() and (b.output_tokens == a.output_tokens[:m]).all()
    # grown lazily: a longer draw first (the fleet of 8 runs at 40 req/s) keeps the shorter one's requests
    fresh = _sampled(s)
    fresh.share(8)
    c = fresh.share(100)
    assert np.array_equal(c.arrival_s, a.arrival_s) and np.array_equal(c.prompt_tokens, a.prompt_tokens)


def test_a_loss_raises_the_survivors_share_from_then_on(s):
    # 4 of 100 replicas lost at t = 60 s: the sample's rate goes from 40·8/100 = 3.2 to 40·8/96 = 3.333 req/s.
    # Arrivals in [60, 600): mean 3.333 × 540 = 1,800, sd √1,800 ≈ 42.4; before: 3.2 × 60 = 192, sd 13.9.
    wl = _sampled(s).share(100, lost=4, loss_at_s=60.0)
    t = np.asarray(wl.arrival_s)
    assert abs(int((t >= 60.0).sum()) - 1800) <= 4 * math.sqrt(1800)
    assert abs(int((t < 60.0).sum()) - 192) <= 4 * math.sqrt(192)
    # and the time change is continuous: the same requests as without the loss up to it
    before = _sampled(s).share(100).arrival_s
    j = int((t < 60.0).sum())
    assert np.array_equal(t[:j], np.asarray(before)[:j])


def test_the_share_keeps_the_fleets_burstiness_thinned(s):
    # A gamma stream of squared CV 4 thinned to k/n = 8/100 has squared CV 1 + 3 × 0.08 = 1.24 (Whitt's splitting
    # rule); round robin's every 12.5th arrival of a Poisson stream: 0.08. Measured on 40,000 gaps of the sample's
    # standard stream (its squared CV is the shape's, 1/shape): within 5%.
    for cv2, routing, want in ((4.0, "least_loaded", 1.24), (1.0, "round_robin", 0.08)):
        got = workload.share_cv2(cv2, 8, 100, routing)
        assert got == pytest.approx(want)
        sw = SampledWorkload(s, 3, got, 8, 100, 600.0)
        gaps = np.diff(sw._standard(40_000))
        assert np.mean(gaps) == pytest.approx(1.0, rel=0.03)
        assert np.var(gaps) / np.mean(gaps) ** 2 == pytest.approx(want, rel=0.05)


def test_a_sampled_run_is_read_as_the_fleets(s):
    # Little's Law inside the run, read back as the fleet's: 8 of 100 replicas serve 3.2 req/s; scaled by 100/8
    # the arrival rate is the fleet's 40 req/s (within 4 sd of a Poisson count over the 180 s window of a 4-minute
    # run, 60 s warm-up: 4·√576/180 × 12.5 ≈ 6.7 req/s) and the mean in flight is that rate times the mean time in
    # the system.
    r = run.simulate(s, 100, 1, _sampled(s, minutes=4.0), 240.0)
    assert (r.replicas, r.gpus, r.sampled_replicas) == (100, 100, 8)
    assert abs(r.arrival_rate_rps - 40.0) <= 6.7
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)
    # a fleet the sample covers runs whole: every replica, nothing scaled
    whole = run.simulate(s, 6, 1, _sampled(s, minutes=2.0), 120.0)
    assert (whole.replicas, whole.sampled_replicas) == (6, 0)


def test_gallop_finds_the_fewest_beside_a_miss():
    # meets(m) = m ≥ 37: from any guess the answer is 37 and 36 was tried (shown missing); strides double, so
    # from 500 it takes about 2·log2(463) + 2 ≈ 20 calls, not 463.
    for guess in (1, 30, 36, 37, 38, 60, 500):
        calls: list[int] = []
        got = search._gallop(lambda m, calls=calls: calls.append(m) or m >= 37, guess, 1000)
        assert got == 37 and 36 in calls, (guess, calls)
        assert len(calls) <= 2 * math.log2(abs(guess - 37) + 2) + 3
    assert search._gallop(lambda m: m >= 37, 10, 30) is None  # the cap misses
    calls = []
    assert search._gallop(lambda m: calls.append(m) or m >= 3, 20, 100, lo=19) == 20  # never at or below lo
    assert min(calls) == 20


@pytest.mark.slow
def test_a_fleet_past_the_threshold_is_verified_on_a_sample_and_says_so(monkeypatch):
    # The default plan's path, scaled down to run in seconds: with the threshold at 16 replicas and samples of 8,
    # the reference at 6 × its peak (240 req/s; a closed form of about 30 replicas) is verified on 8 replicas
    # serving their share (8 × 240/30 ≈ 64 req/s), and the sentences and the JSON say the runs were a sample's.
    # (At the real threshold, 128 replicas and samples of 64, the same path: benchmarks/bench_sampled.py.)
    from xlplan.decide.planner import plan

    monkeypatch.setattr(workload, "SAMPLE_ABOVE_REPLICAS", 16)
    monkeypatch.setattr(workload, "SAMPLE_REPLICAS", 8)
    monkeypatch.setattr(workload, "SAMPLE_MIN_REPLICAS", 8)
    ref = reference_plan()
    big = ref.model_copy(update={"forecast": ref.forecast.model_copy(update={"peak_rps": 240.0})})
    r = plan(big, verify="auto")  # the CLI's default
    assert r.answer.source == "verified" and r.verified.sampled_replicas == 8
    assert "8 replicas sampled" in r.verified.sentence
    assert "not replayed" in r.verified.redundancy_sentence
    assert r.model_dump()["verified"]["sampled_replicas"] == 8


@pytest.mark.slow
def test_past_ten_thousand_gpus_the_default_says_why_not():
    # The reference at 2,000 × its peak (80,000 req/s) buys more than 10,000 GPUs: the default plan does not simulate
    # it, and the warning names the limit and how to simulate anyway.
    from xlplan.decide.planner import plan

    ref = reference_plan()
    huge = ref.model_copy(update={"forecast": ref.forecast.model_copy(update={"peak_rps": 80_000.0})})
    r = plan(huge, verify="auto")  # the CLI's default
    assert r.verified is None and r.answer.purchased > 10_000
    assert any("past the 10,000 the default simulation verifies" in w and "--verify" in w for w in r.warnings)


def test_sample_size_follows_the_share_of_the_peak():
    # Two fifths of the fleet, rounded up, at most 128, unless that many would hold more than 400,000 requests over
    # 10 minutes: 88 replicas → 35.2 → 36; 1,000 replicas → 400 → 128, but at 60 req/s a replica 400,000 / (60 × 600)
    # = 11.1 → the floor of 16, at 20 req/s 33, at 7 req/s 95. At most 80 replicas nothing is sampled.
    from types import SimpleNamespace

    assert workload.sample_replicas(SimpleNamespace(peak_rps=640.0), 88) == 36
    assert workload.sample_replicas(SimpleNamespace(peak_rps=1000.0), 1000) == 128
    assert workload.sample_replicas(SimpleNamespace(peak_rps=60.0 * 1000), 1000) == 16
    assert workload.sample_replicas(SimpleNamespace(peak_rps=20.0 * 1000), 1000) == 33
    assert workload.sample_replicas(SimpleNamespace(peak_rps=7.0 * 1000), 1000) == 95
    assert workload.sample_replicas(SimpleNamespace(peak_rps=1e6), 80) == 0
    # with the replicas' batch known, the engine steps too: 7 req/s × 600 s = 4,200 requests a replica, × 300 output
    # tokens ÷ 10 decodes a step = 126,000 steps; 5,000,000 / 126,000 = 39.7 → 39 replicas
    three_hundred = SimpleNamespace(peak_rps=7000.0, output_p50=300, output_p95=300, output_p99=300)
    assert workload.sample_replicas(three_hundred, 1000, 10.0) == 39
    # and a sampled verification's span is run_minutes at the sample's rate: 95 × 7 = 665 req/s → 10 minutes
    assert workload.verification_minutes(SimpleNamespace(peak_rps=7000.0), 1000) == 10.0


def test_a_prefix_of_a_sample_is_a_shorter_sample(s):
    sw = _sampled(s)
    short = workload.prefix(sw, 120.0)
    assert isinstance(short, SampledWorkload) and short.duration_s == 120.0
    a, b = sw.share(100), short.share(100)
    assert np.array_equal(b.arrival_s, np.asarray(a.arrival_s)[: len(b.arrival_s)])
    assert dataclasses.replace(sw).draws is sw.draws  # the draws are shared, not drawn again


@pytest.mark.slow
def test_simulate_says_its_run_was_a_samples_and_reads_it_as_the_fleets(tmp_path, capsys, monkeypatch):
    # The threshold at 16 replicas, samples of 8 (as in the plan test above): the reference at 240 req/s is simulated
    # on 8 of its replicas; the line names the sample and its own requests, and reads the arrival rate as the fleet's:
    # 240 req/s within 4 sd of a Poisson count over the 540 s window of a 10-minute run (the sample's share, 8/n of
    # 240, times 540 s, about 2,000 requests: 4·√2,000 / 2,000 ≈ 9% of 240 ≈ 22 req/s).
    import re

    import yaml

    from xlplan.cli import main

    monkeypatch.setattr(workload, "SAMPLE_ABOVE_REPLICAS", 16)
    monkeypatch.setattr(workload, "SAMPLE_REPLICAS", 8)
    monkeypatch.setattr(workload, "SAMPLE_MIN_REPLICAS", 8)
    data = reference_plan().model_dump(exclude_none=True)
    data["forecast"]["peak_rps"] = 240
    plan = tmp_path / "busy.yaml"
    plan.write_text(yaml.safe_dump(data))
    assert main(["simulate", str(plan)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "simulated on 8 replicas of them with their share of the peak" in first, first
    rate = float(re.search(r"arrived ([\d,.]+) req/s", first).group(1).replace(",", ""))
    assert abs(rate - 240.0) <= 22.0
