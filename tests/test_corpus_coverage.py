"""Coverage by fields: layouts read in one grammar, rows refused only for a named field, MLPerf Offline answered by the
planner's own offline prediction, total tokens/s scored, the H800 in the catalog.

Truths used: the layout grammar of ``xlplan/data/silicon_sample.md`` (a worker is ``tp × pp × attention_dp`` GPUs; the
experts fill ``moe_tp × moe_ep`` of them); tokens per request are ``isl + osl`` of which ``osl`` are output, so
total tokens/s = output tokens/s × (isl + osl) ÷ osl and requests/s = output tokens/s ÷ osl; the H800's figures from
the operators' published tables cited in ``xlplan/catalog/gpus.yaml``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest

from xlplan import catalog
from xlplan.evidence import predict
from xlplan.evidence.validation import predict_row
from xlplan.io import layouts, names
from xlplan.io.layouts import Layout, from_prose, in_xlplan_names
from xlplan.io.measurement_table import read_measurements
from xlplan.io.measurements import CORPUS, conditions, measured_row, native_narrowest
from xlplan.plan.scenario import PlanningError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def corpus():
    return {r["id"]: r for r in read_measurements(CORPUS)}


def _without_layout(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in layouts.COLUMNS}


@pytest.mark.parametrize("prose, settings, gpus, expected", [
    # SGLang's --tp 8 --enable-dp-attention: the TP group's 8 GPUs are 8 attention ranks of one GPU, experts over EP 8
    ("TP8 EP8 + attention DP", "", 8, Layout(1, 1, 8, 1, 8, 1)),
    # eight single-GPU replicas: DP without attention is replicas
    ("TP1 x DP8 (eight single-GPU replicas)", "", 8, Layout(1, 1, 1, 1, 1, 8)),
    # TP 2 on 8 GPUs: a worker of 2, so 8 ÷ 2 = 4 replicas
    ("TP=2", "", 8, Layout(2, 1, 1, 2, 1, 4)),
    # TensorRT-LLM's flag in the settings column makes a TP 8 worker 8 attention ranks
    ("TP8", "enable_attention_dp true", 8, Layout(1, 1, 8, 8, 1, 1)),
    # all 8 GPUs in one tensor-parallel group; pipeline stages multiply a worker's GPUs: TP 4 × PP 2 = 8, one replica
    ("all 8 GPUs", "", 8, Layout(8, 1, 1, 8, 1, 1)),
    ("TP4 PP2", "", 8, Layout(4, 2, 1, 4, 1, 1)),
])
def test_the_grammar_reads_prose_into_the_six_columns(prose, settings, gpus, expected):
    layout, why = from_prose(prose, settings, gpus)
    assert why == "" and layout == expected


@pytest.mark.parametrize("layout, gpus, field", [
    (Layout(4, 2, 1, 4, 1, 1), 8, "pp 2"),  # pipeline parallelism is not modelled
    (Layout(2, 1, 4, 8, 1, 1), 8, "tp 2 × attention_dp 4"),  # attention ranks of two GPUs
    (Layout(2, 1, 1, 2, 1, 3), 8, "replicas 3"),  # 3 × 2 = 6 GPUs, not the 8 stated
])
def test_a_layout_xlplan_does_not_model_is_refused_naming_its_column(layout, gpus, field):
    *_, why = in_xlplan_names(layout, moe=False, gpu_count=gpus)
    assert why.startswith(field)


def test_the_corpus_columns_are_what_its_prose_reads():
    # the corpus' layout columns were filled by scripts/structure_layouts.py from its parallelism prose: re-reading it
    # changes nothing, and no filled row disagrees with its prose
    spec = importlib.util.spec_from_file_location("structure_layouts", ROOT / "scripts" / "structure_layouts.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = CORPUS.read_text(encoding="utf-8")
    new, differ = script.structured(text)
    assert differ == [] and new == text


@pytest.mark.parametrize("rid", ["N01", "TR09", "TRD04", "T16", "K04"])
def test_a_file_in_the_older_schema_is_read_by_the_same_grammar(corpus, rid):
    # a measurements file without the six columns (an outside file) reads the prose as it loads: the same checks
    with_columns = predict_row(measured_row(corpus[rid]))
    without = predict_row(measured_row(_without_layout(corpus[rid])))
    assert [(c.metric, c.predicted, c.skipped) for c in without] == [(c.metric, c.predicted, c.skipped) for c in with_columns]


def test_a_row_whose_settings_are_not_stated_is_predicted_not_refused(corpus):
    # KV10 says "launch command not in excerpt read": the engine's defaults (vLLM 0.9 of memory) are predicted
    (check,) = predict_row(measured_row(corpus["KV10"]))
    assert not check.skipped and "settings not stated" in check.note and "rule at 0.9" in check.note


def test_total_tokens_and_samples_are_scored_where_output_tokens_are_not(corpus):
    row = corpus["N03"]  # Llama-3.3-70B fp8, 2 × H100, 5,000 in / 500 out, concurrency 25
    (out, *_) = predict_row(measured_row(row))
    assert out.metric == "output tokens/s"
    (total, *_) = predict_row(measured_row({**row, "output_tok_s": "", "total_tok_s": "6000"}))
    (samples, *_) = predict_row(measured_row({**row, "output_tok_s": "", "samples_per_s": "1.2"}))
    # each request is 5,000 + 500 tokens, 500 of them output
    assert total.metric == "total tokens/s" and total.predicted == pytest.approx(out.predicted * 5500 / 500, rel=1e-12)
    assert samples.metric == "samples/s" and samples.predicted == pytest.approx(out.predicted / 500, rel=1e-12)
    assert total.relative_error == pytest.approx(total.predicted / 6000 - 1, rel=1e-12)


def _mlperf(gpu: str, **columns) -> dict:
    row = {"id": "X1", "category": "mlperf_offline", "model": "Llama-2-70B (99.9)",
           "precision": "vendor-chosen (NVIDIA Hopper FP8, B200 FP4, AMD FP8 - per vendor announcements)", "gpu": gpu,
           "gpu_count": "8", "parallelism": "vendor-chosen", "engine": "TensorRT-LLM (NVIDIA) / vLLM (AMD)",
           "engine_version": "MLPerf Inference", "settings": "MLPerf llama2-70b: OpenOrca", "dataset": "OpenOrca",
           "isl": "700", "osl": "294.45", "concurrency_or_rate": "offline", "output_tok_s": "20000",
           "source": "https://github.com/mlcommons/inference_results_v4.1"}
    return row | columns


def test_an_mlperf_offline_row_is_the_best_throughput_over_the_gpus_layouts():
    m = measured_row(_mlperf("NVIDIA DGX H100 (8x H100 SXM)"))
    c = m.conditions
    # the submitter's precision on an H100 (FP8 tensor cores, no FP4) is fp8; TensorRT-LLM is NVIDIA's engine here
    assert (c.weights_dtype, c.engine, c.isl, c.osl) == ("fp8", "trtllm", 700.0, 294.45) and m.layout_free
    (check,) = predict_row(m)
    # the maximum of the offline prediction over every TP that divides 8 (replicas fill the rest), computed directly
    best = 0.0
    for tp in (1, 2, 4, 8):
        try:
            best = max(best, predict.offline_output_tok_s(replace(c, tp=tp), predict.ENGINE_DEFAULTS.resolved(c.engine, c.gpu.name))[0])
        except PlanningError:
            continue
    assert check.predicted == pytest.approx(best, rel=1e-12) and "layout not stated" in check.note


def test_an_mlperf_row_reads_the_vendors_engine_and_format_from_the_gpu():
    amd = conditions(_mlperf("AMD Instinct MI300X"))[0]
    assert (amd.engine, amd.weights_dtype) == ("vllm", "fp8")  # MI300X: FP8 tensor cores, no FP4 in the catalog
    assert native_narrowest(catalog.get_gpu("b200")) == "nvfp4" and native_narrowest(catalog.get_gpu("mi355x")) == "mxfp4"


def test_an_mlperf_row_without_lengths_takes_its_benchmarks_published_means():
    c, why = conditions(_mlperf("NVIDIA DGX H100 (8x H100 SXM)", isl="", osl=""))
    # llama2-70b: 5,463,976 prompt tokens over the official file's 24,576 rows = 222.33; the reference's mean output
    # 294.45 (xlplan/data/mlperf_benchmarks.csv, each with its source)
    assert why == "" and (c.isl, c.osl) == (pytest.approx(5_463_976 / 24_576, abs=0.005), 294.45)


def test_an_mlperf_row_without_a_published_prompt_length_names_the_field():
    row = _mlperf("NVIDIA DGX H100 (8x H100 SXM)", model="mistralai/Mixtral-8x7B-Instruct-v0.1", isl="", osl="",
                  settings="MLPerf mixtral-8x7b")
    c, why = conditions(row)
    # MLCommons' mixtral-8x7b definition publishes the mean output (144.84) but no mean prompt length
    assert c is None and why.startswith("isl: not stated") and "mixtral-8x7b" in why


def test_mlperf_benchmark_names_read_as_the_catalog_models():
    assert [names.model_key(t) for t in ("llama2-70b-99.9", "llama3.1-405b", "llama3.1-8b", "mixtral-8x7b")] == [
        "llama-2-70b", "llama-3.1-405b", "llama-3.1-8b", "mixtral-8x7b"]


def _csv(tmp_path, rows: list[dict]) -> str:
    import csv

    header = list(read_measurements(CORPUS)[0])
    path = tmp_path / "mine.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return str(path)


def _offline_8b(rid: str, **columns) -> dict:
    return {"id": rid, "category": "offline_max_throughput", "model": "meta-llama/Llama-3.1-8B-Instruct",
            "precision": "bf16", "gpu": "1xH100", "gpu_count": "1", "parallelism": "TP1", "engine": "vLLM",
            "engine_version": "0.10.0", "settings": "", "isl": "1000", "osl": "1000", "concurrency_or_rate": "offline",
            "source": "https://example.com/mine"} | columns


@pytest.mark.slow
def test_runs_of_one_deployment_scored_on_total_tokens_alone_validate_without_error(tmp_path, capsys):
    from xlplan.cli import main

    # two runs of one deployment, each giving total tokens/s only: calibration pairs score output tokens/s and the
    # inter-token latency, so these two form no pair, and every row is still predicted on its total
    path = _csv(tmp_path, [_offline_8b("A1", total_tok_s="30000"), _offline_8b("A2", isl="500", total_tok_s="40000")])
    assert main(["validate", path, "--json"]) == 0
    import json

    checks = json.loads(capsys.readouterr().out)["checks"]
    assert {c["id"]: c["metric"] for c in checks if c["id"] in ("A1", "A2")} == {"A1": "total tokens/s", "A2": "total tokens/s"}


def test_a_figure_in_the_wrong_unit_or_mistyped_is_not_scored_and_the_row_says_why(tmp_path):
    from xlplan.io.measurement_table import read_measurement_table

    row = _offline_8b("B1", category="online_latency_sweep", concurrency_or_rate="concurrency 8",
                      tpot_or_itl_mean_ms="0.012", output_tok_s="22,3OO")
    table = read_measurement_table(_csv(tmp_path, [row]))
    # 0.012 ms per output token is faster than any decode step: seconds written in a milliseconds column
    assert any("was it written in seconds" in s for s in table.skipped_cells)
    (check,) = predict_row(measured_row(table.rows[0]))
    assert check.skipped.startswith("no throughput or latency measured") and "'22,3OO' is not a number" in check.skipped


def test_a_blank_settings_cell_is_settings_not_stated_and_a_gpu_count_glued_to_its_name_reads():
    m = measured_row(_offline_8b("C1", output_tok_s="9000"))
    assert m.conditions.gpu.name.startswith("NVIDIA H100 SXM")  # "1xH100": one H100, the count glued to the name
    (check,) = predict_row(m)
    assert "settings not stated: the engine's defaults" in check.note


def test_a_row_without_a_prompt_length_names_isl():
    (check,) = predict_row(measured_row(_offline_8b("D1", isl="", output_tok_s="9000")))
    assert check.skipped.startswith("isl: not stated")


def test_the_h800_is_in_the_catalog_with_its_published_figures():
    g = catalog.get_gpu(names.gpu_key("NVIDIA H800 80GB")[0])
    # LMSYS/Ant Group's table: 989 BF16, 1,979 FP8 TFLOP/s, NVLink 400 GB/s (both directions, so 200 one way);
    # DeepSeek: 3.35 TB/s HBM (xlplan/catalog/gpus.yaml cites both)
    assert (g.bf16_tflops, g.fp8_tflops, g.hbm_tbps, g.interconnect_gbps) == (989, 1979, 3.35, 200)
