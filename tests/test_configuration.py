"""The configuration search (xlplan.decide.configuration): the Answer is the cheapest setting that keeps the promise.

The search's rules are checked on stand-in simulations whose verdicts are set by hand (which candidate is simulated,
screened or skipped, and why), and end to end on issue 48's Qwen3-32B case, where the closed form's own setting
(TP 1) needs 10 GPUs in simulation and TP 2 keeps the promise with one replica.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from xlplan.decide import configuration
from xlplan.io.planfile import read_plan

BATTERY = Path(__file__).resolve().parents[1] / "benchmarks" / "battery"


def _scenario(redundancy=1, node=8, bill_purchased=False):
    return NS(redundancy=redundancy, gpus_per_node=node, bill_purchased=bill_purchased)


def _cf(tp, replicas, budget=512, feasible=True):
    load = tp * replicas
    return NS(tp=tp, load_replicas=replicas, load=load, with_redundancy=load + tp, purchased=-(-(load + tp) // 8) * 8,
              step_budget_tokens=budget, feasible=feasible)


def _verified(load, with_redundancy):
    return NS(load=load, with_redundancy=with_redundancy, searched_up_to=64)


def test_redundancy_is_never_below_load_plus_the_spare_replicas():
    # issue 48: "with redundancy" read 100 / 100 where a loss from a warmed fleet passed as a transient. 100 GPUs of
    # load at TP 4 with one spare replica are 104 whatever the loss run found; a loss run needing more (110) stands.
    s = _scenario()
    assert configuration.fleet_of(s, 100, 4, 100) == (104, 104, 104)
    assert configuration.fleet_of(s, 100, 4, 110) == (110, 112, 110)  # 110 rounds up to 14 nodes of 8 = 112
    # redundancy 2 at TP 2: 6 + 2 × 2 = 10; billed per node: the purchased 16
    assert configuration.fleet_of(_scenario(redundancy=2, bill_purchased=True), 6, 2) == (10, 16, 16)


def test_the_search_simulates_from_the_cheapest_and_stops_where_none_can_bill_less():
    # Three settings, cheapest closed form first: TP 1 (3 replicas: 3 + 1 = 4 billed), TP 2 (2 replicas: 4 + 2 = 6),
    # TP 4 (1 replica: 4 + 4 = 8). TP 1 needs 10 in simulation (11 with its spare); TP 2's one replica fewer bills
    # 2 + 2 = 4 < 11, so it is screened on the first seed (1 replica: 4 billed < 11) and verified (2 GPUs, 4 with
    # redundancy); TP 4's one replica bills 4 + 4 = 8 >= 4: not simulated.
    s = _scenario()
    cands = [_cf(1, 3), _cf(2, 2), _cf(4, 1)]
    sims = {1: _verified(10, 11), 2: _verified(2, 4)}
    calls = []

    def simulate(cf):
        calls.append(("verify", cf.tp))
        return sims[cf.tp]

    def screen(cf, replicas):
        calls.append(("screen", cf.tp, replicas))
        return True  # the most TP 2 replicas that bill less than 11: 4 (8 + 2 = 10 < 11; 5 would bill 12) keep it

    chosen, tried = configuration.search(s, cands, simulate, lambda cf: (True, None), screen)
    assert calls == [("verify", 1), ("screen", 2, 4), ("verify", 2)]
    assert chosen == 1 and (tried[1].load, tried[1].with_redundancy, tried[1].billed) == (2, 4, 4)
    assert tried[0].billed == 11 and tried[2].verified is None
    assert "bills no less than the Answer" in tried[2].why_not_simulated


def test_a_candidate_the_first_seed_rules_out_is_not_verified_on_every_seed():
    # TP 1 verified at 6 GPUs (7 billed). TP 2's closed form is 3 replicas; one fewer bills 2 × 2 + 2 = 6 < 7, so it is
    # screened: one run on the first seed at the most TP 2 replicas that bill less than 7 (2: 4 + 2 = 6; 3 would bill
    # 8). They miss, and fewer replicas only wait longer, so it is never verified on the other seeds.
    s = _scenario()
    verified, screened = [], []
    chosen, tried = configuration.search(s, [_cf(1, 6), _cf(2, 3)], lambda cf: verified.append(cf.tp) or _verified(6, 7),
                                         lambda cf: (True, None), lambda cf, n: screened.append((cf.tp, n)) or False)
    assert verified == [1] and screened == [(2, 2)] and chosen == 0
    assert tried[1].screened and ("4 GPUs for the load (6 billed with redundancy, the most under the Answer's 7) miss the promise"
                                  in tried[1].why_not_simulated)


def test_a_closed_form_over_by_a_fifth_is_still_screened():
    # Llama-3.1-70B at TP 2 on H200 under a prefill-queue variant of the closed form (issue 48's battery): 2,048-token
    # steps verify at 41 replicas (82 GPUs + 2 spare = 84 billed); 512-token steps have a closed form of 43 replicas.
    # One replica fewer (42: 84 + 2 = 86 >= 84) could not bill less, but the closed form may be up to CLOSED_FORM_SLACK
    # (20%) over: 43 × 0.8 = 34.4, so 34 replicas (68 + 2 = 70 < 84) could. It is screened at the most replicas that
    # bill less than 84: 40 (80 + 2 = 82; 41 would bill 84), and verified: 35 replicas, 70 + 2 = 72 billed, the Answer.
    s = _scenario()
    calls = []

    def simulate(cf):
        calls.append(("verify", cf.step_budget_tokens))
        return _verified(82, 84) if cf.step_budget_tokens == 2048 else _verified(70, 72)

    def screen(cf, replicas):
        calls.append(("screen", cf.step_budget_tokens, replicas))
        return True

    chosen, tried = configuration.search(s, [_cf(2, 38, 2048), _cf(2, 43, 512)], simulate, lambda cf: (True, None),
                                         screen)
    assert calls == [("verify", 2048), ("screen", 512, 40), ("verify", 512)]
    assert chosen == 1 and tried[1].billed == 72


def test_at_most_eight_settings_are_simulated_and_an_unaffordable_one_is_skipped():
    s = _scenario()
    cands = [_cf(1, 9, b) for b in (256, 512, 1024, 2048, 4096, 8192)] + [_cf(2, 5, b) for b in (256, 512, 1024, 2048)]
    # every simulation finds 40 GPUs (41 billed), far past each closed form, so each next one could bill less: the
    # first eight are simulated (MAX_SIMULATED), the ninth and tenth are not
    chosen, tried = configuration.search(s, cands, lambda cf: _verified(40, 41), lambda cf: (True, None),
                                         lambda cf, n: True)
    assert [t.verified is not None for t in tried] == [True] * 8 + [False, False]
    assert "at most 8" in tried[8].why_not_simulated and "at most 8" in tried[9].why_not_simulated
    chosen, tried = configuration.search(s, cands[:1] + cands[9:], lambda cf: _verified(40, 41),
                                         lambda cf: (cf.tp == 1, "too large"), lambda cf, n: True)
    assert tried[1].why_not_simulated == "too large"


def test_screens_do_not_spend_the_verifications_and_have_their_own_limit():
    # DeepSeek-V3 on SGLang at 6 req/s (bench_configurations_scaled.txt): the cheapest setting lay past eight others
    # the first seed ruled out. Here the first candidate verifies at 40 GPUs (41 billed); the next 12 could bill
    # less, and the first seed rules out all but the last, which verifies at 30 (31 billed) and is the Answer: 13
    # settings simulated, two of them on every seed (MAX_SIMULATED counts those only).
    s = _scenario()
    cands = [_cf(1, 9, 0)] + [_cf(1, 9, b) for b in range(1, 13)]
    verified = []

    def simulate(cf):
        verified.append(cf.step_budget_tokens)
        return _verified(40, 41) if cf.step_budget_tokens == 0 else _verified(30, 31)

    chosen, tried = configuration.search(s, cands, simulate, lambda cf: (True, None),
                                         lambda cf, n: cf.step_budget_tokens == 12)
    assert verified == [0, 12] and chosen == 12 and tried[12].billed == 31
    assert all(t.screened for t in tried[1:12])
    # the screens' own limit: with every screen missing, MAX_SCREENED candidates after the first are run once and the
    # rest are not simulated
    cands = [_cf(1, 9, b) for b in range(30)]
    chosen, tried = configuration.search(s, cands, lambda cf: _verified(40, 41), lambda cf: (True, None),
                                         lambda cf, n: False)
    assert [t.screened for t in tried] == [False] + [True] * configuration.MAX_SCREENED + [False] * 5
    assert f"screens at most {configuration.MAX_SCREENED}" in tried[-1].why_not_simulated


@pytest.mark.parametrize(("engine", "words"), [
    ("vllm", "vLLM: --tensor-parallel-size 2 --max-num-batched-tokens 1024 --max-num-seqs 256"),
    ("runbook", "vLLM (for engine 'runbook'): --tensor-parallel-size 2 --max-num-batched-tokens 1024 --max-num-seqs 256"),
    ("sglang", "SGLang: --tp-size 2 --chunked-prefill-size 1024 --max-running-requests 256"),
    ("trtllm", "TensorRT-LLM: --tp_size 2 --max_num_tokens 1024 --max_batch_size 256"),
])
def test_the_setting_is_named_in_the_engines_own_flags(engine, words):
    # vLLM's engine arguments, SGLang's server arguments, trtllm-serve's options (the module's references)
    assert configuration.settings(engine, 2, 1024, 256) == words


def test_the_sequence_cap_deployed_is_never_above_the_step_budget():
    # vLLM refuses to start where max_num_batched_tokens < max_num_seqs (its scheduler config's check); its default
    # on an H100 is 1,024 sequences, so a 512-token budget is deployed with --max-num-seqs 512 (each decode spends one
    # token of the step, so no more could run at once anyway)
    assert configuration.settings("vllm", 1, 512, 1024).endswith("--max-num-batched-tokens 512 --max-num-seqs 512")
    assert configuration.settings("vllm", 1, 8192, 1024).endswith("--max-num-batched-tokens 8192 --max-num-seqs 1024")


@pytest.mark.slow
def test_qwen3_32b_at_1_rps_deploys_tp2_for_at_most_10k_a_month(capsys):
    # issue 48's first case: Qwen3-32B bf16 (61 GiB of weights) on H100s, 1 req/s, p95 prompts of 4,000 tokens, a 1 s
    # TTFT. At TP 1 the p95 prompt's prefill alone takes 0.99 s, so almost no wait is allowed and the simulation needs
    # 10 GPUs (11 with a spare: 11 × $3 × 730 = $24,090); at TP 2 the prefill halves and one replica keeps the promise:
    # 2 GPUs + a spare replica = 4 × $3 × 730 h = $8,760 a month, within the issue's $10,000.
    from xlplan.cli import main

    p = read_plan(BATTERY / "qwen3-32b-1rps.yaml")
    assert main(["plan", str(BATTERY / "qwen3-32b-1rps.yaml"), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)["answer"]
    assert (a["tp"], a["load"], a["with_redundancy"]) == (2, 2, 4)
    assert a["monthly_usd"] == 4 * 3 * 730 <= 10_000
    # vLLM's default sequence cap on an H100 is 1,024 (engines.vllm_defaults), never above the step budget
    b = a["step_budget_tokens"]
    assert a["settings"] == f"vLLM: --tensor-parallel-size 2 --max-num-batched-tokens {b} --max-num-seqs {min(b, 1024)}"
    tp1 = next(x for x in a["alternatives"] if x["tp"] == 1)
    assert tp1["simulated"] and tp1["load"] >= 9 and tp1["monthly_usd"] > a["monthly_usd"]
    # the closed form at the Answer's setting is within one replica of the verified load (issue 48's rule)
    assert abs(a["closed_form_load"] - a["load"]) <= a["tp"]
    # the note names the setting to deploy and the settings that lost, with their bills
    assert main(["plan", str(BATTERY / "qwen3-32b-1rps.yaml")]) == 0
    text = capsys.readouterr().out
    assert "Deploy                        vLLM: --tensor-parallel-size 2 --max-num-batched-tokens " in text
    assert "Also tried                    vLLM: --tensor-parallel-size 1" in text
    # a plan that fixes its degree is searched at that degree alone (its step budgets still are)
    from planhelp import replan

    from xlplan.decide.planner import plan as run_plan

    fixed = run_plan(replan(p, policy={"engine": "vllm", "tp": 1}), verify=True).answer
    assert fixed.tp == 1 and fixed.load >= 9 and all(x.tp == 1 for x in fixed.alternatives)


def test_a_plan_whose_sequence_cap_is_above_its_step_budget_is_warned():
    # vLLM's scheduler config refuses max_num_batched_tokens < max_num_seqs; the plan is sized with the budget's
    # sequences at most (latency_step.latency_batch_cap: min(max_num_seqs, budget ÷ (1 + prefill share))), and says so
    from planhelp import replan

    from xlplan.decide.planner import plan as run_plan
    from xlplan.io.planfile import reference_plan

    over = run_plan(replan(reference_plan(), policy={"engine": "vllm", "max_num_seqs": 1024,
                                                     "max_num_batched_tokens": 512}), verify=False)
    assert any("policy.max_num_seqs (1,024) is above policy.max_num_batched_tokens (512): vLLM refuses" in w
               for w in over.warnings)
    within = run_plan(replan(reference_plan(), policy={"engine": "vllm", "max_num_seqs": 256,
                                                       "max_num_batched_tokens": 512}), verify=False)
    assert not any("max_num_seqs" in w for w in within.warnings)


def _candidates(plan):
    from xlplan.plan import closed_form, steps
    from xlplan.plan.scenario import resolve

    s = resolve(plan)
    sol = steps.solve(s)
    budget_set = plan.policy.max_num_batched_tokens is not None
    return s, configuration.candidates(s, sol, closed_form.closed_form(s, sol, budget_set), budget_set)


def test_the_search_tries_a_sequence_cap_and_the_experts_over_the_replica_unless_the_plan_fixes_them():
    # issue 48: "candidates over TP (and EP, attention-DP for MoE) ..., the step budget, and the sequence cap";
    # "settings the plan file fixes are respected". moe-tp2 is a Mixtral-class MoE (8 experts) on H100s at TP 2.
    from planhelp import replan

    p = read_plan(BATTERY / "moe-tp2.yaml")
    s, cands = _candidates(p)
    assert any(c.expert_parallel == c.tp == 2 for c in cands)  # 8 experts divide over 2 GPUs
    assert any(c.max_num_seqs < s.max_num_seqs for c in cands)  # a cap at the slots within the ITL target
    # the engine's own settings come first among equal bills: the closed form's own setting leads
    assert (cands[0].expert_parallel, cands[0].max_num_seqs) == (1, s.max_num_seqs)
    fixed = replan(p, policy={"engine": "runbook", "expert_parallel": 1, "max_num_seqs": 256,
                              "max_num_batched_tokens": 2048})
    _, cands = _candidates(fixed)
    assert {(c.expert_parallel, c.max_num_seqs, c.step_budget_tokens) for c in cands} == {(1, 256.0, 2048)}


def test_the_search_caps_sequences_at_the_queueing_paths_slots():
    # the queueing path counts floor(slots) decodes per replica within the inter-token target; the cap the search
    # tries is that count, so the capped closed form has the same slots (min(cap, slots) = cap)
    p = read_plan(BATTERY / "reference.yaml")
    s, cands = _candidates(p)
    for c in cands:
        if c.max_num_seqs != s.max_num_seqs:
            own = next(u for u in cands if (u.tp, u.step_budget_tokens, u.max_num_seqs) == (c.tp, c.step_budget_tokens,
                                                                                             s.max_num_seqs))
            assert c.max_num_seqs == int(own.queue.slots_per_replica)
            assert c.queue.slots_per_replica == c.max_num_seqs


def test_a_sequence_cap_bounds_the_batch_a_token_gap_sees():
    # with one sequence at a time (--max-num-seqs 1) a token gap sees a batch of one, whatever the load: the latency
    # path is one replica where a one-sequence step keeps the target, and the queueing path (one slot per replica)
    # carries the load instead
    from xlplan.plan import closed_form, steps
    from xlplan.plan.scenario import resolve

    s = resolve(read_plan(BATTERY / "reference.yaml"))
    sol = steps.solve(s)
    one = closed_form.at_setting(s, sol.traffic, 1, 512, False, max_num_seqs=1.0)
    assert one.latency_gpus == 1 and one.queue.slots_per_replica == 1.0
    # one slot serves 1 / (E[output] × step) requests a second, so the queue needs more than λ × E[output] × step
    # replicas (a stable queue); the uncapped closed form needs far fewer
    assert one.queueing_gpus > s.peak_rps * sol.traffic.output_mean * one.queue.step_s
    assert one.load > closed_form.at_degree(s, sol, 1, False, 512).load


@pytest.mark.parametrize(("engine", "ep", "dp", "words"), [
    ("vllm", 8, False, "vLLM: --tensor-parallel-size 8 --max-num-batched-tokens 4096 --max-num-seqs 128 --enable-expert-parallel"),
    ("sglang", 8, True, ("SGLang: --tp-size 8 --chunked-prefill-size 4096 --max-running-requests 128 --ep-size 8 "
                        "--enable-dp-attention --dp-size 8")),
    ("trtllm", 8, True, ("TensorRT-LLM: --tp_size 8 --max_num_tokens 4096 --max_batch_size 128 --ep_size 8 "
                        "--extra_llm_api_options <a YAML file with enable_attention_dp: true>")),
])
def test_the_parallel_layout_is_named_in_the_engines_own_flags(engine, ep, dp, words):
    # vLLM --enable-expert-parallel (experts over TP × DP GPUs); SGLang --ep-size, --enable-dp-attention with
    # --dp-size; trtllm-serve --ep_size and enable_attention_dp in its extra LLM API options
    assert configuration.settings(engine, 8, 4096, 128, ep, dp) == words


def test_dp_attention_is_tried_only_where_a_replicas_ranks_copy_the_cache():
    # GQA shards the cache by KV head: min(TP, KV heads) ways (serving.memory.kv_shards); MLA's latent is copied on
    # every rank. DP attention gives each rank its own sequences, so it is worth a try only where the cache is copied.
    base = dict(set_by_plan=(), experts=0, expert_parallel=1, engine="sglang", attention_data_parallel=False)
    assert configuration.layouts(NS(**base, kv_shard_limit=1), 8) == [{"attention_data_parallel": True}]  # MLA
    assert configuration.layouts(NS(**base, kv_shard_limit=8), 8) == []  # 8 KV heads over 8 GPUs: no copy
    assert configuration.layouts(NS(**base, kv_shard_limit=8), 16) == [{"attention_data_parallel": True}]
    assert configuration.layouts(NS(**{**base, "engine": "vllm"}, kv_shard_limit=1), 8) == []
    fixed = NS(**{**base, "set_by_plan": ("attention_data_parallel",)}, kv_shard_limit=1)
    assert configuration.layouts(fixed, 8) == []
    assert configuration.layouts(NS(**base, kv_shard_limit=1), 1) == []  # one GPU: nothing to spread


def test_the_simulated_scenario_runs_the_candidates_own_cap_and_layout():
    from xlplan.decide import answer
    from xlplan.plan import closed_form, steps
    from xlplan.plan.scenario import resolve

    s = resolve(read_plan(BATTERY / "moe-tp2.yaml"))
    sol = steps.solve(s)
    cf = closed_form.at_setting(s, sol.traffic, 2, 2048, False, max_num_seqs=64.0, expert_parallel=2)
    d = answer.deployed(s, cf)
    assert (d.max_num_seqs, d.expert_parallel, d.max_num_batched_tokens) == (64.0, 2, 2048.0)
    assert answer.deployed(s, closed_form.at_degree(s, sol, 2, False, 2048)).max_num_seqs == s.max_num_seqs


def test_among_equal_bills_a_cap_or_layout_comes_after_every_plain_setting():
    # the fewest flags changed first: on the configuration battery no cap or layout was cheaper, and ahead of the
    # plain settings they took Gemma's long answers' eight simulations before TP 2 (6 GPUs) was reached
    p = read_plan(BATTERY / "moe-tp2.yaml")
    s, cands = _candidates(p)
    seen_changed = {}
    for c in cands:
        bill = (not c.feasible, configuration._billed(s, c.with_redundancy, c.purchased), c.purchased)
        changed = configuration._changes(s, c) > 0
        assert not (seen_changed.get(bill) and not changed), "a plain setting after a changed one of the same bill"
        seen_changed[bill] = seen_changed.get(bill, False) or changed


def test_an_expert_parallel_degree_the_plans_tp_does_not_divide_is_refused_in_one_line(tmp_path, capsys):
    # a replica's experts are spread over its own GPUs: EP must divide TP (vLLM, SGLang and TensorRT-LLM refuse
    # otherwise); the plan file names both, so it is the plan's slip, refused with exit 2 naming the field
    from xlplan.cli import main

    text = (BATTERY / "moe-tp2.yaml").read_text().replace("  tp: 2", "  tp: 2\n  expert_parallel: 3")
    bad = tmp_path / "ep3.yaml"
    bad.write_text(text)
    assert main(["plan", str(bad), "--no-verify"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "policy.expert_parallel: got 3; expected a divisor of policy.tp (2)" in err[0]


def test_a_plans_layout_the_answer_cannot_run_as_set_is_warned():
    # the plan fixes EP 4 but leaves TP to the search: at TP 2 its experts cannot spread over 4, so they are split by
    # TP (EP 1), the closed form sizes that, and the Answer's layout and a warning say so; DP attention on vLLM is a
    # different replica (its data parallel replicates the dense layers), planned as SGLang runs it, and warned
    from planhelp import replan

    from xlplan.decide import answer
    from xlplan.plan import closed_form, steps
    from xlplan.plan.scenario import resolve

    p = replan(read_plan(BATTERY / "moe-tp2.yaml"), policy={"engine": "trtllm", "expert_parallel": 4, "tp": None})
    s = resolve(p)
    sol = steps.solve(s)
    assert closed_form.at_degree(s, sol, 2, False, 512).expert_parallel == 1
    assert closed_form.at_degree(s, sol, 4, False, 512).expert_parallel == 4
    a = NS(tp=2, expert_parallel=1, attention_data_parallel=False)
    assert answer.layout_warnings(s, a)[0].startswith("policy.expert_parallel (4) does not divide the Answer's TP degree (2)")
    assert answer.layout_warnings(s, NS(tp=4, expert_parallel=4, attention_data_parallel=False)) == []
    v = resolve(replan(p, policy={"engine": "vllm", "attention_data_parallel": True, "expert_parallel": None}))
    assert answer.layout_warnings(v, NS(tp=2, expert_parallel=1, attention_data_parallel=True))[0].startswith(
        "policy.attention_data_parallel is true on vLLM")
