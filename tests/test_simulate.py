"""Evidence that the simulator is right: queueing laws, the serving model's own limits, and monotonicity.

Each test states where its expected figure comes from: Little's Law, the Pollaczek–Khinchine formula for M/D/1,
the runbook's roofline worked by hand from the catalog, or the serving model's step time.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest

from xlplan import catalog
from xlplan.catalog import parameters
from xlplan.cli import main
from xlplan.io.planfile import plan_from_mapping, reference_plan
from xlplan.plan import latency_step as latency_step_mod
from xlplan.plan import replica_at_tp, scenario, steps
from xlplan.plan.scenario import resolve
from xlplan.serving import batch_search, folded_step, memory, step_inputs
from xlplan.serving import step as serving
from xlplan.simulate import loop, search, verify, workload
from xlplan.simulate import run as sim_run

REF = resolve(reference_plan())


def _fixed(rate_rps: float, duration_s: float, prompt: int, output: int, seed: int = 7) -> workload.Workload:
    """Poisson arrivals, every request the same lengths."""
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1.0 / rate_rps, int(rate_rps * duration_s * 1.2) + 100))
    t = t[t < duration_s]
    return workload.Workload(t, np.full(len(t), prompt), np.full(len(t), output))


@pytest.mark.slow
def test_littles_law_holds_inside_the_run():
    # Little's Law (Little 1961): time-average number in the system = arrival rate x mean time in system, for any
    # stable queue. Six replicas carry the reference peak (the search finds them), so the run is stationary.
    wl = workload.poisson_workload(REF, 600, seed=3)
    r = sim_run.simulate(REF, 6, 1, wl, 600)
    assert r.stable and r.unfinished == 0
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)
    # and with bursty arrivals (gamma gaps, squared CV 4) on more replicas
    wl = workload.poisson_workload(REF, 600, seed=4, cv2=4.0)
    r = sim_run.simulate(REF, 8, 1, wl, 600)
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)


def _prefill_alone_s(prompt: int, chunk: int) -> float:
    """The reference prompt's prefill on an idle H100, chunk by chunk, from the runbook's roofline by hand.

    Llama-3.1-8B bf16 (catalog): active parameters N, weight bytes W, 32 layers, attention width 4,096, KV
    4,096 B per token per layer. H100 SXM: 989 TFLOP/s at 40% MFU, 3.35 TB/s at 60%. A chunk of c tokens after d
    done: dense max(2·N·c / (peak·MFU), W / bandwidth); attention max(4·width·layers·(c·d + c²) / (peak·MFU) (full
    n² FLOPs, the reference's convention), 4,096·layers·d / bandwidth).
    """
    m = catalog.get_model("llama-3.1-8b")
    n = parameters.active_params(m)
    w = memory.weights_bytes(m, "bf16")
    flops = 989e12 * 0.40
    bw = 3.35e12 * 0.60
    total, done = 0.0, 0
    while done < prompt:
        c = min(chunk, prompt - done)
        total += max(2 * n * c / flops, w / bw)
        total += max(4 * 4096 * 32 * (c * done + c * c) / flops, 4096 * 32 * done / bw)
        done += c
    return total


def test_light_load_ttft_is_one_prefill_and_no_queue_forms():
    # One request every 20 s on 4 replicas: each finds an idle replica (its 300 tokens take ~3 s). TTFT is the
    # prefill alone: 2,000 tokens in chunks of 512 (the runbook engine's simulated chunk), worked by hand.
    wl = _fixed(0.05, 4000, 2000, 300)
    r = sim_run.simulate(REF, 4, 1, wl, 4000)
    alone = _prefill_alone_s(2000, scenario.RUNBOOK_CHUNK_TOKENS)
    assert r.ttft_s.p50 == pytest.approx(alone, rel=1e-6)
    assert r.ttft_s.p99 == pytest.approx(alone, rel=1e-6)  # no request ever waits
    assert r.preemptions == 0


def test_a_long_prefill_threshold_chunks_a_prompt_at_it():
    # vLLM's long_prefill_token_threshold caps each request's chunk. The reference prompt on an idle replica of
    # unbounded steps, threshold 250: eight chunks of 250 tokens, each its own step, worked by hand as above.
    s = dataclasses.replace(REF, long_prefill_token_threshold=250.0)
    r = sim_run.simulate(s, 4, 1, _fixed(0.05, 4000, 2000, 300), 4000)
    assert r.ttft_s.p50 == pytest.approx(_prefill_alone_s(2000, 250), rel=1e-6)
    assert r.ttft_s.p99 == pytest.approx(_prefill_alone_s(2000, 250), rel=1e-6)


def test_a_long_prefill_threshold_lets_a_short_prompt_pass_a_long_one():
    # 512-token steps; a 4,000-token prompt arrives at 0 and a 200-token one just after, on one replica. Threshold
    # 256: step 1 carries the long prompt's first 256 tokens (the short one has not arrived); step 2 its next 256 and
    # the whole short prompt (256 + 200 within 512), so the short one's first token comes at the end of step 2.
    # Without it the long prompt takes each step's whole budget: 7 × 512 + 416, the short one's 96 tokens beside the
    # last chunk and its other 104 in the ninth step, after the long one's first token.
    # Hand-worked steps on the runbook's roofline (see _prefill_alone_s): dense max(2·N·c ÷ F, W ÷ B) over the
    # step's c tokens, attention max(4·4,096·32·pairs ÷ F, 4,096·32·read ÷ B) over its chunks' key pairs (c·d + c²
    # each, full n²) and the prefix read.
    m = catalog.get_model("llama-3.1-8b")
    n, w = parameters.active_params(m), memory.weights_bytes(m, "bf16")
    flops, bw = 989e12 * 0.40, 3.35e12 * 0.60

    def step(tokens: int, pairs: float, read: float) -> float:
        return max(2 * n * tokens / flops, w / bw) + max(4 * 4096 * 32 * pairs / flops, 4096 * 32 * read / bw)

    two_steps = step(256, 256 * 256, 0) + step(456, 256 * 256 + 256 * 256 + 200 * 200, 256)
    wl = workload.Workload(np.array([0.0, 1e-6]), np.array([4000.0, 200.0]), np.array([5, 5]))
    first = {}
    for threshold in (256.0, math.inf):
        s = dataclasses.replace(REF, max_num_batched_tokens=512.0, long_prefill_token_threshold=threshold)
        run = loop._Run(s, 1, 1, dataclasses.replace(wl), 100.0, 0)
        run.run()
        first[threshold] = list(run.first_token)
    assert first[256.0][1] == pytest.approx(two_steps, rel=1e-9)
    assert first[256.0][1] < first[256.0][0]  # the short prompt first
    assert first[math.inf][1] > first[math.inf][0]  # behind the long one


@pytest.mark.slow
def test_littles_law_holds_with_a_long_prefill_threshold():
    # Little's Law (Little 1961) for any stable queue: in flight = arrival rate × time in system. Long-tailed prompts
    # (p50 800, p99 12,000) on vLLM's 8,192-token steps with a 1,024-token threshold, 3 replicas: the run is
    # stationary (the plan of tests/test_long_prefill.py verifies 3), so the law holds inside it.
    data = reference_plan().model_dump(exclude_none=True)
    data["forecast"].update(peak_rps=8, prompt_tokens={"p50": 800, "p95": 6000, "p99": 12000},
                            output_tokens={"p50": 200, "p95": 500, "p99": 800})
    data["policy"] = {"engine": "vllm", "max_num_batched_tokens": 8192, "long_prefill_token_threshold": 1024}
    s = resolve(plan_from_mapping(data, "test"))
    wl = workload.poisson_workload(s, 600, seed=3)
    r = sim_run.simulate(s, 3, 1, wl, 600)
    assert r.stable and r.unfinished == 0
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)


@pytest.mark.slow
def test_md1_waiting_time_matches_pollaczek_khinchine():
    # One replica, batch size one, one output token: every request is one deterministic prefill step of D seconds.
    # Poisson arrivals at utilisation rho: mean wait in queue W_q = rho·D / (2(1 − rho)) (Pollaczek–Khinchine, M/D/1).
    s = dataclasses.replace(REF, max_num_seqs=1.0, max_num_batched_tokens=512.0)
    d = _prefill_alone_s(512, 512)
    for rho in (0.5, 0.8):
        lam = rho / d
        duration = 150_000 / lam
        r = sim_run.simulate(s, 1, 1, _fixed(lam, duration, 512, 1, seed=11), duration)
        expected_wait = rho * d / (2 * (1 - rho))
        mean_ttft = r.mean_time_in_system_s  # one token: the request leaves at its first token
        assert mean_ttft - d == pytest.approx(expected_wait, rel=0.05), rho


def test_throughput_saturates_at_the_serving_models_capacity():
    # Far more arrivals than one replica can serve, at most 64 sequences: the replica runs 64 decodes every step.
    # Its output rate is then the serving model's: 64 tokens per step of 64 decodes at the mean context (1-token
    # prompts, 200 outputs: context 1 + 100), plus one 1-token prefill per 200 decodes (negligible, < 1%).
    s = dataclasses.replace(REF, max_num_seqs=64.0, max_num_batched_tokens=512.0)
    r = sim_run.simulate(s, 1, 1, _fixed(400.0, 300, 1, 200), 300)
    step = serving.step_time_s(replica_at_tp.replica(s, 1), step_inputs.decode_step(64, 101.0))
    assert r.output_tok_s == pytest.approx(64 / step, rel=0.02)
    assert r.itl_s.p50 == pytest.approx(step, rel=0.02)


@pytest.mark.slow
def test_more_replicas_never_raise_p95_ttft():
    # Same seed, same requests: adding a replica can only take work off the others under least-loaded routing.
    wl = workload.poisson_workload(REF, 300, seed=5)
    p95 = [sim_run.simulate(REF, n, 1, wl, 300).ttft_s.p95 for n in range(4, 10)]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(p95, p95[1:])), p95
    wl = workload.poisson_workload(REF, 300, seed=6, cv2=4.0)
    p95 = [sim_run.simulate(REF, n, 1, wl, 300).ttft_s.p95 for n in range(5, 10)]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(p95, p95[1:])), p95


@pytest.mark.slow
def test_the_runbooks_four_gpus_miss_at_peak():
    # The runbook's compute path is 3.95 GPUs of FLOPs at 40% MFU (notes: 1,369 + 193 TFLOP/s ÷ 395.6): on 4 GPUs the
    # utilisation is at least 0.987 before any memory traffic, so the queue grows without bound and p95 TTFT far
    # exceeds the 1 s promise.
    wl = workload.poisson_workload(REF, 600, seed=1)
    r = sim_run.simulate(REF, 4, 1, wl, 600)
    assert not r.meets_promise
    assert r.ttft_s.p95 > 10.0


@pytest.mark.slow
def test_verified_load_is_minimal():
    wl = workload.poisson_workload(REF, 600, seed=1)
    found = search.search(REF, 1, wl, 600, 4)
    n = found.verified_replicas
    assert n is not None
    assert found.runs[n].meets_promise and found.runs[n].ttft_at_percentile_s <= REF.ttft_s
    assert not found.runs[n - 1].meets_promise  # the run just below is shown, and misses
    assert all(not r.meets_promise for k, r in found.runs.items() if k < n)


@pytest.mark.slow
def test_runs_are_seeded_and_reproducible():
    a = sim_run.simulate(REF, 6, 1, workload.poisson_workload(REF, 300, seed=9), 300)
    b = sim_run.simulate(REF, 6, 1, workload.poisson_workload(REF, 300, seed=9), 300)
    c = sim_run.simulate(REF, 6, 1, workload.poisson_workload(REF, 300, seed=10), 300)
    assert a == b
    assert a.ttft_s != c.ttft_s


def test_step_time_fn_is_step_time_s():
    # The simulator's fast closure must be the serving model term by term: a mixed step on a MoE model with EP and TP.
    from xlplan.io.planfile import plan_from_mapping

    data = reference_plan().model_dump(exclude_none=True)
    data["model"] = {"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    data["policy"] = {"engine": "vllm", "expert_parallel": 2}
    s = resolve(plan_from_mapping(data, "test"))
    for tp in (1, 2):
        r = replica_at_tp.replica(s, tp)
        f = folded_step.step_time_fn(r)
        load = step_inputs.mixed_step(37.0, 1800.0, 300.0, 300.0 * 1200.0, 300.0 * 1200.0, 900.0, r.window)
        expected = serving.step_time_s(r, load)
        got = f(load.decode_tokens, load.decode_keys, load.decode_keys_window, load.prefill_tokens, load.prefill_keys,
                load.prefill_keys_window, load.kv_tokens, load.kv_tokens_window)
        assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("latency_step", ["with_prefill", "decode_only"])
def test_latency_step_fn_is_the_serving_model(latency_step):
    # The planner's fast batch -> step time must be step_time_s(latency_load(...)) term by term, and the bisection on
    # it must land on the same batch: a MoE model with EP and TP, a sliding-window model, prefix reuse, both steps.
    from xlplan.io.planfile import plan_from_mapping

    for model, policy in (("qwen3-30b-a3b", {"engine": "vllm", "expert_parallel": 2}), ("gemma-3-27b", {}),
                          ("llama-3.1-8b", {})):
        data = reference_plan().model_dump(exclude_none=True)
        data["model"] = {"name": model, "weights_dtype": "bf16", "kv_dtype": "bf16"}
        data["forecast"]["prefix_reuse"] = 0.3
        data["policy"] = {**policy, "latency_step": latency_step}
        s = resolve(plan_from_mapping(data, "test"))
        tr = steps.traffic(s)
        for tp in (1, 2):
            r = replica_at_tp.replica(s, tp)
            fast = latency_step_mod.latency_step_fn(s, tr, r)
            for b in (1.0, 7.5, 64.0, 300.0):
                assert fast(b) == pytest.approx(serving.step_time_s(r, latency_step_mod.latency_load(s, tr, r, b)), rel=1e-12)
            generic = batch_search.max_batch_within(lambda b, s=s, tr=tr, r=r: serving.step_time_s(r, latency_step_mod.latency_load(s, tr, r, b)),
                                               s.itl_s, latency_step_mod.latency_batch_cap(s, tr))
            # two bracketed root searches of the same step (each closed to 1e-12 of the batch, from different
            # brackets; the step is piecewise linear, so the last trial's rounding can sit a few ulps of the kink away):
            # they agree far below one sequence
            assert latency_step_mod.max_decode_batch(s, tr, r) == pytest.approx(generic, rel=1e-9)


@pytest.mark.parametrize("itl_s", [0.012, 0.03, 0.05, 0.2])
def test_a_dense_step_is_two_lines_met_where_the_higher_reaches_the_target(itl_s):
    # A dense model's step of b sequences is overhead + max(c·b, W) + m·b: the larger of two lines in b. The largest
    # batch within the target is where the higher line meets it, so the step there IS the target (unless the cap
    # binds), and a hair more batch is over it. On two GPUs with a zero link latency the all-reduce still costs its
    # bytes (the fixed part is zero, the per-token part is not).
    for tp, link_latency_s in ((1, 10e-6), (2, 10e-6), (2, 0.0)):
        s = dataclasses.replace(REF, itl_s=itl_s, link_latency_s=link_latency_s)
        tr = steps.traffic(s)
        r = replica_at_tp.replica(s, tp)
        b = latency_step_mod.max_decode_batch(s, tr, r)
        cap = float(latency_step_mod.latency_batch_cap(s, tr))
        exact = lambda x, s=s, tr=tr, r=r: serving.step_time_s(r, latency_step_mod.latency_load(s, tr, r, x))  # noqa: E731
        assert latency_step_mod.latency_step_fn(s, tr, r)(37.0) == pytest.approx(exact(37.0), rel=1e-12)
        if b == 0.0:
            assert exact(1.0) > itl_s
        elif b < cap:
            assert exact(b) == pytest.approx(itl_s, rel=1e-12) and exact(b * (1 + 1e-9)) > itl_s
        else:
            assert exact(cap) <= itl_s


def test_window_layers_hold_at_most_the_window_in_the_simulated_cache():
    # gemma-3-27b: 62 layers, 52 of them sliding-window layers of 1,024 tokens. A sequence of n tokens holds
    # a·n + (1 − a)·min(n, 1,024) tokens' worth of every-layer cache, a = 10/62 (as the planner's
    # memory.kv_bytes_per_conversation counts it, and vLLM's hybrid KV cache manager allocates it). One request of
    # 2,000 + 300 tokens alone on a replica: at its last step the cache holds a·2,300 + (1 − a)·1,024 ≈ 1,230 tokens,
    # not the 2,300 that counting every layer full-length gives.
    from xlplan.io.planfile import plan_from_mapping

    data = reference_plan().model_dump(exclude_none=True)
    data["model"] = {"name": "gemma-3-27b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    s = resolve(plan_from_mapping(data, "test"))
    assert (s.layers, s.window_layers, s.window) == (62, 52, 1024)
    wl = workload.Workload(np.array([1.0]), np.array([2000]), np.array([300]))
    run = loop._Run(s, 1, 1, wl, 600.0)
    run.warm = 0.0  # measure every step
    run.run()
    a = 10 / 62
    assert max(run.kv_held) == pytest.approx(a * 2300 + (1 - a) * 1024, abs=1.0)
    assert run.finish[0] == run.finish[0] and run.preemptions == 0  # it finished, nothing preempted


def test_a_full_cache_preempts_and_recomputes():
    # A budget of 79.65 GiB x 0.2561 − 14.96 GiB weights − 3 GiB = 2.44 GiB holds ~20,000 tokens of 131,072 B: nine
    # 2,000-token prompts fill it, and their 300 outputs each cannot all fit. The scheduler must preempt and recompute,
    # every request still finishes, and never more is held than fits.
    s = dataclasses.replace(REF, memory_utilisation=0.2561, max_num_batched_tokens=512.0)
    cap = replica_at_tp.kv_capacity_tokens(s, 1)
    assert cap == pytest.approx((79.647 * 0.2561 - 14.957 - 3.0) * 2**30 / 131072, rel=0.01)
    r = sim_run.simulate(s, 1, 1, _fixed(1.2, 600, 2000, 300), 600)
    assert r.preemptions > 0
    assert r.unfinished == 0
    assert r.kv_utilisation.max <= 1.0


def test_default_run_length_rule():
    # max(10 minutes, 20,000 arrivals), at most 6 hours
    assert workload.default_minutes(40.0) == 10.0
    assert workload.default_minutes(1.0) == pytest.approx(20_000 / 60)
    assert workload.default_minutes(0.1) == 360.0


@pytest.mark.parametrize("rate", [3_334.0, 4_000.0, 5_000.0, 7_000.0])
def test_a_run_at_the_request_cap_is_allowed(rate):
    # past 2,000,000 / 600 s = 3,333 req/s the 10-minute run is cut to MAX_REQUESTS / (rate × 60) minutes, which
    # holds exactly 2,000,000 requests: the cap itself, so the check must let it through despite float rounding
    # (it refused "6.66667 minutes at 5,000 requests/s is 2,000,000 requests; expected at most 2,000,000").
    minutes = workload.run_minutes(rate)
    assert minutes < 10.0
    assert not workload.too_many_requests(rate * minutes * 60.0)
    assert workload.too_many_requests(rate * 10.0 * 60.0)


@pytest.mark.slow
def test_verify_reference_sentence_and_failure_check():
    p = reference_plan()
    s = resolve(p)
    v = verify.verify(s, steps.solve(s), 95.0)
    assert v.runbook_load == 4 and v.runbook_with_redundancy == 5
    assert not v.meets_promise_at_load
    assert v.load is not None and v.load > 4
    assert v.with_redundancy == v.load + 1
    assert v.failure_gpus == 4 and v.failure_meets_promise is False  # one of 5 down leaves the 4 that miss
    assert "the runbook's 4 GPUs miss the TTFT promise" in v.sentence
    assert [c.gpus for c in v.curve] == sorted(c.gpus for c in v.curve)


# ------------------------------------------------------------------------------------------------------- the CLI


def test_simulate_json_keys(capsys):
    assert main(["simulate", "--gpus", "6", "--minutes", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("gpus", "replicas", "tp", "requests", "simulated_s", "mean_in_flight", "mean_time_in_system_s",
                "preemptions", "meets_promise"):
        assert key in out
    for key in ("ttft_s", "itl_s", "tpot_s"):
        assert set(out[key]) == {"p50", "p95", "p99"}
    assert set(out["kv_utilisation"]) == {"mean", "p95", "max"}
    assert out["gpus"] == 6 and out["replicas"] == 6 and out["tp"] == 1 and out["simulated_s"] == 240


@pytest.mark.slow
def test_simulate_search_reports_runs_below_and_at(capsys):
    assert main(["simulate", "--search", "--minutes", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    v = out["verified_load_gpus"]
    assert [r["gpus"] for r in out["runs"]] == [v - 1, v]
    assert [r["meets_promise"] for r in out["runs"]] == [False, True]


@pytest.mark.parametrize("args, option", [
    (["--minutes", "0"], "--minutes"),
    (["--minutes", "nan"], "--minutes"),
    (["--minutes", "100000"], "--minutes"),
    (["--seed", "-1"], "--seed"),
    (["--gpus", "0"], "--gpus"),
    (["--burst", "0"], "--burst"),
    (["--resample"], "--resample"),
    (["--columns", "prompt=in"], "--columns"),  # a column map with no log to apply it to: refused, not ignored
    (["--minutes", "abc"], "--minutes"),  # a word where a number belongs: the same one line
])
def test_bad_options_exit_2_naming_the_option(args, option, capsys):
    assert main(["simulate", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option in err[0], err


def test_gpus_must_be_whole_replicas(tmp_path, capsys):
    # A 70B model in bf16 (141 GB) needs TP 4 on H100s: 6 GPUs is not whole replicas.
    plan = tmp_path / "p.yaml"
    data = reference_plan().model_dump(exclude_none=True)
    data["model"] = {"name": "llama-3.1-70b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    import yaml

    plan.write_text(yaml.safe_dump(data))
    assert main(["simulate", str(plan), "--gpus", "2", "--minutes", "2"]) == 2
    err = capsys.readouterr().err
    assert "--gpus: got 2" in err and "TP" in err


def test_a_plan_that_cannot_fit_exits_2(tmp_path, capsys):
    # Llama-3.1-405B in bf16 is ~756 GiB of weights: no TP degree inside a node of 8 x 24 GiB GPUs holds it.
    import yaml

    data = reference_plan().model_dump(exclude_none=True)
    data["model"] = {"name": "llama-3.1-405b", "weights_dtype": "bf16", "kv_dtype": "bf16"}
    data["hardware"] = {"gpu": "rtx-4090", "gpus_per_node": 8, "usd_per_gpu_hour": 0.5}
    plan = tmp_path / "big.yaml"
    plan.write_text(yaml.safe_dump(data))
    assert main(["simulate", str(plan)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "big.yaml" in err[0], err


def test_too_many_requests_is_refused(tmp_path, capsys):
    # At 10,000 req/s the fleet is past 80 replicas, so the run simulates a sample of them at its share of the peak
    # (as plan verifies it); 6 hours of that share is still past the 2,000,000 requests one run may hold. The line
    # names the option, and its figures multiply: rate × 360 min × 60 s = the requests it names.
    import re

    import yaml

    data = reference_plan().model_dump(exclude_none=True)
    data["forecast"]["peak_rps"] = 10_000
    plan = tmp_path / "busy.yaml"
    plan.write_text(yaml.safe_dump(data))
    assert main(["simulate", str(plan), "--minutes", "360"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--minutes" in err[0] and "at most 2,000,000" in err[0], err
    rate, requests = re.search(r"at ([\d,.]+) requests/s that is ([\d,]+) requests", err[0]).groups()
    assert float(rate.replace(",", "")) * 360 * 60 == pytest.approx(float(requests.replace(",", "")), rel=1e-5)
    assert float(requests.replace(",", "")) > 2_000_000


def test_no_nan_in_json():
    # One output token per request: TPOT has no gaps to measure; the JSON carries null, never NaN.
    from xlplan.decide.peak_simulation import finite_json as _finite
    from xlplan.decide.peak_simulation import run_json as result_json

    r = sim_run.simulate(REF, 2, 1, _fixed(1.0, 300, 100, 1), 300)
    assert math.isnan(r.tpot_s.p50)
    text = json.dumps(_finite(result_json(r)), allow_nan=False)
    assert json.loads(text)["tpot_s"]["p50"] is None


@pytest.mark.slow
def test_plan_verify_json_note_and_picture(tmp_path, capsys):
    # `plan --verify`: the verified section beside the runbook's figures (which stay as they are: 4, 5, 8).
    assert main(["plan", "--verify", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    method = out["runbook_method"]["fleet"]
    assert (method["load"], method["with_redundancy"], method["purchased"]) == (4, 5, 8)
    v = out["verified"]
    for key in ("load", "with_redundancy", "meets_promise_at_load", "ttft_p95_s", "itl_p95_s"):
        assert key in v
    assert v["meets_promise_at_load"] is False and v["load"] > 4
    note = tmp_path / "note.md"
    assert main(["plan", "--verify", "--markdown", str(note)]) == 0
    text = capsys.readouterr().out
    assert "Simulated at peak" in text and "With one replica lost at the start of the peak" in text
    assert "keep the promise (on each of seeds 1, 2 and 3) with one replica lost at the start of the peak" in text
    png = tmp_path / "note.verified.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Verified at peak (simulated)" in note.read_text()


def test_one_token_outputs_leave_the_inter_token_gap_undefined_and_not_missed():
    # A one-token answer is its first token: no sequence decodes a second, so no token gap exists to measure. At
    # 2 req/s of 2,000-token prompts one H100 replica is busy ~16% of the time (each prefill ~0.08 s: 2 x 8.0e9
    # x 2,000 FLOP / (989 TFLOP/s x 40%)), so p95 TTFT sits far under the 1 s target: the run keeps the promise.
    r = sim_run.simulate(REF, 1, 1, _fixed(2.0, 600, 2000, 1), 600)
    assert r.itl_defined is False and math.isnan(r.itl_at_percentile_s)
    assert r.ttft_at_percentile_s < REF.ttft_s
    assert r.meets_promise
    # two-token answers have one gap each: ITL is measured, and (one short decode step each) within 50 ms
    r2 = sim_run.simulate(REF, 1, 1, _fixed(2.0, 600, 2000, 2), 600)
    assert r2.itl_defined is True and r2.itl_at_percentile_s <= REF.itl_s and r2.meets_promise


def test_a_run_that_has_not_settled_never_passes():
    # The verdict: TTFT within target, ITL within target or undefined, and a steady state. A queue whose p95 TTFT
    # still moves between the halves of the window has not shown its percentile yet, so it fails even inside both.
    nan = math.nan
    assert sim_run.verdict(0.5, 0.03, True, True, 1.0, 0.05)
    assert not sim_run.verdict(0.5, 0.03, True, False, 1.0, 0.05)  # inside both targets, not settled
    assert not sim_run.verdict(0.5, 0.06, True, True, 1.0, 0.05)  # ITL over
    assert not sim_run.verdict(1.5, 0.03, True, True, 1.0, 0.05)  # TTFT over
    assert sim_run.verdict(0.5, nan, False, True, 1.0, 0.05)  # one-token outputs: ITL undefined, not missed
    assert not sim_run.verdict(nan, nan, False, True, 1.0, 0.05)  # nothing measured: no TTFT, no pass
    # and the sentence says what was missed when only the steady state was
    r = sim_run.simulate(REF, 1, 1, _fixed(2.0, 600, 2000, 2), 600)
    unsettled = dataclasses.replace(r, stable=False, meets_promise=False)
    assert verify._missed(REF, unsettled).startswith("a steady state (p95 TTFT ")


def test_step_advice_wherever_the_step_misses_the_inter_token_promise():
    # A 512-token prefill chunk on an H100 takes ~21 ms of FLOPs (2 x 8.0e9 x 512 / (989e12 x 40%)), so a decode step
    # that carries one cannot meet a 15 ms inter-token promise: the step decides, and the advice names the budget
    # even though it is under the 1,024 tokens the old rule waited for.
    s = dataclasses.replace(REF, itl_s=0.015, max_num_batched_tokens=512.0, peak_rps=4.0)
    v = verify.verify(s, steps.solve(s), 95.0, minutes=2)
    assert re.search(r"\bmiss(es)? the inter-token promise", v.sentence)  # "1 GPU misses", "4 GPUs miss"
    assert "a smaller policy.max_num_batched_tokens (now 512)" in v.sentence
    # at the smallest budget the advice would suggest there is nothing smaller to name: a 256-token chunk still takes
    # ~10 ms (2 x 8.0e9 x 256 / 395.6e12), over a 9 ms promise, and the sentence says the miss without the advice
    s256 = dataclasses.replace(s, itl_s=0.009, max_num_batched_tokens=float(verify.SMALLEST_STEP_BUDGET))
    sentence = verify.verify(s256, steps.solve(s256), 95.0, minutes=2).sentence
    assert "inter-token promise" in sentence and "max_num_batched_tokens" not in sentence


@pytest.mark.parametrize("itl_s", [0.005, 0.02, 0.05, 0.2])
def test_max_batch_within_plain_floats_equals_its_array_form(itl_s):
    # the bisection runs as a plain loop on floats and through xlplan.arrays on arrays (the sweep): the same halvings of the
    # same interval, so the same batch to the last bit — including the ends (one sequence misses: 0; the cap fits: cap)
    s = REF
    tr = steps.traffic(s)
    r = replica_at_tp.replica(s, 1)
    step = latency_step_mod.latency_step_fn(s, tr, r)
    cap = float(latency_step_mod.latency_batch_cap(s, tr))
    scalar = batch_search.max_batch_within(step, itl_s, cap)
    array = batch_search.max_batch_within(lambda b: np.asarray([step(float(x)) for x in np.atleast_1d(b)]),
                                     np.asarray([itl_s]), np.asarray([cap]))
    assert isinstance(scalar, float) and scalar == float(array[0])


@pytest.mark.slow
def test_a_replica_lost_during_the_run_requeues_its_requests():
    # Seven replicas carry the reference peak with one to spare (six keep the promise). One fails at the start of the
    # measured window: the requests it held (queued, prefilling, decoding) go to the six others and prefill again,
    # every request still finishes, and Little's Law holds over the window after the loss as in any stable queue.
    wl = workload.poisson_workload(REF, 600, seed=1)
    r = sim_run.simulate(REF, 7, 1, wl, 600, lost=1)
    assert r.lost_replicas == 1 and r.requeued > 0 and r.unfinished == 0 and r.stable
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)
    assert r.meets_promise
    # six with one lost leave five, fewer than the six the promise needs: it misses
    assert not sim_run.simulate(REF, 6, 1, wl, 600, lost=1).meets_promise
    with pytest.raises(ValueError):
        sim_run.simulate(REF, 2, 1, wl, 600, lost=2)  # losing every replica leaves nothing to measure


@pytest.mark.slow
def test_redundancy_is_the_fleet_that_survives_the_loss():
    # issue 18: "with redundancy" is the fewest replicas that keep the promise with the plan's k replicas lost at the
    # start of the peak. The reference verifies at 6; with one of 7 lost the six left keep it, with one of 6 lost the
    # five left do not, so 7.
    s = REF
    v = verify.verify(s, steps.solve(s), 95.0)
    assert v.load == 6 and v.with_redundancy == 7 and v.redundancy_lost_replicas == 1
    assert v.redundancy_sentence.startswith("7 keep the promise (on each of seeds 1, 2 and 3) with one replica lost at the "
                                            "start of the peak")
    assert v.seeds == [1, 2, 3]
    assert v.redundancy_ttft_p95_s is not None and v.redundancy_ttft_p95_s <= s.ttft_s
    # a plan that keeps no redundancy: the verified load is the fleet, and the note says a loss is capacity lost
    s0 = dataclasses.replace(REF, redundancy=0)
    v0 = verify.verify(s0, steps.solve(s0), 95.0)
    assert v0.with_redundancy == v0.load and "keeps no redundancy" in v0.redundancy_sentence


def test_verified_means_every_seed_holds():
    # The rule: the verified load keeps the promise on each of VERIFY_SEEDS seeds, and with one replica fewer some seed
    # misses, so no smaller fleet meets the all-seeds rule. Here, 10 req/s against a 0.4 s TTFT promise, seeds 1 and 2
    # hold on 2 replicas and seed 3 does not (measured), so the first seed alone would have verified one too few.
    s = dataclasses.replace(REF, peak_rps=10.0, ttft_s=0.4)
    sol = steps.solve(s)
    v = verify.verify(s, sol, 95.0, minutes=3)
    assert v.seeds == [1, 2, 3] and v.load is not None
    n = v.load  # TP 1: GPUs are replicas
    for seed in v.seeds:
        wl = workload.workload_for(s, 3, seed)
        assert sim_run.simulate(s, n, 1, wl, 180).meets_promise, seed
    fewer = [sim_run.simulate(s, n - 1, 1, workload.workload_for(s, 3, seed), 180).meets_promise for seed in v.seeds]
    assert not all(fewer)
    assert fewer[0]  # the first seed alone would have taken n - 1: the rule is what added the replica


def test_pooled_percentiles_equal_numpy_on_the_repeated_sample():
    # The ITL sample is each step's duration repeated once per sequence it advanced; its percentiles are taken from the
    # durations and counts without building it. They must be numpy's on the repeated sample to the last bit: ties
    # across steps, zero counts (prefill-only steps), a single entry, and the ends of the range.
    rng = np.random.default_rng(0)
    qs = [0.0, 1.0, 50.0, 95.0, 99.0, 99.9, 100.0]
    for trial in range(200):
        m = int(rng.integers(1, 60))
        values = np.round(rng.exponential(0.03, m), int(rng.integers(2, 6)))  # rounding makes ties
        counts = rng.integers(0, 5, m) * rng.integers(0, 2, m)
        if counts.sum() == 0:
            counts[0] = 1
        expected = np.percentile(np.repeat(values, counts), qs)
        assert sim_run._pooled_percentiles(values, counts, qs) == [float(x) for x in expected], trial
    assert all(math.isnan(x) for x in sim_run._pooled_percentiles([0.1], [0], [95.0]))


def test_a_run_stopped_early_has_the_full_runs_verdict():
    # A run whose figures nobody reads (the pilot, the other seeds, the loss search) stops once its p95 TTFT is over
    # the target whatever the rest does. Its verdict must be the full run's: overloaded fleets (stopped early), fleets
    # near the boundary, passing fleets, a replica lost, bursty arrivals, a tight TTFT promise.
    wl = workload.poisson_workload(REF, 240, seed=2)
    burst = workload.poisson_workload(REF, 240, seed=3, cv2=4.0)
    tight = dataclasses.replace(REF, ttft_s=0.3)
    stopped = 0
    for s, n, w, lost in ((REF, 3, wl, 0), (REF, 4, wl, 0), (REF, 5, wl, 0), (REF, 6, wl, 0), (REF, 6, wl, 1),
                          (REF, 7, wl, 1), (REF, 5, burst, 0), (REF, 7, burst, 0), (tight, 6, wl, 0), (tight, 8, wl, 0)):
        full = sim_run.simulate(s, n, 1, w, 240, lost=lost)
        run, ok = sim_run.watched_verdict(s, n, 1, w, 240, lost=lost)
        assert ok == full.meets_promise, (n, lost)
        if run is None:
            stopped += 1
            assert not full.meets_promise and full.ttft_at_percentile_s > s.ttft_s
        else:
            assert run == full  # not stopped: the same run, figure for figure
    assert stopped >= 2


@pytest.mark.slow
def test_a_lower_rate_never_needs_more_gpus_on_a_heavy_tail():
    # A new user's plan (mistral-7b on L40S in units of 4, outputs p50 150 / p99 4,000 tokens): at 17.92 req/s the
    # verified load was 10 GPUs and at 18.0 req/s 8, because 8 GPUs at 17.92 had p95 TTFT 0.571 s and 0.682 s over the
    # run's halves (+0.111 s, just over 10% of the 1 s target) and were called unsteady. Carried on for twice the run,
    # that rise gives 0.682 + 2 x 0.111 = 0.904 s <= 1 s: steady, so the fleet at the lower rate is no larger.
    from planhelp import heavy_tail_plan

    from xlplan.decide.planner import plan as run_plan

    low, high = run_plan(heavy_tail_plan(17.92), verify="auto"), run_plan(heavy_tail_plan(18.0), verify="auto")
    assert low.answer.load <= high.answer.load == 8


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_prefill_first_engine_pauses_its_decodes_for_each_prefill(engine):
    # Two clients, 100-token prompts (any two fit one 8,192-token step), one replica of one GPU. Request 0 wants 10
    # tokens, every later one 3; each later request is sent the moment one finishes. The first token comes with the
    # prefill; each decoding step gives every decoding sequence one more, so request 0 needs 9 decoding steps and each
    # later one 2. The loop starts a replica's next step before it takes an arrival of the same instant, so request 1
    # (sent at t = 0, after request 0 started step 1) and each request sent as another finishes wait one step.
    # vLLM: s1 prefills r0; s2 decodes r0 beside r1's prefill; s3-s4 decode both (r1 done); s5 decodes r0; s6 decodes
    # r0 beside r2's prefill; s7-s8 both (r2 done); s9 r0; s10 r0 beside r3's prefill: r0's ninth decode ends s10.
    # SGLang (prefill first): s1 prefills r0; s2 prefills r1 and decodes nothing; s3-s4 both (r1 done); s5 r0; s6
    # prefills r2 alone; s7-s8 both; s9 r0; s10 prefills r3; s11-s12 both; s13 r0: its ninth decode (s3, s4, s5, s7, s8,
    # s9, s11, s12, s13) ends s13, three prefill steps later than under vLLM.
    s = dataclasses.replace(REF, engine=engine, max_num_seqs=256, max_num_batched_tokens=8192.0)
    n = 12
    outputs = np.full(n, 3)
    outputs[0] = 10
    wl = workload.Workload(np.zeros(n), np.full(n, 100.0), outputs)
    run = sim_run.closed_loop(s, 1, 1, wl, 2)
    ends = np.cumsum(run.step_s)
    if engine == "vllm":
        assert list(run.step_decodes[:10]) == [0, 1, 2, 2, 1, 1, 2, 2, 1, 1]
        assert run.finish_s[0] == ends[9]
    else:
        assert list(run.step_decodes[:13]) == [0, 0, 2, 2, 1, 0, 2, 2, 1, 0, 2, 2, 1]
        assert run.finish_s[0] == ends[12]
        assert run.step_s[1] == run.step_s[5] == run.step_s[9]  # a prefill step of one 100-token prompt, no decode
    assert (run.first_token_s[0], run.first_token_s[1], run.finish_s[1]) == (ends[0], ends[1], ends[3])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_token_gaps_add_up_to_each_requests_decode_time(engine):
    # A request's token gaps telescope: their sum is its last token's time less its first. Summed over every request
    # of a closed loop (16 clients, mixed lengths, a cache that never preempts), the measured gaps (each step's time
    # once per sequence it advanced, and under SGLang's prefill first the gaps that also span the prefill steps a
    # sequence waited through, in place of as many of that step's own) total the sum of (finish - first token).
    s = dataclasses.replace(REF, engine=engine, max_num_seqs=256, max_num_batched_tokens=8192.0)
    rng = np.random.default_rng(21)
    n = 120
    wl = workload.Workload(np.zeros(n), rng.integers(100, 6000, n).astype(float), rng.integers(2, 300, n))
    run = loop._Run(s, 1, 1, wl, math.inf, 0, 16)
    run.warm, run.stop = 0.0, math.inf  # every step measured, every request followed to its end
    run.run()
    assert run.preemptions == 0
    step_t, step_b = np.asarray(run.step_t), np.asarray(run.step_b)
    idx, cnt, gap = np.asarray(run.pause_idx, dtype=int), np.asarray(run.pause_n), np.asarray(run.pause_gap)
    total = float(step_t @ step_b) + float(cnt @ (gap - step_t[idx]))
    assert (len(idx) > 0) == (engine == "sglang")
    assert total == pytest.approx(float(np.sum(np.asarray(run.finish) - np.asarray(run.first_token))), rel=1e-9)


@pytest.mark.parametrize(("gpu", "tokens"), [("h100-sxm", 8192), ("b200", 16384), ("l40s", 4096), ("rtx-4090", 2048)])
def test_an_sglang_plan_steps_at_sglangs_own_prefill_budget(gpu, tokens):
    # SGLang's chunked_prefill_size by the device's memory (sglang server_args.py _handle_gpu_memory_settings):
    # below 35 GiB 2,048 tokens (the 4090's 24 GiB), below 60 GiB 4,096 (the L40S's 45 GiB), below 160 GiB 8,192 (the
    # H100's 79.6 GiB), 16,384 above (the B200's 179 GiB). A vLLM plan keeps vLLM's budgets (8,192 on large GPUs).
    from xlplan.io.planfile import plan_from_mapping

    data = reference_plan().model_dump(exclude_none=True)
    data["hardware"] = {"gpu": gpu, "gpus_per_node": 8, "usd_per_gpu_hour": 3.0}
    data["policy"] = {"engine": "sglang"}
    s = resolve(plan_from_mapping(data, "test"))
    assert scenario.chunk_tokens(s) == tokens
    data["policy"] = {"engine": "vllm"}
    assert scenario.chunk_tokens(resolve(plan_from_mapping(data, "test"))) == (8192 if gpu in ("h100-sxm", "b200") else 2048)


def test_the_fleet_with_redundancy_is_never_smaller_than_the_load_plus_the_replicas_lost(monkeypatch):
    # With k replicas lost the survivors are a fleet of n - k serving the peak; the verified load is the fewest replicas
    # that keep the promise on every seed, so n - k >= load: a loss run that passed with fewer (a stability verdict at
    # the edge) would have the buyer order fewer GPUs than the load (a trial saw 29 for the load and 28 with
    # redundancy). Here every loss run passes: the search answers the load plus k, never below.
    monkeypatch.setattr(search, "watched_verdict", lambda *a, **k: (None, True))
    wl = workload.poisson_workload(REF, 60.0, 1)
    for verified, lost in ((6, 1), (29, 1), (4, 2)):
        n, _ = search._survives_loss(REF, 1, [wl], 60.0, 95.0, verified, lost, 40)
        assert n == verified + lost
