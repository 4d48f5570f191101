"""A fixed-concurrency benchmark replayed through the simulator (xlplan.evidence.replay): exact at one client, Little's
Law at many, and the harness's assumptions stated."""

from __future__ import annotations

import dataclasses
import math

import pytest

from xlplan.evidence import predict, replay
from xlplan.evidence.bench_conditions import Efficiencies, conditions_of_plan
from xlplan.io.planfile import reference_plan
from xlplan.plan import replica_at_tp
from xlplan.serving import folded_step

BASE = conditions_of_plan(reference_plan(), 1)


def _conditions(concurrency, isl, osl):
    return dataclasses.replace(BASE, isl=float(isl), osl=float(osl), concurrency=float(concurrency))


def test_one_client_is_a_lone_prefill_then_lone_decodes():
    # One client: each request starts alone on an idle replica. Its first step prefills the whole prompt (2,000
    # tokens, within the 8,192-token budget) beside no decode, so TTFT is that step's time; then it decodes alone,
    # one token a step, its context growing by one each step, so its ITL is the mean of those osl − 1 steps. The
    # step times come from the serving model's own function (step_time_fn), not from the replay.
    c = _conditions(1, 2000, 50)
    rep = predict.replica_for(c)
    f = folded_step.step_time_fn(replica_at_tp.replica(rep.s, 1))
    causal_keys = 2000 * 2001 / 2  # each prompt token attends to the ones before it and itself
    ttft = f(0, 0.0, 0.0, 2000.0, causal_keys, causal_keys, 0.0, 0.0)
    # decode step j (j = 0..48) reads a context of 2,001 + j tokens (the prompt and the first token, then one more
    # each step) and attends to as many keys
    decodes = [f(1, 2001.0 + j, 2001.0 + j, 0.0, 0.0, 0.0, 2001.0 + j, 2001.0 + j) for j in range(49)]
    on = replay.closed_loop(rep, c)
    assert on.ttft_s == pytest.approx(ttft, rel=1e-12)
    assert on.itl_s == pytest.approx(sum(decodes) / 49, rel=1e-12)
    # Little's Law with one request in flight and none waiting: tokens/s = osl ÷ (TTFT + (osl − 1)·ITL) exactly
    assert on.output_tok_s == pytest.approx(50 / (ttft + sum(decodes)), rel=1e-12)


@pytest.mark.parametrize(("clients", "isl", "osl"), [(8, 3000, 300), (64, 1000, 200), (32, 12000, 100)])
def test_littles_law_holds_in_the_closed_loop(clients, isl, osl):
    # C clients, each always with one request in flight: C = throughput (requests/s) × mean time in system, where a
    # request's time is its TTFT plus (osl − 1) inter-token gaps (the mean of per-request ITL times osl − 1 is the
    # mean of those gaps). The window's ends (the last round draining, measured from the first measured send) add at
    # most one request's time to a span of 20 rounds: within 1 ÷ 20 = 5%.
    c = _conditions(clients, isl, osl)
    on = replay.closed_loop(predict.replica_for(c), c)
    in_system_s = on.ttft_s + (osl - 1) * on.itl_s
    assert on.output_tok_s / osl * in_system_s == pytest.approx(clients, rel=0.05)


def test_queueing_behind_other_prefills_raises_ttft_over_a_lone_prompt():
    # 64 clients of 4,000-token prompts: each prompt needs half an 8,192-token step, so prompts arriving together
    # wait behind each other's chunks; the mean TTFT is well above one lone prefill (the one-client replay), and
    # the closed form's light-load TTFT (a lone prefill beside the decodes) is what the replay replaces.
    c = _conditions(64, 4000, 500)
    rep = predict.replica_for(c)
    alone = replay.closed_loop(rep, _conditions(1, 4000, 500)).ttft_s
    assert replay.closed_loop(rep, c).ttft_s > 2 * alone


def test_the_sensitivity_names_each_assumption_and_changes_only_it():
    c = _conditions(16, 2000, 200)
    rep = predict.replica_for(c)
    out = replay.sensitivity(rep, c)
    assert set(out) == {"default", "median", "drained", "5 rounds", "50 rounds"}
    assert out["default"] == replay.closed_loop(rep, c)
    assert all(math.isfinite(o.ttft_s) and o.ttft_s > 0 for o in out.values())


def test_a_cache_too_small_for_one_request_is_infinite_not_a_number():
    # At memory utilisation 0.2561 vLLM's rule leaves the reference replica a cache of some 3,600 tokens (0.43 GiB
    # after weights and activations); a 5,000-token prompt never fits, so no request finishes: TTFT and ITL are
    # infinite, not a number read off a stalled run.
    c = dataclasses.replace(_conditions(4, 5000, 100), memory_utilisation=0.2561)
    rep = predict.replica_for(c)
    assert 1_000 < rep.kv_tokens < 5_000
    on = replay.closed_loop(rep, c)
    assert math.isinf(on.ttft_s) and math.isinf(on.itl_s) and on.output_tok_s == 0.0


def test_sglangs_steady_state_runs_its_prefill_in_steps_of_its_own():
    # SGLang prefills first (xlplan.serving.engines.prefill_first): a step carries decodes or prefill, not both. The
    # closed form's steady state at 16 requests (all running: within every cap) of 2,000-token prompts and 200-token
    # outputs, no prefix reuse: each decode step is 16 decodes alone over the mean context 2,000 + 200/2 = 2,100
    # tokens, and for every decode step 16/200 prompts are prefilled apart, each in one step (2,000 tokens within the
    # 8,192-token budget) beside no decode. TTFT is that lone prefill (no one waits for a slot). Step times from the
    # serving model's own function; vLLM on the same benchmark and efficiencies mixes the prefill into the decode steps.
    c = dataclasses.replace(_conditions(16, 2000, 200), engine="sglang")
    eff = Efficiencies(prefill_mfu=0.5, decode_mfu=0.4, bandwidth_efficiency=0.8, step_overhead_s=0.004)
    rep = predict.replica_for(c, eff)
    f = folded_step.step_time_fn(replica_at_tp.replica(rep.s, 1))
    ctx = 16 * 2100.0
    decode = f(16, ctx, ctx, 0.0, 0.0, 0.0, ctx, ctx)
    causal_keys = 2000 * 2001 / 2
    prefill = f(0, 0.0, 0.0, 2000.0, causal_keys, causal_keys, 0.0, 0.0)
    on = predict.steady_state(c, eff)
    assert on.batch == 16 and on.waiting == 0
    assert on.itl_s == pytest.approx(decode + 16 / 200 * prefill, rel=1e-12)
    assert on.ttft_s == pytest.approx(prefill, rel=1e-12)
    mixed = predict.steady_state(dataclasses.replace(c, engine="vllm"), eff)
    assert mixed.ttft_s > prefill  # vLLM's prompt shares its step with the 16 decodes
