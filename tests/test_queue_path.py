"""The queueing path (xlplan.plan.queue_path): a replica's service rate at the promise, and the replicas the wait needs.

Expected figures come from the runbook's reference plan worked by hand (the step budget shared between decodes and
their prefill), from the queueing formulas' own definition (the fewest servers), and from the simulator: the path must
land within one replica of the fleet the simulation finds (issue 18's rule for the closed form).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from planhelp import replan

from xlplan.decide.planner import plan as run_plan
from xlplan.io.planfile import read_plan
from xlplan.plan import latency_step, replica_at_tp, scenario, steps
from xlplan.plan.queue_path import queue_path
from xlplan.plan.scenario import resolve
from xlplan.report.note import render_text
from xlplan.serving import queueing
from xlplan.simulate import search, workload


def test_reference_replica_rate_by_hand(ref_plan, ref):
    # 512-token steps (the runbook's engine sets no budget; the simulation's chunk), each decode bringing
    # 2,000 ÷ 300 = 6.67 prompt tokens of prefill: b × (1 + 6.67) = 512, so b = 66.78 decodes per step. That step
    # (30 ms in the serving model) is within the 50 ms inter-token target, so the budget binds, not the target.
    q = ref.queueing
    assert q.step_budget_tokens == 512
    assert q.slots_per_replica == pytest.approx(512 / (1 + 2000 / 300), rel=1e-9)
    assert q.step_s < 0.05
    # each request holds a slot for its 300 steps: μ = b ÷ (300 × τ), and 40 req/s offer 40 ÷ μ busy replicas
    assert q.service_rps_per_replica == pytest.approx(q.slots_per_replica / (300 * q.step_s))
    assert q.offered_erlangs == pytest.approx(40 / q.service_rps_per_replica)
    # the runbook's 4 replicas would run at ρ ≈ 1.35 (issue 18 measured 1.36 in simulation): a queue without bound
    assert q.utilisation_at_load == pytest.approx(q.offered_erlangs / 4) and 1.3 < q.utilisation_at_load < 1.4
    # the wait target: the 1 s TTFT promise less the p95 prompt's prefill on an idle replica
    assert q.wait_target_s == pytest.approx(1.0 - q.prefill_at_percentile_s)


def test_replicas_are_the_fewest_that_keep_the_wait(ref_plan):
    s = resolve(ref_plan)
    sol = steps.solve(s)
    q = queue_path(s, sol.traffic, 1, float(sol.paths.load_replicas))
    service_s = 1.0 / q.service_rps_per_replica
    # Erlang C with the Allen–Cunneen factor (M/M/c here): n meets the target, n − 1 does not
    assert queueing.wait_at_percentile_s(q.replicas, 40.0, service_s, 95) <= q.wait_target_s
    assert queueing.wait_at_percentile_s(q.replicas - 1, 40.0, service_s, 95) > q.wait_target_s
    assert q.wait_at_percentile_s == pytest.approx(queueing.wait_at_percentile_s(q.replicas, 40.0, service_s, 95))
    # a TTFT promise the p95 prompt's prefill alone misses leaves no fleet: 2,000 tokens are 32 TFLOP of prefill,
    # 10 ms at even 8 × 989 TFLOP/s dense at 40% MFU, so no TP degree inside the node meets 5 ms
    tight = replan(ref_plan, promise={"ttft_s": 0.005})
    assert run_plan(tight).queueing.replicas is None


def _printed(line: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.?\d*", line)]


def test_the_note_line_adds_up_from_its_printed_operands(ref):
    # "66.78 sequences ÷ (300.0 tokens × 30.15 ms) = 7.38 req/s per replica (512-token steps); 40 req/s ÷ 7.38 = 5.42
    #  replicas busy → 6 replicas keep the p95 wait for a slot at 0.63 s ≤ 1 s − 0.09 s prefill (at 512-token steps)
    #  (Erlang C); 6 × 1 GPU per replica = 6 GPUs"
    line = next(ln for ln in render_text(ref).splitlines() if ln.strip().startswith("Queueing path"))
    (b, out, step_ms, mu, _, rate, mu2, busy, reps, _, wait, ttft, pre, steps_, reps2, per,
     gpus) = _printed(line.split("Queueing path", 1)[1])
    assert steps_ == 512  # the prefill is the p95 prompt's at the deployed step budget
    assert mu == pytest.approx(b / (out * step_ms / 1000), abs=0.006)  # printed to 2 decimals
    assert mu2 == mu and busy == pytest.approx(rate / mu, abs=0.006)
    assert wait <= ttft - pre + 0.01 and reps2 == reps and per == ref.fleet.tp and gpus == reps * per


def test_long_prefill_steps_limit_the_rate_a_replica_serves(ref_plan):
    # 3,000-token steps take a whole 2,000-token prompt in one step (and never two): 87 ms against a 50 ms inter-token
    # target. The pooled p95 gap holds only while at most 5% of steps carry one, so a replica serves λ with
    # λ·n·τ̄ = 0.05 (n = 1 chunk per prompt, τ̄ the mean step at the batch λ·300·τ̄ it implies) — fewer than its slots.
    # (the plan file sets the budget here, so it stands: left to the engine's default, the plan would deploy a
    # smaller budget — test_the_step_budget_that_needs_fewest_replicas_is_named)
    p = replan(ref_plan, policy={"engine": "vllm", "max_num_batched_tokens": 3000, "tp": 1})
    q = run_plan(p).queueing
    assert q.step_budget_tokens == 3000 and q.prefill_step_s > 0.05
    lam = q.prefill_tail_rps_per_replica
    assert lam is not None and lam < q.slot_rps_per_replica
    # a hard limit, no queue behind it: at least ⌈40 ÷ λ⌉ replicas, and the Erlang wait on the slots adds none here
    assert q.tail_replicas == math.ceil(40 / lam) and q.replicas == max(q.tail_replicas, q.replicas)
    s = resolve(p)
    sol = steps.solve(s)
    r = replica_at_tp.replica(s, 1)
    from xlplan.serving import folded_step
    f = folded_step.step_time_fn(r)
    ctx = 2000 + 300 / 2  # mean prompt + half the output: the cached context of a decoding sequence
    tau_bar = q.prefill_step_s  # solve b = λ·300·τ̄ and τ̄ = 0.95·τ_decode(b) + 0.05·τ_prefill(b) again by hand
    for _ in range(60):
        b = lam * 300 * tau_bar
        chunk = 2000.0
        tau_p = f(b, b * ctx, b * ctx, chunk, chunk * chunk, chunk * chunk, b * ctx, b * ctx)
        tau_bar = 0.95 * f(b, b * ctx, b * ctx, 0, 0, 0, b * ctx, b * ctx) + 0.05 * tau_p
    assert lam * 1 * tau_bar == pytest.approx(0.05, rel=1e-6)
    assert sol.traffic.prompt_mean == 2000 and sol.traffic.output_mean == 300
    # vLLM's 8,192-token steps hold four such prompts: those arriving during a prefill step share the next, so fewer
    # steps carry prefill at the same rate and a replica serves more (test_prefill_steps_shared_..._by_hand)
    q8k = run_plan(replan(ref_plan, policy={"engine": "vllm", "max_num_batched_tokens": 8192, "tp": 1})).queueing
    assert q8k.prefill_tail_rps_per_replica > lam and q8k.tail_replicas <= q.tail_replicas
    # with 512-token chunks a step stays within 50 ms: the limit never binds (the reference)
    assert run_plan(ref_plan).queueing.prefill_tail_rps_per_replica is None
    line = next(ln for ln in render_text(run_plan(p)).splitlines() if ln.strip().startswith("Queueing path"))
    assert "a step carrying a prompt chunk takes 87 ms, over the 50 ms target, and at most 5% of steps may" in line
    assert f"40 ÷ {lam:.2f} → {q.tail_replicas} replicas at least" in line


BATTERY_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "battery"

L70 = {"name": "llama-3.1-70b", "weights_dtype": "bf16", "kv_dtype": "bf16"}


def _battery(ref_plan) -> dict:
    """Issue 18's scenarios and ours: each a plan the closed form must size within one replica of the simulation."""
    return {
        "reference": ref_plan,
        "rag": replan(ref_plan, forecast={"peak_rps": 10, "prompt_tokens": {"p50": 8000, "p95": 8000, "p99": 8000},
                                          "output_tokens": {"p50": 200, "p95": 200, "p99": 200}}),
        "long_answers": replan(ref_plan, forecast={"peak_rps": 10, "prompt_tokens": {"p50": 300, "p95": 300, "p99": 300},
                                                   "output_tokens": {"p50": 2000, "p95": 2000, "p99": 2000}}),
        "heavy_tail": replan(ref_plan, forecast={"prompt_tokens": {"p50": 2000, "p95": 8000, "p99": 14208}}),
        "tiny": replan(ref_plan, forecast={"peak_rps": 0.5}),
        "moe_tp2": replan(ref_plan, model={"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"},
                          policy={"tp": 2}),
        "long_context": replan(ref_plan, forecast={"peak_rps": 2, "prompt_tokens": {"p50": 16000, "p95": 16000, "p99": 16000}},
                               promise={"ttft_s": 3.0}),
        "h200_peak_x2": replan(ref_plan, forecast={"peak_rps": 80}, hardware={"gpu": "h200", "usd_per_gpu_hour": 3.6}),
        "fp8": replan(ref_plan, model={"name": "llama-3.1-8b", "weights_dtype": "fp8", "kv_dtype": "fp8"}),
        "vllm_defaults": replan(ref_plan, policy={"engine": "vllm"}),
        "70b_tp4": replan(ref_plan, forecast={"peak_rps": 10}, model=L70, policy={"tp": 4}),
        "70b_tp8": replan(ref_plan, forecast={"peak_rps": 20}, model=L70, policy={"tp": 8}),
        "bursty": replan(ref_plan, forecast={"arrival_cv2": 4.0}),
        # held back until the latency path timed the mean batch (6 closed form, 8 simulated), which a gap does not see
        "itl_25ms": replan(ref_plan, promise={"itl_s": 0.025}),
        # held back until the simulator clipped window layers' cache at the window as the planner does (6 against 8)
        "gemma_window": replan(ref_plan, forecast={"peak_rps": 10},
                               model={"name": "gemma-3-27b", "weights_dtype": "bf16", "kv_dtype": "bf16"}),
        # issue 48's battery: a 20 ms target where two 2,000-token prompts share a 4,096-token step (13 closed form
        # with the chain of prefill steps, 14 with a step per prompt; 12 simulated), and the 70B on two H200s at
        # 512-token steps (34 closed form with the chunk steps' share at the mean batch, 107 at the percentile's; 35
        # simulated)
        "tight_itl": read_plan(BATTERY_DIR / "tight-itl.yaml"),
        "70b_h200_tp2_512": replan(read_plan(BATTERY_DIR / "70b-h200-tp2.yaml"), policy={"max_num_batched_tokens": 512}),
    }


