"""Evidence that the drain (xlplan.evidence.drain) is what the engine does with N requests submitted at once.

Each test states the truth it checks and where it comes from: the steady state it must reach when prefill is
negligible, the waves it must repeat, one request's prefill and decodes worked step by step with the serving model,
an upper bound that follows from the step's convexity, and the simulator, which schedules requests one by one the
way vLLM does. The plan is the reference one: Llama-3.1-8B bf16 on one H100 under vLLM (step budget 8,192 tokens,
KV room for ~421,000 tokens), a dense model with no sliding window.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from xlplan.evidence import bench_conditions, drain, predict
from xlplan.io.planfile import reference_plan
from xlplan.plan import latency_step
from xlplan.serving import step, step_inputs
from xlplan.simulate import loop
from xlplan.simulate.workload import Workload

BASE = bench_conditions.conditions_of_plan(reference_plan(), 1)


def _rep(isl: float, osl: float) -> predict.Replica:
    """The reference plan's replica at fixed lengths (the planner's own scenario and serving replica)."""
    return predict.replica_for(replace(BASE, isl=float(isl), osl=float(osl)))


def test_few_requests_with_tiny_prompts_reach_the_steady_state():
    # 64 requests, each an 8-token prompt and 2,000 output tokens, with room for 64: the 512 prompt tokens fit one
    # step of the 8,192-token budget, so the drain is one prefill step (sampling every first token) and 1,999 steps
    # of 64 decodes at contexts 9 … 2,007 (mean 1,008 = isl + osl/2). The steady state times 2,000 steps of 64
    # decodes at that mean context, each with a 64·8/2,000-token share of prefill: the same work but for one
    # decode step in 2,000 (the drain's prefill step instead) and 0.26 prompt tokens a step, so the two agree to
    # about 1/2,000: tokens/s = N·osl ÷ (osl × step_s(N)).
    rep = _rep(8, 2000)
    tok_s, mean_batch = drain.drain_output_tok_s(rep, 64, 8, 2000, 1, 64)
    assert tok_s == pytest.approx(64 * 2000 / (2000 * predict.step_s(rep, 64)), rel=1e-3)
    assert mean_batch == pytest.approx(64, rel=1e-12)  # 64 running in every step: prefilling in the first, then decoding


def test_whole_waves_of_tiny_prompts_repeat_exactly():
    # With 8-token prompts a whole wave of 64 is prefilled in one step, decodes together and leaves at the end of
    # one step; the next wave is admitted into an empty replica, the state at t = 0. So k waves take exactly k
    # times one wave.
    rep = _rep(8, 200)
    one, _ = drain.replica_drain_s(rep, 64, 8, 200, 64)
    for k in (2, 3, 7):
        assert drain.replica_drain_s(rep, k * 64, 8, 200, 64)[0] == pytest.approx(k * one, rel=1e-12)


def test_waves_of_real_prompts_overlap_and_then_repeat_with_one_period():
    # With 1,000-token prompts a wave's 64,000 prompt tokens take 8 steps of the budget: the prompts land in
    # cohorts, finish in cohorts, and each slot's next request is prefilled beside the other slots' decodes. So
    # after the first wave each further wave adds one period, the same every time, and less than a wave alone
    # (whose prefill ran beside no decodes).
    rep = _rep(1000, 200)
    t = [drain.replica_drain_s(rep, k * 64, 1000, 200, 64)[0] for k in range(1, 7)]
    periods = np.diff(t)
    assert np.all(periods < t[0])
    assert periods[1:] == pytest.approx(np.full(len(periods) - 1, periods[1]), rel=1e-3)


@pytest.mark.parametrize("isl", [3000, 20000])
def test_one_request_takes_its_prefill_and_then_its_decodes_at_batch_one(isl):
    # One request alone: its prompt in chunks of the 8,192-token budget (3,000 tokens: one chunk; 20,000: 8,192,
    # 8,192 and 3,616, each attending to the chunks before it, whose cache it reads), the last chunk's step
    # sampling the first token; then osl − 1 = 299 steps of one decode at contexts isl + 1 … isl + 299. Each step
    # timed by the serving model, one by one.
    osl = 300
    rep = _rep(isl, osl)
    s, r = rep.s, rep.r
    prefill, done = 0.0, 0.0
    while done < isl:
        chunk = min(s.max_num_batched_tokens, isl - done)
        keys = step_inputs.prefill_keys(chunk, done, True)
        prefill += step.step_time_s(r, step_inputs.mixed_step(0.0, 0.0, chunk, keys, keys, done))
        done += chunk
    if isl <= s.max_num_batched_tokens:
        assert prefill == pytest.approx(latency_step.prefill_alone_s(s, r, float(isl)), rel=1e-12)  # one chunk: the planner's
    decodes = sum(step.step_time_s(r, step_inputs.decode_step(1.0, isl + i)) for i in range(1, osl))
    makespan, _ = drain.replica_drain_s(rep, 1, isl, osl, 64)
    assert makespan == pytest.approx(prefill + decodes, rel=1e-12)


@pytest.mark.parametrize("isl", [8, 1000, 5000, 20000])
@pytest.mark.parametrize("osl", [2, 100, 2000])
def test_the_drain_never_beats_the_steady_state_at_the_cap(isl, osl):
    # An upper bound, for a dense model on one GPU (its step, overhead + max(GEMMs, weights) + max(attention FLOPs,
    # KV reads), is convex in the step's load and at least proportional to it: t(λ·x) ≥ λ·t(x) for λ ≤ 1). Every
    # step puts out at most B tokens (B = the cap's whole sequences: decodes plus prompts landing), so the drain of
    # n requests takes S ≥ n·osl/B steps; by Jensen and that scaling its time is at least n·osl/B steps of its mean
    # load, which is B·(osl − 1)/osl decodes and B/osl prompts a step (the prefill samples each first token): at
    # least (osl − 1)/osl of the steady state's step at B. So drain tokens/s ≤ steady(B) × osl/(osl − 1) (and the
    # steady state only grows from B to the fractional cap, where the cap is at least one sequence).
    rep = _rep(isl, osl)
    cap = predict.batch_caps(rep)
    slots = max(1, math.floor(cap))
    steady = slots / predict.step_s(rep, slots)
    if cap >= 1:
        assert steady <= predict.offline_output_tok_s(replace(BASE, isl=float(isl), osl=float(osl)))[0] * (1 + 1e-12)
    for n in (1, 50, 383, 1000, 3000):
        tok_s, _ = drain.drain_output_tok_s(rep, n, isl, osl, 1, cap)
        assert 0 < tok_s <= steady * osl / (osl - 1) * (1 + 1e-9)


def _simulated_tok_s(rep: predict.Replica, n: int, isl: int, osl: int, slots: int, replicas: int) -> float:
    """N × osl ÷ the simulator's makespan: every request arriving at t = 0 with the same lengths, served by
    ``replicas`` replicas running at most ``slots`` sequences each, until the last request's last token."""
    s = replace(rep.s, max_num_seqs=float(slots))
    run = loop._Run(s, replicas, 1, Workload(np.zeros(n), np.full(n, isl), np.full(n, osl)), 1e6)
    run.run()
    finish = np.asarray(run.finish, dtype=float)
    assert np.isfinite(finish).all() and run.preemptions == 0  # all served; the KV cache held every sequence
    return n * osl / float(finish.max())


