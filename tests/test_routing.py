"""The load balancer as a plan setting (policy.routing, `xlplan plan --routing`): least-loaded, round robin, random.

Each expected figure comes from a hand-worked case, a law (Little's), or a queueing formula derived in the comment:
the simulator routes by the rule (which replica each request reaches), the queueing path takes its queue from it (one
queue for the fleet, or a queue per replica), and the note and JSON name it.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
from planhelp import replan

from xlplan.decide.planner import plan
from xlplan.io.planfile import reference_plan
from xlplan.plan.scenario import resolve
from xlplan.report.note import render_text
from xlplan.serving import queueing
from xlplan.simulate import loop, workload
from xlplan.simulate import run as sim_run

REF = resolve(reference_plan())


def _routed(routing: str, **changes):
    return dataclasses.replace(REF, routing=routing, **changes)


def _run(s, replicas: int, wl: workload.Workload, duration_s: float, compiled: bool) -> loop._Run:
    run = loop._Run(s, replicas, 1, wl, duration_s)
    run.compiled = compiled
    run.run()
    return run


@pytest.mark.parametrize("compiled", [False, True])
def test_round_robin_queues_behind_a_busy_replica_where_least_loaded_takes_the_idle_one(compiled):
    # Two replicas of one sequence each (max_num_seqs 1). Request 0 arrives at 0 s with 400 tokens to write (some
    # seconds of decode); request 1 at 0.001 s with 1 token (done within a step); request 2 at 2 s, when replica 1 is
    # idle again. Least-loaded routing sends request 2 to the idle replica 1: its first token comes within one
    # prefill step. Round robin sends it to replica 0 (the third arrival, 2 mod 2 = 0), where it waits for request 0's
    # slot: its first token cannot come before request 0 has finished.
    s_ll, s_rr = _routed("least_loaded", max_num_seqs=1.0), _routed("round_robin", max_num_seqs=1.0)
    wl = workload.Workload(np.array([0.0, 0.001, 2.0]), np.array([200, 200, 200]), np.array([400, 1, 10]))
    ll, rr = _run(s_ll, 2, wl, 60.0, compiled), _run(s_rr, 2, wl, 60.0, compiled)
    assert ll.finish[0] > 2.5 and rr.finish[0] > 2.5  # request 0 is still decoding when request 2 arrives
    assert ll.first_token[2] - 2.0 < 0.1  # straight onto the idle replica: one 200-token prefill step
    assert rr.first_token[2] >= rr.finish[0]  # behind request 0's only slot


def test_the_router_sends_each_request_where_its_rule_says():
    # Round robin: 0, 1, 2, 3, 0, 1, ...; after the last replica fails (its load infinite, as a loss leaves it) the
    # turns run over the three live ones. Random: request r goes to replica ⌊u_r × live⌋ for its own draw u_r.
    loads = [0, 0, 0, 0]
    rr = loop._Router(loads, 1)
    assert [rr.route(r) for r in range(6)] == [0, 1, 2, 3, 0, 1]
    loads[3] = math.inf
    rr.rebuild()
    assert [rr.route(r) for r in range(6, 12)] == [0, 1, 2, 0, 1, 2]  # turns 6..11 mod 3
    u = np.array([0.0, 0.2499, 0.25, 0.9999])
    rnd = loop._Router([0, 0, 0, 0], 2, u)
    assert [rnd.route(r) for r in range(4)] == [0, 0, 1, 3]
    # Least KV: the live replica with the fewest outstanding KV tokens, the first of equals, whatever it holds in
    # requests; a lost last replica is never chosen.
    kv = [500.0, 100.0, 100.0, 0.0]
    lkv = loop._Router([0, 3, 3, 0], 3, None, kv.__getitem__)
    assert lkv.route(0) == 3
    lkv.loads[3] = math.inf
    lkv.rebuild()
    assert lkv.route(1) == 1 and lkv.loads[1] == 4


@pytest.mark.parametrize("compiled", [False, True])
def test_least_kv_routing_sends_a_request_past_a_long_prompt_where_least_loaded_does_not(compiled):
    # Two replicas of one sequence each (max_num_seqs 1). Request 0 (a 6,000-token prompt, 400 tokens to write) goes
    # to replica 0 and request 1 (100 tokens, 400 to write) to replica 1, under either rule (the first of equals, then
    # the empty one). Request 2 arrives at 1 s, both replicas holding one request: least-loaded routing takes the
    # first of equals, replica 0, so it waits for request 0 to finish; least-KV routing sees 6,000-odd tokens against
    # 100-odd and takes replica 1, so it starts when request 1 finishes, which is first (its prefill is 60 times shorter
    # and its decode steps read less cache).
    wl = workload.Workload(np.array([0.0, 0.001, 1.0]), np.array([6000, 100, 100]), np.array([400, 400, 10]))
    ll = _run(_routed("least_loaded", max_num_seqs=1.0), 2, wl, 120.0, compiled)
    kv = _run(_routed("least_kv", max_num_seqs=1.0), 2, wl, 120.0, compiled)
    assert 1.0 < kv.finish[1] < kv.finish[0]  # request 1 still runs at 1 s, and ends first
    assert ll.first_token[2] >= ll.finish[0]  # behind the long prompt's request
    assert kv.finish[1] <= kv.first_token[2] < kv.finish[0]  # behind the short one, ahead of the long one's end


def test_random_routing_spreads_the_requests_evenly_within_binomial_noise():
    # 40,000 requests over 8 replicas at random: each replica's count is Binomial(40,000, 1/8), mean 5,000 and
    # standard deviation √(40,000 × 1/8 × 7/8) = 66.1; every count within 5 standard deviations (a false alarm once in
    # some 200,000 runs; the draws are seeded, so this run is fixed).
    n, replicas = 40_000, 8
    run = loop._Run(_routed("random"), replicas, 1, workload.Workload(np.arange(n, dtype=float), np.ones(n, int),
                                                                    np.ones(n, int)), 1.0)
    router = loop._Router([0] * replicas, 2, run.route_u)
    counts = np.bincount([router.route(r) for r in range(n)], minlength=replicas)
    sd = math.sqrt(n * (1 / replicas) * (1 - 1 / replicas))
    assert np.all(np.abs(counts - n / replicas) < 5 * sd), counts


@pytest.mark.slow
@pytest.mark.parametrize("routing", ["round_robin", "random", "least_kv"])
def test_littles_law_holds_under_each_routing(routing):
    # Little's Law (Little 1961): time-average number in the system = arrival rate × mean time in system, for any
    # stable queue and any routing. Eight replicas carry the reference peak under every rule (7 keep its promise at
    # random), so each run is stationary.
    s = _routed(routing)
    r = sim_run.simulate(s, 8, 1, workload.poisson_workload(s, 600, seed=3), 600)
    assert r.stable and r.unfinished == 0
    assert r.mean_in_flight == pytest.approx(r.arrival_rate_rps * r.mean_time_in_system_s, rel=0.02)


def test_the_routed_queue_is_each_replica_on_its_own():
    # Random routing of Poisson arrivals to n one-slot replicas: each is M/M/1 at λ/n (a Poisson thinning is
    # Poisson), whose wait is 0 with probability 1 − ρ and otherwise exponential with rate (1 − ρ)/S:
    # t_p = S·ln(ρ ÷ (1 − p)) ÷ (1 − ρ). 6 req/s, S = 0.5 s, 4 replicas: ρ = 0.75, t_95 = 0.5 × ln(15) ÷ 0.25 = 5.416 s.
    assert queueing.routed_wait_at_percentile_s("random", 4, 1.0, 6.0, 0.5, 95) == pytest.approx(
        0.5 * math.log(0.75 / 0.05) / 0.25, rel=1e-12)
    # Round robin: each replica sees every 4th arrival, Erlang-4 gaps with squared CV 1/4; the Allen–Cunneen factor
    # (1/4 + 1) ÷ 2 = 0.625 scales the same wait.
    assert queueing.routed_wait_at_percentile_s("round_robin", 4, 1.0, 6.0, 0.5, 95) == pytest.approx(
        0.625 * 0.5 * math.log(0.75 / 0.05) / 0.25, rel=1e-12)
    # A replica's 2.5 slots are 2 whole ones, each holding a request 2.5 × 0.5 s = 1.25 s: M/M/2 at 6/4 req/s, offered
    # a = 1.875 erlangs. Erlang C(2, a) = a² ÷ (a² + 2(1 − a/2)(1 + a))... by the B recursion: B1 = a/(1 + a) = 0.6522,
    # B2 = a·B1/(2 + a·B1) = 0.3794, C = 2·B2/(2 − a(1 − B2)) = 0.9102; t_95 = 1.25 × ln(0.9102/0.05) ÷ (2 − 1.875).
    c = 2 * 0.37937 / (2 - 1.875 * (1 - 0.37937))
    assert queueing.routed_wait_at_percentile_s("random", 4, 2.5, 6.0, 0.5, 95) == pytest.approx(
        1.25 * math.log(c / 0.05) / 0.125, rel=1e-3)
    # Least-loaded routing pools the replicas: Erlang C over the n replicas, each serving at 1/S.
    assert queueing.routed_wait_at_percentile_s("least_loaded", 4, 1.0, 6.0, 0.5, 95) == \
        queueing.wait_at_percentile_s(4, 6.0, 0.5, 95)
    # and so does least-KV routing: the router picks a replica with room as a request arrives, one queue for all
    assert queueing.routed_wait_at_percentile_s("least_kv", 4, 1.0, 6.0, 0.5, 95) == \
        queueing.wait_at_percentile_s(4, 6.0, 0.5, 95)


def test_least_kv_routing_is_one_queue_in_the_closed_form_and_the_note_says_so():
    # Pooled as least-loaded routing is: the same queueing path, the note naming the rule.
    kv = plan(replan(reference_plan(), policy={"routing": "least_kv"}), verify=False)
    ll = plan(reference_plan(), verify=False)
    assert kv.queueing.routing == "least_kv" and kv.queueing.replicas == ll.queueing.replicas
    assert "Erlang C with the replicas as one queue under least-KV routing" in render_text(kv)


@pytest.mark.slow
def test_a_queue_per_replica_needs_more_replicas_than_one_queue_for_the_fleet():
    # Pooling never loses (a request waits only when every server is busy): the routed queues need at least as many
    # replicas as the pooled one on the reference, and random at least as many as round robin (rougher arrivals).
    n = {x: plan(replan(reference_plan(), policy={"routing": x}), verify=False).queueing.replicas
         for x in ("least_loaded", "round_robin", "random")}
    assert n["least_loaded"] <= n["round_robin"] <= n["random"]


@pytest.mark.slow
def test_the_note_and_json_name_the_routing_the_answer_assumes():
    r = plan(replan(reference_plan(), policy={"routing": "round_robin"}), verify=True)
    text = render_text(r)
    assert "to the replicas in turn (round robin)" in text
    assert "under round-robin routing" in text
    assert r.verified.routing == "round_robin" and r.queueing.routing == "round_robin"
    default = plan(reference_plan(), verify=False)
    assert default.queueing.routing == "least_loaded"


@pytest.mark.slow
def test_the_cli_takes_routing_and_refuses_a_misspelt_rule():
    out = subprocess.run([sys.executable, "-m", "xlplan", "plan", "--routing", "round-robin", "--no-verify"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "--routing" in out.stderr and "round_robin" in out.stderr
    out = subprocess.run([sys.executable, "-m", "xlplan", "plan", "--routing", "random", "--no-verify", "--json"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and '"routing": "random"' in out.stdout


@pytest.mark.slow
def test_simulate_routes_by_the_option_and_says_so():
    out = subprocess.run([sys.executable, "-m", "xlplan", "simulate", "--routing", "round_robin", "--minutes", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert "routed to the replicas in turn (round robin) (policy.routing round_robin)" in out.stdout
    out = subprocess.run([sys.executable, "-m", "xlplan", "simulate", "--routing", "Random"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "--routing" in out.stderr and out.stderr.count("\n") == 1


def test_routing_written_in_the_wrong_section_is_pointed_to_policy():
    # the likeliest slip with a new setting: written at the top level or under forecast, not under policy
    from xlplan.io.errors import InputError
    from xlplan.io.planfile import plan_from_mapping

    data = reference_plan().model_dump(mode="json", exclude_none=True)
    for where in ((), ("forecast",)):
        bad = {**data, "routing": "random"} if not where else {**data, "forecast": {**data["forecast"], "routing": "random"}}
        with pytest.raises(InputError) as e:
            plan_from_mapping(bad, "plan.yaml")
        assert "it belongs at policy.routing" in str(e.value), str(e.value)


def test_a_replica_queue_past_its_whole_slots_waits_for_certain_in_the_tables():
    # Random routing at the reference's 40 req/s, a replica serving 40 ÷ 5.99 req/s (5.99 replicas busy), 66.78
    # slots a replica (66 whole): at 6 replicas each queue's offered load is
    # 5.99 × 66.78 ÷ 6 = 66.67 erlangs over 66 servers, past them: P(wait) = 1, the wait unbounded, not within the
    # target — where Erlang C by POISSON would give 1.02 and a negative wait, the table's row says so.
    from types import SimpleNamespace

    from xlplan.excel.book import _wait

    q = SimpleNamespace(offered_erlangs=5.99, slots_per_replica=66.78, wait_target_s=1.0)
    servers, offered, c, _ac, w, meets = _wait(_routed("random"), q, 5.99 / 40.0, 6)
    assert (servers, c, meets) == (66, 1.0, False) and offered == pytest.approx(5.99 * 66.78 / 6) and math.isinf(w)