BATTERY = ("reference", "rag", "long_answers", "heavy_tail", "tiny", "moe_tp2", "long_context", "h200_peak_x2", "fp8",
           "vllm_defaults", "70b_tp4", "70b_tp8", "bursty", "itl_25ms", "gemma_window", "tight_itl", "70b_h200_tp2_512")


def test_prefill_steps_shared_by_every_waiting_prompt_by_hand():
    # A step takes every waiting prompt (shared = the chain's last state, so none is left over): the chain is two
    # states, decode (none waiting) and prefill (some). From a decode step of d = 10 ms a prompt arrives with
    # probability a = 1 − e^(−λd); a prefill step of c = 200 ms (whatever it carries) is followed by another unless
    # none arrived in it, e = e^(−λc). The share of prefill steps is a ÷ (a + e): at λ = 2/s, a = 1 − e^(−0.02) =
    # 0.0198013, e = e^(−0.4) = 0.6703200, share = 0.0286917.
    from xlplan.plan.queue_path import CHAIN_STATES, chunk_step_chain

    a, e = 1.0 - math.exp(-0.02), math.exp(-0.4)
    share, per_step, mean = chunk_step_chain(2.0, 0.01, lambda m: 0.2, CHAIN_STATES)
    assert share == pytest.approx(a / (a + e), rel=1e-9)
    assert mean == pytest.approx((1 - share) * 0.01 + share * 0.2, rel=1e-9)
    # flow balance: prompts leave as fast as they come, prefill steps per second × prompts each = λ
    assert share / mean * per_step == pytest.approx(2.0, rel=1e-9)


