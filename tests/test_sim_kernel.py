"""The compiled event loop (xlplan.simulate.kernel) against the Python loop it replaces (xlplan.simulate.loop._Run.run).

The Python loop is the reference: a direct transcription of vLLM's V1 scheduler (decodes first, chunked prefill in
the remaining budget, recompute preemption of the newest). The compiled loop must give the same run, request by
request and step by step, to the last bit, on every kind of step the serving model has: a dense model on one GPU,
tensor parallel (all-reduce terms), routed experts with expert parallel (all-to-all terms, the q^tokens read of
the experts touched), prefix reuse, a cache small enough to preempt, a cap on sequences, a replica lost during the
run, an early stop, one-token outputs and a fleet large enough to route by heap.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from xlplan.io.planfile import plan_from_mapping, reference_plan
from xlplan.plan import replica_at_tp
from xlplan.plan.scenario import resolve
from xlplan.serving import folded_step
from xlplan.simulate import kernel_state, loop
from xlplan.simulate import run as sim_run
from xlplan.simulate import workload as sim_workload

pytestmark = pytest.mark.skipif(not kernel_state.AVAILABLE, reason="numba is not installed")  # installed in CI


def _scenario(**changes):
    data = reference_plan().model_dump(exclude_none=True)
    for key, value in changes.items():
        data[key] = value
    return resolve(plan_from_mapping(data, "test"))


REF = _scenario()
MOE = _scenario(model={"name": "qwen3-30b-a3b", "weights_dtype": "bf16", "kv_dtype": "bf16"},
                policy={"engine": "vllm", "expert_parallel": 2})


def _both(s, replicas, tp, workload, duration_s, lost=0, watch=False):
    """The same run on each loop: (run, result or None) for the Python loop, then the compiled one."""
    out = []
    for compiled in (False, True):
        run = loop._Run(s, replicas, tp, workload, duration_s, lost)
        run.compiled = compiled
        if watch:
            run.watch_ttft_s, run.percentile = float(s.ttft_s), 95.0
        run.run()
        out.append((run, None if run.decided_miss else sim_run._measure(s, replicas, tp, run, 95.0)))
    return out


def _same(x, y) -> bool:
    return np.array_equal(np.asarray(x, dtype=float), np.asarray(y, dtype=float), equal_nan=True)


def _assert_same_run(s, replicas, tp, workload, duration_s, lost=0, watch=False):
    (py, rp), (jit, rj) = _both(s, replicas, tp, workload, duration_s, lost, watch)
    assert py.decided_miss == jit.decided_miss
    for name in ("first_token", "finish", "prompt", "output", "step_t", "step_b", "kv_held", "gaps_extra", "pause_idx",
                 "pause_n", "pause_gap"):
        assert _same(getattr(py, name), getattr(jit, name)), name
    assert (py.preemptions, py.first_in_window, py.requeued) == (jit.preemptions, jit.first_in_window, jit.requeued)
    if rp is not None:
        for f in dataclasses.fields(rp):
            a, b = getattr(rp, f.name), getattr(rj, f.name)
            assert a == b or (a != a and b != b), f.name  # NaN is NaN
    return py, rp


def test_step_s_is_the_serving_models_step():
    # The compiled step and step_time_fn's closure are the same arithmetic, term by term: equal to the bit on mixed
    # steps of a dense model (TP 1 and 2) and of a MoE model with experts parallel over 2.
    rng = np.random.default_rng(5)
    for s, tp in ((REF, 1), (REF, 2), (MOE, 1), (MOE, 2)):
        r = replica_at_tp.replica(s, tp)
        f = folded_step.step_time_fn(r)
        consts = folded_step.step_constants(r)
        c = np.array([float(consts[x]) for x in folded_step.STEP_CONSTANTS])
        for _ in range(50):
            b = int(rng.integers(0, 300))
            pre = float(rng.integers(0, 8192))
            args = (b, b * 1800.0, b * 900.0, pre, pre * pre / 2, pre * pre / 3, b * 1800.0 + 50.0, b * 900.0 + 20.0)
            assert kernel_state.step_s(c, *args) == f(*args)


@pytest.mark.slow
def test_reference_peak_runs_are_the_same_run():
    # 10 minutes of the reference peak (40 req/s, about 24,000 requests) on 4 (overloaded), 5 and 20 (routed by the
    # heap, from ROUTING_HEAP_REPLICAS = 16 up) replicas.
    wl = sim_workload.poisson_workload(REF, 600.0, 1)
    for n in (4, 5, 20):
        py, r = _assert_same_run(REF, n, 1, wl, 600.0)
        assert py.step_t and r.requests > 20_000


@pytest.mark.slow
def test_a_lost_replica_and_an_early_stop_are_the_same_run():
    wl = sim_workload.poisson_workload(REF, 600.0, 2)
    py, _ = _assert_same_run(REF, 6, 1, wl, 600.0, lost=1)
    assert py.requeued > 0  # the loss re-queued requests
    py, _ = _assert_same_run(REF, 20, 1, wl, 600.0, lost=2)
    assert py.requeued > 0
    py, r = _assert_same_run(REF, 4, 1, wl, 600.0, watch=True)
    assert py.decided_miss and r is None  # 4 replicas queue without bound: stopped on a certain miss


@pytest.mark.slow
def test_preemption_prefix_reuse_and_a_sequence_cap_are_the_same_run():
    # A cache of ~20,000 tokens (memory utilisation 0.2561, see test_simulate's preemption test) preempts; half of
    # every prompt from the prefix cache; at most 8 sequences at once; 512-token steps.
    wl = sim_workload.poisson_workload(REF, 300.0, 3, rate_rps=6.0)
    s = dataclasses.replace(REF, memory_utilisation=0.2561, max_num_batched_tokens=512.0)
    py, r = _assert_same_run(s, 1, 1, wl, 300.0)
    assert r.preemptions > 0 and py.gaps_extra
    _assert_same_run(dataclasses.replace(REF, prefix_reuse=0.5), 3, 1, wl, 300.0)
    _assert_same_run(dataclasses.replace(REF, max_num_seqs=8), 3, 1, wl, 300.0)


def test_tensor_and_expert_parallel_and_one_token_outputs_are_the_same_run():
    wl = sim_workload.poisson_workload(MOE, 300.0, 4)
    _assert_same_run(MOE, 2, 2, wl, 300.0)
    _assert_same_run(REF, 2, 2, wl, 300.0)
    one = sim_workload.Workload(wl.arrival_s, wl.prompt_tokens, np.ones_like(wl.output_tokens))
    py, r = _assert_same_run(REF, 2, 1, one, 300.0)
    assert not r.itl_defined  # one-token outputs: no gap between tokens


def test_a_closed_loop_is_the_same_run():
    # A closed loop of 12 clients (each sends its next request when its last one finishes, requests in order):
    # 80 requests of mixed lengths on one and on two replicas, dense and expert parallel, and a cache small enough to
    # preempt. Each loop sets the later arrivals itself; they must agree with the finishes, request for request.
    rng = np.random.default_rng(11)
    n = 80
    wl = sim_workload.Workload(np.zeros(n), rng.integers(200, 6000, n).astype(float), rng.integers(1, 400, n))
    small = dataclasses.replace(REF, memory_utilisation=0.2561)
    for s, replicas, tp in ((REF, 1, 1), (REF, 2, 1), (MOE, 1, 2), (small, 1, 1)):
        runs = []
        for compiled in (False, True):
            run = loop._Run(s, replicas, tp, wl, 1e9, 0, 12)
            run.compiled = compiled
            run.run()
            runs.append(run)
        py, jit = runs
        for name in ("first_token", "finish", "arrivals", "prompt", "output", "step_t", "step_b", "gaps_extra"):
            assert _same(getattr(py, name), getattr(jit, name)), name
        assert py.preemptions == jit.preemptions
        fin, arr = np.asarray(py.finish), np.asarray(py.arrivals)
        # request 12 + j arrives when the (j+1)-th request to finish does: the sorted finishes are the later arrivals
        assert np.array_equal(arr[12:], np.sort(fin)[:n - 12]) and not arr[:12].any()
    assert small is not None and runs[0].preemptions > 0  # the small cache did preempt


def test_sliding_window_layers_are_the_same_run():
    # gpt-oss-20b: half its 24 layers attend within a 128-token window, so its cache is counted with those layers
    # clipped (scheduler._start_windowed_step) and its step reads and attends to the clipped keys. Open (Poisson,
    # 4 replicas; and a cache small enough to preempt) and closed (16 clients, long prompts past the window).
    s = _scenario(model={"name": "gpt-oss-20b", "weights_dtype": "mxfp4", "kv_dtype": "bf16"},
                  policy={"engine": "vllm"})
    assert s.window_layers and s.window < 1e6
    wl = sim_workload.poisson_workload(s, 120.0, 6)
    _assert_same_run(s, 4, 1, wl, 120.0)
    py, r = _assert_same_run(dataclasses.replace(s, memory_utilisation=0.3), 1, 1, wl, 120.0)
    assert r.preemptions > 0  # the small cache did preempt
    rng = np.random.default_rng(12)
    n = 60
    closed = sim_workload.Workload(np.zeros(n), rng.integers(100, 9000, n).astype(float), rng.integers(1, 300, n))
    runs = []
    for compiled in (False, True):
        run = loop._Run(s, 1, 1, closed, 1e9, 0, 16)
        run.compiled = compiled
        run.run()
        runs.append(run)
    for name in ("first_token", "finish", "arrivals", "step_t", "step_b", "kv_held"):
        assert _same(getattr(runs[0], name), getattr(runs[1], name)), name


def test_a_prefill_first_engine_is_the_same_run():
    # SGLang runs waiting prompts' prefill in steps of their own, the decodes paused (xlplan.serving.engines
    # .prefill_first): open (Poisson, 3 replicas; a lost replica; a cache small enough to preempt), closed (12 clients,
    # mixed lengths) and with sliding-window layers. Both loops must pause the same decoders in the same steps.
    sg = dataclasses.replace(REF, engine="sglang", max_num_seqs=1024, max_num_batched_tokens=8192.0)
    wl = sim_workload.poisson_workload(sg, 120.0, 7)
    py, r = _assert_same_run(sg, 3, 1, wl, 120.0)  # overloaded: prefill steps nearly all the time
    assert 0 in py.step_b and r.requests > 1000  # prefill steps, decoding nothing, were run
    py, r = _assert_same_run(sg, 8, 1, wl, 120.0)  # within capacity: decodes paused now and then
    assert 0 in py.step_b and max(py.step_b) > 1 and len(py.pause_idx)
    _assert_same_run(sg, 1, 1, sim_workload.poisson_workload(sg, 60.0, 9, rate_rps=3.0), 60.0)  # decode fast-forward
    _assert_same_run(sg, 3, 1, wl, 120.0, lost=1)
    py, r = _assert_same_run(dataclasses.replace(sg, memory_utilisation=0.2561), 1, 1,
                             sim_workload.poisson_workload(sg, 120.0, 8, rate_rps=6.0), 120.0)
    assert r.preemptions > 0
    rng = np.random.default_rng(13)
    n = 60
    closed = sim_workload.Workload(np.zeros(n), rng.integers(100, 9000, n).astype(float), rng.integers(1, 300, n))
    gpt = _scenario(model={"name": "gpt-oss-20b", "weights_dtype": "mxfp4", "kv_dtype": "bf16"},
                    policy={"engine": "sglang"})
    for s, replicas in ((sg, 1), (sg, 2), (gpt, 1)):
        runs = []
        for compiled in (False, True):
            run = loop._Run(s, replicas, 1, closed, 1e9, 0, 12)
            run.compiled = compiled
            run.warm = 0.0  # every step measured
            run.run()
            runs.append(run)
        for name in ("first_token", "finish", "arrivals", "prompt", "output", "step_t", "step_b", "kv_held", "pause_idx",
                     "pause_n", "pause_gap"):
            assert _same(getattr(runs[0], name), getattr(runs[1], name)), name
        assert len(runs[0].pause_idx)  # decodes waited through prefill steps, and both loops counted the same gaps


@pytest.mark.slow
@pytest.mark.parametrize("routing", ["round_robin", "random"])
def test_round_robin_and_random_routing_are_the_same_run(routing):
    # each rule on a few replicas, and on a fleet past the heap's threshold with two replicas lost mid-run (the turns
    # and draws then run over the live ones; the lost replicas' requests go to the least loaded survivor)
    s = dataclasses.replace(REF, routing=routing)
    _assert_same_run(s, 5, 1, sim_workload.poisson_workload(s, 120.0, 3), 120.0)
    big = loop.ROUTING_HEAP_REPLICAS + 4
    _assert_same_run(s, big, 1, sim_workload.poisson_workload(s, 60.0, 4, rate_rps=10.0 * big), 60.0, lost=2)


@pytest.mark.slow
def test_a_long_prefill_threshold_is_the_same_run():
    # vLLM's long-prefill threshold caps each request's chunk: 8,192-token steps of prompts up to 6,000 tokens, no
    # chunk over 700 tokens, so several prompts share a step; and with sliding-window layers (gpt-oss-20b) as well.
    rng = np.random.default_rng(17)
    n = 300
    wl = sim_workload.Workload(np.sort(rng.uniform(0.0, 120.0, n)), rng.integers(100, 6000, n).astype(float),
                               rng.integers(1, 300, n))
    s = dataclasses.replace(REF, max_num_batched_tokens=8192.0, long_prefill_token_threshold=700.0)
    py, r = _assert_same_run(s, 2, 1, wl, 120.0)
    assert r.requests > 100  # the measured window (after the warm-up) holds most of them
    windowed = _scenario(model={"name": "gpt-oss-20b", "weights_dtype": "mxfp4", "kv_dtype": "bf16"},
                         policy={"engine": "vllm", "max_num_batched_tokens": 8192, "long_prefill_token_threshold": 700})
    assert windowed.window < 1e6 and windowed.long_prefill_token_threshold == 700.0
    _assert_same_run(windowed, 2, 1, wl, 120.0)


@pytest.mark.slow
def test_least_kv_routing_is_the_same_run():
    # The router sums each live replica's outstanding KV tokens in one order on both loops (decoders' context, then
    # the prefilling and waiting prompts): Poisson arrivals on 4 replicas, a loss, and a cache small enough to preempt.
    s = dataclasses.replace(REF, routing="least_kv")
    wl = sim_workload.poisson_workload(s, 300.0, 8)
    _assert_same_run(s, 4, 1, wl, 300.0)
    py, _ = _assert_same_run(s, 6, 1, wl, 300.0, lost=1)
    assert py.requeued > 0
    py, r = _assert_same_run(dataclasses.replace(s, memory_utilisation=0.2561, max_num_batched_tokens=512.0), 2, 1,
                             sim_workload.poisson_workload(s, 300.0, 3, rate_rps=8.0), 300.0)
    assert r.preemptions > 0