@pytest.mark.parametrize(("n", "isl", "osl", "slots", "replicas"), [
    (600, 1000, 200, 64, 1),  # 9.4 waves: a part-empty last one
    (250, 1000, 200, 64, 2),  # two replicas, 125 each
    (1000, 2000, 500, 100, 3),  # three replicas, 334 on the busiest
    (60, 20000, 100, 8, 1),  # prompts longer than the budget: chunks of 8,192
    (128, 16, 300, 64, 1),  # tiny prompts: every wave prefilled in one step
    (7, 500, 1000, 64, 2),  # fewer requests than one wave: 4 and 3
])
def test_the_simulator_agrees(n, isl, osl, slots, replicas):
    # The simulator schedules request by request as vLLM does (sim_schedule: decodes first, the partly prefilled
    # prompt, then the queue FIFO into the rest of the budget, at most max_num_seqs running) and times each step
    # with the same serving model; the plans keep every sequence in the KV cache (no preemption, checked). Its
    # makespan differs from the drain's only where (a) its first step starts on the first arrival alone (the
    # others at t = 0 join the next step): one extra step of a single prompt, 0.14% of the tiny-prompt drain, the
    # most here; and (b) the drain counts the waves after the third as repeats of them (at most 0.21%, the
    # module's Notes). So 0.5%.
    rep = _rep(isl, osl)
    tok_s, _ = drain.drain_output_tok_s(rep, n, isl, osl, replicas, slots)
    assert tok_s == pytest.approx(_simulated_tok_s(rep, n, isl, osl, slots, replicas), rel=5e-3)