def test_a_step_per_prompt_gives_the_share_the_tail_rate_counts():
    # shared = 1: each prompt has a prefill step of its own, so prefill steps come at λ and the share of steps is
    # λ·E[step] (renewal: 1 ÷ E[step] steps a second), the count _tail_rate solves for; 3 req/s, 10 ms decode steps,
    # 100 ms prefill steps (4.1% of steps, 30% of the time, carry a prompt).
    from xlplan.plan.queue_path import chunk_step_chain

    share, per_step, mean = chunk_step_chain(3.0, 0.01, lambda m: 0.1 * m, 1)
    assert per_step == pytest.approx(1.0, rel=1e-12) and share == pytest.approx(3.0 * mean, rel=1e-9)


@pytest.mark.parametrize("output_mean", [300.0, 15_768.0])
def test_the_tail_rate_solves_its_defining_equation(output_mean):
    # (1 − p) ÷ (n·τ̄) = λ, with τ̄ = p·τ_decode(b) + (1 − p)·τ_prefill(b) at b = λ·E[output]·τ̄ (Little's Law on the
    # slots): the rate returned satisfies it, checked here by iterating τ̄ at that λ by hand. Steps are linear in the
    # batch (2 ms + 0.1 ms per decode, 20 µs per chunk token, 4,096-token budget, 3,863-token prompts, p95). With
    # 15,768-token outputs 1 req/s is far past a replica's capacity (its batch diverges), where a damped iteration
    # from 1 req/s stopped 200 rounds short of the root.
    from xlplan.plan.queue_path import _tail_rate

    p, prompt, budget = 0.95, 3863.0, 4096.0

    def decode_s(b):
        return 0.002 + 1e-4 * b

    def prefill_s(b):
        chunk = max(min(prompt, budget - b), 1.0)
        return decode_s(b) + 2e-5 * chunk, chunk

    first, _ = prefill_s(1.0)
    rate, step = _tail_rate(decode_s, prefill_s, first, output_mean, prompt, p)
    tau = first
    for _ in range(5000):  # plain rounds: near capacity each closes only 13% of the gap
        b = max(rate * output_mean * tau, 1.0)
        tau = p * decode_s(b) + (1 - p) * prefill_s(b)[0]
    b = rate * output_mean * tau
    n = math.ceil(prompt / prefill_s(b)[1])
    assert (1 - p) / (n * tau) == pytest.approx(rate, rel=1e-9)
    assert step == pytest.approx(prefill_s(b)[0], rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("case", BATTERY)
def test_closed_form_within_one_replica_of_the_verified_fleet(ref_plan, case):
    # issue 18's acceptance: the closed form (the largest of the memory, compute, latency and queueing paths, at the
    # step budget the plan deploys) is within one replica of the fewest replicas the simulation finds keeping the
    # promise by the verification's own rule (p95 TTFT and ITL at peak, every run stable, on each of seeds 1, 2, 3;
    # the plan's arrivals: Poisson, or squared CV 4 for "bursty"). Measured: 6/6, 6/6, 4/3, 9/10, 1/1, 2/3, 4/3,
    # 11/11, 3/3, 6/6 (vLLM's defaults, deployed at 1,024-token steps), 4/4 (the 70B at TP 4, at 256-token steps:
    # issue 18 measured 16 GPUs), 4/4 (TP 8), 7/7 (bursty), 7/8 (a 25 ms target: the latency path at the batch a
    # gap sees at the percentile) and 6/6 (gemma-3-27b, its window layers' cache clipped at the window in both
    # models). The README names the cases we hold back and how they fare.
    from xlplan.decide.answer import deployed
    from xlplan.plan import closed_form

    p = _battery(ref_plan)[case]
    s = resolve(p)
    cf = closed_form.closed_form(s, steps.solve(s), p.policy.max_num_batched_tokens is not None)
    sim = search.minimum_replicas(deployed(s, cf), cf.tp, cf.load_replicas, p.promise.percentile, cv2=s.arrival_cv2,
                                    max_context=p.model.resolve().max_context_tokens)
    assert sim is not None
    assert abs(cf.load_replicas - sim) <= 1, (case, cf.load_replicas, sim)
    # and the plan's own result carries the same closed form (one figure, one place)
    assert run_plan(p).closed_form.load == cf.load


@pytest.mark.slow
def test_the_step_budget_that_needs_fewest_replicas_is_named(ref_plan):
    # issue 18's 70B case: Llama-3.1-70B bf16 at TP 4, 10 req/s, the runbook's engine (512-token chunks in the
    # simulation). The simulation needs 14 replicas with 512-token steps and 4 with 256-token steps (issue 18 measured
    # 56 and 16 GPUs); the path compares the budgets and names 256, with 4 replicas — the simulated figure.
    p = replan(ref_plan, forecast={"peak_rps": 10},
               model={"name": "llama-3.1-70b", "weights_dtype": "bf16", "kv_dtype": "bf16"}, policy={"tp": 4})
    r = run_plan(p)
    q = r.queueing
    assert q.best_step_budget_tokens == 256 and dict(q.budget_options)[256] == 4
    # the plan deploys it: the queueing path (and the closed form, and the simulation) run at 256-token steps, where
    # the default 512 would need 17
    assert q.step_budget_tokens == 256 and q.replicas == 4 and dict(q.budget_options)[512] == 17
    assert r.closed_form.budget_chosen_by == "queueing path" and r.answer.step_budget_tokens == 256
    assert not q.budget_set_by_plan
    s = resolve(replan(p, policy={"max_num_batched_tokens": 256}))
    found = search.search(s, 4, workload.workload_for(s, 5.0, 1), 300.0, 3)
    assert found.verified_replicas == 4
    text = render_text(r)
    assert "deploy policy.max_num_batched_tokens: 256" in text
    # a budget the plan file sets is respected: the comparison is shown, the setting stands
    fixed = run_plan(replan(p, policy={"max_num_batched_tokens": 512}))
    assert fixed.queueing.budget_set_by_plan and fixed.queueing.step_budget_tokens == 512
    assert "the plan sets its budget, so it stands" in render_text(fixed)


@pytest.mark.slow
def test_the_answer_is_the_verified_fleet_and_the_note_keeps_the_runbook_first(ref_plan):
    # issue 18: the JSON carries the runbook's fleet, the closed form, the verified fleet and the Answer separately
    r = run_plan(ref_plan, verify=True)
    f, cf, v, a = r.fleet, r.closed_form, r.verified, r.answer
    # the runbook's method, exactly: 4 + 1, a node of 8, 5 GPUs × $3/h × 730 h = $10,950 (~$11k)
    assert (f.load, f.with_redundancy, f.purchased) == (4, 5, 8) and r.cost.monthly_usd == 5 * 3 * 730
    # the closed form: the queueing path binds at 6 (ρ = 1.35 on the runbook's 4)
    assert (cf.load, cf.binding) == (6, "queueing")
    # the Answer follows the simulation: 6 keep the promise, 7 with one replica lost mid-run, a node of 8 on the bill
    # of 7 × $3/h × 730 h = $15,330
    assert a.source == "verified" and (a.load, a.with_redundancy, a.purchased) == (v.load, v.with_redundancy, 8) == (6, 7, 8)
    assert a.monthly_usd == 7 * 3 * 730 and v.redundancy_lost_replicas == 1
    text = render_text(r)
    # renting per GPU (the default), the order is the 7 GPUs the bill counts: 7 x $3 x 730 h = $15,330
    assert text.splitlines()[3].startswith("Answer: 6 GPUs for the load, 7 with redundancy (one replica lost): rent 7 GPUs;")
    assert "~$15,330/month" in text.splitlines()[3]
    # the note, in order: the runbook's method with its figures, the queueing path, the verified answer and its
    # redundancy with one replica lost, the order (rented per GPU: the 7 with redundancy)
    marks = ["Memory path                 600.0 × 0.281 GiB = 168.5 GiB", "Queueing path", "Runbook's method",
             "Verified at peak (simulated)  6 GPUs", "With redundancy (simulated)   7 GPUs keep the promise with one replica lost",
             "Order                         rent 7 GPUs, the fleet with redundancy"]
    at = [text.index(m) for m in marks]
    assert at == sorted(at)
    assert "~$11k" in text and "$15,330 / month" in text


def test_the_memory_path_uses_the_time_in_system_the_fleet_achieves(ref_plan):
    # issue 18's long answers (10 req/s, 300 in / 2,000 out): the runbook holds each request for 2,000 × 50 ms = 100 s,
    # 1,000 in flight, 6 GPUs of cache. At the fleet's own batch the step is under the target, so a request holds its
    # cache for less (Little's Law on each replica, solved with the step that batch implies) and 3 replicas hold it —
    # the simulation's 3.
    p = replan(ref_plan, forecast={"peak_rps": 10, "prompt_tokens": {"p50": 300, "p95": 300, "p99": 300},
                                   "output_tokens": {"p50": 2000, "p95": 2000, "p99": 2000}})
    r = run_plan(p)
    assert r.memory.gpus == 6 and r.time_in_system_s == pytest.approx(100.0)
    cf = r.closed_form
    assert cf.memory_gpus == 3 and cf.achieved_step_s < 0.05
    assert cf.time_in_system_s == pytest.approx(2000 * cf.achieved_step_s)
    assert cf.concurrency == pytest.approx(10 * cf.time_in_system_s)


def _random_scenarios(ref, n, seed):
    # the benchmark's random plans: rate 1-200 req/s, prompts 200-4,000 (p95 up to 3x, p99 4x), outputs 50-800, ITL
    # 20-100 ms; drawn here with the standard library so the test needs no numpy
    import dataclasses
    import random

    rng = random.Random(seed)
    for _ in range(n):
        p50, o50 = rng.uniform(200, 4000), rng.uniform(50, 800)
        yield dataclasses.replace(ref, peak_rps=rng.uniform(1, 200), prompt_p50=p50, prompt_p95=p50 * rng.uniform(1, 3),
                                  prompt_p99=p50 * 4, output_p50=o50, output_p95=o50 * 1.5, output_p99=o50 * 2,
                                  itl_s=rng.uniform(0.02, 0.1))


def test_pruned_degrees_change_no_answer(ref_plan):
    # A degree is skipped where a lower bound of its fleet (its memory and compute paths for the runbook's method; its
    # compute path and its queue's stability, n > λ/μ, for the closed form) already orders after the best so far. A
    # bound never excludes the answer, so the lean searches give what solving every degree in full gives, whichever
    # degree they try first.
    from xlplan.plan import closed_form

    for s in _random_scenarios(resolve(ref_plan), 120, seed=18):
        try:
            sol = steps.solve(s)
        except scenario.PlanningError:
            assert steps.solve_fleet(s) is None and closed_form.closed_form_of(s, False, 512) is None
            continue
        full = closed_form.closed_form(s, sol, False, budget=512)
        for first in (None, 1, 2, 4, 8):
            assert steps.solve_fleet(s, first) == (sol.paths.purchased, sol.binding, sol.binding_paths)
            assert closed_form.closed_form_of(s, False, 512, first_tp=first) == full


def test_the_achieved_step_is_the_fixed_point_of_littles_law(ref_plan):
    # On n replicas each carries b = λ·E[output]·τ ÷ n decodes (Little's Law), and the step τ = min(step(b), ITL)
    # depends on b. For a dense model the step is two lines in b, and the fixed point is solved in closed form; it must
    # satisfy the law itself to rounding, and agree with iterating the map from an empty batch where that converges.
    import dataclasses

    from xlplan.plan import achieved_paths
    from xlplan.serving import folded_step

    for s in _random_scenarios(resolve(ref_plan), 60, seed=7):
        q = dataclasses.replace(s, max_num_batched_tokens=512.0, latency_with_prefill=True)
        tr = steps.traffic(q)
        r = replica_at_tp.replica(q, 1)
        step = latency_step.latency_step_fn(q, tr, r)
        lines = folded_step.step_lines(r, latency_step.latency_load(q, tr, r, 1.0))
        for n in (1, 3, 10, 40):
            t, tau, b = achieved_paths.achieved_time_in_system_s(q, tr, step, n, lines)
            per = q.peak_rps * tr.output_mean / n
            assert b == pytest.approx(per * tau, rel=1e-12) and t == pytest.approx(tr.output_mean * tau, rel=1e-12)
            assert tau == pytest.approx(min(step(max(b, 1.0)), q.itl_s), rel=1e-9)
            _, tau_iter, b_iter = achieved_paths.achieved_time_in_system_s(q, tr, step, n)
            if abs(per * min(step(max(b_iter, 1.0)), q.itl_s) - b_iter) <= 1e-9 * b_iter:  # the iteration settled
                assert b_iter == pytest.approx(b, rel=1e-6)


def test_a_changed_scenario_is_what_dataclasses_replace_gives(ref_plan):
    # scenario.changed copies a Scenario with some fields set, faster than dataclasses.replace: the same object by
    # value, and a field it does not have is refused as replace refuses it
    import dataclasses

    from xlplan.plan.scenario import changed

    s = resolve(ref_plan)
    assert changed(s, itl_s=0.04, peak_rps=12.0) == dataclasses.replace(s, itl_s=0.04, peak_rps=12.0)
    assert changed(s) == s and changed(s) is not s
    with pytest.raises(TypeError):
        changed(s, itl_ms=40)


def _gemma(ref_plan, **forecast):
    return replan(ref_plan, forecast=forecast, model={"name": "gemma-3-27b", "weights_dtype": "bf16", "kv_dtype": "bf16"})


def test_the_closed_form_line_divides_by_its_own_degrees_cache(ref_plan):
    # gemma-3-27b at the reference's 40 req/s: the runbook's method picks TP 2, the closed form TP 1. The closed form's
    # line must divide its cache by the KV budget per GPU at its own degree (TP 1), so that its printed operands give
    # its printed quotient: GiB ÷ GiB per GPU = GPUs, to the two decimals shown.
    r = run_plan(_gemma(ref_plan))
    assert r.closed_form.tp != r.fleet.tp
    line = next(ln for ln in render_text(r).splitlines() if ln.strip().startswith("Closed form") and "in system" in ln)
    found = re.search(r"= ([\d,.]+) GiB ÷ ([\d.]+) GiB per GPU at TP \d+ = ([\d.]+) GPUs", line)
    total, per_gpu, gpus = (float(x.replace(",", "")) for x in found.groups())
    assert total / per_gpu == pytest.approx(gpus, abs=0.01)
    tp1 = next(o for o in r.tp_options if o.tp == r.closed_form.tp)
    assert per_gpu == pytest.approx(tp1.kv_budget_gib_per_gpu, abs=0.005)


def test_one_token_outputs_write_strict_json_and_no_nan(ref_plan, tmp_path, capsys):
    # One output token decodes no second token: the inter-token gap is undefined, not a miss (issue 18), and it is
    # written as JSON null and as words on the note, never as NaN (which a strict JSON parser refuses).
    import json

    import yaml

    from xlplan.cli import main

    p = replan(ref_plan, forecast={"output_tokens": {"p50": 1, "p95": 1, "p99": 1}})
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(p.model_dump(mode="json", exclude_none=True)), encoding="utf-8")
    assert main(["plan", str(path), "--json"]) == 0
    text = capsys.readouterr().out

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    data = json.loads(text, parse_constant=refuse)
    assert data["verified"]["itl_p95_s"] is None and data["answer"]["source"] == "verified"
    assert main(["plan", str(path)]) == 0
    note = capsys.readouterr().out
    assert not re.search(r"\bnan\b", note, re.IGNORECASE) and "inter-token undefined (one-token outputs)" in note


