"""The memory fraction an engine runs at when a benchmark or deployment sets none: SGLang's computed default by release,
GPU and TP, and the constant 0.9 of vLLM and TensorRT-LLM.

SGLang's rule, sgl-project/sglang python/sglang/srt/server_args.py ``_handle_gpu_memory_settings`` (from 0.5.3):
reserved MB = 512 + 1.5 × max(chunked_prefill_size, 2048) + 2 × cuda_graph_max_bs + TP ÷ 8 × 1024 (+ 3 × bs × DP ranks,
+ 1.5 × bs × ranks more above 300, with DP attention), at least 10,240 MB on GPUs above 60 GiB; the fraction is
round((M − reserved) ÷ M, 3) with M the device's total memory in MB. Before 0.5.3 it went by TP alone.
Each expected value below is worked by hand from that code and the GPU's memory in MiB.
"""

from __future__ import annotations

import pytest

from xlplan import catalog
from xlplan.evidence.bench_conditions import memory_fraction
from xlplan.io.silicon_sample import measured_row, read_sample
from xlplan.serving import engines


@pytest.mark.parametrize(("memory_mib", "tp", "expected"), [
    # H100 SXM, 81,559 MiB, TP 1: chunk 8,192 → 12,288; bs 256 → 512; 1/8 × 1,024 = 128; + 512 = 13,440 MB (over the
    # 10,240 floor); (81,559 − 13,440) ÷ 81,559 = 0.8352 → 0.835
    (81559, 1, 0.835),
    # the same at TP 8: bs 512 → 1,024; 8/8 × 1,024 = 1,024; 512 + 12,288 + 1,024 + 1,024 = 14,848;
    # (81,559 − 14,848) ÷ 81,559 = 0.8179 → 0.818
    (81559, 8, 0.818),
    # B200, 183,359 MiB, TP 1: chunk 16,384 → 24,576; bs 512 → 1,024; 128; 512: 26,240; 157,119 ÷ 183,359 = 0.8569
    (183359, 1, 0.857),
    # L40S, 46,068 MiB (below 60 GiB: chunk 4,096 → 6,144, bs 32 at TP < 4 → 64, no 10 GiB floor), TP 1:
    # 512 + 6,144 + 64 + 128 = 6,848; 39,220 ÷ 46,068 = 0.8513 → 0.851
    (46068, 1, 0.851),
    # a 24 GiB card, 24,564 MiB (below 35 GiB: chunk 2,048 → 3,072, bs 80 at TP 4 → 160), TP 4: 512 + 3,072 + 160
    # + 512 = 4,256; 20,308 ÷ 24,564 = 0.8267 → 0.827
    (24564, 4, 0.827),
])
def test_sglangs_default_fraction_by_gpu_memory_and_tp(memory_mib, tp, expected):
    assert engines.sglang_mem_fraction_static(memory_mib / 1024, tp) == expected
    assert engines.default_memory_fraction("sglang", memory_mib / 1024, tp) == expected


def test_attention_data_parallel_reserves_its_padding():
    # H200, 143,771 MiB, TP 8 with 8 DP-attention ranks: 14,848 as at TP 8, + 3 × 512 × 8 = 12,288, + 1.5 × 512 × 8
    # = 6,144 (bs 512 > 300): 33,280 MB; (143,771 − 33,280) ÷ 143,771 = 0.76852 → 0.769
    assert engines.sglang_mem_fraction_static(143771 / 1024, 8, dp_ranks=8) == 0.769


@pytest.mark.parametrize(("version", "tp", "expected"), [
    ("v0.4.6.post1", 1, 0.88), ("0.5.1.post1", 2, 0.87), ("0.5.1.post1", 4, 0.85), ("0.5.2", 8, 0.81),
    ("0.4.9", 16, 0.79),
    # 0.5.3 and later, an unstated release and a nightly build take the rule by memory (81,559 MiB at TP 4:
    # 512 + 12,288 + 1,024 + 512 = 14,336; 67,223 ÷ 81,559 = 0.8242)
    ("0.5.3", 4, 0.824), ("", 4, 0.824), ("nightly-dev-20260216-d3bae71e", 4, 0.824),
])
def test_releases_before_0_5_3_go_by_tp_alone(version, tp, expected):
    assert engines.sglang_mem_fraction_static(81559 / 1024, tp, version) == expected


def test_vllm_and_tensorrt_llm_run_at_their_constant_default():
    # vLLM --gpu-memory-utilization and TensorRT-LLM free_gpu_memory_fraction both default to 0.9
    assert {engines.default_memory_fraction(e, 79.6, tp) for e in ("vllm", "trtllm") for tp in (1, 8)} == {0.9}


