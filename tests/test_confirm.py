"""Confirming the binding constraint from Prometheus scrapes of a serving engine: one scrape sequence per verdict."""

from __future__ import annotations

import json

import pytest

from xlplan.cli import main
from xlplan.evidence.confirm import evidence
from xlplan.io.errors import InputError
from xlplan.io.metrics import read_scrapes

VLLM = """# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="llama"}} {cache}
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="llama"}} {running}
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="llama"}} {waiting}
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{{engine="0",model_name="llama"}} {preempted}
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="llama"}} {generated}
"""

SGLANG = """# TYPE sglang:token_usage gauge
sglang:token_usage{{model_name="m"}} {cache}
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{{model_name="m"}} {waiting}
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{{model_name="m"}} {running}
"""


def scrapes(tmp_path, template, rows):
    paths = []
    for i, row in enumerate(rows):
        p = tmp_path / f"scrape-{i:03d}.txt"
        p.write_text(template.format(**row), encoding="utf-8")
        paths.append(p)
    return paths


def test_memory_bound(tmp_path):
    # the cache pinned at 97-99%, preemptions climbing 3 per 15 s scrape, 4-6 requests waiting for blocks
    rows = [{"cache": 0.97 + 0.01 * (i % 3), "running": 60, "waiting": 4 + i % 3, "preempted": 3 * i, "generated": 9000 * i}
            for i in range(20)]
    e = evidence(read_scrapes(scrapes(tmp_path, VLLM, rows), 15.0))
    assert e.preemptions_per_s == pytest.approx(3 / 15) and e.generation_tok_s == pytest.approx(600)
    from xlplan.evidence.confirm import verdict

    assert verdict(e)[0] == "memory"


@pytest.mark.slow
def test_compute_bound_and_agreement_with_the_plan(tmp_path, capsys):
    # a comfortable cache (40-45%) while 8 requests queue: compute binds
    rows = [{"cache": 0.40 + 0.05 * (i % 2), "running": 32, "waiting": 8, "preempted": 0, "generated": 12000 * i} for i in range(10)]
    paths = scrapes(tmp_path, VLLM, rows)
    plan = tmp_path / "plan.yaml"
    assert main(["example", "-o", str(plan)]) == 0
    capsys.readouterr()
    assert main(["confirm", *map(str, paths), "--plan", str(plan), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the reference plan's Answer is bound by queueing (6 GPUs for the load where the runbook's paths need 4 each):
    # requests waiting while the cache has room is that wait for a batch slot, so compute binding confirms it
    from xlplan.decide.planner import plan as run_plan
    from xlplan.io.planfile import read_plan

    assert run_plan(read_plan(plan)).answer.binding.startswith("queueing")
    # the binding confirmed is the Answer's as `xlplan plan` gives it by default (verified in simulation)
    assert out["plan_binding"] == run_plan(read_plan(plan), verify="auto").answer.binding
    assert out["verdict"] == "compute" and out["plan_binding"].startswith("queueing") and out["agrees"] is True


def test_neither_when_there_is_headroom(tmp_path, capsys):
    rows = [{"cache": 0.25, "running": 10, "waiting": 0, "preempted": 0, "generated": 3000 * i} for i in range(6)]
    assert main(["confirm", *map(str, scrapes(tmp_path, VLLM, rows))]) == 0
    assert "Binds in production: neither" in capsys.readouterr().out


def test_sglang_names(tmp_path):
    from xlplan.evidence.confirm import verdict

    rows = [{"cache": 0.95, "waiting": 12, "running": 40} for _ in range(5)]
    assert verdict(evidence(read_scrapes(scrapes(tmp_path, SGLANG, rows))))[0] == "memory"


def test_older_vllm_cache_metric(tmp_path):
    old = VLLM.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    rows = [{"cache": 0.3, "running": 4, "waiting": 0, "preempted": 0, "generated": 100 * i} for i in range(3)]
    assert evidence(read_scrapes(scrapes(tmp_path, old, rows))).cache_p95 == pytest.approx(0.3)


def test_malformed_scrape_names_the_line(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text('# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine="0" 0.5\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        evidence(read_scrapes([p, p]))
    assert str(p) in str(e.value) and "line 2: not Prometheus text format" in str(e.value)


def test_scrape_without_vllm_metrics(tmp_path):
    p = tmp_path / "node.txt"
    p.write_text("# TYPE node_load1 gauge\nnode_load1 0.5\n", encoding="utf-8")
    with pytest.raises(InputError, match="no vLLM or SGLang cache metric \\(found: node_load1\\)"):
        evidence(read_scrapes([p, p]))


def test_one_scrape_is_not_enough(tmp_path, capsys):
    paths = scrapes(tmp_path, VLLM, [{"cache": 0.5, "running": 1, "waiting": 0, "preempted": 0, "generated": 0}])
    assert main(["confirm", str(paths[0])]) == 2
    assert "expected at least two" in capsys.readouterr().err