@pytest.mark.parametrize(("n", "isl", "osl", "slots"), [
    (3000, 1000, 1000, 383), (1000, 20000, 2000, 40), (1500, 5000, 500, 103), (100, 32000, 100, 1), (5000, 128, 64, 64),
])
def test_repeating_whole_waves_is_stepping_through_them(n, isl, osl, slots):
    # Counting the waves after the period instead of stepping through them: exact where the state repeats to the
    # token (one slot: each request alone), within the module's stated 0.21% where it only settles.
    rep = _rep(isl, osl)
    fast, _ = drain.replica_drain_s(rep, n, isl, osl, slots)
    every, _ = drain.replica_drain_s(rep, n, isl, osl, slots, repeat_waves=False)
    assert fast == pytest.approx(every, rel=2.1e-3)
    sched = drain.drain_schedule(n, slots, rep.s.max_num_batched_tokens, isl, osl)
    assert sched.total_steps == pytest.approx(drain.drain_schedule(n, slots, rep.s.max_num_batched_tokens, isl, osl,
                                                                  repeat_waves=False).total_steps, rel=2.1e-3)
    if slots == 1:
        assert sched.repeated_waves > 0 and fast == pytest.approx(every, rel=1e-12)


def test_requests_are_spread_evenly_and_the_busiest_replica_sets_the_time():
    # 3 replicas of 100 requests each drain as one replica of 100 does, three times over: 3× its tokens/s. With
    # 301 requests the busiest replica has 101, so the system waits for it.
    rep = _rep(1000, 200)
    one, _ = drain.drain_output_tok_s(rep, 100, 1000, 200, 1, 64)
    assert drain.drain_output_tok_s(rep, 300, 1000, 200, 3, 64)[0] == pytest.approx(3 * one, rel=1e-12)
    busiest, _ = drain.replica_drain_s(rep, 101, 1000, 200, 64)
    assert drain.drain_output_tok_s(rep, 301, 1000, 200, 3, 64)[0] == pytest.approx(301 * 200 / busiest, rel=1e-12)


def test_offline_prediction_is_the_drain_where_num_prompts_is_stated():
    # The benchmark's figure: num_prompts × osl ÷ the drain's time on the replica's own cap (batch_caps, rounded
    # down); without num_prompts, the steady state replicas × cap ÷ step as before.
    c = replace(BASE, isl=1000.0, osl=1000.0, num_prompts=3000.0)
    rep = predict.replica_for(c)
    cap = predict.batch_caps(rep)
    tok_s, batch = predict.offline_output_tok_s(c)
    assert (tok_s, batch) == drain.drain_output_tok_s(rep, 3000, 1000, 1000, 1, cap)
    assert 0 < batch <= math.floor(cap)  # the mean decoding batch, at most the slots
    steady, cap_again = predict.offline_output_tok_s(replace(c, num_prompts=None))
    assert cap_again == cap and steady == pytest.approx(cap / predict.step_s(rep, cap), rel=1e-12)
    assert predict.offline_output_tok_s(replace(c, num_prompts=0.0)) == (0.0, 0.0)


def test_a_schedules_arrays_are_read_only():
    # The schedule is memoised and shared by every call with the same lengths: nobody may change it.
    sched = drain.drain_schedule(100, 16, 8192, 1000, 100)
    assert sched is drain.drain_schedule(100, 16, 8192, 1000, 100)
    with pytest.raises(ValueError):
        sched.decodes[0] = 1.0