def test_a_sample_row_that_sets_no_fraction_runs_at_its_releases_default():
    # The sample states no engine settings (xlplan/data/silicon_sample.md): each row runs at its engine's default.
    # Qwen3-32B on one H100 under SGLang 0.5.8.post1 (the memory rule): 0.835 as above; at TP 4 under 0.5.1.post1
    # (before 0.5.3): 0.85 by TP. The H100's catalog memory is its 81,559 MiB.
    assert round(catalog.get_gpu("h100-sxm").memory_gib * 1024) == 81559
    by_id = {r["id"]: r for r in read_sample()}
    tp1 = measured_row(by_id["qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_sglang_agg_1024x128_c16_tp1_epnone_1"]).conditions
    tp4 = measured_row(by_id["qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_sglang_agg_1024x128_c16_tp4_epnone_2"]).conditions
    assert (tp1.engine_version, tp1.tp, tp1.memory_utilisation, memory_fraction(tp1)) == ("0.5.8.post1", 1, None, 0.835)
    assert (tp4.engine_version, tp4.tp, tp4.memory_utilisation, memory_fraction(tp4)) == ("0.5.1.post1", 4, None, 0.85)


def test_the_sample_rows_kv_room_is_sglangs_pool_at_that_fraction():
    # SGLang's static pool holds the weights and the KV cache: KV = fraction × visible − weights − the reserve
    # (engines.SGLANG_RESERVE_GIB, 1.5 GiB). Qwen3-32B bf16 on one H100 (79.18 GiB visible) at 0.835: 0.835 × 79.18
    # − weights − 1.5, the weights being 2 bytes per parameter (serving.memory.weights_gib).
    from xlplan.evidence.predict import kv_capacity
    from xlplan.serving.memory import weights_gib

    by_id = {r["id"]: r for r in read_sample()}
    c = measured_row(by_id["qwen_qwen3_32b_qwen_qwen3_32b_h100_sxm_sglang_agg_1024x128_c16_tp1_epnone_1"]).conditions
    kv_gib, _ = kv_capacity(c)
    expected = 0.835 * 79.18 - weights_gib(c.model, "bf16") - engines.SGLANG_RESERVE_GIB
    assert kv_gib == pytest.approx(expected, rel=1e-9)


def _engines_own(plan):
    """The plan with its memory fraction null: the engine's own default (replan drops a None)."""
    return plan.model_copy(update={"policy": plan.policy.model_copy(update={"memory_utilisation": None})})


def test_an_sglang_plan_whose_fraction_is_null_sizes_its_cache_at_sglangs_default():
    # The reference plan's model and GPU (Llama-3.1-8B bf16, one H100: 79.18 GiB visible, 14.957 GiB of weights) under
    # SGLang, its fraction null (the engine's own): 0.835 at TP 1 (above), so 0.835 × 79.18 − 14.957 − 1.5 (SGLang's reserve) = 49.66 GiB
    # per GPU, where the 0.90 every engine got before gave 54.80. At TP 2, 512 + 12,288 + 512 + 256 = 13,568 MB:
    # 1 − 13,568 ÷ 81,559 = 0.8336 → 0.834, with half the weights per GPU.
    from planhelp import replan

    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan
    from xlplan.plan.replica_at_tp import kv_budget_gib, memory_fraction
    from xlplan.plan.scenario import resolve
    from xlplan.schema.plan import Plan

    bare = Plan.model_validate({k: v for k, v in reference_plan().model_dump(exclude_none=True).items() if k != "policy"})
    sglang = _engines_own(replan(bare, policy={"engine": "sglang"}))
    s = resolve(sglang)
    assert s.memory_utilisation is None and (memory_fraction(s, 1), memory_fraction(s, 2)) == (0.835, 0.834)
    weights_gib = s.weights_bytes / 2**30
    assert kv_budget_gib(s, 1) == pytest.approx(0.835 * 79.18 - weights_gib - 1.5, rel=1e-12)
    assert kv_budget_gib(s, 2) == pytest.approx(0.834 * 79.18 - weights_gib / 2 - 1.5, rel=1e-12)
    assert plan(sglang).memory.kv_budget_gib_per_gpu == pytest.approx(kv_budget_gib(s, plan(sglang).fleet.tp), rel=1e-12)
    # a stated fraction is the plan's, whatever the engine, and one left out is the plan file's 0.90 (its meaning
    # since version 1); vLLM's own default is 0.9 too
    assert memory_fraction(resolve(replan(bare, policy={"engine": "sglang"})), 1) == 0.9
    vllm_own = resolve(_engines_own(bare))
    assert vllm_own.memory_utilisation is None and memory_fraction(vllm_own, 4) == 0.9