def test_the_api_comparison_says_how_many_times_cheaper_the_api_is(ref_plan):
    # 0.01 req/s keeps one GPU busy for almost nothing: the API costs a few dollars a month, self-hosting thousands.
    # The sentence gives the factor the right way up (the bill ÷ the API's, above 1), never "0.0× cheaper".
    r = run_plan(replan(ref_plan, forecast={"peak_rps": 0.01}), verify=False)
    sentence = next(x for x in render_text(r).split("  ") if "cheaper than self-hosting" in x)
    factor = float(re.search(r"the API is ([\d,.]+)× cheaper than self-hosting", sentence).group(1).replace(",", ""))
    assert factor == pytest.approx(r.answer.monthly_usd / r.answer.api_monthly_usd, rel=0.01) and factor > 1


@pytest.mark.slow
def test_the_fleet_is_verified_at_the_closed_forms_degree(ref_plan):
    # A 2 s inter-token target holds requests for 10 minutes in the runbook's memory path (300 × 2 s), which then picks
    # TP 4 for 104 GPUs; the closed form's degree is TP 1. The simulation must search and add redundancy at the closed
    # form's degree: one spare replica is one GPU there, and loosening the promise never makes the answer dearer than
    # the reference's 6 + 1 at a 50 ms target.
    r = run_plan(replan(ref_plan, promise={"itl_s": 2.0}), verify=True)
    assert r.fleet.tp == 4
    assert r.closed_form.tp == 1 and r.answer.source == "verified"
    assert r.answer.with_redundancy - r.answer.load == 1 * r.closed_form.tp
    ref = run_plan(ref_plan, verify=True)
    assert r.answer.purchased <= ref.answer.purchased and r.answer.monthly_usd <= ref.answer.monthly_usd


