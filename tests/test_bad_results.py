"""Benchmark results: a field the fit uses that is not a positive figure is an error naming it; a result for another model
than the plan's is a warning; the measurement CSV reader gives each row its line (issue 13)."""

from __future__ import annotations

import json

import pytest

from xlplan.cli import main
from xlplan.io.bench_results import read_results, same_model
from xlplan.io.errors import InputError
from xlplan.io.tables import read_csv_table

VLLM = {"date": "20261130-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B", "max_concurrency": 8,
        "completed": 100, "total_input_tokens": 100_000, "total_output_tokens": 20_000, "output_throughput": 900.0,
        "mean_ttft_ms": 60.0, "mean_itl_ms": 8.5}
GUIDELLM = {"benchmarks": [{"config": {"strategy": {"type_": "concurrent", "streams": 8}},
                            "metrics": {"time_to_first_token_ms": {"successful": {"mean": 60.0}},
                                        "inter_token_latency_ms": {"successful": {"mean": 8.5}},
                                        "output_tokens_per_second": {"successful": {"mean": 900.0}},
                                        "prompt_token_count": {"successful": {"mean": 1000}},
                                        "output_token_count": {"successful": {"mean": 200}}}}]}
GENAI = {"time_to_first_token": {"avg": 60.0}, "inter_token_latency": {"avg": 8.5}, "output_token_throughput": {"avg": 900.0},
         "input_sequence_length": {"avg": 1000}, "output_sequence_length": {"avg": 200},
         "input_config": {"model": ["Qwen/Qwen3-8B"], "concurrency": 8}}


def write(tmp_path, data, name="result.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("field, value, expected", [
    ("mean_itl_ms", 0, "mean_itl_ms: got 0; expected a positive number"),
    ("mean_itl_ms", "fast", "mean_itl_ms: got 'fast'; expected a positive number [ms]"),
    ("mean_itl_ms", True, "mean_itl_ms: got True; expected a positive number [ms]"),
    ("mean_ttft_ms", -12.0, "mean_ttft_ms: got -12.0; expected a positive number"),  # not "prefill MFU -3.2"
    ("completed", 0, "completed: got 0; expected a positive number"),
    ("total_input_tokens", None, "total_input_tokens: missing; expected a positive number [tokens]"),
    ("max_concurrency", None, "max_concurrency: missing; expected a run with --max-concurrency"),
])
def test_vllm_fields_that_are_not_figures_are_named(tmp_path, capsys, field, value, expected):
    path = write(tmp_path, {**VLLM, field: value})
    with pytest.raises(InputError) as e:
        read_results([path])
    assert expected in str(e.value) and str(path) in str(e.value)
    assert main(["calibrate", str(path)]) == 2
    assert expected in capsys.readouterr().err


def test_nan_in_a_result_is_named_with_its_path(tmp_path):
    path = write(tmp_path, json.dumps(VLLM).replace('"mean_itl_ms": 8.5', '"mean_itl_ms": NaN'))
    with pytest.raises(InputError, match="mean_itl_ms: got nan; expected a finite number"):
        read_results([path])


def test_guidellm_and_genai_perf_fields_are_named(tmp_path):
    bad = json.loads(json.dumps(GUIDELLM))
    bad["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"]["mean"] = 0
    with pytest.raises(InputError, match=r"benchmarks\[0\]\.metrics\.inter_token_latency_ms\.successful\.mean: got 0"):
        read_results([write(tmp_path, bad)])
    with pytest.raises(InputError, match=r"time_to_first_token\.avg: got -5"):
        read_results([write(tmp_path, {**GENAI, "time_to_first_token": {"avg": -5}}, "genai.json")])


def test_a_result_for_another_model_is_a_warning(tmp_path):
    vllm, genai = write(tmp_path, VLLM), write(tmp_path, GENAI, "genai.json")
    runs = read_results([vllm, genai], plan_model="llama-3.1-8b")
    assert len(runs) == 2  # still read: a warning, not an error
    assert runs.warnings == [(f"{genai}: model 'Qwen/Qwen3-8B' is not the plan's model 'llama-3.1-8b'; expected a benchmark of "
                             "the plan's model (the fit would describe another model)")]
    assert read_results([vllm, genai]).warnings == []  # without the plan's model, nothing to compare


def test_model_names_compare_through_the_catalog():
    assert same_model("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct")
    assert same_model("my-model", "org/My-Model")  # not in the catalog: compared by name
    assert not same_model("llama-3.1-8b", "meta-llama/Llama-3.1-70B-Instruct")


def test_csv_table_rows_with_their_lines(tmp_path):
    path = write(tmp_path, "id,measured\nA,1.5\n\nB,2,3\n\"C\nD\",4\nE,x\n", "m.csv")
    table = read_csv_table(path, "a measurements CSV", required=("id", "measured"))
    # A on line 2; line 3 blank; B has 3 fields (left out); "C\nD" spans lines 5-6; E on line 7
    assert table.rows == ({"id": "A", "measured": "1.5"}, {"id": "C\nD", "measured": "4"}, {"id": "E", "measured": "x"})
    assert table.lines == (2, 5, 7)
    assert table.problems == ("line 4: 3 field(s) where the header has 2; row left out",)
    with pytest.raises(InputError, match="missing column\\(s\\) category"):
        read_csv_table(path, "a measurements CSV", required=("id", "category"))
    with pytest.raises(InputError, match="column\\(s\\) 'a' named twice"):
        read_csv_table(write(tmp_path, "a,a\n1,2\n", "twice.csv"), "a CSV")


@pytest.mark.parametrize("field", ["mean_itl_ms", "mean_ttft_ms"])
def test_a_latency_written_in_seconds_is_named_with_its_slip(tmp_path, capsys, field):
    # a new user's slip: 12 ms written as 0.012 in a vLLM result. No engine's token gap or first token is under half a
    # millisecond, so the reader names the field, the value and the slip (0.012 s is 12 ms) before any fit; the fit
    # had refused it as "prefill MFU 1.00 (above 0.8)", naming no field
    from pathlib import Path

    d = json.loads((Path(__file__).resolve().parents[1] / "examples" / "bench" / "vllm-c64.json").read_text())
    d[field] = 0.012
    path = tmp_path / "result.json"
    path.write_text(json.dumps(d))
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{field}: got 0.012; expected milliseconds" in err and "0.012 s is 12 ms" in err