@pytest.mark.slow
def test_a_blank_fraction_in_the_workbook_is_the_engines_own_and_reads_back_null(tmp_path):
    # The workbook writes a null fraction as a blank 1 Inputs cell, its Constraints tab computes SGLang's 0.835 from the
    # H100's memory at TP 1 (the cached value the engine wrote), and reading the workbook back gives the null again,
    # not the plan file's 0.90 default: the same plan.
    import openpyxl
    from planhelp import replan
    from workbookhelp import workbook_for_plan

    from xlplan.excel.reader import read_workbook
    from xlplan.io.planfile import reference_plan

    plan = _engines_own(replan(reference_plan(), policy={"engine": "sglang"}))
    path = tmp_path / "sglang.xlsx"
    path.write_bytes(workbook_for_plan(plan))
    wb = openpyxl.load_workbook(path, data_only=True)

    def named(name):
        sheet, cell = next(iter(wb.defined_names[name].destinations))
        return wb[sheet][cell.replace("$", "")].value

    assert named("MemoryUtilisation") is None and named("MemoryFraction") == 0.835
    back = read_workbook(path)
    assert back.policy.memory_utilisation is None and back.model_dump() == plan.model_dump()


def test_the_notes_kv_budget_line_adds_up_at_sglangs_three_decimal_fraction():
    # 79.18 GiB × 0.835 − 14.96 − 1.50 = 49.66 GiB: the fraction printed as it is (three decimals), not 0.83, which
    # would leave the line 0.4 GiB short of its own result (tests/notearith.py recomputes every printed line)
    from notearith import check_note
    from planhelp import replan

    from xlplan.decide.planner import plan
    from xlplan.io.planfile import reference_plan
    from xlplan.report.note import render_text

    r = plan(_engines_own(replan(reference_plan(), policy={"engine": "sglang"})), verify=False)
    text = render_text(r)
    assert "79.18 GiB visible × 0.835 − 14.96 GiB weights − 1.50 GiB SGLang reserve = 49.66 GiB" in text
    checked, bad = check_note(text)
    assert checked >= 20 and bad == [], [(b.why, b.clause) for b in bad]


def test_diff_says_what_a_null_fraction_stands_for(tmp_path, capsys):
    # a reviewer reading `xlplan diff` sees the fraction handed to the engine, not "(none)"
    from planhelp import replan

    from xlplan.cli import main
    from xlplan.io.planfile import plan_to_yaml, reference_plan

    stated = replan(reference_plan(), policy={"engine": "sglang"})
    for name, p in (("old.yaml", stated), ("new.yaml", _engines_own(stated))):
        (tmp_path / name).write_text(plan_to_yaml(p), encoding="utf-8")
    assert main(["diff", str(tmp_path / "old.yaml"), str(tmp_path / "new.yaml")]) == 1  # they differ
    assert "policy.memory_utilisation: 0.9 fraction → (the engine's own default)" in capsys.readouterr().out


def test_weights_that_do_not_fit_are_told_by_the_engines_own_rule():
    # Llama-3.1-70B in bf16 (131.42 GiB) on one H100 under SGLang at its own fraction: 79.18 × 0.835 − 131.42 − 1.50 =
    # −66.80 GiB, each operand as the rule takes it (the message used to print the runbook's rule for every engine)
    from xlplan.decide.planner import plan
    from xlplan.plan.scenario import PlanningError
    from xlplan.schema.plan import Plan

    p = Plan.model_validate({
        "schema_version": 1, "forecast": {"peak_rps": 5, "prompt_tokens": {"p50": 1000, "p95": 2000},
                                          "output_tokens": {"p50": 200, "p95": 400}},
        "promise": {"ttft_s": 2, "itl_s": 0.05}, "model": {"name": "llama-3.1-70b", "weights_dtype": "bf16"},
        "hardware": {"gpu": "h100-sxm", "gpus_per_node": 1, "usd_per_gpu_hour": 2},
        "policy": {"engine": "sglang", "memory_utilisation": None}})
    with pytest.raises(PlanningError) as e:
        plan(p, verify=False)
    assert ("131.42 GiB of weights, and the sglang rule leaves 79.18 GiB visible × 0.835 − 131.42 GiB weights − "
            "1.50 GiB SGLang reserve = -66.80 GiB for the KV cache") in str(e.value)
