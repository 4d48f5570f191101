"""Prometheus scrapes: several engines combined by what each metric means, duplicates counted once, time order from the
data, values range-checked before they reach the verdict (issue 13)."""

from __future__ import annotations

import os

import pytest

from xlplan.cli import main
from xlplan.evidence.confirm import evidence, verdict
from xlplan.io.errors import InputError
from xlplan.io.metrics import read_scrapes

# a data-parallel vLLM server: one series per engine
TWO_ENGINES = """# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {c0}{ts}
vllm:kv_cache_usage_perc{{engine="1",model_name="m"}} {c1}{ts}
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="m"}} {w0}{ts}
vllm:num_requests_waiting{{engine="1",model_name="m"}} {w1}{ts}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="m"}} 10{ts}
vllm:num_requests_running{{engine="1",model_name="m"}} 10{ts}
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{{engine="0",model_name="m"}} 0{ts}
vllm:num_preemptions_total{{engine="1",model_name="m"}} 0{ts}
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="m"}} {g0}{ts}
vllm:generation_tokens_total{{engine="1",model_name="m"}} {g1}{ts}
"""


def write(tmp_path, rows, template=TWO_ENGINES, names=None):
    paths = []
    for i, row in enumerate(rows):
        p = tmp_path / (names[i] if names else f"scrape-{i:03d}.txt")
        p.write_text(template.format(**{"ts": "", "w0": 0, "w1": 0, "c1": row.get("c0", 0.5), "g1": 0, **row}), encoding="utf-8")
        paths.append(p)
    return paths


def test_two_engines_at_60_percent_read_60_percent(tmp_path):
    # each engine's cache is 60% full: the server's cache is 60% full, not 120%
    rows = [{"c0": 0.6, "c1": 0.6, "g0": 1000 * i, "g1": 2000 * i} for i in range(4)]
    e = evidence(read_scrapes(write(tmp_path, rows), 15.0))
    assert e.cache_p50 == pytest.approx(0.6) and e.cache_p95 == pytest.approx(0.6)
    # counters add up: engine 0 generates 1,000 tokens per 15 s scrape, engine 1 2,000: 3,000 / 15 s = 200 tokens/s
    assert e.generation_tok_s == pytest.approx(200.0)


def test_queue_gauges_are_per_engine_and_add_across_other_labels(tmp_path):
    # waiting 4 and 6 on the two engines: 5 per engine (the mean across engines)
    e = evidence(read_scrapes(write(tmp_path, [{"c0": 0.5, "w0": 4, "w1": 6, "g0": 0}] * 2, names=["a.txt", "b.txt"]), 15.0))
    assert e.waiting_p50 == 5
    # two models on one server, 3 and 7 waiting: 10 waiting on the server
    two_models = """# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{model_name="a"}} 0.2
vllm:kv_cache_usage_perc{{model_name="b"}} 0.4
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{model_name="a"}} 3
vllm:num_requests_waiting{{model_name="b"}} 7{ts}
"""
    e = evidence(read_scrapes(write(tmp_path, [{}, {}], two_models, names=["c.txt", "d.txt"]), 15.0))
    assert e.waiting_p50 == 10 and e.cache_p50 == pytest.approx(0.3)


def test_the_same_series_twice_counts_once(tmp_path):
    text = TWO_ENGINES + 'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} {c0}\n'
    e = evidence(read_scrapes(write(tmp_path, [{"c0": 0.6, "c1": 0.6, "g0": 0}] * 2, text), 15.0))
    assert e.cache_p50 == pytest.approx(0.6)
    # the same series with two values: two scrapes pasted into one file
    text = TWO_ENGINES + 'vllm:kv_cache_usage_perc{{engine="0",model_name="m"}} 0.9\n'
    with pytest.raises(InputError, match=r'vllm:kv_cache_usage_perc\{engine="0",model_name="m"\}: given twice, as 0.6 and 0.9'):
        evidence(read_scrapes(write(tmp_path, [{"c0": 0.6, "c1": 0.6, "g0": 0}] * 2, text, names=["p.txt", "q.txt"]), 15.0))


def test_scrapes_are_put_in_the_order_of_their_timestamps(tmp_path):
    # samples stamped 15 s apart, given newest first: the counter rises 1,500 tokens per scrape, 100 tokens/s, with no
    # restart; taken in argument order it would have looked like two counter resets
    rows = [{"c0": 0.5, "g0": 1500 * i, "ts": f" {1767225600000 + 15000 * i}"} for i in range(3)]
    paths = write(tmp_path, rows)
    e = evidence(read_scrapes(list(reversed(paths)), 60.0))  # the interval is not used when samples carry timestamps
    assert e.seconds == 30.0 and e.generation_tok_s == pytest.approx(100.0)
    assert not any("restart" in n for n in e.notes) and "timestamps" in e.notes[0]
    assert "not as given" in verdict(e)[1]


def test_without_timestamps_the_files_modification_times_order_them(tmp_path):
    rows = [{"c0": 0.5, "g0": 1500 * i} for i in range(3)]
    paths = write(tmp_path, rows)
    for i, p in enumerate(paths):
        os.utime(p, (1_767_225_600 + 15 * i, 1_767_225_600 + 15 * i))
    e = evidence(read_scrapes([paths[2], paths[0], paths[1]], 15.0))
    assert e.generation_tok_s == pytest.approx(100.0) and "modification times" in e.notes[0]