@pytest.mark.parametrize("engine", ["runbook", "vllm", "sglang", "trtllm"])
def test_the_kv_budget_line_adds_up_from_its_printed_operands(ref_plan, engine):
    # Every arithmetic line the note prints adds up from its printed operands: the KV budget shows each engine's rule
    # whole — the runbook's memory × 0.9 − weights − 3 GiB (79.65 × 0.9 − 14.96 − 3 = 53.73), vLLM's visible × 0.9 −
    # weights − activation peak − non-torch (its log K01: 0.9 × 79.18 − 14.99 − 4.76 − 0.13 = 51.38), SGLang's reserve,
    # TensorRT-LLM's fraction of what is left. Recomputed from the printed figures, to the rounding of two decimals.
    p = replan(ref_plan, policy={"engine": engine})
    line = next(ln for ln in render_text(run_plan(p)).splitlines() if ln.strip().startswith("KV budget per GPU"))
    figures = [float(x) for x in re.findall(r"(\d+\.\d+)", line.split("KV budget per GPU", 1)[1])]
    *operands, printed = figures
    if engine == "trtllm":
        fraction, basis, *minus = operands
        got = fraction * (basis - sum(minus))
    else:
        basis, fraction, *minus = operands
        got = basis * fraction - sum(minus)
    assert got == pytest.approx(printed, abs=0.01 * (len(minus) + 2))
    assert printed == pytest.approx(replica_at_tp.kv_budget_gib(resolve(p), 1), abs=0.005)
    # and the operands are the rule's own, exactly, at every degree
    for tp in (1, 2, 4, 8):
        _, basis_gib, util, deductions, after = replica_at_tp.kv_budget_terms(resolve(p), tp)
        minus = sum(g for _, g in deductions)
        exact = util * (basis_gib - minus) if after else basis_gib * util - minus
        assert exact == pytest.approx(replica_at_tp.kv_budget_gib(resolve(p), tp), rel=1e-12)


@pytest.mark.parametrize("field, value, hint", [
    # a promise in milliseconds where seconds belong: 50 ms per token is 0.05, a 1,000 ms TTFT is 1
    ("itl_s", 50, "promise.itl_s: got 50; expected a value less than or equal to 2 (seconds, not milliseconds: 50 ms is 0.05)"),
    ("ttft_s", 1000, ("promise.ttft_s: got 1000; expected a value less than or equal to 600 (seconds, not milliseconds: "
                     "1000 ms is 1)")),
])
def test_a_promise_in_milliseconds_is_refused_with_the_fix(ref_plan, tmp_path, capsys, field, value, hint):
    import yaml

    from xlplan.cli import main

    data = ref_plan.model_dump(mode="json", exclude_none=True)
    data["promise"][field] = value
    path = tmp_path / "slip.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["plan", str(path), "--no-verify"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"error: {path}: {hint}"]


def test_a_prompt_that_fits_one_step_queues_behind_its_replicas_other_prefills():
    # Llama-3.1-70B bf16 on two H200s (vLLM's defaults, 8,192-token steps) at 15 req/s, 2,000-token prompts: a whole
    # prompt is one step, so a request arriving while its replica runs another prompt's prefill waits for the whole
    # step. Each replica is an M/G/1 queue of prefills at λ/n: P(wait > t) = ρ·exp(−2t(1 − ρ)·E[S]/E[S²]) (P(wait) = ρ
    # by PASTA; given a wait, exponential with the Pollaczek–Khinchine mean). With every prompt 2,000 tokens the
    # prefill is deterministic: E[S] is the one prompt's prefill and E[S²] = E[S]².
    p = read_plan(BATTERY_DIR / "70b-h200-tp2.yaml")
    s = resolve(p)
    tr = steps.traffic(s)
    q = queue_path(s, tr, 2, 15.0)
    s8k = scenario.changed(s, latency_with_prefill=True, max_num_batched_tokens=8192.0)
    r = replica_at_tp.replica(s8k, 2)
    one = float(latency_step.prefill_alone_s(s8k, r, 2000.0))
    assert q.prefill_mean_s == pytest.approx(one, rel=1e-12) and q.prefill_second_moment_s2 == pytest.approx(one**2, rel=1e-12)
    t = 1.0 - one  # the TTFT promise less the prompt's own prefill

    def chance(n):
        rho = 15.0 * one / n
        return rho * math.exp(-2.0 * t * (1.0 - rho) * one / one**2)

    n = q.prefill_queue_replicas
    assert chance(n) <= 0.05 < chance(n - 1)
    # it binds: the slots' queue alone keeps the wait with far fewer (the simulation needs 41 at these settings,
    # benchmarks/bench_configurations.txt), and the queueing path takes the larger
    assert q.replicas == n > queueing.servers_for_wait(15.0, 1.0 / q.service_rps_per_replica, q.wait_target_s, 95.0)
    assert 38 <= n <= 44
    # a prompt chunked over several steps (512-token steps) leaves the wait to the slots' queue
    s512 = scenario.changed(s, max_num_batched_tokens=512.0)
    assert queue_path(s512, tr, 2, 15.0).prefill_queue_replicas == 0