def test_files_written_together_keep_the_order_given(tmp_path):
    # a fresh checkout (or a copy) writes the scrapes within a second of each other in whatever order it likes: such
    # modification times say nothing of when each was scraped, so the order given (a shell glob's: by name) stands.
    # Reordered by them, 1,500-token steps 15 s apart would read as a restart and a rate of 100 tokens/s lost.
    rows = [{"c0": 0.5, "g0": 1500 * i} for i in range(3)]
    paths = write(tmp_path, rows)
    for i, p in enumerate(paths):
        os.utime(p, (1_767_225_600 + 0.3 * (2 - i), 1_767_225_600 + 0.3 * (2 - i)))  # newest first, 0.3 s apart
    e = evidence(read_scrapes(paths, 15.0))
    assert e.generation_tok_s == pytest.approx(100.0) and not e.notes


def test_a_counter_that_falls_is_noted_as_a_restart(tmp_path):
    rows = [{"c0": 0.5, "g0": g} for g in (3000, 4500, 0, 1500)]
    paths = write(tmp_path, rows)
    e = evidence(read_scrapes(paths, 15.0))
    # 1,500 + (restart) 0 + 1,500 = 3,000 tokens over 45 s
    assert e.generation_tok_s == pytest.approx(3000 / 45)
    assert any("generation counter fell from 4500 to 0" in n for n in e.notes)


@pytest.mark.parametrize("row, expected", [
    ({"c0": 85}, 'vllm:kv_cache_usage_perc{engine="0",model_name="m"}: got 85; expected a fraction from 0 to 1 (0.85, not 85)'),
    ({"c0": 0.5, "w0": -1}, 'vllm:num_requests_waiting{engine="0",model_name="m"}: got -1; expected a value of at least 0'),
    ({"c0": "NaN"}, 'vllm:kv_cache_usage_perc{engine="0",model_name="m"}: got nan; expected a finite number'),
    ({"c0": 0.5, "g0": "+Inf"}, "vllm:generation_tokens_total"),
])
def test_values_out_of_range_are_refused_naming_the_series(tmp_path, capsys, row, expected):
    paths = write(tmp_path, [{"g0": 0, **row}] * 2)
    assert main(["confirm", *map(str, paths)]) == 2
    err = capsys.readouterr().err
    assert expected in err and str(paths[0]) in err and "Traceback" not in err


def test_gpu_utilisation_is_a_percentage(tmp_path):
    text = TWO_ENGINES + '# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{gpu="0"}} {u}\nDCGM_FI_DEV_GPU_UTIL{{gpu="1"}} 90\n'
    e = evidence(read_scrapes(write(tmp_path, [{"c0": 0.5, "g0": 0, "u": 70}] * 2, text), 15.0))
    assert e.gpu_util_p50 == pytest.approx(0.80)  # two GPUs at 70% and 90%: 80%
    with pytest.raises(InputError, match="DCGM_FI_DEV_GPU_UTIL.*got 150; expected a percentage"):
        evidence(read_scrapes(write(tmp_path, [{"c0": 0.5, "g0": 0, "u": 150}] * 2, text, names=["x.txt", "y.txt"]), 15.0))


def test_the_same_file_twice_and_a_bad_interval(tmp_path, capsys):
    p, = write(tmp_path, [{"c0": 0.5, "g0": 0}])
    assert main(["confirm", str(p), str(p)]) == 2
    assert "given twice" in capsys.readouterr().err
    q, r = write(tmp_path, [{"c0": 0.5, "g0": 0}] * 2, names=["q.txt", "r.txt"])
    assert main(["confirm", str(q), str(r), "--interval", "inf"]) == 2
    assert "--interval: got inf" in capsys.readouterr().err


def test_a_malformed_line_of_a_metric_not_read_is_left_out_and_said(tmp_path):
    # the readers' one policy: a bad line that cannot change the answer (a Python GC counter) is left out and named;
    # one inside a metric confirm reads, or more than 1% of the sample lines, refuses the file
    from pathlib import Path

    src = sorted((Path(__file__).resolve().parents[1] / "examples" / "scrapes").glob("vllm-*.prom"))
    paths = []
    for i, p in enumerate(src):
        text = p.read_text(encoding="utf-8")
        if i == 1:
            text = text.replace('python_gc_objects_collected_total{generation="1"}',
                                'python_gc_objects_collected_total{generation="1"', 1)
        q = tmp_path / p.name
        q.write_text(text, encoding="utf-8")
        paths.append(q)
    good = evidence(read_scrapes(src, 15.0))
    e = evidence(read_scrapes(paths, 15.0))
    assert e.generation_tok_s == good.generation_tok_s
    assert f"{paths[1]} line 4 left out: a malformed python_gc_objects_collected_total sample, a metric confirm does not read" in e.notes
    # the same slip inside the cache gauge refuses, naming the line and why it matters
    text = src[1].read_text(encoding="utf-8").replace('vllm:kv_cache_usage_perc{', 'vllm:kv_cache_usage_perc{{', 1)
    paths[1].write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="a metric the plan is confirmed from"):
        evidence(read_scrapes(paths, 15.0))