def test_where_prefill_runs_first_a_decode_waits_through_the_prompts_own_step():
    # SGLang runs a waiting prompt's prefill as a batch of its own before the next decode step (its scheduler's
    # get_next_batch_to_run; mixed chunks off by default), so the decodes' mean gap is their own step plus the prompts
    # started per step (b × (1 − reuse) ÷ E[output]) times a whole prompt's prefill alone, and a gap that meets a
    # chunk waits for the decodes' step and the chunk's own step, not one step carrying both (vLLM's)
    s = resolve(replan(read_plan(Path(__file__).resolve().parents[1] / "benchmarks" / "battery" / "reference.yaml"),
                       policy={"engine": "sglang", "max_num_batched_tokens": 512}))
    tr = steps.traffic(s)
    r = replica_at_tp.replica(s, 1)
    gap = latency_step.closed_form_step_fn(s, tr, r)
    f = latency_step.latency_step_fn(s, tr, r, with_prefill=False).step_time
    ctx = latency_step.decode_context_tokens(tr)
    b = 40.0
    decode = f(b, b * ctx, b * ctx, 0.0, 0.0, 0.0, b * ctx, b * ctx)
    prompt = latency_step.prefill_in_chunks_s(s, r, tr.prompt_mean)  # 2,000 tokens in four 512-token steps
    assert gap(b) == pytest.approx(decode + b / 300 * prompt, rel=1e-12)
    chunk_alone = f(0.0, 0.0, 0.0, 512.0, 512.0 * 513 / 2, 512.0 * 513 / 2, 0.0, 0.0)
    args = (b, b * ctx, b * ctx, 512.0, 512.0 * 513 / 2, 512.0 * 513 / 2, b * ctx, b * ctx)
    assert gap.step_time(*args) == pytest.approx(decode + chunk_alone, rel=1e-12)
    assert gap.step_time(*args) > f(*args)  # apart, the weights are read twice: the gap is longer than one mixed step
    # vLLM mixes the prompts into the decodes' steps: its gap is latency_step_fn's with prefill
    v = scenario.changed(s, engine="vllm")
    assert latency_step.closed_form_step_fn(v, tr, r)(b) == latency_step.latency_step_fn(v, tr, r, with_prefill=True)(b)
